//! Streams created on the device, on the simulator: each thread that creates one gets a fresh
//! handle (never 0, nor CUDA's special 0x3 and 0x4), kept in its grid's table as live until the
//! thread destroys it. The children launched into a created stream wait with the grid's other
//! launches and run, once the grid's blocks have, in the order the thread launched them (see
//! `device_launch.rs`), which is the order CUDA promises within a stream; destroying the
//! stream first changes nothing for them, as in CUDA.
//!
//! Misuse that CUDA leaves undefined is a fault ([`FaultKind::InvalidStream`]): a launch into
//! a stream the thread had destroyed, or destroying it twice. (A handle that was never created
//! cannot be written with the builder: it only hands out handles of `device_stream_create`.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::block::{for_lanes, Block, Frame, Mask};
use super::fault::Fault;
use crate::error::FaultKind;
use crate::ir::device_launch::StreamDestroy;
use crate::ir::ValueId;

/// The streams one grid's threads created: handle to whether it is still live.
#[derive(Default)]
pub(super) struct Streams {
    live: HashMap<u64, bool>,
}

/// The next handle (shared by every grid, so no two streams ever have the same).
static NEXT: AtomicU64 = AtomicU64::new(0x5357_0000_0000_0001);

impl Block<'_> {
    /// `cudaStreamCreateWithFlags` by the lanes `m`: a new live stream each, its handle in
    /// value `id`.
    pub(super) fn stream_create(
        &mut self,
        fr: &mut Frame<'_>,
        id: ValueId,
        m: &Mask,
    ) -> Result<(), Fault> {
        let at = id.0 as usize * self.n;
        let mut table = self.l.dp.streams.lock();
        for_lanes(m, self.nw, |t| {
            let h = NEXT.fetch_add(1, Ordering::Relaxed);
            table.live.insert(h, true);
            fr.regs[at + t] = h;
        });
        Ok(())
    }

    /// `cudaStreamDestroy` by the lanes `m`.
    pub(super) fn stream_destroy(
        &mut self,
        fr: &mut Frame<'_>,
        d: &StreamDestroy,
        m: &Mask,
    ) -> Result<(), Fault> {
        let at = d.stream.0 as usize * self.n;
        let mut bad = None;
        {
            let mut table = self.l.dp.streams.lock();
            for_lanes(m, self.nw, |t| match table.live.get_mut(&fr.regs[at + t]) {
                Some(live @ true) => *live = false,
                Some(false) => {
                    bad.get_or_insert((t, "destroyed a stream it had destroyed already"));
                }
                None => {
                    bad.get_or_insert((t, "destroyed a stream that was never created"));
                }
            });
        }
        match bad {
            None => Ok(()),
            Some((t, what)) => Err(self.stream_fault(t, what)),
        }
    }

    /// Whether the stream `handle` that lane `t` launches `child` into is live; a fault
    /// naming the lane if not.
    pub(super) fn check_launch_stream(
        &self,
        handle: u64,
        t: usize,
        child: &str,
    ) -> Result<(), Fault> {
        let what = match self.l.dp.streams.lock().live.get(&handle) {
            Some(true) => return Ok(()),
            Some(false) => format!("launched `{child}` into a stream it had destroyed"),
            None => format!("launched `{child}` into a stream that was never created"),
        };
        Err(self.stream_fault(t, &what))
    }

    fn stream_fault(&self, t: usize, what: &str) -> Fault {
        Fault::new(
            FaultKind::InvalidStream,
            format!(
                "{} of `{}` {what} (device_stream_destroy ends a stream; on a GPU this is \
                 undefined)",
                self.who(t),
                self.l.ir.name
            ),
        )
    }
}
