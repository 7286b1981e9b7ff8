//! Complex numbers in kernels and in `Elementwise`: every operation on fresh random values
//! rich in special values (NaN, ±0, ±inf, subnormals, huge and tiny parts), every output
//! element checked against the host model (`cudajit::codegen::complex_host`): exactly for the
//! operations made of IEEE arithmetic and square roots, within 8 ulps where sin, cos,
//! exp, ln or atan2 enter; and the host model against num-complex on ordinary values.

use cudajit::codegen::{complex_host, CExpr, Kernel};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;
use num_complex::Complex;

use crate::common::{ctx, Rng};

macro_rules! special {
    ($name:ident, $t:ty, $bits:ty) => {
        fn $name(r: &mut Rng) -> $t {
            let s: [$t; 12] = [
                0.0,
                -0.0,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::NAN,
                <$t>::MIN_POSITIVE / 4.0,
                -<$t>::MIN_POSITIVE,
                <$t>::MAX,
                <$t>::MIN,
                1.0,
                -1.0,
                <$t>::EPSILON,
            ];
            match r.next_u64() % 5 {
                0 => s[(r.next_u64() % 12) as usize],
                1 => <$t>::from_bits(r.next_u64() as $bits),
                _ => (r.f64() * 10.0) as $t,
            }
        }
    };
}
special!(special_f32, f32, u32);
special!(special_f64, f64, u64);

/// Whether `got` is `want`: the same bits, both NaN, or (with `ulps > 0`) within `ulps` units
/// in the last place of the same sign, or both tiny.
macro_rules! close {
    ($name:ident, $t:ty) => {
        fn $name(got: $t, want: $t, ulps: u64) -> bool {
            if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
                return true;
            }
            if ulps == 0 || got.is_nan() || want.is_nan() || got.is_infinite() || want.is_infinite()
            {
                return false;
            }
            if got.abs() < 1e-30 && want.abs() < 1e-30 {
                return true;
            }
            got.is_sign_negative() == want.is_sign_negative()
                && (got.to_bits() as u64).abs_diff(want.to_bits() as u64) <= ulps
        }
    };
}
close!(close_f32, f32);
close!(close_f64, f64);

macro_rules! kernel_test {
    ($test:ident, $t:ty, $special:ident, $close:ident, $host:ident, $ulps:expr) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            let mut r = Rng::new();
            let ctx = ctx();
            let s = ctx.new_stream().unwrap();
            let n = 20_000;
            let a: Vec<Complex<$t>> = r.vec(n, |r| Complex::new($special(r), $special(r)));
            let b: Vec<Complex<$t>> = r.vec(n, |r| Complex::new($special(r), $special(r)));
            // Outputs: a+b, a-b, a*b, a/b, conj a, sqrt a, exp a, ln a; reals: |a|, arg a.
            const OPS: usize = 8;
            let k = Kernel::<(
                &[Complex<$t>],
                &[Complex<$t>],
                &mut [Complex<$t>],
                &mut [$t],
            )>::build(
                concat!("complex_all_", stringify!($t)),
                |k, (a, b, out, re)| {
                    let i = k.grid1();
                    k.if_(i.lt(a.len()), |_| {
                        let (x, y) = (a.at(i), b.at(i));
                        let o = i * OPS as u64;
                        out.set(o, x + y);
                        out.set(o + 1u64, x - y);
                        out.set(o + 2u64, x * y);
                        out.set(o + 3u64, x / y);
                        out.set(o + 4u64, x.conj());
                        out.set(o + 5u64, x.sqrt());
                        out.set(o + 6u64, x.exp());
                        out.set(o + 7u64, x.ln());
                        re.set(i * 2u64, x.abs());
                        re.set(i * 2u64 + 1u64, x.arg());
                    });
                },
            )
            .unwrap();
            let da = s.to_device(&a).unwrap();
            let db = s.to_device(&b).unwrap();
            let poison = Complex::new(<$t>::from_bits(0x7f), <$t>::from_bits(0x7e));
            let mut out = s.to_device(&vec![poison; n * OPS]).unwrap();
            let mut re = s.to_device(&vec![<$t>::from_bits(0x7d); n * 2]).unwrap();
            k.launch(
                &s,
                LaunchConfig::for_num_elems(n, 256).unwrap(),
                (&da, &db, &mut out, &mut re),
            )
            .unwrap();
            let (out, re) = (out.to_vec_async(&s).unwrap(), re.to_vec_async(&s).unwrap());
            use complex_host::$host as h;
            for i in 0..n {
                let (x, y) = (a[i], b[i]);
                let want: [(Complex<$t>, u64); OPS] = [
                    (x + y, 0),
                    (x - y, 0),
                    (h::mul(x, y), 0),
                    (h::div(x, y), 0),
                    (x.conj(), 0),
                    (h::sqrt(x), 0),
                    (h::exp(x), $ulps),
                    (h::ln(x), $ulps),
                ];
                for (j, (w, ulps)) in want.iter().enumerate() {
                    let g = out[i * OPS + j];
                    assert!(
                        $close(g.re, w.re, *ulps) && $close(g.im, w.im, *ulps),
                        "op {j} of {x:?}, {y:?}: got {g:?}, want {w:?}"
                    );
                }
                assert!($close(re[2 * i], h::abs(x), 0), "abs {x:?}: {}", re[2 * i]);
                assert!(
                    $close(re[2 * i + 1], x.im.atan2(x.re), $ulps),
                    "arg {x:?}: {}",
                    re[2 * i + 1]
                );
            }
        }
    };
}
kernel_test!(
    complex64_operations_match_the_host_model,
    f32,
    special_f32,
    close_f32,
    f32,
    4
);
kernel_test!(
    complex128_operations_match_the_host_model,
    f64,
    special_f64,
    close_f64,
    f64,
    4
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn complex_elementwise_kernels_in_every_path() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    // z * w + conj(z): a fused complex expression over arrays of Complex<f32>.
    let f = Elementwise::<(Elem<Complex<f32>>, Elem<Complex<f32>>), CExpr<f32>>::new(
        "cfma",
        |(z, w)| z * w + z.conj(),
    )
    .unwrap();
    let model = |z: Complex<f32>, w: Complex<f32>| {
        let p = complex_host::f32::mul(z, w);
        Complex::new(p.re + z.re, p.im + (-z.im))
    };
    for n in [1usize, 7, 1000, 4099] {
        let hz: Vec<Complex<f32>> = r.vec(n, |r| Complex::new(special_f32(r), special_f32(r)));
        let hw: Vec<Complex<f32>> = r.vec(n, |r| Complex::new(special_f32(r), special_f32(r)));
        let (z, w) = (s.to_device(&hz).unwrap(), s.to_device(&hw).unwrap());
        let got = f.call(&s, (&z, &w)).unwrap().to_vec_async(&s).unwrap();
        for i in 0..n {
            let want = model(hz[i], hw[i]);
            assert!(
                close_f32(got[i].re, want.re, 0) && close_f32(got[i].im, want.im, 0),
                "n {n} element {i}: {:?} vs {want:?}",
                got[i]
            );
        }
        // At an odd offset (8-byte aligned only): the scalar path.
        if n > 1 {
            let zs = z.slice(1..).unwrap();
            let ws = w.slice(1..).unwrap();
            let got = f.call(&s, (&zs, &ws)).unwrap().to_vec_async(&s).unwrap();
            for i in 0..n - 1 {
                let want = model(hz[i + 1], hw[i + 1]);
                assert!(
                    close_f32(got[i].re, want.re, 0) && close_f32(got[i].im, want.im, 0),
                    "offset 1, n {n} element {i}"
                );
            }
        }
    }
    // A complex input, a real output.
    let mag =
        Elementwise::<(Elem<Complex<f64>>,), cudajit::codegen::Expr<f64>>::new("cmag", |(z,)| {
            z.abs()
        })
        .unwrap();
    let hz: Vec<Complex<f64>> = r.vec(777, |r| Complex::new(special_f64(r), special_f64(r)));
    let z = s.to_device(&hz).unwrap();
    let got = mag.call(&s, (&z,)).unwrap().to_vec_async(&s).unwrap();
    for (i, (g, z)) in got.iter().zip(&hz).enumerate() {
        assert!(
            close_f64(*g, complex_host::f64::abs(*z), 0),
            "abs element {i}: {g} of {z:?}"
        );
    }
    // Broadcasting a row over a matrix (complex128).
    let g = Elementwise::<(Elem<Complex<f64>>, Elem<Complex<f64>>), CExpr<f64>>::new(
        "cdiv",
        |(z, w)| z / w,
    )
    .unwrap();
    let (rows, cols) = (9usize, 31usize);
    let hz: Vec<Complex<f64>> = r.vec(rows * cols, |r| {
        Complex::new(special_f64(r), special_f64(r))
    });
    let hw: Vec<Complex<f64>> = r.vec(cols, |r| Complex::new(special_f64(r), special_f64(r)));
    let z = s.to_device(&hz).unwrap().into_shape((rows, cols)).unwrap();
    let w = s.to_device(&hw).unwrap().into_shape((1, cols)).unwrap();
    let got = g.call(&s, (&z, &w)).unwrap().to_vec_async(&s).unwrap();
    for i in 0..rows * cols {
        let want = complex_host::f64::div(hz[i], hw[i % cols]);
        assert!(
            close_f64(got[i].re, want.re, 0) && close_f64(got[i].im, want.im, 0),
            "broadcast element {i}: {:?} vs {want:?}",
            got[i]
        );
    }
}

/// The host model agrees with num-complex on ordinary values (the formulas are right).
#[test]
fn the_host_model_agrees_with_num_complex() {
    let mut r = Rng::new();
    for _ in 0..10_000 {
        let z = Complex::new(r.f64() * 8.0, r.f64() * 8.0);
        let w = Complex::new(r.f64() * 8.0 + 0.1, r.f64() * 8.0 - 0.1);
        let h = |a: Complex<f64>, b: Complex<f64>| (a - b).norm() <= 1e-12 * (1.0 + b.norm());
        assert!(h(complex_host::f64::div(z, w), z / w), "{z} / {w}");
        assert!(h(complex_host::f64::mul(z, w), z * w));
        assert!(h(complex_host::f64::exp(z), z.exp()), "exp {z}");
        assert!(h(complex_host::f64::ln(z), z.ln()), "ln {z}");
        assert!(h(complex_host::f64::sqrt(z), z.sqrt()), "sqrt {z}");
        assert!((complex_host::f64::abs(z) - z.norm()).abs() <= 1e-12 * z.norm());
    }
}
