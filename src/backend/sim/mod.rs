//! The CPU simulator: a [`Backend`](crate::backend::Backend) that runs kernels built with cudajit's builder on the host,
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
//! - Kernels: the module is the kernel's IR (`ModuleImage::Ir`, through [`module_load_kernel`](crate::backend::ModuleApi::module_load_kernel)); a launch executes it
//!   block by block on the host's cores (`block.rs`), and reports what the GPU would not:
//!   out-of-bounds accesses, divergent barriers, shared-memory races, misaligned accesses
//!   ([`crate::Error::Fault`]). A faulting launch stops cleanly; the context stays usable.
//! - Loading PTX, cubin or fatbin images is not supported (there is no PTX interpreter).

mod access;
mod async_copy;
mod backend;
mod block;
mod cluster;
mod control;
mod copies;
mod device_launch;
mod device_stream;
mod devices;
mod eval;
mod fault;
mod functions;
mod global;
mod graph;
mod half;
mod hopper;
mod launch;
mod ldmatrix;
mod memory;
mod mma;
mod modules;
mod schedule;
mod streams;
pub(crate) mod tensor_map;
mod tex_filter;
mod tex_ops;
mod tex_sample;
mod texture;
mod warp;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::{HostFnPtr, StreamCallbackPtr};
use crate::error::{DriverCode, Error, Result};
use crate::ir::FunctionIr;
use devices::Devices;
use memory::{Kind, Memory};

/// The CUDA version the simulator reports (`cuDriverGetVersion`): 12.8.
const VERSION: i32 = 12080;

/// Static shared memory per block, and the opt-in maximum (as on an H100/H200).
const SHARED_PER_BLOCK: i32 = 48 * 1024;
const SHARED_OPTIN: i32 = 227 * 1024;

/// An error as the driver would return it.
/// The simulated `%globaltimer`: nanoseconds since the Unix epoch, taken from the host's
/// monotonic clock (the wall clock read once, plus the time elapsed since), so reads never
/// go back, within a thread or across them.
pub(crate) fn global_timer_ns() -> u64 {
    static START: std::sync::OnceLock<(Instant, u64)> = std::sync::OnceLock::new();
    let (at, unix) = START.get_or_init(|| {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        (Instant::now(), unix)
    });
    unix.wrapping_add(at.elapsed().as_nanos() as u64)
}

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
    /// The persistent pool of those threads (`launch::make_pool`), made at the first launch.
    pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
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
            pool: std::sync::OnceLock::new(),
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

    /// Checks that `[ptr, ptr + bytes)` is simulator memory.
    fn check_range(&self, ptr: u64, bytes: usize, call: &'static str) -> Result<()> {
        if bytes == 0 || self.mem.lock().find(ptr, bytes as u64).is_some() {
            Ok(())
        } else {
            Err(invalid(call))
        }
    }
}

#[cfg(test)]
mod tests;
