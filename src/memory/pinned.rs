//! Page-locked host memory: pinned buffers for fast and truly asynchronous copies, and mapped
//! buffers the device reads and writes directly.

use std::ptr::NonNull;

use cudajit_sys as sys;
use ndarray::{Dimension, Ix1};
use parking_lot::Mutex;

use super::element::{AnyBitPattern, DeviceCopy};
use super::slice::{check_shape, check_stream, DeviceSlice, DeviceSliceMut, Sealed};
use super::transfer;
use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, record_drop_error, Error, Result};
use crate::event::Event;
use crate::stream::Stream;

/// Page-locked (pinned) host memory of `len` elements of `T`.
///
/// Copies between pinned memory and the device run at full PCIe/NVLink speed and, on a
/// stream, overlap with host work. The buffer remembers its last asynchronous copy and waits for
/// it before handing out its contents ([`as_slice`](Self::as_slice)) or freeing itself, so a copy
/// in flight can never race with host code.
pub struct PinnedHostBuffer<T: DeviceCopy> {
    ctx: Context,
    ptr: NonNull<T>,
    len: usize,
    pending: Mutex<Option<Event>>,
}

// SAFETY: the buffer owns its host memory like a Vec; T is Send + Sync.
unsafe impl<T: DeviceCopy> Send for PinnedHostBuffer<T> {}
// SAFETY: shared access only reads (after waiting for copies in flight) or enqueues reads.
unsafe impl<T: DeviceCopy> Sync for PinnedHostBuffer<T> {}

/// Allocates `len` elements of page-locked host memory with `cuMemHostAlloc` flags.
fn host_alloc<T>(ctx: &Context, len: usize, flags: u32) -> Result<NonNull<T>> {
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::usage(format!("{len} elements are too many to allocate")))?;
    if bytes == 0 {
        return Ok(NonNull::dangling());
    }
    ctx.bind()?;
    crate::graph::refuse("allocating pinned host memory (cuMemHostAlloc)")?;
    let p = backend().host_alloc(bytes, flags)?;
    NonNull::new(p.cast::<T>())
        .ok_or_else(|| Error::usage("cuMemHostAlloc returned a null pointer"))
}

/// Frees memory from [`host_alloc`], inside `Drop`.
fn host_free<T>(ctx: &Context, ptr: NonNull<T>, len: usize) {
    if len == 0 || std::mem::size_of::<T>() == 0 {
        return;
    }
    ctx.bind_in_drop();
    // SAFETY: the pointer came from host_alloc and is freed once.
    check_in_drop(unsafe { backend().host_free(ptr.as_ptr().cast()) });
}

impl Context {
    /// Pinned host memory for `len` elements, uninitialised.
    pub fn alloc_pinned<T: AnyBitPattern>(&self, len: usize) -> Result<PinnedHostBuffer<T>> {
        self.alloc_pinned_with(len, false)
    }

    /// Pinned host memory for `len` elements, uninitialised; `write_combined` makes host
    /// writes and device reads faster and host reads very slow (for upload-only buffers).
    pub fn alloc_pinned_with<T: AnyBitPattern>(
        &self,
        len: usize,
        write_combined: bool,
    ) -> Result<PinnedHostBuffer<T>> {
        let mut flags = sys::CU_MEMHOSTALLOC_PORTABLE;
        if write_combined {
            flags |= sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        }
        Ok(PinnedHostBuffer {
            ctx: self.clone(),
            ptr: host_alloc(self, len, flags)?,
            len,
            pending: Mutex::new(None),
        })
    }

    /// Pinned host memory holding a copy of `data`.
    pub fn pinned_from_slice<T: DeviceCopy>(&self, data: &[T]) -> Result<PinnedHostBuffer<T>> {
        let buf = PinnedHostBuffer {
            ctx: self.clone(),
            ptr: host_alloc(self, data.len(), sys::CU_MEMHOSTALLOC_PORTABLE)?,
            len: data.len(),
            pending: Mutex::new(None),
        };
        // SAFETY: the new buffer has room for `data.len()` elements and does not overlap `data`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.ptr.as_ptr(), data.len()) };
        Ok(buf)
    }
}

impl<T: DeviceCopy> PinnedHostBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waits for the last asynchronous copy into or out of this buffer.
    pub fn wait(&self) -> Result<()> {
        match self.pending.lock().take() {
            Some(ev) => ev.synchronize(),
            None => Ok(()),
        }
    }

    /// The contents, after any copy in flight has finished.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.wait()?;
        // SAFETY: the memory holds `len` initialised elements (AnyBitPattern or written from a
        // slice), no copy is in flight, and mutation needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) })
    }

    /// The contents, writable, after any copy in flight has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait()?;
        // SAFETY: as in as_slice, and `&mut self` makes this the only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    /// Copies `src` (same number of elements) into this buffer on `stream`, without waiting.
    pub fn copy_from_device_async<S: DeviceSlice<T> + ?Sized>(
        &mut self,
        src: &S,
        stream: &Stream,
    ) -> Result<()> {
        check_shape("copy_from_device_async", &[self.len], &[src.len()])?;
        check_stream(src.context(), stream)?;
        self.wait()?;
        transfer::dtoh(
            src.context(),
            self.ptr.as_ptr().cast(),
            src.device_ptr(),
            src.num_bytes(),
            Some(stream),
        )?;
        self.mark_pending(stream)
    }

    /// Copies this buffer into `dst` (same number of elements) on `stream`, without waiting.
    pub fn copy_to_device_async<M: DeviceSliceMut<T> + ?Sized>(
        &self,
        dst: &mut M,
        stream: &Stream,
    ) -> Result<()> {
        check_shape("copy_to_device_async", &[dst.len()], &[self.len])?;
        check_stream(dst.context(), stream)?;
        self.wait()?;
        transfer::htod(
            dst.context(),
            dst.device_ptr(),
            self.ptr.as_ptr().cast(),
            dst.num_bytes(),
            Some(stream),
        )?;
        self.mark_pending(stream)
    }

    fn mark_pending(&self, stream: &Stream) -> Result<()> {
        if crate::graph::capturing() {
            // A copy captured into a graph runs at the graph's launches, which the host
            // orders itself (an event recorded in a capture cannot be waited for).
            return Ok(());
        }
        let ev = self.ctx.new_event_with(false, false)?;
        ev.record(stream)?;
        *self.pending.lock() = Some(ev);
        Ok(())
    }
}

impl<T: DeviceCopy> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        if let Err(e) = self.wait() {
            record_drop_error(e);
        }
        host_free(&self.ctx, self.ptr, self.len);
    }
}

/// Page-locked host memory mapped into the device's address space ("zero-copy"): kernels
/// read and write it directly over the bus. Usable wherever a device array is
/// ([`DeviceSlice`]), and from the host through [`as_slice`](Self::as_slice), which first
/// waits for all work in the context.
pub struct MappedHostBuffer<T: DeviceCopy> {
    ctx: Context,
    host: NonNull<T>,
    device: sys::CUdeviceptr,
    dim: Ix1,
}

// SAFETY: as for PinnedHostBuffer.
unsafe impl<T: DeviceCopy> Send for MappedHostBuffer<T> {}
// SAFETY: host reads wait for all device work first; writes need `&mut self`.
unsafe impl<T: DeviceCopy> Sync for MappedHostBuffer<T> {}

impl Context {
    /// Mapped host memory holding a copy of `data`.
    pub fn mapped_from_slice<T: DeviceCopy>(&self, data: &[T]) -> Result<MappedHostBuffer<T>> {
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        let host = host_alloc::<T>(self, data.len(), flags)?;
        let mut buf = MappedHostBuffer {
            ctx: self.clone(),
            host,
            device: 0,
            dim: ndarray::Ix1(data.len()),
        };
        // SAFETY: the new buffer has room for `data.len()` elements and does not overlap `data`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host.as_ptr(), data.len()) };
        if !data.is_empty() {
            // SAFETY: `host` came from host_alloc with DEVICEMAP.
            buf.device = unsafe { backend().host_device_pointer(host.as_ptr().cast()) }?;
        }
        Ok(buf)
    }
}

impl<T: DeviceCopy> MappedHostBuffer<T> {
    /// The contents, after all work in the context has finished.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.ctx.synchronize()?;
        // SAFETY: `len` initialised elements; no device work is running; mutation needs `&mut`.
        Ok(unsafe { std::slice::from_raw_parts(self.host.as_ptr(), self.dim.size()) })
    }

    /// The contents, writable, after all work in the context has finished.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.ctx.synchronize()?;
        // SAFETY: as above, and `&mut self` makes this the only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.host.as_ptr(), self.dim.size()) })
    }
}

impl<T: DeviceCopy> Sealed for MappedHostBuffer<T> {}
impl<T: DeviceCopy> DeviceSlice<T> for MappedHostBuffer<T> {
    type Dim = Ix1;
    fn context(&self) -> &Context {
        &self.ctx
    }
    fn device_ptr(&self) -> sys::CUdeviceptr {
        self.device
    }
    fn dim(&self) -> &Ix1 {
        &self.dim
    }
}
impl<T: DeviceCopy> DeviceSliceMut<T> for MappedHostBuffer<T> {}

impl<T: DeviceCopy> Drop for MappedHostBuffer<T> {
    fn drop(&mut self) {
        host_free(&self.ctx, self.host, self.dim.size());
    }
}
