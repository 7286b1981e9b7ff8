//! Host arrays as kernel arguments, as Numba takes NumPy arrays: a `&[T]`, `&Vec<T>` or ndarray
//! array/view where a kernel reads an array, a `&mut [T]`, `&mut Vec<T>` or mutable ndarray
//! array/view where it may write one. Each is copied to a temporary device array (from the
//! stream's memory pool) before the launch; after it, the call waits for the kernel, the
//! writable ones take their device copy's values back, and the copies are freed.
//!
//! This costs two copies over PCIe and a synchronisation per launch: the first launch of each
//! kernel with host arrays logs a warning (`log` facade, target `cudajit`), as Numba's
//! `NumbaPerformanceWarning` does, unless `CUDAJIT_WARN_HOST_ARRAYS=0` or
//! [`set_host_array_warnings(false)`](set_host_array_warnings). Launches with device arrays
//! only do none of this.
//!
//! Aliasing is refused by the borrow checker: a host array the kernel writes is borrowed
//! `&mut`, so no other argument can be the same memory.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use ndarray::{ArrayBase, Data, DataMut, Dim, Dimension, Ix1};

use super::array::{DArray, ReadOnly, ReadWrite};
use super::scalar::Scalar;
use super::signature::{ArgBuffer, ArgFor};
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut, HostSource};
use crate::stream::Stream;

/// 0: not decided yet, 1: warn, 2: quiet.
static WARN: AtomicU8 = AtomicU8::new(0);

/// Turns the once-per-kernel warning about host-array launches on or off (it is on unless
/// `CUDAJIT_WARN_HOST_ARRAYS=0`; this call overrides the variable).
pub fn set_host_array_warnings(on: bool) {
    WARN.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether host-array launches warn (the API's choice, else the environment's).
fn warnings_on() -> bool {
    match WARN.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let on = std::env::var("CUDAJIT_WARN_HOST_ARRAYS").map_or(true, |v| v.trim() != "0");
            // Only fill in the undecided state: a concurrent `set_host_array_warnings` wins.
            let _ = WARN.compare_exchange(
                0,
                if on { 1 } else { 2 },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            on
        }
    }
}

/// Logs the host-array warning for kernel `name` (launched with `count` of them) once
/// (`warned` is the kernel's flag).
pub(crate) fn warn_once(warned: &AtomicBool, name: &str, count: usize) {
    if !warned.load(Ordering::Relaxed) && warnings_on() && !warned.swap(true, Ordering::Relaxed) {
        log::warn!(
            target: "cudajit",
            "kernel `{name}` was launched with {count} host array(s): each such launch copies \
             them to the device and back and waits for the kernel. Pass device arrays \
             (`stream.to_device(..)`) to keep data on the GPU between launches; \
             CUDAJIT_WARN_HOST_ARRAYS=0 or `cudajit::codegen::set_host_array_warnings(false)` \
             silences this"
        );
    }
}

impl<'c> ArgBuffer<'c> {
    /// Whether any host array was copied for this launch.
    #[inline]
    pub(crate) fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// The stream host arrays are copied on, or why there is none.
    fn host_stream(&self) -> Result<&'c Stream> {
        let Some(stream) = self.stream else {
            return Err(Error::usage(
                "a host array cannot be an argument of a graph node (Kernel::add_to_graph): the \
                 node would keep its address, and nothing copies it back; pass a device array",
            ));
        };
        if crate::graph::capturing() {
            return Err(Error::usage(
                "a host array cannot be a kernel argument while this thread captures a graph \
                 (Stream::begin_capture): its launch copies it to the device and waits for the \
                 kernel, which a capture cannot do; pass a device array",
            ));
        }
        Ok(stream)
    }

    /// Copies `host` to a temporary device array on the launch's stream and pushes that.
    pub(crate) fn push_host<T: Scalar, H: HostSource<T> + ?Sized>(&mut self, host: &H) -> Result<()>
    where
        H::Dim: 'static,
    {
        let stream = self.host_stream()?;
        let mut a = DeviceArray::<T, H::Dim>::alloc_ordered(stream, host.host_dim())?;
        a.copy_from_host_async(host, stream)?;
        self.push_array(&a)?;
        self.staged.push(Box::new(a));
        Ok(())
    }

    /// How many host arrays were copied for this launch.
    pub(crate) fn staged_count(&self) -> usize {
        self.staged.len()
    }

    /// The next staged device copy (of a host argument pushed with `push_host`).
    fn next_staged<T: Scalar, D: Dimension + 'static>(&mut self) -> Result<&DeviceArray<T, D>> {
        let i = self.next_staged;
        self.next_staged += 1;
        self.staged
            .get(i)
            .and_then(|a| a.downcast_ref::<DeviceArray<T, D>>())
            .ok_or_else(|| Error::usage("internal: host-array copies out of order"))
    }

    /// Passes over a read-only host argument's copy.
    fn skip_staged(&mut self) {
        self.next_staged += 1;
    }
}

/// Launch tail with host arrays: waits for the kernel, copies the writable ones back (`after`)
/// and frees the copies.
pub(crate) fn finish(
    buf: &mut ArgBuffer<'_>,
    stream: &Stream,
    after: impl FnOnce(&mut ArgBuffer<'_>) -> Result<()>,
) -> Result<()> {
    stream.synchronize()?;
    after(buf)?;
    buf.staged.clear();
    stream.synchronize()
}

macro_rules! host_1d {
    ($($ro:ty, $rw:ty;)*) => {$(
        impl<T: Scalar> ArgFor<&[T]> for &$ro {
            fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.push_host::<T, [T]>(&self[..])
            }
            fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.skip_staged();
                Ok(())
            }
        }
        impl<T: Scalar> ArgFor<&mut [T]> for &mut $rw {
            fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.push_host::<T, [T]>(&self[..])
            }
            fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
                buf.next_staged::<T, Ix1>()?.copy_to_host(&mut self[..])
            }
        }
    )*};
}
host_1d! {
    [T], [T];
    Vec<T>, Vec<T>;
}

/// Copies a device array back into an ndarray array of the same shape (any layout).
fn back_into<T: Scalar, S: DataMut<Elem = T>, D: Dimension + 'static>(
    buf: &mut ArgBuffer<'_>,
    dst: &mut ArrayBase<S, D>,
) -> Result<()> {
    buf.next_staged::<T, D>()?.copy_to_host_array(dst)
}

impl<T: Scalar, S: Data<Elem = T>> ArgFor<&[T]> for &ArrayBase<S, Ix1> {
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(*self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.skip_staged();
        Ok(())
    }
}

impl<T: Scalar, S: DataMut<Elem = T>> ArgFor<&mut [T]> for &mut ArrayBase<S, Ix1> {
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(&**self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        back_into(buf, &mut **self)
    }
}

impl<T: Scalar, S: Data<Elem = T>, const N: usize> ArgFor<DArray<T, N, ReadOnly>>
    for &ArrayBase<S, Dim<[usize; N]>>
where
    Dim<[usize; N]>: Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(*self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.skip_staged();
        Ok(())
    }
}

impl<T: Scalar, S: DataMut<Elem = T>, const N: usize> ArgFor<DArray<T, N, ReadWrite>>
    for &mut ArrayBase<S, Dim<[usize; N]>>
where
    Dim<[usize; N]>: Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(&**self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        back_into(buf, &mut **self)
    }
}

impl<T: Scalar, const N: usize> ArgFor<DArray<T, N, ReadOnly>>
    for ndarray::ArrayView<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.skip_staged();
        Ok(())
    }
}

impl<T: Scalar, const N: usize> ArgFor<DArray<T, N, ReadWrite>>
    for ndarray::ArrayViewMut<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_host::<T, _>(self)
    }
    fn after(&mut self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        back_into(buf, self)
    }
}
