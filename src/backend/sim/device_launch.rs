//! Kernels that launch kernels on the simulator, with CUDA's ordering rules: the launches a
//! grid's threads make are kept, and once the grid's blocks have run, its children run one
//! after another (the default, fire-and-forget and device-created streams in the order their
//! blocks and threads made them, a thread's own launches in the order it made them, then the
//! tail launches), each with its own children before the next starts; the host sees the launch complete after all of them. Running every child after its
//! parent's blocks is one of the schedules CUDA allows (a parent cannot wait for its children
//! in CUDA 12), so a kernel whose result depends on another order is not caught here.
//!
//! Launch errors are the device runtime's: a bad configuration
//! (`cudaErrorInvalidConfiguration`), more than 2048 launches of one grid pending
//! (`cudaErrorLaunchPendingCountExceeded`: every launch of a grid is pending until the grid
//! ends here, an upper bound of the GPU's count), and nesting deeper than 24 levels
//! (`cudaErrorLaunchMaxDepthExceeded`), each written into the status words as on the GPU.
//! CUDA does not forbid a launch from divergent code (each thread that reaches it launches),
//! nor are exited threads a question (they reach nothing), so neither is reported.

use std::ffi::c_void;
use std::sync::Arc;

use parking_lot::Mutex;

use super::block::{for_lanes, Block, Frame, Mask};
use super::fault::Fault;
use super::functions::{max_threads, static_shared};
use super::launch::Launch;
use super::SHARED_PER_BLOCK;
use crate::error::{Error, Result};
use crate::ir::device_launch::{
    code, status_param, DeviceArg, DeviceLaunch, LaunchStream, LaunchTarget, MAX_DEPTH,
    PENDING_LIMIT,
};
use crate::ir::{FunctionIr, Param, ScalarTy};

/// One launch made by one thread, waiting for its grid to end.
pub(super) struct Pending {
    /// `None`: the launching kernel itself.
    target: Option<Arc<FunctionIr>>,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    /// Whether it is a tail launch (the others run in launch order: see the module's
    /// documentation).
    tail: bool,
    /// The child's parameter slots, as `cuLaunchKernel` takes them.
    slots: Vec<u64>,
    /// (block, thread) that made it, for a deterministic order.
    order: (u64, usize),
    /// The status words' address and the launch site.
    status: u64,
    site: u32,
}

/// The launches a grid's threads made, and the grid's nesting depth (0: launched by the host).
#[derive(Default)]
pub(super) struct Children {
    pending: Mutex<Vec<Pending>>,
    /// The streams the grid's threads created (see `device_stream.rs`).
    pub streams: Mutex<super::device_stream::Streams>,
    pub depth: u32,
}

impl Block<'_> {
    /// A device-side launch by the lanes `m`: one pending child grid per lane.
    pub(super) fn device_launch(
        &mut self,
        fr: &mut Frame<'_>,
        l: &DeviceLaunch,
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let reg = |fr: &Frame<'_>, id: crate::ir::ValueId, t: usize| fr.regs[id.0 as usize * n + t];
        let child: &FunctionIr = match &l.target {
            LaunchTarget::Itself => self.l.ir,
            LaunchTarget::Kernel(c) => c,
        };
        let Some(status) = self.l.arrays.get(l.status as usize).cloned().flatten() else {
            return Err(Fault::internal("a device launch without its status words"));
        };
        let child_status = status_param(child);
        let g = self.l.grid;
        let linear = self.ctaid[0] as u64
            + g[0] as u64 * (self.ctaid[1] as u64 + g[1] as u64 * self.ctaid[2] as u64);
        let mut made = Vec::new();
        let mut bad = None;
        let mut stream_fault = None;
        for_lanes(m, self.nw, |t| {
            if let LaunchStream::Created(id) = l.stream {
                if let Err(f) = self.check_launch_stream(reg(fr, id, t), t, &child.name) {
                    stream_fault.get_or_insert(f);
                    return;
                }
            }
            let mut slots = Vec::new();
            let mut args = l.args.iter();
            for (i, p) in child.params.iter().enumerate() {
                if Some(i as u32) == child_status {
                    slots.push(status.base);
                    slots.extend(&status.dims);
                    continue;
                }
                match (p, args.next()) {
                    (Param::Scalar(_), Some(DeviceArg::Scalar(id))) => slots.push(reg(fr, *id, t)),
                    (Param::Array { .. }, Some(DeviceArg::Array(j))) => {
                        match self.l.arrays.get(*j as usize).cloned().flatten() {
                            Some(a) => {
                                slots.push(a.base);
                                slots.extend(&a.dims);
                            }
                            None => bad = Some("an array argument that is not an array"),
                        }
                    }
                    _ => bad = Some("a device launch that does not match its child's parameters"),
                }
            }
            let d = |ids: &[crate::ir::ValueId; 3]| ids.map(|id| reg(fr, id, t) as u32);
            made.push(Pending {
                target: match &l.target {
                    LaunchTarget::Itself => None,
                    LaunchTarget::Kernel(c) => Some(c.clone()),
                },
                grid: d(&l.grid),
                block: d(&l.block),
                shared: reg(fr, l.shared, t) as u32,
                tail: l.stream == LaunchStream::TailLaunch,
                slots,
                order: (linear, t),
                status: status.base,
                site: l.site,
            });
        });
        if let Some(what) = bad {
            return Err(Fault::internal(what));
        }
        if let Some(f) = stream_fault {
            return Err(f);
        }
        self.l.dp.pending.lock().extend(made);
        Ok(())
    }
}

/// Keeps the first failure in the status words at `status` (as the GPU's compare-and-swap).
fn fail(status: u64, code: u32, site: u32) {
    // SAFETY: `status` is the address of the launching kernel's two live, aligned `u32`
    // status words in simulator memory (pushed by `Kernel::launch`).
    unsafe {
        let old =
            super::global::update(status, ScalarTy::U32, &|o| (o == 0).then_some(code as u64));
        if old == Some(0) {
            super::global::store(status + 4, ScalarTy::U32, site as u64);
        }
    }
}

/// Whether the device runtime would take this configuration for `ir`.
fn config_ok(ir: &FunctionIr, p: &Pending) -> bool {
    let threads: u64 = p.block.iter().map(|&b| b as u64).product();
    let grid_ok = p.grid.iter().all(|&g| g > 0)
        && p.grid[0] <= i32::MAX as u32
        && p.grid[1] <= 65535
        && p.grid[2] <= 65535;
    let block_ok = threads > 0
        && threads <= max_threads(ir) as u64
        && p.block[0] <= 1024
        && p.block[1] <= 1024
        && p.block[2] <= 64;
    let max_dynamic = (SHARED_PER_BLOCK as i64 - static_shared(ir) as i64).max(0);
    grid_ok && block_ok && (p.shared as i64) <= max_dynamic
}

/// Runs the children of the grid `l` (of kernel `ir`) that has just run, and theirs, in the
/// order of the module's documentation.
pub(super) fn run_children(
    l: &Launch<'_>,
    workers: usize,
    pool: Option<&rayon::ThreadPool>,
) -> Result<()> {
    let mut pending = std::mem::take(&mut *l.dp.pending.lock());
    if pending.is_empty() {
        return Ok(());
    }
    pending.sort_by_key(|p| (p.tail, p.order));
    for (i, mut p) in pending.into_iter().enumerate() {
        let child: &FunctionIr = p.target.as_deref().unwrap_or(l.ir);
        if i >= PENDING_LIMIT {
            fail(p.status, code::PENDING_COUNT_EXCEEDED, p.site);
            continue;
        }
        if l.dp.depth + 1 > MAX_DEPTH {
            fail(p.status, code::MAX_DEPTH_EXCEEDED, p.site);
            continue;
        }
        if !config_ok(child, &p) {
            fail(p.status, code::INVALID_CONFIGURATION, p.site);
            continue;
        }
        let mut ptrs: Vec<*mut c_void> =
            p.slots.iter_mut().map(|s| (s as *mut u64).cast()).collect();
        // SAFETY: one pointer per parameter slot of the child's IR (built from its parameter
        // list above), each to a live 8-byte value.
        let mut cl = unsafe {
            Launch::new(
                child,
                p.grid,
                p.block,
                [1, 1, 1],
                p.shared as usize,
                ptrs.as_mut_ptr(),
            )
        };
        cl.dp.depth = l.dp.depth + 1;
        cl.run(workers, pool).map_err(|fault| Error::Fault {
            kernel: child.name.clone(),
            kind: fault.kind,
            message: format!(
                "{} (in a grid launched from the device by `{}`)",
                fault.message, l.ir.name
            ),
        })?;
        run_children(&cl, workers, pool)?;
    }
    Ok(())
}
