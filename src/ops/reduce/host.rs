//! Host arrays for the reductions, as kernel launches take them (`codegen/host_args.rs`): a
//! slice, `Vec` or ndarray array or view is copied to a temporary device array, reduced there,
//! and the value returned.

use std::sync::atomic::AtomicBool;

use super::Reduction;
use crate::codegen::Scalar as ScalarType;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSliceMut, HostSource};
use crate::stream::Stream;

/// Whether a reduction has logged its host-array warning (one per [`Reduction`]).
#[derive(Default)]
pub(super) struct HostWarned(pub(super) AtomicBool);

impl<T: ScalarType, A: ScalarType, R: ScalarType> Reduction<T, A, R> {
    /// Reduces a host array (anything `Stream::to_device` takes: a slice, a `Vec`, an ndarray
    /// array or view of any layout) and returns the value, as [`reduce`](Self::reduce) does a
    /// device array.
    ///
    /// What it costs: the array is copied to a temporary device array from the stream's memory
    /// pool (one transfer over PCIe; a strided view is gathered on the host first), and the
    /// call waits for the result. For data reduced more than once, copy it once with
    /// `stream.to_device(..)` and reduce the device array. The first such call of each
    /// reduction logs a warning through the `log` facade, as kernel launches with host arrays
    /// do (`CUDAJIT_WARN_HOST_ARRAYS=0` or
    /// [`set_host_array_warnings(false)`](crate::codegen::set_host_array_warnings) silences
    /// it). Refused, with an error, while this thread captures a graph (nothing may wait there).
    ///
    /// ```no_run
    /// use cudajit::ops::Reduction;
    /// # fn main() -> cudajit::Result<()> {
    /// let ctx = cudajit::Context::new(0)?;
    /// let s = ctx.new_stream()?;
    /// let sum = Reduction::<i64, i64, i64>::new("sum_i64", |x| x, |a, b| a + b, 0)?;
    /// assert_eq!(sum.reduce_host(&s, &vec![1i64, 2, 3])?, 6);
    /// # Ok(()) }
    /// ```
    pub fn reduce_host<H: HostSource<T> + ?Sized>(&self, stream: &Stream, host: &H) -> Result<R> {
        if crate::graph::capturing() {
            return Err(Error::usage(format!(
                "reduction `{}`: a host array cannot be reduced while this thread captures a \
                 graph (Stream::begin_capture): the call copies it to the device and waits for \
                 the result, which a capture cannot do; reduce a device array",
                self.name
            )));
        }
        crate::codegen::warn_host_arrays_once(&self.host_warned.0, &self.name, 1);
        let mut a = DeviceArray::<T, H::Dim>::alloc_ordered(stream, host.host_dim())?;
        a.copy_from_host_async(host, stream)?;
        self.reduce(stream, &a)
    }
}
