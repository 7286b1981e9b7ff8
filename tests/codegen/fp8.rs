//! The 8-bit floats in PTX: casts to and from every scalar type compile to PTX's `cvt` to and
//! from `e4m3x2`/`e5m2x2` (an f64 rounded to odd in f32 first) for sm_89 and sm_90 and pass
//! ptxas; comparisons compare the values as f32; an older target is a clear error; and
//! arithmetic on them does not compile (`cudajit::codegen::Scalar`'s doctest).

use cudajit::codegen::{Kernel, PtxOptions};
use cudajit::{bf16, f16, F8E4M3, F8E5M2};

use crate::common::check_ptx;

/// The kernel's parameters.
type Casts = (
    &'static [F8E4M3],
    &'static [F8E5M2],
    &'static [f32],
    &'static [f64],
    &'static [f16],
    &'static [i32],
    &'static mut [F8E4M3],
    &'static mut [F8E5M2],
    &'static mut [f64],
);

/// A kernel that casts e4m3 and e5m2 to f32, f64, f16, bf16, i32 and u8, and those to
/// e4m3 and e5m2, and compares two e4m3s.
fn casts() -> Kernel<Casts> {
    Kernel::<Casts>::build("fp8_casts", |k, (a, b, x, y, h, i, oa, ob, o)| {
        let t = k.grid1();
        let (ea, eb) = (a.at(t), b.at(t));
        let sum = ea.cast::<f32>().cast::<f64>()
            + eb.cast::<f64>()
            + ea.cast::<f16>().cast::<f64>()
            + eb.cast::<bf16>().cast::<f64>()
            + ea.cast::<i32>().cast::<f64>()
            + eb.cast::<u8>().cast::<f64>()
            + ea.lt(a.at(t + 1u64)).cast::<f64>();
        o.set(t, sum);
        oa.set(t, x.at(t).cast::<F8E4M3>());
        ob.set(t, y.at(t).cast::<F8E5M2>());
        oa.set(t + 1u64, h.at(t).cast::<F8E4M3>());
        ob.set(t + 1u64, i.at(t).cast::<F8E5M2>());
        oa.set(t + 2u64, eb.cast::<F8E4M3>());
    })
    .unwrap()
}

#[test]
fn casts_compile_to_cvt_for_sm89_and_sm90() {
    let k = casts();
    for cc in [(8, 9), (9, 0)] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        check_ptx(&ptx, cc, k.name());
        // e4m3 decodes: a (for f32, f16, i32, and twice for the comparison) through cvt; e5m2
        // by a shift.
        assert!(ptx.contains("cvt.rn.f16x2.e4m3x2"), "{ptx}");
        assert!(!ptx.contains("cvt.rn.f16x2.e5m2x2"), "{ptx}");
        // Encodes: f32, f16 and e5m2 to e4m3; f64 (rounded to odd first) and i32 to e5m2.
        assert_eq!(
            ptx.matches("cvt.rn.satfinite.e4m3x2.f32").count(),
            3,
            "{ptx}"
        );
        assert_eq!(
            ptx.matches("cvt.rn.satfinite.e5m2x2.f32").count(),
            2,
            "{ptx}"
        );
        assert!(ptx.contains("cvt.rz.f32.f64"), "{ptx}");
    }
    let err = k.compile_ptx(&PtxOptions::for_cc(8, 0)).unwrap_err();
    assert!(
        err.to_string().contains("compute capability 8.9 or later")
            && err.to_string().contains("sm_80"),
        "{err}"
    );
}

/// docs/GUIDE.md's fp8 kernel is tests/gpu/fp8.rs's (which runs it and checks it).
#[test]
fn documented_quantisation_is_the_gpu_test() {
    crate::hopper::guide_block_is_in(
        "8-bit floats (fp8)",
        include_str!("../gpu/fp8.rs"),
        "tests/gpu/fp8.rs",
    );
}
