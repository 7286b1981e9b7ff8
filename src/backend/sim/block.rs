//! One thread block on the simulator: its state (masks, frames, shared memory, barriers) and
//! the statements that are not control flow, executed for the active lanes of one context
//! (the whole block in lockstep, or one warp: see `control.rs` and `schedule.rs`).
//!
//! Branches split a warp's mask, loops keep the lanes that have not left, and the masks are the
//! ones the hardware would have, so warp intrinsics see the lanes they would see on the GPU.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;
use std::sync::atomic::{fence, Ordering};

use super::eval;
use super::fault::{xyz, Fault};
use super::launch::Launch;
use crate::error::FaultKind;
use crate::ir::ScalarTy;
use crate::ir::{Barrier, FunctionIr, Op, Sreg, Stmt, SyncReduce, ValueId, VarId};

/// Most warps in a block (1024 threads).
pub(super) const MAX_WARPS: usize = 32;

/// One bit per lane, one word per warp.
pub(super) type Mask = [u32; MAX_WARPS];

pub(super) const NONE: Mask = [0; MAX_WARPS];

#[inline]
pub(super) fn and_not(a: &Mask, b: &Mask, nw: usize) -> Mask {
    let mut r = NONE;
    for w in 0..nw {
        r[w] = a[w] & !b[w];
    }
    r
}

#[inline]
pub(super) fn is_empty(m: &Mask, nw: usize) -> bool {
    m[..nw].iter().all(|&w| w == 0)
}

/// Calls `f(thread)` for every active thread, in order.
#[inline]
pub(super) fn for_lanes(m: &Mask, nw: usize, mut f: impl FnMut(usize)) {
    for (w, &bits) in m[..nw].iter().enumerate() {
        if bits == u32::MAX {
            (w * 32..w * 32 + 32).for_each(&mut f);
        } else {
            let mut b = bits;
            while b != 0 {
                f(w * 32 + b.trailing_zeros() as usize);
                b &= b - 1;
            }
        }
    }
}

/// Like [`for_lanes`], stopping at the first error.
#[inline]
pub(super) fn try_lanes(
    m: &Mask,
    nw: usize,
    mut f: impl FnMut(usize) -> Result<(), Fault>,
) -> Result<(), Fault> {
    for (w, &bits) in m[..nw].iter().enumerate() {
        let mut b = bits;
        while b != 0 {
            f(w * 32 + b.trailing_zeros() as usize)?;
            b &= b - 1;
        }
    }
    Ok(())
}

/// The runs of consecutive warps with an active lane, as thread ranges: pure operations are
/// computed for whole warps (inactive lanes compute values nothing reads).
pub(super) fn spans(m: &Mask, nw: usize, n: usize) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for w in 0..nw {
        if m[w] == 0 {
            continue;
        }
        let r = w * 32..((w + 1) * 32).min(n);
        match out.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => out.push(r),
        }
    }
    out
}

/// The values, variables and local arrays of one function's activation, for all threads.
pub(super) struct Frame<'f> {
    pub f: &'f FunctionIr,
    /// Value `v` of thread `t` is `regs[v * n + t]`.
    pub regs: Vec<u64>,
    pub vars: Vec<u64>,
    /// Local array `i` of thread `t` starts at byte `t * len * size` of `locals[i]`.
    pub locals: Vec<Vec<u8>>,
    /// Device functions: argument `p` of thread `t` is `args[p * n + t]`.
    pub args: Vec<u64>,
    pub is_kernel: bool,
    /// Lanes that have returned.
    pub ret: Mask,
    /// Device functions: the returned value per thread.
    pub result: Vec<u64>,
}

impl<'f> Frame<'f> {
    pub(super) fn new(f: &'f FunctionIr, n: usize, is_kernel: bool) -> Frame<'f> {
        Frame {
            f,
            regs: vec![0; f.values.len() * n],
            vars: vec![0; f.vars.len() * n],
            locals: f
                .locals
                .iter()
                .map(|l| vec![0u8; l.len as usize * l.elem.size() * n])
                .collect(),
            args: Vec::new(),
            is_kernel,
            ret: NONE,
            result: if f.ret.is_some() {
                vec![0; n]
            } else {
                Vec::new()
            },
        }
    }
}

/// Shared-memory bookkeeping for the race check: the last write and the reads of one byte
/// address since the last barrier.
#[derive(Clone, Copy)]
pub(super) struct Rec {
    pub w_tid: u32,
    pub w_bep: u32,
    pub w_wep: u32,
    pub w_atomic: bool,
    pub r_tid: u32,
    pub r_bep: u32,
    pub r_wep: u32,
    /// Read by more than one thread (of one warp, or of several).
    pub r_multi: bool,
    pub r_multi_warp: bool,
    /// Every read since the last barrier was a relaxed atomic load.
    pub r_atomic: bool,
}

impl Rec {
    pub(super) const FRESH: Rec = Rec {
        w_tid: u32::MAX,
        w_bep: u32::MAX,
        w_wep: 0,
        w_atomic: false,
        r_tid: u32::MAX,
        r_bep: u32::MAX,
        r_wep: 0,
        r_multi: false,
        r_multi_warp: false,
        r_atomic: false,
    };
}

/// A block's shared array: its bytes and their race records.
pub(super) struct SharedBuf {
    pub bytes: Vec<u8>,
    pub recs: Vec<Rec>,
    /// Per byte, the thread (plus 1) whose `cp.async` into it is still in flight, 0 for none;
    /// empty until a `cp.async` writes into this buffer (see `async_copy.rs`).
    pub pending: Vec<u32>,
    /// Per byte of the dynamic shared memory, 1 + the swizzle bits of the TMA load that wrote
    /// it, 0 where none did (or an ordinary store wrote since); empty until a TMA load in the
    /// block. A wgmma descriptor must read a tile with the swizzle it was written with.
    pub tma_swizzle: Vec<u8>,
}

impl SharedBuf {
    pub(super) fn new(bytes: usize) -> SharedBuf {
        SharedBuf {
            bytes: vec![0; bytes],
            recs: vec![Rec::FRESH; bytes],
            pending: Vec::new(),
            tma_swizzle: Vec::new(),
        }
    }
}

/// A worker's block state, reused from one block to the next.
pub(super) struct Block<'l> {
    pub l: &'l Launch<'l>,
    pub n: usize,
    pub nw: usize,
    pub ctaid: [u32; 3],
    /// Every thread of the block.
    pub full: Mask,
    /// Threads that returned from the kernel.
    pub exited: Mask,
    /// Static shared arrays per function (the kernel's and its device functions').
    pub shared: Vec<(*const FunctionIr, Vec<SharedBuf>)>,
    pub dyn_shared: SharedBuf,
    /// Barrier epoch of the block, and of each warp (`syncwarp`).
    pub bep: u32,
    pub wep: [u32; MAX_WARPS],
    /// Each thread's `cp.async` copies in flight.
    pub copies: super::async_copy::Copies,
    /// The block's transaction barriers (`mbarrier`s), by their shared-memory place.
    pub bars: super::hopper::Bars,
    /// Whether the block's warps run independently (see `schedule.rs`), else in lockstep.
    pub independent: bool,
    /// The other blocks of its cluster, by rank, while they are lent to it (`cluster.rs`).
    pub peers: Vec<Option<super::cluster::Peer>>,
    kernel: Option<Frame<'l>>,
}

impl<'l> Block<'l> {
    pub(super) fn new(l: &'l Launch<'l>) -> Block<'l> {
        let (n, nw) = (l.n, l.nw);
        let mut full = NONE;
        for (w, word) in full.iter_mut().enumerate().take(nw) {
            let lanes = (n - w * 32).min(32);
            *word = if lanes == 32 {
                u32::MAX
            } else {
                (1u32 << lanes) - 1
            };
        }
        Block {
            l,
            n,
            nw,
            ctaid: [0; 3],
            full,
            exited: NONE,
            shared: Vec::new(),
            dyn_shared: SharedBuf::new(l.dyn_shared),
            bep: 0,
            wep: [0; MAX_WARPS],
            copies: Default::default(),
            bars: Default::default(),
            // The blocks of a cluster run together, so their warps run independently.
            independent: super::schedule::independent_warps(l.ir)
                || l.cluster.iter().product::<u32>() > 1,
            peers: (0..l.cluster.iter().product::<u32>())
                .map(|_| None)
                .collect(),
            kernel: Some(Frame::new(l.ir, n, true)),
        }
    }

    /// Runs block number `linear` (x fastest).
    pub(super) fn run(&mut self, linear: u64) -> Result<(), Fault> {
        let g = self.l.grid;
        let mut fr = self.start([
            (linear % g[0] as u64) as u32,
            (linear / g[0] as u64 % g[1] as u64) as u32,
            (linear / (g[0] as u64 * g[1] as u64)) as u32,
        ]);
        let res = self.run_body(&mut fr);
        self.kernel = Some(fr);
        res
    }

    /// Gets the block ready to run as block `ctaid`: its kernel frame (give it back to
    /// `kernel` after the run).
    pub(super) fn start(&mut self, ctaid: [u32; 3]) -> Frame<'l> {
        self.ctaid = ctaid;
        self.exited = NONE;
        self.bep = self.bep.wrapping_add(1);
        self.reset_async_copies();
        self.bars = Default::default();
        self.dyn_shared.tma_swizzle.clear();
        let mut fr = self
            .kernel
            .take()
            .unwrap_or_else(|| Frame::new(self.l.ir, self.n, true));
        fr.ret = NONE;
        fr
    }

    /// Gives the kernel frame back after a run.
    pub(super) fn finish(&mut self, fr: Frame<'l>) {
        self.kernel = Some(fr);
    }

    /// "thread (x, y, z) of block (x, y, z)".
    pub(super) fn who(&self, t: usize) -> String {
        let tid = [self.l.tid[0][t], self.l.tid[1][t], self.l.tid[2][t]];
        format!("thread {} of block {}", xyz(tid), xyz(self.ctaid))
    }

    /// A statement that is not control flow, a variable write or a value, for the lanes `m`.
    pub(super) fn simple(&mut self, fr: &mut Frame<'_>, s: &Stmt, m: &Mask) -> Result<(), Fault> {
        match s {
            Stmt::Store {
                array,
                index,
                value,
            } => self.store(fr, *array, *index, std::slice::from_ref(value), m),
            Stmt::StoreVec {
                array,
                index,
                values,
            } => self.store(fr, *array, *index, values, m),
            Stmt::Barrier(b) => self.barrier(fr, *b, m),
            Stmt::Printf(p) => {
                self.printf(fr, p, m);
                Ok(())
            }
            Stmt::AsyncCopy(c) => self.async_copy(fr, c, m),
            Stmt::Hopper(h) => self.hopper(fr, h, m),
            Stmt::SurfStore(st) => self.surf_store(fr, st, m),
            Stmt::DeviceLaunch(d) => self.device_launch(fr, d, m),
            Stmt::StreamDestroy(d) => self.stream_destroy(fr, d, m),
            _ => Err(Fault::internal(
                "control flow executed as a simple statement",
            )),
        }
    }

    pub(super) fn assign(&mut self, fr: &mut Frame<'_>, var: VarId, v: ValueId, m: &Mask) {
        let n = self.n;
        let (dst, src) = (var.0 as usize * n, v.0 as usize * n);
        for_lanes(m, self.nw, |t| fr.vars[dst + t] = fr.regs[src + t]);
    }

    /// Evaluates value `id` for the active lanes.
    pub(super) fn let_<'f>(
        &mut self,
        fr: &mut Frame<'f>,
        id: ValueId,
        m: &Mask,
        sp: &[Range<usize>],
    ) -> Result<(), Fault> {
        let n = self.n;
        let f: &'f FunctionIr = fr.f;
        let def = &f.values[id.0 as usize];
        let ty = def.ty;
        let ty_of = |v: &ValueId| f.values[v.0 as usize].ty;
        match &def.op {
            Op::Load { array, index } => return self.load(fr, id, *array, *index, None, m),
            Op::LoadLane {
                array,
                index,
                lane,
                width,
            } => return self.load(fr, id, *array, *index, Some((*lane, *width)), m),
            Op::Atomic(a) => return self.atomic(fr, id, a, m),
            Op::NdIndex {
                array,
                indices,
                dims,
            } => return self.nd_index(fr, id, *array, indices, dims, m),
            Op::Warp(w) => return self.warp(fr, id, w, m, sp),
            Op::Hopper(h) => return self.hopper_op(fr, id, h, m),
            Op::StreamCreate(_) => return self.stream_create(fr, id, m),
            Op::Texture(t) => return self.texture_op(fr, id, t, m),
            Op::SyncReduce(kind, pred) => return self.sync_reduce(fr, id, *kind, *pred, m),
            Op::Call(..) => return Err(Fault::internal("a call outside the control flow")),
            Op::CallExtern(e, _) => return Err(extern_call_fault(f, *e)),
            _ => {}
        }
        let dst_at = id.0 as usize * n;
        let (before, rest) = fr.regs.split_at_mut(dst_at);
        let d = &mut rest[..n];
        let arg = |v: &ValueId| -> Result<&[u64], Fault> {
            let at = v.0 as usize * n;
            before
                .get(at..at + n)
                .ok_or_else(|| Fault::internal(format!("value {} used before it is defined", v.0)))
        };
        let fill = |d: &mut [u64], bits: u64| {
            for r in sp {
                d[r.clone()].fill(bits);
            }
        };
        match &def.op {
            Op::Const(bits) => fill(d, *bits),
            Op::Param(i) => {
                if fr.is_kernel {
                    fill(d, self.l.scalars[*i as usize]);
                } else {
                    let at = *i as usize * n;
                    eval::copy(d, &fr.args[at..at + n], sp);
                }
            }
            Op::Special(r) => {
                let l = self.l;
                let v = |d: &mut [u64], per: &dyn Fn(usize) -> u64| {
                    for r in sp {
                        for t in r.clone() {
                            d[t] = per(t);
                        }
                    }
                };
                match r {
                    Sreg::Tid(k) => v(d, &|t| l.tid[*k as usize % 3][t] as u64),
                    Sreg::Ntid(k) => fill(d, l.block[*k as usize % 3] as u64),
                    Sreg::Ctaid(k) => fill(d, self.ctaid[*k as usize % 3] as u64),
                    Sreg::Nctaid(k) => fill(d, l.grid[*k as usize % 3] as u64),
                    Sreg::LaneId => v(d, &|t| (t % 32) as u64),
                    Sreg::WarpSize => fill(d, 32),
                    Sreg::GlobalTimer => fill(d, super::global_timer_ns()),
                    Sreg::GlobalTimerLo => fill(d, super::global_timer_ns() & 0xffff_ffff),
                    r => fill(d, self.cluster_sreg(*r)),
                }
            }
            Op::Unary(u, a) => eval::unary(*u, ty, d, arg(a)?, sp),
            Op::Binary(o, a, b) => eval::binary(*o, ty, d, arg(a)?, arg(b)?, sp),
            Op::Cmp(c, a, b) => eval::compare(*c, ty_of(a), d, arg(a)?, arg(b)?, sp),
            Op::Select(c, a, b) => eval::select(d, arg(c)?, arg(a)?, arg(b)?, sp),
            Op::Cast(a) => eval::cast(ty_of(a), ty, d, arg(a)?, sp),
            Op::Bitcast(a) => eval::copy(d, arg(a)?, sp),
            Op::ArrayDim { array, dim } => {
                let v = self.array_dim(f, *array, *dim as usize)?;
                fill(d, v);
            }
            Op::ReadVar(var) => {
                let at = var.0 as usize * n;
                eval::copy(d, &fr.vars[at..at + n], sp);
            }
            Op::Math(mf, args) => {
                let vals = args.iter().map(&arg).collect::<Result<Vec<_>, _>>()?;
                let at = args.first().map_or(ty, ty_of);
                eval::math(*mf, at, d, &vals, sp);
            }
            Op::Load { .. }
            | Op::LoadLane { .. }
            | Op::Atomic(_)
            | Op::NdIndex { .. }
            | Op::Warp(_)
            | Op::Hopper(_)
            | Op::StreamCreate(_)
            | Op::Texture(_)
            | Op::SyncReduce(..)
            | Op::Call(..)
            | Op::CallExtern(..) => unreachable!("handled above"),
        }
        Ok(())
    }

    fn barrier(&mut self, fr: &mut Frame<'_>, b: Barrier, m: &Mask) -> Result<(), Fault> {
        match b {
            Barrier::SyncThreads => self.sync_block(fr, m, "syncthreads"),
            Barrier::SyncWarp(mask) => {
                let at = mask.0 as usize * self.n;
                for w in 0..self.nw {
                    if m[w] == 0 {
                        continue;
                    }
                    let first = w * 32 + m[w].trailing_zeros() as usize;
                    let named = fr.regs[at + first] as u32;
                    self.check_warp_sync(w, named, m[w], "syncwarp")?;
                    self.wep[w] = self.wep[w].wrapping_add(1);
                }
                Ok(())
            }
            // Named barriers make the block's warps independent: the scheduler meets them.
            Barrier::Named { .. } => Err(Fault::internal("a named barrier in a lockstep block")),
            Barrier::FenceBlock => {
                std::sync::atomic::compiler_fence(Ordering::SeqCst);
                Ok(())
            }
            Barrier::FenceDevice | Barrier::FenceSystem => {
                fence(Ordering::SeqCst);
                Ok(())
            }
        }
    }

    /// A block-wide barrier reached by the lanes `m`: every thread that has not exited must be
    /// here. Starts a new race-check epoch.
    pub(super) fn sync_block(&mut self, fr: &Frame<'_>, m: &Mask, what: &str) -> Result<(), Fault> {
        let nw = self.nw;
        let expected = and_not(&self.full, &self.exited, nw);
        let missing = and_not(&expected, m, nw);
        if let Some(w) = (0..nw).find(|&w| missing[w] != 0) {
            let t = w * 32 + missing[w].trailing_zeros() as usize;
            let here = m[..nw].iter().map(|x| x.count_ones()).sum::<u32>();
            let all = expected[..nw].iter().map(|x| x.count_ones()).sum::<u32>();
            let place = if fr.is_kernel {
                String::new()
            } else {
                format!(" (in device function `{}`)", fr.f.name)
            };
            let first = (0..nw)
                .find(|&w| m[w] != 0)
                .map(|w| w * 32 + m[w].trailing_zeros() as usize)
                .unwrap_or(0);
            return Err(Fault::new(
                FaultKind::DivergentBarrier,
                format!(
                    "{what}{place} was reached by {here} of the {all} running threads of block {}: \
                     {} did not reach it (it took another branch, left a loop early or returned \
                     from a device function), while {} did; every thread of a block must reach \
                     the same barrier",
                    xyz(self.ctaid),
                    self.who(t),
                    self.who(first),
                ),
            ));
        }
        self.bep = self.bep.wrapping_add(1);
        Ok(())
    }

    /// A warp-level synchronisation of warp `w` naming the lanes `named`, reached by `here`:
    /// every named lane that exists and has not exited must be here.
    pub(super) fn check_warp_sync(
        &self,
        w: usize,
        named: u32,
        here: u32,
        what: &str,
    ) -> Result<(), Fault> {
        let missing = named & self.full[w] & !self.exited[w] & !here;
        if missing == 0 {
            return Ok(());
        }
        let t = w * 32 + missing.trailing_zeros() as usize;
        let first = w * 32 + here.trailing_zeros() as usize;
        Err(Fault::new(
            FaultKind::DivergentBarrier,
            format!(
                "{what} with mask {named:#010x} in warp {w}: lane {} ({}) is named in the mask but did \
                 not reach it with the others (first: {}; active lanes {here:#010x}); pass \
                 activemask() or the mask of the lanes that take this path",
                t % 32,
                self.who(t),
                self.who(first),
            ),
        ))
    }

    fn sync_reduce(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        kind: SyncReduce,
        pred: ValueId,
        m: &Mask,
    ) -> Result<(), Fault> {
        let name = match kind {
            SyncReduce::Count => "syncthreads_count",
            SyncReduce::And => "syncthreads_and",
            SyncReduce::Or => "syncthreads_or",
        };
        self.sync_block(fr, m, name)?;
        let (n, nw) = (self.n, self.nw);
        let p = pred.0 as usize * n;
        let mut count = 0u64;
        let mut active = 0u64;
        for_lanes(m, nw, |t| {
            active += 1;
            count += fr.regs[p + t] & 1;
        });
        let v = match kind {
            SyncReduce::Count => count,
            SyncReduce::And => (count == active) as u64,
            SyncReduce::Or => (count > 0) as u64,
        };
        let d = dst.0 as usize * n;
        for_lanes(m, nw, |t| fr.regs[d + t] = v);
        Ok(())
    }

    fn array_dim(
        &self,
        f: &FunctionIr,
        array: crate::ir::ArrayRef,
        dim: usize,
    ) -> Result<u64, Fault> {
        use crate::ir::ArrayRef;
        Ok(match array {
            ArrayRef::Param(i) => self
                .l
                .arrays
                .get(i as usize)
                .and_then(|a| a.as_ref())
                .and_then(|a| a.dims.get(dim).copied())
                .ok_or_else(|| Fault::internal("extent of a missing array dimension"))?,
            ArrayRef::Shared(i) => f
                .shared
                .get(i as usize)
                .and_then(|d| d.dim(dim))
                .ok_or_else(|| Fault::internal("extent of a missing array dimension"))?,
            ArrayRef::Local(i) => f
                .locals
                .get(i as usize)
                .and_then(|d| d.dim(dim))
                .ok_or_else(|| Fault::internal("extent of a missing array dimension"))?,
            ArrayRef::DynShared(t) => (self.l.dyn_shared / t.size()) as u64,
            ArrayRef::Const(i) => crate::ir::const_len(f, i),
        })
    }

    /// `printf`: the active lanes' text, formatted on the host, in thread order, written to
    /// standard output at once.
    fn printf(&mut self, fr: &Frame<'_>, p: &crate::ir::printf::PrintfStmt, m: &Mask) {
        let (n, f) = (self.n, fr.f);
        let mut text = String::new();
        for_lanes(m, self.nw, |t| {
            let args: Vec<(u64, ScalarTy)> = p
                .args
                .iter()
                .map(|a| (fr.regs[a.0 as usize * n + t], f.values[a.0 as usize].ty))
                .collect();
            text.push_str(&crate::ir::printf::format_host(&p.format, &args));
        });
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// A call of foreign device code, which the simulator cannot run.
fn extern_call_fault(f: &FunctionIr, e: u32) -> Fault {
    let name = f.externs.get(e as usize).map_or("?", |x| x.name.as_str());
    Fault::new(
        crate::error::FaultKind::Unsupported,
        format!(
            "`{}` calls the external device function `{name}` (declare_device), defined in linked              PTX or cubin code, which the simulator cannot run; run the kernel on a GPU",
            f.name
        ),
    )
}
