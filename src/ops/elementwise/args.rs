//! The launch arguments of an `Elementwise`: what a launch needs to know of each ([`ArgInfo`]),
//! and the traits that turn device arrays, views, scalars, [`Index`] and host arrays (see
//! host.rs) into it, for the inputs ([`EwArg`], [`EwArgs`]) and the outputs ([`EwOutArg`],
//! [`EwOutArgs`]).

use ndarray::Dimension;

use super::{Elem, EwInput, EwInputs, EwOutputs, Index, NoArray, Prepared, Scalar, Staged};
use crate::codegen::{Expr, Scalar as ScalarType};
use crate::context::Context;
use crate::error::Result;
use crate::memory::layout::{c_strides, is_standard, span};
use crate::memory::{DeviceSlice, DeviceSliceMut, StridedView, StridedViewMut};
use crate::stream::Stream;

/// What a launch needs to know of one argument.
#[derive(Clone, Copy)]
pub struct ArgInfo<'a> {
    pub(super) shape: Option<&'a [usize]>,
    /// A strided view's element strides (signed, as `usize` bits); `None`: C order.
    pub(super) strides: Option<&'a [usize]>,
    pub(super) ptr: u64,
    pub(super) bits: u64,
    /// Element size in bytes (of a scalar: its own size).
    pub(super) size: usize,
    pub(super) ctx: Option<&'a Context>,
    /// Scalars per element as the kernel sees the array (2 for complex numbers).
    pub(super) parts: usize,
}

impl<'a> ArgInfo<'a> {
    pub(crate) fn array<T: ScalarType, X: DeviceSlice<T> + ?Sized>(a: &'a X) -> ArgInfo<'a> {
        ArgInfo {
            shape: Some(a.shape()),
            strides: None,
            ptr: a.device_ptr(),
            bits: 0,
            size: T::TY.size(),
            ctx: Some(a.context()),
            parts: 1,
        }
    }
    fn strided<T: ScalarType, D: ndarray::Dimension>(v: &'a StridedView<'_, T, D>) -> ArgInfo<'a> {
        let lay = v.layout();
        Self::raw_strided(
            v.context(),
            lay.ptr,
            lay.dim.slice(),
            lay.strides.slice(),
            T::TY.size(),
        )
    }
    /// A strided array of `size`-byte elements: element 0 at `ptr`, strides as `usize` bits.
    pub(crate) fn raw_strided(
        ctx: &'a Context,
        ptr: u64,
        shape: &'a [usize],
        strides: &'a [usize],
        size: usize,
    ) -> ArgInfo<'a> {
        ArgInfo {
            shape: Some(shape),
            strides: Some(strides),
            ptr,
            bits: 0,
            size,
            ctx: Some(ctx),
            parts: 1,
        }
    }
    /// Whether the array is contiguous in C order (scalars count as such).
    pub(super) fn is_standard(&self) -> bool {
        match (self.shape, self.strides) {
            (Some(sh), Some(st)) => is_standard(sh, st),
            _ => true,
        }
    }
    /// The array's element strides (C order when it has none of its own).
    pub(super) fn own_strides(&self) -> Vec<isize> {
        let shape = self.shape.unwrap_or(&[]);
        match self.strides {
            Some(st) => st.iter().map(|&s| s as isize).collect(),
            None => c_strides(shape),
        }
    }
    /// Pushes this argument's parameter slots: an array's lowest address and the scalars it
    /// spans, a scalar's bits (for [`Index`]: the first element's index).
    pub(super) fn push(
        &self,
        buf: &mut crate::codegen::ArgBuffer<'_>,
        ctx: &Context,
    ) -> Result<()> {
        match self.shape {
            Some(_) => {
                let (base, len, _) = self.extent();
                buf.push_flat(ctx, base, len * self.parts)
            }
            None => buf.push_scalar(self.bits),
        }
    }
    /// The memory a kernel may touch: the lowest element's address, the element count up to
    /// the highest, and element 0's offset from the lowest.
    pub(super) fn extent(&self) -> (u64, usize, i64) {
        let shape = self.shape.unwrap_or(&[]);
        let n: usize = shape.iter().product();
        match self.strides {
            Some(st) if n > 0 => {
                let (lo, hi) = span(shape, st);
                let base = (self.ptr as i64 + lo as i64 * self.size as i64) as u64;
                (base, (hi - lo + 1) as usize, -lo as i64)
            }
            _ => (self.ptr, n, 0),
        }
    }
    pub(crate) fn scalar<T: ScalarType>(v: T) -> ArgInfo<'a> {
        ArgInfo {
            shape: None,
            strides: None,
            ptr: 0,
            bits: v.to_bits(),
            size: T::TY.size(),
            ctx: None,
            parts: 1,
        }
    }
}

/// A launch argument for input `I`: a device array (any shape) or a host array (a slice, `Vec`
/// or ndarray array or view: see elementwise/host.rs) for [`Elem<T>`], a `T` for [`Scalar<T>`].
pub trait EwArg<I: EwInput> {
    /// The array's dimension type ([`NoArray`] for a scalar).
    type Dim;
    /// Whether the argument is a host array (copied to the device for each launch).
    const HOST: bool = false;
    /// The argument for a launch on `stream`: a device array's or scalar's launch information
    /// as it is, or a host array's device copy (made here, in `stream`'s order).
    fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>>;
}

impl<T: ScalarType, X: DeviceSlice<T> + ?Sized> EwArg<Elem<T>> for &X {
    type Dim = X::Dim;
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        Ok(Prepared::Device(ArgInfo::array(*self)))
    }
}

/// A strided view is passed by value (`x.t()`, `x.slice_axis(...)?`): the kernel reads it
/// through its strides.
impl<T: ScalarType, D: ndarray::Dimension> EwArg<Elem<T>> for StridedView<'_, T, D> {
    type Dim = D;
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        Ok(Prepared::Device(ArgInfo::strided(self)))
    }
}

impl<T: ScalarType> EwArg<Scalar<T>> for T {
    type Dim = NoArray;
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        Ok(Prepared::Device(ArgInfo::scalar(*self)))
    }
}

impl EwArg<Index> for Index {
    type Dim = NoArray;
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        Ok(Prepared::Device(ArgInfo::scalar(0u64)))
    }
}

/// Launch arguments for the inputs `I` (a tuple matching it).
pub trait EwArgs<I: EwInputs> {
    /// The dimension type of [`Elementwise::call`](super::Elementwise::call)'s outputs: the
    /// arrays' common one, the highest of fixed ones (broadcasting's rank), `IxDyn` when one is
    /// `IxDyn` or none is an array (a host slice or `Vec` counts as `Ix1`, an ndarray with its
    /// own type).
    type Dim: Dimension;
    /// How many of the arguments are host arrays.
    const HOSTS: usize;
    /// Every argument prepared for a launch on `stream`, in order (host arrays copied to the
    /// device).
    fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>>;
}

/// A writable array for output `O` (any shape): a device array or view, or a host array (a
/// mutable slice, `Vec` or ndarray array or view: see elementwise/host.rs).
pub trait EwOutArg<O> {
    /// Whether the argument is a host array (written on the device, then copied back).
    const HOST: bool = false;
    /// The output for a launch on `stream`: a device array's launch information as it is, or
    /// a host array's temporary device array (allocated here, in `stream`'s order).
    fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>>;
    /// After the launch: a host array takes its device copy's values back (`staged`, which
    /// [`prepare`](Self::prepare) made); a device array does nothing.
    fn finish(&mut self, _stream: &Stream, _staged: Option<Staged>) -> Result<()> {
        Ok(())
    }
}

impl<T: ScalarType, X: DeviceSliceMut<T> + ?Sized> EwOutArg<Expr<T>> for &mut X {
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        Ok(Prepared::Device(ArgInfo::array(&**self)))
    }
}

/// Launch arguments for the outputs `O`.
pub trait EwOutArgs<O: EwOutputs> {
    /// How many of the outputs are host arrays.
    const HOSTS: usize;
    /// Every output prepared for a launch on `stream`, in order (host arrays given temporary
    /// device arrays).
    fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>>;
    /// After the launch: host outputs take their values back (`staged`: the prepared outputs'
    /// device copies, in order).
    fn finish(&mut self, stream: &Stream, staged: Vec<Option<Staged>>) -> Result<()>;
}

/// One output: any `EwOutArg` (a device array or view, or a host array).
impl<T: ScalarType, A: EwOutArg<Expr<T>>> EwOutArgs<Expr<T>> for A {
    const HOSTS: usize = A::HOST as usize;
    fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>> {
        Ok(vec![EwOutArg::prepare(self, stream)?])
    }
    fn finish(&mut self, stream: &Stream, staged: Vec<Option<Staged>>) -> Result<()> {
        EwOutArg::finish(self, stream, staged.into_iter().next().flatten())
    }
}

/// A writable strided view is passed by value (`y.strided_mut().reversed_axes()`,
/// `y.slice_axis_mut(...)?`, `v.reborrow()`): the kernel writes it through its strides.
impl<T: ScalarType, D: ndarray::Dimension> EwOutArg<Expr<T>> for StridedViewMut<'_, T, D> {
    fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
        let lay = self.layout();
        Ok(Prepared::Device(ArgInfo::raw_strided(
            self.context(),
            lay.ptr,
            lay.dim.slice(),
            lay.strides.slice(),
            T::TY.size(),
        )))
    }
}

macro_rules! out_arg_tuples {
    ($($t:ident $a:ident $i:tt),*) => {
        impl<$($t: ScalarType,)* $($a: EwOutArg<Expr<$t>>),*> EwOutArgs<($(Expr<$t>,)*)> for ($($a,)*) {
            const HOSTS: usize = 0 $(+ $a::HOST as usize)*;
            fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>> {
                Ok(vec![$(self.$i.prepare(stream)?),*])
            }
            fn finish(&mut self, stream: &Stream, staged: Vec<Option<Staged>>) -> Result<()> {
                let mut staged = staged.into_iter();
                $(self.$i.finish(stream, staged.next().flatten())?;)*
                Ok(())
            }
        }
    };
}
out_arg_tuples!(O0 A0 0, O1 A1 1);
out_arg_tuples!(O0 A0 0, O1 A1 1, O2 A2 2);
out_arg_tuples!(O0 A0 0, O1 A1 1, O2 A2 2, O3 A3 3);
