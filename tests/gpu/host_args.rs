//! Host arrays as kernel arguments (as Numba takes NumPy arrays): copied in, the writable ones
//! copied back, read-only ones untouched, refused where nothing may wait.

use cudajit::codegen::{Kernel, NdMut, NdRef};
use cudajit::prelude::*;
use ndarray::Array2;

use crate::common::{ctx, special_f32, Rng};

fn axpy() -> Kernel<(&'static [f32], &'static mut [f32], f32)> {
    Kernel::<(&[f32], &mut [f32], f32)>::build("host_axpy", |k, (x, y, a)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| y.set(i, a * x.at(i) + y.at(i)));
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_slices_and_vecs_are_copied_in_and_back() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = axpy();
    let mut rng = Rng::new();
    for n in [1usize, 127, 4099] {
        let x = special_f32(&mut rng, n);
        let y0 = special_f32(&mut rng, n);
        let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
        // FMA contraction is on by default: `a * x + y` is one fused multiply-add.
        let want: Vec<f32> = x
            .iter()
            .zip(&y0)
            .map(|(x, y)| 2.5f32.mul_add(*x, *y))
            .collect();
        // `&Vec` in, `&mut Vec` back.
        let x_before = x.clone();
        let mut y = y0.clone();
        k.launch(&s, cfg, (&x, &mut y, 2.5)).unwrap();
        let same = |a: &[f32], b: &[f32]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(a, b)| a == b || a.is_nan() && b.is_nan())
        };
        assert!(same(&y, &want), "n={n}: written output copied back");
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&x),
            bits(&x_before),
            "n={n}: read-only input untouched"
        );
        // Slices, mixed with a device array.
        let dx = s.to_device(&x).unwrap();
        let mut y = y0.clone();
        k.launch(&s, cfg, (&dx, &mut y[..], 2.5)).unwrap();
        assert!(same(&y, &want), "n={n}: slice output");
        let mut dy = s.to_device(&y0).unwrap();
        k.launch(&s, cfg, (&x[..], &mut dy, 2.5)).unwrap();
        assert!(
            same(&dy.to_vec_async(&s).unwrap(), &want),
            "n={n}: slice input"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ndarray_views_as_n_d_arguments() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("host_transpose", |k, (a, b)| {
        let [j, i] = k.grid2();
        k.if_(i.lt(a.dim(0)).and(j.lt(a.dim(1))), |_| {
            b.set2(j, i, a.at2(i, j) * 2.0f32)
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let (rows, cols) = (37usize, 70usize);
    let a = Array2::from_shape_fn((rows, cols), |_| rng.f32());
    let cfg = LaunchConfig::new(
        (cols.div_ceil(16) as u32, rows.div_ceil(16) as u32),
        (16, 16),
    );
    let want = a.t().mapv(|v| v * 2.0);
    let mut b = Array2::<f32>::from_elem((cols, rows), f32::NAN);
    k.launch(&s, cfg, (&a, &mut b)).unwrap();
    assert_eq!(b, want);
    // Views by value, and a non-contiguous output view (every other column of a wider array).
    let mut wide = Array2::<f32>::from_elem((cols, 2 * rows), -1.0);
    let out = wide.slice_mut(ndarray::s![.., ..;2]);
    k.launch(&s, cfg, (a.view(), out)).unwrap();
    assert_eq!(wide.slice(ndarray::s![.., ..;2]), want);
    assert!(wide
        .slice(ndarray::s![.., 1..;2])
        .iter()
        .all(|&v| v == -1.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_arrays_are_refused_inside_a_graph_capture() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = axpy();
    let x = vec![1.0f32; 64];
    let mut y = vec![2.0f32; 64];
    let mut dy = s.to_device(&y).unwrap();
    let cfg = LaunchConfig::for_num_elems(64, 64).unwrap();
    s.begin_capture().unwrap();
    let e = k.launch(&s, cfg, (&x, &mut dy, 1.0)).unwrap_err();
    assert!(e.to_string().contains("captures a graph"), "{e}");
    let e = k.launch(&s, cfg, (&x, &mut y, 1.0)).unwrap_err();
    assert!(e.to_string().contains("host array"), "{e}");
    let graph = s.end_capture().unwrap();
    drop(graph);
    assert!(y.iter().all(|&v| v == 2.0));
    // A hand-built graph node cannot take one either.
    let mut g = cudajit::Graph::new(&c).unwrap();
    let e = k
        .add_to_graph(&mut g, cfg, (&x, &mut dy, 1.0), &[])
        .unwrap_err();
    assert!(e.to_string().contains("graph node"), "{e}");
}
