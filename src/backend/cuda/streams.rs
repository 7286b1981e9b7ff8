//! The driver backend's stream and event calls, host callbacks included.

use std::ffi::c_void;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::{HostFnPtr, StreamApi, StreamCallbackPtr};
use crate::error::{check, Result};

/// `Ok(false)` for `CUDA_ERROR_NOT_READY`, `Ok(true)` for success.
fn ready(
    res: std::result::Result<sys::CUresult, sys::LoadError>,
    call: &'static str,
) -> Result<bool> {
    match res? {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        code => check(Ok(code), call).map(|()| true),
    }
}

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl StreamApi for CudaDriver {
    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the driver clamps priorities.
        unsafe { drv!(cuStreamCreateWithPriority(&mut s, flags, priority)) }?;
        Ok(s)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller destroys its own stream once.
        unsafe { drv!(cuStreamDestroy_v2(s)) }
    }

    unsafe fn stream_synchronize(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: a live stream.
        unsafe { drv!(cuStreamSynchronize(s)) }
    }

    unsafe fn stream_query(&self, s: sys::CUstream) -> Result<bool> {
        // SAFETY: a live stream.
        ready(unsafe { sys::cuStreamQuery(s) }, "cuStreamQuery")
    }

    unsafe fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        // SAFETY: live handles.
        unsafe { drv!(cuStreamWaitEvent(s, e, 0)) }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        let mut p = 0;
        // SAFETY: valid out-pointer; a live stream.
        unsafe { drv!(cuStreamGetPriority(s, &mut p)) }?;
        Ok(p)
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        let mut f = 0;
        // SAFETY: valid out-pointer; a live stream.
        unsafe { drv!(cuStreamGetFlags(s, &mut f)) }?;
        Ok(f)
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller hands over `data`, which `f` consumes once.
        unsafe { drv!(cuLaunchHostFunc(s, Some(f), data)) }
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller hands over `data`, which `f` consumes once.
        unsafe { drv!(cuStreamAddCallback(s, Some(f), data, 0)) }
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer; cuEventCreate's flags.
        unsafe { drv!(cuEventCreate(&mut e, flags)) }?;
        Ok(e)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller destroys its own event once.
        unsafe { drv!(cuEventDestroy_v2(e)) }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        // SAFETY: live handles.
        unsafe { drv!(cuEventRecord(e, s)) }
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        // SAFETY: a live event.
        ready(unsafe { sys::cuEventQuery(e) }, "cuEventQuery")
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: a live event.
        unsafe { drv!(cuEventSynchronize(e)) }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: valid out-pointer; live events.
        match unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) } {
            // Drivers before CUDA 12.8 have only the original entry point.
            Err(sys::LoadError::MissingSymbol { .. }) => {
                // SAFETY: as above.
                unsafe { drv!(cuEventElapsedTime(&mut ms, start, end)) }
            }
            other => check(other, "cuEventElapsedTime_v2"),
        }?;
        Ok(ms)
    }
}
