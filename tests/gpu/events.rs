use cudajit::prelude::*;

use crate::common::{ctx, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn events_time_and_order_streams() {
    let c = ctx();
    let s1 = c.new_stream().unwrap();
    let s2 = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 1 << 24;
    let host: Vec<f32> = rng.vec(n, |r| r.f32());
    let a = c.to_device(&host).unwrap();
    let mut b = c.alloc::<f32, _>(n).unwrap();
    b.fill(-1.0).unwrap();
    let mut out = c.alloc::<f32, _>(n).unwrap();
    out.fill(-2.0).unwrap();

    let start = c.new_event().unwrap();
    let end = c.new_event().unwrap();
    assert!(
        start.query().unwrap(),
        "an unrecorded event counts as complete"
    );
    start.record(&s1).unwrap();
    for _ in 0..4 {
        b.copy_from_device_async(&a, &s1).unwrap();
    }
    end.record(&s1).unwrap();
    // s2 waits for s1's copies before copying b onwards.
    end.wait(&s2).unwrap();
    out.copy_from_device_async(&b, &s2).unwrap();
    assert_eq!(out.to_vec_async(&s2).unwrap(), host);
    end.synchronize().unwrap();
    assert!(end.query().unwrap());
    let ms = cudajit::elapsed_ms(&start, &end).unwrap();
    assert!(ms > 0.0 && ms < 10_000.0, "{ms} ms");
    assert_eq!(end.elapsed_ms_since(&start).unwrap(), ms);
    let gbps = 4.0 * 2.0 * (n * 4) as f64 / (ms as f64 * 1e-3) / 1e9;
    println!("4 device copies of 64 MiB: {ms:.3} ms, {gbps:.0} GB/s");
    // Timing a non-timing event is an error, not a panic.
    let cheap = c.new_event_with(false, true).unwrap();
    cheap.record(&s1).unwrap();
    cheap.synchronize().unwrap();
    assert!(cudajit::elapsed_ms(&start, &cheap).is_err());
}
