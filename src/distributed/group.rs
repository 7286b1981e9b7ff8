//! `ProcessGroup`: this process's rank of a communicator over processes, with the stream its
//! distributed arrays work on and bounded host waits.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ndarray::Ix1;

use crate::context::{Context, Device};
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::nccl::{Communicator, NcclType, Rendezvous};
use crate::stream::Stream;

use super::join::{self, JoinState, RankJoin};

/// The default limit of a host wait on collective work.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// This process's rank of an NCCL communicator over processes (one GPU each), and the stream
/// on its device that the [`RankShardedArray`](super::RankShardedArray)s of the group work on.
/// Cheap to clone (shared); the communicator is behind a lock, so NCCL calls on it never run
/// at once from several threads.
///
/// Host waits on collective work are bounded ([`timeout`](Self::timeout), 300 s unless
/// `CUDAJIT_NCCL_TIMEOUT` (seconds) or [`with_timeout`](Self::with_timeout) says otherwise):
/// while waiting, NCCL's asynchronous error is polled (a peer that died or a broken
/// connection), and on such an error or at the limit the communicator is aborted
/// (`ncclCommAbort`) and the call returns an error; every later call on the group is then an
/// error saying why. A peer that dies is caught in time by full reductions that join on the
/// device ([`device_join`](Self::device_join): an error after the group's timeout, measured on
/// two H200s); inside an NCCL collective over NVLink it is not: with NCCL 2.28.3 the survivor's
/// host thread spun in NCCL's own connection setup with the dead peer (a proxy call over a
/// Unix socket, at the first collective that needed a new connection), where no bound of
/// ours applies.
#[derive(Clone)]
pub struct ProcessGroup {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` once aborted.
    comm: Mutex<Option<Communicator>>,
    /// Why the communicator was aborted.
    broken: Mutex<Option<String>>,
    stream: Stream,
    ctx: Context,
    rank: usize,
    size: usize,
    timeout: Mutex<Duration>,
    /// The device-side join of full reductions (`join.rs`), agreed when the group is made.
    join: Mutex<JoinState>,
}

impl ProcessGroup {
    /// A group over `comm` (which it keeps), with a new stream on the communicator's device.
    /// Collective (every rank makes its group): the ranks agree, in two small all-gathers,
    /// whether their full reductions can join on the device (one machine, peer GPUs: see the
    /// [module docs](super)).
    pub fn new(comm: Communicator) -> Result<ProcessGroup> {
        let ctx = comm.context().clone();
        let stream = ctx.new_stream()?;
        let timeout = match std::env::var("CUDAJIT_NCCL_TIMEOUT") {
            Ok(v) => parse_timeout(&v)?,
            Err(_) => DEFAULT_TIMEOUT,
        };
        let g = ProcessGroup {
            inner: Arc::new(Inner {
                rank: comm.rank(),
                size: comm.size(),
                comm: Mutex::new(Some(comm)),
                broken: Mutex::new(None),
                stream,
                ctx,
                timeout: Mutex::new(timeout),
                join: Mutex::new(JoinState::Unknown),
            }),
        };
        // Collective, as the communicator's creation: every rank makes its group.
        let state = join::set_up(&g)?;
        if let JoinState::Nccl(why) = &state {
            log::debug!("distributed reductions join through NCCL: {why}");
        }
        if let Ok(mut j) = g.inner.join.lock() {
            *j = state;
        }
        Ok(g)
    }

    /// Meets the other processes through torch's variables (`MASTER_ADDR`, `MASTER_PORT`,
    /// `RANK`, `WORLD_SIZE`; see [`Rendezvous::from_env`]) on the GPU `LOCAL_RANK` (when set,
    /// as `torchrun` sets it) or else `RANK` modulo the number of GPUs.
    pub fn from_env() -> Result<ProcessGroup> {
        let rv = Rendezvous::from_env()?;
        let local = match std::env::var("LOCAL_RANK") {
            Ok(v) => v.trim().parse::<usize>().map_err(|_| {
                Error::usage(format!("LOCAL_RANK is `{v}`, not a non-negative integer"))
            })?,
            Err(_) => rv.rank(),
        };
        let n = crate::context::device_count()?;
        if n == 0 {
            return Err(Error::usage(
                "ProcessGroup::from_env: this machine has no GPU",
            ));
        }
        let dev = Device::get(local % n)?;
        ProcessGroup::new(Communicator::with_rendezvous(&dev, &rv)?)
    }

    /// The same group with host waits bounded by `t` (for every handle of the group).
    pub fn with_timeout(self, t: Duration) -> ProcessGroup {
        self.set_timeout(t);
        self
    }

    /// Bounds host waits on collective work by `t` (for every handle of the group).
    pub fn set_timeout(&self, t: Duration) {
        if let Ok(mut g) = self.inner.timeout.lock() {
            *g = t;
        }
    }

    /// The limit of host waits on collective work.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout.lock().map_or(DEFAULT_TIMEOUT, |g| *g)
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The stream this group's arrays work on (of this rank's device).
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// This rank's device's context.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Whether `other` is this group (the same shared handle).
    pub fn same_as(&self, other: &ProcessGroup) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Runs `f` with the communicator (locked for the call); an error if it was aborted.
    /// An NCCL call that fails aborts the communicator (its ranks cannot go on together).
    pub fn with_comm<R>(&self, f: impl FnOnce(&Communicator) -> Result<R>) -> Result<R> {
        let res = {
            let guard = self.comm()?;
            match guard.as_ref() {
                Some(c) => f(c),
                None => return Err(self.broken_error()),
            }
        };
        if let Err(e @ Error::Nccl { .. }) = &res {
            self.abort(&format!("an NCCL call failed: {e}"));
        }
        res
    }

    fn comm(&self) -> Result<MutexGuard<'_, Option<Communicator>>> {
        self.inner
            .comm
            .lock()
            .map_err(|_| Error::usage("ProcessGroup: a thread panicked holding the communicator"))
    }

    fn broken_error(&self) -> Error {
        let why = self
            .inner
            .broken
            .lock()
            .ok()
            .and_then(|b| b.clone())
            .unwrap_or_else(|| "it was aborted".into());
        Error::usage(format!(
            "ProcessGroup (rank {} of {}): the communicator is gone: {why}",
            self.rank(),
            self.size()
        ))
    }

    /// Waits until the group's stream is done, polling NCCL's asynchronous error, for at most
    /// [`timeout`](Self::timeout); on an error or at the limit aborts the communicator and
    /// returns an error naming `op`.
    pub fn wait(&self, op: &str) -> Result<()> {
        let (t0, limit) = (Instant::now(), self.timeout());
        // Short naps (at most 100 us) keep the host's latency low; the stream's state and
        // NCCL's error are cheap to ask.
        let mut nap = Duration::from_micros(5);
        loop {
            if self.inner.stream.query()? {
                return self.check_join();
            }
            let async_err = self.with_comm(|c| c.async_error())?;
            let why = match async_err {
                Some(e) => Some(format!("NCCL reported an error while {op} ran: {e}")),
                None if t0.elapsed() >= limit => Some(format!(
                    "{op} did not finish within {:.0} s (a rank died, hangs, or did not make \
                     the same call: every rank must make the same collective calls in the \
                     same order)",
                    limit.as_secs_f64()
                )),
                None => None,
            };
            if let Some(why) = why {
                self.abort(&why);
                return Err(Error::usage(format!(
                    "{op} (rank {} of {}): {why}; the communicator was aborted",
                    self.rank(),
                    self.size()
                )));
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_micros(100));
        }
    }

    /// Runs `f` with the device-side join of full reductions (`None`: they join through
    /// NCCL).
    pub(crate) fn with_join<R>(&self, f: impl FnOnce(Option<&mut RankJoin>) -> R) -> Result<R> {
        let mut g = self
            .inner
            .join
            .lock()
            .map_err(|_| Error::usage("ProcessGroup: a thread panicked holding the join"))?;
        Ok(match &mut *g {
            JoinState::Device(j) => f(Some(j)),
            _ => f(None),
        })
    }

    /// Whether this group's full reductions join on the device (every rank on one machine,
    /// peer GPUs: the partials go straight into the other ranks' memory), else through
    /// NCCL's all-gather. The ranks agreed on it when the group was made.
    pub fn device_join(&self) -> bool {
        self.with_join(|j| j.is_some()).unwrap_or(false)
    }

    /// After the group's stream is done: a device-side join that timed out becomes an error.
    fn check_join(&self) -> Result<()> {
        self.with_join(|j| match j {
            Some(j) => j.check(&self.inner.stream, self),
            None => Ok(()),
        })?
    }

    /// All-gathers `mine` (the same length on every rank) through the communicator and returns
    /// every rank's values in rank order on the host (collective; waits, bounded, naming `op`).
    pub(crate) fn all_gather_host<T: NcclType>(&self, mine: &[T], op: &str) -> Result<Vec<T>> {
        let s = self.stream();
        let src = s.to_device(mine)?;
        let mut all = DeviceArray::<T, Ix1>::alloc_ordered(s, Ix1(self.size() * mine.len()))?;
        self.with_comm(|c| c.all_gather(&src, &mut all, s))?;
        self.wait(op)?;
        all.to_vec_async(s)
    }

    /// Aborts the communicator (`ncclCommAbort`), remembering `why` for later calls.
    pub fn abort(&self, why: &str) {
        if let Ok(mut b) = self.inner.broken.lock() {
            b.get_or_insert_with(|| why.to_string());
        }
        let comm = self.comm().ok().and_then(|mut g| g.take());
        if let Some(c) = comm {
            // An error aborting is reported where drop errors go; the group is broken anyway.
            if let Err(e) = c.abort() {
                crate::error::check_in_drop(Err(e));
            }
        }
    }

    /// Waits until every rank has reached this call (an all-reduce of one element on the
    /// group's stream, then a bounded wait).
    pub fn barrier(&self) -> Result<()> {
        let s = self.stream();
        let mut one =
            crate::memory::DeviceArray::<u8, ndarray::Ix1>::alloc_ordered(s, ndarray::Ix1(1))?;
        crate::memory::DeviceSliceMut::memset_async(&mut one, 0, s)?;
        self.with_comm(|c| c.all_reduce_in_place(&mut one, crate::nccl::ReduceOp::Sum, s))?;
        self.wait("ProcessGroup::barrier")
    }
}

/// A time limit in seconds (`CUDAJIT_NCCL_TIMEOUT`).
pub(crate) fn parse_timeout(v: &str) -> Result<Duration> {
    match v.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() => Ok(Duration::from_secs_f64(s)),
        _ => Err(Error::usage(format!(
            "CUDAJIT_NCCL_TIMEOUT is `{v}`, not a positive number of seconds"
        ))),
    }
}

impl fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ProcessGroup(rank {} of {}, device {})",
            self.rank(),
            self.size(),
            self.inner.ctx.device().ordinal()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_as_positive_seconds() {
        assert_eq!(parse_timeout("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_timeout(" 10 ").unwrap(), Duration::from_secs(10));
        for bad in ["0", "-1", "x", "inf", ""] {
            let e = parse_timeout(bad).unwrap_err().to_string();
            assert!(e.contains("CUDAJIT_NCCL_TIMEOUT"), "{e}");
        }
    }
}
