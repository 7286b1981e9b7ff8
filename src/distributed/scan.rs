//! Scans of arrays sharded over processes: the scan of the whole array in C order. Every rank
//! reduces its shard to a total with the scan's operator, the totals are all-gathered through
//! NCCL (one element per rank), and every rank scans its shard starting from the totals of
//! the ranks before it (an empty shard's total is the identity).

use ndarray::{Dimension, Ix1};

use super::array::RankShardedArray;
use crate::codegen::Num;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::ops::{Scan, ScanKind};

impl<T: Num, D: Dimension> RankShardedArray<T, D> {
    /// The scan of the whole array in C order (rank `r`'s elements follow rank `r - 1`'s), into
    /// a new array of this layout: each element combines every element before it (and itself,
    /// for [`ScanKind::Inclusive`]) in the whole array, as [`Scan::scan`] on one device.
    /// Collective; queued on the group's stream (no host wait).
    pub fn scan(&self, s: &Scan<T>, kind: ScanKind) -> Result<RankShardedArray<T, D>> {
        let mut out = self.alloc_same_layout::<T>()?;
        self.scan_into(s, kind, &mut out)?;
        Ok(out)
    }

    /// [`scan`](Self::scan) into `out`, an array of the same group, shape and split.
    pub fn scan_into<D2: Dimension>(
        &self,
        s: &Scan<T>,
        kind: ScanKind,
        out: &mut RankShardedArray<T, D2>,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: distributed {}", s.name()));
        let g = self.group();
        if !out.group().same_as(g) {
            return Err(Error::usage(format!(
                "distributed scan `{}`: the output is of another process group ({:?}) than the \
                 input ({g:?})",
                s.name(),
                out.group()
            )));
        }
        if out.shape() != self.shape() || out.row_ranges() != self.row_ranges() {
            return Err(Error::Shape {
                op: "distributed scan_into (an output of the input's shape and split)",
                expected: self.shape().to_vec(),
                actual: out.shape().to_vec(),
            });
        }
        let (st, world, rank) = (g.stream(), g.size(), g.rank());
        let dst = out.local().device_ptr();
        if world == 1 {
            return s.run_flat_after(st, self.local(), dst, kind, None);
        }
        let size = std::mem::size_of::<T>();
        let mut totals = DeviceArray::<u8, Ix1>::alloc_ordered(st, Ix1(world * size))?;
        let base = totals.device_ptr();
        s.totals()?
            .partial_into_raw(st, self.local(), base + (rank * size) as u64)?;
        g.with_comm(|c| c.all_gather_in_place(&mut totals, st))?;
        let carry = (rank > 0).then_some((base, rank));
        s.run_flat_after(st, self.local(), dst, kind, carry)
    }
}

macro_rules! distributed_cumsum {
    ($($t:ty),*) => {$(
        impl<D: Dimension> RankShardedArray<$t, D> {
            /// The inclusive cumulative sum of the whole array in C order (`np.cumsum` of a
            /// 1-D array), in a new array of this layout. Integers wrap; floats accumulate in
            /// their own type, as [`ScanOps::cumsum`](crate::ops::ScanOps::cumsum).
            pub fn cumsum(&self) -> Result<RankShardedArray<$t, D>> {
                self.scan(<$t as crate::ops::ScanScalar>::scans().sum()?, ScanKind::Inclusive)
            }
        }
    )*};
}
distributed_cumsum!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);
