//! Rust source locations of recorded operations (for `PtxOptions::lineinfo`).
//!
//! Every public builder method is `#[track_caller]` and opens an [`at`] guard first: the
//! outermost guard of a call sets the location that the statements it records carry, so an
//! operation implemented with other builder calls (math, index arithmetic) is attributed to
//! the user's call, not to cudajit's internals (`#[track_caller]` alone cannot do it: the
//! closures a method passes to `if_` break the chain). The closures of
//! `if_`/`for_range`/`while_` run with the guard depth reset, so the calls in them carry their
//! own lines, when that `if_` (or loop) is itself the outermost call: one that cudajit makes
//! inside another builder method (`grid_sync` waits in a `while_`) keeps that method's
//! location throughout.
//!
//! The locations sit beside the IR ([`SrcLines`]), outside its `Hash` and `Eq`: two kernels
//! that differ only in where they were built share their cache entry and PTX unless line
//! information is asked for, when the cache key adds them ([`hash_tree_lines`]).

use std::hash::{Hash, Hasher};
use std::panic::Location;

use super::builder::with_state;
use super::ir::{FunctionIr, Stmt};

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

/// Sets the location of what the builder records until it is dropped (see the module docs).
#[must_use]
pub(crate) struct At {
    tag: u32,
    /// The location, and whether the outermost guard is a block-taking method's, before this
    /// guard set its own (`None`: this guard is not the outermost; nothing changed).
    prev: Option<(Option<Loc>, bool)>,
}

/// Opens a location guard at the caller's location (of the user's call, through the
/// `#[track_caller]` builder methods).
#[track_caller]
pub(crate) fn at() -> At {
    open(Location::caller(), false)
}

/// [`at`] for a method whose closures are the user's code (`if_`, `for_range`, `while_`): if
/// its call is the outermost, the builder calls in those closures record their own lines.
#[track_caller]
pub(crate) fn at_block() -> At {
    open(Location::caller(), true)
}

fn open(here: Loc, block: bool) -> At {
    with_state(|s| {
        let prev = (s.loc_depth == 0).then(|| {
            let prev = (s.loc, s.loc_block);
            (s.loc, s.loc_block) = (Some(here), block);
            prev
        });
        s.loc_depth += 1;
        At { tag: s.tag, prev }
    })
    .unwrap_or(At { tag: 0, prev: None })
}

impl Drop for At {
    fn drop(&mut self) {
        let (tag, prev) = (self.tag, self.prev);
        with_state(|s| {
            if s.tag == tag && s.loc_depth > 0 {
                s.loc_depth -= 1;
                if let Some((loc, block)) = prev {
                    (s.loc, s.loc_block) = (loc, block);
                }
            }
        });
    }
}

/// Runs `f` (a closure given to `if_`, `for_range`, `while_`) with the guard depth reset, so
/// that the builder calls in it record their own locations, if that method's call is the
/// outermost (else cudajit called it inside another builder method, e.g. `grid_sync`, whose
/// location stays); restores the depth afterwards.
pub(crate) fn user_closure<R>(f: impl FnOnce() -> R) -> R {
    let depth =
        with_state(|s| s.loc_block.then(|| std::mem::replace(&mut s.loc_depth, 0))).flatten();
    let r = f();
    if let Some(d) = depth {
        with_state(|s| s.loc_depth = d);
    }
    r
}
