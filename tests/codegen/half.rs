//! The 16-bit floats `f16` and `bf16`: arithmetic, comparisons, casts to and from every scalar
//! type, math, atomics (global and shared), 2- and 4-wide vector loads, shuffles, scalar
//! parameters and the ops kernels, each compiled for sm_75 and sm_90 and checked by ptxas;
//! the PTX they lower to (native f16 everywhere, native bf16 on sm_90, through f32 on sm_75).

use cudajit::codegen::{
    Expr, Float, Kernel, KernelParam, KernelParams, PtxOptions, Scalar, Signed, FULL_MASK,
};
use cudajit::ops::{Elem, Elementwise, Reduction, Scalar as EwScalar};
use cudajit::{bf16, f16};

use crate::common::{check_ptx, compile_all, TARGETS};

fn ptx_for<P: KernelParams>(k: &Kernel<P>, cc: (u32, u32)) -> String {
    k.compile_ptx(&PtxOptions {
        cc,
        ..k.options().clone()
    })
    .unwrap()
}

/// Every operator on two values (12 results) and the comparisons (6).
type ArithKernel<T> = Kernel<(
    &'static [T],
    &'static [T],
    &'static mut [T],
    &'static mut [bool],
)>;

fn arith_kernel<T: Float + Signed>(name: &str) -> ArithKernel<T> {
    Kernel::<(&[T], &[T], &mut [T], &mut [bool])>::build(name, |k, (a, b, out, flags)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            let (x, y) = (a.at(i), b.at(i));
            let vals = [
                x + y,
                x - y,
                x * y,
                x / y,
                x % y,
                x.min(y),
                x.max(y),
                -x,
                x * y + x,
                x.mul_add(y, x),
                x.sqrt(),
                x.abs(),
            ];
            for (j, v) in vals.into_iter().enumerate() {
                out.set(i * 12u64 + j as u64, v);
            }
            let cmps = [x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y)];
            for (j, c) in cmps.into_iter().enumerate() {
                flags.set(i * 6u64 + j as u64, c);
            }
        });
    })
    .unwrap()
}

#[test]
fn f16_arithmetic_is_native_on_every_target() {
    let k = arith_kernel::<f16>("arith_f16");
    compile_all(&k);
    for cc in TARGETS {
        let ptx = ptx_for(&k, cc);
        for op in [
            "add.rn.f16",
            "sub.rn.f16",
            "mul.rn.f16",
            "fma.rn.f16",
            "setp.lt.f16",
        ] {
            assert!(ptx.contains(op), "sm_{}{}: no {op}\n{ptx}", cc.0, cc.1);
        }
        // Division is f32's correctly rounded one, rounded once to f16.
        assert!(
            ptx.contains("div.rn.f32") && ptx.contains("cvt.rn.f16.f32"),
            "{ptx}"
        );
        // 2-byte loads and stores.
        assert!(
            ptx.contains("ld.global.nc.b16") || ptx.contains("ld.global.nc.u16"),
            "{ptx}"
        );
    }
}

#[test]
fn bf16_arithmetic_is_native_on_sm90_and_through_f32_on_sm75() {
    let k = arith_kernel::<bf16>("arith_bf16");
    compile_all(&k);
    let p90 = ptx_for(&k, (9, 0));
    for op in [
        "add.rn.bf16",
        "sub.rn.bf16",
        "mul.rn.bf16",
        "fma.rn.bf16",
        "setp.lt.bf16",
    ] {
        assert!(p90.contains(op), "no {op}\n{p90}");
    }
    let p80 = ptx_for(&k, (8, 0));
    check_ptx(&p80, (8, 0), "arith_bf16");
    assert!(
        p80.contains("fma.rn.bf16") && p80.contains("cvt.rn.bf16.f32"),
        "{p80}"
    );
    let p75 = ptx_for(&k, (7, 5));
    assert!(
        !p75.contains(".bf16"),
        "sm_75 has no bf16 instructions:\n{p75}"
    );
    assert!(
        p75.contains("add.rn.f32") && p75.contains("mul.rn.f32"),
        "{p75}"
    );
    // mul_add before sm_80: the f32 fma rounded to odd (four roundings compared), once.
    assert!(
        p75.contains("fma.rm.f32") && p75.contains("fma.rp.f32"),
        "{p75}"
    );
    assert!(p75.contains("fma.rz.f32"), "{p75}");
}

/// A kernel casting `S` to `D` elementwise.
fn cast_kernel<S: Scalar, D: Scalar>() -> Kernel<(&'static [S], &'static mut [D])> {
    let name = format!("cast_{}_{}", S::TY.name(), D::TY.name());
    Kernel::<(&[S], &mut [D])>::build(&name, |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).cast::<D>()));
    })
    .unwrap()
}

/// Casts from and to every scalar type (and the other half type).
fn casts_of<H: Scalar>() -> usize {
    let mut n = 0;
    macro_rules! both {
        ($($t:ty),*) => {$(
            compile_all(&cast_kernel::<H, $t>());
            compile_all(&cast_kernel::<$t, H>());
            n += 2;
        )*};
    }
    both!(bool, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    n
}

#[test]
fn casts_between_half_types_and_every_scalar_type() {
    let n = casts_of::<f16>() + casts_of::<bf16>();
    compile_all(&cast_kernel::<f16, bf16>());
    compile_all(&cast_kernel::<bf16, f16>());
    assert_eq!(n + 2, 46);
}

#[test]
fn casts_round_once() {
    // f64 to f16 directly (not through f32, which would round twice).
    let ptx = ptx_for(&cast_kernel::<f64, f16>(), (7, 5));
    assert!(ptx.contains("cvt.rn.f16.f64"), "{ptx}");
    // f64 to bf16: native on sm_90; before, LLVM's round-to-odd through f32.
    assert!(ptx_for(&cast_kernel::<f64, bf16>(), (9, 0)).contains("cvt.rn.bf16.f64"));
    // 64-bit integers to bf16: through f32 rounded to odd, on every target.
    for cc in TARGETS {
        let ptx = ptx_for(&cast_kernel::<i64, bf16>(), cc);
        assert!(
            ptx.contains("cvt.rz.f32.s64") && ptx.contains("or.b32"),
            "{ptx}"
        );
        let ptx = ptx_for(&cast_kernel::<u64, bf16>(), cc);
        assert!(ptx.contains("cvt.rz.f32.u64"), "{ptx}");
    }
    // 32-bit integers to bf16: exactly to f64 first.
    let ptx = ptx_for(&cast_kernel::<i32, bf16>(), (9, 0));
    assert!(ptx.contains("cvt.rn.f64.s32"), "{ptx}");
    // Half to integers: widened to f32, then the saturating conversion.
    let ptx = ptx_for(&cast_kernel::<f16, i32>(), (9, 0));
    assert!(
        ptx.contains("cvt.f32.f16") && ptx.contains("cvt.rzi.s32.f32"),
        "{ptx}"
    );
}

/// Every math function of `Float` on `T`.
fn math_kernel<T: Float>(
    name: &str,
) -> Kernel<(&'static [T], &'static mut [T], &'static mut [bool])> {
    Kernel::<(&[T], &mut [T], &mut [bool])>::build(name, |k, (a, out, flags)| {
        let i = k.grid1();
        let x = a.at(i);
        let y = a.at(i + 1u64);
        let vals = [
            x.sqrt(),
            x.rsqrt(),
            x.cbrt(),
            x.exp(),
            x.exp2(),
            x.exp_m1(),
            x.ln(),
            x.log2(),
            x.log10(),
            x.ln_1p(),
            x.powf(y),
            x.sin(),
            x.cos(),
            x.tan(),
            x.asin(),
            x.acos(),
            x.atan(),
            x.atan2(y),
            x.sinh(),
            x.cosh(),
            x.tanh(),
            x.erf(),
            x.abs(),
            x.floor(),
            x.ceil(),
            x.trunc(),
            x.round(),
            x.mul_add(y, x),
            x.copysign(y),
        ];
        for (j, v) in vals.into_iter().enumerate() {
            out.set(i * 29u64 + j as u64, v);
        }
        flags.set(i * 2u64, x.is_nan());
        flags.set(i * 2u64 + 1u64, x.is_infinite());
    })
    .unwrap()
}

#[test]
fn math_functions_on_half_types_compute_in_f32() {
    let ptxs = [
        (compile_all(&math_kernel::<f16>("math_f16")).0, "f16"),
        (compile_all(&math_kernel::<bf16>("math_bf16")).0, "bf16"),
    ];
    for (ptx, sfx) in ptxs {
        // Computed in f32, each result rounded once.
        assert!(ptx.contains(&format!("cvt.rn.{sfx}.f32")), "{ptx}");
        assert!(ptx.contains("sqrt.rn.f32"), "{ptx}");
    }
}

#[test]
fn half_atomics() {
    fn one<T: Float>(name: &str) -> Kernel<(&'static mut [T], &'static [T], &'static mut [T])> {
        let k = Kernel::<(&mut [T], &[T], &mut [T])>::build(name, |k, (a, v, old)| {
            let i = k.grid1();
            let x = v.at(i);
            let j = i % 5u64;
            let sh = k.shared_array::<T>(64);
            let ops = [
                a.atomic_add(j, x),
                a.atomic_sub(j, x),
                a.atomic_min(j, x),
                a.atomic_max(j, x),
                a.atomic_nanmin(j, x),
                a.atomic_nanmax(j, x),
                a.atomic_exch(j, x),
                a.atomic_cas(j, x, x + x),
                a.atomic_load(j),
                sh.atomic_add(j, x),
                sh.atomic_max(j, x),
            ];
            for (s, r) in ops.into_iter().enumerate() {
                old.set(i * 11u64 + s as u64, r);
            }
        })
        .unwrap();
        compile_all(&k);
        k
    }
    let k = one::<f16>("atomics_f16");
    for cc in TARGETS {
        let ptx = ptx_for(&k, cc);
        assert!(ptx.contains("atom.global.add.noftz.f16"), "{ptx}");
        assert!(ptx.contains("atom.shared.add.noftz.f16"), "{ptx}");
        // min/max/exch/cas: a compare-and-swap loop on the 32-bit word.
        assert!(ptx.contains("atom.global.cas.b32"), "{ptx}");
    }
    let k = one::<bf16>("atomics_bf16");
    assert!(ptx_for(&k, (9, 0)).contains("atom.global.add.noftz.bf16"));
    let p75 = ptx_for(&k, (7, 5));
    assert!(!p75.contains("atom.global.add.noftz.bf16"), "{p75}");
    assert!(p75.contains("atom.global.cas.b32"), "{p75}");
}

#[test]
fn half2_vector_loads_and_stores() {
    fn one<T: Float>(name: &str) -> String {
        let k = Kernel::<(&[T], &mut [T])>::build(name, |k, (x, out)| {
            let i = k.grid1();
            let [a, b] = x.load_vec::<2>(i);
            out.store_vec(i, [b, a]);
            let [c, d, e, f] = x.load_vec::<4>(i + 8u64);
            out.store_vec(i + 8u64, [f, e, d, c]);
        })
        .unwrap();
        compile_all(&k).0
    }
    for (ptx, name) in [
        (one::<f16>("vec_f16"), "f16"),
        (one::<bf16>("vec_bf16"), "bf16"),
    ] {
        // 2 x 16 bits in one 4-byte access, 4 x 16 bits in one 8-byte access.
        assert!(ptx.contains("ld.global.nc.u32"), "{name}: {ptx}");
        assert!(ptx.contains("st.global.b32"), "{name}: {ptx}");
        // 4 x f16 in one 8-byte access; LLVM 19 splits a 4 x bf16 load into two 4-byte ones.
        if name == "f16" {
            assert!(ptx.contains("ld.global.nc.v4.u16"), "{name}: {ptx}");
        } else {
            assert!(
                ptx.matches("ld.global.nc.u32").count() >= 3,
                "{name}: {ptx}"
            );
        }
        assert!(ptx.contains("st.global.v4.b16"), "{name}: {ptx}");
    }
}

#[test]
fn shuffles_match_and_parameters() {
    fn one<T: Float + KernelParam<Handle = Expr<T>>>(name: &str, v: T) {
        let k = Kernel::<(&[T], T, &mut [T], &mut [u32])>::build(name, |k, (x, s, out, m)| {
            let i = k.grid1();
            let a = x.at(i) * s + Expr::lit(v);
            out.set(i, k.shfl_down_sync(FULL_MASK, a, 1u32));
            out.set(i + 32u64, k.shfl_xor_sync(FULL_MASK, a, 3u32));
            out.set(i + 64u64, k.shfl_sync(FULL_MASK, a, 0u32));
            out.set(i + 96u64, k.shfl_up_sync(FULL_MASK, a, 2u32));
            m.set(i, k.match_any_sync(FULL_MASK, a));
        })
        .unwrap();
        let (ptx, _) = compile_all(&k);
        assert!(ptx.contains("shfl.sync.down.b32"), "{ptx}");
        assert!(ptx.contains("match.any.sync.b32"), "{ptx}");
    }
    one::<f16>("shfl_f16", f16::from_f32(1.5));
    one::<bf16>("shfl_bf16", bf16::from_f32(-2.25));
}

#[test]
fn half_constants_keep_their_bits() {
    let k = Kernel::<(&mut [f16], &mut [bf16])>::build("consts_half", |k, (a, b)| {
        let i = k.grid1();
        a.set(i, Expr::lit(f16::from_bits(0x7e01)));
        a.set(i + 1u64, Expr::lit(f16::MIN_POSITIVE_SUBNORMAL));
        b.set(i, Expr::lit(bf16::from_bits(0xff81)));
        b.set(i + 1u64, Expr::lit(bf16::MAX));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    // The exact bits, a NaN's payload too (stored as 16-bit integers).
    for bits in [0x7e01, 0x0001, 0xff81, 0x7f7f] {
        assert!(ptx.contains(&format!(", {bits};")), "{bits:#x}: {ptx}");
    }
}

#[test]
fn elementwise_and_reductions_on_half_types() {
    let ew = Elementwise::<(EwScalar<f16>, Elem<f16>, Elem<bf16>), Expr<f16>>::new(
        "axpy_half",
        |(a, x, y)| a * x + y.cast::<f16>(),
    )
    .unwrap();
    for cc in TARGETS {
        for (name, ptx) in ew.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3).unwrap() {
            check_ptx(&ptx, cc, &name);
        }
    }
    let sum =
        Reduction::<bf16, f32, f32>::new("sum_bf16_t", |x| x.cast::<f32>(), |a, b| a + b, 0.0)
            .unwrap()
            .post(|s, _| s.cast::<bf16>().cast::<f32>());
    let max =
        Reduction::<f16, f16, f16>::new("max_f16_t", |x| x, |a, b| a.max(b), f16::NEG_INFINITY)
            .unwrap();
    for cc in TARGETS {
        let opts = PtxOptions::for_cc(cc.0, cc.1);
        for (name, ptx) in sum
            .variants_ptx(&opts)
            .unwrap()
            .into_iter()
            .chain(max.variants_ptx(&opts).unwrap())
        {
            check_ptx(&ptx, cc, &name);
        }
    }
}

#[test]
fn argmin_argmax_and_device_functions_on_half_types() {
    for cc in TARGETS {
        let opts = PtxOptions::for_cc(cc.0, cc.1);
        for largest in [false, true] {
            for (name, ptx) in cudajit::ops::arg_variants_ptx::<f16>(largest, &opts)
                .unwrap()
                .into_iter()
                .chain(cudajit::ops::arg_variants_ptx::<bf16>(largest, &opts).unwrap())
            {
                check_ptx(&ptx, cc, &name);
            }
        }
    }
    // A non-inlined device function taking and returning half values.
    let f = cudajit::codegen::DeviceFn::<(f16, bf16), bf16>::build("half_fn", |_, (a, b)| {
        a.cast::<bf16>() * b + b
    })
    .unwrap()
    .no_inline();
    // Half values in and out of a local array, a loop, and a printf (promoted to f64).
    let k = Kernel::<(&[f16], &mut [bf16])>::build("half_local", move |k, (x, out)| {
        let i = k.grid1();
        out.set(i + 8u64, f.call((x.at(i), bf16::from_f32(0.5).into())));
        let loc = k.local_array::<f16>(4);
        k.for_range(0u64, 4u64, |_, j| loc.set(j, x.at(i + j)));
        let acc = k.var(bf16::from_f32(0.0));
        k.for_range(0u64, 4u64, |_, j| {
            acc.set(acc.get() + loc.at(j).cast::<bf16>());
        });
        k.printf("%f %f\n", &[x.at(i).into(), acc.get().into()]);
        out.set(i, acc.get());
    })
    .unwrap();
    compile_all(&k);
}

/// `bitcast` between f16 and bf16 (two float types of one size) goes through i16: LLVM's NVPTX
/// back end cannot select a direct `bf16 = bitcast f16` and aborted (found by the
/// whole-language fuzzer, `--lang whole --ptx-only 9.0 --seed 31000000`).
#[test]
fn bitcasts_between_f16_and_bf16_compile() {
    let k = Kernel::<(&[f16], &[bf16], &mut [bf16], &mut [f16])>::build(
        "bitcast_half",
        |k, (a, b, oa, ob)| {
            let i = k.grid1();
            oa.set(i, a.at(i).bitcast::<bf16>());
            ob.set(
                i,
                b.at(i).bitcast::<f16>() + Expr::lit(f16::ONE).bitcast::<bf16>().bitcast(),
            );
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains(".entry bitcast_half"), "{ptx}");
}

/// With fastmath (f32 denormals flushed), LLVM 19 emitted `add.rn.ftz.bf16`, `fma.rn.ftz.bf16`
/// and `setp.*.ftz.bf16`, which ptxas rejects: bf16 `+ - *`, `mul_add` and comparisons of two
/// values go through f32 there (found by the whole-language fuzzer with fastmath). Comparisons
/// with a constant still come out as `setp.*.ftz.bf16` (the fuzzer leaves bf16 out of its
/// fastmath batches for that; see docs/RELIABILITY.md).
#[test]
fn bf16_arithmetic_with_fastmath_passes_ptxas() {
    let opts = PtxOptions::default().fastmath(true);
    let k = Kernel::<(&[bf16], &[bf16], &mut [bf16], &mut [bool])>::build_with(
        "bf16_fast",
        opts,
        |k, (a, b, o, c)| {
            let i = k.grid1();
            let (x, y) = (a.at(i), b.at(i));
            o.set(i, (x + y) * (x - y) + x.mul_add(y, x));
            c.set(i, x.lt(y));
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(!ptx.contains("ftz.bf16"), "{ptx}");
}

/// A bf16 widened to f32, plus zero, rounded to f16: LLVM 19's instruction combiner took a
/// `bfloat` for a type that fits in `half` and moved the rounding before the addition
/// (`fadd half (fptrunc x), 0.0`, which gives +0.0 where the sum rounds to -0.0; the
/// whole-language campaign's seed 45400243). bf16 widens as bits, so the sum stays in f32.
#[test]
fn bf16_to_f16_through_an_f32_sum_is_not_narrowed() {
    let k = Kernel::<(&[bf16], &mut [f16])>::build("bf16_f16_sum", |k, (a, out)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            out.set(
                i,
                (a.at(i).cast::<f32>() - (-Expr::lit(0.0f32))).cast::<f16>(),
            );
        });
    })
    .unwrap();
    let ir = k.llvm_ir(&PtxOptions::default()).unwrap();
    assert!(!ir.contains("fadd half"), "{ir}");
    assert!(
        ir.contains("fadd float") || ir.contains("fsub float"),
        "{ir}"
    );
}
