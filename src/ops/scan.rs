//! Scans (prefix sums): inclusive and exclusive scans with any associative operator, over a
//! whole array or along one axis.
//!
//! A whole array is scanned in a single pass with a decoupled look-back (Merrill & Garland,
//! "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016; CUB's `DeviceScan`):
//! every block's tile is its block index (blocks start in index order, so every tile before
//! its own belongs to a block that has already started; [`ticket_order`] takes an atomic ticket
//! instead), loads its tile (a block-wide row of 16-byte vectors
//! at a time, [`tuning`]'s rows per thread, all loads in flight at once), scans it (each
//! thread its vectors, then warp shuffles over the threads' totals, then one warp over the
//! warps' totals), publishes the tile's aggregate, looks back over its predecessors'
//! descriptors a warp (32 tiles) at a time until it meets an inclusive prefix, publishes its
//! own inclusive prefix, and writes its items. Every element is read once and written once.
//!
//! A descriptor is one `u64` status word per tile: for 4-byte types the value's bits in the
//! low half and a flag in the high half (one atomic access carries both); for 8-byte types the
//! flag alone, the values in two arrays beside it, published before the flag behind a fence.
//! The flag holds the kind (aggregate or inclusive prefix) and the scan's epoch: the stream's
//! scan space keeps an epoch counter that each scan advances (its last tile stores it after
//! its look-back, by which time every tile has read it), so descriptors of earlier scans are
//! stale without any clearing (see [`ScanSpace`]).
//!
//! Integers wrap (as Rust's `wrapping_add`), so integer scans, and any operator that is
//! exactly associative, give the same bits every run. Floating-point addition is not
//! associative and the look-back combines a tile's prefix from whichever predecessors have
//! published theirs at that moment, so f32/f64 sums can differ in the last bits from run to
//! run, as CUB's, CuPy's and torch's do. Sums of f32 accumulate in f32 (as CuPy and torch).

use std::sync::{Arc, OnceLock};

use ndarray::{Dimension, Ix1};

use super::array_ops::OpsScalar;
use super::reduce::{input, output, row_grid, scalar, AxisSplit, Reduction};
use crate::codegen::{select, Expr, Kernel, KernelBuilder, Num, FULL_MASK};
use crate::error::{Error, Result};
use crate::memory::scratch::ScanSpace;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::module::LaunchConfig;
use crate::stream::Stream;

mod kernels;
use kernels::{scan_cols, scan_rows, tiles};

type CombineFn<T> = dyn Fn(Expr<T>, Expr<T>) -> Expr<T> + Send + Sync;

/// Threads per block of the scan kernels.
const BLOCK: u32 = 256;
/// Warps per block.
const WARPS: usize = BLOCK as usize / 32;
/// Epochs run from 1 to this, then start again at 1 (a zeroed word is never current).
const EPOCH_MAX: u32 = (1 << 30) - 1;
/// Descriptor kinds (the low two bits of a flag).
const AGGREGATE: u32 = 1;
const PREFIX: u32 = 2;

/// Whether a scan includes each element in its own result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanKind {
    /// Element `i` of the result combines elements `0..=i` (NumPy's `cumsum`).
    Inclusive,
    /// Element `i` combines elements `0..i`; element 0 is the identity.
    Exclusive,
}

/// The shape of a whole-array scan's tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScanTuning {
    /// Rows of 16-byte vectors each thread loads.
    pub rows: usize,
    /// The launch bound's minimum blocks per multiprocessor (0: no bound).
    pub min_blocks: u32,
    /// Threads per block (a multiple of 32 up to 1024).
    pub block: u32,
}

impl ScanTuning {
    /// The default for elements of `size` bytes: 128 bytes per thread in registers (8 rows
    /// of 16-byte vectors of f32 or i32, 4 of f64), 256 threads,
    /// and a launch bound of 4 blocks per multiprocessor (64 registers, 1024 threads in
    /// flight). Measured on an H200 (2^28 f32, `CUDAJIT_SCAN_TUNE` sweep): 96% of the copy
    /// rate, against 82% for 4 rows with no bound (55 registers, 512 threads) and 67% for 8
    /// rows bound to 6 blocks (spills).
    const fn default_for(size: usize) -> ScanTuning {
        ScanTuning {
            rows: if size >= 8 { 4 } else { 8 },
            min_blocks: 4,
            block: BLOCK,
        }
    }
}

/// The whole-array scan's tuning for elements of `size` bytes: [`ScanTuning::default_for`],
/// or `CUDAJIT_SCAN_TUNE=R`, `R,M` or `R,M,B` (rows 1 to 8, minimum blocks per
/// multiprocessor 0 to 32, threads per block a multiple of 32 up to 1024; the parts left out
/// keep their default; read once; for measuring).
pub(super) fn tuning(size: usize) -> ScanTuning {
    static T: OnceLock<Option<String>> = OnceLock::new();
    let default = ScanTuning::default_for(size);
    T.get_or_init(|| std::env::var("CUDAJIT_SCAN_TUNE").ok())
        .as_deref()
        .and_then(|v| parse_tuning(v, default))
        .unwrap_or(default)
}

/// `R`, `R,M` or `R,M,B` (see [`tuning`]); `None` when out of range or not numbers.
fn parse_tuning(v: &str, default: ScanTuning) -> Option<ScanTuning> {
    let mut parts = v.split(',').map(|p| p.trim().parse::<u32>().ok());
    let rows = parts.next()??;
    let min_blocks = parts.next().unwrap_or(Some(default.min_blocks))?;
    let block = parts.next().unwrap_or(Some(default.block))?;
    let ok = parts.next().is_none()
        && (1..=8).contains(&rows)
        && min_blocks <= 32
        && block % 32 == 0
        && (32..=1024).contains(&block);
    ok.then_some(ScanTuning {
        rows: rows as usize,
        min_blocks,
        block,
    })
}

/// How a whole-array scan's blocks find their tile: by an atomic ticket taken as they start
/// (`CUDAJIT_SCAN_ORDER=ticket`: every earlier tile's block has provably started), or by their
/// block index (the default, as CUB's `DeviceScan`: the loads start at once, without an atomic
/// round trip and a barrier first; it relies on the hardware starting blocks in index order, as
/// NVIDIA's GPUs do and the simulator does). Read once.
pub(super) fn ticket_order() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("CUDAJIT_SCAN_ORDER").is_ok_and(|v| v.trim().eq_ignore_ascii_case("ticket"))
    })
}

/// The kernels of a scan, by index, and their name suffixes.
const KERNELS: [&str; 6] = [
    "tiles",
    "tiles_vec",
    "rows",
    "cols",
    "tiles_carry",
    "tiles_carry_vec",
];
const TILES: usize = 0;
const TILES_VEC: usize = 1;
const ROWS: usize = 2;
const COLS: usize = 3;
/// The whole-array pass after a carry (values that come before the array: a sharded scan).
const TILES_CARRY: usize = 4;
const TILES_CARRY_VEC: usize = 5;

/// A scan (prefix combination) of elements of `T` with an associative `combine` and its
/// `identity` (`combine(identity, x) == x == combine(x, identity)` for every `x`, bit for
/// bit: it pads partial tiles and starts every prefix).
///
/// The operator needs to be associative, not commutative: results combine elements left to
/// right (`combine(earlier, later)`), whatever the grouping. Inputs and outputs are
/// contiguous; a whole array whose input and output are 16-byte aligned is read and written
/// with vector accesses, others element by element.
///
/// ```no_run
/// use cudajit::codegen::select;
/// use cudajit::ops::{Scan, ScanKind};
/// use cudajit::prelude::*;
/// # fn main() -> cudajit::Result<()> {
/// let ctx = Context::new(0)?;
/// let s = ctx.new_stream()?;
/// // A running maximum (NaN propagates).
/// let cummax = Scan::<f32>::new("cummax", |a, b| select(a.gt(b).or(a.ne(a)), a, b), f32::NEG_INFINITY)?;
/// let x = s.to_device(&[3.0f32, 1.0, 4.0, 1.0, 5.0])?;
/// let y = cummax.scan(&s, &x, ScanKind::Inclusive)?;
/// assert_eq!(y.to_vec_async(&s)?, [3.0, 3.0, 4.0, 4.0, 5.0]);
/// # Ok(()) }
/// ```
pub struct Scan<T: Num> {
    name: String,
    combine: Arc<CombineFn<T>>,
    identity: T,
    kernels: [super::KernelSlot; KERNELS.len()],
    /// The reduction with the same operator: a sharded scan's shard totals.
    totals: OnceLock<Result<Reduction<T, T, T>>>,
}

impl<T: Num> Scan<T> {
    /// A scan combining elements with `combine`, starting from `identity` (which the
    /// exclusive scan gives first). `name` names the kernels.
    pub fn new(
        name: &str,
        combine: impl Fn(Expr<T>, Expr<T>) -> Expr<T> + Send + Sync + 'static,
        identity: T,
    ) -> Result<Self> {
        crate::codegen::check_kernel_name(name)?;
        Ok(Scan {
            name: name.to_string(),
            combine: Arc::new(combine),
            identity,
            kernels: Default::default(),
            totals: OnceLock::new(),
        })
    }

    /// The reduction with this scan's operator and identity (built on first use).
    pub(crate) fn totals(&self) -> Result<&Reduction<T, T, T>> {
        self.totals
            .get_or_init(|| {
                let combine = self.combine.clone();
                Reduction::new(
                    &format!("{}_total", self.name),
                    |x| x,
                    move |a, b| combine(a, b),
                    self.identity,
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The scan's name (its kernels' prefix).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn kernel(&self, v: usize) -> Result<&Kernel<()>> {
        super::built(&self.kernels[v], || self.build(v))
    }

    fn build(&self, v: usize) -> Result<Kernel<()>> {
        let (combine, id) = (self.combine.clone(), self.identity);
        let name = format!("{}_{}", self.name, KERNELS[v]);
        let (tune, ticket) = (tuning(T::TY.size()), ticket_order());
        Kernel::<()>::build(&name, move |k, ()| match v {
            TILES => tiles::<T, 1>(k, &*combine, id, tune, ticket, false),
            TILES_VEC if T::TY.size() == 8 => tiles::<T, 2>(k, &*combine, id, tune, ticket, false),
            TILES_VEC => tiles::<T, 4>(k, &*combine, id, tune, ticket, false),
            TILES_CARRY => tiles::<T, 1>(k, &*combine, id, tune, ticket, true),
            TILES_CARRY_VEC if T::TY.size() == 8 => {
                tiles::<T, 2>(k, &*combine, id, tune, ticket, true)
            }
            TILES_CARRY_VEC => tiles::<T, 4>(k, &*combine, id, tune, ticket, true),
            ROWS => scan_rows::<T>(k, &*combine, id),
            _ => scan_cols::<T>(k, &*combine, id),
        })
    }

    /// The PTX of every kernel of this scan (for tests and inspection).
    pub fn variants_ptx(
        &self,
        options: &crate::codegen::PtxOptions,
    ) -> Result<Vec<(String, String)>> {
        (0..KERNELS.len())
            .filter(|&v| {
                ![TILES_VEC, TILES_CARRY_VEC].contains(&v) || matches!(T::TY.size(), 4 | 8)
            })
            .map(|v| {
                let k = self.kernel(v)?;
                Ok((k.name().to_string(), k.compile_ptx(options)?))
            })
            .collect()
    }

    /// Scans the whole array (flattened in C order) into a new 1-D array, ordered on
    /// `stream` (the host does not wait).
    pub fn scan<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        kind: ScanKind,
    ) -> Result<DeviceArray<T>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {}", self.name));
        let out = DeviceArray::<T, _>::alloc_ordered(stream, Ix1(x.len()))?;
        self.run_flat(stream, x, out.device_ptr(), kind)?;
        Ok(out)
    }

    /// Scans the whole array (flattened in C order) into `out`, which has as many elements
    /// (any shape), ordered on `stream`.
    pub fn scan_into<X: DeviceSlice<T> + ?Sized, O: DeviceSliceMut<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        kind: ScanKind,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {}", self.name));
        self.check_into(stream, x, out)?;
        self.run_flat(stream, x, out.device_ptr(), kind)
    }

    /// [`scan_into`](Self::scan_into) continuing after `carry`: the elements of `carry` (on
    /// `stream`'s device, at most `u32::MAX`) come before the whole array, so every result also
    /// combines them, in order, first. To scan a long array chunk by chunk, pass the previous
    /// chunk's last inclusive result. (Sharded scans use it with the earlier shards' totals.)
    pub fn scan_into_after<
        X: DeviceSlice<T> + ?Sized,
        C: DeviceSlice<T> + ?Sized,
        O: DeviceSliceMut<T> + ?Sized,
    >(
        &self,
        stream: &Stream,
        x: &X,
        kind: ScanKind,
        carry: &C,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {} after a carry", self.name));
        self.check_into(stream, x, out)?;
        stream
            .context()
            .check_same(carry.context(), "the carry array")?;
        if u32::try_from(carry.len()).is_err() {
            return Err(Error::usage(format!(
                "{}: a carry of {} elements is too long (at most u32::MAX)",
                self.name,
                carry.len()
            )));
        }
        let after = (!carry.is_empty()).then(|| (carry.device_ptr(), carry.len()));
        self.run_flat_after(stream, x, out.device_ptr(), kind, after)
    }

    /// The checks of a whole-array scan into `out`: as many elements, on `stream`'s context.
    fn check_into<X: DeviceSlice<T> + ?Sized, O: DeviceSliceMut<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: &O,
    ) -> Result<()> {
        if out.len() != x.len() {
            return Err(Error::Shape {
                op: "scan_into (an output of as many elements as the input)",
                expected: vec![x.len()],
                actual: out.shape().to_vec(),
            });
        }
        stream
            .context()
            .check_same(out.context(), "the output array")?;
        Ok(())
    }

    /// Scans along `axis` into a new array of `x`'s shape (NumPy's `cumsum(axis=...)` for a
    /// sum).
    pub fn scan_axis<D: Dimension, X: DeviceSlice<T, Dim = D> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        axis: usize,
        kind: ScanKind,
    ) -> Result<DeviceArray<T, D>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {} axis {axis}", self.name));
        let split = AxisSplit::new(&self.name, x.shape(), axis, true)?;
        let out = DeviceArray::<T, D>::alloc_ordered(stream, x.dim().clone())?;
        self.run_axis(stream, x, &split, out.device_ptr(), kind)?;
        Ok(out)
    }

    /// Scans along `axis` into `out`, which has `x`'s shape.
    pub fn scan_axis_into<X: DeviceSlice<T> + ?Sized, O: DeviceSliceMut<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        axis: usize,
        kind: ScanKind,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: {} axis {axis}", self.name));
        let split = AxisSplit::new(&self.name, x.shape(), axis, true)?;
        if out.shape() != x.shape() {
            return Err(Error::Shape {
                op: "scan_axis_into (an output of the input's shape)",
                expected: x.shape().to_vec(),
                actual: out.shape().to_vec(),
            });
        }
        stream
            .context()
            .check_same(out.context(), "the output array")?;
        self.run_axis(stream, x, &split, out.device_ptr(), kind)
    }

    /// Launches the scan along an axis of `x` (split as `split`), writing at `out`.
    fn run_axis<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        split: &AxisSplit,
        out: u64,
        kind: ScanKind,
    ) -> Result<()> {
        let AxisSplit {
            outer, r, inner, ..
        } = *split;
        if outer * r * inner == 0 {
            return Ok(());
        }
        if outer == 1 && inner == 1 {
            return self.run_flat(stream, x, out, kind);
        }
        let ctx = stream.context();
        let excl = (kind == ScanKind::Exclusive) as u64;
        let size = T::TY.size();
        if inner == 1 {
            // One block per row.
            let k = self.kernel(ROWS)?;
            for (first, rows, grid) in row_grid(outer) {
                let at = (first * r * size) as u64;
                k.launch_with(stream, LaunchConfig::new(grid, BLOCK), |buf| {
                    buf.push_flat(x.context(), x.device_ptr() + at, rows * r)?;
                    buf.push_flat(ctx, out + at, rows * r)?;
                    buf.push_scalar(rows as u64)?;
                    buf.push_scalar(r as u64)?;
                    buf.push_scalar(excl)
                })?;
            }
            return Ok(());
        }
        // One thread per lane through the axis, in coalesced steps.
        let m = outer * inner;
        let k = self.kernel(COLS)?;
        k.launch_with(stream, LaunchConfig::covering(m, BLOCK)?, |buf| {
            buf.push_flat(x.context(), x.device_ptr(), x.len())?;
            buf.push_flat(ctx, out, x.len())?;
            buf.push_scalar(outer as u64)?;
            buf.push_scalar(r as u64)?;
            buf.push_scalar(inner as u64)?;
            buf.push_scalar(excl)
        })
    }

    /// Launches the single-pass scan of all of `x`, writing at `out` (as many elements).
    fn run_flat<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
        kind: ScanKind,
    ) -> Result<()> {
        self.run_flat_after(stream, x, out, kind, None)
    }

    /// [`run_flat`](Self::run_flat) after `carry`: `(address, count)` of values that come
    /// before the whole array, combined in order into the first tile's prefix (an address
    /// `stream`'s device may read). A sharded scan's shard after the earlier shards' totals.
    pub(crate) fn run_flat_after<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
        kind: ScanKind,
        carry: Option<(u64, usize)>,
    ) -> Result<()> {
        let n = x.len();
        if n == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let size = T::TY.size();
        // 16-byte vectors of 4- and 8-byte elements only (the tiles kernels have 4 or 2 lanes).
        let vec_ok = matches!(size, 4 | 8) && x.device_ptr() % 16 == 0 && out % 16 == 0;
        let width = if vec_ok { 16 / size } else { 1 };
        let tune = tuning(size);
        let tile = (tune.block as usize) * tune.rows * width;
        let tiles = n.div_ceil(tile);
        let grid = u32::try_from(tiles)
            .ok()
            .filter(|&g| g < i32::MAX as u32)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{}: an array of {n} elements is too large to scan",
                    self.name
                ))
            })?;
        let k = self.kernel(match (carry.is_some(), vec_ok) {
            (false, false) => TILES,
            (false, true) => TILES_VEC,
            (true, false) => TILES_CARRY,
            (true, true) => TILES_CARRY_VEC,
        })?;
        let space = ScanSpace::new(stream, tiles)?;
        let cap = space.tiles();
        let r = k.launch_with(stream, LaunchConfig::new(grid, tune.block), |buf| {
            buf.push_flat(x.context(), x.device_ptr(), n)?;
            buf.push_flat(ctx, out, n)?;
            buf.push_flat(ctx, space.ctl(), 2)?;
            buf.push_flat(ctx, space.status(), cap)?;
            buf.push_flat(ctx, space.values(), 2 * cap * 8 / size)?;
            buf.push_scalar(n as u64)?;
            buf.push_scalar(cap as u64)?;
            buf.push_scalar((kind == ScanKind::Exclusive) as u64)?;
            if let Some((at, count)) = carry {
                buf.push_flat(ctx, at, count)?;
                buf.push_scalar(count as u64)?;
            }
            Ok(())
        });
        if r.is_err() {
            space.discard();
        }
        r
    }
}

/// The built-in scans for one element type (built on first use, then cached).
#[doc(hidden)]
pub struct ScanKernels<T: Num> {
    pub(super) sum: OnceLock<Result<Scan<T>>>,
}

/// Element types with cached scan kernels: `f32`, `f64`, `f16`, `bf16` (through f32) and the
/// integers (whose sums wrap in the element type).
pub trait ScanScalar: OpsScalar {
    /// The identity of addition: `-0.0` for floats (`-0.0 + x` is `x` for every `x`, while
    /// `0.0 + -0.0` is `0.0`), 0 for integers.
    #[doc(hidden)]
    const ZERO: Self;
    /// This type's scan kernels.
    #[doc(hidden)]
    fn scans() -> &'static ScanKernels<Self>;
    /// The cumulative sum of `x` flattened (the 16-bit floats override the four `sum_scan`
    /// functions to accumulate in f32).
    #[doc(hidden)]
    fn sum_scan<X: DeviceSlice<Self>>(
        stream: &Stream,
        x: &X,
        kind: ScanKind,
    ) -> Result<DeviceArray<Self>> {
        Self::scans().sum()?.scan(stream, x, kind)
    }
    /// The cumulative sum of `x` flattened, into `out`.
    #[doc(hidden)]
    fn sum_scan_into<X: DeviceSlice<Self>, O: DeviceSliceMut<Self> + ?Sized>(
        stream: &Stream,
        x: &X,
        kind: ScanKind,
        out: &mut O,
    ) -> Result<()> {
        Self::scans().sum()?.scan_into(stream, x, kind, out)
    }
    /// The cumulative sum of `x` along `axis`.
    #[doc(hidden)]
    fn sum_scan_axis<D: Dimension, X: DeviceSlice<Self, Dim = D>>(
        stream: &Stream,
        x: &X,
        axis: usize,
        kind: ScanKind,
    ) -> Result<DeviceArray<Self, D>> {
        Self::scans().sum()?.scan_axis(stream, x, axis, kind)
    }
    /// The cumulative sum of `x` along `axis`, into `out`.
    #[doc(hidden)]
    fn sum_scan_axis_into<X: DeviceSlice<Self>, O: DeviceSliceMut<Self> + ?Sized>(
        stream: &Stream,
        x: &X,
        axis: usize,
        kind: ScanKind,
        out: &mut O,
    ) -> Result<()> {
        Self::scans()
            .sum()?
            .scan_axis_into(stream, x, axis, kind, out)
    }
}

macro_rules! scan_scalar {
    ($($t:ty: $zero:expr),*) => {$(
        impl ScanScalar for $t {
            const ZERO: $t = $zero;
            fn scans() -> &'static ScanKernels<$t> {
                static K: ScanKernels<$t> = ScanKernels { sum: OnceLock::new() };
                &K
            }
        }
    )*};
}
scan_scalar!(
    f32: -0.0, f64: -0.0, i8: 0, u8: 0, i16: 0, u16: 0, i32: 0, u32: 0, i64: 0, u64: 0
);

impl<T: ScanScalar> ScanKernels<T> {
    pub(crate) fn sum(&self) -> Result<&Scan<T>> {
        self.sum
            .get_or_init(|| Scan::new(&format!("cumsum_{}", T::TY.name()), |a, b| a + b, T::ZERO))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Cumulative sums (NumPy's `cumsum`), single pass at the copy rate for whole arrays.
/// Integers wrap (as Rust's `wrapping_add`) and give the same bits every run; `f32` sums
/// accumulate in `f32` (as CuPy and torch), and may differ in the last bits between runs (see
/// [`Scan`]; module notes). `f16` and `bf16` sums accumulate in `f32` too (the input widened,
/// scanned as f32, each result rounded once: three passes). Other operators: [`Scan`].
pub trait ScanOps<T: ScanScalar, D: Dimension>: DeviceSlice<T, Dim = D> + Sized {
    /// The inclusive cumulative sum of all elements in C order, as a new 1-D array
    /// (`np.cumsum(x)`).
    fn cumsum(&self, stream: &Stream) -> Result<DeviceArray<T>> {
        T::sum_scan(stream, self, ScanKind::Inclusive)
    }
    /// The inclusive cumulative sum into `out` (as many elements, any shape).
    fn cumsum_into(&self, stream: &Stream, out: &mut impl DeviceSliceMut<T>) -> Result<()> {
        T::sum_scan_into(stream, self, ScanKind::Inclusive, out)
    }
    /// The exclusive cumulative sum (element `i` sums elements `0..i`; element 0 is zero:
    /// `-0.0` for floats), as a new 1-D array.
    fn cumsum_exclusive(&self, stream: &Stream) -> Result<DeviceArray<T>> {
        T::sum_scan(stream, self, ScanKind::Exclusive)
    }
    /// The exclusive cumulative sum into `out` (as many elements, any shape).
    fn cumsum_exclusive_into(
        &self,
        stream: &Stream,
        out: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        T::sum_scan_into(stream, self, ScanKind::Exclusive, out)
    }
    /// The inclusive cumulative sum along `axis`, in a new array of this shape
    /// (`np.cumsum(x, axis=...)`).
    fn cumsum_axis(&self, stream: &Stream, axis: usize) -> Result<DeviceArray<T, D>> {
        T::sum_scan_axis(stream, self, axis, ScanKind::Inclusive)
    }
    /// The inclusive cumulative sum along `axis` into `out` (of this shape).
    fn cumsum_axis_into(
        &self,
        stream: &Stream,
        axis: usize,
        out: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        T::sum_scan_axis_into(stream, self, axis, ScanKind::Inclusive, out)
    }
}

impl<T: ScanScalar, D: Dimension, X: DeviceSlice<T, Dim = D>> ScanOps<T, D> for X {}

#[cfg(test)]
mod tests {
    use super::{parse_tuning, ScanTuning};

    #[test]
    fn tuning_reads_rows_and_min_blocks() {
        let d = ScanTuning {
            rows: 4,
            min_blocks: 0,
            block: 256,
        };
        let t = |rows, min_blocks, block| {
            Some(ScanTuning {
                rows,
                min_blocks,
                block,
            })
        };
        assert_eq!(parse_tuning("3", d), t(3, 0, 256));
        assert_eq!(parse_tuning(" 2 , 6 ", d), t(2, 6, 256));
        assert_eq!(parse_tuning("8,16,128", d), t(8, 16, 128));
        for bad in [
            "0",
            "9",
            "4,33",
            "4,",
            "x",
            "4,6,100",
            "4,6,2048",
            "4,6,128,1",
            "",
        ] {
            assert_eq!(parse_tuning(bad, d), None, "{bad:?}");
        }
    }
}
