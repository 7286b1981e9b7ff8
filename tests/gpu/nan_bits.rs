//! Regression tests for the fuzzer's findings of 2026-11-25 (worked around in
//! src/codegen/ptx_fix/, rewrites 5 and 6): the PTX compiler compiles `neg.f32`, `neg.f64`
//! and `abs.f64` as an add of -0, which turns every NaN into the canonical positive NaN, so a
//! negated negative NaN came out positive and libdevice's `log1pf(-|x|)`, which reads its
//! argument's bits, gave 89.416 for a NaN; and an f64 `min`/`max` whose bits were read as an
//! integer lost its comparison (that one only shows beside other code: the fuzzer's own
//! batches replay it, `tests/fuzz.rs`). Checked against Rust bit for bit on inputs rich in
//! NaN payloads of both signs.

use cudajit::codegen::{select, Expr, Kernel, KernelParams, LaunchArgs};
use cudajit::prelude::*;
use cudajit::{AnyBitPattern, DeviceArray, DeviceCopy};

use crate::common::ctx;

/// Runs `k` on `xs` over `threads` threads in blocks of `block`, into `len` outputs filled
/// with `poison` first, and returns the outputs.
fn run<P, I, O>(
    k: &Kernel<P>,
    xs: &[I],
    len: usize,
    poison: O,
    threads: usize,
    block: u32,
) -> Vec<O>
where
    P: KernelParams,
    I: DeviceCopy,
    O: DeviceCopy + AnyBitPattern,
    for<'a> (&'a DeviceArray<I>, &'a mut DeviceArray<O>): LaunchArgs<P>,
{
    let c = ctx();
    let s = c.new_stream().unwrap();
    let dx = s.to_device(xs).unwrap();
    let mut out = c.alloc::<O, _>(len).unwrap();
    out.fill_async(poison, &s).unwrap();
    let config = LaunchConfig::for_num_elems(threads, block).unwrap();
    k.launch(&s, config, (&dx, &mut out)).unwrap();
    out.to_vec_async(&s).unwrap()
}

/// Float min/max as cudajit defines them (IEEE minNum/maxNum: the other operand for a NaN;
/// -0 below +0, docs/MATH.md), for the host side of the tests.
trait HostMinMax: Copy {
    fn host_min(self, b: Self) -> Self;
    fn host_max(self, b: Self) -> Self;
}

macro_rules! host_min_max {
    ($t:ty) => {
        impl HostMinMax for $t {
            fn host_min(self, b: $t) -> $t {
                if self == b {
                    <$t>::from_bits(self.to_bits() | b.to_bits())
                } else {
                    self.min(b)
                }
            }
            fn host_max(self, b: $t) -> $t {
                if self == b {
                    <$t>::from_bits(self.to_bits() & b.to_bits())
                } else {
                    self.max(b)
                }
            }
        }
    };
}
host_min_max!(f32);
host_min_max!(f64);

fn host_min<F: HostMinMax>(a: F, b: F) -> F {
    a.host_min(b)
}

fn host_max<F: HostMinMax>(a: F, b: F) -> F {
    a.host_max(b)
}

/// Sign operations whose bits Rust defines for every input, NaN included.
const SIGN_OPS: usize = 6;
/// Math functions that must give NaN for every NaN argument.
const FUNCS: [&str; 10] = [
    "ln_1p", "ln", "log2", "exp", "exp_m1", "sqrt", "cbrt", "sin", "tanh", "atan",
];
/// Arguments passed to them: `-|x|`, `-x`, `x.copysign(-c)`, `-(x.copysign(c))`.
const ARGS: usize = 4;

macro_rules! nan_bits_test {
    ($name:ident, $t:ty, $bits:ty) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            let per = SIGN_OPS + FUNCS.len() * ARGS;
            let k = Kernel::<(&[$t], &mut [$bits])>::build(stringify!($name), |k, (xs, out)| {
                let i = k.grid1();
                k.if_(i.lt(xs.len()), |_| {
                    let x = xs.at(i);
                    let base = i * per as u64;
                    let signs = [
                        -x,
                        x.abs(),
                        -x.abs(),
                        x.copysign(Expr::lit(-1.5 as $t)),
                        x.copysign(Expr::lit(8.5e-17 as $t)),
                        -(x.copysign(Expr::lit(-2.0 as $t))),
                    ];
                    for (j, v) in signs.into_iter().enumerate() {
                        out.set(base + j as u64, v.bitcast::<$bits>());
                    }
                    let args = [
                        -x.abs(),
                        -x,
                        x.copysign(Expr::lit(-8.553457e-17 as $t)),
                        -(x.copysign(Expr::lit(3.0 as $t))),
                    ];
                    let mut j = SIGN_OPS as u64;
                    for f in FUNCS {
                        for a in args {
                            let r = match f {
                                "ln_1p" => a.ln_1p(),
                                "ln" => a.ln(),
                                "log2" => a.log2(),
                                "exp" => a.exp(),
                                "exp_m1" => a.exp_m1(),
                                "sqrt" => a.sqrt(),
                                "cbrt" => a.cbrt(),
                                "sin" => a.sin(),
                                "tanh" => a.tanh(),
                                _ => a.atan(),
                            };
                            out.set(base + j, r.is_nan().cast::<$bits>());
                            j += 1;
                        }
                    }
                });
            })
            .unwrap();
            let nan = <$t>::NAN.to_bits();
            let sign = <$t>::NAN.to_bits() ^ (-<$t>::NAN).to_bits();
            let mut xs: Vec<$t> = [
                nan,
                nan | sign,
                nan | 1,
                nan | sign | 1,
                (nan >> 1) | (nan & sign.wrapping_neg()) | 1, // a signalling NaN
                !0,
                !sign,
            ]
            .into_iter()
            .map(<$t>::from_bits)
            .collect();
            xs.extend([
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -0.75,
                3.0,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
            ]);
            xs.extend([
                <$t>::MIN_POSITIVE,
                -<$t>::from_bits(1),
                <$t>::MAX,
                <$t>::MIN,
            ]);
            let mut rng = crate::common::Rng::new();
            for _ in 0..64 {
                let r = rng.next_u64() as $bits;
                // random payloads: half NaNs of either sign, half any bits
                let v = if rng.next_u64() % 2 == 0 { r | nan } else { r };
                xs.push(<$t>::from_bits(v));
            }
            let got = run(&k, &xs, xs.len() * per, 0x5a as $bits, xs.len(), 32);
            let mut wrong = Vec::new();
            for (i, &x) in xs.iter().enumerate() {
                let row = &got[i * per..(i + 1) * per];
                let signs = [
                    -x,
                    x.abs(),
                    -x.abs(),
                    x.copysign(-1.5),
                    x.copysign(8.5e-17),
                    -(x.copysign(-2.0)),
                ];
                for (j, w) in signs.iter().enumerate() {
                    if row[j] != w.to_bits() {
                        wrong.push(format!(
                            "sign op {j} of {:#x}: got {:#x}, want {:#x}",
                            x.to_bits(),
                            row[j],
                            w.to_bits()
                        ));
                    }
                }
                if !x.is_nan() {
                    continue; // the functions' values are the math tests' business
                }
                for (fi, f) in FUNCS.iter().enumerate() {
                    for a in 0..ARGS {
                        let g = row[SIGN_OPS + fi * ARGS + a];
                        if g != 1 {
                            wrong.push(format!(
                                "{f}(argument form {a}) of the NaN {:#x}: is_nan gave {g}",
                                x.to_bits()
                            ));
                        }
                    }
                }
            }
            assert!(
                wrong.is_empty(),
                "{} wrong:\n{}",
                wrong.len(),
                wrong.join("\n")
            );
        }
    };
}

nan_bits_test!(negation_abs_and_copysign_keep_nan_bits_f32, f32, u32);
nan_bits_test!(negation_abs_and_copysign_keep_nan_bits_f64, f64, u64);

/// The bits of an f64 min/max read as an integer (the fuzzer's programs read the low bits).
#[test]
#[ignore = "needs a CUDA GPU"]
fn low_bits_of_f64_min_max() {
    let k = Kernel::<(&[f64], &mut [u64])>::build("min_max_low_bits", |k, (xs, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len() / 4u64), |_| {
            let (a, b) = (xs.at(i * 2u64), xs.at(i * 2u64 + 1u64));
            out.set(i * 4u64, a.min(b).bitcast::<u64>() & 7u64);
            out.set(i * 4u64 + 1u64, b.max(a).bitcast::<u64>() & 7u64);
            out.set(i * 4u64 + 2u64, a.min(b).bitcast::<u64>());
            out.set(
                i * 4u64 + 3u64,
                (Expr::lit(64u64) - a.max(b).bitcast::<u64>()) & 3u64,
            );
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let n = 1024;
    let special = [
        0.0,
        -0.0,
        1.0,
        -68.625,
        f64::INFINITY,
        f64::NAN,
        f64::MIN,
        f64::MAX,
    ];
    let xs: Vec<f64> = rng.vec(2 * n, |r| match r.next_u64() % 3 {
        0 => special[(r.next_u64() % special.len() as u64) as usize],
        _ => f64::from_bits(r.next_u64() & !(0x7ffu64 << 52) | (r.next_u64() % 2047) << 52),
    });
    let got = run(&k, &xs, 4 * n, 0xdead, n, 128);
    for i in 0..n {
        let (a, b) = (xs[2 * i], xs[2 * i + 1]);
        if a.is_nan() && b.is_nan() {
            continue; // NaN bits are Rust's to leave open
        }
        let want = [
            host_min(a, b).to_bits() & 7,
            host_max(b, a).to_bits() & 7,
            host_min(a, b).to_bits(),
            64u64.wrapping_sub(host_max(a, b).to_bits()) & 3,
        ];
        assert_eq!(
            &got[4 * i..4 * i + 4],
            &want,
            "a={a:?} ({:#x}) b={b:?} ({:#x})",
            a.to_bits(),
            b.to_bits()
        );
    }
}

/// `ex2.approx` was taken never to be NaN (`ex2(x) >= 0` folded to true), and a clamp written
/// min-then-max became a saturation (NaN to 0 where minNum/maxNum give 1): fuzzer seeds
/// 14400471 and 14300702 (rewrites 7 and 8). Each result against Rust on inputs with NaNs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exp2_comparisons_and_min_then_max_clamps_with_nan() {
    const N: usize = 9;
    let k = Kernel::<(&[f32], &mut [u32])>::build("exp2_and_clamps", |k, (xs, out)| {
        let i = k.grid1();
        k.if_(i.lt(xs.len()), |_| {
            let x = xs.at(i);
            let nan = Expr::lit(f32::from_bits(0x7fc0_0001));
            let r: [Expr<u32>; N] = [
                x.exp2().ge(0.0f32).cast::<u32>(),
                x.exp2().gt(-1.0f32).cast::<u32>(),
                Expr::lit(0.0f32).le((-x).sqrt().exp2()).cast::<u32>(),
                x.exp().ge(-0.0f32).cast::<u32>(),
                Expr::lit(2.0f32).powf(x).ge(0.0f32).cast::<u32>(),
                x.min(1.0f32).max(0.0f32).bitcast::<u32>(),
                x.min(Expr::lit(1.0f32))
                    .max(nan.max(Expr::lit(0.0f32)))
                    .bitcast::<u32>(),
                x.max(0.0f32).min(1.0f32).bitcast::<u32>(),
                x.min(0.5f32).max(-0.5f32).bitcast::<u32>(),
            ];
            for (j, v) in r.into_iter().enumerate() {
                out.set(i * N as u64 + j as u64, v);
            }
        });
    })
    .unwrap();
    let mut xs: Vec<f32> = vec![
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0xffc0_0000),
        118.75,
        -118.75,
        0.0,
        -0.0,
        2.0,
        -2.0,
        0.25,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
    ];
    let mut rng = crate::common::Rng::new();
    xs.extend(rng.vec(64, |r| r.f32() * 300.0));
    let got = run(&k, &xs, xs.len() * N, 0x5a5a_5a5a, xs.len(), 32);
    for (i, &x) in xs.iter().enumerate() {
        let want: [u32; N] = [
            (x.exp2() >= 0.0) as u32,
            (x.exp2() > -1.0) as u32,
            (0.0 <= (-x).sqrt().exp2()) as u32,
            (x.exp() >= -0.0) as u32,
            (2.0f32.powf(x) >= 0.0) as u32,
            host_max(host_min(x, 1.0), 0.0).to_bits(),
            host_max(host_min(x, 1.0), host_max(f32::from_bits(0x7fc0_0001), 0.0)).to_bits(),
            host_min(host_max(x, 0.0), 1.0).to_bits(),
            host_max(host_min(x, 0.5), -0.5).to_bits(),
        ];
        assert_eq!(
            &got[i * N..(i + 1) * N],
            &want,
            "x = {x:?} ({:#x})",
            x.to_bits()
        );
    }
}

/// A select of -0.0 and -1.0 became a conversion that lost the sign of zero (seeds 16100220,
/// 16400609), and a loop over `f32::from_bits(counter)` was evaluated at compile time with the
/// counter's value instead of its bits (seed 16501093): rewrites 9 and 10.
#[test]
#[ignore = "needs a CUDA GPU"]
fn minus_zero_selects_and_bits_to_float_in_loops() {
    let k = Kernel::<(&[i32], &mut [u32])>::build("minus_zero_and_loop_bits", |k, (xs, out)| {
        let i = k.grid1();
        k.if_(i.lt(xs.len()), |k| {
            let (a, b) = (xs.at(i * 2u64), xs.at(i * 2u64 + 1u64));
            let v = select(
                a.le(b),
                Expr::lit(-1i64).cast::<f32>(),
                Expr::lit(-0.0f32).sqrt(),
            );
            out.set(i * 4u64, v.bitcast::<u32>());
            let w = select(a.gt(b), v, Expr::lit(-0.0f64).cast::<f32>());
            out.set(i * 4u64 + 1u64, w.bitcast::<u32>());
            let d = select(a.lt(b), Expr::lit(-0.0f64), Expr::lit(-1.0f64));
            out.set(i * 4u64 + 2u64, (d.bitcast::<u64>() >> 32u64).cast::<u32>());
            let n = k.var(0u32);
            let bits = k.var(Expr::lit(0.0f32));
            k.while_(
                |_| n.get().lt(5u32).and(Expr::lit(1.75f32).ge(bits.get())),
                |_| {
                    n.set(n.get() + 1u32);
                    bits.set(n.get().bitcast::<f32>());
                },
            );
            out.set(i * 4u64 + 3u64, bits.get().bitcast::<u32>());
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let n = 256;
    let xs: Vec<i32> = rng.vec(2 * n, |r| (r.next_u64() % 5) as i32 - 2);
    let got = run(&k, &xs, 4 * n, 0x5a5a_5a5a, n, 64);
    for i in 0..n {
        let (a, b) = (xs[2 * i], xs[2 * i + 1]);
        let v = if a <= b { -1.0f32 } else { (-0.0f32).sqrt() };
        let w = if a > b { v } else { -0.0f64 as f32 };
        let d = if a < b { -0.0f64 } else { -1.0 };
        let want = [v.to_bits(), w.to_bits(), (d.to_bits() >> 32) as u32, 5];
        assert_eq!(&got[4 * i..4 * i + 4], &want, "a={a} b={b}");
    }
}

/// `abs.s32` was taken to be never negative: `i32::MIN.max(-i32::MIN) % d` became an unsigned
/// remainder (seed 20200051; rewrite 12). The wrapping `abs` of `MIN` is `MIN`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn remainder_of_an_i32_abs_of_min() {
    let k = Kernel::<(&[i32], &mut [i32])>::build("abs_min_rem", |k, (xs, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len() / 3u64), |_| {
            let (x, d) = (xs.at(i * 2u64), xs.at(i * 2u64 + 1u64));
            let a = (-x).max(x);
            out.set(i * 3u64, a % d);
            out.set(i * 3u64 + 1u64, a / d);
            out.set(i * 3u64 + 2u64, a.min(0i32));
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let n = 512;
    let xs: Vec<i32> = rng.vec(2 * n, |r| match r.next_u64() % 4 {
        0 => i32::MIN,
        1 => [1, -1, 7, -7, 194670849, i32::MAX][(r.next_u64() % 6) as usize],
        _ => r.next_u64() as i32 | 1,
    });
    let got = run(&k, &xs, 3 * n, 0x5a5a_5a5a, n, 64);
    for i in 0..n {
        let (x, d) = (xs[2 * i], xs[2 * i + 1]);
        let a = x.wrapping_neg().max(x);
        // cudajit's integer division: wrapping (MIN / -1 = MIN, MIN % -1 = 0), Rust's signs
        let want = [a.wrapping_rem(d), a.wrapping_div(d), a.min(0)];
        assert_eq!(&got[3 * i..3 * i + 3], &want, "x={x} d={d}");
    }
}
