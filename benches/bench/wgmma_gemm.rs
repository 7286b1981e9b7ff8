//! Diagnostic rows (`cudajit-diag`, with the matrix products): a Hopper GEMM written with the
//! builder, `C = A·B` (f16 and bf16, all row-major, f32 accumulators, C in the input type),
//! fed by TMA through transaction barriers and computed by warpgroup MMAs: blocks of 128×256
//! (two warpgroups of 64×256, `wgmma.m64n256k16`), k-tiles of 64, `STAGES` shared-memory
//! stages (48 KiB each), one thread issuing the copies `STAGES - 1` tiles ahead. The rows
//! measure what this schedule reaches on the GPU beside the `matmul_*` rows' cuBLAS.

use cudajit::codegen::{Kernel, SmemMatrix, Tma, WgmmaAcc, WgmmaInput, WgmmaMajor, WgmmaSwizzle};
use cudajit::memory::{TensorMap, TensorMapElement, TensorMapOptions, TensorMapSwizzle};
use cudajit::ops::MatmulInput;
use cudajit::{bf16, f16, LaunchConfig};

use super::*;

/// Rows and columns of a block's tile of C, and its k-tile.
const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;

/// The bench's GEMM kernel: two tensor maps, C, M, N, K.
pub(crate) type HopperGemm<T> = Kernel<(Tma<T, 2>, Tma<T, 2>, &'static mut [T], u32, u32, u32)>;

/// The GEMM kernel with `stages` stages.
pub(crate) fn hopper_gemm<T>(stages: u32) -> cudajit::Result<HopperGemm<T>>
where
    T: WgmmaInput + TensorMapElement + cudajit::codegen::KernelParam,
{
    let name = format!(
        "hopper_gemm_{}_s{stages}",
        <T as cudajit::codegen::Scalar>::TY.name()
    );
    Kernel::<(Tma<T, 2>, Tma<T, 2>, &mut [T], u32, u32, u32)>::build(
        &name,
        |k, (ma, mb, c, m, n, kd)| {
            k.launch_bounds(256, 1);
            let smem = k.dynamic_shared::<T>();
            let full = k.mbarriers(stages as usize);
            let empty = k.mbarriers(stages as usize);
            let t = k.thread_idx().x;
            let wg = t >> 7u32;
            let pad = smem.aligned_index(1024);
            let stage_elems = BM * BK + BK * BN;
            let stage_bytes = stage_elems * 2;
            let a_at = move |s: cudajit::codegen::Expr<u32>| pad + s * stage_elems;
            let b_at = move |s: cudajit::codegen::Expr<u32>| pad + s * stage_elems + BM * BK;
            let (m0, n0) = (k.block_idx().y * BM, k.block_idx().x * BN);
            let tiles = (kd + (BK - 1)) / BK;
            k.if_(t.eq(0u32), |k| {
                for s in 0..stages {
                    full.init(s, 1u32);
                    empty.init(s, 2u32);
                }
                k.fence_barrier_init();
            });
            k.syncthreads();
            let issue = |j: cudajit::codegen::Expr<u32>, s: cudajit::codegen::Expr<u32>| {
                full.arrive_expect_tx(s, stage_bytes);
                let k0 = (j * BK).cast::<i32>();
                ma.load([m0.cast::<i32>(), k0], &smem, a_at(s), &full, s);
                for i in 0..BN / 64 {
                    mb.load(
                        [k0, (n0 + i * 64).cast::<i32>()],
                        &smem,
                        b_at(s) + i * 64 * BK,
                        &full,
                        s,
                    );
                }
            };
            k.if_(t.eq(0u32), |k| {
                k.for_range(0u32, tiles.min(stages), |_, j| issue(j, j));
            });
            let vars = WgmmaAcc::zeros(BN).vars(k);
            k.for_range(0u32, tiles, |k, j| {
                let s = j % stages;
                full.wait(k, s, (j / stages) & 1u32);
                let da = SmemMatrix::new(
                    &smem,
                    a_at(s) + wg * (64 * BK),
                    WgmmaMajor::K,
                    WgmmaSwizzle::B128,
                    16,
                    1024,
                );
                let db = SmemMatrix::new(
                    &smem,
                    b_at(s),
                    WgmmaMajor::MN,
                    WgmmaSwizzle::B128,
                    BK * 128,
                    1024,
                );
                k.wgmma_fence();
                let mut acc = WgmmaAcc::from_vars(&vars);
                for kk in 0..BK / 16 {
                    acc = k.wgmma(&da.advance(kk * 32), &db.advance(kk * 16 * 128), &acc, true);
                }
                k.wgmma_commit();
                let acc = k.wgmma_wait(0, &acc);
                for (v, e) in vars.iter().zip(acc.elems()) {
                    v.set(*e);
                }
                k.if_((t & 127u32).eq(0u32), |_| empty.arrive(s));
                // Thread 0 refills the stage the previous tile used, once both warpgroups are done
                // with it.
                k.if_(
                    t.eq(0u32).and(j.ge(1u32)).and((j + stages - 1).lt(tiles)),
                    |k| {
                        let p = (j - 1u32) % stages;
                        empty.wait(k, p, ((j - 1u32) / stages) & 1u32);
                        issue(j + stages - 1, p);
                    },
                );
            });
            WgmmaAcc::from_vars(&vars).for_each(k, |r, col, v| {
                let (i, jj) = (m0 + wg * 64u32 + r, n0 + col);
                k.if_(i.lt(m).and(jj.lt(n)), |_| c.set(i * n + jj, v.cast::<T>()));
            });
        },
    )
}

impl Bench {
    /// `hopper_gemm` rows: f16 and bf16 at the benchmark's square sizes.
    pub(crate) fn hopper_gemms(&self) -> Res<()> {
        let cc = self.c(self.ctx.device().compute_capability())?;
        if cc != (9, 0) && !cudajit::on_simulator() {
            return Ok(());
        }
        self.hopper_gemm_rows::<f16>("f16")?;
        self.hopper_gemm_rows::<bf16>("bf16")
    }

    fn hopper_gemm_rows<T>(&self, ty: &str) -> Res<()>
    where
        T: WgmmaInput
            + TensorMapElement
            + MatmulInput
            + cudajit::codegen::KernelParam
            + cudajit::AnyBitPattern
            + Small,
    {
        let stages: u32 = std::env::var("CUDAJIT_BENCH_HOPPER_STAGES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4);
        let kernel = hopper_gemm::<T>(stages).map_err(|e| e.to_string())?;
        let sizes: Vec<usize> = if self.opts.quick {
            vec![512]
        } else {
            vec![2048, 4096, 8192]
        };
        for s in sizes {
            let av: Vec<f32> = (0..s * s)
                .map(|i| ((i * 7 + i / s) % 9) as f32 * 0.25 - 1.0)
                .collect();
            let bv: Vec<f32> = (0..s * s)
                .map(|i| ((i * 5 + i / s * 3) % 7) as f32 * 0.25 - 0.75)
                .collect();
            let host_a: Vec<T> = av.iter().map(|&x| T::small(x)).collect();
            let host_b: Vec<T> = bv.iter().map(|&x| T::small(x)).collect();
            let a = self.c(self
                .ctx
                .to_device(&ndarray::Array2::from_shape_vec((s, s), host_a).unwrap()))?;
            let b = self.c(self
                .ctx
                .to_device(&ndarray::Array2::from_shape_vec((s, s), host_b).unwrap()))?;
            let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
            let ma = self.c(TensorMap::<T, 2>::tiled_with(&a, [BM, BK], opts))?;
            let mb = self.c(TensorMap::<T, 2>::tiled_with(&b, [BK, 64], opts))?;
            let mut out = self.c(self.ctx.alloc::<T, _>(s * s))?;
            let shared = 1024 + stages * (BM * BK + BK * BN) * 2;
            self.c(kernel
                .function(&self.ctx)
                .and_then(|f| f.set_max_dynamic_shared_memory(shared)))?;
            let grid = ((s as u32).div_ceil(BN), (s as u32).div_ceil(BM));
            let cfg = LaunchConfig::new(grid, 256).with_shared_mem(shared);
            let sz = s as u32;
            let t = self
                .time_gpu(|| kernel.launch(&self.stream, cfg, (&ma, &mb, &mut out, sz, sz, sz)))?;
            // Sampled elements against the host's f64 product.
            let got = self.c(out.to_vec_async(&self.stream))?;
            for (i, j) in [
                (0, 0),
                (s - 1, s - 1),
                (s / 3, s / 2 + 1),
                (77 % s, 131 % s),
            ] {
                let want: f64 = (0..s)
                    .map(|x| av[i * s + x] as f64 * bv[x * s + j] as f64)
                    .sum();
                let g = T::back(got[i * s + j]);
                if (g - want).abs() > 1e-2 * want.abs() + 0.5 {
                    return Err(format!(
                        "hopper_gemm {s}³ {ty}: C[{i}][{j}] = {g}, want {want}"
                    ));
                }
            }
            let flops = 2 * (s as u64).pow(3);
            let ms = median(&t);
            Rec::new("hopper_gemm", &format!("{s}³ {ty}"))
                .imp("cudajit-diag")
                .variant(format!(
                    "TMA + wgmma m64n256k16, 128×256×64 blocks, {stages} stages, 2 warpgroups"
                ))
                .times(&t)
                .flops(flops)
                .note(format!("{:.1} TFLOP/s", flops as f64 / (ms * 1e-3) / 1e12))
                .emit();
        }
        Ok(())
    }
}

/// The bench's inputs: small values, exact in the 16-bit types.
pub(crate) trait Small: Copy {
    fn small(x: f32) -> Self;
    fn back(self) -> f64;
}
impl Small for f16 {
    fn small(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn back(self) -> f64 {
        self.to_f64()
    }
}
impl Small for bf16 {
    fn small(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn back(self) -> f64 {
        self.to_f64()
    }
}
