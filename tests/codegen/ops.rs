//! Elementwise kernels: every variant compiles and passes ptxas; the fast path uses 16-byte
//! vector accesses.

use cudajit::codegen::{Expr, PtxOptions};
use cudajit::ops::{Elem, Elementwise, Scalar};

use crate::common::{check_ptx, TARGETS};

fn check_all<I: cudajit::ops::EwInputs, O: cudajit::ops::EwOutputs>(
    ew: &Elementwise<I, O>,
) -> Vec<(String, String)> {
    let mut last = Vec::new();
    for cc in TARGETS {
        last = ew.variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3).unwrap();
        for (name, ptx) in &last {
            check_ptx(ptx, cc, name);
        }
    }
    last
}

#[test]
fn axpy_variants_vectorise() {
    let axpy =
        Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), _>::new("axpy", |(a, x, y)| a * x + y)
            .unwrap();
    let v = check_all(&axpy);
    let (_, v4) = &v[2];
    assert!(
        v4.contains("ld.global.nc.v4.f32") && v4.contains("st.global.v4.f32"),
        "{v4}"
    );
    let (_, strided) = &v[3];
    assert!(!strided.contains(".v4."), "{strided}");
    // Suffix broadcasting (a row added to every row of a matrix) keeps vector accesses.
    let (name, suffix4) = v.last().unwrap();
    assert!(
        name.ends_with("suffix_v4") && suffix4.contains("ld.global.nc.v4.f32"),
        "{name}: {suffix4}"
    );
}

#[test]
fn fused_chain_and_mixed_types_and_two_outputs() {
    let chain = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("chain", |(x, y)| {
        (x * x + y * y).sqrt() * 0.5 + 1.0
    })
    .unwrap();
    check_all(&chain);
    let mixed = Elementwise::<(Elem<f64>, Elem<f32>, Scalar<i32>), _>::new("mixed", |(a, b, n)| {
        (
            a * b.cast::<f64>() + n.cast::<f64>(),
            (a.cast::<f32>() - b).lt(0.0f32),
        )
    })
    .unwrap();
    let v = check_all(&mixed);
    // A bool output disables vector accesses (1-byte elements): only the scalar contiguous
    // variant and the strided ones exist.
    assert_eq!(v.len(), 1 + 3 + 1);
    assert!(!v[0].1.contains(".v2."));
    let ints =
        Elementwise::<(Elem<u64>, Elem<u64>), Expr<u64>>::new("xor_u64", |(a, b)| a ^ b).unwrap();
    let v = check_all(&ints);
    assert!(v[1].1.contains("ld.global.nc.v2.u64"), "{}", v[1].1);
}

#[test]
fn builder_misuse_in_an_elementwise_closure_is_reported_at_new() {
    let e = Elementwise::<(Elem<f64>,), Expr<f64>>::new("bad", |(x,)| {
        let _ = x.bitcast::<u32>();
        x
    });
    assert!(e.is_err());
    assert!(Elementwise::<(Elem<f64>,), Expr<f64>>::new("9bad", |(x,)| x).is_err());
}

#[test]
fn reduction_kernels_compile_and_vectorise() {
    use cudajit::ops::Reduction;
    let sum = Reduction::<f32, f32, f32>::new("sum_t", |x| x, |a, b| a + b, 0.0).unwrap();
    let l2 = Reduction::<f64, f64, f64>::new("l2_t", |x| x * x, |a, b| a + b, 0.0)
        .unwrap()
        .post(|s, _| s.sqrt());
    let any = Reduction::<bool, bool, bool>::new("any_t", |x| x, |a, b| a.or(b), false).unwrap();
    let mean = Reduction::<i32, f64, f64>::new("mean_t", |x| x.cast::<f64>(), |a, b| a + b, 0.0)
        .unwrap()
        .post(|s, n| s / n.cast::<f64>());
    for cc in TARGETS {
        let opts = PtxOptions::for_cc(cc.0, cc.1);
        for (name, ptx) in sum.variants_ptx(&opts).unwrap() {
            check_ptx(&ptx, cc, &name);
            if name.ends_with("full_vec") {
                assert!(ptx.contains("ld.global.nc.v4.f32"), "{ptx}");
                // One kernel: the last block, counted on a wrapping counter after a fence,
                // combines the partials.
                assert!(ptx.contains("atom.global.inc.u32"), "{ptx}");
                assert!(ptx.contains("membar.gl"), "{ptx}");
            }
        }
        for largest in [false, true] {
            for (name, ptx) in cudajit::ops::arg_variants_ptx::<f32>(largest, &opts)
                .unwrap()
                .into_iter()
                .chain(cudajit::ops::arg_variants_ptx::<f64>(largest, &opts).unwrap())
                .chain(cudajit::ops::arg_variants_ptx::<i32>(largest, &opts).unwrap())
            {
                check_ptx(&ptx, cc, &name);
                if name == "argmax_f32_full_vec" {
                    assert!(ptx.contains("ld.global.nc.v4.f32"), "{ptx}");
                    assert!(ptx.contains("atom.global.inc.u32"), "{ptx}");
                }
            }
        }
        for r in [
            l2.variants_ptx(&opts),
            any.variants_ptx(&opts),
            mean.variants_ptx(&opts),
        ] {
            for (name, ptx) in r.unwrap() {
                check_ptx(&ptx, cc, &name);
            }
        }
    }
}

#[test]
fn scan_kernels_compile_and_vectorise() {
    use cudajit::codegen::select;
    use cudajit::ops::Scan;
    let sum = Scan::<f32>::new("cumsum_t", |a, b| a + b, -0.0).unwrap();
    let sum64 = Scan::<i64>::new("cumsum64_t", |a, b| a + b, 0).unwrap();
    let max =
        Scan::<f64>::new("cummax_t", |a, b| select(a.gt(b), a, b), f64::NEG_INFINITY).unwrap();
    for cc in TARGETS {
        let opts = PtxOptions::for_cc(cc.0, cc.1);
        for (name, ptx) in sum.variants_ptx(&opts).unwrap() {
            let report = check_ptx(&ptx, cc, &name);
            if name.ends_with("tiles_vec") {
                assert!(ptx.contains("ld.global.nc.v4.f32"), "{ptx}");
                assert!(ptx.contains("st.global.v4.f32"), "{ptx}");
                // The tile from the block index (no ticket unless CUDAJIT_SCAN_ORDER=ticket),
                // the descriptors (one 64-bit word: value and flag), the look-back.
                assert!(ptx.contains("%ctaid.x"), "{ptx}");
                assert!(ptx.contains("atom.global.exch.b64"), "{ptx}");
                assert!(
                    ptx.contains("ld.volatile.global.u64")
                        || ptx.contains("ld.relaxed.sys.global.u64"),
                    "{ptx}"
                );
                assert_eq!(report.spill_bytes, 0, "{name}: {}", report.log);
            }
        }
        for (name, ptx) in sum64
            .variants_ptx(&opts)
            .unwrap()
            .into_iter()
            .chain(max.variants_ptx(&opts).unwrap())
        {
            check_ptx(&ptx, cc, &name);
            if name.ends_with("tiles_vec") {
                assert!(ptx.contains("ld.global.nc.v2"), "{ptx}");
                // 8-byte values beside the flags, behind fences.
                assert!(
                    ptx.contains("membar.gl") || ptx.contains("fence.sc.gpu"),
                    "{ptx}"
                );
            }
        }
    }
}
