//! A block's control flow as explicit state: each context (the whole block, or one warp) keeps
//! a stack of the constructs it is in (statement lists, the other branch of an `if`, loops,
//! device-function calls), so it can stop at any statement and let another context run.
//!
//! Two ways to run a block (see `schedule.rs`):
//! - **lockstep** (most kernels): one context holds every warp; every statement runs for all
//!   of them before the next starts, and a barrier is a point all threads reach together;
//! - **independent warps** (kernels that wait on transaction barriers, use named barriers or
//!   `setmaxnreg`): one context per warp, stepped round-robin by one scheduler; a warp stops
//!   at block barriers, named barriers and warpgroup instructions until the others meet it
//!   there, and yields at the head of every `while` loop (a wait loop lets the others run).
//!
//! Within a context, branches split the lanes' mask and run one after the other, as the
//! lockstep interpreter always did, so warp intrinsics see the lanes the hardware would.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::block::{and_not, for_lanes, is_empty, spans, Block, Frame, Mask, NONE};
use super::fault::Fault;
use crate::ir::{Barrier, FunctionIr, HopperOp, HopperStmt, Op, Stmt, ValueId, VarId};

/// One construct in progress.
enum Ctl<'f> {
    /// Statements `stmts[pos..]` for the lanes `mask` (`sp`: its runs of warps). `resume`: a
    /// construct it started has ended, so lanes may have left (break, continue, return).
    Seq {
        stmts: &'f [Stmt],
        pos: usize,
        mask: Mask,
        sp: Vec<Range<usize>>,
        resume: bool,
    },
    /// The `otherwise` branch of an `if`, for `lanes`, once the `then` branch has run.
    Else { stmts: &'f [Stmt], lanes: Mask },
    /// A `for` loop; `iter`: the lanes whose body is running (`None`: at the head).
    For {
        var: VarId,
        end: ValueId,
        step: ValueId,
        body: &'f [Stmt],
        mask: Mask,
        exits: Exits,
        iter: Option<Mask>,
    },
    /// A `while` loop.
    While {
        cond_stmts: &'f [Stmt],
        cond: ValueId,
        body: &'f [Stmt],
        mask: Mask,
        exits: Exits,
        at: WhileAt,
    },
    /// A device function's body is running; then its result goes to `dst` of the caller
    /// (`at`: the caller's statement, in `caller`).
    Call {
        dst: ValueId,
        sp: Vec<Range<usize>>,
        at: &'f Stmt,
        caller: &'f FunctionIr,
    },
}

/// The lanes that left a loop (`brk`: for good; `cont`: this iteration).
#[derive(Clone, Copy)]
struct Exits {
    brk: Mask,
    cont: Mask,
}

const NO_EXITS: Exits = Exits {
    brk: NONE,
    cont: NONE,
};

/// Where a `while` loop is.
#[derive(Clone, Copy)]
enum WhileAt {
    /// Before the condition (first, or after the body).
    Head,
    /// The condition's statements have run for these lanes.
    Cond(Mask),
}

/// Why a context stopped.
pub(super) enum Stop<'f> {
    /// It has run to its end.
    Done,
    /// At a loop head: it may go on, after the others have had a turn.
    Yield,
    /// It waits for other warps at a meeting point.
    Meet(Meet<'f>),
}

/// A point where warps wait for each other.
pub(super) struct Meet<'f> {
    /// The statement (not yet executed).
    pub at: &'f Stmt,
    /// The lanes here.
    pub mask: Mask,
    pub kind: MeetKind,
}

/// Which warps a meeting point waits for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum MeetKind {
    /// Every thread of the block (`syncthreads` and its reductions).
    Block,
    /// The four warps of warpgroup `g` (wgmma, its fence/commit/wait, `setmaxnreg`).
    Warpgroup(usize),
    /// Named barrier `id` expecting `count` threads (0: all); `sync`: waits (else arrives).
    Named { id: u32, count: u32, sync: bool },
    /// An arrival on the cluster barrier (every thread of the cluster; it does not wait).
    ClusterArrive,
    /// A wait on the cluster barrier.
    ClusterWait,
}

/// One context: the warps it runs and where each construct it is in stands.
pub(super) struct Ctx<'f> {
    stack: Vec<Ctl<'f>>,
    /// The frames of the device functions it is in, innermost last (the kernel's frame is
    /// shared by every context: each writes only its lanes).
    pub calls: Vec<Frame<'f>>,
}

impl<'f> Ctx<'f> {
    /// A context about to run `body` for the lanes `mask` (of a block of `nw` warps, `n`
    /// threads).
    pub(super) fn new(body: &'f [Stmt], mask: Mask, nw: usize, n: usize) -> Ctx<'f> {
        Ctx {
            stack: vec![fresh(body, mask, nw, n)],
            calls: Vec::new(),
        }
    }
}

/// The exits of the innermost loop of the current function on `stack`, if any.
fn innermost_loop<'s>(stack: &'s mut [Ctl<'_>]) -> Option<&'s mut Exits> {
    for c in stack.iter_mut().rev() {
        match c {
            Ctl::For { exits, .. } | Ctl::While { exits, .. } => return Some(exits),
            Ctl::Call { .. } => return None,
            _ => {}
        }
    }
    None
}

/// The statements `stmts` from the start, for the lanes `mask`.
fn fresh<'f>(stmts: &'f [Stmt], mask: Mask, nw: usize, n: usize) -> Ctl<'f> {
    Ctl::Seq {
        stmts,
        pos: 0,
        mask,
        sp: spans(&mask, nw, n),
        resume: false,
    }
}

/// Drops from `m` the lanes for which `stay` is false, adding them to `left` (a loop's exits).
fn leave(m: &mut Mask, left: &mut Mask, nw: usize, stay: impl Fn(usize) -> bool) {
    for_lanes(&m.clone(), nw, |t| {
        if !stay(t) {
            m[t / 32] &= !(1 << (t % 32));
            left[t / 32] |= 1 << (t % 32);
        }
    });
}

/// The lanes of `m` not returned and not out of the loop `exits`.
fn live(m: &Mask, ret: &Mask, exits: Option<&Exits>, nw: usize) -> Mask {
    let mut r = and_not(m, ret, nw);
    if let Some(x) = exits {
        for w in 0..nw {
            r[w] &= !(x.brk[w] | x.cont[w]);
        }
    }
    r
}

/// The meeting point statement `s` is in a block of independent warps, if it is one (`fr`:
/// the frame it runs in, `m`: the lanes there).
fn meet_kind(s: &Stmt, fr: &Frame<'_>, m: &Mask, nw: usize) -> Option<MeetKind> {
    let first = (0..nw)
        .find(|&w| m[w] != 0)
        .map_or(0, |w| w * 32 + m[w].trailing_zeros() as usize);
    let group = first / 128;
    match s {
        Stmt::Barrier(Barrier::SyncThreads) => Some(MeetKind::Block),
        Stmt::Barrier(Barrier::Named { id, count, sync }) => Some(MeetKind::Named {
            id: *id,
            count: *count,
            sync: *sync,
        }),
        Stmt::Hopper(HopperStmt::ClusterArrive { .. }) => Some(MeetKind::ClusterArrive),
        Stmt::Hopper(HopperStmt::ClusterWait) => Some(MeetKind::ClusterWait),
        Stmt::Hopper(HopperStmt::WgmmaFence | HopperStmt::WgmmaCommit)
        | Stmt::Hopper(HopperStmt::SetMaxNReg { .. }) => Some(MeetKind::Warpgroup(group)),
        Stmt::Let(id) => match &fr.f.values[id.0 as usize].op {
            Op::SyncReduce(..) => Some(MeetKind::Block),
            Op::Hopper(HopperOp::Wgmma { elem: 0, .. } | HopperOp::WgmmaWait { elem: 0, .. }) => {
                Some(MeetKind::Warpgroup(group))
            }
            _ => None,
        },
        _ => None,
    }
}

impl<'l> Block<'l> {
    /// Runs context `cx` until it ends, yields or meets others. `lockstep`: it holds every
    /// warp, so meeting points execute at once. A fault inside device functions names each
    /// call that led there.
    pub(super) fn step(
        &mut self,
        kernel: &mut Frame<'l>,
        cx: &mut Ctx<'l>,
        lockstep: bool,
    ) -> Result<Stop<'l>, Fault> {
        self.step_on(kernel, cx, lockstep).map_err(|mut e| {
            for c in cx.stack.iter().rev() {
                if let Ctl::Call { at, caller, .. } = c {
                    e = e.at_stmt(caller, at);
                }
            }
            e
        })
    }

    fn step_on(
        &mut self,
        kernel: &mut Frame<'l>,
        cx: &mut Ctx<'l>,
        lockstep: bool,
    ) -> Result<Stop<'l>, Fault> {
        let (n, nw) = (self.n, self.nw);
        loop {
            let Some(top) = cx.stack.pop() else {
                return Ok(Stop::Done);
            };
            let fr: &mut Frame<'l> = cx.calls.last_mut().unwrap_or(&mut *kernel);
            match top {
                Ctl::Seq {
                    stmts,
                    mut pos,
                    mut mask,
                    mut sp,
                    resume,
                } => {
                    if resume {
                        let ret = fr.ret;
                        mask = live(&mask, &ret, innermost_loop(&mut cx.stack).map(|x| &*x), nw);
                        if is_empty(&mask, nw) {
                            continue;
                        }
                        sp = spans(&mask, nw, n);
                    }
                    let Some(s) = stmts.get(pos) else {
                        continue;
                    };
                    pos += 1;
                    // This list again, from the next statement (`resume`: after a construct).
                    let back = |sp, resume| Ctl::Seq {
                        stmts,
                        pos,
                        mask,
                        sp,
                        resume,
                    };
                    let f: &'l FunctionIr = fr.f;
                    if !lockstep {
                        if let Some(kind) = meet_kind(s, fr, &mask, nw) {
                            cx.stack.push(back(sp, false));
                            return Ok(Stop::Meet(Meet { at: s, mask, kind }));
                        }
                    }
                    let ended = match s {
                        Stmt::Let(id) => {
                            if let Op::Call(fid, args) = &f.values[id.0 as usize].op {
                                let callee: &'l FunctionIr =
                                    f.callees.get(fid.0 as usize).ok_or_else(|| {
                                        Fault::internal("call of an unknown device function")
                                    })?;
                                let mut cf = Frame::new(callee, n, false);
                                cf.args = vec![0; args.len() * n];
                                for (p, a) in args.iter().enumerate() {
                                    let src = a.0 as usize * n;
                                    cf.args[p * n..(p + 1) * n]
                                        .copy_from_slice(&fr.regs[src..src + n]);
                                }
                                cx.stack.push(back(sp.clone(), false));
                                cx.stack.push(Ctl::Call {
                                    dst: *id,
                                    sp,
                                    at: s,
                                    caller: f,
                                });
                                cx.stack.push(fresh(&callee.body, mask, nw, n));
                                cx.calls.push(cf);
                                continue;
                            }
                            self.let_(fr, *id, &mask, &sp)
                                .map_err(|e| e.at_stmt(f, s))?;
                            false
                        }
                        Stmt::If {
                            cond,
                            then,
                            otherwise,
                        } => {
                            let c = &fr.regs[cond.0 as usize * n..];
                            let (mut t, mut e) = (NONE, NONE);
                            for w in 0..nw {
                                let mut bits = 0u32;
                                let mut b = mask[w];
                                while b != 0 {
                                    let l = b.trailing_zeros() as usize;
                                    bits |= ((c[w * 32 + l] & 1) as u32) << l;
                                    b &= b - 1;
                                }
                                t[w] = bits;
                                e[w] = mask[w] & !bits;
                            }
                            cx.stack.push(back(sp, true));
                            if !is_empty(&e, nw) {
                                cx.stack.push(Ctl::Else {
                                    stmts: otherwise,
                                    lanes: e,
                                });
                            }
                            if !is_empty(&t, nw) {
                                cx.stack.push(fresh(then, t, nw, n));
                            }
                            continue;
                        }
                        Stmt::For {
                            var,
                            start,
                            end,
                            step,
                            body,
                        } => {
                            self.assign(fr, *var, *start, &mask);
                            cx.stack.push(back(sp, true));
                            cx.stack.push(Ctl::For {
                                var: *var,
                                end: *end,
                                step: *step,
                                body,
                                mask,
                                exits: NO_EXITS,
                                iter: None,
                            });
                            continue;
                        }
                        Stmt::While {
                            cond_stmts,
                            cond,
                            body,
                        } => {
                            cx.stack.push(back(sp, true));
                            cx.stack.push(Ctl::While {
                                cond_stmts,
                                cond: *cond,
                                body,
                                mask,
                                exits: NO_EXITS,
                                at: WhileAt::Head,
                            });
                            continue;
                        }
                        Stmt::Break | Stmt::Continue => {
                            let brk = matches!(s, Stmt::Break);
                            let x = innermost_loop(&mut cx.stack)
                                .ok_or_else(|| Fault::internal("break outside a loop"))?;
                            let target = if brk { &mut x.brk } else { &mut x.cont };
                            for w in 0..nw {
                                target[w] |= mask[w];
                            }
                            true
                        }
                        Stmt::Return => {
                            for w in 0..nw {
                                fr.ret[w] |= mask[w];
                                if fr.is_kernel {
                                    self.exited[w] |= mask[w];
                                }
                            }
                            true
                        }
                        Stmt::ReturnValue(v) => {
                            let src = v.0 as usize * n;
                            for_lanes(&mask, nw, |t| fr.result[t] = fr.regs[src + t]);
                            for w in 0..nw {
                                fr.ret[w] |= mask[w];
                            }
                            true
                        }
                        Stmt::DeclVar(var, v) | Stmt::Assign(var, v) => {
                            self.assign(fr, *var, *v, &mask);
                            false
                        }
                        _ => {
                            self.simple(fr, s, &mask).map_err(|e| e.at_stmt(f, s))?;
                            false
                        }
                    };
                    if !ended {
                        cx.stack.push(back(sp, false));
                    }
                }
                Ctl::Else { stmts, lanes } => cx.stack.push(fresh(stmts, lanes, nw, n)),
                Ctl::For {
                    var,
                    end,
                    step,
                    body,
                    mask,
                    mut exits,
                    iter,
                } => {
                    let ty = fr.f.vars[var.0 as usize];
                    let (vb, eb, sb) =
                        (var.0 as usize * n, end.0 as usize * n, step.0 as usize * n);
                    if let Some(m) = iter {
                        let next = and_not(&and_not(&m, &exits.brk, nw), &fr.ret, nw);
                        // As Rust's step_by (and the lowering): once `i + step` would reach
                        // `end` (`step - 1 >= end - i - 1`, unsigned, so a step of 0 stops
                        // too), the counter becomes `end` and the loop ends, so the sum never
                        // wraps around.
                        for_lanes(&next, nw, |t| {
                            let (i, s, e) = (fr.vars[vb + t], fr.regs[sb + t], fr.regs[eb + t]);
                            // In the type's width: `mask` keeps its low bits.
                            let mask = u64::MAX >> (64 - 8 * ty.size() as u32);
                            let last = (s.wrapping_sub(1) & mask)
                                >= (e.wrapping_sub(i).wrapping_sub(1) & mask);
                            fr.vars[vb + t] = if last { e } else { i.wrapping_add(s) & mask };
                        });
                        exits.cont = NONE;
                    }
                    let mut m = live(&mask, &fr.ret, Some(&exits), nw);
                    leave(&mut m, &mut exits.brk, nw, |t| {
                        let (i, e) = (fr.vars[vb + t], fr.regs[eb + t]);
                        // Signed types compare sign-extended, unsigned ones as stored.
                        if ty.is_signed_int() {
                            ty.bits_as_i64(i) < ty.bits_as_i64(e)
                        } else {
                            i < e
                        }
                    });
                    if is_empty(&m, nw) {
                        continue;
                    }
                    cx.stack.push(Ctl::For {
                        var,
                        end,
                        step,
                        body,
                        mask,
                        exits,
                        iter: Some(m),
                    });
                    cx.stack.push(fresh(body, m, nw, n));
                }
                Ctl::While {
                    cond_stmts,
                    cond,
                    body,
                    mask,
                    mut exits,
                    at,
                } => match at {
                    WhileAt::Head => {
                        exits.cont = NONE;
                        let m = live(&mask, &fr.ret, Some(&exits), nw);
                        if is_empty(&m, nw) {
                            continue;
                        }
                        // A loop may wait for a store by another block (a decoupled look-back
                        // waits for its predecessors' flags): when a block of the launch has
                        // faulted, that store may never come, so stop.
                        if self.l.abort.load(Ordering::Relaxed) {
                            return Err(Fault::stopped());
                        }
                        // Every block of a grid-synchronising kernel has a host thread, more
                        // than the cores: a block waiting at the grid barrier lets the others
                        // run.
                        if self.l.ir.grid_barrier.is_some() {
                            std::thread::yield_now();
                        }
                        cx.stack.push(Ctl::While {
                            cond_stmts,
                            cond,
                            body,
                            mask,
                            exits,
                            at: WhileAt::Cond(m),
                        });
                        cx.stack.push(fresh(cond_stmts, m, nw, n));
                        if !lockstep {
                            return Ok(Stop::Yield);
                        }
                    }
                    WhileAt::Cond(m) => {
                        let cb = cond.0 as usize * n;
                        let mut m = live(&m, &fr.ret, Some(&exits), nw);
                        leave(&mut m, &mut exits.brk, nw, |t| fr.regs[cb + t] & 1 != 0);
                        if is_empty(&m, nw) {
                            continue;
                        }
                        cx.stack.push(Ctl::While {
                            cond_stmts,
                            cond,
                            body,
                            mask,
                            exits,
                            at: WhileAt::Head,
                        });
                        cx.stack.push(fresh(body, m, nw, n));
                    }
                },
                Ctl::Call { dst, sp, .. } => {
                    let cf = cx
                        .calls
                        .pop()
                        .ok_or_else(|| Fault::internal("a call without its frame"))?;
                    if cf.f.ret.is_some() {
                        let caller: &mut Frame<'l> = cx.calls.last_mut().unwrap_or(&mut *kernel);
                        let d = dst.0 as usize * n;
                        super::eval::copy(&mut caller.regs[d..d + n], &cf.result, &sp);
                    }
                }
            }
        }
    }
}
