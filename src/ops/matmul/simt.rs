//! The SIMT kernel: each block computes a `block_m × block_n` tile of C from `block_k`-deep
//! tiles of A and B staged in shared memory (as f32), each thread a `thread_m × thread_n`
//! register tile with f32 fused multiply-adds (the builder contracts `acc + a·b`).
//!
//! Thread `(ty, tx)` owns rows `ty + i·(block_m/thread_m)` and columns `tx + j·(block_n/thread_n)`:
//! the shared reads of a warp are broadcasts or consecutive words (no bank conflicts), and the
//! stores of C are coalesced along its rows.

use crate::codegen::{Expr, KernelBuilder};

use super::epilogue::{store_out, EpilogueFn};
use super::params::{tile_origin, Params};
use super::stage::{main_loop, TileSrc};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// Records the SIMT kernel of variant `v` in the kernel being built.
pub(super) fn build<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
) {
    let p = Params::<T, O>::declare(v);
    let cfg = v.cfg;
    let (bm, bn, bk) = (cfg.block_m, cfg.block_n, cfg.block_k);
    let (tm, tn) = (cfg.sub_m, cfg.sub_n);
    let (rows_step, cols_step) = (bm / tm, bn / tn);
    let stages = cfg.stages as usize;
    let pad = cfg.pad(4) as usize;
    let tid = k.thread_idx().x;
    let (ty, tx) = (tid / cols_step, tid % cols_step);
    let o = tile_origin(k, &p, bm, bn);
    let sa = k.shared_array3::<f32>(stages, bk as usize, bm as usize + pad);
    let sb = k.shared_array3::<f32>(stages, bk as usize, bn as usize + pad);
    let acc: Vec<_> = (0..tm * tn).map(|_| k.var(0.0f32)).collect();
    let kt = p.k / bk + select_u32(p.k % bk);
    let (src_a, src_b) = TileSrc::operands(&p, &o, v);
    main_loop(
        k,
        cfg.stages,
        kt,
        |k, t| {
            let k0 = t * bk;
            (src_a.fetch(k, k0), src_b.fetch(k, k0))
        },
        |k, buf, (fa, fb)| {
            fa.store(k, &|kk, m, x: Expr<T>| sa.set3(buf, kk, m, x.cast::<f32>()));
            fb.store(k, &|kk, n, x: Expr<T>| sb.set3(buf, kk, n, x.cast::<f32>()));
        },
        |_, buf| {
            for kk in 0..bk {
                let a: Vec<Expr<f32>> = (0..tm)
                    .map(|i| sa.at3(buf, kk, ty + i * rows_step))
                    .collect();
                let b: Vec<Expr<f32>> = (0..tn)
                    .map(|j| sb.at3(buf, kk, tx + j * cols_step))
                    .collect();
                for i in 0..tm as usize {
                    for j in 0..tn as usize {
                        let c = &acc[i * tn as usize + j];
                        c.set(c.get() + a[i] * b[j]);
                    }
                }
            }
        },
    );
    for i in 0..tm {
        for j in 0..tn {
            let row = o.m0 + ty + i * rows_step;
            let col = o.n0 + tx + j * cols_step;
            let a = acc[(i * tn + j) as usize].get();
            store_out(k, &p, v, epi, o.cbase, row, col, a);
        }
    }
}

/// 1 when `x` is not 0 (a ceiling division's carry).
pub(super) fn select_u32(x: Expr<u32>) -> Expr<u32> {
    crate::codegen::select(x.ne(0u32), 1u32, 0u32)
}
