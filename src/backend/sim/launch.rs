//! One kernel launch on the simulator: the arguments decoded from the launch's parameter
//! slots, the grid's blocks spread over the host's cores (the simulator's persistent rayon
//! pool), the first fault reported.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::block::Block;
use super::fault::Fault;
use super::functions::max_threads;
use super::{bad_handle, err, graph, invalid, Simulator};
use crate::error::{Error, Result};
use crate::ir::ScalarTy;
use crate::ir::{FunctionIr, Param};

/// An array argument: its address, extents and element type.
#[derive(Debug, Clone)]
pub(super) struct ArrayArg {
    pub base: u64,
    pub dims: Vec<u64>,
    /// Elements in all (the product of the extents).
    pub len: u64,
    pub elem: ScalarTy,
}

/// Everything a block needs to know about its launch.
pub(super) struct Launch<'a> {
    pub ir: &'a FunctionIr,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Blocks per cluster in each dimension (1, 1, 1 without clusters).
    pub cluster: [u32; 3],
    /// Threads per block, and warps (the last may be partial).
    pub n: usize,
    pub nw: usize,
    /// Dynamic shared memory per block, bytes.
    pub dyn_shared: usize,
    /// The shared-window address where the dynamic shared memory starts: after the static
    /// shared arrays of the kernel and its device functions, each 16-byte aligned (as ptxas
    /// lays them out), so a TMA tile or wgmma operand at dynamic offset 0 is not 128-byte
    /// aligned when the kernel also has static shared arrays, as on a GPU.
    pub dyn_base: u32,
    /// Each parameter's bits (scalars; 0 for arrays).
    pub scalars: Vec<u64>,
    /// Each parameter's array (`None` for scalars).
    pub arrays: Vec<Option<ArrayArg>>,
    /// Each parameter's tensor map bytes (`None` for the others).
    pub maps: Vec<Option<Box<[u8; 128]>>>,
    /// Each thread's index within the block, per dimension.
    pub tid: [Vec<u32>; 3],
    /// Set when a block faults: the others stop at their next block.
    pub abort: AtomicBool,
    /// Whether shared-memory accesses are checked for races.
    pub race_checks: bool,
    /// The grids its threads launched, and its nesting depth (see `device_launch.rs`).
    pub dp: super::device_launch::Children,
}

impl<'a> Launch<'a> {
    /// Decodes the parameter slots of a launch of `ir`.
    ///
    /// # Safety
    /// `params` holds one pointer per slot of the kernel's parameter list (an array takes one
    /// slot for its address and one 8-byte slot per extent; a scalar one slot of at least its
    /// size), each pointing to a live value.
    pub(super) unsafe fn new(
        ir: &'a FunctionIr,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        dyn_shared: usize,
        params: *mut *mut c_void,
    ) -> Launch<'a> {
        let mut slot = 0usize;
        // SAFETY: the caller guarantees one valid pointer per slot, each to enough bytes.
        let read = |slot: usize, bytes: usize| -> u64 {
            let mut b = [0u8; 8];
            unsafe {
                let p = *params.add(slot) as *const u8;
                std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), bytes.min(8));
            }
            u64::from_le_bytes(b)
        };
        let mut scalars = Vec::with_capacity(ir.params.len());
        let mut arrays = Vec::with_capacity(ir.params.len());
        let mut maps = Vec::with_capacity(ir.params.len());
        for p in &ir.params {
            if let Param::TensorMap { .. } = p {
                let mut b = Box::new([0u8; 128]);
                // SAFETY: the caller guarantees the slot points to the map's 128 bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        *params.add(slot) as *const u8,
                        b.as_mut_ptr(),
                        128,
                    );
                }
                scalars.push(0);
                arrays.push(None);
                maps.push(Some(b));
                slot += 1;
                continue;
            }
            maps.push(None);
            match p {
                Param::Scalar(t) => {
                    let mut v = read(slot, t.size());
                    if *t == ScalarTy::Bool {
                        v = (v & 0xff != 0) as u64;
                    }
                    scalars.push(v);
                    arrays.push(None);
                    slot += 1;
                }
                Param::TensorMap { .. } => unreachable!("handled above"),
                Param::Array { elem, ndim, .. } => {
                    let base = read(slot, 8);
                    let dims: Vec<u64> =
                        (0..*ndim as usize).map(|d| read(slot + 1 + d, 8)).collect();
                    let len = dims.iter().fold(1u64, |a, &d| a.saturating_mul(d));
                    scalars.push(0);
                    arrays.push(Some(ArrayArg {
                        base,
                        dims,
                        len,
                        elem: *elem,
                    }));
                    slot += 1 + *ndim as usize;
                }
            }
        }
        let n = (block[0] * block[1] * block[2]) as usize;
        let mut tid = [
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        ];
        for t in 0..n as u32 {
            tid[0].push(t % block[0]);
            tid[1].push(t / block[0] % block[1]);
            tid[2].push(t / (block[0] * block[1]));
        }
        Launch {
            ir,
            grid,
            block,
            cluster,
            n,
            nw: n.div_ceil(32),
            dyn_shared,
            dyn_base: ir
                .tree()
                .iter()
                .flat_map(|g| &g.shared)
                .map(|s| (s.len as usize * s.elem.size()).next_multiple_of(16))
                .sum::<usize>()
                .min(u32::MAX as usize / 2) as u32,
            scalars,
            arrays,
            maps,
            tid,
            abort: AtomicBool::new(false),
            race_checks: race_checks_enabled(),
            dp: Default::default(),
        }
    }

    /// Runs every block (every cluster of blocks), on up to `workers` threads of `pool` (on the
    /// calling thread without one); the first fault stops the launch.
    pub(super) fn run(
        &self,
        workers: usize,
        pool: Option<&rayon::ThreadPool>,
    ) -> Result<(), Fault> {
        let size: u32 = self.cluster.iter().product();
        let units = (0..3)
            .map(|k| (self.grid[k] / self.cluster[k]) as u64)
            .product::<u64>();
        let next = AtomicU64::new(0);
        let first: Mutex<Option<(u64, Fault)>> = Mutex::new(None);
        let work = || {
            let mut bs: Vec<Block> = (0..size).map(|_| Block::new(self)).collect();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= units || self.abort.load(Ordering::Relaxed) {
                    break;
                }
                let r = if size == 1 {
                    bs[0].run(i)
                } else {
                    super::cluster::run_cluster_at(&mut bs, i)
                };
                if let Err(f) = r {
                    self.abort.store(true, Ordering::Relaxed);
                    let mut slot = first.lock();
                    // A block that only stopped because another faulted never hides that
                    // fault; among real faults the first block's is reported.
                    let better = |(j, g): &(u64, Fault)| !f.stopped && (g.stopped || i < *j);
                    if slot.as_ref().map_or(true, better) {
                        *slot = Some((i, f));
                    }
                    break;
                }
            }
        };
        // A kernel that synchronises its whole grid needs every block running at once (the
        // launch checked the grid against the simulated occupancy): an OS thread per block, as
        // a pool of fewer threads could leave a block waiting at the grid barrier for one that
        // never starts.
        if self.ir.grid_barrier.is_some() && units > 1 {
            std::thread::scope(|s| {
                for _ in 1..units {
                    s.spawn(work);
                }
                work();
            });
        } else {
            let workers = workers.clamp(1, units.min(MAX_WORKERS as u64) as usize);
            match pool {
                // The pool's threads persist between launches: each takes blocks off the
                // shared counter (in order, reusing its block state) until none is left.
                Some(pool) if workers > 1 => pool.scope(|s| {
                    for _ in 0..workers {
                        s.spawn(|_| work());
                    }
                }),
                _ => work(),
            }
        }
        match first.into_inner() {
            Some((_, f)) => Err(f),
            None => Ok(()),
        }
    }
}

/// The most host threads one launch uses (unless its kernel synchronises the grid).
pub(super) const MAX_WORKERS: usize = 256;

/// The simulator's threads: a rayon pool of `workers` threads (at most [`MAX_WORKERS`]), made
/// on the first launch that can use more than one and kept for the simulator's life; `None`
/// (the launches then run on the calling thread) for one worker or if the threads cannot be
/// made.
pub(super) fn make_pool(workers: usize) -> Option<rayon::ThreadPool> {
    if workers <= 1 {
        return None;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers.min(MAX_WORKERS))
        .thread_name(|i| format!("cudajit-sim-{i}"))
        .build()
        .ok()
}

/// `CUDAJIT_SIM_RACECHECK=0` turns the shared-memory race checks off (read once).
fn race_checks_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        !std::env::var("CUDAJIT_SIM_RACECHECK")
            .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false" | "no"))
    })
}

/// The simulator's side of a kernel launch (the `Backend` method delegates here).
impl Simulator {
    pub(super) unsafe fn sim_launch_kernel(
        &self,
        f: sys::CUfunction,
        [grid, block, cluster]: [[u32; 3]; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        let call = if cluster == [1, 1, 1] {
            "cuLaunchKernel"
        } else {
            "cuLaunchKernelEx"
        };
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
            unsafe { graph::kernel_node(&ir, f, [grid, block, cluster], shared_mem_bytes, params) }
        };
        if self.recorded(Some(stream), node) {
            return Ok(());
        }
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        if threads == 0 || threads > max_threads(&ir) as u64 || grid.contains(&0) {
            return Err(invalid(call));
        }
        // As the driver: clusters of at most 8 blocks (the portable size) that tile the grid
        // (the simulator runs sm_90's clusters whatever compute capability it reports).
        let size: u32 = cluster.iter().product();
        if size == 0 || size > 8 || (0..3).any(|k| grid[k] % cluster[k] != 0) {
            return Err(invalid(call));
        }
        if shared_mem_bytes as i64 > max_dynamic as i64 {
            return Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        // SAFETY: the caller passes one pointer per parameter slot of the kernel's IR.
        let l =
            unsafe { Launch::new(&ir, grid, block, cluster, shared_mem_bytes as usize, params) };
        self.check_arrays(&ir, &l, dev)?;
        let pool = self.pool.get_or_init(|| make_pool(self.workers));
        l.run(self.workers, pool.as_ref())
            .map_err(|fault| Error::Fault {
                kernel: ir.name.clone(),
                kind: fault.kind,
                message: fault.message,
            })?;
        super::device_launch::run_children(&l, self.workers, pool.as_ref())
    }
}
