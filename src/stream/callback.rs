//! Host functions run in stream order (`cuLaunchHostFunc`).

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::Stream;
use crate::backend::backend;
use crate::error::{record_drop_error, Error, Result};

type HostFn = Box<dyn FnOnce() + Send + 'static>;

impl Stream {
    /// Runs `f` on a driver thread once all work queued before it on this stream is done;
    /// later work on the stream waits for `f` to return.
    ///
    /// `f` must not make any CUDA call (cudajit's included): the driver forbids it and may
    /// deadlock. Keep it short: it blocks the stream. A panic in `f` is caught and kept
    /// (see [`take_drop_errors`](crate::take_drop_errors)). If the context has failed, the driver
    /// does not call `f` at all, and it is leaked.
    ///
    /// Inside a graph capture, use [`Stream::launch_host_fn`] (a graph runs its host functions
    /// at every launch; this one runs once).
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        crate::graph::refuse(
            "Stream::launch_host_func (runs once; use Stream::launch_host_fn in a graph)",
        )?;
        self.context().bind()?;
        let data = Box::into_raw(Box::new(Box::new(f) as HostFn)).cast::<c_void>();
        // SAFETY: `data` is a leaked Box<HostFn> that `run_host_fn` takes back exactly once.
        let res = unsafe { backend().launch_host_func(self.raw(), run_host_fn, data) };
        if res.is_err() {
            // SAFETY: the driver did not take `data`, so it is still ours to free.
            drop(unsafe { Box::from_raw(data.cast::<HostFn>()) });
        }
        res
    }
}

impl Stream {
    /// Runs `f` on a driver thread once all work queued before it on this stream is done, as
    /// [`Stream::launch_host_func`] (the same rules apply), but `f` may run more than once: in
    /// a graph capture it becomes a host node that runs at every launch of the graph, which
    /// keeps `f` alive.
    pub fn launch_host_fn<F: Fn() + Send + Sync + 'static>(&self, f: F) -> Result<()> {
        if !crate::graph::capturing() {
            return self.launch_host_func(f);
        }
        self.context().bind()?;
        let f: Arc<RepeatFn> = Arc::new(Box::new(f));
        let data = Arc::as_ptr(&f).cast_mut().cast::<c_void>();
        if !crate::graph::keep_alive(self.raw(), f) {
            return Err(Error::usage(
                "launch_host_fn: this thread is capturing another stream; host functions of a \
                 graph go on the stream being captured",
            ));
        }
        // SAFETY: `data` points to a `RepeatFn` that the capture's graph keeps alive as long as
        // the driver may call it.
        unsafe { backend().launch_host_func(self.raw(), run_repeat_fn, data) }
    }
}

type RepeatFn = Box<dyn Fn() + Send + Sync + 'static>;

unsafe extern "C" fn run_repeat_fn(data: *mut c_void) {
    // SAFETY: `data` points to a live RepeatFn (kept by the graph), only ever borrowed.
    let f = unsafe { &*data.cast::<RepeatFn>().cast_const() };
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        record_drop_error(Error::usage("a stream host function panicked"));
    }
}

unsafe extern "C" fn run_host_fn(data: *mut c_void) {
    // SAFETY: `data` is the Box<HostFn> leaked by launch_host_func, called once by the driver.
    let f = unsafe { Box::from_raw(data.cast::<HostFn>()) };
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        record_drop_error(Error::usage("a stream host function panicked"));
    }
}
