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
    assert!(msg.contains("[3, 4]") && msg.contains("[11]"), "{msg}");
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
