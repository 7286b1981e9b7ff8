//! The seam between the safe API and what executes it.
//!
//! Every public type calls the device only through [`Backend`], never the driver directly.
//! Two implementations, chosen once per process in [`backend`], with no change to the public
//! API:
//! - [`cuda::CudaDriver`]: libcuda through `cudajit-sys` (the default);
//! - [`sim::Simulator`]: the CPU simulator (`CUDAJIT_SIMULATOR=1` or [`use_simulator`], as
//!   numba's `NUMBA_ENABLE_CUDASIM`), which executes the kernels' IR instead of loading PTX.
//!
//! Handles stay the driver's opaque types (the simulator makes up its own values for them),
//! device pointers are plain addresses, and errors are [`crate::Error`] values carrying driver
//! result codes. Modules cross the seam as one [`ModuleImage`]; a builder kernel's first load
//! is [`Backend::module_load_kernel`], which either loads the IR (the simulator) or asks for
//! machine code, so nothing above this module branches on the backend. A third backend
//! implements [`Backend`] (a method per driver call it replaces) and is added to the choice in
//! [`backend`].

pub(crate) mod cuda;
pub(crate) mod faults;
pub(crate) mod sim;

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudajit_sys as sys;

use crate::error::{Error, Result};
use crate::ir::FunctionIr;

/// A callback that the backend runs in stream order: `(data)`.
pub(crate) type HostFnPtr = unsafe extern "C" fn(*mut c_void);
/// A callback run in stream order with the stream's status: `(stream, status, data)`.
pub(crate) type StreamCallbackPtr = unsafe extern "C" fn(sys::CUstream, sys::CUresult, *mut c_void);

/// A module as it crosses the seam: what [`Backend::module_load`] loads.
pub(crate) enum ModuleImage<'a> {
    /// PTX text with its terminating NUL.
    Ptx(&'a std::ffi::CStr),
    /// A cubin (ELF), copied to 8-byte-aligned words (the driver reads it as structs).
    Cubin(&'a [u64]),
    /// A fatbin, copied to 8-byte-aligned words.
    Fatbin(&'a [u64]),
    /// A kernel's IR, for a backend that executes IR (the simulator).
    Ir(Arc<FunctionIr>),
}

impl ModuleImage<'_> {
    /// What the image is, for messages (`PTX`, `cubin`, `fatbin`, `kernel IR`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ModuleImage::Ptx(_) => "PTX",
            ModuleImage::Cubin(_) => "cubin",
            ModuleImage::Fatbin(_) => "fatbin",
            ModuleImage::Ir(_) => "kernel IR",
        }
    }
}

/// One input of [`Backend::link`].
pub(crate) struct LinkInput<'a> {
    /// `CU_JIT_INPUT_PTX`, `CU_JIT_INPUT_CUBIN`, ...
    pub(crate) kind: sys::CUjitInputType,
    /// The input's bytes (PTX ends with a NUL).
    pub(crate) data: &'a [u8],
    /// A name for the linker's log.
    pub(crate) name: &'a std::ffi::CStr,
}

/// Everything the safe API asks of a device. `stream: None` means the synchronous form.
///
/// Methods that take raw pointers or handles are `unsafe`: callers guarantee the handles are
/// live and the host ranges valid for the given byte counts.
#[allow(clippy::missing_safety_doc)]
pub(crate) trait Backend: Send + Sync {
    /// Whether this backend is the simulator (what [`on_simulator`] answers; nothing outside
    /// this module branches on it).
    fn is_simulator(&self) -> bool {
        false
    }

    // Devices and the driver.
    /// Initialises the driver (`cuInit`). `at_exit` runs when the process exits normally
    /// (`exit` or the end of `main`), before the driver's own exit handlers: the runtime types
    /// free there what they keep for the whole run.
    fn init(&self, at_exit: fn()) -> Result<()>;
    fn driver_version(&self) -> Result<i32>;
    fn device_count(&self) -> Result<i32>;
    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice>;
    fn device_name(&self, dev: sys::CUdevice) -> Result<String>;
    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32>;
    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]>;
    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String>;
    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize>;

    // Contexts.
    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext>;
    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()>;
    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()>;
    fn ctx_get_current(&self) -> Result<sys::CUcontext>;
    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()>;
    fn ctx_get_device(&self) -> Result<sys::CUdevice>;
    fn ctx_synchronize(&self) -> Result<()>;
    /// `cuCtxSetLimit` for the current context.
    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()>;
    /// `cuCtxGetLimit` for the current context.
    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize>;
    fn mem_get_info(&self) -> Result<(usize, usize)>;
    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)>;

    // Memory.
    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr>;
    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()>;
    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr>;
    /// Stream-ordered allocation from the device's default memory pool.
    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr>;
    /// Stream-ordered free of memory from [`Backend::mem_alloc_async`].
    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()>;
    /// The device's default memory pool (the one `mem_alloc_async` draws from).
    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool>;
    /// A 64-bit attribute of a memory pool (release threshold, used/reserved bytes and their
    /// high watermarks).
    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64>;
    /// Sets a 64-bit attribute of a memory pool (a high watermark is reset by setting 0).
    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()>;
    /// Releases the pool's unused memory down to `keep` bytes.
    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, keep: usize) -> Result<()>;
    /// Lets kernels on device `dev` read and write every allocation of `pool`, present and
    /// future (`cuMemPoolSetAccess`; pool memory ignores `cuCtxEnablePeerAccess`).
    unsafe fn mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()>;
    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        stream: sys::CUstream,
    ) -> Result<()>;
    fn host_alloc(&self, bytes: usize, flags: u32) -> Result<*mut c_void>;
    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()>;
    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr>;
    /// Whether the driver knows the memory at `ptr` (pinned or registered host memory, device
    /// or managed memory): `cuPointerGetAttribute(MEMORY_TYPE)` succeeds with a memory type.
    /// `false` for ordinary pageable host memory. A pure query: nothing is dereferenced.
    fn is_driver_memory(&self, ptr: *const c_void) -> bool;
    unsafe fn memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()>;
    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()>;
    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()>;
    /// Copies between device memory of two contexts (`cuMemcpyPeer`, or `cuMemcpyPeerAsync`
    /// on `stream`); works with or without peer access enabled (staged through the host when
    /// it is not).
    unsafe fn memcpy_peer(
        &self,
        dst: sys::CUdeviceptr,
        dst_ctx: sys::CUcontext,
        src: sys::CUdeviceptr,
        src_ctx: sys::CUcontext,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()>;
    /// Whether `dev` can access memory of `peer` directly (`cuDeviceCanAccessPeer`).
    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool>;
    /// Lets the current context access memory of `peer` (`cuCtxEnablePeerAccess`).
    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()>;
    /// Fills `count` elements of `size` (1, 2 or 4) bytes with the low bytes of `bits`,
    /// `pitch` bytes apart (`pitch == size` for a dense fill).
    unsafe fn memset(
        &self,
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
        pitch: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()>;

    // Streams.
    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream>;
    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()>;
    unsafe fn stream_synchronize(&self, s: sys::CUstream) -> Result<()>;
    /// `Ok(true)` when all work is done.
    unsafe fn stream_query(&self, s: sys::CUstream) -> Result<bool>;
    unsafe fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()>;
    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32>;
    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32>;
    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()>;
    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()>;

    // Events.
    fn event_create(&self, flags: u32) -> Result<sys::CUevent>;
    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()>;
    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()>;
    /// `Ok(true)` when the recorded work is done.
    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool>;
    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()>;
    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32>;

    // Modules and launches.
    /// Loads a module image; a JIT failure is `Error::Jit` with the log, an image of a form
    /// this backend does not run a clear error. Returns the module and the JIT's info log.
    /// Unsafe: a cubin or fatbin must be a well-formed image (the driver trusts its headers).
    unsafe fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)>;
    /// Loads a kernel built with the builder, in the form this backend runs: one that executes
    /// IR loads `ir` itself and answers `Ok(Some(module))`; one that runs machine code calls
    /// `machine_code` (which compiles the IR and loads the result through the compile caches)
    /// and answers `Ok(None)`.
    fn module_load_kernel(
        &self,
        ir: &Arc<FunctionIr>,
        machine_code: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<sys::CUmodule>> {
        let _ = ir;
        machine_code()?;
        Ok(None)
    }
    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()>;
    /// Links device code with the driver's linker (`cuLinkCreate`/`cuLinkAddData`/
    /// `cuLinkComplete`) for the current context's device: each input is its type, its bytes
    /// (PTX with its NUL) and a name for the log. Returns the linked cubin and the info log; a
    /// failure is `Error::Jit` with the linker's log.
    fn link(&self, inputs: &[LinkInput<'_>]) -> Result<(Vec<u8>, String)> {
        let _ = inputs;
        Err(Error::usage(
            "linking device code needs the CUDA driver; the simulator executes kernels' IR and \
             cannot link PTX or cubin",
        ))
    }
    /// `Ok(None)` when the module has no such kernel.
    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> Result<Option<sys::CUfunction>>;
    /// `Ok(None)` when the module has no such global; else its address and size.
    unsafe fn module_global(
        &self,
        m: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>>;
    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32>;
    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()>;
    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)>;
    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32>;
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()>;
    /// A cooperative launch (`cuLaunchCooperativeKernel`): every block resident at once, or
    /// the driver refuses the launch.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_cooperative_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()>;

    // Graphs.
    /// Starts capturing `s`'s work into a graph (thread-local mode: calls from this thread that
    /// cannot be captured fail instead of being recorded).
    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()>;
    /// Ends the capture; the graph of what was captured.
    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph>;
    /// Whether `s` is capturing now.
    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool>;
    /// The graph's node count.
    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize>;
    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec>;
    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()>;
    /// Updates an instantiated graph in place from a graph of the same shape (`Ok(None)`), or
    /// says why it cannot (`Ok(Some(reason))`).
    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>>;
    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()>;
    /// An empty graph, for building by hand.
    fn graph_create(&self) -> Result<sys::CUgraph>;
    /// Adds a kernel node after `deps`; the parameters are copied.
    #[allow(clippy::too_many_arguments)]
    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        params: *mut *mut c_void,
    ) -> Result<sys::CUgraphNode>;
    /// Adds a device-to-device copy of `bytes` bytes after `deps`.
    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode>;
    /// Adds a fill of `count` elements of `size` (1, 2 or 4) bytes with `bits` after `deps`.
    unsafe fn graph_add_memset(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
    ) -> Result<sys::CUgraphNode>;
    /// Adds a node that does nothing (a join point) after `deps`.
    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode>;
    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()>;

    // Profiler.
    fn profiler_start(&self) -> Result<()>;
    fn profiler_stop(&self) -> Result<()>;
}

static BACKEND: OnceLock<&'static dyn Backend> = OnceLock::new();

/// The fault-injecting backend, when a test chose it (see [`crate::fault_injection`]).
static FAULTS: OnceLock<faults::FaultInjector> = OnceLock::new();

/// The process's backend: the simulator when `CUDAJIT_SIMULATOR` is set (`1`, `true`, `yes`,
/// `on`) or [`use_simulator`] was called first, else the CUDA driver.
#[inline]
pub(crate) fn backend() -> &'static dyn Backend {
    *BACKEND.get_or_init(|| {
        if simulator_requested() {
            Box::leak(Box::new(sim::Simulator::new()))
        } else {
            Box::leak(Box::new(cuda::CudaDriver))
        }
    })
}

/// Whether `CUDAJIT_SIMULATOR` asks for the simulator.
fn simulator_requested() -> bool {
    std::env::var("CUDAJIT_SIMULATOR").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Makes every device call of this process run on cudajit's CPU simulator (as setting
/// `CUDAJIT_SIMULATOR=1`), whether or not a GPU is present. Call it before anything else
/// uses the device; afterwards it is an error if the CUDA driver was already chosen.
///
/// ```
/// cudajit::use_simulator().unwrap();
/// assert!(cudajit::on_simulator());
/// ```
pub fn use_simulator() -> Result<()> {
    let chosen = BACKEND.get_or_init(|| Box::leak(Box::new(sim::Simulator::new())));
    if chosen.is_simulator() {
        Ok(())
    } else {
        Err(Error::usage(
            "use_simulator: the CUDA driver is already in use in this process; call \
             use_simulator() before any other cudajit call, or set CUDAJIT_SIMULATOR=1",
        ))
    }
}

/// Whether this process runs on the simulator (`CUDAJIT_SIMULATOR=1` or [`use_simulator`]).
/// Chooses the backend if nothing has yet.
pub fn on_simulator() -> bool {
    backend().is_simulator()
}

/// Chooses the fault-injecting backend (the simulator underneath) for this process; `None` if
/// another backend was chosen first.
pub(crate) fn install_fault_injector() -> Option<&'static faults::FaultInjector> {
    let f: &'static faults::FaultInjector = FAULTS.get_or_init(faults::FaultInjector::new);
    let chosen = *BACKEND.get_or_init(|| f as &'static dyn Backend);
    std::ptr::addr_eq(
        chosen as *const dyn Backend,
        f as *const faults::FaultInjector,
    )
    .then_some(f)
}
