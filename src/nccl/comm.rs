//! Communicators: one rank each, made over devices of this process or across processes.

use std::fmt;

use cudajit_sys::nccl as nc;

use super::result::check;
use crate::context::{Context, Device};
use crate::error::{check_in_drop, Error, Result};

/// The size of a [`UniqueId`] in bytes (`NCCL_UNIQUE_ID_BYTES`).
pub const UNIQUE_ID_BYTES: usize = 128;

/// The identity of a communicator being made across processes (`ncclUniqueId`).
///
/// One process makes it with [`UniqueId::new`] and sends [`UniqueId::as_bytes`] to the others
/// (by any means: a file, a socket, MPI), which rebuild it with [`UniqueId::from_bytes`]; then
/// every process calls [`Communicator::init_rank`] with it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    bytes: [u8; UNIQUE_ID_BYTES],
}

impl UniqueId {
    /// A new id (`ncclGetUniqueId`; NCCL starts its bootstrap listener in this process).
    pub fn new() -> Result<UniqueId> {
        refuse_simulator("UniqueId::new")?;
        let mut raw = nc::ncclUniqueId::default();
        // SAFETY: the pointer is to a live ncclUniqueId that NCCL fills.
        check(
            unsafe { nc::ncclGetUniqueId(&mut raw) },
            "ncclGetUniqueId",
            std::ptr::null_mut(),
        )?;
        let mut bytes = [0u8; UNIQUE_ID_BYTES];
        for (b, c) in bytes.iter_mut().zip(raw.internal.iter()) {
            *b = *c as u8;
        }
        Ok(UniqueId { bytes })
    }

    /// The id's bytes, to pass to the other processes.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.bytes
    }

    /// The id from bytes another process got from [`UniqueId::as_bytes`].
    pub fn from_bytes(bytes: [u8; UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId { bytes }
    }

    fn raw(&self) -> nc::ncclUniqueId {
        let mut raw = nc::ncclUniqueId::default();
        for (c, b) in raw.internal.iter_mut().zip(self.bytes.iter()) {
            *c = *b as std::ffi::c_char;
        }
        raw
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId(")?;
        for b in &self.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// One rank of an NCCL communicator, on one device (`ncclComm_t`, destroyed on drop).
///
/// A communicator may move between threads but is not shared: NCCL calls on one communicator
/// must not run concurrently. To drive several ranks from one thread, issue their calls inside
/// [`group`](super::group).
pub struct Communicator {
    raw: nc::ncclComm_t,
    ctx: Context,
    rank: usize,
    size: usize,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time; `&mut`-free
// sharing is prevented by not implementing `Sync`.
unsafe impl Send for Communicator {}

/// Refuses NCCL on the simulator, which has no device memory NCCL could reach.
pub(super) fn refuse_simulator(op: &str) -> Result<()> {
    if crate::on_simulator() {
        Err(Error::usage(format!(
            "{op}: NCCL needs real GPUs and cannot run on the CPU simulator (CUDAJIT_SIMULATOR)"
        )))
    } else {
        Ok(())
    }
}

impl Communicator {
    /// One communicator per device, rank `i` on `devices[i]`, all in this process
    /// (`ncclCommInitAll`). The devices must be distinct.
    pub fn init_all(devices: &[Device]) -> Result<Vec<Communicator>> {
        refuse_simulator("Communicator::init_all")?;
        if devices.is_empty() {
            return Err(Error::usage(
                "Communicator::init_all: no devices given (a communicator needs at least one)",
            ));
        }
        for (i, d) in devices.iter().enumerate() {
            if let Some(j) = devices[..i].iter().position(|e| e == d) {
                return Err(Error::usage(format!(
                    "Communicator::init_all: device {} is given twice (ranks {j} and {i}); each rank needs its own device",
                    d.ordinal()
                )));
            }
        }
        let contexts = devices
            .iter()
            .map(Device::primary_context)
            .collect::<Result<Vec<_>>>()?;
        // NCCL's runtime calls use the primary contexts retained above.
        contexts[0].bind()?;
        let ordinals: Vec<std::ffi::c_int> = devices.iter().map(|d| d.ordinal() as _).collect();
        let mut raws: Vec<nc::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `raws` has room for one handle per device, `ordinals` lists them.
        check(
            unsafe {
                nc::ncclCommInitAll(raws.as_mut_ptr(), ordinals.len() as _, ordinals.as_ptr())
            },
            "ncclCommInitAll",
            std::ptr::null_mut(),
        )?;
        let size = devices.len();
        Ok(raws
            .into_iter()
            .zip(contexts)
            .enumerate()
            .map(|(rank, (raw, ctx))| Communicator {
                raw,
                ctx,
                rank,
                size,
            })
            .collect())
    }

    /// Rank `rank` of `nranks`, on `device`, of the communicator that `id` names
    /// (`ncclCommInitRank`). Every rank must call this (in its own process or thread, or
    /// inside one [`group`](super::group)); it blocks until all have joined.
    pub fn init_rank(device: &Device, nranks: usize, id: &UniqueId, rank: usize) -> Result<Self> {
        refuse_simulator("Communicator::init_rank")?;
        if nranks == 0 {
            return Err(Error::usage("Communicator::init_rank: nranks is 0"));
        }
        super::shapes::rank_in("Communicator::init_rank", "rank", rank, nranks)?;
        let ctx = device.primary_context()?;
        ctx.bind()?;
        let mut raw: nc::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `raw` receives the handle; the id is passed by value as nccl.h declares.
        check(
            unsafe { nc::ncclCommInitRank(&mut raw, nranks as _, id.raw(), rank as _) },
            "ncclCommInitRank",
            std::ptr::null_mut(),
        )?;
        Ok(Communicator {
            raw,
            ctx,
            rank,
            size: nranks,
        })
    }

    /// This rank's index, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device of this rank.
    pub fn device(&self) -> Device {
        self.ctx.device()
    }

    /// The context of this rank's device (the primary context).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// NCCL's handle.
    pub fn raw(&self) -> nc::ncclComm_t {
        self.raw
    }

    /// An error that NCCL found asynchronously on this communicator, if any
    /// (`ncclCommGetAsyncError`).
    pub fn async_error(&self) -> Result<Option<Error>> {
        let mut code = nc::ncclResult_t::ncclSuccess;
        // SAFETY: the communicator is live and `code` is a live out-parameter.
        check(
            unsafe { nc::ncclCommGetAsyncError(self.raw, &mut code) },
            "ncclCommGetAsyncError",
            self.raw,
        )?;
        Ok(check(Ok(code), "an asynchronous NCCL operation", self.raw).err())
    }
}

impl Communicator {
    /// Aborts the communicator (`ncclCommAbort`): NCCL operations still queued or running on
    /// it stop (a collective waiting for a rank that died returns instead of spinning), and
    /// the communicator is freed. For a rank that found a peer dead or timed out; the other
    /// ranks must abort theirs too.
    pub fn abort(mut self) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        self.ctx.bind()?;
        // SAFETY: the handle is ours and live; it is nulled above so Drop does not free it again.
        check(
            unsafe { nc::ncclCommAbort(raw) },
            "ncclCommAbort",
            std::ptr::null_mut(),
        )
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return; // aborted
        }
        self.ctx.bind_in_drop();
        // SAFETY: the handle is ours, live, and destroyed exactly once.
        check_in_drop(check(
            unsafe { nc::ncclCommDestroy(self.raw) },
            "ncclCommDestroy",
            std::ptr::null_mut(),
        ));
    }
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Communicator(rank {} of {}, device {})",
            self.rank,
            self.size,
            self.ctx.device().ordinal()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_bytes_round_trip() {
        let mut bytes = [0u8; UNIQUE_ID_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7 + 200) as u8;
        }
        let id = UniqueId::from_bytes(bytes);
        assert_eq!(id.as_bytes(), &bytes);
        let raw = id.raw();
        assert_eq!(raw.internal[1] as u8, 207);
        assert_eq!(std::mem::size_of::<nc::ncclUniqueId>(), UNIQUE_ID_BYTES);
        assert_eq!(format!("{id:?}"), "UniqueId(c8cfd6dde4ebf2f9…)");
    }
}
