//! The barrier check over a whole function, after it is recorded.
//!
//! While recording, a condition counts as thread-dependent only if it already is at that
//! point; a variable that becomes thread-dependent later in a loop (or a `break`/`continue`
//! that only some threads take) makes an earlier barrier in the same loop divergent on the
//! next iteration, which the recording-time check cannot see (found by the fuzzer's statement
//! programs). This pass computes which values and variables may differ between the threads of a
//! block to a fixed point over the whole body, then reports every `syncthreads` (and its
//! count/and/or forms) that only some threads may reach.

use crate::ir::{Barrier, FunctionIr, Op, Stmt, ValueId};

/// Values whose thread-dependence follows from their operands (the others keep what the
/// recording found: thread indices, atomics, warp intrinsics, calls).
fn operands(op: &Op) -> Vec<ValueId> {
    match op {
        Op::Unary(_, a) | Op::Cast(a) | Op::Bitcast(a) => vec![*a],
        Op::Binary(_, a, b) | Op::Cmp(_, a, b) => vec![*a, *b],
        Op::Select(c, a, b) => vec![*c, *a, *b],
        Op::Load { index, .. } | Op::LoadLane { index, .. } => vec![*index],
        Op::Math(_, args) | Op::Call(_, args) => args.clone(),
        Op::NdIndex { indices, dims, .. } => indices.iter().chain(dims).copied().collect(),
        _ => Vec::new(),
    }
}

struct Pass<'a> {
    f: &'a FunctionIr,
    /// Per value: may differ between threads (a value has one definition, so this only grows).
    vary: Vec<bool>,
    changed: bool,
    /// Barriers found where only some threads may be.
    bad: Vec<&'static str>,
}

/// Per variable, at one point of the body: may it differ between threads here.
type VarState = Vec<bool>;

fn join(into: &mut VarState, other: &VarState) {
    for (a, b) in into.iter_mut().zip(other) {
        *a |= *b;
    }
}

impl Pass<'_> {
    fn mark(&mut self, v: ValueId) {
        if !self.vary[v.0 as usize] {
            self.vary[v.0 as usize] = true;
            self.changed = true;
        }
    }

    fn varies(&self, v: ValueId) -> bool {
        self.vary[v.0 as usize]
    }

    /// A loop: its body (after `head`, the condition's statements of a `while`) runs until the
    /// variables' state at the loop head stops changing; returns the exits to pass outwards.
    fn looped(
        &mut self,
        head: &[Stmt],
        cond: Option<ValueId>,
        body: &[Stmt],
        mut div: bool,
        st: &mut VarState,
    ) -> u8 {
        let mut entry = st.clone();
        let mut out = 0;
        for _ in 0..64 {
            let mut s = entry.clone();
            let mut e = self.walk(head, div, &mut s);
            let d = div || cond.is_some_and(|c| self.varies(c));
            e |= self.walk(body, d, &mut s);
            out |= e & RETURN;
            let mut next = entry.clone();
            join(&mut next, &s);
            let again = next != entry || (e & LOOP_EXIT != 0 && !div);
            // Threads that left or skipped ahead make the later iterations divergent.
            div |= e & LOOP_EXIT != 0;
            entry = next;
            if !again {
                break;
            }
        }
        *st = entry;
        out
    }

    /// Walks `stmts` where `div` says whether only some threads may be here and `st` which
    /// variables may differ between threads. Returns [`LOOP_EXIT`] when a `break` or
    /// `continue` may be taken by only some threads and [`RETURN`] when a `return` may be.
    fn walk(&mut self, stmts: &[Stmt], mut div: bool, st: &mut VarState) -> u8 {
        let mut exits = 0;
        for s in stmts {
            match s {
                Stmt::Let(v) => {
                    let def = &self.f.values[v.0 as usize];
                    let from_ops = operands(&def.op).iter().any(|&a| self.varies(a));
                    let from_var = matches!(def.op, Op::ReadVar(x) if st[x.0 as usize]);
                    if from_ops || from_var {
                        self.mark(*v);
                    }
                    if matches!(def.op, Op::SyncReduce(..)) && div {
                        self.bad.push("syncthreads_count/and/or");
                    }
                }
                Stmt::DeclVar(x, v) | Stmt::Assign(x, v) => {
                    st[x.0 as usize] = div || self.varies(*v);
                }
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let d = div || self.varies(*cond);
                    let mut other = st.clone();
                    let e = self.walk(then, d, st) | self.walk(otherwise, d, &mut other);
                    join(st, &other);
                    if e != 0 {
                        exits |= e;
                        div = true;
                    }
                }
                Stmt::For {
                    var,
                    start,
                    end,
                    step,
                    body,
                } => {
                    let d = div || [start, end, step].iter().any(|v| self.varies(**v));
                    st[var.0 as usize] = d;
                    if self.looped(&[], None, body, d, st) != 0 {
                        exits |= RETURN;
                        div = true;
                    }
                }
                Stmt::While {
                    cond_stmts,
                    cond,
                    body,
                } => {
                    let e = self.looped(cond_stmts, Some(*cond), body, div, st);
                    if e != 0 {
                        exits |= RETURN;
                        div = true;
                    }
                }
                Stmt::Break | Stmt::Continue if div => exits |= LOOP_EXIT,
                Stmt::Return | Stmt::ReturnValue(_) if div => exits |= RETURN,
                Stmt::Barrier(Barrier::SyncThreads) if div => self.bad.push("syncthreads"),
                _ => {}
            }
        }
        exits
    }
}

/// A `break` or `continue` only some threads may take.
const LOOP_EXIT: u8 = 1;
/// A `return` only some threads may take.
const RETURN: u8 = 2;

/// The barriers that only some threads of a block may reach, by name (empty when none).
/// `varying` is what the recording found per value.
pub(crate) fn divergent_barriers(f: &FunctionIr, varying: &[bool]) -> Vec<&'static str> {
    let mut p = Pass {
        f,
        vary: varying.to_vec(),
        changed: true,
        bad: Vec::new(),
    };
    let mut rounds = 0;
    while p.changed && rounds < 64 {
        p.changed = false;
        p.bad.clear();
        let mut st: VarState = vec![false; f.vars.len()];
        p.walk(&f.body, false, &mut st);
        rounds += 1;
    }
    p.bad.sort_unstable();
    p.bad.dedup();
    p.bad
}
