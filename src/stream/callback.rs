//! Host functions run in stream order (`cuLaunchHostFunc`).

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
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

unsafe extern "C" fn run_host_fn(data: *mut c_void) {
    // SAFETY: `data` is the Box<HostFn> leaked by launch_host_func, called once by the driver.
    let f = unsafe { Box::from_raw(data.cast::<HostFn>()) };
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        record_drop_error(Error::usage("a stream host function panicked"));
    }
}
