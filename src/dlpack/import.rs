//! Importing DLPack tensors of other libraries as cudajit arrays.

use std::fmt;
use std::marker::PhantomData;

use cudajit_sys as sys;
use ndarray::{Dimension, IxDyn};

use super::dtype::{dtype_name, DlpackElement};
use super::ffi::{DLDeviceType, DLPACK_FLAG_BITMASK_READ_ONLY};
use super::tensor::DlpackTensor;
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result, ShapeDisplay};
use crate::memory::layout::is_standard;
use crate::memory::slice::Sealed;
use crate::memory::Layout;
use crate::memory::{
    AsStrided, AsStridedMut, DeviceSlice, DeviceSliceMut, StridedView, StridedViewMut,
};

/// Another library's tensor (torch, CuPy, ...) imported through DLPack as a contiguous C-order
/// cudajit array: usable wherever a device array is ([`DeviceSlice`] and [`DeviceSliceMut`]:
/// kernel launches, copies, views, `ops`). Zero-copy: it is the producer's memory.
///
/// Dropping it calls the producer's deleter (once). Make sure the work cudajit queued on it is
/// done first (synchronise its stream, or hand the producer an event to wait on), as the
/// producer may reuse the memory at once.
///
/// Made by [`Context::import_dlpack`]; for tensors in any memory order see
/// [`DlpackStridedArray`].
pub struct DlpackArray<T: DlpackElement, D: Dimension = IxDyn> {
    ctx: Context,
    ptr: sys::CUdeviceptr,
    dim: D,
    device_type: DLDeviceType,
    _tensor: DlpackTensor,
    _t: PhantomData<T>,
}

/// Another library's tensor imported through DLPack with its strides as they are (transposed,
/// sliced with steps, reversed): its views are [`StridedView`]s, which kernels take as
/// [`NdStrided`](crate::codegen::NdStrided) parameters and `ops` accept. Made by
/// [`Context::import_dlpack_strided`]; drop as for [`DlpackArray`].
pub struct DlpackStridedArray<T: DlpackElement, D: Dimension = IxDyn> {
    ctx: Context,
    lay: Layout<D>,
    _tensor: DlpackTensor,
    _t: PhantomData<T>,
}

// SAFETY: the arrays only hold device addresses and the producer's tensor (itself Send + Sync);
// `T` is Send + Sync (DeviceCopy's bounds).
unsafe impl<T: DlpackElement, D: Dimension> Send for DlpackArray<T, D> {}
// SAFETY: shared references only read the handle or enqueue reads of the memory.
unsafe impl<T: DlpackElement, D: Dimension> Sync for DlpackArray<T, D> {}
// SAFETY: as for DlpackArray.
unsafe impl<T: DlpackElement, D: Dimension> Send for DlpackStridedArray<T, D> {}
// SAFETY: as for DlpackArray.
unsafe impl<T: DlpackElement, D: Dimension> Sync for DlpackStridedArray<T, D> {}

impl Context {
    /// Imports a DLPack tensor as a contiguous cudajit array of `T` and shape type `D`
    /// (`IxDyn`, or `Ix1`, `Ix2`, ... to require that many dimensions), zero-copy.
    ///
    /// Checked against what cudajit can use, each failure a clear [`Error::Usage`]: the
    /// DLPack major version (1), the device (`kDLCUDA` of this context's device, or
    /// `kDLCUDAManaged` / `kDLCUDAHost` memory the device can reach; a CPU tensor or another
    /// device's is refused), the data type (`T`'s, see [`DlpackElement`]), the number of
    /// dimensions, C-contiguous strides (else see
    /// [`import_dlpack_strided`](Self::import_dlpack_strided)), the element alignment of
    /// `data + byte_offset`, memory the driver knows, and no read-only flag. On any error the
    /// producer's deleter is still called, once.
    ///
    /// The stream handshake happens when the tensor is asked for: pass
    /// [`protocol_stream`](super::protocol_stream) of the stream cudajit will use as
    /// `__dlpack__(stream=...)`, and the producer orders its work before it.
    pub fn import_dlpack<T: DlpackElement, D: Dimension>(
        &self,
        tensor: DlpackTensor,
    ) -> Result<DlpackArray<T, D>> {
        let (lay, device_type) = check::<T, D>(self.device().ordinal(), &tensor)?;
        if !is_standard(lay.dim.slice(), lay.strides.slice()) {
            return Err(Error::usage(format!(
                "DLPack import: the tensor is not C-contiguous (shape {}, element strides {:?}): \
                 use Context::import_dlpack_strided, or make it contiguous on the producer's \
                 side (torch: t.contiguous())",
                ShapeDisplay(lay.dim.slice()),
                strides_isize(lay.strides.slice())
            )));
        }
        check_memory::<T, D>(self, &lay)?;
        let ptr = if lay.dim.size() == 0 { 0 } else { lay.ptr };
        Ok(DlpackArray {
            ctx: self.clone(),
            ptr,
            dim: lay.dim,
            device_type,
            _tensor: tensor,
            _t: PhantomData,
        })
    }

    /// Imports a DLPack tensor with any strides (see [`DlpackStridedArray`]); checked as
    /// [`import_dlpack`](Self::import_dlpack) is, less contiguity. The array is writable, so
    /// tensors whose elements overlap (a stride of 0, as torch's `expand` makes) are refused.
    pub fn import_dlpack_strided<T: DlpackElement, D: Dimension>(
        &self,
        tensor: DlpackTensor,
    ) -> Result<DlpackStridedArray<T, D>> {
        let (lay, _) = check::<T, D>(self.device().ordinal(), &tensor)?;
        if overlaps(lay.dim.slice(), lay.strides.slice()) {
            return Err(Error::usage(format!(
                "DLPack import: the tensor's elements overlap (shape {}, element strides {:?}): \
                 cudajit's arrays are writable; copy it on the producer's side first \
                 (torch: t.contiguous())",
                ShapeDisplay(lay.dim.slice()),
                strides_isize(lay.strides.slice())
            )));
        }
        check_memory::<T, D>(self, &lay)?;
        Ok(DlpackStridedArray {
            ctx: self.clone(),
            lay,
            _tensor: tensor,
            _t: PhantomData,
        })
    }
}

fn strides_isize(s: &[usize]) -> Vec<isize> {
    s.iter().map(|&x| x as isize).collect()
}

/// Whether two distinct indices of a view reach the same element (a sufficient test: sorted by
/// stride, each axis must step past everything the smaller axes span).
pub(super) fn overlaps(shape: &[usize], strides: &[usize]) -> bool {
    if shape.contains(&0) {
        return false;
    }
    let mut axes: Vec<(u128, u128)> = shape
        .iter()
        .zip(strides)
        .filter(|(&d, _)| d > 1)
        .map(|(&d, &s)| ((s as isize).unsigned_abs() as u128, d as u128))
        .collect();
    axes.sort();
    let mut reach: u128 = 0; // the largest offset the smaller axes span
    for (stride, len) in axes {
        if stride <= reach || stride == 0 {
            return true;
        }
        reach = reach.saturating_add(stride.saturating_mul(len - 1));
    }
    false
}

/// Checks `tensor` against what an array of `T` and `D` on device `ordinal` can be (all but the
/// memory itself: see `check_memory`); the layout of the elements (address of element 0, shape,
/// strides) and the device type.
pub(super) fn check<T: DlpackElement, D: Dimension>(
    ordinal: usize,
    tensor: &DlpackTensor,
) -> Result<(Layout<D>, DLDeviceType)> {
    let t = tensor.dl_tensor()?;
    if tensor.flags()? & u64::from(DLPACK_FLAG_BITMASK_READ_ONLY) != 0 {
        return Err(Error::usage(
            "DLPack import: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and cudajit's \
             imported arrays are writable; copy it on the producer's side first",
        ));
    }
    let dev = t.device;
    match dev.device_type {
        DLDeviceType::kDLCUDA => {
            if dev.device_id < 0 || dev.device_id as usize != ordinal {
                return Err(Error::usage(format!(
                    "DLPack import: the tensor is on CUDA device {}, the context is of device \
                     {ordinal}: import it with device {}'s context (Context::new({}))",
                    dev.device_id, dev.device_id, dev.device_id
                )));
            }
        }
        DLDeviceType::kDLCUDAManaged | DLDeviceType::kDLCUDAHost => {}
        DLDeviceType::kDLCPU => {
            return Err(Error::usage(
                "DLPack import: a CPU tensor (kDLCPU) where device memory is needed: move it to \
                 the GPU first (torch: t.cuda(), CuPy: cupy.asarray(a)), or copy it in with \
                 Context::to_device",
            ))
        }
        other => {
            return Err(Error::usage(format!(
                "DLPack import: device type {} is not CUDA memory (cudajit takes kDLCUDA, \
                 kDLCUDAManaged and kDLCUDAHost)",
                other.0
            )))
        }
    }
    if t.dtype != T::DTYPE {
        return Err(Error::usage(format!(
            "DLPack import: the tensor's data type is {}, the array's element type {} is {}",
            dtype_name(t.dtype),
            std::any::type_name::<T>(),
            dtype_name(T::DTYPE)
        )));
    }
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| Error::usage(format!("DLPack import: ndim {} is negative", t.ndim)))?;
    if let Some(n) = D::NDIM {
        if n != ndim {
            return Err(Error::usage(format!(
                "DLPack import: the tensor has {ndim} dimensions, the array type {n}"
            )));
        }
    }
    if ndim > 0 && t.shape.is_null() {
        return Err(Error::usage("DLPack import: a null shape pointer"));
    }
    let mut dim = D::zeros(ndim);
    let mut strides = D::zeros(ndim);
    // SAFETY: `shape` (and `strides` when not null) point to `ndim` integers (DLPack).
    let shape = if ndim == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    for (d, &s) in dim.slice_mut().iter_mut().zip(shape) {
        *d = usize::try_from(s).map_err(|_| {
            Error::usage(format!("DLPack import: negative extent in shape {shape:?}"))
        })?;
    }
    let size = dim
        .size_checked()
        .and_then(|n| n.checked_mul(std::mem::size_of::<T>()))
        .ok_or_else(|| Error::usage(format!("DLPack import: shape {shape:?} is too large")))?;
    if t.strides.is_null() || ndim == 0 {
        let c = crate::memory::layout::c_strides(dim.slice());
        for (d, s) in strides.slice_mut().iter_mut().zip(c) {
            *d = s as usize;
        }
    } else {
        // SAFETY: as above.
        let st = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        for (d, &s) in strides.slice_mut().iter_mut().zip(st) {
            *d = isize::try_from(s)
                .map_err(|_| Error::usage(format!("DLPack import: stride {s} is too large")))?
                as usize;
        }
    }
    let ptr = (t.data as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| Error::usage("DLPack import: data + byte_offset overflows"))?;
    if size > 0 {
        if ptr == 0 {
            return Err(Error::usage(
                "DLPack import: a null data pointer for a non-empty tensor",
            ));
        }
        if ptr % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::usage(format!(
                "DLPack import: the data address {ptr:#x} (data + byte_offset) is not aligned \
                 to the element's {} bytes",
                std::mem::align_of::<T>()
            )));
        }
        let (first, last) = extent::<T>(ptr, dim.slice(), strides.slice());
        if first < 0 || last > i128::from(u64::MAX) {
            return Err(Error::usage(
                "DLPack import: the tensor's extent overflows the address space",
            ));
        }
    }
    Ok((Layout { ptr, dim, strides }, dev.device_type))
}

/// The lowest and highest byte addresses a non-empty view of `T` at `ptr` touches, in `i128`
/// (a producer's strides may be anything: no overflow, whatever they are).
fn extent<T>(ptr: u64, shape: &[usize], strides: &[usize]) -> (i128, i128) {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&d, &s) in shape.iter().zip(strides) {
        let far = (d as i128 - 1) * (s as isize as i128);
        if far < 0 {
            lo += far;
        } else {
            hi += far;
        }
    }
    let size = std::mem::size_of::<T>() as i128;
    (
        i128::from(ptr) + lo * size,
        i128::from(ptr) + (hi + 1) * size - 1,
    )
}

/// Checks that the lowest and highest bytes of a non-empty tensor (already checked by `check`)
/// are memory the driver knows.
fn check_memory<T, D: Dimension>(ctx: &Context, lay: &Layout<D>) -> Result<()> {
    if lay.dim.size() == 0 {
        return Ok(());
    }
    // In range: `check` refused anything else.
    let (first, last) = extent::<T>(lay.ptr, lay.dim.slice(), lay.strides.slice());
    let (first, last) = (first as u64, last as u64);
    ctx.bind()?;
    for a in [first, last] {
        if !backend().is_driver_memory(a as *const std::ffi::c_void) {
            return Err(Error::usage(format!(
                "DLPack import: address {a:#x} of the tensor is not memory the CUDA driver knows \
                 (not device, managed or pinned memory of this process)"
            )));
        }
    }
    Ok(())
}

impl<T: DlpackElement, D: Dimension> DlpackArray<T, D> {
    /// The DLPack device type of the memory (`kDLCUDA`, `kDLCUDAManaged` or `kDLCUDAHost`).
    pub fn device_type(&self) -> DLDeviceType {
        self.device_type
    }
}

impl<T: DlpackElement, D: Dimension> Sealed for DlpackArray<T, D> {}

impl<T: DlpackElement, D: Dimension> DeviceSlice<T> for DlpackArray<T, D> {
    type Dim = D;
    fn context(&self) -> &Context {
        &self.ctx
    }
    fn device_ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
    fn dim(&self) -> &D {
        &self.dim
    }
}

impl<T: DlpackElement, D: Dimension> DeviceSliceMut<T> for DlpackArray<T, D> {}

impl<T: DlpackElement, D: Dimension> AsStrided<T> for DlpackArray<T, D> {
    type Dim = D;
    fn as_strided(&self) -> StridedView<'_, T, D> {
        self.strided()
    }
}

impl<T: DlpackElement, D: Dimension> AsStridedMut<T> for DlpackArray<T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.strided_mut()
    }
}

impl<T: DlpackElement, D: Dimension> DlpackStridedArray<T, D> {
    /// A read-only strided view of the whole tensor.
    pub fn view(&self) -> StridedView<'_, T, D> {
        StridedView::from_layout(&self.ctx, self.lay.clone())
    }
    /// A writable strided view of the whole tensor.
    pub fn view_mut(&mut self) -> StridedViewMut<'_, T, D> {
        StridedViewMut::from_layout(&self.ctx, self.lay.clone())
    }
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.lay.dim.slice()
    }
    /// The element strides (negative along reversed axes).
    pub fn strides(&self) -> Vec<isize> {
        strides_isize(self.lay.strides.slice())
    }
    /// The context the memory is used from.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

impl<T: DlpackElement, D: Dimension> Sealed for DlpackStridedArray<T, D> {}

impl<T: DlpackElement, D: Dimension> AsStrided<T> for DlpackStridedArray<T, D> {
    type Dim = D;
    fn as_strided(&self) -> StridedView<'_, T, D> {
        self.view()
    }
}

impl<T: DlpackElement, D: Dimension> AsStridedMut<T> for DlpackStridedArray<T, D> {
    fn as_strided_mut(&mut self) -> StridedViewMut<'_, T, D> {
        self.view_mut()
    }
}

impl<T: DlpackElement, D: Dimension> fmt::Debug for DlpackArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DlpackArray<{}>(shape {:?}, device {})",
            std::any::type_name::<T>(),
            self.dim.slice(),
            self.ctx.device().ordinal()
        )
    }
}

impl<T: DlpackElement, D: Dimension> fmt::Debug for DlpackStridedArray<T, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DlpackStridedArray<{}>(shape {:?}, strides {:?}, device {})",
            std::any::type_name::<T>(),
            self.shape(),
            self.strides(),
            self.ctx.device().ordinal()
        )
    }
}
