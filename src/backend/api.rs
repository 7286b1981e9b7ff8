//! The backend's API, by concern: one trait per group of driver calls, each implemented by the
//! CUDA driver in the `cuda/` file of that concern and by the simulator, and [`Backend`] their
//! sum. Each method is written once, in a [`backend_api!`] list that also generates the fault
//! injector's forwarding ([`FaultInjector`]): the mark before a method says how the fault
//! injector treats it —
//! - `[counted]`: the call is counted, and the planned one fails before anything happens;
//! - `[releases]`: it releases its resource even when it reports an error (as the driver does),
//!   so the call is made first and the planned failure reported after it;
//! - `[uncounted]`: a query the workloads of the fault tests never see fail (not counted);
//!
//! followed by `unsafe` for methods whose callers guarantee live handles and valid ranges.
//! Methods with a default body (`= { .. }`) are answered by it unless a backend overrides them.

use std::ffi::c_void;
use std::sync::Arc;

use cudajit_sys as sys;

use super::faults::FaultInjector;
use super::tensor_map::{TensorMapBytes, TensorMapDesc};
use super::texture::{ArrayDesc, Copy3d, TexDesc, TexResource};
use super::{HostFnPtr, LinkInput, ModuleImage, StreamCallbackPtr};
use crate::error::{Error, Result};
use crate::ir::FunctionIr;

/// Defines one trait of the backend's API and the fault injector's forwarding impl of it (see
/// the module docs for the marks).
macro_rules! backend_api {
    (
        $(#[$tmeta:meta])*
        trait $Trait:ident {
            $(
                $(#[$meta:meta])*
                [$mode:ident $($unsafe:ident)?]
                fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty $(= $default:block)?;
            )*
        }
    ) => {
        $(#[$tmeta])*
        #[allow(clippy::missing_safety_doc)]
        pub(crate) trait $Trait {
            $(
                backend_api!(@sig [$(#[$meta])*] [$($unsafe)?] $name [$($arg: $ty),*] [$ret] $($default)?);
            )*
        }

        #[allow(clippy::missing_safety_doc)]
        impl $Trait for FaultInjector {
            $(
                $(#[$meta])*
                $($unsafe)? fn $name(&self $(, $arg: $ty)*) -> $ret {
                    backend_api!(@forward $mode self $name ($($arg),*))
                }
            )*
        }
    };
    (@sig [$(#[$meta:meta])*] [$($unsafe:ident)?] $name:ident [$($arg:ident: $ty:ty),*] [$ret:ty]) => {
        $(#[$meta])*
        $($unsafe)? fn $name(&self $(, $arg: $ty)*) -> $ret;
    };
    (@sig [$(#[$meta:meta])*] [$($unsafe:ident)?] $name:ident [$($arg:ident: $ty:ty),*] [$ret:ty] $default:block) => {
        $(#[$meta])*
        $($unsafe)? fn $name(&self $(, $arg: $ty)*) -> $ret $default
    };
    // SAFETY (the three forwards): an `unsafe` method's caller guarantees are passed on
    // unchanged to the same method of the simulator underneath.
    (@forward counted $s:ident $name:ident ($($arg:ident),*)) => {{
        $s.tick(stringify!($name))?;
        #[allow(unused_unsafe)]
        unsafe { $s.inner.$name($($arg),*) }
    }};
    (@forward releases $s:ident $name:ident ($($arg:ident),*)) => {{
        #[allow(unused_unsafe)]
        let r = unsafe { $s.inner.$name($($arg),*) };
        // Released either way (as by the driver); then the injected error.
        $s.tick(stringify!($name))?;
        r
    }};
    (@forward uncounted $s:ident $name:ident ($($arg:ident),*)) => {{
        #[allow(unused_unsafe)]
        unsafe { $s.inner.$name($($arg),*) }
    }};
}

/// Everything the safe API asks of a device: the sum of the traits of each concern. `stream:
/// None` means the synchronous form. Methods that take raw pointers or handles are `unsafe`:
/// callers guarantee the handles are live and the host ranges valid for the given byte counts.
pub(crate) trait Backend:
    DeviceApi
    + MemoryApi
    + StreamApi
    + ModuleApi
    + LaunchApi
    + GraphApi
    + IpcApi
    + TextureApi
    + Send
    + Sync
{
}

impl<T> Backend for T where
    T: DeviceApi
        + MemoryApi
        + StreamApi
        + ModuleApi
        + LaunchApi
        + GraphApi
        + IpcApi
        + TextureApi
        + Send
        + Sync
{
}

/// What every IPC method of a backend without IPC (the simulator) answers.
pub(crate) fn no_ipc() -> Error {
    Error::Ipc {
        message: "the simulator cannot share device memory, events or pools with another \
                  process (they live inside this one): IPC needs a real GPU"
            .to_string(),
        code: None,
    }
}

backend_api! {
    /// The driver, devices and contexts (`cuInit`, `cuDevice*`, `cuCtx*`, peer access, the profiler).
    trait DeviceApi {
        /// Whether this backend is the simulator (what [`on_simulator`] answers; nothing outside
        /// this module branches on it).
        [uncounted]
        fn is_simulator(&self) -> bool = {
            false
        };
        /// Initialises the driver (`cuInit`). `at_exit` runs when the process exits normally
        /// (`exit` or the end of `main`), before the driver's own exit handlers: the runtime types
        /// free there what they keep for the whole run.
        [counted]
        fn init(&self, at_exit: fn()) -> Result<()>;
        [counted]
        fn driver_version(&self) -> Result<i32>;
        [counted]
        fn device_count(&self) -> Result<i32>;
        [counted]
        fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice>;
        [counted]
        fn device_name(&self, dev: sys::CUdevice) -> Result<String>;
        [counted]
        fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32>;
        [counted]
        fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]>;
        [counted]
        fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String>;
        [counted]
        fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize>;
        [counted]
        fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext>;
        [releases]
        fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()>;
        [counted]
        fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()>;
        [counted]
        fn ctx_get_current(&self) -> Result<sys::CUcontext>;
        [counted unsafe]
        fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()>;
        [counted]
        fn ctx_get_device(&self) -> Result<sys::CUdevice>;
        [counted]
        fn ctx_synchronize(&self) -> Result<()>;
        /// `cuCtxSetLimit` for the current context.
        [uncounted]
        fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()>;
        /// `cuCtxGetLimit` for the current context.
        [uncounted]
        fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize>;
        [counted]
        fn ctx_stream_priority_range(&self) -> Result<(i32, i32)>;
        /// Whether `dev` can access memory of `peer` directly (`cuDeviceCanAccessPeer`).
        [counted]
        fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool>;
        /// Lets the current context access memory of `peer` (`cuCtxEnablePeerAccess`).
        [counted unsafe]
        fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()>;
        [counted]
        fn profiler_start(&self) -> Result<()>;
        [counted]
        fn profiler_stop(&self) -> Result<()>;
    }
}

backend_api! {
    /// Allocations (device, managed, stream-ordered pools, pinned host memory), copies and fills.
    trait MemoryApi {
        [counted]
        fn mem_get_info(&self) -> Result<(usize, usize)>;
        [counted]
        fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr>;
        [releases unsafe]
        fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()>;
        [counted]
        fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr>;
        /// Stream-ordered allocation from the device's default memory pool.
        [counted unsafe]
        fn mem_alloc_async(
            &self,
            bytes: usize,
            stream: sys::CUstream,
        ) -> Result<sys::CUdeviceptr>;
        /// Stream-ordered free of memory from [`Backend::mem_alloc_async`].
        [releases unsafe]
        fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()>;
        /// The device's default memory pool (the one `mem_alloc_async` draws from).
        [counted]
        fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool>;
        /// A 64-bit attribute of a memory pool (release threshold, used/reserved bytes and their
        /// high watermarks).
        [counted unsafe]
        fn mem_pool_attribute(
            &self,
            pool: sys::CUmemoryPool,
            attr: sys::CUmemPool_attribute,
        ) -> Result<u64>;
        /// Sets a 64-bit attribute of a memory pool (a high watermark is reset by setting 0).
        [counted unsafe]
        fn set_mem_pool_attribute(
            &self,
            pool: sys::CUmemoryPool,
            attr: sys::CUmemPool_attribute,
            value: u64,
        ) -> Result<()>;
        /// Releases the pool's unused memory down to `keep` bytes.
        [counted unsafe]
        fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, keep: usize) -> Result<()>;
        /// Lets kernels on device `dev` read and write every allocation of `pool`, present and
        /// future (`cuMemPoolSetAccess`; pool memory ignores `cuCtxEnablePeerAccess`).
        [counted unsafe]
        fn mem_pool_grant_access(
            &self,
            pool: sys::CUmemoryPool,
            dev: sys::CUdevice,
        ) -> Result<()>;
        [counted unsafe]
        fn mem_prefetch(
            &self,
            ptr: sys::CUdeviceptr,
            bytes: usize,
            to_host: bool,
            dev: sys::CUdevice,
            stream: sys::CUstream,
        ) -> Result<()>;
        [counted]
        fn host_alloc(&self, bytes: usize, flags: u32) -> Result<*mut c_void>;
        [releases unsafe]
        fn host_free(&self, ptr: *mut c_void) -> Result<()>;
        [counted unsafe]
        fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr>;
        /// Whether the driver knows the memory at `ptr` (pinned or registered host memory, device
        /// or managed memory): `cuPointerGetAttribute(MEMORY_TYPE)` succeeds with a memory type.
        /// `false` for ordinary pageable host memory. A pure query: nothing is dereferenced.
        [uncounted]
        fn is_driver_memory(&self, ptr: *const c_void) -> bool;
        [counted unsafe]
        fn memcpy_htod(
            &self,
            dst: sys::CUdeviceptr,
            src: *const c_void,
            bytes: usize,
            stream: Option<sys::CUstream>,
        ) -> Result<()>;
        [counted unsafe]
        fn memcpy_dtoh(
            &self,
            dst: *mut c_void,
            src: sys::CUdeviceptr,
            bytes: usize,
            stream: Option<sys::CUstream>,
        ) -> Result<()>;
        [counted unsafe]
        fn memcpy_dtod(
            &self,
            dst: sys::CUdeviceptr,
            src: sys::CUdeviceptr,
            bytes: usize,
            stream: Option<sys::CUstream>,
        ) -> Result<()>;
        /// Copies between device memory of two contexts (`cuMemcpyPeer`, or `cuMemcpyPeerAsync`
        /// on `stream`); works with or without peer access enabled (staged through the host when
        /// it is not).
        [counted unsafe]
        fn memcpy_peer(
            &self,
            dst: sys::CUdeviceptr,
            dst_ctx: sys::CUcontext,
            src: sys::CUdeviceptr,
            src_ctx: sys::CUcontext,
            bytes: usize,
            stream: Option<sys::CUstream>,
        ) -> Result<()>;
        /// Fills `count` elements of `size` (1, 2 or 4) bytes with the low bytes of `bits`,
        /// `pitch` bytes apart (`pitch == size` for a dense fill).
        [counted unsafe]
        fn memset(
            &self,
            dst: sys::CUdeviceptr,
            bits: u32,
            size: usize,
            count: usize,
            pitch: usize,
            stream: Option<sys::CUstream>,
        ) -> Result<()>;
        /// Encodes a tiled tensor map (`cuTensorMapEncodeTiled`) after checking every rule of
        /// the driver's documentation ([`validate`](super::tensor_map::validate)). A pure
        /// encoding: nothing is dereferenced, no context is needed.
        [counted]
        fn tensor_map_encode_tiled(&self, desc: &TensorMapDesc) -> Result<TensorMapBytes>;
    }
}

backend_api! {
    /// Streams (with host callbacks) and events.
    trait StreamApi {
        [counted]
        fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream>;
        [releases unsafe]
        fn stream_destroy(&self, s: sys::CUstream) -> Result<()>;
        [counted unsafe]
        fn stream_synchronize(&self, s: sys::CUstream) -> Result<()>;
        /// `Ok(true)` when all work is done.
        [counted unsafe]
        fn stream_query(&self, s: sys::CUstream) -> Result<bool>;
        [counted unsafe]
        fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()>;
        [counted unsafe]
        fn stream_priority(&self, s: sys::CUstream) -> Result<i32>;
        [counted unsafe]
        fn stream_flags(&self, s: sys::CUstream) -> Result<u32>;
        [counted unsafe]
        fn launch_host_func(
            &self,
            s: sys::CUstream,
            f: HostFnPtr,
            data: *mut c_void,
        ) -> Result<()>;
        [counted unsafe]
        fn stream_add_callback(
            &self,
            s: sys::CUstream,
            f: StreamCallbackPtr,
            data: *mut c_void,
        ) -> Result<()>;
        [counted]
        fn event_create(&self, flags: u32) -> Result<sys::CUevent>;
        [releases unsafe]
        fn event_destroy(&self, e: sys::CUevent) -> Result<()>;
        [counted unsafe]
        fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()>;
        /// `Ok(true)` when the recorded work is done.
        [counted unsafe]
        fn event_query(&self, e: sys::CUevent) -> Result<bool>;
        [counted unsafe]
        fn event_synchronize(&self, e: sys::CUevent) -> Result<()>;
        [counted unsafe]
        fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32>;
    }
}

backend_api! {
    /// Loading, linking and unloading modules; their kernels and globals.
    trait ModuleApi {
        /// Loads a module image; a JIT failure is `Error::Jit` with the log, an image of a form
        /// this backend does not run a clear error. Returns the module and the JIT's info log.
        /// Unsafe: a cubin or fatbin must be a well-formed image (the driver trusts its headers).
        [counted unsafe]
        fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)>;
        /// Loads a kernel built with the builder as its IR, where this backend executes IR (the
        /// simulator: `Ok(Some(module))`). A backend that runs machine code answers `Ok(None)`,
        /// and the caller compiles the IR and loads the result (through the compile caches).
        [counted]
        fn module_load_kernel(&self, ir: &Arc<FunctionIr>) -> Result<Option<sys::CUmodule>> = {
            let _ = ir;
            Ok(None)
        };
        [releases unsafe]
        fn module_unload(&self, m: sys::CUmodule) -> Result<()>;
        /// Links device code with the driver's linker (`cuLinkCreate`/`cuLinkAddData`/
        /// `cuLinkComplete`) for the current context's device: each input is its type, its bytes
        /// (PTX with its NUL) and a name for the log. Returns the linked cubin and the info log; a
        /// failure is `Error::Jit` with the linker's log.
        [uncounted]
        fn link(&self, inputs: &[LinkInput<'_>]) -> Result<(Vec<u8>, String)> = {
            let _ = inputs;
            Err(Error::usage(
                "linking device code needs the CUDA driver; the simulator executes kernels' IR and \
                 cannot link PTX or cubin",
            ))
        };
        /// `Ok(None)` when the module has no such kernel.
        [counted unsafe]
        fn module_function(
            &self,
            m: sys::CUmodule,
            name: &std::ffi::CStr,
        ) -> Result<Option<sys::CUfunction>>;
        /// `Ok(None)` when the module has no such global; else its address and size.
        [counted unsafe]
        fn module_global(
            &self,
            m: sys::CUmodule,
            name: &std::ffi::CStr,
        ) -> Result<Option<(sys::CUdeviceptr, usize)>>;
    }
}

backend_api! {
    /// Kernel functions: attributes, occupancy and launches.
    trait LaunchApi {
        [counted unsafe]
        fn func_attribute(
            &self,
            f: sys::CUfunction,
            attr: sys::CUfunction_attribute,
        ) -> Result<i32>;
        [counted unsafe]
        fn func_set_attribute(
            &self,
            f: sys::CUfunction,
            attr: sys::CUfunction_attribute,
            value: i32,
        ) -> Result<()>;
        [counted unsafe]
        fn occupancy_max_potential_block_size(
            &self,
            f: sys::CUfunction,
            dynamic_smem: usize,
            block_limit: i32,
        ) -> Result<(i32, i32)>;
        [counted unsafe]
        fn occupancy_max_active_blocks(
            &self,
            f: sys::CUfunction,
            block: i32,
            dynamic_smem: usize,
        ) -> Result<i32>;
        #[allow(clippy::too_many_arguments)]
        [counted unsafe]
        fn launch_kernel(
            &self,
            f: sys::CUfunction,
            grid: [u32; 3],
            block: [u32; 3],
            shared_mem_bytes: u32,
            stream: sys::CUstream,
            params: *mut *mut c_void,
        ) -> Result<()>;
        /// A launch of thread-block clusters of `cluster` blocks (`cuLaunchKernelEx` with the
        /// cluster-dimension attribute; `cooperative`: also every block resident at once).
        #[allow(clippy::too_many_arguments)]
        [counted unsafe]
        fn launch_kernel_cluster(
            &self,
            f: sys::CUfunction,
            grid: [u32; 3],
            block: [u32; 3],
            cluster: [u32; 3],
            shared_mem_bytes: u32,
            stream: sys::CUstream,
            params: *mut *mut c_void,
            cooperative: bool,
        ) -> Result<()>;
        /// How many clusters of `cluster` blocks of `block` threads (with `shared_mem_bytes` of
        /// dynamic shared memory each) can be resident on the device at once
        /// (`cuOccupancyMaxActiveClusters`).
        [counted unsafe]
        fn occupancy_max_active_clusters(
            &self,
            f: sys::CUfunction,
            grid: [u32; 3],
            block: [u32; 3],
            cluster: [u32; 3],
            shared_mem_bytes: u32,
        ) -> Result<i32>;
        /// A cooperative launch (`cuLaunchCooperativeKernel`): every block resident at once, or
        /// the driver refuses the launch.
        #[allow(clippy::too_many_arguments)]
        [counted unsafe]
        fn launch_cooperative_kernel(
            &self,
            f: sys::CUfunction,
            grid: [u32; 3],
            block: [u32; 3],
            shared_mem_bytes: u32,
            stream: sys::CUstream,
            params: *mut *mut c_void,
        ) -> Result<()>;
    }
}

backend_api! {
    /// Stream capture and CUDA graphs.
    trait GraphApi {
        /// Starts capturing `s`'s work into a graph (thread-local mode: calls from this thread that
        /// cannot be captured fail instead of being recorded).
        [counted unsafe]
        fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()>;
        /// Ends the capture; the graph of what was captured.
        [counted unsafe]
        fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph>;
        /// Whether `s` is capturing now.
        [counted unsafe]
        fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool>;
        /// The graph's node count.
        [counted unsafe]
        fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize>;
        [counted unsafe]
        fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec>;
        [counted unsafe]
        fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()>;
        /// Updates an instantiated graph in place from a graph of the same shape (`Ok(None)`), or
        /// says why it cannot (`Ok(Some(reason))`).
        [counted unsafe]
        fn graph_exec_update(
            &self,
            e: sys::CUgraphExec,
            g: sys::CUgraph,
        ) -> Result<Option<String>>;
        [counted unsafe]
        fn graph_destroy(&self, g: sys::CUgraph) -> Result<()>;
        /// An empty graph, for building by hand.
        [counted]
        fn graph_create(&self) -> Result<sys::CUgraph>;
        /// Adds a kernel node after `deps` (`geometry`: grid, block and cluster dimensions;
        /// a cluster of 1, 1, 1 is none); the parameters are copied.
        [counted unsafe]
        fn graph_add_kernel(
            &self,
            g: sys::CUgraph,
            deps: &[sys::CUgraphNode],
            f: sys::CUfunction,
            geometry: [[u32; 3]; 3],
            shared_mem_bytes: u32,
            params: *mut *mut c_void,
        ) -> Result<sys::CUgraphNode>;
        /// Adds a device-to-device copy of `bytes` bytes after `deps`.
        [counted unsafe]
        fn graph_add_copy(
            &self,
            g: sys::CUgraph,
            deps: &[sys::CUgraphNode],
            dst: sys::CUdeviceptr,
            src: sys::CUdeviceptr,
            bytes: usize,
        ) -> Result<sys::CUgraphNode>;
        /// Adds a fill of `count` elements of `size` (1, 2 or 4) bytes with `bits` after `deps`.
        [counted unsafe]
        fn graph_add_memset(
            &self,
            g: sys::CUgraph,
            deps: &[sys::CUgraphNode],
            dst: sys::CUdeviceptr,
            bits: u32,
            size: usize,
            count: usize,
        ) -> Result<sys::CUgraphNode>;
        /// Adds a node that does nothing (a join point) after `deps`.
        [counted unsafe]
        fn graph_add_empty(
            &self,
            g: sys::CUgraph,
            deps: &[sys::CUgraphNode],
        ) -> Result<sys::CUgraphNode>;
        [counted unsafe]
        fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()>;
    }
}

backend_api! {
    /// Sharing memory, events and memory pools with other processes (`cuIpc*`, exportable
    /// pools). Every method defaults to an error: a backend without processes to share with
    /// (the simulator) keeps the defaults.
    trait IpcApi {
        /// The 64-byte handle of the allocation holding `ptr` (`cuIpcGetMemHandle`).
        [counted unsafe]
        fn ipc_get_mem_handle(&self, ptr: sys::CUdeviceptr) -> Result<[u8; 64]> = {
            let _ = ptr;
            Err(no_ipc())
        };
        /// Maps another process's allocation into the current context (`cuIpcOpenMemHandle_v2`
        /// with `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`); the base of the mapping.
        [counted]
        fn ipc_open_mem_handle(&self, handle: &[u8; 64]) -> Result<sys::CUdeviceptr> = {
            let _ = handle;
            Err(no_ipc())
        };
        /// Unmaps what [`IpcApi::ipc_open_mem_handle`] mapped (`cuIpcCloseMemHandle`).
        [releases unsafe]
        fn ipc_close_mem_handle(&self, base: sys::CUdeviceptr) -> Result<()> = {
            let _ = base;
            Err(no_ipc())
        };
        /// The 64-byte handle of an interprocess event (`cuIpcGetEventHandle`).
        [counted unsafe]
        fn ipc_get_event_handle(&self, e: sys::CUevent) -> Result<[u8; 64]> = {
            let _ = e;
            Err(no_ipc())
        };
        /// Opens another process's interprocess event in the current context
        /// (`cuIpcOpenEventHandle`); destroyed with `event_destroy`.
        [counted]
        fn ipc_open_event_handle(&self, handle: &[u8; 64]) -> Result<sys::CUevent> = {
            let _ = handle;
            Err(no_ipc())
        };
        /// A new memory pool of device memory on `dev` whose pool can be exported as a POSIX file
        /// descriptor (`cuMemPoolCreate` with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`).
        [counted]
        fn mem_pool_create_exportable(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> = {
            let _ = dev;
            Err(no_ipc())
        };
        /// Destroys a pool made or imported by cudajit (`cuMemPoolDestroy`).
        [releases unsafe]
        fn mem_pool_destroy(&self, pool: sys::CUmemoryPool) -> Result<()> = {
            let _ = pool;
            Err(no_ipc())
        };
        /// Stream-ordered allocation from `pool` (`cuMemAllocFromPoolAsync`).
        [counted unsafe]
        fn mem_alloc_from_pool(
            &self,
            bytes: usize,
            pool: sys::CUmemoryPool,
            stream: sys::CUstream,
        ) -> Result<sys::CUdeviceptr> = {
            let _ = (bytes, pool, stream);
            Err(no_ipc())
        };
        /// A new file descriptor for `pool` (`cuMemPoolExportToShareableHandle`); the caller
        /// owns it.
        [counted unsafe]
        fn mem_pool_export_fd(&self, pool: sys::CUmemoryPool) -> Result<i32> = {
            let _ = pool;
            Err(no_ipc())
        };
        /// Imports another process's pool from its file descriptor
        /// (`cuMemPoolImportFromShareableHandle`; the descriptor stays the caller's).
        [counted]
        fn mem_pool_import_fd(&self, fd: i32) -> Result<sys::CUmemoryPool> = {
            let _ = fd;
            Err(no_ipc())
        };
        /// The 64 bytes that name one allocation of an exportable pool (`cuMemPoolExportPointer`).
        [counted unsafe]
        fn mem_pool_export_pointer(&self, ptr: sys::CUdeviceptr) -> Result<[u8; 64]> = {
            let _ = ptr;
            Err(no_ipc())
        };
        /// The allocation `data` names in an imported pool (`cuMemPoolImportPointer`); freed
        /// with `mem_free_async`.
        [counted unsafe]
        fn mem_pool_import_pointer(
            &self,
            pool: sys::CUmemoryPool,
            data: &[u8; 64],
        ) -> Result<sys::CUdeviceptr> = {
            let _ = (pool, data);
            Err(no_ipc())
        };
        /// Whether kernels on `dev` may read and write `pool`'s memory (`cuMemPoolGetAccess`).
        [counted unsafe]
        fn mem_pool_can_access(&self, pool: sys::CUmemoryPool, dev: sys::CUdevice) -> Result<bool> = {
            let _ = (pool, dev);
            Err(no_ipc())
        };
        /// The base and size of the allocation holding `ptr` (`cuMemGetAddressRange_v2`).
        [counted unsafe]
        fn mem_address_range(&self, ptr: sys::CUdeviceptr) -> Result<(sys::CUdeviceptr, usize)> = {
            let _ = ptr;
            Err(no_ipc())
        };
    }
}

backend_api! {
    /// CUDA arrays, the copies to and from them, and texture and surface objects (see
    /// `texture.rs` for what each takes).
    trait TextureApi {
        /// A new CUDA array of the current context (`cuArray3DCreate_v2`).
        [counted]
        fn array_create(&self, desc: &ArrayDesc) -> Result<sys::CUarray>;
        /// Destroys a CUDA array (`cuArrayDestroy`).
        [releases unsafe]
        fn array_destroy(&self, a: sys::CUarray) -> Result<()>;
        /// A 3-D copy between host memory, device memory and CUDA arrays (`cuMemcpy3D_v2`, or
        /// `cuMemcpy3DAsync_v2` on `stream`). The caller guarantees live arrays and host and
        /// device ranges valid for the box.
        [counted unsafe]
        fn memcpy_3d(&self, copy: &Copy3d, stream: Option<sys::CUstream>) -> Result<()>;
        /// A texture object over `res` (`cuTexObjectCreate`); the caller keeps `res` alive
        /// while the object lives.
        [counted unsafe]
        fn tex_object_create(&self, res: &TexResource, desc: &TexDesc) -> Result<sys::CUtexObject>;
        /// Destroys a texture object (`cuTexObjectDestroy`).
        [releases unsafe]
        fn tex_object_destroy(&self, t: sys::CUtexObject) -> Result<()>;
        /// A surface object over a CUDA array made with `CUDA_ARRAY3D_SURFACE_LDST`
        /// (`cuSurfObjectCreate`).
        [counted unsafe]
        fn surf_object_create(&self, a: sys::CUarray) -> Result<sys::CUsurfObject>;
        /// Destroys a surface object (`cuSurfObjectDestroy`).
        [releases unsafe]
        fn surf_object_destroy(&self, s: sys::CUsurfObject) -> Result<()>;
    }
}
