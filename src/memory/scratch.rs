//! Temporary device memory ordered on a stream (`cuMemAllocAsync` / `cuMemFreeAsync`): no
//! synchronisation to allocate or free, for the scratch space of multi-pass kernels.

use std::marker::PhantomData;

use cudajit_sys as sys;

use crate::backend::backend;
use crate::error::{check_in_drop, Result};
use crate::memory::element::DeviceCopy;
use crate::stream::Stream;

/// `len` elements of `T` allocated and freed in `stream`'s order. Falls back to an ordinary
/// allocation (freed synchronously) where the driver has no memory pools.
pub(crate) struct Scratch<'s, T: DeviceCopy> {
    stream: &'s Stream,
    ptr: sys::CUdeviceptr,
    len: usize,
    pooled: bool,
    _t: PhantomData<T>,
}

impl<'s, T: DeviceCopy> Scratch<'s, T> {
    /// Allocates `len` elements (uninitialised) for work on `stream`.
    pub(crate) fn new(stream: &'s Stream, len: usize) -> Result<Self> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        stream.context().bind()?;
        // SAFETY: the stream is live for 's.
        let (ptr, pooled) = match unsafe { backend().mem_alloc_async(bytes, stream.raw()) } {
            Ok(p) => (p, true),
            Err(e) if e.is_out_of_memory() => return Err(e),
            Err(_) => (backend().mem_alloc(bytes)?, false),
        };
        Ok(Scratch {
            stream,
            ptr,
            len,
            pooled,
            _t: PhantomData,
        })
    }

    /// The device address.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl<T: DeviceCopy> Drop for Scratch<'_, T> {
    fn drop(&mut self) {
        self.stream.context().bind_in_drop();
        // SAFETY: the memory was allocated by `new` and is freed once; a pooled allocation is
        // freed in stream order, after the work that uses it.
        check_in_drop(unsafe {
            if self.pooled {
                backend().mem_free_async(self.ptr, self.stream.raw())
            } else {
                backend().mem_free(self.ptr)
            }
        });
    }
}
