//! The Hopper engines' epilogue for C that is row-major, not read (beta 0) and aligned for
//! 4-element vectors ([`Variant::vec_c`]; 16-bit C on both engines, f32 C on `Wgmma`): the
//! epilogue runs in registers on the accumulator fragment (straight-line code, every element
//! independent), each thread writes its pairs of adjacent columns to shared memory as one
//! 4- or 8-byte access, and the warp then stores its rows to C in vectors of four elements a
//! lane (8 or 16 bytes).
//!
//! Against the general path (f32 staged, then per element: a bounds test, `alpha·acc`, the
//! epilogue and a scalar store) this stores a quarter as many times, moves half the bytes
//! through shared memory for 16-bit C, and lets an expensive epilogue (GELU) interleave
//! across elements.
//!
//! [`Variant::vec_c`]: super::variant::Variant::vec_c

use crate::codegen::{Expr, KernelBuilder, WgmmaAcc};

use super::config::Engine;
use super::epilogue::{EpilogueArgs, EpilogueFn};
use super::params::Params;
use super::types::{MatmulInput, MatmulOutput};

/// Elements of C per vector store.
const VEC: u32 = 4;

/// Whether the register epilogue serves C of `size`-byte elements on a Hopper `engine`: 16-bit
/// C on both, f32 C on `Wgmma` (whose staging lies over the free ring; the warp-specialised
/// kernel's own staging region has no room for f32 rows padded by 16 bytes).
pub(super) fn applies(engine: Engine, size: usize) -> bool {
    size == 2 || (size == 4 && engine == Engine::Wgmma)
}

/// Bytes of one warp's shared-memory region for `cols` columns of C of `size`-byte elements:
/// 16 rows, each padded by 16 bytes (so that a warp's writes of its pairs spread over all
/// banks).
pub(super) fn vec_region_bytes(cols: u32, size: u32) -> u32 {
    16 * (cols * size + 16)
}

/// Stores this warp's 16 rows of the warpgroup accumulator `acc` (64 × `acc.n()`) to rows
/// `r0..r0 + 16` and columns `c0..c0 + acc.n()` of C, through the warp's shared-memory region
/// at byte `base` of the dynamic shared memory (16-byte aligned, [`vec_region_bytes`] long);
/// `pairs`: the per-column vector is read two elements (one pair of columns) at a time.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_acc_vec<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    epi: &EpilogueFn,
    pairs: bool,
    cbase: Expr<u64>,
    acc: &WgmmaAcc,
    base: Expr<u32>,
    (r0, c0): (Expr<u32>, Expr<u32>),
) {
    let n = acc.n();
    let st = k.dynamic_shared::<O>();
    let size = O::TY.size() as u32;
    let stride = n + 16 / size;
    let base = base / size;
    let lane = k.lane_id();
    let (g, q) = (lane >> 2u32, lane & 3u32);
    let zero = Expr::lit(0.0f32);
    // Fragment element e of this thread is row g + 8·((e/2) % 2), column 8·(e/4) + 2q + e % 2
    // (the wgmma accumulator layout). Rows and columns past C's edge compute values that are
    // never stored; their vector elements are read at the last row/column instead.
    let rows = [r0 + g, r0 + g + 8u32];
    let row_vec = rows.map(|r| {
        p.rowv
            .map_or(zero, |rv| rv.at(r.min(p.m - 1u32)).cast::<f32>())
    });
    let elems = acc.elems();
    for j in 0..n / 8 {
        let cc = q * 2u32 + j * 8;
        let cols = [c0 + cc, c0 + cc + 1u32];
        let col_vec = match p.colv {
            // C's columns are a multiple of 4: a pair is wholly inside or wholly past N.
            Some(cv) if pairs => cv
                .load_vec::<2>(cols[0].min(p.n - 2u32) >> 1u32)
                .map(|x| x.cast::<f32>()),
            _ => cols.map(|c| {
                p.colv
                    .map_or(zero, |cv| cv.at(c.min(p.n - 1u32)).cast::<f32>())
            }),
        };
        for half in 0..2usize {
            let out: [Expr<O>; 2] = std::array::from_fn(|h| {
                let e = (4 * j) as usize + 2 * half + h;
                let args = EpilogueArgs {
                    value: elems[e] * p.alpha,
                    row: rows[half],
                    col: cols[h],
                    col_vec: col_vec[h],
                    row_vec: row_vec[half],
                    out_bits: super::epilogue::out_bits::<O>(),
                };
                epi(args).cast::<O>()
            });
            let r = g + 8 * half as u32;
            st.store_vec::<2>((base + r * stride + cc) >> 1u32, out);
        }
    }
    k.syncwarp(u32::MAX);
    // Lane l takes chunks l, l + 32, ... of the region's 16 rows × n / 4 chunks: whole rows
    // of consecutive 8-byte chunks per store instruction. Unrolled; where the warp's 16 rows
    // and n columns are all inside C (uniform), without bounds.
    let per_row = n / VEC;
    let whole = (r0 + 16u32).le(p.m).and((c0 + n).le(p.n));
    let copy = |k: &KernelBuilder, bounded: bool| {
        for it in 0..16 * per_row / 32 {
            let id = lane + it * 32;
            let (r, ch) = (id / per_row, id % per_row);
            let vals = st.load_vec::<4>((base + r * stride) / VEC + ch);
            let (row, col) = (r0 + r, c0 + ch * VEC);
            let store = |_: &KernelBuilder| {
                let at = cbase + row.cast::<u64>() * p.ldc + col.cast::<u64>();
                p.c.store_vec::<4>(at >> 2u64, vals);
            };
            if bounded {
                k.if_(row.lt(p.m).and(col.lt(p.n)), store);
            } else {
                store(k);
            }
        }
    };
    k.if_else(whole, |k| copy(k, false), |k| copy(k, true));
    // The region is written again by the caller's next slice.
    k.syncwarp(u32::MAX);
}
