//! Everyday operations on device arrays, built on [`Elementwise`] (each compiled once per element
//! type and cached for the process).

use std::sync::OnceLock;

use ndarray::{Dimension, IxDyn};

use super::arg::ArgExtreme;
use super::elementwise::{Elem, Elementwise, Scalar};
use super::reduce::Reduction;
use crate::codegen::{select, ArgFor, Expr, Float, Kernel, KernelParam, Num, Scalar as ScalarType};
use crate::context::Context;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::module::LaunchConfig;
use crate::stream::Stream;

type Binary<T> = Elementwise<(Elem<T>, Elem<T>), Expr<T>>;
type Scale<T> = Elementwise<(Scalar<T>, Elem<T>), Expr<T>>;
type Axpy<T> = Elementwise<(Scalar<T>, Elem<T>, Elem<T>), Expr<T>>;

/// The elementwise kernels behind [`ArrayOps`] for one element type.
#[doc(hidden)]
pub struct OpKernels<T: ScalarType + Num> {
    add: OnceLock<Result<Binary<T>>>,
    sub: OnceLock<Result<Binary<T>>>,
    mul: OnceLock<Result<Binary<T>>>,
    div: OnceLock<Result<Binary<T>>>,
    scale: OnceLock<Result<Scale<T>>>,
    axpy: OnceLock<Result<Axpy<T>>>,
}

/// Element types with cached operation kernels.
pub trait OpsScalar: ScalarType + Num + KernelParam<Handle = Expr<Self>> + ArgFor<Self> {
    /// This type's kernels.
    #[doc(hidden)]
    fn kernels() -> &'static OpKernels<Self>;
}

macro_rules! ops_scalar {
    ($($t:ty),*) => {$(
        impl OpsScalar for $t {
            fn kernels() -> &'static OpKernels<$t> {
                static K: OpKernels<$t> = OpKernels {
                    add: OnceLock::new(),
                    sub: OnceLock::new(),
                    mul: OnceLock::new(),
                    div: OnceLock::new(),
                    scale: OnceLock::new(),
                    axpy: OnceLock::new(),
                };
                &K
            }
        }
    )*};
}
ops_scalar!(
    f32,
    f64,
    i8,
    u8,
    i16,
    u16,
    i32,
    u32,
    i64,
    u64,
    half::f16,
    half::bf16
);

fn cached<E>(slot: &OnceLock<Result<E>>, make: impl FnOnce() -> Result<E>) -> Result<&E> {
    slot.get_or_init(make).as_ref().map_err(Clone::clone)
}

fn same_dim<T: ScalarType, E: Dimension, D: Dimension>(
    a: DeviceArray<T, E>,
    dim: &D,
) -> Result<DeviceArray<T, D>> {
    a.into_shape(dim.clone())
}

/// Elementwise arithmetic on device arrays of the same shape (use [`Elementwise`] directly
/// for broadcasting). Each result is a new array; the work is ordered on `stream`.
pub trait ArrayOps<T: OpsScalar, D: Dimension>: DeviceSlice<T, Dim = D> + Sized {
    /// `self + other`.
    fn add(
        &self,
        stream: &Stream,
        other: &impl DeviceSlice<T, Dim = D>,
    ) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().add, || {
            Binary::new(&format!("add_{}", T::TY.name()), |(x, y)| x + y)
        })?;
        same_dim(k.call(stream, (self, other))?, self.dim())
    }
    /// `self - other`.
    fn sub(
        &self,
        stream: &Stream,
        other: &impl DeviceSlice<T, Dim = D>,
    ) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().sub, || {
            Binary::new(&format!("sub_{}", T::TY.name()), |(x, y)| x - y)
        })?;
        same_dim(k.call(stream, (self, other))?, self.dim())
    }
    /// `self * other`.
    fn mul(
        &self,
        stream: &Stream,
        other: &impl DeviceSlice<T, Dim = D>,
    ) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().mul, || {
            Binary::new(&format!("mul_{}", T::TY.name()), |(x, y)| x * y)
        })?;
        same_dim(k.call(stream, (self, other))?, self.dim())
    }
    /// `self / other` (integer division by zero as documented on [`Expr`]).
    fn div(
        &self,
        stream: &Stream,
        other: &impl DeviceSlice<T, Dim = D>,
    ) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().div, || {
            Binary::new(&format!("div_{}", T::TY.name()), |(x, y)| x / y)
        })?;
        same_dim(k.call(stream, (self, other))?, self.dim())
    }
    /// `a * self`.
    fn scale(&self, stream: &Stream, a: T) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().scale, || {
            Elementwise::new(
                &format!("scale_{}", T::TY.name()),
                |(a, x): (Expr<T>, Expr<T>)| a * x,
            )
        })?;
        same_dim(k.call(stream, (a, self))?, self.dim())
    }
    /// `a * self + y`.
    fn axpy(
        &self,
        stream: &Stream,
        a: T,
        y: &impl DeviceSlice<T, Dim = D>,
    ) -> Result<DeviceArray<T, D>> {
        let k = cached(&T::kernels().axpy, || {
            Elementwise::new(
                &format!("axpy_{}", T::TY.name()),
                |(a, x, y): (Expr<T>, Expr<T>, Expr<T>)| a * x + y,
            )
        })?;
        same_dim(k.call(stream, (a, self, y))?, self.dim())
    }
    /// `f(x)` for every element, as a new array (`f` is compiled on first use of this `name`;
    /// the compile cache makes later identical maps cheap).
    fn map<U: ScalarType>(
        &self,
        stream: &Stream,
        name: &str,
        f: impl Fn(Expr<T>) -> Expr<U> + Send + Sync + 'static,
    ) -> Result<DeviceArray<U, D>> {
        let k = Elementwise::<(Elem<T>,), Expr<U>>::new(name, move |(x,)| f(x))?;
        same_dim(k.call(stream, (self,))?, self.dim())
    }
    /// Converts every element to `U` with Rust's `as` semantics.
    fn cast<U: ScalarType>(&self, stream: &Stream) -> Result<DeviceArray<U, D>> {
        let name = format!("cast_{}_to_{}", T::TY.name(), U::TY.name());
        self.map(stream, &name, |x| x.cast::<U>())
    }
}

impl<T: OpsScalar, D: Dimension, X: DeviceSlice<T, Dim = D>> ArrayOps<T, D> for X {}

/// The built-in reductions for one element type (built on first use, then cached).
#[doc(hidden)]
pub struct ReduceKernels<T: ReduceScalar> {
    sum: OnceLock<Result<Reduction<T, T::Acc, T>>>,
    prod: OnceLock<Result<Reduction<T, T::Acc, T>>>,
    min: OnceLock<Result<Reduction<T, T, T>>>,
    max: OnceLock<Result<Reduction<T, T, T>>>,
    sum_f64: OnceLock<Result<Reduction<T, f64, f64>>>,
    mean: OnceLock<Result<Reduction<T, f64, f64>>>,
    pub(crate) argmin: ArgExtreme<T>,
    pub(crate) argmax: ArgExtreme<T>,
}

/// Element types with cached reduction kernels.
pub trait ReduceScalar: OpsScalar {
    /// The smallest and largest values (identities of max and min).
    #[doc(hidden)]
    const LIMITS: (Self, Self);
    /// One and zero.
    #[doc(hidden)]
    const ONE_ZERO: (Self, Self);
    /// The type sums and products accumulate in: the type itself, except `f32` for the
    /// 16-bit floats (the result is rounded once to the element type at the end).
    #[doc(hidden)]
    type Acc: ReduceScalar;
    /// This type's reduction kernels.
    #[doc(hidden)]
    fn reductions() -> &'static ReduceKernels<Self>;
}

macro_rules! reduce_scalar {
    ($($t:ty: $lo:expr, $hi:expr, $one:expr, $zero:expr);*) => {$(
        reduce_scalar!(@one $t, $t: $lo, $hi, $one, $zero);
    )*};
    (@one $t:ty, $acc:ty: $lo:expr, $hi:expr, $one:expr, $zero:expr) => {
        impl ReduceScalar for $t {
            const LIMITS: ($t, $t) = ($lo, $hi);
            const ONE_ZERO: ($t, $t) = ($one, $zero);
            type Acc = $acc;
            fn reductions() -> &'static ReduceKernels<$t> {
                static K: ReduceKernels<$t> = ReduceKernels {
                    sum: OnceLock::new(),
                    prod: OnceLock::new(),
                    min: OnceLock::new(),
                    max: OnceLock::new(),
                    sum_f64: OnceLock::new(),
                    mean: OnceLock::new(),
                    argmin: ArgExtreme::new(false),
                    argmax: ArgExtreme::new(true),
                };
                &K
            }
        }
    };
}
reduce_scalar!(
    f32: f32::NEG_INFINITY, f32::INFINITY, 1.0, 0.0;
    f64: f64::NEG_INFINITY, f64::INFINITY, 1.0, 0.0;
    i8: i8::MIN, i8::MAX, 1, 0;
    u8: u8::MIN, u8::MAX, 1, 0;
    i16: i16::MIN, i16::MAX, 1, 0;
    u16: u16::MIN, u16::MAX, 1, 0;
    i32: i32::MIN, i32::MAX, 1, 0;
    u32: u32::MIN, u32::MAX, 1, 0;
    i64: i64::MIN, i64::MAX, 1, 0;
    u64: u64::MIN, u64::MAX, 1, 0
);
reduce_scalar!(@one half::f16, f32:
    half::f16::NEG_INFINITY, half::f16::INFINITY, half::f16::ONE, half::f16::ZERO);
reduce_scalar!(@one half::bf16, f32:
    half::bf16::NEG_INFINITY, half::bf16::INFINITY, half::bf16::ONE, half::bf16::ZERO);

/// `min` that propagates NaN (as NumPy's `min`).
fn nan_min<T: OpsScalar>(a: Expr<T>, b: Expr<T>) -> Expr<T> {
    select(a.lt(b).or(a.ne(a)), a, b)
}
/// `max` that propagates NaN (as NumPy's `max`).
fn nan_max<T: OpsScalar>(a: Expr<T>, b: Expr<T>) -> Expr<T> {
    select(a.gt(b).or(a.ne(a)), a, b)
}

impl<T: ReduceScalar> ReduceKernels<T> {
    pub(crate) fn sum(&self) -> Result<&Reduction<T, T::Acc, T>> {
        cached(&self.sum, || {
            Ok(Reduction::new(
                &format!("sum_{}", T::TY.name()),
                |x: Expr<T>| x.cast::<T::Acc>(),
                |a, b| a + b,
                <T::Acc as ReduceScalar>::ONE_ZERO.1,
            )?
            .post(|s, _| s.cast::<T>()))
        })
    }
    pub(crate) fn prod(&self) -> Result<&Reduction<T, T::Acc, T>> {
        cached(&self.prod, || {
            Ok(Reduction::new(
                &format!("prod_{}", T::TY.name()),
                |x: Expr<T>| x.cast::<T::Acc>(),
                |a, b| a * b,
                <T::Acc as ReduceScalar>::ONE_ZERO.0,
            )?
            .post(|s, _| s.cast::<T>()))
        })
    }
    pub(crate) fn min(&self) -> Result<&Reduction<T, T, T>> {
        cached(&self.min, || {
            Ok(Reduction::new(
                &format!("min_{}", T::TY.name()),
                |x| x,
                nan_min,
                T::LIMITS.1,
            )?
            .nonempty())
        })
    }
    pub(crate) fn max(&self) -> Result<&Reduction<T, T, T>> {
        cached(&self.max, || {
            Ok(Reduction::new(
                &format!("max_{}", T::TY.name()),
                |x| x,
                nan_max,
                T::LIMITS.0,
            )?
            .nonempty())
        })
    }
    pub(crate) fn sum_f64(&self) -> Result<&Reduction<T, f64, f64>> {
        cached(&self.sum_f64, || {
            Reduction::new(
                &format!("sum64_{}", T::TY.name()),
                |x: Expr<T>| x.cast::<f64>(),
                |a, b| a + b,
                0.0,
            )
        })
    }
    pub(crate) fn mean(&self) -> Result<&Reduction<T, f64, f64>> {
        cached(&self.mean, || {
            Ok(Reduction::new(
                &format!("mean_{}", T::TY.name()),
                |x: Expr<T>| x.cast::<f64>(),
                |a, b| a + b,
                0.0,
            )?
            .post(|s, n| s / n.cast::<f64>())
            .nonempty())
        })
    }
}

/// Reductions over a whole array or along one axis. Results are the same every run (no
/// floating-point atomics); `f32` sums accumulate in `f32` (see [`Reduction`]), `f16` and `bf16`
/// sums and products in `f32` (rounded once to the element type), integer sums and
/// products wrap in the element type (a `u8` sum is the sum modulo 256, as Rust's
/// `wrapping_add`), and [`sum_f64`](ReduceOps::sum_f64) and [`mean`](ReduceOps::mean) accumulate
/// in `f64`.
pub trait ReduceOps<T: ReduceScalar, D: Dimension>: DeviceSlice<T, Dim = D> + Sized {
    /// The sum of all elements (0 for an empty array).
    fn sum(&self, stream: &Stream) -> Result<T> {
        T::reductions().sum()?.reduce(stream, self)
    }
    /// The sum of all elements, accumulated in `f64`.
    fn sum_f64(&self, stream: &Stream) -> Result<f64> {
        T::reductions().sum_f64()?.reduce(stream, self)
    }
    /// The product of all elements (1 for an empty array).
    fn prod(&self, stream: &Stream) -> Result<T> {
        T::reductions().prod()?.reduce(stream, self)
    }
    /// The smallest element (a NaN if there is one); an error for an empty array.
    fn min(&self, stream: &Stream) -> Result<T> {
        T::reductions().min()?.reduce(stream, self)
    }
    /// The largest element (a NaN if there is one); an error for an empty array.
    fn max(&self, stream: &Stream) -> Result<T> {
        T::reductions().max()?.reduce(stream, self)
    }
    /// The mean, computed in `f64`; an error for an empty array.
    fn mean(&self, stream: &Stream) -> Result<f64> {
        T::reductions().mean()?.reduce(stream, self)
    }
    /// The flat index of the first smallest element (or first NaN).
    fn argmin(&self, stream: &Stream) -> Result<u64> {
        T::reductions().argmin.run(stream, self)
    }
    /// The flat index of the first largest element (or first NaN).
    fn argmax(&self, stream: &Stream) -> Result<u64> {
        T::reductions().argmax.run(stream, self)
    }
    /// Writes the flat index of the first largest element into `out` (one `u64`), ordered on
    /// `stream`, without waiting.
    fn argmax_into(&self, stream: &Stream, out: &mut impl DeviceSliceMut<u64>) -> Result<()> {
        arg_into(&T::reductions().argmax, stream, self, out)
    }
    /// Writes the flat index of the first smallest element into `out` (one `u64`).
    fn argmin_into(&self, stream: &Stream, out: &mut impl DeviceSliceMut<u64>) -> Result<()> {
        arg_into(&T::reductions().argmin, stream, self, out)
    }
    /// The index along `axis` of the first largest element (or first NaN) of every lane
    /// through that axis (NumPy's `argmax(axis=..., keepdims=...)`).
    fn argmax_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<u64, IxDyn>> {
        T::reductions()
            .argmax
            .run_axis(stream, self, axis, keepdims)
    }
    /// The index along `axis` of the first smallest element (or first NaN).
    fn argmin_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<u64, IxDyn>> {
        T::reductions()
            .argmin
            .run_axis(stream, self, axis, keepdims)
    }
    /// Sums along `axis` (NumPy's `sum(axis=..., keepdims=...)`).
    fn sum_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        T::reductions()
            .sum()?
            .reduce_axis(stream, self, axis, keepdims)
    }
    /// Sums along `axis` into `out`, which has the result's shape (that of
    /// [`sum_axis`](ReduceOps::sum_axis) with the same `keepdims`): NumPy's `sum(axis=...,
    /// out=...)`, without allocating the result. Other reductions:
    /// [`Reduction::reduce_axis_into`](super::Reduction::reduce_axis_into).
    fn sum_axis_into(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
        out: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        T::reductions()
            .sum()?
            .reduce_axis_into(stream, self, axis, keepdims, out)
    }
    /// Minima along `axis`.
    fn min_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        T::reductions()
            .min()?
            .reduce_axis(stream, self, axis, keepdims)
    }
    /// Maxima along `axis`.
    fn max_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        T::reductions()
            .max()?
            .reduce_axis(stream, self, axis, keepdims)
    }
    /// Products along `axis`.
    fn prod_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        T::reductions()
            .prod()?
            .reduce_axis(stream, self, axis, keepdims)
    }
    /// Means (in `f64`) along `axis`.
    fn mean_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<f64, IxDyn>> {
        T::reductions()
            .mean()?
            .reduce_axis(stream, self, axis, keepdims)
    }
}

impl<T: ReduceScalar, D: Dimension, X: DeviceSlice<T, Dim = D>> ReduceOps<T, D> for X {}

fn arg_into<T: ReduceScalar, X: DeviceSlice<T> + ?Sized>(
    k: &ArgExtreme<T>,
    stream: &Stream,
    x: &X,
    out: &mut impl DeviceSliceMut<u64>,
) -> Result<()> {
    if out.len() != 1 {
        return Err(crate::error::Error::Shape {
            op: "argmin/argmax_into (a one-element output)",
            expected: vec![1],
            actual: out.shape().to_vec(),
        });
    }
    stream
        .context()
        .check_same(out.context(), "the output array")?;
    k.run_into(stream, x, out.device_ptr())
}

/// The PTX of every argmin (`largest == false`) or argmax kernel for `T` (for tests and
/// inspection).
#[doc(hidden)]
pub fn arg_variants_ptx<T: ReduceScalar>(
    largest: bool,
    options: &crate::codegen::PtxOptions,
) -> Result<Vec<(String, String)>> {
    let r = T::reductions();
    if largest { &r.argmax } else { &r.argmin }.variants_ptx(options)
}

/// `any` and `all` of boolean arrays.
pub trait BoolOps<D: Dimension>: DeviceSlice<bool, Dim = D> + Sized {
    /// Whether any element is true (false for an empty array).
    fn any(&self, stream: &Stream) -> Result<bool> {
        bool_reduction(true)?.reduce(stream, self)
    }
    /// Whether every element is true (true for an empty array).
    fn all(&self, stream: &Stream) -> Result<bool> {
        bool_reduction(false)?.reduce(stream, self)
    }
    /// `any` along `axis`.
    fn any_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<bool, IxDyn>> {
        bool_reduction(true)?.reduce_axis(stream, self, axis, keepdims)
    }
    /// `all` along `axis`.
    fn all_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<bool, IxDyn>> {
        bool_reduction(false)?.reduce_axis(stream, self, axis, keepdims)
    }
}

impl<D: Dimension, X: DeviceSlice<bool, Dim = D>> BoolOps<D> for X {}

fn bool_reduction(any: bool) -> Result<&'static Reduction<bool, bool, bool>> {
    static ANY: OnceLock<Result<Reduction<bool, bool, bool>>> = OnceLock::new();
    static ALL: OnceLock<Result<Reduction<bool, bool, bool>>> = OnceLock::new();
    if any {
        cached(&ANY, || {
            Reduction::new("any_bool", |x| x, |a, b| a.or(b), false)
        })
    } else {
        cached(&ALL, || {
            Reduction::new("all_bool", |x| x, |a, b| a.and(b), true)
        })
    }
}

impl Context {
    /// `n` values `start, start + step, ...` (NumPy's `arange`), as a new 1-D array.
    pub fn arange<T: OpsScalar>(
        &self,
        stream: &Stream,
        start: T,
        step: T,
        n: usize,
    ) -> Result<DeviceArray<T>> {
        let mut out = DeviceArray::<T, _>::alloc_ordered(stream, ndarray::Ix1(n))?;
        let k = Kernel::<(&mut [T], T, T)>::build(
            &format!("arange_{}", T::TY.name()),
            |k, (out, a, s)| {
                let i = k.grid1();
                k.if_(i.lt(out.len()), |_| out.set(i, a + i.cast::<T>() * s));
            },
        )?;
        if n > 0 {
            k.launch(
                stream,
                LaunchConfig::covering(n, 256)?,
                (&mut out, start, step),
            )?;
        }
        Ok(out)
    }

    /// `n` evenly spaced values from `start` to `stop`, both included (NumPy's `linspace`).
    pub fn linspace<T: OpsScalar + Float>(
        &self,
        stream: &Stream,
        start: T,
        stop: T,
        n: usize,
    ) -> Result<DeviceArray<T>> {
        let mut out = DeviceArray::<T, _>::alloc_ordered(stream, ndarray::Ix1(n))?;
        let k = Kernel::<(&mut [T], T, T)>::build(
            &format!("linspace_{}", T::TY.name()),
            |k, (out, a, b)| {
                let i = k.grid1();
                let n = out.len();
                k.if_(i.lt(n), |_| {
                    let steps = (n - 1u64).max(1u64).cast::<T>();
                    let v = a + (b - a) * (i.cast::<T>() / steps);
                    out.set(i, select(i.eq(n - 1u64), b, v));
                });
            },
        )?;
        if n > 0 {
            k.launch(
                stream,
                LaunchConfig::covering(n, 256)?,
                (&mut out, start, stop),
            )?;
        }
        Ok(out)
    }
}
