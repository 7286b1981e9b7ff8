//! Hopper's asynchronous machinery on the simulator: transaction barriers, TMA tile copies and
//! the warpgroup MMA, executed in the block's one legal schedule (see `block.rs`).
//!
//! - A barrier's state (expected arrivals, arrivals and transaction bytes pending, the phase)
//!   is kept beside the shared memory, keyed by its place; its 8 bytes are not written.
//! - A TMA load lands in shared memory when issued and completes its bytes on the barrier at
//!   once; a TMA store writes global memory when issued; bulk groups are then always complete.
//! - A wgmma computes when issued: each element of D is `(scale_d ? C : 0) + Σ_k A·B` with the
//!   products exact and summed in f64 in order of k, rounded once to f32 (as `mma.sync` here);
//!   tf32 inputs are first rounded as `cvt.rna.tf32.f32`. Its operands are read through their
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
use crate::error::FaultKind;
use crate::ir::hopper::{self, SmemDesc, WARPGROUP, WG_M};
use crate::ir::mma::{self as mma_ir, MmaKind};
use crate::ir::{ArrayRef, FunctionIr, HopperOp, HopperStmt, ValueId};

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
fn key(f: &FunctionIr, bar: ArrayRef, idx: i64) -> (usize, ArrayRef, i64) {
    (f as *const FunctionIr as usize, bar, idx)
}

/// The value of `v` for thread `t`.
fn reg(fr: &Frame<'_>, n: usize, v: ValueId, t: usize) -> u64 {
    fr.regs[v.0 as usize * n + t]
}

/// Element `e` of an operand's bytes as f64.
fn element(kind: MmaKind, bytes: &[u8]) -> f64 {
    match kind {
        MmaKind::F16 => f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        MmaKind::Bf16 => bf16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        _ => {
            let raw = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            f32::from_bits(mma_ir::round_tf32(raw)) as f64
        }
    }
}

impl Block<'_> {
    /// Advances barrier `k` by an arrival (`arrive`) and `tx` transaction bytes (announced:
    /// positive; landed: negative), completing its phase when nothing is pending.
    fn bar_update(
        &mut self,
        k: (usize, ArrayRef, i64),
        arrive: bool,
        tx: i64,
        t: usize,
    ) -> Result<(), Fault> {
        let who = self.who(t);
        let Some(b) = self.bars.state.get_mut(&k) else {
            return Err(Fault::new(
                FaultKind::Unsupported,
                format!(
                    "{who} uses mbarrier {} before it was initialised (mbarrier.init, then a \
                     syncthreads, before any other use)",
                    k.2
                ),
            ));
        };
        if arrive {
            if b.pending == 0 {
                return Err(Fault::internal("an arrival on a complete phase"));
            }
            b.pending -= 1;
        }
        b.tx += tx;
        if b.pending == 0 && b.tx == 0 {
            b.phase ^= 1;
            b.pending = b.expected;
        }
        self.bars.spins = 0;
        Ok(())
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
                let mut res = Ok(());
                for_lanes(m, self.nw, |t| {
                    if res.is_err() {
                        return;
                    }
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let bytes = tx.map_or(0, |v| reg(fr, n, v, t) as u32 as i64);
                    res = self.bar_update(key(f, *bar, idx), true, bytes, t);
                });
                res
            }
            HopperStmt::BarExpectTx { bar, index, tx } => {
                let mut res = Ok(());
                for_lanes(m, self.nw, |t| {
                    if res.is_err() {
                        return;
                    }
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let bytes = reg(fr, n, *tx, t) as u32 as i64;
                    res = self.bar_update(key(f, *bar, idx), false, bytes, t);
                });
                res
            }
            HopperStmt::TmaLoad { .. } | HopperStmt::TmaStore { .. } => {
                self.tma(fr, s, m)
            }
            // Copies complete when issued; the fences order what the schedule already orders.
            HopperStmt::FenceProxyAsync
            | HopperStmt::FenceBarrierInit
            | HopperStmt::BulkCommit
            | HopperStmt::BulkWait { .. } => Ok(()),
            HopperStmt::WgmmaFence | HopperStmt::WgmmaCommit | HopperStmt::SetMaxNReg { .. } => {
                self.whole_warpgroups(m, "a wgmma fence, commit or setmaxnreg")
            }
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
            if ws.len() < 4 || ws.clone().any(|w| m[w] != u32::MAX || self.full[w] != u32::MAX) {
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
            HopperOp::SharedAddr { array, index } => {
                let size = match array {
                    ArrayRef::DynShared(t) => t.size() as i64,
                    _ => return Err(Fault::internal("a shared address outside dynamic shared memory")),
                };
                for_lanes(m, self.nw, |t| {
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    fr.regs[d + t] = idx.wrapping_mul(size) as u32 as u64;
                });
                Ok(())
            }
            HopperOp::Wgmma { elem, .. } if *elem != 0 => Ok(()),
            HopperOp::Wgmma {
                kind,
                n: cols,
                a,
                b,
                a_mn_major,
                b_mn_major,
                scale_d,
                c,
                ..
            } => {
                self.whole_warpgroups(m, "a wgmma")?;
                self.wgmma(fr, dst, *kind, *cols as u32, [*a, *b], [*a_mn_major, *b_mn_major], *scale_d, c, m)
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
        desc: [ValueId; 2],
        mn_major: [bool; 2],
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
            let mut ops = [vec![0f64; (WG_M * k) as usize], vec![0f64; (k * cols) as usize]];
            for (o, rows) in [(0usize, WG_M), (1, cols)] {
                let dv = reg(fr, n, desc[o], t0);
                let d = SmemDesc::decode(dv);
                for mn in 0..rows {
                    for kk in 0..k {
                        let at = hopper::operand_addr(&d, mn_major[o], esize, mn, kk) as usize;
                        if at + esize as usize > len {
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

    /// A TMA copy (not simulated before tensor maps exist on the simulator).
    fn tma(&mut self, _fr: &mut Frame<'_>, _s: &HopperStmt, _m: &Mask) -> Result<(), Fault> {
        let _ = Rec::FRESH;
        Err(Fault::new(
            FaultKind::Unsupported,
            "TMA copies are not simulated yet".to_string(),
        ))
    }
}
