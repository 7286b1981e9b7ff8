//! Reductions of sharded arrays: every device reduces its shard into a partial result, written
//! straight into the first device's memory (peer access) or copied there; the first device
//! then combines the partials in shard order and applies the reduction's last step. It waits
//! for the peers' partials on the device (flags that the combining kernel waits for, see
//! `join.rs`), for the others' with events.

use ndarray::{Dimension, Ix1};

use super::array::ShardedArray;
use super::mesh::PartialSlots;
use crate::codegen::Scalar as ScalarType;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::ops::{JoinArgs, ReduceScalar, Reduction};

impl<T: ScalarType, D: Dimension> ShardedArray<T, D> {
    /// Reduces the whole array with `r` into a new one-element array on the mesh's first
    /// device, ordered on its mesh stream after every device's part (the host does not wait).
    ///
    /// Each device reduces its shard on its own stream, the devices other than the first
    /// launched first; their partial results reach the first device's memory, whose stream
    /// waits for them (on the device, for flags the peers publish, with a timeout: see
    /// [`Mesh::set_join_timeout`](super::Mesh::set_join_timeout); else with events) and
    /// combines them in shard order. The result equals a
    /// one-device reduction's up to the order of floating-point combination (partials per
    /// shard, then across shards).
    pub fn reduce_to_device<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
    ) -> Result<DeviceArray<R>> {
        let out = DeviceArray::<R, Ix1>::alloc_ordered(self.mesh().stream(0), Ix1(1))?;
        self.reduce_at(r, out.device_ptr())?;
        Ok(out)
    }

    /// Reduces the whole array with `r` into `out`, a one-element array on the mesh's first
    /// device, as [`reduce_to_device`](Self::reduce_to_device) (no allocation, no wait).
    pub fn reduce_into<A: ScalarType, R: ScalarType, O: DeviceSliceMut<R> + ?Sized>(
        &self,
        r: &Reduction<T, A, R>,
        out: &mut O,
    ) -> Result<()> {
        self.check_first_scalar("ShardedArray::reduce_into (a one-element output)", out)?;
        self.reduce_at(r, out.device_ptr())
    }

    fn reduce_at<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
        out: u64,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: sharded {}", r.name()));
        r.check_empty_of(self.len())?;
        let a_size = A::TY.size();
        if a_size > PartialSlots::SLOT_BYTES {
            return Err(Error::usage(format!(
                "sharded `{}`: partial results of {a_size} bytes are not supported (at most {})",
                r.name(),
                PartialSlots::SLOT_BYTES
            )));
        }
        let mesh = self.mesh();
        let s0 = mesh.stream(0);
        let used = self.nonempty_shards();
        if used == [0] {
            // Every element is on the first device (a mesh of one, or an array of fewer rows
            // than devices): a one-device reduction, straight into `out`.
            return r.full_into_raw(s0, &self.shards()[0], out);
        }
        let mut slots = mesh.partials();
        let epoch = slots.join.next_epoch();
        // Not in a graph capture: a replay would re-publish and wait for the captured epoch,
        // which the flags passed at the first run, so the wait would not wait.
        let flags = slots.join.enabled && mesh.len() <= 64 && !crate::graph::capturing();
        // Devices (bits) that publish a flag after their partial; the others join with events.
        let mut mask = 0u64;
        for &k in &used {
            if k != 0 && flags && mesh.has_peer_access_to_first(k) {
                mask |= 1 << k;
            }
        }
        // When the first device has a shard and every other one publishes a flag, the first
        // device's pass ends the reduction itself (waits and combines in its last block: no
        // combining kernel).
        let fused = used.first() == Some(&0) && used[1..].iter().all(|&k| mask & (1 << k) != 0);
        // The other devices first: their results take longer to reach the first device.
        for (i, &k) in used.iter().enumerate().rev() {
            if k == 0 && fused {
                continue;
            }
            slots.wait_free(mesh, k)?;
            let publish = if mask & (1 << k) != 0 {
                slots.join.publish_args(k, epoch)
            } else {
                None
            };
            let shard = &self.shards()[k];
            mesh.write_to_first(
                k,
                &[(slots.slot(i, a_size), a_size)],
                |stream, at| match &publish {
                    Some(p) => r.partial_publish_raw(stream, shard, at[0], p),
                    None => r.partial_into_raw(stream, shard, at[0]),
                },
            )?;
        }
        mesh.join(
            0,
            used.iter()
                .copied()
                .filter(|&k| k != 0 && mask & (1 << k) == 0),
        )?;
        let parts = slots.slot(0, a_size);
        if fused {
            let wait = slots.join.wait_args(mask, epoch);
            let join = JoinArgs {
                parts,
                chunks: used.len(),
                me: 0,
                count: self.len(),
                wait: &wait,
                peers: &[],
            };
            r.full_join_raw(s0, &self.shards()[0], out, &join)?;
        } else if mask != 0 {
            let wait = slots.join.wait_args(mask, epoch);
            r.combine_after_flags_raw(s0, parts, used.len(), out, self.len(), &wait)?;
        } else {
            r.combine_columns_raw(s0, parts, 1, used.len(), out, self.len())?;
        }
        slots.release(mesh)
    }

    /// Reduces the whole array with `r` and returns the value to the host (waits).
    pub fn reduce<A: ScalarType, R: ScalarType>(&self, r: &Reduction<T, A, R>) -> Result<R> {
        let out = self.reduce_to_device(r)?;
        let v = out.to_vec_async(self.mesh().stream(0))?;
        self.mesh().check_join()?;
        v.first().copied().ok_or_else(|| {
            Error::usage("sharded reduction: the result array is empty (a bug in cudajit)")
        })
    }
}

/// The built-in reductions of sharded arrays (as [`ReduceOps`](crate::ops::ReduceOps) for one
/// device, with the same accumulation types and empty-array rules).
impl<T: ReduceScalar, D: Dimension> ShardedArray<T, D> {
    /// The sum of all elements (0 for an empty array), returned to the host.
    pub fn sum(&self) -> Result<T> {
        self.reduce(T::reductions().sum()?)
    }
    /// The sum into a new one-element array on the first device (no host wait).
    pub fn sum_to_device(&self) -> Result<DeviceArray<T>> {
        self.reduce_to_device(T::reductions().sum()?)
    }
    /// The sum into `out`, a one-element array on the first device (no allocation, no wait).
    pub fn sum_into<O: DeviceSliceMut<T> + ?Sized>(&self, out: &mut O) -> Result<()> {
        self.reduce_into(T::reductions().sum()?, out)
    }
    /// The sum of all elements, accumulated in `f64`.
    pub fn sum_f64(&self) -> Result<f64> {
        self.reduce(T::reductions().sum_f64()?)
    }
    /// The product of all elements (1 for an empty array).
    pub fn prod(&self) -> Result<T> {
        self.reduce(T::reductions().prod()?)
    }
    /// The smallest element (NaN if any is NaN); an error for an empty array.
    pub fn min(&self) -> Result<T> {
        self.reduce(T::reductions().min()?)
    }
    /// The largest element (NaN if any is NaN); an error for an empty array.
    pub fn max(&self) -> Result<T> {
        self.reduce(T::reductions().max()?)
    }
    /// The mean, accumulated in `f64`; an error for an empty array.
    pub fn mean(&self) -> Result<f64> {
        self.reduce(T::reductions().mean()?)
    }
}
