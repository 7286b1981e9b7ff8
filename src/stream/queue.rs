//! The `Stream` type (a queue of device work) and its creation.

use std::fmt;
use std::sync::{Arc, OnceLock};

use cudajit_sys as sys;

use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Result};
use crate::event::Event;
use crate::memory::scratch::Workspace;

/// `CU_STREAM_LEGACY`: the legacy default stream, which synchronises with blocking streams.
const CU_STREAM_LEGACY: usize = 0x1;
/// `CU_STREAM_PER_THREAD`: the calling thread's default stream.
const CU_STREAM_PER_THREAD: usize = 0x2;

/// How to create a stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// `true`: the stream does not synchronise with the legacy default stream
    /// (`CU_STREAM_NON_BLOCKING`).
    pub non_blocking: bool,
    /// Priority; lower numbers are higher priority. See [`Context::stream_priority_range`].
    /// 0 is the default priority.
    pub priority: i32,
}

/// An ordered queue of device work in one context. Destroyed on drop if cudajit created it
/// (once arrays allocated in its order, which free themselves on it, are gone too).
pub struct Stream {
    ctx: Context,
    raw: sys::CUstream,
    /// The handle's owner, for a stream cudajit created (`None`: a default stream).
    owned: Option<Arc<OwnedStream>>,
    /// Device memory for single-pass reductions, allocated on first use.
    workspace: OnceLock<Workspace>,
}

// SAFETY: a CUstream may be used from any thread; the driver synchronises internally.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

/// A stream cudajit created, destroyed when the last holder goes: its [`Stream`], or arrays
/// allocated in its order ([`Stream::alloc_async`]), which free themselves on it.
pub(crate) struct OwnedStream {
    ctx: Context,
    raw: sys::CUstream,
}

// SAFETY: a CUstream may be used from any thread; the driver synchronises internally.
unsafe impl Send for OwnedStream {}
// SAFETY: as above.
unsafe impl Sync for OwnedStream {}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the stream was created by cudajit and is destroyed once; queued work still
        // completes (the driver defers the release).
        check_in_drop(unsafe { backend().stream_destroy(self.raw) });
    }
}

impl Context {
    /// A new stream that synchronises with the legacy default stream (numba's `cuda.stream()`).
    pub fn new_stream(&self) -> Result<Stream> {
        self.new_stream_with(StreamOptions::default())
    }

    /// A new stream with the given options.
    pub fn new_stream_with(&self, options: StreamOptions) -> Result<Stream> {
        self.bind()?;
        let flags = if options.non_blocking {
            sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0
        } else {
            sys::CUstream_flags::CU_STREAM_DEFAULT.0
        };
        let raw = backend().stream_create(flags, options.priority)?;
        Ok(Stream::from_handle(self, raw, true))
    }

    /// The default stream (handle 0): the legacy default stream unless the process opted into
    /// per-thread default streams.
    pub fn default_stream(&self) -> Stream {
        self.special_stream(0)
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`), which synchronises with every blocking stream.
    pub fn legacy_default_stream(&self) -> Stream {
        self.special_stream(CU_STREAM_LEGACY)
    }

    /// The calling thread's default stream (`CU_STREAM_PER_THREAD`), which does not synchronise
    /// with other streams.
    pub fn per_thread_default_stream(&self) -> Stream {
        self.special_stream(CU_STREAM_PER_THREAD)
    }

    fn special_stream(&self, handle: usize) -> Stream {
        Stream::from_handle(self, handle as sys::CUstream, false)
    }

    /// Wraps a stream created elsewhere (by another library or your own driver calls).
    /// cudajit never destroys it.
    ///
    /// # Safety
    /// `raw` must be a valid stream of this context (or a special handle) and must outlive
    /// the returned `Stream` and all work enqueued through it.
    pub unsafe fn wrap_stream(&self, raw: sys::CUstream) -> Stream {
        Stream::from_handle(self, raw, false)
    }

    /// The range of stream priorities as (least, greatest); greatest is the lowest number.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        self.bind()?;
        backend().ctx_stream_priority_range()
    }
}

impl Stream {
    /// A `Stream` for the handle `raw` of `ctx`, destroyed on drop if `owned`.
    fn from_handle(ctx: &Context, raw: sys::CUstream, owned: bool) -> Stream {
        Stream {
            ctx: ctx.clone(),
            raw,
            owned: owned.then(|| {
                Arc::new(OwnedStream {
                    ctx: ctx.clone(),
                    raw,
                })
            }),
            workspace: OnceLock::new(),
        }
    }

    /// The driver's handle.
    #[inline]
    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }

    /// Whether cudajit created this stream (and destroys it), as opposed to a default stream.
    pub(crate) fn is_owned(&self) -> bool {
        self.owned.is_some()
    }

    /// What keeps this stream's handle valid (`None` for a default stream, always valid).
    pub(crate) fn keep_handle(&self) -> Option<Arc<OwnedStream>> {
        self.owned.clone()
    }

    /// The context the stream belongs to.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// This stream's workspace for single-pass reductions (allocated on first use), or `None`
    /// for the per-thread default stream, whose handle names a different stream on every
    /// thread (so kernels through one `Stream` value may run at once).
    pub(crate) fn workspace(&self) -> Result<Option<&Workspace>> {
        if self.raw as usize == CU_STREAM_PER_THREAD {
            return Ok(None);
        }
        if let Some(ws) = self.workspace.get() {
            return Ok(Some(ws));
        }
        let ws = Workspace::new(self)?;
        if let Err(lost) = self.workspace.set(ws) {
            // Another thread set it first: give this one back (after the zeroing).
            self.ctx.bind()?;
            lost.release(self.raw)?;
        }
        Ok(self.workspace.get())
    }

    /// Waits until all work queued on the stream is done.
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::refuse("Stream::synchronize")?;
        self.ctx.bind()?;
        // SAFETY: the handle is a live stream of the bound context.
        unsafe { backend().stream_synchronize(self.raw) }
    }

    /// Whether all work queued on the stream is done, without waiting.
    pub fn query(&self) -> Result<bool> {
        crate::graph::refuse("Stream::query")?;
        self.ctx.bind()?;
        // SAFETY: the handle is a live stream of the bound context.
        unsafe { backend().stream_query(self.raw) }
    }

    /// Makes all later work on this stream wait until `event` has completed; the event may be
    /// of another device.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        // The event may belong to another device (`cuStreamWaitEvent` allows it): a stream of
        // device 1 waiting on work of device 0.
        self.ctx.bind()?;
        // SAFETY: both handles are live; the stream belongs to the bound context.
        unsafe { backend().stream_wait_event(self.raw, event.raw()) }
    }

    /// The stream's priority.
    pub fn priority(&self) -> Result<i32> {
        self.ctx.bind()?;
        // SAFETY: the handle is live.
        unsafe { backend().stream_priority(self.raw) }
    }

    /// Whether the stream does not synchronise with the legacy default stream.
    pub fn is_non_blocking(&self) -> Result<bool> {
        self.ctx.bind()?;
        // SAFETY: the handle is live.
        let flags = unsafe { backend().stream_flags(self.raw) }?;
        Ok(flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING.0 != 0)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Some(ws) = self.workspace.get() {
            self.ctx.bind_in_drop();
            check_in_drop(ws.release(self.raw));
        }
        // An owned handle is destroyed with its last holder (`OwnedStream`).
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Stream({:p}, device {})",
            self.raw,
            self.ctx.device().ordinal()
        )
    }
}
