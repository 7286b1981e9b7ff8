//! The warp-specialised, persistent Hopper kernel (sm_90, [`Engine::WgmmaWs`]): a block of
//! three warpgroups stays resident and walks tiles of C `gridDim.x` apart.
//!
//! - Warpgroup 0 is the producer: it gives up registers (`setmaxnreg.dec` 40) and its first
//!   thread issues the TMA copies of every k-tile of the block's tiles, in order, into a ring
//!   of `stages` shared-memory stages, each stage waiting on its "empty" barrier first.
//! - Warpgroups 1 and 2 are consumers (`setmaxnreg.inc` 232): consumer `c` computes the
//!   block's tiles `c, c + 2, ...`, each a whole `block_m × block_n` tile of C (`block_m / 64`
//!   wgmmas per k-step), releasing each stage on its "empty" barrier once its wgmmas of it are
//!   done, then runs the epilogue.
//!
//! Because the producer fills the ring in tile order, a consumer's next tile arrives only
//! after the other consumer's tile has been fed: the two take turns on the tensor cores, and
//! each one's epilogue (through its own shared-memory staging region, so it never waits for
//! the ring) runs while the other computes (CUTLASS's "ping-pong" schedule, here without an
//! ordering barrier: the ring orders them).
//!
//! [`Engine::WgmmaWs`]: super::Engine::WgmmaWs

use crate::codegen::{Expr, KernelBuilder, WgmmaAcc};

use super::epilogue::{store_acc_slice, EpilogueFn};
use super::epilogue_vec::store_acc_vec;
use super::hopper::{batches, Ring};
use super::params::{tile_at, Params};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// Rows of one wgmma (and of a warpgroup's accumulator tile).
const WG: u32 = 64;
/// Threads per block: the producer warpgroup and two consumers.
pub(super) const THREADS: u32 = 384;
/// Registers per thread of the producer and of the consumers (64 K registers a block:
/// 128·40 + 256·232 = 64,512).
const PRODUCER_REGS: u32 = 40;
const CONSUMER_REGS: u32 = 232;
/// Consumer warpgroups.
pub(super) const CONSUMERS: u32 = 2;

/// The most columns of C a consumer warp stages at a time in the epilogue.
const STAGED_COLS: u32 = 128;

/// The shared memory the staging may take up to, with the ring: sm_90's opt-in limit per
/// block, less 1 KiB for the barriers and any static arrays.
const SHARED_BUDGET: usize = super::config::MAX_DYNAMIC_SHARED - 1024;

/// Bytes of `cols` staged columns of f32 for every consumer warp (16 rows each, rows padded
/// by one word).
fn staging_for(cols: u32) -> usize {
    (CONSUMERS * 4 * 16 * (cols + 1) * 4) as usize
}

/// Columns of C a consumer warp stages at a time: up to 128, halved (while `block_n` stays a
/// multiple) until the staging fits beside a ring of `ring` bytes, so that a 4-stage ring of
/// 128×256 or 256×128 tiles keeps its stages.
fn staged_cols(block_n: u32, ring: usize) -> u32 {
    let mut cols = block_n.min(STAGED_COLS);
    while ring + staging_for(cols) > SHARED_BUDGET && cols % 2 == 0 && cols > 16 {
        cols /= 2;
    }
    cols
}

/// Bytes of the consumers' epilogue staging beside a ring of `ring` bytes: each consumer
/// warp's 16 rows × [`staged_cols`] columns of f32, rows padded by one word.
pub(super) fn staging_bytes(block_n: u32, ring: usize) -> usize {
    staging_for(staged_cols(block_n, ring))
}

/// Records the warp-specialised kernel of variant `v` in the kernel being built.
pub(super) fn build<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
) {
    let p = Params::<T, O>::declare(v);
    let cfg = v.cfg;
    let (bm, bn, bk, stages) = (cfg.block_m, cfg.block_n, cfg.block_k, cfg.stages);
    k.launch_bounds(THREADS, 1);
    // One arrival per stage: the consumer warpgroup whose tile it holds (both, when they
    // share every tile).
    let readers = if cooperative(v) { CONSUMERS } else { 1 };
    let ring = Ring::<T>::declare(k, v, readers);
    let t = k.thread_idx().x;
    let wg = t >> 7u32;
    // With clusters of `cl` blocks along M, a cluster walks units of `cl` vertically
    // adjacent tiles (sharing B's k-tiles), its block of rank r taking the r-th; a unit's
    // tile below the last row of C computes zeros it does not store, so that both blocks
    // copy their halves of B for every unit.
    let cl = cfg.cluster_m;
    let units = (p.m + (bm * cl - 1)) / (bm * cl) * p.tiles_n;
    let ktiles = (p.k + (bk - 1)) / bk;
    let (first, apart) = if cl > 1 {
        (k.cluster_idx().x, k.cluster_grid_dim().x)
    } else {
        (k.block_idx().x, k.grid_dim().x)
    };
    // The grid has at most `units` blocks (clusters) along x, so every block has a tile.
    let mine = (units - first + (apart - 1u32)) / apart;
    let batch = k.block_idx().z + p.batch0;
    let bat = batches(&p, batch);
    let rank = ring.rank();
    let tile = |li: Expr<u32>| {
        let mut o = tile_at(&p, (bm * cl, bn), first + li * apart, batch);
        o.m0 = o.m0 + rank * bm;
        o
    };
    k.if_else(
        wg.eq(0u32),
        |k| {
            k.set_max_nreg(false, PRODUCER_REGS);
            k.if_(t.eq(0u32), |k| {
                k.for_range(0u32, mine, |k, li| {
                    let o = tile(li);
                    k.for_range(0u32, ktiles, |k, j| {
                        let q = li * ktiles + j;
                        let s = q % stages;
                        // Round r of a stage waits for its readers' round r - 1 (round 0 for
                        // the phase before the first, complete from the start).
                        ring.empty.wait(k, s, ((q / stages) & 1u32) ^ 1u32);
                        ring.issue(j, s, (o.m0, o.n0), bat);
                    });
                });
            });
        },
        |k| {
            k.set_max_nreg(true, CONSUMER_REGS);
            consume(k, v, epi, &p, &ring, (mine, ktiles), &tile);
        },
    );
    // A block's stages and barriers take the other block's copies and arrivals until both
    // are done: neither leaves before the other.
    if cl > 1 {
        k.cluster_sync();
    }
}

/// Whether the two consumers share every tile, each computing `sub_m` of its rows (CUTLASS's
/// "cooperative" schedule: one `block_m × block_n` tile at a time, its epilogue not
/// overlapped), rather than taking turns on whole tiles ("ping-pong").
fn cooperative(v: &Variant) -> bool {
    v.cfg.sub_m < v.cfg.block_m
}

/// A consumer warpgroup's tiles: the main loop over k-tiles, then the epilogue.
fn consume<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
    p: &Params<T, O>,
    ring: &Ring<T>,
    (mine, ktiles): (Expr<u32>, Expr<u32>),
    tile: &dyn Fn(Expr<u32>) -> super::params::TileOrigin,
) {
    let cfg = v.cfg;
    let (bm, bn, bk, stages) = (cfg.block_m, cfg.block_n, cfg.block_k, cfg.stages);
    let t = k.thread_idx().x;
    let c = (t >> 7u32) - 1u32;
    let coop = cooperative(v);
    // The rows of each tile this consumer computes: all, or its `sub_m` of them.
    let (rows, row0) = if coop {
        (cfg.sub_m, c * cfg.sub_m)
    } else {
        (bm, k.lit(0u32))
    };
    let parts = rows / WG;
    let vars: Vec<_> = (0..parts).map(|_| WgmmaAcc::zeros(bn).vars(k)).collect();
    let all = |vars: &[Vec<crate::codegen::Var<f32>>]| {
        WgmmaAcc::from_elems(vars.iter().flatten().map(|x| x.get()).collect())
    };
    let set_all = |acc: &WgmmaAcc| {
        for (x, e) in vars.iter().flatten().zip(acc.elems()) {
            x.set(*e);
        }
    };
    let leader = (t & 127u32).eq(0u32);
    // The consumers take turns: each starts its tile's main loop only once the other has
    // passed every wait of the previous tile's (named barrier 1 + c, both warpgroups). Else
    // a consumer could wait on a stage two phases ahead of it, which a parity cannot tell
    // from the phase before (CUTLASS's math order barrier).
    let (first, step) = if coop {
        (k.lit(0u32), 1)
    } else {
        (c, CONSUMERS)
    };
    k.for_step(first, mine, step, |k, li| {
        let o = tile(li);
        let q0 = li * ktiles;
        if !coop {
            k.if_(li.gt(0u32), |k| {
                k.if_else(
                    c.eq(0u32),
                    |k| k.named_barrier_sync(1, 256),
                    |k| k.named_barrier_sync(2, 256),
                )
            });
        }
        // One k-tile's wgmmas stay in flight while the next tile's are issued; its stage is
        // released one tile later.
        k.for_range(0u32, ktiles, |k, j| {
            let q = q0 + j;
            let s = q % stages;
            ring.full.wait(k, s, (q / stages) & 1u32);
            k.wgmma_fence();
            let mut accs: Vec<WgmmaAcc> = vars.iter().map(|x| WgmmaAcc::from_vars(x)).collect();
            for kk in 0..bk / T::K {
                for (i, acc) in accs.iter_mut().enumerate() {
                    let (a, b) = ring.operands(s, kk, (row0 + i as u32 * WG) * bk);
                    *acc = k.wgmma(&a, &b, acc, true);
                }
            }
            k.wgmma_commit();
            let acc = k.wgmma_wait(
                1,
                &WgmmaAcc::from_elems(accs.iter().flat_map(|a| a.elems().to_vec()).collect()),
            );
            set_all(&acc);
            k.if_(leader.and(j.gt(0u32)), |_| {
                ring.release((q - 1u32) % stages)
            });
        });
        if !coop {
            k.if_((li + 1u32).lt(mine), |k| {
                k.if_else(
                    c.eq(0u32),
                    |k| k.named_barrier_arrive(2, 256),
                    |k| k.named_barrier_arrive(1, 256),
                )
            });
        }
        let acc = k.wgmma_wait(0, &all(&vars));
        set_all(&acc);
        k.if_(leader.and(ktiles.gt(0u32)), |_| {
            ring.release((q0 + ktiles - 1u32) % stages)
        });
        epilogue(k, v, epi, p, ring, &vars, (&o, row0));
        // The next tile starts from zero.
        for x in vars.iter().flatten() {
            x.set(0.0f32);
        }
    });
}

/// The epilogue of a consumer's tile: each warp stages its 16 rows of each 64-row part in its
/// own region after the ring and stores them along C's contiguous axis.
fn epilogue<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
    p: &Params<T, O>,
    ring: &Ring<T>,
    vars: &[Vec<crate::codegen::Var<f32>>],
    (o, row0): (&super::params::TileOrigin, Expr<u32>),
) {
    let bn = v.cfg.block_n;
    let t = k.thread_idx().x;
    let st = k.dynamic_shared::<f32>();
    // Consumer warps 0..8 (the producer's four come first).
    let warp = (t >> 5u32) - 4u32;
    let es = T::TY.size() as u32;
    let cols = staged_cols(bn, v.cfg.ring_bytes(es as usize));
    let stride = cols + 1;
    let region = 16 * stride;
    let ring_end = st.aligned_index(1024) + ring.elems() * es / 4;
    let base = ring_end + warp * region;
    for (i, part) in vars.iter().enumerate() {
        let acc = WgmmaAcc::from_vars(part);
        for half in 0..bn / cols {
            let c0 = half * cols;
            // Columns 8j..8j + 8 are elements 4j..4j + 4: this pass's columns are a run of
            // elements, an accumulator of `cols` columns of its own.
            let run = (c0 / 2) as usize..((c0 + cols) / 2) as usize;
            let part = WgmmaAcc::from_elems(acc.elems()[run].to_vec());
            let row = o.m0 + row0 + i as u32 * WG + (warp & 3u32) * 16u32;
            let at = (row, o.n0 + c0);
            if v.vec_c {
                store_acc_vec(k, p, epi, v.col_pairs, o.cbase, &part, base * 4u32, at);
            } else {
                store_acc_slice(k, p, v, epi, o.cbase, &part, (&st, base, stride), at);
                // The region is written again by the next pass.
                k.syncwarp(u32::MAX);
            }
        }
    }
}
