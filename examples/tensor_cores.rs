//! The tensor cores, two ways (the code README.md shows, with its inputs and checks):
//!
//! 1. a kernel written with the builder: one warp computes the 16×8 tile `D = A·B` (A 16×16,
//!    B 16×8, f16 inputs, f32 accumulators) with one `mma.sync.m16n8k16`, each lane naming the
//!    elements it holds with `FragA`/`FragB::from_fn` and storing its part of D with
//!    `FragC::for_each`;
//! 2. a GEMM with a fused epilogue, `Y = gelu(X·W + bias)` (torch's `gelu(x @ w + bias)`), f16
//!    in and f32 out, with `ops::Matmul` and `Epilogue::bias_gelu()`: the configuration the
//!    device gets by default (tensor cores on sm_80 and later, tuned on first use), then a pinned
//!    tensor-core configuration.
//!
//! Every element is checked against a host model: the inputs are small multiples of 1/16, so
//! the products and their sums are exact in f32 and the tile must equal the host's bit for bit;
//! the GEMM's result `y` is compared with an f64 model within `2^-18·max(|y|, 1)` (the epilogue's
//! f32 arithmetic).
//!
//! Runs on the GPU (the MMA needs compute capability 8.0 or later; on an older GPU only the
//! default GEMM runs, on the SIMT kernel), or on cudajit's CPU simulator with
//! `CUDAJIT_SIMULATOR=1` (what `bash scripts/run-example.sh tensor_cores` does on a machine
//! without an NVIDIA GPU).
//!
//! `cargo run --release --example tensor_cores`

use cudajit::codegen::{FragA, FragB, FragC, Kernel};
use cudajit::ops::MatmulConfig;
use cudajit::ops::{Epilogue, EpilogueVectors, Matmul};
use cudajit::{f16, prelude::*};
use ndarray::{Array2, Ix2};

fn main() {
    if let Err(e) = run() {
        eprintln!("tensor_cores: {e}");
        std::process::exit(1);
    }
}

/// A small value exact in f16 (a multiple of 1/16 in [-2, 2]), element `i` of a fixed pattern.
fn small(i: usize) -> f16 {
    f16::from_f32(((i * 37 + 11) % 65) as f32 / 16.0 - 2.0)
}

fn run() -> cudajit::Result<()> {
    let t0 = std::time::Instant::now();
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let backend = if cudajit::on_simulator() {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    let (major, minor) = ctx.device().compute_capability()?;
    println!(
        "running on {backend}: {} (sm_{major}{minor})",
        ctx.device().name()?
    );
    let sm80 = cudajit::on_simulator() || major >= 8;
    let mut wrong = 0;

    // 1. One warp, one MMA: A (16×16) and B (16×8) row-major, D (16×8) row-major.
    let ha: Vec<f16> = (0..16 * 16).map(small).collect();
    let hb: Vec<f16> = (0..16 * 8).map(|i| small(i + 256)).collect();
    let (a, b) = (s.to_device(&ha)?, s.to_device(&hb)?);
    if sm80 {
        // One warp computes D (16×8, f32) = A (16×16) · B (16×8), f16 inputs, on the tensor cores.
        let mma = Kernel::<(&[f16], &[f16], &mut [f32])>::build("mma_tile", |k, (a, b, d)| {
            // Each lane asks for its elements by row and column: no fragment layout to learn.
            let fa = FragA::<f16>::from_fn(k, |row, col| a.at(row * 16u32 + col));
            let fb = FragB::<f16>::from_fn(k, |kk, n| b.at(kk * 8u32 + n));
            let acc = k.mma(&fa, &fb, &FragC::zeros()); // mma.sync m16n8k16, f32 accumulators
            acc.for_each(k, |row, col, v| d.set(row * 8u32 + col, v));
        })?;
        let mut d = ctx.zeros::<f32, _>(16 * 8)?;
        mma.launch(&s, LaunchConfig::new(1, 32), (&a, &b, &mut d))?; // one block of one warp

        wrong += check_tile(&d.to_vec_async(&s)?, &ha, &hb);
    } else {
        println!("one warp, one MMA: skipped (the tensor cores' MMA needs sm_80 or later)");
    }

    // 2. A fused GEMM, Y (m×n, f32) = gelu(X (m×k, f16) · W (k×n, f16) + bias (n, f32)).
    let (m, n, kk) = (200, 72, 64);
    let hx = Array2::from_shape_fn((m, kk), |(i, j)| small(i * kk + j));
    let hw = Array2::from_shape_fn((kk, n), |(i, j)| small(i * n + j + 7));
    let hbias: Vec<f32> = (0..n).map(|j| small(j + 3).to_f32() / 2.0).collect();
    let (x, w, bias) = (s.to_device(&hx)?, s.to_device(&hw)?, s.to_device(&hbias)?);
    let want = Array2::from_shape_fn((m, n), |(i, j)| {
        let v = (0..kk)
            .map(|x| hx[[i, x]].to_f64() * hw[[x, j]].to_f64())
            .sum::<f64>();
        gelu(v + hbias[j] as f64)
    });

    // A GEMM with a fused epilogue, Y = gelu(X·W + bias) (torch's gelu(x @ w + bias)): f16 in,
    // f32 out; tensor-core kernels on sm_80+, their tiles autotuned on first use.
    let gemm = Matmul::<f16, f32>::new().epilogue(Epilogue::bias_gelu());
    let mut y = ctx.zeros::<f32, _>((m, n))?;
    gemm.run_with(&s, &x, &w, &mut y, EpilogueVectors::new().col(&bias))?;

    wrong += check_gemm("default", &gemm, &s, &y, &want, kk)?;
    if sm80 {
        // The same product on a pinned configuration: the tensor cores' cp.async pipeline, 3
        // stages (the simulator reports sm_75, where the default is the SIMT kernel).
        let pinned = gemm
            .clone()
            .config(MatmulConfig::mma(64, 64, 32, 32, 32).with_stages(3));
        y.fill_async(f32::NAN, &s)?;
        pinned.run_with(&s, &x, &w, &mut y, EpilogueVectors::new().col(&bias))?;
        wrong += check_gemm("pinned", &pinned, &s, &y, &want, kk)?;
    }
    println!("{:.0} ms in all", t0.elapsed().as_secs_f64() * 1e3);
    if wrong > 0 {
        return Err(Error::Usage(format!(
            "{wrong} elements differ from the host"
        )));
    }
    Ok(())
}

/// Prints the tile `got` beside the host's `A·B` (exact: the inputs' products and sums are exact
/// in f32) and returns how many of its elements differ.
fn check_tile(got: &[f32], a: &[f16], b: &[f16]) -> usize {
    let want: Vec<f32> = (0..16 * 8)
        .map(|e| {
            let (i, j) = (e / 8, e % 8);
            let d = (0..16).map(|x| a[i * 16 + x].to_f64() * b[x * 8 + j].to_f64());
            d.sum::<f64>() as f32
        })
        .collect();
    let bad = (0..want.len())
        .filter(|&e| got[e].to_bits() != want[e].to_bits())
        .count();
    println!("one warp, one MMA: D (16×8, f32) = A (16×16, f16) · B (16×8, f16)");
    println!("  D[0]   = {:?}", &got[..8]);
    println!("  host   = {:?}", &want[..8]);
    println!(
        "  {} elements checked against the host: {bad} wrong",
        want.len()
    );
    bad
}

/// Prints what `gemm` computed into `y` (K = `k`) beside the host's `want` (within
/// `2^-18·max(|y|, 1)`: the epilogue's f32 arithmetic) and returns how many elements are outside.
fn check_gemm(
    what: &str,
    gemm: &Matmul<f16, f32>,
    s: &Stream,
    y: &DeviceArray<f32, Ix2>,
    want: &Array2<f64>,
    k: usize,
) -> cudajit::Result<usize> {
    let got = y.to_vec_async(s)?;
    let (mut bad, mut worst) = (0, 0f64);
    for (&g, &w) in got.iter().zip(want.iter()) {
        let err = (g as f64 - w).abs() / w.abs().max(1.0);
        worst = worst.max(err);
        bad += usize::from(err.is_nan() || err > 2f64.powi(-18));
    }
    let (m, n) = want.dim();
    let c = gemm.config_for(s, m, n, k, 1)?;
    println!(
        "fused GEMM: Y ({m}×{n}, f32) = gelu(X·W + bias), f16 inputs, K = {k}; {what} \
         configuration: {:?} {}×{}×{}, {} stages",
        c.engine, c.block_m, c.block_n, c.block_k, c.stages
    );
    let host: Vec<f32> = want.iter().take(4).map(|&v| v as f32).collect();
    println!("  Y[0][..4] = {:?}", &got[..4]);
    println!("  host      = {host:?}");
    println!(
        "  {} elements checked against the host: {bad} wrong \
         (largest |error| / max(|y|, 1): {worst:.1e})",
        got.len()
    );
    Ok(bad)
}

/// GELU in f64 (erf's, torch's default).
fn gelu(v: f64) -> f64 {
    0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2))
}

extern "C" {
    /// C's `erf` (glibc's libm, which Rust's std links).
    #[link_name = "erf"]
    fn c_erf(x: f64) -> f64;
}

/// The host's erf, for the GELU of the host model.
fn erf(x: f64) -> f64 {
    // SAFETY: a pure libm function.
    unsafe { c_erf(x) }
}
