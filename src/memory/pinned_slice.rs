//! Sub-ranges of pinned buffers ([`PinnedSlice`], [`PinnedSliceMut`]) for chunked asynchronous
//! copies: each chunk's copy is remembered by the buffer, which waits for it before handing out
//! those elements or freeing itself.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use ndarray::Dimension;

use super::element::DeviceCopy;
use super::pinned::PinnedHostBuffer;
use super::slice::{check_shape, check_stream, DeviceSlice, DeviceSliceMut};
use super::transfer;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// A read-only view of the elements `start..end` (C order) of a [`PinnedHostBuffer`], from
/// [`PinnedHostBuffer::slice`]: the source of an asynchronous host-to-device chunk copy.
///
/// The buffer stays borrowed while the view lives, and remembers every copy enqueued through
/// it: the buffer's [`as_mut_slice`](PinnedHostBuffer::as_mut_slice), later writes into the same
/// elements and its `Drop` wait for the copy first.
pub struct PinnedSlice<'a, T: DeviceCopy, D: Dimension> {
    buf: &'a PinnedHostBuffer<T, D>,
    start: usize,
    end: usize,
}

/// A writable view of the elements `start..end` (C order) of a [`PinnedHostBuffer`], from
/// [`PinnedHostBuffer::slice_mut`]: the destination (or source) of an asynchronous chunk copy.
///
/// The buffer stays exclusively borrowed while the view lives, so no host slice of it can be
/// read while the device writes; the buffer waits for the copies before handing out its
/// contents again or freeing itself. [`split_at`](Self::split_at) cuts it into disjoint chunks.
pub struct PinnedSliceMut<'a, T: DeviceCopy, D: Dimension> {
    buf: &'a PinnedHostBuffer<T, D>,
    start: usize,
    end: usize,
    _excl: PhantomData<&'a mut PinnedHostBuffer<T, D>>,
}

/// The element range `range` of a buffer of `len` elements, or an error naming it.
fn bounds(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::usage(format!(
            "pinned slice {:?}..{:?} is out of range for a buffer of {len} elements",
            range.start_bound(),
            range.end_bound()
        ))),
    }
}

impl<T: DeviceCopy, D: Dimension> PinnedHostBuffer<T, D> {
    /// A read-only view of the elements `range` (C order), for an asynchronous chunk copy to
    /// the device ([`PinnedSlice::copy_to_device_async`]); an error if `range` is out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<PinnedSlice<'_, T, D>> {
        let (start, end) = bounds(range, self.len)?;
        Ok(PinnedSlice {
            buf: self,
            start,
            end,
        })
    }

    /// A writable view of the elements `range` (C order), for asynchronous chunk copies from
    /// the device ([`PinnedSliceMut::copy_from_device_async`]); an error if `range` is out of
    /// bounds.
    pub fn slice_mut(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<PinnedSliceMut<'_, T, D>> {
        let (start, end) = bounds(range, self.len)?;
        Ok(PinnedSliceMut {
            buf: self,
            start,
            end,
            _excl: PhantomData,
        })
    }

    fn host_ptr_at(&self, start: usize) -> *mut T {
        // SAFETY: `start <= len`, so the result is inside the allocation or one past its end.
        unsafe { self.ptr.as_ptr().add(start) }
    }
}

macro_rules! common_view_methods {
    ($name:ident) => {
        impl<'a, T: DeviceCopy, D: Dimension> $name<'a, T, D> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.end - self.start
            }

            /// Whether the view is empty.
            pub fn is_empty(&self) -> bool {
                self.start == self.end
            }

            /// The element range of the buffer this view covers.
            pub fn range(&self) -> std::ops::Range<usize> {
                self.start..self.end
            }

            /// The host address of the view's first element (copies may be in flight: see
            /// [`PinnedHostBuffer::as_ptr`]).
            pub fn as_ptr(&self) -> *const T {
                self.buf.host_ptr_at(self.start)
            }

            /// The contents, after the copies in flight over these elements have finished.
            pub fn as_slice(&self) -> Result<&[T]> {
                self.buf.wait_range(self.start, self.end)?;
                // SAFETY: the range is inside the buffer's initialised elements, no copy over
                // it is in flight, and writes need a `PinnedSliceMut` (exclusive) or `&mut`.
                Ok(unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len()) })
            }

            /// Copies these elements into `dst` (same number of elements) on `stream`, without
            /// waiting; a copy in flight over the same elements is waited for first.
            pub fn copy_to_device_async<M: DeviceSliceMut<T> + ?Sized>(
                &self,
                dst: &mut M,
                stream: &Stream,
            ) -> Result<()> {
                check_shape(
                    "PinnedSlice::copy_to_device_async",
                    &[dst.len()],
                    &[self.len()],
                )?;
                check_stream(dst.context(), stream)?;
                self.buf.wait_range(self.start, self.end)?;
                transfer::htod(
                    dst.context(),
                    dst.device_ptr(),
                    self.as_ptr().cast(),
                    dst.num_bytes(),
                    Some(stream),
                )?;
                self.buf.mark_pending(self.start, self.end, stream)
            }
        }
    };
}
common_view_methods!(PinnedSlice);
common_view_methods!(PinnedSliceMut);

impl<'a, T: DeviceCopy, D: Dimension> PinnedSliceMut<'a, T, D> {
    /// The host address of the view's first element, writable (see
    /// [`PinnedHostBuffer::as_ptr`]).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.buf.host_ptr_at(self.start)
    }

    /// The contents, writable, after the copies in flight over these elements have finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.buf.wait_range(self.start, self.end)?;
        // SAFETY: as in as_slice; the view borrows the buffer exclusively and views from
        // split_at are disjoint, so this is the only access to these elements.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len()) })
    }

    /// Splits into the views `..mid` and `mid..` (relative to this view), both usable at
    /// once, e.g. for chunk copies on several streams; an error if `mid > len`.
    pub fn split_at(self, mid: usize) -> Result<(Self, Self)> {
        if mid > self.len() {
            return Err(Error::usage(format!(
                "split_at({mid}) is out of range for a pinned slice of {} elements",
                self.len()
            )));
        }
        let cut = self.start + mid;
        let left = PinnedSliceMut {
            buf: self.buf,
            start: self.start,
            end: cut,
            _excl: PhantomData,
        };
        let right = PinnedSliceMut {
            buf: self.buf,
            start: cut,
            end: self.end,
            _excl: PhantomData,
        };
        Ok((left, right))
    }

    /// Copies `src` (same number of elements) into these elements on `stream`, without
    /// waiting; a copy in flight over the same elements is waited for first.
    pub fn copy_from_device_async<S: DeviceSlice<T> + ?Sized>(
        &mut self,
        src: &S,
        stream: &Stream,
    ) -> Result<()> {
        check_shape(
            "PinnedSliceMut::copy_from_device_async",
            &[self.len()],
            &[src.len()],
        )?;
        check_stream(src.context(), stream)?;
        self.buf.wait_range(self.start, self.end)?;
        transfer::dtoh(
            src.context(),
            self.as_mut_ptr().cast(),
            src.device_ptr(),
            src.num_bytes(),
            Some(stream),
        )?;
        self.buf.mark_pending(self.start, self.end, stream)
    }
}
