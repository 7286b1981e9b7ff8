//! Running one block: in lockstep (one context for every warp), or with independent warps
//! (one context per warp, stepped round-robin by one scheduler, deterministic) for kernels whose
//! warps wait for each other's later work (see `control.rs`).
//!
//! With independent warps, a warp that reaches a meeting point waits there until the warps it
//! meets are all there, and the point is then executed once for all of them:
//! - `syncthreads` (and its count/and/or forms): every warp that has not finished, at the same
//!   statement;
//! - a warpgroup instruction (wgmma, its fence/commit/wait, `setmaxnreg`): the four warps of
//!   the warpgroup, at the same statement;
//! - a named barrier (`bar.sync id, count` / `bar.arrive id, count`): `count` threads, counted
//!   a whole warp at a time; arriving does not wait.
//!
//! When no warp can run and no meeting point can complete, the block is stuck: on a GPU it
//! would hang, here it is a deadlock fault that says where each warp waits.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use super::block::{spans, Block, Frame, NONE};
use super::control::{Ctx, Meet, MeetKind, Stop};
use super::fault::{xyz, Fault};
use crate::error::FaultKind;
use crate::ir::{Barrier, FunctionIr, HopperOp, HopperStmt, Op, Stmt};

/// Named barriers of a block (PTX: 16 per CTA, 0 is `syncthreads`'s).
pub(super) const NAMED_BARRIERS: u32 = 16;

/// Where a warp stands.
pub(super) enum State<'f> {
    Run,
    Wait(Meet<'f>),
    Done,
}

/// One named barrier's progress.
#[derive(Clone, Copy, Default)]
struct Named {
    /// Threads arrived in the current phase.
    arrived: u32,
    /// The count the current phase expects (0: none arrived yet).
    count: u32,
}

/// Whether blocks of `f` run their warps independently: when `f` (or a device function it
/// calls) needs it, or `CUDAJIT_SIM_WARPS=independent` asks it for every kernel (a testing
/// knob: both schedules must give the same results for kernels whose warps do not wait for
/// each other).
pub(super) fn independent_warps(f: &FunctionIr) -> bool {
    static ALWAYS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let always = *ALWAYS.get_or_init(|| {
        std::env::var("CUDAJIT_SIM_WARPS").is_ok_and(|v| v.trim() == "independent")
    });
    always || needs_independent_warps(f)
}

/// Whether `f` (or a device function it calls) needs warps that run independently: it waits
/// on transaction barriers, uses named barriers, or gives warps different register budgets.
fn needs_independent_warps(f: &FunctionIr) -> bool {
    f.tree().into_iter().any(|g| {
        let mut found = g
            .values
            .iter()
            .any(|v| matches!(v.op, Op::Hopper(HopperOp::BarTryWait { .. })));
        FunctionIr::each_stmt(&g.body, &mut |s| {
            found |= matches!(
                s,
                Stmt::Barrier(Barrier::Named { .. })
                    | Stmt::Hopper(
                        HopperStmt::SetMaxNReg { .. }
                            | HopperStmt::ClusterArrive { .. }
                            | HopperStmt::ClusterWait
                    )
            )
        });
        found
    })
}

/// The warps of a block that runs them independently: each one's context and state, and the
/// block's named barriers.
pub(super) struct Warps<'l> {
    cxs: Vec<Ctx<'l>>,
    pub(super) st: Vec<State<'l>>,
    named: [Named; NAMED_BARRIERS as usize],
    /// Per warp, the cluster barrier phase it arrived in and has not yet waited for.
    pub(super) arrived: Vec<Option<u64>>,
}

impl<'l> Warps<'l> {
    /// Whether every warp has finished.
    pub(super) fn done(&self) -> bool {
        self.st.iter().all(|s| matches!(s, State::Done))
    }
}

impl<'l> Block<'l> {
    /// Runs the kernel's body for the whole block, in the block's mode.
    pub(super) fn run_body(&mut self, kernel: &mut Frame<'l>) -> Result<(), Fault> {
        let body: &'l [Stmt] = &self.l.ir.body;
        if !self.independent {
            let mut cx = Ctx::new(body, self.full, self.nw, self.n);
            return match self.step(kernel, &mut cx, true)? {
                Stop::Done => Ok(()),
                _ => Err(Fault::internal("a lockstep block stopped before its end")),
            };
        }
        // A block on its own is a cluster of one.
        super::cluster::run_cluster(std::slice::from_mut(self), std::slice::from_mut(kernel))
    }

    /// The block's warps, each about to run the kernel's body.
    pub(super) fn warps(&self) -> Warps<'l> {
        let (n, nw) = (self.n, self.nw);
        let body: &'l [Stmt] = &self.l.ir.body;
        Warps {
            cxs: (0..nw)
                .map(|w| {
                    let mut m = NONE;
                    m[w] = self.full[w];
                    Ctx::new(body, m, nw, n)
                })
                .collect(),
            st: (0..nw).map(|_| State::Run).collect(),
            named: [Named::default(); NAMED_BARRIERS as usize],
            arrived: vec![None; nw],
        }
    }

    /// Steps every warp that can run once, completing the block's meeting points as warps
    /// reach them (`phase`: the cluster barrier's current phase); whether any warp ran.
    pub(super) fn round(
        &mut self,
        kernel: &mut Frame<'l>,
        ws: &mut Warps<'l>,
        phase: u64,
    ) -> Result<bool, Fault> {
        let mut moved = false;
        for w in 0..self.nw {
            if !matches!(ws.st[w], State::Run) {
                continue;
            }
            moved = true;
            ws.st[w] = match self.step(kernel, &mut ws.cxs[w], false)? {
                Stop::Done => {
                    // A finished warp no longer takes part in barriers.
                    self.exited[w] |= self.full[w];
                    State::Done
                }
                Stop::Yield => State::Run,
                Stop::Meet(m) => State::Wait(m),
            };
            self.named_arrivals(w, &mut ws.st, &mut ws.named)?;
            self.cluster_arrival(w, ws, phase, &kernel.ret)?;
            self.release_block(kernel, &ws.cxs, &mut ws.st)?;
            self.release_warpgroups(kernel, &ws.cxs, &mut ws.st)?;
        }
        Ok(moved)
    }

    /// Warp `w` at a named barrier: counts its arrival, releases the barrier's waiters when
    /// the count is complete, and lets `w` go on if it only arrives.
    fn named_arrivals(
        &mut self,
        w: usize,
        st: &mut [State<'l>],
        named: &mut [Named],
    ) -> Result<(), Fault> {
        let State::Wait(Meet {
            kind: MeetKind::Named { id, count, sync },
            mask,
            ..
        }) = st[w]
        else {
            return Ok(());
        };
        let what = if sync { "bar.sync" } else { "bar.arrive" };
        let threads = self.full[w].count_ones();
        self.check_warp_sync(w, u32::MAX, mask[w], what)?;
        if id >= NAMED_BARRIERS {
            return Err(Fault::new(
                FaultKind::Unsupported,
                format!(
                    "{what} on barrier {id} by {}: a block has barriers 0 to {}",
                    self.who(w * 32),
                    NAMED_BARRIERS - 1
                ),
            ));
        }
        let all: u32 = (0..self.nw)
            .filter(|&v| !matches!(st[v], State::Done))
            .map(|v| self.full[v].count_ones())
            .sum();
        let want = if count == 0 { all } else { count };
        let b = &mut named[id as usize];
        if b.arrived > 0 && b.count != want {
            return Err(Fault::new(
                FaultKind::DivergentBarrier,
                format!(
                    "{what} on barrier {id} by {} expects {want} threads, but the warps already \
                     there expect {}: every warp at a named barrier must give the same count",
                    self.who(w * 32),
                    b.count
                ),
            ));
        }
        b.count = want;
        b.arrived += threads;
        if b.arrived > want {
            return Err(Fault::new(
                FaultKind::DivergentBarrier,
                format!(
                    "{what} on barrier {id}: {} threads arrived where the count is {want} \
                     (the last: {}); the count is the number of threads of all the warps that \
                     use the barrier, a multiple of 32",
                    b.arrived,
                    self.who(w * 32)
                ),
            ));
        }
        if !sync {
            st[w] = State::Run;
        }
        if b.arrived == want {
            *b = Named::default();
            for s in st.iter_mut() {
                if let State::Wait(Meet {
                    kind:
                        MeetKind::Named {
                            id: i, sync: true, ..
                        },
                    ..
                }) = s
                {
                    if *i == id {
                        *s = State::Run;
                    }
                }
            }
            // Shared memory written before the barrier is ordered for the warps after it.
            self.bep = self.bep.wrapping_add(1);
        }
        Ok(())
    }

    /// Completes a block barrier when every warp that has not finished waits at it.
    fn release_block(
        &mut self,
        kernel: &mut Frame<'l>,
        cxs: &[Ctx<'l>],
        st: &mut [State<'l>],
    ) -> Result<(), Fault> {
        let mut at: Option<&'l Stmt> = None;
        let mut first = None;
        let mut union = NONE;
        for (w, s) in st.iter().enumerate() {
            match s {
                State::Done => {}
                State::Wait(m) if m.kind == MeetKind::Block => {
                    if let Some(a) = at {
                        if !std::ptr::eq(a, m.at) {
                            return Err(Fault::new(
                                FaultKind::DivergentBarrier,
                                format!(
                                    "{} and {} wait at different syncthreads: every thread of a \
                                     block must reach the same barrier",
                                    self.who(first.unwrap_or(0) * 32),
                                    self.who(w * 32)
                                ),
                            ));
                        }
                    }
                    at = Some(m.at);
                    first.get_or_insert(w);
                    union[w] |= m.mask[w];
                }
                _ => return Ok(()),
            }
        }
        let (Some(at), Some(w0)) = (at, first) else {
            return Ok(());
        };
        match at {
            Stmt::Let(id) => {
                if cxs.iter().any(|c| !c.calls.is_empty()) {
                    return Err(in_device_function("syncthreads_count/and/or"));
                }
                let sp = spans(&union, self.nw, self.n);
                let f = kernel.f;
                self.let_(kernel, *id, &union, &sp)
                    .map_err(|e| e.at_stmt(f, at))?;
            }
            _ => {
                let fr = cxs[w0].calls.last().unwrap_or(kernel);
                self.sync_block(fr, &union, "syncthreads")
                    .map_err(|e| e.at_stmt(fr.f, at))?;
            }
        }
        for s in st.iter_mut() {
            if matches!(s, State::Wait(_)) {
                *s = State::Run;
            }
        }
        Ok(())
    }

    /// Executes a warpgroup instruction once every warp of its warpgroup waits at it (or has
    /// finished: then the instruction reports the warpgroup incomplete).
    fn release_warpgroups(
        &mut self,
        kernel: &mut Frame<'l>,
        cxs: &[Ctx<'l>],
        st: &mut [State<'l>],
    ) -> Result<(), Fault> {
        for g in 0..self.nw.div_ceil(4) {
            let ws = g * 4..(g * 4 + 4).min(self.nw);
            let mut at: Option<&'l Stmt> = None;
            let mut union = NONE;
            let mut ready = true;
            for w in ws.clone() {
                match &st[w] {
                    State::Done => {}
                    State::Wait(m)
                        if m.kind == MeetKind::Warpgroup(g)
                            && at.map_or(true, |a| std::ptr::eq(a, m.at)) =>
                    {
                        at = Some(m.at);
                        union[w] |= m.mask[w];
                    }
                    _ => ready = false,
                }
            }
            let Some(at) = at.filter(|_| ready) else {
                continue;
            };
            if ws.clone().any(|w| !cxs[w].calls.is_empty()) {
                return Err(in_device_function("a warpgroup instruction"));
            }
            let f = kernel.f;
            match at {
                Stmt::Let(id) => {
                    let sp = spans(&union, self.nw, self.n);
                    self.let_(kernel, *id, &union, &sp)
                }
                _ => self.simple(kernel, at, &union),
            }
            .map_err(|e| e.at_stmt(f, at))?;
            for w in ws {
                if matches!(st[w], State::Wait(_)) {
                    st[w] = State::Run;
                }
            }
        }
        Ok(())
    }

    /// Where each warp of the block stands, for a deadlock report.
    pub(super) fn stuck_lines(&self, ws: &Warps<'l>) -> Vec<String> {
        let mut lines = Vec::new();
        for (w, s) in ws.st.iter().enumerate() {
            let line = match s {
                State::Done => "has finished".to_string(),
                State::Run => "is running".to_string(),
                State::Wait(m) => {
                    match m.kind {
                        MeetKind::Block => "waits at syncthreads".to_string(),
                        MeetKind::Warpgroup(g) => {
                            format!("waits for the other warps of warpgroup {g} at a warpgroup instruction")
                        }
                        MeetKind::Named { id, .. } => {
                            let b = ws.named[id as usize];
                            format!(
                                "waits at named barrier {id} ({} of {} threads arrived)",
                                b.arrived, b.count
                            )
                        }
                        MeetKind::ClusterArrive => "arrives at the cluster barrier".to_string(),
                        MeetKind::ClusterWait => "waits at the cluster barrier".to_string(),
                    }
                }
            };
            lines.push(format!("warp {w} {line}"));
        }
        lines
    }
}

/// The fault of a cluster (or a lone block: `clustered` false) in which every warp waits and
/// no meeting point can complete; `lines`: each block's index and where its warps stand.
pub(super) fn stuck(lines: &[([u32; 3], Vec<String>)], clustered: bool) -> Fault {
    let what = if clustered {
        let blocks: Vec<String> = lines
            .iter()
            .map(|(b, l)| format!("block {}: {}", xyz(*b), l.join("; ")))
            .collect();
        format!(
            "the cluster of blocks {} is stuck: no warp can go on ({})",
            lines
                .iter()
                .map(|(b, _)| xyz(*b))
                .collect::<Vec<_>>()
                .join(", "),
            blocks.join(" | ")
        )
    } else {
        let (b, l) = &lines[0];
        format!(
            "block {} is stuck: no warp can go on ({})",
            xyz(*b),
            l.join("; ")
        )
    };
    Fault::new(
        FaultKind::Deadlock,
        format!(
            "{what}; on a GPU the kernel would hang. Every warp must reach the same barriers, \
             the four warps of a warpgroup the same warpgroup instructions, the warps of a named \
             barrier must add up to its count, and every thread of a cluster must arrive at the \
             cluster barrier before any waits there for good"
        ),
    )
}

/// A meeting point the simulator does not run inside device functions with independent warps.
fn in_device_function(what: &str) -> Fault {
    Fault::new(
        FaultKind::Unsupported,
        format!(
            "{what} inside a device function, in a kernel whose warps run independently (it \
             waits on mbarriers, uses named barriers or setmaxnreg): the simulator runs these \
             only in the kernel's own body; inline the device function"
        ),
    )
}
