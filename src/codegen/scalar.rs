//! Element types of kernels: a closed set of Rust types behind one trait.

pub use crate::ir::ScalarTy;
use crate::memory::DeviceCopy;
use crate::module::KernelArg;

mod sealed {
    pub trait Sealed {}
}

/// A type kernels compute with: `f32`, `f64`, `half::f16`, `half::bf16`, `i8`, `u8`, `i16`,
/// `u16`, `i32`, `u32`, `i64`, `u64`, `bool`, and the 8-bit float storage types
/// [`F8E4M3`](crate::F8E4M3) and [`F8E5M2`](crate::F8E5M2).
///
/// The 16-bit floats [`half::f16`] and [`half::bf16`] (re-exported as `cudajit::f16` and
/// `cudajit::bf16`) are floats like `f32`: `+ - * /` correctly rounded (native `f16`
/// instructions on every supported target, native `bf16` ones on sm_90, through f32 elsewhere,
/// which gives the same correctly rounded results), `%`, min/max and comparisons with f32's
/// semantics, `cast` to and from every type with correct rounding (round to nearest, ties to
/// even; to integers toward zero, saturating, NaN gives 0), the math functions of [`Float`]
/// (computed in f32 and rounded once to the half type; `mul_add` fused, rounded once),
/// shuffles, `atomic_add` and the other atomics of [`Num`] types.
///
/// The narrow integers `i8`, `u8`, `i16`, `u16` are array elements, scalar parameters and
/// values like the others: loads and stores of their own size, arithmetic in their own width
/// with the semantics of the other integers (wrapping `+ - *`, division by zero giving all-ones
/// bits and a remainder of the dividend, `MIN / -1 == MIN`, shift amounts modulo the width),
/// comparisons, `cast` to and from every scalar type (Rust's `as`: a float saturates to the
/// narrow range, NaN gives 0), `bitcast` to the other type of the same size, shuffles (through
/// 32 bits), bit operations, and every atomic of [`Int`] types (each a compare-and-swap loop on
/// the aligned 32-bit word that holds the element; neighbouring elements are left intact).
/// What a type does not have is a compile error: negating an unsigned value, and the wrapping
/// counters, which are `u32`/`u64` only:
///
/// ```compile_fail
/// # use cudajit::codegen::Expr;
/// fn neg(x: Expr<u8>) -> Expr<u8> {
///     -x // u8 is not `Signed`
/// }
/// ```
///
/// ```compile_fail
/// # use cudajit::codegen::{Expr, SliceMut};
/// fn count(a: SliceMut<u16>) -> Expr<u16> {
///     a.atomic_inc(0u32, 10u16) // atomic_inc needs `AtomicCounter`: u32 or u64
/// }
/// ```
///
/// and a `bitcast` between sizes is an error when the kernel is built.
///
/// The 8-bit floats [`F8E4M3`](crate::F8E4M3) and [`F8E5M2`](crate::F8E5M2) are storage types
/// (as in torch, whose `float8_e4m3fn` / `float8_e5m2` tensors they hold): array elements, scalar
/// parameters, `select` and variables, comparisons (of their values, as f32), `bitcast` to and
/// from `u8`/`i8`, and `cast` to and from every scalar type (compute capability 8.9 or later:
/// PTX's `cvt` to and from `e4m3x2`/`e5m2x2`). A cast to fp8 rounds once to nearest, ties to
/// even, saturating at the largest finite value (±∞ too; NaN stays NaN), as
/// [`F8E4M3::from_f64`](crate::F8E4M3::from_f64); a cast from fp8 is its exact value, then
/// Rust's `as` from f32. They have no arithmetic (cast to f16/f32 first), and the tensor cores
/// read them ([`MmaInput`](crate::codegen::MmaInput), [`WgmmaInput`](crate::codegen::WgmmaInput)):
///
/// ```compile_fail
/// # use cudajit::codegen::Expr;
/// fn add(x: Expr<cudajit::F8E4M3>) -> Expr<cudajit::F8E4M3> {
///     x + x // F8E4M3 is not `Num`: cast to f32, add, cast back
/// }
/// ```
pub trait Scalar: DeviceCopy + KernelArg + sealed::Sealed + PartialEq + std::fmt::Debug {
    /// The type's tag in the kernel IR.
    const TY: ScalarTy;
    /// The value's bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value whose bits are the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

/// Scalars with arithmetic (`+ - * / %`, min/max): every scalar but `bool`.
pub trait Num: Scalar {}
/// Integer scalars: bit operations and shifts.
pub trait Int: Num {}
/// Floating-point scalars (`f32`, `f64`, `half::f16`, `half::bf16`): the math functions (on the
/// 16-bit floats computed in f32 and rounded once; `mul_add` fused).
pub trait Float: Num {}
/// Scalars that can be negated: signed integers and floats.
pub trait Signed: Num {}

macro_rules! scalar {
    ($t:ty, $tag:ident, $bits:expr, $from:expr, [$($tr:ident),*]) => {
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const TY: ScalarTy = ScalarTy::$tag;
            #[inline]
            fn to_bits(self) -> u64 {
                let f: fn($t) -> u64 = $bits;
                f(self)
            }
            #[inline]
            fn from_bits(bits: u64) -> $t {
                let f: fn(u64) -> $t = $from;
                f(bits)
            }
        }
        $(impl $tr for $t {})*
    };
}
scalar!(bool, Bool, |v| v as u64, |b| b & 1 != 0, []);
scalar!(
    i8,
    I8,
    |v| v as u8 as u64,
    |b| b as u8 as i8,
    [Num, Int, Signed]
);
scalar!(u8, U8, |v| v as u64, |b| b as u8, [Num, Int]);
scalar!(
    i16,
    I16,
    |v| v as u16 as u64,
    |b| b as u16 as i16,
    [Num, Int, Signed]
);
scalar!(u16, U16, |v| v as u64, |b| b as u16, [Num, Int]);
scalar!(
    i32,
    I32,
    |v| v as u32 as u64,
    |b| b as u32 as i32,
    [Num, Int, Signed]
);
scalar!(u32, U32, |v| v as u64, |b| b as u32, [Num, Int]);
scalar!(i64, I64, |v| v as u64, |b| b as i64, [Num, Int, Signed]);
scalar!(u64, U64, |v| v, |b| b, [Num, Int]);
scalar!(
    f32,
    F32,
    |v| v.to_bits() as u64,
    |b| f32::from_bits(b as u32),
    [Num, Float, Signed]
);
scalar!(
    f64,
    F64,
    |v| v.to_bits(),
    f64::from_bits,
    [Num, Float, Signed]
);
scalar!(
    half::f16,
    F16,
    |v| v.to_bits() as u64,
    |b| half::f16::from_bits(b as u16),
    [Num, Float, Signed]
);
scalar!(
    half::bf16,
    BF16,
    |v| v.to_bits() as u64,
    |b| half::bf16::from_bits(b as u16),
    [Num, Float, Signed]
);
scalar!(
    crate::ir::F8E4M3,
    F8E4M3,
    |v| v.to_bits() as u64,
    |b| crate::ir::F8E4M3::from_bits(b as u8),
    []
);
scalar!(
    crate::ir::F8E5M2,
    F8E5M2,
    |v| v.to_bits() as u64,
    |b| crate::ir::F8E5M2::from_bits(b as u8),
    []
);
