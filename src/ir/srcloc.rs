//! Rust source locations of the recorded statements (for `PtxOptions::lineinfo` and the
//! simulator's fault reports), kept beside the IR and outside its `Hash` and `Eq`: two kernels
//! that differ only in where they were built are the same kernel unless line information is
//! asked for, when the cache key adds them ([`hash_tree_lines`]). The builder side (the guards
//! that set the location of what is recorded) is `codegen::srcloc`.

use std::hash::{Hash, Hasher};
use std::panic::Location;

use super::{FunctionIr, Stmt};

/// A Rust source location (file, line, column), as `#[track_caller]` gives it.
pub(crate) type Loc = &'static Location<'static>;

/// The source locations of one function's statements, in the order the builder recorded them
/// (a post-order of the statement tree: the statements of an `if`'s or loop's blocks come
/// before the `if` or loop itself; see [`post_order`]). Not part of the IR's `Hash` or `Eq`.
#[derive(Clone, Default)]
pub(crate) struct SrcLines {
    /// Per recorded statement: where it was built (`None` outside any guard).
    pub stmts: Vec<Option<Loc>>,
    /// Where the function was built (`Kernel::build`, `DeviceFn::build`).
    pub def: Option<Loc>,
}

impl Hash for SrcLines {
    /// Nothing: locations only matter with line information on (see [`hash_tree_lines`]).
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

impl PartialEq for SrcLines {
    /// Always equal: two kernels differing only in their source lines are the same kernel.
    fn eq(&self, _: &SrcLines) -> bool {
        true
    }
}

impl Eq for SrcLines {}

impl std::fmt::Debug for SrcLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SrcLines")
    }
}

fn hash_loc<H: Hasher>(l: Option<Loc>, h: &mut H) {
    match l {
        Some(l) => (1u8, l.file(), l.line(), l.column()).hash(h),
        None => 0u8.hash(h),
    }
}

/// Hashes the source locations of `f` and every function it calls (what the PTX's `.file`
/// and `.loc` lines depend on with line information on).
pub(crate) fn hash_tree_lines<H: Hasher>(f: &FunctionIr, h: &mut H) {
    for g in f.tree() {
        hash_loc(g.lines.def, h);
        g.lines.stmts.len().hash(h);
        for &l in &g.lines.stmts {
            hash_loc(l, h);
        }
    }
}

/// Whether `a` and `b` (equal as IR) have the same source locations throughout.
pub(crate) fn same_tree_lines(a: &FunctionIr, b: &FunctionIr) -> bool {
    let (ta, tb) = (a.tree(), b.tree());
    let key = |l: Option<Loc>| l.map(|l| (l.file(), l.line(), l.column()));
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| {
            key(x.lines.def) == key(y.lines.def)
                && x.lines.stmts.len() == y.lines.stmts.len()
                && x.lines
                    .stmts
                    .iter()
                    .zip(&y.lines.stmts)
                    .all(|(p, q)| key(*p) == key(*q))
        })
}

/// Each statement of `body` (by address) with its index in the recording order, which is a
/// post-order: the statements of nested blocks first, then the statement holding them.
pub(crate) fn post_order(body: &[Stmt]) -> std::collections::HashMap<*const Stmt, usize> {
    fn walk(
        stmts: &[Stmt],
        n: &mut usize,
        out: &mut std::collections::HashMap<*const Stmt, usize>,
    ) {
        for s in stmts {
            match s {
                Stmt::If {
                    then, otherwise, ..
                } => {
                    walk(then, n, out);
                    walk(otherwise, n, out);
                }
                Stmt::For { body, .. } => walk(body, n, out),
                Stmt::While {
                    cond_stmts, body, ..
                } => {
                    walk(cond_stmts, n, out);
                    walk(body, n, out);
                }
                _ => {}
            }
            out.insert(s as *const Stmt, *n);
            *n += 1;
        }
    }
    let mut out = std::collections::HashMap::new();
    walk(body, &mut 0, &mut out);
    out
}

/// The location of statement `s` of `f`, if recorded (`order` from [`post_order`]).
pub(crate) fn stmt_loc(
    f: &FunctionIr,
    order: &std::collections::HashMap<*const Stmt, usize>,
    s: &Stmt,
) -> Option<Loc> {
    let i = *order.get(&(s as *const Stmt))?;
    f.lines.stmts.get(i).copied().flatten()
}
