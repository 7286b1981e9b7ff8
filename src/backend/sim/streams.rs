//! Streams and events on the simulator: work runs when it is submitted, so streams are
//! trivially in order, host callbacks run at once, and events record the wall-clock time.

use std::ffi::c_void;
use std::time::Instant;

use cudajit_sys as sys;

use super::{
    bad_handle, err, graph, EventState, HostFnPtr, Simulator, StreamCallbackPtr, StreamState,
};
use crate::backend::StreamApi;
use crate::error::Result;

impl StreamApi for Simulator {
    unsafe fn stream_synchronize(&self, _s: sys::CUstream) -> Result<()> {
        // Work runs when it is issued: there is nothing to wait for.
        Ok(())
    }

    unsafe fn stream_query(&self, _s: sys::CUstream) -> Result<bool> {
        Ok(true)
    }

    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let s = h.make();
        let priority = priority.clamp(-5, 0);
        h.streams.insert(
            s,
            StreamState {
                flags,
                priority,
                dev,
            },
        );
        Ok(s as sys::CUstream)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        match self.handles.lock().streams.remove(&(s as usize)) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuStreamDestroy_v2")),
        }
    }

    unsafe fn stream_wait_event(&self, _s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        // An event of any device (as on the driver: a stream may wait on another device's).
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(())
        } else {
            Err(bad_handle("cuStreamWaitEvent"))
        }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        Ok(self
            .handles
            .lock()
            .streams
            .get(&(s as usize))
            .map_or(0, |st| st.priority))
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        Ok(self
            .handles
            .lock()
            .streams
            .get(&(s as usize))
            .map_or(0, |st| st.flags))
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        if self.recorded(Some(s), || graph::Node::HostFn {
            f,
            data: data as usize,
        }) {
            return Ok(());
        }
        // SAFETY: the caller hands over `data`, which `f` consumes once; everything queued
        // before has already run.
        unsafe { f(data) };
        Ok(())
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        if self.graphs.lock().capturing.contains_key(&(s as usize)) {
            return Err(err(
                "cuStreamAddCallback",
                sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            ));
        }
        // SAFETY: as for launch_host_func.
        unsafe { f(s, sys::CUresult::CUDA_SUCCESS, data) };
        Ok(())
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        let timing = flags & sys::CUevent_flags::CU_EVENT_DISABLE_TIMING.0 == 0;
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let e = h.make();
        h.events.insert(
            e,
            EventState {
                at: None,
                timing,
                dev,
            },
        );
        Ok(e as sys::CUevent)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        match self.handles.lock().events.remove(&(e as usize)) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuEventDestroy_v2")),
        }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        let call = "cuEventRecord";
        {
            // As the driver: the event and the stream must be of one context.
            let h = self.handles.lock();
            let ev = h
                .events
                .get(&(e as usize))
                .ok_or_else(|| bad_handle(call))?;
            if ev.dev != self.stream_device(&h, s) {
                return Err(bad_handle(call));
            }
        }
        if self.recorded(Some(s), || graph::Node::EventRecord { e: e as usize }) {
            return Ok(());
        }
        let mut h = self.handles.lock();
        let ev = h
            .events
            .get_mut(&(e as usize))
            .ok_or_else(|| bad_handle(call))?;
        ev.at = Some(Instant::now());
        Ok(())
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(true)
        } else {
            Err(bad_handle("cuEventQuery"))
        }
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        if self.handles.lock().events.contains_key(&(e as usize)) {
            Ok(())
        } else {
            Err(bad_handle("cuEventSynchronize"))
        }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        let call = "cuEventElapsedTime_v2";
        let h = self.handles.lock();
        let (a, b) = match (
            h.events.get(&(start as usize)),
            h.events.get(&(end as usize)),
        ) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(bad_handle(call)),
        };
        if !a.timing || !b.timing {
            return Err(bad_handle(call));
        }
        match (a.at, b.at) {
            (Some(x), Some(y)) => {
                let ms = if y >= x {
                    y.duration_since(x).as_secs_f64() * 1e3
                } else {
                    -(x.duration_since(y).as_secs_f64() * 1e3)
                };
                Ok(ms as f32)
            }
            _ => Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_HANDLE)),
        }
    }
}
