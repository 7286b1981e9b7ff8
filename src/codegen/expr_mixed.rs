//! `u32` and `u64` expressions mixed without casts: the thread geometry (`thread_idx`,
//! `block_dim`, ...) is `u32` while `grid1`, `len` and `dim` are `u64`, so arithmetic and
//! comparisons between the two widen the `u32` side to `u64` (zero-extension, as C's usual
//! arithmetic conversions and as `u64::from(x)`), in both orders.

use std::ops;

use super::expr::{binary, Expr};
use super::scalar::Scalar;
use crate::ir::BinOp;

/// The right operand of a comparison (`lt`, `eq`, ...) of an `Expr<T>`: anything that converts
/// to an `Expr<T>` (a literal, a captured value, an expression of the same type); for an
/// `Expr<u32>` also an `Expr<u64>` and for an `Expr<u64>` also an `Expr<u32>`, both sides then
/// compared as `u64` (the `u32` side zero-extended).
#[diagnostic::on_unimplemented(
    message = "cannot compare an `Expr<{T}>` with `{Self}`",
    label = "not an `Expr<{T}>` nor a value convertible to one",
    note = "only u32 and u64 expressions mix (widened to u64); cast one side with `.cast::<U>()`"
)]
pub trait Operand<T: Scalar> {
    /// The type both sides are compared as.
    type Common: Scalar;
    /// The two sides as `Expr<Common>`s.
    fn operands(lhs: Expr<T>, rhs: Self) -> (Expr<Self::Common>, Expr<Self::Common>);
}

impl<T: Scalar, R: Into<Expr<T>>> Operand<T> for R {
    type Common = T;
    #[track_caller]
    fn operands(lhs: Expr<T>, rhs: R) -> (Expr<T>, Expr<T>) {
        (lhs, rhs.into())
    }
}

/// `u32_expr.lt(u64_expr)` and the other comparisons: as `u64`.
impl Operand<u32> for Expr<u64> {
    type Common = u64;
    #[track_caller]
    fn operands(lhs: Expr<u32>, rhs: Expr<u64>) -> (Expr<u64>, Expr<u64>) {
        (lhs.cast::<u64>(), rhs)
    }
}

/// `u64_expr.lt(u32_expr)` and the other comparisons: as `u64`.
impl Operand<u64> for Expr<u32> {
    type Common = u64;
    #[track_caller]
    fn operands(lhs: Expr<u64>, rhs: Expr<u32>) -> (Expr<u64>, Expr<u64>) {
        (lhs, rhs.cast::<u64>())
    }
}

macro_rules! widening_ops {
    ($($tr:ident $f:ident $op:ident),*) => {$(
        /// As `u64`: the `u32` operand is zero-extended.
        impl ops::$tr<Expr<u32>> for Expr<u64> {
            type Output = Expr<u64>;
            #[track_caller]
            fn $f(self, rhs: Expr<u32>) -> Expr<u64> {
                let _at = crate::codegen::srcloc::at();
                binary(BinOp::$op, self, rhs.cast::<u64>())
            }
        }
        /// As `u64`: the `u32` operand is zero-extended.
        impl ops::$tr<Expr<u64>> for Expr<u32> {
            type Output = Expr<u64>;
            #[track_caller]
            fn $f(self, rhs: Expr<u64>) -> Expr<u64> {
                let _at = crate::codegen::srcloc::at();
                binary(BinOp::$op, self.cast::<u64>(), rhs)
            }
        }
    )*};
}
widening_ops!(
    Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem,
    BitAnd bitand And, BitOr bitor Or, BitXor bitxor Xor
);
