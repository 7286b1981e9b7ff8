//! Rust source lines in kernels (`PtxOptions::lineinfo`, numba's `lineinfo=True`): prints the
//! PTX's line table, then launches a kernel whose store has no bounds guard; with `--oob`, one
//! block too many, so that the last block writes past the end of the array.
//!
//! - On the CPU simulator (`CUDAJIT_SIMULATOR=1`), the launch fails with a fault naming this
//!   file and the line of the `out.set(..)` call.
//! - On a GPU, run it under compute-sanitizer to see the Rust line of the faulting store:
//!   `compute-sanitizer --tool memcheck target/release/examples/lineinfo --oob` (the report's
//!   "Invalid __global__ write" names `examples/lineinfo.rs:<line>`). Nsight Compute's source
//!   view shows the same lines (`ncu --import-source yes --set full ...`).
//!
//! `cargo run --release --example lineinfo [-- --oob]`

use cudajit::codegen::{Kernel, PtxOptions};
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("lineinfo: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let opts = PtxOptions::default().lineinfo(true);
    let store_line = line!() + 4;
    let k = Kernel::<(&[f32], &mut [f32])>::build_with("unguarded_scale", opts, |k, (x, out)| {
        let i = k.grid1();
        let v = x.at(i % x.len()) * 2.0f32;
        out.set(i, v); // no `if i < out.len()`: the extra block writes past the end
    })?;
    let ptx = k.compile_ptx(&PtxOptions::default().lineinfo(true))?;
    println!("the PTX's line table:");
    for l in ptx.lines().map(str::trim) {
        if l.starts_with(".file") || l.starts_with(".loc\t") || l.starts_with(".loc ") {
            println!("  {l}");
        }
    }
    println!("the store is at {}:{store_line}", file!());

    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let n = 1000usize;
    let x = s.to_device(&vec![1.0f32; n])?;
    let mut out = ctx.zeros::<f32, _>(n)?;
    let oob = std::env::args().any(|a| a == "--oob");
    let blocks = n.div_ceil(128) as u32 + oob as u32;
    match k
        .launch(&s, LaunchConfig::new(blocks, 128), (&x, &mut out))
        .and_then(|()| s.synchronize())
    {
        Ok(()) if oob => println!(
            "launched {blocks} blocks of 128 threads for {n} elements: the writes past the end \
             went unnoticed (run this under compute-sanitizer to see them, with their line)"
        ),
        Ok(()) => println!(
            "launched {blocks} blocks of 128 threads for {n} elements (rerun with --oob for one \
             block too many)"
        ),
        Err(e) => println!("the launch failed: {e}"),
    }
    Ok(())
}
