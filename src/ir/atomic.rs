//! Atomic operations of the kernel IR.

use super::{ArrayRef, ValueId};

/// Which read-modify-write an [`AtomicOp`] performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AtomicKind {
    Add,
    Sub,
    And,
    Or,
    Xor,
    /// `if v < old { v } else { old }` (floats: a NaN in memory stays, a NaN operand is ignored).
    Min,
    /// `if v > old { v } else { old }`.
    Max,
    /// IEEE minNum: NaN on either side ignored.
    NanMin,
    /// IEEE maxNum.
    NanMax,
    Exch,
    /// `if old >= v { 0 } else { old + 1 }` (unsigned).
    Inc,
    /// `if old == 0 || old > v { v } else { old - 1 }` (unsigned).
    Dec,
    /// Compare-and-swap (bitwise for floats); `compare` holds the expected value.
    Cas,
    /// A relaxed atomic load (no write; `value` is unused).
    Load,
}

impl AtomicKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            AtomicKind::Add => "atomic_add",
            AtomicKind::Sub => "atomic_sub",
            AtomicKind::And => "atomic_and",
            AtomicKind::Or => "atomic_or",
            AtomicKind::Xor => "atomic_xor",
            AtomicKind::Min => "atomic_min",
            AtomicKind::Max => "atomic_max",
            AtomicKind::NanMin => "atomic_nanmin",
            AtomicKind::NanMax => "atomic_nanmax",
            AtomicKind::Exch => "atomic_exch",
            AtomicKind::Inc => "atomic_inc",
            AtomicKind::Dec => "atomic_dec",
            AtomicKind::Cas => "atomic_cas",
            AtomicKind::Load => "atomic_load",
        }
    }
}

/// An atomic read-modify-write of `array[index]`, returning the old value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AtomicOp {
    pub kind: AtomicKind,
    pub array: ArrayRef,
    /// The flat element index (an i64 value).
    pub index: ValueId,
    /// The operand (for `Cas`, the new value).
    pub value: ValueId,
    /// For `Cas`: the expected value.
    pub compare: Option<ValueId>,
}
