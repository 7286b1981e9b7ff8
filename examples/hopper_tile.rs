//! Hopper's tile machinery written with the builder (the code docs/GUIDE.md shows in "Hopper:
//! TMA, mbarriers and the warpgroup MMA"): one warpgroup computes the 64×64 f32 tile
//! `C = A·B` of a 64×64 box of A (row-major `[M][K]`) and one of B (row-major `[K][N]`):
//! thread 0 sets a transaction barrier up and has TMA copy both boxes into shared memory
//! (128-byte swizzled), every thread waits for the barrier's phase, and four
//! `wgmma.mma_async.m64n64k16` read the tiles through their matrix descriptors.
//!
//! Every element is checked against the host: the inputs are small multiples of 1/16, so the
//! products and their sums are exact in f32 and the tile must equal the host's bit for bit.
//!
//! Runs on an sm_90 GPU (H100, H200), or on cudajit's CPU simulator with `CUDAJIT_SIMULATOR=1`
//! (what `bash scripts/run-example.sh hopper_tile` does on a machine without an NVIDIA GPU);
//! on another GPU it says why it does not run.
//!
//! `cargo run --release --example hopper_tile`

use cudajit::codegen::{Kernel, SmemMatrix, Tma, WgmmaAcc, WgmmaMajor, WgmmaSwizzle};
use cudajit::memory::{TensorMap, TensorMapOptions, TensorMapSwizzle};
use cudajit::{f16, prelude::*};
use ndarray::Array2;

fn main() {
    if let Err(e) = run() {
        eprintln!("hopper_tile: {e}");
        std::process::exit(1);
    }
}

/// A small value exact in f16 (a multiple of 1/16 in [-2, 2]), element `i` of a fixed pattern.
fn small(i: usize, salt: usize) -> f16 {
    f16::from_f32(((i * 37 + salt) % 65) as f32 / 16.0 - 2.0)
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let cc = ctx.device().compute_capability()?;
    if !cudajit::on_simulator() && cc != (9, 0) {
        println!(
            "hopper_tile: wgmma and TMA need an sm_90 GPU (H100, H200); this one is sm_{}{}: \
             not run (CUDAJIT_SIMULATOR=1 runs it on the simulator)",
            cc.0, cc.1
        );
        return Ok(());
    }
    let ha = Array2::from_shape_fn((64, 64), |(i, j)| small(i * 64 + j, 11));
    let hb = Array2::from_shape_fn((64, 64), |(i, j)| small(i * 64 + j, 5));
    let (a, b) = (s.to_device(&ha)?, s.to_device(&hb)?);
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let (map_a, map_b) = (
        TensorMap::<f16, 2>::tiled_with(&a, [64, 64], opts)?,
        TensorMap::<f16, 2>::tiled_with(&b, [64, 64], opts)?,
    );

    // One warpgroup: C (64×64, f32) = A (64×64 box of a row-major [M][K]) · B (64×64 box of a
    // row-major [K][N]), both maps with 128-byte swizzle and 64×64 boxes.
    let k = Kernel::<(Tma<f16, 2>, Tma<f16, 2>, &mut [f32])>::build("tile", |k, (ma, mb, c)| {
        let smem = k.dynamic_shared::<f16>();
        let bars = k.mbarriers(1);
        let t = k.thread_idx().x;
        // 128-byte swizzled tiles start on a 1024-byte boundary.
        let pad = smem.aligned_index(1024);
        k.if_(t.eq(0u32), |k| {
            bars.init(0u32, 1u32);
            k.fence_barrier_init();
        });
        k.syncthreads();
        k.if_(t.eq(0u32), |k| {
            bars.arrive_expect_tx(0u32, 2u32 * 64 * 64 * 2); // both boxes' bytes
            let zero = k.lit(0i32);
            ma.load([zero, zero], &smem, pad, &bars, 0u32);
            mb.load([zero, zero], &smem, pad + 4096u32, &bars, 0u32);
        });
        bars.wait(k, 0u32, 0u32);
        // A K-major (rows of 64 K), B MN-major (rows of 64 N); 8-row groups 1024 bytes apart.
        let a = SmemMatrix::new(&smem, pad, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
        let b = SmemMatrix::new(
            &smem,
            pad + 4096u32,
            WgmmaMajor::MN,
            WgmmaSwizzle::B128,
            8192,
            1024,
        );
        k.wgmma_fence();
        let mut acc = WgmmaAcc::zeros(64);
        for s in 0..4u32 {
            // K-steps of 16: 32 bytes along A's rows, 16 rows (2048 bytes) of B.
            acc = k.wgmma(&a.advance(s * 32), &b.advance(s * 2048), &acc, s > 0);
        }
        k.wgmma_commit();
        let acc = k.wgmma_wait(0, &acc);
        acc.for_each(k, |r, col, v| c.set(r * 64u32 + col, v));
    })?;
    let mut c = ctx.zeros::<f32, _>(64 * 64)?;
    let cfg = LaunchConfig::new(1, 128).with_shared_mem(1024 + 2 * 64 * 64 * 2);
    k.launch(&s, cfg, (&map_a, &map_b, &mut c))?;

    let got = c.to_vec_async(&s)?;
    let mut bad = 0;
    for i in 0..64 {
        for j in 0..64 {
            let want: f32 = (0..64)
                .map(|x| ha[[i, x]].to_f32() * hb[[x, j]].to_f32())
                .sum();
            if got[i * 64 + j] != want {
                bad += 1;
            }
        }
    }
    if bad > 0 {
        return Err(cudajit::Error::Usage(format!(
            "{bad} of 4096 elements of the tile differ from the host's"
        )));
    }
    println!(
        "hopper_tile: C = A·B (64×64×64, f16 in, f32 out) by TMA + 4 wgmma.m64n64k16 on {}: all \
         4096 elements equal the host's; C[0][0] = {}, C[63][63] = {}",
        if cudajit::on_simulator() {
            "the simulator".to_string()
        } else {
            ctx.device().name()?
        },
        got[0],
        got[4095]
    );
    Ok(())
}
