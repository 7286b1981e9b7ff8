//! The reduction kernels' bodies: the block-wide tree, the whole-array pass, the last-axis
//! rows, and the two column passes (other axes), built into `Reduction`'s kernels.

use super::*;

/// Combines the block's per-thread values in shared memory (fixed tree order); thread 0 gets
/// the block's result. The block size must be a power of two up to 256.
pub(super) fn block_reduce<A: ScalarType>(
    k: &KernelBuilder,
    v: Expr<A>,
    combine: &CombineFn<A>,
) -> Expr<A> {
    let tile = k.shared_array::<A>(BLOCK as usize);
    let t = k.thread_idx().x;
    tile.set(t, v);
    k.syncthreads();
    tree_steps(k, |s| tile.set(t, combine(tile.at(t), tile.at(t + s))));
    // Only thread 0 reads the result: other warps may not read slot 0 without a block barrier
    // after the first warp's last step.
    let total = k.var(v);
    k.if_(t.eq(0u32), |_| total.set(tile.at(0u32)));
    total.get()
}

/// Runs `step(s)` in threads `t < s` for s = blockDim/2, blockDim/4, ..., 1 (a tree that
/// combines slot `t + s` into slot `t`): a block barrier after each step while more than one
/// warp takes part, then the first warp alone with warp barriers. Afterwards only thread 0 may
/// rely on slot 0. The block size must be a power of two, at least 32.
pub(in crate::ops) fn tree_steps(k: &KernelBuilder, step: impl Fn(Expr<u32>)) {
    let t = k.thread_idx().x;
    let s = k.var(k.block_dim().x / 2u32);
    k.while_(
        |_| s.get().gt(16u32),
        |k| {
            k.if_(t.lt(s.get()), |_| step(s.get()));
            k.syncthreads();
            s.set(s.get() >> 1u32);
        },
    );
    k.if_(t.lt(32u32), |k| {
        k.while_(
            |_| s.get().gt(0u32),
            |k| {
                k.if_(t.lt(s.get()), |_| step(s.get()));
                k.syncwarp(u32::MAX);
                s.set(s.get() >> 1u32);
            },
        );
    });
}

/// The vectors `0..nv` a thread of a whole-array pass reads, as (first, step, end): a grid-
/// stride loop, or (layout 1) a contiguous segment per block, read a block-wide row at a time.
pub(in crate::ops) fn thread_vectors(
    k: &KernelBuilder,
    nv: Expr<u64>,
) -> (Expr<u64>, Expr<u64>, Expr<u64>) {
    if tuning().layout == 0 {
        return (k.grid1(), k.gridsize1(), nv);
    }
    let blocks = k.grid_dim().x.cast::<u64>();
    let bd = k.block_dim().x.cast::<u64>();
    // Segments of whole block-wide rows.
    let per_block = (nv + blocks * bd - 1u64) / (blocks * bd) * bd;
    let start = k.block_idx().x.cast::<u64>() * per_block;
    let end = (start + per_block).min(nv);
    (start + k.thread_idx().x.cast::<u64>(), bd, end)
}

/// What the last block of a whole-array pass does with the combined value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PassEnd {
    /// Stores `post(value, n)` (or, for a partial pass, the value).
    Store,
    /// Stores the value, then publishes a flag another device waits for (`flag_join.rs`).
    Publish,
    /// Publishes the value to the peers, waits for theirs and stores the whole reduction's
    /// result (`flag_join.rs`, [`flag_join::JoinParams`]).
    Join,
}

pub(super) fn full_pass<T: ScalarType, A: ScalarType, R: ScalarType, const W: usize>(
    k: &KernelBuilder,
    map: &MapFn<T, A>,
    combine: &CombineFn<A>,
    post: &PostFn<A, R>,
    id: A,
    end: PassEnd,
) {
    let (x, partials, counter, out, n) = (
        input::<T>(),
        output::<A>(),
        output::<u32>(),
        output::<R>(),
        scalar::<u64>(),
    );
    // A shard's partial result that another device waits for: its flag (`flag_join.rs`).
    let flag =
        (end == PassEnd::Publish).then(|| (output::<u64>(), scalar::<u64>(), scalar::<u64>()));
    // The whole reduction ends here, after the other shards' partials (`flag_join.rs`).
    let join = (end == PassEnd::Join).then(flag_join::JoinParams::<A>::declare);
    whole_array_bounds(k);
    let accs: [_; W] = std::array::from_fn(|_| k.var(id));
    let nv = n / W as u64;
    let add = |lanes: [Expr<T>; W]| {
        for (acc, lane) in accs.iter().zip(lanes) {
            acc.set(combine(acc.get(), map(lane)));
        }
    };
    // This thread's vectors: first, first + step, ... below end; `unroll` independent loads
    // per iteration keep enough bytes in flight, then the remaining vectors one by one.
    let (first, step, end) = thread_vectors(k, nv);
    strided_loads(k, first, step, end, |j| x.load_lanes::<W>(j), add);
    // The tail: at most W - 1 elements, one per thread.
    let t = nv * W as u64 + k.grid1();
    k.if_(t.lt(n), |_| {
        accs[0].set(combine(accs[0].get(), map(x.at(t))))
    });
    let mut total = accs[0].get();
    for acc in &accs[1..] {
        total = combine(total, acc.get());
    }
    let r = block_reduce(k, total, combine);
    let tid = k.thread_idx().x;
    k.if_(tid.eq(0u32), |k| partials.set(k.block_idx().x, r));
    // The last block to finish combines the partials in block order.
    k.if_(last_block(k, counter), |k| {
        let acc = k.var(id);
        over_blocks(k, |j| acc.set(combine(acc.get(), partials.at(j))));
        let r = block_reduce(k, acc.get(), combine);
        k.if_(tid.eq(0u32), |k| match &join {
            Some(j) => j.finish(k, r, &out, combine, post, id),
            None => {
                out.set(0u32, post(r, n));
                if let Some((flags, at, epoch)) = &flag {
                    flag_join::publish(k, flags, *at, *epoch);
                }
            }
        });
    });
}

/// Calls `add` with `load(j)` for this thread's vector indices `j = first, first + step, ...`
/// below `end`, in that order: the tuning's `unroll` independent loads per iteration (enough
/// bytes in flight), then the remaining vectors one by one.
pub(super) fn strided_loads<V>(
    k: &KernelBuilder,
    first: Expr<u64>,
    step: Expr<u64>,
    end: Expr<u64>,
    load: impl Fn(Expr<u64>) -> V,
    add: impl Fn(V),
) {
    let unroll = tuning().unroll as u64;
    let count = select(first.lt(end), (end - first + step - 1u64) / step, 0u64);
    let batches = count / unroll * unroll;
    k.for_step(0u64, batches, unroll, |_, b| {
        let j = first + b * step;
        let loads: Vec<V> = (0..unroll).map(|u| load(j + step * u)).collect();
        loads.into_iter().for_each(&add);
    });
    k.for_range(batches, count, |_, b| add(load(first + b * step)));
}

/// Declares the launch bounds of the whole-array kernels ([`BLOCK`] threads, the tuning's
/// blocks per multiprocessor) unless the tuning turns them off.
pub(in crate::ops) fn whole_array_bounds(k: &KernelBuilder) {
    if tuning().bounds {
        k.launch_bounds(BLOCK, tuning().blocks_per_sm as u32);
    }
}

/// Runs `f(j)` for the grid's block indices `j` this thread takes in a block-strided loop (for
/// the last block to combine the blocks' partial results).
pub(in crate::ops) fn over_blocks(k: &KernelBuilder, f: impl Fn(Expr<u64>)) {
    k.for_step(
        k.thread_idx().x.cast::<u64>(),
        k.grid_dim().x.cast::<u64>(),
        k.block_dim().x.cast::<u64>(),
        |_, j| f(j),
    );
}

/// Whether this block is the last of the grid to get here (the same answer in all its
/// threads), called after thread 0 has stored the block's partial result: thread 0 fences its
/// stores and counts the block on `counter[0]`, which wraps back to zero with the last block
/// (ready for the next kernel). In the last block every thread then fences again, so that it
/// sees every other block's partial result.
pub(in crate::ops) fn last_block(
    k: &KernelBuilder,
    counter: DArray<u32, 1, ReadWrite>,
) -> Expr<bool> {
    let seen = k.shared_array::<u32>(1);
    let last = k.grid_dim().x - 1u32;
    k.if_(k.thread_idx().x.eq(0u32), |k| {
        k.threadfence();
        seen.set(0u32, counter.atomic_inc(0u32, last));
    });
    k.syncthreads();
    let is_last = k.var(seen.at(0u32).eq(last));
    k.if_(is_last.get(), |k| k.threadfence());
    is_last.get()
}

pub(super) fn rows<T: ScalarType, A: ScalarType, R: ScalarType, const W: usize>(
    k: &KernelBuilder,
    map: &MapFn<T, A>,
    combine: &CombineFn<A>,
    post: &PostFn<A, R>,
    id: A,
) {
    let (x, out, rows, r) = (
        input::<T>(),
        output::<R>(),
        scalar::<u64>(),
        scalar::<u64>(),
    );
    let row = k.block_idx().y.cast::<u64>() * 65535u64 + k.block_idx().x.cast::<u64>();
    // Every thread of a block takes part in its barriers; rows past the end compute nothing.
    let accs: [_; W] = std::array::from_fn(|_| k.var(id));
    let t = k.thread_idx().x.cast::<u64>();
    let end = select(row.lt(rows), r / W as u64, 0u64);
    // With W > 1, `r` is a multiple of W, so a row is `r / W` whole vectors.
    let base = row * (r / W as u64);
    let add = |lanes: [Expr<T>; W]| {
        for (acc, lane) in accs.iter().zip(lanes) {
            acc.set(combine(acc.get(), map(lane)));
        }
    };
    let step = k.block_dim().x.cast::<u64>();
    strided_loads(k, t, step, end, |j| x.load_lanes::<W>(base + j), add);
    let mut total = accs[0].get();
    for acc in &accs[1..] {
        total = combine(total, acc.get());
    }
    let total = block_reduce(k, total, combine);
    k.if_(t.eq(0u64).and(row.lt(rows)), |_| {
        out.set(row, post(total, r))
    });
}

pub(super) fn cols_partial<T: ScalarType, A: ScalarType>(
    k: &KernelBuilder,
    map: &MapFn<T, A>,
    combine: &CombineFn<A>,
    id: A,
) {
    let (x, part) = (input::<T>(), output::<A>());
    let (outer, r, inner, per_chunk) = (
        scalar::<u64>(),
        scalar::<u64>(),
        scalar::<u64>(),
        scalar::<u64>(),
    );
    let m = outer * inner;
    let c = k.grid1();
    let chunk = k.block_idx().y.cast::<u64>();
    k.if_(c.lt(m), |k| {
        let (o, col) = (c / inner, c % inner);
        let start = chunk * per_chunk;
        let stop = (start + per_chunk).min(r);
        let acc = k.var(id);
        k.for_range(start, stop, |_, j| {
            acc.set(combine(acc.get(), map(x.at((o * r + j) * inner + col))))
        });
        part.set(chunk * m + c, acc.get());
    });
}

pub(super) fn cols_final<A: ScalarType, R: ScalarType>(
    k: &KernelBuilder,
    combine: &CombineFn<A>,
    post: &PostFn<A, R>,
    id: A,
) {
    let (part, out) = (input::<A>(), output::<R>());
    let (m, chunks, r) = (scalar::<u64>(), scalar::<u64>(), scalar::<u64>());
    let c = k.grid1();
    k.if_(c.lt(m), |k| {
        let acc = k.var(id);
        k.for_range(0u64, chunks, |_, j| {
            acc.set(combine(acc.get(), part.at(j * m + c)))
        });
        out.set(c, post(acc.get(), r));
    });
}
