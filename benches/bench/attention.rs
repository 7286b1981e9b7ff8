//! The attention rows (issue 25): the attention example's kernel
//! (`examples/attention/kernel.rs`, written with the builder: TMA, mbarriers, wgmma, the
//! online softmax in registers) on batch 8 × 16 heads × 4096 rows, head dim 128, bf16
//! (`--quick`: 2 × 2 heads × 512), causal (`attention_causal`) and not (`attention`), beside
//! torch's `scaled_dot_product_attention` in the peers' run. Each row first checks 16 sampled
//! output rows against float64 on the same inputs; `flops` counts 4·S²·D per head (half of it
//! when causal), as FlashAttention's papers do.

#[path = "../../examples/attention/kernel.rs"]
#[allow(dead_code)]
mod kernel;

use cudajit::bf16;
use kernel::{reference_row, Attention, AttentionElem};

use super::*;

impl Bench {
    /// The `attention` and `attention_causal` rows (sm_90 only).
    pub(crate) fn attention(&self) -> Res<()> {
        let cc = self.c(self.ctx.device().compute_capability())?;
        if cc != (9, 0) && !cudajit::on_simulator() {
            return Err(format!(
                "the attention kernel needs an sm_90 GPU (this one is sm_{}{})",
                cc.0, cc.1
            ));
        }
        let (b, h, seq, d) = if self.opts.quick {
            (2, 2, 512, 128)
        } else {
            (8, 16, 4096, 128)
        };
        let bh = b * h;
        let seed = self.seed("attention");
        let host: Vec<Vec<bf16>> = (0..3)
            .map(|x| {
                rand_f32(bh * seq * d, seed ^ x, -1.0, 1.0)
                    .into_iter()
                    .map(bf16::from_f32)
                    .collect()
            })
            .collect();
        let dev = |v: &Vec<bf16>| {
            self.c(self.ctx.to_device(
                &ndarray::Array3::from_shape_vec((bh, seq, d), v.clone())
                    .map_err(|e| e.to_string())?,
            ))
        };
        let (q, k, v) = (dev(&host[0])?, dev(&host[1])?, dev(&host[2])?);
        let mut out = self.c(self.ctx.alloc::<bf16, _>((bh, seq, d)))?;
        let label = format!("{b}x{h}x{seq} d{d} bf16");
        for causal in [false, true] {
            let work = if causal {
                "attention_causal"
            } else {
                "attention"
            };
            if !self.opts.selected(work) {
                continue;
            }
            let att = self.c(Attention::<bf16>::new(d, causal))?;
            self.c(out.fill_async(bf16::NAN, &self.stream))?;
            self.c(att.run(&self.stream, &q, &k, &v, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?;
            let worst = check_rows(&host, &got, (bh, seq, d), causal, seed)
                .map_err(|e| format!("{work} {label}: {e}"))?;
            let t = self.time_gpu(|| att.run(&self.stream, &q, &k, &v, &mut out))?;
            let flops = (4 * bh * seq * seq * d / if causal { 2 } else { 1 }) as u64;
            let ms = median(&t);
            Rec::new(work, &label)
                .imp(LIB_IMPL)
                .variant("examples/attention (builder: TMA + wgmma, online softmax)")
                .times(&t)
                .flops(flops)
                .note(format!(
                    "{:.0} TFLOP/s; 16 sampled rows within {worst:.2} of their error bound vs float64",
                    flops as f64 / (ms * 1e-3) / 1e12
                ))
                .emit();
        }
        Ok(())
    }
}

/// Checks 16 sampled output rows against float64: returns the worst error as a fraction of
/// its bound (4 units of bf16's rounding times |out| + Σp|v|/Σp).
fn check_rows(
    host: &[Vec<bf16>],
    got: &[bf16],
    (bh, seq, d): (usize, usize, usize),
    causal: bool,
    seed: u64,
) -> Result<f64, String> {
    let mut worst = 0.0f64;
    for i in 0..16u64 {
        let r = splitmix(seed ^ (i + 11));
        let (hd, row) = ((r % bh as u64) as usize, ((r >> 20) % seq as u64) as usize);
        let base = hd * seq * d;
        let keys = if causal { row + 1 } else { seq };
        let f64s = |x: &[bf16]| x.iter().map(|e| e.to_f64()).collect::<Vec<f64>>();
        let want = reference_row(
            &f64s(&host[0][base + row * d..base + (row + 1) * d]),
            &f64s(&host[1][base..base + keys * d]),
            &f64s(&host[2][base..base + keys * d]),
            keys,
            d,
        );
        for (c, &(want, mag)) in want.iter().enumerate() {
            let g = got[base + row * d + c].to_f64();
            let bound = 4.0 * <bf16 as AttentionElem>::UNIT * (want.abs() + mag) + 1e-6;
            let err = (g - want).abs() / bound;
            if err.is_nan() || err > 1.0 {
                return Err(format!(
                    "out[{hd}][{row}][{c}] = {g}, float64 gives {want} (bound {bound:.2e})"
                ));
            }
            worst = worst.max(err);
        }
    }
    Ok(worst)
}
