//! Numba's classic first kernel, in cudajit: `out[i] = x[i] + y[i]` over 1,000,000 float32,
//! `x = arange(n)`, `y = 2 * arange(n)`, 128 threads per block, `ceil(n / 128)` blocks; the
//! result is copied back and its first ten elements printed: `[0, 3, 6, ..., 27]`.
//!
//! Runs on the GPU, or on cudajit's CPU simulator with `CUDAJIT_SIMULATOR=1` (what
//! `bash scripts/run-example.sh` does on a machine without an NVIDIA GPU).
//!
//! `cargo run --release --example add_arrays`

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("add_arrays: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let t0 = std::time::Instant::now();
    let n = 1_000_000usize;
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let backend = if cudajit::on_simulator() {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {backend}: {}", ctx.device().name()?);

    // @cuda.jit
    // def add_arrays(x, y, out):
    //     i = cuda.grid(1)
    //     if i < out.size:
    //         out[i] = x[i] + y[i]
    let add_arrays =
        Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_arrays", |k, (x, y, out)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
        })?;

    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let dx = stream.to_device(&x)?;
    let dy = stream.to_device(&y)?;
    let mut out = ctx.device_array_like(&dx)?;

    let threads_per_block = 128;
    let blocks = n.div_ceil(threads_per_block);
    let config = LaunchConfig::new(blocks as u32, threads_per_block as u32);
    add_arrays.launch(&stream, config, (&dx, &dy, &mut out))?;
    let result = out.to_vec_async(&stream)?;

    let first: Vec<String> = result[..10].iter().map(|v| v.to_string()).collect();
    println!("[{}]", first.join(", "));
    let wrong = (0..n).filter(|&i| result[i] != x[i] + y[i]).count();
    println!(
        "{n} elements checked against the host: {wrong} wrong; {:.0} ms in all",
        t0.elapsed().as_secs_f64() * 1e3
    );
    if wrong > 0 {
        return Err(Error::Usage(format!(
            "{wrong} elements differ from the host"
        )));
    }
    Ok(())
}
