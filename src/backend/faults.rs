//! A backend for tests that makes a chosen driver call fail: the simulator, with every call
//! counted and the N-th one answered with an injected error instead (before the call, so
//! nothing happens; for calls that release something, after it, as the driver releases the
//! resource even when it reports an error). Chosen with [`crate::fault_injection::install`]
//! before anything else uses the device; `tests/faults.rs` fails every call of a scripted
//! workload in turn and checks that each failure comes back as an `Error`, that nothing
//! panics, hangs or leaks, and that the context stays usable.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use cudajit_sys as sys;

use super::sim::Simulator;
use crate::error::{DriverCode, Error, Result};

/// The fault-injecting backend.
pub(crate) struct FaultInjector {
    /// The simulator every call is forwarded to.
    pub(super) inner: Simulator,
    /// Calls since the plan was last set.
    calls: AtomicU64,
    /// The call (1-based, counted from the plan) that fails; 0: none.
    fail_at: AtomicU64,
    /// The result code it fails with.
    code: AtomicU32,
    /// Failures injected so far.
    injected: AtomicU64,
}

impl FaultInjector {
    pub(crate) fn new() -> FaultInjector {
        FaultInjector {
            inner: Simulator::new(),
            calls: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
            code: AtomicU32::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Makes call `n` from now fail with `code` (`n == 0`: no failure); resets the count.
    pub(crate) fn plan(&self, n: u64, code: sys::CUresult) {
        self.fail_at.store(0, Ordering::SeqCst);
        self.calls.store(0, Ordering::SeqCst);
        self.code.store(code.0, Ordering::SeqCst);
        self.fail_at.store(n, Ordering::SeqCst);
    }

    /// Calls counted since the plan was set.
    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Failures injected since the process started.
    pub(crate) fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// What is alive in the simulator underneath.
    pub(crate) fn live(&self) -> [usize; 5] {
        self.inner.live()
    }

    /// Counts a call; the planned one fails (called by the forwarding that `backend_api!`
    /// generates for each method of the backend's API).
    pub(super) fn tick(&self, call: &'static str) -> Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(Error::Driver {
                call,
                code: DriverCode(sys::CUresult(self.code.load(Ordering::SeqCst))),
            });
        }
        Ok(())
    }
}
