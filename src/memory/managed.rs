//! Managed (unified) memory: one address valid on host and device, migrated on demand or by
//! prefetch.

use cudajit_sys as sys;
use ndarray::{Dimension, Ix1};

use super::element::DeviceCopy;
use super::slice::{check_stream, DeviceSlice, DeviceSliceMut, Sealed};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::stream::Stream;

/// Managed memory (`cuMemAllocManaged`) of `T` with a shape (`D`, 1-D unless made by
/// [`Context::managed_array`]), attached globally.
///
/// Usable wherever a device array is ([`DeviceSlice`]), and from the host through
/// [`as_slice`](Self::as_slice), which first waits for all work in the context.
pub struct ManagedBuffer<T: DeviceCopy, D: Dimension = Ix1> {
    pub(super) ctx: Context,
    pub(super) ptr: sys::CUdeviceptr,
    pub(super) dim: D,
    pub(super) _t: std::marker::PhantomData<T>,
}

// SAFETY: the buffer owns its memory; T is Send + Sync.
unsafe impl<T: DeviceCopy, D: Dimension> Send for ManagedBuffer<T, D> {}
// SAFETY: host reads wait for all device work first; writes need `&mut self`.
unsafe impl<T: DeviceCopy, D: Dimension> Sync for ManagedBuffer<T, D> {}

/// Where to prefetch managed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefetchTarget {
    /// The context's device.
    Device,
    /// Host memory.
    Host,
}

impl Context {
    /// Managed memory holding a copy of `data`.
    pub fn managed_from_slice<T: DeviceCopy>(&self, data: &[T]) -> Result<ManagedBuffer<T>> {
        let bytes = std::mem::size_of_val(data);
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            self.bind()?;
            crate::graph::refuse("allocating managed memory (cuMemAllocManaged)")?;
            ptr = backend().mem_alloc_managed(bytes)?;
            // SAFETY: managed memory is host-accessible at the same address; no device work
            // touches the new allocation yet.
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), ptr as usize as *mut T, data.len())
            };
        }
        Ok(ManagedBuffer {
            ctx: self.clone(),
            ptr,
            dim: ndarray::Ix1(data.len()),
            _t: std::marker::PhantomData,
        })
    }
}

impl<T: DeviceCopy, D: Dimension> ManagedBuffer<T, D> {
    /// The contents, after all work in the context has finished.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.ctx.synchronize()?;
        // SAFETY: `len` initialised elements at a host-accessible address; no device work is
        // running; mutation needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.host_ptr(), self.dim.size()) })
    }

    /// The contents, writable, after all work in the context has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.ctx.synchronize()?;
        // SAFETY: as above, and `&mut self` makes this the only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.host_ptr(), self.dim.size()) })
    }

    pub(super) fn host_ptr(&self) -> *mut T {
        if self.ptr == 0 {
            std::ptr::NonNull::dangling().as_ptr()
        } else {
            self.ptr as usize as *mut T
        }
    }

    /// Migrates the memory to the device or the host ahead of use, ordered on `stream`.
    pub fn prefetch(&self, target: PrefetchTarget, stream: &Stream) -> Result<()> {
        check_stream(&self.ctx, stream)?;
        let bytes = self.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind()?;
        let ordinal = self.ctx.device().ordinal();
        let to_host = target == PrefetchTarget::Host;
        let dev = self.ctx.device().raw();
        // SAFETY: the range is this allocation; the stream belongs to this context.
        unsafe { backend().mem_prefetch(self.ptr, bytes, to_host, dev, stream.raw()) }
        .map_err(|e| match e.driver_code() {
            Some(c) if c.0 == sys::CUresult::CUDA_ERROR_INVALID_DEVICE => Error::usage(format!(
                "device {ordinal} cannot prefetch managed memory (it lacks concurrent managed access): {e}"
            )),
            _ => e,
        })
    }
}

impl<T: DeviceCopy, D: Dimension> Sealed for ManagedBuffer<T, D> {}
impl<T: DeviceCopy, D: Dimension> DeviceSlice<T> for ManagedBuffer<T, D> {
    type Dim = D;
    fn context(&self) -> &Context {
        &self.ctx
    }
    fn device_ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
    fn dim(&self) -> &D {
        &self.dim
    }
}
impl<T: DeviceCopy, D: Dimension> DeviceSliceMut<T> for ManagedBuffer<T, D> {}

impl<T: DeviceCopy, D: Dimension> Drop for ManagedBuffer<T, D> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        self.ctx.bind_in_drop();
        // SAFETY: the pointer came from mem_alloc_managed and is freed once.
        check_in_drop(unsafe { backend().mem_free(self.ptr) });
    }
}
