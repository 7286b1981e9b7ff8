//! Reductions of arrays sharded over processes: every rank reduces its shard into a partial
//! result (before the reduction's last step), the partials reach every rank, and every rank
//! combines them in rank order and applies the last step (a mean divides by the whole count).
//! On one machine whose GPUs are peers the partials are published into the other ranks'
//! memory and joined on the device, in the same kernel (`join.rs`); otherwise they are
//! all-gathered through NCCL (a few bytes per rank, as raw bytes: any accumulator type) and
//! combined by a second kernel. So every rank
//! gets the same value, with the reduction's own semantics (NaN-propagating min and max,
//! wrapping integer sums), and an empty shard contributes the reduction's identity.

use ndarray::{Dimension, Ix1};

use super::array::RankShardedArray;
use crate::codegen::Scalar as ScalarType;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::ops::{ReduceScalar, Reduction};

impl<T: ScalarType, D: Dimension> RankShardedArray<T, D> {
    /// Reduces the whole array with `r` into a new one-element array on this rank's GPU,
    /// ordered on the group's stream (no host wait). Collective: every rank calls it, and
    /// every rank's result is the same.
    pub fn reduce_to_device<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
    ) -> Result<DeviceArray<R>> {
        let out = DeviceArray::<R, Ix1>::alloc_ordered(self.group().stream(), Ix1(1))?;
        self.reduce_at(r, out.device_ptr())?;
        Ok(out)
    }

    /// Reduces the whole array with `r` into `out`, a one-element array on this rank's GPU,
    /// as [`reduce_to_device`](Self::reduce_to_device) (no wait).
    pub fn reduce_into<A: ScalarType, R: ScalarType, O: DeviceSliceMut<R> + ?Sized>(
        &self,
        r: &Reduction<T, A, R>,
        out: &mut O,
    ) -> Result<()> {
        if out.len() != 1 {
            return Err(Error::Shape {
                op: "RankShardedArray::reduce_into (a one-element output)",
                expected: vec![1],
                actual: out.shape().to_vec(),
            });
        }
        self.group()
            .context()
            .check_same(out.context(), "the reduction's output")?;
        self.reduce_at(r, out.device_ptr())
    }

    fn reduce_at<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
        out: u64,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: distributed {}", r.name()));
        // Every rank knows the whole length: an empty array's error is on every rank at once,
        // before any collective.
        r.check_empty_of(self.len())?;
        let g = self.group();
        let (s, world, rank) = (g.stream(), g.size(), g.rank());
        let a_size = A::TY.size();
        // On one machine with peer GPUs: one kernel per rank, joined on the device.
        if a_size <= super::join::SLOT_BYTES {
            let joined = g.with_join(|j| {
                j.map(|j| {
                    let e = j.next(g);
                    r.full_join_raw(s, self.local(), out, &e.args(g, self.len()))
                })
            })?;
            if let Some(res) = joined {
                return res;
            }
        }
        // One slot of `a_size` bytes per rank, in rank order.
        let mut parts = DeviceArray::<u8, Ix1>::alloc_ordered(s, Ix1(world * a_size))?;
        let base = parts.device_ptr();
        r.partial_into_raw(s, self.local(), base + (rank * a_size) as u64)?;
        g.with_comm(|c| c.all_gather_in_place(&mut parts, s))?;
        r.combine_columns_raw(s, base, 1, world, out, self.len())
    }

    /// Reduces the whole array with `r` and returns the value to the host on every rank
    /// (waits, with the group's time limit).
    pub fn reduce<A: ScalarType, R: ScalarType>(&self, r: &Reduction<T, A, R>) -> Result<R> {
        let out = self.reduce_to_device(r)?;
        self.group().wait(r.name())?;
        let v = out.to_vec_async(self.group().stream())?;
        v.first().copied().ok_or_else(|| {
            Error::usage("distributed reduction: the result array is empty (a bug in cudajit)")
        })
    }
}

/// The built-in reductions (as [`ReduceOps`](crate::ops::ReduceOps) for one device, with the
/// same accumulation types and empty-array rules), the value on every rank.
impl<T: ReduceScalar, D: Dimension> RankShardedArray<T, D> {
    /// The sum of all elements (0 for an empty array), returned to the host on every rank.
    pub fn sum(&self) -> Result<T> {
        self.reduce(T::reductions().sum()?)
    }
    /// The sum into a new one-element array on this rank's GPU (no host wait).
    pub fn sum_to_device(&self) -> Result<DeviceArray<T>> {
        self.reduce_to_device(T::reductions().sum()?)
    }
    /// The sum into `out`, a one-element array on this rank's GPU (no allocation of the
    /// result, no wait).
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
    /// The mean into a new one-element array on this rank's GPU (no host wait).
    pub fn mean_to_device(&self) -> Result<DeviceArray<f64>> {
        self.reduce_to_device(T::reductions().mean()?)
    }
}
