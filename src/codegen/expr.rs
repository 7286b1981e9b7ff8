//! `Expr<T>`: a typed value in a kernel being built, with operators; `Var<T>`: a mutable local.

use std::marker::PhantomData;
use std::ops;

use super::builder::{current_tag, with_state, Kind, ORPHAN};
pub use super::expr_mixed::Operand;
use super::scalar::{Int, Num, Scalar, ScalarTy, Signed};
use crate::ir::{BinOp, CmpOp, MathFn, Op, UnOp, ValueId, VarId};

/// A value of type `T` computed by a kernel, evaluated where the Rust code creates it.
///
/// Arithmetic (`+ - * / %`, unary `-`), bit operations and shifts on integers, comparisons
/// (`lt`, `eq`, ...) giving `Expr<bool>`, and `select` work as in Rust; mixing element types
/// needs an explicit [`cast`](Expr::cast), except `u32` with `u64` expressions (the thread
/// geometry with `grid1`, `len` or `dim`): their arithmetic (`+ - * / % & | ^`) and
/// comparisons widen the `u32` side to `u64` (zero-extension), in both orders. Rust literals and captured values convert with
/// `Expr::from(v)` and mix with expressions directly (`x * 2.0`). Integer arithmetic wraps;
/// integer division by zero gives all-ones bits (`-1` signed, `MAX` unsigned) and the remainder
/// the dividend; `MIN / -1` gives `MIN`; shift amounts are taken modulo the bit width.
pub struct Expr<T> {
    pub(crate) tag: u32,
    pub(crate) id: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Expr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Expr<T> {}

impl<T> std::fmt::Debug for Expr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr#{}", self.id)
    }
}

impl<T: Scalar> Expr<T> {
    /// Records `op` producing a `T`.
    pub(crate) fn record(op: Op, operands: &[(u32, u32)], varying: bool) -> Expr<T> {
        Self::record_ty(T::TY, op, operands, varying)
    }

    pub(crate) fn record_ty(
        ty: ScalarTy,
        op: Op,
        operands: &[(u32, u32)],
        varying: bool,
    ) -> Expr<T> {
        match with_state(|s| (s.tag, s.value(ty, op, operands, varying))) {
            Some((tag, id)) => Expr::from_raw(tag, id),
            None => Expr::from_raw(ORPHAN, 0),
        }
    }

    pub(crate) fn from_raw(tag: u32, id: u32) -> Expr<T> {
        Expr {
            tag,
            id,
            _t: PhantomData,
        }
    }

    pub(crate) fn raw(self) -> (u32, u32) {
        (self.tag, self.id)
    }

    /// A constant.
    #[track_caller]
    pub fn lit(v: T) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(Op::Const(v.to_bits()), &[], false)
    }

    /// Converts to another scalar type with Rust's `as` semantics (float to int saturates,
    /// NaN gives 0; int to int truncates or extends by the source's signedness).
    #[track_caller]
    pub fn cast<U: Scalar>(self) -> Expr<U> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(Op::Cast(crate::ir::ValueId(self.id)), &[self.raw()], false)
    }

    /// Reinterprets the bits as another type of the same size (`f32::to_bits` and friends);
    /// other sizes, and `bool`, are a build error.
    #[track_caller]
    pub fn bitcast<U: Scalar>(self) -> Expr<U> {
        let _at = crate::codegen::srcloc::at();
        if T::TY.size() != U::TY.size() || T::TY == ScalarTy::Bool || U::TY == ScalarTy::Bool {
            with_state(|s| {
                s.error(Kind::BadCast, format!(
                    "in `{}`: cannot reinterpret {} as {}: bitcasts need two non-bool types of one size",
                    s.f.name,
                    T::TY.name(),
                    U::TY.name()
                ))
            });
        }
        Expr::record(
            Op::Bitcast(crate::ir::ValueId(self.id)),
            &[self.raw()],
            false,
        )
    }

    fn cmp<R: Operand<T>>(self, op: CmpOp, other: R) -> Expr<bool> {
        let (a, b) = R::operands(self, other);
        a.cmp_same(op, b)
    }

    fn cmp_same(self, op: CmpOp, o: Expr<T>) -> Expr<bool> {
        if T::TY.is_fp8() {
            // The 8-bit floats compare by value: as f32 (exact).
            return self.cast::<f32>().cmp_same(op, o.cast::<f32>());
        }
        Expr::record(
            Op::Cmp(op, crate::ir::ValueId(self.id), crate::ir::ValueId(o.id)),
            &[self.raw(), o.raw()],
            false,
        )
    }

    /// `self == other`.
    #[track_caller]
    pub fn eq(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Eq, other)
    }
    /// `self != other`.
    #[track_caller]
    pub fn ne(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Ne, other)
    }
    /// `self < other`.
    #[track_caller]
    pub fn lt(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Lt, other)
    }
    /// `self <= other`.
    #[track_caller]
    pub fn le(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Le, other)
    }
    /// `self > other`.
    #[track_caller]
    pub fn gt(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Gt, other)
    }
    /// `self >= other`.
    #[track_caller]
    pub fn ge(self, other: impl Operand<T>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.cmp(CmpOp::Ge, other)
    }
}

impl<T: Scalar> From<T> for Expr<T> {
    #[track_caller]
    fn from(v: T) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        Expr::lit(v)
    }
}

/// `if cond { a } else { b }` as a value (both sides are evaluated).
#[track_caller]
pub fn select<T: Scalar>(
    cond: impl Into<Expr<bool>>,
    a: impl Into<Expr<T>>,
    b: impl Into<Expr<T>>,
) -> Expr<T> {
    let _at = crate::codegen::srcloc::at();
    let (c, a, b) = (cond.into(), a.into(), b.into());
    Expr::record(
        Op::Select(
            crate::ir::ValueId(c.id),
            crate::ir::ValueId(a.id),
            crate::ir::ValueId(b.id),
        ),
        &[c.raw(), a.raw(), b.raw()],
        false,
    )
}

pub(crate) fn binary<T: Scalar>(op: BinOp, a: Expr<T>, b: Expr<T>) -> Expr<T> {
    if matches!(op, BinOp::Add | BinOp::Sub) && T::TY.is_float() {
        if let Some(fused) = contract(op == BinOp::Sub, a, b) {
            return fused;
        }
    }
    Expr::record(
        Op::Binary(op, crate::ir::ValueId(a.id), crate::ir::ValueId(b.id)),
        &[a.raw(), b.raw()],
        false,
    )
}

/// FMA contraction (docs/GUIDE.md, "FMA contraction"): `x + y` or `x - y` (`sub`) of floats
/// as one fused multiply-add when contraction is on and an operand is a product recorded with
/// `*` that may be used here. The left operand's product is taken first:
///
/// - `a*b + c` -> `fma(a, b, c)`, `a*b - c` -> `fma(a, b, -c)`;
/// - otherwise `c + a*b` -> `fma(a, b, c)`, `c - a*b` -> `fma(-a, b, c)` (as nvcc).
///
/// The negation is exact, so each is `a*b ± c` rounded once. The product stays recorded where
/// it was made (it is dead code unless something else uses it). `None`: the plain operation.
fn contract<T: Scalar>(sub: bool, x: Expr<T>, y: Expr<T>) -> Option<Expr<T>> {
    let (tag, left, right) = with_state(|s| (s.tag, s.product(x.raw()), s.product(y.raw())))?;
    // The product's operands belong to this function (`product` checked its tag).
    let neg = |v: (u32, u32)| -> (u32, u32) {
        Expr::<T>::record(Op::Unary(UnOp::Neg, ValueId(v.1)), &[v], false).raw()
    };
    let (a, b, c) = match (left, right) {
        (Some((a, b)), _) => {
            let c = if sub { neg(y.raw()) } else { y.raw() };
            ((tag, a.0), (tag, b.0), c)
        }
        (None, Some((a, b))) => {
            let a = if sub { neg((tag, a.0)) } else { (tag, a.0) };
            (a, (tag, b.0), x.raw())
        }
        (None, None) => return None,
    };
    Some(Expr::record(
        Op::Math(MathFn::Fma, vec![ValueId(a.1), ValueId(b.1), ValueId(c.1)]),
        &[a, b, c],
        false,
    ))
}

impl<T: Num> Expr<T> {
    /// The smaller of two values (for floats: IEEE minNum, a NaN operand is ignored).
    #[track_caller]
    pub fn min(self, other: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        binary(BinOp::Min, self, other.into())
    }
    /// The larger of two values (for floats: IEEE maxNum).
    #[track_caller]
    pub fn max(self, other: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        binary(BinOp::Max, self, other.into())
    }
}

impl Expr<bool> {
    /// Logical and (both sides evaluated: for Rust's short-circuiting `&&`, see
    /// [`and_then`](Expr::and_then)).
    #[track_caller]
    pub fn and(self, other: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        binary(BinOp::And, self, other.into())
    }
    /// Logical or (both sides evaluated: for Rust's short-circuiting `||`, see
    /// [`or_else`](Expr::or_else)).
    #[track_caller]
    pub fn or(self, other: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        binary(BinOp::Or, self, other.into())
    }
}

impl ops::Not for Expr<bool> {
    type Output = Expr<bool>;
    #[track_caller]
    fn not(self) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(
            Op::Unary(UnOp::Not, crate::ir::ValueId(self.id)),
            &[self.raw()],
            false,
        )
    }
}

/// Bitwise not (`!x`), as Rust's on integers.
impl<T: Int> ops::Not for Expr<T> {
    type Output = Expr<T>;
    #[track_caller]
    fn not(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(
            Op::Unary(UnOp::Not, crate::ir::ValueId(self.id)),
            &[self.raw()],
            false,
        )
    }
}

impl<T: Signed> ops::Neg for Expr<T> {
    type Output = Expr<T>;
    #[track_caller]
    fn neg(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(
            Op::Unary(UnOp::Neg, crate::ir::ValueId(self.id)),
            &[self.raw()],
            false,
        )
    }
}

macro_rules! bin_ops {
    ($bound:ident: $($tr:ident $f:ident $op:ident),*) => {$(
        impl<T: $bound> ops::$tr<Expr<T>> for Expr<T> {
            type Output = Expr<T>;
            #[track_caller]
            fn $f(self, rhs: Expr<T>) -> Expr<T> {
                let _at = crate::codegen::srcloc::at();
                binary(BinOp::$op, self, rhs)
            }
        }
        impl<T: $bound> ops::$tr<T> for Expr<T> {
            type Output = Expr<T>;
            #[track_caller]
            fn $f(self, rhs: T) -> Expr<T> {
                let _at = crate::codegen::srcloc::at();
                binary(BinOp::$op, self, Expr::lit(rhs))
            }
        }
    )*};
}
bin_ops!(Num: Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem);
bin_ops!(Int: BitAnd bitand And, BitOr bitor Or, BitXor bitxor Xor, Shl shl Shl, Shr shr Shr);

macro_rules! lhs_scalar_ops {
    ($($t:ty),*) => {$(
        lhs_scalar_ops!(@one $t: Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem);
    )*};
    (@one $t:ty: $($tr:ident $f:ident $op:ident),*) => {$(
        impl ops::$tr<Expr<$t>> for $t {
            type Output = Expr<$t>;
            #[track_caller]
            fn $f(self, rhs: Expr<$t>) -> Expr<$t> {
                let _at = crate::codegen::srcloc::at();
                binary(BinOp::$op, Expr::lit(self), rhs)
            }
        }
    )*};
}
lhs_scalar_ops!(
    f32,
    f64,
    i8,
    u8,
    i16,
    u16,
    i32,
    u32,
    i64,
    u64,
    half::f16,
    half::bf16
);

macro_rules! lhs_int_ops {
    ($($t:ty),*) => {$(
        lhs_scalar_ops!(@one $t: BitAnd bitand And, BitOr bitor Or, BitXor bitxor Xor);
    )*};
}
lhs_int_ops!(i8, u8, i16, u16, i32, u32, i64, u64);

/// A mutable local variable of a kernel (`let mut`): read with [`get`](Var::get), write with
/// [`set`](Var::set).
pub struct Var<T> {
    pub(crate) tag: u32,
    pub(crate) id: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Var<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Var<T> {}

impl<T: Scalar> Var<T> {
    pub(crate) fn new(init: Expr<T>) -> Var<T> {
        match with_state(|s| (s.tag, s.declare_var(T::TY, init.raw()))) {
            Some((tag, id)) => Var::from_raw(tag, id),
            None => Var::from_raw(ORPHAN, 0),
        }
    }

    pub(crate) fn from_raw(tag: u32, id: u32) -> Var<T> {
        Var {
            tag,
            id,
            _t: PhantomData,
        }
    }

    /// The current value.
    #[track_caller]
    pub fn get(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        if self.tag != current_tag() {
            with_state(|s| {
                s.error(
                    Kind::ForeignValue,
                    "a variable of another kernel is read".to_string(),
                )
            });
        }
        Expr::record(Op::ReadVar(VarId(self.id)), &[], false)
    }

    /// Assigns a new value.
    #[track_caller]
    pub fn set(self, value: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        let v = value.into();
        with_state(|s| s.assign(self.tag, self.id, v.raw()));
    }
}

impl<T: Num> Var<T> {
    /// `self += value`.
    #[track_caller]
    pub fn add_assign(self, value: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        self.set(self.get() + value.into());
    }
}
