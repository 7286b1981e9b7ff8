//! Arrays sharded over processes, one shard per rank: a [`ProcessGroup`] (this process's rank
//! of an NCCL communicator over processes, one GPU each, and a stream) and
//! [`RankShardedArray`]s split along axis 0 over its ranks, with the operations of
//! [`ShardedArray`](crate::sharded::ShardedArray) (which splits over the GPUs of one
//! process): reductions whose value every rank gets, elementwise kernels
//! ([`Elementwise::apply_ranks`](crate::ops::Elementwise::apply_ranks)), and gathers of the
//! whole array to every rank, and scans of the whole array in C order
//! ([`RankShardedArray::scan`], `cumsum`: each rank's total all-gathered, then every rank scans
//! its shard from the totals of the ranks before it).
//!
//! The processes meet as `torch.distributed`'s do (`MASTER_ADDR`, `MASTER_PORT`, `RANK`,
//! `WORLD_SIZE`: [`ProcessGroup::from_env`]), or over a [`Communicator`](crate::nccl::Communicator)
//! made any other way ([`ProcessGroup::new`]). Every rank makes the same calls in the same
//! order: creation agrees on the layout (one small all-gather; ranks that disagree on the
//! whole length, the shape after axis 0 or the element type get the same error on every
//! rank), reductions bring the ranks' partial results to every rank and combine them there,
//! gathers use NCCL's all-gather (or one broadcast per rank for uneven shards). Elementwise
//! kernels are local to each rank. On one machine whose GPUs are peers, full reductions join
//! on the device instead (each rank's kernel writes its partial into the other ranks' memory,
//! shared by IPC, and waits for theirs: no NCCL call). Host waits are bounded: a rank that
//! never makes the call is an error after the group's time limit (NCCL's asynchronous errors
//! are polled, and the communicator is aborted; a reduction joined on the device times out in
//! its kernel). A rank that dies is an error in time for reductions joined on the device; in an
//! NCCL collective over NVLink it is not yet: with NCCL 2.28.3 the survivor spun in NCCL's
//! connection setup with the dead peer (measured on two H200s).
//!
//! ```no_run
//! use cudajit::distributed::{ProcessGroup, RankShardedArray};
//! use cudajit::ops::{Elem, Elementwise};
//! # fn main() -> cudajit::Result<()> {
//! // Run as N processes (e.g. by torchrun, or examples/multi_process), one GPU each.
//! let group = ProcessGroup::from_env()?;
//! let host: Vec<f32> = (0..1 << 20).map(|i| i as f32).collect();
//! let x = RankShardedArray::from_host(&group, &host)?; // each rank keeps its rows
//! let mut y = x.alloc_like::<f32>()?;
//! let twice = Elementwise::<(Elem<f32>,), _>::new("twice", |(a,)| a + a)?;
//! twice.apply_ranks((&x,), &mut y)?;
//! assert_eq!(y.sum()?, 2.0 * x.sum()?); // every rank gets the whole sums
//! let all: Vec<f32> = y.to_vec()?; // every rank gets the whole array
//! # Ok(()) }
//! ```
//!
//! NCCL needs real GPUs: on the simulator a group cannot be made (a clear error).

mod array;
mod ew;
mod group;
mod join;
mod layout;
mod reduce;
mod scan;

pub use array::RankShardedArray;
pub use ew::{RankArg, RankArgs, RankLayout, RankOutArgs};
pub use group::ProcessGroup;
