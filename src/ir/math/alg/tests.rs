//! The implementations run on the host with the same IEEE operations the GPU uses, against
//! Rust's std (glibc) on f64: f32 within 1 ulp of the rounded f64 reference, f64 within 2 ulps
//! of glibc (itself within about 1 ulp). The GPU tests (tests/gpu/math.rs) check the emitted
//! code the same way.

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
