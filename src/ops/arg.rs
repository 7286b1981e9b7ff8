//! `argmin` / `argmax`: the index of the first smallest / largest element (a NaN counts as the
//! extreme, as in NumPy), over a whole array or along one axis.
//!
//! Whole arrays: a first pass where each thread keeps [`UNROLL`] running (value, vector index)
//! pairs, one per load in flight. A vector's extreme is found among its lanes first, so the
//! running pair is updated once per vector, not once per element; because each pair sees its
//! vectors in increasing order, a strict comparison keeps the first of equal values. At the end
//! the thread reloads its best vector to find the lane. Each block combines its threads' pairs
//! in a fixed tree order and stores its best; the last block to finish takes the best of the
//! blocks' pairs, in block order (one kernel, deterministic).
//!
//! Along an axis: one block per row when the last axis is reduced; otherwise one thread per
//! output element walking the reduced axis (coalesced across threads), in chunks when there are
//! few outputs, then a pass that merges the chunks in order.

use std::sync::OnceLock;

use ndarray::IxDyn;

use super::reduce::{
    column_chunks, input, last_block, output, over_blocks, read_one, row_grid, scalar,
    thread_vectors, tree_steps, tuning, whole_array_bounds, AxisSplit, BLOCK, UNROLL,
};
use crate::codegen::{
    select, DArray, Expr, Kernel, KernelBuilder, Num, PtxOptions, ReadWrite, Scalar, Var,
};
use crate::error::{Error, Result};
use crate::memory::scratch::{PassSpace, Scratch};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::module::LaunchConfig;
use crate::stream::Stream;

/// The kernels of one argmin/argmax, in the order of [`ArgExtreme::kernels`].
const KERNELS: [&str; 6] = ["full", "full_vec", "rows", "cols", "cols_final", "pick"];
const FULL: usize = 0;
const FULL_VEC: usize = 1;
const ROWS: usize = 2;
const COLS: usize = 3;
const COLS_FINAL: usize = 4;
/// A shard's candidate for a sharded argmin/argmax: its value and global index.
const PICK: usize = 5;

/// `argmin` (`largest == false`) or `argmax` for elements of `T`, kernels built on first use.
pub(crate) struct ArgExtreme<T> {
    largest: bool,
    kernels: [super::KernelSlot; KERNELS.len()],
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: Scalar + Num> ArgExtreme<T> {
    pub(crate) const fn new(largest: bool) -> Self {
        ArgExtreme {
            largest,
            kernels: [const { OnceLock::new() }; KERNELS.len()],
            _t: std::marker::PhantomData,
        }
    }

    fn op(&self) -> &'static str {
        if self.largest {
            "argmax"
        } else {
            "argmin"
        }
    }

    /// The vector width of 16-byte loads of `T` (1: no vector path).
    fn width() -> usize {
        match T::TY.size() {
            4 => 4,
            8 => 2,
            _ => 1,
        }
    }

    fn kernel(&self, which: usize) -> Result<&Kernel<()>> {
        super::built(&self.kernels[which], || {
            let largest = self.largest;
            let name = format!("{}_{}_{}", self.op(), T::TY.name(), KERNELS[which]);
            let w = Self::width();
            Kernel::<()>::build(&name, move |k, ()| match which {
                FULL_VEC if w == 4 => full_vec::<T, 4>(k, largest),
                FULL_VEC if w == 2 => full_vec::<T, 2>(k, largest),
                FULL | FULL_VEC => full::<T>(k, largest),
                ROWS => rows::<T>(k, largest),
                COLS => cols_partial::<T>(k, largest),
                PICK => pick::<T>(k),
                _ => cols_final::<T>(k, largest),
            })
        })
    }

    /// The PTX of every kernel (for tests and inspection).
    pub(crate) fn variants_ptx(&self, options: &PtxOptions) -> Result<Vec<(String, String)>> {
        (0..KERNELS.len())
            .filter(|&v| v != FULL_VEC || Self::width() > 1)
            .map(|v| {
                let k = self.kernel(v)?;
                Ok((k.name().to_string(), k.compile_ptx(options)?))
            })
            .collect()
    }

    /// The error for an argmin/argmax of an empty array.
    pub(crate) fn empty_error(&self) -> Error {
        Error::usage(format!(
            "{} of an empty array has no value; check the length first",
            self.op()
        ))
    }

    /// The index of the first extreme element.
    pub(crate) fn run<X: DeviceSlice<T> + ?Sized>(&self, stream: &Stream, x: &X) -> Result<u64> {
        let out = Scratch::<u64>::new(stream, 1)?;
        self.run_into(stream, x, out.ptr())?;
        read_one(stream, &out)
    }

    /// Writes the index of the first extreme element at device address `out`.
    pub(crate) fn run_into<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
    ) -> Result<()> {
        let n = x.len();
        if n == 0 {
            return Err(self.empty_error());
        }
        let ctx = stream.context();
        let sms = ctx.device().multiprocessor_count()? as usize;
        let w = Self::width();
        // The vector kernel starts every thread from vector 0, so it needs one whole vector.
        let vec_ok = w > 1 && n >= w && x.device_ptr() % 16 == 0;
        let per_thread = if vec_ok { w } else { 1 };
        let blocks = n
            .div_ceil(BLOCK as usize * per_thread)
            .clamp(1, sms * tuning().blocks_per_sm);
        // The partial indices, then the partial values (8-byte aligned).
        let space = PassSpace::new(stream, blocks * (8 + T::TY.size()))?;
        let (idxs, vals) = (space.partials(), space.partials() + blocks as u64 * 8);
        let which = if vec_ok { FULL_VEC } else { FULL };
        self.kernel(which)?
            .launch_with(stream, LaunchConfig::new(blocks as u32, BLOCK), |buf| {
                buf.push_flat(x.context(), x.device_ptr(), n)?;
                buf.push_flat(ctx, vals, blocks)?;
                buf.push_flat(ctx, idxs, blocks)?;
                buf.push_flat(ctx, space.counter(), 1)?;
                buf.push_flat(ctx, out, 1)?;
                buf.push_scalar(n as u64)
            })
        // Memory of `space` that is not the stream's own is freed in stream order.
    }

    /// Stores the value of `x` at the index found by [`run_into`](Self::run_into) at `idx` (in
    /// `stream`'s device memory) at `val_out`, and that index plus `offset` at `idx_out` (both
    /// addresses `stream`'s device may write: its own memory, or a peer's with peer access on).
    /// A shard's candidate for a sharded argmin/argmax.
    pub(crate) fn pick_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        idx: u64,
        offset: u64,
        val_out: u64,
        idx_out: u64,
    ) -> Result<()> {
        let ctx = stream.context();
        self.kernel(PICK)?
            .launch_with(stream, LaunchConfig::new(1, 32), |buf| {
                buf.push_flat(x.context(), x.device_ptr(), x.len())?;
                buf.push_flat(ctx, idx, 1)?;
                buf.push_flat(ctx, val_out, 1)?;
                buf.push_flat(ctx, idx_out, 1)?;
                buf.push_scalar(offset)
            })
    }

    /// For each of `m` outputs, picks the first extreme of its `chunks` candidates (row `j` of
    /// the values at `vals` and of the indices at `idxs`, `chunks` rows of `m`, in `stream`'s
    /// device memory) and stores its index at `out`: the last step of an axis argmin/argmax,
    /// and (one output) of a sharded one.
    pub(crate) fn combine_chunks_raw(
        &self,
        stream: &Stream,
        (vals, idxs): (u64, u64),
        m: usize,
        chunks: usize,
        out: u64,
    ) -> Result<()> {
        let ctx = stream.context();
        self.kernel(COLS_FINAL)?
            .launch_with(stream, LaunchConfig::covering(m, BLOCK)?, |buf| {
                buf.push_flat(ctx, vals, chunks * m)?;
                buf.push_flat(ctx, idxs, chunks * m)?;
                buf.push_flat(ctx, out, m)?;
                buf.push_scalar(m as u64)?;
                buf.push_scalar(chunks as u64)
            })
    }

    /// The index along `axis` of the first extreme element of every lane through that axis
    /// (NumPy's `argmax(axis=..., keepdims=...)`).
    pub(crate) fn run_axis<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<u64, IxDyn>> {
        let AxisSplit {
            outer,
            r,
            inner,
            out_shape,
        } = AxisSplit::new(self.op(), x.shape(), axis, keepdims)?;
        let m = outer * inner;
        let ctx = stream.context();
        let out = DeviceArray::<u64, _>::alloc_ordered(stream, IxDyn(&out_shape))?;
        if m == 0 {
            return Ok(out);
        }
        if r == 0 {
            return Err(self.empty_error());
        }
        let size = T::TY.size();
        if inner == 1 {
            // One block per row; short rows use a smaller block.
            let block = (r.next_power_of_two() as u32).clamp(32, BLOCK);
            let k = self.kernel(ROWS)?;
            for (first, rows, grid) in row_grid(outer) {
                k.launch_with(stream, LaunchConfig::new(grid, block), |buf| {
                    buf.push_flat(
                        x.context(),
                        x.device_ptr() + (first * r * size) as u64,
                        rows * r,
                    )?;
                    buf.push_flat(ctx, out.device_ptr() + (first * 8) as u64, rows)?;
                    buf.push_scalar(rows as u64)?;
                    buf.push_scalar(r as u64)
                })?;
            }
            return Ok(out);
        }
        // Split the reduced axis into chunks so that enough threads run.
        let (n_chunks, per_chunk) = column_chunks(ctx, m, r)?;
        let vals = Scratch::<T>::new(stream, n_chunks * m)?;
        let idxs = Scratch::<u64>::new(stream, n_chunks * m)?;
        let cfg = LaunchConfig::new((m.div_ceil(BLOCK as usize) as u32, n_chunks as u32), BLOCK);
        self.kernel(COLS)?.launch_with(stream, cfg, |buf| {
            buf.push_flat(x.context(), x.device_ptr(), x.len())?;
            buf.push_flat(ctx, vals.ptr(), n_chunks * m)?;
            buf.push_flat(ctx, idxs.ptr(), n_chunks * m)?;
            buf.push_scalar(outer as u64)?;
            buf.push_scalar(r as u64)?;
            buf.push_scalar(inner as u64)?;
            buf.push_scalar(per_chunk as u64)
        })?;
        self.combine_chunks_raw(
            stream,
            (vals.ptr(), idxs.ptr()),
            m,
            n_chunks,
            out.device_ptr(),
        )?;
        Ok(out)
    }
}

/// Whether candidate `(a, ia)` beats `(b, ib)`: more extreme, or NaN where the other is not,
/// or equal (both NaN counts as equal) and earlier.
fn better<T: Scalar + Num>(
    largest: bool,
) -> impl Fn(Expr<T>, Expr<u64>, Expr<T>, Expr<u64>) -> Expr<bool> + Copy {
    move |a, ia, b, ib| {
        let strictly = if largest { a.gt(b) } else { a.lt(b) };
        let (a_nan, b_nan) = (a.ne(a), b.ne(b));
        let tie = a.eq(b).or(a_nan.and(b_nan));
        strictly.or(a_nan.and(!b_nan)).or(tie.and(ia.lt(ib)))
    }
}

/// A running (value, index) pair.
struct Best<T: Scalar> {
    v: Var<T>,
    i: Var<u64>,
}

impl<T: Scalar + Num> Best<T> {
    fn new(k: &KernelBuilder, v: Expr<T>, i: Expr<u64>) -> Self {
        Best {
            v: k.var(v),
            i: k.var(i),
        }
    }

    /// Takes `(v, i)` if it beats the current pair.
    fn offer(&self, largest: bool, v: Expr<T>, i: Expr<u64>) {
        let take = better::<T>(largest)(v, i, self.v.get(), self.i.get());
        self.set_if(take, v, i);
    }

    fn set_if(&self, take: Expr<bool>, v: Expr<T>, i: Expr<u64>) {
        self.v.set(select(take, v, self.v.get()));
        self.i.set(select(take, i, self.i.get()));
    }
}

/// The extreme of `lanes` (NaN if any lane is NaN); always one of the lanes, bit for bit.
fn lanes_extreme<T: Scalar + Num, const W: usize>(lanes: [Expr<T>; W], largest: bool) -> Expr<T> {
    let pick = |a: Expr<T>, b: Expr<T>| {
        let beats = if largest { a.gt(b) } else { a.lt(b) };
        select(beats.or(a.ne(a)), a, b)
    };
    // A balanced tree: two levels for four lanes.
    let mut level: Vec<Expr<T>> = lanes.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|p| if p.len() == 2 { pick(p[0], p[1]) } else { p[0] })
            .collect();
    }
    level[0]
}

/// Combines the block's pairs in shared memory in a fixed tree order; thread 0 gets the
/// block's best. The block size must be a power of two from 32 to [`BLOCK`].
fn block_best<T: Scalar + Num>(
    k: &KernelBuilder,
    best: &Best<T>,
    largest: bool,
) -> (Expr<T>, Expr<u64>) {
    let tv = k.shared_array::<T>(BLOCK as usize);
    let ti = k.shared_array::<u64>(BLOCK as usize);
    let t = k.thread_idx().x;
    tv.set(t, best.v.get());
    ti.set(t, best.i.get());
    k.syncthreads();
    tree_steps(k, |s| {
        let (ov, oi) = (tv.at(t + s), ti.at(t + s));
        let take = better::<T>(largest)(ov, oi, tv.at(t), ti.at(t));
        tv.set(t, select(take, ov, tv.at(t)));
        ti.set(t, select(take, oi, ti.at(t)));
    });
    // Only thread 0 reads the result (see `block_reduce`).
    let (v, i) = (k.var(best.v.get()), k.var(best.i.get()));
    k.if_(t.eq(0u32), |_| {
        v.set(tv.at(0u32));
        i.set(ti.at(0u32));
    });
    (v.get(), i.get())
}

/// The end of a whole-array kernel: the block's best pair goes to `vals/idxs[blockIdx.x]`
/// (thread 0); the last block to finish takes the best of all blocks' pairs and writes its
/// index to `out[0]`.
fn finish<T: Scalar + Num>(k: &KernelBuilder, best: &Best<T>, largest: bool, outs: Outs<T>) {
    let Outs {
        vals,
        idxs,
        counter,
        out,
    } = outs;
    let (v, i) = block_best(k, best, largest);
    k.if_(k.thread_idx().x.eq(0u32), |k| {
        vals.set(k.block_idx().x, v);
        idxs.set(k.block_idx().x, i);
    });
    k.if_(last_block(k, counter), |k| {
        let best = Best::new(k, vals.at(0u32), idxs.at(0u32));
        over_blocks(k, |j| best.offer(largest, vals.at(j), idxs.at(j)));
        let (_, i) = block_best(k, &best, largest);
        k.if_(k.thread_idx().x.eq(0u32), |_| out.set(0u32, i));
    });
}

/// The parameters of a whole-array kernel after `x`, in order: the per-block values and
/// indices, the counter of finished blocks, the one-element output (then `n`).
struct Outs<T: Scalar> {
    vals: DArray<T, 1, ReadWrite>,
    idxs: DArray<u64, 1, ReadWrite>,
    counter: DArray<u32, 1, ReadWrite>,
    out: DArray<u64, 1, ReadWrite>,
}

impl<T: Scalar> Outs<T> {
    fn declare() -> Self {
        Outs {
            vals: output::<T>(),
            idxs: output::<u64>(),
            counter: output::<u32>(),
            out: output::<u64>(),
        }
    }
}

/// A whole array, one element at a time (unaligned arrays, 1- and 2-byte elements).
/// Parameters: x, vals, idxs, counter, out, n.
fn full<T: Scalar + Num>(k: &KernelBuilder, largest: bool) {
    // Declared in parameter order.
    let (x, outs, n) = (input::<T>(), Outs::<T>::declare(), scalar::<u64>());
    // Element 0 is a real candidate, so threads with no elements of their own hold it.
    let best = Best::new(k, x.at(0u32), Expr::lit(0u64));
    k.for_step(k.grid1(), n, k.gridsize1(), |_, j| {
        best.offer(largest, x.at(j), j)
    });
    finish(k, &best, largest, outs);
}

/// A whole array in 16-byte vectors of `W` lanes (aligned arrays of at least `W` elements).
/// Parameters: x, vals, idxs, counter, out, n.
fn full_vec<T: Scalar + Num, const W: usize>(k: &KernelBuilder, largest: bool) {
    let (x, outs, n) = (input::<T>(), Outs::<T>::declare(), scalar::<u64>());
    whole_array_bounds(k);
    let nv = n / W as u64;
    // Every running pair starts from vector 0, a real candidate (n >= W).
    let first = lanes_extreme(x.load_vec::<W>(0u64), largest);
    let runs: [Best<T>; UNROLL] = std::array::from_fn(|_| Best::new(k, first, Expr::lit(0u64)));
    let (first, stride, end) = thread_vectors(k, nv);
    k.for_step(first, end, stride * UNROLL as u64, |_, v| {
        // UNROLL independent loads in flight; loads past the end read vector 0 again, which
        // never beats a pair that started from it.
        let loads: [_; UNROLL] = std::array::from_fn(|u| {
            let j = v + stride * u as u64;
            let j = select(j.lt(end), j, 0u64);
            (j, x.load_vec::<W>(j))
        });
        for (run, (j, lanes)) in runs.iter().zip(loads) {
            let m = lanes_extreme(lanes, largest);
            let cur = run.v.get();
            // Strictly more extreme, or NaN over a number; nothing beats a NaN. Vectors come in
            // increasing order, so an equal value keeps the earlier vector.
            let beyond = if largest { !m.le(cur) } else { !m.ge(cur) };
            run.set_if(beyond.and(cur.eq(cur)), m, j);
        }
    });
    // Merge the pairs (value, vector index), then find the lane in the winning vector: the
    // first that holds the value.
    let best = Best::new(k, runs[0].v.get(), runs[0].i.get());
    for run in &runs[1..] {
        best.offer(largest, run.v.get(), run.i.get());
    }
    let (bv, bj) = (best.v.get(), best.i.get());
    let lanes = x.load_vec::<W>(bj);
    let mut lane = Expr::lit(W as u64 - 1);
    for l in (0..W).rev() {
        let hit = lanes[l].eq(bv).or(lanes[l].ne(lanes[l]).and(bv.ne(bv)));
        lane = select(hit, l as u64, lane);
    }
    best.i.set(bj * W as u64 + lane);
    // The tail: at most W - 1 elements, one per thread.
    let t = nv * W as u64 + k.grid1();
    k.if_(t.lt(n), |_| best.offer(largest, x.at(t), t));
    finish(k, &best, largest, outs);
}

/// One block per row of `r` elements. Parameters: x, out, rows, r.
fn rows<T: Scalar + Num>(k: &KernelBuilder, largest: bool) {
    let (x, out) = (input::<T>(), output::<u64>());
    let (rows, r) = (scalar::<u64>(), scalar::<u64>());
    let row = k.block_idx().y.cast::<u64>() * 65535u64 + k.block_idx().x.cast::<u64>();
    // Every thread takes part in the block's barriers; rows past the end read row 0.
    let live = row.lt(rows);
    let base = select(live, row, 0u64) * r;
    let t = k.thread_idx().x.cast::<u64>();
    let start = select(t.lt(r), t, 0u64);
    let best = Best::new(k, x.at(base + start), start);
    k.for_step(t, r, k.block_dim().x.cast::<u64>(), |_, j| {
        best.offer(largest, x.at(base + j), j)
    });
    let (_, i) = block_best(k, &best, largest);
    k.if_(t.eq(0u64).and(live), |_| out.set(row, i));
}

/// One thread per output element over one chunk of the reduced axis.
/// Parameters: x, vals, idxs, outer, r, inner, per_chunk.
fn cols_partial<T: Scalar + Num>(k: &KernelBuilder, largest: bool) {
    let x = input::<T>();
    let (vals, idxs) = (output::<T>(), output::<u64>());
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
        let at = |j: Expr<u64>| x.at((o * r + j) * inner + col);
        let best = Best::new(k, at(start), start);
        k.for_range(start + 1u64, stop, |_, j| best.offer(largest, at(j), j));
        vals.set(chunk * m + c, best.v.get());
        idxs.set(chunk * m + c, best.i.get());
    });
}

/// A shard's candidate: its value at the index it found, and that index made global.
/// Parameters: x, idx (one element), val out, idx out, offset.
fn pick<T: Scalar + Num>(k: &KernelBuilder) {
    let (x, idx) = (input::<T>(), input::<u64>());
    let (vals, idxs, offset) = (output::<T>(), output::<u64>(), scalar::<u64>());
    k.if_(k.grid1().lt(Expr::lit(1u64)), |_| {
        let i = idx.at(Expr::lit(0u64));
        vals.set(Expr::lit(0u64), x.at(i));
        idxs.set(Expr::lit(0u64), i + offset);
    });
}

/// Merges the chunks of every output element in order. Parameters: vals, idxs, out, m, chunks.
fn cols_final<T: Scalar + Num>(k: &KernelBuilder, largest: bool) {
    let (vals, idxs) = (input::<T>(), input::<u64>());
    let (out, m, chunks) = (output::<u64>(), scalar::<u64>(), scalar::<u64>());
    let c = k.grid1();
    k.if_(c.lt(m), |k| {
        let best = Best::new(k, vals.at(c), idxs.at(c));
        k.for_range(1u64, chunks, |_, j| {
            best.offer(largest, vals.at(j * m + c), idxs.at(j * m + c))
        });
        out.set(c, best.i.get());
    });
}
