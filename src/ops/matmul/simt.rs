//! The SIMT kernel: each block computes a `block_m × block_n` tile of C from `block_k`-deep
//! tiles of A and B staged in shared memory (as f32), each thread a `thread_m × thread_n`
//! register tile with f32 fused multiply-adds (the builder contracts `acc + a·b`).
//!
//! Thread `(ty, tx)` owns runs of 4 rows `4·ty + g·(4·block_m/thread_m) + 0..4` and likewise
//! of columns, read from shared memory as 16-byte vectors (one per run: a quarter of the
//! shared-memory instructions of single reads), broadcast or consecutive across a warp (no
//! bank conflicts); with register tiles not a multiple of 4, single rows `ty +
//! i·(block_m/thread_m)` and columns.

use crate::codegen::{Expr, KernelBuilder, NdMut, Scalar};

use super::config::MatmulConfig;
use super::epilogue::{store_out, EpilogueFn};
use super::params::{tile_origin, Params};
use super::stage::{async_loop, main_loop, TileSrc};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// Records the SIMT kernel of variant `v` in the kernel being built: with `v.pipe` (f32
/// inputs, 3 or more stages) the tiles arrive by `cp.async` into shared tiles of the input
/// type; otherwise they are staged through registers into f32 tiles.
pub(super) fn build<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
) {
    let bk = v.cfg.block_k;
    if v.pipe {
        let (sa, sb) = tiles::<T>(k, &v.cfg);
        let issue =
            |k: &KernelBuilder, a: &TileSrc<T>, b: &TileSrc<T>, t: Expr<u32>, buf, bounded| {
                a.issue_async(k, t * bk, &sa, buf, bounded);
                b.issue_async(k, t * bk, &sb, buf, bounded);
            };
        body::<T, T, O>(k, v, epi, (&sa, &sb), Some(&issue))
    } else {
        let (sa, sb) = tiles::<f32>(k, &v.cfg);
        body::<T, f32, O>(k, v, epi, (&sa, &sb), None)
    }
}

/// The shared tiles of A and B, `[stage][k][m or n]`, each line padded by 16 bytes.
fn tiles<S: Scalar>(k: &KernelBuilder, cfg: &MatmulConfig) -> (NdMut<S, 3>, NdMut<S, 3>) {
    let pad = cfg.pad(4) as usize;
    let (stages, bk) = (cfg.stages as usize, cfg.block_k as usize);
    (
        k.shared_array3::<S>(stages, bk, cfg.block_m as usize + pad),
        k.shared_array3::<S>(stages, bk, cfg.block_n as usize + pad),
    )
}

/// Issues this thread's `cp.async` copies of A's and B's tiles at k-tile `t` into a buffer
/// (`bounded`: zero-filled past the matrix's edges).
type IssueFn<'a, T> =
    dyn Fn(&KernelBuilder, &TileSrc<T>, &TileSrc<T>, Expr<u32>, Expr<u32>, bool) + 'a;

/// The SIMT kernel with shared tiles `(sa, sb)` of `S`, filled by `issue` (the `cp.async`
/// pipeline) or through registers.
fn body<T: MatmulInput, S: Scalar, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
    (sa, sb): (&NdMut<S, 3>, &NdMut<S, 3>),
    issue: Option<&IssueFn<'_, T>>,
) {
    let p = Params::<T, O>::declare(v);
    let cfg = v.cfg;
    let (bm, bn, bk) = (cfg.block_m, cfg.block_n, cfg.block_k);
    let (tm, tn) = (cfg.sub_m, cfg.sub_n);
    // Two blocks per multiprocessor for register tiles of up to 64: at most 128 registers
    // for 256 threads. ptxas would take 133 for the 128×128 tile of 8×8 and halve the blocks
    // in flight (45 → 37 TFLOP/s at 4096³ on an H100). Larger register tiles take one block.
    k.launch_bounds(cfg.threads(), if tm * tn <= 64 { 2 } else { 1 });
    let (rows_step, cols_step) = (bm / tm, bn / tn);
    let tid = k.thread_idx().x;
    // A warp's 32 lanes as 4 rows × 8 columns of register tiles where the block allows, else
    // 32 consecutive threads along a row. 4 × 8 lanes read 4 distinct 16-byte runs of A and 8
    // of B a k-step (one shared-memory wavefront each; 2 × 16 lanes read 2 and 16, three
    // wavefronts): 1.5% faster at 4096³ and 8192³ on an H100. (Not in the cp.async
    // pipeline: no faster there, and ptxas then spills at 128 registers.)
    let lanes =
        issue.is_none() && cols_step % 8 == 0 && rows_step % 4 == 0 && cfg.threads() % 32 == 0;
    let (ty, tx) = if lanes {
        let (warp, lane) = (tid >> 5u32, tid & 31u32);
        let warps_n = cols_step / 8;
        (
            (warp / warps_n) * 4u32 + (lane >> 3u32),
            (warp % warps_n) * 8u32 + (lane & 7u32),
        )
    } else {
        (tid / cols_step, tid % cols_step)
    };
    // Where the register tile's rows and columns are in the block's tile. With 4 | thread_m
    // and 4 | thread_n, runs of 4 (read from shared memory as one 16-byte vector each:
    // thread `ty` owns rows `g·(block_m·4/thread_m) + 4·ty + 0..4` for each run g); else
    // single rows and columns a stride apart.
    let vec = tm % 4 == 0 && tn % 4 == 0;
    let places = |t: Expr<u32>, count: u32, extent: u32, step: u32| -> Vec<Expr<u32>> {
        if vec {
            let run_step = extent * 4 / count;
            (0..count)
                .map(|i| t * 4u32 + (i / 4) * run_step + i % 4)
                .collect()
        } else {
            (0..count).map(|i| t + i * step).collect()
        }
    };
    let rows = places(ty, tm, bm, rows_step);
    let cols = places(tx, tn, bn, cols_step);
    let o = tile_origin(k, &p, bm, bn);
    let acc: Vec<_> = (0..tm * tn).map(|_| k.var(0.0f32)).collect();
    let kt = p.k / bk + select_u32(p.k % bk);
    let (src_a, src_b) = TileSrc::operands(&p, &o, v);
    // One row of a tile at the register tile's places: 16-byte vectors or single elements.
    let read = |s: &NdMut<S, 3>, buf: Expr<u32>, kk: u32, at: &[Expr<u32>]| -> Vec<Expr<f32>> {
        if vec {
            at.chunks(4)
                .flat_map(|run| s.load_vec::<4>(s.index3(buf, kk, run[0]) / 4i64))
                .map(|x| x.cast::<f32>())
                .collect()
        } else {
            at.iter()
                .map(|&x| s.at3(buf, kk, x).cast::<f32>())
                .collect()
        }
    };
    let compute = |_: &KernelBuilder, buf: Expr<u32>| {
        for kk in 0..bk {
            let a = read(sa, buf, kk, &rows);
            let b = read(sb, buf, kk, &cols);
            for i in 0..tm as usize {
                for j in 0..tn as usize {
                    let c = &acc[i * tn as usize + j];
                    c.set(c.get() + a[i] * b[j]);
                }
            }
        }
    };
    // Blocks wholly inside the matrix (M, N, and K a whole number of tiles; uniform per
    // block) copy or fetch without bounds; the others clamp and zero-fill past the edges.
    let whole = src_a
        .inside_x()
        .and(src_b.inside_x())
        .and((p.k % bk).eq(0u32));
    if let Some(issue) = issue {
        let run = |k: &KernelBuilder, bounded: bool| {
            async_loop(
                k,
                cfg.stages,
                kt,
                |k, t, buf| issue(k, &src_a, &src_b, t, buf, bounded),
                compute,
            );
        };
        k.if_else(whole, |k| run(k, false), |k| run(k, true));
    } else {
        // Without bounds, the tile past the last that the loop fetches is the last one again
        // (never used).
        let run = |k: &KernelBuilder, bounded: bool| {
            main_loop(
                k,
                cfg.stages,
                kt,
                |k, t| {
                    let t = if bounded { t } else { t.min(kt - 1u32) };
                    let k0 = t * bk;
                    (
                        src_a.fetch_in(k, k0, bounded),
                        src_b.fetch_in(k, k0, bounded),
                    )
                },
                |k, buf, (fa, fb)| {
                    fa.store(k, &|kk, m, x: Expr<T>| sa.set3(buf, kk, m, x.cast::<S>()));
                    fb.store(k, &|kk, n, x: Expr<T>| sb.set3(buf, kk, n, x.cast::<S>()));
                },
                compute,
            );
        };
        k.if_else(whole, |k| run(k, false), |k| run(k, true));
    }
    for (i, &r) in rows.iter().enumerate() {
        for (j, &c) in cols.iter().enumerate() {
            let a = acc[i * tn as usize + j].get();
            store_out(k, &p, v, epi, o.cbase, o.m0 + r, o.n0 + c, a);
        }
    }
}

/// 1 when `x` is not 0 (a ceiling division's carry).
pub(super) fn select_u32(x: Expr<u32>) -> Expr<u32> {
    crate::codegen::select(x.ne(0u32), 1u32, 0u32)
}
