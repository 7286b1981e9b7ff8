//! Hopper's asynchronous machinery on the simulator: transaction barriers, TMA tile copies and
//! the warpgroup MMA, executed in the block's one legal schedule (see `block.rs`).
//!
//! - A barrier's state (expected arrivals, arrivals and transaction bytes pending, the phase)
//!   is kept beside the shared memory, keyed by its place; its 8 bytes are not written.
//! - A TMA load lands in shared memory when issued and completes its bytes on the barrier at
//!   once; a TMA store writes global memory when issued; bulk groups are then always complete.
//! - A wgmma computes when issued: each element of D is `(scale_d ? C : 0) + Σ_k A·B` with the
//!   products exact and summed in f64 in order of k, rounded once to f32 (as `mma.sync` here);
//!   tf32 inputs are f32 values whose low 13 mantissa bits are ignored (truncated), as the
//!   tensor cores read them from shared memory. Its operands are read through their
//!   descriptors with the layouts of `ir::hopper`.
//! - A thread that polls a barrier phase that cannot complete any more spins; after
//!   [`SPIN_LIMIT`] polls with no barrier progress in the block, that is a deadlock fault.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use std::collections::HashMap;

use half::{bf16, f16};

use super::access::index_of;
use super::block::{for_lanes, Block, Frame, Mask, Rec};
use super::fault::Fault;
use crate::backend::tensor_map::{
    TensorMapBytes, TensorMapInterleave, TensorMapOobFill, TensorMapSwizzle,
};
use crate::error::FaultKind;
use crate::ir::hopper::{self, SmemDesc, WgmmaA, WARPGROUP, WG_M};
use crate::ir::mma::{self as mma_ir, MmaKind};
use crate::ir::{ArrayRef, FunctionIr, HopperOp, HopperStmt, ScalarTy, ValueId};

/// Polls of barrier phases that cannot complete, with no barrier progress in the block,
/// before the simulator reports a deadlock.
pub(super) const SPIN_LIMIT: u64 = 1 << 16;

/// One barrier's state.
#[derive(Debug, Clone, Copy)]
pub(super) struct BarState {
    /// Arrivals each phase expects.
    expected: u32,
    /// Arrivals the current phase still waits for.
    pending: u32,
    /// Transaction bytes the current phase still waits for (negative: more landed than
    /// announced so far).
    tx: i64,
    /// The current phase's parity.
    phase: u32,
}

/// The block's barriers, and the polls without progress.
#[derive(Default)]
pub(super) struct Bars {
    state: HashMap<(usize, ArrayRef, i64), BarState>,
    spins: u64,
}

/// Where barrier `index` (the thread's value) of `bar` is: its key.
pub(super) fn key(f: &FunctionIr, bar: ArrayRef, idx: i64) -> (usize, ArrayRef, i64) {
    (f as *const FunctionIr as usize, bar, idx)
}

/// The value of `v` for thread `t`.
pub(super) fn reg(fr: &Frame<'_>, n: usize, v: ValueId, t: usize) -> u64 {
    fr.regs[v.0 as usize * n + t]
}

/// Element `e` of an operand's bytes as f64.
fn element(kind: MmaKind, bytes: &[u8]) -> f64 {
    match kind {
        MmaKind::F16 => f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        MmaKind::Bf16 => bf16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        MmaKind::E4M3 => crate::ir::F8E4M3::from_bits(bytes[0]).to_f32() as f64,
        MmaKind::E5M2 => crate::ir::F8E5M2::from_bits(bytes[0]).to_f32() as f64,
        // tf32 from shared memory: the low 13 mantissa bits are ignored (truncation; measured
        // on an H200), unlike `mma.sync`'s operands, which the builder rounds first.
        _ => {
            let raw = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            f32::from_bits(truncate_tf32(raw)) as f64
        }
    }
}

/// An f32's bits as the tensor cores read a tf32 operand from shared memory: the low 13
/// mantissa bits dropped (NaN stays NaN).
pub(super) fn truncate_tf32(raw: u32) -> u32 {
    if f32::from_bits(raw).is_nan() {
        return raw;
    }
    raw & 0xffff_e000
}

/// Why a barrier could not be advanced.
pub(super) enum BarError {
    /// It was never initialised.
    Uninitialised,
    /// An arrival on a phase that has all its arrivals.
    Complete,
}

impl Bars {
    /// Advances barrier `k` by an arrival (`arrive`) and `tx` transaction bytes (announced:
    /// positive; landed: negative). A phase that completes starts a new race-check epoch in
    /// `bep` (the epoch of the block whose barrier it is): what the arrivals wrote to shared
    /// memory is ordered for the threads that wait for the phase (coarser than the barrier's
    /// own order).
    pub(super) fn advance(
        &mut self,
        bep: &mut u32,
        k: (usize, ArrayRef, i64),
        arrive: bool,
        tx: i64,
    ) -> Result<(), BarError> {
        let b = self.state.get_mut(&k).ok_or(BarError::Uninitialised)?;
        if arrive {
            if b.pending == 0 {
                return Err(BarError::Complete);
            }
            b.pending -= 1;
        }
        b.tx += tx;
        self.spins = 0;
        if b.pending == 0 && b.tx == 0 {
            b.phase ^= 1;
            b.pending = b.expected;
            *bep = bep.wrapping_add(1);
        }
        Ok(())
    }
}

/// The fault of barrier `idx` that `who` could not advance.
pub(super) fn bar_fault(e: BarError, who: &str, idx: i64) -> Fault {
    match e {
        BarError::Uninitialised => Fault::new(
            FaultKind::Unsupported,
            format!(
                "{who} uses mbarrier {idx} before it was initialised (mbarrier.init, then a \
                 syncthreads, before any other use)"
            ),
        ),
        BarError::Complete => Fault::internal("an arrival on a complete phase"),
    }
}

impl Block<'_> {
    /// Advances barrier `k` by an arrival (`arrive`) and `tx` transaction bytes (announced:
    /// positive; landed: negative), completing its phase when nothing is pending.
    pub(super) fn bar_update(
        &mut self,
        k: (usize, ArrayRef, i64),
        arrive: bool,
        tx: i64,
        t: usize,
    ) -> Result<(), Fault> {
        self.bars
            .advance(&mut self.bep, k, arrive, tx)
            .map_err(|e| bar_fault(e, &self.who(t), k.2))
    }

    /// For every active thread: an arrival (`arrive`) on its barrier, with the bytes `tx`
    /// announces first, if any.
    fn bar_each(
        &mut self,
        fr: &Frame<'_>,
        m: &Mask,
        (bar, index): (ArrayRef, ValueId),
        arrive: bool,
        tx: Option<ValueId>,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let mut res = Ok(());
        for_lanes(m, self.nw, |t| {
            if res.is_err() {
                return;
            }
            let idx = index_of(f, index, reg(fr, n, index, t));
            let bytes = tx.map_or(0, |v| reg(fr, n, v, t) as u32 as i64);
            res = self.bar_update(key(f, bar, idx), arrive, bytes, t);
        });
        res
    }

    /// A statement of Hopper's machinery for the active threads.
    pub(super) fn hopper(
        &mut self,
        fr: &mut Frame<'_>,
        s: &HopperStmt,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        match s {
            HopperStmt::BarInit { bar, index, count } => {
                let mut err = None;
                for_lanes(m, self.nw, |t| {
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let c = reg(fr, n, *count, t) as u32;
                    if err.is_none() && (c == 0 || c >= 1 << 20) {
                        err = Some(Fault::new(
                            FaultKind::Unsupported,
                            format!(
                                "{} initialises mbarrier {idx} to expect {c} arrivals: the \
                                 count is 1 to 2^20 - 1",
                                self.who(t)
                            ),
                        ));
                    }
                    self.bars.state.insert(
                        key(f, *bar, idx),
                        BarState {
                            expected: c,
                            pending: c,
                            tx: 0,
                            phase: 0,
                        },
                    );
                });
                self.bars.spins = 0;
                err.map_or(Ok(()), Err)
            }
            HopperStmt::BarArrive { bar, index, tx } => {
                self.bar_each(fr, m, (*bar, *index), true, *tx)
            }
            HopperStmt::BarExpectTx { bar, index, tx } => {
                self.bar_each(fr, m, (*bar, *index), false, Some(*tx))
            }
            HopperStmt::TmaLoad { .. } | HopperStmt::TmaStore { .. } => self.tma(fr, s, m),
            // Copies complete when issued; the fences order what the schedule already orders.
            HopperStmt::FenceProxyAsync
            | HopperStmt::FenceBarrierInit
            | HopperStmt::BulkCommit
            | HopperStmt::BulkWait { .. } => Ok(()),
            HopperStmt::WgmmaFence | HopperStmt::WgmmaCommit | HopperStmt::SetMaxNReg { .. } => {
                self.whole_warpgroups(m, "a wgmma fence, commit or setmaxnreg")
            }
            HopperStmt::ClusterStore { .. } | HopperStmt::BarArriveRemote { .. } => {
                self.cluster_stmt(fr, s, m)
            }
            // Kernels with the cluster barrier run with independent warps, where the scheduler
            // completes it (`cluster.rs`).
            HopperStmt::ClusterArrive { .. } | HopperStmt::ClusterWait => Err(Fault::internal(
                "the cluster barrier outside the cluster scheduler",
            )),
        }
    }

    /// Every warpgroup with a thread here must be here whole (four full warps, the first a
    /// multiple of 4).
    fn whole_warpgroups(&self, m: &Mask, what: &str) -> Result<(), Fault> {
        for g in 0..self.nw.div_ceil(4) {
            let ws = g * 4..(g * 4 + 4).min(self.nw);
            if ws.clone().all(|w| m[w] == 0) {
                continue;
            }
            if ws.len() < 4
                || ws
                    .clone()
                    .any(|w| m[w] != u32::MAX || self.full[w] != u32::MAX)
            {
                return Err(Fault::new(
                    FaultKind::DivergentBarrier,
                    format!(
                        "{what} in warpgroup {g} (threads {}..{}): all 128 threads of a \
                         warpgroup (four whole warps) must execute it together, but only warps' \
                         lanes {:x?} are here; keep warpgroup-wide code out of branches that \
                         split a warpgroup, and launch blocks of a multiple of 128 threads",
                        g * 128,
                        g * 128 + 128,
                        ws.clone().map(|w| m[w]).collect::<Vec<_>>()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A value of Hopper's machinery, for the active threads.
    pub(super) fn hopper_op(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        op: &HopperOp,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let d = dst.0 as usize * n;
        match op {
            HopperOp::BarTryWait { bar, index, parity } => {
                let mut res = Ok(());
                let mut waiting = false;
                for_lanes(m, self.nw, |t| {
                    if res.is_err() {
                        return;
                    }
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let p = reg(fr, n, *parity, t) as u32 & 1;
                    match self.bars.state.get(&key(f, *bar, idx)) {
                        Some(b) => {
                            let done = b.phase != p;
                            waiting |= !done;
                            fr.regs[d + t] = done as u64;
                        }
                        None => {
                            res = Err(Fault::new(
                                FaultKind::Unsupported,
                                format!(
                                    "{} waits on mbarrier {idx} before it was initialised",
                                    self.who(t)
                                ),
                            ))
                        }
                    }
                });
                res?;
                if waiting {
                    self.bars.spins += 1;
                    if self.bars.spins > SPIN_LIMIT {
                        return Err(self.deadlock(fr, *bar, *index, *parity, m));
                    }
                }
                Ok(())
            }
            HopperOp::ClusterLoad { .. } | HopperOp::ClusterAtomicAdd { .. } => {
                self.cluster_op(fr, dst, op, m)
            }
            HopperOp::PackHalf2 { kind, lo, hi } => {
                // Rounded as the simulator's casts round (`x as bf16`, `x as f16`).
                let bf = *kind == MmaKind::Bf16;
                let half = |x: u64| {
                    let x = f32::from_bits(x as u32);
                    (if bf {
                        super::half::to_bf16(x).to_bits()
                    } else {
                        super::half::to_f16(x).to_bits()
                    }) as u64
                };
                for_lanes(m, self.nw, |t| {
                    let (l, h) = (reg(fr, n, *lo, t), reg(fr, n, *hi, t));
                    fr.regs[d + t] = half(l) | half(h) << 16;
                });
                Ok(())
            }
            HopperOp::SharedAddr { array, index } => {
                let size = match array {
                    ArrayRef::DynShared(t) => t.size() as i64,
                    _ => {
                        return Err(Fault::internal(
                            "a shared address outside dynamic shared memory",
                        ))
                    }
                };
                for_lanes(m, self.nw, |t| {
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let at = idx.wrapping_mul(size).wrapping_add(self.l.dyn_base as i64);
                    fr.regs[d + t] = at as u32 as u64;
                });
                Ok(())
            }
            HopperOp::Wgmma { elem, .. } if *elem != 0 => Ok(()),
            HopperOp::Wgmma {
                kind,
                n: cols,
                a,
                b,
                b_mn_major,
                scale_d,
                c,
                ..
            } => {
                self.whole_warpgroups(m, "a wgmma")?;
                self.wgmma(
                    fr,
                    dst,
                    *kind,
                    *cols as u32,
                    (*a, (*b, *b_mn_major)),
                    *scale_d,
                    c,
                    m,
                )
            }
            HopperOp::WgmmaWait { elem, .. } if *elem != 0 => Ok(()),
            HopperOp::WgmmaWait { regs, .. } => {
                self.whole_warpgroups(m, "wgmma.wait_group")?;
                for_lanes(m, self.nw, |t| {
                    for (e, &r) in regs.iter().enumerate() {
                        fr.regs[(dst.0 as usize + e) * n + t] = reg(fr, n, r, t);
                    }
                });
                Ok(())
            }
        }
    }

    /// The deadlock fault of threads waiting on a barrier phase that cannot complete.
    fn deadlock(
        &self,
        fr: &Frame<'_>,
        bar: ArrayRef,
        index: ValueId,
        parity: ValueId,
        m: &Mask,
    ) -> Fault {
        let (n, f) = (self.n, fr.f);
        let mut first = None;
        for_lanes(m, self.nw, |t| {
            if first.is_none() {
                first = Some(t);
            }
        });
        let t = first.unwrap_or(0);
        let idx = index_of(f, index, reg(fr, n, index, t));
        let p = reg(fr, n, parity, t) as u32 & 1;
        let state = self.bars.state.get(&key(f, bar, idx)).copied();
        let why = match state {
            Some(b) => format!(
                "it is in phase {} (parity {}) with {} of {} arrivals and {} transaction bytes \
                 still to come, and no thread of the block can arrive or copy any more",
                b.phase, b.phase, b.pending, b.expected, b.tx
            ),
            None => "it was never initialised".into(),
        };
        Fault::new(
            FaultKind::Deadlock,
            format!(
                "{} waits for the phase of parity {p} of mbarrier {idx} to complete, but {why}: \
                 on a GPU the kernel would hang. Check the arrival count given to init, the \
                 bytes given to arrive_expect_tx (the whole box of each TMA load), and the \
                 parity each wait uses (it flips every phase)",
                self.who(t)
            ),
        )
    }

    /// One wgmma for every warpgroup here: writes all elements of D (values `dst..`).
    #[allow(clippy::too_many_arguments)]
    fn wgmma(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        kind: MmaKind,
        cols: u32,
        (a, (b, b_mn)): (WgmmaA, (ValueId, bool)),
        scale_d: ValueId,
        c: &[ValueId],
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let k = hopper::wgmma_k(kind);
        let esize = kind.elem_bits() / 8;
        let len = self.dyn_shared.bytes.len();
        for g in 0..self.nw / 4 {
            if m[g * 4] == 0 {
                continue;
            }
            let t0 = g * WARPGROUP as usize;
            // The operands: 64×K of A, K×N of B, read through the first thread's descriptors.
            let mut ops = [
                vec![0f64; (WG_M * k) as usize],
                vec![0f64; (k * cols) as usize],
            ];
            // A from registers: each warp's rows as mma.sync's A fragment.
            if let WgmmaA::Regs(regs) = a {
                let per = kind.per_reg();
                for tl in 0..WARPGROUP {
                    let (w, lane) = (tl / 32, tl % 32);
                    for e in 0..4 * per {
                        let (r, col) = mma_ir::a_coord(kind, lane, e);
                        let bits = reg(fr, n, regs[(e / per) as usize], t0 + tl as usize) as u32;
                        // As mma.sync's A: tf32 rounded to nearest first (as the lowering does).
                        ops[0][((16 * w + r) * k + col) as usize] =
                            super::mma::element(kind, bits, e);
                    }
                }
            }
            let operands: Vec<(usize, u32, ValueId, bool)> = match a {
                WgmmaA::Desc { desc, mn_major } => {
                    vec![(0, WG_M, desc, mn_major), (1, cols, b, b_mn)]
                }
                WgmmaA::Regs(_) => vec![(1, cols, b, b_mn)],
            };
            for (o, rows, desc, mn_major) in operands {
                let dv = reg(fr, n, desc, t0);
                let d = SmemDesc::decode(dv);
                if let Some(tl) =
                    (1..WARPGROUP as usize).find(|&tl| reg(fr, n, desc, t0 + tl) != dv)
                {
                    return Err(Fault::new(
                        FaultKind::BadDescriptor,
                        format!(
                            "{} runs a wgmma whose {} operand descriptor ({:#018x}) differs from \
                             that of {} ({dv:#018x}): a warpgroup's threads must give one \
                             descriptor",
                            self.who(t0 + tl),
                            ["A", "B"][o],
                            reg(fr, n, desc, t0 + tl),
                            self.who(t0)
                        ),
                    ));
                }
                let tags = &self.dyn_shared.tma_swizzle;
                for mn in 0..rows {
                    for kk in 0..k {
                        // Descriptors hold shared-window addresses; the dynamic shared
                        // memory starts at `dyn_base`.
                        let at = (hopper::operand_addr(&d, mn_major, esize, mn, kk) as usize)
                            .wrapping_sub(self.l.dyn_base as usize);
                        if at.checked_add(esize as usize).map_or(true, |e| e > len) {
                            return Err(Fault::new(
                                FaultKind::OutOfBounds,
                                format!(
                                    "{} runs a wgmma whose {} operand (descriptor {dv:#018x}) \
                                     reads element ({mn}, {kk}) at shared byte {at}, outside the \
                                     {len} bytes of dynamic shared memory",
                                    self.who(t0),
                                    ["A", "B"][o]
                                ),
                            ));
                        }
                        if let Some(&tag) = tags.get(at) {
                            if tag != 0 && u32::from(tag - 1) != d.swizzle_bits {
                                let name =
                                    |b: u32| ["no", "32-byte", "64-byte", "128-byte"][b as usize];
                                return Err(Fault::new(
                                    FaultKind::BadDescriptor,
                                    format!(
                                        "{} runs a wgmma whose {} operand descriptor \
                                         ({dv:#018x}) reads with {} swizzle the shared byte \
                                         {at}, which a TMA load wrote with {} swizzle: the \
                                         descriptor's swizzle must be the tensor map's",
                                        self.who(t0),
                                        ["A", "B"][o],
                                        name(d.swizzle_bits),
                                        name(u32::from(tag - 1))
                                    ),
                                ));
                            }
                        }
                        let v = element(kind, &self.dyn_shared.bytes[at..at + esize as usize]);
                        if o == 0 {
                            ops[0][(mn * k + kk) as usize] = v;
                        } else {
                            ops[1][(kk * cols + mn) as usize] = v;
                        }
                    }
                }
            }
            let accumulate = reg(fr, n, scale_d, t0) & 1 != 0;
            for tl in 0..WARPGROUP {
                let t = t0 + tl as usize;
                for (e, &cv) in c.iter().enumerate() {
                    let (r, col) = hopper::acc_coord(tl, e as u32);
                    let mut acc = if accumulate {
                        f32::from_bits(reg(fr, n, cv, t) as u32) as f64
                    } else {
                        0.0
                    };
                    for i in 0..k {
                        acc += ops[0][(r * k + i) as usize] * ops[1][(i * cols + col) as usize];
                    }
                    fr.regs[(dst.0 as usize + e) * n + t] = (acc as f32).to_bits() as u64;
                }
            }
        }
        Ok(())
    }

    /// A TMA tile copy by every active thread: a load lands in the dynamic shared memory (box
    /// elements in order, innermost fastest, at their swizzled addresses; outside the tensor
    /// the map's fill) and completes its bytes on its barrier; a store writes the box's
    /// elements inside the tensor to global memory.
    fn tma(&mut self, fr: &mut Frame<'_>, s: &HopperStmt, m: &Mask) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let (map, coords, tile, tile_index, load) = match s {
            HopperStmt::TmaLoad {
                map,
                coords,
                dst,
                dst_index,
                ..
            } => (*map, coords, *dst, *dst_index, true),
            HopperStmt::TmaStore {
                map,
                coords,
                src,
                src_index,
            } => (*map, coords, *src, *src_index, false),
            _ => return Err(Fault::internal("not a TMA copy")),
        };
        let raw = self
            .l
            .maps
            .get(map as usize)
            .and_then(|b| b.as_ref())
            .ok_or_else(|| Fault::internal("a TMA copy without its tensor map"))?;
        let d = super::tensor_map::decode(&TensorMapBytes(**raw))
            .ok_or_else(|| Fault::internal("a tensor map the launch did not check"))?;
        if d.interleave != TensorMapInterleave::None
            || d.element_strides[..d.rank as usize].iter().any(|&e| e != 1)
        {
            return Err(Fault::new(
                FaultKind::Unsupported,
                "TMA copies with interleaved layouts or element strides above 1 are not simulated"
                    .to_string(),
            ));
        }
        let ArrayRef::DynShared(tty) = tile else {
            return Err(Fault::internal("a TMA tile outside dynamic shared memory"));
        };
        let rank = d.rank as usize;
        let es = d.elem.size();
        let bits = match d.swizzle {
            TensorMapSwizzle::None => 0,
            TensorMapSwizzle::B32 => 1,
            TensorMapSwizzle::B64 => 2,
            TensorMapSwizzle::B128 => 3,
        };
        let elems: usize = d.box_dims[..rank].iter().map(|&b| b as usize).product();
        let box_bytes = elems * es;
        let len = self.dyn_shared.bytes.len();
        let fill = match (d.oob_fill, d.elem) {
            (TensorMapOobFill::NanRequestZeroFma, ScalarTy::F16) => 0x7fff,
            (TensorMapOobFill::NanRequestZeroFma, ScalarTy::BF16) => 0x7fff,
            (TensorMapOobFill::NanRequestZeroFma, ScalarTy::F32) => 0x7fff_ffff,
            (TensorMapOobFill::NanRequestZeroFma, ScalarTy::F64) => 0x7fff_ffff_ffff_ffff,
            _ => 0,
        };
        let mut threads = Vec::new();
        for_lanes(m, self.nw, |t| threads.push(t));
        for t in threads {
            let base =
                index_of(f, tile_index, reg(fr, n, tile_index, t)).wrapping_mul(tty.size() as i64);
            // The shared-window address: the dynamic shared memory starts after the static.
            let addr = base.wrapping_add(self.l.dyn_base as i64);
            let misaligned = addr.rem_euclid(128) != 0;
            if base < 0 || misaligned || base as usize + box_bytes > len {
                let why = if base >= 0 && misaligned {
                    format!(
                        "is not 128-byte aligned (the dynamic shared memory starts at shared \
                         address {} here, after the kernel's static shared arrays: offset tiles \
                         with `aligned_index(128)`, or 1024 for 128-byte swizzled tiles)",
                        self.l.dyn_base
                    )
                } else {
                    format!("does not fit the {len} bytes of dynamic shared memory")
                };
                return Err(Fault::new(
                    if misaligned {
                        FaultKind::Misaligned
                    } else {
                        FaultKind::OutOfBounds
                    },
                    format!(
                        "{} copies a {box_bytes}-byte TMA box {} the dynamic shared memory at \
                         byte {base} (shared address {addr}), which {why}",
                        self.who(t),
                        if load { "into" } else { "from" }
                    ),
                ));
            }
            let c: Vec<i64> = coords
                .iter()
                .map(|&v| reg(fr, n, v, t) as u32 as i32 as i64)
                .collect();
            // The GPU raises an illegal instruction for a box whose innermost coordinate is
            // not a whole number of 16 bytes (loads and stores; seen on an H200).
            if (c[0] * es as i64).rem_euclid(16) != 0 {
                return Err(Fault::new(
                    FaultKind::Misaligned,
                    format!(
                        "{} copies a TMA box at innermost coordinate {} ({} bytes of {}-byte \
                         elements), which is not a multiple of 16 bytes: the GPU stops the kernel \
                         with an illegal instruction there. Start boxes at innermost coordinates \
                         that are multiples of {} elements",
                        self.who(t),
                        c[0],
                        c[0] * es as i64,
                        es,
                        16 / es
                    ),
                ));
            }
            let mut vals = Vec::with_capacity(if load { elems } else { 0 });
            for e in 0..elems {
                let (mut rest, mut inside, mut addr) = (e, true, d.global_address);
                for k in 0..rank {
                    let b = d.box_dims[k] as usize;
                    let g = c[k] + (rest % b) as i64;
                    rest /= b;
                    inside &= g >= 0 && (g as u64) < d.global_dims[k];
                    addr = addr.wrapping_add((g as u64).wrapping_mul(d.global_strides[k]));
                }
                let db = self.l.dyn_base;
                let at =
                    (hopper::swizzle(db + (base as usize + e * es) as u32, bits) - db) as usize;
                if load {
                    let v = if inside {
                        // SAFETY: the element is inside the tensor, which the launch checked
                        // lies in one live allocation; TMA maps have 16-byte aligned bases and
                        // strides, so the address is aligned to the element.
                        unsafe { super::global::load(addr, d.elem) }
                    } else {
                        fill
                    };
                    vals.push((at, v));
                } else if inside {
                    let sm = &self.dyn_shared;
                    let v = super::access::read_bits(&sm.bytes[at..at + es], d.elem);
                    // SAFETY: as for the load.
                    unsafe { super::global::store(addr, d.elem, v) };
                }
            }
            if let HopperStmt::TmaLoad {
                bar,
                bar_index,
                multicast,
                ..
            } = s
            {
                let bi = index_of(f, *bar_index, reg(fr, n, *bar_index, t));
                let ranks = match multicast {
                    Some(mv) => reg(fr, n, *mv, t) as u16,
                    None => 1 << self.cluster_rank(),
                };
                for r in 0..16u32 {
                    if ranks >> r & 1 == 0 {
                        continue;
                    }
                    self.check_rank(r, t, "multicasts a TMA box into the shared memory")?;
                    let (sm, bars, bep) = self.rank_parts(r)?;
                    if sm.tma_swizzle.is_empty() {
                        sm.tma_swizzle = vec![0; sm.bytes.len()];
                    }
                    for &(at, v) in &vals {
                        sm.tma_swizzle[at..at + es].fill(1 + bits as u8);
                        super::access::write_bits(&mut sm.bytes[at..at + es], d.elem, v);
                        for rec in &mut sm.recs[at..at + es] {
                            *rec = Rec::FRESH;
                        }
                    }
                    bars.advance(bep, key(f, *bar, bi), false, -(box_bytes as i64))
                        .map_err(|e| bar_fault(e, &self.who(t), bi))?;
                }
            }
        }
        Ok(())
    }
}
