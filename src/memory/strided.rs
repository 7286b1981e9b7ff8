//! Strided views of device memory: any element strides, as ndarray's views have (steps,
//! transposes, reversed axes, sub-blocks, Fortran order), and [`StridedArray`], an owned array
//! in any memory order.
//!
//! Strides count elements and may be negative (a reversed axis). Kernels take strided views
//! through [`NdStrided`](crate::codegen::NdStrided) parameters, [`Elementwise`](crate::ops::Elementwise)
//! takes them as inputs and outputs (its strided path, without copies), and the reductions
//! gather them into a contiguous temporary first (see [`StridedReduceOps`](crate::ops::StridedReduceOps)).

use std::fmt;
use std::marker::PhantomData;

use ndarray::{Axis, Dimension, IntoDimension, Ix1, IxDyn, Slice, SliceArg};

use super::array::{DeviceArray, DeviceView, DeviceViewMut};
use super::element::{AnyBitPattern, DeviceCopy};
use super::layout::Layout;
use super::slice::{DeviceSlice, DeviceSliceMut, Sealed};
use crate::context::Context;
use crate::error::Result;

/// A borrowed, read-only view of device memory with any element strides: the result of
/// [`DeviceSlice::strided`], [`slice_axis`](DeviceSlice::slice_axis), [`t`](DeviceSlice::t),
/// `s![]` slicing ([`StridedView::slice`]) and friends.
///
/// ```no_run
/// use cudajit::prelude::*;
/// use ndarray::s;
/// # fn main() -> cudajit::Result<()> {
/// let ctx = Context::new(0)?;
/// let a = ctx.to_device(&ndarray::Array2::<f32>::zeros((6, 8)))?;
/// let block = a.strided().slice(s![1..5, ..;2])?; // rows 1..5, every other column
/// let host = block.t().to_array()?; // the transposed block, shape (4, 4)
/// # Ok(()) }
/// ```
pub struct StridedView<'a, T: DeviceCopy, D: Dimension = Ix1> {
    ctx: &'a Context,
    lay: Layout<D>,
    _t: PhantomData<&'a T>,
}

/// A borrowed, writable view of device memory with any element strides; see [`StridedView`].
/// Its elements never overlap (every constructor keeps distinct indices at distinct addresses).
pub struct StridedViewMut<'a, T: DeviceCopy, D: Dimension = Ix1> {
    ctx: &'a Context,
    lay: Layout<D>,
    _t: PhantomData<&'a mut T>,
}

/// Device arrays and views that can be seen as a [`StridedView`]: every device array and view.
pub trait AsStrided<T: DeviceCopy>: Sealed {
    /// The shape's dimension type.
    type Dim: Dimension;
    /// A strided view of the whole array or view.
    fn as_strided(&self) -> StridedView<'_, T, Self::Dim>;
}

/// Writable device arrays and views that can be seen as a [`StridedViewMut`].
pub trait AsStridedMut<T: DeviceCopy>: AsStrided<T> {
    /// A writable strided view of the whole array or view.
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, Self::Dim>;
}

macro_rules! contiguous_as_strided {
    ($($ty:ty),*) => {$(
        impl<T: DeviceCopy, D: Dimension> AsStrided<T> for $ty {
            type Dim = D;
            fn as_strided(&self) -> StridedView<'_, T, D> {
                self.strided()
            }
        }
    )*};
}
contiguous_as_strided!(DeviceArray<T, D>, DeviceView<'_, T, D>, DeviceViewMut<'_, T, D>);

impl<T: DeviceCopy, D: Dimension> AsStridedMut<T> for DeviceArray<T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.strided_mut()
    }
}
impl<T: DeviceCopy, D: Dimension> AsStridedMut<T> for DeviceViewMut<'_, T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.strided_mut()
    }
}

macro_rules! strided_view_common {
    ($name:ident) => {
        impl<'a, T: DeviceCopy, D: Dimension> $name<'a, T, D> {
            pub(crate) fn from_layout(ctx: &'a Context, lay: Layout<D>) -> Self {
                $name {
                    ctx,
                    lay,
                    _t: PhantomData,
                }
            }

            pub(crate) fn layout(&self) -> &Layout<D> {
                &self.lay
            }

            /// The context the memory belongs to.
            pub fn context(&self) -> &'a Context {
                self.ctx
            }
            /// The device address of element `[0, ..., 0]` (not the lowest address when an
            /// axis is reversed).
            pub fn device_ptr(&self) -> u64 {
                self.lay.ptr
            }
            /// The shape as an ndarray dimension.
            pub fn dim(&self) -> &D {
                &self.lay.dim
            }
            /// The shape.
            pub fn shape(&self) -> &[usize] {
                self.lay.dim.slice()
            }
            /// The element strides (elements, not bytes; negative along reversed axes).
            pub fn strides(&self) -> Vec<isize> {
                self.lay.strides_isize()
            }
            /// The number of dimensions.
            pub fn ndim(&self) -> usize {
                self.lay.dim.ndim()
            }
            /// The number of elements.
            pub fn len(&self) -> usize {
                self.lay.len()
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Whether the elements are contiguous in C order (then
            /// [`as_contiguous`](Self::as_contiguous) gives an ordinary view).
            pub fn is_standard_layout(&self) -> bool {
                self.lay.is_standard()
            }
            /// A contiguous view of the same elements, if they are contiguous in C order.
            pub fn as_contiguous(&self) -> Option<DeviceView<'_, T, D>> {
                self.is_standard_layout().then(|| {
                    let ptr = if self.is_empty() { 0 } else { self.lay.ptr };
                    DeviceView::from_parts(self.ctx, ptr, self.lay.dim.clone())
                })
            }
            /// A read-only strided view of the same elements.
            pub fn view(&self) -> StridedView<'_, T, D> {
                StridedView::from_layout(self.ctx, self.lay.clone())
            }

            /// Slices one axis with a step (ndarray's `slice_axis`; a negative step walks the
            /// range backwards). Out-of-range bounds and a zero step are errors.
            pub fn slice_axis(self, axis: Axis, slice: Slice) -> Result<Self> {
                let lay = self.lay.slice_axis(axis, slice, std::mem::size_of::<T>())?;
                Ok($name::from_layout(self.ctx, lay))
            }
            /// Slices every axis with ndarray's `s![]` macro: ranges with steps (`s![1..7;2,
            /// ..;-1]`), indices (which remove the axis) and new axes.
            pub fn slice<I: SliceArg<D>>(self, info: I) -> Result<$name<'a, T, I::OutDim>> {
                let lay = self.lay.slice_each(&info, std::mem::size_of::<T>())?;
                Ok($name::from_layout(self.ctx, lay))
            }
            /// The sub-view at `index` along `axis`, with that axis removed (a row or column).
            pub fn index_axis(self, axis: Axis, index: usize) -> Result<$name<'a, T, D::Smaller>>
            where
                D: ndarray::RemoveAxis,
            {
                let lay = self.lay.index_axis(axis, index, std::mem::size_of::<T>())?;
                Ok($name::from_layout(self.ctx, lay))
            }
            /// The transpose: the axes in reverse order.
            pub fn reversed_axes(self) -> Self {
                $name::from_layout(self.ctx, self.lay.reversed_axes())
            }
            /// The axes in the order `axes` (a permutation of `0..ndim`; anything else is an
            /// error).
            pub fn permuted_axes(self, axes: impl IntoDimension<Dim = D>) -> Result<Self> {
                let axes = axes.into_dimension();
                let lay = self.lay.permuted_axes(axes.slice())?;
                Ok($name::from_layout(self.ctx, lay))
            }
            /// The same elements with `axis` walked backwards (a negative stride; ndarray's
            /// `invert_axis`).
            pub fn invert_axis(self, axis: Axis) -> Result<Self> {
                let lay = self.lay.invert_axis(axis, std::mem::size_of::<T>())?;
                Ok($name::from_layout(self.ctx, lay))
            }
            /// The same view with a dynamic dimension type.
            pub fn into_dyn(self) -> $name<'a, T, IxDyn> {
                $name::from_layout(self.ctx, self.lay.into_dyn())
            }
        }

        impl<T: DeviceCopy, D: Dimension> Sealed for $name<'_, T, D> {}

        impl<T: DeviceCopy, D: Dimension> AsStrided<T> for $name<'_, T, D> {
            type Dim = D;
            fn as_strided(&self) -> StridedView<'_, T, D> {
                self.view()
            }
        }

        impl<T: DeviceCopy, D: Dimension> fmt::Debug for $name<'_, T, D> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "{}<{}>(shape {:?}, strides {:?}, device {})",
                    stringify!($name),
                    std::any::type_name::<T>(),
                    self.shape(),
                    self.strides(),
                    self.ctx.device().ordinal()
                )
            }
        }
    };
}
strided_view_common!(StridedView);
strided_view_common!(StridedViewMut);

impl<T: DeviceCopy, D: Dimension> Clone for StridedView<'_, T, D> {
    fn clone(&self) -> Self {
        StridedView::from_layout(self.ctx, self.lay.clone())
    }
}

impl<'a, T: DeviceCopy, D: Dimension> StridedView<'a, T, D> {
    /// The transpose (as ndarray's `t()`).
    pub fn t(&self) -> Self {
        self.clone().reversed_axes()
    }
}

impl<'a, T: DeviceCopy, D: Dimension> StridedViewMut<'a, T, D> {
    /// A writable view of the same elements for a shorter borrow (to slice it and keep it).
    pub fn reborrow(&mut self) -> StridedViewMut<'_, T, D> {
        StridedViewMut::from_layout(self.ctx, self.lay.clone())
    }
    /// A contiguous writable view of the same elements, if they are contiguous in C order.
    pub fn as_contiguous_mut(&mut self) -> Option<DeviceViewMut<'_, T, D>> {
        self.is_standard_layout().then(|| {
            let ptr = if self.is_empty() { 0 } else { self.lay.ptr };
            DeviceViewMut::from_parts(self.ctx, ptr, self.lay.dim.clone())
        })
    }
}

impl<T: DeviceCopy, D: Dimension> AsStridedMut<T> for StridedViewMut<'_, T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.reborrow()
    }
}

/// An owned device array in any memory order: Fortran order ([`Context::zeros_f`]) or the
/// layout of a host array ([`Context::to_device_layout`]). Its views are [`StridedView`]s.
pub struct StridedArray<T: DeviceCopy, D: Dimension = Ix1> {
    data: DeviceArray<T, Ix1>,
    /// Element 0's index in `data`.
    offset: usize,
    dim: D,
    strides: D,
}

impl<T: DeviceCopy, D: Dimension> StridedArray<T, D> {
    fn layout(&self) -> Layout<D> {
        let ptr = self.data.device_ptr() + (self.offset * std::mem::size_of::<T>()) as u64;
        Layout {
            ptr,
            dim: self.dim.clone(),
            strides: self.strides.clone(),
        }
    }
    /// A read-only view of the whole array.
    pub fn view(&self) -> StridedView<'_, T, D> {
        StridedView::from_layout(self.data.context(), self.layout())
    }
    /// A writable view of the whole array.
    pub fn view_mut(&mut self) -> StridedViewMut<'_, T, D> {
        let lay = self.layout();
        StridedViewMut::from_layout(self.data.context(), lay)
    }
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }
    /// The element strides.
    pub fn strides(&self) -> Vec<isize> {
        self.layout().strides_isize()
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }
    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The memory holding the elements, in memory order.
    pub fn storage(&self) -> &DeviceArray<T, Ix1> {
        &self.data
    }
}

impl<T: DeviceCopy, D: Dimension> Sealed for StridedArray<T, D> {}
impl<T: DeviceCopy, D: Dimension> AsStrided<T> for StridedArray<T, D> {
    type Dim = D;
    fn as_strided(&self) -> StridedView<'_, T, D> {
        self.view()
    }
}
impl<T: DeviceCopy, D: Dimension> AsStridedMut<T> for StridedArray<T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.view_mut()
    }
}

impl<T: DeviceCopy, D: Dimension> fmt::Debug for StridedArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "StridedArray<{}>(shape {:?}, strides {:?}, device {})",
            std::any::type_name::<T>(),
            self.shape(),
            self.strides(),
            self.data.context().device().ordinal()
        )
    }
}

/// Fortran-order (column-major) element strides of `shape`.
fn f_strides<D: Dimension>(dim: &D) -> D {
    let mut s = dim.clone();
    let mut acc = 1usize;
    for (st, &d) in s.slice_mut().iter_mut().zip(dim.slice()) {
        *st = acc;
        acc *= d;
    }
    s
}

impl Context {
    /// A new Fortran-order (column-major) array of shape `shape`, every byte zero (NumPy's
    /// `zeros(order='F')`).
    pub fn zeros_f<T: DeviceCopy, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<StridedArray<T, Sh::Dim>> {
        let dim = shape.into_dimension();
        let mut data = DeviceArray::alloc_raw(self, Ix1(dim.size()))?;
        data.memset(0)?;
        let strides = f_strides(&dim);
        Ok(StridedArray {
            data,
            offset: 0,
            dim,
            strides,
        })
    }

    /// A new, uninitialised Fortran-order array of shape `shape`.
    pub fn alloc_f<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<StridedArray<T, Sh::Dim>> {
        let dim = shape.into_dimension();
        let data = DeviceArray::alloc_raw(self, Ix1(dim.size()))?;
        let strides = f_strides(&dim);
        Ok(StridedArray {
            data,
            offset: 0,
            dim,
            strides,
        })
    }

    /// Copies a host array to a new device array with the same memory order (Numba's
    /// `to_device` of a Fortran-order array): a host array whose elements are contiguous in any
    /// order (Fortran order, a `.t()` view, reversed axes) keeps its strides; any other is
    /// copied in C order.
    pub fn to_device_layout<T: DeviceCopy, S: ndarray::Data<Elem = T>, D: Dimension>(
        &self,
        host: &ndarray::ArrayBase<S, D>,
    ) -> Result<StridedArray<T, D>> {
        let dim = host.raw_dim();
        if let Some(mem) = host.as_slice_memory_order() {
            let mut strides = dim.clone();
            for (s, &h) in strides.slice_mut().iter_mut().zip(host.strides()) {
                *s = h as usize;
            }
            let (lo, _) = super::layout::span(dim.slice(), strides.slice());
            let data = self.to_device(mem)?;
            let offset = if dim.size() == 0 { 0 } else { (-lo) as usize };
            return Ok(StridedArray {
                data,
                offset,
                dim,
                strides,
            });
        }
        let data = self.to_device(&host.iter().copied().collect::<Vec<T>>())?;
        let c = Layout::c_order(0, dim);
        Ok(StridedArray {
            data,
            offset: 0,
            dim: c.dim,
            strides: c.strides,
        })
    }
}
