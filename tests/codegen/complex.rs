//! Complex numbers: kernels on `Complex<f32>`/`Complex<f64>` arrays and complex `Elementwise`
//! kernels pass ptxas; elements move as one 2-lane vector access.

use cudajit::codegen::{CExpr, Kernel, PtxOptions};
use cudajit::ops::{Elem, Elementwise};
use num_complex::Complex;

use crate::common::{check_ptx, compile_all, TARGETS};

#[test]
fn complex_kernels_pass_ptxas_with_vector_accesses() {
    let k = Kernel::<(&[Complex<f32>], &mut [Complex<f32>], &mut [Complex<f64>])>::build(
        "complex_k",
        |k, (a, out, out64)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let z = a.at(i);
                out.set(i, (z * z - z.conj()) / z.sqrt() + z.exp().ln());
                let w = CExpr::<f64>::new(z.re.cast::<f64>(), z.abs().cast::<f64>());
                out64.set(i, w / CExpr::new(1.0f64, z.arg().cast::<f64>()));
            });
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains("ld.global.nc.v2.f32"), "{ptx}");
    assert!(
        ptx.contains("st.global.v2.f32") && ptx.contains("st.global.v2.f64"),
        "{ptx}"
    );
}

#[test]
fn complex_elementwise_variants_pass_ptxas() {
    let f = Elementwise::<(Elem<Complex<f32>>, Elem<Complex<f32>>), CExpr<f32>>::new(
        "cmul",
        |(z, w)| z * w,
    )
    .unwrap();
    let g =
        Elementwise::<(Elem<Complex<f64>>,), CExpr<f64>>::new("csqrt", |(z,)| z.sqrt()).unwrap();
    for cc in TARGETS {
        for (name, ptx) in f.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3).unwrap() {
            check_ptx(&ptx, cc, &name);
        }
        for (name, ptx) in g.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3).unwrap() {
            check_ptx(&ptx, cc, &name);
        }
    }
}
