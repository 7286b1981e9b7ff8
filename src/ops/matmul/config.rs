//! The tile configuration of a matrix-multiply kernel ([`MatmulConfig`]), its checks, and the
//! default chooser by shape class (the hook a timing-based autotuner will replace).

use crate::error::{Error, Result};

/// The most dynamic shared memory a block may opt in to on sm_80 and later (227 KiB on
/// H100; an A100 allows 163 KiB, a consumer Ampere 99 KiB: the launch's opt-in fails there
/// with the driver's error).
pub(super) const MAX_DYNAMIC_SHARED: usize = 227 * 1024;

/// Which kernel computes the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// CUDA cores: each thread computes a register tile of `thread_m × thread_n` outputs with
    /// f32 fused multiply-adds (inputs converted to f32 in shared memory). Every dtype, every
    /// device.
    Simt,
    /// Tensor cores (`mma.sync`, sm_80 and later): each warp computes a `warp_m × warp_n` tile
    /// as a grid of 16×8 MMA tiles; f16 and bf16 inputs, or f32 inputs computed as tf32; f32
    /// accumulation.
    Mma,
    /// Hopper's warpgroup MMA (`wgmma`, sm_90) on tiles that TMA copies into shared-memory
    /// stages: `block_m / 64` warpgroups, each a `64 × block_n` tile; one 128-byte line of K per
    /// tile row (`block_k` 64 for f16/bf16, 32 for tf32); f16/bf16 in any layout, tf32 with A
    /// row-major and B column-major (else, and where TMA cannot read an operand, the product
    /// runs on the `Mma` engine's default).
    Wgmma,
    /// Hopper, warp-specialised and persistent (`wgmma` + TMA, sm_90): blocks of three
    /// warpgroups stay resident and walk the tiles of C; one producer warpgroup issues the TMA
    /// copies into a ring of `stages` stages, and two consumer warpgroups take turns, each
    /// computing a whole `block_m × block_n` tile (`block_m` 64 or 128) while the other runs
    /// its epilogue, or share each tile (`block_m` up to 256, see
    /// [`MatmulConfig::wgmma_ws_cooperative`]). Operands as [`Engine::Wgmma`].
    WgmmaWs,
}

impl Engine {
    /// Whether this is one of the Hopper engines (TMA-fed `wgmma`).
    pub fn is_hopper(self) -> bool {
        matches!(self, Engine::Wgmma | Engine::WgmmaWs)
    }
}

/// The tiles of a matrix-multiply kernel: what an autotuner chooses. Pin one with
/// [`Matmul::config`](super::Matmul::config); otherwise [`MatmulConfig::choose`] picks one by
/// the problem's shape class and the device.
///
/// ```
/// use cudajit::ops::MatmulConfig;
/// // A 64×64 block tile, 8 deep in K, 4×4 outputs per thread: 256 threads.
/// let simt = MatmulConfig::simt(64, 64, 8, 4, 4);
/// assert_eq!(simt.threads(), 256);
/// // A 128×128 block tile of 4 warps, each 64×64 (4×8 MMA tiles), 32 deep in K.
/// let mma = MatmulConfig::mma(128, 128, 32, 64, 64);
/// assert_eq!(mma.threads(), 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatmulConfig {
    /// The kernel.
    pub engine: Engine,
    /// Rows of C per block.
    pub block_m: u32,
    /// Columns of C per block.
    pub block_n: u32,
    /// Depth (along K) of the shared-memory tiles.
    pub block_k: u32,
    /// SIMT: rows of C per thread; MMA: rows of C per warp (a multiple of 16).
    pub sub_m: u32,
    /// SIMT: columns of C per thread; MMA: columns of C per warp (a multiple of 8).
    pub sub_n: u32,
    /// Shared-memory buffers: 1 (load, barrier, compute, barrier) or 2 (the next tile is read
    /// from global memory into registers while the current one is computed, then stored to the
    /// other buffer: one barrier per tile). Tensor cores also 3 or 4: a `cp.async` pipeline
    /// (tiles copied global → shared with no registers, `stages - 1` of them in flight, in
    /// dynamic shared memory) where the operands allow 16-byte copies (16-byte aligned, leading
    /// dimensions and batch strides whole 16-byte chunks); elsewhere the 2-stage kernel runs.
    pub stages: u32,
    /// Blocks per thread-block cluster along M ([`Engine::WgmmaWs`] only; 1 elsewhere): with
    /// 2, the two blocks of a cluster compute vertically adjacent tiles that share B's
    /// k-tiles, and each copies half of every one into both blocks by TMA multicast, so that
    /// B is read from L2 once per pair (see [`with_cluster_m`](Self::with_cluster_m)).
    pub cluster_m: u32,
    /// Slices of K computed as separate partial products and summed (1: no split; see
    /// [`with_split_k`](Self::with_split_k)).
    pub split_k: u32,
}

/// The form of tuning files and logs: `mma 128x128x32 64x64 s3` (engine, block
/// `m×n×k`, warp or thread tile `m×n`, stages).
impl std::fmt::Display for MatmulConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::tune::config_to_text(self))
    }
}

/// Parses [`Display`](std::fmt::Display)'s form, e.g. `"mma 128x128x64 64x64 s3".parse()`;
/// the configuration is checked for a type when it is used.
impl std::str::FromStr for MatmulConfig {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        super::tune::config_from_text(s).ok_or_else(|| {
            Error::usage(format!(
                "`{s}` is not a matmul configuration: write it as `mma 128x128x32 64x64 s3` \
                 or `simt 128x128x8 8x8 s2` (engine, block MxNxK, warp or thread tile MxN, \
                 stages)"
            ))
        })
    }
}

impl MatmulConfig {
    /// A SIMT configuration: a `block_m × block_n` tile of C per block, `block_k` deep, each
    /// thread computing `thread_m × thread_n` outputs; two stages.
    pub const fn simt(
        block_m: u32,
        block_n: u32,
        block_k: u32,
        thread_m: u32,
        thread_n: u32,
    ) -> Self {
        MatmulConfig {
            engine: Engine::Simt,
            block_m,
            block_n,
            block_k,
            sub_m: thread_m,
            sub_n: thread_n,
            stages: 2,
            cluster_m: 1,
            split_k: 1,
        }
    }

    /// A tensor-core configuration: a `block_m × block_n` tile of C per block, `block_k` deep
    /// (a multiple of the MMA's K: 16 for f16/bf16, 8 for tf32), each warp computing
    /// `warp_m × warp_n` outputs; two stages.
    pub const fn mma(block_m: u32, block_n: u32, block_k: u32, warp_m: u32, warp_n: u32) -> Self {
        MatmulConfig {
            engine: Engine::Mma,
            block_m,
            block_n,
            block_k,
            sub_m: warp_m,
            sub_n: warp_n,
            stages: 2,
            cluster_m: 1,
            split_k: 1,
        }
    }

    /// The default `mma.sync` pipeline for inputs whose MMA is `mma_k` deep, 128×128 tiles for
    /// `large` products (else 64×64). block_k: 32 for f16/bf16 (2 MMAs deep), 16 for tf32 (2
    /// MMAs deep): 64 bytes of K per line either way. The cp.async pipeline (CUTLASS's sm80
    /// default shape for f16: 128×128×32, 4 warps of 64×64, 3 stages; tf32 4 stages of half
    /// the depth), which falls back to 2 register-staged stages where the operands are not
    /// aligned.
    pub(super) fn mma_pipeline(mma_k: u32, large: bool) -> Self {
        let bk = 2 * mma_k;
        let stages = if mma_k == 8 { 4 } else { 3 };
        if large {
            MatmulConfig::mma(128, 128, bk, 64, 64).with_stages(stages)
        } else {
            MatmulConfig::mma(64, 64, bk, 32, 32).with_stages(stages)
        }
    }

    /// A Hopper configuration (see [`Engine::Wgmma`]): `block_m / 64` warpgroups, each a
    /// `64 × block_n` tile, `block_k` one 128-byte line, `stages` TMA stages.
    pub const fn wgmma(block_m: u32, block_n: u32, block_k: u32, stages: u32) -> Self {
        MatmulConfig {
            engine: Engine::Wgmma,
            block_m,
            block_n,
            block_k,
            sub_m: 64,
            sub_n: block_n,
            stages,
            cluster_m: 1,
            split_k: 1,
        }
    }

    /// A warp-specialised, persistent Hopper configuration (see [`Engine::WgmmaWs`]): each
    /// consumer warpgroup computes `block_m × block_n` tiles (`block_m` 64 or 128),
    /// `block_k` one 128-byte line, `stages` TMA stages.
    pub const fn wgmma_ws(block_m: u32, block_n: u32, block_k: u32, stages: u32) -> Self {
        MatmulConfig {
            engine: Engine::WgmmaWs,
            block_m,
            block_n,
            block_k,
            sub_m: block_m,
            sub_n: block_n,
            stages,
            cluster_m: 1,
            split_k: 1,
        }
    }

    /// A warp-specialised, persistent Hopper configuration whose two consumer warpgroups share
    /// each `block_m × block_n` tile, `block_m / 2` rows each (CUTLASS's cooperative schedule:
    /// larger tiles than [`wgmma_ws`](Self::wgmma_ws)'s turns allow, 128×256 or 256×128 in
    /// four stages, but no epilogue under the other's main loop). The default for large
    /// f16/bf16 products on sm_90.
    pub const fn wgmma_ws_cooperative(
        block_m: u32,
        block_n: u32,
        block_k: u32,
        stages: u32,
    ) -> Self {
        let mut c = Self::wgmma_ws(block_m, block_n, block_k, stages);
        c.sub_m = block_m / 2;
        c
    }

    /// The same configuration launched as clusters of `blocks` blocks along M (1 or 2;
    /// [`Engine::WgmmaWs`] with `block_n` a multiple of 128): the cluster's blocks share B's
    /// tiles through TMA multicast (sm_90).
    pub const fn with_cluster_m(mut self, blocks: u32) -> Self {
        self.cluster_m = blocks;
        self
    }

    /// The same configuration with K split into `slices` (1 to 16): for a product with few
    /// tiles of C and a long K, where one block per tile would leave most multiprocessors
    /// idle. The slices are computed as one strided-batched product into an f32 workspace
    /// (`slices·M·N` elements, stream-ordered), then summed in order with alpha, beta·C and the
    /// epilogue applied by one elementwise kernel. Only an unbatched product whose K splits
    /// into equal slices of whole 16-byte chunks is split; others run unsplit.
    pub const fn with_split_k(mut self, slices: u32) -> Self {
        self.split_k = slices;
        self
    }

    /// The same configuration with `stages` shared-memory buffers (1 or 2; 3 or 4 for the
    /// `cp.async` pipelines: the tensor cores', and the SIMT kernel's for f32 on sm_80+; 2 to
    /// 8 TMA stages for `Wgmma`).
    pub const fn with_stages(mut self, stages: u32) -> Self {
        self.stages = stages;
        self
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        let (sm, sn) = (self.sub_m.max(1), self.sub_n.max(1));
        let units = (self.block_m / sm) * (self.block_n / sn);
        match self.engine {
            Engine::Simt => units,
            Engine::Mma => units * 32,
            Engine::Wgmma => units * 128,
            Engine::WgmmaWs => super::hopper_ws::THREADS,
        }
    }

    /// Padding (elements) added to each row of the shared tiles, against bank conflicts.
    pub(super) fn pad(&self, elem_size: usize) -> u32 {
        // 16 bytes: keeps 16-byte alignment of rows for later vector/ldmatrix loads.
        (16 / elem_size) as u32
    }

    /// Bytes of a Hopper kernel's TMA stages for inputs of `elem_size` bytes, plus 1 KiB to
    /// align them to the 128-byte swizzle's 1024 bytes.
    pub(super) fn ring_bytes(&self, elem_size: usize) -> usize {
        let (bm, bn, bk) = (
            self.block_m as usize,
            self.block_n as usize,
            self.block_k as usize,
        );
        (bm * bk + bk * bn) * elem_size * self.stages as usize + 1024
    }

    /// Bytes of static shared memory the kernel declares, for inputs of `elem_size` bytes
    /// (the SIMT kernel keeps f32 tiles).
    pub fn shared_bytes(&self, elem_size: usize) -> usize {
        let size = match self.engine {
            Engine::Simt => 4,
            Engine::Mma => elem_size,
            // TMA stages, plus 1 KiB to align them to the 128-byte swizzle's 1024 bytes (and
            // the warp-specialised kernel's epilogue staging after them).
            Engine::Wgmma | Engine::WgmmaWs => {
                let ring = self.ring_bytes(elem_size);
                return if self.engine == Engine::WgmmaWs {
                    ring + super::hopper_ws::staging_bytes(self.block_n, ring)
                } else {
                    ring
                };
            }
        };
        let pad = self.pad(size) as usize;
        let (bm, bn, bk) = (
            self.block_m as usize,
            self.block_n as usize,
            self.block_k as usize,
        );
        let per_stage = match self.engine {
            // sA[bk][bm + pad], sB[bk][bn + pad]
            Engine::Simt => bk * (bm + pad) + bk * (bn + pad),
            // sA[bm][bk + pad], sB[bk][bn + pad]
            Engine::Mma | Engine::Wgmma | Engine::WgmmaWs => bm * (bk + pad) + bk * (bn + pad),
        };
        per_stage * self.stages as usize * size
    }

    /// The register-staged configuration that runs for this one: itself (1 or 2 stages), or
    /// for a pipeline (3 or 4 stages) where the operands do not allow it, the same tiles in 2
    /// stages if they fit the 48 KiB of static shared memory, else 1, else with `block_k`
    /// halved (down to `mma_k`) until one stage fits.
    pub(super) fn fallback(&self, mma_k: u32, elem_size: usize) -> MatmulConfig {
        if self.stages <= 2 {
            return *self;
        }
        let fits = |c: &MatmulConfig| c.shared_bytes(elem_size) <= 48 * 1024;
        let mut c = self.with_stages(2);
        if fits(&c) {
            return c;
        }
        c = c.with_stages(1);
        while !fits(&c) && c.block_k / 2 >= mma_k.max(1) && (c.block_k / 2) % mma_k.max(1) == 0 {
            c.block_k /= 2;
        }
        c
    }

    /// Bytes of dynamic shared memory the `cp.async` pipeline (3 or 4 stages, tensor cores)
    /// takes for inputs of `elem_size` bytes, each operand's tile kept as its global layout has
    /// it (`[row][k]` or `[k][row]`, each line padded by 16 bytes): `a_contig_k` when op(A) is
    /// row-major, `b_contig_k` when op(B) is column-major.
    pub fn pipeline_shared_bytes(
        &self,
        elem_size: usize,
        a_contig_k: bool,
        b_contig_k: bool,
    ) -> usize {
        let pad = self.pad(elem_size) as usize;
        let (bm, bn, bk) = (
            self.block_m as usize,
            self.block_n as usize,
            self.block_k as usize,
        );
        let tile = |x: usize, contig_k: bool| {
            if contig_k {
                x * (bk + pad)
            } else {
                bk * (x + pad)
            }
        };
        (tile(bm, a_contig_k) + tile(bn, b_contig_k)) * self.stages as usize * elem_size
    }

    /// Checks the configuration for inputs whose MMA is `mma_k` deep and `elem_size` bytes
    /// wide: every tile divides as it must, the block has 32 to 1024 threads (a whole number
    /// of warps) and the shared tiles fit the 48 KiB of static shared memory.
    pub fn validate(&self, mma_k: u32, elem_size: usize) -> Result<()> {
        let bad = |why: String| {
            Err(Error::usage(format!(
                "matmul: {self:?} is not a valid configuration: {why}"
            )))
        };
        let (bm, bn, bk, sm, sn) = (
            self.block_m,
            self.block_n,
            self.block_k,
            self.sub_m,
            self.sub_n,
        );
        if [bm, bn, bk, sm, sn].contains(&0) {
            return bad("every extent must be at least 1".into());
        }
        if !(1..=16).contains(&self.split_k) {
            return bad(format!("split_k is 1 to 16, not {}", self.split_k));
        }
        if self.cluster_m != 1
            && (self.engine != Engine::WgmmaWs || self.cluster_m != 2 || bn % 128 != 0)
        {
            return bad(
                "cluster_m is 1, or 2 for the warp-specialised Hopper engine with block_n a \
                 multiple of 128 (each block multicasts half of B's tile)"
                    .into(),
            );
        }
        if self.engine == Engine::WgmmaWs && !(bm == 64 || bm == 128 || (bm == 256 && 2 * sm == bm))
        {
            return bad(
                "block_m is 64 or 128 (one or two wgmmas of 64 rows per consumer), or 256 with \
                 the consumers sharing each tile (sub_m 128)"
                    .into(),
            );
        }
        if self.engine == Engine::WgmmaWs
            && (sm * bn > 128 * 128 || !(sm == bm || 2 * sm == bm) || sm % 64 != 0 || sn != bn)
        {
            return bad(
                "a consumer's tile is at most 128×128 (its accumulators are 128 registers a \
                 thread): sub_m the whole block_m (the consumers take turns on tiles) or half \
                 of it (they share each tile), a multiple of 64; sub_n the whole block_n"
                    .into(),
            );
        }
        if self.engine.is_hopper() {
            if bm % 64 != 0 || bm > 256 || (self.engine == Engine::Wgmma && (sm != 64 || sn != bn))
            {
                return bad(
                    "block_m is 64, 128, 192 or 256 (warpgroups of 64 rows), each warpgroup \
                     the whole block_n"
                        .into(),
                );
            }
            if bn % 64 != 0 || bn > 256 {
                return bad(
                    "block_n is 64, 128, 192 or 256 (wgmma's N, in TMA boxes of 64)".into(),
                );
            }
            if bk as usize * elem_size != 128 {
                return bad(format!(
                    "block_k is one 128-byte line of K: {} for this type",
                    128 / elem_size
                ));
            }
            if !(2..=8).contains(&self.stages) {
                return bad(format!("stages must be 2 to 8, not {}", self.stages));
            }
            let bytes = self.shared_bytes(elem_size);
            if bytes > MAX_DYNAMIC_SHARED {
                return bad(format!(
                    "its stages take {bytes} bytes of shared memory, over the \
                     {MAX_DYNAMIC_SHARED} bytes (227 KiB) a block of sm_90 may have"
                ));
            }
            return Ok(());
        }
        let max_stages = match self.engine {
            // 3 and 4: the cp.async pipeline, for f32 inputs.
            Engine::Simt if elem_size == 4 => 4,
            Engine::Simt => 2,
            Engine::Mma | Engine::Wgmma | Engine::WgmmaWs => 4,
        };
        if !(1..=max_stages).contains(&self.stages) {
            return bad(format!(
                "stages must be 1 to {max_stages} for this engine, not {}",
                self.stages
            ));
        }
        if bm % sm != 0 || bn % sn != 0 {
            return bad("the block tile must be a whole number of thread (or warp) tiles".into());
        }
        if self.engine == Engine::Mma {
            if sm % 16 != 0 || sn % 8 != 0 {
                return bad(
                    "a warp tile is a grid of 16×8 MMA tiles: warp_m a multiple of 16, warp_n of 8"
                        .into(),
                );
            }
            if bk % mma_k != 0 {
                return bad(format!(
                    "block_k must be a multiple of the MMA's K ({mma_k}) for this type"
                ));
            }
        } else if sm > 16 || sn > 16 {
            return bad("at most 16×16 outputs per thread".into());
        }
        if bk > 64 || bm > 256 || bn > 256 {
            return bad("at most 256×256 per block and 64 deep".into());
        }
        let threads = self.threads();
        if threads % 32 != 0 || !(32..=1024).contains(&threads) {
            return bad(format!(
                "{threads} threads per block; it must be a multiple of 32 from 32 to 1024"
            ));
        }
        // 3 or 4 stages fall back to the register-staged kernel (static shared memory) where
        // the operands do not allow 16-byte copies: both must fit.
        let bytes = if self.engine == Engine::Simt {
            self.shared_bytes(elem_size)
        } else {
            self.fallback(mma_k, elem_size).shared_bytes(elem_size)
        };
        if bytes > 48 * 1024 {
            return bad(format!(
                "its shared tiles take {bytes} bytes, over the 48 KiB of static shared memory"
            ));
        }
        if self.stages >= 3 {
            let chunk = (16 / elem_size) as u32;
            if bk % chunk != 0 || bm % chunk != 0 || bn % chunk != 0 {
                return bad(format!(
                    "the cp.async pipeline copies 16-byte chunks: block_m, block_n and block_k \
                     must be multiples of {chunk} for this type"
                ));
            }
            let most = [(true, true), (true, false), (false, true), (false, false)]
                .into_iter()
                .map(|(a, b)| self.pipeline_shared_bytes(elem_size, a, b))
                .max()
                .unwrap_or(0);
            if most > MAX_DYNAMIC_SHARED {
                return bad(format!(
                    "its pipeline takes up to {most} bytes of shared memory, over the \
                     {MAX_DYNAMIC_SHARED} bytes (227 KiB) a block of sm_80+ may have"
                ));
            }
        }
        Ok(())
    }

    /// The default configuration for an `m × n × k` product (per batch, `batch` of them) on a
    /// device of compute capability `cc`, by shape class: tensor cores when `mma_ok` (f16/bf16,
    /// or f32 with tf32 allowed) and the device has them (sm_80+), else SIMT; large tiles when
    /// the large tiles still give every multiprocessor (`sms`) a block, else 64×64 tiles.
    pub fn choose(
        engine_mma: bool,
        cc: (u32, u32),
        sms: u32,
        m: usize,
        n: usize,
        batch: usize,
        mma_k: u32,
    ) -> Self {
        let blocks_large = m.div_ceil(128) * n.div_ceil(128) * batch;
        let large = blocks_large >= sms.max(1) as usize;
        if engine_mma && cc == (9, 0) {
            // Hopper: TMA + wgmma (operands TMA cannot read as given are staged first, see
            // `staging`). 128×256 tiles where they fill the device, else 128×128; for
            // f16/bf16 the warp-specialised kernel with both consumers on each tile (what the
            // tuner picked at 4096³ on an H100), for tf32 and fp8 the plain one.
            // One 128-byte line of K: 32 tf32 (K 8), 64 f16/bf16 (K 16), 128 fp8 (K 32).
            let line = 4 * mma_k;
            let tiles_256 = m.div_ceil(128) * n.div_ceil(256) * batch;
            if tiles_256 >= sms.max(1) as usize {
                return if mma_k == 16 {
                    MatmulConfig::wgmma_ws_cooperative(128, 256, line, 4)
                } else {
                    MatmulConfig::wgmma(128, 256, line, 4)
                };
            }
            if large {
                return MatmulConfig::wgmma(128, 128, line, 6);
            }
        }
        if engine_mma && cc >= (8, 0) {
            MatmulConfig::mma_pipeline(mma_k, large)
        } else if large {
            MatmulConfig::simt(128, 128, 8, 8, 8)
        } else {
            MatmulConfig::simt(64, 64, 8, 4, 4)
        }
    }
}

/// Candidate tensor-core configurations for a timing-based autotuner, for inputs whose MMA is
/// `mma_k` deep and `elem_size` bytes wide: the pipelined shapes of CUTLASS's sm80 GEMMs
/// (128×128, 128×256, 256×128, 64×64 block tiles; 4 or 8 warps; 3 or 4 stages) and the
/// 2-stage kernel, each valid for the type. The first is the default for large products.
#[cfg_attr(not(test), allow(dead_code))] // for the autotuner (ops/matmul/tune.rs)
pub(crate) fn candidates(mma_k: u32, elem_size: usize) -> Vec<MatmulConfig> {
    let bk = 2 * mma_k;
    let deep = 4 * mma_k;
    let mut out = Vec::new();
    for (bm, bn, bk, wm, wn, stages) in [
        (128, 128, bk, 64, 64, 3),
        (128, 128, bk, 64, 64, 4),
        (128, 128, deep, 64, 64, 3),
        (128, 256, bk, 64, 64, 3),
        (256, 128, bk, 64, 64, 3),
        (128, 256, bk, 64, 64, 4),
        (256, 128, bk, 64, 64, 4),
        (128, 256, deep, 64, 64, 3),
        (256, 128, deep, 64, 64, 3),
        (128, 128, bk, 32, 64, 4),
        (64, 64, bk, 32, 32, 3),
        (64, 64, bk, 32, 32, 4),
        (128, 128, bk, 64, 64, 2),
        (64, 64, bk, 32, 32, 2),
    ] {
        let c = MatmulConfig::mma(bm, bn, bk, wm, wn).with_stages(stages);
        if c.validate(mma_k, elem_size).is_ok() && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_choice_by_shape_class_and_device() {
        // Tensor cores only where allowed and on sm_80+; on sm_90 the Hopper engine for
        // products that fill the device (128×256 tiles where there are enough of them).
        let big = MatmulConfig::choose(true, (8, 0), 108, 4096, 4096, 1, 16);
        assert_eq!(big, MatmulConfig::mma(128, 128, 32, 64, 64).with_stages(3));
        let hopper = MatmulConfig::choose(true, (9, 0), 132, 4096, 4096, 1, 16);
        assert_eq!(hopper, MatmulConfig::wgmma_ws_cooperative(128, 256, 64, 4));
        let fp8 = MatmulConfig::choose(true, (9, 0), 132, 4096, 4096, 1, 32);
        assert_eq!(fp8, MatmulConfig::wgmma(128, 256, 128, 4));
        let mid = MatmulConfig::choose(true, (9, 0), 132, 2048, 2048, 1, 8);
        assert_eq!(mid, MatmulConfig::wgmma(128, 128, 32, 6));
        let small = MatmulConfig::choose(true, (9, 0), 132, 1024, 1024, 1, 16);
        assert_eq!(small.engine, Engine::Mma);
        hopper.validate(16, 2).unwrap();
        mid.validate(8, 4).unwrap();
        let small = MatmulConfig::choose(true, (8, 0), 132, 256, 256, 1, 8);
        assert_eq!(small, MatmulConfig::mma(64, 64, 16, 32, 32).with_stages(4));
        assert_eq!(small.engine, Engine::Mma);
        let old = MatmulConfig::choose(true, (7, 5), 80, 4096, 4096, 1, 16);
        assert_eq!(old, MatmulConfig::simt(128, 128, 8, 8, 8));
        let f32_small = MatmulConfig::choose(false, (9, 0), 132, 100, 100, 1, 8);
        assert_eq!(f32_small, MatmulConfig::simt(64, 64, 8, 4, 4));
        // A batch of small products fills the device: large tiles.
        let batched = MatmulConfig::choose(false, (9, 0), 132, 128, 128, 200, 8);
        assert_eq!(batched.block_m, 128);
        // Every default is valid for its types.
        for (cfg, k, size) in [(big, 16, 2), (small, 8, 4), (old, 16, 2), (f32_small, 8, 4)] {
            cfg.validate(k, size).unwrap();
        }
    }

    #[test]
    fn fallback_fits_static_shared_memory() {
        // 2 stages where they fit, else 1, else a shallower block_k.
        let c = MatmulConfig::mma(128, 128, 32, 64, 64).with_stages(3);
        assert_eq!(c.fallback(16, 2), c.with_stages(2));
        let deep = MatmulConfig::mma(128, 256, 64, 64, 64).with_stages(4);
        assert_eq!(
            deep.fallback(16, 2),
            MatmulConfig::mma(128, 256, 32, 64, 64).with_stages(1)
        );
        assert_eq!(
            deep.with_stages(3).fallback(8, 4),
            MatmulConfig::mma(128, 256, 16, 64, 64).with_stages(1)
        );
        deep.validate(16, 2).unwrap();
        let two = MatmulConfig::mma(64, 64, 32, 32, 32).with_stages(2);
        assert_eq!(two.fallback(16, 2), two);
    }

    #[test]
    fn validation() {
        assert!(MatmulConfig::simt(64, 64, 8, 4, 4).validate(8, 4).is_ok());
        assert!(MatmulConfig::simt(64, 64, 8, 3, 4).validate(8, 4).is_err());
        assert!(MatmulConfig::simt(16, 16, 8, 4, 4).validate(8, 4).is_err()); // 16 threads

        // 3 and 4 stages: the SIMT kernel's cp.async pipeline, for f32 inputs only.
        assert!(MatmulConfig::simt(64, 64, 8, 4, 4)
            .with_stages(3)
            .validate(8, 4)
            .is_ok());
        assert!(MatmulConfig::simt(64, 64, 8, 4, 4)
            .with_stages(3)
            .validate(8, 2)
            .is_err());
        assert!(MatmulConfig::simt(64, 64, 8, 4, 4)
            .with_stages(5)
            .validate(8, 4)
            .is_err());
        // The pipeline's static tiles: 256×128×8 in 4 stages is past 48 KiB.
        assert!(MatmulConfig::simt(256, 128, 8, 16, 8)
            .with_stages(4)
            .validate(8, 4)
            .is_err());
        assert!(MatmulConfig::mma(64, 64, 24, 32, 32)
            .validate(16, 2)
            .is_err()); // K 16
        assert!(MatmulConfig::mma(64, 64, 32, 24, 32)
            .validate(16, 2)
            .is_err()); // 16-row tiles
        assert!(MatmulConfig::mma(256, 256, 64, 64, 64)
            .validate(16, 2)
            .is_err()); // > 48 KiB
        assert_eq!(
            MatmulConfig::mma(128, 128, 32, 64, 64).shared_bytes(2),
            2 * (128 * 40 + 32 * 136) * 2
        );
        // The pipeline: 3 or 4 stages for the tensor cores only, in dynamic shared memory.
        let p3 = MatmulConfig::mma(128, 128, 32, 64, 64).with_stages(3);
        assert!(p3.validate(16, 2).is_ok());
        assert_eq!(
            p3.pipeline_shared_bytes(2, true, false),
            3 * (128 * 40 + 32 * 136) * 2
        );
        assert!(p3.with_stages(4).validate(16, 2).is_ok());
        assert!(p3.with_stages(5).validate(16, 2).is_err());
        // 16-byte chunks: a 4-deep f16 tile is not whole chunks.
        assert!(MatmulConfig::mma(64, 64, 16, 32, 32)
            .with_stages(3)
            .validate(16, 2)
            .is_ok());
    }

    #[test]
    fn autotuner_candidates_are_valid() {
        for (k, size) in [(16, 2), (8, 4)] {
            let c = candidates(k, size);
            assert!(c.len() >= 6, "{c:?}");
            assert_eq!(
                c[0],
                MatmulConfig::mma(128, 128, 2 * k, 64, 64).with_stages(3)
            );
            for x in c {
                x.validate(k, size).unwrap();
            }
        }
    }
}
