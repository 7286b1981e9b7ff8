//! The smallest program a crate depending on cudajit writes: the classic add kernel, built with
//! the kernel builder, compiled to PTX for sm_90 (LLVM, no GPU needed), then launched on
//! cudajit's CPU simulator (no GPU or driver needed) and checked against the host.

use cudajit::codegen::{Kernel, PtxOptions};
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("cudajit-dependent: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    // Before any other cudajit call: every device call of this process goes to the simulator.
    cudajit::use_simulator()?;

    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_arrays", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })?;

    let ptx = add.compile_ptx(&PtxOptions::for_cc(9, 0))?;
    let entry = ptx.contains(".visible .entry add_arrays");
    println!(
        "PTX for sm_90: {} lines, entry add_arrays: {}",
        ptx.lines().count(),
        if entry { "yes" } else { "no" }
    );
    if !entry {
        return Err(Error::Usage("the PTX has no add_arrays entry".into()));
    }

    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let dx = stream.to_device(&x)?;
    let dy = stream.to_device(&y)?;
    let mut out = ctx.device_array_like(&dx)?;
    let threads = 128u32;
    let blocks = (n as u32).div_ceil(threads);
    add.launch(
        &stream,
        LaunchConfig::new(blocks, threads),
        (&dx, &dy, &mut out),
    )?;
    let result = out.to_vec_async(&stream)?;

    let first: Vec<String> = result[..10].iter().map(|v| v.to_string()).collect();
    println!("on {}: [{}]", ctx.device().name()?, first.join(", "));
    let wrong = (0..n).filter(|&i| result[i] != x[i] + y[i]).count();
    println!("{n} elements checked against the host: {wrong} wrong");
    if wrong > 0 {
        return Err(Error::Usage(format!(
            "{wrong} elements differ from the host"
        )));
    }
    Ok(())
}
