//! Random-number kernels: Numba's xoroshiro128+ draws and Philox4x32-10 (also inside an
//! elementwise kernel with the element index) compile and pass ptxas.

use cudajit::codegen::{Expr, Kernel, PtxOptions};
use cudajit::ops::{Elem, Elementwise, Index, Scalar};
use cudajit::random::{Philox, Xoroshiro128pStates};

use crate::common::{check_ptx, compile_all, TARGETS};

#[test]
fn xoroshiro_draws_and_jumps_pass_ptxas() {
    let k = Kernel::<(&mut Xoroshiro128pStates, &mut [f32], &mut [f64])>::build(
        "xoro_all",
        |k, (rng, a, b)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                a.set(i, rng.uniform_f32(i) + rng.normal_f32(i));
                rng.jump(i);
                b.set(
                    i,
                    rng.uniform_f64(i) + rng.normal_f64(i) + rng.next_u64(i).cast::<f64>(),
                );
            });
        },
    )
    .unwrap();
    let (ptx, _) = compile_all(&k);
    // The state is two u64 words per generator, read and written in place.
    assert!(
        ptx.contains("ld.global.u64") || ptx.contains("ld.global.v2.u64"),
        "{ptx}"
    );
}

#[test]
fn philox_in_a_kernel_and_an_elementwise_kernel_pass_ptxas() {
    let k = Kernel::<(u64, &mut [u32], &mut [f32])>::build("philox_k", |k, (seed, w, u)| {
        let i = k.grid1();
        k.if_(i.lt(u.len()), |_| {
            let p = Philox::new(seed);
            w.set(i, p.words(0u64, i)[3]);
            u.set(i, p.uniform4_f32(1u64, i)[2] + p.normal2_f32(2u64, i)[0]);
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    // The 32x32 -> 64-bit products of the rounds.
    assert!(
        ptx.contains("mul.wide.u32") || ptx.contains("mul.hi.u32"),
        "{ptx}"
    );
    let noisy = Elementwise::<(Elem<f32>, Index, Scalar<u64>), Expr<f32>>::new(
        "philox_noise",
        |(x, i, seed)| x + Philox::new(seed).uniform_f32(i),
    )
    .unwrap();
    for cc in TARGETS {
        for (name, ptx) in noisy
            .variants_ptx(&PtxOptions::for_cc(cc.0, cc.1), 3)
            .unwrap()
        {
            check_ptx(&ptx, cc, &name);
        }
    }
}
