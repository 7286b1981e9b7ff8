use cudajit::memory::staging_testing::{self as staging, CHUNK, STAGING_MIN};
use cudajit::prelude::*;
use cudajit::{DeviceCopy, Error};
use ndarray::{s, Array2, Array3, ShapeBuilder};

use crate::common::{ctx, Rng};

/// Round-trips random data of one element type through every copy direction.
fn round_trip<T: DeviceCopy + PartialEq + std::fmt::Debug>(
    mut gen: impl FnMut(&mut Rng) -> T,
    poison: T,
) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 7, 1000, 65_537] {
        let host: Vec<T> = rng.vec(n, &mut gen);
        // host -> device (sync and stream), device -> host (Vec, slice, async)
        let d = c.to_device(&host).unwrap();
        assert_eq!(d.to_vec().unwrap(), host);
        let d2 = s.to_device(host.as_slice()).unwrap();
        let mut back = vec![poison; n];
        d2.copy_to_host_async(&mut back, &s).unwrap();
        assert_eq!(back, host);
        back.fill(poison);
        d2.copy_to_host(&mut back).unwrap();
        assert_eq!(back, host);
        // device -> device, sync and async, into poisoned arrays
        let mut e = c.to_device(&vec![poison; n]).unwrap();
        e.copy_from_device(&d).unwrap();
        assert_eq!(e.to_vec().unwrap(), host);
        let mut f = c.to_device(&vec![poison; n]).unwrap();
        s.copy(&d2, &mut f).unwrap();
        assert_eq!(f.to_vec_async(&s).unwrap(), host);
        // copy_from_host into an existing array
        let mut g = c.to_device(&vec![poison; n]).unwrap();
        g.copy_from_host_async(&host, &s).unwrap();
        assert_eq!(g.to_vec_async(&s).unwrap(), host);
        // fill
        let v = gen(&mut rng);
        g.fill(v).unwrap();
        assert_eq!(g.to_vec().unwrap(), vec![v; n]);
        let w = gen(&mut rng);
        g.fill_async(w, &s).unwrap();
        assert_eq!(g.to_vec_async(&s).unwrap(), vec![w; n]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_element_type_round_trips() {
    round_trip(|r| r.f32(), -9999.0f32);
    round_trip(|r| r.f64(), -12345.5);
    round_trip(|r| r.next_u64() as i32, i32::MIN);
    round_trip(|r| r.next_u64() as u32, 0xdead_beef);
    round_trip(|r| r.next_u64() as i64, i64::MIN);
    round_trip(|r| r.next_u64(), u64::MAX);
    round_trip(|r| r.next_u64() as u8, 0xaa);
    round_trip(|r| r.next_u64() as i16, -7);
    round_trip(|r| r.next_u64() & 1 == 1, true);
    round_trip(
        |r| cudajit::F8E4M3::from_bits(r.next_u64() as u8),
        cudajit::F8E4M3::from_bits(0x7f),
    );
    round_trip(
        |r| cudajit::F8E5M2::from_bits(r.next_u64() as u8),
        cudajit::F8E5M2::from_bits(0xff),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ndarray_shapes_and_layouts() {
    let c = ctx();
    let mut rng = Rng::new();
    let a = Array3::from_shape_fn((4, 5, 6), |_| rng.f32());
    let d = c.to_device(&a).unwrap();
    assert_eq!(d.shape(), &[4, 5, 6]);
    assert_eq!(d.strides(), vec![30, 6, 1]);
    assert_eq!(d.to_array().unwrap(), a);

    // Non-contiguous views go through a contiguous buffer.
    let m = Array2::from_shape_fn((64, 48), |_| rng.f64());
    let t = m.t();
    let dt = c.to_device(&t).unwrap();
    assert_eq!(dt.shape(), &[48, 64]);
    assert_eq!(dt.to_array().unwrap(), t.to_owned());
    let stepped = m.slice(s![..;3, 1..;2]);
    let ds = c.to_device(&stepped).unwrap();
    assert_eq!(ds.to_array().unwrap(), stepped.to_owned());

    // Into a caller's array of Fortran layout (non-contiguous in C order).
    let mut f = Array2::<f64>::from_elem((48, 64).f(), -1.0);
    dt.copy_to_host_array(&mut f).unwrap();
    assert_eq!(f, t);

    // device_array_like, reshape, into_shape
    let mut like = c.device_array_like(&dt).unwrap();
    assert_eq!(like.shape(), dt.shape());
    like.copy_from_device(&dt).unwrap();
    let flat = like.reshape(48 * 64).unwrap();
    let flat_host: Vec<f64> = t.iter().copied().collect();
    assert_eq!(flat.to_vec().unwrap(), flat_host);
    let back = like.into_shape((64, 48)).unwrap();
    assert_eq!(back.to_vec().unwrap(), flat_host);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sub_range_views() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host: Vec<i64> = rng.vec(1000, |r| r.next_u64() as i64);
    let mut d = c.to_device(&host).unwrap();
    let v = d.slice(100..250).unwrap();
    assert_eq!(v.len(), 150);
    assert_eq!(v.to_vec().unwrap(), host[100..250]);
    assert_eq!(d.slice(990..).unwrap().to_vec().unwrap(), host[990..]);
    assert!(d.slice(..=1000).is_err());
    // Writing through a mutable view touches only that range.
    let patch: Vec<i64> = rng.vec(50, |r| r.next_u64() as i64);
    d.slice_mut(500..550)
        .unwrap()
        .copy_from_host_async(&patch, &s)
        .unwrap();
    let mut expect = host.clone();
    expect[500..550].copy_from_slice(&patch);
    assert_eq!(d.to_vec_async(&s).unwrap(), expect);
    d.slice_mut(0..10).unwrap().memset(0).unwrap();
    expect[..10].fill(0);
    assert_eq!(d.to_vec().unwrap(), expect);
    // Rows of a 2-D array.
    let m = Array2::from_shape_fn((10, 7), |(i, j)| (i * 7 + j) as u32);
    let dm = c.to_device(&m).unwrap();
    let rows = dm.slice(3..6).unwrap();
    assert_eq!(rows.shape(), &[3, 7]);
    assert_eq!(rows.to_array().unwrap(), m.slice(s![3..6, ..]).to_owned());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fill_and_memset_patterns() {
    let c = ctx();
    let mut d = c.alloc::<f64, _>(1001).unwrap();
    d.fill(1.5).unwrap(); // 8-byte value with different 32-bit halves
    assert_eq!(d.to_vec().unwrap(), vec![1.5; 1001]);
    let mut b = c.alloc::<u16, _>(33).unwrap();
    b.fill(0xbeef).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![0xbeef; 33]);
    let mut z = c.zeros::<i32, _>((3, 4)).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![0; 12]);
    z.memset(0xff).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![-1; 12]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_arrays() {
    let c = ctx();
    let d = c.to_device::<f32, _>(&[][..]).unwrap();
    assert!(d.is_empty());
    assert_eq!(d.to_vec().unwrap(), Vec::<f32>::new());
    let mut e = c.zeros::<f32, _>(0).unwrap();
    e.copy_from_device(&d).unwrap();
    e.fill(3.0).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shape_mismatches_are_errors_naming_both_shapes() {
    let c = ctx();
    let mut d = c.zeros::<f32, _>((3, 4)).unwrap();
    let wrong = Array2::<f32>::zeros((4, 3));
    match d.copy_from_host(&wrong).unwrap_err() {
        Error::Shape {
            expected, actual, ..
        } => {
            assert_eq!(expected, vec![3, 4]);
            assert_eq!(actual, vec![4, 3]);
        }
        e => panic!("unexpected {e:?}"),
    }
    let msg = d.copy_from_host(&vec![0f32; 11]).unwrap_err().to_string();
    assert!(msg.contains("(3, 4)") && msg.contains("(11,)"), "{msg}");
    let other = c.zeros::<f32, _>(12).unwrap();
    assert!(matches!(
        d.copy_from_device(&other),
        Err(Error::Shape { .. })
    ));
    let mut small = vec![0f32; 5];
    assert!(matches!(
        d.copy_to_host(&mut small),
        Err(Error::Shape { .. })
    ));
    assert!(d.reshape((5, 5)).is_err());
}

// ---------------------------------------------------------------------------------------------
// Pageable copies staged through pinned buffers by several threads (src/memory/staging.rs).
// Every result is checked through a pinned buffer, which the driver copies directly, so an
// error in the staged upload cannot cancel out against the same error in the staged download.

/// Random bytes (8 at a time).
fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// Reads `a` through a pinned buffer (the driver's direct path, never staged).
fn read_direct<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(a: &A, s: &Stream, poison: T) -> Vec<T> {
    let mut p = a
        .context()
        .pinned_from_slice(&vec![poison; a.len()])
        .unwrap();
    p.copy_from_device_async(a, s).unwrap();
    p.as_slice().unwrap().to_vec()
}

/// A new device array holding `data`, written through a pinned buffer (never staged).
fn write_direct<T: DeviceCopy>(
    c: &Context,
    s: &Stream,
    data: &[T],
) -> DeviceArray<T, ndarray::Ix1> {
    let p = c.pinned_from_slice(data).unwrap();
    let mut d = c.zeros::<T, _>(data.len()).unwrap();
    p.copy_to_device_async(&mut d, s).unwrap();
    p.wait().unwrap();
    d
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_copies_round_trip_with_every_thread_count() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    // One byte, around one chunk, a partial last chunk, an odd number of whole chunks.
    for n in [1, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 12_345, 5 * CHUNK] {
        let host = random_bytes(&mut rng, n);
        for threads in [1, 2, 3, 8] {
            for stream in [None, Some(&s)] {
                let what = format!("{n} bytes, {threads} threads, stream {}", stream.is_some());
                // host -> device, into a poisoned array
                let mut d = c.to_device(&vec![0xa5u8; n]).unwrap();
                assert!(
                    staging::copy_from_host(&mut d, &host, stream, threads).unwrap(),
                    "{what}"
                );
                assert!(read_direct(&d, &s, 0x5a) == host, "upload: {what}");
                // device -> host, into a poisoned Vec
                let up = write_direct(&c, &s, &host);
                let mut back = vec![0x3cu8; n];
                assert!(
                    staging::copy_to_host(&up, &mut back, stream, threads).unwrap(),
                    "{what}"
                );
                assert!(back == host, "download: {what}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_copies_of_views_touch_only_their_range() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let (pad, n) = (1001usize, 2 * CHUNK / 4 + 777); // f32 elements: 3 chunks, the last short
    let data: Vec<f32> = rng.vec(n, |r| r.f32());
    for threads in [1, 2, 5] {
        // host -> a view at an offset in a bigger poisoned array
        let mut big = c.to_device(&vec![-7.0f32; pad + n + pad]).unwrap();
        let mut view = big.slice_mut(pad..pad + n).unwrap();
        assert!(staging::copy_from_host(&mut view, &data, Some(&s), threads).unwrap());
        let all = read_direct(&big, &s, f32::NAN);
        assert!(
            all[..pad].iter().all(|&v| v == -7.0),
            "{threads} threads: before the view"
        );
        assert!(all[pad..pad + n] == data[..], "{threads} threads: the view");
        assert!(
            all[pad + n..].iter().all(|&v| v == -7.0),
            "{threads} threads: after the view"
        );
        // a view at an offset -> the middle of a bigger poisoned host Vec
        let mut src_host: Vec<f32> = rng.vec(pad + n + pad, |r| r.f32());
        src_host[pad..pad + n].copy_from_slice(&data);
        let src = write_direct(&c, &s, &src_host);
        let mut out = vec![9.5f32; pad + n + pad];
        let view = src.slice(pad..pad + n).unwrap();
        assert!(staging::copy_to_host(&view, &mut out[pad..pad + n], None, threads).unwrap());
        assert!(
            out[..pad].iter().all(|&v| v == 9.5),
            "{threads} threads: host before"
        );
        assert!(
            out[pad..pad + n] == data[..],
            "{threads} threads: host range"
        );
        assert!(
            out[pad + n..].iter().all(|&v| v == 9.5),
            "{threads} threads: host after"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pageable_memory_is_staged_and_pinned_memory_is_not() {
    let c = ctx();
    let mut rng = Rng::new();
    let host = random_bytes(&mut rng, 2 * CHUNK + 3);
    let mut d = c.to_device(&vec![0u8; host.len()]).unwrap();
    // A Vec is pageable: staged (this also checks the driver does not claim to know it).
    assert!(staging::copy_from_host(&mut d, &host, None, 4).unwrap());
    let mut back = vec![0u8; host.len()];
    assert!(staging::copy_to_host(&d, &mut back, None, 4).unwrap());
    assert!(back == host);
    // Pinned memory goes to the driver: nothing staged, nothing copied.
    let pinned = c.pinned_from_slice(&vec![1u8; host.len()]).unwrap();
    assert!(!staging::copy_from_host(&mut d, pinned.as_slice().unwrap(), None, 4).unwrap());
    let mut pinned_out = c.pinned_from_slice(&vec![2u8; host.len()]).unwrap();
    assert!(!staging::copy_to_host(&d, pinned_out.as_mut_slice().unwrap(), None, 4).unwrap());
    assert!(pinned_out.as_slice().unwrap().iter().all(|&b| b == 2));
    // Mismatched lengths are errors, as on the public path.
    let mut short = vec![0u8; 10];
    assert!(matches!(
        staging::copy_to_host(&d, &mut short, None, 4),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        staging::copy_from_host(&mut d, &short, None, 4),
        Err(Error::Shape { .. })
    ));
}

/// Every public pageable copy of one array, checked through pinned memory.
fn public_copies<T: DeviceCopy + PartialEq + std::fmt::Debug>(
    n: usize,
    mut gen: impl FnMut(&mut Rng) -> T,
    poison: T,
) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host: Vec<T> = rng.vec(n, &mut gen);
    let eq = |a: &[T], what: &str| assert!(a == host.as_slice(), "{n} elements: {what}");
    eq(
        &read_direct(&c.to_device(&host).unwrap(), &s, poison),
        "Context::to_device",
    );
    eq(
        &read_direct(&s.to_device(&host).unwrap(), &s, poison),
        "Stream::to_device",
    );
    let mut d = c.to_device(&vec![poison; n]).unwrap();
    d.copy_from_host(&host).unwrap();
    eq(&read_direct(&d, &s, poison), "copy_from_host");
    let mut d = c.to_device(&vec![poison; n]).unwrap();
    d.copy_from_host_async(&host, &s).unwrap();
    eq(&read_direct(&d, &s, poison), "copy_from_host_async");
    let nd = ndarray::Array1::from(host.clone());
    let mut d = c.to_device(&vec![poison; n]).unwrap();
    d.copy_from_host(&nd).unwrap();
    eq(&read_direct(&d, &s, poison), "copy_from_host (ndarray)");

    let up = write_direct(&c, &s, &host);
    eq(&up.to_vec().unwrap(), "to_vec");
    eq(&up.to_vec_async(&s).unwrap(), "to_vec_async");
    eq(up.to_array().unwrap().as_slice().unwrap(), "to_array");
    let mut back = vec![poison; n];
    up.copy_to_host(&mut back).unwrap();
    eq(&back, "copy_to_host");
    back.fill(poison);
    up.copy_to_host_async(&mut back, &s).unwrap();
    eq(&back, "copy_to_host_async");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn large_pageable_copies_through_the_public_api() {
    public_copies(STAGING_MIN + 12_345, |r| r.next_u64() as u8, 0xee);
    public_copies(STAGING_MIN - 1, |r| r.next_u64() as u8, 0xee);
    public_copies(40 * (1 << 20) / 4 + 3, |r| r.f32(), f32::NAN.copysign(-1.0));
    public_copies(3 * CHUNK / 8 + 5, |r| r.next_u64(), u64::MAX);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn concurrent_large_copies_from_several_threads() {
    // Copies that find the context's staging buffers busy go to the driver; all are correct.
    let c = ctx();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let c = c.clone();
            scope.spawn(move || {
                let s = c.new_stream().unwrap();
                let mut rng = Rng::new();
                for round in 0..3 {
                    let n = STAGING_MIN + (t as usize) * 4099 + round;
                    let host = random_bytes(&mut rng, n);
                    let d = s.to_device(&host).unwrap();
                    let mut back = vec![0u8; n];
                    d.copy_to_host_async(&mut back, &s).unwrap();
                    assert!(back == host, "thread {t}, round {round}");
                    assert!(read_direct(&d, &s, 0) == host, "thread {t}, round {round}");
                }
            });
        }
    });
}

/// Set in the child processes of [`staging_environment_variables`].
const STAGING_CHILD: &str = "CUDAJIT_TEST_STAGING_CHILD";

#[test]
#[ignore = "needs a CUDA GPU"]
fn staging_environment_child() {
    if std::env::var_os(STAGING_CHILD).is_none() {
        return;
    }
    public_copies(STAGING_MIN + 12_345, |r| r.next_u64() as u8, 0xee);
    public_copies(5 * CHUNK / 4 + 3, |r| r.f32(), -1.0);
    println!("CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staging_environment_variables() {
    // Read once per process, so each setting runs in a child process.
    for (var, value) in [
        ("CUDAJIT_STAGING", "0"),
        ("CUDAJIT_STAGING", "off"),
        ("CUDAJIT_STAGING_THREADS", "1"),
        ("CUDAJIT_STAGING_THREADS", "3"),
    ] {
        let out = crate::support::child::Child::test(
            "memory::staging_environment_child",
            STAGING_CHILD,
            "1",
        )
        .env(var, value)
        .run();
        assert!(out.passed(), "{var}={value}: {}", out.text());
    }
}
