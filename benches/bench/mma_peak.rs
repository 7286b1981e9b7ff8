//! Diagnostic rows (`cudajit-diag`, with the matrix products): the tensor cores' `mma.sync`
//! ceiling on this GPU, measured with the builder. Every warp runs `iters` rounds of 16
//! independent MMAs (a 64×32 warp tile: 4 A fragments × 4 B fragments, f32 accumulators in
//! registers, no memory traffic in the loop) on `warps` warps per multiprocessor; the figure
//! is what a matrix product built on `mma.sync` could reach at best, against which the
//! product kernels and cuBLAS (which uses Hopper's `wgmma` on sm_90) are read.

use cudajit::codegen::{FragA, FragB, FragC, Kernel, Var};
use cudajit::ops::MatmulInput;
use cudajit::{f16, LaunchConfig};

use super::*;

impl Bench {
    /// `mma_peak` rows for f16 and tf32 at 4, 8 and 16 warps per multiprocessor.
    pub(crate) fn mma_peaks(&self) -> Res<()> {
        self.mma_peak::<f16>("f16")?;
        self.mma_peak::<f32>("tf32")
    }

    fn mma_peak<T: MatmulInput>(&self, ty: &str) -> Res<()> {
        let name = format!("mma_peak_{ty}");
        let kernel = Kernel::<(&[f32], &mut [f32], u32)>::build(&name, |k, (x, out, iters)| {
            let fa: Vec<FragA<T>> = (0..4u32)
                .map(|i| FragA::from_fn(k, |r, c| x.at(r * 16u32 + c + i).cast::<T>()))
                .collect();
            let fb: Vec<FragB<T>> = (0..4u32)
                .map(|j| FragB::from_fn(k, |kk, n| x.at(kk * 8u32 + n + j + 4u32).cast::<T>()))
                .collect();
            let acc: Vec<[Var<f32>; 4]> = (0..16)
                .map(|_| std::array::from_fn(|_| k.var(0.0f32)))
                .collect();
            k.for_range(0u32, iters, |k, _| {
                for (i, a) in fa.iter().enumerate() {
                    for (j, b) in fb.iter().enumerate() {
                        let v = &acc[i * 4 + j];
                        let d = k.mma(a, b, &FragC::<T>::from_elems(v.map(|x| x.get())));
                        for (x, e) in v.iter().zip(d.elems()) {
                            x.set(e);
                        }
                    }
                }
            });
            let mut sum = acc[0][0].get();
            for v in &acc {
                for x in v {
                    sum = sum + x.get();
                }
            }
            out.set(k.block_idx().x * k.block_dim().x + k.thread_idx().x, sum);
        })
        .map_err(|e| e.to_string())?;
        let sms = self.c(self.ctx.device().multiprocessor_count())?;
        let x: Vec<f32> = (0..512).map(|i| (i % 7) as f32 * 0.125).collect();
        let dx = self.c(self.ctx.to_device(&x))?;
        let iters: u32 = if self.opts.quick { 64 } else { 2048 };
        for per_sm in [1u32, 2, 4] {
            let (blocks, threads) = (sms * per_sm, 128u32);
            let mut out = self.c(self.ctx.alloc::<f32, _>((blocks * threads) as usize))?;
            let cfg = LaunchConfig::new(blocks, threads);
            let t = self.time_gpu(|| kernel.launch(&self.stream, cfg, (&dx, &mut out, iters)))?;
            let flops = u64::from(blocks * 4 * iters) * 16 * 2 * 16 * 8 * u64::from(T::K);
            let ms = median(&t);
            Rec::new("mma_peak", &format!("{} warps/SM {ty}", 4 * per_sm))
                .imp("cudajit-diag")
                .variant(format!(
                    "{iters} rounds of 16 independent mma.sync per warp, {blocks} blocks of 4 warps"
                ))
                .times(&t)
                .flops(flops)
                .note(format!("{:.1} TFLOP/s", flops as f64 / (ms * 1e-3) / 1e12))
                .emit();
        }
        Ok(())
    }
}
