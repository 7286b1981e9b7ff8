//! The global nanosecond timer in the kernel language (`%globaltimer`): for timeouts in
//! kernels that wait on other devices or the host, and coarse timing inside a kernel.

use super::control::KernelBuilder;
use super::expr::Expr;
use crate::ir::{Op, Sreg};

impl KernelBuilder {
    /// The global timer, PTX `%globaltimer`: nanoseconds, the same clock on every
    /// multiprocessor of the device (on current GPUs the Unix time, updated about every
    /// microsecond). Each read is a fresh one (never merged with another or hoisted out of a
    /// loop); reads in one thread never go back. For timeouts (a wait on a flag that gives up
    /// after a few seconds) and coarse timing, not for cycle counts. The simulator reads the
    /// host's monotonic clock.
    #[track_caller]
    pub fn globaltimer(&self) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(Op::Special(Sreg::GlobalTimer), &[], true)
    }

    /// The low 32 bits of [`globaltimer`](Self::globaltimer), PTX `%globaltimer_lo` (wraps
    /// about every 4.3 seconds; differences in wrapping `u32` arithmetic stay right below that).
    #[track_caller]
    pub fn globaltimer_lo(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        Expr::record(Op::Special(Sreg::GlobalTimerLo), &[], true)
    }
}
