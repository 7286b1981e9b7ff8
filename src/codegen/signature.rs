//! A kernel's parameter list as a Rust type, and the launch arguments each parameter accepts.
//!
//! `Kernel<(&[f32], &mut [f32], f32)>` declares a read-only 1-D array, a writable 1-D array and
//! a scalar; its launch takes `(&x, &mut y, 2.0)` where `x`, `y` are device arrays (or views) of
//! `f32`. Anything else does not compile.

use std::ffi::c_void;

use ndarray::Dim;

use super::array::{DArray, ReadOnly, ReadWrite};
use super::builder::with_state;
use super::expr::Expr;
use super::scalar::Scalar;
use crate::context::Context;
use crate::error::{Error, LaunchError, Result};
use crate::ir::{ArrayRef, Op, Param};
use crate::memory::{DeviceSlice, DeviceSliceMut};

/// Most 8-byte argument slots one launch can take (each array takes 1 + its dimensions).
pub const MAX_ARG_SLOTS: usize = 64;

/// Most tensor maps (128 bytes each, passed by value) one launch can take.
pub const MAX_TENSOR_MAPS: usize = 8;

/// One tensor map's bytes as a kernel receives them (`CUtensorMap`: 128 bytes, aligned to 64).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct MapBytes(pub(crate) [u8; 128]);

/// The launch-time values of a kernel's parameters, kept on the stack.
pub struct ArgBuffer<'c> {
    slots: [u64; MAX_ARG_SLOTS],
    len: usize,
    /// Tensor maps; a slot whose bit is set in `map_slots` holds the index of its map here.
    maps: [MapBytes; MAX_TENSOR_MAPS],
    n_maps: usize,
    map_slots: u64,
    ctx: &'c Context,
    /// Required byte alignment of each parameter's array (0: none).
    align: &'c [u32],
    /// Index of the next parameter.
    param: usize,
    /// The stream of a launch (host arrays are copied on it); `None` for a graph node.
    pub(super) stream: Option<&'c crate::stream::Stream>,
    /// Device copies of host-array arguments (empty, never allocated, without them).
    pub(super) staged: Vec<Box<dyn std::any::Any>>,
    /// The next staged copy the after-launch pass reaches.
    pub(super) next_staged: usize,
}

impl<'c> ArgBuffer<'c> {
    pub(crate) fn new(ctx: &'c Context, align: &'c [u32]) -> Self {
        ArgBuffer {
            slots: [0; MAX_ARG_SLOTS],
            len: 0,
            maps: [MapBytes([0; 128]); MAX_TENSOR_MAPS],
            n_maps: 0,
            map_slots: 0,
            ctx,
            align,
            param: 0,
            stream: None,
            staged: Vec::new(),
            next_staged: 0,
        }
    }

    /// A buffer for a launch on `stream` (where host arrays may be copied).
    #[inline]
    pub(crate) fn for_launch(stream: &'c crate::stream::Stream, align: &'c [u32]) -> Self {
        let mut b = Self::new(stream.context(), align);
        b.stream = Some(stream);
        b
    }

    pub(crate) fn push_scalar(&mut self, v: u64) -> Result<()> {
        self.param += 1;
        self.push(v)
    }

    fn push(&mut self, v: u64) -> Result<()> {
        if self.len == MAX_ARG_SLOTS {
            return Err(Error::launch_argument(format!(
                "a kernel launch takes at most {MAX_ARG_SLOTS} argument slots (an n-D array takes n + 1)"
            )));
        }
        self.slots[self.len] = v;
        self.len += 1;
        Ok(())
    }

    pub(crate) fn push_array<T, X: DeviceSlice<T> + ?Sized>(&mut self, a: &X) -> Result<()>
    where
        T: crate::memory::DeviceCopy,
    {
        self.push_address(a.context(), a.device_ptr())?;
        for &d in a.shape() {
            self.push(d as u64)?;
        }
        Ok(())
    }

    /// Pushes an array as a flat 1-D parameter (its address and element count), checking its
    /// context and the kernel's alignment need for this parameter.
    pub(crate) fn push_flat(&mut self, ctx: &Context, ptr: u64, len: usize) -> Result<()> {
        self.push_address(ctx, ptr)?;
        self.push(len as u64)
    }

    /// Pushes the address of the next parameter's array after checking its context and the
    /// alignment the kernel's vector accesses need.
    fn push_address(&mut self, ctx: &Context, ptr: u64) -> Result<()> {
        self.ctx
            .check_same_for_launch(ctx, "a kernel's array argument")?;
        let align = self.align.get(self.param).copied().unwrap_or(0) as u64;
        if align > 1 && ptr % align != 0 {
            return Err(Error::Launch(LaunchError::Misaligned { message: format!(
                "kernel argument {}: the kernel reads or writes this array in {align}-byte vectors (or cp.async copies), but it \
                 starts at address {ptr:#x}, which is not {align}-byte aligned (a view that starts mid-array?)",
                self.param
            )}));
        }
        self.param += 1;
        self.push(ptr)
    }

    /// Pushes a 64-bit object handle (a texture or surface object) after checking its context.
    pub(crate) fn push_handle(&mut self, ctx: &Context, what: &str, handle: u64) -> Result<()> {
        self.ctx.check_same_for_launch(ctx, what)?;
        self.push_scalar(handle)
    }

    /// Pushes a tensor map (its 128 bytes, passed by value) after checking its context.
    pub(crate) fn push_tensor_map(&mut self, ctx: &Context, bytes: &[u8; 128]) -> Result<()> {
        self.ctx
            .check_same_for_launch(ctx, "a kernel's tensor-map argument")?;
        if self.n_maps == MAX_TENSOR_MAPS {
            return Err(Error::launch_argument(format!(
                "a kernel launch takes at most {MAX_TENSOR_MAPS} tensor maps"
            )));
        }
        self.maps[self.n_maps] = MapBytes(*bytes);
        self.map_slots |= 1 << self.len;
        self.n_maps += 1;
        self.param += 1;
        self.push((self.n_maps - 1) as u64)
    }

    /// Calls `f` with one pointer per slot, as `cuLaunchKernel` takes them (a tensor map's
    /// slot points at its 128 bytes).
    pub(crate) fn with_params<R>(&mut self, f: impl FnOnce(*mut *mut c_void) -> R) -> R {
        let mut ptrs = [std::ptr::null_mut::<c_void>(); MAX_ARG_SLOTS];
        let maps = &mut self.maps;
        for (i, (p, s)) in ptrs
            .iter_mut()
            .zip(self.slots[..self.len].iter_mut())
            .enumerate()
        {
            *p = if self.map_slots & (1 << i) != 0 {
                (&mut maps[*s as usize] as *mut MapBytes).cast()
            } else {
                (s as *mut u64).cast()
            };
        }
        f(ptrs.as_mut_ptr())
    }
}

/// A type that can be a kernel parameter: `&[T]`, `&mut [T]`, [`NdRef`](super::NdRef),
/// [`NdMut`](super::NdMut), or a scalar.
pub trait KernelParam {
    /// What the build closure receives for it.
    type Handle;
    /// Declares the parameter in the function being built.
    fn declare() -> Self::Handle;
}

fn declare_param(p: Param) -> (u32, u32) {
    with_state(|s| (s.tag, s.add_param(p))).unwrap_or((0, 0))
}

impl<T: Scalar> KernelParam for &[T] {
    type Handle = DArray<T, 1, ReadOnly>;
    fn declare() -> Self::Handle {
        let (tag, i) = declare_param(Param::Array {
            elem: T::TY,
            ndim: 1,
            mutable: false,
        });
        DArray::new(tag, ArrayRef::Param(i))
    }
}

impl<T: Scalar> KernelParam for &mut [T] {
    type Handle = DArray<T, 1, ReadWrite>;
    fn declare() -> Self::Handle {
        let (tag, i) = declare_param(Param::Array {
            elem: T::TY,
            ndim: 1,
            mutable: true,
        });
        DArray::new(tag, ArrayRef::Param(i))
    }
}

impl<T: Scalar, const N: usize> KernelParam for DArray<T, N, ReadOnly> {
    type Handle = DArray<T, N, ReadOnly>;
    fn declare() -> Self::Handle {
        let (tag, i) = declare_param(Param::Array {
            elem: T::TY,
            ndim: N as u8,
            mutable: false,
        });
        DArray::new(tag, ArrayRef::Param(i))
    }
}

impl<T: Scalar, const N: usize> KernelParam for DArray<T, N, ReadWrite> {
    type Handle = DArray<T, N, ReadWrite>;
    fn declare() -> Self::Handle {
        let (tag, i) = declare_param(Param::Array {
            elem: T::TY,
            ndim: N as u8,
            mutable: true,
        });
        DArray::new(tag, ArrayRef::Param(i))
    }
}

macro_rules! scalar_params {
    ($($t:ty),*) => {$(
        impl KernelParam for $t {
            type Handle = Expr<$t>;
            fn declare() -> Expr<$t> {
                let (_, i) = declare_param(Param::Scalar(<$t as Scalar>::TY));
                Expr::record(Op::Param(i), &[], false)
            }
        }
        impl ArgFor<$t> for $t {
            #[inline]
            fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.push_scalar(Scalar::to_bits(*self))
            }
        }
    )*};
}
scalar_params!(
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
    bool,
    half::f16,
    half::bf16,
    crate::ir::F8E4M3,
    crate::ir::F8E5M2
);

/// A launch argument accepted for parameter type `P`: a device array or view, a scalar, or a
/// host array (copied to the device for the launch; see [`ArgBuffer`] and the guide's "Host
/// arrays at launch").
pub trait ArgFor<P> {
    /// Appends this argument's slots.
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()>;
    /// After a launch that copied host arrays, once the kernel has finished: a host array
    /// takes its device copy's values back (if the kernel may write it). Nothing for other
    /// arguments, and never called for launches without host arrays.
    #[inline]
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        let _ = buf;
        Ok(())
    }
}

impl<T: Scalar, X: DeviceSlice<T, Dim = ndarray::Ix1> + ?Sized> ArgFor<&[T]> for &X {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_array(*self)
    }
}

impl<T: Scalar, X: DeviceSliceMut<T, Dim = ndarray::Ix1> + ?Sized> ArgFor<&mut [T]> for &mut X {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_array(&**self)
    }
}

impl<T: Scalar, const N: usize, X> ArgFor<DArray<T, N, ReadOnly>> for &X
where
    X: DeviceSlice<T, Dim = Dim<[usize; N]>> + ?Sized,
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_array(*self)
    }
}

impl<T: Scalar, const N: usize, X> ArgFor<DArray<T, N, ReadWrite>> for &mut X
where
    X: DeviceSliceMut<T, Dim = Dim<[usize; N]>> + ?Sized,
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_array(&**self)
    }
}

/// The one bound for kernels generic over their element type: a [`Scalar`] that is a scalar
/// kernel parameter (the `T` of `Kernel<(&[T], T)>`, received as `Expr<T>`) and its own launch
/// argument. Every element type is one (a blanket impl); add [`Float`](super::Float),
/// [`Int`](super::Int), [`Num`](super::Num) or [`Signed`](super::Signed) for their operations:
///
/// ```no_run
/// use cudajit::codegen::{Float, Kernel, KernelScalar};
/// use cudajit::prelude::*;
///
/// fn axpy<T: KernelScalar + Float>(
///     stream: &Stream,
///     a: T,
///     x: &DeviceArray<T>,
///     y: &mut DeviceArray<T>,
/// ) -> cudajit::Result<()> {
///     let k = Kernel::<(&[T], &mut [T], T)>::build("axpy", |k, (x, y, a)| {
///         let i = k.grid1();
///         k.if_(i.lt(y.len()), |_| y.set(i, a * x.at(i) + y.at(i)));
///     })?;
///     k.launch(stream, LaunchConfig::for_num_elems(y.len(), 128)?, (x, y, a))
/// }
///
/// # fn main() -> cudajit::Result<()> {
/// let stream = Context::new(0)?.new_stream()?;
/// let (x, mut y) = (stream.to_device(&[1.0f32; 8])?, stream.to_device(&[2.0f32; 8])?);
/// axpy(&stream, 3.0f32, &x, &mut y)?;
/// let (x, mut y) = (stream.to_device(&[1.0f64; 8])?, stream.to_device(&[2.0f64; 8])?);
/// axpy(&stream, 3.0f64, &x, &mut y)?;
/// # Ok(()) }
/// ```
pub trait KernelScalar: Scalar + KernelParam<Handle = Expr<Self>> + ArgFor<Self> {}

impl<T: Scalar + KernelParam<Handle = Expr<T>> + ArgFor<T>> KernelScalar for T {}

/// A tuple of parameter types: a kernel's whole parameter list.
pub trait KernelParams {
    /// The tuple of handles the build closure receives.
    type Handles;
    /// Declares every parameter, in order.
    fn declare_all() -> Self::Handles;
}

/// A tuple of launch arguments matching the parameter list `P`.
pub trait LaunchArgs<P> {
    /// Appends every argument's slots, in order.
    fn push_all(&self, buf: &mut ArgBuffer<'_>) -> Result<()>;
    /// Runs every argument's [`ArgFor::after`], in order.
    fn after_all(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()>;
}

macro_rules! tuples {
    ($($p:ident $a:ident $i:tt),*) => {
        impl<$($p: KernelParam),*> KernelParams for ($($p,)*) {
            type Handles = ($($p::Handle,)*);
            #[allow(clippy::unused_unit)]
            fn declare_all() -> Self::Handles {
                ($($p::declare(),)*)
            }
        }
        impl<$($p,)* $($a: ArgFor<$p>),*> LaunchArgs<($($p,)*)> for ($($a,)*) {
            #[inline]
            #[allow(unused_variables)]
            fn push_all(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                $(self.$i.push(buf)?;)*
                Ok(())
            }
            #[allow(unused_variables)]
            fn after_all(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                $(self.$i.after(buf)?;)*
                Ok(())
            }
        }
    };
}
tuples!();
tuples!(P0 A0 0);
tuples!(P0 A0 0, P1 A1 1);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8, P9 A9 9, P10 A10 10, P11 A11 11);

/// Declares a scalar parameter of type `T` in the function being built (for kernels whose
/// parameter lists are made at run time, e.g. by the elementwise generator).
pub(crate) fn declare_scalar_param<T: Scalar>() -> Expr<T> {
    let (_, i) = declare_param(Param::Scalar(T::TY));
    Expr::record(Op::Param(i), &[], false)
}
