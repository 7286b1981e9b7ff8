//! Math functions: every function for f32 and f64 compiles (libdevice linked, cudajit's own
//! implementations, fastmath), ptxas accepts the PTX, and nothing of libdevice is left over.
//! The own implementations are tested in a child process with `CUDAJIT_NO_LIBDEVICE=1` (the
//! switch is read from the environment at every compile).

use std::time::Instant;

use cudajit::codegen::{Expr, Float, Kernel, PtxOptions};

use crate::common::compile_all;

/// Set in the child processes this file starts.
const CHILD: &str = "CUDAJIT_MATH_TEST_CHILD";

/// Every math function of `x` (and `y` for the two-argument ones).
fn every<T: Float>(x: Expr<T>, y: Expr<T>) -> Vec<Expr<T>> {
    vec![
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
        x.min(y),
        x.max(y),
    ]
}

/// The parameters of [`all_kernel`].
type AllParams<T> = (
    &'static [T],
    &'static [T],
    &'static mut [T],
    &'static mut [bool],
);

/// A kernel writing every function of `a[i]`, `b[i]` to `out[i * N + j]`, and the NaN and
/// infinity tests to `flags`.
fn all_kernel<T: Float>(name: &str, fast: bool, opt: u8) -> Kernel<AllParams<T>> {
    let opts = PtxOptions {
        opt,
        ..PtxOptions::default().fastmath(fast)
    };
    Kernel::<(&[T], &[T], &mut [T], &mut [bool])>::build_with(
        name,
        opts,
        |k, (a, b, out, flags)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let (x, y) = (a.at(i), b.at(i));
                let vs = every(x, y);
                let n = vs.len() as u64;
                for (j, v) in vs.into_iter().enumerate() {
                    out.set(i * n + j as u64, v);
                }
                flags.set(i * 2u64, x.is_nan());
                flags.set(i * 2u64 + 1u64, x.is_infinite());
            });
        },
    )
    .unwrap()
}

/// Compiles the f32 and f64 kernels (fastmath off and on) and checks the PTX; returns the
/// PTX per (type, fast).
fn check_all(path: &str) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    for fast in [false, true] {
        for (ty, k32, k64) in [("f32", true, false), ("f64", false, true)] {
            let name = format!("math_{path}_{ty}{}", if fast { "_fast" } else { "" });
            let (ptx, report) = if k32 {
                compile_all(&all_kernel::<f32>(&name, fast, 3))
            } else {
                let _ = k64;
                compile_all(&all_kernel::<f64>(&name, fast, 3))
            };
            assert!(
                !ptx.contains("__nv_"),
                "{name}: libdevice calls left:\n{ptx}"
            );
            assert!(
                !ptx.contains("__nvvm_reflect"),
                "{name}: __nvvm_reflect left"
            );
            assert!(
                !ptx.contains("__cudajit_"),
                "{name}: own math functions not inlined"
            );
            assert_eq!(report.spill_bytes, 0, "{name} spills:\n{}", report.log);
            // No local memory for f32, except libdevice's sin/cos/tan, whose Payne-Hanek
            // reduction keeps a small array there (as nvcc's do).
            if ty == "f32" && (path == "own" || fast) {
                assert_eq!(
                    report.stack_bytes, 0,
                    "{name} uses local memory:\n{}",
                    report.log
                );
            }
            if path == "own" {
                assert_eq!(
                    report.stack_bytes, 0,
                    "{name} uses local memory:\n{}",
                    report.log
                );
            }
            println!(
                "{name}: {} registers, {} bytes stack, {} lines of PTX",
                report.registers,
                report.stack_bytes,
                ptx.lines().count()
            );
            out.push((ty.to_string(), fast, ptx));
        }
    }
    out
}

/// fastmath leaves f64 alone: the f64 kernels' PTX is the same with and without it.
fn same_f64_code(ptxs: &[(String, bool, String)]) {
    let f64s: Vec<String> = ptxs
        .iter()
        .filter(|(ty, _, _)| ty == "f64")
        .map(|(_, fast, p)| {
            if *fast {
                p.replace("_fast", "")
            } else {
                p.clone()
            }
        })
        .collect();
    assert!(f64s[0] == f64s[1], "f64 code changes with fastmath");
}

/// The LLVM IR before optimisation says which implementation a kernel got.
fn uses_libdevice() -> bool {
    let k = Kernel::<(&[f32], &mut [f32])>::build("probe_exp", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).exp()));
    })
    .unwrap();
    let opts = PtxOptions {
        opt: 0,
        ..PtxOptions::for_cc(9, 0)
    };
    let ir = k.llvm_ir(&opts).unwrap();
    assert!(
        ir.contains("__nv_expf") != ir.contains("__cudajit_exp_f32"),
        "exactly one implementation of exp:\n{ir}"
    );
    ir.contains("__nv_expf")
}

#[test]
fn every_function_compiles_with_libdevice() {
    if !uses_libdevice() {
        eprintln!("libdevice not found: only cudajit's own implementations are tested here");
        return;
    }
    // (The f64 code is not compared: libdevice's f64 functions use f32 helpers that nvvm-reflect-ftz
    // flushes, as nvcc's --use_fast_math does.)
    let ptxs = check_all("libdevice");
    for (ty, fast, ptx) in &ptxs {
        if ty == "f32" && *fast {
            for op in [
                "ex2.approx.ftz.f32",
                "lg2.approx.ftz.f32",
                "sin.approx.ftz.f32",
                "cos.approx.ftz.f32",
                "sqrt.approx.ftz.f32",
                "rsqrt.approx.ftz.f32",
            ] {
                assert!(ptx.contains(op), "fastmath f32 uses {op}");
            }
        }
    }
}

#[test]
fn libdevice_links_at_opt_level_0() {
    if !uses_libdevice() {
        return;
    }
    compile_all(&all_kernel::<f32>("math_o0_f32", false, 0));
    compile_all(&all_kernel::<f64>("math_o0_f64", true, 0));
}

fn run_child(test: &str, envs: &[(&str, &str)]) -> String {
    crate::support::child::Child::test(test, CHILD, "1")
        .envs(envs.iter().copied())
        .run_ok()
        .text()
}

#[test]
fn own_implementations_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    assert!(
        !uses_libdevice(),
        "CUDAJIT_NO_LIBDEVICE=1 selects the own implementations"
    );
    let ptxs = check_all("own");
    same_f64_code(&ptxs);
    for (ty, fast, ptx) in &ptxs {
        if ty == "f32" && *fast {
            for op in [
                "ex2.approx.ftz.f32",
                "lg2.approx.ftz.f32",
                "sin.approx.ftz.f32",
                "cos.approx.ftz.f32",
            ] {
                assert!(ptx.contains(op), "fastmath f32 uses {op}");
            }
        }
    }
    compile_all(&all_kernel::<f32>("math_own_o0_f32", false, 0));
    compile_all(&all_kernel::<f64>("math_own_o0_f64", true, 0));
    println!("CHILD OK");
}

#[test]
fn own_implementations() {
    let text = run_child(
        "math::own_implementations_child",
        &[("CUDAJIT_NO_LIBDEVICE", "1")],
    );
    println!("{text}");
}

#[test]
fn bad_libdevice_path_is_a_clear_error_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let k = Kernel::<(&[f64], &mut [f64])>::build("bad_libdevice", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).sin()));
    })
    .unwrap();
    let err = k
        .compile_ptx(&PtxOptions::for_cc(9, 0))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/libdevice.10.bc") && err.contains("CUDAJIT_LIBDEVICE"),
        "{err}"
    );
    // Kernels without libdevice functions are unaffected.
    let plain = Kernel::<(&[f64], &mut [f64])>::build("no_libdevice_needed", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).sqrt().floor()));
    })
    .unwrap();
    plain.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    println!("CHILD OK: {err}");
}

#[test]
fn bad_libdevice_path_is_a_clear_error() {
    run_child(
        "math::bad_libdevice_path_is_a_clear_error_child",
        &[("CUDAJIT_LIBDEVICE", "/nonexistent/libdevice.10.bc")],
    );
}

/// Compile time of a small kernel with libdevice and with the own implementations (printed;
/// the machine is shared, so nothing is asserted).
#[test]
fn compile_time_of_math_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut times = Vec::new();
    for round in 0..6 {
        let name = format!("timing_{round}");
        let k = Kernel::<(&[f32], &[f64], &mut [f32], &mut [f64])>::build(
            &name,
            |k, (a, b, o32, o64)| {
                let i = k.grid1();
                k.if_(i.lt(a.len()), |_| {
                    o32.set(i, a.at(i).exp() + a.at(i).sin());
                    o64.set(i, b.at(i).ln() * b.at(i).cos());
                });
            },
        )
        .unwrap();
        let t = Instant::now();
        // llvm_ir skips the compile cache: parse + link + O3.
        k.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let plain = Kernel::<(&[f32], &mut [f32])>::build("timing_plain", |k, (a, o)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| o.set(i, a.at(i) * 2.0 + 1.0));
    })
    .unwrap();
    let t = Instant::now();
    for _ in 0..5 {
        plain.llvm_ir(&PtxOptions::for_cc(9, 0)).unwrap();
    }
    let base = t.elapsed().as_secs_f64() * 1e3 / 5.0;
    println!(
        "CHILD OK: first {:.1} ms, then {:?} ms; a kernel without math {base:.1} ms",
        times[0],
        &times[1..]
            .iter()
            .map(|t| (t * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    );
}

#[test]
fn compile_time_of_math() {
    for (what, env) in [("libdevice", "0"), ("own", "1")] {
        let text = run_child(
            "math::compile_time_of_math_child",
            &[("CUDAJIT_NO_LIBDEVICE", env)],
        );
        let line = text
            .lines()
            .find(|l| l.contains("CHILD OK"))
            .unwrap_or_default();
        println!("math compile time ({what}): {line}");
        for l in text.lines().filter(|l| l.contains("TIMING")) {
            println!("{l}");
        }
    }
}
