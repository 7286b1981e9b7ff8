//! The tensor cores' warp MMA (`KernelBuilder::mma`, sm_80 and later) for every input type, on
//! the GPU and on the simulator: a small matrix product `D = A·B + C` (64×32, three MMAs deep
//! in K) with one warp per 16×8 tile of D, on fresh random inputs (small exact values mixed
//! with the generators' special values: NaN, ±0, ±inf, subnormals, MIN/MAX), outputs poisoned
//! first, every element of D checked against the host model:
//!
//! - float inputs: per MMA, `C + Σ_k A·B` with exact products summed in f64 in order of k,
//!   rounded once to f32 (tf32 inputs first rounded as `cvt.rna.tf32.f32` does). The simulator computes
//!   exactly this; the GPU's tensor cores to within `2^-20` of the sum of the magnitudes of the
//!   terms (their internal accumulation order and precision are not specified), NaN as NaN;
//! - 8-bit integer inputs: exact, wrapping in i32, on both.

use cudajit::codegen::{FragA, FragB, FragC, Kernel, KernelParam, MmaInput, Num};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

use crate::common::{ctx, Rng};
use crate::gen::Gen;

/// An MMA input type under test, with its host model.
trait Case:
    MmaInput<Acc: HostAcc + KernelParam + cudajit::AnyBitPattern + std::fmt::Debug>
    + Gen
    + KernelParam
    + cudajit::AnyBitPattern
    + std::fmt::Debug
{
    /// The value the tensor cores multiply (tf32: rounded).
    fn value(self) -> f64;
    /// A small value, exact in the type.
    fn small(r: &mut Rng) -> Self;
}

/// The accumulator's host side.
trait HostAcc: Num + Copy {
    fn to_f64(self) -> f64;
    /// The model's result of one MMA from C and its products (in order of k).
    fn model(c: Self, products: &[f64]) -> Self;
    fn small(r: &mut Rng) -> Self;
    fn poison() -> Self;
    /// Whether the GPU's `got` is within the documented error of the model's `want`.
    fn close(got: Self, want: Self, magnitude: f64, exact: bool) -> bool;
}

impl HostAcc for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn model(c: f32, products: &[f64]) -> f32 {
        let mut acc = c as f64;
        for p in products {
            acc += p;
        }
        acc as f32
    }
    fn small(r: &mut Rng) -> f32 {
        ((r.next_u64() % 201) as f32 - 100.0) / 8.0
    }
    fn poison() -> f32 {
        f32::from_bits(0x7fa5_a5a5)
    }
    fn close(got: f32, want: f32, magnitude: f64, exact: bool) -> bool {
        if want.is_nan() {
            return got.is_nan();
        }
        if exact {
            return got.to_bits() == want.to_bits();
        }
        if want.is_infinite() {
            return got == want;
        }
        (got as f64 - want as f64).abs() <= magnitude * 2f64.powi(-20) + 2f64.powi(-126)
    }
}

impl HostAcc for i32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn model(c: i32, products: &[f64]) -> i32 {
        products
            .iter()
            .fold(c, |acc, &p| acc.wrapping_add(p as i32))
    }
    fn small(r: &mut Rng) -> i32 {
        match r.next_u64() % 8 {
            0 => [i32::MIN, i32::MAX, -1, 0][(r.next_u64() % 4) as usize],
            _ => (r.next_u64() % 2001) as i32 - 1000,
        }
    }
    fn poison() -> i32 {
        0x5a5a_5a5a
    }
    fn close(got: i32, want: i32, _: f64, _: bool) -> bool {
        got == want
    }
}

fn tf32(x: f32) -> f32 {
    let b = x.to_bits();
    if x.is_nan() || x.is_infinite() {
        return x;
    }
    f32::from_bits(b.wrapping_add(0x1000) & 0xffff_e000)
}

impl Case for f16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn small(r: &mut Rng) -> f16 {
        f16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
}
impl Case for bf16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn small(r: &mut Rng) -> bf16 {
        bf16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
}
impl Case for f32 {
    fn value(self) -> f64 {
        tf32(self) as f64
    }
    fn small(r: &mut Rng) -> f32 {
        // Random f32 values with more mantissa bits than tf32 keeps: the rounding is tested.
        (r.next_u64() >> 40) as f32 / (1u64 << 20) as f32 - 8.0
    }
}
impl Case for i8 {
    fn value(self) -> f64 {
        self as f64
    }
    fn small(r: &mut Rng) -> i8 {
        r.next_u64() as i8
    }
}
impl Case for u8 {
    fn value(self) -> f64 {
        self as f64
    }
    fn small(r: &mut Rng) -> u8 {
        r.next_u64() as u8
    }
}

/// Tiles of D in rows and columns, and MMAs along K.
const TM: u32 = 4;
const TN: u32 = 4;
const TK: u32 = 3;

fn mma_matmul<T: Case>() {
    let c = ctx();
    if !cudajit::on_simulator() && c.device().compute_capability().unwrap() < (8, 0) {
        println!("skipped: the tensor-core MMA needs sm_80");
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
    let draw = |r: &mut Rng| {
        if r.next_u64() % 48 == 0 {
            T::gen(r)
        } else {
            T::small(r)
        }
    };
    let a: Vec<T> = rng.vec((m * kk) as usize, draw);
    let b: Vec<T> = rng.vec((kk * n) as usize, draw);
    let cv: Vec<T::Acc> = rng.vec((m * n) as usize, <T::Acc as HostAcc>::small);
    let (da, db, dc) = (
        s.to_device(&a).unwrap(),
        s.to_device(&b).unwrap(),
        s.to_device(&cv).unwrap(),
    );
    let mut dd = c.alloc::<T::Acc, _>((m * n) as usize).unwrap();
    dd.fill_async(<T::Acc as HostAcc>::poison(), &s).unwrap();
    kern.launch(&s, LaunchConfig::new(TM * TN, 32), (&da, &db, &dc, &mut dd))
        .unwrap();
    let got = dd.to_vec_async(&s).unwrap();
    let exact = cudajit::on_simulator();
    let mut bad = Vec::new();
    for i in 0..m as usize {
        for j in 0..n as usize {
            let products: Vec<f64> = (0..kk as usize)
                .map(|x| a[i * kk as usize + x].value() * b[x * n as usize + j].value())
                .collect();
            let cij = cv[i * n as usize + j];
            // One MMA after the other, each rounded once.
            let want = products
                .chunks(T::K as usize)
                .fold(cij, <T::Acc as HostAcc>::model);
            let magnitude = cij.to_f64().abs() + products.iter().map(|p| p.abs()).sum::<f64>();
            let g = got[i * n as usize + j];
            if !<T::Acc as HostAcc>::close(g, want, magnitude, exact) {
                bad.push(format!("D[{i}][{j}] = {g:?}, want {want:?} (C {cij:?})"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{name}: {} of {} elements differ, e.g.\n{}",
        bad.len(),
        m * n,
        bad[..bad.len().min(10)].join("\n")
    );
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
