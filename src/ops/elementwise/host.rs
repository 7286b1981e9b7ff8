//! Host arrays as `Elementwise` arguments, as kernel launches take them (`codegen/host_args.rs`):
//! a `&[T]`, `&Vec<T>` or ndarray array or view (any layout) where an input array goes, a
//! `&mut [T]`, `&mut Vec<T>` or mutable ndarray array or view where an output goes.
//!
//! A host input is copied to a temporary device array from the stream's memory pool before the
//! launch (a strided view is gathered on the host first); a host output gets a temporary device
//! array of its shape, whose values are copied back after the launch (the call waits for them).
//! Device arguments stage nothing. The temporaries are freed in the stream's order.

use std::any::Any;

use ndarray::{ArrayBase, ArrayView, ArrayViewMut, ArrayViewMut1, Data, DataMut, Dimension, Ix1};
use num_complex::Complex;

use super::{ArgInfo, Elem, EwArg, EwOutArg};
use crate::codegen::{CExpr, Expr, Scalar as ScalarType};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut, HostSource};
use crate::stream::Stream;

/// A host argument's device copy, made for one launch (the array, type-erased, with what the
/// launch needs of it).
pub struct Staged {
    shape: Vec<usize>,
    ptr: u64,
    size: usize,
    parts: usize,
    ctx: Context,
    array: Box<dyn Any + Send>,
}

impl Staged {
    /// Keeps `a` (of `parts` scalars per element, as the kernel sees it).
    pub(super) fn keep<T: DeviceCopy, D: Dimension + 'static>(
        a: DeviceArray<T, D>,
        parts: usize,
    ) -> Staged {
        Staged {
            shape: a.shape().to_vec(),
            ptr: a.device_ptr(),
            size: std::mem::size_of::<T>(),
            parts,
            ctx: a.context().clone(),
            array: Box::new(a),
        }
    }

    /// Copies `host` to a new device array from `stream`'s pool, in its order (the host data
    /// may be reused when this returns).
    pub(super) fn upload<T: DeviceCopy, H: HostSource<T> + ?Sized>(
        stream: &Stream,
        host: &H,
        parts: usize,
    ) -> Result<Staged>
    where
        H::Dim: 'static,
    {
        let mut a = DeviceArray::<T, H::Dim>::alloc_ordered(stream, host.host_dim())?;
        a.copy_from_host_async(host, stream)?;
        Ok(Self::keep(a, parts))
    }

    /// A new device array of `dim` from `stream`'s pool (uninitialised: the kernel writes it).
    pub(super) fn alloc<T: DeviceCopy, D: Dimension + 'static>(
        stream: &Stream,
        dim: D,
        parts: usize,
    ) -> Result<Staged> {
        Ok(Self::keep(
            DeviceArray::<T, D>::alloc_ordered(stream, dim)?,
            parts,
        ))
    }

    /// The copy's launch information.
    fn info(&self) -> ArgInfo<'_> {
        ArgInfo {
            shape: Some(&self.shape),
            strides: None,
            ptr: self.ptr,
            bits: 0,
            size: self.size,
            ctx: Some(&self.ctx),
            parts: self.parts,
        }
    }

    /// The device array.
    fn array<T: DeviceCopy, D: Dimension + 'static>(&self) -> Result<&DeviceArray<T, D>> {
        self.array
            .downcast_ref::<DeviceArray<T, D>>()
            .ok_or_else(|| {
                Error::usage("elementwise: internal: a host output's copy has another type")
            })
    }
}

/// One argument as a launch sees it: a device argument's (or scalar's) own launch information,
/// or a host array's device copy.
pub enum Prepared<'a> {
    /// A device array, view or scalar: used as it is.
    Device(ArgInfo<'a>),
    /// A host array's device copy.
    Host(Staged),
}

impl Prepared<'_> {
    /// The launch information (of the device copy, for a host array).
    pub(super) fn info(&self) -> ArgInfo<'_> {
        match self {
            Prepared::Device(i) => *i,
            Prepared::Host(s) => s.info(),
        }
    }

    /// The device copy of a host array; `None` for a device argument.
    pub(super) fn into_staged(self) -> Option<Staged> {
        match self {
            Prepared::Device(_) => None,
            Prepared::Host(s) => Some(s),
        }
    }
}

/// The launch information of prepared arguments, in order.
pub(super) fn infos<'a>(p: &'a [Prepared<'_>]) -> Vec<ArgInfo<'a>> {
    p.iter().map(Prepared::info).collect()
}

/// Copies a host output's device copy back into it (`dst` has the copy's shape; any layout),
/// in `stream`'s order: returns once the values have arrived.
pub(super) fn copy_back<T: DeviceCopy, S: DataMut<Elem = T>, D: Dimension + 'static>(
    staged: Option<Staged>,
    dst: &mut ArrayBase<S, D>,
    stream: &Stream,
) -> Result<()> {
    let staged = staged
        .ok_or_else(|| Error::usage("elementwise: internal: a host output has no device copy"))?;
    let a = staged.array::<T, D>()?;
    match dst.as_slice_mut() {
        Some(s) => a.copy_to_host_async(s, stream),
        None => {
            let v = a.to_vec_async(stream)?;
            dst.iter_mut().zip(v).for_each(|(d, s)| *d = s);
            Ok(())
        }
    }
}

/// The host-array arguments for element type `$e` (generic parameters `$g`, with a trailing
/// comma), whose output the closure returns as `$o`, seen by the kernel as `$parts` scalars.
macro_rules! host_args {
    ([$($g:tt)*] $e:ty, $o:ty, $parts:expr) => {
        /// A host slice input (1-D): copied to a temporary device array.
        impl<$($g)*> EwArg<Elem<$e>> for &[$e] {
            type Dim = Ix1;
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::upload::<$e, [$e]>(stream, &self[..], $parts)?))
            }
        }

        /// A host `Vec` input (1-D): copied to a temporary device array.
        impl<$($g)*> EwArg<Elem<$e>> for &Vec<$e> {
            type Dim = Ix1;
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::upload::<$e, [$e]>(stream, &self[..], $parts)?))
            }
        }

        /// An ndarray array or view input (any shape and layout; a strided one is gathered on
        /// the host): copied to a temporary device array.
        impl<$($g)* S: Data<Elem = $e>, D: Dimension + 'static> EwArg<Elem<$e>>
            for &ArrayBase<S, D>
        {
            type Dim = D;
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::upload::<$e, _>(stream, *self, $parts)?))
            }
        }

        /// An ndarray view passed by value (`a.t()`, `a.slice(s![..;2])`), as `&view`.
        impl<$($g)* D: Dimension + 'static> EwArg<Elem<$e>> for ArrayView<'_, $e, D> {
            type Dim = D;
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::upload::<$e, _>(stream, self, $parts)?))
            }
        }

        /// A host slice output (1-D): the kernel writes a temporary device array, copied back
        /// after the launch.
        impl<$($g)*> EwOutArg<$o> for &mut [$e] {
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::alloc::<$e, Ix1>(stream, Ix1(self.len()), $parts)?))
            }
            fn finish(&mut self, stream: &Stream, staged: Option<Staged>) -> Result<()> {
                copy_back(staged, &mut ArrayViewMut1::from(&mut **self), stream)
            }
        }

        /// A host `Vec` output (1-D), as a slice.
        impl<$($g)*> EwOutArg<$o> for &mut Vec<$e> {
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::alloc::<$e, Ix1>(stream, Ix1(self.len()), $parts)?))
            }
            fn finish(&mut self, stream: &Stream, staged: Option<Staged>) -> Result<()> {
                copy_back(staged, &mut ArrayViewMut1::from(&mut self[..]), stream)
            }
        }

        /// A mutable ndarray array or view output (any shape and layout): the kernel writes a
        /// temporary device array, copied back (scattered into a strided view) after the launch.
        impl<$($g)* S: DataMut<Elem = $e>, D: Dimension + 'static> EwOutArg<$o>
            for &mut ArrayBase<S, D>
        {
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::alloc::<$e, D>(stream, self.raw_dim(), $parts)?))
            }
            fn finish(&mut self, stream: &Stream, staged: Option<Staged>) -> Result<()> {
                copy_back(staged, &mut **self, stream)
            }
        }

        /// A mutable ndarray view passed by value (`a.view_mut()`, `a.slice_mut(s![.., 1])`),
        /// as `&mut view`.
        impl<$($g)* D: Dimension + 'static> EwOutArg<$o> for ArrayViewMut<'_, $e, D> {
            const HOST: bool = true;
            fn prepare(&self, stream: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Host(Staged::alloc::<$e, D>(stream, self.raw_dim(), $parts)?))
            }
            fn finish(&mut self, stream: &Stream, staged: Option<Staged>) -> Result<()> {
                copy_back(staged, self, stream)
            }
        }
    };
}
host_args!([T: ScalarType,] T, Expr<T>, 1);
host_args!([] Complex<f32>, CExpr<f32>, 2);
host_args!([] Complex<f64>, CExpr<f64>, 2);
