//! Everyday operations on device arrays, built on [`Elementwise`] (each compiled once per element
//! type and cached for the process).

use std::sync::OnceLock;

use ndarray::{Dimension, IxDyn};

use super::elementwise::{Elem, Elementwise, Scalar};
use crate::codegen::{select, ArgFor, Expr, Float, Kernel, KernelParam, Num, Scalar as ScalarType};
use crate::context::Context;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice};
use crate::module::LaunchConfig;
use crate::stream::Stream;

type Binary<T> = Elementwise<(Elem<T>, Elem<T>), Expr<T>>;

/// The elementwise kernels behind [`ArrayOps`] for one element type.
#[doc(hidden)]
pub struct OpKernels<T: ScalarType + Num> {
    add: OnceLock<Result<Binary<T>>>,
    sub: OnceLock<Result<Binary<T>>>,
    mul: OnceLock<Result<Binary<T>>>,
    div: OnceLock<Result<Binary<T>>>,
    scale: OnceLock<Result<Elementwise<(Scalar<T>, Elem<T>), Expr<T>>>>,
    axpy: OnceLock<Result<Elementwise<(Scalar<T>, Elem<T>, Elem<T>), Expr<T>>>>,
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
ops_scalar!(f32, f64, i32, u32, i64, u64);

fn cached<E>(slot: &OnceLock<Result<E>>, make: impl FnOnce() -> Result<E>) -> Result<&E> {
    slot.get_or_init(make).as_ref().map_err(Clone::clone)
}

fn same_dim<T: ScalarType, D: Dimension>(
    a: DeviceArray<T, IxDyn>,
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

impl Context {
    /// `n` values `start, start + step, ...` (NumPy's `arange`), as a new 1-D array.
    pub fn arange<T: OpsScalar>(
        &self,
        stream: &Stream,
        start: T,
        step: T,
        n: usize,
    ) -> Result<DeviceArray<T>> {
        let mut out = DeviceArray::<T, ndarray::Ix1>::alloc_raw(self, ndarray::Ix1(n))?;
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
                LaunchConfig::for_num_elems(n, 256)?,
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
        let mut out = DeviceArray::<T, ndarray::Ix1>::alloc_raw(self, ndarray::Ix1(n))?;
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
                LaunchConfig::for_num_elems(n, 256)?,
                (&mut out, start, stop),
            )?;
        }
        Ok(out)
    }
}
