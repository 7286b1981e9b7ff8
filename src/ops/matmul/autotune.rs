//! Timing [`Matmul`](super::Matmul)'s candidate configurations for a product (the other half
//! of autotuning; `tune.rs` holds the keys, the tuning file and the process's winners): which
//! candidates a product gets, the known winner of its key, and the timed run that picks one.

use crate::codegen::Scalar;
use crate::context::Context;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice};
use crate::stream::Stream;

use super::config::{Engine, MatmulConfig};
use super::launch::Call;
use super::shape::{Operand, Problem, Transpose};
use super::tune::{
    config_to_text, count, device_id, log_line, lookup, note_skip, record, TuneKey, TIMED_LAUNCHES,
};
use super::types::{MatmulInput, MatmulOutput};
use super::Matmul;

/// The candidates timed for a product: the default choice first, then SIMT tiles, then (when
/// the tensor cores may run it: `mma_ok` on sm_80+) tensor-core tiles two MMAs deep (`mma_k`);
/// only those valid for inputs of `elem_size` bytes whose shared tiles fit `max_shared` bytes.
pub(crate) fn tune_candidates(
    default: MatmulConfig,
    mma_ok: bool,
    cc: (u32, u32),
    mma_k: u32,
    elem_size: usize,
    (max_shared, max_optin): (usize, usize),
) -> Vec<MatmulConfig> {
    let mut all = vec![
        default,
        MatmulConfig::simt(128, 128, 8, 8, 8),
        MatmulConfig::simt(64, 64, 8, 4, 4),
        MatmulConfig::simt(128, 64, 8, 8, 4),
        MatmulConfig::simt(64, 128, 8, 4, 8),
        MatmulConfig::simt(128, 128, 16, 8, 8),
        MatmulConfig::simt(32, 64, 8, 4, 4),
    ];
    if cc >= (8, 0) && elem_size == 4 {
        // The SIMT kernel's cp.async pipeline (f32 copied as it is), and cuBLAS's sm_80
        // FFMA tile: 256×128, 16×8 a thread, one block per multiprocessor.
        let s = |c: MatmulConfig, stages| c.with_stages(stages);
        all.extend([
            s(MatmulConfig::simt(128, 128, 8, 8, 8), 3),
            s(MatmulConfig::simt(128, 128, 8, 8, 8), 4),
            s(MatmulConfig::simt(256, 128, 8, 16, 8), 3),
            s(MatmulConfig::simt(128, 256, 8, 8, 16), 3),
        ]);
    }
    if mma_ok && cc >= (8, 0) {
        let bk = 2 * mma_k;
        all.extend([
            MatmulConfig::mma(128, 128, bk, 64, 64),
            MatmulConfig::mma(64, 64, bk, 32, 32),
            MatmulConfig::mma(128, 64, bk, 64, 32),
            MatmulConfig::mma(64, 128, bk, 32, 64),
            MatmulConfig::mma(128, 128, bk, 32, 64),
            MatmulConfig::mma(128, 128, 4 * mma_k, 64, 64),
            MatmulConfig::mma(64, 64, 4 * mma_k, 32, 32),
        ]);
        // The cp.async pipelines (3-4 stages, dynamic shared memory) and their tile shapes.
        all.extend(super::config::candidates(mma_k, elem_size));
    }
    if mma_ok && cc == (9, 0) {
        // Hopper: TMA + wgmma. 128×128 in 3 stages (97 KiB) lets two blocks share a
        // multiprocessor: one's epilogue overlaps the other's main loop.
        let line = (128 / elem_size) as u32;
        for (bm, bn, stages) in [
            (128, 256, 4),
            (256, 128, 4),
            (128, 128, 6),
            (128, 128, 4),
            (128, 128, 3),
            (64, 256, 5),
        ] {
            all.push(MatmulConfig::wgmma(bm, bn, line, stages));
        }
        // The warp-specialised, persistent kernel: two consumers of 128×128 tiles taking
        // turns, so that one's epilogue runs under the other's main loop.
        // (Clusters of two sharing B, `with_cluster_m(2)`, were level with these on an H100
        // at 4096³-8192³, never faster: not candidates.)
        for stages in [4, 5] {
            all.push(MatmulConfig::wgmma_ws(128, 128, line, stages));
        }
        // Both consumers on each 256×128 or 128×256 tile (CUTLASS's cooperative schedule),
        // four stages: the producer fills the next tile's stages during the epilogue (0.97x
        // cuBLAS at 4096³ bf16 on an H100, against 0.92x for `wgmma` 128×256 s4).
        for (bm, bn) in [(256, 128), (128, 256)] {
            all.push(MatmulConfig::wgmma_ws_cooperative(bm, bn, line, 4));
        }
    }
    let mut out: Vec<MatmulConfig> = Vec::new();
    for c in all {
        // A pipelined configuration keeps its buffers in dynamic shared memory (up to the
        // opt-in limit; the largest layout of its operands), the others in static.
        let fits = if c.engine.is_hopper() {
            c.shared_bytes(elem_size) <= max_optin
        } else if c.engine == Engine::Mma && c.stages >= 3 {
            c.pipeline_shared_bytes(elem_size, false, false)
                .max(c.pipeline_shared_bytes(elem_size, true, true))
                <= max_optin
        } else {
            c.shared_bytes(elem_size) <= max_shared
        };
        let ok =
            (c.engine == Engine::Simt || mma_ok) && c.validate(mma_k, elem_size).is_ok() && fits;
        if ok && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

impl<T: MatmulInput, O: MatmulOutput> Matmul<T, O> {
    /// For an unpinned product that may be tuned (tuning on for this `Matmul`, not the
    /// simulator): its tuning key, with the known winner if there is one that is valid for
    /// these types. `None` when tuning does not apply.
    pub(super) fn known_winner(
        &self,
        ctx: &Context,
        p: &Problem,
    ) -> Option<(Option<MatmulConfig>, String)> {
        if !self.tune || self.config.is_some() || crate::on_simulator() {
            return None;
        }
        let (name, cc, driver) = device_id(ctx).ok()?;
        let key = TuneKey::new(
            (&name, cc),
            &driver,
            (<T as MatmulOutput>::NAME, O::NAME),
            self.tf32,
            (p.a.row_major, p.b.row_major, p.c.row_major),
            (p.m, p.n, p.k),
            p.batch,
        )
        .line();
        let won = lookup(&key).filter(|c| self.check_config(c).is_ok());
        Some((won, key))
    }

    /// Times the candidates for `p` (on a scratch C; the user's C is not touched), records
    /// and returns the fastest; `default` if none could be timed or `stream` is capturing a
    /// graph (nothing is recorded then).
    pub(super) fn tune_now(
        &self,
        stream: &Stream,
        call: &Call<'_>,
        p: &Problem,
        default: MatmulConfig,
        key: String,
    ) -> MatmulConfig {
        // Timing needs events and waits, which a stream capturing a graph does not allow:
        // the default choice is captured, and the key is tuned on a later uncaptured call.
        if stream.is_capturing().unwrap_or(true) {
            return default;
        }
        let mut launches = 0;
        let mut skipped = 0;
        let r = self.time_candidates(stream, call, p, default, (&mut launches, &mut skipped));
        count(launches, skipped);
        match r {
            Ok(Some((best, ms))) => {
                log_line(format_args!(
                    "{key}: {} ({ms:.3} ms)",
                    config_to_text(&best)
                ));
                record(key, best);
                best
            }
            Ok(None) => default,
            Err(e) => {
                log_line(format_args!("{key}: not tuned: {e}"));
                default
            }
        }
    }

    fn time_candidates(
        &self,
        stream: &Stream,
        call: &Call<'_>,
        p: &Problem,
        default: MatmulConfig,
        (launches, skipped): (&mut u64, &mut u64),
    ) -> Result<Option<(MatmulConfig, f32)>> {
        let ctx = stream.context();
        let dev = ctx.device();
        let cc = dev.compute_capability()?;
        let max_shared = dev.max_shared_memory_per_block()? as usize;
        let max_optin = dev.max_shared_memory_per_block_optin()? as usize;
        let mut cands = tune_candidates(
            default,
            self.mma_allowed_on(cc),
            cc,
            T::K,
            <T as Scalar>::TY.size(),
            (max_shared, max_optin.max(max_shared)),
        );
        if self.mma_allowed_on(cc) {
            let sms = dev.multiprocessor_count()? as usize;
            let size = <T as Scalar>::TY.size();
            cands.extend(super::split_k::candidates(p, cc, sms, size));
        }
        // A scratch C of C's shape and layout (packed); beta 0, so it is never read.
        let (b, m, n) = (p.batch, p.m, p.n);
        let (shape, strides): (Vec<usize>, Vec<isize>) = match (b > 1, p.c.row_major) {
            (true, true) => (vec![b, m, n], vec![(m * n) as isize, n as isize, 1]),
            (true, false) => (vec![b, m, n], vec![(m * n) as isize, 1, m as isize]),
            (false, true) => (vec![m, n], vec![n as isize, 1]),
            (false, false) => (vec![m, n], vec![1, m as isize]),
        };
        let scratch =
            DeviceArray::<O, ndarray::IxDyn>::alloc_ordered(stream, ndarray::IxDyn(&[b * m * n]))?;
        let co = Operand::from_parts(
            "C",
            scratch.device_ptr(),
            &shape,
            &strides,
            Transpose::N,
            O::TY.size(),
        )?;
        let sp = Problem { c: co, ..*p };
        let scall = Call {
            a: call.a,
            b: call.b,
            c: (co, ctx),
            col: call.col,
            row: call.row,
            alpha: call.alpha,
            beta: 0.0,
        };
        let events: Vec<_> = (0..2 * TIMED_LAUNCHES)
            .map(|_| ctx.new_event())
            .collect::<Result<_>>()?;
        let mut timed: Vec<(MatmulConfig, f32)> = Vec::new();
        for cfg in cands {
            if self.check_config(&cfg).is_err() {
                continue;
            }
            let mut time = || -> Result<f32> {
                // As `launch` runs it (operands staged where this configuration needs it: the
                // copies are part of the time).
                let mut once = || -> Result<()> {
                    *launches += 1;
                    self.run_config(stream, &scall, &sp, cfg, false)
                };
                once()?;
                let mut ms = Vec::with_capacity(TIMED_LAUNCHES);
                for pair in events.chunks(2) {
                    pair[0].record(stream)?;
                    once()?;
                    pair[1].record(stream)?;
                }
                for pair in events.chunks(2) {
                    pair[1].synchronize()?;
                    ms.push(pair[1].elapsed_ms_since(&pair[0])?);
                }
                Ok(median(&mut ms))
            };
            match time() {
                Ok(ms) => {
                    log_line(format_args!("  {}: {ms:.4} ms", config_to_text(&cfg)));
                    timed.push((cfg, ms));
                }
                Err(e) => {
                    *skipped += 1;
                    note_skip(&cfg, &e);
                }
            }
        }
        // Candidates within 5% of the fastest are timed again, interleaved, with more
        // launches: one median of 3 each can rank two near-equal kernels either way.
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        let close: Vec<MatmulConfig> = timed
            .iter()
            .take(FINALISTS)
            .filter(|(_, ms)| *ms <= timed[0].1 * 1.05)
            .map(|(c, _)| *c)
            .collect();
        let mut best = timed.first().copied();
        if close.len() > 1 {
            let mut ms = vec![Vec::with_capacity(FINAL_ROUNDS); close.len()];
            let ev: Vec<_> = (0..2 * close.len())
                .map(|_| ctx.new_event())
                .collect::<Result<_>>()?;
            for _ in 0..FINAL_ROUNDS {
                for (i, cfg) in close.iter().enumerate() {
                    ev[2 * i].record(stream)?;
                    *launches += 1;
                    self.run_config(stream, &scall, &sp, *cfg, false)?;
                    ev[2 * i + 1].record(stream)?;
                }
                for (i, m) in ms.iter_mut().enumerate() {
                    ev[2 * i + 1].synchronize()?;
                    m.push(ev[2 * i + 1].elapsed_ms_since(&ev[2 * i])?);
                }
            }
            best = close
                .iter()
                .zip(ms.iter_mut())
                .map(|(c, m)| (*c, median(m)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((c, t)) = best {
                log_line(format_args!(
                    "  finalists again: {} ({t:.4} ms)",
                    config_to_text(&c)
                ));
            }
        }
        drop(scratch);
        Ok(best)
    }
}

/// Candidates timed again when within 5% of the fastest, and their interleaved rounds.
const FINALISTS: usize = 3;
const FINAL_ROUNDS: usize = 7;

/// The median of `v` (not empty).
pub(crate) fn median(v: &mut [f32]) -> f32 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_valid_and_fit() {
        let def = MatmulConfig::choose(true, (9, 0), 132, 4096, 4096, 1, 16);
        let c = tune_candidates(def, true, (9, 0), 16, 2, (48 * 1024, 227 * 1024));
        assert_eq!(c[0], def);
        assert!(c.iter().any(|c| c.engine == Engine::Mma));
        assert!(c.iter().any(|c| c.engine == Engine::Simt));
        for x in &c {
            x.validate(16, 2).unwrap();
        }
        // No tensor cores before sm_80 or for exact f32; a small shared memory drops the
        // large tiles.
        let def = MatmulConfig::choose(false, (9, 0), 132, 64, 64, 1, 8);
        let c = tune_candidates(def, false, (9, 0), 8, 4, (48 * 1024, 227 * 1024));
        assert!(c.iter().all(|c| c.engine == Engine::Simt));
        let c = tune_candidates(def, true, (7, 5), 8, 4, (48 * 1024, 227 * 1024));
        assert!(c.iter().all(|c| c.engine == Engine::Simt));
        let small = tune_candidates(def, false, (9, 0), 8, 4, (8 * 1024, 8 * 1024));
        assert!(small.iter().all(|c| c.shared_bytes(4) <= 8 * 1024));
        assert!(
            small.len() < tune_candidates(def, false, (9, 0), 8, 4, (48 * 1024, 227 * 1024)).len()
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [5.0, 1.0, 2.0, 4.0, 3.0]), 3.0);
    }
}
