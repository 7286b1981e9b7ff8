//! Reductions: `map` each element, `combine` pairwise from an `identity`, then `post`-process
//! (e.g. divide by the count for a mean), over a whole array or along one axis.
//!
//! Deterministic: a fixed grid for a given device and shape, per-thread partial results
//! combined in a fixed tree order, per-block partials combined in block order; no
//! floating-point atomics. Whole-array reductions are one kernel: each block reduces a
//! contiguous segment, a block-wide row of 16-byte vectors at a time with four loads in
//! flight and one accumulator per vector lane (four independent f32 sums per thread, which
//! also shortens the rounding chains), combines its threads in shared memory (the last five
//! steps within one warp) and stores its partial; the last block to finish (counted with an
//! atomic increment on the stream's workspace) combines the partials. Axis reductions: the
//! last axis is reduced by one block per row (four vector loads in flight per thread, as the
//! whole-array pass); other axes by one thread per output element
//! walking the reduced axis in coalesced steps, split into row chunks across blocks when
//! there are few outputs, then a second pass.

pub(crate) mod flag_join;

use std::sync::{Arc, OnceLock};

mod host;
mod kernels;

use kernels::{cols_final, cols_partial, full_pass, rows, PassEnd};
pub(super) use kernels::{last_block, over_blocks, thread_vectors, tree_steps, whole_array_bounds};

use ndarray::IxDyn;

use crate::codegen::{
    select, DArray, Expr, Kernel, KernelBuilder, ReadWrite, Scalar as ScalarType,
};
use crate::error::{Error, Result};
use crate::memory::scratch::{PassSpace, Scratch};
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::module::LaunchConfig;
use crate::stream::Stream;

type MapFn<T, A> = dyn Fn(Expr<T>) -> Expr<A> + Send + Sync;
type CombineFn<A> = dyn Fn(Expr<A>, Expr<A>) -> Expr<A> + Send + Sync;
type PostFn<A, R> = dyn Fn(Expr<A>, Expr<u64>) -> Expr<R> + Send + Sync;

/// Threads per block of the reduction kernels.
pub(super) const BLOCK: u32 = 256;
/// Vector loads in flight per thread in whole-array reductions.
pub(super) const UNROLL: usize = 4;

/// The geometry of whole-array reductions.
pub(super) struct Tuning {
    /// Vector loads in flight per thread.
    pub unroll: usize,
    /// Blocks of [`BLOCK`] threads per multiprocessor.
    pub blocks_per_sm: usize,
    /// 0: grid-stride loops; 1: a contiguous segment per block.
    pub layout: u8,
    /// Whether the kernels declare launch bounds of [`BLOCK`] threads and `blocks_per_sm`
    /// blocks per multiprocessor (so the compiler fits the registers to that many blocks).
    pub bounds: bool,
}

/// The geometry: `unroll` 4, 4 blocks per multiprocessor, a contiguous segment per block
/// (measured on an H200: 2-6% faster than grid-stride loops for sum, max and argmax), launch
/// bounds of 4 blocks per multiprocessor (which let the compiler use 62 registers instead of
/// 46: 1% faster for sum and max, 2% for argmax); or `CUDAJIT_REDUCE_TUNE=U,B[,L[,M]]` (read
/// once; for benchmarking other geometries; `M` 0 turns the launch bounds off).
pub(super) fn tuning() -> &'static Tuning {
    static T: OnceLock<Tuning> = OnceLock::new();
    T.get_or_init(|| {
        let parsed = std::env::var("CUDAJIT_REDUCE_TUNE").ok().and_then(|v| {
            let mut it = v.split(',').map(|f| f.trim().parse::<usize>().ok());
            let (u, b) = (it.next()??, it.next()??);
            let (l, m) = (it.next().flatten(), it.next().flatten());
            Some((u, b, l.unwrap_or(1), m.unwrap_or(1)))
        });
        let (unroll, blocks_per_sm, layout, bounds) = match parsed {
            Some((u, b, l, m)) if (1..=16).contains(&u) && (1..=32).contains(&b) && l <= 1 => {
                (u, b, l as u8, m == 1)
            }
            _ => (UNROLL, 4, 1, true),
        };
        Tuning {
            unroll,
            blocks_per_sm,
            layout,
            bounds,
        }
    })
}

/// The kernels of a reduction, by index (`Reduction::kernels`), and their name suffixes.
const KERNELS: [&str; 14] = [
    "full1",
    "full_vec",
    "rows",
    "rows_vec",
    "cols",
    "cols_final",
    "part1",
    "part_vec",
    "cols_final_part",
    "cols_final_join",
    "part1_publish",
    "part_vec_publish",
    "full_join",
    "full_vec_join",
];
const FULL: usize = 0;
const FULL_VEC: usize = 1;
const ROWS: usize = 2;
const ROWS_VEC: usize = 3;
const COLS: usize = 4;
const COLS_FINAL: usize = 5;
/// Whole-array passes that store the combined value before `post` (a shard's partial result).
const PART: usize = 6;
const PART_VEC: usize = 7;
/// The column pass's last step without `post`: a shard's partial results along axis 0.
const COLS_FINAL_PART: usize = 8;
/// `cols_final` for one column after waiting for other devices' flags (`flag_join.rs`).
const COLS_FINAL_JOIN: usize = 9;
/// `PART` and `PART_VEC` that publish a flag after their result (`flag_join.rs`).
const PART_PUB: usize = 10;
const PART_VEC_PUB: usize = 11;
/// `FULL` and `FULL_VEC` that end the whole sharded reduction: publish to the peers, wait for
/// the other shards, combine them (`flag_join.rs`).
const FULL_JOIN: usize = 12;
const FULL_VEC_JOIN: usize = 13;

/// What a whole-array pass's last block does (and the parameters it takes for it).
pub(super) enum PassArgs<'a> {
    /// Stores `post(value, n)`.
    Full,
    /// Stores the value before `post` (a shard's partial result).
    Partial,
    /// Stores the partial result, then publishes its flag.
    Publish(&'a flag_join::FlagPublish),
    /// Ends the whole reduction (publish, wait, combine).
    Join(&'a flag_join::JoinArgs<'a>),
}

/// A reduction from elements of `T`, accumulating in `A`, giving `R`.
///
/// ```no_run
/// use cudajit::ops::Reduction;
/// # fn main() -> cudajit::Result<()> {
/// // The L2 norm: map x -> x*x, combine by +, from 0, then sqrt.
/// let l2 = Reduction::<f32, f32, f32>::new("l2", |x| x * x, |a, b| a + b, 0.0)?.post(|s, _n| s.sqrt());
/// # Ok(()) }
/// ```
pub struct Reduction<T, A, R> {
    name: String,
    map: Arc<MapFn<T, A>>,
    combine: Arc<CombineFn<A>>,
    post: Arc<PostFn<A, R>>,
    identity: A,
    empty_is_error: bool,
    kernels: [super::KernelSlot; KERNELS.len()],
    host_warned: host::HostWarned,
}

impl<T: ScalarType, A: ScalarType> Reduction<T, A, A> {
    /// A reduction of `map(x)` values combined by `combine`, starting from `identity` (which
    /// an empty array gives).
    pub fn new(
        name: &str,
        map: impl Fn(Expr<T>) -> Expr<A> + Send + Sync + 'static,
        combine: impl Fn(Expr<A>, Expr<A>) -> Expr<A> + Send + Sync + 'static,
        identity: A,
    ) -> Result<Self> {
        crate::codegen::check_kernel_name(name)?;
        Ok(Reduction {
            name: name.to_string(),
            map: Arc::new(map),
            combine: Arc::new(combine),
            post: Arc::new(|a, _| a),
            identity,
            empty_is_error: false,
            kernels: Default::default(),
            host_warned: Default::default(),
        })
    }
}

impl<T: ScalarType, A: ScalarType, R: ScalarType> Reduction<T, A, R> {
    /// The same reduction, with `f(result, count)` applied to each result (`count` is the
    /// number of elements reduced into it).
    pub fn post<R2: ScalarType>(
        self,
        f: impl Fn(Expr<A>, Expr<u64>) -> Expr<R2> + Send + Sync + 'static,
    ) -> Reduction<T, A, R2> {
        Reduction {
            name: self.name,
            map: self.map,
            combine: self.combine,
            post: Arc::new(f),
            identity: self.identity,
            empty_is_error: self.empty_is_error,
            kernels: Default::default(),
            host_warned: Default::default(),
        }
    }

    /// The same reduction, refusing empty arrays (as min and max do).
    pub fn nonempty(mut self) -> Self {
        self.empty_is_error = true;
        self
    }

    fn kernel(&self, v: usize) -> Result<&Kernel<()>> {
        super::built(&self.kernels[v], || self.build(v))
    }

    fn build(&self, v: usize) -> Result<Kernel<()>> {
        let (map, combine, post, id) = (
            self.map.clone(),
            self.combine.clone(),
            self.post.clone(),
            self.identity,
        );
        let suffix = KERNELS[v];
        let name = format!("{}_{suffix}", self.name);
        let width = 16 / T::TY.size().max(1);
        // What a whole-array pass's last block does (the `FULL*`/`PART*` variants).
        let end = match v {
            FULL_JOIN | FULL_VEC_JOIN => PassEnd::Join,
            PART_PUB | PART_VEC_PUB => PassEnd::Publish,
            _ => PassEnd::Store,
        };
        Kernel::<()>::build(&name, move |k, ()| match v {
            FULL | FULL_JOIN => full_pass::<T, A, R, 1>(k, &*map, &*combine, &*post, id, end),
            FULL_VEC | FULL_VEC_JOIN if width == 2 => {
                full_pass::<T, A, R, 2>(k, &*map, &*combine, &*post, id, end)
            }
            FULL_VEC | FULL_VEC_JOIN => {
                full_pass::<T, A, R, 4>(k, &*map, &*combine, &*post, id, end)
            }
            ROWS => rows::<T, A, R, 1>(k, &*map, &*combine, &*post, id),
            COLS => cols_partial::<T, A>(k, &*map, &*combine, id),
            ROWS_VEC if width == 2 => rows::<T, A, R, 2>(k, &*map, &*combine, &*post, id),
            ROWS_VEC => rows::<T, A, R, 4>(k, &*map, &*combine, &*post, id),
            PART | PART_PUB => full_pass::<T, A, A, 1>(k, &*map, &*combine, &|a, _| a, id, end),
            PART_VEC | PART_VEC_PUB if width == 2 => {
                full_pass::<T, A, A, 2>(k, &*map, &*combine, &|a, _| a, id, end)
            }
            PART_VEC | PART_VEC_PUB => {
                full_pass::<T, A, A, 4>(k, &*map, &*combine, &|a, _| a, id, end)
            }
            COLS_FINAL_PART => cols_final::<A, A>(k, &*combine, &|a: Expr<A>, _: Expr<u64>| a, id),
            COLS_FINAL_JOIN => flag_join::cols_final_join::<A, R>(k, &*combine, &*post, id),
            _ => cols_final::<A, R>(k, &*combine, &*post, id),
        })
    }

    /// The PTX of every kernel of this reduction (for tests and inspection).
    pub fn variants_ptx(
        &self,
        options: &crate::codegen::PtxOptions,
    ) -> Result<Vec<(String, String)>> {
        // The vector variant exists for 4- and 8-byte elements only.
        (0..KERNELS.len())
            .filter(|&v| {
                ![FULL_VEC, ROWS_VEC, PART_VEC, PART_VEC_PUB, FULL_VEC_JOIN].contains(&v)
                    || matches!(T::TY.size(), 4 | 8)
            })
            .map(|v| {
                let k = self.kernel(v)?;
                Ok((k.name().to_string(), k.compile_ptx(options)?))
            })
            .collect()
    }

    fn check_empty(&self, n: usize) -> Result<()> {
        if n == 0 && self.empty_is_error {
            return Err(Error::usage(format!(
                "`{}` of an empty array has no value (it has no identity); check the length first",
                self.name
            )));
        }
        Ok(())
    }

    /// Launches a whole-array reduction (one kernel), writing the result at `out`.
    fn run_full<X: DeviceSlice<T> + ?Sized>(&self, stream: &Stream, x: &X, out: u64) -> Result<()> {
        self.check_empty(x.len())?;
        self.launch_full(stream, x, out, PassArgs::Full)
    }

    /// Reduces the whole of `x` (one kernel) and stores the result at `out`: an address
    /// `stream`'s device may write. A sharded reduction whose elements are all on one device.
    pub(crate) fn full_into_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
    ) -> Result<()> {
        self.run_full(stream, x, out)
    }

    /// Launches the whole-array pass over `x` that stores its combined value of type `A`,
    /// before `post`, at `out`: an address `stream`'s device may write (its own memory, or a
    /// peer's with peer access on). For sharded reductions: one partial result per shard.
    pub(crate) fn partial_into_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
    ) -> Result<()> {
        self.launch_full(stream, x, out, PassArgs::Partial)
    }

    /// Reduces `x` along axis 0 into its `inner` (the product of the other axes) combined
    /// values of type `A`, before `post`, stored at `out`: an address `stream`'s device may
    /// write. A shard's partial results of a sharded reduction along axis 0.
    pub(crate) fn axis0_partial_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
    ) -> Result<()> {
        let shape = x.shape();
        let r = shape.first().copied().unwrap_or(1);
        let m: usize = shape.iter().skip(1).product();
        if m == 0 {
            return Ok(());
        }
        self.run_columns(stream, x, (1, r, m), COLS_FINAL_PART, out)
    }

    /// Combines `chunks` rows of `m` partial results (row-major at `parts`, in `stream`'s
    /// device memory) column by column, in row order, and stores `post(combined, count)` for
    /// every column at `out`: the last step of a sharded reduction along axis 0.
    pub(crate) fn combine_columns_raw(
        &self,
        stream: &Stream,
        parts: u64,
        m: usize,
        chunks: usize,
        out: u64,
        count: usize,
    ) -> Result<()> {
        self.check_empty(count)?;
        if m == 0 {
            return Ok(());
        }
        self.launch_cols_final(stream, COLS_FINAL, parts, m, chunks, out, count)
    }

    /// Whether the reduction refuses empty arrays (see [`nonempty`](Self::nonempty)).
    pub(crate) fn check_empty_of(&self, n: usize) -> Result<()> {
        self.check_empty(n)
    }

    /// The reduction's name (its kernels' prefix).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn launch_full<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
        args: PassArgs<'_>,
    ) -> Result<()> {
        let n = x.len();
        let ctx = stream.context();
        let sms = ctx.device().multiprocessor_count()? as usize;
        let size = T::TY.size();
        let vec_ok = (size == 4 || size == 8) && x.device_ptr() % 16 == 0;
        let per_thread = if vec_ok { 16 / size } else { 1 };
        // A fixed grid for a given device and size: the same order of operations every run.
        let blocks = n
            .div_ceil(BLOCK as usize * per_thread)
            .clamp(1, sms * tuning().blocks_per_sm);
        let space = PassSpace::new(stream, blocks * A::TY.size())?;
        let k = self.kernel(match (&args, vec_ok) {
            (PassArgs::Full, false) => FULL,
            (PassArgs::Full, true) => FULL_VEC,
            (PassArgs::Partial, false) => PART,
            (PassArgs::Partial, true) => PART_VEC,
            (PassArgs::Publish(_), false) => PART_PUB,
            (PassArgs::Publish(_), true) => PART_VEC_PUB,
            (PassArgs::Join(_), false) => FULL_JOIN,
            (PassArgs::Join(_), true) => FULL_VEC_JOIN,
        })?;
        k.launch_with(stream, LaunchConfig::new(blocks as u32, BLOCK), |buf| {
            buf.push_flat(x.context(), x.device_ptr(), n)?;
            buf.push_flat(ctx, space.partials(), blocks)?;
            buf.push_flat(ctx, space.counter(), 1)?;
            buf.push_flat(ctx, out, 1)?;
            buf.push_scalar(n as u64)?;
            match &args {
                PassArgs::Publish(p) => p.push(buf, ctx),
                PassArgs::Join(j) => j.push(buf, ctx),
                PassArgs::Full | PassArgs::Partial => Ok(()),
            }
        })
        // Memory of `space` that is not the stream's own is freed in stream order.
    }

    /// Reduces the whole array into a new one-element device array, ordered on `stream` (the
    /// host does not wait).
    pub fn reduce_to_device<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
    ) -> Result<DeviceArray<R>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {}", self.name));
        let out = DeviceArray::<R, _>::alloc_ordered(stream, ndarray::Ix1(1))?;
        self.run_full(stream, x, out.device_ptr())?;
        Ok(out)
    }

    /// Reduces the whole array into `out` (one element), ordered on `stream`: no allocation
    /// visible to the host and no wait.
    pub fn reduce_into<X: DeviceSlice<T> + ?Sized, O: DeviceSliceMut<R> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {}", self.name));
        if out.len() != 1 {
            return Err(Error::Shape {
                op: "reduce_into (a one-element output)",
                expected: vec![1],
                actual: out.shape().to_vec(),
            });
        }
        stream
            .context()
            .check_same(out.context(), "the output array")?;
        self.run_full(stream, x, out.device_ptr())
    }

    /// Reduces the whole array and returns the value to the host.
    pub fn reduce<X: DeviceSlice<T> + ?Sized>(&self, stream: &Stream, x: &X) -> Result<R> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {}", self.name));
        let out = Scratch::<R>::new(stream, 1)?;
        self.run_full(stream, x, out.ptr())?;
        read_one(stream, &out)
    }

    /// Reduces along `axis`, giving an array without that axis (or with it as 1 when
    /// `keepdims`).
    pub fn reduce_axis<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<R, IxDyn>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {} axis {axis}", self.name));
        let split = AxisSplit::new(&self.name, x.shape(), axis, keepdims)?;
        let out = DeviceArray::<R, _>::alloc_ordered(stream, IxDyn(&split.out_shape))?;
        self.run_axis(stream, x, &split, out.device_ptr())?;
        Ok(out)
    }

    /// Reduces along `axis` into `out`, which has the result's shape (that of
    /// [`reduce_axis`](Reduction::reduce_axis) with the same `keepdims`): no allocation of
    /// the result, no wait (NumPy's `out=`).
    pub fn reduce_axis_into<X: DeviceSlice<T> + ?Sized, O: DeviceSliceMut<R> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        axis: usize,
        keepdims: bool,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {} axis {axis}", self.name));
        let split = AxisSplit::new(&self.name, x.shape(), axis, keepdims)?;
        if out.shape() != split.out_shape.as_slice() {
            return Err(Error::Shape {
                op: "reduce_axis_into (the output array)",
                expected: split.out_shape,
                actual: out.shape().to_vec(),
            });
        }
        stream
            .context()
            .check_same(out.context(), "the output array")?;
        self.run_axis(stream, x, &split, out.device_ptr())
    }

    /// Launches an axis reduction of `x`, split as `split`, writing the results at `out`.
    fn run_axis<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        split: &AxisSplit,
        out: u64,
    ) -> Result<()> {
        let AxisSplit {
            outer, r, inner, ..
        } = *split;
        let m = outer * inner;
        let ctx = stream.context();
        if m == 0 {
            return Ok(());
        }
        self.check_empty(r)?;
        if inner == 1 {
            // One block per row; small rows use a smaller block.
            let block = (r.next_power_of_two() as u32).clamp(32, BLOCK);
            // Rows of whole 16-byte vectors, aligned: vector loads.
            let size = T::TY.size();
            let w = if matches!(size, 4 | 8) { 16 / size } else { 1 };
            let vec_ok = w > 1 && r % w == 0 && x.device_ptr() % 16 == 0;
            let k = self.kernel(if vec_ok { ROWS_VEC } else { ROWS })?;
            for (first, rows, grid) in row_grid(outer) {
                k.launch_with(stream, LaunchConfig::new(grid, block), |buf| {
                    buf.push_flat(
                        x.context(),
                        x.device_ptr() + (first * r * T::TY.size()) as u64,
                        rows * r,
                    )?;
                    buf.push_flat(ctx, out + (first * R::TY.size()) as u64, rows)?;
                    buf.push_scalar(rows as u64)?;
                    buf.push_scalar(r as u64)
                })?;
            }
            return Ok(());
        }
        self.run_columns(stream, x, (outer, r, inner), COLS_FINAL, out)
    }

    /// The column pass over `x` seen as `(outer, r, inner)`, reduced along `r`: the reduced
    /// axis split into row chunks so that enough threads run, then kernel `last` combines
    /// every output's chunks in order at `out` (`COLS_FINAL`: `post` with the count `r`;
    /// `COLS_FINAL_PART`: the combined values before `post`).
    fn run_columns<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        (outer, r, inner): (usize, usize, usize),
        last: usize,
        out: u64,
    ) -> Result<()> {
        let m = outer * inner;
        let ctx = stream.context();
        let (n_chunks, per_chunk) = column_chunks(ctx, m, r)?;
        let part = Scratch::<A>::new(stream, n_chunks * m)?;
        let cfg = LaunchConfig::new((m.div_ceil(BLOCK as usize) as u32, n_chunks as u32), BLOCK);
        self.kernel(COLS)?.launch_with(stream, cfg, |buf| {
            buf.push_flat(x.context(), x.device_ptr(), x.len())?;
            buf.push_flat(ctx, part.ptr(), n_chunks * m)?;
            buf.push_scalar(outer as u64)?;
            buf.push_scalar(r as u64)?;
            buf.push_scalar(inner as u64)?;
            buf.push_scalar(per_chunk as u64)
        })?;
        self.launch_cols_final(stream, last, part.ptr(), m, n_chunks, out, r)?;
        drop(part);
        Ok(())
    }

    /// Launches kernel `last` (`COLS_FINAL` or `COLS_FINAL_PART`) over `chunks` rows of `m`
    /// values at `parts`, storing `m` results at `out`; `count` is what `post` is given.
    #[allow(clippy::too_many_arguments)]
    fn launch_cols_final(
        &self,
        stream: &Stream,
        last: usize,
        parts: u64,
        m: usize,
        chunks: usize,
        out: u64,
        count: usize,
    ) -> Result<()> {
        let ctx = stream.context();
        let cfg = LaunchConfig::covering(m, BLOCK)?;
        self.kernel(last)?.launch_with(stream, cfg, |buf| {
            buf.push_flat(ctx, parts, chunks * m)?;
            buf.push_flat(ctx, out, m)?;
            buf.push_scalar(m as u64)?;
            buf.push_scalar(chunks as u64)?;
            buf.push_scalar(count as u64)
        })
    }
}

/// Copies the single element of `s` to the host (waits for the stream).
pub(super) fn read_one<T: crate::memory::DeviceCopy>(
    stream: &Stream,
    s: &Scratch<'_, T>,
) -> Result<T> {
    let mut v = std::mem::MaybeUninit::<T>::uninit();
    crate::memory::transfer::dtoh(
        stream.context(),
        v.as_mut_ptr().cast(),
        s.ptr(),
        std::mem::size_of::<T>(),
        Some(stream),
    )?;
    stream.synchronize()?;
    // SAFETY: the copy above wrote all of `v`'s bytes, a value the kernel stored as a `T`.
    Ok(unsafe { v.assume_init() })
}

/// A reduction along one axis of an array: the sizes before, along and after the axis, and
/// the result's shape.
pub(super) struct AxisSplit {
    pub outer: usize,
    pub r: usize,
    pub inner: usize,
    pub out_shape: Vec<usize>,
}

impl AxisSplit {
    /// Splits `shape` at `axis` (an error naming `op` if out of range); the result keeps the
    /// axis as 1 with `keepdims`, else drops it.
    pub(super) fn new(op: &str, shape: &[usize], axis: usize, keepdims: bool) -> Result<Self> {
        if axis >= shape.len() {
            return Err(Error::usage(format!(
                "{op}: axis {axis} is out of range for an array of shape {}",
                crate::error::ShapeDisplay(shape)
            )));
        }
        let mut out_shape = shape.to_vec();
        if keepdims {
            out_shape[axis] = 1;
        } else {
            out_shape.remove(axis);
        }
        Ok(AxisSplit {
            outer: shape[..axis].iter().product(),
            r: shape[axis],
            inner: shape[axis + 1..].iter().product(),
            out_shape,
        })
    }
}

/// How to split a reduced axis of `r` rows over `m` output columns so that enough threads
/// run: (chunks, rows per chunk), every chunk non-empty.
pub(super) fn column_chunks(ctx: &crate::Context, m: usize, r: usize) -> Result<(usize, usize)> {
    let sms = ctx.device().multiprocessor_count()? as usize;
    let target = sms * 2048 * 2;
    let r = r.max(1);
    let n_chunks = target.div_ceil(m).clamp(1, r).min(65535);
    let per_chunk = r.div_ceil(n_chunks);
    Ok((r.div_ceil(per_chunk), per_chunk))
}

/// Launches of one block per row for `n` rows: (first row, rows, grid) triples, the grid's
/// row index being `blockIdx.y * 65535 + blockIdx.x`.
pub(super) fn row_grid(n: usize) -> impl Iterator<Item = (usize, usize, (u32, u32))> {
    const MAX: usize = 65535 * 1024;
    (0..n.div_ceil(MAX)).map(move |c| {
        let rows = (n - c * MAX).min(MAX);
        let grid = (rows.min(65535) as u32, rows.div_ceil(65535) as u32);
        (c * MAX, rows, grid)
    })
}

use crate::codegen::KernelParam;

pub(super) fn input<T: ScalarType>() -> crate::codegen::DArray<T, 1, crate::codegen::ReadOnly> {
    <&[T] as KernelParam>::declare()
}
pub(super) fn output<T: ScalarType>() -> crate::codegen::DArray<T, 1, crate::codegen::ReadWrite> {
    <&mut [T] as KernelParam>::declare()
}
pub(super) fn scalar<T: ScalarType>() -> Expr<T> {
    crate::codegen::declare_scalar_param::<T>()
}
