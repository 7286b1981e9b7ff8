//! Host arrays as `Elementwise` arguments (as kernel launches and Numba take them): host inputs
//! copied in and untouched, host outputs (poisoned first) copied back, all checked against host
//! models on random data with special values; mixed with device arrays, scalars and `Index`;
//! strided ndarray views in and out; a 2-D broadcast of a host row over a device matrix; `call`
//! and `call_host`; a wrong output shape (an error, nothing written); a graph capture (an error).

use cudajit::codegen::Expr;
use cudajit::ops::{Elem, Elementwise, Index, Scalar};
use cudajit::prelude::*;
use ndarray::{s, Array1, Array2, Ix1, Ix2};

use crate::common::{ctx, same_f32, special_f32, Rng};

/// Poison for outputs: a value no kernel here writes.
const POISON: f32 = -1234.5;

type Axpy = Elementwise<(Scalar<f32>, Elem<f32>, Elem<f32>), (Expr<f32>, Expr<f32>)>;

/// `(a * x + y, x - y)`: FMA contraction is on by default, so the first is one fused multiply-add.
fn axpy_sub() -> Axpy {
    Elementwise::new("host_ew_axpy", |(a, x, y)| (a * x + y, x - y)).unwrap()
}

fn model(a: f32, x: &[f32], y: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let fma = x.iter().zip(y).map(|(x, y)| a.mul_add(*x, *y)).collect();
    let sub = x.iter().zip(y).map(|(x, y)| x - y).collect();
    (fma, sub)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// The elements of an ndarray array in logical (C) order.
fn flat(a: &Array2<f32>) -> Vec<f32> {
    a.iter().copied().collect()
}

fn check(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(same_f32(*g, *w), "{what}[{i}]: got {g:e}, want {w:e}");
    }
}

/// i64 values rich in MIN/MAX, ±1 and 0.
fn special_i64(rng: &mut Rng, n: usize) -> Vec<i64> {
    let sp = [0i64, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
    rng.vec(n, |r| {
        let u = r.next_u64();
        if u % 3 == 0 {
            sp[(u >> 8) as usize % sp.len()]
        } else {
            r.next_u64() as i64
        }
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_takes_host_vecs_and_slices() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let ew = axpy_sub();
    let mut rng = Rng::new();
    for n in [1usize, 13, 4099] {
        let x = special_f32(&mut rng, n);
        let y = special_f32(&mut rng, n);
        let a = rng.f32() * 4.0 - 2.0;
        let (want_fma, want_sub) = model(a, &x, &y);
        let (xb, yb) = (bits(&x), bits(&y));
        // Host inputs, host outputs (`&mut Vec` and `&mut [T]`).
        let mut o0 = vec![POISON; n];
        let mut o1 = vec![POISON; n];
        ew.apply(&s, (a, &x, &y), (&mut o0, &mut o1[..])).unwrap();
        check(&o0, &want_fma, &format!("n={n} host fma"));
        check(&o1, &want_sub, &format!("n={n} host sub"));
        assert_eq!(
            (bits(&x), bits(&y)),
            (xb.clone(), yb.clone()),
            "inputs untouched"
        );
        // Mixed: a device input with a host slice, one host and one device output.
        let dy = s.to_device(&y).unwrap();
        let mut d1 = s.to_device(&vec![POISON; n]).unwrap();
        let mut o0 = vec![POISON; n];
        ew.apply(&s, (a, &x[..], &dy), (&mut o0, &mut d1)).unwrap();
        check(&o0, &want_fma, &format!("n={n} mixed fma"));
        check(&d1.to_vec_async(&s).unwrap(), &want_sub, "mixed sub");
        // `call` with host inputs gives device arrays of the inputs' dimension type.
        let (c0, c1): (DeviceArray<f32, Ix1>, DeviceArray<f32, Ix1>) =
            ew.call(&s, (a, &x, &dy)).unwrap();
        check(&c0.to_vec_async(&s).unwrap(), &want_fma, "call fma");
        check(&c1.to_vec_async(&s).unwrap(), &want_sub, "call sub");
        // `call_host` gives ndarray arrays.
        let (h0, h1): (Array1<f32>, Array1<f32>) = ew.call_host(&s, (a, &x, &y)).unwrap();
        check(h0.as_slice().unwrap(), &want_fma, "call_host fma");
        check(h1.as_slice().unwrap(), &want_sub, "call_host sub");
        assert_eq!((bits(&x), bits(&y)), (xb, yb), "inputs untouched");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_integers_with_index_and_scalars() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // Wrapping arithmetic with MIN/MAX; the flat index as an input.
    let ew = Elementwise::<(Elem<i64>, Scalar<i64>, Index, Elem<i32>), Expr<i64>>::new(
        "host_ew_int",
        |(x, k, i, y)| x * k + i.cast::<i64>() - y.cast::<i64>(),
    )
    .unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 1000] {
        let x = special_i64(&mut rng, n);
        let y: Vec<i32> = special_i64(&mut rng, n).iter().map(|v| *v as i32).collect();
        let k = rng.next_u64() as i64;
        let want: Vec<i64> = (0..n)
            .map(|i| {
                x[i].wrapping_mul(k)
                    .wrapping_add(i as i64)
                    .wrapping_sub(y[i] as i64)
            })
            .collect();
        let (x0, y0) = (x.clone(), y.clone());
        let mut out = vec![i64::MIN; n];
        ew.apply(&s, (&x, k, Index, &y[..]), &mut out).unwrap();
        assert_eq!(out, want, "n={n}");
        // A host ndarray output, device and host inputs mixed.
        let dx = s.to_device(&x).unwrap();
        let mut out = Array1::from_elem(n, 7i64);
        ew.apply(&s, (&dx, k, Index, &y), &mut out).unwrap();
        assert_eq!(out.to_vec(), want, "n={n} ndarray output");
        assert_eq!((x, y), (x0, y0), "inputs untouched");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_views_and_2d_broadcast() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let ew = axpy_sub();
    let mut rng = Rng::new();
    let (rows, cols) = (37usize, 70usize);
    let m = Array2::from_shape_vec((rows, cols), special_f32(&mut rng, rows * cols)).unwrap();
    let mb = bits(&flat(&m));
    let want = |x: &Array2<f32>, y: &Array2<f32>| {
        let fma = Array2::from_shape_fn(x.raw_dim(), |ij| 1.5f32.mul_add(x[ij], y[ij]));
        let sub = Array2::from_shape_fn(x.raw_dim(), |ij| x[ij] - y[ij]);
        (fma, sub)
    };
    // A transposed view by value, a strided slice by reference; outputs into a standard host
    // array and a strided mutable view (the rest of its array untouched).
    let t = m.t();
    let y = Array2::from_shape_vec((cols, rows), special_f32(&mut rng, rows * cols)).unwrap();
    let (wf, ws) = want(&t.to_owned(), &y);
    let mut o0 = Array2::from_elem((cols, rows), POISON);
    let mut big = Array2::from_elem((cols, 2 * rows), POISON);
    ew.apply(&s, (1.5, t, &y), (&mut o0, big.slice_mut(s![.., ..;2])))
        .unwrap();
    check(&flat(&o0), &flat(&wf), "t fma");
    let written: Vec<f32> = big.slice(s![.., ..;2]).iter().copied().collect();
    check(&written, &flat(&ws), "strided output");
    assert!(
        big.slice(s![.., 1..;2])
            .iter()
            .all(|v| v.to_bits() == POISON.to_bits()),
        "gaps untouched"
    );
    // Every other row: a strided view by reference.
    let half = m.slice(s![..;2, ..]);
    let y2 = Array2::from_shape_vec(half.raw_dim(), special_f32(&mut rng, half.len())).unwrap();
    let (wf, ws) = want(&half.to_owned(), &y2);
    let (h0, h1): (Array2<f32>, Array2<f32>) = ew.call_host(&s, (1.5, &half, &y2)).unwrap();
    check(&flat(&h0), &flat(&wf), "half fma");
    check(&flat(&h1), &flat(&ws), "half sub");
    // A host row broadcast over a device matrix, and a host column over it, into host arrays.
    let dm: DeviceArray<f32, Ix2> = s.to_device(&m).unwrap();
    let row = Array1::from(special_f32(&mut rng, cols));
    let col = Array2::from_shape_vec((rows, 1), special_f32(&mut rng, rows)).unwrap();
    let rowb = row.broadcast((rows, cols)).unwrap().to_owned();
    let colb = col.broadcast((rows, cols)).unwrap().to_owned();
    let (wf, ws) = want(&rowb, &m);
    let mut o0 = Array2::from_elem((rows, cols), POISON);
    let mut o1 = Array2::from_elem((rows, cols), POISON);
    ew.apply(&s, (1.5, &row, &dm), (&mut o0, &mut o1)).unwrap();
    check(&flat(&o0), &flat(&wf), "row fma");
    check(&flat(&o1), &flat(&ws), "row sub");
    let (wf, ws) = want(&m, &colb);
    let (c0, c1): (DeviceArray<f32, Ix2>, DeviceArray<f32, Ix2>) =
        ew.call(&s, (1.5, &dm, &col)).unwrap();
    check(&c0.to_vec_async(&s).unwrap(), &flat(&wf), "col fma");
    check(&c1.to_vec_async(&s).unwrap(), &flat(&ws), "col sub");
    assert_eq!(bits(&flat(&m)), mb, "input untouched");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_array_errors() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let ew = axpy_sub();
    let x = vec![1.0f32; 100];
    let y = vec![2.0f32; 100];
    // A host output of the wrong shape: an error, and nothing written to either output.
    let mut o0 = vec![POISON; 99];
    let mut o1 = vec![POISON; 100];
    let e = ew.apply(&s, (2.0, &x, &y), (&mut o0, &mut o1)).unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    assert!(o0
        .iter()
        .chain(&o1)
        .all(|v| v.to_bits() == POISON.to_bits()));
    let mut m = Array2::from_elem((10, 11), POISON);
    let mut o1 = Array2::from_elem((10, 10), POISON);
    let xm = Array2::from_elem((10, 10), 1.0f32);
    assert!(ew.apply(&s, (2.0, &xm, &xm), (&mut m, &mut o1)).is_err());
    assert!(m
        .iter()
        .chain(o1.iter())
        .all(|v| v.to_bits() == POISON.to_bits()));
    // Inputs that do not broadcast: the same error as for device arrays.
    let short = vec![1.0f32; 7];
    assert!(ew.call_host(&s, (2.0, &x, &short)).is_err());
    // Not while capturing a graph: neither inputs nor outputs, for apply, call and call_host.
    let dx = s.to_device(&x).unwrap();
    let mut d0 = s.to_device(&x).unwrap();
    let mut d1 = s.to_device(&x).unwrap();
    let mut o0 = vec![POISON; 100];
    s.begin_capture().unwrap();
    let e = ew
        .apply(&s, (2.0, &x, &dx), (&mut d0, &mut d1))
        .unwrap_err();
    assert!(e.to_string().contains("captures a graph"), "{e}");
    let e = ew
        .apply(&s, (2.0, &dx, &dx), (&mut o0, &mut d1))
        .unwrap_err();
    assert!(e.to_string().contains("captures a graph"), "{e}");
    assert!(ew.call(&s, (2.0, &dx, &y)).is_err());
    assert!(ew.call_host(&s, (2.0, &x, &y)).is_err());
    drop(s.end_capture().unwrap());
    assert!(o0.iter().all(|v| v.to_bits() == POISON.to_bits()));
    ew.apply(&s, (2.0, &x, &dx), (&mut o0, &mut d1)).unwrap();
    assert!(o0.iter().all(|&v| v == 3.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn complex_host_arrays() {
    use cudajit::codegen::CExpr;
    use num_complex::Complex;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let cvec = |rng: &mut Rng, n: usize| -> Vec<Complex<f64>> {
        let re = special_f32(rng, n);
        let im = special_f32(rng, n);
        re.iter()
            .zip(&im)
            .map(|(r, i)| Complex::new(*r as f64, *i as f64))
            .collect()
    };
    let same = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
    // Exact operations: a conjugate plus another, and a difference of parts.
    let add = Elementwise::<(Elem<Complex<f64>>, Elem<Complex<f64>>), CExpr<f64>>::new(
        "host_ew_cadd",
        |(z, w)| z.conj() + w,
    )
    .unwrap();
    let part = Elementwise::<(Elem<Complex<f64>>, Elem<Complex<f64>>), Expr<f64>>::new(
        "host_ew_cpart",
        |(z, w)| z.re - w.im,
    )
    .unwrap();
    let (rows, cols) = (5usize, 33usize);
    let z = Array2::from_shape_vec((rows, cols), cvec(&mut rng, rows * cols)).unwrap();
    let w = cvec(&mut rng, cols); // a host row, broadcast over the rows
    let z0 = z.clone();
    let mut out = Array2::from_elem((rows, cols), Complex::new(f64::MAX, f64::MAX));
    add.apply(&s, (&z, &w), &mut out).unwrap();
    let mut re = vec![f64::MAX; cols];
    part.apply(&s, (&z.row(1), &w), &mut re).unwrap();
    for ((i, j), got) in out.indexed_iter() {
        let want = z[(i, j)].conj() + w[j];
        assert!(
            same(got.re, want.re) && same(got.im, want.im),
            "({i},{j}): {got} vs {want}"
        );
    }
    for (j, got) in re.iter().enumerate() {
        assert!(same(*got, z[(1, j)].re - w[j].im), "part {j}");
    }
    assert!(z
        .iter()
        .zip(z0.iter())
        .all(|(a, b)| { a.re.to_bits() == b.re.to_bits() && a.im.to_bits() == b.im.to_bits() }));
}

/// Captures the `cudajit` target's log messages of this test binary.
struct Capture(std::sync::Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.target() == "cudajit"
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
            v.push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(std::sync::Mutex::new(Vec::new()));

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_warning_per_elementwise() {
    if log::set_logger(&CAPTURE).is_err() {
        return; // another logger is installed: nothing to look at
    }
    log::set_max_level(log::LevelFilter::Warn);
    let c = ctx();
    let s = c.new_stream().unwrap();
    let name = "host_ew_warned_once";
    let ew = Elementwise::<(Elem<f32>,), Expr<f32>>::new(name, |(x,)| x + x).unwrap();
    let quiet =
        Elementwise::<(Elem<f32>,), Expr<f32>>::new("host_ew_device_only", |(x,)| x + x).unwrap();
    let x = vec![1.5f32; 10];
    let dx = s.to_device(&x).unwrap();
    let mut out = vec![0.0f32; 10];
    for _ in 0..3 {
        ew.apply(&s, (&x,), &mut out).unwrap();
        assert_eq!(out, vec![3.0f32; 10]);
        let mut dout = s.to_device(&out).unwrap();
        quiet.apply(&s, (&dx,), &mut dout).unwrap();
    }
    let count = |n: &str| {
        let v = CAPTURE.0.lock().unwrap_or_else(|p| p.into_inner());
        v.iter().filter(|m| m.contains(&format!("`{n}`"))).count()
    };
    let on = std::env::var("CUDAJIT_WARN_HOST_ARRAYS").map_or(true, |v| v.trim() != "0");
    assert_eq!(count(name), on as usize, "one warning, on the first call");
    assert_eq!(
        count("host_ew_device_only"),
        0,
        "device arrays only: no warning"
    );
}
