//! Activations for epilogues (and any f32 kernel code): ReLU and the two GELUs.
//!
//! The erf GELU is written here rather than with [`Expr::erf`]: an accurate erf (libdevice's
//! `__nv_erff` branches; cudajit's own computes two ranges with a double-word exp) cost 30 to
//! 55 instructions an element, and in a GEMM's epilogue, 16.7 M elements at 4096², that was
//! 10-14% of the product. This one is branch-free and about 14 instructions: erfc from one
//! polynomial and one `ex2.approx`.

// The fitted coefficients are printed to nine significant digits (exact f32 values).
#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

use crate::codegen::Expr;

/// `max(x, 0)` (ReLU).
pub fn relu(x: Expr<f32>) -> Expr<f32> {
    x.max(0.0f32)
}

/// `log2(erfc(t))/t` as a polynomial in `t` on `0 ≤ t ≤ 4` (highest power first): the
/// negated Chebyshev fit of `−log2(erfc(t))/t` made with mpmath, rounded to f32 (docs/MATH.md
/// has the generator). Negated, so that the exponent `−q(t)·t − 1` is one fused multiply-add
/// with no sign flip.
const NEG_ERFC_ALL: [f32; 11] = [
    1.462859984e-07,
    -3.691517577e-06,
    4.146822175e-05,
    -2.713596623e-04,
    1.113587059e-03,
    -2.630077302e-03,
    3.724322887e-04,
    2.758632973e-02,
    -1.482706219e-01,
    -9.184479117e-01,
    -1.627907038e+00,
];

/// The same fit at degree 6 (negated, highest power first): within 1.3·10⁻⁵ (2⁻¹⁶) relative
/// in `erfc(t)/2` on `[0, 4]`, for results rounded to 16-bit floats.
const NEG_ERFC_16: [f32; 7] = [
    -1.559867815e-05,
    4.213663342e-04,
    -4.877513275e-03,
    3.300474957e-02,
    -1.512446702e-01,
    -9.177789092e-01,
    -1.627933741e+00,
];

/// Past this `|x|` the tail `erfc(|x|/√2)/2` is 0 in f32 (it is below 2⁻¹²⁶ from `|x| ≈ 28`).
const TAIL_ZERO: f32 = 18446744073709551616.0; // 2^64

/// Horner's rule with fused multiply-adds.
fn poly(x: Expr<f32>, cs: &[f32]) -> Expr<f32> {
    cs[1..]
        .iter()
        .fold(Expr::lit(cs[0]), |r, &c| r.mul_add(x, c))
}

/// The erf GELU, `x·Φ(x) = 0.5·x·(1 + erf(x/√2))` (torch's `gelu`, approximate='none').
///
/// Branch-free: with `t = |x|/√2`, `h = erfc(t)/2 = 2^(−t·q(t) − 1)` (`q` a polynomial fit of
/// `−log2(erfc(t))/t` on `[0, 4]`, 2^ by [`exp2_approx`](Expr::exp2_approx)), and
/// `x·Φ(x) = max(x, 0) − |x|·h` (for negative `x` that is `x·h`, for positive `x − x·h`), one
/// fused multiply-add: the negative tail keeps its relative accuracy (`1 + erf` in f32 loses
/// every digit there). Past `t = 4` the polynomial is held at `q(4)` and `h = 2^(−t·q(4) − 1)`
/// keeps falling (below erfc(4)/2 < 2⁻²⁶ there, an over-estimate of erfc(t)/2 that reaches 0
/// by t ≈ 19): about 14 instructions, no select.
///
/// Accuracy (tests/gpu/activation.rs, against f64): within `(8 + 3x²)·2⁻²⁴` relative for
/// `x/√2 > −4`, the `x²` growth in the negative tail coming from rounding `x/√2` and the
/// exponent; below, within `2⁻²⁶·|x|` of the true value (itself below `8·10⁻⁹·|x|`).
/// `ex2.approx` is within 2⁻²¹ of 2^x on the GPU (the simulator computes 2^x rounded, so the
/// two may differ in the last bits). NaN gives NaN, +∞ gives +∞ and −∞ gives 0 (the limit;
/// torch's formula gives NaN there).
pub fn gelu(x: Expr<f32>) -> Expr<f32> {
    gelu_to_bits(x, 24)
}

/// [`gelu`] for a result that is rounded to `bits` significant bits: with `bits` above 16
/// exactly `gelu`; with 16 or fewer (f16 has 11, bf16 8) a degree-6 polynomial instead of
/// degree 10, within `2⁻¹⁶ + (8 + 3x²)·2⁻²⁴` relative for `x/√2 > −4`, and evaluated at `t`
/// itself past 4 (it falls from `2⁻²⁶·⁹⁵` there: no `min`): five instructions fewer an element.
/// [`Epilogue::bias_gelu`](super::Epilogue::bias_gelu) uses it with the output type's bits.
pub fn gelu_to_bits(x: Expr<f32>, bits: u32) -> Expr<f32> {
    // −|x|, folded by ptxas into the operands of the multiply and the max below.
    let s = x.neg_abs();
    let t = s * -std::f32::consts::FRAC_1_SQRT_2;
    let q = if bits > 16 {
        poly(t.min(4.0f32), &NEG_ERFC_ALL)
    } else {
        // The degree-6 fit's leading coefficient is negative: past t = 4 the exponent keeps
        // falling, from −26.95 (checked up to t = 10⁴ in f32; beyond, it overflows to −∞).
        poly(t, &NEG_ERFC_16)
    };
    // A NaN `x` makes `h` NaN, and so the result (`max` drops a NaN operand).
    let h = q.mul_add(t, -1.0f32).exp2_approx();
    // −|x| held above −2^64, where h is already 0: +∞ gives ∞ − 2^64·0, not ∞ − ∞·0 = NaN.
    let m = s.max(-TAIL_ZERO);
    m.mul_add(h, x.max(0.0f32))
}

/// The tanh GELU, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` (torch's approximate='tanh').
pub fn gelu_tanh(x: Expr<f32>) -> Expr<f32> {
    let c = (2.0f32 / std::f32::consts::PI).sqrt();
    x * 0.5f32 * ((x + x * x * x * 0.044715f32) * c).tanh() + x * 0.5f32
}
