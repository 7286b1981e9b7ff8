//! What this thread is capturing: the captures it has begun (innermost last), the objects
//! their graphs must keep alive (host functions), and the device memory dropped during a
//! capture (given to the graph, whose launches may still use it).
//!
//! The driver captures in thread-local mode: a call from this thread that cannot be captured
//! (a synchronisation, an allocation outside a pool, a synchronous or pageable copy) would
//! invalidate the capture. cudajit refuses such calls first ([`refuse`]) with an error that
//! names the call, and the capture goes on.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use cudajit_sys as sys;

use crate::context::Context;
use crate::error::{Error, Result};

/// What a graph keeps alive for its launches.
pub(crate) type KeepAlive = Arc<dyn Any + Send + Sync>;

/// One capture this thread has begun.
pub(crate) struct Active {
    pub(crate) stream: sys::CUstream,
    pub(crate) keep: Vec<KeepAlive>,
    /// Device allocations dropped during the capture (with their contexts), freed with the
    /// graph.
    pub(crate) frees: Vec<(Context, sys::CUdeviceptr)>,
}

thread_local! {
    /// How many captures this thread has begun and not ended (read on every refusable call).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static ACTIVE: RefCell<Vec<Active>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread is capturing a graph now.
#[inline]
pub(crate) fn capturing() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// An error when this thread is capturing: `call` cannot be part of a graph.
#[inline]
pub(crate) fn refuse(call: &str) -> Result<()> {
    if capturing() {
        Err(refusal(call))
    } else {
        Ok(())
    }
}

#[cold]
fn refusal(call: &str) -> Error {
    Error::usage(format!(
        "{call} cannot be captured into a graph: this thread is capturing one \
         (Stream::begin_capture) and the call would synchronise with the device or allocate \
         memory outside the stream's pool. Do it before begin_capture or after end_capture \
         (allocate with Stream::alloc_async, copy from pinned memory); the capture goes on"
    ))
}

/// Starts tracking a capture of `stream`.
pub(crate) fn push(stream: sys::CUstream) {
    ACTIVE.with(|a| {
        a.borrow_mut().push(Active {
            stream,
            keep: Vec::new(),
            frees: Vec::new(),
        })
    });
    DEPTH.with(|d| d.set(d.get() + 1));
}

/// Stops tracking the capture of `stream` (begun on this thread): what it collected.
pub(crate) fn pop(stream: sys::CUstream) -> Option<Active> {
    let found = ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let i = a.iter().rposition(|c| c.stream == stream)?;
        Some(a.remove(i))
    });
    if found.is_some() {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
    found
}

/// Whether this thread began a capture of `stream`.
pub(crate) fn is_active(stream: sys::CUstream) -> bool {
    ACTIVE.with(|a| a.borrow().iter().any(|c| c.stream == stream))
}

/// Keeps `object` alive as long as the graph of `stream`'s capture (begun on this thread).
/// `false` when there is no such capture.
pub(crate) fn keep_alive(stream: sys::CUstream, object: KeepAlive) -> bool {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        match a.iter_mut().rev().find(|c| c.stream == stream) {
            Some(c) => {
                c.keep.push(object);
                true
            }
            None => false,
        }
    })
}

/// During a capture, takes a device allocation that is being dropped: it is freed with the
/// graph (whose launches may use it) instead of now (`cuMemFree` would invalidate the
/// capture). `false` when this thread is not capturing: free it as usual.
pub(crate) fn defer_free(ctx: &Context, ptr: sys::CUdeviceptr) -> bool {
    if !capturing() {
        return false;
    }
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        match a.last_mut() {
            Some(c) => {
                c.frees.push((ctx.clone(), ptr));
                true
            }
            None => false,
        }
    })
}
