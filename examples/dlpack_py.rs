//! A small C-ABI shared library (`crate-type = ["cdylib"]`) through which Python's `ctypes`
//! exchanges arrays between cudajit and PyTorch / CuPy over DLPack: `scripts/dlpack-check.py`
//! loads it and checks zero-copy, writes seen from both sides, the stream handshake, the errors
//! and the deleters. No PyO3: the Python C API is used by the script, and by the capsule
//! destructor here through two function pointers the script passes in.
//!
//! Build: `cargo build --release --example dlpack_py` (the library is
//! `target/release/examples/libdlpack_py.so`). Every function returns 0 / a non-zero handle /
//! a non-null pointer on success; on failure -1, 0 or null, with the message from
//! `cj_last_error`. Nothing panics across the C boundary.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudajit::codegen::Kernel;
use cudajit::dlpack::{
    self, ffi, ConsumerStream, DlpackArray, DlpackStridedArray, DlpackTensor, ManagedKind,
};
use cudajit::prelude::*;
use ndarray::{Ix1, IxDyn};
use parking_lot::Mutex;

type AddKernel = Kernel<(&'static mut [f32], f32)>;

/// An imported tensor, by how it was asked for (`cj_import`'s `kind`).
enum Imported {
    /// 0: a 1-D f32 array (kernels take it).
    F32Flat(DlpackArray<f32, Ix1>),
    /// 1: an f32 array of any shape, contiguous.
    F32(DlpackArray<f32, IxDyn>),
    /// 2: an f32 array of any shape and strides.
    F32Strided(DlpackStridedArray<f32, IxDyn>),
    /// 3: an i64 array of any shape, contiguous.
    I64(DlpackArray<i64, IxDyn>),
}

struct State {
    ctx: Context,
    stream: Stream,
    add: AddKernel,
    arrays: HashMap<u64, Arc<DeviceArray<f32>>>,
    imports: HashMap<u64, Imported>,
    next: u64,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static LAST_ERROR: Mutex<String> = Mutex::new(String::new());

type IsValid = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;
type GetPointer = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;
static CAPSULE_API: Mutex<Option<(IsValid, GetPointer)>> = Mutex::new(None);

/// Runs `f` with the library's state, turning errors and panics into `fail`.
fn with_state<R>(fail: R, f: impl FnOnce(&mut State) -> cudajit::Result<R>) -> R {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = STATE.lock();
        match guard.as_mut() {
            Some(s) => f(s),
            None => Err(cudajit_usage("cj_init was not called")),
        }
    }));
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            *LAST_ERROR.lock() = e.to_string();
            fail
        }
        Err(_) => {
            *LAST_ERROR.lock() = "panic in the library".into();
            fail
        }
    }
}

/// A usage error for this library's own misuse (an unknown handle).
fn cudajit_usage(msg: &str) -> cudajit::Error {
    cudajit::Error::Usage(msg.to_string())
}

/// Opens device `device`'s primary context, a stream and the kernel. 0 or -1.
#[no_mangle]
pub extern "C" fn cj_init(device: c_int) -> c_int {
    let r = catch_unwind(|| -> cudajit::Result<State> {
        let ctx = Context::new(device.max(0) as usize)?;
        let stream = ctx.new_stream()?;
        let add = AddKernel::build("dlpack_py_add", |k, (x, v)| {
            let i = k.grid1();
            k.if_(i.lt(x.len()), |_| x.set(i, x.at(i) + v));
        })?;
        Ok(State {
            ctx,
            stream,
            add,
            arrays: HashMap::new(),
            imports: HashMap::new(),
            next: 1,
        })
    });
    match r {
        Ok(Ok(s)) => {
            *STATE.lock() = Some(s);
            0
        }
        Ok(Err(e)) => {
            *LAST_ERROR.lock() = e.to_string();
            -1
        }
        Err(_) => -1,
    }
}

/// Copies the last error message (NUL-terminated, cut to `len`) into `buf`; its full length.
///
/// # Safety
/// `buf` must be valid for `len` bytes (or null with `len` 0).
#[no_mangle]
pub unsafe extern "C" fn cj_last_error(buf: *mut c_char, len: usize) -> usize {
    let msg = LAST_ERROR.lock().clone();
    if !buf.is_null() && len > 0 {
        let n = msg.len().min(len - 1);
        // SAFETY: the caller's buffer holds `len` bytes; n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    msg.len()
}

/// The `stream=` value of the library's stream, for other libraries' `__dlpack__`.
#[no_mangle]
pub extern "C" fn cj_stream() -> i64 {
    with_state(0, |s| Ok(dlpack::protocol_stream(&s.stream)))
}

/// Waits for the library's stream. 0 or -1.
#[no_mangle]
pub extern "C" fn cj_sync() -> c_int {
    with_state(-1, |s| s.stream.synchronize().map(|_| 0))
}

/// A new f32 array holding 0, 1, ..., n-1 (written on the library's stream); its handle or 0.
#[no_mangle]
pub extern "C" fn cj_iota_f32(n: usize) -> u64 {
    with_state(0, |s| {
        let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let a = s.stream.to_device(&host)?;
        let h = s.next;
        s.next += 1;
        s.arrays.insert(h, Arc::new(a));
        Ok(h)
    })
}

fn array(s: &State, h: u64) -> cudajit::Result<Arc<DeviceArray<f32>>> {
    s.arrays
        .get(&h)
        .cloned()
        .ok_or_else(|| cudajit_usage("unknown array handle"))
}

/// Adds `v` to array `h`, `times` times, queued on the library's stream (not waited for).
#[no_mangle]
pub extern "C" fn cj_add_f32(h: u64, v: f32, times: c_int) -> c_int {
    with_state(-1, |s| {
        let a = array(s, h)?;
        let cfg = LaunchConfig::for_num_elems(a.len().max(1), 256)?;
        // The array is shared (torch or CuPy may hold it too), so cudajit writes it the way
        // they do: through a DLPack alias of its own, which keeps the `Arc` while it lives.
        let alias = dlpack::export(a, ManagedKind::Versioned)?;
        let mut w: DlpackArray<f32, Ix1> = s.ctx.import_dlpack(alias)?;
        for _ in 0..times.max(0) {
            s.add.launch(&s.stream, cfg, (&mut w, v))?;
        }
        Ok(0)
    })
}

/// The device address of array `h` (0 if unknown).
#[no_mangle]
pub extern "C" fn cj_data_ptr(h: u64) -> u64 {
    with_state(0, |s| Ok(array(s, h)?.as_raw_ptr()))
}

/// Copies array `h` (n elements) to `out`, after the library's stream. 0 or -1.
///
/// # Safety
/// `out` must be valid for `n` floats.
#[no_mangle]
pub unsafe extern "C" fn cj_read_f32(h: u64, out: *mut f32, n: usize) -> c_int {
    with_state(-1, |s| {
        let a = array(s, h)?;
        if n != a.len() || out.is_null() {
            return Err(cudajit_usage("cj_read_f32: wrong length"));
        }
        // SAFETY: the caller's buffer of n floats.
        let dst = unsafe { std::slice::from_raw_parts_mut(out, n) };
        a.copy_to_host_async(dst, &s.stream)?;
        Ok(0)
    })
}

/// Forgets array `h` (its memory lives on in tensors exported from it). 0 or -1.
#[no_mangle]
pub extern "C" fn cj_free(h: u64) -> c_int {
    with_state(-1, |s| {
        s.arrays
            .remove(&h)
            .map(|_| 0)
            .ok_or_else(|| cudajit_usage("unknown array handle"))
    })
}

/// Exports array `h` as a DLPack tensor (versioned when `versioned` is non-zero) sharing its
/// memory, with the handshake for the consumer's `stream` (Python's `None` when `has_stream`
/// is 0). The `DLManagedTensor[Versioned]*`, or null.
#[no_mangle]
pub extern "C" fn cj_export(
    h: u64,
    versioned: c_int,
    has_stream: c_int,
    stream: i64,
) -> *mut c_void {
    with_state(std::ptr::null_mut(), |s| {
        let a = array(s, h)?;
        let kind = if versioned != 0 {
            ManagedKind::Versioned
        } else {
            ManagedKind::Legacy
        };
        let consumer = ConsumerStream::from_protocol((has_stream != 0).then_some(stream))?;
        let t = dlpack::export_on(a, kind, &s.stream, consumer)?;
        Ok(t.into_raw().as_ptr())
    })
}

/// Takes another library's tensor (`DLManagedTensorVersioned*` when `versioned`, else
/// `DLManagedTensor*`; the caller has renamed its capsule "used_...") and imports it as `kind`
/// (0: 1-D f32, 1: f32, 2: strided f32, 3: i64). Its handle, or 0 (the producer's deleter has
/// then been called).
#[no_mangle]
pub extern "C" fn cj_import(managed: *mut c_void, versioned: c_int, kind: c_int) -> u64 {
    with_state(0, |s| {
        // SAFETY: the script passes the pointer of a capsule it has just marked used: a valid
        // tensor nobody else will delete.
        let t = unsafe {
            if versioned != 0 {
                DlpackTensor::from_raw_versioned(managed.cast())
            } else {
                DlpackTensor::from_raw_legacy(managed.cast())
            }
        }?;
        let imp = match kind {
            0 => Imported::F32Flat(s.ctx.import_dlpack(t)?),
            1 => Imported::F32(s.ctx.import_dlpack(t)?),
            2 => Imported::F32Strided(s.ctx.import_dlpack_strided(t)?),
            3 => Imported::I64(s.ctx.import_dlpack(t)?),
            _ => {
                drop(t);
                return Err(cudajit_usage("cj_import: kind must be 0 to 3"));
            }
        };
        let h = s.next;
        s.next += 1;
        s.imports.insert(h, imp);
        Ok(h)
    })
}

/// The device address of imported tensor `h`'s element 0 (0 if unknown).
#[no_mangle]
pub extern "C" fn cj_import_data_ptr(h: u64) -> u64 {
    with_state(0, |s| {
        Ok(match s.imports.get(&h) {
            Some(Imported::F32Flat(a)) => a.device_ptr(),
            Some(Imported::F32(a)) => a.device_ptr(),
            Some(Imported::F32Strided(a)) => a.view().device_ptr(),
            Some(Imported::I64(a)) => a.device_ptr(),
            None => 0,
        })
    })
}

/// Adds `v` in place to imported 1-D f32 tensor `h` with a cudajit kernel on the library's
/// stream (not waited for). 0 or -1.
#[no_mangle]
pub extern "C" fn cj_import_add(h: u64, v: f32) -> c_int {
    with_state(-1, |s| match s.imports.get_mut(&h) {
        Some(Imported::F32Flat(a)) => {
            let cfg = LaunchConfig::for_num_elems(a.len().max(1), 256)?;
            s.add.launch(&s.stream, cfg, (a, v))?;
            Ok(0)
        }
        _ => Err(cudajit_usage(
            "cj_import_add: not an imported 1-D f32 tensor",
        )),
    })
}

/// Copies imported tensor `h` (n elements, C order of its logical indices; f32 or i64 as
/// imported) to `out`, ordered on the library's stream. 0 or -1.
///
/// # Safety
/// `out` must be valid for `n` elements of the tensor's type.
#[no_mangle]
pub unsafe extern "C" fn cj_import_read(h: u64, out: *mut c_void, n: usize) -> c_int {
    with_state(-1, |s| {
        let st = &s.stream;
        let bytes = match s.imports.get(&h) {
            Some(Imported::F32Flat(a)) => to_bytes(&a.to_vec_async(st)?),
            Some(Imported::F32(a)) => to_bytes(&a.to_vec_async(st)?),
            Some(Imported::F32Strided(a)) => to_bytes(
                &a.view()
                    .to_array_async(st)?
                    .iter()
                    .copied()
                    .collect::<Vec<f32>>(),
            ),
            Some(Imported::I64(a)) => to_bytes(&a.to_vec_async(st)?),
            None => return Err(cudajit_usage("unknown import handle")),
        };
        let size = match s.imports.get(&h) {
            Some(Imported::I64(_)) => 8,
            _ => 4,
        };
        if out.is_null() || bytes.len() != n * size {
            return Err(cudajit_usage(
                "cj_import_read: wrong length or a null buffer",
            ));
        }
        // SAFETY: the caller's buffer of n elements of `size` bytes, checked above.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
        Ok(0)
    })
}

/// Plain numbers (f32, i64) as their bytes.
fn to_bytes<T: Copy>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain numbers viewed as their bytes, copied out at once.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        .to_vec()
}

/// Drops imported tensor `h`, after the library's stream has finished with it: the producer's
/// deleter runs (once). 0 or -1.
#[no_mangle]
pub extern "C" fn cj_import_drop(h: u64) -> c_int {
    with_state(-1, |s| {
        s.stream.synchronize()?;
        s.imports
            .remove(&h)
            .map(|_| 0)
            .ok_or_else(|| cudajit_usage("unknown import handle"))
    })
}

/// Drops imported tensor `h` without waiting for the library's stream (for one that no
/// cudajit work used: the host-cost measurement). 0 or -1.
#[no_mangle]
pub extern "C" fn cj_import_drop_nosync(h: u64) -> c_int {
    with_state(-1, |s| {
        s.imports
            .remove(&h)
            .map(|_| 0)
            .ok_or_else(|| cudajit_usage("unknown import handle"))
    })
}

/// The host cost of a DLPack round trip in Rust alone, in nanoseconds per iteration: export a
/// shared 1-D array (versioned), import it back, drop both. -1 on error.
#[no_mangle]
pub extern "C" fn cj_bench_roundtrip(iters: u64) -> f64 {
    with_state(-1.0, |s| {
        let a = Arc::new(s.ctx.zeros::<f32, _>(1024)?);
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            let t = dlpack::export(Arc::clone(&a), ManagedKind::Versioned)?;
            let back: DlpackArray<f32, Ix1> = s.ctx.import_dlpack(t)?;
            drop(back);
        }
        Ok(t0.elapsed().as_nanos() as f64 / iters.max(1) as f64)
    })
}

/// Writes cudajit's process-wide DLPack counters to `out[0..4]`: exported, export deleters
/// run, adopted, adopted deleters called.
///
/// # Safety
/// `out` must be valid for 4 integers.
#[no_mangle]
pub unsafe extern "C" fn cj_counters(out: *mut u64) {
    let c = dlpack::counters();
    if !out.is_null() {
        let v = [
            c.exported,
            c.export_deleters_run,
            c.adopted,
            c.adopted_deleters_called,
        ];
        // SAFETY: the caller's 4 integers.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, 4) };
    }
}

/// Gives the library `PyCapsule_IsValid` and `PyCapsule_GetPointer` (from `ctypes.pythonapi`)
/// for [`cj_capsule_destructor`].
#[no_mangle]
pub extern "C" fn cj_set_capsule_api(is_valid: Option<IsValid>, get_pointer: Option<GetPointer>) {
    if let (Some(a), Some(b)) = (is_valid, get_pointer) {
        *CAPSULE_API.lock() = Some((a, b));
    }
}

/// The destructor of the capsules the script makes for exported tensors (called by Python with
/// the GIL held): a capsule still named "dltensor" / "dltensor_versioned" was never consumed,
/// so its tensor's deleter runs here; a consumed one ("used_...") belongs to its consumer.
///
/// # Safety
/// `capsule` must be a live `PyObject*` capsule (Python's contract for destructors).
#[no_mangle]
pub unsafe extern "C" fn cj_capsule_destructor(capsule: *mut c_void) {
    let Some((is_valid, get_pointer)) = *CAPSULE_API.lock() else {
        return;
    };
    let _ = catch_unwind(|| {
        // SAFETY: Python's API on a live capsule, with names that are NUL-terminated.
        unsafe {
            if is_valid(capsule, c"dltensor_versioned".as_ptr()) != 0 {
                let p = get_pointer(capsule, c"dltensor_versioned".as_ptr())
                    .cast::<ffi::DLManagedTensorVersioned>();
                if let Some(d) = p.as_ref().and_then(|t| t.deleter) {
                    d(p);
                }
            } else if is_valid(capsule, c"dltensor".as_ptr()) != 0 {
                let p = get_pointer(capsule, c"dltensor".as_ptr()).cast::<ffi::DLManagedTensor>();
                if let Some(d) = p.as_ref().and_then(|t| t.deleter) {
                    d(p);
                }
            }
        }
    });
}
