//! `Replicated`: one copy of an array on every device of a mesh, for inputs that every shard
//! of an elementwise kernel reads whole (a bias row, a lookup table) with NumPy broadcasting.

use std::fmt;

use ndarray::{Dimension, Ix1};

use super::mesh::Mesh;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut, HostSource};

/// The same array on every device of a [`Mesh`] (copy `k` on the mesh's device `k`), passed to
/// [`Elementwise::apply_sharded`](crate::ops::Elementwise::apply_sharded) where an input
/// broadcasts against every shard: a `Replicated` row of `m` elements against shards of shape
/// `(rows_k, m)`, for example.
///
/// ```no_run
/// use cudajit::ops::{Elem, Elementwise};
/// use cudajit::sharded::{Mesh, Replicated, ShardedArray};
/// # fn main() -> cudajit::Result<()> {
/// let mesh = Mesh::all()?;
/// let x = ShardedArray::from_host(&mesh, &ndarray::Array2::<f32>::zeros((1000, 3)))?;
/// let bias = Replicated::from_host(&mesh, &[1.0f32, 2.0, 3.0])?;
/// let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("add_bias", |(v, b)| v + b)?;
/// let y = add.call_sharded((&x, &bias))?; // every row + [1, 2, 3]
/// # Ok(()) }
/// ```
pub struct Replicated<T: DeviceCopy, D: Dimension = Ix1> {
    mesh: Mesh,
    copies: Vec<DeviceArray<T, D>>,
}

impl<T: DeviceCopy, D: Dimension> Replicated<T, D> {
    /// Copies host data to every device of the mesh (each copy on its device's mesh stream);
    /// returns when every device holds it.
    pub fn from_host<H: HostSource<T, Dim = D> + ?Sized>(mesh: &Mesh, host: &H) -> Result<Self> {
        let mut copies = Vec::with_capacity(mesh.len());
        for k in 0..mesh.len() {
            copies.push(mesh.stream(k).to_device(host)?);
        }
        for k in 0..mesh.len() {
            mesh.stream(k).synchronize()?;
        }
        Ok(Replicated {
            mesh: mesh.clone(),
            copies,
        })
    }

    /// Copies a device array (on any device) to every device of the mesh, each copy made by
    /// its device's mesh stream (a peer copy from another device); the host does not wait.
    pub fn from_device<S: DeviceSlice<T, Dim = D> + ?Sized>(mesh: &Mesh, src: &S) -> Result<Self>
    where
        T: crate::memory::AnyBitPattern,
    {
        let mut copies = Vec::with_capacity(mesh.len());
        for k in 0..mesh.len() {
            let mut c = mesh.context(k).alloc::<T, D>(src.dim().clone())?;
            c.copy_from_device_async(src, mesh.stream(k))?;
            copies.push(c);
        }
        Ok(Replicated {
            mesh: mesh.clone(),
            copies,
        })
    }

    /// The mesh the copies live on.
    pub fn mesh(&self) -> &Mesh {
        &self.mesh
    }

    /// The array's shape (every copy's).
    pub fn shape(&self) -> &[usize] {
        self.copies[0].shape()
    }

    /// The copies, in mesh order.
    pub fn copies(&self) -> &[DeviceArray<T, D>] {
        &self.copies
    }
}

impl<T: DeviceCopy, D: Dimension> fmt::Debug for Replicated<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Replicated(shape {:?}, {:?})", self.shape(), self.mesh)
    }
}
