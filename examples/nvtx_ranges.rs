//! NVTX ranges and marks around a few array operations, for Nsight Systems' timeline: a named
//! range per step (coloured, in named categories), marks, a range on a worker thread, and,
//! with `CUDAJIT_NVTX=1`, cudajit's own ranges (copies, compiles, module loads, `Elementwise`
//! calls, reductions) nested inside them.
//!
//! ```sh
//! CUDAJIT_NVTX=1 nsys profile --trace=cuda,nvtx -o nvtx_ranges \
//!     target/release/examples/nvtx_ranges
//! nsys stats --report nvtx_sum nvtx_ranges.nsys-rep
//! ```
//!
//! Runs on the GPU when a CUDA driver is present, else on cudajit's CPU simulator. Without a
//! tool (not under `nsys`), every NVTX call does nothing; the program says whether one is
//! attached.

use cudajit::codegen::Expr;
use cudajit::nvtx::{self, Attributes, Color, Payload};
use cudajit::ops::{ArrayOps, Elem, Elementwise, ReduceOps, Scalar};
use cudajit::prelude::*;

/// Category ids, named for the tool with `nvtx::name_category`.
const SETUP: u32 = 1;
const COMPUTE: u32 = 2;

fn main() {
    if let Err(e) = run() {
        eprintln!("nvtx_ranges: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    if std::env::var_os("CUDAJIT_SIMULATOR").is_none() && cudajit::sys::driver_library().is_err() {
        cudajit::use_simulator()?;
    }
    println!(
        "NVTX tool attached: {} (NVTX_INJECTION64_PATH={})",
        nvtx::is_attached(),
        std::env::var("NVTX_INJECTION64_PATH").unwrap_or_else(|_| "unset".into())
    );
    println!(
        "cudajit's own ranges (CUDAJIT_NVTX): {}",
        std::env::var("CUDAJIT_NVTX").unwrap_or_else(|_| "unset".into())
    );
    nvtx::name_category(SETUP, "setup");
    nvtx::name_category(COMPUTE, "compute");
    nvtx::name_current_thread("main");

    let n = 1usize << 22;
    let _all = nvtx::range_with("nvtx_ranges example", Attributes::new().color(Color::GREY));

    let setup = nvtx::range_with(
        "setup",
        Attributes::new()
            .color(Color::BLUE)
            .category(SETUP)
            .payload(Payload::U64(n as u64)),
    );
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let backend = if cudajit::on_simulator() {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {backend}: {}", ctx.device().name()?);
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let dx = stream.to_device(&x)?;
    let dy = stream.to_device(&y)?;
    let mut out = ctx.zeros::<f32, _>(n)?;
    let axpy =
        Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), Expr<f32>>::new("axpy", |(a, x, y)| {
            a * x + y
        })?;
    setup.end();
    nvtx::mark_with(
        "inputs on the device",
        Attributes::new().color(Color::GREEN),
    );

    let mut total = 0.0;
    for step in 0..3 {
        let _step = nvtx::range_with(
            &format!("step {step}"),
            Attributes::new()
                .color(Color::ORANGE)
                .category(COMPUTE)
                .payload(Payload::I32(step)),
        );
        axpy.apply(&stream, (0.5, &dx, &dy), &mut out)?;
        let scaled = out.scale(&stream, 2.0)?;
        total = scaled.sum(&stream)?;
    }
    println!("3 steps of axpy, scale and sum over {n} elements: sum = {total}");

    // A range that starts here and ends on a worker thread, which has a range of its own.
    let handoff = nvtx::start_with(
        "hand-off to a worker",
        Attributes::new().color(Color::PURPLE),
    );
    let host = std::thread::scope(|s| {
        s.spawn(|| {
            nvtx::name_current_thread("worker");
            handoff.end();
            let _copy = nvtx::range_with("copy back", Attributes::new().color(Color::CYAN));
            out.to_vec_async(&stream)
        })
        .join()
        .unwrap_or_else(|_| Err(Error::Usage("the worker thread panicked".into())))
    })?;
    let expected = 0.5 * x[123] + y[123];
    println!("out[123] = {} (expected {expected})", host[123]);
    nvtx::mark("done");
    println!(
        "ranges: nvtx_ranges example > setup, step 0..2 (> cudajit's own with CUDAJIT_NVTX=1); \
         hand-off to a worker; copy back (worker thread); marks: inputs on the device, done"
    );
    Ok(())
}
