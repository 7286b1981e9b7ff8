//! Stream-ordered allocation from the device's memory pool (`cuMemAllocAsync` /
//! `cuMemFreeAsync`): allocating and freeing cost no synchronisation, memory freed on a
//! stream is reused by later allocations on it at once, and it works inside a graph capture
//! (torch's caching allocator and CuPy's memory pool, done by the driver).
//!
//! ```no_run
//! # use cudajit::prelude::*;
//! # fn main() -> cudajit::Result<()> {
//! let ctx = Device::get(0)?.primary_context()?;
//! let stream = ctx.new_stream()?;
//! let pool = ctx.mem_pool()?;
//! pool.set_release_threshold(1 << 30)?; // keep up to 1 GiB cached between synchronisations
//! let tmp = stream.alloc_async::<f32, _>(1 << 20)?; // from the pool, in stream order
//! drop(tmp); // back to the pool, in stream order: the next allocation may reuse it
//! println!("{:?}", pool.stats()?);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use cudajit_sys as sys;
use ndarray::IntoDimension;

use super::array::DeviceArray;
use super::element::{AnyBitPattern, DeviceCopy};
use super::slice::DeviceSliceMut;
use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Result};
use crate::stream::Stream;

impl Stream {
    /// A new array of shape `shape`, uninitialised, allocated from the device's memory pool in
    /// this stream's order (`cuMemAllocAsync`). Dropped, it goes back to the pool in this
    /// stream's order (`cuMemFreeAsync`): work on other streams that uses it must be ordered
    /// before the drop (e.g. this stream waits for an event they record). Allowed inside a
    /// graph capture (allocated and freed by the graph's launches when dropped during the
    /// capture).
    pub fn alloc_async<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        DeviceArray::alloc_ordered(self, shape.into_dimension())
    }

    /// As [`Stream::alloc_async`], every byte zeroed in this stream's order.
    pub fn zeros_async<T: DeviceCopy, Sh: IntoDimension>(
        &self,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        let mut a = DeviceArray::<T, Sh::Dim>::alloc_ordered(self, shape.into_dimension())?;
        a.memset_async(0, self)?;
        Ok(a)
    }
}

/// A memory pool: the device's default one ([`Context::mem_pool`]), where
/// [`Stream::alloc_async`] (and the array operations given a stream) take memory from; or one
/// made to be shared with other processes
/// ([`Context::new_exportable_mem_pool`](crate::Context::new_exportable_mem_pool)), or imported
/// from another process ([`MemPool::import_fd`](crate::MemPool::import_fd)), both destroyed
/// when the last clone and the last array from them are dropped. The driver keeps freed memory
/// for reuse up to the release threshold and returns the rest at the next synchronisation.
#[derive(Clone)]
pub struct MemPool {
    ctx: Context,
    raw: sys::CUmemoryPool,
    /// For a pool cudajit made or imported: what destroys it.
    owned: Option<Arc<OwnedPool>>,
}

/// A pool cudajit made or imported, destroyed on drop.
struct OwnedPool {
    ctx: Context,
    raw: sys::CUmemoryPool,
    imported: bool,
    /// Whether the pool has been exported to a shareable handle (file descriptor) once.
    shared: std::sync::atomic::AtomicBool,
}

// SAFETY: as for MemPool below.
unsafe impl Send for OwnedPool {}
// SAFETY: as above.
unsafe impl Sync for OwnedPool {}

impl Drop for OwnedPool {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the pool was made or imported by cudajit and is destroyed once (the driver
        // defers the release while allocations from it are outstanding).
        check_in_drop(unsafe { backend().mem_pool_destroy(self.raw) });
    }
}

// SAFETY: a CUmemoryPool may be used from any thread; the driver synchronises internally.
unsafe impl Send for MemPool {}
// SAFETY: as above.
unsafe impl Sync for MemPool {}

/// A memory pool's use, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Held by live allocations.
    pub used: u64,
    /// Taken from the device by the pool (used, plus freed memory kept for reuse).
    pub reserved: u64,
    /// The most `used` since the pool was made or [`MemPool::reset_high_watermarks`].
    pub used_high: u64,
    /// The most `reserved` since then.
    pub reserved_high: u64,
    /// Freed memory the pool keeps past a synchronisation ([`MemPool::set_release_threshold`]).
    pub release_threshold: u64,
}

impl Context {
    /// The device's default memory pool (`cuDeviceGetDefaultMemPool`).
    pub fn mem_pool(&self) -> Result<MemPool> {
        let raw = backend().device_default_mem_pool(self.device().raw())?;
        Ok(MemPool {
            ctx: self.clone(),
            raw,
            owned: None,
        })
    }
}

impl MemPool {
    /// A pool cudajit made (`imported: false`) or imported from another process, destroyed when
    /// the last clone goes.
    pub(crate) fn owned(ctx: &Context, raw: sys::CUmemoryPool, imported: bool) -> MemPool {
        MemPool {
            ctx: ctx.clone(),
            raw,
            owned: Some(Arc::new(OwnedPool {
                ctx: ctx.clone(),
                raw,
                imported,
                shared: std::sync::atomic::AtomicBool::new(false),
            })),
        }
    }

    /// Whether the pool was made to be shared with other processes
    /// ([`Context::new_exportable_mem_pool`](crate::Context::new_exportable_mem_pool)).
    pub fn is_exportable(&self) -> bool {
        self.owned.as_ref().is_some_and(|o| !o.imported)
    }

    /// Whether the pool has been exported to a file descriptor.
    pub(crate) fn is_shared(&self) -> bool {
        self.owned
            .as_ref()
            .is_some_and(|o| o.shared.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Records that the pool has been exported to a file descriptor.
    pub(crate) fn mark_shared(&self) {
        if let Some(o) = &self.owned {
            o.shared.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// Whether the pool was imported from another process
    /// ([`MemPool::import_fd`](crate::MemPool::import_fd)).
    pub fn is_imported(&self) -> bool {
        self.owned.as_ref().is_some_and(|o| o.imported)
    }

    /// The context the pool was obtained in.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    fn get(&self, attr: sys::CUmemPool_attribute) -> Result<u64> {
        self.ctx.bind()?;
        // SAFETY: the pool is the device's default pool, live while its context is, or one
        // cudajit made or imported, live while `owned` is.
        unsafe { backend().mem_pool_attribute(self.raw, attr) }
    }

    fn set(&self, attr: sys::CUmemPool_attribute, value: u64) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: as above.
        unsafe { backend().set_mem_pool_attribute(self.raw, attr, value) }
    }

    /// How much freed memory the pool keeps for reuse past a synchronisation, in bytes
    /// (the driver's default is 0: everything freed goes back at the next synchronisation).
    pub fn release_threshold(&self) -> Result<u64> {
        self.get(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets the release threshold (`u64::MAX`: keep everything, as torch's caching
    /// allocator does).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        self.set(
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            bytes,
        )
    }

    /// Gives unused memory back to the device until the pool holds at most `keep_bytes`
    /// beyond what live allocations use (`cuMemPoolTrimTo`).
    pub fn trim_to(&self, keep_bytes: usize) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: as for `get`.
        unsafe { backend().mem_pool_trim_to(self.raw, keep_bytes) }
    }

    /// Used and reserved bytes, their high watermarks, and the release threshold.
    pub fn stats(&self) -> Result<PoolStats> {
        use sys::CUmemPool_attribute as A;
        Ok(PoolStats {
            used: self.get(A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            reserved: self.get(A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            used_high: self.get(A::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
            reserved_high: self.get(A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
            release_threshold: self.get(A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)?,
        })
    }

    /// Resets both high watermarks to the current values.
    pub fn reset_high_watermarks(&self) -> Result<()> {
        use sys::CUmemPool_attribute as A;
        self.set(A::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)?;
        self.set(A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUmemoryPool {
        self.raw
    }
}

impl fmt::Debug for MemPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.owned {
            None => "default",
            Some(o) if o.imported => "imported",
            Some(_) => "exportable",
        };
        write!(f, "MemPool({kind}, device {})", self.ctx.device().ordinal())
    }
}
