//! `Mesh`: an ordered set of devices, each with its context and a stream of its own, that
//! sharded arrays are split over.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::context::{Context, Device};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::{DeviceArray, DeviceSlice};
use crate::stream::{Stream, StreamOptions};
use ndarray::Ix1;

/// An ordered set of distinct devices with one stream each: where a
/// [`ShardedArray`](super::ShardedArray) lives (shard `k` on device `k` of the mesh).
///
/// The streams are blocking streams (not `CU_STREAM_NON_BLOCKING`): the synchronous calls of
/// cudajit, which use the legacy default stream, wait for the work queued on them, so a
/// [`gather_to`](super::ShardedArray::gather_to) result may be read with `to_vec()`.
///
/// Operations on sharded arrays are queued on the mesh's streams from the calling thread and
/// return without waiting (except those that return values to the host): every device works
/// at once. Work that combines the shards (a gather, a scan's totals) is queued on one
/// device's stream after waiting for the others' work with events; no host thread waits. A
/// full reduction joins on the device instead where the other devices are peers of the first:
/// each publishes a flag in the first device's memory after its partial result, and the first
/// device's combining kernel waits for the flags before it combines, with a timeout
/// ([`set_join_timeout`](Self::set_join_timeout); a lost device becomes an error when the mesh
/// is synchronised or the value read, not a hang). [`set_device_join`](Self::set_device_join)
/// (or `CUDAJIT_SHARDED_JOIN=events` in the environment) turns it off.
///
/// Creating a mesh turns on peer access between its first device and each other one, both
/// ways, where the hardware allows it ([`Device::can_access_peer`]): a reduction's partial
/// results then go straight into the first device's memory. Without peer access they are
/// copied there (`cuMemcpyPeerAsync`, staged by the driver).
///
/// Cheap to clone (an `Arc`).
#[derive(Clone)]
pub struct Mesh {
    inner: Arc<MeshInner>,
}

struct MeshInner {
    members: Vec<Member>,
    /// Where reductions gather their partial results, on the first device.
    partials: Mutex<PartialSlots>,
    /// Events for the joins between the streams: one per device, recorded on that device's
    /// stream and waited for by another, under the lock (a wait takes the event's latest
    /// record at the time of the call, so the lock only spans each record-and-wait).
    events: Mutex<Vec<Event>>,
}

struct Member {
    ctx: Context,
    stream: Stream,
    /// Whether this device can write the first device's memory directly.
    writes_first: bool,
}

impl Mesh {
    /// A mesh over the devices of these ordinals, in this order (at least one; no repeats).
    pub fn new(ordinals: &[usize]) -> Result<Mesh> {
        Self::build(ordinals, true)
    }

    /// A mesh that leaves peer access off (for platforms where peer-to-peer is slow or
    /// unreliable): partial results are copied between devices by the driver instead.
    pub fn without_peer_access(ordinals: &[usize]) -> Result<Mesh> {
        Self::build(ordinals, false)
    }

    fn build(ordinals: &[usize], peer: bool) -> Result<Mesh> {
        if ordinals.is_empty() {
            return Err(Error::usage(
                "Mesh::new: no devices given; a mesh needs at least one (`Mesh::all()` takes every device)",
            ));
        }
        let count = crate::context::device_count()?;
        for (i, &o) in ordinals.iter().enumerate() {
            if o >= count {
                return Err(Error::usage(format!(
                    "Mesh::new: device {o} does not exist: this machine has {count} device(s) (ordinals 0..{count})"
                )));
            }
            if ordinals[..i].contains(&o) {
                return Err(Error::usage(format!(
                    "Mesh::new: device {o} is given twice ({ordinals:?}); each device holds one shard"
                )));
            }
        }
        let mut members = Vec::with_capacity(ordinals.len());
        let mut events = Vec::with_capacity(ordinals.len());
        for &o in ordinals {
            let ctx = Device::get(o)?.primary_context()?;
            // Blocking streams: the synchronous calls (`to_vec()`, `fill()` on an array, which
            // run on the legacy default stream) are ordered after the mesh's work, and it after
            // them, so mixing them with sharded operations is safe.
            let stream = ctx.new_stream_with(StreamOptions {
                non_blocking: false,
                priority: 0,
            })?;
            events.push(ctx.new_event_with(false, false)?);
            members.push(Member {
                ctx,
                stream,
                writes_first: true,
            });
        }
        let first = members[0].ctx.clone();
        for m in members.iter_mut().skip(1) {
            let (d0, dk) = (first.device(), m.ctx.device());
            m.writes_first = peer && dk.can_access_peer(&d0)? && d0.can_access_peer(&dk)?;
            if m.writes_first {
                m.ctx.enable_peer_access(&first)?;
                first.enable_peer_access(&m.ctx)?;
            }
        }
        let partials = PartialSlots {
            join: super::join::FlagJoin::new(&first, members.len())?,
            buf: first.zeros::<u64, _>(PartialSlots::SETS * 2 * members.len())?,
            free: (0..PartialSlots::SETS)
                .map(|_| first.new_event_with(false, false))
                .collect::<Result<_>>()?,
            recorded: [false; PartialSlots::SETS],
            cur: 0,
        };
        Ok(Mesh {
            inner: Arc::new(MeshInner {
                members,
                partials: Mutex::new(partials),
                events: Mutex::new(events),
            }),
        })
    }

    /// A mesh over every device of the machine, in ordinal order.
    pub fn all() -> Result<Mesh> {
        let n = crate::context::device_count()?;
        Mesh::new(&(0..n).collect::<Vec<_>>())
    }

    /// The number of devices.
    pub fn len(&self) -> usize {
        self.inner.members.len()
    }

    /// Whether the mesh has no devices (never: a mesh has at least one).
    pub fn is_empty(&self) -> bool {
        self.inner.members.is_empty()
    }

    /// The context of the mesh's device `k` (shard `k`'s device). Panics if `k >= len()`, as
    /// slice indexing does.
    pub fn context(&self, k: usize) -> &Context {
        &self.inner.members[k].ctx
    }

    /// The stream of the mesh's device `k`, where the mesh queues that device's work. Panics
    /// if `k >= len()`.
    pub fn stream(&self, k: usize) -> &Stream {
        &self.inner.members[k].stream
    }

    /// The devices, in mesh order.
    pub fn devices(&self) -> Vec<Device> {
        self.inner.members.iter().map(|m| m.ctx.device()).collect()
    }

    /// Whether device `k` writes the first device's memory directly (peer access is on).
    pub fn has_peer_access_to_first(&self, k: usize) -> bool {
        self.inner.members.get(k).is_some_and(|m| m.writes_first)
    }

    /// Waits until every device's queued work is done; the first error wins, after every
    /// stream was waited for. A reduction whose device-side join timed out waiting for a
    /// device (see [`set_join_timeout`](Self::set_join_timeout)) is reported here (once).
    pub fn synchronize(&self) -> Result<()> {
        let mut first = Ok(());
        for m in &self.inner.members {
            let r = m.stream.synchronize();
            if first.is_ok() {
                first = r;
            }
        }
        first?;
        self.check_join()
    }

    /// Whether full reductions join on the device (flags published by the other devices, a
    /// combining kernel that waits for them, with a timeout) where the devices are
    /// peers: on by default, unless `CUDAJIT_SHARDED_JOIN=events` was set when the mesh was
    /// made. Off, the first device's stream waits on the other devices' events, as gathers do.
    pub fn set_device_join(&self, on: bool) {
        self.partials().join.enabled = on;
    }

    /// Whether full reductions join on the device (see [`set_device_join`](Self::set_device_join)).
    pub fn device_join(&self) -> bool {
        self.partials().join.enabled
    }

    /// How long the first device waits in a device-side join for another device's partial
    /// result before it gives up (10 s by default). The clock starts when the first device
    /// reaches the wait, so it must cover how far another device's stream may lag behind
    /// (work queued on it before the reduction). A join that gave up makes the next
    /// [`synchronize`](Self::synchronize), or the reduction's value read back, an error.
    /// Applies to reductions queued afterwards.
    pub fn set_join_timeout(&self, timeout: Duration) {
        self.partials().join.timeout = timeout;
    }

    /// The device-side join's timeout (see [`set_join_timeout`](Self::set_join_timeout)).
    pub fn join_timeout(&self) -> Duration {
        self.partials().join.timeout
    }

    /// For tests of the join's timeout: device `k` (`Some`) queues its partial results but
    /// never publishes them, as a lost device would. Not for other uses.
    #[doc(hidden)]
    pub fn debug_withhold_publication(&self, k: Option<usize>) {
        self.partials().join.skip_publish = k;
    }

    /// Reports (once) a device-side join that timed out, after the first device's stream has
    /// completed it (reads the status words on that stream if a join was queued since the
    /// last check).
    pub(crate) fn check_join(&self) -> Result<()> {
        let ords: Vec<usize> = self.devices().iter().map(|d| d.ordinal()).collect();
        self.partials().join.check(self.stream(0), &ords)
    }

    /// Makes stream `k` wait for the work queued so far on every other stream of the mesh
    /// (events; the host does not wait).
    pub fn join_on(&self, k: usize) -> Result<()> {
        self.check(k, "join_on")?;
        self.join(k, (0..self.len()).filter(|&j| j != k))
    }

    /// Makes every other stream of the mesh wait for the work queued so far on stream `k`.
    pub fn fork_from(&self, k: usize) -> Result<()> {
        self.check(k, "fork_from")?;
        self.fork(k, (0..self.len()).filter(|&j| j != k))
    }

    /// The streams `to` wait for the work queued so far on stream `k`.
    pub(crate) fn fork(&self, k: usize, to: impl IntoIterator<Item = usize>) -> Result<()> {
        let ev = self.inner.events.lock();
        ev[k].record(self.stream(k))?;
        for j in to {
            self.stream(j).wait_event(&ev[k])?;
        }
        Ok(())
    }

    /// Stream `k` waits for the work queued so far on the streams `from`.
    pub(crate) fn join(&self, k: usize, from: impl IntoIterator<Item = usize>) -> Result<()> {
        let ev = self.inner.events.lock();
        for j in from {
            ev[j].record(self.stream(j))?;
            self.stream(k).wait_event(&ev[j])?;
        }
        Ok(())
    }

    fn check(&self, k: usize, op: &str) -> Result<()> {
        if k < self.len() {
            Ok(())
        } else {
            Err(Error::usage(format!(
                "Mesh::{op}: device index {k} is out of range for a mesh of {} device(s)",
                self.len()
            )))
        }
    }

    /// Has device `k` store values in the first device's memory, ordered on its stream:
    /// `write(stream, addrs)` stores `pieces[i].1` bytes at `addrs[i]`. With peer access (and
    /// on the first device itself) the addresses are the destinations `pieces[i].0`; without,
    /// they lie in a temporary on device `k`, and each piece is then copied to its destination
    /// (`cuMemcpyPeerAsync`, staged by the driver).
    pub(crate) fn write_to_first(
        &self,
        k: usize,
        pieces: &[(u64, usize)],
        write: impl FnOnce(&Stream, &[u64]) -> Result<()>,
    ) -> Result<()> {
        let stream = self.stream(k);
        if k == 0 || self.has_peer_access_to_first(k) {
            let dsts: Vec<u64> = pieces.iter().map(|&(dst, _)| dst).collect();
            return write(stream, &dsts);
        }
        // Every piece 16-byte aligned in one temporary, freed in the stream's order.
        let mut offsets = Vec::with_capacity(pieces.len());
        let mut total = 0;
        for &(_, bytes) in pieces {
            offsets.push(total);
            total += bytes.div_ceil(16) * 16;
        }
        let tmp = DeviceArray::<u64, Ix1>::alloc_ordered(stream, Ix1(total / 8))?;
        let srcs: Vec<u64> = offsets
            .iter()
            .map(|&o| tmp.device_ptr() + o as u64)
            .collect();
        write(stream, &srcs)?;
        for (&(dst, bytes), &src) in pieces.iter().zip(&srcs) {
            crate::memory::transfer::peer(
                self.context(0),
                dst,
                self.context(k),
                src,
                bytes,
                Some(stream),
            )?;
        }
        Ok(())
    }

    /// The slots for partial results on the first device, held while a reduction uses them.
    pub(crate) fn partials(&self) -> parking_lot::MutexGuard<'_, PartialSlots> {
        self.inner.partials.lock()
    }

    /// Whether `self` and `other` are the same mesh (clones of one `Mesh::new`).
    pub fn same_as(&self, other: &Mesh) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ords: Vec<usize> = self.devices().iter().map(|d| d.ordinal()).collect();
        write!(f, "Mesh(devices {ords:?})")
    }
}

/// Room for one partial result (up to 16 bytes) per device on the mesh's first device, packed
/// as an array of the reduction's accumulator type, where a reduction's shards leave
/// their partial results for the last step (which reads them on the first device's stream).
///
/// [`SETS`](Self::SETS) such sets, used in turn: a reduction's devices write the current set
/// only after the last step of the reduction that used it [`SETS`](Self::SETS) reductions
/// earlier has read it (`free`, recorded on the first device's stream after that step). With
/// one set every device would wait, at each reduction, for the first device's previous
/// combining step and then the first device for it: two cross-device signals per call in a
/// loop of reductions; with several the other devices run ahead.
pub(crate) struct PartialSlots {
    /// The device-side join's flags and state.
    pub(crate) join: super::join::FlagJoin,
    buf: DeviceArray<u64>,
    free: Vec<Event>,
    recorded: [bool; PartialSlots::SETS],
    /// The set the next reduction uses.
    cur: usize,
}

impl PartialSlots {
    /// The largest partial result a slot holds, in bytes.
    pub(crate) const SLOT_BYTES: usize = 16;

    /// The number of slot sets used in turn.
    pub(crate) const SETS: usize = 4;

    /// The device address of partial result `i` of `size` bytes each (at most
    /// [`SLOT_BYTES`](Self::SLOT_BYTES)) in the current set.
    pub(crate) fn slot(&self, i: usize, size: usize) -> u64 {
        self.buf.device_ptr()
            + (self.cur * self.buf.len() / Self::SETS * 8) as u64
            + (i * size.min(Self::SLOT_BYTES)) as u64
    }

    /// Makes the mesh's stream `k` wait until the reduction that last used the current set
    /// has read it.
    pub(crate) fn wait_free(&self, mesh: &Mesh, k: usize) -> Result<()> {
        if self.recorded[self.cur] && k != 0 {
            mesh.stream(k).wait_event(&self.free[self.cur])?;
        }
        Ok(())
    }

    /// Marks the current set free once the work queued so far on the first device's stream
    /// is done, and moves to the next set.
    pub(crate) fn release(&mut self, mesh: &Mesh) -> Result<()> {
        self.free[self.cur].record(mesh.stream(0))?;
        self.recorded[self.cur] = true;
        self.cur = (self.cur + 1) % Self::SETS;
        Ok(())
    }
}
