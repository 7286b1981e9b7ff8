//! Strided device views (steps, transposes, sub-blocks, reversed axes, Fortran order): copies
//! both ways, kernels with strided parameters, `Elementwise` with strided inputs and outputs,
//! reductions. Every element is checked against ndarray doing the same slicing on the host;
//! outputs are poisoned first and the elements outside a written view are checked untouched.

use cudajit::codegen::{Expr, Kernel, NdRef, NdStrided, NdStridedMut};
use cudajit::ops::{Elem, Elementwise, ReduceOps, StridedReduceOps};
use cudajit::prelude::*;
use cudajit::{StridedView, StridedViewMut};
use ndarray::{s, Array, Array1, Array2, Array3, Axis, Dimension, NewAxis, ShapeBuilder, Slice};

use crate::common::{ctx, Rng};

/// Random f32 values with the special values mixed in.
fn data_f32(rng: &mut Rng, n: usize) -> Vec<f32> {
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::MIN_POSITIVE / 4.0,
        f32::MAX,
        f32::MIN,
    ];
    rng.vec(n, |r| {
        let k = (r.next_u64() % 16) as usize;
        if k < special.len() {
            special[k]
        } else {
            r.f32() * 1000.0
        }
    })
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Element-by-element comparison (bit-exact, NaN equal to NaN).
fn assert_same<D: Dimension>(got: &Array<f32, D>, want: &Array<f32, D>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for ((i, g), w) in got.indexed_iter().zip(want.iter()) {
        assert!(same(*g, *w), "{what}: at {i:?} got {g} want {w}");
    }
}

fn host2(rng: &mut Rng, m: usize, n: usize) -> Array2<f32> {
    Array2::from_shape_vec((m, n), data_f32(rng, m * n)).unwrap()
}

/// `$dev.strided().slice($s)` read back equals `$host.slice($s)`, synchronously and on a stream.
macro_rules! check_slice {
    ($stream:expr, $dev:expr, $host:expr, $($s:tt)*) => {{
        let v = $dev.strided().slice(s![$($s)*]).unwrap();
        let want = $host.slice(s![$($s)*]).to_owned();
        let what = stringify!($($s)*);
        assert_eq!(v.strides(), $host.slice(s![$($s)*]).strides().to_vec(), "{what}: strides");
        assert_same(&v.to_array().unwrap(), &want, what);
        assert_same(&v.to_array_async($stream).unwrap(), &want, what);
        assert_same(&v.to_contiguous($stream).unwrap().to_array_async($stream).unwrap(), &want, what);
        assert_eq!(v.to_vec().unwrap().len(), want.len());
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_views_read_back_as_ndarray_slices() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host = host2(&mut rng, 37, 53);
    let dev = c.to_device(&host).unwrap();
    check_slice!(&s, dev, host, .., ..);
    check_slice!(&s, dev, host, ..;2, ..);
    check_slice!(&s, dev, host, .., ..;2);
    check_slice!(&s, dev, host, ..;3, ..;3);
    check_slice!(&s, dev, host, 1..30;3, 5..40;2);
    check_slice!(&s, dev, host, 4..20, 7..19);
    check_slice!(&s, dev, host, ..;-1, ..);
    check_slice!(&s, dev, host, .., ..;-2);
    check_slice!(&s, dev, host, 2..30;-3, -10..;-1);
    check_slice!(&s, dev, host, 3..3, ..);
    check_slice!(&s, dev, host, .., 53..);
    check_slice!(&s, dev, host, .., 7);
    check_slice!(&s, dev, host, 36, ..;4);
    check_slice!(&s, dev, host, .., NewAxis, 2..9;2);
    // Transposes, permutations, reversed axes, slice_axis, index_axis.
    assert_same(&dev.t().to_array().unwrap(), &host.t().to_owned(), "t");
    let p = dev.strided().permuted_axes([1, 0]).unwrap();
    assert_same(&p.to_array().unwrap(), &host.t().to_owned(), "permuted");
    let sub = dev.t().slice(s![2..50;3, 1..36;2]).unwrap();
    let want = host.t().slice(s![2..50;3, 1..36;2]).to_owned();
    assert_same(&sub.to_array().unwrap(), &want, "t then sub-block");
    let r = dev.strided().invert_axis(Axis(1)).unwrap();
    assert_same(
        &r.to_array().unwrap(),
        &host.slice(s![.., ..;-1]).to_owned(),
        "invert_axis",
    );
    let a = dev.slice_axis(Axis(1), Slice::new(1, Some(-1), 4)).unwrap();
    let want = host
        .slice_axis(Axis(1), Slice::new(1, Some(-1), 4))
        .to_owned();
    assert_same(&a.to_array().unwrap(), &want, "slice_axis");
    let col = dev.strided().index_axis(Axis(1), 17).unwrap();
    assert_same(
        &col.to_array().unwrap(),
        &host.column(17).to_owned(),
        "column",
    );
    // Into a host array of another layout (Fortran order).
    let mut f = Array2::<f32>::from_elem((53, 37).f(), 7.0);
    dev.t().copy_to_host_array(&mut f).unwrap();
    assert_same(&f, &host.t().to_owned(), "into a Fortran-order host array");
    let mut wrong = Array2::<f32>::zeros((37, 53));
    assert!(matches!(
        dev.t().copy_to_host_array(&mut wrong),
        Err(Error::Shape { .. })
    ));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_3d_arrays_and_odd_element_sizes() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let h = Array3::from_shape_vec((9, 10, 11), rng.vec(990, |r| r.f64())).unwrap();
    let d = c.to_device(&h).unwrap();
    let v = d.strided().slice(s![1..;2, ..;-3, 2..9;3]).unwrap();
    let want = h.slice(s![1..;2, ..;-3, 2..9;3]).to_owned();
    assert_eq!(v.to_array().unwrap(), want);
    let p = d.strided().permuted_axes([2, 0, 1]).unwrap();
    assert_eq!(
        p.to_array().unwrap(),
        h.view().permuted_axes([2, 0, 1]).to_owned()
    );
    let p = p.slice(s![..;4, 3, ..;2]).unwrap();
    let want = h.view().permuted_axes([2, 0, 1]);
    assert_eq!(
        p.to_array().unwrap(),
        want.slice(s![..;4, 3, ..;2]).to_owned()
    );
    // Bytes, and elements of 3 and 6 bytes (copied as words with an extra axis).
    let hb = Array2::from_shape_vec((13, 17), rng.vec(221, |r| r.next_u64() as u8)).unwrap();
    let db = c.to_device(&hb).unwrap();
    let vb = db.strided().slice(s![..;3, 1..;5]).unwrap();
    assert_eq!(vb.to_array().unwrap(), hb.slice(s![..;3, 1..;5]).to_owned());
    assert_eq!(
        vb.to_contiguous(&s).unwrap().to_array_async(&s).unwrap(),
        hb.slice(s![..;3, 1..;5]).to_owned()
    );
    let h3: Array2<[u8; 3]> = Array2::from_shape_fn((8, 9), |_| {
        let x = rng.next_u64();
        [x as u8, (x >> 8) as u8, (x >> 16) as u8]
    });
    let d3 = c.to_device(&h3).unwrap();
    let v3 = d3.t().slice(s![..;-3, ..;2]).unwrap();
    assert_eq!(
        v3.to_array().unwrap(),
        h3.t().slice(s![..;-3, ..;2]).to_owned()
    );
    let h6: Array2<[u16; 3]> = Array2::from_shape_fn((8, 9), |_| {
        let x = rng.next_u64();
        [x as u16, (x >> 16) as u16, (x >> 32) as u16]
    });
    let mut d6 = c.to_device(&h6).unwrap();
    let v6 = d6.strided().slice(s![1..;3, ..]).unwrap();
    assert_eq!(v6.to_array().unwrap(), h6.slice(s![1..;3, ..]).to_owned());
    // Writing odd-size elements through a sparse view (a scatter kernel).
    let src: Array2<[u16; 3]> = Array2::from_shape_fn((3, 9), |(i, j)| [i as u16, j as u16, 7]);
    d6.strided_mut()
        .slice(s![1..;3, ..])
        .unwrap()
        .copy_from_host(&src)
        .unwrap();
    let mut want = h6.clone();
    want.slice_mut(s![1..;3, ..]).assign(&src);
    assert_eq!(d6.to_array().unwrap(), want);
}

/// Writes `src` into the view `$s` of a poisoned device copy of `base`, synchronously and on
/// a stream, and checks the whole array (view elements replaced, the rest untouched).
macro_rules! check_write {
    ($stream:expr, $ctx:expr, $base:expr, $src:expr, $($s:tt)*) => {{
        for on_stream in [false, true] {
            let mut d = $ctx.to_device(&$base).unwrap();
            {
                let mut v = d.strided_mut().slice(s![$($s)*]).unwrap();
                if on_stream {
                    v.copy_from_host_async(&$src, $stream).unwrap();
                    $stream.synchronize().unwrap();
                } else {
                    v.copy_from_host(&$src).unwrap();
                }
            }
            let mut want = $base.clone();
            want.slice_mut(s![$($s)*]).assign(&$src);
            assert_same(&d.to_array().unwrap(), &want, stringify!($($s)*));
        }
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_arrays_of_any_layout_into_strided_views() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let base = Array2::<f32>::from_elem((24, 31), f32::from_bits(0x7fc0_dead));
    let src = host2(&mut rng, 12, 31);
    check_write!(&s, c, base, src, ..;2, ..);
    let src = host2(&mut rng, 8, 11);
    check_write!(&s, c, base, src, 1..;3, 3..25;2);
    let src = host2(&mut rng, 24, 31);
    check_write!(&s, c, base, src, ..;-1, ..);
    check_write!(&s, c, base, src, ..;-1, ..;-1);
    let src = host2(&mut rng, 31, 24);
    // The transposed view of the whole array (dense: one copy after a host scatter), from a
    // C-order, a Fortran-order and a transposed host array.
    for host in [src.clone(), {
        let mut f = Array2::<f32>::zeros((31, 24).f());
        f.assign(&src);
        f
    }] {
        let mut d = c.to_device(&base).unwrap();
        d.strided_mut()
            .reversed_axes()
            .copy_from_host(&host)
            .unwrap();
        assert_same(
            &d.to_array().unwrap(),
            &host.t().to_owned(),
            "into the transpose",
        );
    }
    let mut d = c.to_device(&base).unwrap();
    d.strided_mut().copy_from_host(&src.t()).unwrap();
    assert_same(
        &d.to_array().unwrap(),
        &src.t().to_owned(),
        "from a transposed host view",
    );
    // A 1-D view with a step, from a slice and a Vec.
    let mut d = c.to_device(&vec![-1.0f32; 30]).unwrap();
    let src1 = data_f32(&mut rng, 10);
    d.slice_axis_mut(Axis(0), Slice::new(2, None, 3))
        .unwrap()
        .copy_from_host(&src1[..])
        .unwrap();
    let got = d.to_vec().unwrap();
    for (i, g) in got.iter().enumerate() {
        let want = if i >= 2 && (i - 2) % 3 == 0 {
            src1[(i - 2) / 3]
        } else {
            -1.0
        };
        assert!(same(*g, want), "1-D step 3 at {i}");
    }
    // Fills of strided views (every element size), the elements between untouched.
    let mut d = c.to_device(&base).unwrap();
    d.strided_mut()
        .slice(s![1..;2, ..;-3])
        .unwrap()
        .fill(2.5)
        .unwrap();
    let mut want = base.clone();
    want.slice_mut(s![1..;2, ..;-3]).fill(2.5);
    assert_same(&d.to_array().unwrap(), &want, "fill");
    let hb = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as u8);
    let mut db = c.to_device(&hb).unwrap();
    db.strided_mut()
        .slice(s![.., ..;3])
        .unwrap()
        .fill(200u8)
        .unwrap();
    let mut want = hb.clone();
    want.slice_mut(s![.., ..;3]).fill(200);
    assert_eq!(db.to_array().unwrap(), want);
    let hl = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as u64 | 0xabcd_0000_0000_0000);
    let mut dl = c.to_device(&hl).unwrap();
    dl.strided_mut()
        .slice(s![..;4, 1..;2])
        .unwrap()
        .fill_async(u64::MAX - 1, &s)
        .unwrap();
    let mut want = hl.clone();
    want.slice_mut(s![..;4, 1..;2]).fill(u64::MAX - 1);
    assert_eq!(dl.to_array_async(&s).unwrap(), want);
    let h16 = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as i16);
    let mut d16 = c.to_device(&h16).unwrap();
    d16.strided_mut()
        .reversed_axes()
        .slice(s![2..5, ..])
        .unwrap()
        .fill(-3)
        .unwrap();
    let mut want = h16.clone();
    want.view_mut()
        .reversed_axes()
        .slice_mut(s![2..5, ..])
        .fill(-3);
    assert_eq!(d16.to_array().unwrap(), want);
    let mut odd = c.to_device(&vec![[1u8; 3]; 4]).unwrap();
    usage(odd.strided_mut().fill([0u8; 3]));
    // Shape mismatch.
    let mut d = c.to_device(&base).unwrap();
    let e = d
        .strided_mut()
        .slice(s![..;2, ..])
        .unwrap()
        .copy_from_host(&src);
    assert!(matches!(e, Err(Error::Shape { .. })), "{e:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_copies_between_strided_views() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host = host2(&mut rng, 20, 30);
    let src = c.to_device(&host).unwrap();
    let base = Array2::<f32>::from_elem((30, 40), f32::from_bits(0xffc0_beef));
    for on_stream in [false, true] {
        let mut dst = c.to_device(&base).unwrap();
        {
            // A transposed step-2 block of the source into a reversed sub-block.
            let from = src.t().slice(s![..;2, 5..;3]).unwrap();
            let mut to = dst.strided_mut().slice(s![3..18, 20..;-4]).unwrap();
            if on_stream {
                to.copy_from_device_async(&from, &s).unwrap();
                s.synchronize().unwrap();
            } else {
                to.copy_from_device(&from).unwrap();
            }
        }
        let mut want = base.clone();
        want.slice_mut(s![3..18, 20..;-4])
            .assign(&host.t().slice(s![..;2, 5..;3]));
        assert_same(&dst.to_array().unwrap(), &want, "block to block");
    }
    // Contiguous to strided and back, and same-layout Fortran arrays (one memcpy).
    let mut f = c.zeros_f::<f32, _>((20, 30)).unwrap();
    f.view_mut().copy_from_device(&src).unwrap();
    assert_same(&f.to_array().unwrap(), &host, "C into Fortran");
    let mut g = c.alloc_f::<f32, _>((20, 30)).unwrap();
    g.view_mut().copy_from_device(&f).unwrap();
    assert_same(&g.to_array().unwrap(), &host, "Fortran into Fortran");
    let mut back = c.zeros::<f32, _>((20, 30)).unwrap();
    back.strided_mut().copy_from_device(&g).unwrap();
    assert_same(&back.to_array().unwrap(), &host, "Fortran into C");
    let mut wrong = c.zeros::<f32, _>((30, 20)).unwrap();
    let e = wrong.strided_mut().copy_from_device(&src);
    assert!(matches!(e, Err(Error::Shape { .. })), "{e:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fortran_order_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host_c = host2(&mut rng, 17, 23);
    let mut host_f = Array2::<f32>::zeros((17, 23).f());
    host_f.assign(&host_c);
    let d = c.to_device_layout(&host_f).unwrap();
    assert_eq!(d.strides(), vec![1, 17]);
    assert_eq!(d.shape(), &[17, 23]);
    assert_same(&d.to_array().unwrap(), &host_c, "Fortran to_device_layout");
    // The transposed view of a Fortran array is C-contiguous: a contiguous parameter takes it.
    assert!(d.view().t().is_standard_layout());
    let copy = Kernel::<(NdRef<f32, 2>, NdStridedMut<f32, 2>)>::build("f_copy", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (r, col) = (i / x.dim(1), i % x.dim(1));
            y.set2(col, r, x.at2(r, col));
        });
    })
    .unwrap();
    let mut out = c.zeros_f::<f32, _>((17, 23)).unwrap();
    copy.launch(
        &s,
        LaunchConfig::for_num_elems(391, 128).unwrap(),
        (d.view().t(), &mut out.view_mut()),
    )
    .unwrap();
    assert_same(
        &out.view().to_array_async(&s).unwrap(),
        &host_c,
        "kernel on Fortran arrays",
    );
    // Reversed host layouts keep theirs; a non-dense host view is stored in C order.
    let rev = host_c.slice(s![..;-1, ..]);
    let d = c.to_device_layout(&rev).unwrap();
    assert_eq!(d.strides(), vec![-23, 1]);
    assert_same(
        &d.to_array().unwrap(),
        &rev.to_owned(),
        "reversed host layout",
    );
    let sparse = host_c.slice(s![..;2, ..]);
    let d = c.to_device_layout(&sparse).unwrap();
    assert_eq!(d.strides(), vec![23, 1]);
    assert_same(
        &d.to_array().unwrap(),
        &sparse.to_owned(),
        "sparse host view",
    );
    let z = c.zeros_f::<f64, _>((3, 4, 5)).unwrap();
    assert_eq!(z.strides(), vec![1, 3, 12]);
    assert_eq!(z.to_array().unwrap(), Array3::<f64>::zeros((3, 4, 5)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_with_strided_parameters() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let k2 = Kernel::<(NdStrided<f32, 2>, NdStridedMut<f32, 2>)>::build("strided2", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (r, col) = (i / x.dim(1), i % x.dim(1));
            y.set2(r, col, x.at2(r, col) * 2.0f32 + 1.0f32);
        });
    })
    .unwrap();
    let host = host2(&mut rng, 40, 50);
    let dx = c.to_device(&host).unwrap();
    let base = Array2::<f32>::from_elem((60, 70), f32::from_bits(0x7fc0_0bad));
    // Inputs: the whole array, its transpose, step 2/3 blocks, reversed axes; outputs: blocks of
    // a larger poisoned array with steps and reversed axes.
    let cases: Vec<(StridedView<'_, f32, ndarray::Ix2>, ndarray::Array2<f32>)> = vec![
        (dx.strided(), host.clone()),
        (dx.t(), host.t().to_owned()),
        (
            dx.strided().slice(s![..;2, 1..;3]).unwrap(),
            host.slice(s![..;2, 1..;3]).to_owned(),
        ),
        (
            dx.t().slice(s![..;-1, 4..30;2]).unwrap(),
            host.t().slice(s![..;-1, 4..30;2]).to_owned(),
        ),
        (
            dx.strided().slice(s![5..5, ..]).unwrap(),
            host.slice(s![5..5, ..]).to_owned(),
        ),
    ];
    for (n, (x, want_in)) in cases.into_iter().enumerate() {
        let (m, w) = (x.shape()[0], x.shape()[1]);
        let mut dy = c.to_device(&base).unwrap();
        {
            let y = dy.strided_mut().slice(s![..;-1, ..;-1]).unwrap();
            let mut y = y.slice(s![..m, 1..1 + w]).unwrap();
            if !x.is_empty() {
                let cfg = LaunchConfig::for_num_elems(x.len(), 128).unwrap();
                k2.launch(&s, cfg, (&x, &mut y)).unwrap();
            }
        }
        let mut want = base.clone();
        want.slice_mut(s![..;-1, ..;-1])
            .slice_mut(s![..m, 1..1 + w])
            .assign(&want_in.mapv(|v| v * 2.0 + 1.0));
        assert_same(&dy.to_array_async(&s).unwrap(), &want, &format!("case {n}"));
    }
    // 1-D and 3-D.
    let k1 = Kernel::<(NdStrided<i32, 1>, NdStridedMut<i32, 1>)>::build("strided1", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| y.set(i, x.at(i) - 7i32));
    })
    .unwrap();
    let h1: Array1<i32> = Array1::from(rng.vec(100, |r| r.next_u64() as i32));
    let d1 = c.to_device(&h1).unwrap();
    let mut o1 = c.to_device(&vec![i32::MIN; 100]).unwrap();
    let x = d1.slice_axis(Axis(0), Slice::new(1, None, -3)).unwrap();
    let y = o1.slice_axis_mut(Axis(0), Slice::new(1, None, 3)).unwrap();
    k1.launch(&s, LaunchConfig::new(1, 64), (x, y)).unwrap();
    let mut want = Array1::from_elem(100, i32::MIN);
    want.slice_mut(s![1..;3])
        .assign(&h1.slice(s![1..;-3]).mapv(|v| v.wrapping_sub(7)));
    assert_eq!(o1.to_array().unwrap(), want);
    let k3 = Kernel::<(NdStrided<f64, 3>, NdStridedMut<f64, 3>)>::build("strided3", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (a, b, cc) = (
                i / (x.dim(1) * x.dim(2)),
                (i / x.dim(2)) % x.dim(1),
                i % x.dim(2),
            );
            y.set3(a, b, cc, -x.at3(a, b, cc));
        });
    })
    .unwrap();
    let h3 = Array3::from_shape_vec((6, 7, 8), rng.vec(336, |r| r.f64())).unwrap();
    let d3 = c.to_device(&h3).unwrap();
    let x = d3
        .strided()
        .permuted_axes([1, 2, 0])
        .unwrap()
        .slice(s![..;2, .., 1..;2])
        .unwrap();
    let mut o3 = c.zeros_f::<f64, _>(*x.dim()).unwrap();
    k3.launch(
        &s,
        LaunchConfig::for_num_elems(x.len(), 64).unwrap(),
        (&x, &mut o3),
    )
    .unwrap();
    let want = h3
        .view()
        .permuted_axes([1, 2, 0])
        .slice(s![..;2, .., 1..;2])
        .mapv(|v| -v);
    assert_eq!(o3.to_array().unwrap(), want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn contiguous_parameters_refuse_non_contiguous_views() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(NdRef<f32, 2>, &mut [f32])>::build("contig_only", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| y.set(i, x.at(i)));
    })
    .unwrap();
    let host = host2(&mut Rng::new(), 4, 6);
    let d = c.to_device(&host).unwrap();
    let mut y = c.zeros::<f32, _>(24).unwrap();
    let e = k
        .launch(&s, LaunchConfig::new(1, 32), (d.t(), &mut y))
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Launch(_)), "{e:?}");
    assert!(
        msg.contains("to_contiguous") && msg.contains("NdStrided"),
        "{msg}"
    );
    // A contiguous strided view (a row block) is accepted, and so is the gathered copy.
    let rows = d.strided().slice(s![1..3, ..]).unwrap();
    let mut y2 = c.zeros::<f32, _>(12).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (rows, &mut y2))
        .unwrap();
    let got = y2.to_vec_async(&s).unwrap();
    let want: Vec<f32> = host.slice(s![1..3, ..]).iter().copied().collect();
    assert!(got.iter().zip(&want).all(|(a, b)| same(*a, *b)));
    let t = d.t().to_contiguous(&s).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&t, &mut y))
        .unwrap();
    let got = y.to_vec_async(&s).unwrap();
    let want: Vec<f32> = host.t().iter().copied().collect();
    assert!(got.iter().zip(&want).all(|(a, b)| same(*a, *b)));
    // A 1-D view with a step for a `&mut [T]` parameter.
    let k1 = Kernel::<(&[f32], &mut [f32])>::build("contig1", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| y.set(i, x.at(i)));
    })
    .unwrap();
    let x = c.to_device(&vec![1.0f32; 10]).unwrap();
    let mut z = c.zeros::<f32, _>(20).unwrap();
    let view = z.slice_axis_mut(Axis(0), Slice::new(0, None, 2)).unwrap();
    let e = k1
        .launch(&s, LaunchConfig::new(1, 32), (&x, view))
        .unwrap_err();
    assert!(e.to_string().contains("NdStrided"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_with_strided_inputs_and_outputs() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let add =
        Elementwise::<(Elem<f32>, Elem<f32>), _>::new("add_strided_t", |(x, y)| x + y).unwrap();
    let hx = host2(&mut rng, 30, 40);
    let hy = host2(&mut rng, 40, 30);
    let (dx, dy) = (c.to_device(&hx).unwrap(), c.to_device(&hy).unwrap());
    // Strided inputs into a new contiguous array.
    let got = add.call(&s, (dx.strided(), dy.t())).unwrap();
    let want = &hx + &hy.t();
    assert_same(
        &got.to_array().unwrap().into_dimensionality().unwrap(),
        &want,
        "call",
    );
    // Into a strided output (reversed, step 2) of a poisoned array; inputs with steps.
    let base = Array2::<f32>::from_elem((60, 45), f32::from_bits(0x7fc0_f00d));
    let mut dout = c.to_device(&base).unwrap();
    let xin = dx.strided().slice(s![..;2, ..;3]).unwrap(); // 15 x 14
    let yin2 = dy.t().slice(s![..;2, ..;3]).unwrap(); // 15 x 14
    assert_eq!(xin.shape(), yin2.shape());
    {
        let out = dout.strided_mut().slice(s![..;-4, 3..;3]).unwrap(); // 15 x 14
        add.apply(&s, (xin.clone(), yin2.clone()), out).unwrap();
    }
    let mut want = base.clone();
    want.slice_mut(s![..;-4, 3..;3])
        .assign(&(&hx.slice(s![..;2, ..;3]) + &hy.t().slice(s![..;2, ..;3])));
    assert_same(
        &dout.to_array_async(&s).unwrap(),
        &want,
        "apply into a strided output",
    );
    // Broadcasting a strided row (step 2 along a column of the transpose) against a block.
    let row = dy
        .t()
        .index_axis(Axis(0), 5)
        .unwrap()
        .slice(s![..;2])
        .unwrap(); // 20
    let block = dx.strided().slice(s![..;3, ..;2]).unwrap(); // 10 x 20
    let got = add.call(&s, (block, row)).unwrap();
    let want = &hx.slice(s![..;3, ..;2]) + &hy.t().row(5).slice(s![..;2]);
    assert_same(
        &got.to_array().unwrap().into_dimensionality().unwrap(),
        &want,
        "broadcast",
    );
    // Two outputs, one strided and one contiguous; a contiguous step-1 view stays on the fast path.
    let two = Elementwise::<(Elem<f32>,), (Expr<f32>, Expr<f32>)>::new("two_out_strided", |(x,)| {
        (-x, x * 0.5f32)
    })
    .unwrap();
    let mut o1 = c.to_device(&base).unwrap();
    let mut o2 = c.zeros::<f32, _>((40, 30)).unwrap();
    {
        let v1 = o1.strided_mut().slice(s![10..50, ..30]).unwrap();
        let mut v2 = o2.strided_mut();
        two.apply(&s, (dx.t(),), (v1, v2.reborrow())).unwrap();
    }
    let mut want1 = base.clone();
    want1
        .slice_mut(s![10..50, ..30])
        .assign(&hx.t().mapv(|v| -v));
    assert_same(&o1.to_array_async(&s).unwrap(), &want1, "first output");
    assert_same(
        &o2.to_array_async(&s).unwrap(),
        &hx.t().mapv(|v| v * 0.5),
        "second output",
    );
    // Zero-size views launch nothing.
    let e = dx.strided().slice(s![3..3, ..;2]).unwrap();
    let got = add.call(&s, (e.clone(), e)).unwrap();
    assert_eq!(got.shape(), &[0, 20]);
    // Shapes that do not broadcast.
    assert!(add.call(&s, (dx.strided(), dy.strided())).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_of_strided_views() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let hi = Array2::from_shape_vec(
        (33, 47),
        rng.vec(33 * 47, |r| (r.next_u64() % 2001) as i32 - 1000),
    )
    .unwrap();
    let di = c.to_device(&hi).unwrap();
    let v = di.t().slice(s![..;-2, 1..;3]).unwrap();
    let hv = hi.t().slice(s![..;-2, 1..;3]).to_owned();
    assert_eq!(v.sum(&s).unwrap(), hv.sum());
    assert_eq!(v.max(&s).unwrap(), *hv.iter().max().unwrap());
    assert_eq!(v.min(&s).unwrap(), *hv.iter().min().unwrap());
    let maxv = *hv.iter().max().unwrap();
    let first = hv.iter().position(|&x| x == maxv).unwrap() as u64;
    assert_eq!(v.argmax(&s).unwrap(), first);
    let minv = *hv.iter().min().unwrap();
    let first = hv.iter().position(|&x| x == minv).unwrap() as u64;
    assert_eq!(v.argmin(&s).unwrap(), first);
    let sums = v.sum_axis(&s, 0, false).unwrap().to_array().unwrap();
    assert_eq!(
        sums.into_dimensionality::<ndarray::Ix1>().unwrap(),
        hv.sum_axis(Axis(0))
    );
    let sums = v.sum_axis(&s, 1, true).unwrap().to_array().unwrap();
    assert_eq!(
        sums.into_dimensionality::<ndarray::Ix2>().unwrap(),
        hv.sum_axis(Axis(1)).insert_axis(Axis(1))
    );
    // f32 with NaN and infinities: max propagates NaN as NumPy does; finite data compare exactly.
    let hf = host2(&mut rng, 20, 21);
    let df = c.to_device(&hf).unwrap();
    let vf = df.t();
    let m = vf.max(&s).unwrap();
    if hf.iter().any(|x| x.is_nan()) {
        assert!(m.is_nan());
    } else {
        assert_eq!(m, hf.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    }
    let fin = hf.mapv(|x| if x.is_finite() { x } else { 0.5 });
    let dfin = c.to_device(&fin).unwrap();
    let mx = dfin.t().slice(s![..;2, ..]).unwrap().max(&s).unwrap();
    assert_eq!(
        mx,
        fin.t()
            .slice(s![..;2, ..])
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max)
    );
    // The same reductions through the contiguous path agree.
    assert_eq!(di.sum(&s).unwrap(), hi.sum());
    // Empty views.
    let e = di.strided().slice(s![4..4, ..]).unwrap();
    assert_eq!(e.sum(&s).unwrap(), 0);
    assert!(e.max(&s).is_err());
    // Fortran arrays and mutable views reduce too.
    let f = c
        .to_device_layout(&hi.t().to_owned().reversed_axes())
        .unwrap();
    assert_eq!(f.sum(&s).unwrap(), hi.sum());
    let mut dm = c.to_device(&hi).unwrap();
    let vm: StridedViewMut<'_, i32, _> = dm.strided_mut().slice(s![.., ..;5]).unwrap();
    assert_eq!(vm.sum(&s).unwrap(), hi.slice(s![.., ..;5]).sum());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn zero_size_views_offsets_and_slicing_errors() {
    let c = ctx();
    let host = host2(&mut Rng::new(), 8, 9);
    let mut d = c.to_device(&host).unwrap();
    // Zero-size views copy nothing.
    let e = d.strided().slice(s![.., 9..;2]).unwrap();
    assert_eq!(e.shape(), &[8, 0]);
    assert_eq!(e.to_array().unwrap().shape(), &[8, 0]);
    let mut em = d.strided_mut().slice(s![2..2, ..;-1]).unwrap();
    em.copy_from_host(&Array2::<f32>::zeros((0, 9))).unwrap();
    em.copy_from_device(&c.zeros::<f32, _>((0, 9)).unwrap())
        .unwrap();
    assert_same(&d.to_array().unwrap(), &host, "untouched");
    // Views at offsets: device_ptr moves by the offset in bytes.
    let v = d.strided().slice(s![3.., 2..]).unwrap();
    assert_eq!(v.device_ptr(), d.device_ptr() + (3 * 9 + 2) * 4);
    let r = d.strided().slice(s![..;-1, ..;-1]).unwrap();
    assert_eq!(r.device_ptr(), d.device_ptr() + 71 * 4);
    assert_eq!(r.strides(), vec![-9, -1]);
    // Errors, never panics.
    usage(d.slice_axis(
        Axis(0),
        Slice {
            start: 0,
            end: None,
            step: 0,
        },
    ));
    usage(d.strided().slice(s![..9, ..]));
    usage(d.strided().slice(s![-9.., ..]));
    usage(d.strided().slice(s![.., 10..]));
    usage(d.strided().permuted_axes([1, 1]));
    usage(d.strided().invert_axis(Axis(2)));
    usage(d.slice_axis(Axis(2), Slice::from(..)));
    assert!(d.strided().index_axis(Axis(0), 8).is_err());
    assert!(d.strided().slice(s![.., 9]).is_err());
    assert_eq!(d.strided().into_dyn().shape(), &[8, 9]);
    let _ = &mut d;
}

/// Asserts a usage error (a wrong slice, axis or permutation), never a panic.
fn usage<T: std::fmt::Debug>(r: cudajit::Result<T>) {
    assert!(matches!(r, Err(Error::Usage(_))), "{r:?}")
}

/// Copies between layouts contiguous along different axes (C order into Fortran order and
/// back) go through the tiled transpose: every element of 1-, 2-, 4- and 8-byte types, 2-D and
/// 3-D (a batch axis), sizes that are no multiple of the 32×32 tiles, a single row.
#[test]
#[ignore = "needs a CUDA GPU"]
fn transposing_copies_through_tiles() {
    fn one<T: cudajit::AnyBitPattern + PartialEq + std::fmt::Debug + Copy>(
        c: &Context,
        f: impl Fn(usize) -> T,
    ) {
        for shape in [(1usize, 70usize, 45usize), (3, 33, 65), (2, 1, 40)] {
            let host = ndarray::Array3::from_shape_fn(shape, |(a, b, d)| {
                f((a * shape.1 + b) * shape.2 + d)
            });
            let src = c.to_device(&host).unwrap();
            let mut fo = c.alloc_f::<T, _>(shape).unwrap();
            fo.view_mut().copy_from_device(&src).unwrap();
            let mut back = c.alloc::<T, _>(shape).unwrap();
            back.strided_mut().copy_from_device(&fo).unwrap();
            assert_eq!(back.to_array().unwrap(), host, "{shape:?}");
            // 2-D: the first matrix.
            let h2 = host.index_axis(ndarray::Axis(0), 0).to_owned();
            let s2 = c.to_device(&h2).unwrap();
            let mut f2 = c.alloc_f::<T, _>(h2.dim()).unwrap();
            f2.view_mut().copy_from_device(&s2).unwrap();
            assert_eq!(f2.to_array().unwrap(), h2, "{shape:?} 2-D");
        }
    }
    let c = ctx();
    one::<u8>(&c, |i| (i * 7) as u8);
    one::<u16>(&c, |i| (i * 31) as u16);
    one::<f32>(&c, |i| i as f32 * 0.5 - 3.0);
    one::<f64>(&c, |i| i as f64 * 0.25 - 1e9);
}
