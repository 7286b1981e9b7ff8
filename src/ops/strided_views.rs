//! Copies of strided views (`StridedView::to_host`, `copy_from_host`, `fill`, ...): to and from
//! host arrays of any layout, and between strided views on the device. The methods live here,
//! beside the kernels they launch (`strided_copy`), not in `memory` (which is below the
//! builder in the layering).
//!
//! A view whose elements are contiguous in C order is copied as an ordinary array. Otherwise a
//! copy to the host reads the memory the view spans when that is at most twice the view's size
//! and picks the elements out on the host; a sparser view is first gathered into a contiguous
//! temporary on the device (a kernel). A copy from the host writes the span directly when the
//! view's elements fill it (any order), else goes through a contiguous temporary and a kernel.
//! Device-to-device copies use one `cuMemcpy` when both sides have the same dense layout and a
//! kernel otherwise (through a temporary when the two views' memory overlaps).

use ndarray::{Array, ArrayBase, DataMut, Dimension, Ix1};

use super::strided_copy::{copy_strided, fill_strided};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::layout::{for_each_offset, Layout};
use crate::memory::slice::{check_shape, check_stream, value_bits};
use crate::memory::transfer;
use crate::memory::{
    AsStrided, DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut,
    HostSource, StridedArray, StridedView, StridedViewMut,
};
use crate::stream::Stream;

fn to_array<T, D: Dimension>(dim: D, v: Vec<T>) -> Result<Array<T, D>> {
    Array::from_shape_vec(dim, v).map_err(|e| Error::usage(format!("building the host array: {e}")))
}

/// Runs `f` on `stream`, or on the context's default stream followed by a wait.
fn on_stream<R>(
    ctx: &Context,
    stream: Option<&Stream>,
    f: impl FnOnce(&Stream) -> Result<R>,
) -> Result<R> {
    match stream {
        Some(s) => {
            check_stream(ctx, s)?;
            f(s)
        }
        None => {
            crate::graph::refuse("a synchronous copy or fill of a strided view")?;
            let s = ctx.default_stream();
            let r = f(&s)?;
            s.synchronize()?;
            Ok(r)
        }
    }
}

/// A contiguous C-order copy of the view, made on `stream`.
fn gather<T: DeviceCopy, D: Dimension>(
    stream: &Stream,
    lay: &Layout<D>,
) -> Result<DeviceArray<T, D>> {
    let tmp = DeviceArray::<T, D>::alloc_ordered(stream, lay.dim.clone())?;
    let dst = Layout::c_order(tmp.device_ptr(), lay.dim.clone());
    copy_strided(stream, lay, &dst, std::mem::size_of::<T>())?;
    Ok(tmp)
}

fn read<T: DeviceCopy, D: Dimension>(
    ctx: &Context,
    lay: &Layout<D>,
    stream: Option<&Stream>,
) -> Result<Array<T, D>> {
    let n = lay.len();
    let size = std::mem::size_of::<T>();
    if let Some(s) = stream {
        check_stream(ctx, s)?;
    }
    if n == 0 {
        return to_array(lay.dim.clone(), Vec::new());
    }
    if lay.is_standard() {
        let v = DeviceView::<T, D>::from_parts(ctx, lay.ptr, lay.dim.clone());
        return match stream {
            Some(s) => v.to_array_async(s),
            None => v.to_array(),
        };
    }
    let (base, count, off0) = lay.extent(size);
    if count <= 2 * n {
        let span = DeviceView::<T, Ix1>::from_parts(ctx, base, Ix1(count));
        let span = match stream {
            Some(s) => span.to_vec_async(s)?,
            None => span.to_vec()?,
        };
        let mut out = Vec::with_capacity(n);
        for_each_offset(lay.dim.slice(), lay.strides.slice(), |o| {
            out.push(span[(off0 as isize + o) as usize])
        });
        return to_array(lay.dim.clone(), out);
    }
    let default;
    let s = match stream {
        Some(s) => s,
        None => {
            crate::graph::refuse("a synchronous copy of a strided view")?;
            default = ctx.default_stream();
            &default
        }
    };
    let tmp = gather::<T, D>(s, lay)?;
    tmp.to_array_async(s)
}

fn write_host<T: DeviceCopy, D: Dimension, H: HostSource<T> + ?Sized>(
    ctx: &Context,
    lay: &Layout<D>,
    src: &H,
    stream: Option<&Stream>,
) -> Result<()> {
    check_shape("copy_from_host", lay.dim.slice(), src.host_dim().slice())?;
    if let Some(s) = stream {
        check_stream(ctx, s)?;
    }
    let n = lay.len();
    if n == 0 {
        return Ok(());
    }
    let size = std::mem::size_of::<T>();
    if lay.is_standard() {
        let mut v = DeviceViewMut::<T, D>::from_parts(ctx, lay.ptr, lay.dim.clone());
        return match stream {
            Some(s) => v.copy_from_host_async(src, s),
            None => v.copy_from_host(src),
        };
    }
    let (base, count, off0) = lay.extent(size);
    if count == n {
        // The elements fill their span: place them in memory order on the host, one copy.
        let span = src.with_c_order(|data| {
            let mut span = data.to_vec();
            let mut i = 0;
            for_each_offset(lay.dim.slice(), lay.strides.slice(), |o| {
                span[(off0 as isize + o) as usize] = data[i];
                i += 1;
            });
            span
        });
        let mut v = DeviceViewMut::<T, Ix1>::from_parts(ctx, base, Ix1(count));
        return match stream {
            Some(s) => v.copy_from_host_async(&span, s),
            None => v.copy_from_host(&span),
        };
    }
    on_stream(ctx, stream, |s| {
        let mut tmp = DeviceArray::<T, D>::alloc_ordered(s, lay.dim.clone())?;
        tmp.copy_from_host_async(src, s)?;
        let from = Layout::c_order(tmp.device_ptr(), lay.dim.clone());
        copy_strided(s, &from, lay, size)
    })
}

/// Whether the memory two views span overlaps.
fn overlaps<D: Dimension>(a: &Layout<D>, b: &Layout<D>, size: usize) -> bool {
    let (ab, ac, _) = a.extent(size);
    let (bb, bc, _) = b.extent(size);
    let (ae, be) = (ab + (ac * size) as u64, bb + (bc * size) as u64);
    ac > 0 && bc > 0 && ab < be && bb < ae
}

fn write_device<T: DeviceCopy, D: Dimension>(
    ctx: &Context,
    dst: &Layout<D>,
    src: &StridedView<'_, T, D>,
    stream: Option<&Stream>,
) -> Result<()> {
    check_shape("copy_from_device", dst.dim.slice(), src.shape())?;
    ctx.check_same(src.context(), "the source array")?;
    let srcl = src.layout();
    let n = dst.len();
    let size = std::mem::size_of::<T>();
    if n == 0 {
        return Ok(());
    }
    if let Some(s) = stream {
        check_stream(ctx, s)?;
    }
    let overlap = overlaps(dst, srcl, size);
    if dst.is_standard() && srcl.is_standard() {
        return transfer::dtod(ctx, dst.ptr, srcl.ptr, n * size, stream);
    }
    let (db, dc, _) = dst.extent(size);
    let (sb, _, _) = srcl.extent(size);
    if !overlap && dc == n && dst.strides == srcl.strides {
        // The same dense layout on both sides: the spans are copies of each other.
        return transfer::dtod(ctx, db, sb, n * size, stream);
    }
    on_stream(ctx, stream, |s| {
        if overlap {
            let tmp = gather::<T, D>(s, srcl)?;
            let from = Layout::c_order(tmp.device_ptr(), dst.dim.clone());
            copy_strided(s, &from, dst, size)
        } else {
            copy_strided(s, srcl, dst, size)
        }
    })
}

macro_rules! strided_reads {
    ($name:ident) => {
        impl<T: DeviceCopy, D: Dimension> $name<'_, T, D> {
            /// Copies the elements to a new host array of the same shape, in logical (C) order
            /// whatever the strides.
            pub fn to_array(&self) -> Result<Array<T, D>> {
                read(self.context(), self.layout(), None)
            }
            /// Copies the elements to a new host array, ordered on `stream`; returns when the
            /// data has arrived.
            pub fn to_array_async(&self, stream: &Stream) -> Result<Array<T, D>> {
                read(self.context(), self.layout(), Some(stream))
            }
            /// Copies the elements to a new `Vec` in logical C order.
            pub fn to_vec(&self) -> Result<Vec<T>> {
                Ok(self.to_array()?.into_iter().collect())
            }
            /// Copies the elements into a host array of the same shape (any layout).
            pub fn copy_to_host_array<S: DataMut<Elem = T>>(
                &self,
                dst: &mut ArrayBase<S, D>,
            ) -> Result<()> {
                check_shape("copy_to_host_array", self.shape(), dst.shape())?;
                let a = self.to_array()?;
                dst.zip_mut_with(&a, |d, s| *d = *s);
                Ok(())
            }
            /// A new contiguous C-order device array holding the elements, made on `stream`
            /// (a kernel for a non-contiguous view).
            pub fn to_contiguous(&self, stream: &Stream) -> Result<DeviceArray<T, D>> {
                check_stream(self.context(), stream)?;
                let lay = self.layout();
                if lay.is_standard() {
                    let a = DeviceArray::<T, D>::alloc_ordered(stream, lay.dim.clone())?;
                    let n = lay.len() * std::mem::size_of::<T>();
                    if n > 0 {
                        transfer::dtod(self.context(), a.device_ptr(), lay.ptr, n, Some(stream))?;
                    }
                    return Ok(a);
                }
                gather::<T, D>(stream, lay)
            }
        }
    };
}
strided_reads!(StridedView);
strided_reads!(StridedViewMut);

impl<T: DeviceCopy, D: Dimension> StridedViewMut<'_, T, D> {
    /// Copies host data of the same shape in (a slice, `Vec`, or ndarray array or view of any
    /// layout), element `[i, j, ...]` to element `[i, j, ...]`.
    pub fn copy_from_host<H: HostSource<T> + ?Sized>(&mut self, src: &H) -> Result<()> {
        write_host(self.context(), self.layout(), src, None)
    }
    /// The same, ordered on `stream` (returns once `src` may be reused).
    pub fn copy_from_host_async<H: HostSource<T> + ?Sized>(
        &mut self,
        src: &H,
        stream: &Stream,
    ) -> Result<()> {
        write_host(self.context(), self.layout(), src, Some(stream))
    }
    /// Copies another device array or view of the same shape in (any strides on either side).
    pub fn copy_from_device<S: AsStrided<T, Dim = D> + ?Sized>(&mut self, src: &S) -> Result<()> {
        write_device(self.context(), self.layout(), &src.as_strided(), None)
    }
    /// The same, ordered on `stream`.
    pub fn copy_from_device_async<S: AsStrided<T, Dim = D> + ?Sized>(
        &mut self,
        src: &S,
        stream: &Stream,
    ) -> Result<()> {
        write_device(
            self.context(),
            self.layout(),
            &src.as_strided(),
            Some(stream),
        )
    }
}

impl<T: DeviceCopy, D: Dimension> StridedViewMut<'_, T, D> {
    /// Sets every element of the view to `value` (elements of 1, 2, 4 or 8 bytes; a kernel,
    /// the elements between the view's untouched).
    pub fn fill(&mut self, value: T) -> Result<()> {
        fill_view(self.context(), self.layout(), value, None)
    }
    /// The same, ordered on `stream`.
    pub fn fill_async(&mut self, value: T, stream: &Stream) -> Result<()> {
        fill_view(self.context(), self.layout(), value, Some(stream))
    }
}

fn fill_view<T: DeviceCopy, D: Dimension>(
    ctx: &Context,
    lay: &Layout<D>,
    value: T,
    stream: Option<&Stream>,
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(Error::usage(format!(
            "fill supports elements of 1, 2, 4 or 8 bytes, not {size}"
        )));
    }
    let bits = value_bits(&value);
    on_stream(ctx, stream, |s| fill_strided(s, lay, bits, size))
}

impl<T: DeviceCopy, D: Dimension> StridedArray<T, D> {
    /// Copies the elements to a new host array of the same shape (logical order).
    pub fn to_array(&self) -> Result<Array<T, D>> {
        self.view().to_array()
    }
    /// Copies host data of the same shape in (any layout).
    pub fn copy_from_host<H: HostSource<T> + ?Sized>(&mut self, src: &H) -> Result<()> {
        self.view_mut().copy_from_host(src)
    }
}
