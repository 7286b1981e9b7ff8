//! Regression tests for the PTX compiler's miscompilations that the fuzzer found (each worked
//! around in src/codegen/ptx_fix/). First the issue's: comparisons of NaN-carrying results
//! against constants (the driver's PTX compiler folded `abs(y) > -1.5` to true, as if `abs`
//! could not give NaN); every operation x comparison x constant, f32 and f64, on inputs rich
//! in NaN, against Rust (the inputs keep the math functions' results away from the constants,
//! so that their rounding cannot change a comparison). Then the integer ones (a negated operand
//! of a min/max chain dropped; a 64-bit `abs` and its negation mis-ranged), a select of the bits
//! 1 and 0 taken for the numbers 1.0 and 0.0, and a register set to -1 and to 1.0f's bits on two
//! paths merged to -1.

use cudajit::codegen::{select, Expr, Float, Kernel, Signed};
use cudajit::prelude::*;

use crate::common::ctx;

/// Operations whose result is NaN exactly when Rust says so (NaN in, or sqrt of a negative).
const OPS: [&str; 12] = [
    "id",
    "abs",
    "neg_abs",
    "sqrt",
    "max_self",
    "min_self",
    "mul_self",
    "floor",
    "ceil",
    "trunc",
    "round",
    "abs_plus_1",
];
const CONSTS: [f64; 7] = [-1.5, -0.0, 0.0, 0.5, 1.5, f64::INFINITY, f64::NEG_INFINITY];
const CMPS: usize = 6;

fn op_dev<T: Float + Signed>(name: &str, x: Expr<T>, one: T) -> Expr<T> {
    match name {
        "id" => x,
        "abs" => x.abs(),
        "neg_abs" => -x.abs(),
        "sqrt" => x.sqrt(),
        "max_self" => x.max(x),
        "min_self" => x.min(x),
        "mul_self" => x * x,
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "trunc" => x.trunc(),
        "round" => x.round(),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "tanh" => x.tanh(),
        _ => x.abs() + one,
    }
}

fn op_host(name: &str, x: f64) -> f64 {
    match name {
        "id" => x,
        "abs" => x.abs(),
        "neg_abs" => -x.abs(),
        "sqrt" => x.sqrt(),
        "max_self" => x.max(x),
        "min_self" => x.min(x),
        "mul_self" => x * x,
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "trunc" => x.trunc(),
        "round" => x.round(),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "tanh" => x.tanh(),
        _ => x.abs() + 1.0,
    }
}

fn cmp_dev<T: Float>(c: usize, a: Expr<T>, b: T) -> Expr<bool> {
    match c {
        0 => a.lt(b),
        1 => a.le(b),
        2 => a.gt(b),
        3 => a.ge(b),
        4 => a.eq(b),
        _ => a.ne(b),
    }
}

fn cmp_host(c: usize, a: f64, b: f64) -> bool {
    match c {
        0 => a < b,
        1 => a <= b,
        2 => a > b,
        3 => a >= b,
        4 => a == b,
        _ => a != b,
    }
}

macro_rules! nan_case {
    ($t:ty, $name:literal) => {{
        let per = OPS.len() * CONSTS.len() * CMPS;
        let k = Kernel::<(&[$t], &mut [u32])>::build($name, |k, (xs, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                let x = xs.at(i);
                let mut j = 0u64;
                for op in OPS {
                    let v = op_dev::<$t>(op, x, 1.0);
                    for c in CONSTS {
                        for cmp in 0..CMPS {
                            // the issue's shape: the comparison feeds a select
                            let r = select(cmp_dev(cmp, v, c as $t), Expr::lit(1u32), 0u32);
                            out.set(i * per as u64 + j, r);
                            j += 1;
                        }
                    }
                }
            });
        })
        .unwrap();
        let xs: Vec<$t> = vec![
            <$t>::NAN,
            -<$t>::NAN,
            <$t>::from_bits(<$t>::NAN.to_bits() | 1),
            0.0,
            -0.0,
            1.0,
            -1.0,
            -2.0,
            0.25,
            -0.5,
            1.5,
            -1.5,
            <$t>::INFINITY,
            <$t>::NEG_INFINITY,
            <$t>::MIN_POSITIVE,
            -<$t>::from_bits(1),
            <$t>::MAX,
            <$t>::MIN,
        ];
        let c = ctx();
        let s = c.new_stream().unwrap();
        let dx = s.to_device(&xs).unwrap();
        let mut out = c.alloc::<u32, _>(xs.len() * per).unwrap();
        out.fill_async(7, &s).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(xs.len(), 32).unwrap(),
            (&dx, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        let mut wrong = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            let mut j = 0;
            for op in OPS {
                let v = op_host(op, x as f64) as $t as f64;
                for cst in CONSTS {
                    for cmp in 0..CMPS {
                        let want = cmp_host(cmp, v, cst as $t as f64) as u32;
                        let g = got[i * per + j];
                        if g != want {
                            wrong.push(format!(
                                "{}: {op}({x:?}) {} {cst:?}: got {g}, want {want}",
                                $name,
                                ["<", "<=", ">", ">=", "==", "!="][cmp]
                            ));
                        }
                        j += 1;
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
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn comparisons_of_nan_results_against_constants_f32() {
    nan_case!(f32, "nan_cmp_f32");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn comparisons_of_nan_results_against_constants_f64() {
    nan_case!(f64, "nan_cmp_f64");
}

/// The issue's exact kernel: `select(-1.5 < |y|, -7.25, y.max(x))` with y = NaN gives x.
#[test]
#[ignore = "needs a CUDA GPU"]
fn issue_abs_nan_select() {
    let k = Kernel::<(&[f32], &[f32], &mut [f32])>::build("abs_nan_select", |k, (xs, ys, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let (x, y) = (xs.at(i), ys.at(i));
            out.set(
                i,
                select(
                    Expr::lit(-1.5f32).lt(y.abs()),
                    Expr::lit(-7.25f32),
                    y.max(x),
                ),
            );
        });
    })
    .unwrap();
    let ys = [f32::NAN, -f32::NAN, 1.0, -3.0];
    let xs = [2.5f32, -4.0, 0.5, 0.5];
    let c = ctx();
    let s = c.new_stream().unwrap();
    let (dx, dy) = (s.to_device(&xs).unwrap(), s.to_device(&ys).unwrap());
    let mut out = c.alloc::<f32, _>(4).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&dx, &dy, &mut out))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    let want: Vec<f32> = (0..4)
        .map(|i| {
            if -1.5 < ys[i].abs() {
                -7.25
            } else {
                ys[i].max(xs[i])
            }
        })
        .collect();
    assert_eq!(got, want);
}

/// `min(a, min(b, -c))` and friends: the PTX compiler fused the chain into one three-input
/// min/max and dropped the negation (fuzzer seed 84; src/codegen/ptx_fix/).
#[test]
#[ignore = "needs a CUDA GPU"]
fn min_max_chains_with_a_negated_operand() {
    let k = Kernel::<(&[i32], &[i32], &[i32], &mut [i32])>::build(
        "min_max_neg_chains",
        |k, (a, b, c, out)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let (x, y, z) = (a.at(i), b.at(i), c.at(i));
                let j = i * 6u64;
                out.set(j, x.min(y.min(-z)));
                out.set(j + 1u64, x.max(y.max(-z)));
                out.set(j + 2u64, (-x).min(y).min(z));
                out.set(j + 3u64, x.min((-y).min(-z)));
                out.set(j + 4u64, (x * (Expr::lit(54i32) / z)).min((-y).min(y ^ x)));
                out.set(j + 5u64, (Expr::lit(0i32) - z).max(x).max(y));
            });
        },
    )
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let special = [0, 1, -1, 2, 54, i32::MIN, i32::MAX, -50062249];
    let n = 4096;
    let mut pick = |r: &mut crate::common::Rng| -> i32 {
        if r.next_u64() % 3 == 0 {
            special[(r.next_u64() % special.len() as u64) as usize]
        } else {
            r.next_u64() as i32
        }
    };
    let (a, b, c): (Vec<i32>, Vec<i32>, Vec<i32>) = (
        rng.vec(n, &mut pick),
        rng.vec(n, &mut pick),
        rng.vec(n, &mut pick),
    );
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let (da, db, dc) = (
        s.to_device(&a).unwrap(),
        s.to_device(&b).unwrap(),
        s.to_device(&c).unwrap(),
    );
    let mut out = ctx.alloc::<i32, _>(n * 6).unwrap();
    out.fill_async(0x5a5a_5a5a, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&da, &db, &dc, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let (x, y, z) = (a[i], b[i], c[i]);
        let q = if z == 0 { -1 } else { 54i32.wrapping_div(z) };
        let want = [
            x.min(y.min(z.wrapping_neg())),
            x.max(y.max(z.wrapping_neg())),
            x.wrapping_neg().min(y).min(z),
            x.min(y.wrapping_neg().min(z.wrapping_neg())),
            x.wrapping_mul(q).min(y.wrapping_neg().min(y ^ x)),
            0i32.wrapping_sub(z).max(x).max(y),
        ];
        assert_eq!(&got[i * 6..i * 6 + 6], &want, "a={x} b={y} c={z}");
    }
}

/// `min(±|x|, c)` and `max(±|x|, c)` in 64 bits (`x.min(-x)` is `-|x|`, `(-x).max(x)` is
/// `|x|`, `i64::MIN` for `i64::MIN`): the PTX compiler took `-|x|` to be below every negative
/// constant (fuzzer seed 5200015) and `|x|` never to be negative (seed 7100254);
/// src/codegen/ptx_fix/.
#[test]
#[ignore = "needs a CUDA GPU"]
fn min_max_of_an_i64_abs_and_its_negation_against_constants() {
    const CS: [i64; 7] = [-5, -1_851_758_333_030_046_028, -1, 0, 5, i64::MIN, i64::MAX];
    let k = Kernel::<(&[i64], &mut [i64])>::build("min_max_neg_abs_i64", |k, (xs, out)| {
        let i = k.grid1();
        k.if_(i.lt(xs.len()), |_| {
            let x = xs.at(i);
            let (m, a) = (x.min(-x), (-x).max(x));
            for (j, c) in CS.iter().enumerate() {
                let o = i * 28u64 + 4 * j as u64;
                out.set(o, m.min(*c));
                out.set(o + 1u64, m.max(*c));
                out.set(o + 2u64, a.min(*c));
                out.set(o + 3u64, a.max(*c));
            }
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let special = [0, 1, -1, 5, -5, -64, 64, i64::MIN, i64::MAX, i64::MIN + 1];
    let n = 4096;
    let xs: Vec<i64> = rng.vec(n, |r| match r.next_u64() % 3 {
        0 => special[(r.next_u64() % special.len() as u64) as usize],
        1 => (r.next_u64() % 200) as i64 - 100,
        _ => r.next_u64() as i64,
    });
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let dx = s.to_device(&xs).unwrap();
    let mut out = ctx.alloc::<i64, _>(n * 28).unwrap();
    out.fill_async(0x5a5a_5a5a_5a5a_5a5a, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&dx, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for (i, &x) in xs.iter().enumerate() {
        let (m, a) = (x.min(x.wrapping_neg()), x.wrapping_abs());
        let want: Vec<i64> = CS
            .iter()
            .flat_map(|&c| [m.min(c), m.max(c), a.min(c), a.max(c)])
            .collect();
        assert_eq!(&got[i * 28..i * 28 + 28], &want[..], "x = {x}");
    }
}

/// The kernel of [`float_conversions_of_a_select_of_one_and_zero_bits`]: the shape the fuzzer
/// found (seed 1100238), a select of the smallest subnormal and zero feeding conversions, the
/// select's condition computed in an outer block and also ending a loop (without the
/// workaround, ptxas 12.9 and 13.x fold `floor` and `ceil` of it here).
fn one_and_zero_bits_kernel() -> Kernel<(&'static [u64], &'static mut [u64])> {
    Kernel::<(&[u64], &mut [u64])>::build("select_one_zero_bits", |k, (flags, out)| {
        let i = k.grid1();
        k.if_(i.lt(flags.len()), |k| {
            let f = flags.at(i);
            let b = (f & 1u64).ne(0u64);
            k.if_(f.ne(3u64), |k| {
                let tiny = select(b, Expr::lit(f32::from_bits(1)), 0.0f32);
                let bits = select(b, Expr::lit(1u32), 0u32).bitcast::<f32>();
                let j = i * 9u64;
                let f32_bits = |x: Expr<f32>| x.bitcast::<u32>().cast::<u64>();
                out.set(j, f32_bits(tiny.floor()));
                out.set(j + 1u64, f32_bits(tiny.ceil()));
                out.set(j + 2u64, f32_bits(tiny.trunc()));
                out.set(j + 3u64, f32_bits(tiny.round()));
                out.set(j + 4u64, tiny.cast::<i32>().bitcast::<u32>().cast::<u64>());
                out.set(j + 5u64, tiny.cast::<f64>().bitcast::<u64>());
                out.set(j + 6u64, f32_bits(bits.ceil()));
                out.set(j + 7u64, bits.cast::<u32>().cast::<u64>());
                let v = k.var::<u32>(f.cast::<u32>());
                k.for_range(Expr::lit(1i64), (f >> 1u64).cast::<i64>() & 7i64, |k, _| {
                    v.set(v.get() ^ 31u32);
                    k.if_(b, |k| k.break_());
                });
                out.set(j + 8u64, v.get().cast::<u64>());
            });
        });
    })
    .unwrap()
}

/// Float conversions of `select(b, f32::from_bits(1), 0.0)`: the PTX compiler took the select
/// of the bits 1 and 0 for the numbers 1.0 and 0.0 (`floor` gave the subnormal, `ceil`,
/// `as i32` and `as f64` likewise wrong; fuzzer seed 1100238; src/codegen/ptx_fix/).
#[test]
#[ignore = "needs a CUDA GPU"]
fn float_conversions_of_a_select_of_one_and_zero_bits() {
    const FILL: u64 = 0x5a5a_5a5a_5a5a_5a5a;
    let k = one_and_zero_bits_kernel();
    let mut rng = crate::common::Rng::new();
    let n = 4096;
    let flags: Vec<u64> = rng.vec(n, |r| match r.next_u64() % 8 {
        0 => 3,
        _ => r.next_u64() % 64,
    });
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let df = s.to_device(&flags).unwrap();
    let mut out = ctx.alloc::<u64, _>(n * 9).unwrap();
    out.fill_async(FILL, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&df, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for (i, &f) in flags.iter().enumerate() {
        let tiny = if f & 1 != 0 { f32::from_bits(1) } else { 0.0 };
        let bits = f32::from_bits((f & 1) as u32);
        let mut v = f as u32;
        for _ in 1..(f >> 1) as i64 & 7 {
            v ^= 31;
            if f & 1 != 0 {
                break;
            }
        }
        let want = if f == 3 {
            [FILL; 9]
        } else {
            [
                tiny.floor().to_bits() as u64,
                tiny.ceil().to_bits() as u64,
                tiny.trunc().to_bits() as u64,
                tiny.round().to_bits() as u64,
                tiny as i32 as u32 as u64,
                (tiny as f64).to_bits(),
                bits.ceil().to_bits() as u64,
                bits as u32 as u64,
                v as u64,
            ]
        };
        assert_eq!(&got[i * 9..i * 9 + 9], &want, "flags[{i}] = {f:#x}");
    }
}

/// A variable set to `u32::MAX`, then to `1.0f32.to_bits()` on another path: the PTX
/// compiler (ptxas 12.9, the CUDA 13.0 driver's JIT) kept `u32::MAX` on both (fuzzer seed
/// 2400519; src/codegen/ptx_fix/).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_variable_set_to_minus_one_then_to_the_bits_of_one() {
    let k = Kernel::<(&[u64], &mut [u32])>::build("minus_one_then_one_f32", |k, (inp, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |k| {
            let (a, b) = (inp.at(i * 2u64), inp.at(i * 2u64 + 1u64));
            let v = k.var::<u32>(u32::MAX);
            let n = k.var(0u32);
            k.while_(
                |_| n.get().lt(1u32).and(a.ne(7u64)),
                |k| {
                    n.set(n.get() + 1u32);
                    k.for_step(
                        Expr::lit(1i64),
                        b.cast::<i64>() & 7i64,
                        Expr::lit(2i64),
                        |_, _| {
                            v.set(n.get().cast::<f32>().bitcast::<u32>());
                        },
                    );
                    k.if_((a & 1u64).ne(0u64), |_| {
                        v.set((a >> 32u64).cast::<u32>().popc())
                    });
                },
            );
            out.set(i, v.get());
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let n = 4096;
    let inp: Vec<u64> = rng.vec(2 * n, |r| match r.next_u64() % 4 {
        0 => 7,
        1 => r.next_u64() % 16,
        _ => r.next_u64(),
    });
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let di = s.to_device(&inp).unwrap();
    let mut out = ctx.alloc::<u32, _>(n).unwrap();
    out.fill_async(0x5a5a_5a5a, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&di, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let (a, b) = (inp[2 * i], inp[2 * i + 1]);
        let (mut v, mut m) = (u32::MAX, 0u32);
        while m < 1 && a != 7 {
            m += 1;
            for _ in (1..b as i64 & 7).step_by(2) {
                v = (m as f32).to_bits();
            }
            if a & 1 != 0 {
                v = ((a >> 32) as u32).count_ones();
            }
        }
        assert_eq!(got[i], v, "a={a:#x} b={b:#x}");
    }
}

/// The fuzzer's program that found the -1/1.0f merge in 64-bit registers (seed 2400519, as
/// minimised): `u32::MAX`, then `1.0f32.to_bits()` in a loop, both widened to `u64` for the
/// stores on two paths.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_fuzzers_minus_one_then_one_f32_program() {
    use cudajit::codegen::DeviceFn;
    type P = (bool, i32, u32, i64, u64, f32, f64);
    let f0 = DeviceFn::<P, u32>::build("f0", |_, (_, _, x, _, _, _, _)| x)
        .unwrap()
        .no_inline();
    let k = Kernel::<(&[u64], &mut [u64])>::build("fuzz_2400519", |k, (inp, out)| {
        let t = k.grid1();
        k.if_(t.lt(out.len() / 2), |k| {
            let at = |j: u64| inp.at(t * 10u64 + j);
            let b = (at(0) & 1u64).ne(0u64);
            let (i32_0, i32_1) = (at(1).cast::<u32>().bitcast::<i32>(), at(2).cast::<u32>());
            let (i64_0, i64_1, i64_2) = (
                at(3).bitcast::<i64>(),
                at(4).bitcast::<i64>(),
                at(5).bitcast::<i64>(),
            );
            let u64_2 = at(6);
            let f32_0 = at(7).cast::<u32>().bitcast::<f32>();
            let f32_1 = at(8).cast::<u32>().bitcast::<f32>();
            let f64_1 = at(9).bitcast::<f64>();
            let v0 = k.var::<u32>(u32::MAX);
            let v1 = k.var::<u64>(u64_2);
            let v3 = k.var(0u32);
            let cond = |_: &_| {
                v3.get()
                    .lt(1u32)
                    .and(f32_1.copysign(f32_0).le(i64_2.cast::<f32>()))
            };
            k.while_(cond, |k| {
                v3.set(v3.get() + 1u32);
                let end = (i64_0 << i64_1) & 7i64;
                k.for_step(Expr::lit(1i64), end, Expr::lit(2i64), |_, _| {
                    v0.set(v3.get().cast::<f32>().bitcast::<u32>());
                });
                k.if_else(
                    b,
                    |_| v0.set(f0.call((b, i32_0, i32_1.popc(), i64_0, v1.get(), f32_1, f64_1))),
                    |k| {
                        out.set(t * 2u64, v0.get().cast::<u64>());
                        out.set(t * 2u64 + 1u64, v1.get());
                        k.ret();
                    },
                );
            });
            out.set(t * 2u64, v0.get().cast::<u64>());
            out.set(t * 2u64 + 1u64, v1.get());
        });
    })
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let n = 4096;
    // The fuzzer's failing input vector, then random ones rich in small values.
    let mut inp: Vec<u64> = vec![
        0,
        29,
        31,
        63,
        2,
        i64::MAX as u64,
        47,
        3.0f32.to_bits() as u64,
        (-8.670_103e-10f32).to_bits() as u64,
        (-0.0f64).to_bits(),
    ];
    inp.extend(rng.vec(10 * (n - 1), |r| match r.next_u64() % 3 {
        0 => r.next_u64() % 8,
        1 => (r.next_u64() as f32 * 1e-30).to_bits() as u64,
        _ => r.next_u64(),
    }));
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let di = s.to_device(&inp).unwrap();
    let mut out = ctx.alloc::<u64, _>(2 * n).unwrap();
    out.fill_async(0x5a5a_5a5a_5a5a_5a5a, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&di, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for t in 0..n {
        let w = &inp[t * 10..t * 10 + 10];
        let b = w[0] & 1 != 0;
        let (i64_0, i64_1, i64_2) = (w[3] as i64, w[4] as i64, w[5] as i64);
        let (f32_0, f32_1) = (f32::from_bits(w[7] as u32), f32::from_bits(w[8] as u32));
        let (mut v0, v1, mut v3) = (u32::MAX, w[6], 0u32);
        while v3 < 1 && f32_1.copysign(f32_0) <= i64_2 as f32 {
            v3 += 1;
            for _ in (1..i64_0.wrapping_shl(i64_1 as u32) & 7).step_by(2) {
                v0 = (v3 as f32).to_bits();
            }
            if b {
                v0 = (w[2] as u32).count_ones();
            } else {
                break;
            }
        }
        assert_eq!(&got[2 * t..2 * t + 2], &[v0 as u64, v1], "inputs {w:x?}");
    }
}

/// `bool as u32 as f32` (and `as f64`): the PTX compiler converted a select of 1 and 0 to the
/// float bits 1 instead of 1.0 (fuzzer seed 8300081); and float-to-int casts after a min/max:
/// it reordered LLVM's clamp for `as` with the min before it, wrong for NaN
/// (`1.0f64.min(NaN) as u32` gave 0; seed 8300275); and LLVM 19 turning a `-1`/`0` select cast
/// to float into 1.0 (seed 11500273). In src/codegen/ptx_fix/ and lower.rs.
#[test]
#[ignore = "needs a CUDA GPU"]
#[allow(clippy::manual_clamp)] // min then max on purpose: NaN goes through both, unlike clamp
fn bool_to_float_and_min_max_to_int_conversions() {
    let k = Kernel::<(&[u64], &[f64], &mut [u64])>::build(
        "bool_float_minmax_int",
        |k, (bs, xs, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                let w = bs.at(i);
                let (b0, b1) = ((w & 1u64).ne(0u64), (w & 2u64).ne(0u64));
                let u = select(b0, Expr::lit(false), b1).cast::<u32>();
                let x = xs.at(i);
                let xf = x.cast::<f32>();
                let o = i * 10u64;
                out.set(o, u.cast::<f32>().bitcast::<u32>().cast::<u64>());
                out.set(o + 1u64, u.cast::<f64>().bitcast::<u64>());
                out.set(
                    o + 2u64,
                    Expr::lit(1.0f64).min(x).cast::<u32>().cast::<u64>(),
                );
                out.set(
                    o + 3u64,
                    Expr::lit(-1.5f64).max(x).cast::<i64>().bitcast::<u64>(),
                );
                out.set(o + 4u64, Expr::lit(1.0f32).min(xf).cast::<u64>());
                out.set(
                    o + 5u64,
                    xf.max(-7.0f32).cast::<i32>().bitcast::<u32>().cast::<u64>(),
                );
                out.set(
                    o + 6u64,
                    x.min(3e9f64).max(-1.0f64).cast::<u32>().cast::<u64>(),
                );
                out.set(o + 7u64, x.cast::<i64>().bitcast::<u64>());
                // `sitofp (sext i1)`, which LLVM 19 folds and then lowers as unsigned (seed
                // 11500273)
                let m1 = select(b1, Expr::lit(-1i64), 0i64);
                out.set(o + 8u64, m1.cast::<f32>().bitcast::<u32>().cast::<u64>());
                let q = Expr::lit(0i64) / (w & 2u64).cast::<i64>();
                out.set(o + 9u64, q.cast::<f64>().bitcast::<u64>());
            });
        },
    )
    .unwrap();
    let mut rng = crate::common::Rng::new();
    let special = [
        f64::NAN,
        -f64::NAN,
        0.0,
        -0.0,
        0.5,
        1.0,
        -1.0,
        2.5,
        -7.5,
        3e9,
        5e9,
        -5e9,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        9.3e18,
        -9.3e18,
        1.8e19,
    ];
    let n = 4096;
    let xs: Vec<f64> = rng.vec(n, |r| match r.next_u64() % 3 {
        0 => special[(r.next_u64() % special.len() as u64) as usize],
        1 => (r.next_u64() % 2000) as f64 / 7.0 - 140.0,
        _ => f64::from_bits(r.next_u64()),
    });
    let bs: Vec<u64> = rng.vec(n, |r| r.next_u64() % 4);
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let (db, dx) = (s.to_device(&bs).unwrap(), s.to_device(&xs).unwrap());
    let mut out = ctx.alloc::<u64, _>(n * 10).unwrap();
    out.fill_async(0x5a5a_5a5a_5a5a_5a5a, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&db, &dx, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let (w, x) = (bs[i], xs[i]);
        let u = (if w & 1 != 0 { false } else { w & 2 != 0 }) as u32;
        let xf = x as f32;
        let want = [
            (u as f32).to_bits() as u64,
            (u as f64).to_bits(),
            1.0f64.min(x) as u32 as u64,
            (-1.5f64).max(x) as i64 as u64,
            1.0f32.min(xf) as u64,
            xf.max(-7.0) as i32 as u32 as u64,
            x.min(3e9).max(-1.0) as u32 as u64,
            x as i64 as u64,
            (if w & 2 != 0 { -1.0f32 } else { 0.0 }).to_bits() as u64,
            (if w & 2 == 0 { -1.0f64 } else { 0.0 }).to_bits(),
        ];
        assert_eq!(
            &got[i * 10..i * 10 + 10],
            &want,
            "b = {w}, x = {x:e} ({:#x})",
            x.to_bits()
        );
    }
}
