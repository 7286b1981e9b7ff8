//! `Elementwise::call` outputs take the inputs' dimension type (the annotations below are the
//! test: they compile only with it): `Ix1` in, `Ix1` out (also in generic code over `D`);
//! fixed ranks mixed give the highest, as broadcasting; an `IxDyn` input gives `IxDyn`. Values
//! checked against ndarray's own arithmetic on inputs with special values.

use cudajit::codegen::Expr;
use cudajit::ops::{Elem, Elementwise, Scalar};
use cudajit::prelude::*;
use ndarray::{Array1, Array2, Dimension, Ix1, Ix2, IxDyn};

use crate::common::{ctx, special_f32, Rng};

type Add = Elementwise<(Elem<f32>, Elem<f32>), Expr<f32>>;

/// Generic over the dimension type: the output has the inputs' `D`.
fn add_same<D: Dimension>(
    s: &Stream,
    f: &Add,
    a: &DeviceArray<f32, D>,
    b: &DeviceArray<f32, D>,
) -> DeviceArray<f32, D> {
    f.call(s, (a, b)).unwrap()
}

fn same_bits(got: &[f32], want: impl IntoIterator<Item = f32>, what: &str) {
    let want: Vec<f32> = want.into_iter().collect();
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
            "{what} i={i}: {g} vs {w}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_outputs_keep_the_inputs_dimension_type() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let add = Add::new("dims_add", |(a, b)| a + b).unwrap();
    let n = 1031usize;
    let x = Array1::from(special_f32(&mut rng, n));
    let y = Array1::from(special_f32(&mut rng, n));
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());

    // Ix1 with Ix1: Ix1, directly and through generic code.
    let r: DeviceArray<f32, Ix1> = add.call(&s, (&dx, &dy)).unwrap();
    assert_eq!(r.dim(), &Ix1(n));
    same_bits(
        &r.to_vec_async(&s).unwrap(),
        (&x + &y).iter().copied(),
        "ix1",
    );
    let r: DeviceArray<f32, Ix1> = add_same(&s, &add, &dx, &dy);
    same_bits(
        &r.to_vec_async(&s).unwrap(),
        (&x + &y).iter().copied(),
        "generic",
    );

    // With a scalar and two outputs: both Ix1.
    let two = Elementwise::<(Elem<f32>, Scalar<f32>), (Expr<f32>, Expr<bool>)>::new(
        "dims_two",
        |(a, k)| (a * k, a.gt(k)),
    )
    .unwrap();
    let (p, q): (DeviceArray<f32, Ix1>, DeviceArray<bool, Ix1>) =
        two.call(&s, (&dx, 1.5f32)).unwrap();
    same_bits(
        &p.to_vec_async(&s).unwrap(),
        x.iter().map(|v| v * 1.5),
        "scaled",
    );
    let want: Vec<bool> = x.iter().map(|&v| v > 1.5).collect();
    assert_eq!(q.to_vec_async(&s).unwrap(), want);

    // Ix2 with an Ix1 row (broadcast): Ix2; also through a transposed (strided) view.
    let (rows, cols) = (37usize, 29usize);
    let m = Array2::from_shape_vec((rows, cols), special_f32(&mut rng, rows * cols)).unwrap();
    let row = Array1::from(special_f32(&mut rng, cols));
    let (dm, drow) = (s.to_device(&m).unwrap(), s.to_device(&row).unwrap());
    let r: DeviceArray<f32, Ix2> = add.call(&s, (&dm, &drow)).unwrap();
    assert_eq!(r.shape(), &[rows, cols]);
    same_bits(
        &r.to_vec_async(&s).unwrap(),
        (&m + &row).iter().copied(),
        "ix2+ix1",
    );
    let r: DeviceArray<f32, Ix2> = add.call(&s, (&drow, &dm)).unwrap();
    same_bits(
        &r.to_vec_async(&s).unwrap(),
        (&row + &m).iter().copied(),
        "ix1+ix2",
    );
    let col = Array1::from(special_f32(&mut rng, rows));
    let dcol = s.to_device(&col).unwrap();
    let r: DeviceArray<f32, Ix2> = add.call(&s, (dm.strided().t(), &dcol)).unwrap();
    assert_eq!(r.shape(), &[cols, rows]);
    let want = &m.t() + &col;
    same_bits(&r.to_vec_async(&s).unwrap(), want.iter().copied(), "t+col");

    // An IxDyn input: IxDyn.
    let dd = s.to_device(&m.clone().into_dyn()).unwrap();
    let r: DeviceArray<f32, IxDyn> = add.call(&s, (&dd, &drow)).unwrap();
    assert_eq!(r.shape(), &[rows, cols]);
    same_bits(
        &r.to_vec_async(&s).unwrap(),
        (&m + &row).iter().copied(),
        "dyn",
    );
}
