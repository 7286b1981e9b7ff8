//! `RankShardedArray`: an array split along axis 0 over the processes of a [`ProcessGroup`],
//! one shard per rank; its creation (every rank agreeing on the layout) and its gathers.

use std::fmt;
use std::ops::Range;

use ndarray::{ArrayView, Dimension, IntoDimension, Ix1};

use super::group::ProcessGroup;
use super::layout::{self, Header, Layout, HEADER_WORDS};
use crate::error::{Error, Result};
use crate::memory::{
    AnyBitPattern, DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut,
    HostSource,
};

/// An n-D array split along axis 0 over the processes of a [`ProcessGroup`], one shard per
/// rank: rank `r` holds rows [`rows(r)`](Self::rows) (for a 1-D array, elements) in a
/// [`DeviceArray`] on its GPU. Every rank makes the array with the same call (the same whole
/// shape, or its own shard), and the ranks agree on the layout when it is made (one small
/// all-gather): ranks that disagree on the whole length, the shape after axis 0 or the element
/// type get the same error on every rank.
///
/// As [`ShardedArray`](crate::sharded::ShardedArray) is for the GPUs of one process:
/// reductions ([`sum`](Self::sum) and friends: each rank reduces its shard, the partial
/// results are all-gathered through NCCL and every rank combines them in rank order, so every
/// rank gets the same value), elementwise kernels over arrays of the same layout
/// ([`Elementwise::apply_ranks`](crate::ops::Elementwise::apply_ranks)), and gathers of the
/// whole array to every rank ([`gather`](Self::gather), [`to_vec`](Self::to_vec); uneven
/// shards too). Work is queued on the group's stream; the calls that return host values wait
/// with the group's time limit (see [`ProcessGroup`] for a rank that dies).
///
/// Every rank must make the same calls on its arrays in the same order (they are collective
/// where NCCL is involved: creation, reductions, gathers; elementwise kernels are local).
///
/// ```no_run
/// use cudajit::distributed::{ProcessGroup, RankShardedArray};
/// # fn main() -> cudajit::Result<()> {
/// let group = ProcessGroup::from_env()?; // MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
/// let host: Vec<f32> = (0..1_000_000).map(|i| i as f32).collect();
/// let x = RankShardedArray::from_host(&group, &host)?; // each rank keeps its part
/// println!("rank {}: sum {}", group.rank(), x.sum()?); // the same on every rank
/// # Ok(()) }
/// ```
pub struct RankShardedArray<T: DeviceCopy, D: Dimension = Ix1> {
    group: ProcessGroup,
    dim: D,
    layout: Layout,
    local: DeviceArray<T, D>,
}

impl<T: DeviceCopy, D: Dimension> RankShardedArray<T, D> {
    /// A new array of shape `shape` (the same on every rank), split evenly (the first
    /// `rows % ranks` ranks hold a row more), its contents uninitialised.
    pub fn alloc<Sh: IntoDimension<Dim = D>>(group: &ProcessGroup, shape: Sh) -> Result<Self>
    where
        T: AnyBitPattern,
    {
        Self::alloc_even(group, shape.into_dimension(), "RankShardedArray::alloc")
    }

    /// A new array of shape `shape`, split evenly, every byte zero.
    pub fn zeros<Sh: IntoDimension<Dim = D>>(group: &ProcessGroup, shape: Sh) -> Result<Self> {
        let mut a = Self::alloc_even(group, shape.into_dimension(), "RankShardedArray::zeros")?;
        a.local.memset_async(0, group.stream())?;
        Ok(a)
    }

    /// A new array of shape `shape`, split evenly, every element `value` (elements of 1, 2, 4
    /// or 8 bytes).
    pub fn filled<Sh: IntoDimension<Dim = D>>(
        group: &ProcessGroup,
        shape: Sh,
        value: T,
    ) -> Result<Self> {
        let mut a = Self::alloc_even(group, shape.into_dimension(), "RankShardedArray::filled")?;
        a.local.fill_async(value, group.stream())?;
        Ok(a)
    }

    /// An array from the same host data on every rank (a slice, `Vec`, or any ndarray array
    /// or view): each rank copies only its own rows to its GPU (split evenly). Returns when
    /// the shard holds its data.
    pub fn from_host<H: HostSource<T, Dim = D> + ?Sized>(
        group: &ProcessGroup,
        host: &H,
    ) -> Result<Self> {
        let mut a = Self::alloc_even(group, host.host_dim(), "RankShardedArray::from_host")?;
        let part = a.layout.elements(group.rank());
        host.with_c_order(|data| -> Result<()> {
            if a.local.is_empty() {
                return Ok(());
            }
            let view = ArrayView::from_shape(a.local.dim().clone(), &data[part])
                .map_err(|e| Error::usage(format!("RankShardedArray::from_host: {e}")))?;
            a.local.copy_from_host_async(&view, group.stream())?;
            group.stream().synchronize()
        })?;
        Ok(a)
    }

    /// An array whose shard on this rank is `local` (on the group's device; any number of
    /// rows, the other axes as on every rank), stacked in rank order along axis 0. The ranks
    /// learn each other's lengths with one all-gather. Work queued on other streams that
    /// writes `local` must be ordered before this call (or synchronized).
    pub fn from_local(group: &ProcessGroup, local: DeviceArray<T, D>) -> Result<Self> {
        group
            .context()
            .check_same(local.context(), "the local shard")?;
        let shape = local.shape().to_vec();
        let rows = shape.first().copied().unwrap_or(0);
        let header = Header::new::<T>(&shape, rows, false);
        let layout = exchange::<T>(group, &header, "RankShardedArray::from_local")?;
        let mut dim = local.dim().clone();
        dim.slice_mut()[0] = layout.shape[0];
        Ok(RankShardedArray {
            group: group.clone(),
            dim,
            layout,
            local,
        })
    }

    /// Allocates this rank's shard of `dim` split evenly, after the ranks agree on `dim`.
    fn alloc_even(group: &ProcessGroup, dim: D, op: &str) -> Result<Self> {
        let even = Layout::even(dim.slice(), group.size());
        let rows = even.rows.get(group.rank()).map_or(0, |r| r.len());
        let layout = exchange::<T>(group, &Header::new::<T>(dim.slice(), rows, true), op)?;
        let local = Self::alloc_local(group, &dim, &layout)?;
        Ok(RankShardedArray {
            group: group.clone(),
            dim,
            layout,
            local,
        })
    }

    /// A new uninitialised shard for this rank of `layout` (stream-ordered on the group's
    /// stream).
    fn alloc_local(group: &ProcessGroup, dim: &D, layout: &Layout) -> Result<DeviceArray<T, D>> {
        let mut d = dim.clone();
        d.slice_mut()
            .copy_from_slice(&layout.local_shape(group.rank()));
        DeviceArray::alloc_ordered(group.stream(), d)
    }

    /// A new array of the same layout and group as `self`, uninitialised (no collective: the
    /// layout is already agreed).
    pub fn alloc_like<U: DeviceCopy + AnyBitPattern>(&self) -> Result<RankShardedArray<U, D>> {
        self.alloc_same_layout()
    }

    /// [`alloc_like`](Self::alloc_like) for outputs that a kernel writes whole.
    pub(crate) fn alloc_same_layout<U: DeviceCopy>(&self) -> Result<RankShardedArray<U, D>> {
        Ok(RankShardedArray {
            group: self.group.clone(),
            dim: self.dim.clone(),
            layout: self.layout.clone(),
            local: RankShardedArray::<U, D>::alloc_local(&self.group, &self.dim, &self.layout)?,
        })
    }

    /// The group the array is sharded over.
    pub fn group(&self) -> &ProcessGroup {
        &self.group
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

    /// Whether the whole array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows (along axis 0) that rank `r` holds; empty past the last rank.
    pub fn rows(&self, r: usize) -> Range<usize> {
        self.layout.rows.get(r).cloned().unwrap_or(0..0)
    }

    /// Every rank's rows, in rank order.
    pub fn row_ranges(&self) -> &[Range<usize>] {
        &self.layout.rows
    }

    /// The flat (C-order) index in the whole array of this rank's first element.
    pub fn local_offset(&self) -> usize {
        self.layout.elements(self.group.rank()).start
    }

    /// This rank's shard.
    pub fn local(&self) -> &DeviceArray<T, D> {
        &self.local
    }

    /// This rank's shard, writable (its shape cannot change).
    pub fn local_mut(&mut self) -> &mut DeviceArray<T, D> {
        &mut self.local
    }

    /// This rank's shard, handed over.
    pub fn into_local(self) -> DeviceArray<T, D> {
        self.local
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Sets every element to `value` on the group's stream (no collective).
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.local.fill_async(value, self.group.stream())
    }

    /// The whole array gathered into a new array on every rank's GPU, ordered on the group's
    /// stream (no host wait): one NCCL all-gather when every rank holds as many elements, else
    /// one broadcast per rank in one NCCL group. Collective: every rank calls it.
    pub fn gather(&self) -> Result<DeviceArray<T, D>> {
        let s = self.group.stream();
        let mut out = DeviceArray::<T, D>::alloc_ordered(s, self.dim.clone())?;
        self.gather_into_raw(&mut out)?;
        Ok(out)
    }

    /// [`gather`](Self::gather) into `out`, an array of the whole shape on this rank's GPU.
    pub fn gather_into<O: DeviceSliceMut<T, Dim = D> + ?Sized>(&self, out: &mut O) -> Result<()> {
        if out.shape() != self.shape() {
            return Err(Error::Shape {
                op: "RankShardedArray::gather_into (the output has the whole array's shape)",
                expected: self.shape().to_vec(),
                actual: out.shape().to_vec(),
            });
        }
        self.group
            .context()
            .check_same(out.context(), "the gather's output")?;
        self.gather_into_raw(out)
    }

    fn gather_into_raw<O: DeviceSliceMut<T> + ?Sized>(&self, out: &mut O) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| "cudajit: RankShardedArray gather".to_string());
        let (s, size) = (self.group.stream(), std::mem::size_of::<T>());
        let ctx = self.group.context();
        let bytes = |ptr: u64, elems: Range<usize>| {
            DeviceViewMut::<u8, Ix1>::from_parts(
                ctx,
                ptr + (elems.start * size) as u64,
                Ix1(elems.len() * size),
            )
        };
        let mine = DeviceView::<u8, Ix1>::from_parts(
            ctx,
            self.local.device_ptr(),
            Ix1(self.local.len() * size),
        );
        let base = out.device_ptr();
        let world = self.group.size();
        if self.is_empty() {
            return Ok(());
        }
        if self.layout.is_uniform() {
            let mut all = bytes(base, 0..self.len());
            return self.group.with_comm(|c| c.all_gather(&mine, &mut all, s));
        }
        // Uneven shards: this rank's part copied into place, then every rank's part
        // broadcast from its owner, in one NCCL group.
        let own = self.layout.elements(self.group.rank());
        if !own.is_empty() {
            bytes(base, own).copy_from_device_async(&mine, s)?;
        }
        self.group.with_comm(|c| {
            crate::nccl::group(|| {
                for r in 0..world {
                    let part = self.layout.elements(r);
                    if !part.is_empty() {
                        c.broadcast_in_place(&mut bytes(base, part), r, s)?;
                    }
                }
                Ok(())
            })
        })
    }

    /// The whole array copied to a new `Vec` (C order) on every rank. Collective; waits (with
    /// the group's time limit).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let whole = self.gather()?;
        self.group.wait("RankShardedArray::to_vec")?;
        whole.to_vec_async(self.group.stream())
    }

    /// The whole array copied to a new ndarray `Array` of its shape on every rank.
    pub fn to_array(&self) -> Result<ndarray::Array<T, D>> {
        let v = self.to_vec()?;
        ndarray::Array::from_shape_vec(self.dim.clone(), v)
            .map_err(|e| Error::usage(format!("RankShardedArray::to_array: {e}")))
    }

    /// This rank's shard copied to a new `Vec` (no collective).
    pub fn local_to_vec(&self) -> Result<Vec<T>> {
        self.local.to_vec_async(self.group.stream())
    }

    /// Waits for the work queued on the group's stream (with the group's time limit).
    pub fn synchronize(&self) -> Result<()> {
        self.group.wait("RankShardedArray::synchronize")
    }
}

impl<T: DeviceCopy> RankShardedArray<T, ndarray::IxDyn> {
    /// A new uninitialised array of an agreed `layout` over `group` (no collective).
    pub(crate) fn alloc_with_layout(group: &ProcessGroup, layout: &Layout) -> Result<Self> {
        let dim = ndarray::IxDyn(&layout.shape);
        let local = Self::alloc_local(group, &dim, layout)?;
        Ok(RankShardedArray {
            group: group.clone(),
            dim,
            layout: layout.clone(),
            local,
        })
    }
}

/// All-gathers every rank's header and checks them (see [`layout::agree`]); waits.
fn exchange<T>(group: &ProcessGroup, header: &Header, op: &str) -> Result<Layout> {
    let words = group.all_gather_host(&header.encode()[..], op)?;
    let headers: Vec<Option<Header>> = words.chunks(HEADER_WORDS).map(Header::decode).collect();
    layout::agree(op, std::any::type_name::<T>(), &headers)
}

impl<T: DeviceCopy, D: Dimension> fmt::Debug for RankShardedArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: Vec<_> = self.layout.rows.iter().map(|r| r.len()).collect();
        write!(
            f,
            "RankShardedArray(shape {:?}, rows per rank {rows:?}, {:?})",
            self.shape(),
            self.group
        )
    }
}
