//! Events: markers in a stream's work, for waiting, cross-stream ordering and timing.

use std::fmt;

use cudajit_sys as sys;

use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::stream::Stream;

/// A CUDA event. Destroyed on drop.
pub struct Event {
    ctx: Context,
    raw: sys::CUevent,
    /// Created with timing (so `elapsed_ms` may use it).
    timing: bool,
    /// Created with `CU_EVENT_INTERPROCESS` (or opened from another process's handle), so
    /// `crate::ipc` may share it.
    interprocess: bool,
}

// SAFETY: a CUevent may be used from any thread; the driver synchronises internally.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Context {
    /// A new event that records timestamps (numba's `cuda.event(timing=True)`).
    pub fn new_event(&self) -> Result<Event> {
        self.new_event_with(true, false)
    }

    /// A new event; `timing: false` makes it cheaper, `blocking_sync: true` makes
    /// [`Event::synchronize`] sleep instead of spin.
    pub fn new_event_with(&self, timing: bool, blocking_sync: bool) -> Result<Event> {
        self.bind()?;
        let mut flags = 0;
        if !timing {
            flags |= sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
        }
        if blocking_sync {
            flags |= sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC.0;
        }
        let raw = backend().event_create(flags)?;
        Ok(Event {
            ctx: self.clone(),
            raw,
            timing,
            interprocess: false,
        })
    }
}

impl Event {
    /// An interprocess event (made with `CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING`, or
    /// opened from another process's handle) that this value destroys on drop.
    pub(crate) fn from_interprocess(ctx: &Context, raw: sys::CUevent) -> Event {
        Event {
            ctx: ctx.clone(),
            raw,
            timing: false,
            interprocess: true,
        }
    }

    /// Whether the event may be shared with other processes (`crate::ipc`).
    pub(crate) fn is_interprocess(&self) -> bool {
        self.interprocess
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Marks the current end of `stream`'s queued work.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.ctx.check_same(stream.context(), "the stream")?;
        self.ctx.bind()?;
        // SAFETY: both handles are live and belong to the bound context.
        unsafe { backend().event_record(self.raw, stream.raw()) }
    }

    /// Whether the recorded work has completed (true if never recorded).
    pub fn query(&self) -> Result<bool> {
        self.ctx.bind()?;
        // SAFETY: the handle is live.
        unsafe { backend().event_query(self.raw) }
    }

    /// Waits until the recorded work has completed.
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::refuse("Event::synchronize")?;
        self.ctx.bind()?;
        // SAFETY: the handle is live.
        unsafe { backend().event_synchronize(self.raw) }
    }

    /// Makes `stream`'s later work wait for this event (numba's `event.wait(stream)`).
    pub fn wait(&self, stream: &Stream) -> Result<()> {
        stream.wait_event(self)
    }

    /// Milliseconds from `start` to this event; both must have been recorded and completed,
    /// and both must have timing enabled.
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        elapsed_ms(start, self)
    }
}

/// Milliseconds between two completed events with timing enabled (numba's `event_elapsed_time`).
pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f32> {
    start.ctx.check_same(&end.ctx, "the end event")?;
    for (which, e) in [("start", start), ("end", end)] {
        if !e.timing {
            return Err(Error::usage(format!(
                "cannot time events: the {which} event was created without timing \
                 (`new_event_with(false, ..)`); create both with `ctx.new_event()` or \
                 `new_event_with(true, ..)`"
            )));
        }
    }
    start.ctx.bind()?;
    // SAFETY: both events are live in the bound context.
    unsafe { backend().event_elapsed_ms(start.raw, end.raw) }.map_err(|e| {
        match e.driver_code().map(|c| c.0) {
            Some(sys::CUresult::CUDA_ERROR_NOT_READY) => Error::usage(
                "cannot time events: the work recorded by one of them has not completed yet; \
                 call `end.synchronize()` first",
            ),
            Some(sys::CUresult::CUDA_ERROR_INVALID_HANDLE) => Error::usage(
                "cannot time events: one of them was never recorded; call `event.record(&stream)` \
                 on both, start first",
            ),
            _ => e,
        }
    })
}

impl Drop for Event {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the event was created by cudajit and is destroyed once.
        check_in_drop(unsafe { backend().event_destroy(self.raw) });
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({:p})", self.raw)
    }
}
