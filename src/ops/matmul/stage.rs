//! Global → shared staging of the operand tiles, and the main loop over K that pipelines it
//! with the compute. Kept behind two small steps (`fetch`: global memory to registers,
//! `Fetched::store`: registers to shared memory) so that `cp.async` (global to shared without
//! registers) can replace the pair later.

use crate::codegen::{select, DArray, Expr, KernelBuilder, NdMut, ReadOnly, Scalar};

use super::params::{Params, TileOrigin};
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// One operand's tile source: the `x_tile × k_tile` tile at `(x0, k0)` of a matrix whose
/// element `(x, kk)` is at `base + x·ld + kk` (K contiguous) or `base + x + kk·ld` (X
/// contiguous). X is M for A and N for B.
pub(super) struct TileSrc<'a, T: Scalar> {
    pub arr: &'a DArray<T, 1, ReadOnly>,
    pub base: Expr<u64>,
    pub ld: Expr<u64>,
    pub contig_k: bool,
    pub x0: Expr<u32>,
    pub x_total: Expr<u32>,
    pub k_total: Expr<u32>,
    pub x_tile: u32,
    pub k_tile: u32,
    /// Elements per load along the contiguous axis: 1 or 4 (the launch checked alignment
    /// and that the contiguous extent is a multiple of 4).
    pub vec: u32,
    pub threads: u32,
}

/// One load of a fetched tile: `(kk, x)` of its first element, the values along the
/// contiguous axis, and the guard of a thread past the tile's last load (if any).
struct Item<T: Scalar> {
    kk: Expr<u32>,
    x: Expr<u32>,
    vals: Vec<Expr<T>>,
    guard: Option<Expr<bool>>,
}

/// One thread's part of a fetched tile.
pub(super) struct Fetched<T: Scalar> {
    items: Vec<Item<T>>,
    contig_k: bool,
}

impl<'a, T: MatmulInput> TileSrc<'a, T> {
    /// The sources of A's and B's tiles of this block (origin `o`) under variant `v`.
    pub fn operands<O: MatmulOutput>(
        p: &'a Params<T, O>,
        o: &TileOrigin,
        v: &Variant,
    ) -> (Self, Self) {
        let cfg = v.cfg;
        let src = |arr, base, ld, contig_k, x0, x_total, x_tile, vec: bool| TileSrc {
            arr,
            base,
            ld,
            contig_k,
            x0,
            x_total,
            k_total: p.k,
            x_tile,
            k_tile: cfg.block_k,
            vec: if vec { 4 } else { 1 },
            threads: cfg.threads(),
        };
        (
            src(
                &p.a,
                o.abase,
                p.lda,
                v.a_row,
                o.m0,
                p.m,
                cfg.block_m,
                v.vec_a,
            ),
            src(
                &p.b,
                o.bbase,
                p.ldb,
                !v.b_row,
                o.n0,
                p.n,
                cfg.block_n,
                v.vec_b,
            ),
        )
    }
}

impl<T: Scalar> TileSrc<'_, T> {
    /// Loads this thread's part of the tile at depth `k0` into registers: consecutive threads
    /// take consecutive (vectors of) elements along the contiguous axis (coalesced). Elements
    /// outside the matrix read as 0 (the load's index is clamped inside it, so every load is
    /// in bounds and nothing branches).
    pub fn fetch(&self, k: &KernelBuilder, k0: Expr<u32>) -> Fetched<T> {
        self.fetch_in(k, k0, true)
    }

    /// [`fetch`](Self::fetch), or with `bounded` false, for a tile wholly inside the matrix:
    /// no clamps and no zeroing.
    pub fn fetch_in(&self, k: &KernelBuilder, k0: Expr<u32>, bounded: bool) -> Fetched<T> {
        let tid = k.thread_idx().x;
        let w = self.vec;
        let (c_len, o_len) = if self.contig_k {
            (self.k_tile / w, self.x_tile)
        } else {
            (self.x_tile / w, self.k_tile)
        };
        let total = c_len * o_len;
        let per = total.div_ceil(self.threads);
        let zero = Expr::lit(T::from_bits(0));
        let mut items = Vec::with_capacity(per as usize);
        for r in 0..per {
            let v = tid + r * self.threads;
            let guard = (total % self.threads != 0).then(|| v.lt(total));
            // A thread past the tile's last load (its store is guarded) still loads: without
            // bounds, from the last load's place (inside the tile, so inside the matrix).
            let vl = match guard {
                Some(_) if !bounded => v.min(total - 1),
                _ => v,
            };
            let (ci, oi) = (vl % c_len, vl / c_len);
            let (kk, x) = if self.contig_k {
                (ci * w, oi)
            } else {
                (oi, ci * w)
            };
            let (gx, gk) = (self.x0 + x, k0 + kk);
            let inside = gx.lt(self.x_total).and(gk.lt(self.k_total));
            // Clamped inside the matrix (the launch guarantees both totals are at least 1
            // whenever a tile is fetched; along the contiguous axis, to a whole vector).
            let (xl, kl) = if self.contig_k { (1, w) } else { (w, 1) };
            let (cx, ck) = if bounded {
                (gx.min(self.x_total - xl), gk.min(self.k_total - kl))
            } else {
                (gx, gk)
            };
            let (cx, ck) = (cx.cast::<u64>(), ck.cast::<u64>());
            let idx = if self.contig_k {
                self.base + cx * self.ld + ck
            } else {
                self.base + cx + ck * self.ld
            };
            let vals: Vec<Expr<T>> = match w {
                4 => self.arr.load_vec::<4>(idx / 4u64).to_vec(),
                _ => vec![self.arr.at(idx)],
            };
            let vals = if bounded {
                vals.into_iter().map(|x| select(inside, x, zero)).collect()
            } else {
                vals
            };
            items.push(Item { kk, x, vals, guard });
        }
        Fetched {
            items,
            contig_k: self.contig_k,
        }
    }
}

impl<T: Scalar> TileSrc<'_, T> {
    /// Whether this block's tile lies wholly inside the matrix along X (uniform per block).
    pub fn inside_x(&self) -> Expr<bool> {
        (self.x0 + self.x_tile).le(self.x_total)
    }

    /// Issues this thread's `cp.async` copies of the tile at depth `k0` into buffer `buf` of
    /// `dst` (`[stage][k][x]`, the SIMT kernel's layout): 16-byte chunks along X where the
    /// operand is X-contiguous with vector loads allowed, else one 4-byte copy per element
    /// (transposing a K-contiguous operand; consecutive threads along K, so that a warp's
    /// writes fall in 32 banks). With `bounded`, elements outside the matrix arrive as zeros
    /// (`src-size` 0, the source index clamped inside it); without, every element must be
    /// inside.
    pub fn issue_async(
        &self,
        k: &KernelBuilder,
        k0: Expr<u32>,
        dst: &NdMut<T, 3>,
        buf: Expr<u32>,
        bounded: bool,
    ) {
        let tid = k.thread_idx().x;
        let w = if self.contig_k { 1 } else { self.vec };
        let (c_len, o_len) = if self.contig_k {
            (self.k_tile, self.x_tile)
        } else {
            (self.x_tile / w, self.k_tile)
        };
        let total = c_len * o_len;
        // Item r is element (or chunk) `tid + r·threads`: where whole lines of the tile
        // divide the threads, item r is item 0 moved `r·threads / c_len` lines, and its
        // indices are item 0's plus constants (one address computation a tile).
        let lines_per_item = (self.threads % c_len == 0).then_some(self.threads / c_len);
        let at = |v: Expr<u32>| {
            let (ci, oi) = (v % c_len, v / c_len);
            if self.contig_k {
                (ci, oi)
            } else {
                (oi, ci * w)
            }
        };
        let (kk0, x0) = at(tid);
        // Item 0's indices (built where used: a thread past the last item has none).
        let first = || {
            let d0 = dst.index3(buf, kk0, x0);
            let line = dst.index3(0u32, 1u32, 0u32) - dst.index3(0u32, 0u32, 0u32);
            let s0 = if self.contig_k {
                self.base + (self.x0 + x0).cast::<u64>() * self.ld + (k0 + kk0).cast::<u64>()
            } else {
                self.base + (self.x0 + x0).cast::<u64>() + (k0 + kk0).cast::<u64>() * self.ld
            };
            (d0, line, s0)
        };
        for r in 0..total.div_ceil(self.threads) {
            let v = tid + r * self.threads;
            let (kk, x) = at(v);
            let (gx, gk) = (self.x0 + x, k0 + kk);
            let copy = |_: &KernelBuilder| {
                let (d, idx) = match lines_per_item {
                    Some(l) if !bounded => {
                        let (d0, line, s0) = first();
                        let step = (r * l) as i64;
                        if self.contig_k {
                            // Lines are along X: the next item is `step` rows of A or B on.
                            (d0 + step, s0 + self.ld * (step as u64))
                        } else {
                            (d0 + line * step, s0 + self.ld * (step as u64))
                        }
                    }
                    _ => {
                        let (cx, ck) = if bounded {
                            let xl = if self.contig_k { 1 } else { w };
                            (
                                gx.min(self.x_total - xl).cast::<u64>(),
                                gk.min(self.k_total - 1u32).cast::<u64>(),
                            )
                        } else {
                            (gx.cast::<u64>(), gk.cast::<u64>())
                        };
                        let idx = if self.contig_k {
                            self.base + cx * self.ld + ck
                        } else {
                            self.base + cx + ck * self.ld
                        };
                        (dst.index3(buf, kk, x), idx)
                    }
                };
                let inside = || gx.lt(self.x_total).and(gk.lt(self.k_total));
                match (w, bounded) {
                    (4, false) => dst.cp_async::<16>(d, self.arr, idx),
                    (4, true) => {
                        dst.cp_async_zfill::<16>(d, self.arr, idx, select(inside(), 16u32, 0u32))
                    }
                    (_, false) => dst.cp_async::<4>(d, self.arr, idx),
                    (_, true) => {
                        dst.cp_async_zfill::<4>(d, self.arr, idx, select(inside(), 4u32, 0u32))
                    }
                }
            };
            if total % self.threads != 0 && (r + 1) * self.threads > total {
                k.if_(v.lt(total), copy);
            } else {
                copy(k);
            }
        }
    }
}

impl<T: Scalar> Fetched<T> {
    /// Stores the fetched elements with `store(kk, x, value)` (into a shared tile).
    pub fn store(&self, k: &KernelBuilder, store: &impl Fn(Expr<u32>, Expr<u32>, Expr<T>)) {
        for Item { kk, x, vals, guard } in &self.items {
            let put = || {
                for (q, &val) in vals.iter().enumerate() {
                    let q = q as u32;
                    if self.contig_k {
                        store(*kk + q, *x, val)
                    } else {
                        store(*kk, *x + q, val)
                    }
                }
            };
            match guard {
                Some(g) => k.if_(*g, |_| put()),
                None => put(),
            }
        }
    }
}

/// The main loop over the `kt` tiles along K. `fetch(k, t)` reads tile `t` of both operands
/// into registers, `store(k, buf, fetched)` writes them to shared buffer `buf`, `compute(k,
/// buf)` multiplies buffer `buf` into the accumulators.
///
/// One stage: fetch, store, barrier, compute, barrier, per tile. Two stages: tile `t + 1` is
/// fetched before tile `t` is computed (its loads in flight meanwhile), then stored to the
/// other buffer, with one barrier per tile. (The last iteration fetches a tile past K: every
/// element reads as 0 from a clamped, in-bounds index, and the buffer it fills is never read.)
pub(super) fn main_loop<F>(
    k: &KernelBuilder,
    stages: u32,
    kt: Expr<u32>,
    fetch: impl Fn(&KernelBuilder, Expr<u32>) -> F,
    store: impl Fn(&KernelBuilder, Expr<u32>, &F),
    compute: impl Fn(&KernelBuilder, Expr<u32>),
) {
    if stages == 1 {
        let zero = Expr::lit(0u32);
        k.for_range(0u32, kt, |k, t| {
            let f = fetch(k, t);
            store(k, zero, &f);
            k.syncthreads();
            compute(k, zero);
            k.syncthreads();
        });
        return;
    }
    k.if_(kt.gt(0u32), |k| {
        let f = fetch(k, Expr::lit(0u32));
        store(k, Expr::lit(0u32), &f);
    });
    k.syncthreads();
    k.for_range(0u32, kt, |k, t| {
        let f = fetch(k, t + 1u32);
        let buf = t & 1u32;
        compute(k, buf);
        store(k, buf ^ 1u32, &f);
        k.syncthreads();
    });
}

/// The main loop over the `kt` tiles along K with `stages` (3 or more) shared buffers filled by
/// `cp.async`: `issue(k, t, buf)` issues this thread's copies of tile `t` into buffer `buf`,
/// `compute(k, buf)` multiplies buffer `buf` into the accumulators.
///
/// `stages - 1` tiles are in flight ahead of the one computed. Per tile: wait for this
/// thread's copies of it, one barrier (everyone's copies have landed, and everyone is done
/// with the buffer computed last, which the next copy refills), issue tile `t + stages - 1`,
/// compute tile `t`. Every iteration commits one group, empty past the last tile, so that the
/// wait's count stays exact.
pub(super) fn async_loop(
    k: &KernelBuilder,
    stages: u32,
    kt: Expr<u32>,
    issue: impl Fn(&KernelBuilder, Expr<u32>, Expr<u32>),
    compute: impl Fn(&KernelBuilder, Expr<u32>),
) {
    for s in 0..stages - 1 {
        k.if_(kt.gt(s), |k| issue(k, Expr::lit(s), Expr::lit(s)));
        k.cp_async_commit();
    }
    let next = |b: Expr<u32>| select(b.eq(stages - 1), 0u32, b + 1u32);
    let (rd, wr) = (k.var(0u32), k.var(stages - 1));
    k.for_range(0u32, kt, |k, t| {
        k.cp_async_wait((stages - 2) as u8);
        k.syncthreads();
        let nt = t + (stages - 1);
        let w = wr.get();
        k.if_(nt.lt(kt), |k| issue(k, nt, w));
        k.cp_async_commit();
        let r = rd.get();
        compute(k, r);
        rd.set(next(r));
        wr.set(next(w));
    });
}
