//! The simulator's impls of the backend traits whose calls are spread over several files
//! (`DeviceApi`, `MemoryApi`, `ModuleApi`, `LaunchApi`): each method is answered here when it
//! is a line or two, else delegated to the module of its concern (`devices.rs`, `memory.rs`,
//! `copies.rs`, `modules.rs`, `functions.rs`, `launch.rs`). `StreamApi` and `GraphApi` are
//! implemented directly in `streams.rs` and `graph.rs`.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use cudajit_sys as sys;

use super::memory::Kind;
use super::{devices, Simulator, VERSION};
use crate::backend::tensor_map::{TensorMapBytes, TensorMapDesc};
use crate::backend::{DeviceApi, IpcApi, LaunchApi, MemoryApi, ModuleApi, ModuleImage};
use crate::error::Result;
use crate::ir::FunctionIr;

/// No IPC: the simulator's memory, events and pools live in this process (every method keeps
/// the trait's default, an error that says IPC needs a real GPU).
impl IpcApi for Simulator {}

impl DeviceApi for Simulator {
    fn is_simulator(&self) -> bool {
        true
    }

    fn init(&self, _at_exit: fn()) -> Result<()> {
        self.sim_init()
    }

    fn driver_version(&self) -> Result<i32> {
        Ok(VERSION)
    }

    fn device_count(&self) -> Result<i32> {
        Ok(self.devices.n as i32)
    }

    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        self.check_device(ordinal, "cuDeviceGet")?;
        Ok(ordinal)
    }

    fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        self.sim_device_name(dev)
    }

    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        self.check_device(dev, "cuDeviceGetAttribute")?;
        Ok(devices::attribute(attr, self.workers))
    }

    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        self.sim_device_uuid(dev)
    }

    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        self.sim_device_pci_bus_id(dev)
    }

    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        self.check_device(dev, "cuDeviceTotalMem_v2")?;
        Ok(self.total_mem)
    }

    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        self.sim_primary_ctx_retain(dev)
    }

    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        self.sim_primary_ctx_release(dev)
    }

    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        self.sim_primary_ctx_reset(dev)
    }

    fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        Ok(self.sim_ctx_get_current())
    }

    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        self.sim_ctx_set_current(ctx)
    }

    fn ctx_get_device(&self) -> Result<sys::CUdevice> {
        self.sim_ctx_get_device()
    }

    fn ctx_synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()> {
        self.sim_ctx_set_limit(limit, value);
        Ok(())
    }

    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize> {
        Ok(self.sim_ctx_get_limit(limit))
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        Ok((0, -5))
    }

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        self.sim_device_can_access_peer(dev, peer)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        self.sim_ctx_enable_peer_access(peer)
    }

    fn profiler_start(&self) -> Result<()> {
        Ok(())
    }

    fn profiler_stop(&self) -> Result<()> {
        Ok(())
    }
}

impl MemoryApi for Simulator {
    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let used = self.mem.lock().used[self.current_device()];
        Ok((self.total_mem.saturating_sub(used), self.total_mem))
    }

    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.alloc(bytes, Kind::Device, self.current_device(), "cuMemAlloc_v2")
    }

    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        self.free(ptr, Some(Kind::Device), "cuMemFree_v2")
    }

    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        let dev = self.current_device();
        self.alloc(bytes, Kind::Managed, dev, "cuMemAllocManaged")
    }

    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_mem_alloc_async(bytes, stream) }
    }

    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        self.sim_device_default_mem_pool(dev)
    }

    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        self.sim_mem_pool_attribute(pool, attr)
    }

    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        self.sim_set_mem_pool_attribute(pool, attr, value)
    }

    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, _keep: usize) -> Result<()> {
        self.pool(pool, "cuMemPoolTrimTo", |_| ())
    }

    unsafe fn mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()> {
        self.sim_mem_pool_grant_access(pool, dev)
    }

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_mem_free_async(ptr, stream) }
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        _stream: sys::CUstream,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_mem_prefetch(ptr, bytes, to_host, dev, _stream) }
    }

    fn host_alloc(&self, bytes: usize, _flags: u32) -> Result<*mut c_void> {
        // Pinned memory is the host's: reachable from every device (device 0 is a label only).
        Ok(self.alloc(bytes, Kind::Host, 0, "cuMemHostAlloc")? as *mut c_void)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        self.free(ptr as u64, Some(Kind::Host), "cuMemFreeHost")
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_host_device_pointer(ptr) }
    }

    fn is_driver_memory(&self, ptr: *const c_void) -> bool {
        self.mem.lock().find(ptr as u64, 1).is_some()
    }

    unsafe fn memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_memcpy_htod(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_memcpy_dtoh(dst, src, bytes, stream) }
    }

    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_memcpy_dtod(dst, src, bytes, stream) }
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
        unsafe { self.sim_memcpy_peer(dst, dst_ctx, src, src_ctx, bytes, stream) }
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
        unsafe { self.sim_memset(dst, bits, size, count, pitch, stream) }
    }

    fn tensor_map_encode_tiled(&self, desc: &TensorMapDesc) -> Result<TensorMapBytes> {
        self.sim_tensor_map_encode_tiled(desc)
    }
}

impl ModuleApi for Simulator {
    unsafe fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)> {
        self.sim_module_load(image)
    }

    fn module_load_kernel(&self, ir: &Arc<FunctionIr>) -> Result<Option<sys::CUmodule>> {
        self.sim_module_load_kernel(ir).map(Some)
    }

    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_module_unload(m) }
    }

    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<sys::CUfunction>> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_module_function(m, name) }
    }

    unsafe fn module_global(
        &self,
        _m: sys::CUmodule,
        _name: &CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>> {
        Ok(None)
    }
}

impl LaunchApi for Simulator {
    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        self.sim_func_attribute(f, attr)
    }

    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        self.sim_func_set_attribute(f, attr, value)
    }

    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        self.sim_occupancy_max_potential_block_size(f, dynamic_smem, block_limit)
    }

    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        self.sim_occupancy_max_active_blocks(f, block, dynamic_smem)
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
        // Blocks of a kernel that synchronises its grid run all at once (`Launch::run`).
        // SAFETY: as `launch_kernel`'s; the caller's contract is the same.
        unsafe { self.launch_kernel(f, grid, block, shared_mem_bytes, stream, params) }
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
        let one = [1, 1, 1];
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_launch_kernel(f, [grid, block, one], shared_mem_bytes, stream, params) }
    }

    unsafe fn launch_kernel_cluster(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
        _cooperative: bool,
    ) -> Result<()> {
        // Blocks of a kernel that synchronises its grid run all at once (`Launch::run`).
        // SAFETY: the caller's contract, passed on.
        unsafe {
            self.sim_launch_kernel(f, [grid, block, cluster], shared_mem_bytes, stream, params)
        }
    }

    unsafe fn occupancy_max_active_clusters(
        &self,
        f: sys::CUfunction,
        _grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        shared_mem_bytes: u32,
    ) -> Result<i32> {
        self.sim_occupancy_max_active_clusters(f, block, cluster, shared_mem_bytes)
    }
}
