//! Thread-block clusters written with cudajit's builder (docs/GUIDE.md, "Thread-block
//! clusters and distributed shared memory"); the kernel is `kernels.rs` beside this file.
//!
//! A histogram whose 256 bins are spread over the shared memory of the blocks of a cluster:
//! each block adds its values to the bins' owner blocks with atomics on their shared memory,
//! then each block writes the bins it holds. Run with clusters of 1, 2, 4 and 8 blocks
//! (`LaunchConfig::with_cluster`), each checked against the host. Clusters need sm_90 (H100,
//! H200); on cudajit's CPU simulator (`CUDAJIT_SIMULATOR=1`, what `bash
//! scripts/run-example.sh clusters` does on a machine without an NVIDIA GPU) a cluster's
//! blocks run together, as on a GPU.
//!
//! `cargo run --release --example clusters`

mod kernels;

use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("clusters: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let cc = ctx.device().compute_capability()?;
    if !cudajit::on_simulator() && cc < (9, 0) {
        println!(
            "clusters: skipped, thread-block clusters need sm_90 (this GPU is sm_{}{})",
            cc.0, cc.1
        );
        return Ok(());
    }
    let where_ = if cudajit::on_simulator() {
        "the simulator".to_string()
    } else {
        ctx.device().name()?
    };
    let blocks = 16u32;
    // Skewed values: a third land in bins 0-6.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let x: Vec<u32> = (0..blocks * kernels::PER_BLOCK)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if seed % 3 == 0 {
                (seed >> 8) as u32 % 7
            } else {
                (seed >> 16) as u32
            }
        })
        .collect();
    let dx = s.to_device(&x)?;
    let k = kernels::histogram()?;
    for size in [1u32, 2, 4, 8] {
        let want = kernels::host_histogram(&x, size);
        let mut hist = s.to_device(&vec![u32::MAX; want.len()])?;
        let cfg = LaunchConfig::new(blocks, 128).with_cluster(size);
        k.launch(&s, cfg, (&dx, &mut hist))?;
        let got = hist.to_vec_async(&s)?;
        let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        println!(
            "histogram over clusters of {size}: {} bins per block, {} of {} bins match the host{}",
            kernels::BINS / size,
            want.len() - bad,
            want.len(),
            if bad == 0 { "" } else { "  <-- MISMATCH" }
        );
        if bad != 0 {
            eprintln!("clusters: clusters of {size}: {bad} bins differ from the host");
            std::process::exit(1);
        }
    }
    println!("clusters: all histograms match, on {where_}");
    Ok(())
}
