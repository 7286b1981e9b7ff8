//! The device-side join of sharded full reductions (the other devices publish a flag after
//! their partial result, the first device waits for the flags in a kernel with a
//! `%globaltimer` timeout): repeated reductions against the host and against the event join,
//! and a device that never publishes, which must be an error within the timeout, not a hang.
//! Two devices (two GPUs, or the simulator with `CUDAJIT_SIM_DEVICES=2`); skipped on one.

use std::time::{Duration, Instant};

use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};

use crate::common::{has_devices, Rng};

/// A mesh of devices 0 and 1 whose device 1 is a peer of device 0 (else `None`, printed).
fn peer_mesh() -> Option<Mesh> {
    if !has_devices(2) {
        return None;
    }
    let m = Mesh::new(&[0, 1]).unwrap();
    if !m.has_peer_access_to_first(1) {
        println!("skipping: devices 0 and 1 are not peers (the join uses events there)");
        return None;
    }
    Some(m)
}

fn host_sum(x: &[f32]) -> (f64, f64) {
    x.iter().fold((0.0, 0.0), |(s, a), &v| {
        (s + v as f64, a + (v as f64).abs())
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn repeated_sums_join_on_the_device_and_match_the_host() {
    let Some(m) = peer_mesh() else { return };
    if std::env::var("CUDAJIT_SHARDED_JOIN").is_ok_and(|v| v == "events") {
        assert!(!m.device_join());
        m.set_device_join(true);
    }
    assert!(m.device_join());
    let mut rng = Rng::new();
    // More calls than slot sets (the ring wraps several times), each on new data.
    for (i, n) in [
        1001usize,
        65_537,
        3,
        2,
        1 << 20,
        77,
        4096,
        5,
        999,
        12_345,
        64,
        100_003,
    ]
    .into_iter()
    .enumerate()
    {
        let h: Vec<f32> = rng.vec(n, |r| r.f32() - 0.5);
        let x = ShardedArray::from_host(&m, &h).unwrap();
        let (want, mag) = host_sum(&h);
        let got = x.sum().unwrap();
        assert!(
            (got as f64 - want).abs() <= 1e-5 * mag + 1e-6,
            "call {i}, n={n}: sum {got} vs {want}"
        );
        // The same combination order as the event join: the same bits.
        m.set_device_join(false);
        let by_events = x.sum().unwrap();
        m.set_device_join(true);
        assert_eq!(got.to_bits(), by_events.to_bits(), "call {i}, n={n}");
        let hmax = h.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let hmin = h.iter().copied().fold(f32::INFINITY, f32::min);
        assert_eq!(x.max().unwrap(), hmax, "call {i}");
        assert_eq!(x.min().unwrap(), hmin, "call {i}");
    }
    // Back-to-back sums into device scalars with no host wait between them: every slot set
    // and epoch in flight at once.
    let inputs: Vec<Vec<f32>> = (0..10)
        .map(|j| {
            (0..50_001)
                .map(|i| ((i * 7 + j * 13) % 101) as f32)
                .collect()
        })
        .collect();
    let xs: Vec<_> = inputs
        .iter()
        .map(|h| ShardedArray::from_host(&m, h).unwrap())
        .collect();
    let mut outs: Vec<_> = (0..10)
        .map(|_| m.context(0).to_device(&[f32::NAN]).unwrap())
        .collect();
    for (x, out) in xs.iter().zip(&mut outs) {
        x.sum_into(out).unwrap();
    }
    m.synchronize().unwrap();
    for (j, (h, out)) in inputs.iter().zip(&outs).enumerate() {
        // Small integers: exact in f32 in any order.
        let want: f32 = h.iter().sum();
        assert_eq!(out.to_vec().unwrap(), [want], "sum {j}");
    }
    let ints: Vec<i64> = (0..9999).map(|i| i * 3 - 7).collect();
    let xi = ShardedArray::from_host(&m, &ints).unwrap();
    assert_eq!(xi.sum().unwrap(), ints.iter().sum::<i64>());
    assert_eq!(
        xi.prod().unwrap(),
        ints.iter().fold(1i64, |a, &b| a.wrapping_mul(b))
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_that_never_publishes_is_an_error_within_the_timeout() {
    let Some(m) = peer_mesh() else { return };
    m.set_device_join(true);
    let timeout = Duration::from_millis(300);
    m.set_join_timeout(timeout);
    assert_eq!(m.join_timeout(), timeout);
    let h: Vec<f32> = (0..10_000).map(|i| (i % 17) as f32).collect();
    let want: f32 = h.iter().sum();
    let x = ShardedArray::from_host(&m, &h).unwrap();
    assert_eq!(x.sum().unwrap(), want);

    // The value read back: an error naming device 1, after the timeout, not a hang.
    m.debug_withhold_publication(Some(1));
    let t = Instant::now();
    let e = x.sum().unwrap_err();
    let took = t.elapsed();
    let s = e.to_string();
    assert!(s.contains("device 1") && s.contains("in vain"), "{s}");
    assert!(took >= timeout, "gave up after {took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");

    // Into a device scalar: reported by the next synchronisation, once.
    let mut out = m.context(0).to_device(&[0f32]).unwrap();
    x.sum_into(&mut out).unwrap();
    let e = m.synchronize().unwrap_err();
    assert!(e.to_string().contains("device 1"), "{e}");
    m.synchronize().unwrap();

    // Publishing again, the next epochs pass: the mesh is usable after a lost flag.
    m.debug_withhold_publication(None);
    for _ in 0..6 {
        assert_eq!(x.sum().unwrap(), want);
    }
    x.sum_into(&mut out).unwrap();
    m.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), [want]);
}
