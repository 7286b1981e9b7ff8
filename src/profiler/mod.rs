//! Profiler control: mark the region that Nsight Systems / Nsight Compute capture when started
//! with capture-range control (numba's `profile_start`, `profile_stop`, `profiling`).

use crate::backend::backend;
use crate::context::{current_context, Context};
use crate::error::{record_drop_error, Result};

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
    backend().profiler_start()
}

/// Stops profiler data collection (`cuProfilerStop`).
pub fn profile_stop() -> Result<()> {
    profiler_context()?.bind()?;
    backend().profiler_stop()
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
