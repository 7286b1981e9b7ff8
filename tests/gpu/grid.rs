//! Grid-wide synchronisation (`grid_sync`, cooperative launches): one-kernel two-phase
//! algorithms give the right answer on fresh random data, the barrier can be reused many
//! times, and a grid too large to be resident at once is refused with a clear error.

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

/// The largest grid of `block`-thread blocks `k` may use, at most `cap` blocks.
fn grid_for<P: cudajit::codegen::KernelParams>(
    k: &Kernel<P>,
    ctx: &Context,
    block: u32,
    cap: u32,
) -> u32 {
    let max = k.max_cooperative_blocks(ctx, block, 0).unwrap();
    assert!(max >= 1, "no block fits");
    max.min(cap)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_two_phase_kernel_sums_then_uses_the_sum() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    // Phase 1: every thread adds its elements into total[0]; grid_sync; phase 2: every element
    // gets the whole total added. A block that passed the barrier early would see a partial sum.
    let k =
        Kernel::<(&[u32], &mut [u64], &mut [u64])>::build("two_phase_sum", |k, (x, total, out)| {
            let acc = k.var(0u64);
            k.for_step(k.grid1(), x.len(), k.gridsize1(), |_, i| {
                acc.set(acc.get() + x.at(i).cast::<u64>());
            });
            total.atomic_add(0u32, acc.get());
            k.grid_sync();
            let t = total.atomic_load(0u32);
            k.for_step(k.grid1(), x.len(), k.gridsize1(), |_, i| {
                out.set(i, x.at(i).cast::<u64>() + t);
            });
        })
        .unwrap();
    let cap = if cudajit::on_simulator() { 8 } else { u32::MAX };
    for n in [1usize, 1000, 300_000] {
        let hx: Vec<u32> = r.vec(n, |r| match r.next_u64() % 8 {
            0 => u32::MAX,
            1 => 0,
            _ => r.next_u64() as u32,
        });
        let want: u64 = hx.iter().map(|&v| v as u64).sum();
        let x = s.to_device(&hx).unwrap();
        let mut total = s.to_device(&[0u64]).unwrap();
        let mut out = s.to_device(&vec![0xdead_beef_u64; n]).unwrap();
        let grid = grid_for(&k, &ctx, 256, cap);
        k.launch(&s, LaunchConfig::new(grid, 256), (&x, &mut total, &mut out))
            .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for (i, (&g, &v)) in got.iter().zip(&hx).enumerate() {
            assert_eq!(g, v as u64 + want, "n {n} element {i} (grid {grid})");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_barrier_is_reused_across_many_rounds() {
    let mut r = Rng::new();
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    // Each round moves every element one place left (ping-pong between two buffers); an
    // element comes from another block's part at every round boundary.
    let rounds = 24u32;
    let k = Kernel::<(&mut [u32], &mut [u32], u32)>::build("rotate_rounds", |k, (a, b, rounds)| {
        let n = a.len();
        k.for_range(0u32, rounds, |k, t| {
            let even = (t & 1u32).eq(0u32);
            k.for_step(k.grid1(), n, k.gridsize1(), |k, i| {
                let j = (i + 1u64) % n;
                k.if_else(even, |_| b.set(i, a.at(j)), |_| a.set(i, b.at(j)));
            });
            k.grid_sync();
        });
    })
    .unwrap();
    let cap = if cudajit::on_simulator() { 6 } else { u32::MAX };
    let n = 50_003usize;
    let h: Vec<u32> = r.vec(n, |r| r.next_u64() as u32);
    let mut a = s.to_device(&h).unwrap();
    let mut b = s.to_device(&vec![0u32; n]).unwrap();
    let grid = grid_for(&k, &ctx, 128, cap);
    k.launch(&s, LaunchConfig::new(grid, 128), (&mut a, &mut b, rounds))
        .unwrap();
    // An even number of rounds ends in `a`.
    let got = a.to_vec_async(&s).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            *g,
            h[(i + rounds as usize) % n],
            "element {i} (grid {grid})"
        );
    }
    // Launched again on the same arrays: the barrier words are fresh for every launch.
    k.launch(&s, LaunchConfig::new(grid, 128), (&mut a, &mut b, rounds))
        .unwrap();
    let got = a.to_vec_async(&s).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            *g,
            h[(i + 2 * rounds as usize) % n],
            "second launch, element {i}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_grid_too_large_to_be_resident_is_refused_with_the_limit() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let k = Kernel::<(&mut [u32],)>::build("too_many_blocks", |k, (out,)| {
        k.grid_sync();
        k.if_(k.grid1().lt(out.len()), |_| out.set(k.grid1(), 1u32));
    })
    .unwrap();
    let max = k.max_cooperative_blocks(&ctx, 256, 0).unwrap();
    let mut out = s.to_device(&vec![0u32; 16]).unwrap();
    let e = k
        .launch(&s, LaunchConfig::new(max + 1, 256), (&mut out,))
        .expect_err("a grid past the resident limit is refused");
    let msg = e.to_string();
    assert!(
        msg.contains("grid_sync") && msg.contains(&format!("at most {max} fit")),
        "{msg}"
    );
    // The context is fine: a launch that fits works.
    k.launch(&s, LaunchConfig::new(1, 256), (&mut out,))
        .unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![1u32; 16]);
}
