//! Warp specialisation: warps of one block that wait for each other's later work, on the GPU
//! and on the simulator (whose warps run independently in such kernels); the first two
//! kernels are examples/warp_specialised's:
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

use crate::common::{ctx, fault, sm90, special_f32, Rng};

#[path = "../../examples/warp_specialised/kernels.rs"]
mod kernels;
use kernels::reversed_tiles;

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
    let k = kernels::ring().unwrap();
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
    let k = kernels::handoff().unwrap();
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
