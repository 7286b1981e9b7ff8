//! Reductions of sharded arrays along one axis. Along an axis other than 0 every device reduces
//! its own rows: the result is sharded like the input. Along axis 0 every device reduces its
//! shard's rows into partial results (before the reduction's `post`), which meet in the first
//! device's memory (peer access, or `cuMemcpyPeerAsync`); the first device combines them in
//! shard order: the result lives wholly on the first device (the other shards are empty).

use ndarray::{Dimension, Ix1, IxDyn};

use super::array::ShardedArray;
use super::split;
use crate::codegen::Scalar as ScalarType;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::ops::{ReduceScalar, Reduction};

impl<T: ScalarType, D: Dimension> ShardedArray<T, D> {
    /// Reduces along `axis` with `r`, giving the array without that axis (or with it as 1 when
    /// `keepdims`), as [`Reduction::reduce_axis`] does on one device. Along an axis other than
    /// 0 the result is split like this array (each device reduces its rows); along axis 0 it
    /// lives on the mesh's first device (shard 0; the other shards are empty). Queued on the
    /// mesh streams; the host does not wait.
    pub fn reduce_axis<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
        axis: usize,
        keepdims: bool,
    ) -> Result<ShardedArray<R, IxDyn>> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: sharded {} axis {axis}", r.name()));
        let shape = self.shape();
        if axis >= shape.len() {
            return Err(Error::usage(format!(
                "sharded `{}`: axis {axis} is out of range for an array of shape {shape:?}",
                r.name()
            )));
        }
        let mut out_shape = shape.to_vec();
        if keepdims {
            out_shape[axis] = 1;
        } else {
            out_shape.remove(axis);
        }
        if axis > 0 {
            self.reduce_inner_axis(r, axis, keepdims, out_shape)
        } else {
            self.reduce_axis0(r, out_shape)
        }
    }

    /// Every device reduces its own rows; the result keeps this array's split.
    fn reduce_inner_axis<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
        axis: usize,
        keepdims: bool,
        out_shape: Vec<usize>,
    ) -> Result<ShardedArray<R, IxDyn>> {
        let mesh = self.mesh();
        let mut shards = Vec::with_capacity(mesh.len());
        for k in (0..mesh.len()).rev() {
            let sh = split::shard_shape("reduce_axis", &out_shape, self.rows(k).len())?;
            let mut o = DeviceArray::<R, IxDyn>::alloc_ordered(mesh.stream(k), IxDyn(&sh))?;
            r.reduce_axis_into(mesh.stream(k), &self.shards()[k], axis, keepdims, &mut o)?;
            shards.push(o);
        }
        shards.reverse();
        let rows = self.row_ranges().to_vec();
        Ok(ShardedArray::from_parts(
            mesh,
            IxDyn(&out_shape),
            rows,
            shards,
        ))
    }

    /// Every device reduces its rows into partial results in the first device's memory; the
    /// first device combines them.
    fn reduce_axis0<A: ScalarType, R: ScalarType>(
        &self,
        r: &Reduction<T, A, R>,
        out_shape: Vec<usize>,
    ) -> Result<ShardedArray<R, IxDyn>> {
        if out_shape.is_empty() {
            return Err(Error::usage(format!(
                "sharded `{}` along axis 0 of a 1-D array is a whole-array reduction: use \
                 reduce() / reduce_to_device() (or keepdims = true for a one-element array)",
                r.name()
            )));
        }
        let (mesh, count) = (self.mesh(), self.shape()[0]);
        r.check_empty_of(count)?;
        let m: usize = out_shape.iter().product();
        let a_size = A::TY.size();
        let s0 = mesh.stream(0);
        let out = DeviceArray::<R, IxDyn>::alloc_ordered(s0, IxDyn(&out_shape))?;
        let used = self.nonempty_shards();
        let parts = DeviceArray::<A, Ix1>::alloc_ordered(s0, Ix1(used.len() * m))?;
        let others: Vec<usize> = used.iter().copied().filter(|&k| k != 0).collect();
        // The other devices write `parts` after its allocation in the first stream's order.
        mesh.fork(0, others.iter().copied())?;
        for (i, &k) in used.iter().enumerate().rev() {
            let dst = parts.device_ptr() + (i * m * a_size) as u64;
            mesh.write_to_first(k, &[(dst, m * a_size)], |stream, at| {
                r.axis0_partial_raw(stream, &self.shards()[k], at[0])
            })?;
        }
        mesh.join(0, others)?;
        r.combine_columns_raw(
            s0,
            parts.device_ptr(),
            m,
            used.len(),
            out.device_ptr(),
            count,
        )?;
        drop(parts); // freed in the first stream's order, after the combining kernel
        let mut shards = vec![out];
        let mut empty_shape = out_shape.clone();
        empty_shape[0] = 0;
        for k in 1..mesh.len() {
            shards.push(DeviceArray::alloc_ordered(
                mesh.stream(k),
                IxDyn(&empty_shape),
            )?);
        }
        let rows =
            split::ranges_of(std::iter::once(out_shape[0]).chain((1..mesh.len()).map(|_| 0)));
        Ok(ShardedArray::from_parts(
            mesh,
            IxDyn(&out_shape),
            rows,
            shards,
        ))
    }
}

/// The built-in reductions along one axis (as [`ReduceOps`](crate::ops::ReduceOps)'s, placed
/// as [`ShardedArray::reduce_axis`] says).
impl<T: ReduceScalar, D: Dimension> ShardedArray<T, D> {
    /// Sums along `axis`.
    pub fn sum_axis(&self, axis: usize, keepdims: bool) -> Result<ShardedArray<T, IxDyn>> {
        self.reduce_axis(T::reductions().sum()?, axis, keepdims)
    }
    /// Products along `axis`.
    pub fn prod_axis(&self, axis: usize, keepdims: bool) -> Result<ShardedArray<T, IxDyn>> {
        self.reduce_axis(T::reductions().prod()?, axis, keepdims)
    }
    /// Minima along `axis` (NaN if any is NaN); an error if the axis is empty.
    pub fn min_axis(&self, axis: usize, keepdims: bool) -> Result<ShardedArray<T, IxDyn>> {
        self.reduce_axis(T::reductions().min()?, axis, keepdims)
    }
    /// Maxima along `axis` (NaN if any is NaN); an error if the axis is empty.
    pub fn max_axis(&self, axis: usize, keepdims: bool) -> Result<ShardedArray<T, IxDyn>> {
        self.reduce_axis(T::reductions().max()?, axis, keepdims)
    }
    /// Means along `axis`, accumulated in `f64`; an error if the axis is empty.
    pub fn mean_axis(&self, axis: usize, keepdims: bool) -> Result<ShardedArray<f64, IxDyn>> {
        self.reduce_axis(T::reductions().mean()?, axis, keepdims)
    }
}
