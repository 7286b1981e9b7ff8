//! Thread-block clusters on the simulator (sm_90): the blocks of a cluster run together in one
//! scheduler, warps independent, and reach each other's shared memory.
//!
//! - A cluster's blocks are stepped round-robin, block by block and within a block warp by
//!   warp (`schedule.rs`), deterministically; a block on its own is a cluster of one.
//! - While a block runs, the shared memory, transaction barriers and race epoch of the other
//!   blocks of its cluster are lent to it ([`Peer`]), so distributed shared memory accesses
//!   (`mapa` then a load, store or atomic), remote barrier arrivals and multicast TMA copies
//!   reach them. Such accesses to another block are bounds-checked but not race-checked.
//! - The cluster barrier (`barrier.cluster.arrive` / `.wait`) has one phase counter: a warp
//!   arrives (whole: every thread of the warp that has not finished), and a wait passes once
//!   every warp of the cluster that has not finished has arrived in the phase it arrived in.
//!   A finished warp no longer takes part, as for `syncthreads`.
//! - Touching the shared memory of a block that has finished is a fault: on a GPU that memory
//!   may already belong to another block (end such kernels with a cluster barrier).

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use super::access::{index_of, rmw, shared_slot, update_bits, Access, Target};
use super::block::{try_lanes, Block, Frame, Mask, SharedBuf};
use super::control::{Meet, MeetKind};
use super::fault::Fault;
use super::hopper::{bar_fault, key, reg, Bars};
use super::schedule::{stuck, State, Warps};
use crate::error::FaultKind;
use crate::ir::atomic::AtomicKind;
use crate::ir::{ArrayRef, FunctionIr, HopperOp, HopperStmt, Sreg, ValueId};

/// Another block's shared state, lent to the block that runs.
pub(super) struct Peer {
    shared: Vec<(*const FunctionIr, Vec<SharedBuf>)>,
    dyn_shared: SharedBuf,
    bars: Bars,
    bep: u32,
    /// Every warp of the block has finished.
    done: bool,
}

/// Runs cluster number `linear` (x fastest) of the grid on `blocks` (one per rank).
pub(super) fn run_cluster_at(blocks: &mut [Block<'_>], linear: u64) -> Result<(), Fault> {
    let Some(first) = blocks.first() else {
        return Ok(());
    };
    let (c, g) = (first.l.cluster, first.l.grid);
    let n = [0, 1, 2].map(|k| (g[k] / c[k]) as u64);
    let id = [linear % n[0], linear / n[0] % n[1], linear / (n[0] * n[1])];
    let mut frames: Vec<_> = blocks
        .iter_mut()
        .enumerate()
        .map(|(r, b)| {
            let r = r as u32;
            let pos = [r % c[0], r / c[0] % c[1], r / (c[0] * c[1])];
            b.start([0, 1, 2].map(|k| id[k] as u32 * c[k] + pos[k]))
        })
        .collect();
    let res = run_cluster(blocks, &mut frames);
    for (b, fr) in blocks.iter_mut().zip(frames) {
        b.finish(fr);
    }
    res
}

/// Runs the blocks of one cluster (in rank order, each with its kernel frame) to their end.
pub(super) fn run_cluster<'l>(
    blocks: &mut [Block<'l>],
    kernels: &mut [Frame<'l>],
) -> Result<(), Fault> {
    let nb = blocks.len();
    let mut ws: Vec<Warps<'l>> = blocks.iter().map(|b| b.warps()).collect();
    let mut phase = 0u64;
    loop {
        let mut moved = false;
        for b in 0..nb {
            if ws[b].done() {
                continue;
            }
            lend(blocks, &ws, b);
            let r = blocks[b].round(&mut kernels[b], &mut ws[b], phase);
            take_back(blocks, b);
            moved |= r?;
        }
        moved |= release_cluster(blocks, &mut ws, &mut phase);
        if ws.iter().all(|w| w.done()) {
            return Ok(());
        }
        if !moved {
            let lines: Vec<_> = blocks
                .iter()
                .zip(&ws)
                .map(|(b, w)| (b.ctaid, b.stuck_lines(w)))
                .collect();
            return Err(stuck(&lines, nb > 1));
        }
    }
}

/// Lends every other block's shared state to block `b`.
fn lend(blocks: &mut [Block<'_>], ws: &[Warps<'_>], b: usize) {
    if blocks.len() < 2 {
        return;
    }
    for o in 0..blocks.len() {
        if o == b {
            continue;
        }
        let p = &mut blocks[o];
        let peer = Peer {
            shared: std::mem::take(&mut p.shared),
            dyn_shared: std::mem::replace(&mut p.dyn_shared, SharedBuf::new(0)),
            bars: std::mem::take(&mut p.bars),
            bep: p.bep,
            done: ws[o].done(),
        };
        blocks[b].peers[o] = Some(peer);
    }
}

/// Gives the lent state back.
fn take_back(blocks: &mut [Block<'_>], b: usize) {
    for o in 0..blocks.len() {
        let Some(peer) = blocks[b].peers.get_mut(o).and_then(Option::take) else {
            continue;
        };
        let p = &mut blocks[o];
        p.shared = peer.shared;
        p.dyn_shared = peer.dyn_shared;
        p.bars = peer.bars;
        p.bep = peer.bep;
    }
}

/// Completes the cluster barrier's phase when every warp of the cluster that has not finished
/// has arrived in it, and lets the warps that wait for a completed phase go on; whether any
/// did.
fn release_cluster(blocks: &mut [Block<'_>], ws: &mut [Warps<'_>], phase: &mut u64) -> bool {
    let mut any = false;
    let mut all = true;
    for w in ws.iter() {
        for (s, a) in w.st.iter().zip(&w.arrived) {
            if matches!(s, State::Done) {
                continue;
            }
            any |= a.is_some();
            all &= *a == Some(*phase);
        }
    }
    if !(any && all) {
        return false;
    }
    *phase += 1;
    for (b, w) in blocks.iter_mut().zip(ws.iter_mut()) {
        // What the cluster wrote before the barrier is ordered for every thread after it.
        b.bep = b.bep.wrapping_add(1);
        for (s, a) in w.st.iter_mut().zip(w.arrived.iter_mut()) {
            if let State::Wait(Meet {
                kind: MeetKind::ClusterWait,
                ..
            }) = s
            {
                *s = State::Run;
                *a = None;
            }
        }
    }
    true
}

impl<'l> Block<'l> {
    /// The block's rank in its cluster (x fastest).
    pub(super) fn cluster_rank(&self) -> u32 {
        let c = self.l.cluster;
        let p = [0, 1, 2].map(|k| self.ctaid[k] % c[k]);
        p[0] + c[0] * (p[1] + c[1] * p[2])
    }

    /// Blocks in the cluster.
    fn cluster_size(&self) -> u32 {
        self.l.cluster.iter().product()
    }

    /// The value of a cluster special register.
    pub(super) fn cluster_sreg(&self, r: Sreg) -> u64 {
        let (c, g) = (self.l.cluster, self.l.grid);
        (match r {
            Sreg::ClusterCtaid(k) => self.ctaid[k as usize % 3] % c[k as usize % 3],
            Sreg::ClusterNctaid(k) => c[k as usize % 3],
            Sreg::ClusterId(k) => self.ctaid[k as usize % 3] / c[k as usize % 3],
            Sreg::NclusterId(k) => g[k as usize % 3] / c[k as usize % 3],
            Sreg::ClusterRank => self.cluster_rank(),
            _ => self.cluster_size(),
        }) as u64
    }

    /// Warp `w` at the cluster barrier: an arrival is counted (the warp goes on), a wait
    /// passes at once if the phase it arrived in has completed.
    pub(super) fn cluster_arrival(
        &mut self,
        w: usize,
        ws: &mut Warps<'l>,
        phase: u64,
        ret: &Mask,
    ) -> Result<(), Fault> {
        let State::Wait(Meet { kind, mask, .. }) = &ws.st[w] else {
            return Ok(());
        };
        match kind {
            MeetKind::ClusterArrive => {
                let missing = self.full[w] & !self.exited[w] & !ret[w] & !mask[w];
                if missing != 0 {
                    let t = w * 32 + missing.trailing_zeros() as usize;
                    return Err(Fault::new(
                        FaultKind::DivergentBarrier,
                        format!(
                            "the cluster barrier is reached by part of warp {w} only ({} is not \
                             there): every thread of a cluster arrives at it, so keep \
                             cluster_arrive/cluster_sync out of branches that split a warp",
                            self.who(t)
                        ),
                    ));
                }
                if ws.arrived[w].is_some() {
                    return Err(Fault::new(
                        FaultKind::DivergentBarrier,
                        format!(
                            "warp {w} ({}) arrives at the cluster barrier twice without waiting \
                             in between: each cluster_arrive is followed by a cluster_wait",
                            self.who(w * 32)
                        ),
                    ));
                }
                ws.arrived[w] = Some(phase);
                ws.st[w] = State::Run;
            }
            MeetKind::ClusterWait => match ws.arrived[w] {
                None => {
                    return Err(Fault::new(
                        FaultKind::DivergentBarrier,
                        format!(
                            "warp {w} ({}) waits at the cluster barrier without having arrived: \
                             call cluster_arrive before cluster_wait (or cluster_sync for both)",
                            self.who(w * 32)
                        ),
                    ))
                }
                Some(p) if p < phase => {
                    ws.arrived[w] = None;
                    ws.st[w] = State::Run;
                }
                Some(_) => {}
            },
            _ => {}
        }
        Ok(())
    }

    /// Checks that thread `t` may reach the block of cluster rank `rank` (`what` it does).
    pub(super) fn check_rank(&self, rank: u32, t: usize, what: &str) -> Result<(), Fault> {
        let size = self.cluster_size();
        if rank >= size {
            return Err(Fault::new(
                FaultKind::OutOfBounds,
                format!(
                    "{} {what} of the block of cluster rank {rank}, but its cluster has {size} \
                     block{} (cluster {:?}): ranks are 0 to {}",
                    self.who(t),
                    if size == 1 { "" } else { "s" },
                    self.l.cluster,
                    size - 1
                ),
            ));
        }
        if rank != self.cluster_rank() && self.peers[rank as usize].as_ref().is_some_and(|p| p.done)
        {
            return Err(Fault::new(
                FaultKind::OutOfBounds,
                format!(
                    "{} {what} of the block of cluster rank {rank}, which has finished: a \
                     block's shared memory is gone once it exits. Keep every block of the \
                     cluster alive until the others are done with its shared memory (end the \
                     kernel with cluster_sync())",
                    self.who(t)
                ),
            ));
        }
        Ok(())
    }

    /// The dynamic shared memory, barriers and race epoch of the block of cluster rank `rank`
    /// (checked with [`check_rank`](Self::check_rank)).
    pub(super) fn rank_parts(
        &mut self,
        rank: u32,
    ) -> Result<(&mut SharedBuf, &mut Bars, &mut u32), Fault> {
        if rank == self.cluster_rank() {
            return Ok((&mut self.dyn_shared, &mut self.bars, &mut self.bep));
        }
        let p = self.peer(rank)?;
        Ok((&mut p.dyn_shared, &mut p.bars, &mut p.bep))
    }

    /// The lent state of the other block of cluster rank `rank`.
    fn peer(&mut self, rank: u32) -> Result<&mut Peer, Fault> {
        self.peers
            .get_mut(rank as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| Fault::internal("a cluster peer that is not lent"))
    }

    /// One access of thread `t` to element `idx` of shared array `array` in the block of
    /// cluster rank `rank`; the old value.
    #[allow(clippy::too_many_arguments)]
    fn rank_access(
        &mut self,
        fr: &mut Frame<'_>,
        array: ArrayRef,
        ty: crate::ir::ScalarTy,
        rank: u32,
        t: usize,
        idx: i64,
        how: Access,
        op: impl Fn(u64) -> Option<u64>,
    ) -> Result<u64, Fault> {
        let f = fr.f;
        self.check_rank(rank, t, &format!("{} the shared memory", how.verb()))?;
        let tg = self.target(f, array, ty)?;
        if rank == self.cluster_rank() {
            return self.access(fr, array, tg, ty, t, idx, how, op);
        }
        let len = tg.len();
        if idx < 0 || idx as u64 >= len {
            let e = self.out_of_bounds(f, array, t, how, idx, len);
            return Err(Fault::new(
                e.kind,
                format!("{} (in the block of cluster rank {rank})", e.message),
            ));
        }
        let p = self.peer(rank)?;
        let buf = match (array, tg) {
            (ArrayRef::Shared(i), Target::Shared { .. }) => {
                let slot = shared_slot(&mut p.shared, f);
                &mut p.shared[slot].1[i as usize]
            }
            (_, Target::Dyn { .. }) => &mut p.dyn_shared,
            _ => return Err(Fault::internal("distributed access to a non-shared array")),
        };
        let off = idx as usize * ty.size();
        Ok(update_bits(&mut buf.bytes[off..off + ty.size()], ty, op))
    }

    /// A distributed shared memory statement (a store, a remote barrier arrival).
    pub(super) fn cluster_stmt(
        &mut self,
        fr: &mut Frame<'_>,
        s: &HopperStmt,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        match s {
            HopperStmt::ClusterStore {
                array,
                index,
                rank,
                value,
            } => {
                let ty = f.values[value.0 as usize].ty;
                try_lanes(m, self.nw, |t| {
                    let idx = index_of(f, *index, reg(fr, n, *index, t));
                    let (r, v) = (reg(fr, n, *rank, t) as u32, reg(fr, n, *value, t));
                    self.rank_access(fr, *array, ty, r, t, idx, Access::Write, |_| Some(v))?;
                    Ok(())
                })
            }
            HopperStmt::BarArriveRemote { bar, index, rank } => try_lanes(m, self.nw, |t| {
                let idx = index_of(f, *index, reg(fr, n, *index, t));
                let r = reg(fr, n, *rank, t) as u32;
                self.check_rank(r, t, "arrives on an mbarrier in the shared memory")?;
                let (_, bars, bep) = self.rank_parts(r)?;
                bars.advance(bep, key(f, *bar, idx), true, 0)
                    .map_err(|e| bar_fault(e, &self.who(t), idx))
            }),
            _ => Err(Fault::internal("not a distributed shared memory statement")),
        }
    }

    /// A distributed shared memory load or atomic add into value `dst`.
    pub(super) fn cluster_op(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        op: &HopperOp,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let ty = f.values[dst.0 as usize].ty;
        let d = dst.0 as usize * n;
        let (array, index, rank, value) = match op {
            HopperOp::ClusterLoad { array, index, rank } => (*array, *index, *rank, None),
            HopperOp::ClusterAtomicAdd {
                array,
                index,
                rank,
                value,
            } => (*array, *index, *rank, Some(*value)),
            _ => return Err(Fault::internal("not a distributed shared memory value")),
        };
        try_lanes(m, self.nw, |t| {
            let idx = index_of(f, index, reg(fr, n, index, t));
            let r = reg(fr, n, rank, t) as u32;
            let old = match value {
                None => self.rank_access(fr, array, ty, r, t, idx, Access::Read, |_| None)?,
                Some(v) => {
                    let x = reg(fr, n, v, t);
                    self.rank_access(fr, array, ty, r, t, idx, Access::Atomic, |old| {
                        Some(rmw(AtomicKind::Add, ty, old, x, 0))
                    })?
                }
            };
            fr.regs[d + t] = old;
            Ok(())
        })
    }
}
