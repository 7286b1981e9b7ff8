//! The kernels of the warp-specialisation example (shared with `tests/gpu/warps.rs`): warps of
//! one block with different jobs, handing data over through shared memory.

use cudajit::codegen::Kernel;

/// The hand-off kernel's parameters: input, output, rounds.
pub type Handoff = Kernel<(&'static [f32], &'static mut [f32], u32)>;

/// Warps 0-1 write 64 elements of round `r` into a shared buffer and warps 2-3 read them back
/// reversed, round after round, ordered by named barriers: the writers arrive at barrier 1
/// and wait at barrier 2 before the next round, the readers wait at 1 and arrive at 2.
/// Launch with one block of 128 threads; `out[64r + e] = input[64r + 63 - e]`.
pub fn handoff() -> cudajit::Result<Handoff> {
    Kernel::<(&[f32], &mut [f32], u32)>::build("named_handoff", |k, (input, out, rounds)| {
        let buf = k.shared_array::<f32>(64);
        let t = k.thread_idx().x;
        k.for_range(0u32, rounds, |k, r| {
            let base = r * 64u32;
            // Warps 0-1 write a buffer, warps 2-3 read it; 128 threads meet at each barrier.
            k.if_else(
                t.lt(64u32),
                |k| {
                    buf.set(t, input.at(base + t));
                    k.named_barrier_arrive(1, 128); // "it is written", without waiting
                    k.named_barrier_sync(2, 128); // wait until it has been read
                },
                |k| {
                    k.named_barrier_sync(1, 128);
                    out.set(base + t - 64u32, buf.at(127u32 - t));
                    k.named_barrier_arrive(2, 128);
                },
            );
        });
    })
}

/// The ring kernel's parameters: input, output, tiles.
pub type Ring = Kernel<(&'static [f32], &'static mut [f32], u32)>;

/// One producer warp feeds two consumer warps through a two-stage ring of 64-element tiles
/// in shared memory (sm_90: transaction barriers). Barriers 0, 1: stage `s` is full (the
/// producer's 32 lanes arrive); 2, 3: it is empty again (the consumers' 64 lanes arrive).
/// The producer runs ahead until the ring is full. Launch with one block of 96 threads;
/// `out[64i + e] = input[64i + 63 - e]`.
pub fn ring() -> cudajit::Result<Ring> {
    Kernel::<(&[f32], &mut [f32], u32)>::build("ws_ring", |k, (input, out, tiles)| {
        let ring = k.shared_array::<f32>(128);
        let bars = k.mbarriers(4);
        let t = k.thread_idx().x;
        k.if_(t.eq(0u32), |k| {
            for st in 0..2u32 {
                bars.init(st, 32u32);
                bars.init(st + 2, 64u32);
            }
            k.fence_barrier_init();
        });
        k.syncthreads();
        k.if_else(
            t.lt(32u32),
            |k| {
                // Round r of stage s waits for the consumers' round r - 1; round 0 waits on
                // the phase "before" the first, which counts as complete.
                k.for_range(0u32, tiles, |k, i| {
                    let st = i & 1u32;
                    bars.wait(k, st + 2u32, ((i >> 1u32) & 1u32) ^ 1u32);
                    for h in 0..2u32 {
                        let e = t + h * 32;
                        ring.set(st * 64u32 + e, input.at(i * 64u32 + e));
                    }
                    bars.arrive(st);
                });
            },
            |k| {
                let e = t - 32u32;
                k.for_range(0u32, tiles, |k, i| {
                    let st = i & 1u32;
                    bars.wait(k, st, (i >> 1u32) & 1u32);
                    out.set(i * 64u32 + e, ring.at(st * 64u32 + 63u32 - e));
                    bars.arrive(st + 2u32);
                });
            },
        );
    })
}

/// The host model of both kernels: every 64-element tile reversed.
pub fn reversed_tiles(input: &[f32]) -> Vec<f32> {
    input
        .chunks(64)
        .flat_map(|t| t.iter().rev().copied())
        .collect()
}
