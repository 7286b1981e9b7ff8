//! The scan kernels: the whole-array single pass with decoupled look-back (`tiles`), and the
//! scans along the last axis (`scan_rows`) and along another axis (`scan_cols`).

use super::*;

/// `v` scanned inclusively across the lanes of a (full) warp, in lane order.
pub(super) fn warp_scan<T: Num>(k: &KernelBuilder, v: Expr<T>, combine: &CombineFn<T>) -> Expr<T> {
    let lane = k.lane_id();
    let mut v = v;
    for s in [1u32, 2, 4, 8, 16] {
        let y = k.shfl_up_sync(FULL_MASK, v, s);
        v = select(lane.ge(s), combine(y, v), v);
    }
    v
}

/// The exclusive form of a warp's inclusive scan `incl`: the previous lane's value, the
/// identity in lane 0.
pub(super) fn warp_exclusive<T: Num>(k: &KernelBuilder, incl: Expr<T>, id: T) -> Expr<T> {
    let prev = k.shfl_up_sync(FULL_MASK, incl, 1u32);
    select(k.lane_id().eq(0u32), Expr::lit(id), prev)
}

/// The whole-array scan: one tile of `block * rows * W` elements per block, `W` elements per
/// vector access (1: scalar accesses, for unaligned arrays).
pub(super) fn tiles<T: Num, const W: usize>(
    k: &KernelBuilder,
    combine: &CombineFn<T>,
    id: T,
    tune: ScanTuning,
    ticket: bool,
    with_carry: bool,
) {
    let rows = tune.rows;
    let (x, out, ctl, status, vals) = (
        input::<T>(),
        output::<T>(),
        output::<u32>(),
        output::<u64>(),
        output::<T>(),
    );
    let (n, cap, excl) = (scalar::<u64>(), scalar::<u64>(), scalar::<u64>());
    // With a carry: `ncarry` values that come before the whole array (a sharded scan's earlier
    // shards' totals), combined in order into the first tile's prefix.
    let carries = with_carry.then(|| (input::<T>(), scalar::<u32>()));
    let (block, warps) = (tune.block, tune.block as usize / 32);
    k.launch_bounds(block, tune.min_blocks);
    let t = k.thread_idx().x;
    let (lane, warp) = (k.lane_id(), t / 32u32);
    let last = k.grid_dim().x - 1u32;
    // The tile: its block index (blocks start in index order, so every earlier tile's block
    // is running or done), or a ticket taken in the order blocks start; and the scan's epoch,
    // read now and first used after the barrier that follows the loads and local scans.
    let info = k.shared_array::<u32>(2);
    let tile = if ticket {
        k.if_(t.eq(0u32), |_| {
            info.set(0u32, ctl.atomic_inc(0u32, last));
            info.set(1u32, ctl.atomic_load(1u32));
        });
        k.syncthreads();
        info.at(0u32)
    } else {
        k.if_(t.eq(0u32), |_| info.set(1u32, ctl.atomic_load(1u32)));
        k.block_idx().x
    };
    let per_tile = (block as usize * rows * W) as u64;
    let start = tile.cast::<u64>() * per_tile;
    let full = (start + per_tile).le(n);
    // Element `i` of row `u` of this thread is element `first(u) + i` of the array.
    let first = |u: usize| start + ((u as u64 * block as u64) + t.cast::<u64>()) * W as u64;
    let items: Vec<[_; W]> = (0..rows)
        .map(|_| std::array::from_fn(|_| k.var(id)))
        .collect();
    k.if_else(
        full,
        |_| {
            for (u, row) in items.iter().enumerate() {
                let lanes: [Expr<T>; W] = x.load_lanes::<W>(first(u) / W as u64);
                row.iter().zip(lanes).for_each(|(v, l)| v.set(l));
            }
        },
        |_| {
            for (u, row) in items.iter().enumerate() {
                for (i, v) in row.iter().enumerate() {
                    let j = first(u) + i as u64;
                    v.set(select(j.lt(n), x.at(j.min(n - 1u64)), Expr::lit(id)));
                }
            }
        },
    );
    // Each thread's rows scanned, then the threads' row totals across each warp.
    let local: Vec<Vec<Expr<T>>> = items
        .iter()
        .map(|row| {
            let mut acc = row[0].get();
            let mut out = vec![acc];
            for v in &row[1..] {
                acc = combine(acc, v.get());
                out.push(acc);
            }
            out
        })
        .collect();
    let slots = rows * warps;
    let sums = k.shared_array::<T>(slots);
    let pref = k.shared_array::<T>(slots);
    let warp_excl: Vec<Expr<T>> = local
        .iter()
        .enumerate()
        .map(|(u, row)| {
            let incl = warp_scan(k, row[W - 1], combine);
            let slot = warp + (u * warps) as u32;
            k.if_(lane.eq(31u32), |_| sums.set(slot, incl));
            warp_exclusive(k, incl, id)
        })
        .collect();
    k.syncthreads();
    // Read after a barrier: thread 0 stored it at the start.
    let epoch = info.at(1u32);
    let epoch = select(epoch.ge(EPOCH_MAX), 1u32, epoch + 1u32);
    // The first warp scans the (row, warp) slots in order, publishes the tile's aggregate,
    // looks back for the tile's prefix, and gives every slot its prefix.
    k.if_(warp.eq(0u32), |k| {
        let per_lane = slots.div_ceil(32);
        let mut parts = Vec::with_capacity(per_lane);
        let mut acc = Expr::lit(id);
        for j in 0..per_lane {
            let slot = lane * per_lane as u32 + j as u32;
            let v = select(
                slot.lt(slots as u32),
                sums.at(slot.min(slots as u32 - 1)),
                Expr::lit(id),
            );
            acc = if j == 0 { v } else { combine(acc, v) };
            parts.push(acc);
        }
        let incl = warp_scan(k, acc, combine);
        let lane_excl = warp_exclusive(k, incl, id);
        let aggregate = k.shfl_sync(FULL_MASK, incl, 31u32);
        let publish = Publish {
            status,
            vals,
            cap,
            tile,
            epoch,
        };
        // The first tile's prefix: the carry (read by that tile alone), else the identity.
        let carry = k.var(id);
        if let Some((values, count)) = carries {
            k.if_(tile.eq(0u32), |k| {
                k.for_range(0u32, count, |_, j| {
                    carry.set(combine(carry.get(), values.at(j)))
                });
            });
        }
        k.if_(lane.eq(0u32), |k| {
            let kind = select(tile.eq(0u32), PREFIX, AGGREGATE);
            let first = if carries.is_some() {
                select(tile.eq(0u32), combine(carry.get(), aggregate), aggregate)
            } else {
                aggregate
            };
            publish.store(k, kind, first);
        });
        let prefix = k.var(carry.get());
        k.if_(tile.gt(0u32), |k| {
            prefix.set(look_back(k, &publish, combine, id));
            k.if_(lane.eq(0u32), |k| {
                publish.store(k, Expr::lit(PREFIX), combine(prefix.get(), aggregate))
            });
        });
        // The last tile's look-back has seen every tile publish, after each read the epoch.
        k.if_(lane.eq(0u32).and(tile.eq(last)), |k| {
            k.threadfence();
            ctl.atomic_exch(1u32, epoch);
        });
        let base = combine(prefix.get(), lane_excl);
        for j in 0..per_lane {
            let slot = lane * per_lane as u32 + j as u32;
            let before = if j == 0 {
                base
            } else {
                combine(base, parts[j - 1])
            };
            k.if_(slot.lt(slots as u32), |_| pref.set(slot, before));
        }
    });
    k.syncthreads();
    // Every element: the tile's prefix up to this thread's row, then the row so far.
    let exclusive = excl.ne(0u64);
    let results: Vec<[Expr<T>; W]> = local
        .iter()
        .enumerate()
        .map(|(u, row)| {
            let p = combine(pref.at(warp + (u * warps) as u32), warp_excl[u]);
            std::array::from_fn(|i| {
                let prev = if i == 0 { Expr::lit(id) } else { row[i - 1] };
                combine(p, select(exclusive, prev, row[i]))
            })
        })
        .collect();
    k.if_else(
        full,
        |_| {
            for (u, r) in results.iter().enumerate() {
                out.store_lanes::<W>(first(u) / W as u64, *r);
            }
        },
        |k| {
            for (u, r) in results.iter().enumerate() {
                for (i, v) in r.iter().enumerate() {
                    let j = first(u) + i as u64;
                    k.if_(j.lt(n), |_| out.set(j, *v));
                }
            }
        },
    );
}

/// Where a tile publishes its descriptor.
pub(super) struct Publish<T: Num> {
    status: crate::codegen::SliceMut<u64>,
    vals: crate::codegen::SliceMut<T>,
    cap: Expr<u64>,
    tile: Expr<u32>,
    epoch: Expr<u32>,
}

impl<T: Num> Publish<T> {
    /// Publishes `value` as this tile's descriptor of `kind` (one thread).
    fn store(&self, k: &KernelBuilder, kind: Expr<u32>, value: Expr<T>) {
        let flag = ((self.epoch << 2u32) | kind).cast::<u64>() << 32u64;
        if T::TY.size() == 4 {
            let bits = value.bitcast::<u32>().cast::<u64>();
            self.status.atomic_exch(self.tile, flag | bits);
        } else {
            let at = self.tile.cast::<u64>() + select(kind.eq(PREFIX), self.cap, 0u64);
            self.vals.set(at, value);
            k.threadfence();
            self.status.atomic_exch(self.tile, flag);
        }
    }
}

/// The combination of every tile before this one (`tile > 0`), read by the whole first warp
/// from its predecessors' descriptors, 32 tiles at a time (lane `l` reads tile `base - l`),
/// waiting until each has published, up to the nearest inclusive prefix.
pub(super) fn look_back<T: Num>(
    k: &KernelBuilder,
    p: &Publish<T>,
    combine: &CombineFn<T>,
    id: T,
) -> Expr<T> {
    let lane = k.lane_id();
    let prefix = k.var(id);
    let base = k.var(p.tile.cast::<i64>() - 1i64);
    let more = k.var(true);
    k.while_(
        |_| more.get(),
        |k| {
            let j = base.get() - lane.cast::<i64>();
            let at = j.max(0i64);
            let word = k.var(0u64);
            let waiting = k.var(true);
            k.while_(
                |_| waiting.get(),
                |k| {
                    let w = p.status.atomic_load(at);
                    word.set(w);
                    let flag = (w >> 32u64).cast::<u32>();
                    let ready = (flag >> 2u32).eq(p.epoch).or(j.lt(0i64));
                    waiting.set(k.any_sync(FULL_MASK, !ready));
                },
            );
            let flag = (word.get() >> 32u64).cast::<u32>();
            let is_prefix = (flag & 3u32).eq(PREFIX).or(j.lt(0i64));
            let v = if T::TY.size() == 4 {
                word.get().cast::<u32>().bitcast::<T>()
            } else {
                // The value was stored before the flag, behind a fence.
                k.threadfence();
                let i = at.cast::<u64>() + select(is_prefix, p.cap, 0u64);
                p.vals.atomic_load(i)
            };
            // Lanes up to the nearest inclusive prefix (the lowest lane that has one) count.
            let prefixes = k.ballot_sync(FULL_MASK, is_prefix);
            let nearest = select(prefixes.ne(0u32), prefixes.ffs() - 1u32, 31u32);
            let v = select(lane.le(nearest).and(j.ge(0i64)), v, Expr::lit(id));
            // Combined in tile order: higher lanes hold earlier tiles.
            let mut r = v;
            for s in [1u32, 2, 4, 8, 16] {
                r = combine(k.shfl_down_sync(FULL_MASK, r, s), r);
            }
            let window = k.shfl_sync(FULL_MASK, r, 0u32);
            prefix.set(combine(window, prefix.get()));
            more.set(prefixes.eq(0u32));
            base.set(base.get() - 32i64);
        },
    );
    prefix.get()
}

/// Scans along the last axis: one block per row, a block-wide chunk at a time.
pub(super) fn scan_rows<T: Num>(k: &KernelBuilder, combine: &CombineFn<T>, id: T) {
    let (x, out) = (input::<T>(), output::<T>());
    let (rows, r, excl) = (scalar::<u64>(), scalar::<u64>(), scalar::<u64>());
    let row = k.block_idx().y.cast::<u64>() * 65535u64 + k.block_idx().x.cast::<u64>();
    let t = k.thread_idx().x;
    let (lane, warp) = (k.lane_id(), t / 32u32);
    let valid = row.lt(rows);
    let totals = k.shared_array::<T>(WARPS);
    let carry = k.var(id);
    let exclusive = excl.ne(0u64);
    k.for_step(0u64, r, BLOCK as u64, |k, c| {
        let j = c + t.cast::<u64>();
        let inside = valid.and(j.lt(r));
        let at = row.min(rows - 1u64) * r + j.min(r - 1u64);
        let v = select(inside, x.at(at), Expr::lit(id));
        let incl = warp_scan(k, v, combine);
        let lane_excl = warp_exclusive(k, incl, id);
        k.if_(lane.eq(31u32), |_| totals.set(warp, incl));
        k.syncthreads();
        let mut before = Expr::lit(id);
        let mut all = Expr::lit(id);
        for w in 0..WARPS {
            let tw = totals.at(w as u32);
            before = select(warp.gt(w as u32), combine(before, tw), before);
            all = combine(all, tw);
        }
        let p = combine(carry.get(), before);
        let value = combine(p, select(exclusive, lane_excl, incl));
        k.if_(inside, |_| out.set(at, value));
        carry.set(combine(carry.get(), all));
        k.syncthreads();
    });
}

/// Scans along an axis that is not the last: one thread per lane through the axis.
pub(super) fn scan_cols<T: Num>(k: &KernelBuilder, combine: &CombineFn<T>, id: T) {
    let (x, out) = (input::<T>(), output::<T>());
    let (outer, r, inner, excl) = (
        scalar::<u64>(),
        scalar::<u64>(),
        scalar::<u64>(),
        scalar::<u64>(),
    );
    let c = k.grid1();
    let exclusive = excl.ne(0u64);
    k.if_(c.lt(outer * inner), |k| {
        let (o, col) = (c / inner, c % inner);
        let acc = k.var(id);
        k.for_range(0u64, r, |_, j| {
            let at = (o * r + j) * inner + col;
            let next = combine(acc.get(), x.at(at));
            out.set(at, select(exclusive, acc.get(), next));
            acc.set(next);
        });
    });
}
