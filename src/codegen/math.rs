//! Math functions on floats (and bit-counting on integers).

use inkwell::values::BasicValueEnum;

use super::expr::Expr;
use super::ir::{Op, ValueId};
use super::lower::Lowerer;
use super::scalar::{Float, Scalar, ScalarTy};
use crate::error::Result;

/// A math function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MathFn {
    Sqrt,
    Abs,
    Floor,
    Ceil,
    Trunc,
    Round,
    Fma,
}

pub(crate) fn record_math<T: Scalar>(f: MathFn, args: &[Expr<T>]) -> Expr<T> {
    let ids = args.iter().map(|a| ValueId(a.id)).collect();
    let raws: Vec<(u32, u32)> = args.iter().map(|a| a.raw()).collect();
    Expr::record(Op::Math(f, ids), &raws, false)
}

impl<T: Float> Expr<T> {
    /// Square root (correctly rounded; approximate with fastmath).
    pub fn sqrt(self) -> Expr<T> {
        record_math(MathFn::Sqrt, &[self])
    }
    /// Absolute value.
    pub fn abs(self) -> Expr<T> {
        record_math(MathFn::Abs, &[self])
    }
    /// Largest integer not above.
    pub fn floor(self) -> Expr<T> {
        record_math(MathFn::Floor, &[self])
    }
    /// Smallest integer not below.
    pub fn ceil(self) -> Expr<T> {
        record_math(MathFn::Ceil, &[self])
    }
    /// Rounds toward zero.
    pub fn trunc(self) -> Expr<T> {
        record_math(MathFn::Trunc, &[self])
    }
    /// Rounds half away from zero (as Rust's `round`).
    pub fn round(self) -> Expr<T> {
        record_math(MathFn::Round, &[self])
    }
    /// `self * a + b` with one rounding.
    pub fn mul_add(self, a: impl Into<Expr<T>>, b: impl Into<Expr<T>>) -> Expr<T> {
        record_math(MathFn::Fma, &[self, a.into(), b.into()])
    }
}

fn suffix(ty: ScalarTy) -> &'static str {
    if ty == ScalarTy::F32 {
        "f32"
    } else {
        "f64"
    }
}

/// Lowers a math function call.
pub(crate) fn lower_math<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    args: &[ValueId],
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let vals = args.iter().map(|a| lw.v(*a)).collect::<Result<Vec<_>>>()?;
    let name = match f {
        MathFn::Sqrt => "sqrt",
        MathFn::Abs => "fabs",
        MathFn::Floor => "floor",
        MathFn::Ceil => "ceil",
        MathFn::Trunc => "trunc",
        MathFn::Round => "round",
        MathFn::Fma => "fma",
    };
    let rt = super::lower::reg_type(lw.ctx, ty);
    let v = lw
        .call(&format!("llvm.{name}.{}", suffix(ty)), Some(rt), &vals)?
        .ok_or_else(|| crate::error::Error::usage("math intrinsic returned nothing"))?;
    Ok(lw.fast(v))
}

/// Called once per module after lowering and before optimisation: links whatever the math
/// functions used need (libdevice, or cudajit's own implementations).
pub(crate) fn prepare_module<'c>(
    _ctx: &'c inkwell::context::Context,
    _module: &inkwell::module::Module<'c>,
    _opts: &super::options::PtxOptions,
) -> std::result::Result<(), String> {
    Ok(())
}
