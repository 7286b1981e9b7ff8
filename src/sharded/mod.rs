//! Arrays split over several GPUs of this process: a [`Mesh`] of devices (one stream each)
//! and [`ShardedArray`]s split along axis 0 over it, with elementwise kernels applied shard by
//! shard ([`Elementwise::apply_sharded`](crate::ops::Elementwise::apply_sharded)) and
//! reductions that reduce every shard on its device and combine the partial results on the
//! first one (or, along an axis, keep the split). A [`Replicated`] array, the same data on
//! every device, is an elementwise input that broadcasts against every shard, and
//! [`Index`](crate::ops::Index) counts over the whole array (each shard from its first
//! element's index). Scans ([`ShardedArray::scan`], `cumsum`) run over the whole array in C
//! order: every device but the last reduces its shard to a total, then every device scans its
//! shard at once, starting from the totals of the shards before it.
//!
//! Everything is queued from one host thread and every device works at once: no host thread
//! waits between devices, no lock is held across device work; the devices' streams are joined
//! with events where results meet, except in full reductions over peers, which join on the
//! device: each other device publishes an epoch flag in the first device's memory after its
//! partial result, and the first device's combining kernel waits for the flags, spinning
//! with a `%globaltimer` timeout ([`Mesh::set_join_timeout`]; a lost device is an error from
//! [`Mesh::synchronize`] or the value read back, not a hang), then combines the partials.
//! Partial results move between devices directly when the devices are peers (NVLink or PCIe
//! peer-to-peer: [`Mesh::new`] turns peer access on), else by the driver's staged peer copies.
//! NCCL is not needed (for collectives on your own arrays see [`crate::nccl`]).
//!
//! ```no_run
//! use cudajit::sharded::{Mesh, ShardedArray};
//! # fn main() -> cudajit::Result<()> {
//! let mesh = Mesh::all()?; // every GPU of the machine
//! let x = ShardedArray::from_host(&mesh, &vec![1.0f32; 1 << 20])?; // split evenly
//! assert_eq!(x.sum()?, (1 << 20) as f32);
//! # Ok(()) }
//! ```
//!
//! On the simulator, `CUDAJIT_SIM_DEVICES=N` simulates N devices.

mod arg;
mod array;
mod axis;
mod ew;
mod join;
mod mesh;
mod reduce;
mod replicated;
mod scan;
pub(crate) mod split;

pub use array::ShardedArray;
pub use ew::{ShardLayout, ShardedArg, ShardedArgs, ShardedOutArg, ShardedOutArgs};
pub use mesh::Mesh;
pub use replicated::Replicated;
