//! The device-side join of a process group's full reductions, where every rank runs on one
//! machine with its GPUs peers: each rank's reduction kernel publishes its partial result
//! straight into every other rank's memory (an IPC mapping of the peer's *window*), then its
//! flag; it waits for the other ranks' flags in its own window and combines the partials in
//! rank order, all in the last block of the one kernel that reduced its shard. No NCCL call
//! and no combining kernel: on two H200s NCCL's all-gather of the partials and the combining
//! kernel cost about 11 us over a rank's own reduction.
//!
//! - **The window** (one per rank, `cuMemAlloc`, shared with `cuIpcGetMemHandle`): two sets of
//!   `world` slots of 16 bytes (the partial results, set `epoch % 2`), then `world` flags
//!   (`u64`, flag `q` the last epoch rank `q` published here). Two sets suffice: a rank
//!   publishes epoch `e + 2` only after its own epoch `e + 1` ended, which waited for every
//!   rank's flag `e + 1`, which each rank publishes only after its epoch `e` ended (stream
//!   order), so no rank still reads set `e % 2` when it is written again.
//! - **Epochs** grow by one per reduction on every rank alike: the ranks make the same
//!   collective calls in the same order (the group's contract), so they agree without talking.
//! - **Setting up** (when the group is made, collective): every rank allocates
//!   its window and all-gathers, through NCCL, whether it can join this way (`CUDAJIT_DIST_JOIN`
//!   is not `nccl`, NCCL's peer transport is not turned off with `NCCL_P2P_DISABLE`, at most
//!   [`MAX_PEERS`] + 1 ranks), its machine's identity and its window's IPC handle; if all can
//!   and share a machine, each opens the others' windows and the ranks all-gather whether that
//!   worked. Any refusal anywhere and every rank keeps NCCL's all-gather (always so across
//!   machines and with the socket transport forced).
//! - **A rank that never publishes** (dead, or far behind): the wait reads `%globaltimer`; past
//!   the group's timeout it stops and records the first failure in the status words, which the
//!   host reads at its next wait on the group ([`ProcessGroup::wait`]) and turns into an error
//!   naming the rank.
//!
//! [`ProcessGroup::wait`]: super::ProcessGroup::wait

use ndarray::Ix1;

use super::ProcessGroup;
use crate::error::{Error, Result};
use crate::ipc::IpcMemHandle;
use crate::memory::{DeviceArray, DeviceSlice};
use crate::ops::{take_timed_out, FlagWait, JoinArgs, MAX_PEERS};
use crate::stream::Stream;

/// The bytes of one partial-result slot (the largest accumulator type: complex128).
pub(crate) const SLOT_BYTES: usize = 16;
/// What the setup's waits are called in errors.
const SETTING_UP: &str = "setting up the device-side join of reductions";
/// The bytes each rank contributes to the setup's all-gather.
const RECORD: usize = 256;

/// Whether this group's full reductions join on the device, and its state if they do.
pub(crate) enum JoinState {
    /// Not set up yet (the group's creation does it).
    Unknown,
    /// Joining through NCCL's all-gather, and why.
    Nccl(String),
    /// Joining on the device.
    Device(RankJoin),
}

/// A rank's side of the device-side join.
pub(crate) struct RankJoin {
    /// This rank's window (slots, then flags), as `u64` words.
    window: DeviceArray<u64>,
    /// The other ranks' windows, mapped here (rank order, this rank left out).
    peers: Vec<DeviceArray<u64>>,
    /// The first failure of a wait: `[code, rank]`, `[0, 0]` when none.
    status: DeviceArray<u32>,
    /// The last epoch handed out.
    epoch: u64,
    /// Whether a wait was queued since the status words were last read.
    waited: bool,
}

/// The window's words for `world` ranks: two sets of slots, then the flags.
fn window_words(world: usize) -> usize {
    (2 * world * SLOT_BYTES) / 8 + world
}

/// Byte offsets in a window: slot set `set`, and the flags.
fn slots_at(world: usize, set: usize) -> u64 {
    (set * world * SLOT_BYTES) as u64
}
fn flags_at(world: usize) -> u64 {
    (2 * world * SLOT_BYTES) as u64
}

/// What a reduction over `world` ranks, epoch `epoch`, reads and writes: the arguments of the
/// joining kernel are built from it.
pub(crate) struct Epoch {
    pub(crate) parts: u64,
    pub(crate) peers: Vec<(u64, u64)>,
    pub(crate) wait: FlagWait,
}

impl RankJoin {
    /// The next reduction's addresses (a new epoch), noted so that the status words are read
    /// at the next host wait.
    pub(crate) fn next(&mut self, g: &ProcessGroup) -> Epoch {
        self.epoch += 1;
        self.waited = true;
        let (world, rank) = (g.size(), g.rank());
        let set = (self.epoch % 2) as usize;
        let own = self.window.device_ptr();
        let mask = ((1u64 << world) - 1) & !(1u64 << rank);
        Epoch {
            parts: own + slots_at(world, set),
            peers: self
                .peers
                .iter()
                .map(|p| {
                    let b = p.device_ptr();
                    (b + slots_at(world, set), b + flags_at(world))
                })
                .collect(),
            wait: FlagWait {
                flags: own + flags_at(world),
                n: world,
                status: self.status.device_ptr(),
                mask,
                epoch: self.epoch,
                timeout_ns: u64::try_from(g.timeout().as_nanos()).unwrap_or(u64::MAX),
            },
        }
    }

    /// After `stream` has completed the waits queued so far: a wait that timed out becomes an
    /// error naming the rank (the status words are then cleared).
    pub(crate) fn check(&mut self, stream: &Stream, g: &ProcessGroup) -> Result<()> {
        if !self.waited {
            return Ok(());
        }
        self.waited = false;
        match take_timed_out(
            &mut self.status,
            stream,
            "distributed reduction join",
            "rank",
        )? {
            Some(q) => Err(Error::Kernel {
                kernel: "distributed reduction (device-side join)".into(),
                message: format!(
                    "rank {} of {} waited {:?} (the group's timeout) for rank {q} to publish \
                     its partial result, in vain: that rank died, faulted, is far behind or \
                     did not make the same call (every rank must make the same collective \
                     calls in the same order). The reduction's value is not valid",
                    g.rank(),
                    g.size(),
                    g.timeout()
                ),
            }),
            None => Ok(()),
        }
    }
}

impl<'a> Epoch {
    /// The joining kernel's arguments for `count` elements in all.
    pub(crate) fn args(&'a self, g: &ProcessGroup, count: usize) -> JoinArgs<'a> {
        JoinArgs {
            parts: self.parts,
            chunks: g.size(),
            me: g.rank(),
            count,
            wait: &self.wait,
            peers: &self.peers,
        }
    }
}

/// Why this process cannot join on the device, if it cannot (before asking the others).
fn local_refusal(world: usize) -> Option<String> {
    if std::env::var("CUDAJIT_DIST_JOIN").is_ok_and(|v| v == "nccl") {
        return Some("CUDAJIT_DIST_JOIN=nccl".into());
    }
    if std::env::var("NCCL_P2P_DISABLE").is_ok_and(|v| v.trim() == "1") {
        return Some("NCCL_P2P_DISABLE=1 (the peer transport is off)".into());
    }
    if !(2..=MAX_PEERS + 1).contains(&world) {
        return Some(format!(
            "{world} ranks (the device-side join takes 2 to {})",
            MAX_PEERS + 1
        ));
    }
    None
}

/// This machine's identity: its boot id and host name, hashed (0 when unknown).
fn machine_id() -> u64 {
    use std::hash::{Hash, Hasher};
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    if boot.trim().is_empty() {
        return 0;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (boot.trim(), host.trim()).hash(&mut h);
    h.finish() | 1
}

/// Sets up the join (collective: every rank calls it as it makes its group). Errors only
/// where NCCL fails; a rank that cannot join on the device makes every rank keep NCCL.
pub(crate) fn set_up(g: &ProcessGroup) -> Result<JoinState> {
    let (world, rank) = (g.size(), g.rank());
    let ctx = g.context();
    let mut refusal = local_refusal(world);
    let mut window = None;
    let mut handle = Vec::new();
    if refusal.is_none() {
        let made = ctx
            .zeros::<u64, _>(window_words(world))
            .and_then(|w| w.ipc_handle().map(|h| (w, h.to_bytes())));
        match made {
            Ok((w, h)) if h.len() <= RECORD - 11 => {
                window = Some(w);
                handle = h;
            }
            Ok(_) => refusal = Some("an IPC handle too long for the setup record".into()),
            Err(e) => refusal = Some(format!("the window could not be shared: {e}")),
        }
    }
    let mut rec = [0u8; RECORD];
    rec[0] = u8::from(refusal.is_none());
    rec[1..9].copy_from_slice(&machine_id().to_le_bytes());
    rec[9..11].copy_from_slice(&(handle.len() as u16).to_le_bytes());
    rec[11..11 + handle.len()].copy_from_slice(&handle);
    let all = g.all_gather_host(&rec, SETTING_UP)?;
    let recs: Vec<&[u8]> = all.chunks(RECORD).collect();
    let first_id = &recs[0][1..9];
    if let Some(q) = recs.iter().position(|r| r[0] == 0) {
        return Ok(JoinState::Nccl(
            refusal.unwrap_or_else(|| format!("rank {q} cannot join on the device")),
        ));
    }
    if first_id == [0; 8] || recs.iter().any(|r| &r[1..9] != first_id) {
        return Ok(JoinState::Nccl(
            "the ranks are not all on one machine".into(),
        ));
    }
    // Every rank can: open the others' windows.
    let mut peers = Vec::with_capacity(world - 1);
    let mut failed = None;
    for (q, r) in recs.iter().enumerate() {
        if q == rank {
            continue;
        }
        let len = u16::from_le_bytes([r[9], r[10]]) as usize;
        match IpcMemHandle::from_bytes(&r[11..11 + len]).and_then(|h| h.open::<u64, Ix1>(ctx)) {
            Ok(p) => peers.push(p),
            Err(e) => {
                failed = Some(format!("rank {rank} could not open rank {q}'s window: {e}"));
                break;
            }
        }
    }
    let mut ok = [0u8; RECORD];
    ok[0] = u8::from(failed.is_none());
    let all = g.all_gather_host(&ok, SETTING_UP)?;
    if let Some(q) = all.chunks(RECORD).position(|r| r[0] == 0) {
        return Ok(JoinState::Nccl(failed.unwrap_or_else(|| {
            format!("rank {q} could not open the other ranks' windows")
        })));
    }
    let window = window.ok_or_else(|| Error::usage("the join's window is missing (a bug)"))?;
    log::debug!("distributed reductions join on the device ({world} ranks, IPC windows)");
    Ok(JoinState::Device(RankJoin {
        window,
        peers,
        status: ctx.zeros::<u32, _>(2)?,
        epoch: 0,
        waited: false,
    }))
}
