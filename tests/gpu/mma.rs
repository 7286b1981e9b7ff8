//! The tensor cores' warp MMA (`KernelBuilder::mma`, sm_80 and later) for every input type, on
//! the GPU and on the simulator: a small matrix product `D = A·B + C` (64×32, three MMAs deep
//! in K) with one warp per 16×8 tile of D, on fresh random inputs (small exact values mixed
//! with the generators' special values: NaN, ±0, ±inf, subnormals, MIN/MAX), outputs poisoned
//! first, every element of D checked against the host model of tests/support/mma_model.rs
//! (float inputs: exact products summed in f64 per MMA, rounded once, tf32 inputs rounded
//! first; on the GPU within `2^-20` of the sum of the terms' magnitudes, `2^-9` for the 8-bit
//! floats (sm_89 and later); 8-bit integers exact,
//! wrapping in i32, on both).

use cudajit::codegen::{FragA, FragB, FragC, Kernel, KernelParam};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

use crate::common::{ctx, Rng};
use crate::gen::Gen;
use crate::support::mma_model::{check_product, draw, AccModel, MmaModel};

/// An MMA input type under test: its host model, and what the kernel's parameters need.
trait Case:
    MmaModel<Acc: KernelParam + cudajit::AnyBitPattern> + Gen + KernelParam + cudajit::AnyBitPattern
{
}
impl<T> Case for T where
    T: MmaModel<Acc: KernelParam + cudajit::AnyBitPattern>
        + Gen
        + KernelParam
        + cudajit::AnyBitPattern
{
}

/// Tiles of D in rows and columns, and MMAs along K.
const TM: u32 = 4;
const TN: u32 = 4;
const TK: u32 = 3;

fn mma_matmul<T: Case>() {
    let c = ctx();
    let need = if T::TY.is_fp8() { (8, 9) } else { (8, 0) };
    if !cudajit::on_simulator() && c.device().compute_capability().unwrap() < need {
        println!(
            "skipped: the tensor-core MMA on {} needs sm_{}{}",
            T::TY.name(),
            need.0,
            need.1
        );
        return;
    }
    let s = c.new_stream().unwrap();
    let (m, n, kk) = (16 * TM, 8 * TN, T::K * TK);
    let name = format!("mma_{}", T::TY.name());
    let kern =
        Kernel::<(&[T], &[T], &[T::Acc], &mut [T::Acc])>::build(&name, |k, (a, b, cm, d)| {
            let blk = k.block_idx().x;
            let (row0, col0) = ((blk / TN) * 16u32, (blk % TN) * 8u32);
            let init = FragC::<T>::from_fn(k, |r, col| cm.at((row0 + r) * n + col0 + col));
            let acc = init.elems().map(|e| k.var(e));
            k.for_range(0u32, TK, |k, step| {
                let k0 = step * T::K;
                let fa = FragA::<T>::from_fn(k, |r, col| a.at((row0 + r) * kk + k0 + col));
                let fb = FragB::<T>::from_fn(k, |r, col| b.at((k0 + r) * n + col0 + col));
                let cur = FragC::<T>::from_elems(acc.map(|v| v.get()));
                let next = k.mma(&fa, &fb, &cur);
                for (v, e) in acc.iter().zip(next.elems()) {
                    v.set(e);
                }
            });
            FragC::<T>::from_elems(acc.map(|v| v.get()))
                .for_each(k, |r, col, v| d.set((row0 + r) * n + col0 + col, v));
        })
        .unwrap();
    let mut rng = Rng::new();
    let a: Vec<T> = rng.vec((m * kk) as usize, draw);
    let b: Vec<T> = rng.vec((kk * n) as usize, draw);
    let cv: Vec<T::Acc> = rng.vec((m * n) as usize, <T::Acc as AccModel>::small);
    let (da, db, dc) = (
        s.to_device(&a).unwrap(),
        s.to_device(&b).unwrap(),
        s.to_device(&cv).unwrap(),
    );
    let mut dd = c.alloc::<T::Acc, _>((m * n) as usize).unwrap();
    dd.fill_async(<T::Acc as AccModel>::poison(), &s).unwrap();
    kern.launch(&s, LaunchConfig::new(TM * TN, 32), (&da, &db, &dc, &mut dd))
        .unwrap();
    let got = dd.to_vec_async(&s).unwrap();
    let dims = (m as usize, n as usize, kk as usize);
    check_product(&name, dims, (&a, &b, &cv), &got);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_f16() {
    mma_matmul::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_bf16() {
    mma_matmul::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_tf32() {
    mma_matmul::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_i8() {
    mma_matmul::<i8>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_u8() {
    mma_matmul::<u8>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_e4m3() {
    mma_matmul::<cudajit::F8E4M3>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn mma_e5m2() {
    mma_matmul::<cudajit::F8E5M2>();
}
