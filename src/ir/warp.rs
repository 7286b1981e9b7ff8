//! Warp-level operations of the kernel IR: shuffles, votes, lane masks, matches, bit operations.

use super::ValueId;

/// How a shuffle picks its source lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ShflKind {
    /// From lane `lane`.
    Idx,
    /// From lane `laneid - delta` (lanes below `delta` keep their value).
    Up,
    /// From lane `laneid + delta` (lanes past 31 - `delta` keep theirs).
    Down,
    /// From lane `laneid ^ lane_mask`.
    Bfly,
}

/// Warp votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum VoteKind {
    All,
    Any,
    /// All lanes' predicates equal.
    Uni,
    Ballot,
}

/// The `%lanemask_*` registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LaneMask {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

/// Bit operations on integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BitFn {
    Popc,
    Clz,
    Ffs,
    Brev,
}

/// A warp intrinsic (or an integer bit operation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum WarpOp {
    /// `activemask()`: the lanes executing this together.
    ActiveMask,
    /// A `%lanemask_*` register.
    LaneMask(LaneMask),
    /// A shuffle of `value` (of the result type).
    Shfl {
        kind: ShflKind,
        mask: ValueId,
        value: ValueId,
        lane: ValueId,
    },
    /// A vote on a bool: bool result, or u32 for `Ballot`.
    Vote {
        kind: VoteKind,
        mask: ValueId,
        pred: ValueId,
    },
    /// `match.any.sync`: the lanes of `mask` whose `value` equals this lane's.
    MatchAny { mask: ValueId, value: ValueId },
    /// `match.all.sync`: `mask` if every lane of it has the same `value`, else 0.
    MatchAll { mask: ValueId, value: ValueId },
    /// A bit operation on an integer (result u32, or the operand's type for `Brev`).
    Bit(BitFn, ValueId),
}
