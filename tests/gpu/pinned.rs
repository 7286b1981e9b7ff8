use cudajit::prelude::*;
use cudajit::PrefetchTarget;

use crate::common::{ctx, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_async_copies_both_ways() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 1 << 20;
    let host: Vec<f32> = rng.vec(n, |r| r.f32());
    let up = c.pinned_from_slice(&host).unwrap();
    let mut d = c.alloc::<f32, _>(n).unwrap();
    d.fill(-1.0).unwrap();
    up.copy_to_device_async(&mut d, &s).unwrap();
    let mut down = c.alloc_pinned::<f32>(n).unwrap();
    down.as_mut_slice().unwrap().fill(-2.0);
    down.copy_from_device_async(&d, &s).unwrap();
    // as_slice waits for the copy in flight.
    assert_eq!(down.as_slice().unwrap(), &host[..]);
    // Write-combined memory works the same for uploads.
    let mut wc = c.alloc_pinned_with::<f32>(n, true).unwrap();
    wc.as_mut_slice().unwrap().copy_from_slice(&host);
    let mut d2 = c.zeros::<f32, _>(n).unwrap();
    wc.copy_to_device_async(&mut d2, &s).unwrap();
    assert_eq!(d2.to_vec_async(&s).unwrap(), host);
    // Dropping a buffer with a copy in flight waits for it.
    let mut tmp = c.alloc_pinned::<f32>(n).unwrap();
    tmp.copy_from_device_async(&d2, &s).unwrap();
    drop(tmp);
    // Length mismatch is an error.
    let mut short = c.alloc_pinned::<f32>(10).unwrap();
    assert!(short.copy_from_device_async(&d, &s).is_err());
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mapped_memory_is_device_accessible() {
    let c = ctx();
    let mut rng = Rng::new();
    let host: Vec<u32> = rng.vec(4096, |r| r.next_u64() as u32);
    let mut mapped = c.mapped_from_slice(&vec![0u32; 4096]).unwrap();
    assert_ne!(mapped.device_ptr(), 0);
    // The device writes into host memory through the mapping...
    let d = c.to_device(&host).unwrap();
    mapped.copy_from_device(&d).unwrap();
    assert_eq!(mapped.as_slice().unwrap(), &host[..]);
    // ...and reads from it.
    mapped
        .as_mut_slice()
        .unwrap()
        .iter_mut()
        .for_each(|x| *x ^= 0x5555_5555);
    let back = c.copy_device(&mapped).unwrap().to_vec().unwrap();
    let expect: Vec<u32> = host.iter().map(|x| x ^ 0x5555_5555).collect();
    assert_eq!(back, expect);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn managed_memory_with_prefetch() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host: Vec<f64> = rng.vec(100_000, |r| r.f64());
    let mut m = c.managed_from_slice(&vec![0f64; host.len()]).unwrap();
    m.as_mut_slice().unwrap().copy_from_slice(&host);
    m.prefetch(PrefetchTarget::Device, &s).unwrap();
    let d = c.copy_device(&m).unwrap();
    assert_eq!(d.to_vec().unwrap(), host);
    let doubled: Vec<f64> = host.iter().map(|x| x * 2.0).collect();
    let dd = c.to_device(&doubled).unwrap();
    m.copy_from_device_async(&dd, &s).unwrap();
    m.prefetch(PrefetchTarget::Host, &s).unwrap();
    assert_eq!(m.as_slice().unwrap(), &doubled[..]);
}
