//! Collectives across GPUs through NCCL, loaded at run time like the driver.
//!
//! NCCL (`libnccl.so.2`) is found the way `cudajit-sys`'s [`nccl` loader](crate::sys::nccl::loader)
//! documents: `CUDAJIT_NCCL` (an absolute path), the usual directories, the
//! `nvidia-nccl-cu12`/`-cu13` wheels under Python's site-packages, then the system loader.
//! Relative candidates are skipped, `python3` runs under a time limit and not at all with
//! `CUDAJIT_NO_PYTHON=1`, and `CUDAJIT_LOG_LOAD=1` prints what was chosen and skipped. Without it everything else in cudajit
//! works and the calls here return [`Error::NcclLoad`](crate::Error::NcclLoad), which says what
//! to install (`pip install nvidia-nccl-cu12`) and where it looked.
//!
//! - [`Communicator`]: one rank of a communicator: [`Communicator::init_all`] over devices of
//!   this process (`ncclCommInitAll`), or [`Communicator::init_rank`] with a [`UniqueId`] that
//!   the user passes between processes (`ncclGetUniqueId` / `ncclCommInitRank`), or
//!   [`Communicator::from_env`] / [`Communicator::with_rendezvous`], where the processes meet
//!   through a [`Rendezvous`] (torch's `MASTER_ADDR`/`MASTER_PORT`/`RANK`/`WORLD_SIZE` and a
//!   small TCP store, a shared file, or given bytes), with a time limit: a rank that never
//!   arrives is an error on every rank, not a hang.
//! - Collectives on cudajit streams and device arrays: [`Communicator::all_reduce`],
//!   [`broadcast`](Communicator::broadcast), [`reduce`](Communicator::reduce),
//!   [`all_gather`](Communicator::all_gather), [`reduce_scatter`](Communicator::reduce_scatter),
//!   [`send`](Communicator::send) / [`recv`](Communicator::recv), with in-place variants, and
//!   [`group`] around calls that must be issued together (several ranks from one thread,
//!   send/recv pairs). Element types map to NCCL's at compile time ([`NcclType`]).
//! - Array lengths and devices are checked before NCCL is called: a mismatch is an
//!   [`Error::Shape`](crate::Error::Shape) or [`Error::Usage`](crate::Error::Usage) naming the
//!   operation, the shapes and the devices.
//!
//! NCCL needs real device memory: on the simulator the communicators cannot be made (a clear
//! error).

mod collectives;
mod comm;
mod dtype;
mod rendezvous;
mod result;
mod shapes;

pub use collectives::group;
pub use comm::{Communicator, UniqueId, UNIQUE_ID_BYTES};
pub use dtype::{NcclType, ReduceOp};
pub use rendezvous::Rendezvous;
pub use result::NcclCode;

use crate::error::Result;
use cudajit_sys as sys;

/// NCCL's version as (major, minor, patch), loading NCCL if needed.
pub fn version() -> Result<(u32, u32, u32)> {
    let code = sys::nccl::nccl_library()?.version() as u32;
    // Since 2.9 the code is major*10000 + minor*100 + patch; before, major*1000 + minor*100 + patch.
    Ok(if code >= 10000 {
        (code / 10000, code % 10000 / 100, code % 100)
    } else {
        (code / 1000, code % 1000 / 100, code % 100)
    })
}

/// Whether NCCL can be loaded (see the module documentation for where it is looked for).
pub fn is_available() -> bool {
    sys::nccl::nccl_library().is_ok()
}

/// Where the loaded NCCL library came from (its path or name), loading it if needed.
pub fn library_path() -> Result<String> {
    Ok(sys::nccl::nccl_library()?.origin().to_string())
}
