//! Warp specialisation: warps of one block that wait for each other's later work, on the GPU
//! and on the simulator (whose warps run independently in such kernels):
//! - a producer warp feeds two consumer warps through a two-stage ring in shared memory, on
//!   "full" and "empty" transaction barriers (the producer runs ahead until the ring is full,
//!   which a block run in lockstep could never do);
//! - two warp pairs hand a buffer back and forth with named barriers (`bar.arrive` /
//!   `bar.sync`), CUTLASS's producer/consumer ordering;
//! - on the simulator, a named barrier whose count is never reached and a warpgroup
//!   instruction that one warp of the warpgroup skips are reported, not hung.
//!
//! Outputs are poisoned first and compared bit for bit with the host model (every value,
//! NaN payloads too, moves through shared memory unchanged).

use cudajit::codegen::Kernel;
use cudajit::prelude::*;
use cudajit::FaultKind;

use crate::common::{ctx, sm90, special_f32, Rng};

/// Tiles of 64 elements; the output of tile `i` is tile `i` reversed.
fn reversed_tiles(input: &[f32]) -> Vec<f32> {
    input
        .chunks(64)
        .flat_map(|t| t.iter().rev().copied())
        .collect()
}

fn check_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{what}: element {i} (tile {}, lane {}): got {g:?}, want {w:?}",
            i / 64,
            i % 64
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn producer_warp_feeds_consumers_through_mbarriers() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: mbarriers need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    // Barriers 0, 1: stage s is full (the producer warp's 32 lanes arrive); 2, 3: stage s is
    // empty again (the consumers' 64 lanes arrive).
    let k = Kernel::<(&[f32], &mut [f32], u32)>::build("ws_ring", |k, (input, out, tiles)| {
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
    .unwrap();
    let mut rng = Rng::new();
    for tiles in [1usize, 2, 7] {
        let host = special_f32(&mut rng, tiles * 64);
        let input = s.to_device(&host).unwrap();
        let mut out = s
            .to_device(&vec![f32::from_bits(0x7fc0_dead); tiles * 64])
            .unwrap();
        k.launch(
            &s,
            LaunchConfig::new(1, 96),
            (&input, &mut out, tiles as u32),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        check_bits(&got, &reversed_tiles(&host), &format!("{tiles} tiles"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn named_barriers_hand_a_buffer_between_warp_pairs() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // Warps 0-1 write a round into the buffer and arrive at barrier 1; warps 2-3 wait there,
    // read it reversed, and arrive at barrier 2, where the writers wait before the next round.
    let k =
        Kernel::<(&[f32], &mut [f32], u32)>::build("named_handoff", |k, (input, out, rounds)| {
            let buf = k.shared_array::<f32>(64);
            let t = k.thread_idx().x;
            k.if_else(
                t.lt(64u32),
                |k| {
                    k.for_range(0u32, rounds, |k, r| {
                        buf.set(t, input.at(r * 64u32 + t));
                        k.named_barrier_arrive(1, 128);
                        k.named_barrier_sync(2, 128);
                    });
                },
                |k| {
                    let e = t - 64u32;
                    k.for_range(0u32, rounds, |k, r| {
                        k.named_barrier_sync(1, 128);
                        out.set(r * 64u32 + e, buf.at(63u32 - e));
                        k.named_barrier_arrive(2, 128);
                    });
                },
            );
        })
        .unwrap();
    let mut rng = Rng::new();
    for rounds in [1usize, 5] {
        let host = special_f32(&mut rng, rounds * 64);
        let input = s.to_device(&host).unwrap();
        let mut out = s
            .to_device(&vec![f32::from_bits(0x7fc0_dead); rounds * 64])
            .unwrap();
        k.launch(
            &s,
            LaunchConfig::new(1, 128),
            (&input, &mut out, rounds as u32),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        check_bits(&got, &reversed_tiles(&host), &format!("{rounds} rounds"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn simulator_reports_warps_that_never_meet() {
    if !cudajit::on_simulator() {
        println!("skipped: on a GPU these kernels hang or fault");
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let fault = |r: cudajit::Result<()>| match r {
        Err(cudajit::Error::Fault { kind, message, .. }) => (kind, message),
        other => panic!("expected a fault, got {other:?}"),
    };
    // Warp 0 waits for 64 threads at barrier 1; warp 1 never comes.
    let k = Kernel::<(&mut [f32],)>::build("lonely_barrier", |k, (out,)| {
        let t = k.thread_idx().x;
        k.if_(t.lt(32u32), |k| k.named_barrier_sync(1, 64));
        out.set(t, 1.0f32);
    })
    .unwrap();
    let mut out = c.zeros::<f32, _>(64).unwrap();
    let (kind, message) = fault(k.launch(&s, LaunchConfig::new(1, 64), (&mut out,)));
    assert_eq!(kind, FaultKind::Deadlock, "{message}");
    assert!(
        message.contains("warp 0 waits at named barrier 1 (32 of 64 threads arrived)")
            && message.contains("warp 1 has finished"),
        "{message}"
    );
    // Three warps of warpgroup 0 reach a wgmma fence that the fourth skips.
    let k = Kernel::<(&mut [f32],)>::build("split_warpgroup", |k, (out,)| {
        let t = k.thread_idx().x;
        k.set_max_nreg(false, 40);
        k.if_(t.lt(96u32), |k| k.wgmma_fence());
        out.set(t, 1.0f32);
    })
    .unwrap();
    let mut out = c.zeros::<f32, _>(128).unwrap();
    let (kind, message) = fault(k.launch(&s, LaunchConfig::new(1, 128), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier, "{message}");
    assert!(message.contains("warpgroup 0"), "{message}");
    // A named barrier that expects more threads than the block has arriving at it.
    let k = Kernel::<(&mut [f32],)>::build("overfull_barrier", |k, (out,)| {
        let t = k.thread_idx().x;
        k.if_else(
            t.lt(32u32),
            |k| k.named_barrier_sync(3, 64),
            |k| k.named_barrier_sync(3, 32),
        );
        out.set(t, 1.0f32);
    })
    .unwrap();
    let (kind, message) = fault(k.launch(&s, LaunchConfig::new(1, 64), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier, "{message}");
    assert!(message.contains("same count"), "{message}");
}
