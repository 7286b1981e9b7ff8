//! The parameters every matrix-multiply kernel declares, in the order the launch pushes them,
//! and where a block's tile of C is.

use crate::codegen::{
    declare_scalar_param, select, DArray, Expr, KernelBuilder, KernelParam, ReadOnly, ReadWrite,
};

use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// The kernel's parameters (see `launch::push_params` for the order).
pub(super) struct Params<T: MatmulInput, O: MatmulOutput> {
    pub a: DArray<T, 1, ReadOnly>,
    pub b: DArray<T, 1, ReadOnly>,
    pub c: DArray<O, 1, ReadWrite>,
    pub colv: Option<DArray<O, 1, ReadOnly>>,
    pub rowv: Option<DArray<O, 1, ReadOnly>>,
    pub m: Expr<u32>,
    pub n: Expr<u32>,
    pub k: Expr<u32>,
    pub lda: Expr<u64>,
    pub ldb: Expr<u64>,
    pub ldc: Expr<u64>,
    pub sa: Expr<u64>,
    pub sb: Expr<u64>,
    pub sc: Expr<u64>,
    pub alpha: Expr<f32>,
    pub beta: Expr<f32>,
    /// Tiles of C along N (the grid's x runs over the tiles, row by row of tiles).
    pub tiles_n: Expr<u32>,
    /// The first batch of this launch (the grid's z is added).
    pub batch0: Expr<u32>,
}

impl<T: MatmulInput, O: MatmulOutput> Params<T, O> {
    pub fn declare(v: &Variant) -> Self {
        let a = <&[T] as KernelParam>::declare();
        let b = <&[T] as KernelParam>::declare();
        let c = <&mut [O] as KernelParam>::declare();
        let colv = v.col_vec.then(<&[O] as KernelParam>::declare);
        let rowv = v.row_vec.then(<&[O] as KernelParam>::declare);
        Params {
            a,
            b,
            c,
            colv,
            rowv,
            m: declare_scalar_param::<u32>(),
            n: declare_scalar_param::<u32>(),
            k: declare_scalar_param::<u32>(),
            lda: declare_scalar_param::<u64>(),
            ldb: declare_scalar_param::<u64>(),
            ldc: declare_scalar_param::<u64>(),
            sa: declare_scalar_param::<u64>(),
            sb: declare_scalar_param::<u64>(),
            sc: declare_scalar_param::<u64>(),
            alpha: declare_scalar_param::<f32>(),
            beta: declare_scalar_param::<f32>(),
            tiles_n: declare_scalar_param::<u32>(),
            batch0: declare_scalar_param::<u32>(),
        }
    }
}

/// Where this block works: its tile's first row and column of C, and the element offsets of
/// its batch's A, B and C.
pub(super) struct TileOrigin {
    pub m0: Expr<u32>,
    pub n0: Expr<u32>,
    pub abase: Expr<u64>,
    pub bbase: Expr<u64>,
    pub cbase: Expr<u64>,
}

/// Rows of tiles in a group of the block order ([`tile_origin`]).
const GROUP_M: u32 = 8;

/// This block's tile and batch. Where a row of C has more than 16 tiles, consecutive blocks
/// walk down a group of [`GROUP_M`] rows of tiles before moving one column to the right
/// (Triton's grouped order), so that the blocks resident at once share rows of A and columns
/// of B in L2 instead of sweeping all of B for every few rows of tiles (8192³ f16 on an H100:
/// 2.68 → 2.56-2.60 ms). Narrower products keep the row-major order: there a wave of blocks
/// already covers whole rows (grouping them was 2-5% slower at 2048³-4096³).
pub(super) fn tile_origin<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    bm: u32,
    bn: u32,
) -> TileOrigin {
    let batch = k.block_idx().z + p.batch0;
    tile_at(p, (bm, bn), k.block_idx().x, batch)
}

/// Tile number `tile` (in [`tile_origin`]'s order) of batch `batch`.
pub(super) fn tile_at<T: MatmulInput, O: MatmulOutput>(
    p: &Params<T, O>,
    (bm, bn): (u32, u32),
    tile: Expr<u32>,
    batch: Expr<u32>,
) -> TileOrigin {
    let tiles_m = (p.m + (bm - 1)) / bm;
    let group = select(p.tiles_n.gt(16u32), GROUP_M, 1u32);
    let per_group = p.tiles_n * group;
    let first = tile / per_group * group;
    let rows = (tiles_m - first).min(group);
    let within = tile % per_group;
    let (tm, tn) = (first + within % rows, within / rows);
    let batch = batch.cast::<u64>();
    TileOrigin {
        m0: tm * bm,
        n0: tn * bn,
        abase: batch * p.sa,
        bbase: batch * p.sb,
        cbase: batch * p.sc,
    }
}
