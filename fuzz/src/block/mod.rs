//! Block programs: the fuzzer's third kind of program (issue 28), one thread block of B threads
//! that talk to each other.
//!
//! A program is a sequence of phases separated by barriers (`k.syncthreads()`, or its
//! `_count`/`_and`/`_or` forms, always in uniform control flow). In a phase every thread
//! computes expression trees (the tree fuzzer's, without inexact math) over its inputs, its
//! thread index and its variables, and
//! - stores its own slot of shared-memory columns (typed shared arrays, one slot per thread),
//!   and reads any thread's slot of a column written in an earlier phase (race-free by
//!   construction: a phase never reads a column it writes);
//! - reads constant memory (`k.const_array` of generated contents) at generated indices,
//!   reduced into range;
//! - performs atomics (every kind on every element type the builder has, narrow ones
//!   included) on a few words of shared or global "targets", from many threads at once;
//! - calls warp intrinsics (shuffles, votes, ballot, match, activemask) with generated partial
//!   masks, under an `if` that lets exactly the lanes of the mask in;
//! - runs `if`/`else` and short loops around code that does not synchronise.
//!
//! The modules: [`gen`] (random programs), [`lower`] (a batch of programs to one kernel, one
//! program per block, and a program to the Rust code that builds it), [`model`] (the host
//! model, lockstep over the block), [`print`] (reproducers), [`shrink`] (smaller variants of a
//! program, for minimising), [`serial`] (the check of atomics' old values against every
//! order the hardware may choose), [`check`] (runs, compares, minimises and reports).

pub mod check;
pub mod elem;
pub mod gen;
pub mod lower;
pub mod model;
pub mod print;
pub mod serial;
pub mod shrink;
pub mod warp_model;

use super::tree::{Node, Ty};

/// The element types of atomic targets (every type the builder has atomics for).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ATy {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

/// Every atomic element type.
pub const ATYS: [ATy; 12] = [
    ATy::I8,
    ATy::U8,
    ATy::I16,
    ATy::U16,
    ATy::I32,
    ATy::U32,
    ATy::I64,
    ATy::U64,
    ATy::F16,
    ATy::BF16,
    ATy::F32,
    ATy::F64,
];

impl ATy {
    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            ATy::I8 => "i8",
            ATy::U8 => "u8",
            ATy::I16 => "i16",
            ATy::U16 => "u16",
            ATy::I32 => "i32",
            ATy::U32 => "u32",
            ATy::I64 => "i64",
            ATy::U64 => "u64",
            ATy::F16 => "f16",
            ATy::BF16 => "bf16",
            ATy::F32 => "f32",
            ATy::F64 => "f64",
        }
    }
    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            ATy::I8 | ATy::U8 => 8,
            ATy::I16 | ATy::U16 | ATy::F16 | ATy::BF16 => 16,
            ATy::I32 | ATy::U32 | ATy::F32 => 32,
            ATy::I64 | ATy::U64 | ATy::F64 => 64,
        }
    }
    /// The bits of a value of this type, the rest cleared.
    pub fn mask(self) -> u64 {
        if self.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits()) - 1
        }
    }
    /// f16, bf16, f32 or f64.
    pub fn is_float(self) -> bool {
        matches!(self, ATy::F16 | ATy::BF16 | ATy::F32 | ATy::F64)
    }
    /// A signed integer type.
    pub fn is_signed(self) -> bool {
        matches!(self, ATy::I8 | ATy::I16 | ATy::I32 | ATy::I64)
    }
    /// The tree type of the same name, if the trees have it.
    pub fn tree_ty(self) -> Option<Ty> {
        match self {
            ATy::I32 => Some(Ty::I32),
            ATy::U32 => Some(Ty::U32),
            ATy::I64 => Some(Ty::I64),
            ATy::U64 => Some(Ty::U64),
            ATy::F32 => Some(Ty::F32),
            ATy::F64 => Some(Ty::F64),
            _ => None,
        }
    }
    /// The type of the tree an integer operand is cast from (`as`); float operands are read
    /// from the target's constant table at a `u32` index.
    pub fn operand_ty(self) -> Ty {
        match self {
            ATy::I8 | ATy::I16 | ATy::I32 => Ty::I32,
            ATy::U8 | ATy::U16 | ATy::U32 => Ty::U32,
            ATy::I64 => Ty::I64,
            ATy::U64 => Ty::U64,
            _ => Ty::U32,
        }
    }
    /// Whether a kernel parameter of this type holds the global targets (`i16` has none:
    /// the builder takes at most 12 parameters; `u16` covers the 16-bit integer path).
    pub fn has_global(self) -> bool {
        self != ATy::I16
    }
    /// The atomics the builder offers on this type.
    pub fn ops(self) -> &'static [AOp] {
        use AOp::*;
        match self {
            ATy::U32 | ATy::U64 => &[
                Add, Sub, And, Or, Xor, Min, Max, NanMin, NanMax, Exch, Cas, Inc, Dec,
            ],
            t if t.is_float() => &[Add, Sub, Min, Max, NanMin, NanMax, Exch, Cas],
            _ => &[Add, Sub, And, Or, Xor, Min, Max, NanMin, NanMax, Exch, Cas],
        }
    }
}

/// An atomic read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AOp {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Min,
    Max,
    NanMin,
    NanMax,
    Exch,
    Cas,
    Inc,
    Dec,
}

impl AOp {
    /// The builder's method name.
    pub fn name(self) -> &'static str {
        match self {
            AOp::Add => "atomic_add",
            AOp::Sub => "atomic_sub",
            AOp::And => "atomic_and",
            AOp::Or => "atomic_or",
            AOp::Xor => "atomic_xor",
            AOp::Min => "atomic_min",
            AOp::Max => "atomic_max",
            AOp::NanMin => "atomic_nanmin",
            AOp::NanMax => "atomic_nanmax",
            AOp::Exch => "atomic_exch",
            AOp::Cas => "atomic_cas",
            AOp::Inc => "atomic_inc",
            AOp::Dec => "atomic_dec",
        }
    }
    /// Whether the final value is the same in every order (and so predicted directly).
    pub fn commutes(self) -> bool {
        matches!(
            self,
            AOp::Add | AOp::Sub | AOp::And | AOp::Or | AOp::Xor | AOp::Min | AOp::Max
        )
    }
}

/// Where a target lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// A shared array of the block.
    Shared,
    /// Global memory of this block's program alone.
    Global,
    /// Global words that every block of the launch hits ([`GRID_WORDS`] per type, from
    /// [`grid_init`]): a program has at most one grid target per type and runs atomics on it
    /// in one phase only, never reads it, and the olds of all blocks are checked together.
    Grid,
}

/// Words per type that the blocks of a launch share.
pub const GRID_WORDS: usize = 2;

/// The grid words' initial bits (floats: 0.0 and 1.0; their targets are always dyadic).
pub fn grid_init(ty: ATy) -> Vec<u64> {
    match ty {
        ATy::F16 => vec![0, cudajit::f16::from_f32(1.0).to_bits() as u64],
        ATy::BF16 => vec![0, cudajit::bf16::from_f32(1.0).to_bits() as u64],
        ATy::F32 => vec![0, 1.0f32.to_bits() as u64],
        ATy::F64 => vec![0, 1.0f64.to_bits()],
        _ => vec![0, 3],
    }
}

/// A few words of one element type that atomics of many threads hit.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub space: Space,
    pub ty: ATy,
    /// The words' initial bits (1 to 4 words).
    pub init: Vec<u64>,
    /// For float targets: the constant table the operands are read from (bits). Small dyadic
    /// values (k/4, |k| <= 8) where adds run, so that every sum is exact and the final value
    /// the same in any order; special values (NaNs with payloads, ±0, ±inf, subnormals)
    /// where only min/max/exch/cas run.
    pub table: Vec<u64>,
    /// Whether `table` is the special values (then no add/sub/nanmin/nanmax on it).
    pub special: bool,
}

/// A warp intrinsic.
#[derive(Clone, Debug, PartialEq)]
pub enum WarpOp {
    /// `shfl_sync` from the lane `members[src % count]` of the thread's warp (a lane of the mask).
    ShflIdx(Node),
    /// `shfl_up_sync` by a constant delta (1..32).
    ShflUp(u8),
    /// `shfl_down_sync` by a constant delta.
    ShflDown(u8),
    /// `shfl_xor_sync` with a constant lane mask (1..32).
    ShflXor(u8),
    All,
    Any,
    /// `eq_sync` (`__uni_sync`).
    Eq,
    Ballot,
    MatchAny,
    MatchAll,
}

impl WarpOp {
    /// The result type for a value (or predicate) of type `t`.
    pub fn result_ty(&self, t: Ty) -> Ty {
        match self {
            WarpOp::ShflIdx(_) | WarpOp::ShflUp(_) | WarpOp::ShflDown(_) | WarpOp::ShflXor(_) => t,
            WarpOp::All | WarpOp::Any | WarpOp::Eq => Ty::Bool,
            WarpOp::Ballot | WarpOp::MatchAny | WarpOp::MatchAll => Ty::U32,
        }
    }
    /// The builder's method name.
    pub fn name(&self) -> &'static str {
        match self {
            WarpOp::ShflIdx(_) => "shfl_sync",
            WarpOp::ShflUp(_) => "shfl_up_sync",
            WarpOp::ShflDown(_) => "shfl_down_sync",
            WarpOp::ShflXor(_) => "shfl_xor_sync",
            WarpOp::All => "all_sync",
            WarpOp::Any => "any_sync",
            WarpOp::Eq => "eq_sync",
            WarpOp::Ballot => "ballot_sync",
            WarpOp::MatchAny => "match_any_sync",
            WarpOp::MatchAll => "match_all_sync",
        }
    }
}

/// One atomic site: `old = target[word % n].OP(value[, compare])`, stored to its output slot
/// (and, for the trees' types, to a variable).
#[derive(Clone, Debug, PartialEq)]
pub struct Atomic {
    pub target: u8,
    pub op: AOp,
    /// A `u32` tree: the word is `word % target words`.
    pub word: Node,
    /// The operand: an integer tree cast to the target's type (`ATy::operand_ty`), or for a
    /// float target a `u32` index into its table.
    pub val: Node,
    /// `atomic_cas`'s expected value, the same way.
    pub cmp: Option<Node>,
    pub dst: Option<u8>,
    pub slot: u16,
}

/// A statement of a phase.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `v = e`.
    Set {
        dst: u8,
        e: Node,
        slot: u16,
    },
    /// `col[tid] = e` (the column's type).
    Store {
        col: u8,
        e: Node,
    },
    /// `v = col[row % B]` (a column no statement of this phase writes).
    Load {
        dst: u8,
        col: u8,
        row: Node,
        slot: u16,
    },
    /// `v = table[idx % len]` (or `table[idx.min(len - 1)]` with `clamp`).
    Const {
        dst: u8,
        table: u8,
        idx: Node,
        clamp: bool,
        slot: u16,
    },
    /// A read of a target word: plain (`at`) of a target no atomic of this phase touches, or
    /// `atomic_load` of any target.
    TargetRead {
        dst: Option<u8>,
        target: u8,
        word: Node,
        slot: u16,
        /// `atomic_load` instead of `at`; then the target may have atomics in this phase too,
        /// and the value read must be one the word held during the phase.
        atomic: bool,
    },
    Atomic(Atomic),
    /// `if cond { then } else { els }` around statements that do not synchronise.
    If {
        cond: Node,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// `for _ in 0..n { body }` around `Set`, `Load` and `Const` statements.
    Loop {
        n: u8,
        body: Vec<Stmt>,
    },
    /// `if lane in masks[warp] { v = op(masks[warp], value) }`.
    Warp {
        dst: u8,
        op: WarpOp,
        /// The mask of each warp of the block (only lanes that exist; shuffles' masks hold
        /// every source lane of their lanes).
        masks: Vec<u32>,
        value: Node,
        slot: u16,
    },
    /// `if lane in masks[warp] { slot = activemask() }`: a subset of the mask holding the lane.
    ActiveMask {
        masks: Vec<u32>,
        slot: u16,
    },
    /// `if cond { let m = activemask(); v = op(m, value) }`: a vote, ballot or match over the
    /// lanes that run the branch together (`m`, stored to `mslot`, which the model takes from
    /// the device and checks: a subset of the lanes with `cond` that holds the lane, the same
    /// for every lane it names).
    WarpIf {
        cond: Node,
        dst: u8,
        op: WarpOp,
        value: Node,
        mslot: u16,
        slot: u16,
    },
}

/// How a phase ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Barrier {
    Sync,
    /// `v = syncthreads_count(pred)` (`i32`).
    Count {
        pred: Node,
        dst: u8,
        slot: u16,
    },
    /// `v = syncthreads_and(pred)`.
    And {
        pred: Node,
        dst: u8,
        slot: u16,
    },
    /// `v = syncthreads_or(pred)`.
    Or {
        pred: Node,
        dst: u8,
        slot: u16,
    },
}

/// A phase: statements, then a barrier.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub stmts: Vec<Stmt>,
    pub barrier: Barrier,
}

/// A constant table of one of the trees' types (bits).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub ty: Ty,
    pub data: Vec<u64>,
}

/// A block program.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockProg {
    /// Threads in the block.
    pub threads: u32,
    /// Variable types; `v0` is the thread index (`u32`), the rest start at zero.
    pub vars: Vec<Ty>,
    /// Shared-memory column types (one element per thread).
    pub cols: Vec<Ty>,
    pub tables: Vec<Table>,
    pub targets: Vec<Target>,
    pub phases: Vec<Phase>,
    /// Output slots (statements that store a result); set by [`BlockProg::renumber`].
    pub slots: u16,
}

/// Most words per target.
pub const MAX_WORDS: usize = 4;
/// Most targets per program.
pub const MAX_TARGETS: usize = 4;
/// Global target words per program and type (`MAX_TARGETS * MAX_WORDS`).
pub const GLOBAL_WORDS: usize = MAX_TARGETS * MAX_WORDS;

impl BlockProg {
    /// Warps of the block (the last one partial if `threads % 32 != 0`).
    pub fn warps(&self) -> usize {
        (self.threads as usize).div_ceil(32)
    }

    /// The lanes that exist in warp `w`.
    pub fn valid_lanes(&self, w: usize) -> u32 {
        let n = (self.threads as usize).saturating_sub(w * 32).min(32);
        if n == 32 {
            u32::MAX
        } else {
            (1u32 << n) - 1
        }
    }

    /// Numbers the output slots in program order (the order lowering and model walk).
    pub fn renumber(&mut self) {
        let mut n = 0u16;
        fn walk(stmts: &mut [Stmt], n: &mut u16) {
            for s in stmts {
                match s {
                    Stmt::Set { slot, .. }
                    | Stmt::Load { slot, .. }
                    | Stmt::Const { slot, .. }
                    | Stmt::TargetRead { slot, .. }
                    | Stmt::Warp { slot, .. }
                    | Stmt::ActiveMask { slot, .. }
                    | Stmt::Atomic(Atomic { slot, .. }) => {
                        *slot = *n;
                        *n += 1;
                    }
                    Stmt::WarpIf { mslot, slot, .. } => {
                        *mslot = *n;
                        *slot = *n + 1;
                        *n += 2;
                    }
                    Stmt::Store { .. } => {}
                    Stmt::If { then, els, .. } => {
                        walk(then, n);
                        walk(els, n);
                    }
                    Stmt::Loop { body, .. } => walk(body, n),
                }
            }
        }
        for p in &mut self.phases {
            walk(&mut p.stmts, &mut n);
            match &mut p.barrier {
                Barrier::Sync => {}
                Barrier::Count { slot, .. }
                | Barrier::And { slot, .. }
                | Barrier::Or { slot, .. } => {
                    *slot = n;
                    n += 1;
                }
            }
        }
        self.slots = n;
    }

    /// Words of a thread's output row: slots, final variables, own column slots.
    pub fn width(&self) -> usize {
        self.slots as usize + self.vars.len() + self.cols.len()
    }

    /// Statements (nested ones included, barriers not).
    pub fn size(&self) -> usize {
        fn count(s: &[Stmt]) -> usize {
            s.iter()
                .map(|s| match s {
                    Stmt::If { then, els, .. } => 1 + count(then) + count(els),
                    Stmt::Loop { body, .. } => 1 + count(body),
                    _ => 1,
                })
                .sum()
        }
        self.phases.iter().map(|p| count(&p.stmts)).sum()
    }

    /// The offset of target `t` in its type's region (shared array or global per-program
    /// words): targets of one type and space follow each other, `MAX_WORDS` apart (grid
    /// targets: 0 in the grid words).
    pub fn target_offset(&self, t: usize) -> usize {
        let me = &self.targets[t];
        if me.space == Space::Grid {
            return 0;
        }
        self.targets[..t]
            .iter()
            .filter(|o| o.ty == me.ty && o.space == me.space)
            .count()
            * MAX_WORDS
    }

    /// The offset of column `c` in its type's shared array (columns of one type follow each
    /// other, `threads` apart).
    pub fn col_offset(&self, c: usize) -> usize {
        let t = self.cols[c];
        self.cols[..c].iter().filter(|&&o| o == t).count() * self.threads as usize
    }

    /// The shared targets' words, in target order (copied out after the last barrier).
    pub fn shared_words(&self) -> usize {
        self.targets
            .iter()
            .filter(|t| t.space == Space::Shared)
            .map(|t| t.init.len())
            .sum()
    }
}

/// Visits every statement, nested ones included, in program order.
pub fn walk<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::If { then, els, .. } => {
                walk(then, f);
                walk(els, f);
            }
            Stmt::Loop { body, .. } => walk(body, f),
            _ => {}
        }
    }
}
