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

// ---------------------------------------------------------------------------------------------
// Constants and coefficients (generated, see docs/MATH.md).

/// Constants: `[f32 value, f64 value]`, hi/lo pairs split at each type's precision.
struct Consts;
impl Consts {
    const LN2_HI: [f64; 2] = [0.6931471824645996, 0.6931471805599453];
    const LN2_LO: [f64; 2] = [-1.9046542121259336e-09, 2.3190468138462996e-17];
    const PIO2_HI: [f64; 2] = [1.5707963705062866, 1.5707963267948966];
    const PIO2_LO: [f64; 2] = [-4.371138828673793e-08, 6.123233995736766e-17];
    const PIO4_HI: [f64; 2] = [0.7853981852531433, 0.7853981633974483];
    const PIO4_LO: [f64; 2] = [-2.1855694143368964e-08, 3.061616997868383e-17];
    const PI_HI: [f64; 2] = [3.1415927410125732, 3.141592653589793];
    const PI_LO: [f64; 2] = [-8.742277657347586e-08, 1.2246467991473532e-16];
    const LOG2E_HI: [f64; 2] = [1.4426950216293335, 1.4426950408889634];
    const LOG2E_LO: [f64; 2] = [1.925963033500011e-08, 2.0355273740931033e-17];
    const LOG10E_HI: [f64; 2] = [0.4342944920063019, 0.4342944819032518];
    const LOG10E_LO: [f64; 2] = [-1.0103049952192578e-08, 1.098319650216765e-17];
    const LOG10_2_HI: [f64; 2] = [0.3010300099849701, 0.3010299956639812];
    const LOG10_2_LO: [f64; 2] = [-1.432098883924482e-08, -2.8037281277851704e-18];
    const T23_HI: [f64; 2] = [0.6666666865348816, 0.6666666666666666];
    const T23_LO: [f64; 2] = [-1.9868215517249155e-08, 3.700743415417188e-17];
    const PIO2_C1: [f64; 2] = [1.5707963705062866, 1.5707963267948966];
    const PIO2_C2: [f64; 2] = [-4.371138828673793e-08, 6.123233995736766e-17];
    const PIO2_C3: [f64; 2] = [-1.7151245100058819e-15, -1.4973849048591698e-33];
    const PIO2_C4: [f64; 2] = [1.056299898220315e-23, 0.0];
    const INV_PIO2: [f64; 2] = [0.6366197723675814, 0.6366197723675814];
    const TAN_PI8: [f64; 2] = [0.41421356237309503, 0.41421356237309503];
    const TAN_3PI8: [f64; 2] = [2.414213562373095, 2.414213562373095];
    const SQRT2: [f64; 2] = [1.4142135623730951, 1.4142135623730951];
}
/// EM1, f32: 7 coefficients, lowest first (fit error 2^-35.1).
const EM1_F32: [f64; 7] = [
    0.5,
    0.1666666716337204,
    0.0416666679084301,
    0.0083332983776927,
    0.001388885430060327,
    0.00019899274047929794,
    2.485957884346135e-05,
];
/// EM1, f64: 13 coefficients, lowest first (fit error 2^-72.1).
const EM1_F64: [f64; 13] = [
    0.5,
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333335,
    0.001388888888888889,
    0.00019841269841258509,
    2.480158730158022e-05,
    2.7557319256329253e-06,
    2.7557319244197556e-07,
    2.50520635125698e-08,
    2.0876728945969602e-09,
    1.6088922302280749e-10,
    1.1489417805897738e-11,
];
/// LOGT, f32: 3 coefficients, lowest first (fit error 2^-22.6).
const LOGT_F32: [f64; 3] = [0.4000001549720764, 0.28562238812446594, 0.23048153519630432];
/// LOGT, f64: 8 coefficients, lowest first (fit error 2^-58.9).
const LOGT_F64: [f64; 8] = [
    0.4,
    0.28571428571429364,
    0.22222222221656232,
    0.18181818335314404,
    0.15384594970895457,
    0.13334804238225345,
    0.11706248540922386,
    0.11723051028097753,
];
/// SIN, f32: 4 coefficients, lowest first (fit error 2^-35.1).
const SIN_F32: [f64; 4] = [
    -0.1666666716337204,
    0.008333331905305386,
    -0.00019840087043121457,
    2.7249925551586784e-06,
];
/// SIN, f64: 7 coefficients, lowest first (fit error 2^-66.2).
const SIN_F64: [f64; 7] = [
    -0.16666666666666666,
    0.008333333333333331,
    -0.00019841269841265065,
    2.7557319219339167e-06,
    -2.5052106232447578e-08,
    1.6058531618986147e-10,
    -7.586697117706918e-13,
];
/// COS, f32: 3 coefficients, lowest first (fit error 2^-28.9).
const COS_F32: [f64; 3] = [
    0.0416666641831398,
    -0.001388830249197781,
    2.454794230288826e-05,
];
/// COS, f64: 7 coefficients, lowest first (fit error 2^-70.4).
const COS_F64: [f64; 7] = [
    0.041666666666666664,
    -0.0013888888888888887,
    2.4801587301584645e-05,
    -2.7557319221402824e-07,
    2.087675579108042e-09,
    -1.1470460887609959e-11,
    4.7458719020432915e-14,
];
/// ATAN, f32: 7 coefficients, lowest first (fit error 2^-35.5).
const ATAN_F32: [f64; 7] = [
    -0.3333333432674408,
    0.19999998807907104,
    -0.14285607635974884,
    0.11107365041971207,
    -0.09027378261089325,
    0.07126259058713913,
    -0.04024166613817215,
];
/// ATAN, f64: 15 coefficients, lowest first (fit error 2^-73.6).
const ATAN_F64: [f64; 15] = [
    -0.3333333333333333,
    0.2,
    -0.1428571428571428,
    0.11111111111109812,
    -0.09090909090792842,
    0.07692307686032575,
    -0.06666666445124837,
    0.058823475638521375,
    -0.05263065341616109,
    0.04760755111702939,
    -0.043374502949271004,
    0.039321956049731766,
    -0.03387502950956292,
    0.024247805661230245,
    -0.010214611693676738,
];
/// ASIN, f32: 6 coefficients, lowest first (fit error 2^-27.8).
const ASIN_F32: [f64; 6] = [
    0.1666666567325592,
    0.07500094175338745,
    0.04459940269589424,
    0.031100662425160408,
    0.017149237915873528,
    0.03369084745645523,
];
/// ASIN, f64: 14 coefficients, lowest first (fit error 2^-59.8).
const ASIN_F64: [f64; 14] = [
    0.16666666666666666,
    0.07500000000000118,
    0.044642857142551895,
    0.03038194447553234,
    0.02237215744350722,
    0.017352816540325496,
    0.01396378001220357,
    0.011566459612121669,
    0.009621842970100282,
    0.009319560794767446,
    0.0030448799094556773,
    0.019554513336123378,
    -0.01924167174674304,
    0.02961201126495512,
];
/// SINH, f32: 4 coefficients, lowest first (fit error 2^-32.2).
const SINH_F32: [f64; 4] = [
    0.1666666716337204,
    0.008333339355885983,
    0.00019838102161884308,
    2.806280235745362e-06,
];
/// SINH, f64: 7 coefficients, lowest first (fit error 2^-61.3).
const SINH_F64: [f64; 7] = [
    0.16666666666666666,
    0.008333333333333299,
    0.00019841269841324198,
    2.7557319191381816e-06,
    2.5052117695907823e-08,
    1.6057679623801638e-10,
    7.746178593018827e-13,
];
/// COSH, f32: 4 coefficients, lowest first (fit error 2^-35.8).
const COSH_F32: [f64; 4] = [
    0.0416666679084301,
    0.0013888893881812692,
    2.4798951926641166e-05,
    2.7978023808827857e-07,
];
/// COSH, f64: 7 coefficients, lowest first (fit error 2^-65.5).
const COSH_F64: [f64; 7] = [
    0.041666666666666664,
    0.001388888888888887,
    2.480158730161747e-05,
    2.7557319205890157e-07,
    2.0876762155587967e-09,
    1.146998832606381e-11,
    4.83445137390608e-14,
];
/// TANH, f32: 6 coefficients, lowest first (fit error 2^-31.3).
const TANH_F32: [f64; 6] = [
    -0.3333333432674408,
    0.1333332359790802,
    -0.05396470054984093,
    0.02181844972074032,
    -0.008526332676410675,
    0.0025263905990868807,
];
/// TANH, f64: 12 coefficients, lowest first (fit error 2^-62.0).
const TANH_F64: [f64; 12] = [
    -0.3333333333333333,
    0.1333333333333331,
    -0.05396825396822037,
    0.021869488534073906,
    -0.0088632354631468,
    0.0035921267699626346,
    -0.001455819097151351,
    0.0005899052969492733,
    -0.0002384727248015252,
    9.455133052924858e-05,
    -3.372080112046316e-05,
    7.874274345344419e-06,
];
/// ERF, f32: 7 coefficients, lowest first (fit error 2^-29.6).
const ERF_F32: [f64; 7] = [
    0.12837916612625122,
    -0.3761262595653534,
    0.11283594369888306,
    -0.02685421146452427,
    0.005189087241888046,
    -0.000801686430349946,
    7.875874871388078e-05,
];
/// ERF, f64: 14 coefficients, lowest first (fit error 2^-68.7).
const ERF_F64: [f64; 14] = [
    0.1283791670955126,
    -0.37612638903183754,
    0.1128379167095512,
    -0.02686617064512984,
    0.0052239776254232985,
    -0.000854832702193483,
    0.00012055332902888736,
    -1.4925647567519332e-05,
    1.6462045441468418e-06,
    -1.6364642158167616e-07,
    1.4792401209404813e-08,
    -1.216456005728345e-09,
    8.709045129053106e-11,
    -4.230945824295338e-12,
];
/// CBRT, f32: 5 coefficients, lowest first (fit error 2^-8.2).
const CBRT_F32: [f64; 5] = [
    0.6538962721824646,
    0.41218146681785583,
    -0.06797280162572861,
    0.006989169400185347,
    -0.00028821994783356786,
];
/// CBRT, f64: 5 coefficients, lowest first (fit error 2^-8.2).
const CBRT_F64: [f64; 5] = [
    0.6538962985569791,
    0.4121814779629245,
    -0.06797280035500547,
    0.0069891694835587225,
    -0.0002882199346276574,
];
/// ERFC_A, f32: 10 coefficients, lowest first (fit error 2^-26.9).
const ERFC_A_F32: [f64; 10] = [
    -1.556815266609192,
    -0.3526807427406311,
    0.05610635504126549,
    -0.010858112946152687,
    0.002165169920772314,
    -0.0004207916499581188,
    7.738760177744552e-05,
    -1.2925695955345873e-05,
    1.6155811408680165e-06,
    -7.582681860185403e-08,
];
const ERFC_MID_0: f64 = 1.5;
/// ERFC_0, f64: 15 coefficients, lowest first (fit error 2^-58.7).
const ERFC_0_F64: [f64; 15] = [
    -1.1344920895515527,
    -0.5088008017795278,
    0.10735966938496333,
    -0.02582414063363453,
    0.006006746386438059,
    -0.0012572166872449597,
    0.00021596330516508385,
    -2.247368028936888e-05,
    -2.6468378433417125e-06,
    2.3707665155433636e-06,
    -8.187383845320506e-07,
    1.9296407291236391e-07,
    -2.797066349623632e-08,
    -2.0225017960491978e-09,
    2.6492303947150666e-09,
];
const ERFC_MID_1: f64 = 2.75;
/// ERFC_1, f64: 15 coefficients, lowest first (fit error 2^-56.0).
const ERFC_1_F64: [f64; 15] = [
    -1.641640410324296,
    -0.3265359550250289,
    0.048713258719115776,
    -0.008933257051162463,
    0.0017050157913637942,
    -0.0003206593234529079,
    5.7592973360331775e-05,
    -9.5807532372846e-06,
    1.4049312953963998e-06,
    -1.5991304252163757e-07,
    6.153019834332303e-09,
    3.6610563712372404e-09,
    -1.5430600493818997e-09,
    4.455030246326518e-10,
    -9.23006912102145e-11,
];
const ERFC_MID_2: f64 = 4.75;
/// ERFC_2, f64: 15 coefficients, lowest first (fit error 2^-53.7).
const ERFC_2_F64: [f64; 15] = [
    -2.151558941910323,
    -0.20208857697245614,
    0.01965936290945451,
    -0.002459587994519885,
    0.0003342419806567726,
    -4.67856807410466e-05,
    6.58285267822327e-06,
    -9.177263628516488e-07,
    1.254168303388548e-07,
    -1.6630255284699353e-08,
    2.1133612158630058e-09,
    -2.5297237422465434e-10,
    2.7561414971156547e-11,
    -2.3735062945382746e-12,
    8.691344481911443e-14,
];

/// The implementations run on the host with the same IEEE operations the GPU uses, against
/// Rust's std (glibc) on f64: f32 within 1 ulp of the rounded f64 reference, f64 within 2 ulps
/// of glibc (itself within about 1 ulp). The GPU tests (tests/gpu/math.rs) check the emitted
/// code the same way.
#[cfg(test)]
mod tests {
    use super::*;

    use super::super::host::{H32, H64};

    extern "C" {
        #[link_name = "erf"]
        fn c_erf(x: f64) -> f64;
    }

    fn reference(f: Own, x: f64, y: f64) -> f64 {
        match f {
            Own::Exp => x.exp(),
            Own::Exp2 => x.exp2(),
            Own::ExpM1 => x.exp_m1(),
            Own::Ln => x.ln(),
            Own::Log2 => x.log2(),
            Own::Log10 => x.log10(),
            Own::Ln1p => x.ln_1p(),
            Own::Pow => x.powf(y),
            Own::Sin => x.sin(),
            Own::Cos => x.cos(),
            Own::Tan => x.tan(),
            Own::Asin => x.asin(),
            Own::Acos => x.acos(),
            Own::Atan => x.atan(),
            Own::Atan2 => x.atan2(y),
            Own::Sinh => x.sinh(),
            Own::Cosh => x.cosh(),
            Own::Tanh => x.tanh(),
            // SAFETY: a pure libm function.
            Own::Erf => unsafe { c_erf(x) },
            Own::Cbrt => x.cbrt(),
            Own::Rsqrt => 1.0 / x.sqrt(),
        }
    }

    fn ord32(v: f32) -> i64 {
        let b = v.to_bits() as i32;
        (if b < 0 { i32::MIN.wrapping_sub(b) } else { b }) as i64
    }
    fn ord64(v: f64) -> i128 {
        let b = v.to_bits() as i64;
        (if b < 0 { i64::MIN.wrapping_sub(b) } else { b }) as i128
    }
    fn dist(a: f64, b: f64, ord: impl Fn(f64) -> i128) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() == b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        (ord(a) - ord(b)).unsigned_abs() as u64
    }

    /// (function, x range, log-scale magnitudes?)
    const DOMAINS: [(Own, f64, f64, bool); 21] = [
        (Own::Exp, -104.0, 89.0, false),
        (Own::Exp2, -150.0, 128.0, false),
        (Own::ExpM1, -20.0, 89.0, false),
        (Own::Ln, -140.0, 127.0, true),
        (Own::Log2, -140.0, 127.0, true),
        (Own::Log10, -140.0, 127.0, true),
        (Own::Ln1p, -1.0, 1e4, false),
        (Own::Pow, 0.0, 10.0, false),
        (Own::Sin, -1e5, 1e5, false),
        (Own::Cos, -100.0, 100.0, false),
        (Own::Tan, -100.0, 100.0, false),
        (Own::Asin, -1.0, 1.0, false),
        (Own::Acos, -1.0, 1.0, false),
        (Own::Atan, -30.0, 30.0, true),
        (Own::Atan2, -10.0, 10.0, false),
        (Own::Sinh, -89.0, 89.0, false),
        (Own::Cosh, -89.0, 89.0, false),
        (Own::Tanh, -10.0, 10.0, false),
        (Own::Erf, -6.0, 6.0, false),
        (Own::Cbrt, -140.0, 127.0, true),
        (Own::Rsqrt, -140.0, 127.0, true),
    ];

    #[test]
    fn own_implementations_are_accurate_on_the_host() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.0,
            -3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-40,
            1e-310,
        ];
        let mut failures = Vec::new();
        for (f, lo, hi, log) in DOMAINS {
            let (mut w32, mut w64) = ((0u64, 0.0, 0.0), (0u64, 0.0, 0.0));
            for i in 0..40_000 {
                let u = rnd();
                let mut x = if log {
                    (lo + (hi - lo) * u).exp2()
                } else {
                    lo + (hi - lo) * u
                };
                let mut y = if f == Own::Atan2 {
                    -10.0 + 20.0 * rnd()
                } else {
                    0.0
                };
                if f == Own::Pow {
                    x = (-8.0 + 16.0 * rnd()).exp2();
                    y = (2.0 * rnd() - 1.0) * 80.0 / x.ln().abs().max(1e-3);
                }
                if i < specials.len() * specials.len() {
                    x = specials[i % specials.len()];
                    if matches!(f, Own::Pow | Own::Atan2) {
                        y = specials[i / specials.len()];
                    } else if i >= specials.len() {
                        continue;
                    }
                }
                let (x32, y32) = (x as f32, y as f32);
                let r32 = reference(f, x32 as f64, y32 as f64) as f32;
                let g32 = eval(&H32, f, x32, y32);
                let d32 = dist(g32 as f64, r32 as f64, |v| ord32(v as f32) as i128);
                if d32 > w32.0 {
                    w32 = (d32, x32 as f64, y32 as f64);
                }
                let d64 = dist(eval(&H64, f, x, y), reference(f, x, y), ord64);
                if d64 > w64.0 {
                    w64 = (d64, x, y);
                }
            }
            if w32.0 > 1 {
                failures.push(format!(
                    "{f:?} f32: {} ulps at x={:e} y={:e}",
                    w32.0, w32.1, w32.2
                ));
            }
            if w64.0 > 2 {
                failures.push(format!(
                    "{f:?} f64: {} ulps at x={:e} y={:e}",
                    w64.0, w64.1, w64.2
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
