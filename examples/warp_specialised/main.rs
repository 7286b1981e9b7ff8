//! Warp specialisation written with cudajit's builder (docs/GUIDE.md, "Warp specialisation:
//! producer and consumer warps, named barriers"); the kernels are `kernels.rs` beside this file.
//!
//! 1. Two warps write a buffer in shared memory and two read it, handing it back and forth
//!    with named barriers (`bar.arrive` / `bar.sync`), 8 rounds: any GPU.
//! 2. One producer warp feeds two consumer warps through a two-stage ring of shared memory on
//!    transaction barriers, running ahead of them until the ring is full: sm_90 (H100, H200).
//!
//! Each checks every output element against the host and prints a line. On cudajit's CPU
//! simulator (`CUDAJIT_SIMULATOR=1`, what `bash scripts/run-example.sh warp_specialised` does
//! on a machine without an NVIDIA GPU) the warps of these kernels run independently, as on a
//! GPU: a producer that waits for its consumers is not a deadlock there.
//!
//! `cargo run --release --example warp_specialised`

mod kernels;

use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("warp_specialised: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let where_ = if cudajit::on_simulator() {
        "the simulator".to_string()
    } else {
        ctx.device().name()?
    };
    let input: Vec<f32> = (0..8 * 64).map(|i| i as f32 * 0.5 - 7.0).collect();
    let want = kernels::reversed_tiles(&input);
    let dinput = s.to_device(&input)?;

    let k = kernels::handoff()?;
    let mut out = s.to_device(&vec![f32::NAN; input.len()])?;
    k.launch(&s, LaunchConfig::new(1, 128), (&dinput, &mut out, 8u32))?;
    check(
        "named barriers: 2 warps write, 2 read, 8 rounds",
        &out.to_vec_async(&s)?,
        &want,
    );

    let cc = ctx.device().compute_capability()?;
    if !cudajit::on_simulator() && cc < (9, 0) {
        println!(
            "ring of transaction barriers: skipped, mbarriers need sm_90 (this GPU is sm_{}{})",
            cc.0, cc.1
        );
    } else {
        let k = kernels::ring()?;
        let mut out = s.to_device(&vec![f32::NAN; input.len()])?;
        k.launch(&s, LaunchConfig::new(1, 96), (&dinput, &mut out, 8u32))?;
        check(
            "producer warp, 2 consumer warps, 2-stage ring, 8 tiles",
            &out.to_vec_async(&s)?,
            &want,
        );
    }
    println!("warp_specialised: ran on {where_}");
    Ok(())
}

/// Prints a line for one kernel; exits with an error on the first wrong element.
fn check(what: &str, got: &[f32], want: &[f32]) {
    if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        eprintln!(
            "warp_specialised: {what}: element {i} is {}, want {}",
            got[i], want[i]
        );
        std::process::exit(1);
    }
    println!("{what}: all {} elements right", want.len());
}
