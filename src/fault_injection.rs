//! Fault injection for tests: runs this process on the simulator with one chosen driver call
//! failing, to check that every failure comes back as an [`Error`] and leaves nothing behind.
//! `tests/faults.rs` fails every call of a scripted workload in turn (docs/RELIABILITY.md).

use crate::error::{Error, Result};
use cudajit_sys as sys;

/// The error an injected failure returns (a driver result code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `CUDA_ERROR_LAUNCH_FAILED`.
    LaunchFailed,
    /// `CUDA_ERROR_INVALID_VALUE`.
    InvalidValue,
    /// `CUDA_ERROR_NOT_INITIALIZED`.
    NotInitialized,
    /// `CUDA_ERROR_DEVICE_UNAVAILABLE` (a device lost).
    DeviceUnavailable,
}

impl Injected {
    /// Every kind, in order.
    pub const ALL: [Injected; 5] = [
        Injected::OutOfMemory,
        Injected::LaunchFailed,
        Injected::InvalidValue,
        Injected::NotInitialized,
        Injected::DeviceUnavailable,
    ];

    fn code(self) -> sys::CUresult {
        match self {
            Injected::OutOfMemory => sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            Injected::LaunchFailed => sys::CUresult::CUDA_ERROR_LAUNCH_FAILED,
            Injected::InvalidValue => sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            Injected::NotInitialized => sys::CUresult::CUDA_ERROR_NOT_INITIALIZED,
            Injected::DeviceUnavailable => sys::CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE,
        }
    }
}

/// What is alive in the backend: device and managed allocations, pinned host allocations,
/// streams, events, modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Live {
    /// Device and managed allocations.
    pub allocations: usize,
    /// Pinned host allocations.
    pub host_allocations: usize,
    /// Streams.
    pub streams: usize,
    /// Events.
    pub events: usize,
    /// Loaded modules.
    pub modules: usize,
}

fn injector() -> Result<&'static crate::backend::faults::FaultInjector> {
    crate::backend::install_fault_injector().ok_or_else(|| {
        Error::usage(
            "fault_injection: another backend is already in use in this process; \
             call fault_injection::install() before any other cudajit call",
        )
    })
}

/// Runs this process on the fault-injecting backend. Call it before anything else uses the
/// device.
pub fn install() -> Result<()> {
    injector().map(|_| ())
}

/// Makes the `n`-th backend call from now (1-based) fail with `kind`; `n == 0` injects
/// nothing. Resets the call count.
pub fn fail_call(n: u64, kind: Injected) -> Result<()> {
    injector()?.plan(n, kind.code());
    Ok(())
}

/// Backend calls made since the last [`fail_call`].
pub fn calls() -> Result<u64> {
    Ok(injector()?.calls())
}

/// Failures injected since the process started.
pub fn injected() -> Result<u64> {
    Ok(injector()?.injected())
}

/// What is alive in the backend now.
pub fn live() -> Result<Live> {
    let [allocations, host_allocations, streams, events, modules] = injector()?.live();
    Ok(Live {
        allocations,
        host_allocations,
        streams,
        events,
        modules,
    })
}
