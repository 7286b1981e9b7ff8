//! Strided array parameters (`NdStrided`, `NdStridedMut`) and the strided Elementwise variants
//! with several outputs: compiled for sm_75 and sm_90 and checked by ptxas; the parameter lists
//! they lower to; misuse errors.

use cudajit::codegen::{Expr, Kernel, NdRef, NdStrided, NdStridedMut, PtxOptions};
use cudajit::ops::{Elem, Elementwise, Scalar};
use cudajit::Error;

use crate::common::{check_ptx, compile_all, TARGETS};

/// The number of kernel parameters in the PTX entry's signature.
fn params(ptx: &str) -> usize {
    let start = ptx.find(".entry").expect("an entry");
    let sig = &ptx[start..start + ptx[start..].find(')').unwrap()];
    sig.matches(".param").count()
}

#[test]
fn strided_parameters_of_every_rank_compile() {
    let k1 = Kernel::<(NdStrided<f32, 1>, NdStridedMut<f32, 1>)>::build("sp1", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| y.set(i, x.at(i) * 2.0f32));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k1);
    assert_eq!(params(&ptx), 2 * (3 + 2), "{ptx}");
    let k2 = Kernel::<(NdStrided<f64, 2>, NdStridedMut<f64, 2>)>::build("sp2", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (r, c) = (i / x.dim(1), i % x.dim(1));
            y.set2(c, r, x.at2(r, c) + y.as_read_only().at2(c, r));
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k2);
    assert_eq!(params(&ptx), 2 * (3 + 4), "{ptx}");
    // Each index is scaled by its stride: one multiply per dimension and access.
    assert!(
        ptx.contains("mul.lo.s64") || ptx.contains("mad.lo.s64"),
        "{ptx}"
    );
    let k3 = Kernel::<(NdStrided<u8, 3>, NdStridedMut<i32, 3>)>::build("sp3", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (a, b, c) = (
                i / (x.dim(1) * x.dim(2)),
                (i / x.dim(2)) % x.dim(1),
                i % x.dim(2),
            );
            y.set3(
                a,
                b,
                c,
                x.at3(a, b, c).cast::<i32>() - x.stride(2).cast::<i32>(),
            );
            y.set_nd(
                [a.cast(), b.cast(), c.cast()],
                x.at_nd([a.cast(), b.cast(), c.cast()]).cast::<i32>(),
            );
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k3);
    assert_eq!(params(&ptx), 2 * (3 + 6), "{ptx}");
}

#[test]
fn contiguous_parameters_take_no_strides() {
    let k = Kernel::<(NdRef<f32, 2>, NdStridedMut<f32, 2>)>::build("mixed", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (r, c) = (i / x.dim(1), i % x.dim(1));
            y.set2(r, c, x.at2(r, c));
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert_eq!(params(&ptx), (1 + 2) + (3 + 4), "{ptx}");
}

#[test]
fn strided_misuse_is_a_build_error() {
    let e = Kernel::<(NdStrided<f32, 3>, NdStridedMut<f32, 3>)>::build("bad_rank", |k, (x, y)| {
        let i = k.grid1();
        y.set2(i, i, x.at2(i, i));
    });
    match e {
        Err(e @ Error::Build { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("2 indices given for a 3-D strided array"),
                "{message}"
            )
        }
        other => panic!("expected a build error, got {:?}", other.map(|_| ())),
    }
    let e = Kernel::<(NdStrided<f32, 2>, NdStridedMut<f32, 2>)>::build("bad_dim", |k, (x, y)| {
        let i = k.grid1();
        y.set2(i, i, x.at2(i, x.dim(2)));
    });
    assert!(matches!(e, Err(Error::Build { .. })));
}

#[test]
fn strided_elementwise_variants_with_several_outputs() {
    let ew = Elementwise::<(Elem<f32>, Elem<f64>), (Expr<f32>, Expr<f64>)>::new(
        "two_strided",
        |(x, y)| (x * 2.0f32, y + x.cast::<f64>()),
    )
    .unwrap();
    for cc in TARGETS {
        let vs = ew.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3).unwrap();
        for (name, ptx) in &vs {
            check_ptx(ptx, cc, name);
        }
        let (_, r2) = vs.iter().find(|(n, _)| n.ends_with("strided2")).unwrap();
        // Two inputs and two outputs, each with an offset and two strides, after the shape.
        assert_eq!(params(r2), 4 * 2 + 2 + 4 * 3, "{r2}");
    }
    // The identity copies and fills (the kinds the crate's strided copies and fills launch)
    // for every word size.
    macro_rules! copy {
        ($($t:ty),*) => {$(
            let ew = Elementwise::<(Elem<$t>,), Expr<$t>>::new("copy_t", |(x,)| x).unwrap();
            let fill = Elementwise::<(Scalar<$t>,), Expr<$t>>::new("fill_t", |(x,)| x).unwrap();
            for cc in TARGETS {
                for (name, ptx) in ew.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 4).unwrap() {
                    check_ptx(&ptx, cc, &name);
                }
                for (name, ptx) in fill.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 4).unwrap() {
                    check_ptx(&ptx, cc, &name);
                }
            }
        )*};
    }
    copy!(u8, u16, u32, u64);
}
