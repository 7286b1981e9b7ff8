//! Elementwise kernels and array operations on the GPU, every element checked against the host.

use cudajit::codegen::Expr;
use cudajit::ops::{ArrayOps, Elem, Elementwise, Scalar};
use cudajit::prelude::*;
use ndarray::{Array2, Array3, Axis};

use crate::common::{ctx, Rng};

fn close32(a: f32, b: f32) -> bool {
    a == b
        || (a - b).abs() <= 2.0 * f32::EPSILON * a.abs().max(b.abs())
        || (a.is_nan() && b.is_nan())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axpy_every_size_and_alignment() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let axpy =
        Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), _>::new("axpy_t", |(a, x, y)| a * x + y)
            .unwrap();
    let mut rng = Rng::new();
    for n in [0usize, 1, 3, 4, 5, 7, 8, 1023, 1 << 20, (1 << 20) + 3] {
        let a = rng.f32() * 3.0;
        let x: Vec<f32> = rng.vec(n + 1, |r| r.f32());
        let y: Vec<f32> = rng.vec(n + 1, |r| r.f32());
        let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
        // Aligned (vector path) and shifted by one element (scalar path).
        for off in [0usize, 1] {
            let mut out = c.alloc::<f32, _>(n).unwrap();
            out.fill_async(f32::NAN, &s).unwrap();
            let (vx, vy) = (
                dx.slice(off..off + n).unwrap(),
                dy.slice(off..off + n).unwrap(),
            );
            axpy.apply(&s, (a, &vx, &vy), &mut out).unwrap();
            let got = out.to_vec_async(&s).unwrap();
            for i in 0..n {
                let (xi, yi) = (x[off + i], y[off + i]);
                assert!(
                    got[i] == a.mul_add(xi, yi) || got[i] == a * xi + yi,
                    "n={n} off={off} i={i}"
                );
            }
            let made = axpy.call(&s, (a, &vx, &vy)).unwrap();
            assert_eq!(made.shape(), &[n]);
            assert_eq!(made.to_vec_async(&s).unwrap(), got);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_chain_two_outputs_and_mixed_types() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 1_000_003usize;
    let x: Vec<f32> = rng.vec(n, |r| r.f32() * 10.0);
    let y: Vec<f32> = rng.vec(n, |r| r.f32() * 10.0);
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
    let chain = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("chain_t", |(x, y)| {
        (x * x + y * y).sqrt() * 0.5 + 1.0
    })
    .unwrap();
    let got = chain
        .call(&s, (&dx, &dy))
        .unwrap()
        .to_vec_async(&s)
        .unwrap();
    for i in 0..n {
        let want = ((x[i] as f64).hypot(y[i] as f64) * 0.5 + 1.0) as f32;
        assert!(close32(got[i], want), "i={i}: {} vs {want}", got[i]);
    }
    let both = Elementwise::<(Elem<f32>, Scalar<f64>), _>::new("both_t", |(x, k)| {
        (x.cast::<f64>() * k, x.gt(0.0f32))
    })
    .unwrap();
    let (d, b) = both.call(&s, (&dx, 2.5f64)).unwrap();
    let (d, b) = (d.to_vec_async(&s).unwrap(), b.to_vec_async(&s).unwrap());
    for i in 0..n {
        assert_eq!(d[i], x[i] as f64 * 2.5);
        assert_eq!(b[i], x[i] > 0.0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numpy_broadcasting() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let add =
        Elementwise::<(Elem<f64>, Elem<f64>), Expr<f64>>::new("badd_t", |(a, b)| a + b).unwrap();
    let m = Array2::from_shape_fn((300, 257), |_| rng.f64());
    let row = ndarray::Array1::from_shape_fn(257, |_| rng.f64());
    let col = Array2::from_shape_fn((300, 1), |_| rng.f64());
    let dm = s.to_device(&m).unwrap();
    let (drow, dcol) = (s.to_device(&row).unwrap(), s.to_device(&col).unwrap());
    let r1 = add.call(&s, (&dm, &drow)).unwrap();
    assert_eq!(r1.shape(), &[300, 257]);
    let want1 = &m + &row;
    assert_eq!(
        r1.to_vec_async(&s).unwrap(),
        want1.iter().copied().collect::<Vec<_>>()
    );
    let r2 = add.call(&s, (&dcol, &dm)).unwrap();
    let want2 = &col + &m;
    assert_eq!(
        r2.to_vec_async(&s).unwrap(),
        want2.iter().copied().collect::<Vec<_>>()
    );
    // Outer sum: a column with a row.
    let r3 = add.call(&s, (&dcol, &drow)).unwrap();
    assert_eq!(r3.shape(), &[300, 257]);
    let want3 = &col + &row.clone().insert_axis(Axis(0));
    assert_eq!(
        r3.to_vec_async(&s).unwrap(),
        want3.iter().copied().collect::<Vec<_>>()
    );
    // A row (as [257] and as [1, 257]) over an odd-width matrix (suffix path, scalar), and over
    // a width that is a multiple of 4 (suffix path, vectors).
    let r2 = add
        .call(&s, (&dm, &drow.reshape((1, 257)).unwrap()))
        .unwrap();
    assert_eq!(
        r2.to_vec_async(&s).unwrap(),
        want1.iter().copied().collect::<Vec<_>>()
    );
    let m4 = Array2::from_shape_fn((123, 64), |_| rng.f64());
    let row4 = ndarray::Array1::from_shape_fn(64, |_| rng.f64());
    let r4 = add
        .call(
            &s,
            (&s.to_device(&m4).unwrap(), &s.to_device(&row4).unwrap()),
        )
        .unwrap();
    let want4 = &m4 + &row4;
    assert_eq!(
        r4.to_vec_async(&s).unwrap(),
        want4.iter().copied().collect::<Vec<_>>()
    );
    // 3-D with a 2-D and a 1-x-1 operand, into a caller's output.
    let t = Array3::from_shape_fn((4, 5, 6), |_| rng.f64());
    let p = Array2::from_shape_fn((5, 1), |_| rng.f64());
    let (dt, dp) = (s.to_device(&t).unwrap(), s.to_device(&p).unwrap());
    let mut out = c.alloc::<f64, _>((4, 5, 6)).unwrap();
    out.fill_async(f64::NAN, &s).unwrap();
    add.apply(&s, (&dt, &dp), &mut out).unwrap();
    let want4 = &t + &p;
    assert_eq!(out.to_array_async(&s).unwrap(), want4);
    // Wrong output shape, and shapes that do not broadcast, name the shapes.
    let mut bad = c.alloc::<f64, _>((300, 256)).unwrap();
    let e = add
        .apply(&s, (&dm, &drow), &mut bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("(300, 257)") && e.contains("(300, 256)"), "{e}");
    let e = add
        .call(&s, (&dm, &dcol.reshape(300).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("(300, 257)") && e.contains("(300,)"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn array_operations_and_generators() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 100_001usize;
    let x: Vec<f64> = rng.vec(n, |r| r.f64() + 2.0);
    let y: Vec<f64> = rng.vec(n, |r| r.f64() - 2.0);
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
    let check = |d: cudajit::DeviceArray<f64>, f: &dyn Fn(f64, f64) -> f64| {
        let g = d.to_vec_async(&s).unwrap();
        for i in 0..n {
            assert_eq!(g[i], f(x[i], y[i]), "i={i}");
        }
    };
    check(dx.add(&s, &dy).unwrap(), &|a, b| a + b);
    check(dx.sub(&s, &dy).unwrap(), &|a, b| a - b);
    check(dx.mul(&s, &dy).unwrap(), &|a, b| a * b);
    check(dx.div(&s, &dy).unwrap(), &|a, b| a / b);
    check(dx.scale(&s, 3.5).unwrap(), &|a, _| 3.5 * a);
    let ax = dx.axpy(&s, -1.25, &dy).unwrap().to_vec_async(&s).unwrap();
    for i in 0..n {
        assert!(ax[i] == (-1.25f64).mul_add(x[i], y[i]) || ax[i] == -1.25 * x[i] + y[i]);
    }
    let sq = dx
        .map(&s, "square_t", |v| v * v)
        .unwrap()
        .to_vec_async(&s)
        .unwrap();
    assert!(sq.iter().zip(&x).all(|(g, v)| *g == v * v));
    let ints = dy.cast::<i32>(&s).unwrap().to_vec_async(&s).unwrap();
    assert!(ints.iter().zip(&y).all(|(g, v)| *g == *v as i32));
    let r = c
        .arange(&s, 5i64, -3, 1000)
        .unwrap()
        .to_vec_async(&s)
        .unwrap();
    assert_eq!(r, (0..1000).map(|i| 5 - 3 * i).collect::<Vec<i64>>());
    let l = c
        .linspace(&s, -1.0f64, 2.0, 7)
        .unwrap()
        .to_vec_async(&s)
        .unwrap();
    let want = [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0];
    assert!(
        l.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-15),
        "{l:?}"
    );
    assert_eq!(
        c.linspace(&s, 3.0f32, 3.0, 1)
            .unwrap()
            .to_vec_async(&s)
            .unwrap(),
        vec![3.0]
    );
    // Integer types take the vector path too.
    let u: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let du = s.to_device(&u).unwrap();
    let g = du.add(&s, &du).unwrap().to_vec_async(&s).unwrap();
    assert!(g.iter().zip(&u).all(|(g, v)| *g == v.wrapping_add(*v)));
    // Shape mismatch.
    let short = s.to_device(&x[..10]).unwrap();
    assert!(dx.add(&s, &short).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn whole_array_reductions() {
    use cudajit::ops::{BoolOps, ReduceOps, Reduction};
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 3, 4, 5, 255, 256, 257, 100_003, 1 << 22] {
        let x: Vec<f32> = rng.vec(n, |r| r.f32());
        let dx = s.to_device(&x).unwrap();
        let exact: f64 = x.iter().map(|&v| v as f64).sum();
        let abs: f64 = x.iter().map(|&v| v.abs() as f64).sum();
        let got = dx.sum(&s).unwrap();
        // Error bound: a few ulps of the sum of magnitudes (blocked summation).
        assert!(
            ((got as f64) - exact).abs() <= 1e-5 * abs.max(1.0),
            "n={n}: {got} vs {exact}"
        );
        assert_eq!(
            dx.sum(&s).unwrap().to_bits(),
            got.to_bits(),
            "deterministic"
        );
        assert!((dx.sum_f64(&s).unwrap() - exact).abs() <= 1e-12 * abs.max(1.0));
        let (mx, mn) = (
            x.iter().cloned().fold(f32::MIN, f32::max),
            x.iter().cloned().fold(f32::MAX, f32::min),
        );
        assert_eq!(dx.max(&s).unwrap(), mx);
        assert_eq!(dx.min(&s).unwrap(), mn);
        assert_eq!(
            dx.argmax(&s).unwrap() as usize,
            x.iter().position(|&v| v == mx).unwrap()
        );
        assert_eq!(
            dx.argmin(&s).unwrap() as usize,
            x.iter().position(|&v| v == mn).unwrap()
        );
        assert!((dx.mean(&s).unwrap() - exact / n as f64).abs() < 1e-12);
        // A view that starts mid-array (not 16-byte aligned) takes the scalar path.
        if n > 1 {
            let v = dx.slice(1..).unwrap();
            let e: f64 = x[1..].iter().map(|&v| v as f64).sum();
            assert!(((v.sum(&s).unwrap() as f64) - e).abs() <= 1e-5 * abs.max(1.0));
        }
    }
    // Results into device arrays, without a host wait.
    let xs: Vec<f32> = rng.vec(77_777, |r| r.f32());
    let dxs = s.to_device(&xs).unwrap();
    let mut one = c.alloc::<f32, _>(1).unwrap();
    one.fill(f32::NAN).unwrap();
    Reduction::<f32, f32, f32>::new("sum_into", |x| x, |a, b| a + b, 0.0)
        .unwrap()
        .reduce_into(&s, &dxs, &mut one)
        .unwrap();
    let want: f64 = xs.iter().map(|&v| v as f64).sum();
    assert!((one.to_vec_async(&s).unwrap()[0] as f64 - want).abs() < 1e-3);
    let mut idx = c.alloc::<u64, _>(1).unwrap();
    idx.fill(u64::MAX).unwrap();
    dxs.argmin_into(&s, &mut idx).unwrap();
    let mn = xs.iter().cloned().fold(f32::MAX, f32::min);
    assert_eq!(
        idx.to_vec_async(&s).unwrap()[0] as usize,
        xs.iter().position(|&v| v == mn).unwrap()
    );
    assert!(dxs
        .argmax_into(&s, &mut c.alloc::<u64, _>(2).unwrap())
        .is_err());
    // Ties go to the first index; NaN wins min/max/argmax as in NumPy.
    let t = s.to_device(&[1.0f64, 5.0, 2.0, 5.0, -3.0, -3.0]).unwrap();
    assert_eq!((t.argmax(&s).unwrap(), t.argmin(&s).unwrap()), (1, 4));
    let nan = s.to_device(&[1.0f64, f64::NAN, 7.0]).unwrap();
    assert!(nan.max(&s).unwrap().is_nan() && nan.min(&s).unwrap().is_nan());
    assert_eq!(nan.argmax(&s).unwrap(), 1);
    // Integers, products, booleans, a user reduction.
    let ints: Vec<i64> = rng.vec(1_000_001, |r| (r.next_u64() % 2001) as i64 - 1000);
    let di = s.to_device(&ints).unwrap();
    assert_eq!(di.sum(&s).unwrap(), ints.iter().sum::<i64>());
    assert_eq!(di.max(&s).unwrap(), *ints.iter().max().unwrap());
    let small = s.to_device(&[3u32, 5, 7, 2]).unwrap();
    assert_eq!(small.prod(&s).unwrap(), 210);
    let flags: Vec<bool> = (0..10_000).map(|i| i == 7777).collect();
    let df = s.to_device(&flags).unwrap();
    assert!(df.any(&s).unwrap() && !df.all(&s).unwrap());
    assert!(s.to_device(&vec![true; 999]).unwrap().all(&s).unwrap());
    let l2 = Reduction::<f64, f64, f64>::new("l2_gpu", |x| x * x, |a, b| a + b, 0.0)
        .unwrap()
        .post(|v, _| v.sqrt());
    let v: Vec<f64> = rng.vec(12_345, |r| r.f64());
    let want = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((l2.reduce(&s, &s.to_device(&v).unwrap()).unwrap() - want).abs() < 1e-12 * want);
    // Empty arrays: the identity, or an error for min/max/argmax/mean.
    let e = c.zeros::<f32, _>(0).unwrap();
    assert_eq!(e.sum(&s).unwrap(), 0.0);
    assert_eq!(e.prod(&s).unwrap(), 1.0);
    assert!(
        e.min(&s).is_err() && e.max(&s).is_err() && e.argmax(&s).is_err() && e.mean(&s).is_err()
    );
    assert!(!c.zeros::<bool, _>(0).unwrap().any(&s).unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axis_reductions_rows_columns_and_middle() {
    use cudajit::ops::ReduceOps;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    // Integer-valued floats sum exactly in any order: compare exactly.
    for (rows, cols) in [
        (1usize, 1usize),
        (7, 3),
        (1000, 1),
        (1, 1000),
        (513, 1025),
        (2048, 64),
        (64, 4096),
    ] {
        let m = Array2::from_shape_fn((rows, cols), |_| (rng.next_u64() % 100) as f32);
        let dm = s.to_device(&m).unwrap();
        let rs = dm.sum_axis(&s, 1, false).unwrap();
        assert_eq!(rs.shape(), &[rows]);
        assert_eq!(
            rs.to_vec_async(&s).unwrap(),
            m.sum_axis(Axis(1)).to_vec(),
            "row sums {rows}x{cols}"
        );
        let cs = dm.sum_axis(&s, 0, true).unwrap();
        assert_eq!(cs.shape(), &[1, cols]);
        assert_eq!(
            cs.to_vec_async(&s).unwrap(),
            m.sum_axis(Axis(0)).to_vec(),
            "column sums {rows}x{cols}"
        );
        let mx = dm.max_axis(&s, 0, false).unwrap().to_vec_async(&s).unwrap();
        let want: Vec<f32> = m
            .columns()
            .into_iter()
            .map(|c| c.iter().cloned().fold(f32::MIN, f32::max))
            .collect();
        assert_eq!(mx, want);
        // Into existing arrays, poisoned first; a wrong output shape is an error.
        let mut into_r = c.alloc::<f32, _>(rows).unwrap();
        into_r.fill_async(f32::NAN, &s).unwrap();
        dm.sum_axis_into(&s, 1, false, &mut into_r).unwrap();
        assert_eq!(
            into_r.to_vec_async(&s).unwrap(),
            m.sum_axis(Axis(1)).to_vec()
        );
        let mut into_c = c.alloc::<f32, _>((1, cols)).unwrap();
        into_c.fill_async(f32::NAN, &s).unwrap();
        dm.sum_axis_into(&s, 0, true, &mut into_c).unwrap();
        assert_eq!(
            into_c.to_vec_async(&s).unwrap(),
            m.sum_axis(Axis(0)).to_vec()
        );
        let e = dm.sum_axis_into(&s, 0, false, &mut into_c).unwrap_err();
        assert!(e.to_string().contains("reduce_axis_into"), "{e}");
    }
    let t = Array3::from_shape_fn((5, 300, 7), |_| rng.f64());
    let dt = s.to_device(&t).unwrap();
    let mid = dt.mean_axis(&s, 1, false).unwrap();
    assert_eq!(mid.shape(), &[5, 7]);
    let want = t.mean_axis(Axis(1)).unwrap();
    for (g, w) in mid.to_vec_async(&s).unwrap().iter().zip(want.iter()) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    let mn = dt.min_axis(&s, 2, true).unwrap();
    assert_eq!(mn.shape(), &[5, 300, 1]);
    let want: Vec<f64> = t
        .lanes(Axis(2))
        .into_iter()
        .map(|l| l.iter().cloned().fold(f64::MAX, f64::min))
        .collect();
    assert_eq!(mn.to_vec_async(&s).unwrap(), want);
    assert!(dt.sum_axis(&s, 3, false).is_err());
    // An empty axis: sums are 0, minima are an error.
    let e = c.zeros::<f32, _>((4, 0)).unwrap();
    assert_eq!(
        e.sum_axis(&s, 1, false).unwrap().to_vec_async(&s).unwrap(),
        vec![0.0; 4]
    );
    assert!(e.min_axis(&s, 1, false).is_err());
}

/// The host's argmax/argmin: first NaN, else the first extreme element.
fn host_arg<T: PartialOrd + Copy>(x: &[T], largest: bool) -> usize {
    #[allow(clippy::eq_op)]
    if let Some(p) = x.iter().position(|v| v != v) {
        return p;
    }
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if (largest && *v > x[best]) || (!largest && *v < x[best]) {
            best = i;
        }
    }
    best
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argmin_argmax_ties_nans_and_every_size_class() {
    use cudajit::ops::ReduceOps;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    // Few distinct values, so the extreme repeats: ties go to the first index.
    for n in [
        1usize,
        2,
        3,
        4,
        5,
        7,
        8,
        9,
        31,
        257,
        4099,
        100_003,
        1 << 20,
        3_000_017,
    ] {
        let x: Vec<f32> = rng.vec(n, |r| (r.next_u64() % 50) as f32 - 25.0);
        let dx = s.to_device(&x).unwrap();
        assert_eq!(
            dx.argmax(&s).unwrap() as usize,
            host_arg(&x, true),
            "argmax n={n}"
        );
        assert_eq!(
            dx.argmin(&s).unwrap() as usize,
            host_arg(&x, false),
            "argmin n={n}"
        );
        // Unaligned views take the element-at-a-time path.
        if n > 1 {
            let v = dx.slice(1..).unwrap();
            assert_eq!(v.argmax(&s).unwrap() as usize, host_arg(&x[1..], true));
        }
        let xd: Vec<f64> = rng.vec(n, |r| r.f64());
        let dd = s.to_device(&xd).unwrap();
        assert_eq!(
            dd.argmax(&s).unwrap() as usize,
            host_arg(&xd, true),
            "f64 n={n}"
        );
        assert_eq!(
            dd.argmin(&s).unwrap() as usize,
            host_arg(&xd, false),
            "f64 n={n}"
        );
        let xi: Vec<i32> = rng.vec(n, |r| (r.next_u64() % 1000) as i32 - 500);
        let di = s.to_device(&xi).unwrap();
        assert_eq!(
            di.argmax(&s).unwrap() as usize,
            host_arg(&xi, true),
            "i32 n={n}"
        );
    }
    // NaN anywhere (mid-vector, in the tail, several): the first NaN wins both.
    let n = 1_000_003;
    let base: Vec<f32> = rng.vec(n, |r| r.f32());
    for spots in [
        vec![0usize],
        vec![5],
        vec![777_778, 777_777],
        vec![n - 1],
        vec![n - 2, 12_345],
    ] {
        let mut x = base.clone();
        for &p in &spots {
            x[p] = f32::NAN;
        }
        let dx = s.to_device(&x).unwrap();
        let want = *spots.iter().min().unwrap() as u64;
        assert_eq!(dx.argmax(&s).unwrap(), want, "NaN at {spots:?}");
        assert_eq!(dx.argmin(&s).unwrap(), want, "NaN at {spots:?}");
    }
    // Every element the same (including -inf): index 0.
    for v in [f32::NEG_INFINITY, f32::INFINITY, 0.0, -0.0, 3.5] {
        let dx = s.to_device(&vec![v; 70_001]).unwrap();
        assert_eq!(
            (dx.argmax(&s).unwrap(), dx.argmin(&s).unwrap()),
            (0, 0),
            "all {v}"
        );
    }
    // The extreme only in the last element, and only in the first.
    let mut x: Vec<f32> = rng.vec(300_001, |r| r.f32());
    x[300_000] = 2.0;
    x[0] = -1.0;
    let dx = s.to_device(&x).unwrap();
    assert_eq!(
        (dx.argmax(&s).unwrap(), dx.argmin(&s).unwrap()),
        (300_000, 0)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argmin_argmax_along_an_axis() {
    use cudajit::ops::ReduceOps;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    for (rows, cols) in [
        (1usize, 1usize),
        (7, 3),
        (1000, 1),
        (1, 1000),
        (513, 1025),
        (64, 4096),
        (4096, 8),
    ] {
        // Few distinct values: ties everywhere.
        let mut m = Array2::from_shape_fn((rows, cols), |_| (rng.next_u64() % 20) as f32);
        if rows * cols > 10 {
            m[[rows / 2, cols / 3]] = f32::NAN;
        }
        let dm = s.to_device(&m).unwrap();
        for (axis, largest) in [(0, true), (0, false), (1, true), (1, false)] {
            let got = if largest {
                dm.argmax_axis(&s, axis, false)
            } else {
                dm.argmin_axis(&s, axis, false)
            }
            .unwrap();
            let want: Vec<u64> = m
                .lanes(Axis(axis))
                .into_iter()
                .map(|l| host_arg(&l.to_vec(), largest) as u64)
                .collect();
            assert_eq!(got.shape(), &[if axis == 0 { cols } else { rows }]);
            assert_eq!(
                got.to_vec_async(&s).unwrap(),
                want,
                "{rows}x{cols} axis {axis} largest {largest}"
            );
        }
    }
    let t = Array3::from_shape_fn((5, 300, 7), |_| rng.f64());
    let dt = s.to_device(&t).unwrap();
    let mid = dt.argmax_axis(&s, 1, true).unwrap();
    assert_eq!(mid.shape(), &[5, 1, 7]);
    let want: Vec<u64> = t
        .lanes(Axis(1))
        .into_iter()
        .map(|l| host_arg(&l.to_vec(), true) as u64)
        .collect();
    assert_eq!(mid.to_vec_async(&s).unwrap(), want);
    assert!(dt.argmax_axis(&s, 3, false).is_err());
    let e = c.zeros::<f32, _>((4, 0)).unwrap();
    assert!(e.argmax_axis(&s, 1, false).is_err());
    assert_eq!(e.argmax_axis(&s, 0, false).unwrap().len(), 0);
}

/// Whole-array reductions are one kernel whose last block combines the partials, counted on a
/// counter in the stream's workspace that each kernel leaves at zero. Many reductions of
/// different grid sizes queued back to back on one stream, on the default and per-thread
/// default streams (which get memory of their own per call), on two streams from two threads
/// at once, and on a stream dropped before its work ran: every result is checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn single_pass_reductions_on_every_kind_of_stream() {
    use cudajit::ops::{ReduceOps, Reduction};
    let c = ctx();
    let mut rng = Rng::new();
    let sizes = [1usize, 4, 1000, 3_000_017, 5, 1 << 20, 257, 2_500_000];
    let xs: Vec<Vec<f32>> = sizes.iter().map(|&n| rng.vec(n, |r| r.f32())).collect();
    let sum = Reduction::<f32, f32, f32>::new("sum_stream_t", |x| x, |a, b| a + b, 0.0).unwrap();
    let check = |stream: &Stream, rounds: usize| {
        let dxs: Vec<_> = xs.iter().map(|x| stream.to_device(x).unwrap()).collect();
        let mut sums = c.alloc::<f32, _>(rounds * sizes.len()).unwrap();
        sums.fill(f32::NAN).unwrap();
        let mut idxs = c.alloc::<u64, _>(rounds * sizes.len()).unwrap();
        idxs.fill(u64::MAX).unwrap();
        // Everything queued before any wait: the counter must be back at zero between kernels.
        for r in 0..rounds {
            for (i, dx) in dxs.iter().enumerate() {
                let slot = r * sizes.len() + i;
                let mut one = sums.slice_mut(slot..slot + 1).unwrap();
                sum.reduce_into(stream, dx, &mut one).unwrap();
                let mut one = idxs.slice_mut(slot..slot + 1).unwrap();
                dx.argmax_into(stream, &mut one).unwrap();
            }
        }
        let (got, got_i) = (
            sums.to_vec_async(stream).unwrap(),
            idxs.to_vec_async(stream).unwrap(),
        );
        for (slot, (g, gi)) in got.iter().zip(&got_i).enumerate() {
            let x = &xs[slot % sizes.len()];
            let want: f64 = x.iter().map(|&v| v as f64).sum();
            let abs: f64 = x.iter().map(|&v| v.abs() as f64).sum();
            assert!(
                (*g as f64 - want).abs() <= 1e-5 * abs.max(1.0),
                "slot {slot}: {g} vs {want}"
            );
            assert_eq!(*gi as usize, host_arg(x, true), "slot {slot}");
        }
    };
    check(&c.new_stream().unwrap(), 6);
    check(&c.default_stream(), 3);
    check(&c.legacy_default_stream(), 3);
    check(&c.per_thread_default_stream(), 3);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| check(&c.new_stream().unwrap(), 10));
        }
    });
    // A stream dropped with its reduction still queued: the workspace outlives the work.
    let x: Vec<f32> = rng.vec(3_000_000, |r| r.f32());
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let dx = c.default_stream().to_device(&x).unwrap();
    let mut out = c.alloc::<f32, _>(1).unwrap();
    out.fill(f32::NAN).unwrap();
    {
        let s = c.new_stream().unwrap();
        sum.reduce_into(&s, &dx, &mut out).unwrap();
        sum.reduce_into(&s, &dx, &mut out).unwrap();
    }
    c.synchronize().unwrap();
    let got = out.to_vec().unwrap()[0] as f64;
    assert!((got - want).abs() <= 1e-5 * 3e6, "{got} vs {want}");
}
