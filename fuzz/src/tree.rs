//! The fuzzer's expression trees: types, values, operators, and random generation.

use cudajit::{bf16, f16, F8E4M3, F8E5M2};

pub use super::inputs::{random_val, special};
use super::rng::Rng;

/// Which part of the kernel language the generators draw from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// bool, i32, u32, i64, u64, f32, f64: the trees and programs the fuzzer always made (every
    /// seed gives exactly what it gave before the other types existed).
    Core,
    /// Every scalar type: the core's and i8, u8, i16, u16, f16, bf16 and the 8-bit floats
    /// (`fp8: false` leaves the 8-bit floats out, for targets before sm_89). Its batch seeds
    /// are mixed with a constant ([`Lang::batch_seed`]), so its streams are new.
    Whole { fp8: bool },
}

/// Every type of the whole language, in input-slot order (the core's first, so a core type's
/// slot is the same in both layouts).
pub const ALL_TYS: [Ty; 15] = [
    Ty::Bool,
    Ty::I32,
    Ty::U32,
    Ty::I64,
    Ty::U64,
    Ty::F32,
    Ty::F64,
    Ty::I8,
    Ty::U8,
    Ty::I16,
    Ty::U16,
    Ty::F16,
    Ty::BF16,
    Ty::E4M3,
    Ty::E5M2,
];

impl Lang {
    /// The types its trees use, in input-slot order.
    pub fn tys(self) -> &'static [Ty] {
        match self {
            Lang::Core => &TYS,
            Lang::Whole { fp8: true } => &ALL_TYS,
            Lang::Whole { fp8: false } => &ALL_TYS[..13],
        }
    }
    /// Input words per thread: `SLOTS` per type of [`ALL_TYS`] (whole) or [`TYS`] (core).
    pub fn inputs(self) -> usize {
        match self {
            Lang::Core => SLOTS * TYS.len(),
            Lang::Whole { .. } => SLOTS * ALL_TYS.len(),
        }
    }
    /// The type of input word `c`.
    pub fn input_ty(self, c: usize) -> Ty {
        ALL_TYS[c / SLOTS]
    }
    /// The random seed of batch `seed`: itself in the core language, mixed with a constant in
    /// the whole one (new streams; the old findings' seeds keep theirs).
    pub fn batch_seed(self, seed: u64) -> u64 {
        match self {
            Lang::Core => seed,
            Lang::Whole { .. } => seed ^ 0x3c6e_f372_fe94_f82b,
        }
    }
    /// Whether it is the whole language.
    pub fn whole(self) -> bool {
        matches!(self, Lang::Whole { .. })
    }
}

/// A scalar type of the kernel builder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Bool,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    I8,
    U8,
    I16,
    U16,
    F16,
    BF16,
    /// `cudajit::F8E4M3` (storage only: casts, comparisons, select, bitcasts).
    E4M3,
    /// `cudajit::F8E5M2`.
    E5M2,
}

/// Every type of the core language, in input-slot order.
pub const TYS: [Ty; 7] = [
    Ty::Bool,
    Ty::I32,
    Ty::U32,
    Ty::I64,
    Ty::U64,
    Ty::F32,
    Ty::F64,
];

impl Ty {
    /// Floats with arithmetic (not the 8-bit storage floats).
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64 | Ty::F16 | Ty::BF16)
    }
    /// The 16-bit floats.
    pub fn is_half(self) -> bool {
        matches!(self, Ty::F16 | Ty::BF16)
    }
    /// The 8-bit floats.
    pub fn is_fp8(self) -> bool {
        matches!(self, Ty::E4M3 | Ty::E5M2)
    }
    /// Integers (not bool).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::I8 | Ty::U8 | Ty::I16 | Ty::U16
        )
    }
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            Ty::I32 | Ty::I64 | Ty::F32 | Ty::F64 | Ty::I8 | Ty::I16 | Ty::F16 | Ty::BF16
        )
    }
    pub fn bits(self) -> u32 {
        match self {
            Ty::Bool => 1,
            Ty::I8 | Ty::U8 | Ty::E4M3 | Ty::E5M2 => 8,
            Ty::I16 | Ty::U16 | Ty::F16 | Ty::BF16 => 16,
            Ty::I32 | Ty::U32 | Ty::F32 => 32,
            Ty::I64 | Ty::U64 | Ty::F64 => 64,
        }
    }
    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::I64 => "i64",
            Ty::U64 => "u64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I8 => "i8",
            Ty::U8 => "u8",
            Ty::I16 => "i16",
            Ty::U16 => "u16",
            Ty::F16 => "f16",
            Ty::BF16 => "bf16",
            Ty::E4M3 => "F8E4M3",
            Ty::E5M2 => "F8E5M2",
        }
    }
    /// Index in [`ALL_TYS`] (for the core types the same as in [`TYS`]).
    pub fn index(self) -> usize {
        ALL_TYS.iter().position(|&t| t == self).unwrap_or(0)
    }
}

/// A value of one of the types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Bool(bool),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    F16(f16),
    BF16(bf16),
    E4M3(F8E4M3),
    E5M2(F8E5M2),
}

impl Val {
    pub fn ty(self) -> Ty {
        match self {
            Val::Bool(_) => Ty::Bool,
            Val::I32(_) => Ty::I32,
            Val::U32(_) => Ty::U32,
            Val::I64(_) => Ty::I64,
            Val::U64(_) => Ty::U64,
            Val::F32(_) => Ty::F32,
            Val::F64(_) => Ty::F64,
            Val::I8(_) => Ty::I8,
            Val::U8(_) => Ty::U8,
            Val::I16(_) => Ty::I16,
            Val::U16(_) => Ty::U16,
            Val::F16(_) => Ty::F16,
            Val::BF16(_) => Ty::BF16,
            Val::E4M3(_) => Ty::E4M3,
            Val::E5M2(_) => Ty::E5M2,
        }
    }
    /// The bits as the kernels store them (zero-extended to 64).
    pub fn to_bits(self) -> u64 {
        match self {
            Val::Bool(v) => v as u64,
            Val::I32(v) => v as u32 as u64,
            Val::U32(v) => v as u64,
            Val::I64(v) => v as u64,
            Val::U64(v) => v,
            Val::F32(v) => v.to_bits() as u64,
            Val::F64(v) => v.to_bits(),
            Val::I8(v) => v as u8 as u64,
            Val::U8(v) => v as u64,
            Val::I16(v) => v as u16 as u64,
            Val::U16(v) => v as u64,
            Val::F16(v) => v.to_bits() as u64,
            Val::BF16(v) => v.to_bits() as u64,
            Val::E4M3(v) => v.to_bits() as u64,
            Val::E5M2(v) => v.to_bits() as u64,
        }
    }
    /// The value of type `ty` whose stored bits are `b` (bits above the type's width ignored).
    pub fn from_bits(ty: Ty, b: u64) -> Val {
        match ty {
            Ty::Bool => Val::Bool(b & 1 != 0),
            Ty::I32 => Val::I32(b as u32 as i32),
            Ty::U32 => Val::U32(b as u32),
            Ty::I64 => Val::I64(b as i64),
            Ty::U64 => Val::U64(b),
            Ty::F32 => Val::F32(f32::from_bits(b as u32)),
            Ty::F64 => Val::F64(f64::from_bits(b)),
            Ty::I8 => Val::I8(b as u8 as i8),
            Ty::U8 => Val::U8(b as u8),
            Ty::I16 => Val::I16(b as u16 as i16),
            Ty::U16 => Val::U16(b as u16),
            Ty::F16 => Val::F16(f16::from_bits(b as u16)),
            Ty::BF16 => Val::BF16(bf16::from_bits(b as u16)),
            Ty::E4M3 => Val::E4M3(F8E4M3::from_bits(b as u8)),
            Ty::E5M2 => Val::E5M2(F8E5M2::from_bits(b as u8)),
        }
    }
    pub fn is_nan(self) -> bool {
        match self {
            Val::F32(v) => v.is_nan(),
            Val::F64(v) => v.is_nan(),
            Val::F16(v) => v.is_nan(),
            Val::BF16(v) => v.is_nan(),
            Val::E4M3(v) => v.is_nan(),
            Val::E5M2(v) => v.is_nan(),
            _ => false,
        }
    }
    /// The value of a float (any width) as f64, exactly; `None` for other types.
    pub fn as_f64(self) -> Option<f64> {
        Some(match self {
            Val::F32(v) => v as f64,
            Val::F64(v) => v,
            Val::F16(v) => v.to_f64(),
            Val::BF16(v) => v.to_f64(),
            Val::E4M3(v) => v.to_f32() as f64,
            Val::E5M2(v) => v.to_f32() as f64,
            _ => return None,
        })
    }
    /// Equal as results: the same bits (so +0 and -0 differ), or both NaN (any payload).
    pub fn same(self, other: Val) -> bool {
        self.ty() == other.ty()
            && ((self.is_nan() && other.is_nan()) || self.to_bits() == other.to_bits())
    }
    /// A Rust expression of this value, e.g. `-7.25f32` or `f32::from_bits(0x7fc00001)`.
    pub fn rust(self) -> String {
        fn float(v: f64, bits: String, ty: &str, exact: bool) -> String {
            if v.is_nan() {
                format!("{ty}::from_bits({bits})")
            } else if v.is_infinite() {
                format!("{ty}::{}INFINITY", if v < 0.0 { "NEG_" } else { "" })
            } else if exact {
                format!("{v:?}{ty}")
            } else {
                format!("{ty}::from_bits({bits})")
            }
        }
        match self {
            Val::Bool(v) => v.to_string(),
            Val::I32(v) if v == i32::MIN => "i32::MIN".into(),
            Val::I64(v) if v == i64::MIN => "i64::MIN".into(),
            Val::I32(v) => format!("{v}i32"),
            Val::U32(v) => format!("{v}u32"),
            Val::I64(v) => format!("{v}i64"),
            Val::U64(v) => format!("{v}u64"),
            Val::F32(v) => float(
                v as f64,
                format!("{:#010x}", v.to_bits()),
                "f32",
                format!("{v:?}").parse::<f32>().map(f32::to_bits) == Ok(v.to_bits()),
            ),
            Val::F64(v) => float(
                v,
                format!("{:#018x}", v.to_bits()),
                "f64",
                format!("{v:?}").parse::<f64>().map(f64::to_bits) == Ok(v.to_bits()),
            ),
            Val::I8(v) => format!("{v}i8"),
            Val::U8(v) => format!("{v}u8"),
            Val::I16(v) => format!("{v}i16"),
            Val::U16(v) => format!("{v}u16"),
            Val::F16(v) => format!("f16::from_bits({:#06x}) /* {v:?} */", v.to_bits()),
            Val::BF16(v) => format!("bf16::from_bits({:#06x}) /* {v:?} */", v.to_bits()),
            Val::E4M3(v) => format!(
                "F8E4M3::from_bits({:#04x}) /* {} */",
                v.to_bits(),
                v.to_f32()
            ),
            Val::E5M2(v) => format!(
                "F8E5M2::from_bits({:#04x}) /* {} */",
                v.to_bits(),
                v.to_f32()
            ),
        }
    }
}

/// Inexact math functions of one float argument (checked against std within ulp bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    Rsqrt,
    Cbrt,
    Exp,
    Exp2,
    ExpM1,
    Ln,
    Log2,
    Log10,
    Ln1p,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Erf,
}

/// Every inexact one-argument function.
pub const MATHS: [Math; 19] = [
    Math::Rsqrt,
    Math::Cbrt,
    Math::Exp,
    Math::Exp2,
    Math::ExpM1,
    Math::Ln,
    Math::Log2,
    Math::Log10,
    Math::Ln1p,
    Math::Sin,
    Math::Cos,
    Math::Tan,
    Math::Asin,
    Math::Acos,
    Math::Atan,
    Math::Sinh,
    Math::Cosh,
    Math::Tanh,
    Math::Erf,
];

impl Math {
    /// The builder's method name.
    pub fn name(self) -> &'static str {
        match self {
            Math::Rsqrt => "rsqrt",
            Math::Cbrt => "cbrt",
            Math::Exp => "exp",
            Math::Exp2 => "exp2",
            Math::ExpM1 => "exp_m1",
            Math::Ln => "ln",
            Math::Log2 => "log2",
            Math::Log10 => "log10",
            Math::Ln1p => "ln_1p",
            Math::Sin => "sin",
            Math::Cos => "cos",
            Math::Tan => "tan",
            Math::Asin => "asin",
            Math::Acos => "acos",
            Math::Atan => "atan",
            Math::Sinh => "sinh",
            Math::Cosh => "cosh",
            Math::Tanh => "tanh",
            Math::Erf => "erf",
        }
    }
}

/// One-operand operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Un {
    /// `-x` (signed ints: wrapping; floats).
    Neg,
    /// `!x` (bool: logical; ints: bitwise).
    Not,
    Abs,
    Floor,
    Ceil,
    Trunc,
    Round,
    Sqrt,
    /// `is_nan` (float -> bool).
    IsNan,
    /// `is_infinite` (float -> bool).
    IsInf,
    /// `popc` (int -> u32).
    Popc,
    /// `clz` (int -> u32).
    Clz,
    /// `ffs` (int -> u32).
    Ffs,
    /// `brev` (int -> same).
    Brev,
    /// An inexact math function (float -> same).
    Math(Math),
}

/// Two-operand operators (both operands of the result's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
    Copysign,
    /// `powf` (inexact).
    Powf,
    /// `atan2` (inexact).
    Atan2,
    /// bool `and`.
    LAnd,
    /// bool `or`.
    LOr,
}

/// Comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Every comparison.
pub const CMPS: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];

impl Cmp {
    pub fn name(self) -> &'static str {
        match self {
            Cmp::Eq => "eq",
            Cmp::Ne => "ne",
            Cmp::Lt => "lt",
            Cmp::Le => "le",
            Cmp::Gt => "gt",
            Cmp::Ge => "ge",
        }
    }
}

/// An expression tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// Input slot `slot` of type `ty` (per thread).
    Input(Ty, u8),
    Lit(Val),
    Un(Un, Box<Node>),
    Bin(Bin, Box<Node>, Box<Node>),
    Cmp(Cmp, Box<Node>, Box<Node>),
    Select(Box<Node>, Box<Node>, Box<Node>),
    /// `a.mul_add(b, c)`.
    MulAdd(Box<Node>, Box<Node>, Box<Node>),
    Cast(Ty, Box<Node>),
    Bitcast(Ty, Box<Node>),
    /// The current value of a program's variable `v<n>` of type `ty` (only in statement
    /// programs, `prog.rs`; never in the plain trees).
    Var(Ty, u8),
}

impl Node {
    /// The result type.
    pub fn ty(&self) -> Ty {
        match self {
            Node::Input(t, _) | Node::Var(t, _) => *t,
            Node::Lit(v) => v.ty(),
            Node::Un(Un::IsNan | Un::IsInf, _) | Node::Cmp(..) => Ty::Bool,
            Node::Un(Un::Popc | Un::Clz | Un::Ffs, _) => Ty::U32,
            Node::Un(_, a) | Node::Bin(_, a, _) | Node::MulAdd(a, _, _) => a.ty(),
            Node::Select(_, a, _) => a.ty(),
            Node::Cast(t, _) | Node::Bitcast(t, _) => *t,
        }
    }
    /// The operands.
    pub fn children(&self) -> Vec<&Node> {
        match self {
            Node::Input(..) | Node::Lit(_) | Node::Var(..) => vec![],
            Node::Un(_, a) | Node::Cast(_, a) | Node::Bitcast(_, a) => vec![a],
            Node::Bin(_, a, b) | Node::Cmp(_, a, b) => vec![a, b],
            Node::Select(a, b, c) | Node::MulAdd(a, b, c) => vec![a, b, c],
        }
    }
    /// Number of nodes.
    pub fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }
    /// Every sub-tree, children before parents (post-order), this one last.
    pub fn subtrees(&self) -> Vec<&Node> {
        let mut out = Vec::new();
        fn walk<'a>(n: &'a Node, out: &mut Vec<&'a Node>) {
            for c in n.children() {
                walk(c, out);
            }
            out.push(n);
        }
        walk(self, &mut out);
        out
    }
    /// Whether this node's value is inexact (a math function checked within ulp bounds).
    pub fn is_inexact(&self) -> bool {
        matches!(
            self,
            Node::Un(Un::Math(_), _) | Node::Bin(Bin::Powf | Bin::Atan2, _, _)
        )
    }
}

/// Input slots per type and thread.
pub const SLOTS: usize = 3;

/// Random tree generation: well-typed by construction.
///
/// [`Gen::new`] gives the plain trees of the tree fuzzer; the statement programs (`prog.rs`)
/// set `vars` (variables readable as leaves), `exact` (no inexact math) and `slots` (device
/// function bodies read only slot 0, their parameters). With the defaults the random stream is
/// the one the tree fuzzer always had, so old seeds still reproduce.
pub struct Gen<'a> {
    pub rng: &'a mut Rng,
    /// Variables a leaf may read: `(type, number)`.
    pub vars: Vec<(Ty, u8)>,
    /// Leave out the inexact math functions (`Un::Math`, `powf`, `atan2`).
    pub exact: bool,
    /// Input slots a leaf may read (`1..=SLOTS`).
    pub slots: u8,
    /// The types it draws from.
    pub lang: Lang,
    /// Leave bf16 out (a bf16 drawn becomes f16): fastmath batches, where LLVM 19 emits
    /// `setp.*.ftz.bf16`, which ptxas rejects (see docs/RELIABILITY.md).
    pub no_bf16: bool,
}

impl<'a> Gen<'a> {
    /// The tree fuzzer's generator: inputs and literals as leaves, every operation.
    pub fn new(rng: &'a mut Rng) -> Gen<'a> {
        Gen {
            rng,
            vars: Vec::new(),
            exact: false,
            slots: SLOTS as u8,
            lang: Lang::Core,
            no_bf16: false,
        }
    }

    /// The same for another language.
    pub fn lang(mut self, lang: Lang) -> Self {
        self.lang = lang;
        self
    }
}

impl Gen<'_> {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.below(xs.len() as u64) as usize]
    }

    fn leaf(&mut self, ty: Ty) -> Node {
        let vars: Vec<u8> = self
            .vars
            .iter()
            .filter(|(t, _)| *t == ty)
            .map(|(_, v)| *v)
            .collect();
        if !vars.is_empty() && self.rng.below(2) == 0 {
            return Node::Var(ty, self.pick(&vars));
        }
        if self.rng.below(4) == 0 {
            Node::Lit(random_val(self.rng, ty))
        } else {
            Node::Input(ty, self.rng.below(self.slots as u64) as u8)
        }
    }

    fn any_ty(&mut self) -> Ty {
        let t = self.pick(self.lang.tys());
        self.allowed(t)
    }

    /// `t`, or f16 for a bf16 when bf16 is left out.
    fn allowed(&self, t: Ty) -> Ty {
        if t == Ty::BF16 && self.no_bf16 {
            Ty::F16
        } else {
            t
        }
    }

    fn fp8(&self) -> bool {
        matches!(self.lang, Lang::Whole { fp8: true })
    }

    /// A type of `bits` bits other than bool for a bitcast (whole language).
    fn same_size(&mut self, bits: u32) -> Ty {
        match bits {
            8 if self.fp8() => self.pick(&[Ty::I8, Ty::U8, Ty::E4M3, Ty::E5M2]),
            8 => self.pick(&[Ty::I8, Ty::U8]),
            _ => {
                let t = self.pick(&[Ty::I16, Ty::U16, Ty::F16, Ty::BF16]);
                self.allowed(t)
            }
        }
    }

    /// A tree of type `ty` at most `depth` deep.
    pub fn tree(&mut self, ty: Ty, depth: u32) -> Node {
        if depth == 0 || self.rng.below(6) == 0 {
            return self.leaf(ty);
        }
        let d = depth - 1;
        let b = |n: Node| Box::new(n);
        match ty {
            Ty::Bool => match self.rng.below(8) {
                0..=2 => {
                    let t = self.any_ty();
                    let c = self.pick(&CMPS);
                    Node::Cmp(c, b(self.tree(t, d)), b(self.tree(t, d)))
                }
                3 => Node::Un(Un::Not, b(self.tree(ty, d))),
                4 => {
                    let op = self.pick(&[Bin::LAnd, Bin::LOr]);
                    Node::Bin(op, b(self.tree(ty, d)), b(self.tree(ty, d)))
                }
                5 => {
                    let t = if self.lang.whole() {
                        let t = self.pick(&[Ty::F32, Ty::F64, Ty::F16, Ty::BF16]);
                        self.allowed(t)
                    } else {
                        self.pick(&[Ty::F32, Ty::F64])
                    };
                    let op = self.pick(&[Un::IsNan, Un::IsInf]);
                    Node::Un(op, b(self.tree(t, d)))
                }
                6 => self.select(ty, d),
                _ => self.leaf(ty),
            },
            Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::I8 | Ty::U8 | Ty::I16 | Ty::U16 => {
                match self.rng.below(12) {
                    0..=4 => {
                        let op = self.pick(&[
                            Bin::Add,
                            Bin::Sub,
                            Bin::Mul,
                            Bin::Div,
                            Bin::Rem,
                            Bin::And,
                            Bin::Or,
                            Bin::Xor,
                            Bin::Shl,
                            Bin::Shr,
                            Bin::Min,
                            Bin::Max,
                        ]);
                        Node::Bin(op, b(self.tree(ty, d)), b(self.tree(ty, d)))
                    }
                    5 => {
                        let mut ops = vec![Un::Not, Un::Brev];
                        if ty.is_signed() {
                            ops.push(Un::Neg);
                        }
                        let op = self.pick(&ops);
                        Node::Un(op, b(self.tree(ty, d)))
                    }
                    6 if ty == Ty::U32 => {
                        let t = if self.lang.whole() {
                            self.pick(&[
                                Ty::I32,
                                Ty::U32,
                                Ty::I64,
                                Ty::U64,
                                Ty::I8,
                                Ty::U8,
                                Ty::I16,
                                Ty::U16,
                            ])
                        } else {
                            self.pick(&[Ty::I32, Ty::U32, Ty::I64, Ty::U64])
                        };
                        let op = self.pick(&[Un::Popc, Un::Clz, Un::Ffs]);
                        Node::Un(op, b(self.tree(t, d)))
                    }
                    6 | 7 => {
                        let t = self.any_ty();
                        Node::Cast(ty, b(self.tree(t, d)))
                    }
                    8 if ty.bits() < 32 => {
                        let t = self.same_size(ty.bits());
                        Node::Bitcast(ty, b(self.tree(t, d)))
                    }
                    8 => {
                        let t = match (ty.bits(), self.rng.below(3)) {
                            (32, 0) => Ty::F32,
                            (32, 1) => Ty::I32,
                            (32, _) => Ty::U32,
                            (_, 0) => Ty::F64,
                            (_, 1) => Ty::I64,
                            _ => Ty::U64,
                        };
                        Node::Bitcast(ty, b(self.tree(t, d)))
                    }
                    9 => self.select(ty, d),
                    _ => self.leaf(ty),
                }
            }
            Ty::F32 | Ty::F64 | Ty::F16 | Ty::BF16 => match self.rng.below(14) {
                0..=3 => {
                    let op = self.pick(&[
                        Bin::Add,
                        Bin::Sub,
                        Bin::Mul,
                        Bin::Div,
                        Bin::Rem,
                        Bin::Min,
                        Bin::Max,
                        Bin::Copysign,
                        Bin::Powf,
                        Bin::Atan2,
                    ]);
                    let op = match op {
                        Bin::Powf if self.exact => Bin::Mul,
                        Bin::Atan2 if self.exact => Bin::Sub,
                        op => op,
                    };
                    Node::Bin(op, b(self.tree(ty, d)), b(self.tree(ty, d)))
                }
                4..=5 => {
                    let op = self.pick(&[
                        Un::Neg,
                        Un::Abs,
                        Un::Floor,
                        Un::Ceil,
                        Un::Trunc,
                        Un::Round,
                        Un::Sqrt,
                    ]);
                    Node::Un(op, b(self.tree(ty, d)))
                }
                6 if self.exact => Node::Un(Un::Neg, b(self.tree(ty, d))),
                6 => {
                    let m = self.pick(&MATHS);
                    Node::Un(Un::Math(m), b(self.tree(ty, d)))
                }
                7 => Node::MulAdd(
                    b(self.tree(ty, d)),
                    b(self.tree(ty, d)),
                    b(self.tree(ty, d)),
                ),
                8 => {
                    let t = loop {
                        let t = self.any_ty();
                        if t != Ty::Bool {
                            break t;
                        }
                    };
                    Node::Cast(ty, b(self.tree(t, d)))
                }
                9 => {
                    let t = match ty {
                        Ty::F32 => self.pick(&[Ty::I32, Ty::U32]),
                        Ty::F64 => self.pick(&[Ty::I64, Ty::U64]),
                        _ => self.same_size(16),
                    };
                    Node::Bitcast(ty, b(self.tree(t, d)))
                }
                10 | 11 => self.select(ty, d),
                _ => self.leaf(ty),
            },
            // The 8-bit floats: storage types (casts, bitcasts, select; compared as bools).
            Ty::E4M3 | Ty::E5M2 => match self.rng.below(6) {
                0 | 1 => {
                    let t = loop {
                        let t = self.any_ty();
                        if t != Ty::Bool {
                            break t;
                        }
                    };
                    Node::Cast(ty, b(self.tree(t, d)))
                }
                2 => {
                    let t = self.same_size(8);
                    Node::Bitcast(ty, b(self.tree(t, d)))
                }
                3 => self.select(ty, d),
                _ => self.leaf(ty),
            },
        }
    }

    fn select(&mut self, ty: Ty, d: u32) -> Node {
        Node::Select(
            Box::new(self.tree(Ty::Bool, d)),
            Box::new(self.tree(ty, d)),
            Box::new(self.tree(ty, d)),
        )
    }
}
