//! What every device array and view can do: copies to and from the host and between arrays,
//! fills, sub-range views.

use std::ffi::c_void;
use std::ops::{Bound, RangeBounds};

use cudajit_sys as sys;
use ndarray::{Array, ArrayBase, Axis, DataMut, Dimension, IntoDimension, Slice};

use super::array::{DeviceView, DeviceViewMut};
use super::element::DeviceCopy;
use super::host::HostSource;
use super::layout::Layout;
use super::strided::{StridedView, StridedViewMut};
use super::transfer;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::stream::Stream;

mod sealed {
    pub trait Sealed {}
}
pub(crate) use sealed::Sealed;

/// Read access to a contiguous, C-order run of `T` in device memory with a shape:
/// [`DeviceArray`](super::DeviceArray), [`DeviceView`] and [`DeviceViewMut`].
///
/// Methods ending in `_async` are ordered on the given stream. Copies into pageable host memory
/// (a `Vec` or slice) return once the data has arrived; for copies that overlap with host work
/// use [`PinnedHostBuffer`](super::PinnedHostBuffer).
///
/// Copies of 16 MiB or more between pageable host memory and the device are staged through
/// cudajit's own pinned buffers by several host threads, which is faster than the driver's
/// single-threaded staging (`CUDAJIT_STAGING=0` turns this off, `CUDAJIT_STAGING_THREADS=n`
/// sets the thread count; docs/GUIDE.md has the details).
pub trait DeviceSlice<T: DeviceCopy>: Sealed {
    /// The shape's dimension type (an ndarray `Dimension`).
    type Dim: Dimension;

    /// The context the memory belongs to.
    fn context(&self) -> &Context;
    /// The device address of the first element (0 for an empty array).
    fn device_ptr(&self) -> sys::CUdeviceptr;
    /// The shape as an ndarray dimension.
    fn dim(&self) -> &Self::Dim;

    /// The shape.
    fn shape(&self) -> &[usize] {
        self.dim().slice()
    }
    /// The number of elements.
    fn len(&self) -> usize {
        self.dim().size()
    }
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The size in bytes.
    fn num_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
    }
    /// Element strides in C order (as ndarray counts them: elements, not bytes).
    fn strides(&self) -> Vec<usize> {
        let shape = self.shape();
        let mut strides = vec![1usize; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1];
        }
        strides
    }

    /// A view of the whole array.
    fn view(&self) -> DeviceView<'_, T, Self::Dim> {
        DeviceView::from_parts(self.context(), self.device_ptr(), self.dim().clone())
    }

    /// A view of the rows `range` along the first axis (elements, for a 1-D array).
    fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T, Self::Dim>> {
        let (ptr, dim) = sub_range::<T, _>(self.device_ptr(), self.dim(), range)?;
        Ok(DeviceView::from_parts(self.context(), ptr, dim))
    }

    /// A strided view of the whole array, to slice with steps, transpose or reverse (see
    /// [`StridedView`]).
    fn strided(&self) -> StridedView<'_, T, Self::Dim> {
        StridedView::from_layout(
            self.context(),
            Layout::c_order(self.device_ptr(), self.dim().clone()),
        )
    }

    /// A strided view of one axis sliced with a step (ndarray's `slice_axis`: `Slice::new(0,
    /// None, 2)` is every other element, a negative step walks backwards).
    fn slice_axis(&self, axis: Axis, slice: Slice) -> Result<StridedView<'_, T, Self::Dim>> {
        self.strided().slice_axis(axis, slice)
    }

    /// The transpose, as a strided view.
    fn t(&self) -> StridedView<'_, T, Self::Dim> {
        self.strided().reversed_axes()
    }

    /// A view with another shape of the same number of elements (C order).
    fn reshape<Sh: IntoDimension>(&self, shape: Sh) -> Result<DeviceView<'_, T, Sh::Dim>> {
        let dim = checked_reshape(self.dim(), shape)?;
        Ok(DeviceView::from_parts(
            self.context(),
            self.device_ptr(),
            dim,
        ))
    }

    /// Copies everything to a new `Vec` in C order.
    fn to_vec(&self) -> Result<Vec<T>> {
        read_vec(self, None)
    }

    /// Copies everything to a new `Vec` in C order, ordered on `stream`.
    fn to_vec_async(&self, stream: &Stream) -> Result<Vec<T>> {
        read_vec(self, Some(stream))
    }

    /// Copies to a new ndarray `Array` of the same shape.
    fn to_array(&self) -> Result<Array<T, Self::Dim>> {
        vec_to_array(self.dim().clone(), self.to_vec()?)
    }

    /// Copies to a new ndarray `Array` of the same shape, ordered on `stream`.
    fn to_array_async(&self, stream: &Stream) -> Result<Array<T, Self::Dim>> {
        vec_to_array(self.dim().clone(), self.to_vec_async(stream)?)
    }

    /// Copies into a caller's slice of exactly [`len`](Self::len) elements.
    ///
    /// From 16 MiB on, a copy into pageable memory is staged through pinned buffers by several
    /// threads (see the [trait's documentation](DeviceSlice)); pinned memory is copied directly.
    fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        read_into(self, dst, None)
    }

    /// Copies into a caller's slice, ordered on `stream`; returns when the data has arrived
    /// (staged as for [`copy_to_host`](Self::copy_to_host)).
    fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        read_into(self, dst, Some(stream))
    }

    /// Copies into a caller's ndarray array (any layout) of the same shape.
    fn copy_to_host_array<S: DataMut<Elem = T>>(
        &self,
        dst: &mut ArrayBase<S, Self::Dim>,
    ) -> Result<()> {
        check_shape("copy_to_host_array", self.shape(), dst.shape())?;
        match dst.as_slice_mut() {
            Some(s) => self.copy_to_host(s),
            None => {
                let v = self.to_vec()?;
                dst.iter_mut().zip(v).for_each(|(d, s)| *d = s);
                Ok(())
            }
        }
    }
}

/// Write access to device memory: [`DeviceArray`](super::DeviceArray) and [`DeviceViewMut`].
pub trait DeviceSliceMut<T: DeviceCopy>: DeviceSlice<T> {
    /// A mutable view of the whole array.
    fn view_mut(&mut self) -> DeviceViewMut<'_, T, Self::Dim> {
        let (ptr, dim) = (self.device_ptr(), self.dim().clone());
        DeviceViewMut::from_parts(self.context(), ptr, dim)
    }

    /// A writable strided view of the whole array (see [`StridedViewMut`]).
    fn strided_mut(&mut self) -> StridedViewMut<'_, T, Self::Dim> {
        let lay = Layout::c_order(self.device_ptr(), self.dim().clone());
        StridedViewMut::from_layout(self.context(), lay)
    }

    /// A writable strided view of one axis sliced with a step.
    fn slice_axis_mut(
        &mut self,
        axis: Axis,
        slice: Slice,
    ) -> Result<StridedViewMut<'_, T, Self::Dim>> {
        self.strided_mut().slice_axis(axis, slice)
    }

    /// A mutable view of the rows `range` along the first axis (elements, for a 1-D array).
    fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceViewMut<'_, T, Self::Dim>> {
        let (ptr, dim) = sub_range::<T, _>(self.device_ptr(), self.dim(), range)?;
        Ok(DeviceViewMut::from_parts(self.context(), ptr, dim))
    }

    /// Copies host data of the same shape in (a slice, `Vec`, or any ndarray array or view).
    ///
    /// From 16 MiB on, a copy from pageable memory is staged through cudajit's pinned buffers by
    /// several threads, overlapping the host copies with the DMA (`CUDAJIT_STAGING=0` leaves
    /// every copy to the driver; see the [`DeviceSlice`] documentation); pinned memory is copied
    /// directly.
    fn copy_from_host<H: HostSource<T> + ?Sized>(&mut self, src: &H) -> Result<()> {
        write_from_host(self, src, None)
    }

    /// Copies host data of the same shape in, ordered on `stream`. Returns once the source
    /// may be reused: pageable memory is staged (by the driver, or from 16 MiB on by cudajit's
    /// threads, as for [`copy_from_host`](Self::copy_from_host)) before this returns, and a
    /// staged copy of 16 MiB or more has reached the device when it returns, so it waits for
    /// the stream's earlier work.
    fn copy_from_host_async<H: HostSource<T> + ?Sized>(
        &mut self,
        src: &H,
        stream: &Stream,
    ) -> Result<()> {
        write_from_host(self, src, Some(stream))
    }

    /// Copies another device array or view of the same shape in (device to device). The source
    /// may be on another device: a peer copy (`cuMemcpyPeer`), direct over NVLink or PCIe when
    /// the devices are peers, staged by the driver otherwise.
    fn copy_from_device<S: DeviceSlice<T> + ?Sized>(&mut self, src: &S) -> Result<()> {
        write_from_device(self, src, None)
    }

    /// Copies another device array of the same shape in, ordered on `stream`. The source may be
    /// on another device (`cuMemcpyPeerAsync`); the stream then belongs to either device.
    fn copy_from_device_async<S: DeviceSlice<T> + ?Sized>(
        &mut self,
        src: &S,
        stream: &Stream,
    ) -> Result<()> {
        write_from_device(self, src, Some(stream))
    }

    /// Sets every element to `value` (elements of 1, 2, 4 or 8 bytes).
    fn fill(&mut self, value: T) -> Result<()> {
        fill_with(self, value, None)
    }

    /// Sets every element to `value`, ordered on `stream`.
    fn fill_async(&mut self, value: T, stream: &Stream) -> Result<()> {
        fill_with(self, value, Some(stream))
    }

    /// Sets every byte to `byte` (`memset`).
    fn memset(&mut self, byte: u8) -> Result<()> {
        transfer::fill(
            self.context(),
            self.device_ptr(),
            byte as u64,
            1,
            self.num_bytes(),
            None,
        )
    }

    /// Sets every byte to `byte`, ordered on `stream`.
    fn memset_async(&mut self, byte: u8, stream: &Stream) -> Result<()> {
        check_stream(self.context(), stream)?;
        transfer::fill(
            self.context(),
            self.device_ptr(),
            byte as u64,
            1,
            self.num_bytes(),
            Some(stream),
        )
    }
}

pub(crate) fn check_shape(op: &'static str, expected: &[usize], actual: &[usize]) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::Shape {
            op,
            expected: expected.to_vec(),
            actual: actual.to_vec(),
        })
    }
}

/// Checks that a host slice of `host_len` elements matches an array of shape `shape`.
pub(crate) fn check_len(op: &'static str, shape: &[usize], host_len: usize) -> Result<()> {
    if host_len == shape.iter().product::<usize>() {
        Ok(())
    } else {
        Err(Error::Shape {
            op,
            expected: shape.to_vec(),
            actual: vec![host_len],
        })
    }
}

pub(crate) fn check_stream(ctx: &Context, stream: &Stream) -> Result<()> {
    ctx.check_same(stream.context(), "the stream")
}

fn sub_range<T, D: Dimension>(
    ptr: sys::CUdeviceptr,
    dim: &D,
    range: impl RangeBounds<usize>,
) -> Result<(sys::CUdeviceptr, D)> {
    let Some(&rows) = dim.slice().first() else {
        return Err(Error::usage("cannot slice a 0-dimensional array"));
    };
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => rows,
    };
    if start > end || end > rows {
        return Err(Error::usage(format!(
            "slice {start}..{end} is out of range for an axis of length {rows}"
        )));
    }
    let row_len: usize = dim.slice()[1..].iter().product();
    let mut new_dim = dim.clone();
    new_dim.slice_mut()[0] = end - start;
    let offset = (start * row_len * std::mem::size_of::<T>()) as u64;
    Ok((if end > start { ptr + offset } else { 0 }, new_dim))
}

fn checked_reshape<D: Dimension, Sh: IntoDimension>(from: &D, shape: Sh) -> Result<Sh::Dim> {
    let dim = shape.into_dimension();
    if dim.size() != from.size() {
        return Err(Error::usage(format!(
            "cannot reshape an array of shape {} ({} elements) to {} ({} elements)",
            crate::error::ShapeDisplay(from.slice()),
            from.size(),
            crate::error::ShapeDisplay(dim.slice()),
            dim.size()
        )));
    }
    Ok(dim)
}

fn vec_to_array<T, D: Dimension>(dim: D, v: Vec<T>) -> Result<Array<T, D>> {
    Array::from_shape_vec(dim, v).map_err(|e| Error::usage(format!("building the host array: {e}")))
}

fn read_vec<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
    a: &A,
    stream: Option<&Stream>,
) -> Result<Vec<T>> {
    vec_filled_by(a.len(), |dst| read_raw(a, dst.as_mut_ptr().cast(), stream))
}

fn read_into<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
    a: &A,
    dst: &mut [T],
    stream: Option<&Stream>,
) -> Result<()> {
    check_len("copy_to_host", a.shape(), dst.len())?;
    read_raw(a, dst.as_mut_ptr().cast(), stream)
}

/// Copies all of `a` to host memory at `dst` (room for `a.len()` elements, checked by the
/// callers), ordered on `stream` if given; returns when the data has arrived.
fn read_raw<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
    a: &A,
    dst: *mut c_void,
    stream: Option<&Stream>,
) -> Result<()> {
    if let Some(s) = stream {
        check_stream(a.context(), s)?;
    }
    transfer::dtoh_pageable(a.context(), dst, a.device_ptr(), a.num_bytes(), stream)?;
    if let Some(s) = stream {
        // A no-op wait for pageable memory; required if the driver overlapped the copy.
        s.synchronize()?;
    }
    Ok(())
}

fn write_from_host<T: DeviceCopy, A: DeviceSliceMut<T> + ?Sized, H: HostSource<T> + ?Sized>(
    a: &mut A,
    src: &H,
    stream: Option<&Stream>,
) -> Result<()> {
    check_shape("copy_from_host", a.shape(), src.host_dim().slice())?;
    if let Some(s) = stream {
        check_stream(a.context(), s)?;
    }
    let (ctx, ptr, bytes) = (a.context(), a.device_ptr(), a.num_bytes());
    src.with_c_order(|data| {
        transfer::htod_pageable(ctx, ptr, data.as_ptr().cast::<c_void>(), bytes, stream)
    })
}

fn write_from_device<T: DeviceCopy, A: DeviceSliceMut<T> + ?Sized, S: DeviceSlice<T> + ?Sized>(
    a: &mut A,
    src: &S,
    stream: Option<&Stream>,
) -> Result<()> {
    check_shape("copy_from_device", a.shape(), src.shape())?;
    if !a.context().same_as(src.context()) {
        // Arrays on two devices: a peer copy.
        return transfer::peer(
            a.context(),
            a.device_ptr(),
            src.context(),
            src.device_ptr(),
            a.num_bytes(),
            stream,
        );
    }
    if let Some(s) = stream {
        check_stream(a.context(), s)?;
    }
    transfer::dtod(
        a.context(),
        a.device_ptr(),
        src.device_ptr(),
        a.num_bytes(),
        stream,
    )
}

fn fill_with<T: DeviceCopy, A: DeviceSliceMut<T> + ?Sized>(
    a: &mut A,
    value: T,
    stream: Option<&Stream>,
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(Error::usage(format!(
            "fill supports elements of 1, 2, 4 or 8 bytes, not {size}"
        )));
    }
    if let Some(s) = stream {
        check_stream(a.context(), s)?;
    }
    let bits = value_bits(&value);
    transfer::fill(a.context(), a.device_ptr(), bits, size, a.len(), stream)
}

/// The bytes of a value of at most 8 bytes, in the low bytes of a `u64` (callers check the
/// size).
pub(crate) fn value_bits<T: DeviceCopy>(value: &T) -> u64 {
    let size = std::mem::size_of::<T>().min(8);
    let mut bits = 0u64;
    // SAFETY: `value` has `size` <= 8 initialised bytes (DeviceCopy types have no padding that
    // matters); they are copied into the low bytes of `bits`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (value as *const T).cast::<u8>(),
            (&mut bits as *mut u64).cast::<u8>(),
            size,
        )
    };
    bits
}

/// A new `Vec` of `n` elements written by `fill` (given the uninitialised elements, it copies
/// a device value of `T` into every one of them, or errors): for host copies assembled from
/// several device arrays (a sharded array's shards).
pub(crate) fn vec_filled_by<T: DeviceCopy>(
    n: usize,
    fill: impl FnOnce(&mut [std::mem::MaybeUninit<T>]) -> Result<()>,
) -> Result<Vec<T>> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    fill(&mut v.spare_capacity_mut()[..n])?;
    // SAFETY: `fill` returned Ok, so (its contract) it wrote all `n` elements with values the
    // device holds for `T` (an array only ever holds values of `T` or, for `AnyBitPattern`
    // types, any bytes).
    unsafe { v.set_len(n) };
    Ok(v)
}

/// Copies all of `a` into `dst` (uninitialised host memory of exactly `a.len()` elements),
/// ordered on `stream`; returns when the data has arrived.
pub(crate) fn read_into_uninit<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
    a: &A,
    dst: &mut [std::mem::MaybeUninit<T>],
    stream: &Stream,
) -> Result<()> {
    check_len("copy_to_host", a.shape(), dst.len())?;
    read_raw(a, dst.as_mut_ptr().cast(), Some(stream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Ix1, Ix2};

    #[test]
    fn shape_check_names_both_shapes() {
        assert!(check_shape("op", &[3, 4], &[3, 4]).is_ok());
        let e = check_shape("copy_from_host", &[3, 4], &[4, 3]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("copy_from_host") && text.contains("(3, 4)") && text.contains("(4, 3)"),
            "{text}"
        );
    }

    #[test]
    fn sub_ranges_along_the_first_axis() {
        let (p, d) = sub_range::<f32, _>(1000, &Ix2(10, 7), 2..5).unwrap();
        assert_eq!((p, d), (1000 + 2 * 7 * 4, Ix2(3, 7)));
        let (p, d) = sub_range::<u64, _>(0x1000, &Ix1(100), 90..).unwrap();
        assert_eq!((p, d), (0x1000 + 90 * 8, Ix1(10)));
        let (p, d) = sub_range::<u64, _>(0x1000, &Ix1(100), 5..5).unwrap();
        assert_eq!((p, d), (0, Ix1(0)), "an empty view has no address");
        assert!(sub_range::<u8, _>(0, &Ix1(10), 3..11).is_err());
        let (start, end) = (6, 4);
        assert!(sub_range::<u8, _>(0, &Ix1(10), start..end).is_err());
        assert!(sub_range::<u8, _>(0, &ndarray::Ix0(), ..).is_err());
    }

    #[test]
    fn reshape_keeps_the_element_count() {
        assert_eq!(checked_reshape(&Ix2(4, 6), (3, 8)).unwrap(), Ix2(3, 8));
        let e = checked_reshape(&Ix2(4, 6), (5, 5)).unwrap_err().to_string();
        assert!(e.contains("(4, 6)") && e.contains("(5, 5)"), "{e}");
    }
}
