//! The NVTX injection protocol (NVTX v3, `nvtxDetail/nvtxImpl.h`, `nvtxInit.h`, `nvtxTypes.h`):
//! the only place where cudajit's NVTX support touches raw pointers and C function pointers.
//!
//! A client (here, cudajit) owns one function-pointer slot per NVTX call, all null at first.
//! At the first NVTX call it opens the library named by `NVTX_INJECTION64_PATH`, resolves
//! `InitializeInjectionNvtx2` and calls it with [`get_export_table`]. The tool asks that for the
//! callbacks table (`NVTX_ETID_CALLBACKS`) and calls its `GetModuleFunctionTable` for each
//! module, receiving an array whose entry `i` points at the client's slot for callback `i`;
//! it writes its own functions into the slots it implements. Each call then loads its slot
//! and calls the function there, or does nothing when the slot is null. No library, no entry
//! point, or an entry point returning 0: every slot stays (or is set back to) null.
//!
//! Every function crossing the boundary is `extern "system"`: NVTX's `NVTX_API`, which is
//! `__stdcall` on Windows (where it matters in 32-bit x86 only) and the C convention elsewhere.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::sync::OnceLock;

use super::Payload;

/// The variable naming the injection library (what Nsight Systems sets in the programs it
/// launches).
#[cfg(target_pointer_width = "64")]
pub(super) const INJECTION_ENV: &str = "NVTX_INJECTION64_PATH";
/// The variable naming the injection library in a 32-bit process.
#[cfg(not(target_pointer_width = "64"))]
pub(super) const INJECTION_ENV: &str = "NVTX_INJECTION32_PATH";

/// The tool's entry point.
const INIT_SYMBOL: &[u8] = b"InitializeInjectionNvtx2\0";

/// `NVTX_VERSION`: the version of the attribute structure and of the API this client offers.
const NVTX_VERSION: u16 = 3;

// ---- The event attribute structure (`nvtxEventAttributes_v2`) ----

/// `nvtxEventAttributes_t.payload` (`union payload_t`).
#[repr(C)]
#[derive(Clone, Copy)]
union PayloadValue {
    ull: u64,
    ll: i64,
    d: f64,
    ui: u32,
    i: i32,
    f: f32,
}

/// `nvtxEventAttributes_t` (version 3, `nvtxEventAttributes_v2`), its message borrowed from a
/// `CStr` that outlives it.
#[repr(C)]
pub(super) struct EventAttributes<'a> {
    version: u16,
    /// `NVTX_EVENT_ATTRIB_STRUCT_SIZE`: `sizeof(nvtxEventAttributes_t)`.
    size: u16,
    category: u32,
    /// `NVTX_COLOR_UNKNOWN` (0) or `NVTX_COLOR_ARGB` (1).
    color_type: i32,
    color: u32,
    /// `nvtxPayloadType_t`: 0 none, 1 u64, 2 i64, 3 f64, 4 u32, 5 i32, 6 f32.
    payload_type: i32,
    reserved0: i32,
    payload: PayloadValue,
    /// `NVTX_MESSAGE_TYPE_ASCII` (1): `message` is a NUL-terminated `char*`.
    message_type: i32,
    /// `nvtxMessageValue_t`, a union of pointers; cudajit only uses its `ascii` member.
    message: *const c_char,
    text: PhantomData<&'a CStr>,
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<EventAttributes<'static>>() == 48);
    assert!(align_of::<EventAttributes<'static>>() == 8);
    assert!(offset_of!(EventAttributes<'static>, category) == 4);
    assert!(offset_of!(EventAttributes<'static>, color) == 12);
    assert!(offset_of!(EventAttributes<'static>, reserved0) == 20);
    assert!(offset_of!(EventAttributes<'static>, payload) == 24);
    assert!(offset_of!(EventAttributes<'static>, message_type) == 32);
    assert!(offset_of!(EventAttributes<'static>, message) == 40);
};

impl<'a> EventAttributes<'a> {
    /// An ASCII message with an optional ARGB colour, a category (0: none) and an optional
    /// payload.
    pub(super) fn new(
        message: &'a CStr,
        color: Option<u32>,
        category: u32,
        payload: Option<Payload>,
    ) -> Self {
        let (payload_type, payload) = match payload {
            None => (0, PayloadValue { ull: 0 }),
            Some(Payload::U64(v)) => (1, PayloadValue { ull: v }),
            Some(Payload::I64(v)) => (2, PayloadValue { ll: v }),
            Some(Payload::F64(v)) => (3, PayloadValue { d: v }),
            Some(Payload::U32(v)) => (4, zeroed_then(|p| p.ui = v)),
            Some(Payload::I32(v)) => (5, zeroed_then(|p| p.i = v)),
            Some(Payload::F32(v)) => (6, zeroed_then(|p| p.f = v)),
        };
        EventAttributes {
            version: NVTX_VERSION,
            size: std::mem::size_of::<Self>() as u16,
            category,
            color_type: i32::from(color.is_some()),
            color: color.unwrap_or(0),
            payload_type,
            reserved0: 0,
            payload,
            message_type: 1,
            message: message.as_ptr(),
            text: PhantomData,
        }
    }
}

/// A payload of all zero bytes with a 4-byte member written over its first bytes (the other
/// four stay zero, as in a zeroed C structure).
fn zeroed_then(set: impl FnOnce(&mut PayloadValue)) -> PayloadValue {
    let mut p = PayloadValue { ull: 0 };
    set(&mut p);
    p
}

// ---- The client's function-pointer slots and the tables handed to tools ----

/// One NVTX callback's function pointer, written by the tool (null: not implemented).
type Slot = AtomicPtr<c_void>;

/// `NvtxCallbackIdCore` values cudajit calls.
const MARK_EX: usize = 1;
const MARK_A: usize = 2;
const RANGE_START_EX: usize = 4;
const RANGE_START_A: usize = 5;
const RANGE_END: usize = 7;
const RANGE_PUSH_EX: usize = 8;
const RANGE_PUSH_A: usize = 9;
const RANGE_POP: usize = 11;
const NAME_CATEGORY_A: usize = 12;
const NAME_OS_THREAD_A: usize = 14;

/// `const fn` of `N` empty slots (the `NVTX_CBID_<MODULE>_SIZE` of a module; slot 0 unused).
const fn slots<const N: usize>() -> [Slot; N] {
    [const { AtomicPtr::new(ptr::null_mut()) }; N]
}

// Every module of `NvtxCallbackModule` has its slots, so a tool that fills them all finds
// them; cudajit only calls the core ones.
static CORE: [Slot; 16] = slots(); // NVTX_CB_MODULE_CORE = 1
static CUDA: [Slot; 9] = slots(); // 2
static OPENCL: [Slot; 15] = slots(); // 3
static CUDART: [Slot; 7] = slots(); // 4
static CORE2: [Slot; 16] = slots(); // 5
static SYNC: [Slot; 7] = slots(); // 6

/// A module's `NvtxFunctionTable` as `nvtxImpl.h` lays it out: `N + 1` entries, entry `i`
/// pointing at slot `i` for `1 <= i < N`, entry 0 and entry `N` null.
#[repr(transparent)]
struct Table<const M: usize>([*const Slot; M]);

// SAFETY: the entries point at statics of atomics, which every thread may use; the entries
// themselves are never written.
unsafe impl<const M: usize> Sync for Table<M> {}

const fn table<const N: usize, const M: usize>(slots: &'static [Slot; N]) -> Table<M> {
    assert!(M == N + 1);
    let mut t = [ptr::null::<Slot>(); M];
    let mut i = 1;
    while i < N {
        t[i] = &slots[i] as *const Slot;
        i += 1;
    }
    Table(t)
}

static CORE_TABLE: Table<17> = table(&CORE);
static CUDA_TABLE: Table<10> = table(&CUDA);
static OPENCL_TABLE: Table<16> = table(&OPENCL);
static CUDART_TABLE: Table<8> = table(&CUDART);
static CORE2_TABLE: Table<17> = table(&CORE2);
static SYNC_TABLE: Table<8> = table(&SYNC);

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct CallbacksTable {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "system" fn(c_int, *mut *const *const Slot, *mut c_uint) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct VersionInfoTable {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: extern "system" fn(u32),
}

static CALLBACKS: CallbacksTable = CallbacksTable {
    struct_size: std::mem::size_of::<CallbacksTable>(),
    get_module_function_table,
};

static VERSION_INFO: VersionInfoTable = VersionInfoTable {
    struct_size: std::mem::size_of::<VersionInfoTable>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxGetExportTable`: what the tool's entry point receives.
extern "system" fn get_export_table(id: u32) -> *const c_void {
    match id {
        1 => ptr::from_ref(&CALLBACKS).cast(), // NVTX_ETID_CALLBACKS
        3 => ptr::from_ref(&VERSION_INFO).cast(), // NVTX_ETID_VERSIONINFO
        _ => ptr::null(),
    }
}

/// `nvtxEtiGetModuleFunctionTable`: a module's table and its size (entries minus one); 0 for
/// an unknown module.
unsafe extern "system" fn get_module_function_table(
    module: c_int,
    out_table: *mut *const *const Slot,
    out_size: *mut c_uint,
) -> c_int {
    let (table, len): (*const *const Slot, usize) = match module {
        1 => (CORE_TABLE.0.as_ptr(), CORE_TABLE.0.len()),
        2 => (CUDA_TABLE.0.as_ptr(), CUDA_TABLE.0.len()),
        3 => (OPENCL_TABLE.0.as_ptr(), OPENCL_TABLE.0.len()),
        4 => (CUDART_TABLE.0.as_ptr(), CUDART_TABLE.0.len()),
        5 => (CORE2_TABLE.0.as_ptr(), CORE2_TABLE.0.len()),
        6 => (SYNC_TABLE.0.as_ptr(), SYNC_TABLE.0.len()),
        _ => return 0,
    };
    // SAFETY: the NVTX contract: each out-pointer is null or valid for one write.
    unsafe {
        if !out_size.is_null() {
            out_size.write((len - 1) as c_uint);
        }
        if !out_table.is_null() {
            out_table.write(table);
        }
    }
    1
}

/// `nvtxEtiSetInjectionNvtxVersion`: reserved; NVTX ignores it too.
extern "system" fn set_injection_nvtx_version(_version: u32) {}

/// Sets every slot of every module back to null (a tool whose entry point failed).
fn clear_slots() {
    for module in [&CORE[..], &CUDA, &OPENCL, &CUDART, &CORE2, &SYNC] {
        for slot in module {
            slot.store(ptr::null_mut(), Ordering::Release);
        }
    }
}

// ---- Loading the tool, once per process ----

const UNKNOWN: u8 = 0;
const DETACHED: u8 = 1;
const ATTACHED: u8 = 2;

/// Whether a tool is attached, once decided: the one load of every NVTX call.
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The tool's library, kept loaded for the life of the process once its entry point has run.
struct Tool {
    _library: Option<libloading::Library>,
    attached: bool,
}

static TOOL: OnceLock<Tool> = OnceLock::new();

/// Whether a tool is attached; loads it on the first call of the process.
#[inline]
pub(super) fn attached() -> bool {
    match STATE.load(Ordering::Acquire) {
        ATTACHED => true,
        DETACHED => false,
        _ => initialize(),
    }
}

#[cold]
fn initialize() -> bool {
    let tool = TOOL.get_or_init(attach);
    let state = if tool.attached { ATTACHED } else { DETACHED };
    STATE.store(state, Ordering::Release);
    tool.attached
}

/// `InitializeInjectionNvtx2` (`NvtxInitializeInjectionNvtxFunc_t`).
type InitFn = unsafe extern "system" fn(extern "system" fn(u32) -> *const c_void) -> c_int;

/// Loads the tool named by [`INJECTION_ENV`] and runs its entry point.
fn attach() -> Tool {
    let detached = |library| Tool {
        _library: library,
        attached: false,
    };
    let Some(path) = std::env::var_os(INJECTION_ENV).filter(|p| !p.is_empty()) else {
        return detached(None);
    };
    let shown = path.to_string_lossy().into_owned();
    // SAFETY: loading a library runs its initialisers; this is the library a profiling tool
    // named in the NVTX variable for exactly this use, as every NVTX client loads it.
    let library = match unsafe { libloading::Library::new(&path) } {
        Ok(l) => l,
        Err(e) => {
            super::note(&format!("{INJECTION_ENV}={shown}: cannot load it: {e}"));
            return detached(None);
        }
    };
    // SAFETY: NVTX declares the entry point with this prototype (`InitFn`).
    let init = match unsafe { library.get::<InitFn>(INIT_SYMBOL) } {
        Ok(f) => *f,
        Err(e) => {
            super::note(&format!(
                "{INJECTION_ENV}={shown}: no InitializeInjectionNvtx2: {e}"
            ));
            return detached(None);
        }
    };
    // SAFETY: the tool's entry point, called once per process with NVTX's export-table getter;
    // it writes its functions into the slots through the tables it is given.
    if unsafe { init(get_export_table) } == 0 {
        clear_slots();
        super::note(&format!(
            "{INJECTION_ENV}={shown}: InitializeInjectionNvtx2 returned 0"
        ));
        // Kept loaded: its entry point ran and may have left handlers behind.
        return detached(Some(library));
    }
    Tool {
        _library: Some(library),
        attached: true,
    }
}

// ---- The calls ----

type MarkExFn = for<'a> unsafe extern "system" fn(*const EventAttributes<'a>);
type MessageFn = unsafe extern "system" fn(*const c_char);
type StartExFn = for<'a> unsafe extern "system" fn(*const EventAttributes<'a>) -> u64;
type StartAFn = unsafe extern "system" fn(*const c_char) -> u64;
type EndFn = unsafe extern "system" fn(u64);
type PushExFn = for<'a> unsafe extern "system" fn(*const EventAttributes<'a>) -> c_int;
type PushAFn = unsafe extern "system" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "system" fn() -> c_int;
type NameFn = unsafe extern "system" fn(u32, *const c_char);

/// The function the tool wrote in core slot `$id`, as `$ty`; `None` when it wrote none.
macro_rules! tool_fn {
    ($id:expr, $ty:ty) => {{
        let p = CORE[$id].load(Ordering::Relaxed);
        // SAFETY: a tool writes in each slot a function of the prototype that nvtxTypes.h
        // declares for that callback id, which `$ty` spells; null means none was written.
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
    }};
}

/// `nvtxMarkEx` (or `nvtxMarkA` with the message alone if the tool has no `MarkEx`).
pub(super) fn mark(a: &EventAttributes<'_>) {
    if let Some(f) = tool_fn!(MARK_EX, MarkExFn) {
        // SAFETY: `a` is a complete version-3 attribute structure; its message outlives the call.
        unsafe { f(a) }
    } else if let Some(f) = tool_fn!(MARK_A, MessageFn) {
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { f(a.message) }
    }
}

/// `nvtxRangePushEx` (or `nvtxRangePushA`); whether the tool took the push.
pub(super) fn push(a: &EventAttributes<'_>) -> bool {
    if let Some(f) = tool_fn!(RANGE_PUSH_EX, PushExFn) {
        // SAFETY: as in `mark`.
        unsafe { f(a) };
        true
    } else if let Some(f) = tool_fn!(RANGE_PUSH_A, PushAFn) {
        // SAFETY: as in `mark`.
        unsafe { f(a.message) };
        true
    } else {
        false
    }
}

/// `nvtxRangePop`.
pub(super) fn pop() {
    if let Some(f) = tool_fn!(RANGE_POP, PopFn) {
        // SAFETY: no arguments; the tool pops the calling thread's innermost range.
        unsafe { f() };
    }
}

/// `nvtxRangeStartEx` (or `nvtxRangeStartA`): the range's id, `None` if the tool has neither.
pub(super) fn start(a: &EventAttributes<'_>) -> Option<u64> {
    if let Some(f) = tool_fn!(RANGE_START_EX, StartExFn) {
        // SAFETY: as in `mark`.
        Some(unsafe { f(a) })
    } else {
        // SAFETY: as in `mark`.
        tool_fn!(RANGE_START_A, StartAFn).map(|f| unsafe { f(a.message) })
    }
}

/// `nvtxRangeEnd`.
pub(super) fn end(id: u64) {
    if let Some(f) = tool_fn!(RANGE_END, EndFn) {
        // SAFETY: an id the tool returned from a start call.
        unsafe { f(id) }
    }
}

/// `nvtxNameCategoryA`.
pub(super) fn name_category(id: u32, name: &CStr) {
    if let Some(f) = tool_fn!(NAME_CATEGORY_A, NameFn) {
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { f(id, name.as_ptr()) }
    }
}

/// `nvtxNameOsThreadA`.
pub(super) fn name_os_thread(tid: u32, name: &CStr) {
    if let Some(f) = tool_fn!(NAME_OS_THREAD_A, NameFn) {
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { f(tid, name.as_ptr()) }
    }
}
