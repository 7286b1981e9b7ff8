//! A CUDA graph and the stream-ordered memory pool: 100 small kernels and an elementwise
//! operation (whose output comes from the pool) captured once, launched as one graph, checked
//! against the host, timed against launching the kernels one by one; then the graph updated
//! in place with another array, and the pool's statistics.
//!
//! `cargo run --release --example graphs` (on the simulator without a GPU:
//! `CUDAJIT_SIMULATOR=1`).

use std::time::Instant;

use cudajit::codegen::{Expr, Kernel};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;

const N: usize = 4096;
const KERNELS: usize = 100;

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("graphs: the graph's results differ from the host's");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("graphs: {e}");
            std::process::exit(1);
        }
    }
}

/// Whether every result matched the host.
fn run() -> cudajit::Result<bool> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    println!("device: {}", ctx.device().name()?);
    let host: Vec<f32> = (0..N).map(|i| (i % 17) as f32 - 8.0).collect();
    let x = s.to_device(&host)?;
    let mut y = s.zeros::<f32, _>(N)?;
    let mut y2 = s.zeros::<f32, _>(N)?;
    let inc = Kernel::<(&mut [f32], &[f32])>::build("graph_example_inc", |k, (y, x)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| y.set(i, y.at(i) + x.at(i)));
    })?;
    let half = Elementwise::<(Elem<f32>,), Expr<f32>>::new("graph_example_half", |(x,)| x * 0.5)?;
    let cfg = LaunchConfig::for_num_elems(N, 256)?;

    let capture = |s: &Stream, y: &mut DeviceArray<f32>| {
        s.capture(|s| {
            for _ in 0..KERNELS {
                inc.launch(s, cfg, (&mut *y, &x))?;
            }
            let t = half.call(s, (&x,))?.into_shape(N)?; // from the pool, inside the graph
            inc.launch(s, cfg, (&mut *y, &t))
        })
    };
    let graph = capture(&s, &mut y)?;
    println!(
        "captured: {} nodes (the elementwise output's allocation and free included)",
        graph.node_count()?
    );
    let mut exec = graph.instantiate()?;
    let launches = 10;
    s.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..launches {
        // SAFETY: `x` and `y` outlive the launches (synchronised below).
        unsafe { exec.launch(&s)? };
    }
    s.synchronize()?;
    let graph_us = t0.elapsed().as_secs_f64() * 1e6 / (launches * (KERNELS + 1)) as f64;
    let t0 = Instant::now();
    for _ in 0..launches * KERNELS {
        inc.launch(&s, cfg, (&mut y2, &x))?;
    }
    s.synchronize()?;
    let eager_us = t0.elapsed().as_secs_f64() * 1e6 / (launches * KERNELS) as f64;
    let got = y.to_vec_async(&s)?;
    let per_launch = |v: f32| v * KERNELS as f32 + v * 0.5;
    let ok = (0..N).all(|i| got[i] == launches as f32 * per_launch(host[i]));
    println!(
        "{launches} graph launches: {graph_us:.2} us per kernel; one by one: {eager_us:.2} us per kernel; results {}",
        if ok { "match the host" } else { "WRONG" }
    );

    // The same work into another array: the instantiated graph takes it in place.
    exec.update(&capture(&s, &mut y2)?)?;
    y2.fill_async(0.0, &s)?;
    // SAFETY: as above, for `y2`.
    unsafe { exec.launch(&s)? };
    let got2 = y2.to_vec_async(&s)?;
    let ok2 = (0..N).all(|i| got2[i] == per_launch(host[i]));
    println!(
        "updated in place with another output array: results {}",
        if ok2 { "match the host" } else { "WRONG" }
    );

    let pool = ctx.mem_pool()?;
    let scratch = s.alloc_async::<f32, _>(1 << 20)?;
    println!("pool with 4 MiB allocated: {:?}", pool.stats()?);
    drop(scratch);
    s.synchronize()?;
    println!("pool after the drop: {:?}", pool.stats()?);
    Ok(ok && ok2)
}
