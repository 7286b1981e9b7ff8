//! cudajit's own math implementations, written once against [`Ops`]: the lowering runs them
//! with an LLVM-emitting `Ops` (one internal function per math function and type), the tests
//! run the same code with a host `Ops` on `f32`/`f64` to measure accuracy without a GPU (the
//! operations are IEEE operations with the same rounding on both).
//!
//! Everything is branch-free (`sel` evaluates both sides) and uses only add, sub, mul, div,
//! fma, sqrt, rint/floor/trunc, comparisons and bit operations, so what the host computes is
//! what the GPU computes (without fastmath; with it, f32 denormals flush). Polynomials are
//! near-minimax Chebyshev fits made with mpmath (docs/MATH.md has the generator).

// The constants are generated hi/lo splits (some equal std's consts, written out next to
// their f32 halves); `from_bits` mirrors the float method it emits.
#![allow(
    clippy::excessive_precision,
    clippy::unreadable_literal,
    clippy::approx_constant,
    clippy::wrong_self_convention
)]

mod consts;
use consts::*;

/// The operations the implementations are written with. `F` is the float type (f32 or f64),
/// `I` the integer of the same width, `B` a boolean.
pub(crate) trait Ops {
    type F: Copy;
    type I: Copy;
    type B: Copy;
    /// Whether `F` is f64.
    fn double(&self) -> bool;
    /// A constant, rounded to `F`.
    fn c(&self, v: f64) -> Self::F;
    /// An integer constant.
    fn ci(&self, v: i64) -> Self::I;
    fn add(&self, a: Self::F, b: Self::F) -> Self::F;
    fn sub(&self, a: Self::F, b: Self::F) -> Self::F;
    fn mul(&self, a: Self::F, b: Self::F) -> Self::F;
    fn div(&self, a: Self::F, b: Self::F) -> Self::F;
    fn neg(&self, a: Self::F) -> Self::F;
    fn fma(&self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn sqrt(&self, a: Self::F) -> Self::F;
    fn abs(&self, a: Self::F) -> Self::F;
    /// Round to nearest, ties to even.
    fn rint(&self, a: Self::F) -> Self::F;
    fn floor(&self, a: Self::F) -> Self::F;
    fn copysign(&self, a: Self::F, sign: Self::F) -> Self::F;
    /// IEEE minNum / maxNum (a NaN operand is ignored).
    fn fmin(&self, a: Self::F, b: Self::F) -> Self::F;
    fn fmax(&self, a: Self::F, b: Self::F) -> Self::F;
    fn lt(&self, a: Self::F, b: Self::F) -> Self::B;
    fn le(&self, a: Self::F, b: Self::F) -> Self::B;
    fn gt(&self, a: Self::F, b: Self::F) -> Self::B;
    fn eq(&self, a: Self::F, b: Self::F) -> Self::B;
    fn is_nan(&self, a: Self::F) -> Self::B;
    fn sel(&self, c: Self::B, a: Self::F, b: Self::F) -> Self::F;
    fn seli(&self, c: Self::B, a: Self::I, b: Self::I) -> Self::I;
    fn bits(&self, a: Self::F) -> Self::I;
    fn from_bits(&self, a: Self::I) -> Self::F;
    /// Float to integer, toward zero, saturating (NaN gives 0).
    fn to_int(&self, a: Self::F) -> Self::I;
    fn to_f(&self, a: Self::I) -> Self::F;
    fn iadd(&self, a: Self::I, b: Self::I) -> Self::I;
    fn isub(&self, a: Self::I, b: Self::I) -> Self::I;
    fn iand(&self, a: Self::I, b: Self::I) -> Self::I;
    fn ior(&self, a: Self::I, b: Self::I) -> Self::I;
    fn ishl(&self, a: Self::I, n: u32) -> Self::I;
    /// Arithmetic shift right.
    fn iasr(&self, a: Self::I, n: u32) -> Self::I;
    fn ilt(&self, a: Self::I, b: Self::I) -> Self::B;
    fn ieq(&self, a: Self::I, b: Self::I) -> Self::B;
    fn and(&self, a: Self::B, b: Self::B) -> Self::B;
    fn or(&self, a: Self::B, b: Self::B) -> Self::B;
    fn not(&self, a: Self::B) -> Self::B;
}

/// The functions implemented here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Own {
    Exp,
    Exp2,
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
    Cbrt,
    Rsqrt,
}

/// Evaluates `f` (`y` is the second argument of pow and atan2, ignored otherwise).
pub(crate) fn eval<O: Ops>(o: &O, f: Own, x: O::F, y: O::F) -> O::F {
    match f {
        Own::Exp => exp(o, x),
        Own::Exp2 => exp2(o, x),
        Own::ExpM1 => expm1(o, x),
        Own::Ln => ln(o, x),
        Own::Log2 => log2(o, x),
        Own::Log10 => log10(o, x),
        Own::Ln1p => ln1p(o, x),
        Own::Pow => pow(o, x, y),
        Own::Sin => sincos(o, x, Trig::Sin),
        Own::Cos => sincos(o, x, Trig::Cos),
        Own::Tan => sincos(o, x, Trig::Tan),
        Own::Asin => asin(o, x),
        Own::Acos => acos(o, x),
        Own::Atan => atan2(o, x, o.c(1.0), true),
        Own::Atan2 => atan2(o, x, y, false),
        Own::Sinh => sinhcosh(o, x, true),
        Own::Cosh => sinhcosh(o, x, false),
        Own::Tanh => tanh(o, x),
        Own::Erf => erf(o, x),
        Own::Cbrt => cbrt(o, x),
        Own::Rsqrt => rsqrt(o, x),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// A constant given per type.
fn k2<O: Ops>(o: &O, v: [f64; 2]) -> O::F {
    o.c(if o.double() { v[1] } else { v[0] })
}

/// `f32` or `f64` value of a pair.
fn pick<O: Ops>(o: &O, f32v: f64, f64v: f64) -> O::F {
    o.c(if o.double() { f64v } else { f32v })
}

/// Mantissa bits and exponent bias.
fn fmt<O: Ops>(o: &O) -> (u32, i64) {
    if o.double() {
        (52, 1023)
    } else {
        (23, 127)
    }
}

/// Horner's rule with fma, coefficients lowest first.
fn poly<O: Ops>(o: &O, x: O::F, cs: &[f64]) -> O::F {
    let mut acc = o.c(cs[cs.len() - 1]);
    for &c in cs[..cs.len() - 1].iter().rev() {
        acc = o.fma(acc, x, o.c(c));
    }
    acc
}

/// Coefficient set for the type.
fn coefs<'a>(o: &impl Ops, f32c: &'a [f64], f64c: &'a [f64]) -> &'a [f64] {
    if o.double() {
        f64c
    } else {
        f32c
    }
}

/// `a + b` exactly as `(s, e)` when `|a| >= |b|` (or `a` is 0).
fn fast2sum<O: Ops>(o: &O, a: O::F, b: O::F) -> (O::F, O::F) {
    let s = o.add(a, b);
    let e = o.add(o.sub(a, s), b);
    (s, e)
}

/// `a + b` exactly as `(s, e)`.
fn two_sum<O: Ops>(o: &O, a: O::F, b: O::F) -> (O::F, O::F) {
    let s = o.add(a, b);
    let bb = o.sub(s, a);
    let e = o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb));
    (s, e)
}

/// `2^k` for an integer `k` in the normal exponent range.
fn pow2i<O: Ops>(o: &O, k: O::I) -> O::F {
    let (mb, bias) = fmt(o);
    o.from_bits(o.ishl(o.iadd(k, o.ci(bias)), mb))
}

/// `m * 2^k` for `k` up to twice the exponent range (two exact steps, one final rounding).
fn scale<O: Ops>(o: &O, m: O::F, k: O::I) -> O::F {
    let k1 = o.iasr(k, 1);
    let k2 = o.isub(k, k1);
    o.mul(o.mul(m, pow2i(o, k1)), pow2i(o, k2))
}

/// NaN in, NaN out.
fn keep_nan<O: Ops>(o: &O, x: O::F, r: O::F) -> O::F {
    o.sel(o.is_nan(x), x, r)
}

/// `x` itself below `tiny` in magnitude (keeps -0 and subnormals exact).
fn tiny_id<O: Ops>(o: &O, x: O::F, tiny: (f64, f64), r: O::F) -> O::F {
    o.sel(o.lt(o.abs(x), pick(o, tiny.0, tiny.1)), x, r)
}

fn inf<O: Ops>(o: &O) -> O::F {
    o.c(f64::INFINITY)
}

// ---------------------------------------------------------------------------------------------
// exp family.

/// `e^(r_hi + r_lo) - 1 - r_hi` split as `(t, t_err)` with `t = r_hi + q` for |r| <= ln2/2.
fn expm1_core<O: Ops>(o: &O, r: O::F, c: O::F) -> (O::F, O::F) {
    let p = poly(o, r, coefs(o, &EM1_F32, &EM1_F64));
    let z = o.mul(r, r);
    // e^(r+c) - 1 = em1(r) + c (1 + em1(r)), em1(r) = r + r^2 P(r)
    let corr = o.fma(c, o.fma(z, p, r), c);
    let q = o.fma(z, p, corr);
    fast2sum(o, r, q)
}

/// `e^x` reduction: `x = k ln2 + r_hi + r_lo`, `|r| <= ln2/2`; `k` as a float.
fn exp_reduce<O: Ops>(o: &O, x: O::F) -> (O::F, O::F, O::F) {
    let k = o.rint(o.mul(x, k2(o, Consts::LOG2E_HI)));
    let r1 = o.fma(o.neg(k), k2(o, Consts::LN2_HI), x); // exact
    let w = o.mul(k, k2(o, Consts::LN2_LO));
    let (r, e) = two_sum(o, r1, o.neg(w));
    (k, r, e)
}

/// `e^(r_hi + r_lo)` as `(m_hi, m_lo)`, |r| <= ln2/2.
fn exp_mant<O: Ops>(o: &O, r: O::F, c: O::F) -> (O::F, O::F) {
    let (t, te) = expm1_core(o, r, c);
    let one = o.c(1.0);
    let m = o.add(one, t);
    let lo = o.add(o.add(o.sub(one, m), t), te);
    (m, lo)
}

/// `2^k e^(r_hi + r_lo)`.
fn exp_core<O: Ops>(o: &O, k: O::F, r: O::F, c: O::F) -> O::F {
    let (m, lo) = exp_mant(o, r, c);
    scale(o, o.add(m, lo), o.to_int(k))
}

/// Clamp limits of the exp arguments: beyond them the result is 0 or inf anyway.
fn exp_limits<O: Ops>(o: &O) -> (O::F, O::F) {
    (pick(o, -104.0, -746.0), pick(o, 89.0, 710.0))
}

fn exp<O: Ops>(o: &O, x: O::F) -> O::F {
    let (lo, hi) = exp_limits(o);
    let xc = o.fmin(o.fmax(x, lo), hi);
    let (k, r, c) = exp_reduce(o, xc);
    keep_nan(o, x, exp_core(o, k, r, c))
}

fn exp2<O: Ops>(o: &O, x: O::F) -> O::F {
    let xc = o.fmin(o.fmax(x, pick(o, -152.0, -1076.0)), pick(o, 129.0, 1025.0));
    let k = o.rint(xc);
    let r = o.sub(xc, k); // exact
    let l_hi = k2(o, Consts::LN2_HI);
    let t = o.mul(r, l_hi);
    let te = o.fma(r, k2(o, Consts::LN2_LO), o.fma(r, l_hi, o.neg(t)));
    keep_nan(o, x, exp_core(o, k, t, te))
}

fn expm1<O: Ops>(o: &O, x: O::F) -> O::F {
    let big = pick(o, 80.0, 700.0);
    let xc = o.fmin(o.fmax(x, pick(o, -40.0, -80.0)), big);
    let (k, r, c) = exp_reduce(o, xc);
    let (m, ml) = exp_mant(o, r, c);
    let s = pow2i(o, o.to_int(k));
    // 2^k (m + ml) - 1: s m - 1 rounded once, plus the small s ml.
    let res = o.add(o.fma(s, m, o.c(-1.0)), o.mul(s, ml));
    let res = o.sel(o.gt(x, big), exp(o, x), res);
    keep_nan(o, x, tiny_id(o, x, (3e-8, 5e-17), res))
}

// ---------------------------------------------------------------------------------------------
// log family.

/// `ln(x) = k ln2 + hi + lo` for positive finite x (hi + lo to about 2^-66 relative); other
/// inputs give garbage that the callers replace.
fn log_dw<O: Ops>(o: &O, x: O::F) -> (O::F, O::F, O::F) {
    let (mb, bias) = fmt(o);
    let sub_shift = if o.double() { 60.0 } else { 30.0 };
    let tiny = o.lt(x, pick(o, f32::MIN_POSITIVE as f64, f64::MIN_POSITIVE));
    let xs = o.sel(tiny, o.mul(x, o.c(2f64.powf(sub_shift))), x);
    let b = o.bits(xs);
    let e = o.isub(o.iasr(b, mb), o.ci(bias));
    let mask = (1i64 << mb) - 1;
    let m = o.from_bits(o.ior(o.iand(b, o.ci(mask)), o.ci(bias << mb)));
    let big = o.gt(m, k2(o, Consts::SQRT2));
    let m = o.sel(big, o.mul(m, o.c(0.5)), m);
    let e = o.iadd(e, o.seli(big, o.ci(1), o.ci(0)));
    let k = o.sub(o.to_f(e), o.sel(tiny, o.c(sub_shift), o.c(0.0)));
    let one = o.c(1.0);
    let two = o.c(2.0);
    let f = o.sub(m, one); // exact
    let (d, dl) = fast2sum(o, two, f);
    // s = f / (2 + f) as s_hi + s_lo.
    let rcp = o.div(one, d);
    let s = o.mul(f, rcp);
    let res = o.fma(o.neg(s), dl, o.fma(o.neg(s), d, f));
    let sl = o.mul(res, rcp);
    // ln(1+f) = 2s + 2s^3/3 + s z^2 Q(z), z = s^2; the first two terms in double-word.
    let z = o.mul(s, s);
    let zl = o.fma(o.add(s, s), sl, o.fma(s, s, o.neg(z)));
    let c3 = o.mul(z, s);
    let c3l = o.fma(z, sl, o.fma(zl, s, o.fma(z, s, o.neg(c3))));
    let (t_hi, t_lo) = (k2(o, Consts::T23_HI), k2(o, Consts::T23_LO));
    let t3 = o.mul(c3, t_hi);
    let t3l = o.fma(c3, t_lo, o.fma(c3l, t_hi, o.fma(c3, t_hi, o.neg(t3))));
    let q = poly(o, z, coefs(o, &LOGT_F32, &LOGT_F64));
    let tail = o.mul(o.mul(s, o.mul(z, z)), q);
    let s2 = o.add(s, s);
    let (a, ae) = fast2sum(o, s2, t3);
    let lo = o.add(o.add(o.add(ae, o.add(sl, sl)), t3l), tail);
    let (hi, lo) = fast2sum(o, a, lo);
    (k, hi, lo)
}

/// Special values of ln/log2/log10 on `x` (`r` is the finite positive case).
fn log_special<O: Ops>(o: &O, x: O::F, r: O::F) -> O::F {
    let zero = o.c(0.0);
    let r = o.sel(o.eq(x, zero), o.neg(inf(o)), r);
    let r = o.sel(o.lt(x, zero), o.c(f64::NAN), r);
    let r = o.sel(o.eq(x, inf(o)), x, r);
    keep_nan(o, x, r)
}

/// `k ln2 + hi + lo + extra` rounded once (nearly).
fn ln_finish<O: Ops>(o: &O, k: O::F, hi: O::F, lo: O::F, extra: O::F) -> O::F {
    let l_hi = k2(o, Consts::LN2_HI);
    let a = o.mul(k, l_hi);
    let ae = o.fma(k, l_hi, o.neg(a));
    let (s, e) = fast2sum(o, a, hi);
    let tail = o.add(
        o.add(o.add(e, lo), o.add(ae, extra)),
        o.mul(k, k2(o, Consts::LN2_LO)),
    );
    o.add(s, tail)
}

fn ln<O: Ops>(o: &O, x: O::F) -> O::F {
    let (k, hi, lo) = log_dw(o, x);
    log_special(o, x, ln_finish(o, k, hi, lo, o.c(0.0)))
}

/// `(hi + lo) * (c_hi + c_lo)` as a double-word.
fn mul_dw<O: Ops>(o: &O, hi: O::F, lo: O::F, c: ([f64; 2], [f64; 2])) -> (O::F, O::F) {
    let (ch, cl) = (k2(o, c.0), k2(o, c.1));
    let p = o.mul(hi, ch);
    let pl = o.fma(lo, ch, o.fma(hi, cl, o.fma(hi, ch, o.neg(p))));
    (p, pl)
}

fn log2<O: Ops>(o: &O, x: O::F) -> O::F {
    let (k, hi, lo) = log_dw(o, x);
    let (p, pl) = mul_dw(o, hi, lo, (Consts::LOG2E_HI, Consts::LOG2E_LO));
    let (s, e) = fast2sum(o, k, p);
    log_special(o, x, o.add(s, o.add(e, pl)))
}

fn log10<O: Ops>(o: &O, x: O::F) -> O::F {
    let (k, hi, lo) = log_dw(o, x);
    let (p, pl) = mul_dw(o, hi, lo, (Consts::LOG10E_HI, Consts::LOG10E_LO));
    let c_hi = k2(o, Consts::LOG10_2_HI);
    let a = o.mul(k, c_hi);
    let ae = o.fma(k, c_hi, o.neg(a));
    let (s, e) = fast2sum(o, a, p);
    let tail = o.add(o.add(e, pl), o.fma(k, k2(o, Consts::LOG10_2_LO), ae));
    log_special(o, x, o.add(s, tail))
}

fn ln1p<O: Ops>(o: &O, x: O::F) -> O::F {
    let one = o.c(1.0);
    let (u, c) = two_sum(o, one, x);
    let (k, hi, lo) = log_dw(o, u);
    let r = ln_finish(o, k, hi, lo, o.div(c, u));
    let m1 = o.c(-1.0);
    let r = o.sel(o.eq(x, m1), o.neg(inf(o)), r);
    let r = o.sel(o.lt(x, m1), o.c(f64::NAN), r);
    let r = o.sel(o.eq(x, inf(o)), x, r);
    keep_nan(o, x, tiny_id(o, x, (3e-8, 5e-17), r))
}

/// `x^y` (C's pow, Rust's powf).
fn pow<O: Ops>(o: &O, x: O::F, y: O::F) -> O::F {
    let zero = o.c(0.0);
    let one = o.c(1.0);
    let a = o.abs(x);
    // ln|x| as a double-word, times y.
    let (k, hi, lo) = log_dw(o, a);
    let l_hi = k2(o, Consts::LN2_HI);
    let ka = o.mul(k, l_hi);
    let kae = o.fma(k, l_hi, o.neg(ka));
    let (s, e) = fast2sum(o, ka, hi);
    let tail = o.add(o.add(e, lo), o.fma(k, k2(o, Consts::LN2_LO), kae));
    let (l, ll) = fast2sum(o, s, tail);
    let p = o.mul(y, l);
    let pl = o.fma(y, ll, o.fma(y, l, o.neg(p)));
    let (elo, ehi) = exp_limits(o);
    let clamped = o.not(o.and(o.gt(p, elo), o.lt(p, ehi)));
    let pc = o.fmin(o.fmax(p, elo), ehi);
    let pl = o.sel(clamped, zero, pl);
    let (kk, r, c) = exp_reduce(o, pc);
    let mut res = exp_core(o, kk, r, o.add(c, pl));
    // Integer and odd y.
    let y_int = o.eq(o.floor(y), y);
    let ay = o.abs(y);
    let odd_lim = pick(o, 16777216.0, 9007199254740992.0);
    let y_half = o.mul(y, o.c(0.5));
    let y_odd = o.and(
        o.and(y_int, o.lt(ay, odd_lim)),
        o.not(o.eq(o.floor(y_half), y_half)),
    );
    let x_neg = o.ilt(o.bits(x), o.ci(0));
    let y_neg = o.lt(y, zero);
    let inf_ = inf(o);
    // |x| = 0 or inf.
    res = o.sel(o.eq(a, zero), o.sel(y_neg, inf_, zero), res);
    res = o.sel(o.eq(a, inf_), o.sel(y_neg, zero, inf_), res);
    // Negative x: odd integer y flips the sign, non-integer y is NaN (finite x).
    res = o.sel(o.and(x_neg, y_odd), o.neg(res), res);
    let bad = o.and(o.and(o.lt(x, zero), o.not(y_int)), o.lt(a, inf_));
    res = o.sel(bad, o.c(f64::NAN), res);
    // |y| = inf.
    let y_inf = o.eq(ay, inf_);
    let grows = o.eq_b(o.gt(a, one), o.gt(y, zero));
    let yi = o.sel(o.eq(a, one), one, o.sel(grows, inf_, zero));
    res = o.sel(y_inf, yi, res);
    res = o.sel(o.or(o.is_nan(x), o.is_nan(y)), o.add(x, y), res);
    res = o.sel(o.eq(y, zero), one, res);
    o.sel(o.eq(x, one), one, res)
}

trait EqB: Ops {
    fn eq_b(&self, a: Self::B, b: Self::B) -> Self::B {
        self.or(self.and(a, b), self.and(self.not(a), self.not(b)))
    }
}
impl<O: Ops> EqB for O {}

// ---------------------------------------------------------------------------------------------
// Trigonometric.

#[derive(Clone, Copy, PartialEq, Eq)]
enum Trig {
    Sin,
    Cos,
    Tan,
}

/// `x = k pi/2 + r_hi + r_lo` (Cody-Waite with fma: 4 parts of pi/2 in f32, 3 in f64).
fn trig_reduce<O: Ops>(o: &O, x: O::F) -> (O::I, O::F, O::F) {
    let k = o.rint(o.mul(x, k2(o, Consts::INV_PIO2)));
    let nk = o.neg(k);
    let r1 = o.fma(nk, k2(o, Consts::PIO2_C1), x); // exact
    let c2 = k2(o, Consts::PIO2_C2);
    let w = o.mul(k, c2);
    let wl = o.fma(k, c2, o.neg(w));
    let (r2, e) = two_sum(o, r1, o.neg(w));
    let mut lo = o.fma(nk, k2(o, Consts::PIO2_C3), o.sub(e, wl));
    if !o.double() {
        lo = o.fma(nk, k2(o, Consts::PIO2_C4), lo);
    }
    let (r, rl) = fast2sum(o, r2, lo);
    // Beyond the reduction's range the result is meaningless: keep it bounded (no NaN).
    let out = o.not(o.le(o.abs(r), o.c(1.0)));
    let r = o.sel(out, o.c(0.5), r);
    let rl = o.sel(out, o.c(0.0), rl);
    // The quadrant: k mod 4 (k fits an integer wherever the result means anything).
    let lim = pick(o, 1e9, 4e18);
    let kc = o.fmin(o.fmax(k, o.neg(lim)), lim);
    (o.to_int(kc), r, rl)
}

fn sin_poly<O: Ops>(o: &O, r: O::F, rl: O::F) -> (O::F, O::F) {
    let z = o.mul(r, r);
    let v = o.mul(z, r);
    let s = poly(o, z, coefs(o, &SIN_F32, &SIN_F64));
    let hz = o.mul(z, o.c(0.5));
    let rl = o.fma(o.neg(hz), rl, rl);
    fast2sum(o, r, o.fma(v, s, rl))
}

fn cos_poly<O: Ops>(o: &O, r: O::F, rl: O::F) -> (O::F, O::F) {
    let one = o.c(1.0);
    let z = o.mul(r, r);
    let c = poly(o, z, coefs(o, &COS_F32, &COS_F64));
    let hz = o.mul(z, o.c(0.5));
    let w = o.sub(one, hz);
    let e = o.sub(o.sub(one, w), hz);
    let t = o.fma(o.mul(z, z), c, o.fma(o.neg(r), rl, e));
    fast2sum(o, w, t)
}

/// `(a + al) / (b + bl)` rounded nearly once.
fn div_dw<O: Ops>(o: &O, a: (O::F, O::F), b: (O::F, O::F)) -> O::F {
    let q = o.div(a.0, b.0);
    let r = o.fma(o.neg(q), b.1, o.add(o.fma(o.neg(q), b.0, a.0), a.1));
    o.add(q, o.div(r, b.0))
}

fn sincos<O: Ops>(o: &O, x: O::F, which: Trig) -> O::F {
    let (q, r, rl) = trig_reduce(o, x);
    let (sh, sl) = sin_poly(o, r, rl);
    let (ch, cl) = cos_poly(o, r, rl);
    let (s, c) = (o.add(sh, sl), o.add(ch, cl));
    let odd = o.ieq(o.iand(q, o.ci(1)), o.ci(1));
    let res = match which {
        Trig::Sin => {
            let v = o.sel(odd, c, s);
            let flip = o.ieq(o.iand(q, o.ci(2)), o.ci(2));
            o.sel(flip, o.neg(v), v)
        }
        Trig::Cos => {
            let v = o.sel(odd, s, c);
            let flip = o.ieq(o.iand(o.iadd(q, o.ci(1)), o.ci(2)), o.ci(2));
            o.sel(flip, o.neg(v), v)
        }
        Trig::Tan => {
            let num = (o.sel(odd, o.neg(ch), sh), o.sel(odd, o.neg(cl), sl));
            let den = (o.sel(odd, sh, ch), o.sel(odd, sl, cl));
            div_dw(o, num, den)
        }
    };
    // Infinities give NaN (the bounded fallback of the reduction would hide them).
    let res = o.sel(o.eq(o.abs(x), inf(o)), o.c(f64::NAN), res);
    let res = keep_nan(o, x, res);
    if which == Trig::Cos {
        res
    } else {
        tiny_id(o, x, (2.4e-4, 1.4e-8), res)
    }
}

/// `base + atan(n / d)` for `|n / d| <= tan(pi/8)`, with `n`, `d` double-words; `neg`
/// negates the atan part; the result as `base_hi + rest` rounded once.
#[allow(clippy::too_many_arguments)]
fn atan_core<O: Ops>(
    o: &O,
    n: (O::F, O::F),
    d: (O::F, O::F),
    base: (O::F, O::F),
    neg: O::B,
) -> O::F {
    let rcp = o.div(o.c(1.0), d.0);
    let u = o.mul(n.0, rcp);
    let res = o.fma(o.neg(u), d.1, o.add(o.fma(o.neg(u), d.0, n.0), n.1));
    let ul = o.mul(res, rcp);
    let z = o.mul(u, u);
    let p = o.mul(o.mul(u, z), poly(o, z, coefs(o, &ATAN_F32, &ATAN_F64)));
    let ul = o.fma(o.neg(z), ul, ul);
    let small = o.add(p, ul);
    let (u, small) = (o.sel(neg, o.neg(u), u), o.sel(neg, o.neg(small), small));
    let (s, e) = fast2sum(o, base.0, u);
    o.add(s, o.add(o.add(e, small), base.1))
}

/// atan2(y, x); with `single`, atan(y) (x = 1).
fn atan2<O: Ops>(o: &O, y: O::F, x: O::F, single: bool) -> O::F {
    let zero = o.c(0.0);
    let one = o.c(1.0);
    let (mut ax, mut ay) = (o.abs(x), o.abs(y));
    if !single {
        // Keep the sums and products below from overflowing or going subnormal.
        let m = o.fmax(ax, ay);
        let big = o.gt(m, pick(o, 2f64.powi(120), 2f64.powi(1000)));
        let small = o.lt(m, pick(o, 2f64.powi(-100), 2f64.powi(-960)));
        let s = o.sel(
            big,
            o.c(1.0 / 16.0),
            o.sel(small, pick(o, 2f64.powi(60), 2f64.powi(120)), one),
        );
        ax = o.mul(ax, s);
        ay = o.mul(ay, s);
    }
    let inf_ = inf(o);
    let both_inf = o.and(o.eq(ax, inf_), o.eq(ay, inf_));
    let y_zero = o.eq(ay, zero);
    let case_a = o.and(o.le(ay, o.mul(ax, k2(o, Consts::TAN_PI8))), o.not(both_inf));
    let case_c = o.and(
        o.gt(ay, o.mul(ax, k2(o, Consts::TAN_3PI8))),
        o.not(both_inf),
    );
    let (bs, bsl) = two_sum(o, ay, o.neg(ax));
    let (bd, bdl) = two_sum(o, ay, ax);
    let n_hi = o.sel(case_a, ay, o.sel(case_c, o.neg(ax), bs));
    let n_lo = o.sel(o.or(case_a, case_c), zero, bsl);
    let d_hi = o.sel(case_a, ax, o.sel(case_c, ay, bd));
    let d_lo = o.sel(o.or(case_a, case_c), zero, bdl);
    // 0 or infinite operands: the angle is the base alone.
    let degenerate = o.or(o.or(y_zero, o.eq(ax, inf_)), o.eq(ay, inf_));
    let n_hi = o.sel(degenerate, zero, n_hi);
    let n_lo = o.sel(degenerate, zero, n_lo);
    let d_hi = o.sel(degenerate, one, d_hi);
    let d_lo = o.sel(degenerate, zero, d_lo);
    let (p4, p4l) = (k2(o, Consts::PIO4_HI), k2(o, Consts::PIO4_LO));
    let (p2, p2l) = (k2(o, Consts::PIO2_HI), k2(o, Consts::PIO2_LO));
    let b_hi = o.sel(case_a, zero, o.sel(case_c, p2, p4));
    let b_lo = o.sel(case_a, zero, o.sel(case_c, p2l, p4l));
    let b_hi = o.sel(y_zero, zero, b_hi);
    let b_lo = o.sel(y_zero, zero, b_lo);
    let res = if single {
        let f = o.lt(zero, zero);
        atan_core(o, (n_hi, n_lo), (d_hi, d_lo), (b_hi, b_lo), f)
    } else {
        // x < 0 (or -0): pi - angle.
        let x_neg = o.ilt(o.bits(x), o.ci(0));
        let (pi, pil) = (k2(o, Consts::PI_HI), k2(o, Consts::PI_LO));
        let (mh, me) = fast2sum(o, pi, o.neg(b_hi));
        let ml = o.add(o.sub(pil, b_lo), me);
        let bh = o.sel(x_neg, mh, b_hi);
        let bl = o.sel(x_neg, ml, b_lo);
        atan_core(o, (n_hi, n_lo), (d_hi, d_lo), (bh, bl), x_neg)
    };
    let res = o.copysign(res, y);
    let res = o.sel(o.or(o.is_nan(x), o.is_nan(y)), o.add(x, y), res);
    if single {
        tiny_id(o, y, (2.4e-4, 1.4e-8), res)
    } else {
        res
    }
}

/// asin of `s` in [0, 0.5] as `s + p` with `p = s^3 B(s^2)`.
fn asin_tail<O: Ops>(o: &O, s: O::F) -> O::F {
    let z = o.mul(s, s);
    o.mul(o.mul(s, z), poly(o, z, coefs(o, &ASIN_F32, &ASIN_F64)))
}

/// For `a` in (0.5, 1]: `s = sqrt((1 - a) / 2)` as `(s, s_lo)`.
fn asin_half<O: Ops>(o: &O, a: O::F) -> (O::F, O::F) {
    let t = o.mul(o.sub(o.c(1.0), a), o.c(0.5)); // exact
    let s = o.sqrt(t);
    let num = o.fma(o.neg(s), s, t);
    let sl = o.div(num, o.add(s, s));
    (s, o.sel(o.eq(s, o.c(0.0)), o.c(0.0), sl))
}

fn asin<O: Ops>(o: &O, x: O::F) -> O::F {
    let a = o.abs(x);
    let small = o.add(a, asin_tail(o, a));
    let (s, sl) = asin_half(o, a);
    let p = asin_tail(o, s);
    let (p2, p2l) = (k2(o, Consts::PIO2_HI), k2(o, Consts::PIO2_LO));
    let two_s = o.add(s, s);
    let (h, e) = fast2sum(o, p2, o.neg(two_s));
    let big = o.add(h, o.sub(o.add(e, p2l), o.mul(o.c(2.0), o.add(sl, p))));
    let res = o.sel(o.le(a, o.c(0.5)), small, big);
    keep_nan(o, x, tiny_id(o, x, (2.4e-4, 1.4e-8), o.copysign(res, x)))
}

fn acos<O: Ops>(o: &O, x: O::F) -> O::F {
    let a = o.abs(x);
    let (p2, p2l) = (k2(o, Consts::PIO2_HI), k2(o, Consts::PIO2_LO));
    let small = o.sub(p2, o.add(x, o.sub(asin_tail(o, x), p2l)));
    let (s, sl) = asin_half(o, a);
    let p = asin_tail(o, s);
    let pos = o.mul(o.c(2.0), o.add(s, o.add(sl, p)));
    let (pi, pil) = (k2(o, Consts::PI_HI), k2(o, Consts::PI_LO));
    let two_s = o.add(s, s);
    let (h, e) = fast2sum(o, pi, o.neg(two_s));
    let neg = o.add(h, o.sub(o.add(e, pil), o.mul(o.c(2.0), o.add(sl, p))));
    let big = o.sel(o.lt(x, o.c(0.0)), neg, pos);
    keep_nan(o, x, o.sel(o.le(a, o.c(0.5)), small, big))
}

// ---------------------------------------------------------------------------------------------
// Hyperbolic and erf.

/// `(e^a / 2)` as a double-word (a >= 0, clamped to the exp range).
fn half_exp<O: Ops>(o: &O, a: O::F) -> (O::F, O::F) {
    let ac = o.fmin(a, pick(o, 90.0, 711.0));
    let (k, r, c) = exp_reduce(o, ac);
    let (m, ml) = exp_mant(o, r, c);
    let ki = o.isub(o.to_int(k), o.ci(1));
    (scale(o, m, ki), scale(o, ml, ki))
}

fn sinhcosh<O: Ops>(o: &O, x: O::F, sinh: bool) -> O::F {
    let a = o.abs(x);
    let z = o.mul(a, a);
    let (h, hl) = half_exp(o, a);
    let q = o.div(o.c(0.25), h);
    let res = if sinh {
        let small = o.fma(o.mul(a, z), poly(o, z, coefs(o, &SINH_F32, &SINH_F64)), a);
        let big = o.add(h, o.sub(hl, q));
        let r = o.sel(o.lt(a, o.c(1.0)), small, big);
        tiny_id(o, x, (2.4e-4, 1.4e-8), o.copysign(r, x))
    } else {
        let c = poly(o, z, coefs(o, &COSH_F32, &COSH_F64));
        let small = o.fma(z, o.fma(z, c, o.c(0.5)), o.c(1.0));
        let big = o.add(h, o.add(hl, q));
        o.sel(o.lt(a, o.c(1.0)), small, big)
    };
    keep_nan(o, x, res)
}

fn tanh<O: Ops>(o: &O, x: O::F) -> O::F {
    let a = o.abs(x);
    let z = o.mul(a, a);
    let small = o.fma(o.mul(a, z), poly(o, z, coefs(o, &TANH_F32, &TANH_F64)), a);
    // 1 - 2 / (e^2a + 1), with e^2a = s (m + ml) and the quotient as a double-word.
    let (k, r, c) = exp_reduce(o, o.mul(o.fmin(a, o.c(40.0)), o.c(2.0)));
    let (m, ml) = exp_mant(o, r, c);
    let s = pow2i(o, o.to_int(k));
    let (dh, dl) = two_sum(o, o.mul(s, m), o.c(1.0));
    let dl = o.fma(s, ml, dl);
    let two = o.c(2.0);
    let q = o.div(two, dh);
    let qr = o.fma(o.neg(q), dl, o.fma(o.neg(q), dh, two));
    let ql = o.div(qr, dh);
    let (h, e) = fast2sum(o, o.c(1.0), o.neg(q));
    let big = o.add(h, o.sub(e, ql));
    let r = o.sel(o.lt(a, o.c(0.55)), small, big);
    keep_nan(o, x, tiny_id(o, x, (2.4e-4, 1.4e-8), o.copysign(r, x)))
}

fn erf<O: Ops>(o: &O, x: O::F) -> O::F {
    let a = o.abs(x);
    let one = o.c(1.0);
    let z = o.mul(a, a);
    let small = o.fma(a, poly(o, z, coefs(o, &ERF_F32, &ERF_F64)), a);
    // erfc(a) = exp(-a^2 + h(a)) on [1, 4] (f32) or [1, 6] in three pieces (f64).
    let top = pick(o, 4.0, 6.0);
    let ac = o.fmin(a, top);
    let h = if o.double() {
        let i1 = o.ge_(ac, o.c(2.0));
        let i2 = o.ge_(ac, o.c(3.5));
        let mid = o.sel(
            i2,
            o.c(ERFC_MID_2),
            o.sel(i1, o.c(ERFC_MID_1), o.c(ERFC_MID_0)),
        );
        let t = o.sub(ac, mid);
        let mut acc = o.c(0.0);
        for i in (0..15).rev() {
            let c = o.sel(
                i2,
                o.c(ERFC_2_F64[i]),
                o.sel(i1, o.c(ERFC_1_F64[i]), o.c(ERFC_0_F64[i])),
            );
            acc = if i == 14 { c } else { o.fma(acc, t, c) };
        }
        acc
    } else {
        poly(o, o.sub(ac, o.c(2.5)), &ERFC_A_F32)
    };
    let zz = o.mul(ac, ac);
    let zl = o.fma(ac, ac, o.neg(zz));
    let (arg, argl) = two_sum(o, h, o.neg(zz));
    let (k, r, c) = exp_reduce(o, arg);
    let erfc = exp_core(o, k, r, o.sub(o.add(c, argl), zl));
    let big = o.sub(one, erfc);
    let big = o.sel(o.ge_(a, top), one, big);
    let r = o.sel(o.lt(a, one), small, big);
    keep_nan(o, x, o.copysign(r, x))
}

trait GeOps: Ops {
    fn ge_(&self, a: Self::F, b: Self::F) -> Self::B {
        self.le(b, a)
    }
}
impl<O: Ops> GeOps for O {}

/// `1 / sqrt(x)` with one Newton correction on the exact residual `1 - x y^2`.
fn rsqrt<O: Ops>(o: &O, x: O::F) -> O::F {
    // Tiny or huge x is scaled by 2^(±2j) so that y^2 stays normal, and the result by 2^(±j).
    let (lim, j) = if o.double() { (900, 64) } else { (100, 32) };
    let small = o.lt(x, o.c(2f64.powi(-lim)));
    let big = o.gt(x, o.c(2f64.powi(lim)));
    let one = o.c(1.0);
    let sx = o.sel(
        small,
        o.c(2f64.powi(2 * j)),
        o.sel(big, o.c(2f64.powi(-2 * j)), one),
    );
    let x = o.mul(x, sx);
    let post = o.sel(
        small,
        o.c(2f64.powi(j)),
        o.sel(big, o.c(2f64.powi(-j)), one),
    );
    let y = o.div(o.c(1.0), o.sqrt(x));
    let y2 = o.mul(y, y);
    let y2l = o.fma(y, y, o.neg(y2));
    let e = o.fma(o.neg(x), y2l, o.fma(o.neg(x), y2, o.c(1.0)));
    let r = o.fma(o.mul(y, o.c(0.5)), e, y);
    // 0, inf, negative, NaN: the plain quotient is right.
    let ok = o.and(o.gt(x, o.c(0.0)), o.lt(x, inf(o)));
    o.mul(o.sel(ok, r, y), post)
}

fn cbrt<O: Ops>(o: &O, x: O::F) -> O::F {
    let (mb, bias) = fmt(o);
    let a = o.abs(x);
    let shift: i64 = if o.double() { 54 } else { 24 };
    let sub = o.lt(a, pick(o, f32::MIN_POSITIVE as f64, f64::MIN_POSITIVE));
    let a_s = o.sel(sub, o.mul(a, o.c(2f64.powi(shift as i32))), a);
    let b = o.bits(a_s);
    let e = o.isub(o.iasr(b, mb), o.ci(bias));
    let mask = (1i64 << mb) - 1;
    let m = o.from_bits(o.ior(o.iand(b, o.ci(mask)), o.ci(bias << mb)));
    let ef = o.to_f(e);
    let q = o.floor(o.div(ef, o.c(3.0)));
    let rem = o.sub(ef, o.mul(q, o.c(3.0)));
    let f = o.sel(
        o.eq(rem, o.c(0.0)),
        o.c(1.0),
        o.sel(o.eq(rem, o.c(1.0)), o.c(2.0), o.c(4.0)),
    );
    let mm = o.mul(m, f); // [1, 8)
    let mut y = poly(o, mm, coefs(o, &CBRT_F32, &CBRT_F64));
    let halley = if o.double() { 2 } else { 1 };
    for _ in 0..halley {
        let y3 = o.mul(o.mul(y, y), y);
        let num = o.fma(o.c(2.0), mm, y3);
        let den = o.fma(o.c(2.0), y3, mm);
        y = o.mul(y, o.div(num, den));
    }
    // A last Newton step on the exact residual y^3 - mm.
    let y2 = o.mul(y, y);
    let y2l = o.fma(y, y, o.neg(y2));
    let res = o.fma(y2l, y, o.fma(y2, y, o.neg(mm)));
    y = o.sub(y, o.div(res, o.mul(o.c(3.0), y2)));
    let kq = o.isub(o.to_int(q), o.seli(sub, o.ci(shift / 3), o.ci(0)));
    let r = o.mul(y, pow2i(o, kq));
    let special = o.or(o.eq(a, o.c(0.0)), o.eq(a, inf(o)));
    let r = o.sel(special, a, r);
    keep_nan(o, x, o.copysign(r, x))
}

#[cfg(test)]
mod tests;
