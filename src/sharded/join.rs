//! The device-side join of a sharded reduction: every other device's partial pass, once its
//! result is in the first device's memory (written over the peer link), publishes the
//! reduction's epoch in a flag there; the first device's stream, without waiting on any event
//! of the other devices, runs the combining kernel, whose thread spins on the flags before it
//! combines (`ops`' `cols_final_join`, the wait written once in `ops::wait_for_flags`).
//!
//! - **Publication** (device `k`'s partial pass, by the thread that stores the result, in the
//!   same kernel: `ops`' `part1_publish`): `membar.sys` (a system-scope fence, ordering the
//!   partial's write before the flag's), then the store of the epoch into `flags[k]` on the
//!   first device, over the peer link.
//! - **The wait** (the first device's stream, in the combining kernel): for every device
//!   in the mask, read `flags[k]` (`ld.volatile`, system scope, never cached) until it is at
//!   least the epoch, then `membar.sys` (so the combining kernel's reads come after). Epochs
//!   grow by one per reduction and a device's flag only grows (its stream publishes them in
//!   order), so neither the slot sets nor repeated calls need a reset, and `>=` is right even
//!   when a device ran ahead.
//! - **The timeout**: the wait reads `%globaltimer`; past the mesh's join timeout it stops,
//!   records the first failure in the status words (`[1, k]`: timed out waiting for device
//!   `k`) and returns. The host reads the status words when it synchronises the mesh or reads
//!   a reduction's value back ([`FlagJoin::check`]), and turns a failure into an error: a lost
//!   peer becomes an error, never a hang.
//!
//! Devices that are not peers of the first one (their partials are copied by the driver) still
//! join with events; so do meshes with the join turned off ([`Mesh::set_device_join`]), and
//! reductions queued while this thread captures a graph (a replay would publish and wait for
//! the captured epoch, which the flags passed at the first run).
//! On the simulator the devices' streams run when queued, in the order the host queues them:
//! every flag is published before the first device's wait starts, so it never spins for long.
//!
//! [`Mesh::set_device_join`]: super::Mesh::set_device_join

use std::time::Duration;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::ops::{take_timed_out, FlagPublish, FlagWait};
use crate::stream::Stream;

/// The join's state on the first device, one per mesh (under the mesh's partials lock).
pub(crate) struct FlagJoin {
    /// `flags[k]`: the last epoch device `k` published.
    flags: DeviceArray<u64>,
    /// The first failure: `[code, device index]`, `[0, 0]` when none.
    status: DeviceArray<u32>,
    /// The last epoch handed out.
    epoch: u64,
    /// How long the first device waits for the flags.
    pub(crate) timeout: Duration,
    /// Whether the join is on (else the reductions join with events).
    pub(crate) enabled: bool,
    /// Whether a wait was queued since the status words were last read.
    waited: bool,
    /// Test hook: a device that never publishes (proves the timeout).
    pub(crate) skip_publish: Option<usize>,
}

/// The default join timeout: long enough for any sane imbalance between the devices' queues.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl FlagJoin {
    /// The flags and status words for a mesh of `n` devices, on `first`.
    pub(crate) fn new(first: &Context, n: usize) -> Result<FlagJoin> {
        let off = std::env::var("CUDAJIT_SHARDED_JOIN").is_ok_and(|v| v == "events");
        Ok(FlagJoin {
            flags: first.zeros::<u64, _>(n.max(1))?,
            status: first.zeros::<u32, _>(2)?,
            epoch: 0,
            timeout: DEFAULT_TIMEOUT,
            enabled: !off,
            waited: false,
            skip_publish: None,
        })
    }

    /// The next epoch (every reduction takes a new one, also one that fails midway).
    pub(crate) fn next_epoch(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch
    }

    /// Where device `k` publishes `epoch` after its partial result (`None`: withheld by the
    /// test hook, as a lost device would).
    pub(crate) fn publish_args(&self, k: usize, epoch: u64) -> Option<FlagPublish> {
        (self.skip_publish != Some(k)).then(|| FlagPublish {
            flags: self.flags.device_ptr(),
            n: self.flags.len(),
            at: k as u64,
            epoch,
        })
    }

    /// The wait for `epoch` in the flags of the devices in `mask` (bit `k`: device `k`), for
    /// a kernel on the first device's stream; noted, so that [`check`](Self::check) reads
    /// the status words.
    pub(crate) fn wait_args(&mut self, mask: u64, epoch: u64) -> FlagWait {
        self.waited = true;
        FlagWait {
            flags: self.flags.device_ptr(),
            n: self.flags.len(),
            status: self.status.device_ptr(),
            mask,
            epoch,
            timeout_ns: u64::try_from(self.timeout.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// After `stream` (the first device's) has completed the waits queued so far: a wait that
    /// timed out becomes an error (once: the status words are cleared), naming the device.
    /// Reads the status words only if a wait was queued since the last check.
    pub(crate) fn check(&mut self, stream: &Stream, ordinals: &[usize]) -> Result<()> {
        if !self.waited {
            return Ok(());
        }
        self.waited = false;
        match take_timed_out(&mut self.status, stream, "sharded reduction join", "device")? {
            Some(k) => Err(timed_out(k, ordinals, self.timeout)),
            None => Ok(()),
        }
    }
}

/// The error of a join that waited `timeout` for device `k` of the mesh in vain.
fn timed_out(k: usize, ordinals: &[usize], timeout: Duration) -> Error {
    let ord = ordinals
        .get(k)
        .map_or(String::new(), |o| format!(" (ordinal {o})"));
    Error::Kernel {
        kernel: "sharded reduction (device-side join)".into(),
        message: format!(
            "a sharded reduction's first device waited {timeout:?} for device {k}{ord} of the \
             mesh to publish its partial result, in vain: that device is lost, faulted or \
             far behind (its stream held more than the timeout's worth of earlier work). The \
             reduction's value is not valid. Raise the timeout with `Mesh::set_join_timeout`, \
             or join with events (`Mesh::set_device_join(false)`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    //! The wait (`ops::wait_for_flags`, alone in a kernel) on a simulator of its own, called
    //! directly: the epoch rule (`flags[k] >= epoch` for the devices in the mask), the timeout
    //! and its status words.
    use std::time::Instant;

    use super::*;
    use crate::backend::sim::Simulator;
    use crate::backend::MemoryApi;
    use crate::codegen::Kernel;
    use crate::ops::TIMED_OUT;

    /// The wait alone, as a kernel: `(flags, status, mask, epoch, timeout_ns)`.
    type WaitKernel = Kernel<(&'static mut [u64], &'static mut [u32], u64, u64, u64)>;

    fn build_wait() -> Result<WaitKernel> {
        WaitKernel::build(
            "join_wait",
            |k, (flags, status, mask, epoch, timeout_ns)| {
                crate::ops::wait_for_flags(k, &flags, &status, mask, epoch, timeout_ns)
            },
        )
    }

    /// Runs the wait over `flags` (status words starting at `status`); returns the status
    /// words after it and how long it took.
    fn wait(
        flags: &[u64],
        status: [u32; 2],
        mask: u64,
        epoch: u64,
        ms: u64,
    ) -> ([u32; 2], Duration) {
        let sim = Simulator::new();
        let k = build_wait().unwrap();
        let (fp, sp) = (
            sim.mem_alloc(flags.len() * 8).unwrap(),
            sim.mem_alloc(8).unwrap(),
        );
        // SAFETY: each destination holds the bytes copied, from live host data.
        unsafe {
            sim.memcpy_htod(fp, flags.as_ptr().cast(), flags.len() * 8, None)
                .unwrap();
            sim.memcpy_htod(sp, status.as_ptr().cast(), 8, None)
                .unwrap();
        }
        let mut slots = [fp, flags.len() as u64, sp, 2, mask, epoch, ms * 1_000_000];
        let t = Instant::now();
        sim.launch_ir_for_test(k.ir(), [1, 1, 1], &mut slots)
            .unwrap();
        let took = t.elapsed();
        let mut out = [0u32; 2];
        // SAFETY: `sp` holds 8 bytes; `out` has room for them.
        unsafe { sim.memcpy_dtoh(out.as_mut_ptr().cast(), sp, 8, None) }.unwrap();
        (out, took)
    }

    #[test]
    fn flags_at_or_past_the_epoch_pass_at_once() {
        // Device 0's own flag is never read; device 2 ran ahead (7 >= 5).
        let (st, took) = wait(&[0, 5, 7], [0, 0], 0b110, 5, 5_000);
        assert_eq!(st, [0, 0]);
        assert!(took < Duration::from_secs(2), "{took:?}");
        // Only the devices in the mask count: device 1 is behind but not waited for.
        assert_eq!(wait(&[0, 5, 7], [0, 0], 0b100, 6, 5_000).0, [0, 0]);
        // An empty mask waits for nothing.
        assert_eq!(wait(&[0, 0, 0], [0, 0], 0, 9, 5_000).0, [0, 0]);
    }

    #[test]
    fn a_flag_behind_the_epoch_times_out_into_the_status_words() {
        let (st, took) = wait(&[0, 5, 7], [0, 0], 0b110, 6, 50);
        assert_eq!(st, [TIMED_OUT, 1], "timed out waiting for device 1");
        assert!(took >= Duration::from_millis(50), "gave up early: {took:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");
        // The first failure is kept: device 1 fails first, device 2 is not waited for after.
        assert_eq!(wait(&[0, 5, 5], [0, 0], 0b110, 8, 20).0, [TIMED_OUT, 1]);
        // Device 2 alone behind.
        assert_eq!(wait(&[0, 9, 5], [0, 0], 0b110, 8, 20).0, [TIMED_OUT, 2]);
        // An earlier failure that the host has not read yet stays as it was.
        assert_eq!(
            wait(&[0, 5, 7], [TIMED_OUT, 2], 0b10, 6, 20).0,
            [TIMED_OUT, 2]
        );
    }

    #[test]
    fn the_timeout_error_names_the_device() {
        let e = timed_out(1, &[3, 5], Duration::from_millis(250));
        let s = e.to_string();
        assert!(
            s.contains("device 1 (ordinal 5)") && s.contains("250ms"),
            "{s}"
        );
        assert!(s.contains("set_join_timeout"), "{s}");
    }
}
