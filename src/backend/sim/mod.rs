//! The CPU simulator: a [`Backend`] that runs kernels built with cudajit's builder on the host,
//! with no GPU and no driver (numba's `NUMBA_ENABLE_CUDASIM`, with warps).
//!
//! - One simulated device, or `CUDAJIT_SIM_DEVICES=N` (1 to 8) identical ones (`devices.rs`):
//!   compute capability of the default PTX target, one multiprocessor per host core, 1024
//!   threads per block, 48 KiB of static shared memory (227 KiB opt-in), the host's memory as
//!   each device's memory. Each device has its own primary context, memory accounting, default
//!   memory pool and limits; streams, events, modules and functions belong to the context
//!   current when they were made, and using them with another context's is the driver's error.
//!   All pairs of devices can be peers: a kernel touching another device's memory is a fault
//!   unless its context enabled peer access to that device.
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
mod devices;
mod eval;
mod fault;
mod functions;
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
use devices::Devices;
use functions::{max_threads, static_shared};
use memory::{Kind, Memory};

/// The CUDA version the simulator reports (`cuDriverGetVersion`): 12.8.
const VERSION: i32 = 12080;

/// Static shared memory per block, and the opt-in maximum (as on an H100/H200).
const SHARED_PER_BLOCK: i32 = 48 * 1024;
const SHARED_OPTIN: i32 = 227 * 1024;

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

struct StreamState {
    flags: u32,
    priority: i32,
    /// The device whose context made it.
    dev: usize,
}

struct EventState {
    at: Option<Instant>,
    timing: bool,
    /// The device whose context made it.
    dev: usize,
}

struct FuncState {
    ir: Arc<FunctionIr>,
    /// The module it belongs to (two modules may hold one IR: a kernel loaded twice).
    module: usize,
    /// The device whose context loaded the module.
    dev: usize,
    /// The dynamic shared memory a launch may use (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    max_dynamic: i32,
}

/// Streams, events, modules and functions, by the handle values made up for them.
#[derive(Default)]
struct Handles {
    next: usize,
    streams: HashMap<usize, StreamState>,
    events: HashMap<usize, EventState>,
    /// Each module's kernel and the device whose context loaded it.
    modules: HashMap<usize, (Arc<FunctionIr>, usize)>,
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
    devices: Devices,
    /// Host threads running a launch's blocks (the simulated multiprocessors).
    workers: usize,
    /// Each device's total memory.
    total_mem: usize,
}

impl Simulator {
    /// The process's simulator: `CUDAJIT_SIM_DEVICES` devices (a bad value makes `init` fail,
    /// saying why).
    pub(crate) fn new() -> Simulator {
        match devices::devices_from_env() {
            Ok(n) => Simulator::with_devices(n),
            Err(why) => {
                let mut sim = Simulator::with_devices(1);
                sim.devices.bad_env = Some(why);
                sim
            }
        }
    }

    /// A simulator of `n` devices (clamped to 1 to 8), whatever `CUDAJIT_SIM_DEVICES` says.
    pub(crate) fn with_devices(n: usize) -> Simulator {
        let workers = std::env::var("CUDAJIT_SIM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Simulator {
            mem: Mutex::new(Memory::default()),
            handles: Mutex::new(Handles::default()),
            graphs: Mutex::new(graph::Graphs::default()),
            devices: Devices::new(n),
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

    /// Allocates `bytes` of `kind` for device `dev`.
    fn alloc(&self, bytes: usize, kind: Kind, dev: usize, call: &'static str) -> Result<u64> {
        if bytes == 0 {
            return Err(invalid(call));
        }
        let mut mem = self.mem.lock();
        if kind != Kind::Host && mem.used[dev].saturating_add(bytes) > self.total_mem {
            return Err(err(call, sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        }
        mem.alloc(bytes, kind, dev)
            .ok_or_else(|| err(call, sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
    }

    /// The device of stream `s`: the one whose context made it, or (the null and per-thread
    /// streams, or a handle the simulator did not make) the current context's.
    fn stream_device(&self, h: &Handles, s: sys::CUstream) -> usize {
        h.streams
            .get(&(s as usize))
            .map_or_else(|| self.current_device(), |st| st.dev)
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
}

impl Backend for Simulator {
    fn is_simulator(&self) -> bool {
        true
    }

    fn init(&self) -> Result<()> {
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

    fn error_string(&self, _code: sys::CUresult) -> Option<String> {
        None
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

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let used = self.mem.lock().used[self.current_device()];
        Ok((self.total_mem.saturating_sub(used), self.total_mem))
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        Ok((0, -5))
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
        // From the default pool of the stream's device.
        let dev = self.stream_device(&self.handles.lock(), stream);
        let p = self.alloc(bytes, Kind::Device, dev, "cuMemAllocAsync")?;
        self.pool_add(dev, p, bytes as u64);
        Ok(p)
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

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        if let Some((_, memory)) = self.graphs.lock().capturing.get_mut(&(stream as usize)) {
            // Freed with the graph (its launches use the memory).
            memory.push(ptr);
            return Ok(());
        }
        self.free(ptr, Some(Kind::Device), "cuMemFreeAsync")?;
        self.pool_remove(ptr);
        Ok(())
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        _stream: sys::CUstream,
    ) -> Result<()> {
        if !to_host {
            self.check_device(dev, "cuMemPrefetchAsync_v2")?;
        }
        match self.mem.lock().find(ptr, bytes as u64) {
            Some(a) if a.kind == Kind::Managed => Ok(()),
            _ => Err(invalid("cuMemPrefetchAsync_v2")),
        }
    }

    fn host_alloc(&self, bytes: usize, _flags: u32) -> Result<*mut c_void> {
        // Pinned memory is the host's: reachable from every device (device 0 is a label only).
        Ok(self.alloc(bytes, Kind::Host, 0, "cuMemHostAlloc")? as *mut c_void)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        self.free(ptr as u64, Some(Kind::Host), "cuMemFreeHost")
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        match self.mem.lock().find(ptr as u64, 1) {
            Some(a) if a.kind == Kind::Host => Ok(ptr as u64),
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
        let call = "cuMemcpyPeer";
        let dst_dev = self.ctx_device(dst_ctx, call)?;
        let src_dev = self.ctx_device(src_ctx, call)?;
        // Device memory must be that of the context named with it (managed and pinned memory
        // belong to every device).
        {
            let mem = self.mem.lock();
            for (p, dev) in [(dst, dst_dev), (src, src_dev)] {
                if let Some(a) = mem.find(p, bytes as u64) {
                    if a.kind == Kind::Device && a.dev != dev {
                        return Err(invalid(call));
                    }
                }
            }
        }
        // SAFETY: the caller's guarantees are those of memcpy_dtod (which checks the ranges).
        unsafe { self.memcpy_dtod(dst, src, bytes, stream) }
    }

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        self.sim_device_can_access_peer(dev, peer)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        self.sim_ctx_enable_peer_access(peer)
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
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let s = h.make();
        let priority = priority.clamp(-5, 0);
        h.streams.insert(
            s,
            StreamState {
                flags,
                priority,
                dev,
            },
        );
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
        // An event of any device (as on the driver: a stream may wait on another device's).
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
            .map_or(0, |st| st.priority))
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        Ok(self
            .handles
            .lock()
            .streams
            .get(&(s as usize))
            .map_or(0, |st| st.flags))
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
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let e = h.make();
        h.events.insert(
            e,
            EventState {
                at: None,
                timing,
                dev,
            },
        );
        Ok(e as sys::CUevent)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        match self.handles.lock().events.remove(&(e as usize)) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuEventDestroy_v2")),
        }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        let call = "cuEventRecord";
        {
            // As the driver: the event and the stream must be of one context.
            let h = self.handles.lock();
            let ev = h
                .events
                .get(&(e as usize))
                .ok_or_else(|| bad_handle(call))?;
            if ev.dev != self.stream_device(&h, s) {
                return Err(bad_handle(call));
            }
        }
        if self.recorded(Some(s), || graph::Node::EventRecord { e: e as usize }) {
            return Ok(());
        }
        let mut h = self.handles.lock();
        let ev = h
            .events
            .get_mut(&(e as usize))
            .ok_or_else(|| bad_handle(call))?;
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
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let m = h.make();
        h.modules.insert(m, (ir, dev));
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
        let (ir, dev) = h
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
                dev,
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
        let call = "cuLaunchKernel";
        let (ir, max_dynamic, dev) = {
            let h = self.handles.lock();
            let st = h
                .functions
                .get(&(f as usize))
                .ok_or_else(|| bad_handle(call))?;
            // As the driver: the function is of the current context, and so is the stream.
            if st.dev != self.current_device() {
                return Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
            }
            if st.dev != self.stream_device(&h, stream) {
                return Err(bad_handle(call));
            }
            (st.ir.clone(), st.max_dynamic, st.dev)
        };
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
        self.check_arrays(&ir, &l, dev)?;
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
