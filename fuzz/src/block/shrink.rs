//! Smaller variants of a block program, for the greedy minimiser: each keeps the program legal
//! (no warp intrinsic or barrier moves into other control flow, no phase reads what it writes).

use super::super::tree::Node;
use super::gen::close_mask;
use super::{Barrier, BlockProg, Stmt, WarpOp};

/// Visits every expression tree of the program, in program order.
pub fn each_tree(p: &BlockProg, f: &mut dyn FnMut(&Node)) {
    let mut q = p.clone();
    each_tree_mut(&mut q, &mut |n| f(n));
}

fn stmt_trees(s: &mut Stmt, f: &mut dyn FnMut(&mut Node)) {
    match s {
        Stmt::Set { e, .. } | Stmt::Store { e, .. } => f(e),
        Stmt::Load { row, .. } => f(row),
        Stmt::Const { idx, .. } => f(idx),
        Stmt::TargetRead { word, .. } => f(word),
        Stmt::Atomic(a) => {
            f(&mut a.word);
            f(&mut a.val);
            if let Some(c) = &mut a.cmp {
                f(c);
            }
        }
        Stmt::If { cond, then, els } => {
            f(cond);
            for s in then.iter_mut().chain(els.iter_mut()) {
                stmt_trees(s, f);
            }
        }
        Stmt::Loop { body, .. } => {
            for s in body {
                stmt_trees(s, f);
            }
        }
        Stmt::Warp { op, value, .. } => {
            if let WarpOp::ShflIdx(src) = op {
                f(src);
            }
            f(value);
        }
        Stmt::WarpIf { cond, value, .. } => {
            f(cond);
            f(value);
        }
        Stmt::ActiveMask { .. } => {}
    }
}

/// Visits every expression tree mutably, in program order.
pub fn each_tree_mut(p: &mut BlockProg, f: &mut dyn FnMut(&mut Node)) {
    for ph in &mut p.phases {
        for s in &mut ph.stmts {
            stmt_trees(s, f);
        }
        match &mut ph.barrier {
            Barrier::Sync => {}
            Barrier::Count { pred, .. } | Barrier::And { pred, .. } | Barrier::Or { pred, .. } => {
                f(pred)
            }
        }
    }
}

/// Variants of a statement list: one statement dropped, an `if` or loop replaced by its
/// body, or one of these inside a nested body.
fn lists(stmts: &[Stmt]) -> Vec<Vec<Stmt>> {
    let mut out = Vec::new();
    for i in 0..stmts.len() {
        let mut v = stmts.to_vec();
        v.remove(i);
        out.push(v);
        let mut splice = |body: Vec<Stmt>| {
            let mut v = stmts.to_vec();
            v.splice(i..=i, body);
            out.push(v);
        };
        match &stmts[i] {
            Stmt::If { then, els, .. } => {
                splice(then.clone());
                if !els.is_empty() {
                    splice(els.clone());
                }
            }
            Stmt::Loop { body, .. } => splice(body.clone()),
            _ => {}
        }
    }
    for i in 0..stmts.len() {
        match &stmts[i] {
            Stmt::If { cond, then, els } => {
                for t in lists(then) {
                    let mut v = stmts.to_vec();
                    v[i] = Stmt::If {
                        cond: cond.clone(),
                        then: t,
                        els: els.clone(),
                    };
                    out.push(v);
                }
                for e in lists(els) {
                    let mut v = stmts.to_vec();
                    v[i] = Stmt::If {
                        cond: cond.clone(),
                        then: then.clone(),
                        els: e,
                    };
                    out.push(v);
                }
            }
            Stmt::Loop { n, body } => {
                for b in lists(body) {
                    let mut v = stmts.to_vec();
                    v[i] = Stmt::Loop { n: *n, body: b };
                    out.push(v);
                }
            }
            _ => {}
        }
    }
    out
}

/// `p` with `threads` threads: warps past the end dropped, masks cut to the lanes that exist
/// (and shuffles' masks closed again).
fn with_threads(p: &BlockProg, threads: u32) -> BlockProg {
    let mut q = p.clone();
    q.threads = threads;
    let warps = q.warps();
    let valid: Vec<u32> = (0..warps).map(|w| q.valid_lanes(w)).collect();
    fn fix(stmts: &mut [Stmt], valid: &[u32]) {
        for s in stmts {
            match s {
                Stmt::Warp { op, masks, .. } => {
                    masks.truncate(valid.len());
                    for (m, &v) in masks.iter_mut().zip(valid) {
                        *m = close_mask(op, *m, v);
                    }
                }
                Stmt::ActiveMask { masks, .. } => {
                    masks.truncate(valid.len());
                    for (m, &v) in masks.iter_mut().zip(valid) {
                        *m &= v;
                    }
                }
                _ => {}
            }
        }
    }
    for ph in &mut q.phases {
        fix(&mut ph.stmts, &valid);
    }
    q
}

/// Smaller variants of `p`, roughly largest cut first.
pub fn smaller(p: &BlockProg) -> Vec<BlockProg> {
    let mut out = Vec::new();
    if p.phases.len() > 1 {
        for i in 0..p.phases.len() {
            let mut q = p.clone();
            q.phases.remove(i);
            out.push(q);
        }
    }
    for t in [32, p.threads.saturating_sub(32), p.threads / 2] {
        if t >= 1 && t < p.threads {
            out.push(with_threads(p, t));
        }
    }
    for (i, ph) in p.phases.iter().enumerate() {
        if ph.barrier != Barrier::Sync {
            let mut q = p.clone();
            q.phases[i].barrier = Barrier::Sync;
            out.push(q);
        }
        for v in lists(&ph.stmts) {
            let mut q = p.clone();
            q.phases[i].stmts = v;
            out.push(q);
        }
    }
    let mut n = 0;
    each_tree(p, &mut |_| n += 1);
    for k in 0..n {
        let mut subs: Vec<Node> = Vec::new();
        let mut i = 0;
        each_tree(p, &mut |t| {
            if i == k {
                let ty = t.ty();
                subs = t
                    .subtrees()
                    .into_iter()
                    .filter(|s| s.ty() == ty && s.size() < t.size())
                    .cloned()
                    .collect();
                subs.sort_by_key(|s| s.size());
                subs.dedup();
                subs.truncate(3);
            }
            i += 1;
        });
        for s in subs {
            let mut q = p.clone();
            let mut i = 0;
            each_tree_mut(&mut q, &mut |t| {
                if i == k {
                    *t = s.clone();
                }
                i += 1;
            });
            out.push(q);
        }
    }
    for q in &mut out {
        q.renumber();
    }
    out
}
