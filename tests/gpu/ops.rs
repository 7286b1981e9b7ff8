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
    assert!(e.contains("[300, 257]") && e.contains("[300, 256]"), "{e}");
    let e = add
        .call(&s, (&dm, &dcol.reshape(300).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[300, 257]") && e.contains("[300]"), "{e}");
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
