//! A `Future` that completes when a stream's queued work is done (numba's `async_done`).

use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::Stream;
use crate::backend::backend;
use crate::error::{DriverCode, Error, Result};

#[derive(Default)]
struct DoneState {
    /// `Some` once the driver has called back, with the stream's status.
    status: Option<sys::CUresult>,
    waker: Option<Waker>,
}

/// Completes, with the stream's status, once all work queued on the stream before
/// [`Stream::done`] was called is done. Works with any async runtime (it uses only
/// `std::task::Waker`).
pub struct StreamDone {
    state: Arc<Mutex<DoneState>>,
}

impl Stream {
    /// A future that completes when the work queued so far is done.
    pub fn done(&self) -> Result<StreamDone> {
        self.context().bind()?;
        let state = Arc::new(Mutex::new(DoneState::default()));
        let data = Arc::into_raw(state.clone()) as *mut c_void;
        // SAFETY: `data` is a leaked Arc that `stream_done` takes back once. cuStreamAddCallback
        // (unlike cuLaunchHostFunc) is called even when the context has failed, so the future
        // always completes.
        let res = unsafe { backend().stream_add_callback(self.raw(), stream_done, data) };
        if res.is_err() {
            // SAFETY: the driver did not take `data`.
            drop(unsafe { Arc::from_raw(data as *const Mutex<DoneState>) });
        }
        res.map(|()| StreamDone { state })
    }
}

unsafe extern "C" fn stream_done(_stream: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the Arc leaked by Stream::done, called back once.
    let state = unsafe { Arc::from_raw(data as *const Mutex<DoneState>) };
    let waker = {
        let mut s = state.lock();
        s.status = Some(status);
        s.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

impl Future for StreamDone {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let mut s = self.state.lock();
        match s.status {
            Some(sys::CUresult::CUDA_SUCCESS) => Poll::Ready(Ok(())),
            Some(code) => Poll::Ready(Err(Error::Driver {
                call: "stream work (reported to Stream::done)",
                code: DriverCode(code),
            })),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl StreamDone {
    /// Whether the work has completed (without waiting).
    pub fn is_done(&self) -> bool {
        self.state.lock().status.is_some()
    }
}
