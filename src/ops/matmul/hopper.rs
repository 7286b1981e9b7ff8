//! The Hopper kernel (sm_90): each block computes a `block_m × block_n` tile of C with
//! `block_m / 64` warpgroups, each `64 × block_n` of it as warpgroup MMAs
//! (`wgmma.mma_async.m64n{block_n}`) on operands that TMA copies into `stages` shared-memory
//! stages (128-byte swizzled, one 128-byte row of K per line: `block_k` = 64 f16/bf16 or 32
//! tf32), completing on one transaction barrier per stage ("full"); each warpgroup releases a
//! stage on a second barrier ("empty") once its wgmmas of it are done, and thread 0 refills
//! the stage the previous k-tile used, `stages - 1` tiles ahead.
//!
//! Operands in either layout: a K-contiguous operand is K-major in shared memory (one box of
//! `rows × block_k` per tile), an M- or N-contiguous one MN-major (boxes of `block_k × 64`,
//! f16/bf16 only: the tensor cores transpose only 16-bit operands). Batches are the maps'
//! third dimension. The tensor maps are made per launch (`tensor_maps`) and passed after the
//! common parameters. The epilogue stages the accumulators through shared memory and applies
//! the common one ([`store_out`]) along C's contiguous axis.

use crate::codegen::{
    select, DArray, Expr, KernelBuilder, KernelParam, Mbarriers, ReadWrite, SmemMatrix, Tma,
    TmaDesc, WgmmaAcc, WgmmaMajor, WgmmaSwizzle,
};
use crate::context::Context;
use crate::error::Result;
use crate::memory::{TensorMapOptions, TensorMapSwizzle};

use super::config::MatmulConfig;
use super::epilogue::{store_acc_slice, store_out, EpilogueFn};
use super::epilogue_vec::{store_acc_vec, vec_region_bytes};
use super::params::{tile_origin, Params};
use super::shape::{Operand, Problem};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// Bytes of one line of a tile along its contiguous axis (the 128-byte swizzle's span).
const LINE: u32 = 128;
/// Rows of A one warpgroup computes (wgmma's M), and the width of an MN-major box.
const WG: u32 = 64;

/// Whether TMA can read operand `o` (16-byte aligned start, leading dimension and batch
/// stride; extents TMA can address).
pub(super) fn tma_ok(o: &Operand) -> bool {
    let s = o.size as u64;
    let batched = o.batch > 1 && o.bs != 0;
    o.ptr % 16 == 0
        && (o.ld as u64 * s) % 16 == 0
        && (!batched || (o.bs as u64 * s) % 16 == 0)
        && (o.ld as u64 * s) < 1 << 40
        && (o.bs as u64 * s) < 1 << 40
        && o.rows.max(o.cols).max(o.batch) < 1 << 31
}

/// Whether operand A (`a`) and B (`b`) may be read by the tensor cores in their layouts for
/// elements of `size` bytes: both K-major for tf32.
pub(super) fn layouts_ok(a: &Operand, b: &Operand, size: usize) -> bool {
    size == 2 || (a.row_major && !b.row_major)
}

/// The tensor map of an operand `o` (after its op: `rows × cols`) for tiles of `x_tile`
/// rows or columns (M or N) and `bk` of K: `contig_k` says whether K is its contiguous axis.
fn operand_map(
    ctx: &Context,
    o: &Operand,
    elem: crate::ir::ScalarTy,
    contig_k: bool,
    x_tile: u32,
    bk: u32,
) -> Result<crate::backend::tensor_map::TensorMapBytes> {
    // C order: [batch, outer, inner], strides in elements.
    let (outer, inner) = if o.row_major {
        (o.rows, o.cols)
    } else {
        (o.cols, o.rows)
    };
    let batch = if o.bs == 0 { 1 } else { o.batch };
    let shape = [batch, outer, inner];
    let strides = [o.bs as isize, o.ld as isize, 1];
    let bx = if contig_k {
        [1, x_tile, bk]
    } else {
        [1, bk, WG]
    };
    let opts = TensorMapOptions::<3>::default().swizzle(TensorMapSwizzle::B128);
    let (_, raw) =
        crate::memory::tensor_map::encode_tiled(ctx, elem, o.ptr, (&shape, &strides), bx, &opts)?;
    Ok(raw)
}

/// The tensor maps of A and B for problem `p` under variant `v`'s configuration.
pub(super) fn tensor_maps<T: MatmulInput>(
    ctx: &Context,
    p: &Problem,
    v: &Variant,
) -> Result<[crate::backend::tensor_map::TensorMapBytes; 2]> {
    let c = v.cfg;
    let elem = T::TY;
    Ok([
        operand_map(ctx, &p.a, elem, p.a.row_major, c.block_m, c.block_k)?,
        // With clusters, each block copies half of B's rows of N (K-major B).
        operand_map(
            ctx,
            &p.b,
            elem,
            !p.b.row_major,
            c.block_n / c.cluster_m,
            c.block_k,
        )?,
    ])
}

/// The shared-memory stages that TMA fills and the warpgroup MMAs read, with their "full"
/// (the copies of a stage landed) and "empty" (its readers are done) barriers: the operand
/// side of both Hopper kernels.
pub(super) struct Ring<T: MatmulInput> {
    pub smem: DArray<T, 1, ReadWrite>,
    pub full: Mbarriers,
    pub empty: Mbarriers,
    ma: TmaDesc<T, 3>,
    mb: TmaDesc<T, 3>,
    /// The first 1024-byte aligned element of the dynamic shared memory (stage 0).
    pad: Expr<u32>,
    /// Whether A, B are K-major (K their contiguous axis).
    a_k: bool,
    b_k: bool,
    cfg: MatmulConfig,
    /// The block's rank in its cluster (`cfg.cluster_m` blocks along M, sharing B).
    rank: Expr<u32>,
}

impl<T: MatmulInput> Ring<T> {
    /// Declares the tensor-map parameters of A and B (after the common ones), the stages and
    /// their barriers ("empty" expects `readers` arrivals from each block of the cluster),
    /// initialised by thread 0 before a block barrier (a cluster barrier with clusters: the
    /// other block copies into this one's stages and arrives on its barriers).
    pub fn declare(k: &KernelBuilder, v: &Variant, readers: u32) -> Ring<T> {
        let ma = <Tma<T, 3> as KernelParam>::declare();
        let mb = <Tma<T, 3> as KernelParam>::declare();
        let stages = v.cfg.stages;
        let smem = k.dynamic_shared::<T>();
        let full = k.mbarriers(stages as usize);
        let empty = k.mbarriers(stages as usize);
        let pad = smem.aligned_index(1024);
        let cluster = v.cfg.cluster_m;
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            for s in 0..stages {
                full.init(s, 1u32);
                empty.init(s, readers * cluster);
            }
            k.fence_barrier_init();
        });
        if cluster > 1 {
            k.cluster_sync();
        } else {
            k.syncthreads();
        }
        Ring {
            smem,
            full,
            empty,
            ma,
            mb,
            pad,
            a_k: v.a_row,
            b_k: !v.b_row,
            cfg: v.cfg,
            rank: if cluster > 1 {
                k.cluster_rank()
            } else {
                k.lit(0u32)
            },
        }
    }

    /// This block's readers are done with stage `s`: an arrival on its "empty" barrier, and on
    /// the other block's of the cluster (whose producer multicasts into this stage too).
    pub fn release(&self, s: Expr<u32>) {
        self.empty.arrive(s);
        if self.cfg.cluster_m > 1 {
            self.empty.arrive_at_rank(s, self.rank ^ 1u32);
        }
    }

    /// The block's rank in its cluster (0 without clusters).
    pub fn rank(&self) -> Expr<u32> {
        self.rank
    }

    fn tile_elems(&self) -> (u32, u32) {
        let c = self.cfg;
        (c.block_m * c.block_k, c.block_k * c.block_n)
    }

    fn a_at(&self, s: Expr<u32>) -> Expr<u32> {
        let (a, b) = self.tile_elems();
        self.pad + s * (a + b)
    }

    fn b_at(&self, s: Expr<u32>) -> Expr<u32> {
        self.a_at(s) + self.tile_elems().0
    }

    /// Elements of the stages, from the aligned start.
    pub fn elems(&self) -> u32 {
        let (a, b) = self.tile_elems();
        (a + b) * self.cfg.stages
    }

    /// One thread: the copies of k-tile `j` of the tile of C at rows `m0`, columns `n0` (of
    /// batches `ba` of A and `bb` of B) into stage `s`, announced on its "full" barrier.
    pub fn issue(
        &self,
        j: Expr<u32>,
        s: Expr<u32>,
        (m0, n0): (Expr<u32>, Expr<u32>),
        (ba, bb): (Expr<i32>, Expr<i32>),
    ) {
        let MatmulConfig {
            block_m: bm,
            block_n: bn,
            block_k: bk,
            ..
        } = self.cfg;
        let es = T::TY.size() as u32;
        let i32_ = |x: Expr<u32>| x.cast::<i32>();
        let (smem, full) = (&self.smem, &self.full);
        full.arrive_expect_tx(s, (bm * bk + bk * bn) * es);
        let k0 = i32_(j * bk);
        if self.a_k {
            self.ma
                .load([ba, i32_(m0), k0], smem, self.a_at(s), full, s);
        } else {
            for i in 0..bm / WG {
                let at = self.a_at(s) + i * WG * bk;
                self.ma.load([ba, k0, i32_(m0 + i * WG)], smem, at, full, s);
            }
        }
        // With a cluster of two along M, each block copies half of B's k-tile (rows of
        // `n` or boxes of 64 columns) into both blocks.
        let cl = self.cfg.cluster_m;
        if cl > 1 {
            let both = Expr::from(0b11u16);
            let half = bn / cl;
            if self.b_k {
                let n = self.rank * half;
                let at = self.b_at(s) + n * bk;
                self.mb
                    .load_multicast([bb, i32_(n0 + n), k0], smem, at, full, s, both);
            } else {
                for i in 0..half / WG {
                    let n = self.rank * half + i * WG;
                    let at = self.b_at(s) + n * bk;
                    self.mb
                        .load_multicast([bb, k0, i32_(n0 + n)], smem, at, full, s, both);
                }
            }
        } else if self.b_k {
            self.mb
                .load([bb, i32_(n0), k0], smem, self.b_at(s), full, s);
        } else {
            for i in 0..bn / WG {
                let at = self.b_at(s) + i * WG * bk;
                self.mb.load([bb, k0, i32_(n0 + i * WG)], smem, at, full, s);
            }
        }
    }

    /// The operands in stage `s` of k-step `kk` (wgmma's K deep) for the 64 rows of A from
    /// element `rows` of the A tile (`row · block_k` for the row `row`, a multiple of 64).
    pub fn operands(
        &self,
        s: Expr<u32>,
        kk: u32,
        rows: Expr<u32>,
    ) -> (SmemMatrix<T>, SmemMatrix<T>) {
        let bk = self.cfg.block_k;
        let es = T::TY.size() as u32;
        let step = T::K;
        let smem = &self.smem;
        let major = |contig_k: bool| {
            if contig_k {
                (WgmmaMajor::K, 16, kk * step * es)
            } else {
                (WgmmaMajor::MN, bk * LINE, kk * step * LINE)
            }
        };
        let (am, al, aa) = major(self.a_k);
        let (bm_, bl, ba) = major(self.b_k);
        let a = SmemMatrix::new(smem, self.a_at(s) + rows, am, WgmmaSwizzle::B128, al, 1024);
        let b = SmemMatrix::new(smem, self.b_at(s), bm_, WgmmaSwizzle::B128, bl, 1024);
        (a.advance(aa), b.advance(ba))
    }
}

/// Records the Hopper kernel of variant `v` in the kernel being built.
pub(super) fn build<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
) {
    let p = Params::<T, O>::declare(v);
    let cfg = v.cfg;
    let (bm, bn, bk, stages) = (cfg.block_m, cfg.block_n, cfg.block_k, cfg.stages);
    let es = T::TY.size() as u32;
    let groups = bm / WG;
    k.launch_bounds(cfg.threads(), 1);
    let ring = Ring::<T>::declare(k, v, groups);
    let (full, empty) = (&ring.full, &ring.empty);
    let t = k.thread_idx().x;
    let wg = t >> 7u32;
    let o = tile_origin(k, &p, bm, bn);
    let batch = k.block_idx().z + p.batch0;
    let bat = batches(&p, batch);
    let tiles = (p.k + (bk - 1)) / bk;
    let at = (o.m0, o.n0);
    k.if_(t.eq(0u32), |k| {
        k.for_range(0u32, tiles.min(stages), |_, j| ring.issue(j, j, at, bat));
    });
    let step = T::K;
    let operands = |s: Expr<u32>, kk: u32| ring.operands(s, kk, wg * (WG * bk));
    let vars = WgmmaAcc::zeros(bn).vars(k);
    // With 3 or more stages one k-tile's wgmmas stay in flight while the next tile's are
    // issued (`wgmma_wait(1)`): a stage is released one tile later, and thread 0 refills the
    // stage of two tiles back. With 2 stages each tile's wgmmas are waited for.
    let lag = if stages >= 3 { 1u32 } else { 0 };
    k.for_range(0u32, tiles, |k, j| {
        let s = j % stages;
        full.wait(k, s, (j / stages) & 1u32);
        k.wgmma_fence();
        let mut acc = WgmmaAcc::from_vars(&vars);
        for kk in 0..bk / step {
            let (a, b) = operands(s, kk);
            acc = k.wgmma(&a, &b, &acc, true);
        }
        k.wgmma_commit();
        let acc = k.wgmma_wait(lag, &acc);
        for (x, e) in vars.iter().zip(acc.elems()) {
            x.set(*e);
        }
        // This warpgroup is done with the stage of tile j - lag.
        k.if_((t & 127u32).eq(0u32).and(j.ge(lag)), |_| {
            ring.release((j - lag) % stages)
        });
        // Thread 0 refills the stage of tile j - lag - 1 once every warpgroup is done with it.
        let back = lag + 1;
        k.if_(
            t.eq(0u32)
                .and(j.ge(back))
                .and((j + (stages - back)).lt(tiles)),
            |k| {
                let prev = (j - back) % stages;
                empty.wait(k, prev, ((j - back) / stages) & 1u32);
                ring.issue(j + (stages - back), prev, at, bat);
            },
        );
    });
    if lag > 0 {
        let acc = k.wgmma_wait(0, &WgmmaAcc::from_vars(&vars));
        for (x, e) in vars.iter().zip(acc.elems()) {
            x.set(*e);
        }
    }
    let acc = WgmmaAcc::from_vars(&vars);
    let row0 = o.m0 + wg * WG;
    // The accumulators through shared memory (the stages are free once every warpgroup is
    // past its last wgmma): each warp writes its 16 rows × block_n to a region of its own
    // (rows padded by one word), then stores them along C's contiguous axis, consecutive
    // lanes on consecutive elements, so that each store instruction writes whole runs of C.
    let stride = bn + 1;
    // Bytes of one warp's region: f32 rows padded by a word, or the register epilogue's.
    let region = if v.vec_c {
        vec_region_bytes(bn, O::TY.size() as u32)
    } else {
        16 * stride * 4
    };
    if cfg.threads() / 32 * region <= cfg.shared_bytes(es as usize) as u32 {
        let st = k.dynamic_shared::<f32>();
        let warp = t >> 5u32;
        let base = warp * region;
        k.syncthreads();
        let origin = (row0 + (warp & 3u32) * 16u32, o.n0);
        if v.vec_c {
            store_acc_vec(k, &p, epi, v.col_pairs, o.cbase, &acc, base, origin);
        } else {
            store_acc_slice(
                k,
                &p,
                v,
                epi,
                o.cbase,
                &acc,
                (&st, base / 4u32, stride),
                origin,
            );
        }
    } else {
        acc.for_each(k, |r, c, value| {
            store_out(k, &p, v, epi, o.cbase, row0 + r, o.n0 + c, value);
        });
    }
}

/// The batch of A and of B that batch `batch` of C reads (0 for a broadcast operand).
pub(super) fn batches<T: MatmulInput, O: MatmulOutput>(
    p: &Params<T, O>,
    batch: Expr<u32>,
) -> (Expr<i32>, Expr<i32>) {
    (
        select(p.sa.eq(0u64), 0u32, batch).cast::<i32>(),
        select(p.sb.eq(0u64), 0u32, batch).cast::<i32>(),
    )
}
