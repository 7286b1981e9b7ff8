//! Page-locked host memory: pinned buffers for fast and truly asynchronous copies (whole, or in
//! chunks through their slices: `pinned_slice`), and mapped buffers the device reads and writes
//! directly. n-D constructors and ndarray views: `host_nd`.

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

/// Page-locked (pinned) host memory of `T`, with a shape (`D`, 1-D unless made by
/// [`Context::pinned_array`]).
///
/// Copies between pinned memory and the device run at full PCIe/NVLink speed and, on a
/// stream, overlap with host work. The buffer remembers its asynchronous copies in flight (of
/// the whole buffer or of [slices](Self::slice)) and waits for them before handing out its
/// contents ([`as_slice`](Self::as_slice)) or freeing itself, so a copy in flight can never race
/// with host code.
pub struct PinnedHostBuffer<T: DeviceCopy, D: Dimension = Ix1> {
    pub(super) ctx: Context,
    pub(super) ptr: NonNull<T>,
    pub(super) len: usize,
    pub(super) dim: D,
    pub(super) pending: Mutex<Vec<Pending>>,
}

/// An asynchronous copy in flight into or out of the elements `start..end` of a pinned buffer.
pub(super) struct Pending {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) ev: Event,
}

// SAFETY: the buffer owns its host memory like a Vec; T is Send + Sync.
unsafe impl<T: DeviceCopy, D: Dimension> Send for PinnedHostBuffer<T, D> {}
// SAFETY: shared access only reads (after waiting for copies in flight) or enqueues reads.
unsafe impl<T: DeviceCopy, D: Dimension> Sync for PinnedHostBuffer<T, D> {}

/// Allocates `len` elements of page-locked host memory with `cuMemHostAlloc` flags.
pub(super) fn host_alloc<T>(ctx: &Context, len: usize, flags: u32) -> Result<NonNull<T>> {
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
pub(super) fn host_free<T>(ctx: &Context, ptr: NonNull<T>, len: usize) {
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
            dim: Ix1(len),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Pinned host memory holding a copy of `data`.
    pub fn pinned_from_slice<T: DeviceCopy>(&self, data: &[T]) -> Result<PinnedHostBuffer<T>> {
        let buf = PinnedHostBuffer {
            ctx: self.clone(),
            ptr: host_alloc(self, data.len(), sys::CU_MEMHOSTALLOC_PORTABLE)?,
            len: data.len(),
            dim: Ix1(data.len()),
            pending: Mutex::new(Vec::new()),
        };
        // SAFETY: the new buffer has room for `data.len()` elements and does not overlap `data`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.ptr.as_ptr(), data.len()) };
        Ok(buf)
    }
}

impl<T: DeviceCopy, D: Dimension> PinnedHostBuffer<T, D> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shape (`[len]` unless made by [`Context::pinned_array`]).
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The shape as an ndarray dimension.
    pub fn dim(&self) -> &D {
        &self.dim
    }

    /// The host address of the first element, for foreign code (a dangling, aligned pointer
    /// when the buffer is empty). Copies may be in flight: call [`wait`](Self::wait) before
    /// reading or writing through it.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// The host address of the first element, writable; as [`as_ptr`](Self::as_ptr).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Waits for every asynchronous copy into or out of this buffer (or its slices).
    pub fn wait(&self) -> Result<()> {
        self.wait_range(0, usize::MAX)
    }

    /// Waits for the copies in flight that touch the elements `start..end`.
    pub(super) fn wait_range(&self, start: usize, end: usize) -> Result<()> {
        let overlapping: Vec<Pending> = {
            let mut pending = self.pending.lock();
            let (hit, keep) = std::mem::take(&mut *pending)
                .into_iter()
                .partition(|p| p.start < end && start < p.end);
            *pending = keep;
            hit
        };
        let mut first_err = None;
        for p in overlapping {
            if let Err(e) = p.ev.synchronize() {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
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
        self.mark_pending(0, self.len, stream)
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
        self.mark_pending(0, self.len, stream)
    }

    /// Remembers a copy of the elements `start..end` just enqueued on `stream`, forgetting
    /// those already finished.
    pub(super) fn mark_pending(&self, start: usize, end: usize, stream: &Stream) -> Result<()> {
        if crate::graph::capturing() {
            // A copy captured into a graph runs at the graph's launches, which the host
            // orders itself (an event recorded in a capture cannot be waited for).
            return Ok(());
        }
        if start >= end {
            return Ok(()); // an empty copy enqueued nothing
        }
        let ev = self.ctx.new_event_with(false, false)?;
        ev.record(stream)?;
        let mut pending = self.pending.lock();
        // A failed query keeps the copy, so that its error surfaces at the next wait.
        pending.retain(|p| !matches!(p.ev.query(), Ok(true)));
        pending.push(Pending { start, end, ev });
        Ok(())
    }
}

impl<T: DeviceCopy, D: Dimension> Drop for PinnedHostBuffer<T, D> {
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
pub struct MappedHostBuffer<T: DeviceCopy, D: Dimension = Ix1> {
    pub(super) ctx: Context,
    pub(super) host: NonNull<T>,
    pub(super) device: sys::CUdeviceptr,
    pub(super) dim: D,
}

// SAFETY: as for PinnedHostBuffer.
unsafe impl<T: DeviceCopy, D: Dimension> Send for MappedHostBuffer<T, D> {}
// SAFETY: host reads wait for all device work first; writes need `&mut self`.
unsafe impl<T: DeviceCopy, D: Dimension> Sync for MappedHostBuffer<T, D> {}

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

impl<T: DeviceCopy, D: Dimension> MappedHostBuffer<T, D> {
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

impl<T: DeviceCopy, D: Dimension> Sealed for MappedHostBuffer<T, D> {}
impl<T: DeviceCopy, D: Dimension> DeviceSlice<T> for MappedHostBuffer<T, D> {
    type Dim = D;
    fn context(&self) -> &Context {
        &self.ctx
    }
    fn device_ptr(&self) -> sys::CUdeviceptr {
        self.device
    }
    fn dim(&self) -> &D {
        &self.dim
    }
}
impl<T: DeviceCopy, D: Dimension> DeviceSliceMut<T> for MappedHostBuffer<T, D> {}

impl<T: DeviceCopy, D: Dimension> Drop for MappedHostBuffer<T, D> {
    fn drop(&mut self) {
        host_free(&self.ctx, self.host, self.dim.size());
    }
}
