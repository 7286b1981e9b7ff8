//! Math functions of the kernel IR and their semantics, written once: [`MathFn`] names them,
//! [`alg`] holds cudajit's own implementations against an abstract [`alg::Ops`] (lowering runs
//! them emitting LLVM IR, the simulator and the tests run them on the host with [`host`]).

pub(crate) mod alg;
pub(crate) mod host;

use alg::Own;

/// A math function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MathFn {
    Sqrt,
    Rsqrt,
    Cbrt,
    Exp,
    Exp2,
    /// `ex2.approx.ftz.f32` (f32 only): the hardware's approximation.
    Exp2Approx,
    /// `-|x|` (f32 only) as `abs.f32` + `neg.f32`, which ptxas folds into the next arithmetic
    /// instruction's operand; not guarded by workarounds 1 and 5 (NaN bits not kept).
    NegAbs,
    ExpM1,
    Ln,
    Log2,
    Log10,
    Ln1p,
    Pow,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Erf,
    Abs,
    Floor,
    Ceil,
    Trunc,
    Round,
    Fma,
    Copysign,
    IsNan,
    IsInfinite,
}

impl MathFn {
    /// The method's name (as in Rust's std).
    pub(crate) fn method(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Cbrt => "cbrt",
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Exp2Approx => "exp2_approx",
            MathFn::NegAbs => "neg_abs",
            MathFn::ExpM1 => "exp_m1",
            MathFn::Ln => "ln",
            MathFn::Log2 => "log2",
            MathFn::Log10 => "log10",
            MathFn::Ln1p => "ln_1p",
            MathFn::Pow => "powf",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Atan2 => "atan2",
            MathFn::Sinh => "sinh",
            MathFn::Cosh => "cosh",
            MathFn::Tanh => "tanh",
            MathFn::Erf => "erf",
            MathFn::Abs => "abs",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Trunc => "trunc",
            MathFn::Round => "round",
            MathFn::Fma => "mul_add",
            MathFn::Copysign => "copysign",
            MathFn::IsNan => "is_nan",
            MathFn::IsInfinite => "is_infinite",
        }
    }
}
/// The own implementation of `f`, if there is one.
pub(crate) fn own_fn(f: MathFn) -> Option<Own> {
    Some(match f {
        MathFn::Exp => Own::Exp,
        MathFn::Exp2 => Own::Exp2,
        MathFn::ExpM1 => Own::ExpM1,
        MathFn::Ln => Own::Ln,
        MathFn::Log2 => Own::Log2,
        MathFn::Log10 => Own::Log10,
        MathFn::Ln1p => Own::Ln1p,
        MathFn::Pow => Own::Pow,
        MathFn::Sin => Own::Sin,
        MathFn::Cos => Own::Cos,
        MathFn::Tan => Own::Tan,
        MathFn::Asin => Own::Asin,
        MathFn::Acos => Own::Acos,
        MathFn::Atan => Own::Atan,
        MathFn::Atan2 => Own::Atan2,
        MathFn::Sinh => Own::Sinh,
        MathFn::Cosh => Own::Cosh,
        MathFn::Tanh => Own::Tanh,
        MathFn::Erf => Own::Erf,
        MathFn::Cbrt => Own::Cbrt,
        MathFn::Rsqrt => Own::Rsqrt,
        _ => return None,
    })
}
