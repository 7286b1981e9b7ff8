//! Scans of sharded arrays: the scan of the whole array in C order, whose shards follow one
//! another. Every device but the last reduces its shard to a total, written into the first
//! device's memory (the partial-result slots of the reductions); then each device scans its
//! shard starting from the earlier shards' totals (read over peer access, or copied over), so
//! the devices scan at once and every element is read twice and written once.

use ndarray::{Dimension, Ix1};

use super::array::ShardedArray;
use super::mesh::PartialSlots;
use crate::codegen::Num;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::ops::{Scan, ScanKind};

impl<T: Num, D: Dimension> ShardedArray<T, D> {
    /// The scan of the whole array in C order (the elements of shard `k` follow those of shard
    /// `k - 1`), into a new array of this shape and split: each element combines every element
    /// before it (and itself, for [`ScanKind::Inclusive`]) in the whole array, as
    /// [`Scan::scan`] does on one device. Queued on the mesh streams; the host does not wait.
    pub fn scan(&self, s: &Scan<T>, kind: ScanKind) -> Result<ShardedArray<T, D>> {
        let mut shards = Vec::with_capacity(self.shards().len());
        for (k, shard) in self.shards().iter().enumerate() {
            shards.push(DeviceArray::alloc_ordered(
                self.mesh().stream(k),
                shard.dim().clone(),
            )?);
        }
        let mut out = ShardedArray::from_parts(
            self.mesh(),
            self.dim().clone(),
            self.row_ranges().to_vec(),
            shards,
        );
        self.scan_into(s, kind, &mut out)?;
        Ok(out)
    }

    /// The scan along `axis` (NumPy's `cumsum(axis=...)` for a sum), in a new array of this
    /// shape and split. Along an axis other than 0 every device scans its own rows (as
    /// [`Scan::scan_axis`] on one device); along axis 0, the split axis, it is an error (for a
    /// 1-D array use [`scan`](Self::scan)).
    pub fn scan_axis(
        &self,
        s: &Scan<T>,
        axis: usize,
        kind: ScanKind,
    ) -> Result<ShardedArray<T, D>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: sharded {} axis {axis}", s.name()));
        let shape = self.shape();
        if axis >= shape.len() {
            return Err(Error::usage(format!(
                "sharded scan `{}`: axis {axis} is out of range for an array of shape {shape:?}",
                s.name()
            )));
        }
        if axis == 0 {
            return Err(Error::usage(format!(
                "sharded scan `{}` along axis 0, the axis the array is split on, is not supported; \
                 scan a 1-D array with scan(), or gather the array to one device \
                 (gather_to) and scan it there",
                s.name()
            )));
        }
        let mesh = self.mesh();
        let mut shards = Vec::with_capacity(self.shards().len());
        for k in (0..mesh.len()).rev() {
            let shard = &self.shards()[k];
            shards.push(if shard.is_empty() {
                DeviceArray::alloc_ordered(mesh.stream(k), shard.dim().clone())?
            } else {
                s.scan_axis(mesh.stream(k), shard, axis, kind)?
            });
        }
        shards.reverse();
        Ok(ShardedArray::from_parts(
            mesh,
            self.dim().clone(),
            self.row_ranges().to_vec(),
            shards,
        ))
    }

    /// [`scan`](Self::scan) into `out`, an array on the same mesh of this shape and split.
    pub fn scan_into<D2: Dimension>(
        &self,
        s: &Scan<T>,
        kind: ScanKind,
        out: &mut ShardedArray<T, D2>,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: sharded {}", s.name()));
        let mesh = self.mesh();
        if !out.mesh().same_as(mesh) {
            return Err(Error::usage(format!(
                "sharded scan `{}`: the output is on another mesh ({:?}) than the input ({mesh:?})",
                s.name(),
                out.mesh()
            )));
        }
        if out.shape() != self.shape() || out.row_ranges() != self.row_ranges() {
            return Err(Error::Shape {
                op: "sharded scan_into (an output of the input's shape and split)",
                expected: self.shape().to_vec(),
                actual: out.shape().to_vec(),
            });
        }
        let size = std::mem::size_of::<T>();
        if size > PartialSlots::SLOT_BYTES {
            return Err(Error::usage(format!(
                "sharded scan `{}`: elements of {size} bytes are not supported (at most {})",
                s.name(),
                PartialSlots::SLOT_BYTES
            )));
        }
        let used = self.nonempty_shards();
        let Some((&last, earlier)) = used.split_last() else {
            return Ok(());
        };
        if earlier.is_empty() {
            // One shard holds every element: a one-device scan.
            let k = last;
            let dst = out.shards_mut()[k].device_ptr();
            return s.run_flat_after(mesh.stream(k), &self.shards()[k], dst, kind, None);
        }
        let totals = s.totals()?;
        let mut slots = mesh.partials();
        // The totals of every shard but the last, the later devices first.
        for (i, &k) in earlier.iter().enumerate().rev() {
            slots.wait_free(mesh, k)?;
            mesh.write_to_first(k, &[(slots.slot(i, size), size)], |stream, at| {
                totals.partial_into_raw(stream, &self.shards()[k], at[0])
            })?;
        }
        // Each shard's scan after the totals before it (the first shard's after none).
        for (i, &k) in used.iter().enumerate().rev() {
            let (stream, dst) = (mesh.stream(k), out.shards_mut()[k].device_ptr());
            if i == 0 {
                s.run_flat_after(stream, &self.shards()[k], dst, kind, None)?;
                continue;
            }
            mesh.join(k, used[..i].iter().copied().filter(|&j| j != k))?;
            let at = slots.slot(0, size);
            if k == 0 || mesh.has_peer_access_to_first(k) {
                s.run_flat_after(stream, &self.shards()[k], dst, kind, Some((at, i)))?;
            } else {
                // No peer access: the totals copied next to the shard first.
                let tmp =
                    DeviceArray::<u64, Ix1>::alloc_ordered(stream, Ix1((i * size).div_ceil(8)))?;
                crate::memory::transfer::peer(
                    mesh.context(k),
                    tmp.device_ptr(),
                    mesh.context(0),
                    at,
                    i * size,
                    Some(stream),
                )?;
                s.run_flat_after(
                    stream,
                    &self.shards()[k],
                    dst,
                    kind,
                    Some((tmp.device_ptr(), i)),
                )?;
            }
        }
        // The slots are free again once every device has read them.
        mesh.join(0, used[1..].iter().copied().filter(|&j| j != 0))?;
        slots.release(mesh)
    }
}

macro_rules! sharded_cumsum {
    ($($t:ty),*) => {$(
        impl<D: Dimension> ShardedArray<$t, D> {
            /// The inclusive cumulative sum of the whole array in C order (`np.cumsum` of a
            /// 1-D array), in a new array of this shape and split. Integers wrap; floats
            /// accumulate in their own type, as [`ScanOps::cumsum`](crate::ops::ScanOps::cumsum).
            pub fn cumsum(&self) -> Result<ShardedArray<$t, D>> {
                self.scan(<$t as crate::ops::ScanScalar>::scans().sum()?, ScanKind::Inclusive)
            }
            /// The exclusive cumulative sum (element `i` sums the elements before it; the
            /// first is zero: `-0.0` for floats), in a new array of this shape and split.
            pub fn cumsum_exclusive(&self) -> Result<ShardedArray<$t, D>> {
                self.scan(<$t as crate::ops::ScanScalar>::scans().sum()?, ScanKind::Exclusive)
            }
            /// The inclusive cumulative sum along `axis` (not 0, the split axis), in a new
            /// array of this shape and split: each device sums its own rows.
            pub fn cumsum_axis(&self, axis: usize) -> Result<ShardedArray<$t, D>> {
                let s = <$t as crate::ops::ScanScalar>::scans().sum()?;
                self.scan_axis(s, axis, ScanKind::Inclusive)
            }
        }
    )*};
}
sharded_cumsum!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
