//! Stream-ordered pool memory shared between processes: exportable pools
//! (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`), shared as a file descriptor and imported
//! (`cuMemPoolExportToShareableHandle` / `cuMemPoolImportFromShareableHandle`), and their
//! allocations as [`IpcPoolPtrHandle`] (`cuMemPoolExportPointer` / `cuMemPoolImportPointer`).

use std::fmt;

use ndarray::{Dimension, IntoDimension};

use super::memory::open_checks;
use super::wire::{ArrayDesc, Kind, Record};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{
    AnyBitPattern, DeviceArray, DeviceCopy, DeviceSlice, MemPool, Ordered, Release,
};
use crate::stream::Stream;

/// One allocation of an exportable pool as another process opens it from the imported pool
/// ([`IpcPoolPtrHandle::open`]): the driver's 64-byte export data, the array's element type
/// and shape, and the exporting process and device. Plain data: [`IpcPoolPtrHandle::to_bytes`]
/// / [`IpcPoolPtrHandle::from_bytes`] (unlike the pool's file descriptor, these bytes need no
/// special channel).
#[derive(Clone, PartialEq, Eq)]
pub struct IpcPoolPtrHandle {
    record: Record,
}

impl Context {
    /// A new memory pool of this device's memory that can be shared with other processes
    /// (`cuMemPoolCreate` with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`): allocate from it
    /// with [`Stream::alloc_from_pool`], share it with [`MemPool::export_fd`] and each
    /// allocation with [`DeviceArray::pool_ipc_handle`]. Destroyed when the last clone and the
    /// last array from it are gone. An error on the simulator, and where the device or driver
    /// does not support pools shared as file descriptors.
    pub fn new_exportable_mem_pool(&self) -> Result<MemPool> {
        self.bind()?;
        let raw = backend()
            .mem_pool_create_exportable(self.device().raw())
            .map_err(|e| {
                super::driver_error(e, "creating an exportable memory pool", |_| {
                    "this device or driver does not support memory pools shared as POSIX file \
                     descriptors (see the device attribute \
                     MEMPOOL_SUPPORTED_HANDLE_TYPES)"
                        .to_string()
                })
            })?;
        Ok(MemPool::owned(self, raw, false))
    }
}

impl Stream {
    /// A new array of shape `shape`, uninitialised, allocated from `pool` in this stream's order
    /// (`cuMemAllocFromPoolAsync`), freed in this stream's order on drop. For an exportable
    /// pool ([`Context::new_exportable_mem_pool`]); an imported pool cannot allocate.
    pub fn alloc_from_pool<T: AnyBitPattern, Sh: IntoDimension>(
        &self,
        pool: &MemPool,
        shape: Sh,
    ) -> Result<DeviceArray<T, Sh::Dim>> {
        if pool.is_imported() {
            return Err(Error::Ipc {
                message: "a pool imported from another process cannot allocate (only the \
                          exporter's pool can): open its allocations with \
                          IpcPoolPtrHandle::open"
                    .to_string(),
                code: None,
            });
        }
        pool.context().check_same(self.context(), "the stream")?;
        DeviceArray::alloc_from_pool(self, pool, shape.into_dimension())
    }
}

#[cfg(unix)]
impl MemPool {
    /// A new file descriptor for this exportable pool
    /// (`cuMemPoolExportToShareableHandle`), to pass to another process with
    /// [`send_fd`](super::send_fd) (a descriptor means nothing as a number in another process).
    /// Closing it (dropping the `OwnedFd`) after sending is fine.
    pub fn export_fd(&self) -> Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        if !self.is_exportable() {
            return Err(Error::Ipc {
                message: "only a pool made by Context::new_exportable_mem_pool can be exported \
                          (not the device's default pool, nor an imported one)"
                    .to_string(),
                code: None,
            });
        }
        self.context().bind()?;
        // SAFETY: the pool is live (held by `self`) and of the bound context.
        let fd = unsafe { backend().mem_pool_export_fd(self.raw()) }.map_err(|e| {
            super::driver_error(e, "exporting the memory pool", |_| {
                "the driver could not make a file descriptor for the pool".to_string()
            })
        })?;
        if fd < 0 {
            return Err(Error::Ipc {
                message: format!("the driver returned an invalid file descriptor ({fd})"),
                code: None,
            });
        }
        self.mark_shared();
        // SAFETY: the driver made a new descriptor for the caller, owned by nothing else.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }

    /// Imports another process's exportable pool from the file descriptor it sent
    /// ([`recv_fd`](super::recv_fd)), into `ctx`
    /// (`cuMemPoolImportFromShareableHandle`); the descriptor stays the caller's (close it
    /// after). The pool cannot allocate; open the exporter's allocations from it with
    /// [`IpcPoolPtrHandle::open`]. Destroyed when the last clone and the last array opened
    /// from it are gone.
    pub fn import_fd(ctx: &Context, fd: std::os::fd::BorrowedFd<'_>) -> Result<MemPool> {
        use std::os::fd::AsRawFd;
        if crate::on_simulator() {
            return Err(crate::backend::no_ipc());
        }
        ctx.bind()?;
        let raw = backend().mem_pool_import_fd(fd.as_raw_fd()).map_err(|e| {
            super::driver_error(e, "importing the memory pool", |_| {
                "the file descriptor is not an exported memory pool (was it passed with \
                 send_fd/recv_fd from MemPool::export_fd?)"
                    .to_string()
            })
        })?;
        Ok(MemPool::owned(ctx, raw, true))
    }
}

impl<T: DeviceCopy, D: Dimension> DeviceArray<T, D> {
    /// A handle another process opens as this array from the imported pool
    /// ([`IpcPoolPtrHandle::open`]): `cuMemPoolExportPointer`, with the array's type and shape.
    /// Only for arrays from an exportable pool ([`Stream::alloc_from_pool`]).
    ///
    /// The other process must not use the array before its allocation completes on this
    /// process's stream (record an IPC event after it and have them wait on it), and this
    /// process must not free the array until every importer's free has completed (they drop
    /// theirs, record an IPC event, and this process's freeing stream waits on it).
    pub fn pool_ipc_handle(&self) -> Result<IpcPoolPtrHandle> {
        let (pool, stream) = match self.release() {
            Release::Ordered(o) => (o.pool.as_ref().filter(|p| p.is_exportable()), o.stream),
            _ => (None, std::ptr::null_mut()),
        };
        let Some(pool) = pool else {
            return Err(Error::Ipc {
                message: "only an array allocated from an exportable pool \
                          (Context::new_exportable_mem_pool, Stream::alloc_from_pool) has a pool \
                          handle; share memory from Context::alloc with ipc_handle"
                    .to_string(),
                code: None,
            });
        };
        let ptr = self.device_ptr();
        if ptr == 0 {
            return Err(Error::Ipc {
                message: "an empty array has no device memory to share".to_string(),
                code: None,
            });
        }
        let ctx = self.context();
        ctx.bind()?;
        // The driver exports allocations only of a pool already shared (CUDA's own sample
        // exports the pool first; pointers first fail with CUDA_ERROR_INVALID_VALUE, seen on
        // an H200 with driver 580): export it once, and close the descriptor (each
        // `export_fd` makes a new one).
        #[cfg(unix)]
        if !pool.is_shared() {
            drop(pool.export_fd()?);
        }
        // SAFETY: the allocation is live (held by `self`), from a pool of the bound context.
        let first = unsafe { backend().mem_pool_export_pointer(ptr) };
        // An allocation not yet made on its stream may be refused too: wait for the stream
        // that allocated it and ask again.
        let exported = match first {
            Err(_) if !stream.is_null() => {
                // SAFETY: the allocating stream is kept alive by the array (`Ordered`).
                unsafe { backend().stream_synchronize(stream) }?;
                // SAFETY: as above.
                unsafe { backend().mem_pool_export_pointer(ptr) }
            }
            r => r,
        };
        let raw = exported.map_err(|e| {
            super::driver_error(e, "exporting the pool allocation", |_| {
                "the driver refused to export this allocation".to_string()
            })
        })?;
        Ok(IpcPoolPtrHandle {
            record: Record {
                kind: Kind::PoolPtr,
                raw,
                origin: super::origin_of(ctx)?,
                array: Some(ArrayDesc {
                    byte_offset: 0,
                    elem_size: std::mem::size_of::<T>() as u32,
                    type_name: std::any::type_name::<T>().to_string(),
                    shape: self.shape().to_vec(),
                }),
            },
        })
    }
}

array_handle_common!(IpcPoolPtrHandle, Kind::PoolPtr);

impl IpcPoolPtrHandle {
    /// Opens the exported allocation from `pool` (the exporter's pool, imported with
    /// [`MemPool::import_fd`]) as an array of `T` with `D`'s number of axes
    /// (`cuMemPoolImportPointer`), freed on drop in `stream`'s order (`cuMemFreeAsync`), as
    /// the driver asks for imported pointers. Grants `stream`'s device access to the pool
    /// first if it has none (`cuMemPoolSetAccess`).
    ///
    /// Errors, before any driver call, when the type or number of axes differs, when `pool` is
    /// not an imported pool or is of another context than `stream`, in the exporting process,
    /// and on the simulator; and when the driver cannot import it (freed by the exporter, from
    /// another pool), with its code.
    pub fn open<T: DeviceCopy, D: Dimension>(
        &self,
        pool: &MemPool,
        stream: &Stream,
    ) -> Result<DeviceArray<T, D>> {
        let desc = self.array();
        desc.check_type::<T>()?;
        let dim: D = desc.dim()?;
        if !pool.is_imported() {
            return Err(Error::Ipc {
                message: "open a pool pointer handle from the exporter's pool imported into this \
                          process (MemPool::import_fd), not from a pool of this process"
                    .to_string(),
                code: None,
            });
        }
        let ctx = stream.context();
        pool.context().check_same(ctx, "the stream")?;
        open_checks(&self.record.origin, ctx, Kind::PoolPtr)?;
        ctx.bind()?;
        let dev = ctx.device().raw();
        // SAFETY: the pool is live (held by `pool`) and imported into the bound context.
        if !unsafe { backend().mem_pool_can_access(pool.raw(), dev) }? {
            // SAFETY: as above.
            unsafe { backend().mem_pool_grant_access(pool.raw(), dev) }?;
        }
        let pid = self.record.origin.pid;
        // SAFETY: as above; the export data is read during the call and checked by the driver.
        let ptr = unsafe { backend().mem_pool_import_pointer(pool.raw(), &self.record.raw) }
            .map_err(|e| {
                super::driver_error(e, "importing the pool allocation", |_| {
                    format!(
                        "the allocation could not be imported: the exporting process (pid {pid}) \
                         may have freed it or exited, or it belongs to another pool than the one \
                         given"
                    )
                })
            })?;
        let ordered = Ordered {
            stream: stream.raw(),
            _keep: stream.keep_handle(),
            pool: Some(pool.clone()),
        };
        // SAFETY: the pointer was just imported into the bound context, addresses the
        // exporter's allocation of the handle's shape, and is freed once on drop with
        // cuMemFreeAsync on `stream` (kept alive), the pool kept alive until then.
        Ok(unsafe { DeviceArray::from_parts(ctx, ptr, dim, Release::Ordered(ordered)) })
    }
}

impl fmt::Debug for IpcPoolPtrHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.array();
        write!(
            f,
            "IpcPoolPtrHandle({}, shape {:?}, from pid {} device {})",
            a.type_name, a.shape, self.record.origin.pid, self.record.origin.ordinal
        )
    }
}
