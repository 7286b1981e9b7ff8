//! Peer access and copies between devices. All run on the simulator too (`scripts/test.sh` runs
//! it with `CUDAJIT_SIM_DEVICES=2`); the two-device tests skip themselves, printing why, with
//! fewer devices.

use cudajit::prelude::*;

use crate::common::ctx;

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_is_not_its_own_peer() {
    let c = ctx();
    let d = c.device();
    assert!(!d.can_access_peer(&d).unwrap());
    let e = c.enable_peer_access(&c).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    assert!(e.to_string().contains("the peer is device 0 itself"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_waits_on_an_event_and_copies_stay_on_one_device() {
    let c = ctx();
    let (s1, s2) = (c.new_stream().unwrap(), c.new_stream().unwrap());
    let host: Vec<u32> = (0..100_000).collect();
    let a = s1.to_device(&host).unwrap();
    let ev = c.new_event().unwrap();
    ev.record(&s1).unwrap();
    s2.wait_event(&ev).unwrap();
    let mut b = c.alloc::<u32, _>(host.len()).unwrap();
    b.copy_from_device_async(&a, &s2).unwrap();
    assert_eq!(b.to_vec_async(&s2).unwrap(), host);
}

/// Devices 0 and 1 with their contexts, or `None` (printing why) with fewer than two.
fn two() -> Option<(Context, Context)> {
    if !crate::common::has_devices(2) {
        return None;
    }
    Some((Context::new(0).unwrap(), Context::new(1).unwrap()))
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn peer_access_is_idempotent_or_clearly_refused() {
    let Some((c0, c1)) = two() else { return };
    let (d0, d1) = (c0.device(), c1.device());
    let can = d0.can_access_peer(&d1).unwrap();
    assert_eq!(
        can,
        d1.can_access_peer(&d0).unwrap(),
        "peer access is symmetric here"
    );
    if can {
        for _ in 0..2 {
            c0.enable_peer_access(&c1).unwrap();
            c1.enable_peer_access(&c0).unwrap();
        }
    } else {
        let e = c0.enable_peer_access(&c1).unwrap_err();
        assert!(e.to_string().contains("cannot access device 1"), "{e}");
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn peer_copies_both_ways_sync_and_on_either_stream() {
    let Some((c0, c1)) = two() else { return };
    let n = 1 << 22;
    let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let a0 = c0.to_device(&host).unwrap();
    let mut a1 = c1.alloc::<f32, _>(n).unwrap();
    a1.fill(f32::NAN).unwrap();
    a1.copy_from_device(&a0).unwrap();
    assert_eq!(a1.to_vec().unwrap(), host, "sync 0 -> 1");
    let (s0, s1) = (c0.new_stream().unwrap(), c1.new_stream().unwrap());
    let mut b0 = c0.alloc::<f32, _>(n).unwrap();
    b0.fill(f32::NAN).unwrap();
    b0.copy_from_device_async(&a1, &s1).unwrap();
    s1.synchronize().unwrap();
    assert_eq!(b0.to_vec().unwrap(), host, "1 -> 0 on device 1's stream");
    let mut b1 = c1.alloc::<f32, _>(n).unwrap();
    b1.fill(f32::NAN).unwrap();
    s0.copy(&b0, &mut b1).unwrap();
    s0.synchronize().unwrap();
    assert_eq!(b1.to_vec().unwrap(), host, "0 -> 1 on device 0's stream");
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn stream_of_device_1_waits_on_an_event_of_device_0() {
    let Some((c0, c1)) = two() else { return };
    let (s0, s1) = (c0.new_stream().unwrap(), c1.new_stream().unwrap());
    let n = 1 << 24;
    let host: Vec<u32> = (0..n as u32).collect();
    let src = c0.to_device(&host).unwrap();
    let mut mid = c0.alloc::<u32, _>(n).unwrap();
    mid.fill(0).unwrap();
    // Device 0 fills `mid` on s0 (several copies, so it takes a while); s1 waits for them.
    for _ in 0..4 {
        mid.copy_from_device_async(&src, &s0).unwrap();
    }
    let done = c0.new_event().unwrap();
    done.record(&s0).unwrap();
    s1.wait_event(&done).unwrap();
    let mut out = c1.alloc::<u32, _>(n).unwrap();
    out.copy_from_device_async(&mid, &s1).unwrap();
    assert_eq!(out.to_vec_async(&s1).unwrap(), host);
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn array_with_a_stream_of_another_device_is_an_error_naming_both() {
    let Some((c0, c1)) = two() else { return };
    let s0 = c0.new_stream().unwrap();
    let mut a1 = c1.alloc::<f32, _>(16).unwrap();
    let e = a1.fill_async(1.0, &s0).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("device 0") && text.contains("device 1"),
        "{text}"
    );
    let e = c1.new_event().unwrap().record(&s0).unwrap_err();
    assert!(e.to_string().contains("device 0"), "{e}");
}
