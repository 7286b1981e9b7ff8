//! Attention forward (FlashAttention-style: Q·Kᵀ, online softmax and P·V in one kernel)
//! written with cudajit's builder for Hopper: TMA, transaction barriers and the warpgroup MMA,
//! with P passed from the first product's accumulators to the second in registers. The kernel
//! is `kernel.rs` beside this file.
//!
//! Runs f16 and bf16, head dims 64 and 128, causal and not, on 2 heads of 300 rows (not a
//! multiple of the 128-row tiles), and checks every output element against an f64 host
//! reference; on a GPU it also times 8 × 16 heads of 4096 rows (head dim 128, bf16, the shape
//! of the benchmark's row).
//!
//! Runs on an sm_90 GPU (H100, H200), or on cudajit's CPU simulator with `CUDAJIT_SIMULATOR=1`
//! (what `bash scripts/run-example.sh attention` does on a machine without an NVIDIA GPU); on
//! another GPU it says why it does not run.
//!
//! `cargo run --release --example attention`

#[allow(dead_code)] // `Attention::kernel` is for the tests and the benchmark
mod kernel;

use cudajit::prelude::*;
use cudajit::{bf16, f16};
use kernel::{reference, Attention, AttentionElem};
use ndarray::Array3;

fn main() {
    if let Err(e) = run() {
        eprintln!("attention: {e}");
        std::process::exit(1);
    }
}

/// A deterministic value in [-1, 1) for element `i` of input `salt`.
fn value(i: usize, salt: u64) -> f32 {
    let mut x = (i as u64 ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(salt);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// Checks one configuration: returns the largest error relative to its bound.
fn check<T: AttentionElem>(
    ctx: &Context,
    s: &Stream,
    (bh, seq, d): (usize, usize, usize),
    causal: bool,
) -> cudajit::Result<f64> {
    let att = Attention::<T>::new(d, causal)?;
    let host: Vec<Array3<T>> = (0..3)
        .map(|x| {
            Array3::from_shape_fn((bh, seq, d), |(a, b, c)| {
                T::from_f32(value((a * seq + b) * d + c, 7 + x))
            })
        })
        .collect();
    let (q, k, v) = (
        s.to_device(&host[0])?,
        s.to_device(&host[1])?,
        s.to_device(&host[2])?,
    );
    let mut out = ctx.zeros::<T, _>((bh, seq, d))?;
    att.run(s, &q, &k, &v, &mut out)?;
    let got = out.to_array_async(s)?;
    let mut worst = 0.0f64;
    for h in 0..bh {
        let head = |x: usize| -> Vec<f64> {
            host[x]
                .index_axis(ndarray::Axis(0), h)
                .iter()
                .map(|e| e.to_f64())
                .collect()
        };
        let want = reference(&head(0), &head(1), &head(2), seq, d, causal);
        for (i, (w, mag)) in want.iter().enumerate() {
            let g = got[[h, i / d, i % d]].to_f64();
            // P and O are rounded to T once each, the scores summed in f32.
            let bound = 4.0 * T::UNIT * (w.abs() + mag) + 1e-6;
            let err = (g - w).abs() / bound;
            if err.is_nan() || err > 1.0 {
                return Err(cudajit::Error::Usage(format!(
                    "{} d{d}{}: out[{h}][{}][{}] = {g}, the host's {w} (bound {bound:.2e})",
                    T::NAME,
                    if causal { " causal" } else { "" },
                    i / d,
                    i % d
                )));
            }
            worst = worst.max(err);
        }
    }
    Ok(worst)
}

/// Times the benchmark's shape on the GPU: milliseconds per call (median of 20).
fn time_big(ctx: &Context, s: &Stream, causal: bool) -> cudajit::Result<f64> {
    let (bh, seq, d) = (8 * 16, 4096, 128);
    let att = Attention::<bf16>::new(d, causal)?;
    let host = Array3::from_shape_fn((bh, seq, d), |(a, b, c)| {
        bf16::from_f32(value((a * seq + b) * d + c, 3))
    });
    let q = s.to_device(&host)?;
    let mut out = ctx.zeros::<bf16, _>((bh, seq, d))?;
    let mut times = Vec::new();
    for i in 0..25 {
        let (start, stop) = (ctx.new_event()?, ctx.new_event()?);
        start.record(s)?;
        att.run(s, &q, &q, &q, &mut out)?;
        stop.record(s)?;
        stop.synchronize()?;
        if i >= 5 {
            times.push(stop.elapsed_ms_since(&start)? as f64);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let cc = ctx.device().compute_capability()?;
    let sim = cudajit::on_simulator();
    if !sim && cc != (9, 0) {
        println!(
            "attention: the kernel uses wgmma and TMA, which need an sm_90 GPU (H100, H200); \
             this one is sm_{}{}: not run (CUDAJIT_SIMULATOR=1 runs it on the simulator)",
            cc.0, cc.1
        );
        return Ok(());
    }
    let device = if sim {
        "the simulator".to_string()
    } else {
        ctx.device().name()?
    };
    println!(
        "attention on {device}: 2 heads × 300 rows, every element against an f64 host reference"
    );
    for d in [64, 128] {
        for causal in [false, true] {
            let shape = (2, 300, d);
            let a = check::<f16>(&ctx, &s, shape, causal)?;
            let b = check::<bf16>(&ctx, &s, shape, causal)?;
            println!(
                "  head dim {d:>3}{:<8}: f16 and bf16 within bound (worst error {:.2} and {:.2} of it)",
                if causal { ", causal" } else { "" },
                a,
                b
            );
        }
    }
    if !sim {
        for causal in [false, true] {
            let ms = time_big(&ctx, &s, causal)?;
            let flops = 4.0 * 128.0 * 4096.0 * 4096.0 * 128.0 / if causal { 2.0 } else { 1.0 };
            println!(
                "  8 × 16 heads × 4096 rows, head dim 128, bf16{}: {ms:.3} ms ({:.0} TFLOP/s)",
                if causal { ", causal" } else { "" },
                flops / (ms * 1e-3) / 1e12
            );
        }
    }
    Ok(())
}
