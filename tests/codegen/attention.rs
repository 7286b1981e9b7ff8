//! The attention example's kernel in PTX: every variant (f16/bf16, head dim 64/128, causal or
//! not) compiles for sm_90a and passes ptxas without spills and without ptxas serialising the
//! wgmmas (which it does, with a warning, when it cannot prove the asynchronous registers
//! safe); `exp2_approx` is one `ex2.approx.ftz.f32`; `frag_a` misuse is a build error.

#[path = "../../examples/attention/kernel.rs"]
#[allow(dead_code)]
mod kernel;

use cudajit::codegen::{Kernel, PtxOptions, WgmmaAcc};
use cudajit::{bf16, f16};
use kernel::{Attention, AttentionElem};

use crate::common::check_ptx_arch;

fn variants<T: AttentionElem>() {
    for d in [64, 128] {
        for causal in [false, true] {
            let att = Attention::<T>::new(d, causal).unwrap();
            let k = att.kernel();
            let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
            assert!(ptx.contains(".target sm_90a"), "{ptx}");
            // Per key tile: d/16 wgmmas for S = Q·Kᵀ and 8 (A from registers) for O += P·V,
            // in the unmasked loop, the masked loop, and the first and last tiles.
            assert!(
                ptx.contains("wgmma.mma_async.sync.aligned.m64n128k16.f32"),
                "{ptx}"
            );
            assert!(ptx.contains(&format!("wgmma.mma_async.sync.aligned.m64n{d}k16.f32")));
            assert!(ptx.contains("ex2.approx.ftz.f32"));
            // P is rounded and packed two columns per instruction.
            let cvt = if T::NAME == "bf16" {
                "cvt.rn.bf16x2.f32"
            } else {
                "cvt.rn.f16x2.f32"
            };
            assert!(ptx.contains(cvt), "{ptx}");
            let rep = check_ptx_arch(&ptx, "sm_90a", k.name(), &[]);
            assert_eq!(rep.spill_bytes, 0, "{}", rep.log);
            assert!(!rep.log.contains("serialized"), "{}", rep.log);
        }
    }
}

#[test]
fn attention_f16_compiles_for_sm90a() {
    variants::<f16>();
}

#[test]
fn attention_bf16_compiles_for_sm90a() {
    variants::<bf16>();
}

#[test]
fn exp2_approx_is_one_instruction() {
    let k = Kernel::<(&[f32], &mut [f32])>::build("ex2", |k, (a, o)| {
        let i = k.grid1();
        o.set(i, a.at(i).exp2_approx());
    })
    .unwrap();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(8, 0)).unwrap();
    assert_eq!(ptx.matches("ex2.approx.ftz.f32").count(), 1, "{ptx}");
    assert!(!ptx.contains("__nv_"), "{ptx}");
}

#[test]
fn frag_a_misuse_is_a_build_error() {
    let err = Kernel::<(&mut [f32],)>::build("tf32_frag", |k, (d,)| {
        let _ = k;
        let a = WgmmaAcc::zeros(64).frag_a::<f32>(0);
        d.set(0u32, a.regs()[0].bitcast::<f32>());
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("f16 or bf16"), "{err}");
    let err = Kernel::<(&mut [f32],)>::build("past_n", |k, (d,)| {
        let _ = k;
        let a = WgmmaAcc::zeros(64).frag_a::<bf16>(4);
        d.set(0u32, a.regs()[0].bitcast::<f32>());
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("chunks 0..4"), "{err}");
}
