//! `DeviceArray`: an owned, contiguous, C-order n-D array in device memory, and its views.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cudajit_sys as sys;
use ndarray::{Dimension, IntoDimension, Ix1};

use super::element::{AnyBitPattern, DeviceCopy};
use super::host::HostSource;
use super::pool::MemPool;
use super::slice::{check_stream, DeviceSlice, DeviceSliceMut, Sealed};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::stream::{OwnedStream, Stream};

/// An n-D array of `T` in device memory: contiguous, C order, shape `D` (ndarray's
/// `Ix1`, `Ix2`, ..., `IxDyn`). Frees its memory on drop; keeps its context alive. An array
/// opened from another process's handle ([`crate::ipc`]) closes its mapping (or frees its
/// imported pool pointer) on drop instead.
///
/// Copies, views and fills come from the [`DeviceSlice`] and [`DeviceSliceMut`] traits
/// (in the prelude). Created by [`Context::alloc`], [`Context::zeros`],
/// [`Context::to_device`], [`Stream::to_device`] and friends.
pub struct DeviceArray<T: DeviceCopy, D: Dimension = Ix1> {
    ctx: Context,
    ptr: sys::CUdeviceptr,
    dim: D,
    /// How the memory goes back on drop.
    release: Release,
    _t: PhantomData<T>,
}

/// How an array's memory is released on drop.
pub(crate) enum Release {
    /// `cuMemFree` (deferred while a graph that uses it is being captured).
    Free,
    /// Memory from a pool (the device's, an exportable one, or a pointer imported from another
    /// process's pool): `cuMemFreeAsync` on a stream.
    Ordered(Ordered),
    /// A mapping of another process's allocation (`crate::ipc`): `cuIpcCloseMemHandle` of the
    /// mapping's base (the array may start past it).
    IpcMapping {
        /// The address `cuIpcOpenMemHandle` returned.
        base: sys::CUdeviceptr,
    },
}

/// The stream an array from a memory pool is freed on, kept valid while the array lives, and
/// the pool when it is not the device's default one.
pub(crate) struct Ordered {
    pub(crate) stream: sys::CUstream,
    pub(crate) _keep: Option<Arc<OwnedStream>>,
    /// An explicit pool (exportable, or imported from another process), kept alive while
    /// the array lives.
    pub(crate) pool: Option<MemPool>,
}

// SAFETY: the array owns device memory, reachable from any thread through its context;
// `T` itself is Send + Sync (DeviceCopy's bounds).
unsafe impl<T: DeviceCopy, D: Dimension> Send for DeviceArray<T, D> {}
// SAFETY: shared references only read the handle or enqueue reads of the memory.
unsafe impl<T: DeviceCopy, D: Dimension> Sync for DeviceArray<T, D> {}

impl<T: DeviceCopy, D: Dimension> Drop for DeviceArray<T, D> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        match &self.release {
            Release::Ordered(o) => {
                self.ctx.bind_in_drop();
                // SAFETY: the pointer came from a pool allocation on this stream (kept alive
                // by `keep`) in this context, or from importing another process's, and is
                // freed once, after the stream's queued work.
                check_in_drop(unsafe { backend().mem_free_async(self.ptr, o.stream) });
                return;
            }
            Release::IpcMapping { base } => {
                self.ctx.bind_in_drop();
                // SAFETY: `base` is the mapping cuIpcOpenMemHandle returned in this context
                // for this array, closed once.
                check_in_drop(unsafe { backend().ipc_close_mem_handle(*base) });
                return;
            }
            Release::Free => {}
        }
        if crate::graph::defer_free(&self.ctx, self.ptr) {
            return;
        }
        self.ctx.bind_in_drop();
        // SAFETY: the pointer came from mem_alloc in this context and is freed once.
        check_in_drop(unsafe { backend().mem_free(self.ptr) });
    }
}

impl<T: DeviceCopy, D: Dimension> Sealed for DeviceArray<T, D> {}

impl<T: DeviceCopy, D: Dimension> DeviceSlice<T> for DeviceArray<T, D> {
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

impl<T: DeviceCopy, D: Dimension> DeviceSliceMut<T> for DeviceArray<T, D> {}

impl<T: DeviceCopy, D: Dimension> DeviceArray<T, D> {
    /// Allocates uninitialised memory for `dim` from the device's memory pool, in `stream`'s
    /// order (`cuMemAllocAsync`); freed in its order on drop (`cuMemFreeAsync`).
    pub(crate) fn alloc_ordered(stream: &Stream, dim: D) -> Result<Self> {
        let ordered = Ordered {
            stream: stream.raw(),
            _keep: stream.keep_handle(),
            pool: None,
        };
        Self::alloc_with(stream.context(), dim, Release::Ordered(ordered), |bytes| {
            // SAFETY: the stream is live and of the bound context; the array frees the memory.
            unsafe { backend().mem_alloc_async(bytes, stream.raw()) }
        })
    }

    /// Allocates uninitialised memory for `dim`.
    pub(crate) fn alloc_raw(ctx: &Context, dim: D) -> Result<Self> {
        Self::alloc_with(ctx, dim, Release::Free, |bytes| {
            crate::graph::refuse("allocating a device array (cuMemAlloc)")?;
            backend().mem_alloc(bytes)
        })
    }

    /// Allocates uninitialised memory for `dim` from `pool` (an exportable pool), in `stream`'s
    /// order (`cuMemAllocFromPoolAsync`); freed in its order on drop. The caller checked that
    /// the pool and the stream are of one context.
    pub(crate) fn alloc_from_pool(stream: &Stream, pool: &MemPool, dim: D) -> Result<Self> {
        let ordered = Ordered {
            stream: stream.raw(),
            _keep: stream.keep_handle(),
            pool: Some(pool.clone()),
        };
        Self::alloc_with(stream.context(), dim, Release::Ordered(ordered), |bytes| {
            // SAFETY: the pool and the stream are live and of the bound context; the array
            // frees the memory (and keeps the pool alive until then).
            unsafe { backend().mem_alloc_from_pool(bytes, pool.raw(), stream.raw()) }
        })
    }

    /// An array over memory cudajit did not allocate here (an IPC mapping, a pointer imported
    /// from another process's pool), released on drop as `release` says.
    ///
    /// # Safety
    /// `ptr` must address at least `dim.size()` elements of `T` in `ctx`'s address space, valid
    /// until `release` gives it back, and `release` must be how it goes back.
    pub(crate) unsafe fn from_parts(
        ctx: &Context,
        ptr: sys::CUdeviceptr,
        dim: D,
        release: Release,
    ) -> Self {
        DeviceArray {
            ctx: ctx.clone(),
            ptr,
            dim,
            release,
            _t: PhantomData,
        }
    }

    /// How the array's memory goes back.
    pub(crate) fn release(&self) -> &Release {
        &self.release
    }

    /// An array of `dim` in memory from `alloc` (given the byte count, called with `ctx` bound
    /// and only for a non-empty array), freed as `release` says.
    fn alloc_with(
        ctx: &Context,
        dim: D,
        release: Release,
        alloc: impl FnOnce(usize) -> Result<sys::CUdeviceptr>,
    ) -> Result<Self> {
        let bytes = dim
            .size_checked()
            .and_then(|n| n.checked_mul(std::mem::size_of::<T>()))
            .ok_or_else(|| {
                Error::usage(format!(
                    "array shape {} is too large to allocate",
                    crate::error::ShapeDisplay(dim.slice())
                ))
            })?;
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            ctx.bind()?;
            // Whole 4-byte words: an atomic on an 8- or 16-bit element is a compare-and-swap
            // on the aligned word holding it, which must lie inside the allocation (the
            // hardware's granularity covers it anyway; compute-sanitizer checks the size).
            ptr = alloc(bytes.next_multiple_of(4)).map_err(|e| {
                if e.is_out_of_memory() {
                    Error::OutOfMemory {
                        requested: bytes,
                        device: ctx.device().ordinal(),
                    }
                } else {
                    e
                }
            })?;
        }
        Ok(DeviceArray {
            ctx: ctx.clone(),
            ptr,
            dim,
            release,
            _t: PhantomData,
        })
    }

    /// Reinterprets the array with another shape of the same number of elements.
    pub fn into_shape<Sh: IntoDimension>(self, shape: Sh) -> Result<DeviceArray<T, Sh::Dim>> {
        let dim = shape.into_dimension();
        if dim.size() != self.dim.size() {
            return Err(Error::usage(format!(
                "cannot reshape an array of shape {} to {}: the sizes differ",
                crate::error::ShapeDisplay(self.dim.slice()),
                crate::error::ShapeDisplay(dim.slice())
            )));
        }
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so its context is moved out exactly once and the
        // allocation changes owner without being freed.
        let ctx = unsafe { std::ptr::read(&this.ctx) };
        // SAFETY: as above, for how the memory is released.
        let release = unsafe { std::ptr::read(&this.release) };
        Ok(DeviceArray {
            ctx,
            ptr: this.ptr,
            dim,
            release,
            _t: PhantomData,
        })
    }

    /// The raw device pointer (for users' own driver calls; cudajit keeps ownership).
    pub fn as_raw_ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl<T: DeviceCopy, D: Dimension> fmt::Debug for DeviceArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceArray<{}>(shape {:?}, device {})",
            std::any::type_name::<T>(),
            self.dim.slice(),
            self.ctx.device().ordinal()
        )
    }
}

/// A borrowed, read-only view of (part of) a device array.
pub struct DeviceView<'a, T: DeviceCopy, D: Dimension = Ix1> {
    ctx: &'a Context,
    ptr: sys::CUdeviceptr,
    dim: D,
    _t: PhantomData<&'a T>,
}

/// A borrowed, writable view of (part of) a device array.
pub struct DeviceViewMut<'a, T: DeviceCopy, D: Dimension = Ix1> {
    ctx: &'a Context,
    ptr: sys::CUdeviceptr,
    dim: D,
    _t: PhantomData<&'a mut T>,
}

macro_rules! impl_view {
    ($name:ident) => {
        impl<'a, T: DeviceCopy, D: Dimension> $name<'a, T, D> {
            pub(crate) fn from_parts(ctx: &'a Context, ptr: sys::CUdeviceptr, dim: D) -> Self {
                $name {
                    ctx,
                    ptr,
                    dim,
                    _t: PhantomData,
                }
            }
        }
        impl<T: DeviceCopy, D: Dimension> Sealed for $name<'_, T, D> {}
        impl<T: DeviceCopy, D: Dimension> DeviceSlice<T> for $name<'_, T, D> {
            type Dim = D;
            fn context(&self) -> &Context {
                self.ctx
            }
            fn device_ptr(&self) -> sys::CUdeviceptr {
                self.ptr
            }
            fn dim(&self) -> &D {
                &self.dim
            }
        }
        impl<T: DeviceCopy, D: Dimension> fmt::Debug for $name<'_, T, D> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "{}<{}>(shape {:?}, device {})",
                    stringify!($name),
                    std::any::type_name::<T>(),
                    self.dim.slice(),
                    self.ctx.device().ordinal()
                )
            }
        }
    };
}
impl_view!(DeviceView);
impl_view!(DeviceViewMut);
impl<T: DeviceCopy, D: Dimension> DeviceSliceMut<T> for DeviceViewMut<'_, T, D> {}

impl<T: DeviceCopy, D: Dimension> Clone for DeviceView<'_, T, D> {
    fn clone(&self) -> Self {
        DeviceView::from_parts(self.ctx, self.ptr, self.dim.clone())
    }
}

impl Context {
    /// A new array of shape `shape` with uninitialised contents (numba's `device_array`).
    ///
    /// Only for element types where any bytes are a valid value; see [`Context::zeros`].
    pub fn alloc<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        DeviceArray::alloc_raw(self, shape.into_dimension())
    }

    /// A new array of shape `shape`, every byte zero.
    pub fn zeros<T: DeviceCopy, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        let mut a = DeviceArray::alloc_raw(self, shape.into_dimension())?;
        a.memset(0)?;
        Ok(a)
    }

    /// A new, uninitialised array with the shape of `like` (numba's `device_array_like`).
    pub fn device_array_like<T: AnyBitPattern, A: DeviceSlice<T> + ?Sized>(
        &self,
        like: &A,
    ) -> Result<DeviceArray<T, A::Dim>> {
        DeviceArray::alloc_raw(self, like.dim().clone())
    }

    /// Copies host data (a slice, `Vec`, or any ndarray array or view) to a new device array.
    pub fn to_device<T: DeviceCopy, H: HostSource<T> + ?Sized>(
        &self,
        host: &H,
    ) -> Result<DeviceArray<T, H::Dim>> {
        let mut a = DeviceArray::alloc_raw(self, host.host_dim())?;
        a.copy_from_host(host)?;
        Ok(a)
    }

    /// A new device array holding a copy of `src` (any device array or view of this context).
    pub fn copy_device<T: DeviceCopy, A: DeviceSlice<T> + ?Sized>(
        &self,
        src: &A,
    ) -> Result<DeviceArray<T, A::Dim>> {
        let mut a = DeviceArray::alloc_raw(self, src.dim().clone())?;
        a.copy_from_device(src)?;
        Ok(a)
    }
}

impl Stream {
    /// Copies host data to a new device array, ordered on this stream.
    pub fn to_device<T: DeviceCopy, H: HostSource<T> + ?Sized>(
        &self,
        host: &H,
    ) -> Result<DeviceArray<T, H::Dim>> {
        let mut a = DeviceArray::alloc_raw(self.context(), host.host_dim())?;
        a.copy_from_host_async(host, self)?;
        Ok(a)
    }

    /// A new array of shape `shape`, zeroed on this stream.
    pub fn zeros<T: DeviceCopy, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        let mut a = DeviceArray::alloc_raw(self.context(), shape.into_dimension())?;
        a.memset_async(0, self)?;
        Ok(a)
    }

    /// A new, uninitialised array with the shape of `like`.
    pub fn alloc_like<T: AnyBitPattern, A: DeviceSlice<T> + ?Sized>(
        &self,
        like: &A,
    ) -> Result<DeviceArray<T, A::Dim>> {
        check_stream(like.context(), self)?;
        DeviceArray::alloc_raw(self.context(), like.dim().clone())
    }

    /// Copies `src` into `dst` (same shape) on this stream; shorthand for
    /// `dst.copy_from_device_async(src, stream)`.
    pub fn copy<T: DeviceCopy, S: DeviceSlice<T> + ?Sized, M: DeviceSliceMut<T> + ?Sized>(
        &self,
        src: &S,
        dst: &mut M,
    ) -> Result<()> {
        dst.copy_from_device_async(src, self)
    }
}
