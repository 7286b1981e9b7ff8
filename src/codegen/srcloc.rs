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
//! The locations sit beside the IR (`ir::srcloc`), outside its `Hash` and `Eq`.

use std::panic::Location;

use super::builder::with_state;
pub(crate) use crate::ir::srcloc::*;

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
