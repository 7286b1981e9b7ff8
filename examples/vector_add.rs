//! The classic add kernel, written with cudajit's builder: 2^24 floats, 128 threads per block,
//! checked against the host and timed with CUDA events.
//!
//! `cargo run --release --example vector_add`

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("vector_add: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let n = 1usize << 24;
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    println!("device: {}", ctx.device().name()?);

    let t0 = std::time::Instant::now();
    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_arrays", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })?;
    add.function(&ctx)?; // compile and load now, to time it apart from the launches
    println!(
        "build + compile + load: {:.2} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );

    // Deterministic, non-trivial inputs.
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n)
        .map(|i| ((i * 104_729) % 977) as f32 - 400.0)
        .collect();
    let dx = stream.to_device(&x)?;
    let dy = stream.to_device(&y)?;
    let mut out = ctx.alloc::<f32, _>(n)?;
    out.fill_async(f32::NAN, &stream)?;

    let cfg = LaunchConfig::for_num_elems(n, 128)?;
    add.launch(&stream, cfg, (&dx, &dy, &mut out))?; // warm-up
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    let reps = 20;
    start.record(&stream)?;
    for _ in 0..reps {
        add.launch(&stream, cfg, (&dx, &dy, &mut out))?;
    }
    end.record(&stream)?;
    end.synchronize()?;
    let ms = cudajit::elapsed_ms(&start, &end)? / reps as f32;
    let gbs = 3.0 * (n * 4) as f64 / (ms as f64 * 1e-3) / 1e9;

    let got = out.to_vec_async(&stream)?;
    let wrong = (0..n).filter(|&i| got[i] != x[i] + y[i]).count();
    println!(
        "{n} elements, {} blocks of 128: {ms:.3} ms per launch, {gbs:.0} GB/s; {wrong} wrong",
        cfg.grid.x
    );
    if wrong > 0 {
        return Err(cudajit::Error::Usage(format!(
            "{wrong} elements differ from the host"
        )));
    }
    Ok(())
}
