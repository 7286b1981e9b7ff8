//! The tensor-core kernel (`mma.sync`, sm_80 and later): each block computes a
//! `block_m × block_n` tile of C from `block_k`-deep tiles of A (`[m][k]`) and B (`[k][n]`)
//! staged in shared memory in the input type; its warps split the tile into `warp_m × warp_n`
//! tiles, each a grid of 16×8 MMA tiles accumulated in f32 registers.
//!
//! The fragments are read from shared memory by [`frag_a`] and [`frag_b`]: one `ldmatrix` per
//! fragment for f16/bf16, element loads (`FragA::from_fn`) for tf32.
//!
//! Two main loops: the register-staged one of `stage` (1 or 2 stages, static shared memory),
//! and the `cp.async` pipeline of `pipeline` (3 or 4 stages, dynamic shared memory, tiles in
//! their global layout) where the variant says so.

use crate::codegen::{Expr, FragA, FragB, FragC, KernelBuilder, NdMut, Var};

use super::epilogue::{store_out, store_slice, EpilogueFn};
use super::params::{tile_origin, Params, TileOrigin};
use super::pipeline::{self, Frags, PipeSrc};
use super::simt::select_u32;
use super::stage::{main_loop, TileSrc};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// The A fragment of the 16×K MMA tile at `(row0, k0)` of shared buffer `buf` (`[m][k]`).
fn frag_a<T: MatmulInput>(
    k: &KernelBuilder,
    sa: &NdMut<T, 3>,
    buf: Expr<u32>,
    row0: Expr<u32>,
    k0: u32,
) -> FragA<T> {
    T::frag_a(k, sa, buf, row0, k0)
}

/// The B fragment of the K×8 MMA tile at `(k0, col0)` of shared buffer `buf` (`[k][n]`).
fn frag_b<T: MatmulInput>(
    k: &KernelBuilder,
    sb: &NdMut<T, 3>,
    buf: Expr<u32>,
    k0: u32,
    col0: Expr<u32>,
) -> FragB<T> {
    T::frag_b(k, sb, buf, k0, col0)
}

/// Records the tensor-core kernel of variant `v` in the kernel being built.
pub(super) fn build<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    v: &Variant,
    epi: &EpilogueFn,
) {
    let p = Params::<T, O>::declare(v);
    let cfg = v.cfg;
    let (bm, bn, bk) = (cfg.block_m, cfg.block_n, cfg.block_k);
    let (wm, wn) = (cfg.sub_m, cfg.sub_n);
    let (mi_n, ni_n) = ((wm / 16) as usize, (wn / 8) as usize);
    let threads = cfg.threads();
    let stages = cfg.stages as usize;
    let pad = cfg.pad(T::TY.size()) as usize;
    let warp = k.thread_idx().x / 32u32;
    let warps_n = bn / wn;
    let (wr, wc) = (warp / warps_n, warp % warps_n);
    let (wrow, wcol) = (wr * wm, wc * wn);
    let o = tile_origin(k, &p, bm, bn);
    let zero = Expr::lit(0.0f32);
    let acc: Vec<Vec<[Var<f32>; 4]>> = (0..mi_n)
        .map(|_| {
            (0..ni_n)
                .map(|_| std::array::from_fn(|_| k.var(zero)))
                .collect()
        })
        .collect();
    let kt = p.k / bk + select_u32(p.k % bk);
    // D += A·B of one k-step's fragments.
    let mma_all = |k: &KernelBuilder, fa: &[FragA<T>], fb: &[FragB<T>]| {
        for (mi, a) in fa.iter().enumerate() {
            for (ni, b) in fb.iter().enumerate() {
                let vars = &acc[mi][ni];
                let c = FragC::<T>::from_elems(vars.map(|x| x.get()));
                let d = k.mma(a, b, &c);
                for (x, e) in vars.iter().zip(d.elems()) {
                    x.set(e);
                }
            }
        }
    };
    if v.pipe {
        let sh = k.dynamic_shared::<T>();
        let (src_a, src_b) = TileSrc::operands(&p, &o, v);
        let pad = pad as u32;
        let a = PipeSrc {
            src: src_a,
            offset: 0,
            pad,
        };
        let b = PipeSrc {
            src: src_b,
            offset: cfg.stages * a.stage_elems(),
            pad,
        };
        // Each fragment's index is this lane's (per buffer) plus a constant, which the
        // lowering folds into the load's address.
        let load = |k: &KernelBuilder, buf: Expr<u32>, ks: u32| {
            let (abuf, bbuf) = (a.buffer(buf), b.buffer(buf));
            let k0 = ks * T::K;
            let fa: Vec<FragA<T>> = (0..mi_n)
                .map(|mi| {
                    let m0 = mi as u32 * 16;
                    let idx = |m: Expr<u32>, kk: Expr<u32>| {
                        abuf + a.offset_of(wrow + m, kk) + a.offset_of_lit(m0, k0)
                    };
                    T::frag_a_flat(k, &sh, !a.src.contig_k, &idx)
                })
                .collect();
            // Two fragments per load where there are two.
            let fb: Vec<FragB<T>> = (0..ni_n.div_ceil(2))
                .flat_map(|nj| {
                    let n0 = nj as u32 * 16;
                    let idx = |kk: Expr<u32>, n: Expr<u32>| {
                        bbuf + b.offset_of(wcol + n, kk) + b.offset_of_lit(n0, k0)
                    };
                    if 2 * nj + 1 < ni_n {
                        T::frag_b2_flat(k, &sh, b.src.contig_k, &idx).to_vec()
                    } else {
                        vec![T::frag_b_flat(k, &sh, b.src.contig_k, &idx)]
                    }
                })
                .collect();
            Frags { a: fa, b: fb }
        };
        pipeline::main_loop(
            k,
            &sh,
            cfg.stages,
            threads,
            kt,
            [&a, &b],
            bk / T::K,
            load,
            |k, f| mma_all(k, &f.a, &f.b),
        );
        let pipe_bytes = (a.stage_elems() + b.stage_elems()) * cfg.stages * T::TY.size() as u32;
        if !staged_epilogue(k, &p, v, epi, &o, &acc, (wrow, wcol), pipe_bytes) {
            epilogue(k, &p, v, epi, &o, &acc, wrow, wcol);
        }
        return;
    }
    let sa = k.shared_array3::<T>(stages, bm as usize, bk as usize + pad);
    let sb = k.shared_array3::<T>(stages, bk as usize, bn as usize + pad);
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
            fa.store(k, &|kk, m, x| sa.set3(buf, m, kk, x));
            fb.store(k, &|kk, n, x| sb.set3(buf, kk, n, x));
        },
        |k, buf| {
            for ks in 0..bk / T::K {
                let k0 = ks * T::K;
                let fa: Vec<FragA<T>> = (0..mi_n)
                    .map(|mi| frag_a(k, &sa, buf, wrow + mi as u32 * 16, k0))
                    .collect();
                let fb: Vec<FragB<T>> = (0..ni_n)
                    .map(|ni| frag_b(k, &sb, buf, k0, wcol + ni as u32 * 8))
                    .collect();
                mma_all(k, &fa, &fb);
            }
        },
    );
    epilogue(k, &p, v, epi, &o, &acc, wrow, wcol);
}

/// The accumulators through the epilogue into C.
#[allow(clippy::too_many_arguments)]
fn epilogue<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    o: &TileOrigin,
    acc: &[Vec<[Var<f32>; 4]>],
    wrow: Expr<u32>,
    wcol: Expr<u32>,
) {
    for (mi, row) in acc.iter().enumerate() {
        for (ni, vars) in row.iter().enumerate() {
            let (r0, c0) = (o.m0 + wrow + mi as u32 * 16, o.n0 + wcol + ni as u32 * 8);
            FragC::<T>::from_elems(vars.map(|x| x.get())).for_each(k, |r, c, val| {
                store_out(k, p, v, epi, o.cbase, r0 + r, c0 + c, val);
            });
        }
    }
}

/// The accumulators through shared memory into C (the pipelined kernel's epilogue, in the
/// dynamic shared memory of its `shared_bytes` once the main loop is done): per 16-row slice
/// of its tile, each warp writes its accumulators to a region of its own, then walks the
/// region along C's contiguous axis, consecutive lanes on consecutive elements, so that each
/// store instruction of the warp writes whole runs of C, and the epilogue's code is one loop
/// body instead of one copy per accumulator. `false` (nothing recorded) where the warp tile is
/// not a whole number of 32-column runs or the regions do not fit.
#[allow(clippy::too_many_arguments)]
fn staged_epilogue<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    o: &TileOrigin,
    acc: &[Vec<[Var<f32>; 4]>],
    (wrow, wcol): (Expr<u32>, Expr<u32>),
    shared_bytes: u32,
) -> bool {
    let cfg = v.cfg;
    let (wn, warps) = (cfg.sub_n, cfg.threads() / 32);
    // A region: 16 rows of the warp tile, rows padded by one word against bank conflicts.
    let stride = wn + 1;
    let region = 16 * stride;
    if wn % 32 != 0 || warps * region * 4 > shared_bytes {
        return false;
    }
    let st = k.dynamic_shared::<f32>();
    let lane = k.lane_id();
    let base = k.thread_idx().x / 32u32 * region;
    // Every warp is past its last read of the pipeline's buffers.
    k.syncthreads();
    for (mi, row) in acc.iter().enumerate() {
        for (ni, vars) in row.iter().enumerate() {
            let c0 = ni as u32 * 8;
            FragC::<T>::from_elems(vars.map(|x| x.get())).for_each(k, |r, c, val| {
                st.set(base + r * stride + c + c0, val);
            });
        }
        k.syncwarp(u32::MAX);
        let origin = (o.m0 + wrow + mi as u32 * 16, o.n0 + wcol);
        store_slice(
            k,
            p,
            v,
            epi,
            o.cbase,
            (&st, base, stride),
            origin,
            (wn, lane),
        );
        // Every lane has read the region before the next slice overwrites it.
        k.syncwarp(u32::MAX);
    }
    true
}
