//! The minimiser's moves over statement programs (`prog.rs`): every one-step-smaller program
//! (a statement dropped, an `if` or loop replaced by its body, an expression by a same-typed
//! sub-tree), kept only while well formed.

use super::prog::{walk, Prog, Stmt};
use super::tree::Node;

/// Every way to make `stmts` one step smaller: drop a statement, replace an `if` by one of its
/// branches or a loop by its body, at any depth.
fn smaller_blocks(stmts: &[Stmt], out: &mut Vec<Vec<Stmt>>) {
    for i in 0..stmts.len() {
        let mut v = stmts.to_vec();
        v.remove(i);
        out.push(v);
        for b in stmts[i].blocks() {
            let mut v = stmts.to_vec();
            v.splice(i..=i, b.iter().cloned());
            out.push(v);
        }
        for bi in 0..stmts[i].blocks().len() {
            let mut inner = Vec::new();
            smaller_blocks(stmts[i].blocks()[bi], &mut inner);
            for r in inner {
                let mut v = stmts.to_vec();
                *v[i].blocks_mut()[bi] = r;
                out.push(v);
            }
        }
    }
}

/// Calls `f` on every expression of `stmts` (nested blocks included), mutably, except loop
/// bounds (a bound's sub-tree could make a loop run for ever).
fn exprs_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Node)) {
    for s in stmts {
        match s {
            Stmt::Let { init: e, .. }
            | Stmt::Assign { value: e, .. }
            | Stmt::Emit { value: e, .. }
            | Stmt::If { cond: e, .. }
            | Stmt::While { cond: e, .. } => f(e),
            Stmt::Call { args, .. } => args.iter_mut().for_each(&mut *f),
            Stmt::ReturnValue(e) => f(e),
            Stmt::For { .. } | Stmt::Break | Stmt::Continue | Stmt::Return => {}
        }
        for b in s.blocks_mut() {
            exprs_mut(b, f);
        }
    }
}

/// Calls `f` on every expression of `p` but loop bounds, its functions' included, mutably.
fn prog_exprs_mut(p: &mut Prog, f: &mut dyn FnMut(&mut Node)) {
    exprs_mut(&mut p.body, f);
    for func in &mut p.funcs {
        exprs_mut(&mut func.body, f);
        f(&mut func.result);
    }
}

/// Whether a statement list is well formed: every variable it reads or assigns is declared,
/// every break/continue is in a loop (`used` starts with the variables used from outside).
fn well_formed(stmts: &[Stmt], mut used: Vec<bool>, extra: &[&Node]) -> bool {
    fn loops_ok(stmts: &[Stmt], in_loop: bool) -> bool {
        stmts.iter().all(|s| match s {
            Stmt::Break | Stmt::Continue => in_loop,
            Stmt::For { body, .. } | Stmt::While { body, .. } => loops_ok(body, true),
            s => s.blocks().iter().all(|b| loops_ok(b, in_loop)),
        })
    }
    let mut declared = vec![false; used.len()];
    let reads = |e: &Node, used: &mut Vec<bool>| {
        for n in e.subtrees() {
            if let Node::Var(_, v) = n {
                used[*v as usize] = true;
            }
        }
    };
    for e in extra {
        reads(e, &mut used);
    }
    walk(stmts, &mut |s| {
        if let Some(v) = s.declares() {
            declared[v as usize] = true;
        }
        if let Stmt::Assign { var, .. } | Stmt::Call { var, .. } = s {
            used[*var as usize] = true;
        }
        for e in s.exprs() {
            reads(e, &mut used);
        }
    });
    loops_ok(stmts, false) && used.iter().zip(&declared).all(|(u, d)| !u || *d)
}

/// Whether a reduced program (and each of its functions) is well formed.
pub fn prog_well_formed(p: &Prog) -> bool {
    let mut used = vec![false; p.vars.len()];
    used[..p.results].fill(true);
    well_formed(&p.body, used, &[])
        && p.funcs
            .iter()
            .all(|f| well_formed(&f.body, vec![false; f.vars.len()], &[&f.result]))
}

/// Every well-formed program one step smaller than `p`, biggest steps roughly first: a
/// statement dropped, an `if` replaced by a branch, a loop by its body (in the program, then
/// in its functions), then an expression replaced by one of its sub-trees of the same type.
pub fn smaller(p: &Prog) -> Vec<Prog> {
    let mut out = Vec::new();
    let mut bodies = Vec::new();
    smaller_blocks(&p.body, &mut bodies);
    out.extend(bodies.into_iter().map(|body| Prog { body, ..p.clone() }));
    for (i, f) in p.funcs.iter().enumerate() {
        let mut bodies = Vec::new();
        smaller_blocks(&f.body, &mut bodies);
        for body in bodies {
            let mut q = p.clone();
            q.funcs[i].body = body;
            out.push(q);
        }
    }
    let mut roots = Vec::new();
    prog_exprs_mut(&mut p.clone(), &mut |e| roots.push(e.clone()));
    for (i, root) in roots.iter().enumerate() {
        let mut subs: Vec<&Node> = root
            .subtrees()
            .into_iter()
            .filter(|s| s.ty() == root.ty() && s.size() < root.size())
            .collect();
        subs.sort_by_key(|s| s.size());
        subs.dedup();
        for sub in subs {
            let mut q = p.clone();
            let mut at = 0;
            prog_exprs_mut(&mut q, &mut |e| {
                if at == i {
                    *e = sub.clone();
                }
                at += 1;
            });
            out.push(q);
        }
    }
    out.retain(prog_well_formed);
    out
}
