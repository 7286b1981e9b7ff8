//! The simulator's benchmark: Numba's classic add kernel and a 128-thread shared-memory block
//! sum with barriers, on 10^5 and 10^6 elements, run on cudajit's CPU simulator; one JSON line
//! per row (threads per second, median of the runs). `scripts/bench-sim.sh` runs it beside
//! numba-cuda's simulator (`benches/sim_peers.py`) and prints the ratio.
//!
//! `cargo bench --bench sim`

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("sim bench: {e}");
        std::process::exit(1);
    }
}

/// Median seconds of `reps` runs of `f` (after one warm-up run).
fn median(reps: usize, mut f: impl FnMut() -> cudajit::Result<()>) -> cudajit::Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = std::time::Instant::now();
        f()?;
        t.push(t0.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[reps / 2])
}

fn run() -> cudajit::Result<()> {
    cudajit::use_simulator()?;
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_arrays", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })?;
    let block_sum = Kernel::<(&[f32], &mut [f32])>::build("block_sum", |k, (x, out)| {
        let sm = k.shared_array::<f32>(128);
        let t = k.thread_idx().x;
        let i = k.grid1();
        sm.set(t, select_in(i, x));
        k.syncthreads();
        let step = k.var(64u32);
        k.while_(
            |_| step.get().gt(0u32),
            |k| {
                k.if_(t.lt(step.get()), |_| {
                    sm.set(t, sm.at(t) + sm.at(t + step.get()))
                });
                k.syncthreads();
                step.set(step.get() >> 1u32);
            },
        );
        k.if_(t.eq(0u32), |k| out.set(k.block_idx().x, sm.at(0u32)));
    })?;
    for n in [100_000usize, 1_000_000] {
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let (dx, dy) = (s.to_device(&x)?, s.to_device(&y)?);
        let mut out = ctx.device_array_like(&dx)?;
        let blocks = n.div_ceil(128);
        let cfg = LaunchConfig::new(blocks as u32, 128);
        let sec = median(9, || add.launch(&s, cfg, (&dx, &dy, &mut out)))?;
        let got = out.to_vec_async(&s)?;
        assert!((0..n).all(|i| got[i] == x[i] + y[i]));
        row("add", n, sec, threads);
        let mut sums = ctx.zeros::<f32, _>(blocks)?;
        let sec = median(9, || block_sum.launch(&s, cfg, (&dx, &mut sums)))?;
        let got = sums.to_vec_async(&s)?;
        for (b, &v) in got.iter().enumerate() {
            let want: f64 = (b * 128..((b + 1) * 128).min(n)).map(|i| i as f64).sum();
            assert!(
                (v as f64 - want).abs() <= want * 1e-6,
                "block {b}: {v} vs {want}"
            );
        }
        row("block_sum", n, sec, threads);
    }
    Ok(())
}

/// `x[i]`, or 0 past the end (the last block is partial).
fn select_in(
    i: cudajit::codegen::Expr<u64>,
    x: cudajit::codegen::DArray<f32, 1, cudajit::codegen::ReadOnly>,
) -> cudajit::codegen::Expr<f32> {
    let v = x.at(i.min(x.len() - 1u64));
    cudajit::codegen::select(i.lt(x.len()), v, 0.0f32)
}

fn row(kernel: &str, n: usize, sec: f64, threads: usize) {
    println!(
        "{{\"impl\":\"cudajit-sim\",\"kernel\":\"{kernel}\",\"n\":{n},\"seconds\":{sec:.6},\"threads_per_s\":{:.0},\"host_threads\":{threads}}}",
        n as f64 / sec
    );
}
