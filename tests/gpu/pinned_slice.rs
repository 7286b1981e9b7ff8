//! Slices of pinned buffers in asynchronous chunk copies: every element checked against the
//! host data, sub-ranges of device arrays untouched outside the chunk, bad ranges refused.

use cudajit::prelude::*;

use crate::common::{ctx, special_f32, Rng};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// The chunk boundaries of `n` elements in chunks of `chunk` (the last one shorter).
fn chunks(n: usize, chunk: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(chunk)
        .map(|s| (s, (s + chunk).min(n)))
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_slice_chunked_copies_on_two_streams() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let streams = [c.new_stream().unwrap(), c.new_stream().unwrap()];
    let mut rng = Rng::new();
    for (n, chunk) in [(1usize, 1usize), (4099, 1000), (100_003, 4096)] {
        let host = special_f32(&mut rng, n);
        let up = c.pinned_from_slice(&host).unwrap();
        let mut d = c.alloc::<f32, _>(n).unwrap();
        d.fill(-7.0).unwrap();
        // Host -> device, chunk by chunk, alternating streams.
        for (i, &(a, b)) in chunks(n, chunk).iter().enumerate() {
            let src = up.slice(a..b).unwrap();
            assert_eq!((src.len(), src.range()), (b - a, a..b));
            let mut dst = d.slice_mut(a..b).unwrap();
            src.copy_to_device_async(&mut dst, &streams[i % 2]).unwrap();
        }
        for s in &streams {
            s.synchronize().unwrap();
        }
        assert_eq!(bits(&d.to_vec().unwrap()), bits(&host), "n={n}: upload");
        // Device -> host, chunk by chunk, into a poisoned buffer.
        let mut down = c.pinned_from_slice(&vec![-2.0f32; n]).unwrap();
        for (i, &(a, b)) in chunks(n, chunk).iter().enumerate() {
            let src = d.slice(a..b).unwrap();
            let mut dst = down.slice_mut(a..b).unwrap();
            dst.copy_from_device_async(&src, &streams[i % 2]).unwrap();
        }
        // as_slice waits for every chunk in flight.
        assert_eq!(
            bits(down.as_slice().unwrap()),
            bits(&host),
            "n={n}: download"
        );
    }
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_slice_split_halves_and_sub_ranges() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let (s0, s1) = (c.new_stream().unwrap(), c.new_stream().unwrap());
    let mut rng = Rng::new();
    let n = 10_007;
    let host: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let d = c.to_device(&host).unwrap();
    // Two halves of one pinned range filled at once on two streams.
    let mut buf = c.pinned_from_slice(&vec![0xdead_beefu32; n + 10]).unwrap();
    let base = buf.as_ptr();
    {
        let view = buf.slice_mut(5..5 + n).unwrap();
        assert_eq!(view.as_ptr(), base.wrapping_add(5));
        let (mut lo, mut hi) = view.split_at(n / 3).unwrap();
        lo.copy_from_device_async(&d.slice(..n / 3).unwrap(), &s0)
            .unwrap();
        hi.copy_from_device_async(&d.slice(n / 3..).unwrap(), &s1)
            .unwrap();
        // Each half's host slice waits for its own copy.
        assert_eq!(lo.as_slice().unwrap(), &host[..n / 3]);
        assert_eq!(hi.as_mut_slice().unwrap(), &host[n / 3..]);
    }
    let got = buf.as_slice().unwrap();
    assert_eq!(&got[5..5 + n], &host[..]);
    assert!(got[..5]
        .iter()
        .chain(&got[5 + n..])
        .all(|&v| v == 0xdead_beef));
    // Host -> a device sub-range: the rest of the device array is untouched.
    let mut dst = c.zeros::<u32, _>(3 * n).unwrap();
    buf.slice(5..5 + n)
        .unwrap()
        .copy_to_device_async(&mut dst.slice_mut(n..2 * n).unwrap(), &s0)
        .unwrap();
    let all = dst.to_vec_async(&s0).unwrap();
    assert_eq!(&all[n..2 * n], &host[..]);
    assert!(all[..n].iter().chain(&all[2 * n..]).all(|&v| v == 0));
    // A whole-buffer copy after chunk copies waits for them; so does drop.
    let mut tmp = c.alloc_pinned::<u32>(n).unwrap();
    tmp.slice_mut(..)
        .unwrap()
        .copy_from_device_async(&d, &s1)
        .unwrap();
    drop(tmp);
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_slice_bad_ranges_are_errors() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let n = 64usize;
    let mut buf = c.alloc_pinned::<f32>(n).unwrap();
    let (lo, hi, past) = (10usize, 5usize, n + 1);
    for e in [
        buf.slice(0..past).err(),
        buf.slice(past..).err(),
        buf.slice(lo..hi).err(),
        buf.slice(..=usize::MAX).err(),
        buf.slice_mut(n - 1..=n).err(),
    ] {
        let e = e.expect("an out-of-range slice is an error");
        assert!(e.to_string().contains("out of range"), "{e}");
    }
    // Empty slices at either end are fine and copy nothing.
    let d = c.zeros::<f32, _>(n).unwrap();
    let mut empty = buf.slice_mut(n..).unwrap();
    assert!(empty.is_empty());
    empty
        .copy_from_device_async(&d.slice(0..0).unwrap(), &s)
        .unwrap();
    // A length mismatch with the device side is a shape error.
    let mut v = buf.slice_mut(0..10).unwrap();
    let e = v.copy_from_device_async(&d, &s).unwrap_err();
    assert!(e.to_string().contains("copy_from_device_async"), "{e}");
    let e = v.split_at(11).err().expect("split past the end");
    assert!(e.to_string().contains("out of range"), "{e}");
    let mut d2 = c.zeros::<f32, _>(11).unwrap();
    let e = buf
        .slice(0..10)
        .unwrap()
        .copy_to_device_async(&mut d2, &s)
        .unwrap_err();
    assert!(e.to_string().contains("copy_to_device_async"), "{e}");
}
