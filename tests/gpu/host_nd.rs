//! n-D pinned, mapped and managed host arrays (Numba's `pinned_array` / `mapped_array` /
//! `managed_array`): zero-filled, ndarray views of the host side, taken by kernels as n-D and
//! 1-D arrays; bad shapes refused.

use cudajit::codegen::{Kernel, NdMut, NdRef};
use cudajit::prelude::*;
use ndarray::{Array2, Array3, IxDyn};

use crate::common::{ctx, Rng};

fn scale2() -> Kernel<(NdRef<f32, 2>, NdMut<f32, 2>)> {
    Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("host_nd_scale2", |k, (a, b)| {
        let [j, i] = k.grid2();
        k.if_(i.lt(a.dim(0)).and(j.lt(a.dim(1))), |_| {
            b.set2(i, j, a.at2(i, j) * 3.0f32 - 1.0f32)
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_nd_kernels_take_mapped_and_managed_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = scale2();
    let mut rng = Rng::new();
    for (rows, cols) in [(1usize, 1usize), (37, 70), (64, 33)] {
        let a = Array2::from_shape_fn((rows, cols), |_| rng.f32() * 100.0 - 50.0);
        // FMA contraction is on by default: `a * 3 - 1` is one fused multiply-add.
        let want = a.mapv(|v| v.mul_add(3.0, -1.0));
        let cfg = LaunchConfig::new(
            (cols.div_ceil(16) as u32, rows.div_ceil(16) as u32),
            (16, 16),
        );
        let mut mapped = c.mapped_array::<f32, _>((rows, cols)).unwrap();
        let mut managed = c.managed_array::<f32, _>([rows, cols]).unwrap();
        assert_eq!(mapped.shape(), &[rows, cols]);
        assert_eq!(managed.shape(), &[rows, cols]);
        assert!(mapped.as_array_view().unwrap().iter().all(|&v| v == 0.0));
        assert!(managed.as_array_view().unwrap().iter().all(|&v| v == 0.0));
        // Mapped in, managed out.
        mapped.as_array_view_mut().unwrap().assign(&a);
        k.launch(&s, cfg, (&mapped, &mut managed)).unwrap();
        assert_eq!(managed.as_array_view().unwrap(), want, "{rows}x{cols}");
        // Managed in, mapped out (read-only input untouched).
        let mut out = c.mapped_array::<f32, _>((rows, cols)).unwrap();
        managed.as_array_view_mut().unwrap().assign(&a);
        k.launch(&s, cfg, (&managed, &mut out)).unwrap();
        assert_eq!(out.as_array_view().unwrap(), want);
        assert_eq!(managed.as_array_view().unwrap(), a);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_nd_one_d_and_pinned_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    // A 1-D mapped array is taken where a slice is.
    let n = 1000usize;
    let k = Kernel::<(&[u32], &mut [u32])>::build("host_nd_xor", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| y.set(i, x.at(i) ^ 0x5a5a_5a5au32));
    })
    .unwrap();
    let x: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let mut mx = c.mapped_array::<u32, _>(n).unwrap();
    mx.as_array_view_mut()
        .unwrap()
        .iter_mut()
        .zip(&x)
        .for_each(|(d, s)| *d = *s);
    let mut my = c.managed_array::<u32, _>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    k.launch(&s, cfg, (&mx, &mut my)).unwrap();
    let want: Vec<u32> = x.iter().map(|v| v ^ 0x5a5a_5a5a).collect();
    assert_eq!(my.as_slice().unwrap(), &want[..]);
    // A 3-D pinned array (dynamic shape) round-trips through a device array in C order.
    let shape = [3usize, 5, 7];
    let a = Array3::from_shape_fn((3, 5, 7), |_| rng.f64());
    let mut p = c.pinned_array::<f64, _>(&shape[..]).unwrap();
    assert_eq!(p.dim(), &IxDyn(&shape));
    assert!(p.as_array_view().unwrap().iter().all(|&v| v == 0.0));
    p.as_array_view_mut()
        .unwrap()
        .iter_mut()
        .zip(a.iter())
        .for_each(|(d, s)| *d = *s);
    let mut d = c.zeros::<f64, _>((3, 5, 7)).unwrap();
    p.copy_to_device_async(&mut d, &s).unwrap();
    assert_eq!(d.to_array_async(&s).unwrap(), a);
    let mut back = c.pinned_array::<f64, _>((3, 5, 7)).unwrap();
    back.copy_from_device_async(&d, &s).unwrap();
    assert_eq!(back.as_array_view().unwrap(), a);
    // A pinned slice of a row of the 3-D array.
    let mut row = c.zeros::<f64, _>(7).unwrap();
    back.slice(7..14)
        .unwrap()
        .copy_to_device_async(&mut row, &s)
        .unwrap();
    let want_row: Vec<f64> = a.slice(ndarray::s![0, 1, ..]).to_vec();
    assert_eq!(row.to_vec_async(&s).unwrap(), want_row);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_nd_bad_shapes_are_errors() {
    let c = ctx();
    let check = |e: cudajit::Error, what: &str| {
        assert!(e.to_string().contains(what), "{e}");
    };
    check(
        c.pinned_array::<f32, _>((0, 3)).err().unwrap(),
        "no elements",
    );
    check(c.mapped_array::<f32, _>(0).err().unwrap(), "no elements");
    check(
        c.managed_array::<u8, _>(&[4usize, 0, 2][..]).err().unwrap(),
        "no elements",
    );
    check(
        c.pinned_array::<u8, _>((usize::MAX, 2)).err().unwrap(),
        "too large",
    );
    check(
        c.mapped_array::<f64, _>(usize::MAX / 4).err().unwrap(),
        "too large",
    );
    check(
        c.managed_array::<f32, _>((1usize << 40, 1usize << 40))
            .err()
            .unwrap(),
        "too large",
    );
}
