//! A backend for tests that makes a chosen driver call fail: the simulator, with every call
//! counted and the N-th one answered with an injected error instead (before the call, so
//! nothing happens; for calls that release something, after it, as the driver releases the
//! resource even when it reports an error). Chosen with [`crate::fault_injection::install`]
//! before anything else uses the device; `tests/faults.rs` fails every call of a scripted
//! workload in turn and checks that each failure comes back as an `Error`, that nothing
//! panics, hangs or leaks, and that the context stays usable.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use cudajit_sys as sys;

use super::sim::Simulator;
use super::{Backend, HostFnPtr, ModuleImage, StreamCallbackPtr};
use crate::error::{DriverCode, Error, Result};
use crate::ir::FunctionIr;

/// The fault-injecting backend.
pub(crate) struct FaultInjector {
    inner: Simulator,
    /// Calls since the plan was last set.
    calls: AtomicU64,
    /// The call (1-based, counted from the plan) that fails; 0: none.
    fail_at: AtomicU64,
    /// The result code it fails with.
    code: AtomicU32,
    /// Failures injected so far.
    injected: AtomicU64,
}

impl FaultInjector {
    pub(crate) fn new() -> FaultInjector {
        FaultInjector {
            inner: Simulator::new(),
            calls: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
            code: AtomicU32::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Makes call `n` from now fail with `code` (`n == 0`: no failure); resets the count.
    pub(crate) fn plan(&self, n: u64, code: sys::CUresult) {
        self.fail_at.store(0, Ordering::SeqCst);
        self.calls.store(0, Ordering::SeqCst);
        self.code.store(code.0, Ordering::SeqCst);
        self.fail_at.store(n, Ordering::SeqCst);
    }

    /// Calls counted since the plan was set.
    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Failures injected since the process started.
    pub(crate) fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// What is alive in the simulator underneath.
    pub(crate) fn live(&self) -> [usize; 5] {
        self.inner.live()
    }

    /// Counts a call; the planned one fails.
    fn tick(&self, call: &'static str) -> Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(Error::Driver {
                call,
                code: DriverCode(sys::CUresult(self.code.load(Ordering::SeqCst))),
            });
        }
        Ok(())
    }
}

#[allow(clippy::missing_safety_doc)]
impl Backend for FaultInjector {
    fn is_simulator(&self) -> bool {
        true
    }

    fn module_load_kernel(
        &self,
        ir: &Arc<FunctionIr>,
        machine_code: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<sys::CUmodule>> {
        self.tick("module_load_kernel")?;
        self.inner.module_load_kernel(ir, machine_code)
    }

    fn init(&self, at_exit: fn()) -> Result<()> {
        self.tick("init")?;
        self.inner.init(at_exit)
    }

    fn driver_version(&self) -> Result<i32> {
        self.tick("driver_version")?;
        self.inner.driver_version()
    }

    fn device_count(&self) -> Result<i32> {
        self.tick("device_count")?;
        self.inner.device_count()
    }

    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        self.tick("device_get")?;
        self.inner.device_get(ordinal)
    }

    fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        self.tick("device_name")?;
        self.inner.device_name(dev)
    }

    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        self.tick("device_attribute")?;
        self.inner.device_attribute(dev, attr)
    }

    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        self.tick("device_uuid")?;
        self.inner.device_uuid(dev)
    }

    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        self.tick("device_pci_bus_id")?;
        self.inner.device_pci_bus_id(dev)
    }

    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        self.tick("device_total_mem")?;
        self.inner.device_total_mem(dev)
    }

    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        self.tick("primary_ctx_retain")?;
        self.inner.primary_ctx_retain(dev)
    }

    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        let r = self.inner.primary_ctx_release(dev);
        // Released either way (as by the driver); then the injected error.
        self.tick("primary_ctx_release")?;
        r
    }

    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        self.tick("primary_ctx_reset")?;
        self.inner.primary_ctx_reset(dev)
    }

    fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        self.tick("ctx_get_current")?;
        self.inner.ctx_get_current()
    }

    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        self.tick("ctx_set_current")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.ctx_set_current(ctx) }
    }

    fn ctx_get_device(&self) -> Result<sys::CUdevice> {
        self.tick("ctx_get_device")?;
        self.inner.ctx_get_device()
    }

    fn ctx_synchronize(&self) -> Result<()> {
        self.tick("ctx_synchronize")?;
        self.inner.ctx_synchronize()
    }

    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()> {
        self.inner.ctx_set_limit(limit, value)
    }

    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize> {
        self.inner.ctx_get_limit(limit)
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        self.tick("mem_get_info")?;
        self.inner.mem_get_info()
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        self.tick("ctx_stream_priority_range")?;
        self.inner.ctx_stream_priority_range()
    }

    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.tick("mem_alloc")?;
        self.inner.mem_alloc(bytes)
    }

    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.mem_free(ptr) };
        // Released either way (as by the driver); then the injected error.
        self.tick("mem_free")?;
        r
    }

    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.tick("mem_alloc_managed")?;
        self.inner.mem_alloc_managed(bytes)
    }

    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        self.tick("mem_alloc_async")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.mem_alloc_async(bytes, stream) }
    }

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.mem_free_async(ptr, stream) };
        // Released either way (as by the driver); then the injected error.
        self.tick("mem_free_async")?;
        r
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        stream: sys::CUstream,
    ) -> Result<()> {
        self.tick("mem_prefetch")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.mem_prefetch(ptr, bytes, to_host, dev, stream) }
    }

    fn host_alloc(&self, bytes: usize, flags: u32) -> Result<*mut c_void> {
        self.tick("host_alloc")?;
        self.inner.host_alloc(bytes, flags)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.host_free(ptr) };
        // Released either way (as by the driver); then the injected error.
        self.tick("host_free")?;
        r
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        self.tick("host_device_pointer")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.host_device_pointer(ptr) }
    }

    fn is_driver_memory(&self, ptr: *const c_void) -> bool {
        self.inner.is_driver_memory(ptr)
    }

    unsafe fn memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.tick("memcpy_htod")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.memcpy_htod(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.tick("memcpy_dtoh")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.memcpy_dtoh(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.tick("memcpy_dtod")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.memcpy_dtod(dst, src, bytes, stream) }
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
        self.tick("memcpy_peer")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe {
            self.inner
                .memcpy_peer(dst, dst_ctx, src, src_ctx, bytes, stream)
        }
    }

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        self.tick("device_can_access_peer")?;
        self.inner.device_can_access_peer(dev, peer)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        self.tick("ctx_enable_peer_access")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.ctx_enable_peer_access(peer) }
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
        self.tick("memset")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.memset(dst, bits, size, count, pitch, stream) }
    }

    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        self.tick("stream_create")?;
        self.inner.stream_create(flags, priority)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.stream_destroy(s) };
        // Released either way (as by the driver); then the injected error.
        self.tick("stream_destroy")?;
        r
    }

    unsafe fn stream_synchronize(&self, s: sys::CUstream) -> Result<()> {
        self.tick("stream_synchronize")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_synchronize(s) }
    }

    unsafe fn stream_query(&self, s: sys::CUstream) -> Result<bool> {
        self.tick("stream_query")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_query(s) }
    }

    unsafe fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        self.tick("stream_wait_event")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_wait_event(s, e) }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        self.tick("stream_priority")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_priority(s) }
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        self.tick("stream_flags")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_flags(s) }
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        self.tick("launch_host_func")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.launch_host_func(s, f, data) }
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        self.tick("stream_add_callback")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.stream_add_callback(s, f, data) }
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        self.tick("event_create")?;
        self.inner.event_create(flags)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.event_destroy(e) };
        // Released either way (as by the driver); then the injected error.
        self.tick("event_destroy")?;
        r
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        self.tick("event_record")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.event_record(e, s) }
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        self.tick("event_query")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.event_query(e) }
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        self.tick("event_synchronize")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.event_synchronize(e) }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        self.tick("event_elapsed_ms")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.event_elapsed_ms(start, end) }
    }

    unsafe fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)> {
        self.tick("module_load")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.module_load(image) }
    }

    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()> {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let r = unsafe { self.inner.module_unload(m) };
        // Released either way (as by the driver); then the injected error.
        self.tick("module_unload")?;
        r
    }

    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> Result<Option<sys::CUfunction>> {
        self.tick("module_function")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.module_function(m, name) }
    }

    unsafe fn module_global(
        &self,
        m: sys::CUmodule,
        name: &std::ffi::CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>> {
        self.tick("module_global")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.module_global(m, name) }
    }

    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        self.tick("func_attribute")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.func_attribute(f, attr) }
    }

    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        self.tick("func_set_attribute")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.func_set_attribute(f, attr, value) }
    }

    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        self.tick("occupancy_max_potential_block_size")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe {
            self.inner
                .occupancy_max_potential_block_size(f, dynamic_smem, block_limit)
        }
    }

    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        self.tick("occupancy_max_active_blocks")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe {
            self.inner
                .occupancy_max_active_blocks(f, block, dynamic_smem)
        }
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
        self.tick("launch_kernel")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe {
            self.inner
                .launch_kernel(f, grid, block, shared_mem_bytes, stream, params)
        }
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
        self.tick("launch_cooperative_kernel")?;
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe {
            self.inner
                .launch_cooperative_kernel(f, grid, block, shared_mem_bytes, stream, params)
        }
    }

    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()> {
        self.tick("stream_begin_capture")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.stream_begin_capture(s) }
    }

    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph> {
        self.tick("stream_end_capture")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.stream_end_capture(s) }
    }

    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool> {
        self.tick("stream_is_capturing")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.stream_is_capturing(s) }
    }

    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize> {
        self.tick("graph_node_count")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_node_count(g) }
    }

    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec> {
        self.tick("graph_instantiate")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_instantiate(g) }
    }

    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()> {
        self.tick("graph_launch")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_launch(e, s) }
    }

    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>> {
        self.tick("graph_exec_update")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_exec_update(e, g) }
    }

    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()> {
        self.tick("graph_destroy")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_destroy(g) }
    }

    fn graph_create(&self) -> Result<sys::CUgraph> {
        self.tick("graph_create")?;
        self.inner.graph_create()
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
        self.tick("graph_add_kernel")?;
        // SAFETY: the caller's contract, passed on.
        unsafe {
            self.inner
                .graph_add_kernel(g, deps, f, grid, block, shared_mem_bytes, params)
        }
    }

    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode> {
        self.tick("graph_add_copy")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_add_copy(g, deps, dst, src, bytes) }
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
        self.tick("graph_add_memset")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_add_memset(g, deps, dst, bits, size, count) }
    }

    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode> {
        self.tick("graph_add_empty")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_add_empty(g, deps) }
    }

    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()> {
        self.tick("graph_exec_destroy")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.graph_exec_destroy(e) }
    }

    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        self.tick("device_default_mem_pool")?;
        self.inner.device_default_mem_pool(dev)
    }

    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        self.tick("mem_pool_attribute")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.mem_pool_attribute(pool, attr) }
    }

    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        self.tick("set_mem_pool_attribute")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.set_mem_pool_attribute(pool, attr, value) }
    }

    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, keep: usize) -> Result<()> {
        self.tick("mem_pool_trim_to")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.mem_pool_trim_to(pool, keep) }
    }

    unsafe fn mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()> {
        self.tick("mem_pool_grant_access")?;
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.mem_pool_grant_access(pool, dev) }
    }

    fn profiler_start(&self) -> Result<()> {
        self.tick("profiler_start")?;
        self.inner.profiler_start()
    }

    fn profiler_stop(&self) -> Result<()> {
        self.tick("profiler_stop")?;
        self.inner.profiler_stop()
    }
}
