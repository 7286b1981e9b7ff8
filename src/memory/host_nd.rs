//! n-D host memory the device can use, as Numba's `pinned_array` / `mapped_array` /
//! `managed_array`: zero-filled constructors taking a shape, and ndarray views of the host side.

use std::marker::PhantomData;

use cudajit_sys as sys;
use ndarray::{ArrayView, ArrayViewMut, Dimension, IntoDimension};
use parking_lot::Mutex;

use super::element::{AnyBitPattern, DeviceCopy};
use super::managed::ManagedBuffer;
use super::pinned::{host_alloc, MappedHostBuffer, PinnedHostBuffer};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result};

/// The shape as a dimension and its element count, or an error for a shape with no elements
/// or one whose size in bytes overflows.
fn checked_shape<T, Sh: IntoDimension>(what: &str, shape: Sh) -> Result<(Sh::Dim, usize)> {
    let dim = shape.into_dimension();
    let shape = dim.slice();
    let len = shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| {
            n.checked_mul(std::mem::size_of::<T>())
                .is_some_and(|b| b <= isize::MAX as usize)
        })
        .ok_or_else(|| Error::usage(format!("{what}: shape {shape:?} is too large to allocate")))?;
    if len == 0 {
        return Err(Error::usage(format!(
            "{what}: shape {shape:?} has no elements; give every axis a length of at least 1"
        )));
    }
    Ok((dim, len))
}

/// An ndarray view of the elements at `ptr` with the shape `dim` (C order).
///
/// # Safety
/// `ptr` holds `dim.size()` initialised elements, valid and not written for `'a`.
unsafe fn view<'a, T, D: Dimension>(ptr: *const T, dim: &D) -> Result<ArrayView<'a, T, D>> {
    // SAFETY: the caller's contract.
    let slice = unsafe { std::slice::from_raw_parts(ptr, dim.size()) };
    ArrayView::from_shape(dim.clone(), slice)
        .map_err(|e| Error::usage(format!("cannot view host memory as an array: {e}")))
}

/// As [`view`], writable.
///
/// # Safety
/// As for [`view`], and no other access for `'a`.
unsafe fn view_mut<'a, T, D: Dimension>(ptr: *mut T, dim: &D) -> Result<ArrayViewMut<'a, T, D>> {
    // SAFETY: the caller's contract.
    let slice = unsafe { std::slice::from_raw_parts_mut(ptr, dim.size()) };
    ArrayViewMut::from_shape(dim.clone(), slice)
        .map_err(|e| Error::usage(format!("cannot view host memory as an array: {e}")))
}

impl Context {
    /// Zero-filled pinned host memory of shape `shape` (`[rows, cols]`, `(a, b, c)`, an
    /// `&[usize]`, ...), as Numba's `cuda.pinned_array`. Copies to and from the device and
    /// [slices](PinnedHostBuffer::slice) see it in C order. An error for a shape with no
    /// elements or one too large to allocate.
    pub fn pinned_array<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<PinnedHostBuffer<T, Sh::Dim>> {
        let (dim, len) = checked_shape::<T, _>("pinned_array", shape)?;
        let ptr = host_alloc::<T>(self, len, sys::CU_MEMHOSTALLOC_PORTABLE)?;
        // SAFETY: the new allocation holds `len` elements; all-zero bytes are a valid T.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
        Ok(PinnedHostBuffer {
            ctx: self.clone(),
            ptr,
            len,
            dim,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Zero-filled mapped host memory of shape `shape`, as Numba's `cuda.mapped_array`:
    /// kernels read and write it directly, and take it wherever they take a device array of
    /// that dimension. Errors as [`pinned_array`](Self::pinned_array).
    pub fn mapped_array<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<MappedHostBuffer<T, Sh::Dim>> {
        let (dim, len) = checked_shape::<T, _>("mapped_array", shape)?;
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        let host = host_alloc::<T>(self, len, flags)?;
        let mut buf = MappedHostBuffer {
            ctx: self.clone(),
            host,
            device: 0,
            dim,
        };
        // SAFETY: the new allocation holds `len` elements; all-zero bytes are a valid T.
        unsafe { std::ptr::write_bytes(host.as_ptr(), 0, len) };
        if std::mem::size_of::<T>() > 0 {
            // SAFETY: `host` came from host_alloc with DEVICEMAP.
            buf.device = unsafe { backend().host_device_pointer(host.as_ptr().cast()) }?;
        }
        Ok(buf)
    }

    /// Zero-filled managed memory of shape `shape`, as Numba's `cuda.managed_array`; kernels
    /// take it wherever they take a device array of that dimension. Errors as
    /// [`pinned_array`](Self::pinned_array).
    pub fn managed_array<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<ManagedBuffer<T, Sh::Dim>> {
        let (dim, len) = checked_shape::<T, _>("managed_array", shape)?;
        let bytes = len * std::mem::size_of::<T>();
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            self.bind()?;
            crate::graph::refuse("allocating managed memory (cuMemAllocManaged)")?;
            ptr = backend().mem_alloc_managed(bytes)?;
            // SAFETY: managed memory is host-accessible at the same address; no device work
            // touches the new allocation yet.
            unsafe { std::ptr::write_bytes(ptr as usize as *mut u8, 0, bytes) };
        }
        Ok(ManagedBuffer {
            ctx: self.clone(),
            ptr,
            dim,
            _t: PhantomData,
        })
    }
}

impl<T: DeviceCopy, D: Dimension> PinnedHostBuffer<T, D> {
    /// The contents as an ndarray view of the buffer's shape, after every copy in flight has
    /// finished.
    pub fn as_array_view(&self) -> Result<ArrayView<'_, T, D>> {
        self.wait()?;
        // SAFETY: `len` initialised elements; no copy in flight; writes need `&mut self`.
        unsafe { view(self.as_ptr(), &self.dim) }
    }

    /// The contents as a writable ndarray view, after every copy in flight has finished.
    pub fn as_array_view_mut(&mut self) -> Result<ArrayViewMut<'_, T, D>> {
        self.wait()?;
        let dim = self.dim.clone();
        // SAFETY: as above, and `&mut self` makes this the only access.
        unsafe { view_mut(self.as_mut_ptr(), &dim) }
    }
}

impl<T: DeviceCopy, D: Dimension> MappedHostBuffer<T, D> {
    /// The contents as an ndarray view of the buffer's shape, after all work in the context
    /// has finished.
    pub fn as_array_view(&self) -> Result<ArrayView<'_, T, D>> {
        self.ctx.synchronize()?;
        // SAFETY: initialised elements; no device work is running; writes need `&mut self`.
        unsafe { view(self.host.as_ptr(), &self.dim) }
    }

    /// The contents as a writable ndarray view, after all work in the context has finished.
    pub fn as_array_view_mut(&mut self) -> Result<ArrayViewMut<'_, T, D>> {
        self.ctx.synchronize()?;
        // SAFETY: as above, and `&mut self` makes this the only access.
        unsafe { view_mut(self.host.as_ptr(), &self.dim) }
    }
}

impl<T: DeviceCopy, D: Dimension> ManagedBuffer<T, D> {
    /// The contents as an ndarray view of the buffer's shape, after all work in the context
    /// has finished.
    pub fn as_array_view(&self) -> Result<ArrayView<'_, T, D>> {
        self.ctx.synchronize()?;
        // SAFETY: initialised elements at a host-accessible address; no device work is
        // running; writes need `&mut self`.
        unsafe { view(self.host_ptr(), &self.dim) }
    }

    /// The contents as a writable ndarray view, after all work in the context has finished.
    pub fn as_array_view_mut(&mut self) -> Result<ArrayViewMut<'_, T, D>> {
        self.ctx.synchronize()?;
        // SAFETY: as above, and `&mut self` makes this the only access.
        unsafe { view_mut(self.host_ptr(), &self.dim) }
    }
}
