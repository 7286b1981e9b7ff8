//! The CPU simulator: a [`Backend`] that runs kernels built with cudajit's builder on the host,
//! with no GPU and no driver (numba's `NUMBA_ENABLE_CUDASIM`, with warps).
//!
//! - One simulated device: compute capability of the default PTX target, one multiprocessor
//!   per host core, 1024 threads per block, 48 KiB of static shared memory (227 KiB opt-in),
//!   the host's memory as device memory.
//! - Device, managed and pinned memory are host allocations; a device pointer is the host
//!   address, so every copy is a `memcpy`.
//! - Work runs when it is submitted, in the calling thread: streams are trivially in order,
//!   host callbacks run at once, events record the wall-clock time.
//! - Kernels: the module is the kernel's IR ([`Backend::module_load_ir`]); a launch executes it
//!   block by block on the host's cores (`block.rs`), and reports what the GPU would not:
//!   out-of-bounds accesses, divergent barriers, shared-memory races, misaligned accesses
//!   ([`crate::Error::Fault`]). A faulting launch stops cleanly; the context stays usable.
//! - Loading PTX, cubin or fatbin images is not supported (there is no PTX interpreter).

mod access;
mod block;
mod eval;
mod fault;
mod global;
mod graph;
mod half;
mod launch;
mod memory;
mod warp;

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::Arc;
use std::time::Instant;

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::{Backend, HostFnPtr, StreamCallbackPtr};
use crate::codegen::ir::FunctionIr;
use crate::error::{DriverCode, Error, Result};
use memory::{Kind, Memory};

/// Context limits set on the simulator (`cuCtxSetLimit`): (limit, value). The simulator keeps
/// them only to report them back.
static LIMITS: Mutex<Vec<(u32, usize)>> = Mutex::new(Vec::new());

/// The simulated device's name.
pub(crate) const DEVICE_NAME: &str = "cudajit simulator";

/// The CUDA version the simulator reports (`cuDriverGetVersion`): 12.8.
const VERSION: i32 = 12080;

/// Static shared memory per block, and the opt-in maximum (as on an H100/H200).
const SHARED_PER_BLOCK: i32 = 48 * 1024;
const SHARED_OPTIN: i32 = 227 * 1024;

/// The primary context's handle (an opaque value nothing dereferences).
const CTX: usize = 0x5157_c0de;

/// An error as the driver would return it.
fn err(call: &'static str, code: sys::CUresult) -> Error {
    Error::Driver {
        call,
        code: DriverCode(code),
    }
}

fn invalid(call: &'static str) -> Error {
    err(call, sys::CUresult::CUDA_ERROR_INVALID_VALUE)
}

fn bad_handle(call: &'static str) -> Error {
    err(call, sys::CUresult::CUDA_ERROR_INVALID_HANDLE)
}

struct EventState {
    at: Option<Instant>,
    timing: bool,
}

struct FuncState {
    ir: Arc<FunctionIr>,
    /// The module it belongs to (two modules may hold one IR: a kernel loaded twice).
    module: usize,
    /// The dynamic shared memory a launch may use (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    max_dynamic: i32,
}

/// The simulated device's memory pool: what stream-ordered allocations hold (the simulator
/// keeps nothing cached, so reserved equals used).
#[derive(Default)]
struct PoolState {
    live: HashMap<u64, u64>,
    used: u64,
    high: u64,
    threshold: u64,
}

/// The default memory pool's handle (an opaque value nothing dereferences).
const POOL: usize = 0x5157_9001;

/// Streams, events, modules and functions, by the handle values made up for them.
#[derive(Default)]
struct Handles {
    next: usize,
    streams: HashMap<usize, (u32, i32)>,
    events: HashMap<usize, EventState>,
    modules: HashMap<usize, Arc<FunctionIr>>,
    functions: HashMap<usize, FuncState>,
}

impl Handles {
    /// A new handle value: non-null, 16-byte spaced, far from the special stream handles.
    fn make(&mut self) -> usize {
        self.next += 1;
        0x51_0000 + self.next * 16
    }
}

/// The simulator backend.
pub(crate) struct Simulator {
    mem: Mutex<Memory>,
    handles: Mutex<Handles>,
    graphs: Mutex<graph::Graphs>,
    pool: Mutex<PoolState>,
    retained: Mutex<u32>,
    /// Host threads running a launch's blocks (the simulated multiprocessors).
    workers: usize,
    total_mem: usize,
}

thread_local! {
    static CURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Simulator {
    pub(crate) fn new() -> Simulator {
        let workers = std::env::var("CUDAJIT_SIM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Simulator {
            mem: Mutex::new(Memory::default()),
            handles: Mutex::new(Handles::default()),
            graphs: Mutex::new(graph::Graphs::default()),
            pool: Mutex::new(PoolState::default()),
            retained: Mutex::new(0),
            workers,
            total_mem: memory::host_memory(),
        }
    }

    /// What is alive now: (device and managed allocations, pinned host allocations, streams,
    /// events, modules), for the fault-injection tests' leak checks.
    pub(crate) fn live(&self) -> [usize; 5] {
        let (dev, host) = self.mem.lock().counts();
        let h = self.handles.lock();
        [dev, host, h.streams.len(), h.events.len(), h.modules.len()]
    }

    fn check_device(&self, dev: sys::CUdevice, call: &'static str) -> Result<()> {
        if dev == 0 {
            Ok(())
        } else {
            Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_DEVICE))
        }
    }

    fn alloc(&self, bytes: usize, kind: Kind, call: &'static str) -> Result<u64> {
        if bytes == 0 {
            return Err(invalid(call));
        }
        let mut mem = self.mem.lock();
        if kind != Kind::Host && mem.used.saturating_add(bytes) > self.total_mem {
            return Err(err(call, sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        }
        mem.alloc(bytes, kind)
            .ok_or_else(|| err(call, sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
    }

    fn free(&self, ptr: u64, kind: Option<Kind>, call: &'static str) -> Result<()> {
        if self.mem.lock().free(ptr, kind) {
            Ok(())
        } else {
            Err(invalid(call))
        }
    }

    /// Checks that `[ptr, ptr + bytes)` is simulator memory.
    /// When `stream` is capturing, records `node` (made only then) and returns `true`: the
    /// work becomes part of the graph instead of running.
    fn recorded(&self, stream: Option<sys::CUstream>, node: impl FnOnce() -> graph::Node) -> bool {
        let Some(s) = stream else { return false };
        let mut g = self.graphs.lock();
        match g.capturing.get_mut(&(s as usize)) {
            Some((nodes, _)) => {
                nodes.push(node());
                true
            }
            None => false,
        }
    }

    /// Appends `node` to graph `g` (nodes run in the order added, which respects every
    /// dependency, since a node's dependencies exist before it); its handle.
    fn add_node(&self, g: sys::CUgraph, node: graph::Node) -> Result<sys::CUgraphNode> {
        let h = self.handles.lock().make();
        let mut graphs = self.graphs.lock();
        let graph = graphs
            .graphs
            .get_mut(&(g as usize))
            .ok_or_else(|| bad_handle("cuGraphAdd*Node"))?;
        graph.nodes.push(node);
        Ok(h as sys::CUgraphNode)
    }

    fn check_range(&self, ptr: u64, bytes: usize, call: &'static str) -> Result<()> {
        if bytes == 0 || self.mem.lock().find(ptr, bytes as u64).is_some() {
            Ok(())
        } else {
            Err(invalid(call))
        }
    }

    fn attribute(&self, attr: sys::CUdevice_attribute) -> i32 {
        use sys::CUdevice_attribute as A;
        let (major, minor) = crate::codegen::default_cc();
        let table: &[(A, i32)] = &[
            (A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024),
            (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024),
            (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024),
            (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64),
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, i32::MAX),
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535),
            (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535),
            (
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                SHARED_PER_BLOCK,
            ),
            (
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                SHARED_OPTIN,
            ),
            (
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                228 * 1024,
            ),
            (A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 * 1024),
            (A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32),
            (A::CU_DEVICE_ATTRIBUTE_MAX_PITCH, i32::MAX),
            (A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536),
            (
                A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                65536,
            ),
            (A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1_000_000),
            (A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1_000_000),
            (A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 64),
            (A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 4 << 20),
            (
                A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                self.workers as i32,
            ),
            (A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048),
            (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32),
            (
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                major as i32,
            ),
            (
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                minor as i32,
            ),
            (A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1),
            (A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1),
            (A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1),
            (A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1),
            (A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1),
            (A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1),
            (A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 1),
            (
                A::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
                2,
            ),
            (A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1),
            (A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1),
        ];
        table
            .iter()
            .find(|(a, _)| *a == attr)
            .map_or(0, |&(_, v)| v)
    }

    fn func<R>(
        &self,
        f: sys::CUfunction,
        call: &'static str,
        with: impl FnOnce(&mut FuncState) -> R,
    ) -> Result<R> {
        let mut h = self.handles.lock();
        let st = h
            .functions
            .get_mut(&(f as usize))
            .ok_or_else(|| bad_handle(call))?;
        Ok(with(st))
    }
}

/// Static shared memory of a kernel and the device functions it calls, bytes.
fn static_shared(f: &FunctionIr) -> usize {
    let own: usize = f
        .shared
        .iter()
        .map(|s| s.len as usize * s.elem.size())
        .sum();
    own + f.callees.iter().map(|c| static_shared(c)).sum::<usize>()
}

/// Local memory per thread, bytes.
fn local_bytes(f: &FunctionIr) -> usize {
    let own: usize = f
        .locals
        .iter()
        .map(|s| s.len as usize * s.elem.size())
        .sum();
    own + f.callees.iter().map(|c| local_bytes(c)).max().unwrap_or(0)
}

/// Most threads per block a kernel may be launched with.
fn max_threads(f: &FunctionIr) -> i32 {
    f.launch_bounds
        .map_or(1024, |(t, _)| t.clamp(1, 1024) as i32)
}

impl Backend for Simulator {
    fn is_simulator(&self) -> bool {
        true
    }

    fn init(&self) -> Result<()> {
        Ok(())
    }

    fn driver_version(&self) -> Result<i32> {
        Ok(VERSION)
    }

    fn device_count(&self) -> Result<i32> {
        Ok(1)
    }

    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        self.check_device(ordinal, "cuDeviceGet")?;
        Ok(0)
    }

    fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        self.check_device(dev, "cuDeviceGetName")?;
        Ok(DEVICE_NAME.to_string())
    }

    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        self.check_device(dev, "cuDeviceGetAttribute")?;
        Ok(self.attribute(attr))
    }

    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        self.check_device(dev, "cuDeviceGetUuid_v2")?;
        Ok(*b"cudajit-simulatr")
    }

    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        self.check_device(dev, "cuDeviceGetPCIBusId")?;
        Ok("0000:00:00.0".to_string())
    }

    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        self.check_device(dev, "cuDeviceTotalMem_v2")?;
        Ok(self.total_mem)
    }

    fn error_string(&self, _code: sys::CUresult) -> Option<String> {
        None
    }

    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        self.check_device(dev, "cuDevicePrimaryCtxRetain")?;
        *self.retained.lock() += 1;
        Ok(CTX as sys::CUcontext)
    }

    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        self.check_device(dev, "cuDevicePrimaryCtxRelease_v2")?;
        let mut r = self.retained.lock();
        *r = r.saturating_sub(1);
        Ok(())
    }

    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        self.check_device(dev, "cuDevicePrimaryCtxReset_v2")
    }

    fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        Ok(CURRENT.get() as sys::CUcontext)
    }

    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        match ctx as usize {
            0 | CTX => {
                CURRENT.set(ctx as usize);
                Ok(())
            }
            _ => Err(err(
                "cuCtxSetCurrent",
                sys::CUresult::CUDA_ERROR_INVALID_CONTEXT,
            )),
        }
    }

    fn ctx_get_device(&self) -> Result<sys::CUdevice> {
        if CURRENT.get() == 0 {
            return Err(err(
                "cuCtxGetDevice",
                sys::CUresult::CUDA_ERROR_INVALID_CONTEXT,
            ));
        }
        Ok(0)
    }

    fn ctx_synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()> {
        let mut limits = LIMITS.lock();
        match limits.iter_mut().find(|(l, _)| *l == limit.0) {
            Some(slot) => slot.1 = value,
            None => limits.push((limit.0, value)),
        }
        Ok(())
    }

    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize> {
        let set = LIMITS
            .lock()
            .iter()
            .find(|(l, _)| *l == limit.0)
            .map(|(_, v)| *v);
        // The driver's defaults: 1 KiB of stack per thread, 1 MiB of printf FIFO, 8 MiB of heap.
        Ok(set.unwrap_or(match limit {
            sys::CUlimit::CU_LIMIT_STACK_SIZE => 1024,
            sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE => 1 << 20,
            sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE => 8 << 20,
            _ => 0,
        }))
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let used = self.mem.lock().used;
        Ok((self.total_mem.saturating_sub(used), self.total_mem))
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        Ok((0, -5))
    }

    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.alloc(bytes, Kind::Device, "cuMemAlloc_v2")
    }

    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        self.free(ptr, Some(Kind::Device), "cuMemFree_v2")
    }

    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.alloc(bytes, Kind::Managed, "cuMemAllocManaged")
    }

    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        _stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        let p = self.alloc(bytes, Kind::Device, "cuMemAllocAsync")?;
        let mut pool = self.pool.lock();
        pool.live.insert(p, bytes as u64);
        pool.used += bytes as u64;
        pool.high = pool.high.max(pool.used);
        Ok(p)
    }

    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        self.check_device(dev, "cuDeviceGetDefaultMemPool")?;
        Ok(POOL as sys::CUmemoryPool)
    }

    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        use sys::CUmemPool_attribute as A;
        if pool as usize != POOL {
            return Err(bad_handle("cuMemPoolGetAttribute"));
        }
        let p = self.pool.lock();
        match attr {
            A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => Ok(p.threshold),
            A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT | A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT => {
                Ok(p.used)
            }
            A::CU_MEMPOOL_ATTR_USED_MEM_HIGH | A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH => Ok(p.high),
            _ => Err(invalid("cuMemPoolGetAttribute")),
        }
    }

    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        use sys::CUmemPool_attribute as A;
        if pool as usize != POOL {
            return Err(bad_handle("cuMemPoolSetAttribute"));
        }
        let mut p = self.pool.lock();
        match attr {
            A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => p.threshold = value,
            A::CU_MEMPOOL_ATTR_USED_MEM_HIGH | A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
                if value == 0 =>
            {
                p.high = p.used
            }
            _ => return Err(invalid("cuMemPoolSetAttribute")),
        }
        Ok(())
    }

    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, _keep: usize) -> Result<()> {
        if pool as usize != POOL {
            return Err(bad_handle("cuMemPoolTrimTo"));
        }
        Ok(())
    }

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        if let Some((_, memory)) = self.graphs.lock().capturing.get_mut(&(stream as usize)) {
            // Freed with the graph (its launches use the memory).
            memory.push(ptr);
            return Ok(());
        }
        self.free(ptr, Some(Kind::Device), "cuMemFreeAsync")?;
        let mut pool = self.pool.lock();
        if let Some(bytes) = pool.live.remove(&ptr) {
            pool.used -= bytes;
        }
        Ok(())
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        _to_host: bool,
        _dev: sys::CUdevice,
        _stream: sys::CUstream,
    ) -> Result<()> {
        match self.mem.lock().find(ptr, bytes as u64) {
            Some((_, _, Kind::Managed)) => Ok(()),
            _ => Err(invalid("cuMemPrefetchAsync_v2")),
        }
    }

    fn host_alloc(&self, bytes: usize, _flags: u32) -> Result<*mut c_void> {
        Ok(self.alloc(bytes, Kind::Host, "cuMemHostAlloc")? as *mut c_void)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        self.free(ptr as u64, Some(Kind::Host), "cuMemFreeHost")
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        match self.mem.lock().find(ptr as u64, 1) {
            Some((_, _, Kind::Host)) => Ok(ptr as u64),
            _ => Err(invalid("cuMemHostGetDevicePointer_v2")),
        }
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
        self.check_range(dst, bytes, "cuMemcpyHtoD_v2")?;
        if self.recorded(stream, || graph::Node::HtoD {
            dst,
            src: src as usize,
            bytes,
        }) {
            return Ok(());
        }
        // SAFETY: the caller passes `bytes` readable bytes at `src`; `dst` is simulator memory
        // of at least `bytes` bytes (checked); `copy` allows overlap.
        unsafe { std::ptr::copy(src.cast::<u8>(), dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.check_range(src, bytes, "cuMemcpyDtoH_v2")?;
        if self.recorded(stream, || graph::Node::DtoH {
            dst: dst as usize,
            src,
            bytes,
        }) {
            return Ok(());
        }
        // SAFETY: as for memcpy_htod, the other way.
        unsafe { std::ptr::copy(src as *const u8, dst.cast::<u8>(), bytes) };
        Ok(())
    }

    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.check_range(src, bytes, "cuMemcpyDtoD_v2")?;
        self.check_range(dst, bytes, "cuMemcpyDtoD_v2")?;
        if self.recorded(stream, || graph::Node::DtoD { dst, src, bytes }) {
            return Ok(());
        }
        // SAFETY: both ranges are simulator memory of at least `bytes` bytes (checked).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
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
        // One device, one context: a peer copy is a copy within it.
        if dst_ctx as usize != CTX || src_ctx as usize != CTX {
            return Err(err(
                "cuMemcpyPeer",
                sys::CUresult::CUDA_ERROR_INVALID_CONTEXT,
            ));
        }
        // SAFETY: the caller's guarantees are those of memcpy_dtod.
        unsafe { self.memcpy_dtod(dst, src, bytes, stream) }
    }

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        self.check_device(dev, "cuDeviceCanAccessPeer")?;
        self.check_device(peer, "cuDeviceCanAccessPeer")?;
        // Like the driver, a device is not its own peer.
        Ok(false)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        let code = if CURRENT.get() == 0 || peer as usize != CTX {
            sys::CUresult::CUDA_ERROR_INVALID_CONTEXT
        } else {
            // Its own context: the driver refuses a device as its own peer.
            sys::CUresult::CUDA_ERROR_INVALID_DEVICE
        };
        Err(err("cuCtxEnablePeerAccess", code))
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
        if !matches!(size, 1 | 2 | 4) || (count > 0 && pitch < size) {
            return Err(Error::usage(format!(
                "memset of {size}-byte elements {pitch} bytes apart is not supported"
            )));
        }
        if count == 0 {
            return Ok(());
        }
        let span = (count - 1) * pitch + size;
        self.check_range(dst, span, "cuMemsetD32_v2")?;
        if self.recorded(stream, || graph::Node::Memset {
            dst,
            bits,
            size,
            count,
            pitch,
        }) {
            return Ok(());
        }
        let bytes = &bits.to_le_bytes()[..size];
        for i in 0..count {
            // SAFETY: element `i` lies within the checked range of simulator memory.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    (dst as usize + i * pitch) as *mut u8,
                    size,
                )
            };
        }
        Ok(())
    }

    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        let mut h = self.handles.lock();
        let s = h.make();
        h.streams.insert(s, (flags, priority.clamp(-5, 0)));
        Ok(s as sys::CUstream)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        match self.handles.lock().streams.remove(&(s as usize)) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuStreamDestroy_v2")),
        }
    }

    unsafe fn stream_synchronize(&self, _s: sys::CUstream) -> Result<()> {
        Ok(())
    }

    unsafe fn stream_query(&self, _s: sys::CUstream) -> Result<bool> {
        Ok(true)
    }

    unsafe fn stream_wait_event(&self, _s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(())
        } else {
            Err(bad_handle("cuStreamWaitEvent"))
        }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        Ok(self
            .handles
            .lock()
            .streams
            .get(&(s as usize))
            .map_or(0, |&(_, p)| p))
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        Ok(self
            .handles
            .lock()
            .streams
            .get(&(s as usize))
            .map_or(0, |&(f, _)| f))
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        if self.recorded(Some(s), || graph::Node::HostFn {
            f,
            data: data as usize,
        }) {
            return Ok(());
        }
        // SAFETY: the caller hands over `data`, which `f` consumes once; everything queued
        // before has already run.
        unsafe { f(data) };
        Ok(())
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        if self.graphs.lock().capturing.contains_key(&(s as usize)) {
            return Err(err(
                "cuStreamAddCallback",
                sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            ));
        }
        // SAFETY: as for launch_host_func.
        unsafe { f(s, sys::CUresult::CUDA_SUCCESS, data) };
        Ok(())
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        let timing = flags & sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0 == 0;
        let mut h = self.handles.lock();
        let e = h.make();
        h.events.insert(e, EventState { at: None, timing });
        Ok(e as sys::CUevent)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        match self.handles.lock().events.remove(&(e as usize)) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuEventDestroy_v2")),
        }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        if self.recorded(Some(s), || graph::Node::EventRecord { e: e as usize }) {
            return Ok(());
        }
        let mut h = self.handles.lock();
        let ev = h
            .events
            .get_mut(&(e as usize))
            .ok_or_else(|| bad_handle("cuEventRecord"))?;
        ev.at = Some(Instant::now());
        Ok(())
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(true)
        } else {
            Err(bad_handle("cuEventQuery"))
        }
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(())
        } else {
            Err(bad_handle("cuEventSynchronize"))
        }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        let call = "cuEventElapsedTime_v2";
        let h = self.handles.lock();
        let (a, b) = match (
            h.events.get(&(start as usize)),
            h.events.get(&(end as usize)),
        ) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(bad_handle(call)),
        };
        if !a.timing || !b.timing {
            return Err(bad_handle(call));
        }
        match (a.at, b.at) {
            (Some(x), Some(y)) => {
                let ms = if y >= x {
                    y.duration_since(x).as_secs_f64() * 1e3
                } else {
                    -(x.duration_since(y).as_secs_f64() * 1e3)
                };
                Ok(ms as f32)
            }
            _ => Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_HANDLE)),
        }
    }

    unsafe fn module_load(
        &self,
        _image: *const c_void,
        kind: &str,
    ) -> Result<(sys::CUmodule, String)> {
        Err(Error::usage(format!(
            "loading a {kind} image is not supported on the simulator (CUDAJIT_SIMULATOR=1): it \
             runs kernels built with cudajit's builder (Kernel, Elementwise, the array \
             operations), not PTX or machine code; run on a GPU to load {kind}"
        )))
    }

    fn module_load_ir(&self, ir: Arc<FunctionIr>) -> Result<sys::CUmodule> {
        let mut h = self.handles.lock();
        let m = h.make();
        h.modules.insert(m, ir);
        Ok(m as sys::CUmodule)
    }

    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()> {
        let mut h = self.handles.lock();
        match h.modules.remove(&(m as usize)) {
            Some(_) => {
                h.functions.retain(|_, f| f.module != m as usize);
                Ok(())
            }
            None => Err(bad_handle("cuModuleUnload")),
        }
    }

    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<sys::CUfunction>> {
        let mut h = self.handles.lock();
        let ir = h
            .modules
            .get(&(m as usize))
            .ok_or_else(|| bad_handle("cuModuleGetFunction"))?
            .clone();
        if name.to_bytes() != ir.name.as_bytes() {
            return Ok(None);
        }
        // One function per module: a module loaded twice from one IR (two threads loading one
        // kernel at once) has its own, which outlives the other module's unload.
        if let Some((&f, _)) = h.functions.iter().find(|(_, f)| f.module == m as usize) {
            return Ok(Some(f as sys::CUfunction));
        }
        let f = h.make();
        let max_dynamic = SHARED_PER_BLOCK - static_shared(&ir) as i32;
        h.functions.insert(
            f,
            FuncState {
                ir,
                module: m as usize,
                max_dynamic: max_dynamic.max(0),
            },
        );
        Ok(Some(f as sys::CUfunction))
    }

    unsafe fn module_global(
        &self,
        _m: sys::CUmodule,
        _name: &CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>> {
        Ok(None)
    }

    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        use sys::CUfunction_attribute as A;
        let (major, minor) = crate::codegen::default_cc();
        self.func(f, "cuFuncGetAttribute", |st| {
            if attr == A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK {
                max_threads(&st.ir)
            } else if attr == A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES {
                static_shared(&st.ir) as i32
            } else if attr == A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES {
                local_bytes(&st.ir) as i32
            } else if attr == A::CU_FUNC_ATTRIBUTE_NUM_REGS {
                32
            } else if attr == A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
                st.max_dynamic
            } else if attr == A::CU_FUNC_ATTRIBUTE_PTX_VERSION
                || attr == A::CU_FUNC_ATTRIBUTE_BINARY_VERSION
            {
                (major * 10 + minor) as i32
            } else {
                0
            }
        })
    }

    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        let call = "cuFuncSetAttribute";
        let dynamic =
            attr == sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        self.func(f, call, |st| {
            if !dynamic {
                return Ok(());
            }
            if value < 0 || value as i64 + static_shared(&st.ir) as i64 > SHARED_OPTIN as i64 {
                return Err(invalid(call));
            }
            st.max_dynamic = value;
            Ok(())
        })?
    }

    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        _dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        let limit = self.func(f, "cuOccupancyMaxPotentialBlockSize", |st| {
            max_threads(&st.ir)
        })?;
        let mut block = limit.min(1024);
        if block_limit > 0 {
            block = block.min(block_limit);
        }
        let per_sm = (2048 / block.max(1)).clamp(1, 32);
        Ok((per_sm * self.workers as i32, block))
    }

    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        let shared = self.func(f, "cuOccupancyMaxActiveBlocksPerMultiprocessor", |st| {
            static_shared(&st.ir)
        })? + dynamic_smem;
        let by_threads = 2048 / block.max(1);
        let by_shared = (228 * 1024usize)
            .checked_div(shared)
            .map_or(32, |b| b.min(32) as i32);
        Ok(by_threads.min(by_shared).clamp(0, 32))
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
        let call = "cuLaunchKernel";
        let (ir, max_dynamic) = self.func(f, call, |st| (st.ir.clone(), st.max_dynamic))?;
        let node = || {
            // SAFETY: the caller passes one pointer per parameter slot of the kernel's IR.
            unsafe { graph::kernel_node(&ir, f, grid, block, shared_mem_bytes, params) }
        };
        if self.recorded(Some(stream), node) {
            return Ok(());
        }
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        if threads == 0 || threads > max_threads(&ir) as u64 || grid.contains(&0) {
            return Err(invalid(call));
        }
        if shared_mem_bytes as i64 > max_dynamic as i64 {
            return Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        // SAFETY: the caller passes one pointer per parameter slot of the kernel's IR.
        let l = unsafe { launch::Launch::new(&ir, grid, block, shared_mem_bytes as usize, params) };
        // Every array argument must be simulator memory covering its extents.
        for (i, a) in l.arrays.iter().enumerate() {
            let Some(a) = a else { continue };
            let bytes = a.len.saturating_mul(a.elem.size() as u64);
            if bytes > 0 && self.mem.lock().find(a.base, bytes).is_none() {
                return Err(Error::Fault {
                    kernel: ir.name.clone(),
                    kind: crate::error::FaultKind::OutOfBounds,
                    message: format!(
                        "array parameter {i} ({} elements of {} at {:#x}) is not inside one \
                         allocation of the simulator's memory",
                        a.len,
                        a.elem.name(),
                        a.base
                    ),
                });
            }
        }
        l.run(self.workers).map_err(|fault| Error::Fault {
            kernel: ir.name.clone(),
            kind: fault.kind,
            message: fault.message,
        })
    }

    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_stream_begin_capture(s) }
    }

    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_stream_end_capture(s) }
    }

    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_stream_is_capturing(s) }
    }

    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_node_count(g) }
    }

    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_instantiate(g) }
    }

    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_launch(e, s) }
    }

    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_exec_update(e, g) }
    }

    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_destroy(g) }
    }

    fn graph_create(&self) -> Result<sys::CUgraph> {
        self.sim_graph_create()
    }

    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        params: *mut *mut c_void,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_add_kernel(g, _deps, f, grid, block, shared_mem_bytes, params) }
    }

    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_add_copy(g, _deps, dst, src, bytes) }
    }

    unsafe fn graph_add_memset(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_add_memset(g, _deps, dst, bits, size, count) }
    }

    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_add_empty(g, _deps) }
    }

    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.sim_graph_exec_destroy(e) }
    }

    fn profiler_start(&self) -> Result<()> {
        Ok(())
    }

    fn profiler_stop(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
