//! Events shared between processes: [`IpcEventHandle`] (`cuIpcGetEventHandle` /
//! `cuIpcOpenEventHandle`).

use std::fmt;

use cudajit_sys as sys;

use super::memory::open_checks;
use super::wire::{Kind, Record};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::Event;

/// An interprocess event as another process opens it ([`IpcEventHandle::open`]): the driver's
/// 64-byte handle and the exporting process and device. Plain data:
/// [`IpcEventHandle::to_bytes`] / [`IpcEventHandle::from_bytes`].
///
/// Either side records the event on its streams and the other waits on it
/// ([`Event::wait`], [`Event::synchronize`]), which orders work across processes as events
/// order it across streams. A wait sees the most recent record that was issued before it: the
/// processes agree by other means (a message) on which record a wait is for.
#[derive(Clone, PartialEq, Eq)]
pub struct IpcEventHandle {
    record: Record,
}

impl Context {
    /// A new event that other processes can open ([`Event::ipc_handle`]):
    /// `CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING` (the driver requires interprocess
    /// events to be without timing).
    pub fn new_ipc_event(&self) -> Result<Event> {
        self.bind()?;
        let flags = sys::CUevent_flags::CU_EVENT_INTERPROCESS.0
            | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
        let raw = backend().event_create(flags)?;
        Ok(Event::from_interprocess(self, raw))
    }
}

impl Event {
    /// A handle another process opens as this event ([`IpcEventHandle::open`]). Only for
    /// events made by [`Context::new_ipc_event`] (or opened from a handle); an error on the
    /// simulator.
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        if !self.is_interprocess() {
            return Err(Error::Ipc {
                message: "this event was not created for IPC: make it with \
                          Context::new_ipc_event (CU_EVENT_INTERPROCESS)"
                    .to_string(),
                code: None,
            });
        }
        let ctx = self.context();
        ctx.bind()?;
        // SAFETY: the event is live, interprocess, and of the bound context.
        let raw = unsafe { backend().ipc_get_event_handle(self.raw()) }.map_err(|e| {
            super::driver_error(e, "exporting the event", |_| {
                "the driver refused to share this event".to_string()
            })
        })?;
        Ok(IpcEventHandle {
            record: Record {
                kind: Kind::Event,
                raw,
                origin: super::origin_of(ctx)?,
                array: None,
            },
        })
    }
}

impl IpcEventHandle {
    /// The handle as bytes, for any channel between processes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.record.encode()
    }

    /// A handle from [`IpcEventHandle::to_bytes`]'s bytes; an error for bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcEventHandle> {
        Ok(IpcEventHandle {
            record: Record::decode(bytes, Kind::Event)?,
        })
    }

    /// The exporting process's id.
    pub fn exporter_pid(&self) -> u32 {
        self.record.origin.pid
    }

    /// Opens the exported event in `ctx` (`cuIpcOpenEventHandle`); the returned event is
    /// destroyed on drop (the exporter's stays). Errors in the exporting process itself, on the
    /// simulator, and when the driver cannot open it (the exporter is gone, a corrupt handle).
    pub fn open(&self, ctx: &Context) -> Result<Event> {
        open_checks(&self.record.origin, ctx, Kind::Event)?;
        ctx.bind()?;
        let pid = self.record.origin.pid;
        let raw = backend()
            .ipc_open_event_handle(&self.record.raw)
            .map_err(|e| {
                super::driver_error(e, "opening the IPC event handle", |_| {
                    format!(
                        "the event could not be opened: the exporting process (pid {pid}) may \
                         have exited or destroyed it, or the handle comes from another machine"
                    )
                })
            })?;
        Ok(Event::from_interprocess(ctx, raw))
    }
}

impl fmt::Debug for IpcEventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IpcEventHandle(from pid {} device {})",
            self.record.origin.pid, self.record.origin.ordinal
        )
    }
}
