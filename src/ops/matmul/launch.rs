//! Launching a matrix multiply: the checks of a call, the variant and configuration chosen for
//! it, the grid (tiles of C along x, batches along z in chunks of at most 65,535), and the
//! parameters in the order `Params::declare` declares them.

use crate::codegen::{Kernel, Scalar};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::module::LaunchConfig;
use crate::stream::Stream;
use std::collections::HashMap;

use super::config::{Engine, MatmulConfig};
use super::epilogue::VecArg;
use super::shape::{Operand, Problem};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;
use super::Matmul;
use crate::backend::tensor_map::TensorMapBytes;

/// The largest grid z (batches per launch).
const MAX_Z: usize = 65_535;

/// One call's operands, each with its context.
pub(super) struct Call<'a> {
    pub a: (Operand, &'a Context),
    pub b: (Operand, &'a Context),
    pub c: (Operand, &'a Context),
    pub col: Option<VecArg<'a>>,
    pub row: Option<VecArg<'a>>,
    pub alpha: f32,
    pub beta: f32,
}

impl<T: MatmulInput, O: MatmulOutput> Matmul<T, O> {
    /// Checks `call` and launches its kernel(s) on `stream`.
    pub(super) fn launch(&self, stream: &Stream, call: Call<'_>) -> Result<()> {
        let ctx = stream.context();
        ctx.check_same(call.a.1, "matmul's A")?;
        ctx.check_same(call.b.1, "matmul's B")?;
        ctx.check_same(call.c.1, "matmul's output C")?;
        let p = Problem::new(call.a.0, call.b.0, call.c.0)?;
        let epi = &self.epilogue;
        for (given, takes, len, what, side) in [
            (call.col, epi.col, p.n, "per-column", "N"),
            (call.row, epi.row, p.m, "per-row", "M"),
        ] {
            match (given, takes) {
                (Some(v), true) => {
                    ctx.check_same(v.ctx, "matmul's epilogue vector")?;
                    if v.len != len {
                        return Err(Error::Shape {
                            op: "matmul: an epilogue vector (N elements per column, M per row)",
                            expected: vec![len],
                            actual: vec![v.len],
                        });
                    }
                }
                (None, true) => {
                    return Err(Error::usage(format!(
                    "matmul: the epilogue `{}` takes a {what} vector ({side} elements): pass it \
                         with `run_with(.., EpilogueVectors::new().{}(&v))`",
                    epi.name,
                    if side == "N" { "col" } else { "row" }
                )))
                }
                (Some(_), false) => {
                    return Err(Error::usage(format!(
                        "matmul: a {what} vector was given, but the epilogue `{}` takes none \
                         (declare it with `Epilogue::with_{}_vector`)",
                        epi.name,
                        if side == "N" { "col" } else { "row" }
                    )))
                }
                (None, false) => {}
            }
        }
        if !call.alpha.is_finite() || !call.beta.is_finite() {
            return Err(Error::usage(format!(
                "matmul: alpha ({}) and beta ({}) must be finite",
                call.alpha, call.beta
            )));
        }
        if p.is_noop() {
            return Ok(());
        }
        p.check_overlap()?;
        let max = u32::MAX as usize / 2;
        if p.m > max || p.n > max || p.k > max {
            return Err(Error::usage(format!(
                "matmul: dimensions up to {max} are supported; this product is {} × {} × {}",
                p.m, p.n, p.k
            )));
        }
        let (mut cfg, tune_key) = self.choice(ctx, &p)?;
        if let Some(key) = tune_key {
            cfg = self.tune_now(stream, &call, &p, cfg, key);
        }
        self.run_config(stream, &call, &p, cfg, call.beta != 0.0)
    }

    /// Runs `call` (checked as problem `p`) with configuration `cfg` (`read_c`: beta is not
    /// 0): what a product and each timed launch of the tuner do. Operands the Hopper engine
    /// cannot read as given (tf32 MN-major, unaligned leading dimensions) are copied first;
    /// the copies are freed in the stream's order after the product.
    pub(super) fn run_config(
        &self,
        stream: &Stream,
        call: &Call<'_>,
        p: &Problem,
        cfg: MatmulConfig,
        read_c: bool,
    ) -> Result<()> {
        let ctx = stream.context();
        if let Some(slices) = super::split_k::slices(p, &cfg, <T as Scalar>::TY.size()) {
            return self.run_split_k(stream, call, p, cfg, slices);
        }
        let cfg = cfg.with_split_k(1);
        let (p, _staged) = super::staging::staged::<T>(stream, p, &cfg)?;
        let mut v = self.variant(&p, cfg, read_c);
        let pair = 2 * std::mem::size_of::<O>() as u64;
        v.col_pairs = v.vec_c && v.col_vec && call.col.is_some_and(|c| c.ptr % pair == 0);
        let kernel = self.kernel(&v)?;
        let shared = self.dynamic_shared(ctx, &kernel, &v)?;
        let maps = self.maps(ctx, &p, &v)?;
        launch_cfg(&kernel, stream, call, &p, v.cfg, shared, maps.as_ref())
    }

    /// The configuration for problem `p`: the pinned one, or the default for its shape class
    /// on this device; checked.
    pub(super) fn config_for_problem(&self, ctx: &Context, p: &Problem) -> Result<MatmulConfig> {
        Ok(self.choice(ctx, p)?.0)
    }

    /// The configuration for problem `p` (checked) and, when it is the default choice and
    /// should be tuned now, the tuning key: the pinned configuration; else a known tuning
    /// winner (see `tune.rs`); else [`MatmulConfig::choose`]'s.
    pub(super) fn choice(
        &self,
        ctx: &Context,
        p: &Problem,
    ) -> Result<(MatmulConfig, Option<String>)> {
        let dev = ctx.device();
        let cc = dev.compute_capability()?;
        if let Some(c) = self.config {
            self.check_config(&c)?;
            // (The simulator runs cp.async whatever compute capability it reports.)
            if c.engine == Engine::Simt && c.stages >= 3 && cc < (8, 0) && !crate::on_simulator() {
                return Err(Error::usage(format!(
                    "matmul: the SIMT configuration `{c}` copies its tiles with cp.async, \
                     which needs sm_80 or later; this device is sm_{}{}: pin it with 1 or 2 \
                     stages",
                    cc.0, cc.1
                )));
            }
            return Ok((c, None));
        }
        let sms = dev.multiprocessor_count()?;
        let cfg = MatmulConfig::choose(self.mma_allowed_on(cc), cc, sms, p.m, p.n, p.batch, T::K);
        self.check_config(&cfg)?;
        match self.known_winner(ctx, p) {
            Some((Some(won), _)) => Ok((won, None)),
            Some((None, key)) if super::tune::tuning_enabled() => Ok((cfg, Some(key))),
            _ => Ok((cfg, None)),
        }
    }

    /// Whether the tensor cores may compute this product: f16, bf16 and the 8-bit floats
    /// always, f32 when tf32 is allowed.
    pub(super) fn mma_allowed(&self) -> bool {
        <T as Scalar>::TY.size() != 4 || self.tf32
    }

    /// Whether the tensor cores may compute this product on a device of compute capability
    /// `cc`: as [`mma_allowed`](Self::mma_allowed), the 8-bit floats from sm_89 (the
    /// simulator runs every engine).
    pub(super) fn mma_allowed_on(&self, cc: (u32, u32)) -> bool {
        self.mma_allowed()
            && (<T as Scalar>::TY.size() != 1 || cc >= (8, 9) || crate::on_simulator())
    }

    pub(super) fn check_config(&self, cfg: &MatmulConfig) -> Result<()> {
        cfg.validate(T::K, <T as Scalar>::TY.size())?;
        if cfg.engine == Engine::Mma && !self.mma_allowed() {
            return Err(Error::usage(
                "matmul: the tensor-core configuration computes f32 inputs as tf32 (10-bit \
                 mantissas); allow it with `.tf32(true)`, or pin a SIMT configuration",
            ));
        }
        Ok(())
    }

    /// The dynamic shared memory of variant `v`'s kernel: the cp.async pipeline's buffers (with
    /// the kernel's opt-in set above 48 KiB), 0 for the register-staged kernels and the SIMT one.
    pub(super) fn dynamic_shared(
        &self,
        ctx: &Context,
        kernel: &Kernel<()>,
        v: &Variant,
    ) -> Result<u32> {
        // (The SIMT pipeline's tiles are static.)
        if !v.pipe || v.cfg.engine == Engine::Simt {
            return Ok(0);
        }
        let size = <T as Scalar>::TY.size();
        let bytes = if v.cfg.engine.is_hopper() {
            v.cfg.shared_bytes(size) as u32
        } else {
            v.cfg.pipeline_shared_bytes(size, v.a_row, !v.b_row) as u32
        };
        if bytes > 48 * 1024 {
            kernel.function(ctx)?.set_max_dynamic_shared_memory(bytes)?;
        }
        Ok(bytes)
    }

    /// The tensor maps of A and B that variant `v`'s kernel takes (the Hopper engine's).
    pub(super) fn maps(
        &self,
        ctx: &Context,
        p: &Problem,
        v: &Variant,
    ) -> Result<Option<[TensorMapBytes; 2]>> {
        if !v.cfg.engine.is_hopper() {
            return Ok(None);
        }
        super::hopper::tensor_maps::<T>(ctx, p, v).map(Some)
    }

    /// The kernel variant for `p` under `cfg`.
    pub(super) fn variant(&self, p: &Problem, cfg: MatmulConfig, read_c: bool) -> Variant {
        let size = <T as Scalar>::TY.size();
        // The Hopper engine where TMA can read both operands (and, for tf32, both are
        // K-major); elsewhere the mma.sync pipeline's default.
        let cfg = if cfg.engine.is_hopper()
            && !(super::hopper::tma_ok(&p.a)
                && super::hopper::tma_ok(&p.b)
                && super::hopper::layouts_ok(&p.a, &p.b, size))
        {
            MatmulConfig::mma_pipeline(T::K, true)
        } else {
            cfg
        };
        let hopper = cfg.engine.is_hopper();
        // The cp.async pipeline copies 16-byte chunks along each operand's contiguous axis:
        // aligned starts, leading dimensions and batch strides, and whole chunks per tile line
        // (a chunk that the matrix ends in is zero-filled past its end).
        let chunk = |o: &Operand, contig_k: bool, x_tile: u32| {
            let e = (16 / size) as u64;
            let tile = if contig_k { cfg.block_k } else { x_tile };
            o.ptr % 16 == 0 && o.ld as u64 % e == 0 && o.bs as u64 % e == 0 && tile as u64 % e == 0
        };
        // The SIMT kernel's pipeline copies f32 as it is (4-byte copies where 16 do not
        // apply): any layout.
        let pipe = hopper
            || (cfg.engine == Engine::Simt && cfg.stages >= 3 && size == 4)
            || (cfg.engine == Engine::Mma
                && cfg.stages >= 3
                && chunk(&p.a, p.a.row_major, cfg.block_m)
                && chunk(&p.b, !p.b.row_major, cfg.block_n));
        let cfg = if pipe { cfg } else { cfg.fallback(T::K, size) };
        // Vector loads (not in the Hopper kernel, whose copies are TMA's) need whole vectors
        // along the tile's contiguous extent too.
        let vec = |o: &Operand, contig_k: bool, x_tile: u32| {
            let tile = if contig_k { cfg.block_k } else { x_tile };
            // (Four 8-bit elements are 4 bytes: no vector access moves them.)
            !hopper && size >= 2 && o.vec4_ok() && tile % 4 == 0
        };
        Variant {
            cfg,
            pipe,
            a_row: p.a.row_major,
            b_row: p.b.row_major,
            c_row: p.c.row_major,
            vec_a: vec(&p.a, p.a.row_major, cfg.block_m),
            vec_b: vec(&p.b, !p.b.row_major, cfg.block_n),
            vec_c: hopper
                && p.c.row_major
                && !read_c
                && super::epilogue_vec::applies(cfg.engine, std::mem::size_of::<O>())
                && p.c.vec4_ok(),
            read_c,
            col_vec: self.epilogue.col,
            col_pairs: false,
            row_vec: self.epilogue.row,
        }
    }
}

/// Launches `kernel` (built for `cfg`) on `p`: the tiles of C along x, the batches along z
/// in chunks of at most 65,535.
pub(super) fn launch_cfg(
    kernel: &Kernel<()>,
    stream: &Stream,
    call: &Call<'_>,
    p: &Problem,
    cfg: MatmulConfig,
    shared: u32,
    maps: Option<&[TensorMapBytes; 2]>,
) -> Result<()> {
    let tiles_m = p.m.div_ceil(cfg.block_m as usize);
    let tiles_n = p.n.div_ceil(cfg.block_n as usize);
    let tiles = tiles_m * tiles_n;
    if tiles > i32::MAX as usize {
        return Err(Error::usage(format!(
            "matmul: {tiles} tiles of C are more than one grid holds"
        )));
    }
    // The persistent kernel: at most one block per multiprocessor (shared among the batches
    // of a launch), each walking tiles `gridDim.x` apart; with clusters, as many clusters as
    // the device holds at once, each walking units of `cluster_m` tiles.
    let cl = cfg.cluster_m.max(1) as usize;
    let units = tiles_m.div_ceil(cl) * tiles_n;
    let resident = if cfg.engine == Engine::WgmmaWs {
        resident_units(kernel, stream, cfg, shared)?
    } else {
        0
    };
    let mut batch0 = 0;
    while batch0 < p.batch {
        let chunk = (p.batch - batch0).min(MAX_Z);
        let blocks = if resident > 0 {
            units.min(resident.div_ceil(chunk)).max(1) * cl
        } else {
            tiles
        };
        let mut lc = LaunchConfig::new((blocks as u32, 1, chunk as u32), cfg.threads());
        if shared > 0 {
            lc = lc.with_shared_mem(shared);
        }
        if cl > 1 {
            lc = lc.with_cluster((cl as u32, 1, 1));
        }
        push_launch(kernel, stream, call, p, lc, (tiles_n, batch0), maps)?;
        batch0 += chunk;
    }
    Ok(())
}

/// How many blocks (clusters, with `cfg.cluster_m` > 1) of the persistent kernel fit on the
/// device at once: the multiprocessors, or the driver's count of resident clusters (asked
/// once per kernel function and shared memory size).
fn resident_units(
    kernel: &Kernel<()>,
    stream: &Stream,
    cfg: MatmulConfig,
    shared: u32,
) -> Result<usize> {
    let ctx = stream.context();
    let sms = ctx.device().multiprocessor_count()? as usize;
    let cl = cfg.cluster_m.max(1);
    if cl == 1 {
        return Ok(sms);
    }
    static KNOWN: std::sync::LazyLock<parking_lot::Mutex<HashMap<(usize, u32), usize>>> =
        std::sync::LazyLock::new(Default::default);
    let key = (kernel.function(ctx)?.raw() as usize, shared);
    if let Some(&n) = KNOWN.lock().get(&key) {
        return Ok(n);
    }
    let lc = LaunchConfig::new(cl, cfg.threads())
        .with_shared_mem(shared)
        .with_cluster(cl);
    let n = (kernel.max_active_clusters(ctx, lc)? as usize).clamp(1, sms / cl as usize);
    KNOWN.lock().insert(key, n);
    Ok(n)
}

/// Pushes the parameters (in `Params::declare`'s order) and launches batches
/// `batch0..batch0 + grid.z`.
fn push_launch(
    kernel: &Kernel<()>,
    stream: &Stream,
    call: &Call<'_>,
    p: &Problem,
    lc: LaunchConfig,
    (tiles_n, batch0): (usize, usize),
    maps: Option<&[TensorMapBytes; 2]>,
) -> Result<()> {
    kernel.launch_with(stream, lc, |buf| {
        buf.push_flat(call.a.1, p.a.ptr, p.a.span())?;
        buf.push_flat(call.b.1, p.b.ptr, p.b.span())?;
        buf.push_flat(call.c.1, p.c.ptr, p.c.span())?;
        for v in [call.col, call.row].into_iter().flatten() {
            buf.push_flat(v.ctx, v.ptr, v.len)?;
        }
        for x in [p.m, p.n, p.k] {
            buf.push_scalar(x as u64)?;
        }
        for x in [p.a.ld, p.b.ld, p.c.ld, p.a.bs, p.b.bs, p.c.bs] {
            buf.push_scalar(x as u64)?;
        }
        buf.push_scalar(Scalar::to_bits(call.alpha))?;
        buf.push_scalar(Scalar::to_bits(call.beta))?;
        buf.push_scalar(tiles_n as u64)?;
        buf.push_scalar(batch0 as u64)?;
        for (m, ctx) in maps.into_iter().flatten().zip([call.a.1, call.b.1]) {
            buf.push_tensor_map(ctx, &m.0)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::matmul::shape::Transpose;
    use half::f16;

    /// A `rows × cols` f16 operand at `ptr`, row-major with leading dimension `ld`.
    fn op(ptr: u64, rows: usize, cols: usize, ld: usize) -> Operand {
        Operand::from_parts("X", ptr, &[rows, cols], &[ld as isize, 1], Transpose::N, 2).unwrap()
    }

    fn problem(a: Operand, b: Operand) -> Problem {
        Problem {
            m: a.rows,
            n: b.cols,
            k: a.cols,
            batch: 1,
            a,
            b,
            c: op(0, a.rows, b.cols, b.cols),
        }
    }

    #[test]
    fn pipeline_where_the_operands_allow_16_byte_chunks() {
        let mm = Matmul::<f16>::new();
        let cfg = MatmulConfig::mma(128, 128, 32, 64, 64).with_stages(3);
        // Aligned, leading dimensions whole chunks (8 f16): the pipeline, at 3 stages.
        let v = mm.variant(
            &problem(op(256, 65, 40, 48), op(512, 40, 33, 40)),
            cfg,
            false,
        );
        assert!(v.pipe);
        assert_eq!(v.cfg.stages, 3);
        // A leading dimension of 41 elements, or a start off 16 bytes: the 2-stage kernel.
        for p in [
            problem(op(256, 65, 40, 41), op(512, 40, 33, 40)),
            problem(op(256, 65, 40, 48), op(514, 40, 33, 40)),
        ] {
            let v = mm.variant(&p, cfg, false);
            assert!(!v.pipe);
            assert_eq!(v.cfg.stages, 2);
        }
        // 2 stages never pipeline.
        let v = mm.variant(
            &problem(op(256, 65, 40, 48), op(512, 40, 33, 40)),
            cfg.with_stages(2),
            false,
        );
        assert!(!v.pipe);
    }
}
