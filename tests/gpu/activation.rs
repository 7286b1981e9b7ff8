//! The epilogue activations (`ops::gelu`, `gelu_tanh`, `relu`) as kernels on their own, every
//! output against an f64 host model on fresh random inputs rich in special values.

use cudajit::codegen::Expr;
use cudajit::ops::{gelu, gelu_tanh, gelu_to_bits, relu};

use crate::common::{erf_ref, map_f32, special_f32, Rng};

const N: usize = 1 << 18;

/// `out[i] = f(x[i])` on the device, output poisoned first; the inputs: special values,
/// random bits, and dense draws over `[-12, 12]` and tiny magnitudes.
fn run(name: &str, f: fn(Expr<f32>) -> Expr<f32>) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng::new();
    let mut x = special_f32(&mut rng, N);
    for (i, v) in x.iter_mut().enumerate().filter(|(i, _)| i % 4 != 0) {
        *v = if i % 16 == 1 {
            rng.f32() * 2f32.powi(-((rng.next_u64() % 140) as i32))
        } else {
            rng.f32() * 12.0
        };
    }
    let got = map_f32(name, &x, f);
    (x, got)
}

/// The erf GELU: within `(8 + 3x²)·2^-24` relative of `0.5·x·(1 + erf(x/√2))` in f64 (the
/// `x²` term: the roundings of `x/√2` and of erfc's exponent, which the negative tail
/// magnifies, as in any f32 GELU), within `2^-26·|x|` where `x/√2 ≤ -4` (the true value is
/// below 8·10^-9·|x| there), NaN for NaN, 0 for −∞ (its limit), +∞ for +∞.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gelu_is_the_erf_gelu() {
    check_gelu("gelu", gelu, 0.0);
}

/// The GELU for 16-bit results (`gelu_to_bits` with 16 bits or fewer): as `gelu`, with `2^-16`
/// more relative error allowed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gelu_for_16_bit_results() {
    check_gelu("gelu_16", |x| gelu_to_bits(x, 11), 2f64.powi(-16));
    check_gelu("gelu_24", |x| gelu_to_bits(x, 24), 0.0);
}

/// `f` against the f64 erf GELU within `(extra + (8 + 3x²)·2^-24)` relative.
fn check_gelu(name: &str, f: fn(Expr<f32>) -> Expr<f32>, extra: f64) {
    let (x, got) = run(name, f);
    let (mut worst, mut of_bound) = (0.0f64, 0.0f64);
    for (&a, &g) in x.iter().zip(&got) {
        let xd = a as f64;
        let ok = if a.is_nan() {
            g.is_nan()
        } else if a == f32::NEG_INFINITY {
            g == 0.0
        } else if a == f32::INFINITY {
            g == f32::INFINITY
        } else {
            let want = 0.5 * xd * (1.0 + erf_ref(xd / std::f64::consts::SQRT_2));
            let tol =
                want.abs() * (extra + (8.0 + 3.0 * xd * xd) * 2f64.powi(-24)) + 2f64.powi(-147);
            let err = (g as f64 - want).abs();
            // Over results that are normal f32 (below, f32's own spacing is coarser than any
            // relative bound; past x/√2 = -4 the result is 0 by design).
            let counted = want.abs() >= f32::MIN_POSITIVE as f64
                && xd * std::f64::consts::FRAC_1_SQRT_2 > -4.0;
            if counted {
                worst = worst.max(err / want.abs() / 2f64.powi(-24));
                of_bound = of_bound.max(err / tol);
            }
            let tail = xd * std::f64::consts::FRAC_1_SQRT_2 <= -4.0;
            err <= tol || (tail && err <= xd.abs() * 2f64.powi(-26))
        };
        assert!(ok, "{name}({a:e}) = {g:e} ({:#x})", g.to_bits());
    }
    println!(
        "{name}: worst error {worst:.2} units of 2^-24 (relative), {of_bound:.2} of the bound, \
         over {N} arguments"
    );
}

/// The tanh GELU within `(16 + 4x²)·2^-24` relative (or `2^-24·|x|` absolute) of its f64 form,
/// and ReLU exactly `max(x, 0)` (a NaN argument gives NaN or 0: `max` ignores a NaN
/// operand on the GPU).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gelu_tanh_and_relu() {
    let (x, got) = run("gelu_tanh", gelu_tanh);
    for (&a, &g) in x.iter().zip(&got) {
        let xd = a as f64;
        if !a.is_finite() || xd.abs() > 1e15 {
            continue;
        }
        let c = (2.0 / std::f64::consts::PI).sqrt();
        let want = 0.5 * xd * (1.0 + (c * (xd + 0.044715 * xd * xd * xd)).tanh());
        let tol = want.abs() * (16.0 + 4.0 * xd * xd) * 2f64.powi(-24)
            + xd.abs() * 2f64.powi(-24)
            + 2f64.powi(-147);
        assert!(
            (g as f64 - want).abs() <= tol,
            "gelu_tanh({a:e}) = {g:e}, want {want:e}"
        );
    }
    let (x, got) = run("relu", relu);
    for (&a, &g) in x.iter().zip(&got) {
        let ok = if a.is_nan() {
            g.is_nan() || g == 0.0
        } else {
            g == a.max(0.0)
        };
        assert!(ok, "relu({a:e}) = {g:e}");
    }
}
