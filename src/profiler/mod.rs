//! Profiler control: mark the region that Nsight Systems / Nsight Compute capture when started
//! with capture-range control (numba's `profile_start`, `profile_stop`, `profiling`).

use cudajit_sys as sys;

use crate::context::{current_context, Context};
use crate::error::{check, record_drop_error, Result};

/// The context to attribute profiler calls to: the current one, else device 0's primary.
fn profiler_context() -> Result<Context> {
    match current_context()? {
        Some(c) => Ok(c),
        None => Context::new(0),
    }
}

/// Starts profiler data collection (`cuProfilerStart`).
pub fn profile_start() -> Result<()> {
    profiler_context()?.bind()?;
    // SAFETY: a context is current; the call takes no arguments.
    check(unsafe { sys::cuProfilerStart() }, "cuProfilerStart")
}

/// Stops profiler data collection (`cuProfilerStop`).
pub fn profile_stop() -> Result<()> {
    profiler_context()?.bind()?;
    // SAFETY: a context is current; the call takes no arguments.
    check(unsafe { sys::cuProfilerStop() }, "cuProfilerStop")
}

/// Collects profiler data until the guard drops.
pub fn profiling() -> Result<Profiling> {
    profile_start()?;
    Ok(Profiling { _private: () })
}

/// Stops profiler data collection when dropped; see [`profiling`].
pub struct Profiling {
    _private: (),
}

impl Drop for Profiling {
    fn drop(&mut self) {
        if let Err(e) = profile_stop() {
            record_drop_error(e);
        }
    }
}
