//! FMA contraction (docs/GUIDE.md, "FMA contraction"): the builder records a float `a*b + c`,
//! `c + a*b`, `a*b - c`, `c - a*b` as one fused multiply-add by a fixed rule, which becomes
//! `fma.rn`; with contraction off the PTX keeps `mul.rn`/`add.rn`/`sub.rn`, whose explicit
//! rounding the PTX compiler may not fuse. The float instructions of each kernel are compared
//! exactly; every kernel is also checked by ptxas (sm_75 and sm_90).

use cudajit::codegen::{CExpr, DeviceFn, Expr, Kernel, KernelParams, PtxOptions};
use cudajit::ops::{Elem, Elementwise, Scalar as EwScalar};
use cudajit::{bf16, f16};
use num_complex::Complex;

use super::common::{check_ptx, compile_all};

/// The float arithmetic of `ptx`, in order: each `add`/`sub`/`mul`/`fma`/`neg` instruction on
/// `f16`, `bf16`, `f32` or `f64` (its opcode with modifiers, e.g. `fma.rn.f32`).
fn float_ops(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|op| {
            let base = op.split('.').next().unwrap_or("");
            matches!(base, "add" | "sub" | "mul" | "fma" | "neg")
                && [".f32", ".f64", ".f16", ".bf16"]
                    .iter()
                    .any(|t| op.ends_with(t))
        })
        .map(str::to_string)
        .collect()
}

/// The float arithmetic of `k`'s sm_90 PTX (checked by ptxas for every target first).
fn ops_of<P: KernelParams>(k: &Kernel<P>) -> Vec<String> {
    let ptx = compile_all(k).0;
    if std::env::var_os("SHOW_PTX").is_some() {
        println!("{ptx}");
    }
    float_ops(&ptx)
}

fn on() -> PtxOptions {
    PtxOptions::default()
}

fn off() -> PtxOptions {
    PtxOptions::default().contract(false)
}

/// A named body `f(a, b, c)` and the float instructions it should give.
type Case<T> = (
    &'static str,
    fn(Expr<T>, Expr<T>, Expr<T>) -> Expr<T>,
    &'static [&'static str],
);

type Abc<T> = (&'static [T], &'static [T], &'static [T], &'static mut [T]);

/// `out[i] = f(a[i], b[i], c[i])` built with `opts`.
fn abc<T: cudajit::codegen::Float>(
    name: &str,
    opts: PtxOptions,
    f: impl Fn(Expr<T>, Expr<T>, Expr<T>) -> Expr<T>,
) -> Kernel<Abc<T>> {
    Kernel::<Abc<T>>::build_with(name, opts, |k, (a, b, c, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            out.set(i, f(a.at(i), b.at(i), c.at(i)))
        });
    })
    .unwrap()
}

#[test]
fn contraction_is_on_by_default() {
    assert!(PtxOptions::default().contract);
    assert!(PtxOptions::for_cc(9, 0).contract);
    let k = Kernel::<Abc<f32>>::build("default_fused", |k, (a, b, c, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, a.at(i) * b.at(i) + c.at(i)));
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["fma.rn.f32"]);
}

#[test]
fn the_four_shapes_fuse_in_f32() {
    let cases: [Case<f32>; 4] = [
        ("mul_add", |a, b, c| a * b + c, &["fma.rn.f32"]),
        ("add_mul", |a, b, c| c + a * b, &["fma.rn.f32"]),
        // a*b - c = fma(a, b, -c); c - a*b = fma(-a, b, c): the negation is exact (LLVM
        // flips the sign bit with an `xor`, checked below).
        ("mul_sub", |a, b, c| a * b - c, &["fma.rn.f32"]),
        ("sub_mul", |a, b, c| c - a * b, &["fma.rn.f32"]),
    ];
    for (name, f, want) in cases {
        let k = abc(&format!("{name}_on"), on(), f);
        let ptx = compile_all(&k).0;
        assert_eq!(float_ops(&ptx), want, "{name}");
        if name.contains("sub") {
            assert!(
                ptx.contains("0x80000000") || ptx.contains("neg.f32"),
                "{ptx}"
            );
        }
    }
}

#[test]
fn the_four_shapes_fuse_in_f64() {
    let cases: [Case<f64>; 4] = [
        ("mul_add", |a, b, c| a * b + c, &["fma.rn.f64"]),
        ("add_mul", |a, b, c| c + a * b, &["fma.rn.f64"]),
        ("mul_sub", |a, b, c| a * b - c, &["fma.rn.f64"]),
        ("sub_mul", |a, b, c| c - a * b, &["fma.rn.f64"]),
    ];
    for (name, f, want) in cases {
        assert_eq!(
            ops_of(&abc(&format!("{name}_on_f64"), on(), f)),
            want,
            "{name}"
        );
    }
}

#[test]
fn contraction_off_keeps_rounded_mul_and_add() {
    let f32_cases: [Case<f32>; 4] = [
        (
            "mul_add",
            |a, b, c| a * b + c,
            &["mul.rn.f32", "add.rn.f32"],
        ),
        (
            "add_mul",
            |a, b, c| c + a * b,
            &["mul.rn.f32", "add.rn.f32"],
        ),
        (
            "mul_sub",
            |a, b, c| a * b - c,
            &["mul.rn.f32", "sub.rn.f32"],
        ),
        (
            "sub_mul",
            |a, b, c| c - a * b,
            &["mul.rn.f32", "sub.rn.f32"],
        ),
    ];
    for (name, f, want) in f32_cases {
        assert_eq!(
            ops_of(&abc(&format!("{name}_off"), off(), f)),
            want,
            "{name}"
        );
    }
    let k = abc::<f64>("mul_add_off_f64", off(), |a, b, c| a * b + c);
    assert_eq!(ops_of(&k), ["mul.rn.f64", "add.rn.f64"]);
}

/// PTX's `mul`/`add`/`sub` without a rounding modifier may be fused by the PTX compiler (the PTX
/// ISA: "mul/add sequences with no rounding modifiers may be optimized to use fused-multiply-add
/// instructions"); with an explicit `.rn` they are not. With contraction off, every f32 and f64
/// multiply, add and subtract carries `.rn`, on every target and also with fastmath.
#[test]
fn unfused_float_arithmetic_always_carries_rn() {
    for fast in [false, true] {
        let opts = off().fastmath(fast);
        let k = Kernel::<Abc<f32>>::build_with("many_off", opts, |k, (a, b, c, out)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| {
                let (x, y, z) = (a.at(i), b.at(i), c.at(i));
                let acc = k.var(z);
                k.for_range(0u32, 4u32, |_, _| acc.set(acc.get() * x + y));
                out.set(i, acc.get() * y - x * z + (x * x - y));
            });
        })
        .unwrap();
        for cc in [(7, 5), (9, 0)] {
            let ptx = k
                .compile_ptx(&PtxOptions {
                    cc,
                    ..k.options().clone()
                })
                .unwrap();
            check_ptx(&ptx, cc, "many_off");
            let ops = float_ops(&ptx);
            assert!(!ops.is_empty(), "{ptx}");
            for op in &ops {
                assert!(
                    !op.starts_with("fma") && op.contains(".rn"),
                    "fastmath {fast}, sm_{}{}: {op} in\n{ptx}",
                    cc.0,
                    cc.1
                );
            }
        }
    }
}

#[test]
fn fastmath_with_contraction_fuses_with_ftz() {
    let k = abc::<f32>("fast_on", on().fastmath(true), |a, b, c| a * b + c);
    assert_eq!(ops_of(&k), ["fma.rn.ftz.f32"]);
    let k = abc::<f32>("fast_off", off().fastmath(true), |a, b, c| a * b + c);
    assert_eq!(ops_of(&k), ["mul.rn.ftz.f32", "add.rn.ftz.f32"]);
}

#[test]
fn a_product_used_elsewhere_stays_and_the_add_still_fuses() {
    type P = (
        &'static [f32],
        &'static [f32],
        &'static [f32],
        &'static mut [f32],
    );
    let k = Kernel::<P>::build("shared_product", |k, (a, b, c, out)| {
        let i = k.grid1();
        k.if_(i.lt(c.len()), |_| {
            let p = a.at(i) * b.at(i);
            out.set(i * 2u64, p + c.at(i));
            out.set(i * 2u64 + 1u64, p);
        });
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["mul.rn.f32", "fma.rn.f32"]);
}

#[test]
fn two_products_fuse_the_left_one() {
    // a*b + c*d = fma(a, b, c*d): the left operand's product is fused, the right one rounds.
    type P = (&'static [f64], &'static mut [f64]);
    let k = Kernel::<P>::build("left_first", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let (a, b, c, d) = (
                x.at(i * 4u64),
                x.at(i * 4u64 + 1u64),
                x.at(i * 4u64 + 2u64),
                x.at(i * 4u64 + 3u64),
            );
            out.set(i, a * b + c * d);
        });
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["mul.rn.f64", "fma.rn.f64"]);
}

#[test]
fn no_contraction_through_variables_chains_or_negations() {
    type P = (&'static [f32], &'static mut [f32]);
    let k = Kernel::<P>::build("not_fused", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let (a, b, c) = (x.at(i * 3u64), x.at(i * 3u64 + 1u64), x.at(i * 3u64 + 2u64));
            // A product read back from a variable is not a product any more.
            let v = k.var(a * b);
            out.set(i * 3u64, v.get() + c);
            // A negated product is not fused either.
            out.set(i * 3u64 + 1u64, -(b * c) + a);
            // a*b + c fuses; the fma's result plus c does not fuse again.
            out.set(i * 3u64 + 2u64, a * b + c + c);
        });
    })
    .unwrap();
    assert_eq!(
        ops_of(&k),
        [
            "mul.rn.f32",
            "add.rn.f32",
            "mul.rn.f32",
            "sub.rn.f32",
            "fma.rn.f32",
            "add.rn.f32"
        ]
    );
}

#[test]
fn accumulating_in_a_loop_fuses() {
    // The dot-product step `acc += x * y` (and `acc.set(acc.get() + x * y)`) is one fma.
    type P = (&'static [f32], &'static [f32], &'static mut [f32]);
    for (name, opts, want) in [
        ("dot_on", on(), &["fma.rn.f32"][..]),
        ("dot_off", off(), &["mul.rn.f32", "add.rn.f32"][..]),
    ] {
        let k = Kernel::<P>::build_with(name, opts, |k, (x, y, out)| {
            let acc = k.var(0.0f32);
            k.for_range(0u64, x.len(), |_, j| acc.add_assign(x.at(j) * y.at(j)));
            k.if_(k.grid1().eq(0u64), |_| out.set(0u64, acc.get()));
        })
        .unwrap();
        let ops = ops_of(&k);
        let mut uniq = ops.clone();
        uniq.dedup();
        assert_eq!(uniq, want, "{name}: {ops:?}");
    }
}

#[test]
fn integers_are_untouched() {
    type P = (&'static [i32], &'static mut [i32]);
    let build = |name: &str, opts: PtxOptions| {
        let k = Kernel::<P>::build_with(name, opts, |k, (x, out)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| {
                let v = x.at(i);
                out.set(i, v * v + 3i32);
            });
        })
        .unwrap();
        compile_all(&k).0
    };
    let (a, b) = (build("int_on", on()), build("int_off", off()));
    assert_eq!(
        a.replace("int_on", "K"),
        b.replace("int_off", "K"),
        "integer arithmetic does not depend on contraction"
    );
}

#[test]
fn half_types_fuse_too() {
    let k = abc::<f16>("f16_on", on(), |a, b, c| a * b + c);
    assert_eq!(ops_of(&k), ["fma.rn.f16"]);
    let k = abc::<f16>("f16_off", off(), |a, b, c| a * b + c);
    assert_eq!(ops_of(&k), ["mul.rn.f16", "add.rn.f16"]);
    let k = abc::<bf16>("bf16_on", on(), |a, b, c| c - a * b);
    assert_eq!(ops_of(&k), ["neg.bf16", "fma.rn.bf16"]);
    let k = abc::<bf16>("bf16_off", off(), |a, b, c| c - a * b);
    assert_eq!(ops_of(&k), ["mul.rn.bf16", "sub.rn.bf16"]);
}

#[test]
fn complex_arithmetic_never_contracts() {
    // Complex formulas round per operation (docs/MATH.md), with contraction on or off; the
    // real parts a user computes still follow the kernel's setting.
    type P = (
        &'static [Complex<f64>],
        &'static [Complex<f64>],
        &'static mut [Complex<f64>],
    );
    let k = Kernel::<P>::build("cmul_on", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let (z, w) = (x.at(i), y.at(i));
            out.set(i, z * w + CExpr::new(z.re * w.re, w.im));
        });
    })
    .unwrap();
    let ops = ops_of(&k);
    assert!(!ops.iter().any(|o| o.starts_with("fma")), "{ops:?}");
}

#[test]
fn elementwise_follows_its_options() {
    type I = (EwScalar<f32>, Elem<f32>, Elem<f32>);
    let axpy = Elementwise::<I, _>::new("axpy_on", |(a, x, y)| a * x + y).unwrap();
    let ptx = axpy.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    check_ptx(&ptx, (9, 0), "axpy_on");
    assert_eq!(float_ops(&ptx), ["fma.rn.f32"]);
    let axpy = Elementwise::<I, _>::with_options("axpy_off", off(), |(a, x, y)| a * x + y).unwrap();
    let ptx = axpy.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    assert_eq!(float_ops(&ptx), ["mul.rn.f32", "add.rn.f32"]);
}

#[test]
fn device_functions_take_their_setting_when_built() {
    type P = (&'static [f32], &'static mut [f32]);
    let fused = DeviceFn::<(f32, f32), f32>::build("fused", |_, (a, b)| a * b + b).unwrap();
    let plain =
        DeviceFn::<(f32, f32), f32>::build_with("plain", off(), |_, (a, b)| a * b + b).unwrap();
    // A kernel built without contraction calling a device function built with it, and back.
    let k = Kernel::<P>::build_with("calls_fused", off(), |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            out.set(i, fused.call((x.at(i), x.at(i))))
        });
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["fma.rn.f32"]);
    let k = Kernel::<P>::build("calls_plain", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            out.set(i, plain.call((x.at(i), x.at(i))))
        });
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["mul.rn.f32", "add.rn.f32"]);
    // Built inside a kernel's closure: the kernel's setting.
    let k = Kernel::<P>::build_with("inner_off", off(), |k, (x, out)| {
        let inner = DeviceFn::<(f32, f32), f32>::build("inner", |_, (a, b)| a * b + b).unwrap();
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            out.set(i, inner.call((x.at(i), x.at(i))))
        });
    })
    .unwrap();
    assert_eq!(ops_of(&k), ["mul.rn.f32", "add.rn.f32"]);
}

#[test]
fn the_setting_is_part_of_the_options_and_the_ir() {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let hash = |o: &PtxOptions| {
        let mut h = DefaultHasher::new();
        o.hash(&mut h);
        h.finish()
    };
    assert_ne!(on(), off());
    assert_ne!(hash(&on()), hash(&off()));
    // The same body built both ways: two kernels with different PTX.
    let a = abc::<f32>("same_name", on(), |a, b, c| a * b + c);
    let b = abc::<f32>("same_name", off(), |a, b, c| a * b + c);
    let o = PtxOptions::for_cc(9, 0);
    assert_ne!(a.compile_ptx(&o).unwrap(), b.compile_ptx(&o).unwrap());
    assert!(a.options().contract && !b.options().contract);
}
