//! `Elementwise`: one fused pass over any number of array and scalar inputs, writing one or
//! more outputs, with NumPy broadcasting.
//!
//! Contiguous inputs of the output's shape take the fast path: 16-byte vector loads and stores
//! (8 bytes when f32 and f64 mix) with a scalar tail, when every array is aligned for them.
//! Anything else (broadcast inputs, strided views as inputs or outputs) takes a strided path,
//! which reads and writes every array through its own strides (no copies). Kernels are built on
//! first use of each path and cached in the `Elementwise`.

use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ndarray::Dimension;

use super::broadcast::{broadcast_shapes, broadcast_strides_of};
pub use super::ew_dim::NoArray;
use super::ew_variants::{contiguous, strided, suffix};
use crate::codegen::{
    DArray, Expr, Kernel, KernelParam, PtxOptions, ReadOnly, Scalar as ScalarType,
};
use crate::error::{Error, Result};
use crate::module::LaunchConfig;
use crate::stream::Stream;

/// An array input: the closure sees one element of it at a time.
pub struct Elem<T>(PhantomData<fn() -> T>);
/// A scalar input: the same value for every element.
pub struct Scalar<T>(PhantomData<fn() -> T>);
/// The output element's flat index (C order) as an input: the closure sees an `Expr<u64>`
/// (CuPy's `i` in an `ElementwiseKernel`); pass `Index` for it at launch. No memory is read.
/// With it, counter-based random numbers need no state: `Philox::new(seed).uniform_f32(i)`.
/// In a sharded launch ([`apply_sharded`](Elementwise::apply_sharded)) it is the index in the
/// whole sharded array, so every shard sees its own elements' indices (the kernel takes the
/// launch's first index as a `u64` parameter: 0 on one device, a shard's start on a mesh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Index;

/// One input of an elementwise kernel: [`Elem<T>`] or [`Scalar<T>`].
pub trait EwInput: 'static {
    /// What the closure receives for it.
    type Expr: Copy;
    /// What the kernel holds for it.
    type Handle: Copy;
    /// The element size of an array input; `None` for a scalar.
    const ELEM_SIZE: Option<usize>;
    /// Declares the kernel parameter.
    fn declare() -> Self::Handle;
    /// The values of `W` consecutive elements starting at `v * W`.
    fn lanes<const W: usize>(h: &Self::Handle, v: Expr<i64>) -> [Self::Expr; W];
    /// The value at element offset `off` (an array's own offset; for other inputs the
    /// output's flat index, which scalars ignore).
    fn at_offset(h: &Self::Handle, off: Option<Expr<i64>>) -> Self::Expr;
}

impl<T: ScalarType> EwInput for Elem<T> {
    type Expr = Expr<T>;
    type Handle = DArray<T, 1, ReadOnly>;
    const ELEM_SIZE: Option<usize> = Some(T::TY.size());
    fn declare() -> Self::Handle {
        <&[T] as KernelParam>::declare()
    }
    fn lanes<const W: usize>(h: &Self::Handle, v: Expr<i64>) -> [Expr<T>; W] {
        h.load_lanes::<W>(v)
    }
    fn at_offset(h: &Self::Handle, off: Option<Expr<i64>>) -> Expr<T> {
        h.at(off.unwrap_or_else(|| Expr::lit(0i64)))
    }
}

impl<T: ScalarType> EwInput for Scalar<T> {
    type Expr = Expr<T>;
    type Handle = Expr<T>;
    const ELEM_SIZE: Option<usize> = None;
    fn declare() -> Expr<T> {
        declare_scalar::<T>()
    }
    fn lanes<const W: usize>(h: &Expr<T>, _v: Expr<i64>) -> [Expr<T>; W] {
        [*h; W]
    }
    fn at_offset(h: &Expr<T>, _off: Option<Expr<i64>>) -> Expr<T> {
        *h
    }
}

/// The kernel holds the index of the launch's first element (a `u64` parameter).
impl EwInput for Index {
    type Expr = Expr<u64>;
    type Handle = Expr<u64>;
    const ELEM_SIZE: Option<usize> = None;
    fn declare() -> Expr<u64> {
        declare_scalar::<u64>()
    }
    fn lanes<const W: usize>(base: &Expr<u64>, v: Expr<i64>) -> [Expr<u64>; W] {
        let first = *base + v.cast::<u64>() * W as u64;
        std::array::from_fn(|l| first + l as u64)
    }
    fn at_offset(base: &Expr<u64>, off: Option<Expr<i64>>) -> Expr<u64> {
        *base + off.unwrap_or_else(|| Expr::lit(0i64)).cast::<u64>()
    }
}

pub(super) fn declare_scalar<T: ScalarType>() -> Expr<T> {
    // Every scalar type is a KernelParam whose handle is Expr<T>; go through the IR directly.
    crate::codegen::declare_scalar_param::<T>()
}

/// The inputs of an elementwise kernel: a tuple of [`EwInput`]s.
pub trait EwInputs: 'static {
    /// The tuple the closure receives.
    type Exprs: Copy;
    /// The tuple of kernel handles.
    type Handles: Copy;
    /// Each input's element size (`None` for scalars).
    fn elem_sizes() -> Vec<Option<usize>>;
    /// Declares every input parameter, in order.
    fn declare() -> Self::Handles;
    /// `W` lanes of every input.
    fn lanes<const W: usize>(h: &Self::Handles, v: Expr<i64>) -> [Self::Exprs; W];
    /// Every input at its own element offset (`offs` has one entry per array input) of the
    /// output's element `flat`.
    fn at_offsets(h: &Self::Handles, offs: &[Expr<i64>], flat: Expr<i64>) -> Self::Exprs;
    /// `W` lanes of every input, each array at its own vector index (`vs`: one per array
    /// input), of the output's vector `out_v`.
    fn lanes_each<const W: usize>(
        h: &Self::Handles,
        vs: &[Expr<i64>],
        out_v: Expr<i64>,
    ) -> [Self::Exprs; W];
}

/// The outputs of an elementwise kernel: `Expr<T>` or a tuple of them (what the closure returns).
pub trait EwOutputs: Copy + 'static {
    /// The tuple of kernel handles.
    type Handles: Copy;
    /// The arrays [`Elementwise::call`] returns, of dimension type `D` (the inputs': see
    /// [`EwArgs::Dim`]).
    type Owned<D: Dimension>;
    /// The host arrays [`Elementwise::call_host`] returns (ndarray `Array<T, D>`s).
    type Host<D: Dimension>;
    /// Each output's element size.
    fn elem_sizes() -> Vec<usize>;
    /// Declares every output parameter, in order.
    fn declare() -> Self::Handles;
    /// Stores `W` lanes at `v * W`.
    fn store<const W: usize>(h: &Self::Handles, v: Expr<i64>, vals: [Self; W]);
    /// Stores one element at `idx`.
    fn store_at(h: &Self::Handles, idx: Expr<i64>, vals: Self);
    /// Stores one element of each output at its own index (`idxs`: one per output).
    fn store_each(h: &Self::Handles, idxs: &[Expr<i64>], vals: Self);
    /// Allocates outputs of `shape` from the device's memory pool, in `stream`'s order.
    fn alloc<D: Dimension>(stream: &Stream, shape: &[usize]) -> Result<Self::Owned<D>>;
    /// The outputs as launch arguments.
    fn infos<D: Dimension>(owned: &mut Self::Owned<D>) -> Vec<ArgInfo<'_>>;
    /// Copies the outputs to new host arrays, in `stream`'s order (returns once they arrived).
    fn to_host<D: Dimension>(owned: Self::Owned<D>, stream: &Stream) -> Result<Self::Host<D>>;
}

// The outputs' `EwOutputs` (one `Expr<T>` or a tuple) are in ew_outputs.rs.

macro_rules! input_tuples {
    ($($t:ident $a:ident $i:tt),*) => {
        // (The tuples' `EwArgs` are in ew_dim.rs.)
        impl<$($t: EwInput),*> EwInputs for ($($t,)*) {
            type Exprs = ($($t::Expr,)*);
            type Handles = ($($t::Handle,)*);
            fn elem_sizes() -> Vec<Option<usize>> {
                vec![$($t::ELEM_SIZE),*]
            }
            fn declare() -> Self::Handles {
                ($($t::declare(),)*)
            }
            fn lanes<const W: usize>(h: &Self::Handles, v: Expr<i64>) -> [Self::Exprs; W] {
                let l = ($($t::lanes::<W>(&h.$i, v),)*);
                std::array::from_fn(|k| ($(l.$i[k],)*))
            }
            #[allow(unused_assignments)]
            fn lanes_each<const W: usize>(
                h: &Self::Handles,
                vs: &[Expr<i64>],
                out_v: Expr<i64>,
            ) -> [Self::Exprs; W] {
                let mut j = 0usize;
                let l = ($({
                    let v = if $t::ELEM_SIZE.is_some() {
                        j += 1;
                        vs.get(j - 1).copied().unwrap_or_else(|| Expr::lit(0i64))
                    } else {
                        out_v
                    };
                    $t::lanes::<W>(&h.$i, v)
                },)*);
                std::array::from_fn(|k| ($(l.$i[k],)*))
            }
            #[allow(unused_assignments)]
            fn at_offsets(h: &Self::Handles, offs: &[Expr<i64>], flat: Expr<i64>) -> Self::Exprs {
                let mut j = 0usize;
                ($({
                    let off = if $t::ELEM_SIZE.is_some() {
                        j += 1;
                        offs.get(j - 1).copied()
                    } else {
                        Some(flat)
                    };
                    $t::at_offset(&h.$i, off)
                },)*)
            }
        }
    };
}
input_tuples!(I0 A0 0);
input_tuples!(I0 A0 0, I1 A1 1);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5, I6 A6 6);
input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5, I6 A6 6, I7 A7 7);

mod args;
mod complex;
mod host;
pub use args::{ArgInfo, EwArg, EwArgs, EwOutArg, EwOutArgs};
pub use host::{Prepared, Staged};

/// Most dimensions of a broadcast launch.
pub const MAX_RANK: usize = 8;
/// Kernel variants: contiguous with 1-, 2- and 4-lane vectors, strided of rank 1..=8, then
/// "suffix" broadcasting (inputs that repeat along leading dimensions) with 1, 2 and 4 lanes.
const VARIANTS: usize = 3 + MAX_RANK + 3;
/// Index of the first suffix-broadcast variant.
const SUFFIX: usize = 3 + MAX_RANK;
/// Threads per block of elementwise launches.
const BLOCK: u32 = 256;

pub(super) type Body<I, O> = dyn Fn(<I as EwInputs>::Exprs) -> O + Send + Sync;

/// A fused elementwise kernel: `f` maps one element of each input (and the scalar inputs) to
/// the outputs. `I` is a tuple of [`Elem<T>`] / [`Scalar<T>`]; the outputs are what `f` returns.
///
/// ```no_run
/// use cudajit::ops::{Elem, Elementwise, Scalar};
/// # fn main() -> cudajit::Result<()> {
/// let axpy = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), _>::new("axpy", |(a, x, y)| a * x + y)?;
/// # Ok(()) }
/// ```
pub struct Elementwise<I: EwInputs, O: EwOutputs> {
    name: String,
    options: PtxOptions,
    f: Arc<Body<I, O>>,
    variants: [super::KernelSlot; VARIANTS],
    /// Whether a call with host arrays has logged its warning.
    host_warned: AtomicBool,
}

impl<I: EwInputs, O: EwOutputs> Elementwise<I, O> {
    /// Builds an elementwise operation named `name` (checked now: a misuse of the builder in `f`
    /// is an error here).
    pub fn new(name: &str, f: impl Fn(I::Exprs) -> O + Send + Sync + 'static) -> Result<Self> {
        Self::with_options(name, PtxOptions::default(), f)
    }

    /// The same, with compile options (e.g. fastmath).
    pub fn with_options(
        name: &str,
        options: PtxOptions,
        f: impl Fn(I::Exprs) -> O + Send + Sync + 'static,
    ) -> Result<Self> {
        let ew = Elementwise {
            name: name.to_string(),
            options,
            f: Arc::new(f),
            variants: Default::default(),
            host_warned: AtomicBool::new(false),
        };
        // Any variant finds a misuse of the builder in `f`; the widest contiguous one is what
        // aligned arrays launch, so it is not recorded twice.
        ew.variant(Self::widest_contiguous())?;
        Ok(ew)
    }

    /// The contiguous variant with the most lanes the element types allow.
    fn widest_contiguous() -> usize {
        let sizes = I::elem_sizes()
            .into_iter()
            .flatten()
            .chain(O::elem_sizes())
            .map(|s| (s, 0u64));
        match vector_width(sizes) {
            4 => 2,
            2 => 1,
            _ => 0,
        }
    }

    /// The kernel for variant `v` (built on first use).
    fn variant(&self, v: usize) -> Result<&Kernel<()>> {
        super::built(&self.variants[v], || self.build_variant(v))
    }

    fn build_variant(&self, v: usize) -> Result<Kernel<()>> {
        let f = self.f.clone();
        let name = match v {
            0 => format!("{}_contig", self.name),
            1 | 2 => format!("{}_contig_v{}", self.name, 1 << v),
            v if v >= SUFFIX => format!("{}_suffix_v{}", self.name, 1 << (v - SUFFIX)),
            r => format!("{}_strided{}", self.name, r - 2),
        };
        Kernel::<()>::build_with(&name, self.options.clone(), move |k, ()| match v {
            0 => contiguous::<I, O, 1>(k, &*f),
            1 => contiguous::<I, O, 2>(k, &*f),
            2 => contiguous::<I, O, 4>(k, &*f),
            v if v == SUFFIX => suffix::<I, O, 1>(k, &*f),
            v if v == SUFFIX + 1 => suffix::<I, O, 2>(k, &*f),
            v if v >= SUFFIX => suffix::<I, O, 4>(k, &*f),
            r => strided::<I, O>(k, &*f, r - 2),
        })
    }

    /// The kernels' name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The PTX of the contiguous (scalar) variant, for inspection.
    pub fn compile_ptx(&self, options: &PtxOptions) -> Result<String> {
        self.variant(0)?.compile_ptx(options)
    }

    /// The PTX of every variant: contiguous with 1, 2 and 4 lanes, then strided of rank 1 to
    /// `max_rank` (for tests and inspection).
    pub fn variants_ptx(
        &self,
        options: &PtxOptions,
        max_rank: usize,
    ) -> Result<Vec<(String, String)>> {
        let sizes = I::elem_sizes()
            .into_iter()
            .flatten()
            .chain(O::elem_sizes())
            .map(|s| (s, 0u64));
        let widest = vector_width(sizes);
        let strided = 3..3 + max_rank.min(MAX_RANK);
        (0..VARIANTS)
            .filter(|&v| match v {
                0..=2 => (1usize << v) <= widest,
                v if v >= SUFFIX => (1usize << (v - SUFFIX)) <= widest,
                v => strided.contains(&v),
            })
            .map(|v| {
                let k = self.variant(v)?;
                Ok((k.name().to_string(), k.compile_ptx(options)?))
            })
            .collect()
    }

    /// Computes into existing output arrays (in place). Inputs broadcast to the outputs' shape,
    /// which every output must have.
    ///
    /// **Host arrays**, as kernel launches (and Numba) take them: an input array may be a host
    /// array (`&[T]`, `&Vec<T>`, `&ndarray::ArrayBase` of any layout, or an ndarray view by
    /// value such as `a.t()`), an output a mutable one (`&mut [T]`, `&mut Vec<T>`,
    /// `&mut ndarray::ArrayBase`, or an `ArrayViewMut` by value), mixed freely with device
    /// arrays, views, scalars and [`Index`]. A slice or `Vec` is 1-D, an ndarray has its own
    /// shape; they broadcast as device arrays do. What it costs: each host input is copied to a
    /// temporary device array from the stream's memory pool before the launch (one transfer
    /// over PCIe; a strided view is gathered on the host first); each host output gets a
    /// temporary device array, and after the launch the call **waits for the kernel** and
    /// copies it back (one transfer; scattered into a strided view). With host inputs only,
    /// the call does not wait for the kernel. For data used in more than one call, copy it once
    /// with `stream.to_device(..)` and pass the device array. The first call of each
    /// `Elementwise` with host arrays logs a warning through the `log` facade, as kernel
    /// launches do (`CUDAJIT_WARN_HOST_ARRAYS=0` or
    /// [`set_host_array_warnings(false)`](crate::codegen::set_host_array_warnings) silences
    /// it); device arrays only cost none of this. Host arrays are refused, with an error, while
    /// this thread captures a graph (nothing may wait there). A host output is borrowed `&mut`,
    /// so it cannot also be an input (the borrow checker refuses the aliasing); with a wrong
    /// shape the call is an error and writes nothing.
    ///
    /// ```no_run
    /// use cudajit::codegen::Expr;
    /// use cudajit::ops::{Elem, Elementwise, Scalar};
    /// # fn main() -> cudajit::Result<()> {
    /// let ctx = cudajit::Context::new(0)?;
    /// let s = ctx.new_stream()?;
    /// let axpy = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), Expr<f32>>::new(
    ///     "axpy",
    ///     |(a, x, y)| a * x + y,
    /// )?;
    /// let x = vec![1.0f32; 1000];
    /// let y = s.to_device(&vec![2.0f32; 1000])?; // a device array, mixed with host ones
    /// let mut out = vec![0.0f32; 1000];
    /// axpy.apply(&s, (3.0, &x, &y), &mut out)?;
    /// assert_eq!(out[0], 5.0); // the call waited and copied `out` back
    /// // ndarray: a host row broadcast over a host matrix, into a host matrix.
    /// let m = ndarray::Array2::<f32>::ones((4, 3));
    /// let row = ndarray::arr1(&[1.0f32, 2.0, 3.0]);
    /// let mut r = ndarray::Array2::<f32>::zeros((4, 3));
    /// axpy.apply(&s, (2.0, &row, &m), &mut r)?;
    /// # Ok(()) }
    /// ```
    pub fn apply<A: EwArgs<I>, B: EwOutArgs<O>>(
        &self,
        stream: &Stream,
        inputs: A,
        mut outputs: B,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: Elementwise {}", self.name()));
        self.host_arrays(A::HOSTS + B::HOSTS)?;
        let ins = inputs.prepare(stream)?;
        let outs = outputs.prepare(stream)?;
        self.launch(stream, &host::infos(&ins), &host::infos(&outs))?;
        if B::HOSTS == 0 {
            return Ok(());
        }
        let staged = outs.into_iter().map(Prepared::into_staged).collect();
        outputs.finish(stream, staged)
    }

    /// Computes into new output arrays of the inputs' broadcast shape, allocated from the
    /// device's memory pool in `stream`'s order. Their dimension type follows the inputs'
    /// ([`EwArgs::Dim`]): `Array1`-like inputs (`DeviceArray<T, Ix1>`, `Ix1` views) give
    /// `DeviceArray<T, Ix1>` outputs, inputs of several fixed ranks the highest (NumPy's
    /// broadcast rank: `Ix1` with `Ix2` gives `Ix2`), and an `IxDyn` input gives `IxDyn`.
    ///
    /// Inputs may be host arrays, as for [`apply`](Self::apply) (copied to temporary device
    /// arrays first; a slice or `Vec` is `Ix1`, an ndarray has its own dimension type): the
    /// outputs are still device arrays, and the call does not wait for the kernel.
    /// [`call_host`](Self::call_host) returns host arrays instead.
    pub fn call<A: EwArgs<I>>(&self, stream: &Stream, inputs: A) -> Result<O::Owned<A::Dim>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: Elementwise {}", self.name()));
        self.host_arrays(A::HOSTS)?;
        let prepared = inputs.prepare(stream)?;
        let ins = host::infos(&prepared);
        let shape = self.broadcast(&ins, None)?;
        let mut owned = O::alloc::<A::Dim>(stream, &shape)?;
        let outs = O::infos::<A::Dim>(&mut owned);
        self.launch(stream, &ins, &outs)?;
        drop(outs);
        Ok(owned)
    }

    /// As [`call`](Self::call), with the outputs copied to the host: new ndarray arrays
    /// (`Array<T, D>`, of the inputs' broadcast shape and dimension type). Inputs may be host
    /// or device arrays; the call waits for the kernel and the copies. With host inputs, this
    /// is NumPy's `f(x, y)` (two transfers per array and a wait: see [`apply`](Self::apply)).
    pub fn call_host<A: EwArgs<I>>(&self, stream: &Stream, inputs: A) -> Result<O::Host<A::Dim>> {
        let owned = self.call(stream, inputs)?;
        O::to_host::<A::Dim>(owned, stream)
    }

    /// Before a call with `count` host arrays: refused while this thread captures a graph;
    /// the `Elementwise`'s one warning.
    fn host_arrays(&self, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if crate::graph::capturing() {
            return Err(Error::usage(format!(
                "elementwise `{}`: a host array cannot be an argument while this thread captures \
                 a graph (Stream::begin_capture): the call copies it to the device (and a host \
                 output back, waiting for the kernel), which a capture cannot do; pass device \
                 arrays (`stream.to_device(..)`)",
                self.name
            )));
        }
        crate::codegen::warn_host_arrays_once(&self.host_warned, &self.name, count);
        Ok(())
    }

    fn broadcast(&self, ins: &[ArgInfo<'_>], outs: Option<&[ArgInfo<'_>]>) -> Result<Vec<usize>> {
        let shapes: Vec<&[usize]> = ins.iter().filter_map(|a| a.shape).collect();
        match (shapes.is_empty(), outs.and_then(|o| o.first()).and_then(|o| o.shape)) {
            (true, Some(out)) => Ok(out.to_vec()),
            (true, None) => Err(Error::usage(format!(
                "elementwise `{}`: no array input, so the output shape is unknown; use apply() with an output array",
                self.name
            ))),
            (false, _) => broadcast_shapes(&shapes),
        }
    }

    /// Launches on raw argument descriptions (for the crate's strided copies).
    pub(crate) fn launch_infos(
        &self,
        stream: &Stream,
        ins: &[ArgInfo<'_>],
        outs: &[ArgInfo<'_>],
    ) -> Result<()> {
        self.launch(stream, ins, outs)
    }

    fn launch(&self, stream: &Stream, ins: &[ArgInfo<'_>], outs: &[ArgInfo<'_>]) -> Result<()> {
        let ctx = stream.context();
        for a in ins.iter().chain(outs) {
            if let Some(c) = a.ctx {
                ctx.check_same(c, "an elementwise argument")?;
            }
        }
        let shape = self.broadcast(ins, Some(outs))?;
        for o in outs {
            let got = o.shape.unwrap_or(&[]);
            if got != shape.as_slice() {
                return Err(Error::Shape {
                    op: "elementwise output (the inputs' broadcast shape)",
                    expected: shape,
                    actual: got.to_vec(),
                });
            }
        }
        let n: usize = shape.iter().product();
        if n == 0 {
            return Ok(());
        }
        let arrays = || ins.iter().chain(outs).filter(|a| a.shape.is_some());
        let standard = ins.iter().chain(outs).all(ArgInfo::is_standard);
        let contiguous = ins
            .iter()
            .all(|a| a.shape.map_or(true, |s| s.iter().product::<usize>() == n));
        if standard && contiguous {
            let w = vector_width(arrays().map(|a| (a.size, a.ptr)));
            let variant = match w {
                4 => 2,
                2 => 1,
                _ => 0,
            };
            let kernel = self.variant(variant)?;
            let vectors = n / w;
            let threads = if vectors > 0 { vectors } else { n };
            let cfg = LaunchConfig::covering(threads, BLOCK)?;
            kernel.launch_with(stream, cfg, |buf| {
                for a in ins.iter().chain(outs) {
                    a.push(buf, ctx)?;
                }
                buf.push_scalar(n as u64)
            })
        } else if let Some(moduli) = suffix_moduli(ins, &shape).filter(|_| standard) {
            // Each array input is either full or repeats along leading dimensions: element i of
            // the output reads element i % m of it.
            let w = vector_width(arrays().map(|a| (a.size, a.ptr)));
            let w = if moduli.iter().all(|m| m % w == 0) && n % w == 0 {
                w
            } else {
                1
            };
            let kernel = self.variant(SUFFIX + w.trailing_zeros() as usize)?;
            let cfg = LaunchConfig::covering(n / w, BLOCK)?;
            kernel.launch_with(stream, cfg, |buf| {
                for a in ins.iter().chain(outs) {
                    a.push(buf, ctx)?;
                }
                buf.push_scalar((n / w) as u64)?;
                for &m in &moduli {
                    buf.push_scalar((m / w) as u64)?;
                }
                Ok(())
            })
        } else {
            let rank = shape.len();
            if rank == 0 || rank > MAX_RANK {
                return Err(Error::usage(format!(
                    "elementwise `{}`: broadcasting supports 1 to {MAX_RANK} dimensions, not {rank}",
                    self.name
                )));
            }
            let kernel = self.variant(2 + rank)?;
            let cfg = LaunchConfig::covering(n, BLOCK)?;
            kernel.launch_with(stream, cfg, |buf| {
                for a in ins.iter().chain(outs) {
                    a.push(buf, ctx)?;
                }
                for &d in &shape {
                    buf.push_scalar(d as u64)?;
                }
                // Each array's element-0 offset and strides: inputs broadcast to the shape,
                // outputs (of the shape) as they are.
                for (a, is_out) in ins
                    .iter()
                    .map(|a| (a, false))
                    .chain(outs.iter().map(|a| (a, true)))
                {
                    let Some(s) = a.shape else { continue };
                    buf.push_scalar(a.extent().2 as u64)?;
                    let own = a.own_strides();
                    let st = if is_out {
                        own.iter().map(|&x| x as i64).collect()
                    } else {
                        broadcast_strides_of(s, &own, &shape)
                    };
                    for x in st {
                        buf.push_scalar(x as u64)?;
                    }
                }
                Ok(())
            })
        }
    }
}

/// The widest vector every array can be accessed with: 16 bytes (8 when element sizes mix),
/// or 1 lane when a size is not 4 or 8 bytes or an address is not aligned for it.
fn vector_width(arrays: impl Iterator<Item = (usize, u64)>) -> usize {
    let arrays: Vec<(usize, u64)> = arrays.collect();
    let max = arrays.iter().map(|a| a.0).max().unwrap_or(1);
    if arrays.iter().any(|&(s, _)| s != 4 && s != 8) {
        return 1;
    }
    let w = 16 / max;
    if arrays.iter().all(|&(s, p)| p % (s * w) as u64 == 0) {
        w
    } else {
        1
    }
}

/// For inputs that are either full or equal to the trailing dimensions of `out` (after leading
/// 1s), each array input's element count (its modulus); `None` if any input broadcasts otherwise.
fn suffix_moduli(ins: &[ArgInfo<'_>], out: &[usize]) -> Option<Vec<usize>> {
    let mut moduli = Vec::new();
    for a in ins {
        let Some(s) = a.shape else { continue };
        let trimmed: &[usize] = {
            let lead = s.iter().take_while(|&&d| d == 1).count();
            &s[lead..]
        };
        if trimmed.len() > out.len() || out[out.len() - trimmed.len()..] != *trimmed {
            return None;
        }
        moduli.push(trimmed.iter().product::<usize>().max(1));
    }
    Some(moduli)
}
