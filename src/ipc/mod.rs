//! Sharing device memory, events and memory pools with other processes on the same machine.
//!
//! - Plain device memory: [`DeviceArray::ipc_handle`](crate::DeviceArray::ipc_handle) gives an
//!   [`IpcMemHandle`], plain bytes ([`IpcMemHandle::to_bytes`]) to send by any means; the other
//!   process turns them back ([`IpcMemHandle::from_bytes`]) and opens a
//!   [`DeviceArray`](crate::DeviceArray) of the same element type and shape
//!   ([`IpcMemHandle::open`], `cuIpcOpenMemHandle`), usable like any other array (kernels,
//!   copies, views); dropping it closes the mapping (`cuIpcCloseMemHandle`).
//! - Events: [`Context::new_ipc_event`](crate::Context::new_ipc_event) makes an interprocess
//!   event, [`Event::ipc_handle`](crate::Event::ipc_handle) its [`IpcEventHandle`], which the
//!   other process opens ([`IpcEventHandle::open`]) to wait on what this one recorded, or to
//!   record what this one waits on.
//! - Stream-ordered pool memory: a pool made exportable
//!   ([`Context::new_exportable_mem_pool`](crate::Context::new_exportable_mem_pool)) is shared
//!   as a file descriptor ([`MemPool::export_fd`](crate::MemPool::export_fd), passed with
//!   [`send_fd`] / [`recv_fd`] over a Unix socket) and imported
//!   ([`MemPool::import_fd`](crate::MemPool::import_fd)); each of its allocations
//!   ([`Stream::alloc_from_pool`](crate::Stream::alloc_from_pool)) is shared as an
//!   [`IpcPoolPtrHandle`] ([`DeviceArray::pool_ipc_handle`](crate::DeviceArray::pool_ipc_handle))
//!   and opened from the imported pool ([`IpcPoolPtrHandle::open`]).
//!
//! # The contract
//! - The exporter keeps the memory alive while others have it open: it must not drop the
//!   exported array (or, for pool memory, free it) until every other process has dropped what it
//!   opened, and for pool memory until their frees have completed (record an IPC event after
//!   dropping the imported array and make the exporter's stream wait on it, or synchronize).
//!   Freed memory may be reused, and a process still using it reads or corrupts whatever lives
//!   there next. cudajit cannot check this across processes.
//! - Accesses are ordered by the user, as between streams: the reader waits (an IPC event, or a
//!   synchronization and a message) for the writer's work to finish.
//! - A handle is opened in another process than the one that exported it (CUDA refuses the
//!   exporter itself; cudajit says so before asking), on the exporter's device or one that is
//!   its peer (`cuIpcOpenMemHandle` enables peer access lazily).
//! - Handles are checked when opened: the element type (its name and size), the number of
//!   axes, the process and the device; an exporter that is gone or freed the memory is the
//!   driver's error, reported as [`Error::Ipc`] with what it likely means.
//! - The simulator has no processes to share with: every IPC call there is an error that says
//!   IPC needs a real GPU.
//!
//! ```no_run
//! # use cudajit::prelude::*;
//! # fn main() -> cudajit::Result<()> {
//! // Process A
//! let ctx = Device::get(0)?.primary_context()?;
//! let a = ctx.to_device(&[1.0f32, 2.0, 3.0])?;
//! let bytes: Vec<u8> = a.ipc_handle()?.to_bytes(); // send these to process B
//! # let _ = bytes;
//! // Process B (with `bytes` received)
//! # let bytes: Vec<u8> = vec![];
//! let ctx = Device::get(0)?.primary_context()?;
//! let h = cudajit::ipc::IpcMemHandle::from_bytes(&bytes)?;
//! let b: DeviceArray<f32> = h.open(&ctx)?; // the same memory as `a`
//! # Ok(()) }
//! ```

/// The parts an array handle ([`IpcMemHandle`], [`IpcPoolPtrHandle`]) shares: its bytes both
/// ways and what it says of the array and its exporter.
macro_rules! array_handle_common {
    ($handle:ident, $kind:expr) => {
        impl $handle {
            /// The handle as bytes (about 130 for a 1-D array), for any channel between
            /// processes.
            pub fn to_bytes(&self) -> Vec<u8> {
                self.record.encode()
            }

            #[doc = concat!("A handle from [`", stringify!($handle), "::to_bytes`]'s bytes; an error for bytes that are not one (truncated, another kind of handle, another format version).")]
            pub fn from_bytes(bytes: &[u8]) -> Result<$handle> {
                Ok($handle {
                    record: Record::decode(bytes, $kind)?,
                })
            }

            /// The array the handle describes: every array handle has one (decoding and
            /// exporting make it so; `wire::NO_ARRAY` stands in otherwise, which no element type
            /// matches).
            fn array(&self) -> &ArrayDesc {
                self.record.array.as_ref().unwrap_or(&crate::ipc::wire::NO_ARRAY)
            }

            /// The array's shape.
            pub fn shape(&self) -> &[usize] {
                &self.array().shape
            }

            /// The element type's name (`std::any::type_name`, e.g. `f32`).
            pub fn type_name(&self) -> &str {
                &self.array().type_name
            }

            /// The exporting process's id.
            pub fn exporter_pid(&self) -> u32 {
                self.record.origin.pid
            }
        }
    };
}

mod event;
#[cfg(unix)]
mod fd;
mod memory;
mod pool;
#[cfg(test)]
mod tests;
mod wire;

pub use event::IpcEventHandle;
#[cfg(unix)]
pub use fd::{recv_fd, send_fd};
pub use memory::IpcMemHandle;
pub use pool::IpcPoolPtrHandle;

use crate::context::{Context, Device};
use crate::error::{Error, Result};

/// A driver error of an IPC step as [`Error::Ipc`]: what was being done, what the code likely
/// means, and the code. Errors that are not the driver's (the simulator's own) pass unchanged.
pub(crate) fn driver_error(e: Error, doing: &str, meaning: impl FnOnce(u32) -> String) -> Error {
    match e {
        Error::Driver { call, code } => Error::Ipc {
            message: format!("{doing} failed in {call}: {}", meaning(code.value())),
            code: Some(code),
        },
        other => other,
    }
}

/// An error unless `ctx`'s device may open memory of the device with `uuid` (the same device,
/// or a peer of it). A device that is not visible here is left to the driver.
pub(crate) fn check_device(ctx: &Context, uuid: &[u8; 16], ordinal: u32) -> Result<()> {
    let here = ctx.device();
    if &here.uuid_bytes()? == uuid {
        return Ok(());
    }
    for dev in crate::context::devices()? {
        if &dev.uuid_bytes()? == uuid {
            if here.can_access_peer(&dev)? {
                return Ok(());
            }
            return Err(Error::Ipc {
                message: format!(
                    "the handle's memory is on another device ({}, device {ordinal} in the \
                     exporting process, device {} here), which device {} cannot access \
                     (no peer access between them): open it in a context of device {}",
                    uuid_text(uuid),
                    dev.ordinal(),
                    here.ordinal(),
                    dev.ordinal()
                ),
                code: None,
            });
        }
    }
    Ok(())
}

/// The device's UUID as nvidia-smi prints it (`GPU-xxxxxxxx-xxxx-...`).
fn uuid_text(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Where a handle made in `ctx` comes from.
pub(crate) fn origin_of(ctx: &Context) -> Result<wire::Origin> {
    let dev: Device = ctx.device();
    Ok(wire::Origin::here(dev.uuid_bytes()?, dev.ordinal()))
}
