//! The CUDA driver backend: each method is one (or two) driver calls through `cudajit-sys`.
//!
//! The calls are grouped by what they touch: `context.rs` (devices, contexts, peer access, the
//! profiler), `memory.rs` (allocations, memory pools, copies and fills), `streams.rs` (streams
//! and events), `modules.rs` (loading, linking and the JIT's logs), `launch.rs` (kernel
//! functions' attributes, occupancy and launches) and `graphs.rs` (stream capture and graphs).
//! The [`Backend`] impl below only delegates to them.

use std::ffi::{c_void, CStr};

use cudajit_sys as sys;

use super::{Backend, HostFnPtr, ModuleImage, StreamCallbackPtr};
use crate::error::{Error, Result};

/// libcuda, loaded at run time.
pub(crate) struct CudaDriver;

/// Calls a driver function (through `cudajit-sys`'s lazy entry points) and turns its result
/// into `Result<()>`, naming the call on failure. Must be used inside an `unsafe` context.
macro_rules! drv {
    ($f:ident($($arg:expr),* $(,)?)) => {
        check(sys::$f($($arg),*), stringify!($f))
    };
}

mod context;
mod graphs;
mod launch;
mod memory;
mod modules;
mod streams;

// Each method delegates to `cu_<method>` in the module of its concern (listed above).
impl Backend for CudaDriver {
    fn init(&self, at_exit: fn()) -> Result<()> {
        self.cu_init(at_exit)
    }

    fn driver_version(&self) -> Result<i32> {
        self.cu_driver_version()
    }

    fn device_count(&self) -> Result<i32> {
        self.cu_device_count()
    }

    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        self.cu_device_get(ordinal)
    }

    fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        self.cu_device_name(dev)
    }

    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        self.cu_device_attribute(dev, attr)
    }

    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        self.cu_device_uuid(dev)
    }

    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        self.cu_device_pci_bus_id(dev)
    }

    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        self.cu_device_total_mem(dev)
    }

    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        self.cu_primary_ctx_retain(dev)
    }

    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        self.cu_primary_ctx_release(dev)
    }

    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        self.cu_primary_ctx_reset(dev)
    }

    fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        self.cu_ctx_get_current()
    }

    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_ctx_set_current(ctx) }
    }

    fn ctx_get_device(&self) -> Result<sys::CUdevice> {
        self.cu_ctx_get_device()
    }

    fn ctx_synchronize(&self) -> Result<()> {
        self.cu_ctx_synchronize()
    }

    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()> {
        self.cu_ctx_set_limit(limit, value)
    }

    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize> {
        self.cu_ctx_get_limit(limit)
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        self.cu_mem_get_info()
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        self.cu_ctx_stream_priority_range()
    }

    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.cu_mem_alloc(bytes)
    }

    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_free(ptr) }
    }

    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.cu_mem_alloc_managed(bytes)
    }

    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_alloc_async(bytes, stream) }
    }

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_free_async(ptr, stream) }
    }

    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        self.cu_device_default_mem_pool(dev)
    }

    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_pool_attribute(pool, attr) }
    }

    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_set_mem_pool_attribute(pool, attr, value) }
    }

    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, keep: usize) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_pool_trim_to(pool, keep) }
    }

    unsafe fn mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_pool_grant_access(pool, dev) }
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_mem_prefetch(ptr, bytes, to_host, dev, stream) }
    }

    fn host_alloc(&self, bytes: usize, flags: u32) -> Result<*mut c_void> {
        self.cu_host_alloc(bytes, flags)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_host_free(ptr) }
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_host_device_pointer(ptr) }
    }

    fn is_driver_memory(&self, ptr: *const c_void) -> bool {
        self.cu_is_driver_memory(ptr)
    }

    unsafe fn memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_memcpy_htod(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_memcpy_dtoh(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_memcpy_dtod(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_peer(
        &self,
        dst: sys::CUdeviceptr,
        dst_ctx: sys::CUcontext,
        src: sys::CUdeviceptr,
        src_ctx: sys::CUcontext,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_memcpy_peer(dst, dst_ctx, src, src_ctx, bytes, stream) }
    }

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        self.cu_device_can_access_peer(dev, peer)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_ctx_enable_peer_access(peer) }
    }

    unsafe fn memset(
        &self,
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
        pitch: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_memset(dst, bits, size, count, pitch, stream) }
    }

    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        self.cu_stream_create(flags, priority)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_destroy(s) }
    }

    unsafe fn stream_synchronize(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_synchronize(s) }
    }

    unsafe fn stream_query(&self, s: sys::CUstream) -> Result<bool> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_query(s) }
    }

    unsafe fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_wait_event(s, e) }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_priority(s) }
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_flags(s) }
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_launch_host_func(s, f, data) }
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_add_callback(s, f, data) }
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        self.cu_event_create(flags)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_event_destroy(e) }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_event_record(e, s) }
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_event_query(e) }
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_event_synchronize(e) }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_event_elapsed_ms(start, end) }
    }

    unsafe fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)> {
        let kind = image.kind();
        let ptr: *const c_void = match image {
            ModuleImage::Ptx(text) => text.as_ptr().cast(),
            ModuleImage::Cubin(words) | ModuleImage::Fatbin(words) => words.as_ptr().cast(),
            ModuleImage::Ir(ir) => {
                return Err(Error::Kernel {
                    kernel: ir.name.clone(),
                    message: "internal: the CUDA driver loads PTX or machine code, not kernel IR \
                              (please report this)"
                        .to_string(),
                })
            }
        };
        // SAFETY: NUL-terminated PTX or an aligned, well-formed image (the caller's contract),
        // alive for the call.
        unsafe { self.cu_module_load(ptr, kind) }
    }

    fn link(&self, inputs: &[super::LinkInput<'_>]) -> Result<(Vec<u8>, String)> {
        self.cu_link(inputs)
    }

    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_module_unload(m) }
    }

    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<sys::CUfunction>> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_module_function(m, name) }
    }

    unsafe fn module_global(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_module_global(m, name) }
    }

    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_func_attribute(f, attr) }
    }

    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_func_set_attribute(f, attr, value) }
    }

    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_occupancy_max_potential_block_size(f, dynamic_smem, block_limit) }
    }

    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_occupancy_max_active_blocks(f, block, dynamic_smem) }
    }

    unsafe fn launch_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_launch_kernel(f, grid, block, shared_mem_bytes, stream, params) }
    }

    unsafe fn launch_cooperative_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            self.cu_launch_cooperative_kernel(f, grid, block, shared_mem_bytes, stream, params)
        }
    }

    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_begin_capture(s) }
    }

    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_end_capture(s) }
    }

    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_stream_is_capturing(s) }
    }

    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_node_count(g) }
    }

    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_instantiate(g) }
    }

    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_launch(e, s) }
    }

    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_exec_update(e, g) }
    }

    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_destroy(g) }
    }

    fn graph_create(&self) -> Result<sys::CUgraph> {
        self.cu_graph_create()
    }

    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        params: *mut *mut c_void,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_add_kernel(g, deps, f, grid, block, shared_mem_bytes, params) }
    }

    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_add_copy(g, deps, dst, src, bytes) }
    }

    unsafe fn graph_add_memset(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_add_memset(g, deps, dst, bits, size, count) }
    }

    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_add_empty(g, deps) }
    }

    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.cu_graph_exec_destroy(e) }
    }

    fn profiler_start(&self) -> Result<()> {
        self.cu_profiler_start()
    }

    fn profiler_stop(&self) -> Result<()> {
        self.cu_profiler_stop()
    }
}
