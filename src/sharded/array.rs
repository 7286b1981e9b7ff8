//! `ShardedArray`: an array split along axis 0 over the devices of a [`Mesh`], its creation
//! and its copies to and from the host.

use std::fmt;
use std::ops::Range;

use ndarray::{ArrayView, Dimension, IntoDimension, Ix1};

use super::mesh::Mesh;
use super::split;
use crate::error::{Error, Result};
use crate::memory::{
    AnyBitPattern, DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut, HostSource,
};

/// Copies of this many bytes or more between the host and the shards run one host thread per
/// device (the copies of pageable memory return only when done, so one thread would do them
/// one device after another).
const PARALLEL_COPY_BYTES: usize = 16 << 20;

/// An n-D array split along axis 0 over the devices of a [`Mesh`]: shard `k`, a
/// [`DeviceArray`] on the mesh's device `k`, holds rows [`rows(k)`](ShardedArray::rows) (for
/// a 1-D array, elements). Made from host data (split evenly: the first `rows % devices` shards
/// have a row more), from existing device arrays, or by elementwise operations; gathered back
/// to the host or to one device.
///
/// Operations queue each shard's work on its device's mesh stream and return at once; those
/// that return host values wait. The shards are allocated in their mesh stream's order
/// (`cuMemAllocAsync`): work on other streams that uses a shard must be ordered with that
/// stream (the synchronous calls are, see [`Mesh`]). Elementwise operations
/// ([`Elementwise::apply_sharded`](crate::ops::Elementwise::apply_sharded)) run shard by shard;
/// reductions ([`sum`](ShardedArray::sum) and friends) reduce every shard on its device, then
/// combine the partial results on the first device.
///
/// ```no_run
/// use cudajit::ops::{Elem, Elementwise};
/// use cudajit::sharded::{Mesh, ShardedArray};
/// # fn main() -> cudajit::Result<()> {
/// let mesh = Mesh::all()?;
/// let host: Vec<f32> = (0..1_000_000).map(|i| i as f32).collect();
/// let x = ShardedArray::from_host(&mesh, &host)?;
/// let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("add", |(a, b)| a + b)?;
/// let mut y = ShardedArray::<f32>::alloc(&mesh, host.len())?;
/// add.apply_sharded((&x, &x), &mut y)?;
/// println!("sum {}", y.sum()?);
/// # Ok(()) }
/// ```
pub struct ShardedArray<T: DeviceCopy, D: Dimension = Ix1> {
    mesh: Mesh,
    dim: D,
    rows: Vec<Range<usize>>,
    shards: Vec<DeviceArray<T, D>>,
}

impl<T: DeviceCopy, D: Dimension> ShardedArray<T, D> {
    /// A new array of shape `shape`, split evenly, contents uninitialised (each shard from its
    /// device's memory pool, in its mesh stream's order).
    pub fn alloc<Sh: IntoDimension<Dim = D>>(mesh: &Mesh, shape: Sh) -> Result<Self>
    where
        T: AnyBitPattern,
    {
        Self::alloc_uninit(mesh, shape.into_dimension(), "ShardedArray::alloc")
    }

    /// A new array of shape `shape`, split evenly, every byte zero.
    pub fn zeros<Sh: IntoDimension<Dim = D>>(mesh: &Mesh, shape: Sh) -> Result<Self> {
        let mut a = Self::alloc_uninit(mesh, shape.into_dimension(), "ShardedArray::zeros")?;
        for (k, s) in a.shards.iter_mut().enumerate() {
            s.memset_async(0, mesh.stream(k))?;
        }
        Ok(a)
    }

    /// A new array holding host data (a slice, `Vec`, or any ndarray array or view), split
    /// evenly along axis 0. Large copies run one host thread per device; returns when every
    /// shard holds its data.
    pub fn from_host<H: HostSource<T, Dim = D> + ?Sized>(mesh: &Mesh, host: &H) -> Result<Self> {
        let mut a = Self::alloc_uninit(mesh, host.host_dim(), "ShardedArray::from_host")?;
        host.with_c_order(|data| a.write_all(data))?;
        Ok(a)
    }

    /// An array made of existing device arrays, shard `k` on the mesh's device `k`, stacked
    /// along axis 0 in order (any row counts; the other axes must agree).
    pub fn from_shards(mesh: &Mesh, shards: Vec<DeviceArray<T, D>>) -> Result<Self> {
        if shards.len() != mesh.len() {
            return Err(Error::usage(format!(
                "ShardedArray::from_shards: {} shard(s) for a mesh of {} device(s); give one per device",
                shards.len(),
                mesh.len()
            )));
        }
        let first = shards[0].shape().to_vec();
        split::shard_shape("ShardedArray::from_shards", &first, 0)?;
        for (k, s) in shards.iter().enumerate() {
            if s.shape()[1..] != first[1..] {
                return Err(Error::Shape {
                    op: "ShardedArray::from_shards (every shard's axes after the first)",
                    expected: first[1..].to_vec(),
                    actual: s.shape()[1..].to_vec(),
                });
            }
            mesh.context(k)
                .check_same(s.context(), &format!("shard {k}"))?;
        }
        let rows = split::ranges_of(shards.iter().map(|s| s.shape()[0]));
        let mut dim = shards[0].dim().clone();
        dim.slice_mut()[0] = rows.last().map_or(0, |r| r.end);
        Ok(ShardedArray {
            mesh: mesh.clone(),
            dim,
            rows,
            shards,
        })
    }

    /// An array from its parts (the caller made the shards on the mesh's devices with the
    /// rows `rows`, and `dim` their stacking).
    pub(crate) fn from_parts(
        mesh: &Mesh,
        dim: D,
        rows: Vec<Range<usize>>,
        shards: Vec<DeviceArray<T, D>>,
    ) -> Self {
        ShardedArray {
            mesh: mesh.clone(),
            dim,
            rows,
            shards,
        }
    }

    /// A new array of `dim`, split evenly, its contents uninitialised (for outputs that a
    /// kernel writes whole).
    pub(crate) fn alloc_uninit(mesh: &Mesh, dim: D, op: &str) -> Result<Self> {
        let rows = split::even_rows(dim.slice().first().copied().unwrap_or(0), mesh.len());
        let mut shards = Vec::with_capacity(rows.len());
        for (k, r) in rows.iter().enumerate() {
            let shape = split::shard_shape(op, dim.slice(), r.len())?;
            let mut d = dim.clone();
            d.slice_mut().copy_from_slice(&shape);
            shards.push(DeviceArray::alloc_ordered(mesh.stream(k), d)?);
        }
        Ok(ShardedArray {
            mesh: mesh.clone(),
            dim,
            rows,
            shards,
        })
    }

    /// The mesh the shards live on.
    pub fn mesh(&self) -> &Mesh {
        &self.mesh
    }

    /// The whole array's shape.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The whole array's shape as an ndarray dimension.
    pub fn dim(&self) -> &D {
        &self.dim
    }

    /// The number of elements of the whole array.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shards, in mesh order.
    pub fn shards(&self) -> &[DeviceArray<T, D>] {
        &self.shards
    }

    /// The shards, writable (their shapes cannot change).
    pub fn shards_mut(&mut self) -> &mut [DeviceArray<T, D>] {
        &mut self.shards
    }

    /// The rows (along axis 0) that shard `k` holds; empty past the last device.
    pub fn rows(&self, k: usize) -> Range<usize> {
        self.rows.get(k).cloned().unwrap_or(0..0)
    }

    /// The indices of the shards that hold elements, in mesh order.
    pub(crate) fn nonempty_shards(&self) -> Vec<usize> {
        (0..self.shards.len())
            .filter(|&k| !self.shards[k].is_empty())
            .collect()
    }

    /// Checks that `out` is a one-element array on the mesh's first device (where the
    /// reductions into a caller's array leave their result), naming `op`.
    pub(crate) fn check_first_scalar<R: DeviceCopy, O: DeviceSlice<R> + ?Sized>(
        &self,
        op: &'static str,
        out: &O,
    ) -> Result<()> {
        if out.len() != 1 {
            return Err(Error::Shape {
                op,
                expected: vec![1],
                actual: out.shape().to_vec(),
            });
        }
        self.mesh.context(0).check_same(
            out.context(),
            "the output array (it must be on the mesh's first device)",
        )
    }

    /// The row ranges of every shard.
    pub(crate) fn row_ranges(&self) -> &[Range<usize>] {
        &self.rows
    }

    /// The shards, handed over (shard `k` on the mesh's device `k`).
    pub fn into_shards(self) -> Vec<DeviceArray<T, D>> {
        self.shards
    }

    /// Sets every element to `value` (elements of 1, 2, 4 or 8 bytes), on the mesh streams.
    pub fn fill(&mut self, value: T) -> Result<()> {
        for (k, s) in self.shards.iter_mut().enumerate() {
            s.fill_async(value, self.mesh.stream(k))?;
        }
        Ok(())
    }

    /// Copies host data in C order, exactly [`len`](Self::len) elements, into the shards
    /// (after the work queued on them); returns when every shard holds its data.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::Shape {
                op: "ShardedArray::copy_from_host (the host data's length)",
                expected: vec![self.len()],
                actual: vec![data.len()],
            });
        }
        self.write_all(data)
    }

    fn write_all(&mut self, data: &[T]) -> Result<()> {
        let per_row = split::row_len(self.shape());
        let mesh = &self.mesh;
        let jobs: Vec<_> = self
            .shards
            .iter_mut()
            .zip(&self.rows)
            .enumerate()
            .map(|(k, (s, r))| (k, s, &data[r.start * per_row..r.end * per_row]))
            .collect();
        let one = |(k, s, part): (usize, &mut DeviceArray<T, D>, &[T])| -> Result<()> {
            if s.is_empty() {
                return Ok(());
            }
            let view = ArrayView::from_shape(s.dim().clone(), part)
                .map_err(|e| Error::usage(format!("ShardedArray: shard {k}'s host rows: {e}")))?;
            s.copy_from_host_async(&view, mesh.stream(k))?;
            mesh.stream(k).synchronize()
        };
        run_per_device(jobs, std::mem::size_of_val(data), one)
    }

    /// Copies the whole array into `dst` (C order, exactly [`len`](Self::len) elements), after
    /// the work queued on the shards; returns when done.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len() {
            return Err(Error::Shape {
                op: "ShardedArray::copy_to_host (the destination's length)",
                expected: vec![self.len()],
                actual: vec![dst.len()],
            });
        }
        let jobs = self.with_host_parts(dst);
        let mesh = &self.mesh;
        run_per_device(
            jobs,
            self.len() * std::mem::size_of::<T>(),
            |(k, s, part)| {
                if part.is_empty() {
                    return mesh.stream(k).synchronize();
                }
                s.copy_to_host_async(part, mesh.stream(k))
            },
        )
    }

    /// Copies the whole array to a new `Vec` in C order (after the work queued on the shards).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mesh = &self.mesh;
        crate::memory::vec_filled_by(self.len(), |all| {
            let jobs = self.with_host_parts(all);
            run_per_device(
                jobs,
                self.len() * std::mem::size_of::<T>(),
                |(k, s, part)| {
                    if part.is_empty() {
                        return mesh.stream(k).synchronize();
                    }
                    crate::memory::read_into_uninit(s, part, mesh.stream(k))
                },
            )
        })
    }

    /// Host memory for the whole array (C order) cut into each shard's part: (device index,
    /// shard, its part), in mesh order.
    #[allow(clippy::type_complexity)]
    fn with_host_parts<'a, E>(
        &'a self,
        mut rest: &'a mut [E],
    ) -> Vec<(usize, &'a DeviceArray<T, D>, &'a mut [E])> {
        let per_row = split::row_len(self.shape());
        let mut jobs = Vec::with_capacity(self.shards.len());
        for (k, (s, r)) in self.shards.iter().zip(&self.rows).enumerate() {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * per_row);
            rest = tail;
            jobs.push((k, s, part));
        }
        jobs
    }

    /// Copies the whole array to a new ndarray `Array` of its shape.
    pub fn to_array(&self) -> Result<ndarray::Array<T, D>> {
        let v = self.to_vec()?;
        ndarray::Array::from_shape_vec(self.dim.clone(), v)
            .map_err(|e| Error::usage(format!("ShardedArray::to_array: {e}")))
    }

    /// The whole array gathered into a new array on the mesh's device `k`, ordered on
    /// `mesh.stream(k)` (each shard is copied by its own device's stream, `cuMemcpyPeerAsync`
    /// for the others; stream `k` then waits for those copies; the host does not wait).
    pub fn gather_to(&self, k: usize) -> Result<DeviceArray<T, D>>
    where
        T: AnyBitPattern,
    {
        if k >= self.mesh.len() {
            return Err(Error::usage(format!(
                "ShardedArray::gather_to: device index {k} is out of range for a mesh of {} device(s)",
                self.mesh.len()
            )));
        }
        // Plain (not stream-ordered) memory: every device's stream may write it at once.
        let mut out = self.mesh.context(k).alloc::<T, D>(self.dim.clone())?;
        let mut copied = Vec::new();
        for (j, (s, r)) in self.shards.iter().zip(&self.rows).enumerate() {
            if r.is_empty() {
                continue;
            }
            out.slice_mut(r.clone())?
                .copy_from_device_async(s, self.mesh.stream(j))?;
            if j != k {
                copied.push(j);
            }
        }
        self.mesh.join(k, copied)?;
        Ok(out)
    }

    /// Waits for the work queued on every device of the mesh.
    pub fn synchronize(&self) -> Result<()> {
        self.mesh.synchronize()
    }
}

/// Runs `one` for every job, on one scoped host thread per job when `bytes` is large (and
/// there is more than one job), else in turn on this thread; the first error wins.
fn run_per_device<J: Send>(
    jobs: Vec<J>,
    bytes: usize,
    one: impl Fn(J) -> Result<()> + Sync,
) -> Result<()> {
    if jobs.len() < 2 || bytes < PARALLEL_COPY_BYTES {
        return jobs.into_iter().try_for_each(one);
    }
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .into_iter()
            .map(|j| {
                let one = &one;
                scope.spawn(move || one(j))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::usage("a host copy thread panicked".to_string()))
                })
            })
            .collect()
    });
    results.into_iter().collect()
}

impl<T: DeviceCopy, D: Dimension> fmt::Debug for ShardedArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: Vec<_> = self.rows.iter().map(|r| r.len()).collect();
        write!(
            f,
            "ShardedArray(shape {:?}, rows per device {rows:?}, {:?})",
            self.shape(),
            self.mesh
        )
    }
}
