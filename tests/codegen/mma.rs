//! The tensor cores' MMA in PTX: every input type compiles to its `mma.sync` for sm_80 and
//! sm_90 and passes ptxas; tf32 inputs are rounded with `cvt.rna.tf32.f32`; an older target is
//! a clear error. And the tensor-core code that README.md and docs/GUIDE.md show is
//! examples/tensor_cores.rs's (which runs it).

use cudajit::codegen::{FragA, FragB, FragC, Kernel, MmaInput, PtxOptions};
use cudajit::{bf16, f16, Error};

use crate::common::check_ptx;

/// A kernel of one MMA: A, B and D.
type OneMma<T> = Kernel<(
    &'static [T],
    &'static [T],
    &'static mut [<T as MmaInput>::Acc],
)>;

fn one_mma<T: MmaInput + cudajit::codegen::KernelParam<Handle = cudajit::codegen::Expr<T>>>(
) -> OneMma<T>
where
    T::Acc: cudajit::codegen::KernelParam,
{
    let name = format!("mma_{}", T::TY.name());
    Kernel::<(&[T], &[T], &mut [T::Acc])>::build(&name, |k, (a, b, d)| {
        let fa = FragA::<T>::from_fn(k, |r, c| a.at(r * T::K + c));
        let fb = FragB::<T>::from_fn(k, |r, c| b.at(r * 8u32 + c));
        k.mma(&fa, &fb, &FragC::zeros())
            .for_each(k, |r, c, v| d.set(r * 8u32 + c, v));
    })
    .unwrap()
}

fn check<T>(instruction: &str)
where
    T: MmaInput + cudajit::codegen::KernelParam<Handle = cudajit::codegen::Expr<T>>,
    T::Acc: cudajit::codegen::KernelParam,
{
    let k = one_mma::<T>();
    for cc in [(8, 0), (9, 0)] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        assert_eq!(ptx.matches(instruction).count(), 1, "{instruction}:\n{ptx}");
        check_ptx(&ptx, cc, k.name());
    }
    let err = k.compile_ptx(&PtxOptions::for_cc(7, 5)).unwrap_err();
    assert!(
        matches!(err, Error::Codegen(_))
            && err.to_string().contains("compute capability 8.0 or later")
            && err.to_string().contains("sm_75"),
        "{err}"
    );
}

#[test]
fn mma_f16() {
    check::<f16>("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
}

#[test]
fn mma_bf16() {
    check::<bf16>("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
}

#[test]
fn mma_tf32_rounds_its_inputs() {
    check::<f32>("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    let ptx = one_mma::<f32>()
        .compile_ptx(&PtxOptions::for_cc(8, 0))
        .unwrap();
    // Each of the 4 + 2 input registers.
    assert_eq!(ptx.matches("cvt.rna.tf32.f32").count(), 6, "{ptx}");
}

#[test]
fn mma_i8() {
    check::<i8>("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32");
}

#[test]
fn mma_u8() {
    check::<u8>("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32");
}

/// The 8-bit floats' MMA (sm_89 and later, PTX ISA 8.4): inline PTX that ptxas accepts for
/// sm_89 and sm_90; sm_80 is a clear error.
#[test]
fn mma_fp8() {
    fn fp8<T>(instruction: &str)
    where
        T: MmaInput + cudajit::codegen::KernelParam<Handle = cudajit::codegen::Expr<T>>,
        T::Acc: cudajit::codegen::KernelParam,
    {
        let k = one_mma::<T>();
        for cc in [(8, 9), (9, 0)] {
            let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
            assert_eq!(ptx.matches(instruction).count(), 1, "{instruction}:\n{ptx}");
            assert!(ptx.contains(".version 8.4"), "{ptx}");
            check_ptx(&ptx, cc, k.name());
        }
        let err = k.compile_ptx(&PtxOptions::for_cc(8, 0)).unwrap_err();
        assert!(
            err.to_string().contains("compute capability 8.9 or later")
                && err.to_string().contains("sm_80"),
            "{err}"
        );
    }
    fp8::<cudajit::F8E4M3>("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
    fp8::<cudajit::F8E5M2>("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32");
}

/// The tensor-core code of README.md (its "Tensor cores" section) and of docs/GUIDE.md (the
/// first block of its "Tensor cores") is examples/tensor_cores.rs's, which builds it, runs it
/// and checks it against the host: every line of each block stands in the example, in the same
/// order (indentation aside).
#[test]
fn documented_tensor_cores_are_the_example() {
    let example = include_str!("../../examples/tensor_cores.rs");
    let docs = [
        (
            "README.md",
            include_str!("../../README.md"),
            "\n## Tensor cores\n",
        ),
        (
            "docs/GUIDE.md",
            include_str!("../../docs/GUIDE.md"),
            "\n### Tensor cores\n",
        ),
    ];
    for (doc, text, heading) in docs {
        let block = text
            .split_once(heading)
            .and_then(|(_, section)| section.split_once("```rust\n"))
            .and_then(|(_, rest)| rest.split_once("\n```"))
            .unwrap_or_else(|| panic!("{doc}: no rust block after {heading:?}"))
            .0;
        let mut lines = example.lines().map(str::trim);
        for want in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
            assert!(
                lines.any(|l| l == want),
                "{doc}'s tensor-core line\n    {want}\nis not in examples/tensor_cores.rs \
                 (after the lines before it)"
            );
        }
    }
}
