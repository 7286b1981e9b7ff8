//! Warp-level operations of the kernel IR: shuffles, votes, lane masks, matches, bit operations,
//! and the tensor cores' matrix multiply-accumulate.

use super::mma::{MmaKind, A_REGS, B_REGS, C_ELEMS};
use super::{ArrayRef, ValueId};

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
    /// Element `lane` of D in one warp-wide `D = A·B + C` on the tensor cores (see `mma.rs`):
    /// `a` and `b` are this lane's 32-bit registers of A and B (u32 values), `c` its
    /// accumulator elements (of the kind's accumulator type, as is the result). The four
    /// elements of one MMA are recorded consecutively, element 0 first.
    Mma {
        kind: MmaKind,
        a: [ValueId; A_REGS],
        b: [ValueId; B_REGS],
        c: [ValueId; C_ELEMS],
        lane: u8,
    },
    /// Register `reg` (a u32 of two 16-bit elements, or one 32-bit one) of a warp-wide
    /// `ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16` (see `async_copy.rs`): each of
    /// lanes `0..8 * count` gives in `index` the element index, in the 16- or 32-bit shared
    /// array `array`, of the start of one 16-byte row (8 or 4 elements; lanes `8i..8i+8` the
    /// rows of matrix `i`); every lane receives one register per matrix. The `count` registers of one load are
    /// recorded consecutively, register 0 first.
    LdMatrix {
        array: ArrayRef,
        index: ValueId,
        count: u8,
        trans: bool,
        reg: u8,
    },
}
