//! Random numbers in kernels: Numba's xoroshiro128+ against numba-cuda's own numbers (made on
//! a GPU, tests/data/numba_xoroshiro128p.txt) and against the host model on fresh seeds, and
//! Philox4x32-10 against its host model, every output element checked, outputs poisoned.

use cudajit::codegen::{Expr, Kernel};
use cudajit::ops::{Elem, Elementwise, Index, Scalar};
use cudajit::prelude::*;
use cudajit::random::{
    create_xoroshiro128p_states, philox_uniform2_f64_host, philox_uniform4_f32_host,
    philox_words_host, xoroshiro128p_states_host, Philox, Xoroshiro128pHost, Xoroshiro128pStates,
};

use crate::common::{ctx, fixture, Rng};

/// Whether the device's math functions are libdevice's, as Numba's are (then normals match
/// Numba's bits; otherwise within the precision of float32's logarithm).
fn exact_math() -> bool {
    !cudajit::on_simulator() && cudajit::codegen::libdevice_path().is_some()
}

/// `draws` draws of `kind` per generator by a kernel, as bits (thread-major).
fn device_draws(
    s: &Stream,
    states: &mut Xoroshiro128pStates,
    kind: &str,
    draws: usize,
) -> Vec<u64> {
    let n = states.len();
    let name = format!("xoro_{kind}_{draws}");
    macro_rules! run {
        ($t:ty, $poison:expr, $draw:ident, $bits:expr) => {{
            let k =
                Kernel::<(&mut Xoroshiro128pStates, &mut [$t])>::build(&name, |k, (rng, out)| {
                    let i = k.grid1();
                    k.if_(i.lt(n as u64), |_| {
                        for j in 0..draws as u64 {
                            out.set(i * draws as u64 + j, rng.$draw(i));
                        }
                    });
                })
                .unwrap();
            let mut out = s.to_device(&vec![$poison; n * draws]).unwrap();
            k.launch(
                s,
                LaunchConfig::for_num_elems(n, 64).unwrap(),
                (&mut *states, &mut out),
            )
            .unwrap();
            let f: fn($t) -> u64 = $bits;
            out.to_vec_async(s).unwrap().into_iter().map(f).collect()
        }};
    }
    match kind {
        "uniform_f32" => run!(f32, f32::NAN, uniform_f32, |v| v.to_bits() as u64),
        "uniform_f64" => run!(f64, f64::NAN, uniform_f64, |v| v.to_bits()),
        "normal_f32" => run!(f32, f32::NAN, normal_f32, |v| v.to_bits() as u64),
        "normal_f64" => run!(f64, f64::NAN, normal_f64, |v| v.to_bits()),
        k => panic!("unknown kind {k}"),
    }
}

/// Whether `got` is `want` for `kind`: uniforms exactly; normals exactly with libdevice's
/// math, else within float32's precision.
fn same_draw(kind: &str, got: u64, want: u64, exact: bool) -> bool {
    match kind {
        "normal_f32" if !exact => got.abs_diff(want) <= 4,
        "normal_f64" if !exact => {
            let (g, w) = (f64::from_bits(got), f64::from_bits(want));
            (g - w).abs() <= 1e-6 * w.abs().max(1e-3)
        }
        _ => got == want,
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn xoroshiro_states_and_draws_equal_numbas() {
    let text = std::fs::read_to_string(fixture("numba_xoroshiro128p.txt")).unwrap();
    let (threads, draws, cases) = cudajit::random::numba_reference_parse(&text);
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let exact = exact_math();
    eprintln!(
        "xoroshiro vs numba: normals compared {} (libdevice: {:?})",
        if exact {
            "bit for bit"
        } else {
            "within float32 precision"
        },
        cudajit::codegen::libdevice_path()
    );
    for c in &cases {
        let mut states =
            create_xoroshiro128p_states(&s, threads, c.seed, c.subsequence_start).unwrap();
        assert_eq!(states.len(), threads);
        let host = states.to_host(&s).unwrap();
        assert_eq!(host[..c.states.len()], c.states[..], "seed {}", c.seed);
        for (kind, want) in &c.draws {
            states.init(&s, c.seed, c.subsequence_start).unwrap();
            let got = device_draws(&s, &mut states, kind, draws);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(
                    same_draw(kind, *g, *w, exact),
                    "seed {} sub {} {kind} element {i}: {g:#x}, numba {w:#x} (exact math: {exact})",
                    c.seed,
                    c.subsequence_start
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn xoroshiro_draws_and_jumps_match_the_host_model_on_fresh_seeds() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let n = 3000;
    let seed = r.next_u64();
    let sub = r.next_u64() % 4;
    let mut states = create_xoroshiro128p_states(&s, n, seed, sub).unwrap();
    let want_states = xoroshiro128p_states_host(n, seed, sub);
    assert_eq!(states.to_host(&s).unwrap(), want_states);
    // Per thread: a float64 uniform, a jump, 64 raw bits, a float32 uniform.
    let k = Kernel::<(&mut Xoroshiro128pStates, &mut [f64], &mut [u64], &mut [f32])>::build(
        "xoro_mixed",
        |k, (rng, a, b, c)| {
            let i = k.grid1();
            k.if_(i.lt(n as u64), |_| {
                a.set(i, rng.uniform_f64(i));
                rng.jump(i);
                b.set(i, rng.next_u64(i));
                c.set(i, rng.uniform_f32(i));
            });
        },
    )
    .unwrap();
    let mut a = s.to_device(&vec![f64::NAN; n]).unwrap();
    let mut b = s.to_device(&vec![0xdead_beef_u64; n]).unwrap();
    let mut c = s.to_device(&vec![f32::NAN; n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&mut states, &mut a, &mut b, &mut c),
    )
    .unwrap();
    let (a, b, c) = (
        a.to_vec_async(&s).unwrap(),
        b.to_vec_async(&s).unwrap(),
        c.to_vec_async(&s).unwrap(),
    );
    let after = states.to_host(&s).unwrap();
    for (i, st) in want_states.iter().enumerate() {
        let mut g = Xoroshiro128pHost {
            s0: st[0],
            s1: st[1],
        };
        assert_eq!(a[i].to_bits(), g.uniform_f64().to_bits(), "uniform_f64 {i}");
        g.jump();
        assert_eq!(b[i], g.next_u64(), "next_u64 after a jump {i}");
        assert_eq!(c[i].to_bits(), g.uniform_f32().to_bits(), "uniform_f32 {i}");
        assert_eq!(after[i], [g.s0, g.s1], "state after {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn philox_words_and_uniforms_match_the_host_model() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let n = 4096;
    let special = [0u64, 1, u32::MAX as u64, 1 << 32, u64::MAX, u64::MAX - 1];
    let pick = |r: &mut Rng| {
        let v = r.next_u64();
        if v % 4 == 0 {
            special[(v >> 8) as usize % special.len()]
        } else {
            v
        }
    };
    let counters = r.vec(n, pick);
    let subs = r.vec(n, pick);
    let seed = pick(&mut r);
    let k = Kernel::<(u64, &[u64], &[u64], &mut [u32], &mut [f32], &mut [f64])>::build(
        "philox_all",
        |k, (seed, ctr, sub, words, u4, u2)| {
            let i = k.grid1();
            k.if_(i.lt(ctr.len()), |_| {
                let p = Philox::new(seed);
                let (c, s) = (ctr.at(i), sub.at(i));
                for (j, w) in p.words(s, c).into_iter().enumerate() {
                    words.set(i * 4u64 + j as u64, w);
                }
                for (j, u) in p.uniform4_f32(s, c).into_iter().enumerate() {
                    u4.set(i * 4u64 + j as u64, u);
                }
                for (j, u) in p.uniform2_f64(s, c).into_iter().enumerate() {
                    u2.set(i * 2u64 + j as u64, u);
                }
            });
        },
    )
    .unwrap();
    let dc = s.to_device(&counters).unwrap();
    let ds = s.to_device(&subs).unwrap();
    let mut words = s.to_device(&vec![0xdead_beef_u32; 4 * n]).unwrap();
    let mut u4 = s.to_device(&vec![f32::NAN; 4 * n]).unwrap();
    let mut u2 = s.to_device(&vec![f64::NAN; 2 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (seed, &dc, &ds, &mut words, &mut u4, &mut u2),
    )
    .unwrap();
    let (words, u4, u2) = (
        words.to_vec_async(&s).unwrap(),
        u4.to_vec_async(&s).unwrap(),
        u2.to_vec_async(&s).unwrap(),
    );
    for i in 0..n {
        let (c, sb) = (counters[i], subs[i]);
        assert_eq!(
            words[4 * i..4 * i + 4],
            philox_words_host(seed, sb, c),
            "words {i}"
        );
        let f = philox_uniform4_f32_host(seed, sb, c);
        for j in 0..4 {
            assert_eq!(
                u4[4 * i + j].to_bits(),
                f[j].to_bits(),
                "uniform4_f32 {i}.{j}"
            );
            assert!(f[j] > 0.0 && f[j] <= 1.0);
        }
        let d = philox_uniform2_f64_host(seed, sb, c);
        for j in 0..2 {
            assert_eq!(
                u2[2 * i + j].to_bits(),
                d[j].to_bits(),
                "uniform2_f64 {i}.{j}"
            );
            assert!(d[j] > 0.0 && d[j] <= 1.0);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn philox_in_an_elementwise_kernel_from_the_element_index() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let seed = r.next_u64();
    // noise(i) = x[i] + a uniform in (0, 1] drawn from the element's index.
    let noisy = Elementwise::<(Elem<f32>, Index, Scalar<u64>), Expr<f32>>::new(
        "philox_noise",
        |(x, i, seed)| x + Philox::new(seed).uniform_f32(i),
    )
    .unwrap();
    for n in [1usize, 3, 1000, 4099] {
        let hx = r.vec(n, |r| r.f32());
        let x = s.to_device(&hx).unwrap();
        let mut out = s.to_device(&vec![f32::NAN; n]).unwrap();
        noisy.apply(&s, (&x, Index, seed), &mut out).unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            let want = hx[i] + philox_uniform4_f32_host(seed, 0, i as u64)[0];
            assert_eq!(got[i].to_bits(), want.to_bits(), "n {n} element {i}");
        }
    }
    // The broadcasting paths: the index is the output's. A column plus a row takes the
    // strided kernel; a full matrix plus a row the suffix kernel.
    let noisy2 = Elementwise::<(Elem<f32>, Elem<f32>, Index, Scalar<u64>), Expr<f32>>::new(
        "philox_noise2",
        |(x, y, i, seed)| x + y + Philox::new(seed).uniform_f32(i),
    )
    .unwrap();
    let (rows, cols) = (37usize, 52usize);
    let hrow = r.vec(cols, |r| r.f32());
    let hcol = r.vec(rows, |r| r.f32());
    let hfull = r.vec(rows * cols, |r| r.f32());
    let row = s.to_device(&hrow).unwrap().into_shape((1, cols)).unwrap();
    let col = s.to_device(&hcol).unwrap().into_shape((rows, 1)).unwrap();
    let full = s
        .to_device(&hfull)
        .unwrap()
        .into_shape((rows, cols))
        .unwrap();
    type Pair<'a> = (&'a cudajit::DeviceArray<f32, ndarray::Ix2>, Vec<f32>);
    let cases: [(&str, Pair, Pair); 2] = [
        ("strided", (&col, hcol.clone()), (&row, hrow.clone())),
        ("suffix", (&full, hfull.clone()), (&row, hrow.clone())),
    ];
    for (path, (x, hx), (y, hy)) in cases {
        let mut out = s
            .to_device(&vec![f32::NAN; rows * cols])
            .unwrap()
            .into_shape((rows, cols))
            .unwrap();
        noisy2.apply(&s, (x, y, Index, seed), &mut out).unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..rows * cols {
            let (r_, c_) = (i / cols, i % cols);
            let xv = if hx.len() == rows { hx[r_] } else { hx[i] };
            let want = xv + hy[c_] + philox_uniform4_f32_host(seed, 0, i as u64)[0];
            assert_eq!(got[i].to_bits(), want.to_bits(), "{path} element {i}");
        }
    }
}
