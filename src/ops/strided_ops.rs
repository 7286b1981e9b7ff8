//! Reductions of strided views: each gathers the view into a contiguous temporary on the
//! stream (one kernel), then runs the ordinary reduction on it.

use ndarray::{Dimension, IxDyn};

use super::array_ops::{ReduceOps, ReduceScalar};
use crate::error::Result;
use crate::memory::{DeviceArray, StridedArray, StridedView, StridedViewMut};
use crate::stream::Stream;

/// The reductions of [`ReduceOps`] for strided views and arrays ([`StridedView`],
/// [`StridedViewMut`], [`StridedArray`]). A view that is not contiguous is first gathered into
/// a contiguous temporary on `stream` (one extra pass over the data and a temporary of the
/// view's size); flat indices (`argmin`, `argmax`) are in the view's logical C order.
pub trait StridedReduceOps<T: ReduceScalar, D: Dimension> {
    /// The elements as a contiguous array, made on `stream`.
    #[doc(hidden)]
    fn gathered(&self, stream: &Stream) -> Result<DeviceArray<T, D>>;

    /// The sum of all elements (0 for an empty view).
    fn sum(&self, stream: &Stream) -> Result<T> {
        self.gathered(stream)?.sum(stream)
    }
    /// The sum of all elements, accumulated in `f64`.
    fn sum_f64(&self, stream: &Stream) -> Result<f64> {
        self.gathered(stream)?.sum_f64(stream)
    }
    /// The product of all elements.
    fn prod(&self, stream: &Stream) -> Result<T> {
        self.gathered(stream)?.prod(stream)
    }
    /// The smallest element (a NaN if there is one); an error for an empty view.
    fn min(&self, stream: &Stream) -> Result<T> {
        self.gathered(stream)?.min(stream)
    }
    /// The largest element (a NaN if there is one); an error for an empty view.
    fn max(&self, stream: &Stream) -> Result<T> {
        self.gathered(stream)?.max(stream)
    }
    /// The mean, in `f64`; an error for an empty view.
    fn mean(&self, stream: &Stream) -> Result<f64> {
        self.gathered(stream)?.mean(stream)
    }
    /// The logical flat (C-order) index of the first smallest element (or first NaN).
    fn argmin(&self, stream: &Stream) -> Result<u64> {
        self.gathered(stream)?.argmin(stream)
    }
    /// The logical flat (C-order) index of the first largest element (or first NaN).
    fn argmax(&self, stream: &Stream) -> Result<u64> {
        self.gathered(stream)?.argmax(stream)
    }
    /// Sums along `axis`.
    fn sum_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        self.gathered(stream)?.sum_axis(stream, axis, keepdims)
    }
    /// Minima along `axis`.
    fn min_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        self.gathered(stream)?.min_axis(stream, axis, keepdims)
    }
    /// Maxima along `axis`.
    fn max_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<T, IxDyn>> {
        self.gathered(stream)?.max_axis(stream, axis, keepdims)
    }
    /// The index along `axis` of the first largest element of every lane.
    fn argmax_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<u64, IxDyn>> {
        self.gathered(stream)?.argmax_axis(stream, axis, keepdims)
    }
    /// The index along `axis` of the first smallest element of every lane.
    fn argmin_axis(
        &self,
        stream: &Stream,
        axis: usize,
        keepdims: bool,
    ) -> Result<DeviceArray<u64, IxDyn>> {
        self.gathered(stream)?.argmin_axis(stream, axis, keepdims)
    }
}

impl<T: ReduceScalar, D: Dimension> StridedReduceOps<T, D> for StridedView<'_, T, D> {
    fn gathered(&self, stream: &Stream) -> Result<DeviceArray<T, D>> {
        self.to_contiguous(stream)
    }
}
impl<T: ReduceScalar, D: Dimension> StridedReduceOps<T, D> for StridedViewMut<'_, T, D> {
    fn gathered(&self, stream: &Stream) -> Result<DeviceArray<T, D>> {
        self.to_contiguous(stream)
    }
}
impl<T: ReduceScalar, D: Dimension> StridedReduceOps<T, D> for StridedArray<T, D> {
    fn gathered(&self, stream: &Stream) -> Result<DeviceArray<T, D>> {
        self.view().to_contiguous(stream)
    }
}
