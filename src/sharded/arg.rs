//! `argmin` / `argmax` of sharded arrays: every device finds its shard's first extreme and
//! leaves the value and its global index in the first device's memory; the first device picks
//! the first extreme of those candidates in shard order (a NaN counts as the extreme, as in
//! NumPy and the one-device [`ReduceOps::argmax`](crate::ops::ReduceOps::argmax)).

use ndarray::{Dimension, Ix1};

use super::array::ShardedArray;
use super::split;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::ops::arg::ArgExtreme;
use crate::ops::ReduceScalar;

impl<T: ReduceScalar, D: Dimension> ShardedArray<T, D> {
    /// The flat (C-order) index of the first largest element (the first NaN if any), returned
    /// to the host; an error for an empty array.
    pub fn argmax(&self) -> Result<u64> {
        self.arg_to_host(&T::reductions().argmax, "argmax")
    }

    /// The flat index of the first smallest element (the first NaN if any).
    pub fn argmin(&self) -> Result<u64> {
        self.arg_to_host(&T::reductions().argmin, "argmin")
    }

    /// [`argmax`](Self::argmax) into `out`, a one-element array on the mesh's first device (no
    /// host wait).
    pub fn argmax_into<O: DeviceSliceMut<u64> + ?Sized>(&self, out: &mut O) -> Result<()> {
        self.arg_into(&T::reductions().argmax, "argmax", out)
    }

    /// [`argmin`](Self::argmin) into `out`, a one-element array on the mesh's first device.
    pub fn argmin_into<O: DeviceSliceMut<u64> + ?Sized>(&self, out: &mut O) -> Result<()> {
        self.arg_into(&T::reductions().argmin, "argmin", out)
    }

    fn arg_to_host(&self, k: &ArgExtreme<T>, op: &str) -> Result<u64> {
        let s0 = self.mesh().stream(0);
        let mut out = DeviceArray::<u64, Ix1>::alloc_ordered(s0, Ix1(1))?;
        self.arg_into(k, op, &mut out)?;
        Ok(out.to_vec_async(s0)?[0])
    }

    fn arg_into<O: DeviceSliceMut<u64> + ?Sized>(
        &self,
        k: &ArgExtreme<T>,
        op: &str,
        out: &mut O,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: sharded {op}"));
        if self.is_empty() {
            return Err(k.empty_error());
        }
        self.check_first_scalar(
            "ShardedArray::argmin/argmax_into (a one-element output)",
            out,
        )?;
        let mesh = self.mesh();
        let (n, size) = (mesh.len(), std::mem::size_of::<T>());
        let per_row = split::row_len(self.shape()) as u64;
        let used = self.nonempty_shards();
        if used == [0] {
            // Every element is on the first device, whose indices are the whole array's.
            return k.run_into(mesh.stream(0), &self.shards()[0], out.device_ptr());
        }
        let mut slots = mesh.partials();
        // Candidates' values in the first half of the slots, their indices in the second.
        let (val_at, idx_at) = (
            |i: usize| slots.slot(i, size),
            |i: usize| slots.slot(n + i, 8),
        );
        for (i, &j) in used.iter().enumerate().rev() {
            let (stream, shard) = (mesh.stream(j), &self.shards()[j]);
            let offset = self.rows(j).start as u64 * per_row;
            slots.wait_free(mesh, j)?;
            let local = DeviceArray::<u64, Ix1>::alloc_ordered(stream, Ix1(1))?;
            k.run_into(stream, shard, local.device_ptr())?;
            let pieces = [(val_at(i), size), (idx_at(i), 8)];
            mesh.write_to_first(j, &pieces, |stream, at| {
                k.pick_raw(stream, shard, local.device_ptr(), offset, at[0], at[1])
            })?;
        }
        mesh.join(0, used.iter().copied().filter(|&j| j != 0))?;
        let candidates = (val_at(0), idx_at(0));
        k.combine_chunks_raw(mesh.stream(0), candidates, 1, used.len(), out.device_ptr())?;
        slots.release(mesh)
    }
}
