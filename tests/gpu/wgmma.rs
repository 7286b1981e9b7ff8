//! Hopper's warpgroup MMA (`KernelBuilder::wgmma`, sm_90a) on the GPU and on the simulator:
//! one warpgroup computes a 64×N tile `D = C + A·B` (K one 128-byte row: 64 f16/bf16 or 32
//! tf32 elements, four wgmmas deep), its operands placed in the dynamic shared memory with
//! ordinary stores in the 128-byte swizzled layouts that TMA writes (A K-major; B K-major, or
//! MN-major for the 16-bit types), on fresh random inputs rich in special values, outputs
//! poisoned first, every element of D checked against the host model of
//! tests/support/mma_model.rs (exact products summed in f64 per instruction's K, rounded once;
//! on the GPU within `2^-20` of the terms' magnitudes). The layouts the simulator reads through
//! the descriptors are the ones the GPU reads: a wrong one fails here on both.

use cudajit::codegen::{
    FragA, Kernel, KernelParam, SmemMatrix, WgmmaAcc, WgmmaInput, WgmmaMajor, WgmmaSwizzle,
};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

use crate::common::{ctx, Rng};
use crate::gen::Gen;
use crate::support::mma_model::{check_product, draw, AccModel, MmaModel};

/// An input type under test.
trait Case:
    MmaModel<Acc = f32> + WgmmaInput + Gen + KernelParam + cudajit::AnyBitPattern + Truncated
{
}
impl<T> Case for T where
    T: MmaModel<Acc = f32> + WgmmaInput + Gen + KernelParam + cudajit::AnyBitPattern + Truncated
{
}

/// An input as the tensor cores read it from shared memory.
trait Truncated: Sized {
    fn truncated(self) -> Self;
}
impl Truncated for f16 {
    fn truncated(self) -> f16 {
        self
    }
}
impl Truncated for bf16 {
    fn truncated(self) -> bf16 {
        self
    }
}
impl Truncated for cudajit::F8E4M3 {
    fn truncated(self) -> Self {
        self
    }
}
impl Truncated for cudajit::F8E5M2 {
    fn truncated(self) -> Self {
        self
    }
}
impl Truncated for f32 {
    fn truncated(self) -> f32 {
        if self.is_nan() {
            self
        } else {
            f32::from_bits(self.to_bits() & 0xffff_e000)
        }
    }
}

/// The 128-byte swizzle of a byte offset from a 1024-byte aligned base.
fn swz(off: cudajit::codegen::Expr<u32>) -> cudajit::codegen::Expr<u32> {
    off ^ (((off >> 7u32) & 7u32) << 4u32)
}

/// One warpgroup's `D = C + A·B` (64×n, K = one 128-byte row), B `mn_major` or not, the first
/// wgmma ignoring C when `zero_first`.
fn wgmma_tile<T: Case>(n: u32, mn_major: bool, zero_first: bool) {
    wgmma_tile_from::<T>(n, mn_major, zero_first, false)
}

/// [`wgmma_tile`] with A from shared memory or, `a_regs`, from registers (`wgmma_rs`: each
/// warp's 16 rows as an `mma.sync` A fragment).
fn wgmma_tile_from<T: Case>(n: u32, mn_major: bool, zero_first: bool, a_regs: bool) {
    let c = ctx();
    if !crate::common::sm90(&c) {
        println!("skipped: wgmma needs an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let es = std::mem::size_of::<T>() as u32;
    let kd = 128 / es;
    let steps = kd / T::K;
    let name = format!(
        "wgmma_{}_n{n}{}{}{}",
        T::TY.name(),
        if mn_major { "_mn" } else { "" },
        if zero_first { "_zero" } else { "" },
        if a_regs { "_rs" } else { "" }
    );
    let b_bytes = if mn_major {
        n.div_ceil(64) * kd * 128
    } else {
        n * 128
    };
    let smem_bytes = 1024 + 64 * 128 + b_bytes;
    let kern = Kernel::<(&[T], &[T], &[f32], &mut [f32])>::build(&name, |k, (a, b, cm, d)| {
        let smem = k.dynamic_shared::<T>();
        let t = k.thread_idx().x;
        let pad = smem.aligned_index(1024);
        let b0 = pad + 64 * 128 / es;
        // A (64 × kd, row-major): row m is one swizzled 128-byte row.
        k.for_step(t, 64 * kd, 128u32, |_, i| {
            let (m, kk) = (i / kd, i % kd);
            smem.set(pad + swz(m * 128u32 + kk * es) / es, a.at(i));
        });
        // B: K-major, given as its transpose (n × kd); or MN-major, row-major kd × n.
        k.for_step(t, n * kd, 128u32, |_, i| {
            let off = if mn_major {
                let (kk, nn) = (i / n, i % n);
                (nn / 64u32) * (kd * 128) + swz(kk * 128u32 + (nn % 64u32) * es)
            } else {
                let (nn, kk) = (i / kd, i % kd);
                swz(nn * 128u32 + kk * es)
            };
            smem.set(b0 + off / es, b.at(i));
        });
        k.fence_proxy_async();
        k.syncthreads();
        let mut init = Vec::new();
        WgmmaAcc::zeros(n).for_each(k, |r, col, _| init.push(cm.at(r * n + col)));
        let mut acc = WgmmaAcc::from_elems(init);
        let da = SmemMatrix::new(&smem, pad, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
        let db = if mn_major {
            SmemMatrix::new(
                &smem,
                b0,
                WgmmaMajor::MN,
                WgmmaSwizzle::B128,
                kd * 128,
                1024,
            )
        } else {
            SmemMatrix::new(&smem, b0, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024)
        };
        let wrow = ((t >> 5u32) & 3u32) * 16u32;
        k.wgmma_fence();
        for st in 0..steps {
            let step_b = if mn_major { st * T::K * 128 } else { st * 32 };
            let accumulate = !(zero_first && st == 0);
            acc = if a_regs {
                let fa = FragA::<T>::from_fn(k, |r, c| a.at((wrow + r) * kd + st * T::K + c));
                k.wgmma_rs(&fa, &db.advance(step_b), &acc, accumulate)
            } else {
                k.wgmma(&da.advance(st * 32), &db.advance(step_b), &acc, accumulate)
            };
        }
        k.wgmma_commit();
        let acc = k.wgmma_wait(0, &acc);
        acc.for_each(k, |r, col, v| d.set(r * n + col, v));
    })
    .unwrap();
    let mut rng = Rng::new();
    let (m, kk) = (64usize, kd as usize);
    let nu = n as usize;
    let a: Vec<T> = rng.vec(m * kk, draw);
    // B row-major (kk × n) for the model; the kernel takes it as stored.
    let b: Vec<T> = rng.vec(kk * nu, draw);
    let stored: Vec<T> = if mn_major {
        b.clone()
    } else {
        (0..nu * kk).map(|i| b[(i % kk) * nu + i / kk]).collect()
    };
    let cv: Vec<f32> = rng.vec(m * nu, <f32 as AccModel>::small);
    let (da, db, dc) = (
        s.to_device(&a).unwrap(),
        s.to_device(&stored).unwrap(),
        s.to_device(&cv).unwrap(),
    );
    let mut dd = c.alloc::<f32, _>(m * nu).unwrap();
    dd.fill_async(<f32 as AccModel>::poison(), &s).unwrap();
    kern.launch(
        &s,
        LaunchConfig::new(1, 128).with_shared_mem(smem_bytes),
        (&da, &db, &dc, &mut dd),
    )
    .unwrap();
    let got = dd.to_vec_async(&s).unwrap();
    let c_model = if zero_first { vec![0.0f32; m * nu] } else { cv };
    // tf32 operands: the tensor cores ignore the low 13 mantissa bits of an f32 in shared
    // memory; the model multiplies those values (exact in tf32, so its rounding keeps them).
    // From registers, A is rounded to nearest tf32 first (as the model does).
    let a: Vec<T> = if a_regs {
        a
    } else {
        a.iter().map(|&x| T::truncated(x)).collect()
    };
    let b: Vec<T> = b.iter().map(|&x| T::truncated(x)).collect();
    check_product(&name, (m, nu, kk), (&a, &b, &c_model), &got);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_f16_k_major() {
    wgmma_tile::<f16>(8, false, false);
    wgmma_tile::<f16>(64, false, true);
    wgmma_tile::<f16>(256, false, false);
}

/// The 8-bit floats: K = 32 per instruction (128 per row), both operands K-major, A from shared
/// memory or registers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_fp8() {
    wgmma_tile::<cudajit::F8E4M3>(8, false, false);
    wgmma_tile::<cudajit::F8E4M3>(128, false, true);
    wgmma_tile::<cudajit::F8E5M2>(64, false, false);
    wgmma_tile::<cudajit::F8E5M2>(256, false, true);
    wgmma_tile_from::<cudajit::F8E4M3>(64, false, false, true);
    wgmma_tile_from::<cudajit::F8E5M2>(32, false, true, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_f16_mn_major() {
    wgmma_tile::<f16>(64, true, false);
    wgmma_tile::<f16>(128, true, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_bf16() {
    wgmma_tile::<bf16>(128, false, false);
    wgmma_tile::<bf16>(192, true, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_tf32() {
    wgmma_tile::<f32>(32, false, false);
    wgmma_tile::<f32>(128, false, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wgmma_a_from_registers() {
    wgmma_tile_from::<f16>(64, false, false, true);
    wgmma_tile_from::<f16>(128, true, true, true);
    wgmma_tile_from::<bf16>(256, false, false, true);
    wgmma_tile_from::<f32>(64, false, false, true);
}

/// `WgmmaAcc::frag_a` (an accumulator's 16-column chunks as register A fragments, two columns
/// rounded to f16/bf16 and packed per instruction) on accumulators rich in special values and
/// rounding ties, output poisoned first: every register is `round(lo) | round(hi) << 16` of the
/// thread's elements `8·chunk + 2r` and `+ 1`, rounded to nearest even (a NaN half: any NaN).
#[test]
#[ignore = "needs a CUDA GPU"]
fn frag_a_packs_accumulator_chunks() {
    fn one<T: WgmmaInput + KernelParam>(round: fn(f32) -> u16) {
        let c = ctx();
        if !cudajit::on_simulator() && c.device().compute_capability().unwrap() < (8, 0) {
            println!("skipped: cvt.rn.{{f16,bf16}}x2.f32 needs sm_80");
            return;
        }
        let s = c.new_stream().unwrap();
        let mut rng = Rng::new();
        let mut acc = crate::common::special_f32(&mut rng, 128 * 16);
        for (i, v) in acc.iter_mut().enumerate().step_by(5) {
            // Exact ties of both halves' roundings, and values just off them.
            let hi = (rng.next_u64() as u32) & 0x7fff_0000 | (i as u32 & 1) << 31;
            *v = f32::from_bits(hi | [0x8000, 0x1000, 0x7fff][i % 3]);
        }
        let k = Kernel::<(&[f32], &mut [u32])>::build("frag_a_pack", |k, (a, out)| {
            let t = k.thread_idx().x;
            let elems = (0..16u32).map(|e| a.at(t * 16u32 + e)).collect();
            let acc = WgmmaAcc::from_elems(elems);
            for chunk in 0..2u32 {
                for (r, reg) in acc.frag_a::<T>(chunk).regs().into_iter().enumerate() {
                    out.set((t * 2u32 + chunk) * 4u32 + r as u32, reg);
                }
            }
        })
        .unwrap();
        let da = s.to_device(&acc).unwrap();
        let mut out = s.to_device(&vec![0xdead_beefu32; 128 * 8]).unwrap();
        k.launch(&s, LaunchConfig::new(1, 128), (&da, &mut out))
            .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        let nan16 = |h: u16, bf: bool| {
            let (exp, man) = if bf { (0x7f80, 0x7f) } else { (0x7c00, 0x3ff) };
            h & exp == exp && h & man != 0
        };
        let bf = std::mem::size_of::<T>() == 2 && round(1.0) == 0x3f80;
        for t in 0..128 {
            for chunk in 0..2 {
                for r in 0..4 {
                    let g = got[(t * 2 + chunk) * 4 + r];
                    let e = t * 16 + 8 * chunk + 2 * r;
                    for (half, x) in [(g as u16, acc[e]), ((g >> 16) as u16, acc[e + 1])] {
                        let want = round(x);
                        let ok = if x.is_nan() {
                            nan16(half, bf)
                        } else {
                            half == want
                        };
                        assert!(
                            ok,
                            "thread {t} chunk {chunk} reg {r}: {x:e} ({:#010x}) gave {half:#06x}, want {want:#06x}",
                            x.to_bits()
                        );
                    }
                }
            }
        }
    }
    one::<bf16>(|x| bf16::from_f32(x).to_bits());
    one::<f16>(|x| f16::from_f32(x).to_bits());
}
