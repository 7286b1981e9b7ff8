//! Where the ranks of a communicator spread over processes (and hosts) meet to share NCCL's
//! [`UniqueId`]: torch's environment variables and a small TCP store, a shared file, or bytes
//! the user passes. Every wait is bounded: a rank that never arrives is an error naming it, on
//! every rank that did, never a hang.
//!
//! - TCP ([`Rendezvous::tcp`], and [`Rendezvous::from_env`] with `MASTER_ADDR`/`MASTER_PORT`/
//!   `RANK`/`WORLD_SIZE`, as `torch.distributed`'s `env://`): rank 0 listens on the address; the
//!   others connect (retrying until rank 0 is up) and say their rank and the world size; once all
//!   `world - 1` have arrived rank 0 sends each the id, and only then does any rank go on to
//!   `ncclCommInitRank` (which would wait for a missing rank forever). A duplicate or
//!   out-of-range rank, or a world size that disagrees, is an error on both sides.
//! - A file ([`Rendezvous::file`]) on storage every rank sees: rank 0 writes the id (atomically:
//!   a temporary file renamed), every rank writes `PATH.rank<r>`, and each waits until the id and
//!   all `world` rank files exist.
//! - [`Rendezvous::id`]: the id as bytes the user carried (an MPI broadcast, a job launcher).
//!
//! The time limit is 300 s unless set ([`Rendezvous::timeout`], or `CUDAJIT_RENDEZVOUS_TIMEOUT`
//! in seconds for [`Rendezvous::from_env`]).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::comm::{Communicator, UniqueId, UNIQUE_ID_BYTES};
use crate::context::Device;
use crate::error::{Error, Result};

/// The default time limit of a rendezvous.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The first bytes of a rank's hello, and the protocol's version.
const MAGIC: &[u8; 4] = b"CJRV";
const VERSION: u32 = 1;
/// How long past its own deadline a rank waits for rank 0's answer (rank 0 answers by its
/// deadline, which is about the same instant).
const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// How the ranks of a communicator over processes meet to share its [`UniqueId`]: TCP (torch's
/// `env://`), a shared file, or given bytes; every wait bounded (see [`Communicator::from_env`]
/// and the [`nccl`](crate::nccl) module).
#[derive(Debug, Clone)]
pub struct Rendezvous {
    how: How,
    rank: usize,
    world: usize,
    timeout: Duration,
}

#[derive(Debug, Clone)]
enum How {
    Tcp(String),
    File(PathBuf),
    Id(UniqueId),
}

/// A rendezvous error: what failed, for this rank, and what to check.
fn fail(rank: usize, what: impl std::fmt::Display) -> Error {
    Error::usage(format!("NCCL rendezvous (rank {rank}): {what}"))
}

impl Rendezvous {
    /// Rank `rank` of `world` meeting the others at `addr` (`host:port`), where rank 0 listens.
    pub fn tcp(addr: &str, rank: usize, world: usize) -> Rendezvous {
        Rendezvous {
            how: How::Tcp(addr.to_string()),
            rank,
            world,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Rank `rank` of `world` meeting the others through the file `path` (and `path.rank<r>`),
    /// on storage they all see; remove the files after a run (a stale id file from an earlier
    /// run is not told apart from a new one).
    pub fn file(path: impl Into<PathBuf>, rank: usize, world: usize) -> Rendezvous {
        Rendezvous {
            how: How::File(path.into()),
            rank,
            world,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Rank `rank` of `world` with the id already shared (e.g. [`UniqueId::from_bytes`] of bytes
    /// rank 0's [`UniqueId::as_bytes`] gave, carried by the user).
    pub fn id(id: UniqueId, rank: usize, world: usize) -> Rendezvous {
        Rendezvous {
            how: How::Id(id),
            rank,
            world,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// torch's `env://`: `MASTER_ADDR` and `MASTER_PORT` (rank 0's address), `RANK` and
    /// `WORLD_SIZE`; `CUDAJIT_RENDEZVOUS_TIMEOUT` (seconds) sets the time limit. A missing or
    /// malformed variable is an error naming it.
    pub fn from_env() -> Result<Rendezvous> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// [`from_env`](Self::from_env) over any source of variables (testable without touching
    /// the process's environment).
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Rendezvous> {
        let get = |k: &str| {
            var(k).filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                Error::usage(format!(
                    "NCCL rendezvous: {k} is not set (from_env needs MASTER_ADDR, MASTER_PORT, \
                     RANK and WORLD_SIZE, as torch.distributed's env://)"
                ))
            })
        };
        let num = |k: &str| -> Result<usize> {
            let v = get(k)?;
            v.trim().parse().map_err(|_| {
                Error::usage(format!(
                    "NCCL rendezvous: {k} is `{v}`, not a non-negative integer"
                ))
            })
        };
        let (addr, port) = (get("MASTER_ADDR")?, num("MASTER_PORT")?);
        if port == 0 || port > 65535 {
            return Err(Error::usage(format!(
                "NCCL rendezvous: MASTER_PORT is {port}, not a port (1-65535)"
            )));
        }
        let mut r = Rendezvous::tcp(
            &format!("{}:{port}", addr.trim()),
            num("RANK")?,
            num("WORLD_SIZE")?,
        );
        if let Some(t) = var("CUDAJIT_RENDEZVOUS_TIMEOUT") {
            let s: f64 = t.trim().parse().map_err(|_| {
                Error::usage(format!(
                    "NCCL rendezvous: CUDAJIT_RENDEZVOUS_TIMEOUT is `{t}`, not a number of seconds"
                ))
            })?;
            if !(s > 0.0 && s.is_finite()) {
                return Err(Error::usage(format!(
                    "NCCL rendezvous: CUDAJIT_RENDEZVOUS_TIMEOUT is {s}, not a positive number"
                )));
            }
            r.timeout = Duration::from_secs_f64(s);
        }
        Ok(r)
    }

    /// The same rendezvous with time limit `t` for every wait.
    pub fn timeout(mut self, t: Duration) -> Rendezvous {
        self.timeout = t;
        self
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world(&self) -> usize {
        self.world
    }

    /// Meets the other ranks and returns the id: rank 0's `make()`, shared with every rank.
    pub fn share(&self, make: impl FnOnce() -> Result<UniqueId>) -> Result<UniqueId> {
        if self.world == 0 || self.rank >= self.world {
            return Err(fail(
                self.rank,
                format!(
                    "rank {} of a world of {}: ranks are 0 to WORLD_SIZE - 1",
                    self.rank, self.world
                ),
            ));
        }
        let bytes = match &self.how {
            How::Id(id) => return Ok(*id),
            How::Tcp(addr) => self.tcp_share(addr, make)?,
            How::File(path) => self.file_share(path, make)?,
        };
        Ok(UniqueId::from_bytes(bytes))
    }

    fn tcp_share(
        &self,
        addr: &str,
        make: impl FnOnce() -> Result<UniqueId>,
    ) -> Result<[u8; UNIQUE_ID_BYTES]> {
        let deadline = Instant::now() + self.timeout;
        let (rank, world) = (self.rank, self.world);
        if rank == 0 {
            let listener = TcpListener::bind(addr)
                .map_err(|e| fail(0, format!("cannot listen on {addr}: {e}")))?;
            listener
                .set_nonblocking(true)
                .map_err(|e| fail(0, e.to_string()))?;
            let mut peers: Vec<Option<TcpStream>> = (0..world).map(|_| None).collect();
            let mut arrived = 1;
            while arrived < world {
                match listener.accept() {
                    Ok((mut s, from)) => {
                        s.set_nonblocking(false)
                            .map_err(|e| fail(0, e.to_string()))?;
                        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                        let r = read_hello(&mut s)
                            .map_err(|e| fail(0, format!("a bad hello from {from}: {e}")))?;
                        let problem = if r.1 != world {
                            Some(format!(
                                "rank {} at {from} says the world has {} ranks; this one, {world}",
                                r.0, r.1
                            ))
                        } else if r.0 == 0 || r.0 >= world {
                            Some(format!("{from} says it is rank {}, out of 1..{world}", r.0))
                        } else if peers[r.0].is_some() {
                            Some(format!(
                                "rank {} arrived twice (the second from {from})",
                                r.0
                            ))
                        } else {
                            None
                        };
                        if let Some(p) = problem {
                            let _ = s.write_all(&reply(false, p.as_bytes()));
                            return Err(fail(0, p));
                        }
                        peers[r.0] = Some(s);
                        arrived += 1;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if Instant::now() >= deadline {
                            let missing: Vec<String> = (1..world)
                                .filter(|&r| peers[r].is_none())
                                .map(|r| r.to_string())
                                .collect();
                            let msg = format!(
                                "rank(s) {} did not arrive at {addr} within {:.0} s: check that \
                                 every rank runs with the same MASTER_ADDR/MASTER_PORT and \
                                 WORLD_SIZE {world}",
                                missing.join(", "),
                                self.timeout.as_secs_f64()
                            );
                            for s in peers.iter_mut().flatten() {
                                let _ = s.write_all(&reply(false, msg.as_bytes()));
                            }
                            return Err(fail(0, msg));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => return Err(fail(0, format!("accepting on {addr}: {e}"))),
                }
            }
            let id = make()?;
            for (r, s) in peers.iter_mut().enumerate() {
                if let Some(s) = s {
                    s.write_all(&reply(true, id.as_bytes()))
                        .map_err(|e| fail(0, format!("sending the id to rank {r}: {e}")))?;
                }
            }
            return Ok(*id.as_bytes());
        }
        // Rank r > 0: connect (rank 0 may not listen yet), say hello, wait for the id.
        let mut s = loop {
            let last = Instant::now() >= deadline;
            let tried = addr
                .to_socket_addrs()
                .map_err(|e| fail(rank, format!("cannot resolve {addr}: {e}")))?
                .find_map(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).ok());
            match tried {
                Some(s) => break s,
                None if last => {
                    return Err(fail(
                        rank,
                        format!(
                            "rank 0 did not listen at {addr} within {:.0} s",
                            self.timeout.as_secs_f64()
                        ),
                    ))
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let mut hello = MAGIC.to_vec();
        for v in [VERSION, rank as u32, world as u32] {
            hello.extend(v.to_le_bytes());
        }
        s.write_all(&hello)
            .map_err(|e| fail(rank, format!("saying hello to {addr}: {e}")))?;
        // Rank 0 answers by its own deadline at the latest (the id, or a refusal naming the
        // ranks that did not come), and its deadline is about this rank's: wait a grace past
        // ours for that answer, so that a refusal is read rather than raced by our own timeout.
        let left = deadline.saturating_duration_since(Instant::now()) + ANSWER_GRACE;
        let _ = s.set_read_timeout(Some(left));
        let mut head = [0u8; 5];
        s.read_exact(&mut head).map_err(|e| {
            fail(
                rank,
                format!("no answer from rank 0 at {addr} within the time limit: {e}"),
            )
        })?;
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len.min(1 << 16)];
        s.read_exact(&mut body)
            .map_err(|e| fail(rank, format!("reading rank 0's answer: {e}")))?;
        if head[0] != 1 {
            return Err(fail(
                rank,
                format!("rank 0 refused: {}", String::from_utf8_lossy(&body)),
            ));
        }
        body.try_into()
            .map_err(|_| fail(rank, "rank 0 sent an id of the wrong length"))
    }

    fn file_share(
        &self,
        path: &std::path::Path,
        make: impl FnOnce() -> Result<UniqueId>,
    ) -> Result<[u8; UNIQUE_ID_BYTES]> {
        let (rank, world) = (self.rank, self.world);
        let deadline = Instant::now() + self.timeout;
        let io = |what: &str, e: std::io::Error| fail(rank, format!("{what}: {e}"));
        let mark = |r: usize| PathBuf::from(format!("{}.rank{r}", path.display()));
        if rank == 0 {
            let id = make()?;
            let tmp = PathBuf::from(format!("{}.tmp{}", path.display(), std::process::id()));
            std::fs::write(&tmp, id.as_bytes()).map_err(|e| io("writing the id", e))?;
            std::fs::rename(&tmp, path).map_err(|e| io("renaming the id file", e))?;
        }
        std::fs::write(mark(rank), b"").map_err(|e| io("writing this rank's file", e))?;
        loop {
            let missing: Vec<usize> = (0..world).filter(|&r| !mark(r).exists()).collect();
            let id = std::fs::read(path)
                .ok()
                .filter(|b| b.len() == UNIQUE_ID_BYTES);
            if let (true, Some(b)) = (missing.is_empty(), id) {
                return b.try_into().map_err(|_| fail(rank, "the id file changed"));
            }
            if Instant::now() >= deadline {
                let who: Vec<String> = missing.iter().map(|r| r.to_string()).collect();
                return Err(fail(
                    rank,
                    format!(
                        "rank(s) {} did not arrive at {} within {:.0} s",
                        who.join(", "),
                        path.display(),
                        self.timeout.as_secs_f64()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Reads a hello: (rank, world).
fn read_hello(s: &mut TcpStream) -> std::io::Result<(usize, usize)> {
    let mut b = [0u8; 16];
    s.read_exact(&mut b)?;
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    if &b[..4] != MAGIC || word(4) != VERSION {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a cudajit rendezvous of this version",
        ));
    }
    Ok((word(8) as usize, word(12) as usize))
}

/// An answer: ok or refused, and its body (the id, or why).
fn reply(ok: bool, body: &[u8]) -> Vec<u8> {
    let mut v = vec![ok as u8];
    v.extend((body.len() as u32).to_le_bytes());
    v.extend(body);
    v
}

impl Communicator {
    /// This process's rank of a communicator over processes, on `device`, meeting the others
    /// through `rv` (rank 0 makes the [`UniqueId`]; see [`Rendezvous`]).
    pub fn with_rendezvous(device: &Device, rv: &Rendezvous) -> Result<Communicator> {
        let id = rv.share(UniqueId::new)?;
        Communicator::init_rank(device, rv.world(), &id, rv.rank())
    }

    /// [`with_rendezvous`](Self::with_rendezvous) with [`Rendezvous::from_env`] (torch's
    /// `MASTER_ADDR`, `MASTER_PORT`, `RANK`, `WORLD_SIZE`).
    pub fn from_env(device: &Device) -> Result<Communicator> {
        Communicator::with_rendezvous(device, &Rendezvous::from_env()?)
    }
}

#[cfg(test)]
mod tests;
