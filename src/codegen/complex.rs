//! Complex numbers in kernels (Numba's `complex64`/`complex128`): [`CExpr<T>`] values with
//! `+ - * /`, `abs`, `conj`, `arg`, `exp`, `ln`, `sqrt`, built from real operations (so the
//! simulator and every target run them unchanged), and arrays of `num_complex::Complex<T>`
//! as kernel parameters ([`CSlice`], [`CSliceMut`]) and in `Elementwise`.
//!
//! The formulas are Numba's (CPython's): division by Smith's method scaled by the larger part
//! of the divisor (`(a + bi) / 0` is NaN + NaN i), `abs` as a scaled hypotenuse (no overflow for
//! large parts), `exp` and `ln` from the polar form, `sqrt` by Kahan's method (the principal
//! root, the sign of the imaginary part kept). Special values (infinite or NaN parts) follow
//! these formulas, not C99's Annex G tables. [`host`] has the same formulas on the host, for
//! tests and for reproducing a kernel's results.

use std::ops;

use num_complex::Complex;

use super::array::{DArray, Index, ReadOnly, ReadWrite};
use super::expr::{select, Expr};
use super::scalar::{Float, Signed};

use super::signature::{ArgBuffer, ArgFor, KernelParam};
use crate::error::Result;
use crate::memory::{DeviceSlice, DeviceSliceMut};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The real types complex numbers are made of: `f32` (Numba's `complex64`) and `f64`
/// (`complex128`).
pub trait ComplexPart: Float + Signed + sealed::Sealed {
    /// `0.5`.
    const HALF: Self;
    /// `1`.
    const ONE: Self;
    /// `+inf`.
    const INF: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// `0`.
    const ZERO: Self;
}

macro_rules! complex_part {
    ($($t:ident),*) => {$(
        impl ComplexPart for $t {
            const HALF: $t = 0.5;
            const ONE: $t = 1.0;
            const INF: $t = $t::INFINITY;
            const NAN: $t = $t::NAN;
            const ZERO: $t = 0.0;
        }
    )*};
}
complex_part!(f32, f64);

/// A complex value in a kernel: two real expressions.
#[derive(Clone, Copy)]
pub struct CExpr<T> {
    /// The real part.
    pub re: Expr<T>,
    /// The imaginary part.
    pub im: Expr<T>,
}

impl<T: ComplexPart> CExpr<T> {
    /// `re + im i`.
    #[track_caller]
    pub fn new(re: impl Into<Expr<T>>, im: impl Into<Expr<T>>) -> Self {
        let _at = super::srcloc::at();
        CExpr {
            re: re.into(),
            im: im.into(),
        }
    }

    /// A constant.
    #[track_caller]
    pub fn lit(c: Complex<T>) -> Self {
        let _at = super::srcloc::at();
        CExpr::new(Expr::lit(c.re), Expr::lit(c.im))
    }

    /// The conjugate `re - im i`.
    #[track_caller]
    pub fn conj(self) -> Self {
        let _at = super::srcloc::at();
        CExpr::new(self.re, -self.im)
    }

    /// `re² + im²`.
    #[track_caller]
    pub fn norm_sqr(self) -> Expr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| self.re * self.re + self.im * self.im)
    }

    /// The magnitude `|z|` (Numba's `abs`), as a hypotenuse scaled by the larger part: no
    /// overflow or underflow in between; infinite when a part is, even if the other is NaN.
    #[track_caller]
    pub fn abs(self) -> Expr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| hypot(self.re, self.im))
    }

    /// The argument (phase) in `[-pi, pi]`: `atan2(im, re)`.
    #[track_caller]
    pub fn arg(self) -> Expr<T> {
        let _at = super::srcloc::at();
        self.im.atan2(self.re)
    }

    /// `e^z = e^re (cos im + i sin im)`; a real `z` (im exactly 0) gives `e^re + 0i`, with the
    /// sign of the zero kept.
    #[track_caller]
    pub fn exp(self) -> Self {
        let _at = super::srcloc::at();
        let m = self.re.exp();
        let real = self.im.eq(T::ZERO);
        CExpr::new(
            select(real, m, m * self.im.cos()),
            select(real, self.im, m * self.im.sin()),
        )
    }

    /// The principal natural logarithm: `ln|z| + i arg z`.
    #[track_caller]
    pub fn ln(self) -> Self {
        let _at = super::srcloc::at();
        CExpr::new(self.abs().ln(), self.arg())
    }

    /// The principal square root (Kahan's method): real part non-negative, imaginary part with
    /// `im`'s sign; `sqrt(0 ± 0i) = 0 ± 0i`.
    #[track_caller]
    pub fn sqrt(self) -> Self {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| self.sqrt_uncontracted())
    }

    fn sqrt_uncontracted(self) -> Self {
        let (x, y) = (self.re, self.im);
        let zero = Expr::lit(T::ZERO);
        let half = Expr::lit(T::HALF);
        let t = ((x.abs() + hypot(x, y)) * half).sqrt();
        let both_zero = x.eq(zero).and(y.eq(zero));
        let pos = x.ge(zero);
        let two_t = t + t;
        let re = select(pos, t, y.abs() / two_t);
        let im = select(pos, y / two_t, t.copysign(y));
        CExpr::new(select(both_zero, zero, re), select(both_zero, y, im))
    }
}

/// `sqrt(a² + b²)` scaled by the larger magnitude.
fn hypot<T: ComplexPart>(a: Expr<T>, b: Expr<T>) -> Expr<T> {
    let (a, b) = (a.abs(), b.abs());
    // A NaN part goes into `big`, so that it propagates.
    let a_first = a.ge(b).or(a.ne(a));
    let big = select(a_first, a, b);
    let small = select(a_first, b, a);
    let zero = Expr::lit(T::ZERO);
    let one = Expr::lit(T::ONE);
    let r = small / big;
    let h = big * (one + r * r).sqrt();
    let inf = a.is_infinite().or(b.is_infinite());
    let h = select(big.eq(zero), zero, h);
    select(inf, Expr::lit(T::INF), h)
}

impl<T: ComplexPart> ops::Add for CExpr<T> {
    type Output = CExpr<T>;
    #[track_caller]
    fn add(self, o: CExpr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| CExpr::new(self.re + o.re, self.im + o.im))
    }
}

impl<T: ComplexPart> ops::Sub for CExpr<T> {
    type Output = CExpr<T>;
    #[track_caller]
    fn sub(self, o: CExpr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| CExpr::new(self.re - o.re, self.im - o.im))
    }
}

impl<T: ComplexPart> ops::Mul for CExpr<T> {
    type Output = CExpr<T>;
    #[track_caller]
    fn mul(self, o: CExpr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| {
            CExpr::new(
                self.re * o.re - self.im * o.im,
                self.re * o.im + self.im * o.re,
            )
        })
    }
}

impl<T: ComplexPart> ops::Div for CExpr<T> {
    type Output = CExpr<T>;
    /// Smith's method, as CPython's and Numba's `_Py_c_quot`.
    #[track_caller]
    fn div(self, o: CExpr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        super::builder::without_contraction(|| smith_div(self, o))
    }
}

/// `a / b` by Smith's method (recorded without FMA contraction).
fn smith_div<T: ComplexPart>(a: CExpr<T>, b: CExpr<T>) -> CExpr<T> {
    let (ar, ai, br, bi) = (a.re, a.im, b.re, b.im);
    let zero = Expr::lit(T::ZERO);
    let nan = Expr::lit(T::NAN);
    let by_re = br.abs().ge(bi.abs());
    // Divided through by the real part of the divisor.
    let ratio1 = bi / br;
    let denom1 = br + bi * ratio1;
    let re1 = (ar + ai * ratio1) / denom1;
    let im1 = (ai - ar * ratio1) / denom1;
    // Divided through by the imaginary part.
    let ratio2 = br / bi;
    let denom2 = br * ratio2 + bi;
    let re2 = (ar * ratio2 + ai) / denom2;
    let im2 = (ai * ratio2 - ar) / denom2;
    let zero_div = select(by_re, br.eq(zero), bi.eq(zero));
    CExpr::new(
        select(zero_div, nan, select(by_re, re1, re2)),
        select(zero_div, nan, select(by_re, im1, im2)),
    )
}

impl<T: ComplexPart> ops::Neg for CExpr<T> {
    type Output = CExpr<T>;
    #[track_caller]
    fn neg(self) -> CExpr<T> {
        let _at = super::srcloc::at();
        CExpr::new(-self.re, -self.im)
    }
}

impl<T: ComplexPart> ops::Mul<Expr<T>> for CExpr<T> {
    type Output = CExpr<T>;
    /// Scales both parts.
    #[track_caller]
    fn mul(self, s: Expr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        CExpr::new(self.re * s, self.im * s)
    }
}

impl<T: ComplexPart> From<Expr<T>> for CExpr<T> {
    /// A real value: `x + 0i`.
    #[track_caller]
    fn from(x: Expr<T>) -> CExpr<T> {
        let _at = super::srcloc::at();
        CExpr::new(x, Expr::lit(T::ZERO))
    }
}

/// A read-only array of `Complex<T>` in a kernel (a `&[Complex<T>]` parameter): elements are
/// read as one 2-lane vector load.
#[derive(Clone, Copy)]
pub struct CSlice<T> {
    parts: DArray<T, 1, ReadOnly>,
}

/// A writable array of `Complex<T>` in a kernel (a `&mut [Complex<T>]` parameter).
#[derive(Clone, Copy)]
pub struct CSliceMut<T> {
    parts: DArray<T, 1, ReadWrite>,
}

impl<T: ComplexPart> CSlice<T> {
    /// Element `i`.
    #[track_caller]
    pub fn at(&self, i: impl Index) -> CExpr<T> {
        let _at = super::srcloc::at();
        let [re, im] = self.parts.load_lanes::<2>(i.to_index());
        CExpr { re, im }
    }
    /// The number of elements.
    #[track_caller]
    pub fn len(&self) -> Expr<u64> {
        let _at = super::srcloc::at();
        self.parts.len() / 2u64
    }
}

impl<T: ComplexPart> CSliceMut<T> {
    /// Element `i`.
    #[track_caller]
    pub fn at(&self, i: impl Index) -> CExpr<T> {
        let _at = super::srcloc::at();
        let [re, im] = self.parts.load_lanes::<2>(i.to_index());
        CExpr { re, im }
    }
    /// Writes element `i`.
    #[track_caller]
    pub fn set(&self, i: impl Index, v: CExpr<T>) {
        let _at = super::srcloc::at();
        self.parts.store_lanes::<2>(i.to_index(), [v.re, v.im]);
    }
    /// The number of elements.
    #[track_caller]
    pub fn len(&self) -> Expr<u64> {
        let _at = super::srcloc::at();
        self.parts.len() / 2u64
    }
}

macro_rules! complex_params {
    ($($t:ty),*) => {$(
        impl KernelParam for &[Complex<$t>] {
            type Handle = CSlice<$t>;
            fn declare() -> CSlice<$t> {
                CSlice { parts: <&[$t] as KernelParam>::declare() }
            }
        }
        impl KernelParam for &mut [Complex<$t>] {
            type Handle = CSliceMut<$t>;
            fn declare() -> CSliceMut<$t> {
                CSliceMut { parts: <&mut [$t] as KernelParam>::declare() }
            }
        }
        impl<X: DeviceSlice<Complex<$t>, Dim = ndarray::Ix1> + ?Sized> ArgFor<&[Complex<$t>]> for &X {
            #[inline]
            fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                // The kernel sees the real and imaginary parts as one array of twice the length.
                buf.push_flat(self.context(), self.device_ptr(), 2 * self.len())
            }
        }
        impl<X: DeviceSliceMut<Complex<$t>, Dim = ndarray::Ix1> + ?Sized> ArgFor<&mut [Complex<$t>]> for &mut X {
            #[inline]
            fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.push_flat(self.context(), self.device_ptr(), 2 * self.len())
            }
        }
    )*};
}
complex_params!(f32, f64);

/// The kernels' formulas on the host (the reference model of the tests).
pub mod host {
    use num_complex::Complex;

    macro_rules! host_fns {
        ($m:ident, $t:ty) => {
            /// The formulas for one float type.
            pub mod $m {
                use super::Complex;
                type C = Complex<$t>;

                /// [`CExpr::abs`](crate::codegen::CExpr::abs).
                pub fn abs(z: C) -> $t {
                    hypot(z.re, z.im)
                }

                fn hypot(a: $t, b: $t) -> $t {
                    let (a, b) = (a.abs(), b.abs());
                    let (big, small) = if a >= b || a.is_nan() { (a, b) } else { (b, a) };
                    let h = big * (1.0 + (small / big) * (small / big)).sqrt();
                    if a.is_infinite() || b.is_infinite() {
                        <$t>::INFINITY
                    } else if big == 0.0 {
                        0.0
                    } else {
                        h
                    }
                }

                /// Complex multiplication (the schoolbook formula).
                pub fn mul(a: C, b: C) -> C {
                    C::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
                }

                /// [`CExpr`](crate::codegen::CExpr)'s division (Smith's method).
                pub fn div(a: C, b: C) -> C {
                    let (ar, ai, br, bi) = (a.re, a.im, b.re, b.im);
                    if br.abs() >= bi.abs() {
                        if br == 0.0 {
                            return C::new(<$t>::NAN, <$t>::NAN);
                        }
                        let ratio = bi / br;
                        let denom = br + bi * ratio;
                        C::new((ar + ai * ratio) / denom, (ai - ar * ratio) / denom)
                    } else {
                        if bi == 0.0 {
                            return C::new(<$t>::NAN, <$t>::NAN);
                        }
                        let ratio = br / bi;
                        let denom = br * ratio + bi;
                        C::new((ar * ratio + ai) / denom, (ai * ratio - ar) / denom)
                    }
                }

                /// [`CExpr::exp`](crate::codegen::CExpr::exp).
                pub fn exp(z: C) -> C {
                    let m = z.re.exp();
                    if z.im == 0.0 {
                        C::new(m, z.im)
                    } else {
                        C::new(m * z.im.cos(), m * z.im.sin())
                    }
                }

                /// [`CExpr::ln`](crate::codegen::CExpr::ln).
                pub fn ln(z: C) -> C {
                    C::new(abs(z).ln(), z.im.atan2(z.re))
                }

                /// [`CExpr::sqrt`](crate::codegen::CExpr::sqrt).
                pub fn sqrt(z: C) -> C {
                    let (x, y) = (z.re, z.im);
                    if x == 0.0 && y == 0.0 {
                        return C::new(0.0, y);
                    }
                    let t = ((x.abs() + hypot(x, y)) * 0.5).sqrt();
                    if x >= 0.0 {
                        C::new(t, y / (t + t))
                    } else {
                        C::new(y.abs() / (t + t), t.copysign(y))
                    }
                }
            }
        };
    }
    host_fns!(f32, f32);
    host_fns!(f64, f64);
}
