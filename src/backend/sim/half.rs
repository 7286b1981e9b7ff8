//! The simulator's 16-bit floats (`f16`, `bf16`): lane encoding, min/max, conversions with
//! one correct rounding (round to nearest, ties to even) and the math functions.
//!
//! `+ - * /` and `%` are the `half` crate's operators, which compute in f32 and round once:
//! correctly rounded for both types, since f32's 24 significant bits are at least twice the
//! half type's (11 or 8) plus two, so that rounding twice is the same as once (Figueroa's
//! condition for + - * / and sqrt). Conversions from f64 and from 64-bit integers go through f32
//! with *round to odd* (the dropped bits ORed into the last kept one), after which the one
//! round to nearest is correct; the `half` crate's own `from_f64` drops the low 32 bits of
//! the f64 before rounding, which is wrong next to a tie, so it is not used.

use half::{bf16, f16};

use super::eval::{Conv, Lane, MinMax, Spans};
use crate::ir::MathFn;
use crate::ir::ScalarTy;

impl Lane for f16 {
    #[inline(always)]
    fn get(bits: u64) -> f16 {
        f16::from_bits(bits as u16)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Lane for bf16 {
    #[inline(always)]
    fn get(bits: u64) -> bf16 {
        bf16::from_bits(bits as u16)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits() as u64
    }
}
impl MinMax for f16 {
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn sign_bit(self) -> bool {
        self.is_sign_negative()
    }
}
impl MinMax for bf16 {
    fn is_nan_(self) -> bool {
        self.is_nan()
    }
    fn sign_bit(self) -> bool {
        self.is_sign_negative()
    }
}

/// `x` rounded to f32 with round to odd: exact values are kept, inexact ones truncated toward
/// zero with the last bit set.
pub(crate) fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if x.is_nan() || r as f64 == x {
        return r;
    }
    let mut bits = r.to_bits();
    if (r as f64).abs() > x.abs() {
        bits -= 1; // one step toward zero (also from infinity to MAX)
    }
    f32::from_bits(bits | 1)
}

/// An integer (`neg` and its magnitude `m`) rounded to f32 with round to odd.
pub(crate) fn int_to_f32_odd(neg: bool, m: u64) -> f32 {
    let mag = if m < 1 << 24 {
        m as f32
    } else {
        let shift = 64 - m.leading_zeros() - 24;
        let t = (m >> shift) | ((m & ((1u64 << shift) - 1) != 0) as u64);
        // `t` has 24 bits: exact in f32, and so is the scaling by a power of two.
        t as f32 * f32::from_bits((127 + shift) << 23)
    };
    if neg {
        -mag
    } else {
        mag
    }
}

/// `a * b + c` rounded to f32 with round to odd (`a`, `b`, `c` half values: their product is
/// exact in f64, and the sum's rounding error is found by Knuth's two-sum).
fn fma_odd(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let s = p + c as f64;
    if !s.is_finite() {
        return s as f32;
    }
    let bb = s - p;
    let err = (p - (s - bb)) + (c as f64 - bb);
    if err == 0.0 {
        return f64_to_f32_odd(s);
    }
    // The exact sum is s + err: truncate s toward zero if it was rounded away, then set the
    // last bit (round to odd in f64), and round to odd again to f32 (odd twice is odd once).
    let mut bits = s.to_bits();
    if (err < 0.0) != (s < 0.0) && s != 0.0 {
        bits -= 1;
    }
    f64_to_f32_odd(f64::from_bits(bits | 1))
}

/// Rounding an (odd-rounded) f32 to each half type.
trait Half: Lane + Copy {
    fn from32(x: f32) -> Self;
    fn to32(self) -> f32;
}
impl Half for f16 {
    fn from32(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn to32(self) -> f32 {
        self.to_f32()
    }
}
impl Half for bf16 {
    fn from32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn to32(self) -> f32 {
        self.to_f32()
    }
}

/// A source type's value rounded to f32 with round to odd (exact for the 16-bit floats).
pub(super) trait ToOdd32: Copy {
    fn odd32(self) -> f32;
}
macro_rules! odd_int {
    ($($t:ty),*) => {$(
        impl ToOdd32 for $t {
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn odd32(self) -> f32 {
                int_to_f32_odd(self < 0, (self as i128).unsigned_abs() as u64)
            }
        }
    )*};
}
odd_int!(i8, u8, i16, u16, i32, u32, i64, u64);
impl ToOdd32 for f32 {
    fn odd32(self) -> f32 {
        self
    }
}
impl ToOdd32 for f64 {
    fn odd32(self) -> f32 {
        f64_to_f32_odd(self)
    }
}
impl ToOdd32 for bool {
    fn odd32(self) -> f32 {
        self as u8 as f32
    }
}
impl ToOdd32 for f16 {
    fn odd32(self) -> f32 {
        self.to_f32()
    }
}
impl ToOdd32 for bf16 {
    fn odd32(self) -> f32 {
        self.to_f32()
    }
}

/// `x as f16` with one rounding to nearest, ties to even.
pub(crate) fn to_f16(x: impl ToOdd32) -> f16 {
    f16::from_f32(x.odd32())
}
/// `x as bf16` with one rounding to nearest, ties to even.
pub(crate) fn to_bf16(x: impl ToOdd32) -> bf16 {
    bf16::from_f32(x.odd32())
}

macro_rules! conv_half {
    ($($t:ty),*) => {$(
        impl Conv for $t {
            #[inline(always)] fn f32_(self) -> f32 { self.to_f32() }
            #[inline(always)] fn f64_(self) -> f64 { self.to_f64() }
            #[inline(always)] fn i8_(self) -> i8 { self.to_f32() as i8 }
            #[inline(always)] fn u8_(self) -> u8 { self.to_f32() as u8 }
            #[inline(always)] fn i16_(self) -> i16 { self.to_f32() as i16 }
            #[inline(always)] fn u16_(self) -> u16 { self.to_f32() as u16 }
            #[inline(always)] fn i32_(self) -> i32 { self.to_f32() as i32 }
            #[inline(always)] fn u32_(self) -> u32 { self.to_f32() as u32 }
            #[inline(always)] fn i64_(self) -> i64 { self.to_f32() as i64 }
            #[inline(always)] fn u64_(self) -> u64 { self.to_f32() as u64 }
            #[inline(always)] fn bool_(self) -> bool { self.to_f32() != 0.0 }
            #[inline(always)] fn f16_(self) -> f16 { to_f16(self) }
            #[inline(always)] fn bf16_(self) -> bf16 { to_bf16(self) }
        }
    )*};
}
conv_half!(f16, bf16);

/// A math function on half arguments of type `arg`: computed in f32 (as the GPU does) and
/// rounded once to the half type; `mul_add` is fused and rounded once.
pub(super) fn math(f: MathFn, arg: ScalarTy, d: &mut [u64], args: &[&[u64]], sp: Spans) {
    if arg == ScalarTy::F16 {
        go::<f16>(f, d, args, sp)
    } else {
        go::<bf16>(f, d, args, sp)
    }
}

fn go<H: Half>(f: MathFn, d: &mut [u64], args: &[&[u64]], sp: Spans) {
    let n = sp.iter().map(|r| r.end).max().unwrap_or(0);
    if f == MathFn::Fma {
        let (a, b, c) = (args[0], args[1], args[2]);
        for r in sp {
            for i in r.clone() {
                let v = fma_odd(
                    H::get(a[i]).to32(),
                    H::get(b[i]).to32(),
                    H::get(c[i]).to32(),
                );
                d[i] = H::from32(v).put();
            }
        }
        return;
    }
    let wide: Vec<Vec<u64>> = args
        .iter()
        .map(|a| {
            let mut w = vec![0u64; n];
            for r in sp {
                for i in r.clone() {
                    w[i] = H::get(a[i]).to32().put();
                }
            }
            w
        })
        .collect();
    let refs: Vec<&[u64]> = wide.iter().map(|w| &w[..]).collect();
    super::eval::math(f, ScalarTy::F32, d, &refs, sp);
    if matches!(f, MathFn::IsNan | MathFn::IsInfinite) {
        return;
    }
    for r in sp {
        for i in r.clone() {
            d[i] = H::from32(f32::get(d[i])).put();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_once() {
        // Just above a tie of bf16 (1 + 2^-8), by less than f32 keeps: rounds up.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(to_bf16(x), bf16::from_f32(1.0 + 2f32.powi(-7)));
        // The `half` crate's own conversion rounds this to even (down).
        assert_eq!(bf16::from_f64(x), bf16::ONE);
        let y = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(to_f16(y), f16::from_f32(1.0 + 2f32.powi(-10)));
        // An exact tie goes to even.
        assert_eq!(to_f16(1.0 + 2f64.powi(-11)), f16::ONE);
        // 2^24 + 2^16 + 1: f32 alone would round to the tie 2^24 + 2^16 and then to 2^24.
        let n: i64 = (1 << 24) + (1 << 16) + 1;
        assert_eq!(to_bf16(n).to_f64(), ((1 << 24) + (1 << 17)) as f64);
        assert_eq!(to_bf16(u64::MAX).to_f64(), 2f64.powi(64));
        assert_eq!(to_bf16(i64::MIN).to_f64(), -(2f64.powi(63)));
        assert!(to_f16(100_000i32).is_infinite());
        assert!(to_bf16(f64::NAN).is_nan());
        assert_eq!(to_bf16(1e300f64), bf16::INFINITY);
        assert_eq!(to_bf16(-1e-300f64).to_bits(), 0x8000);
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-7) * 1.5 = 1.5 + 2^-7 + 2^-8 is a bf16 tie (between 1.5078125 and 1.515625).
        let (a, b) = (1.0078125f32, 1.5f32);
        let fma = |c: f32| bf16::from_f32(fma_odd(a, b, c)).to_f32();
        assert_eq!(fma(0.0), 1.515625); // the tie, to even
        assert_eq!(fma(2f32.powi(-30)), 1.515625);
        // Just below the tie: a fused f32 fma rounded to bf16 would give 1.515625.
        assert_eq!(fma(-(2f32.powi(-30))), 1.5078125);
        assert_eq!(
            bf16::from_f32(a.mul_add(b, -(2f32.powi(-30)))).to_f32(),
            1.515625
        );
        // Signed zeros and infinities.
        assert_eq!(fma_odd(-0.0, 1.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(fma_odd(0.0, -1.0, 0.0).to_bits(), 0);
        assert!(fma_odd(f32::INFINITY, 0.0, 1.0).is_nan());
        assert_eq!(fma_odd(f32::INFINITY, 1.0, 1.0), f32::INFINITY);
    }
}
