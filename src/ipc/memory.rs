//! Plain device memory shared between processes: [`IpcMemHandle`] (`cuIpcGetMemHandle` /
//! `cuIpcOpenMemHandle` / `cuIpcCloseMemHandle`).

use std::fmt;

use cudajit_sys as sys;
use ndarray::Dimension;

use super::wire::{ArrayDesc, Kind, Origin, Record};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result, ShapeDisplay};
use crate::memory::{DeviceArray, DeviceCopy, DeviceSlice, Release};

/// A device array as another process on this machine can open it: the driver's 64-byte IPC
/// handle with the array's element type, shape and byte offset and the exporting process and
/// device, so that the opener can check what it opens. Plain data: [`IpcMemHandle::to_bytes`]
/// and [`IpcMemHandle::from_bytes`] carry it over any channel. See the [module
/// docs](crate::ipc) for the contract (the exporter keeps the array alive).
#[derive(Clone, PartialEq, Eq)]
pub struct IpcMemHandle {
    record: Record,
}

impl<T: DeviceCopy, D: Dimension> DeviceArray<T, D> {
    /// A handle another process opens as this array ([`IpcMemHandle::open`]):
    /// `cuIpcGetMemHandle` of the allocation, with the array's type, shape and offset in it.
    ///
    /// This process must keep the array alive (not drop it) until every process that opened
    /// the handle has dropped what it opened. Errors for an empty array (no memory), for
    /// stream-ordered pool memory (which `cuIpcGetMemHandle` does not share: use an exportable
    /// pool and [`DeviceArray::pool_ipc_handle`]), for an array that is itself an opened
    /// handle (pass the original handle on instead), and on the simulator.
    pub fn ipc_handle(&self) -> Result<IpcMemHandle> {
        match self.release() {
            Release::Ordered(_) => {
                return Err(Error::Ipc {
                    message: "this array is stream-ordered pool memory (Stream::alloc_async or \
                              alloc_from_pool), which cuIpcGetMemHandle cannot share: allocate \
                              it from an exportable pool (Context::new_exportable_mem_pool, \
                              Stream::alloc_from_pool) and share it with pool_ipc_handle, or \
                              allocate it with Context::alloc"
                        .to_string(),
                    code: None,
                })
            }
            Release::IpcMapping { .. } => {
                return Err(Error::Ipc {
                    message: "this array was opened from another process's IPC handle and cannot \
                              be exported again: pass the original handle's bytes on instead"
                        .to_string(),
                    code: None,
                })
            }
            Release::Free => {}
        }
        let ptr = self.device_ptr();
        if ptr == 0 {
            return Err(Error::Ipc {
                message: format!(
                    "an empty array (shape {}) has no device memory to share",
                    ShapeDisplay(self.shape())
                ),
                code: None,
            });
        }
        let ctx = self.context();
        ctx.bind()?;
        let get = |e| {
            super::driver_error(e, "exporting the array's memory", |_| {
                "the allocation cannot be shared (IPC needs a device with unified addressing \
                 on Linux, and memory from cuMemAlloc)"
                    .to_string()
            })
        };
        // SAFETY: the array's allocation is live and of the bound context.
        let raw = unsafe { backend().ipc_get_mem_handle(ptr) }.map_err(get)?;
        // SAFETY: as above.
        let (base, _) = unsafe { backend().mem_address_range(ptr) }.map_err(get)?;
        Ok(IpcMemHandle {
            record: Record {
                kind: Kind::Mem,
                raw,
                origin: super::origin_of(ctx)?,
                array: Some(ArrayDesc {
                    byte_offset: ptr - base,
                    elem_size: std::mem::size_of::<T>() as u32,
                    type_name: std::any::type_name::<T>().to_string(),
                    shape: self.shape().to_vec(),
                }),
            },
        })
    }
}

array_handle_common!(IpcMemHandle, Kind::Mem);

impl IpcMemHandle {
    /// The UUID of the device the memory is on.
    pub fn device_uuid(&self) -> [u8; 16] {
        self.record.origin.uuid
    }

    /// Opens the exported array in `ctx` (of the exporter's device, or a peer of it) as an
    /// array of `T` with `D`'s number of axes (`IxDyn` takes any): `cuIpcOpenMemHandle` with
    /// lazy peer access. The array is usable like any other and closes the mapping when
    /// dropped (`cuIpcCloseMemHandle`); the exporter must keep its array alive until then.
    ///
    /// Errors, before any driver call, when the element type or the number of axes differs,
    /// in the exporting process itself, on a device that cannot reach the memory, and on the
    /// simulator; and when the driver cannot map the memory (the exporter exited or freed it,
    /// a handle from another machine), with the driver's code.
    pub fn open<T: DeviceCopy, D: Dimension>(&self, ctx: &Context) -> Result<DeviceArray<T, D>> {
        let desc = self.array();
        desc.check_type::<T>()?;
        let dim: D = desc.dim()?;
        open_checks(&self.record.origin, ctx, Kind::Mem)?;
        ctx.bind()?;
        let base = backend()
            .ipc_open_mem_handle(&self.record.raw)
            .map_err(|e| {
                super::driver_error(e, "opening the IPC memory handle", |code| {
                    open_meaning(code, self.record.origin.pid)
                })
            })?;
        // The array's first element lies `byte_offset` bytes into the mapping.
        let ptr = base + desc.byte_offset as sys::CUdeviceptr;
        // SAFETY: `base` is the mapping just opened in the bound context, closed by the array
        // (once) when it drops, here on the error below or later by the user.
        let array = unsafe { DeviceArray::from_parts(ctx, ptr, dim, Release::IpcMapping { base }) };
        // The mapping must hold the array the handle describes (a mismatch means corrupt or
        // forged bytes). Where the driver cannot say, the handle is trusted as it is.
        // SAFETY: the mapping is live in the bound context.
        if let Ok((_, size)) = unsafe { backend().mem_address_range(base) } {
            let end = (desc.byte_offset as usize).checked_add(desc.num_bytes());
            if end.map_or(true, |end| end > size) {
                return Err(Error::Ipc {
                    message: format!(
                        "the mapped allocation has {size} bytes, fewer than the handle's array \
                         needs ({} bytes at offset {}): the handle does not match the memory \
                         (corrupt bytes?)",
                        desc.num_bytes(),
                        desc.byte_offset
                    ),
                    code: None,
                });
            }
        }
        Ok(array)
    }
}

/// The checks before opening any handle in `ctx`: another process, a device that can reach
/// the memory.
pub(crate) fn open_checks(origin: &Origin, ctx: &Context, kind: Kind) -> Result<()> {
    origin.check_other_process(kind)?;
    if crate::on_simulator() {
        // The backend answers every IPC call with this error; say it before device checks.
        return Err(crate::backend::no_ipc());
    }
    super::check_device(ctx, &origin.uuid, origin.ordinal)
}

/// What a failed `cuIpcOpenMemHandle` most likely means.
fn open_meaning(code: u32, pid: u32) -> String {
    use sys::CUresult as R;
    let c = sys::CUresult(code);
    if c == R::CUDA_ERROR_INVALID_CONTEXT {
        format!("the handle cannot be opened in this context (is this the exporting process, pid {pid}?)")
    } else if c == R::CUDA_ERROR_TOO_MANY_PEERS || c == R::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED {
        "this device cannot reach the exporter's device (peer access unavailable)".to_string()
    } else {
        format!(
            "the exporter's memory could not be mapped: the exporting process (pid {pid}) may \
             have exited or dropped the array (a handle is valid only while the exporter keeps \
             its array alive), or the handle comes from another machine"
        )
    }
}

impl fmt::Debug for IpcMemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.array();
        write!(
            f,
            "IpcMemHandle({}, shape {:?}, offset {}, from pid {} device {})",
            a.type_name, a.shape, a.byte_offset, self.record.origin.pid, self.record.origin.ordinal
        )
    }
}
