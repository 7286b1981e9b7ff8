//! FMA contraction on the device (docs/GUIDE.md, "FMA contraction"): with contraction on, the
//! builder's `a*b + c`, `c + a*b`, `a*b - c`, `c - a*b` are one fused multiply-add, rounded once
//! (the host model: Rust's `mul_add`); with it off, each multiply and add rounds on its own
//! (the host model: Rust's `*`, `+`, `-`). Random inputs rich in special values, outputs
//! poisoned first, every result compared bit for bit (NaN as NaN). Also run on the simulator.

use cudajit::codegen::{Kernel, PtxOptions};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::gen::Gen;

/// Results per element: the four shapes, then two products added (the left one fused).
const OUTS: usize = 5;

macro_rules! contract_test {
    ($name:ident, $t:ident, $poison:expr) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            let c = ctx();
            let s = c.new_stream().unwrap();
            let mut rng = Rng::new();
            let n = 1 << 14;
            let gen = |rng: &mut Rng| rng.vec(n, <$t as Gen>::gen);
            let (a, b, cc) = (gen(&mut rng), gen(&mut rng), gen(&mut rng));
            let (da, db, dc) = (
                s.to_device(&a).unwrap(),
                s.to_device(&b).unwrap(),
                s.to_device(&cc).unwrap(),
            );
            type P = (
                &'static [$t],
                &'static [$t],
                &'static [$t],
                &'static mut [$t],
            );
            for contract in [true, false] {
                let opts = PtxOptions::default().contract(contract);
                let name = format!("contract_{}_{contract}", stringify!($t));
                let k = Kernel::<P>::build_with(&name, opts, |k, (a, b, c, out)| {
                    let i = k.grid1();
                    k.if_(i.lt(a.len()), |_| {
                        let (x, y, z) = (a.at(i), b.at(i), c.at(i));
                        let o = i * OUTS as u64;
                        out.set(o, x * y + z);
                        out.set(o + 1u64, z + x * y);
                        out.set(o + 2u64, x * y - z);
                        out.set(o + 3u64, z - x * y);
                        out.set(o + 4u64, x * y + z * x);
                    });
                })
                .unwrap();
                let poison = <$t>::from_bits($poison);
                let mut out = s.to_device(&vec![poison; n * OUTS]).unwrap();
                k.launch(
                    &s,
                    LaunchConfig::for_num_elems(n, 128).unwrap(),
                    (&da, &db, &dc, &mut out),
                )
                .unwrap();
                let got = out.to_vec_async(&s).unwrap();
                for i in 0..n {
                    let (x, y, z) = (a[i], b[i], cc[i]);
                    let want: [$t; OUTS] = if contract {
                        [
                            x.mul_add(y, z),
                            x.mul_add(y, z),
                            x.mul_add(y, -z),
                            (-x).mul_add(y, z),
                            x.mul_add(y, z * x),
                        ]
                    } else {
                        [x * y + z, z + x * y, x * y - z, z - x * y, x * y + z * x]
                    };
                    for (j, w) in want.into_iter().enumerate() {
                        let g = got[i * OUTS + j];
                        assert!(
                            (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
                            "contract {contract}, element {i}, result {j}: a = {x:e}, b = {y:e}, \
                             c = {z:e}: got {g:e} ({:#x}), want {w:e} ({:#x})",
                            g.to_bits(),
                            w.to_bits()
                        );
                    }
                }
            }
        }
    };
}

contract_test!(
    contraction_f32_matches_mul_add_and_off_rounds_twice,
    f32,
    0x0000_7f3d
);
contract_test!(
    contraction_f64_matches_mul_add_and_off_rounds_twice,
    f64,
    0x0000_0000_7f3d_5eed
);

/// Values where one rounding and two differ, so that the test above cannot pass with either
/// setting computing the other's way.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_and_unfused_differ_where_they_must() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; rounded twice it is 0.
    let a = 1.0f32 + 2f32.powi(-12);
    let z = -(1.0f32 + 2f32.powi(-11));
    let (da, dz) = (s.to_device(&[a]).unwrap(), s.to_device(&[z]).unwrap());
    type P = (&'static [f32], &'static [f32], &'static mut [f32]);
    for (contract, want) in [(true, 2f32.powi(-24)), (false, 0.0)] {
        let k = Kernel::<P>::build_with(
            &format!("differ_{contract}"),
            PtxOptions::default().contract(contract),
            |k, (a, z, out)| {
                k.if_(k.grid1().eq(0u64), |_| {
                    out.set(0u64, a.at(0u64) * a.at(0u64) + z.at(0u64))
                });
            },
        )
        .unwrap();
        let mut out = s.to_device(&[f32::from_bits(0x0000_7f3d)]).unwrap();
        k.launch(&s, LaunchConfig::new(1, 32), (&da, &dz, &mut out))
            .unwrap();
        assert_eq!(
            out.to_vec_async(&s).unwrap()[0].to_bits(),
            want.to_bits(),
            "contract {contract}"
        );
    }
}
