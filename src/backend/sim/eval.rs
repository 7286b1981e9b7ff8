//! The simulator's pure operations: arithmetic, comparisons, casts, math and bit operations,
//! evaluated for every lane of a span of threads at once.
//!
//! Values are kept as `u64` bit patterns (a value's bits zero-extended, `bool` as 0 or 1, the
//! same encoding as the builder's `Scalar::to_bits`). Each operation has
//! the semantics its lowering gives on the GPU (codegen/lower.rs): wrapping integer arithmetic,
//! shifts by the amount modulo the width, defined division by zero, Rust's `as` for casts,
//! IEEE comparisons, minNum/maxNum for float min/max.

use std::ops::Range;

use crate::ir::math::alg::{self, Own};
use crate::ir::math::host::{H32, H64};
use crate::ir::warp::BitFn;
use crate::ir::MathFn;
use crate::ir::ScalarTy;
use crate::ir::{BinOp, CmpOp, UnOp};

/// A lane value's Rust type and its `u64` encoding.
pub(super) trait Lane: Copy {
    fn get(bits: u64) -> Self;
    fn put(self) -> u64;
}

macro_rules! lane_int {
    ($($t:ty => $u:ty),*) => {$(
        impl Lane for $t {
            #[inline(always)]
            fn get(bits: u64) -> $t {
                bits as $u as $t
            }
            #[inline(always)]
            fn put(self) -> u64 {
                self as $u as u64
            }
        }
    )*};
}
lane_int!(i8 => u8, u8 => u8, i16 => u16, u16 => u16, i32 => u32, u32 => u32, i64 => u64, u64 => u64);

impl Lane for f32 {
    #[inline(always)]
    fn get(bits: u64) -> f32 {
        f32::from_bits(bits as u32)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Lane for f64 {
    #[inline(always)]
    fn get(bits: u64) -> f64 {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits()
    }
}
impl Lane for bool {
    #[inline(always)]
    fn get(bits: u64) -> bool {
        bits & 1 != 0
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self as u64
    }
}

/// The spans of threads an operation covers.
pub(super) type Spans<'a> = &'a [Range<usize>];

#[inline(always)]
fn un<A: Lane, R: Lane>(d: &mut [u64], a: &[u64], sp: Spans, f: impl Fn(A) -> R) {
    for r in sp {
        for i in r.clone() {
            d[i] = f(A::get(a[i])).put();
        }
    }
}

#[inline(always)]
fn bin<A: Lane, B: Lane, R: Lane>(
    d: &mut [u64],
    a: &[u64],
    b: &[u64],
    sp: Spans,
    f: impl Fn(A, B) -> R,
) {
    for r in sp {
        for i in r.clone() {
            d[i] = f(A::get(a[i]), B::get(b[i])).put();
        }
    }
}

/// Runs `$int` with `$T` an integer type, or `$flt` with `$T` a float type.
macro_rules! by_kind {
    ($ty:expr, $T:ident => int $int:expr, float $flt:expr, bool $b:expr) => {
        match $ty {
            ScalarTy::I8 => {
                type $T = i8;
                $int
            }
            // The 8-bit floats have no arithmetic, comparisons (the builder compares them as
            // f32) or atomics; as bytes wherever the dispatch needs a type.
            ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => {
                type $T = u8;
                $int
            }
            ScalarTy::I16 => {
                type $T = i16;
                $int
            }
            ScalarTy::U16 => {
                type $T = u16;
                $int
            }
            ScalarTy::I32 => {
                type $T = i32;
                $int
            }
            ScalarTy::U32 => {
                type $T = u32;
                $int
            }
            ScalarTy::I64 => {
                type $T = i64;
                $int
            }
            ScalarTy::U64 => {
                type $T = u64;
                $int
            }
            ScalarTy::F32 => {
                type $T = f32;
                $flt
            }
            ScalarTy::F64 => {
                type $T = f64;
                $flt
            }
            ScalarTy::F16 => {
                type $T = half::f16;
                $flt
            }
            ScalarTy::BF16 => {
                type $T = half::bf16;
                $flt
            }
            ScalarTy::Bool => $b,
        }
    };
}

/// Runs `$body` with `$T` the Rust type of a numeric (non-bool) scalar type.
macro_rules! by_num {
    ($ty:expr, $T:ident => $body:expr, bool => $b:expr) => {
        by_kind!($ty, $T => int $body, float $body, bool $b)
    };
}

/// Float min/max as the GPU's `min`/`max` (IEEE minNum/maxNum: a NaN operand is ignored;
/// -0 is below +0).
pub(super) trait MinMax: Copy + PartialOrd {
    fn is_nan_(self) -> bool;
    fn sign_bit(self) -> bool;
    #[inline(always)]
    fn fmin(self, y: Self) -> Self {
        if self.is_nan_() {
            y
        } else if y.is_nan_() || self < y {
            self
        } else if y < self {
            y
        } else if self.sign_bit() {
            self
        } else {
            y
        }
    }
    #[inline(always)]
    fn fmax(self, y: Self) -> Self {
        if self.is_nan_() {
            y
        } else if y.is_nan_() || self > y {
            self
        } else if y > self || self.sign_bit() {
            y
        } else {
            self
        }
    }
}
impl MinMax for f32 {
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn sign_bit(self) -> bool {
        self.is_sign_negative()
    }
}
impl MinMax for f64 {
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn sign_bit(self) -> bool {
        self.is_sign_negative()
    }
}

/// Unary operations.
pub(super) fn unary(op: UnOp, ty: ScalarTy, d: &mut [u64], a: &[u64], sp: Spans) {
    match op {
        UnOp::Neg => by_kind!(ty, T => int un::<T, T>(d, a, sp, |x| x.wrapping_neg()),
            float un::<T, T>(d, a, sp, |x| -x), bool un::<bool, bool>(d, a, sp, |x| x)),
        UnOp::Not => by_kind!(ty, T => int un::<T, T>(d, a, sp, |x| !x),
            float un::<T, T>(d, a, sp, |x| x), bool un::<bool, bool>(d, a, sp, |x| !x)),
    }
}

/// Binary operations (both operands of the result's type; shift amounts too).
pub(super) fn binary(op: BinOp, ty: ScalarTy, d: &mut [u64], a: &[u64], b: &[u64], sp: Spans) {
    macro_rules! int_ops {
        ($T:ty) => {
            match op {
                BinOp::Add => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.wrapping_add(y)),
                BinOp::Sub => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.wrapping_sub(y)),
                BinOp::Mul => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.wrapping_mul(y)),
                BinOp::Div => {
                    bin::<$T, $T, $T>(
                        d,
                        a,
                        b,
                        sp,
                        |x, y| {
                            if y == 0 {
                                !0
                            } else {
                                x.wrapping_div(y)
                            }
                        },
                    )
                }
                BinOp::Rem => {
                    bin::<$T, $T, $T>(
                        d,
                        a,
                        b,
                        sp,
                        |x, y| {
                            if y == 0 {
                                x
                            } else {
                                x.wrapping_rem(y)
                            }
                        },
                    )
                }
                BinOp::And => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x & y),
                BinOp::Or => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x | y),
                BinOp::Xor => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x ^ y),
                BinOp::Shl => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.wrapping_shl(y as u32)),
                BinOp::Shr => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.wrapping_shr(y as u32)),
                BinOp::Min => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.min(y)),
                BinOp::Max => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.max(y)),
            }
        };
    }
    macro_rules! float_ops {
        ($T:ty) => {
            match op {
                BinOp::Add => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x + y),
                BinOp::Sub => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x - y),
                BinOp::Mul => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x * y),
                BinOp::Div => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x / y),
                BinOp::Rem => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x % y),
                BinOp::Min => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.fmin(y)),
                BinOp::Max => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.fmax(y)),
                // The builder offers no bit operations on floats.
                BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr => {
                    bin::<u64, u64, u64>(d, a, b, sp, |_, _| 0)
                }
            }
        };
    }
    match ty {
        ScalarTy::I8 => int_ops!(i8),
        // (The 8-bit floats have no arithmetic; bytes here.)
        ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => int_ops!(u8),
        ScalarTy::I16 => int_ops!(i16),
        ScalarTy::U16 => int_ops!(u16),
        ScalarTy::I32 => int_ops!(i32),
        ScalarTy::U32 => int_ops!(u32),
        ScalarTy::I64 => int_ops!(i64),
        ScalarTy::U64 => int_ops!(u64),
        ScalarTy::F32 => float_ops!(f32),
        ScalarTy::F64 => float_ops!(f64),
        ScalarTy::F16 => float_ops!(half::f16),
        ScalarTy::BF16 => float_ops!(half::bf16),
        // bool: logical operations on 0/1 (the builder offers and/or/xor).
        ScalarTy::Bool => match op {
            BinOp::And | BinOp::Mul | BinOp::Min => bin::<u64, u64, u64>(d, a, b, sp, |x, y| x & y),
            BinOp::Or | BinOp::Max => bin::<u64, u64, u64>(d, a, b, sp, |x, y| x | y),
            _ => bin::<u64, u64, u64>(d, a, b, sp, |x, y| (x ^ y) & 1),
        },
    }
}

/// Comparisons of two values of type `ty` (IEEE for floats: NaN is unordered, `!=` true).
pub(super) fn compare(op: CmpOp, ty: ScalarTy, d: &mut [u64], a: &[u64], b: &[u64], sp: Spans) {
    macro_rules! cmp {
        ($T:ty) => {
            match op {
                CmpOp::Eq => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x == y),
                CmpOp::Ne => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x != y),
                CmpOp::Lt => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x < y),
                CmpOp::Le => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x <= y),
                CmpOp::Gt => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x > y),
                CmpOp::Ge => bin::<$T, $T, bool>(d, a, b, sp, |x, y| x >= y),
            }
        };
    }
    by_num!(ty, T => cmp!(T), bool => cmp!(bool));
}

/// `select(c, a, b)` per lane.
pub(super) fn select(d: &mut [u64], c: &[u64], a: &[u64], b: &[u64], sp: Spans) {
    for r in sp {
        for i in r.clone() {
            d[i] = if c[i] & 1 != 0 { a[i] } else { b[i] };
        }
    }
}

/// Rust's `as` from one scalar type to another.
pub(super) trait Conv: Lane {
    fn f32_(self) -> f32;
    fn f64_(self) -> f64;
    fn i8_(self) -> i8;
    fn u8_(self) -> u8;
    fn i16_(self) -> i16;
    fn u16_(self) -> u16;
    fn i32_(self) -> i32;
    fn u32_(self) -> u32;
    fn i64_(self) -> i64;
    fn u64_(self) -> u64;
    fn bool_(self) -> bool;
    fn f16_(self) -> half::f16;
    fn bf16_(self) -> half::bf16;
}

macro_rules! conv {
    ($($t:ty => $zero:expr),*) => {$(
        impl Conv for $t {
            #[inline(always)] fn f32_(self) -> f32 { self as f32 }
            #[inline(always)] fn f64_(self) -> f64 { self as f64 }
            #[inline(always)] fn i8_(self) -> i8 { self as i8 }
            #[inline(always)] fn u8_(self) -> u8 { self as u8 }
            #[inline(always)] fn i16_(self) -> i16 { self as i16 }
            #[inline(always)] fn u16_(self) -> u16 { self as u16 }
            #[inline(always)] fn i32_(self) -> i32 { self as i32 }
            #[inline(always)] fn u32_(self) -> u32 { self as u32 }
            #[inline(always)] fn i64_(self) -> i64 { self as i64 }
            #[inline(always)] fn u64_(self) -> u64 { self as u64 }
            // Floats: `!= 0` is true for NaN, as the lowering's `fcmp une`.
            #[inline(always)] fn bool_(self) -> bool { self != $zero }
            #[inline(always)] fn f16_(self) -> half::f16 { super::half::to_f16(self) }
            #[inline(always)] fn bf16_(self) -> half::bf16 { super::half::to_bf16(self) }
        }
    )*};
}
conv!(
    i8 => 0, u8 => 0, i16 => 0, u16 => 0, i32 => 0, u32 => 0, i64 => 0, u64 => 0,
    f32 => 0.0, f64 => 0.0
);

impl Conv for bool {
    fn f32_(self) -> f32 {
        self as u8 as f32
    }
    fn f64_(self) -> f64 {
        self as u8 as f64
    }
    fn i8_(self) -> i8 {
        self as i8
    }
    fn u8_(self) -> u8 {
        self as u8
    }
    fn i16_(self) -> i16 {
        self as i16
    }
    fn u16_(self) -> u16 {
        self as u16
    }
    fn i32_(self) -> i32 {
        self as i32
    }
    fn u32_(self) -> u32 {
        self as u32
    }
    fn i64_(self) -> i64 {
        self as i64
    }
    fn u64_(self) -> u64 {
        self as u64
    }
    fn bool_(self) -> bool {
        self
    }
    fn f16_(self) -> half::f16 {
        super::half::to_f16(self)
    }
    fn bf16_(self) -> half::bf16 {
        super::half::to_bf16(self)
    }
}

fn cast_from<A: Conv>(to: ScalarTy, d: &mut [u64], a: &[u64], sp: Spans) {
    match to {
        ScalarTy::F32 => un::<A, f32>(d, a, sp, A::f32_),
        ScalarTy::F64 => un::<A, f64>(d, a, sp, A::f64_),
        ScalarTy::I8 => un::<A, i8>(d, a, sp, A::i8_),
        ScalarTy::U8 => un::<A, u8>(d, a, sp, A::u8_),
        ScalarTy::I16 => un::<A, i16>(d, a, sp, A::i16_),
        ScalarTy::U16 => un::<A, u16>(d, a, sp, A::u16_),
        ScalarTy::I32 => un::<A, i32>(d, a, sp, A::i32_),
        ScalarTy::U32 => un::<A, u32>(d, a, sp, A::u32_),
        ScalarTy::I64 => un::<A, i64>(d, a, sp, A::i64_),
        ScalarTy::U64 => un::<A, u64>(d, a, sp, A::u64_),
        ScalarTy::Bool => un::<A, bool>(d, a, sp, A::bool_),
        ScalarTy::F16 => un::<A, half::f16>(d, a, sp, A::f16_),
        ScalarTy::BF16 => un::<A, half::bf16>(d, a, sp, A::bf16_),
        // One rounding from the exact f64 of any source (every source converts to f64 exactly
        // or, a huge integer, far beyond the saturation point).
        ScalarTy::F8E4M3 => un::<A, u64>(d, a, sp, |x| {
            crate::ir::F8E4M3::from_f64(x.f64_()).to_bits() as u64
        }),
        ScalarTy::F8E5M2 => un::<A, u64>(d, a, sp, |x| {
            crate::ir::F8E5M2::from_f64(x.f64_()).to_bits() as u64
        }),
    }
}

/// `a as to` (Rust's semantics: saturating float-to-int with NaN as 0, round-to-nearest
/// int-to-float, truncation or extension between integers).
pub(super) fn cast(from: ScalarTy, to: ScalarTy, d: &mut [u64], a: &[u64], sp: Spans) {
    // A cast to the same type keeps the bits, as Rust's `as` and the lowering do (an 8-bit
    // float's infinity is not saturated, a NaN's payload stays).
    if from == to {
        return copy(d, a, sp);
    }
    if from.is_fp8() {
        return fp8_cast(from, to, d, a, sp);
    }
    by_num!(from, T => cast_from::<T>(to, d, a, sp), bool => cast_from::<bool>(to, d, a, sp));
}

/// A cast from an 8-bit float, as the GPU's lowering: its exact value as f32, then f32's
/// cast.
fn fp8_cast(from: ScalarTy, to: ScalarTy, d: &mut [u64], a: &[u64], sp: Spans) {
    let mut w = vec![0u64; d.len()];
    un::<u64, f32>(&mut w, a, sp, |b| match from {
        ScalarTy::F8E4M3 => crate::ir::F8E4M3::from_bits(b as u8).to_f32(),
        _ => crate::ir::F8E5M2::from_bits(b as u8).to_f32(),
    });
    cast(ScalarTy::F32, to, d, &w, sp);
}

/// Copies the bits (a bitcast between types of one size, or a plain copy).
pub(super) fn copy(d: &mut [u64], a: &[u64], sp: Spans) {
    for r in sp {
        d[r.clone()].copy_from_slice(&a[r.clone()]);
    }
}

/// A math function of one or more float arguments of type `arg` (the result has type `ret`:
/// the float type, or bool for the tests). Functions with one of cudajit's own implementations
/// run exactly that code with host arithmetic; the rest are exact IEEE operations.
pub(super) fn math(f: MathFn, arg: ScalarTy, d: &mut [u64], args: &[&[u64]], sp: Spans) {
    if arg.is_half() {
        return super::half::math(f, arg, d, args, sp);
    }
    let a = args[0];
    let b = args.get(1).copied().unwrap_or(a);
    let c = args.get(2).copied().unwrap_or(a);
    macro_rules! go {
        ($T:ty, $H:expr, $big:expr) => {
            match f {
                MathFn::Sqrt => un::<$T, $T>(d, a, sp, |x| x.sqrt()),
                MathFn::Abs => un::<$T, $T>(d, a, sp, |x| x.abs()),
                MathFn::Floor => un::<$T, $T>(d, a, sp, |x| x.floor()),
                MathFn::Ceil => un::<$T, $T>(d, a, sp, |x| x.ceil()),
                MathFn::Trunc => un::<$T, $T>(d, a, sp, |x| x.trunc()),
                MathFn::Round => un::<$T, $T>(d, a, sp, |x| x.round()),
                MathFn::Copysign => bin::<$T, $T, $T>(d, a, b, sp, |x, y| x.copysign(y)),
                MathFn::IsNan => un::<$T, bool>(d, a, sp, |x| x.is_nan()),
                MathFn::Exp2Approx => un::<$T, $T>(d, a, sp, |x| exp2_approx(x as f32) as $T),
                MathFn::NegAbs => un::<$T, $T>(d, a, sp, |x| -x.abs()),
                MathFn::IsInfinite => un::<$T, bool>(d, a, sp, |x| x.is_infinite()),
                MathFn::Fma => {
                    for r in sp {
                        for i in r.clone() {
                            d[i] = <$T>::get(a[i])
                                .mul_add(<$T>::get(b[i]), <$T>::get(c[i]))
                                .put();
                        }
                    }
                }
                // cudajit's own sin/cos/tan reduce arguments exactly only up to a bound
                // (docs/MATH.md); beyond it the GPU's libdevice is accurate, and so is std.
                MathFn::Sin | MathFn::Cos | MathFn::Tan => {
                    let own = match f {
                        MathFn::Sin => Own::Sin,
                        MathFn::Cos => Own::Cos,
                        _ => Own::Tan,
                    };
                    let big = $big;
                    un::<$T, $T>(d, a, sp, |x| {
                        if x.abs() <= big || !x.is_finite() {
                            alg::eval(&$H, own, x, x)
                        } else {
                            let w = x as f64;
                            (match own {
                                Own::Sin => w.sin(),
                                Own::Cos => w.cos(),
                                _ => w.tan(),
                            }) as $T
                        }
                    })
                }
                _ => {
                    let own: Own = match crate::ir::math::own_fn(f) {
                        Some(o) => o,
                        None => Own::Exp,
                    };
                    bin::<$T, $T, $T>(d, a, b, sp, |x, y| alg::eval(&$H, own, x, y))
                }
            }
        };
    }
    if arg == ScalarTy::F64 {
        go!(f64, H64, 1e9)
    } else {
        go!(f32, H32, 1e5)
    }
}

/// `ex2.approx.ftz.f32` as the simulator computes it: 2^x rounded to f32 (the GPU's
/// approximation is within 2 ulp of it), subnormal arguments and results flushed to zero; a
/// NaN gives the canonical NaN (the hardware gives a NaN; its bits are not promised).
pub(crate) fn exp2_approx(x: f32) -> f32 {
    if x.is_nan() {
        return f32::from_bits(0x7fff_ffff);
    }
    let x = if x.is_subnormal() { 0.0 } else { x };
    let r = (x as f64).exp2() as f32;
    if r.is_subnormal() {
        0.0
    } else {
        r
    }
}

/// Bit operations on integers (`popc`, `clz`, `ffs` give a u32; `brev` the operand's type).
pub(super) fn bit(f: BitFn, ty: ScalarTy, d: &mut [u64], a: &[u64], sp: Spans) {
    macro_rules! go {
        ($T:ty) => {
            match f {
                BitFn::Popc => un::<$T, u32>(d, a, sp, |x| x.count_ones()),
                BitFn::Clz => un::<$T, u32>(d, a, sp, |x| x.leading_zeros()),
                BitFn::Ffs => {
                    un::<$T, u32>(
                        d,
                        a,
                        sp,
                        |x| {
                            if x == 0 {
                                0
                            } else {
                                x.trailing_zeros() + 1
                            }
                        },
                    )
                }
                BitFn::Brev => un::<$T, $T>(d, a, sp, |x| x.reverse_bits()),
            }
        };
    }
    match ty {
        ScalarTy::I8 => go!(i8),
        ScalarTy::U8 => go!(u8),
        ScalarTy::I16 => go!(i16),
        ScalarTy::U16 => go!(u16),
        ScalarTy::I32 => go!(i32),
        ScalarTy::I64 => go!(i64),
        ScalarTy::U64 => go!(u64),
        _ => go!(u32),
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // one span of one lane
mod tests {
    use super::*;

    fn run_bin(op: BinOp, ty: ScalarTy, x: u64, y: u64) -> u64 {
        let mut d = [0u64; 1];
        binary(op, ty, &mut d, &[x], &[y], &[0..1]);
        d[0]
    }

    #[test]
    fn integer_edge_cases_follow_the_lowering() {
        let i = |v: i32| v as u32 as u64;
        assert_eq!(run_bin(BinOp::Div, ScalarTy::I32, i(7), 0), u32::MAX as u64);
        assert_eq!(run_bin(BinOp::Rem, ScalarTy::I32, i(7), 0), 7);
        assert_eq!(
            run_bin(BinOp::Div, ScalarTy::I32, i(i32::MIN), i(-1)),
            i(i32::MIN)
        );
        assert_eq!(run_bin(BinOp::Rem, ScalarTy::I32, i(i32::MIN), i(-1)), 0);
        assert_eq!(run_bin(BinOp::Shl, ScalarTy::U32, 1, 33), 2);
        assert_eq!(run_bin(BinOp::Shr, ScalarTy::I32, i(-8), 1), i(-4));
    }

    #[test]
    fn narrow_integers_wrap_in_their_width() {
        let b = |v: i8| v as u8 as u64;
        assert_eq!(run_bin(BinOp::Add, ScalarTy::I8, b(127), 1), b(-128));
        assert_eq!(run_bin(BinOp::Mul, ScalarTy::U8, 16, 17), 16);
        assert_eq!(run_bin(BinOp::Div, ScalarTy::I8, b(-128), b(-1)), b(-128));
        assert_eq!(run_bin(BinOp::Div, ScalarTy::U16, 9, 0), 0xffff);
        assert_eq!(run_bin(BinOp::Rem, ScalarTy::I16, 9, 0), 9);
        assert_eq!(run_bin(BinOp::Shl, ScalarTy::U8, 1, 9), 2);
        assert_eq!(run_bin(BinOp::Shr, ScalarTy::I8, b(-128), 7), b(-1));
        assert_eq!(run_bin(BinOp::Min, ScalarTy::I16, 0xffff, 1), 0xffff);
        assert_eq!(run_bin(BinOp::Min, ScalarTy::U16, 0xffff, 1), 1);
        let mut d = [0u64; 1];
        cast(
            ScalarTy::F32,
            ScalarTy::I8,
            &mut d,
            &[(-300.5f32).to_bits() as u64],
            &[0..1],
        );
        assert_eq!(d[0], b(-128));
        cast(ScalarTy::I8, ScalarTy::U32, &mut d, &[b(-2)], &[0..1]);
        assert_eq!(d[0], 0xffff_fffe);
        cast(ScalarTy::U64, ScalarTy::U16, &mut d, &[0x1_2345], &[0..1]);
        assert_eq!(d[0], 0x2345);
        let mut r = [0u64; 1];
        bit(BitFn::Clz, ScalarTy::U8, &mut r, &[1], &[0..1]);
        assert_eq!(r[0], 7);
        bit(BitFn::Brev, ScalarTy::U16, &mut r, &[1], &[0..1]);
        assert_eq!(r[0], 0x8000);
    }

    #[test]
    fn float_min_max_ignore_nan_and_order_zeros() {
        let f = |v: f32| v.to_bits() as u64;
        let g = |b: u64| f32::from_bits(b as u32);
        assert_eq!(
            g(run_bin(BinOp::Min, ScalarTy::F32, f(f32::NAN), f(2.0))),
            2.0
        );
        assert_eq!(
            g(run_bin(BinOp::Max, ScalarTy::F32, f(1.0), f(f32::NAN))),
            1.0
        );
        assert!(g(run_bin(BinOp::Min, ScalarTy::F32, f(0.0), f(-0.0))).is_sign_negative());
        assert!(g(run_bin(BinOp::Max, ScalarTy::F32, f(-0.0), f(0.0))).is_sign_positive());
    }

    #[test]
    fn casts_are_rusts() {
        let mut d = [0u64; 1];
        cast(
            ScalarTy::F32,
            ScalarTy::I32,
            &mut d,
            &[f32::NAN.to_bits() as u64],
            &[0..1],
        );
        assert_eq!(d[0], 0);
        cast(
            ScalarTy::F32,
            ScalarTy::U32,
            &mut d,
            &[(-5.0f32).to_bits() as u64],
            &[0..1],
        );
        assert_eq!(d[0], 0);
        cast(
            ScalarTy::F64,
            ScalarTy::Bool,
            &mut d,
            &[f64::NAN.to_bits()],
            &[0..1],
        );
        assert_eq!(d[0], 1);
        cast(
            ScalarTy::I32,
            ScalarTy::I64,
            &mut d,
            &[(-1i32) as u32 as u64],
            &[0..1],
        );
        assert_eq!(d[0], u64::MAX);
    }

    /// Values rich in special cases: zeros of both signs, infinities, NaN, subnormals, the
    /// extremes, ones and values near them.
    fn specials_f32() -> Vec<f32> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            f32::from_bits(0x007f_ffff),
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            1.0 + f32::EPSILON,
            1.0 - f32::EPSILON / 2.0,
            3.0,
            1.0e20,
            -1.0e-20,
        ];
        // A few pseudo-random finite values.
        let mut x = 0x9e37_79b9u32;
        for _ in 0..12 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(f32::from_bits(x & 0xbfff_ffff));
        }
        v
    }

    /// `fma` rounds `a * b + c` once (Rust's `mul_add`); the separate multiply and add of an
    /// uncontracted kernel round twice. Both over every triple of special values, NaN results
    /// compared as NaN.
    #[test]
    fn fused_multiply_add_rounds_once_and_unfused_twice() {
        let vals = specials_f32();
        let same = |x: f32, y: f32| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
        let mut differ = 0;
        for &a in &vals {
            for &b in &vals {
                let n = vals.len();
                let col = |v: f32| vec![v.to_bits() as u64; n];
                let (av, bv) = (col(a), col(b));
                let cv: Vec<u64> = vals.iter().map(|c| c.to_bits() as u64).collect();
                let mut fused = vec![0u64; n];
                math(
                    MathFn::Fma,
                    ScalarTy::F32,
                    &mut fused,
                    &[&av, &bv, &cv],
                    &[0..n],
                );
                let mut prod = vec![0u64; n];
                binary(BinOp::Mul, ScalarTy::F32, &mut prod, &av, &bv, &[0..n]);
                let mut sum = vec![0u64; n];
                binary(BinOp::Add, ScalarTy::F32, &mut sum, &prod, &cv, &[0..n]);
                for (j, &c) in vals.iter().enumerate() {
                    let f = f32::from_bits(fused[j] as u32);
                    let u = f32::from_bits(sum[j] as u32);
                    assert!(same(f, a.mul_add(b, c)), "fma({a:e}, {b:e}, {c:e}) = {f:e}");
                    assert!(same(u, a * b + c), "{a:e} * {b:e} + {c:e} = {u:e}");
                    differ += !same(f, u) as usize;
                }
            }
        }
        assert!(differ > 0, "no triple tells one rounding from two");
        // The textbook case: (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly, 0 rounded twice.
        let a = 1.0f32 + 2f32.powi(-12);
        let c = -(1.0f32 + 2f32.powi(-11));
        let run = |f: &dyn Fn(&mut [u64])| {
            let mut d = [0u64; 1];
            f(&mut d);
            f32::from_bits(d[0] as u32)
        };
        let (ab, cb) = ([a.to_bits() as u64], [c.to_bits() as u64]);
        let fused = run(&|d| math(MathFn::Fma, ScalarTy::F32, d, &[&ab, &ab, &cb], &[0..1]));
        assert_eq!(fused, 2f32.powi(-24));
        let p = run(&|d| binary(BinOp::Mul, ScalarTy::F32, d, &ab, &ab, &[0..1]));
        let pb = [p.to_bits() as u64];
        let unfused = run(&|d| binary(BinOp::Add, ScalarTy::F32, d, &pb, &cb, &[0..1]));
        assert_eq!(unfused, 0.0);
    }

    /// The same for f64, with values that need the fused product's extra bits.
    #[test]
    fn fused_multiply_add_rounds_once_in_f64() {
        let vals: Vec<f64> = specials_f32()
            .into_iter()
            .map(f64::from)
            .chain([
                f64::MAX,
                f64::MIN_POSITIVE,
                f64::from_bits(1),
                1.0 + f64::EPSILON,
                1.0 + 2f64.powi(-27),
                -(1.0 + 2f64.powi(-26)),
            ])
            .collect();
        let n = vals.len();
        let bits: Vec<u64> = vals.iter().map(|v| v.to_bits()).collect();
        let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
        for &a in &vals {
            for &b in &vals {
                let (av, bv) = (vec![a.to_bits(); n], vec![b.to_bits(); n]);
                let (mut fused, mut prod, mut sum) = (vec![0; n], vec![0; n], vec![0; n]);
                math(
                    MathFn::Fma,
                    ScalarTy::F64,
                    &mut fused,
                    &[&av, &bv, &bits],
                    &[0..n],
                );
                binary(BinOp::Mul, ScalarTy::F64, &mut prod, &av, &bv, &[0..n]);
                binary(BinOp::Sub, ScalarTy::F64, &mut sum, &prod, &bits, &[0..n]);
                for (j, &c) in vals.iter().enumerate() {
                    assert!(same(f64::from_bits(fused[j]), a.mul_add(b, c)));
                    assert!(same(f64::from_bits(sum[j]), a * b - c));
                }
            }
        }
    }
}
