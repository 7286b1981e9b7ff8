//! `ops::Matmul`'s autotuning with a persistent cache (issue 24), each case in a fresh child
//! process (the tuning counters, the cache directory and `CUDAJIT_MATMUL_TUNE` are per
//! process) with its own cache directory:
//!
//! - first use: the candidates are timed (tuning launches counted), the winner is written to
//!   `<cache_dir>/matmul-tuning-v1.txt`, the user's C is computed once, with the user's alpha,
//!   beta and epilogue, and equals the product pinned to the default choice within the
//!   accuracy bound of `tests/gpu/matmul.rs`; the second call and `Matmul::tune(false)` time
//!   nothing;
//! - a second process with the same cache directory times nothing (warm start);
//! - `CUDAJIT_MATMUL_TUNE=0` times nothing and writes nothing;
//! - a shipped tuning file (`CUDAJIT_MATMUL_TUNING_FILE`) decides the configuration, with
//!   `CUDAJIT_CACHE=0` (nothing written).
//!
//! On the simulator tuning is skipped (the default choice runs) and the results are right.

use cudajit::f16;
use cudajit::ops::{
    matmul_tuning_file, matmul_tuning_stats, Epilogue, EpilogueVectors, Matmul, MatmulConfig,
};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::support::child::Child;

const CHILD: &str = "CUDAJIT_GPU_MATMUL_TUNE_CHILD";
const M: usize = 300;
const N: usize = 200;
const K: usize = 100;

/// Host inputs: A (M×K), B (K×N), C0 (M×N), bias (N), small exact values.
struct Inputs {
    a: Vec<f32>,
    b: Vec<f32>,
    c0: Vec<f32>,
    bias: Vec<f32>,
}

fn inputs() -> Inputs {
    let mut r = Rng::new();
    // Multiples of 1/64 in [-1, 1): exact in f16 too.
    let mut v = |n: usize| r.vec(n, |r| (r.f32() * 64.0).round() / 64.0);
    Inputs {
        a: v(M * K),
        b: v(K * N),
        c0: v(M * N),
        bias: v(N),
    }
}

/// Checks `got` against `relu(alpha·A·B + beta·C0 + bias)` (or `A·B` when `plain`) with the
/// f32 bound `(K + 2)·2^-24·mag` (f16 inputs: `2^-22`), plus the epilogue's rounding.
fn check(x: &Inputs, got: &[f32], plain: bool, unit: f64, what: &str) {
    let (alpha, beta) = if plain { (1.0, 0.0) } else { (0.5, 1.0) };
    for i in 0..M {
        for j in 0..N {
            let (mut v, mut mag) = (0.0f64, 0.0f64);
            for k in 0..K {
                let p = x.a[i * K + k] as f64 * x.b[k * N + j] as f64;
                v += p;
                mag += p.abs();
            }
            v = alpha * v + beta * x.c0[i * N + j] as f64;
            mag = alpha * mag + (beta * x.c0[i * N + j] as f64).abs();
            if !plain {
                v = (v + x.bias[j] as f64).max(0.0);
                mag += (x.bias[j] as f64).abs();
            }
            let tol = (K as f64 + 2.0) * unit * mag + 2f64.powi(-21) * mag + 1e-30;
            let g = got[i * N + j] as f64;
            assert!(
                (g - v).abs() <= tol,
                "{what}: C[{i}, {j}] = {g}, want {v} (tolerance {tol})"
            );
        }
    }
}

/// `C = relu(0.5·A·B + C0 + bias)` in f32 with `mm` (C starts as C0: computed once, or the
/// check fails), and `A·B` with f16 inputs and f32 output.
fn products(x: &Inputs, tune: bool, pin: Option<MatmulConfig>) -> (Vec<f32>, Vec<f32>) {
    let cx = ctx();
    let s = cx.new_stream().unwrap();
    let arr = |v: &[f32], r: usize, c: usize| ndarray::Array2::from_shape_vec((r, c), v.to_vec());
    let a = s.to_device(&arr(&x.a, M, K).unwrap()).unwrap();
    let b = s.to_device(&arr(&x.b, K, N).unwrap()).unwrap();
    let mut c = s.to_device(&arr(&x.c0, M, N).unwrap()).unwrap();
    let bias = s.to_device(&ndarray::Array1::from(x.bias.clone())).unwrap();
    let mut mm = Matmul::<f32>::new()
        .alpha(0.5)
        .beta(1.0)
        .epilogue(Epilogue::bias_relu())
        .tune(tune);
    if let Some(p) = pin {
        mm = mm.config(p);
    }
    mm.run_with(&s, &a, &b, &mut c, EpilogueVectors::new().col(&bias))
        .unwrap();
    let c = c.to_vec_async(&s).unwrap();
    let h = |v: &[f32], r: usize, cl: usize| {
        ndarray::Array2::from_shape_vec((r, cl), v.iter().map(|&x| f16::from_f32(x)).collect())
            .unwrap()
    };
    let ah = s.to_device(&h(&x.a, M, K)).unwrap();
    let bh = s.to_device(&h(&x.b, K, N)).unwrap();
    let mut ch = cx.zeros::<f32, _>((M, N)).unwrap();
    Matmul::<f16, f32>::new()
        .tune(tune)
        .run(&s, &ah, &bh, &mut ch)
        .unwrap();
    (c, ch.to_vec_async(&s).unwrap())
}

fn check_both(x: &Inputs, (c, ch): &(Vec<f32>, Vec<f32>), what: &str) {
    check(x, c, false, 2f64.powi(-24), &format!("{what}, f32"));
    check(x, ch, true, 2f64.powi(-22), &format!("{what}, f16 -> f32"));
}

/// The number of entries of a tuning file (lines that are not comments).
fn entries(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter(|l| !l.starts_with('#') && l.contains('\t'))
                .count()
        })
        .unwrap_or(0)
}

/// Runs in a child only: one role of [`tuning_persists_across_processes`].
#[test]
#[ignore = "needs a CUDA GPU"]
fn matmul_tune_child_process() {
    let Some(role) = std::env::var_os(CHILD) else {
        return;
    };
    let role = role.to_string_lossy().into_owned();
    let sim = cudajit::on_simulator();
    let x = inputs();
    let s0 = matmul_tuning_stats();
    assert_eq!(s0.tuning_launches, 0);
    match role.as_str() {
        "first" => {
            let file = matmul_tuning_file().expect("a cache directory");
            let tuned = products(&x, true, None);
            check_both(&x, &tuned, "tuned");
            let s1 = matmul_tuning_stats();
            if sim {
                assert_eq!((s1.tunings, s1.tuning_launches), (0, 0), "{s1:?}");
                assert!(!file.exists(), "the simulator writes no tuning file");
            } else {
                assert_eq!(s1.tunings, 2, "{s1:?}");
                assert!(s1.tuning_launches >= 8, "{s1:?}");
                assert_eq!(entries(&file), 2, "{file:?}");
            }
            // Pinned to the default choice (and so never tuned): the same result within the
            // bound, no tuning launches.
            let cx = ctx();
            let s = cx.new_stream().unwrap();
            let def = Matmul::<f32>::new()
                .tune(false)
                .config_for(&s, M, N, K, 1)
                .unwrap();
            let pinned = products(&x, true, Some(def));
            check_both(&x, &pinned, "pinned to the default choice");
            // The inputs are multiples of 1/64 and K is small: every sum is exact in f32,
            // whatever the tiles or the order, so the bound is equality here.
            assert_eq!(
                tuned, pinned,
                "the tuned and the default configuration agree"
            );
            // The second call and `tune(false)` time nothing.
            check_both(&x, &products(&x, true, None), "second call");
            check_both(&x, &products(&x, false, None), "tune(false)");
            let s2 = matmul_tuning_stats();
            assert_eq!(s2.tuning_launches, s1.tuning_launches, "{s2:?}");
            assert_eq!(s2.tunings, s1.tunings, "{s2:?}");
            if !sim {
                assert!(s2.hits >= 2, "{s2:?}");
            }
        }
        "warm" => {
            check_both(&x, &products(&x, true, None), "warm start");
            let s1 = matmul_tuning_stats();
            assert_eq!((s1.tunings, s1.tuning_launches), (0, 0), "{s1:?}");
            if !sim {
                assert_eq!(s1.file_entries, 2, "{s1:?}");
                assert!(s1.hits >= 2, "{s1:?}");
            }
        }
        "off" => {
            check_both(&x, &products(&x, true, None), "CUDAJIT_MATMUL_TUNE=0");
            let s1 = matmul_tuning_stats();
            assert_eq!((s1.tunings, s1.tuning_launches), (0, 0), "{s1:?}");
            assert_eq!(entries(&matmul_tuning_file().unwrap()), 0);
        }
        "shipped" => {
            assert_eq!(
                matmul_tuning_file(),
                None,
                "CUDAJIT_CACHE=0: nowhere to write"
            );
            let cx = ctx();
            let s = cx.new_stream().unwrap();
            let cfg = Matmul::<f32>::new()
                .alpha(0.5)
                .beta(1.0)
                .epilogue(Epilogue::bias_relu())
                .config_for(&s, M, N, K, 1)
                .unwrap();
            assert_eq!(cfg, MatmulConfig::simt(32, 64, 8, 4, 4));
            check_both(&x, &products(&x, true, None), "shipped tuning file");
            let s1 = matmul_tuning_stats();
            assert_eq!((s1.tunings, s1.tuning_launches), (0, 0), "{s1:?}");
            assert_eq!(s1.shipped_entries, 2, "{s1:?}");
            assert_eq!(s1.ignored_lines, 1, "{s1:?}");
        }
        other => panic!("unknown role {other}"),
    }
    println!("CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuning_persists_across_processes() {
    let base = std::env::temp_dir().join(format!("cudajit-mm-tune-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let run = |role: &str, dir: &std::path::Path, extra: &[(&str, std::ffi::OsString)]| {
        let out = Child::test("matmul_tune::matmul_tune_child_process", CHILD, role)
            .env("CUDAJIT_CACHE_DIR", dir)
            .env_remove("CUDAJIT_CACHE")
            .env_remove("CUDAJIT_MATMUL_TUNE")
            .env_remove("CUDAJIT_MATMUL_TUNING_FILE")
            .env("CUDAJIT_LOG_CACHE", "1")
            .envs(extra.iter().cloned())
            .run();
        assert!(out.passed(), "{role}:\n{}", out.text());
    };
    let dir = base.join("cache");
    run("first", &dir, &[]);
    run("warm", &dir, &[]);
    run(
        "off",
        &base.join("off"),
        &[("CUDAJIT_MATMUL_TUNE", "0".into())],
    );
    let learned = dir.join("matmul-tuning-v1.txt");
    if let Ok(text) = std::fs::read_to_string(&learned) {
        // Ship the learned keys with another configuration, and a corrupt line.
        let mut shipped = String::from("# shipped\n");
        for l in text.lines().filter(|l| l.contains('\t')) {
            let key = l.split('\t').next().unwrap();
            shipped.push_str(&format!("{key}\tsimt 32x64x8 4x4 s2\n"));
        }
        shipped.push_str("not a tuning line\n");
        let path = base.join("shipped.txt");
        std::fs::write(&path, shipped).unwrap();
        run(
            "shipped",
            &base.join("none"),
            &[
                ("CUDAJIT_CACHE", "0".into()),
                ("CUDAJIT_MATMUL_TUNING_FILE", path.into_os_string()),
            ],
        );
    } else {
        assert!(
            cudajit::on_simulator(),
            "the first process wrote no tuning file"
        );
    }
    let _ = std::fs::remove_dir_all(base);
}
