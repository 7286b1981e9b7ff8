//! [`TensorMap`]: a tiled tensor map over a device array, for Hopper's Tensor Memory
//! Accelerator (TMA): the description (`CUtensorMap`, 128 bytes) that lets one thread copy a
//! whole box (a tile of up to 5 dimensions) between global and shared memory.
//!
//! Shapes are given in C order (outermost dimension first, as ndarray and the arrays have
//! them); the map holds them in the driver's order (innermost first).

use std::fmt;
use std::marker::PhantomData;

use super::element::DeviceCopy;
use super::strided::{AsStrided, AsStridedMut, StridedView};
use crate::backend::backend;
use crate::backend::tensor_map::{TensorMapBytes, TensorMapDesc, MAX_RANK};
pub use crate::backend::tensor_map::{
    TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill, TensorMapSwizzle,
};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::ir::ScalarTy;

mod sealed {
    pub trait Sealed {}
}

/// The element types the TMA unit copies: `u8`, `u16`, `u32`, `i32`, `u64`, `i64`,
/// [`f16`](crate::f16), [`bf16`](crate::bf16), `f32` and `f64` (its `CUtensorMapDataType`s).
/// Other types (`bool`, `i8`, `i16`, complex numbers) can be mapped through a view of the same
/// memory as the unsigned type of their size.
pub trait TensorMapElement: DeviceCopy + sealed::Sealed {
    /// The element's type in the kernel IR.
    #[doc(hidden)]
    const ELEM: ScalarTy;
}

macro_rules! tma_elements {
    ($($t:ty => $tag:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl TensorMapElement for $t {
            const ELEM: ScalarTy = ScalarTy::$tag;
        }
    )*};
}
tma_elements!(
    u8 => U8, u16 => U16, u32 => U32, i32 => I32, u64 => U64, i64 => I64,
    half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64
);

/// The encoding options of a [`TensorMap`] besides its box: swizzle, interleave, L2 promotion,
/// out-of-bounds fill and the element strides (C order, like the box). The defaults are what
/// most kernels use: no swizzle, no interleave, 256-byte L2 promotion (as CUTLASS), zeros out
/// of bounds, element strides 1.
///
/// ```
/// use cudajit::memory::{TensorMapOptions, TensorMapSwizzle};
/// let opts = TensorMapOptions::<2>::default().swizzle(TensorMapSwizzle::B128);
/// assert_eq!(opts.element_strides, [1, 1]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TensorMapOptions<const R: usize> {
    /// How the box is swizzled in shared memory (default none).
    pub swizzle: TensorMapSwizzle,
    /// An interleaved global layout (default none).
    pub interleave: TensorMapInterleave,
    /// The L2 promotion of the copies (default 256 bytes).
    pub l2_promotion: TensorMapL2Promotion,
    /// What is written for elements outside the array (default zeros).
    pub oob_fill: TensorMapOobFill,
    /// The traversal step within the box along each dimension, C order, each 1 to 8 (default
    /// 1): a copy moves `ceil(box / step)` elements along a dimension. Without interleave the
    /// innermost dimension's step is ignored by the hardware.
    pub element_strides: [u32; R],
}

impl<const R: usize> Default for TensorMapOptions<R> {
    fn default() -> Self {
        TensorMapOptions {
            swizzle: TensorMapSwizzle::None,
            interleave: TensorMapInterleave::None,
            l2_promotion: TensorMapL2Promotion::B256,
            oob_fill: TensorMapOobFill::Zero,
            element_strides: [1; R],
        }
    }
}

impl<const R: usize> TensorMapOptions<R> {
    /// With this swizzle.
    pub fn swizzle(mut self, swizzle: TensorMapSwizzle) -> Self {
        self.swizzle = swizzle;
        self
    }
    /// With this interleave.
    pub fn interleave(mut self, interleave: TensorMapInterleave) -> Self {
        self.interleave = interleave;
        self
    }
    /// With this L2 promotion.
    pub fn l2_promotion(mut self, l2_promotion: TensorMapL2Promotion) -> Self {
        self.l2_promotion = l2_promotion;
        self
    }
    /// With this out-of-bounds fill.
    pub fn oob_fill(mut self, oob_fill: TensorMapOobFill) -> Self {
        self.oob_fill = oob_fill;
        self
    }
    /// With these element strides (C order).
    pub fn element_strides(mut self, element_strides: [u32; R]) -> Self {
        self.element_strides = element_strides;
        self
    }
}

/// A tiled tensor map over a device array or view of `T` with `R` dimensions (1 to 5): what a
/// kernel's TMA copies take to move one box (a tile, at most 256 elements per dimension)
/// between the array and shared memory. Kernels receive it by value (its 128 bytes).
///
/// It borrows the array for `'a`: the map holds the array's address, so it cannot outlive the
/// memory (a [`DeviceArray`](crate::DeviceArray) frees its memory on drop and is not
/// reference-counted, so a borrow is what keeps the address valid). A map made with
/// [`tiled_mut`](Self::tiled_mut) borrows the array mutably, for kernels that write through the
/// map (TMA stores); one made with [`tiled`](Self::tiled) is for reading.
///
/// The array's innermost dimension must be contiguous (stride 1 element), its start 16-byte
/// aligned, and the byte strides of its other dimensions multiples of 16; every rule of
/// `cuTensorMapEncodeTiled` is checked before the driver (or the simulator) is called, and a
/// broken one is an [`Error::Usage`] naming it.
pub struct TensorMap<'a, T: TensorMapElement, const R: usize> {
    raw: TensorMapBytes,
    desc: TensorMapDesc,
    ctx: &'a Context,
    writable: bool,
    _t: PhantomData<&'a T>,
}

impl<'a, T: TensorMapElement, const R: usize> TensorMap<'a, T, R> {
    /// A map over `array` (any device array or view, strided views included) copying boxes of
    /// `box_shape` elements (C order, each 1 to 256), with the default options.
    ///
    /// ```no_run
    /// use cudajit::memory::TensorMap;
    /// use cudajit::prelude::*;
    /// # fn main() -> cudajit::Result<()> {
    /// let ctx = Context::new(0)?;
    /// let a = ctx.zeros::<cudajit::f16, _>((1024, 512))?;
    /// // Tiles of 64 rows by 64 columns (128 bytes per row).
    /// let map = TensorMap::<_, 2>::tiled(&a, [64, 64])?;
    /// assert_eq!(map.box_bytes(), 64 * 64 * 2);
    /// # Ok(()) }
    /// ```
    pub fn tiled<A: AsStrided<T> + ?Sized>(array: &'a A, box_shape: [u32; R]) -> Result<Self> {
        Self::tiled_with(array, box_shape, TensorMapOptions::default())
    }

    /// A map over `array` with boxes of `box_shape` (C order) and the given options.
    pub fn tiled_with<A: AsStrided<T> + ?Sized>(
        array: &'a A,
        box_shape: [u32; R],
        options: TensorMapOptions<R>,
    ) -> Result<Self> {
        Self::encode(array.as_strided(), box_shape, options, false)
    }

    /// A map over `array` that kernels may also write through (TMA stores), with the default
    /// options; it borrows the array mutably for as long as it lives.
    pub fn tiled_mut<A: AsStridedMut<T> + ?Sized>(
        array: &'a mut A,
        box_shape: [u32; R],
    ) -> Result<Self> {
        Self::tiled_mut_with(array, box_shape, TensorMapOptions::default())
    }

    /// A writable map (see [`tiled_mut`](Self::tiled_mut)) with the given options.
    pub fn tiled_mut_with<A: AsStridedMut<T> + ?Sized>(
        array: &'a mut A,
        box_shape: [u32; R],
        options: TensorMapOptions<R>,
    ) -> Result<Self> {
        let array: &'a A = array;
        Self::encode(array.as_strided(), box_shape, options, true)
    }

    fn encode(
        view: StridedView<'a, T, impl ndarray::Dimension>,
        box_shape: [u32; R],
        options: TensorMapOptions<R>,
        writable: bool,
    ) -> Result<Self> {
        let ctx = view.context();
        let (desc, raw) = encode_tiled(
            ctx,
            T::ELEM,
            view.device_ptr(),
            (view.shape(), &view.strides()),
            box_shape,
            &options,
        )?;
        Ok(TensorMap {
            raw,
            desc,
            ctx,
            writable,
            _t: PhantomData,
        })
    }

    /// The box one copy moves, in elements, C order.
    pub fn box_shape(&self) -> [u32; R] {
        let mut b = [1; R];
        for (i, v) in b.iter_mut().enumerate() {
            *v = self.desc.box_dims[R - 1 - i];
        }
        b
    }

    /// The array's shape, C order.
    pub fn shape(&self) -> [usize; R] {
        let mut s = [1; R];
        for (i, v) in s.iter_mut().enumerate() {
            *v = self.desc.global_dims[R - 1 - i] as usize;
        }
        s
    }

    /// The swizzle of the boxes in shared memory.
    pub fn swizzle(&self) -> TensorMapSwizzle {
        self.desc.swizzle
    }

    /// The encoding options the map was made with (element strides in C order).
    pub fn options(&self) -> TensorMapOptions<R> {
        let mut element_strides = [1; R];
        for (i, v) in element_strides.iter_mut().enumerate() {
            *v = self.desc.element_strides[R - 1 - i];
        }
        TensorMapOptions {
            swizzle: self.desc.swizzle,
            interleave: self.desc.interleave,
            l2_promotion: self.desc.l2_promotion,
            oob_fill: self.desc.oob_fill,
            element_strides,
        }
    }

    /// The bytes one box copy writes to shared memory (the product of `ceil(box / element
    /// stride)` over the dimensions, times the element size): what a kernel tells the
    /// mbarrier to expect (`expect_tx`) before the copy completes.
    pub fn box_bytes(&self) -> u32 {
        // `describe` refused boxes whose bytes do not fit a u32.
        self.desc.box_bytes() as u32
    }

    /// Whether kernels may write through the map (made by [`tiled_mut`](Self::tiled_mut)).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The context the array belongs to.
    pub fn context(&self) -> &Context {
        self.ctx
    }

    /// The encoded map, as kernels receive it.
    pub(crate) fn raw(&self) -> &TensorMapBytes {
        &self.raw
    }
}

impl<T: TensorMapElement, const R: usize> fmt::Debug for TensorMap<'_, T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorMap<{}, {R}>(shape {:?}, box {:?}, swizzle {:?}, device {})",
            std::any::type_name::<T>(),
            self.shape(),
            self.box_shape(),
            self.desc.swizzle,
            self.ctx.device().ordinal()
        )
    }
}

/// Describes a tiled map of the memory at `ptr` (shape and element strides in C order) and
/// encodes it in `ctx`: `TensorMap`'s maps and those the library's own kernels make from raw
/// operands (`ops::matmul`).
pub(crate) fn encode_tiled<const R: usize>(
    ctx: &Context,
    elem: ScalarTy,
    ptr: u64,
    (shape, strides): (&[usize], &[isize]),
    box_shape: [u32; R],
    options: &TensorMapOptions<R>,
) -> Result<(TensorMapDesc, TensorMapBytes)> {
    let desc = describe(elem, ptr, shape, strides, box_shape, options)?;
    ctx.bind()?;
    let raw = backend().tensor_map_encode_tiled(&desc)?;
    Ok((desc, raw))
}

/// The description of a map of rank `R` over the array at `ptr` with `shape` and element
/// `strides` (C order), in the driver's order. Checks what is particular to arrays (the rank,
/// an empty array, the innermost stride, negative strides); the backend checks the driver's
/// rules ([`validate`](crate::backend::tensor_map::validate)).
pub(crate) fn describe<const R: usize>(
    elem: ScalarTy,
    ptr: u64,
    shape: &[usize],
    strides: &[isize],
    box_shape: [u32; R],
    options: &TensorMapOptions<R>,
) -> Result<TensorMapDesc> {
    let refuse = |msg: String| Err(Error::usage(format!("tensor map: {msg}")));
    if !(1..=MAX_RANK).contains(&R) {
        return refuse(format!(
            "TensorMap<_, {R}>: a tensor map has 1 to 5 dimensions"
        ));
    }
    if shape.len() != R {
        return refuse(format!(
            "TensorMap<_, {R}> over an array of {} dimensions (shape {shape:?}); use \
             TensorMap::<_, {}> or reshape the array",
            shape.len(),
            shape.len()
        ));
    }
    if shape.contains(&0) {
        return refuse(format!(
            "the array of shape {shape:?} is empty; a tensor map needs at least one element"
        ));
    }
    let size = elem.size() as u64;
    let inner = R - 1;
    if shape[inner] > 1 && strides[inner] != 1 {
        return refuse(format!(
            "the innermost dimension has stride {} elements (shape {shape:?}, strides \
             {strides:?}): the TMA unit reads the innermost dimension contiguously; make the \
             last axis contiguous (no step or transpose on it), or copy the view to a \
             contiguous array first",
            strides[inner]
        ));
    }
    let mut desc = TensorMapDesc {
        elem,
        rank: R as u32,
        global_address: ptr,
        global_dims: [1; MAX_RANK],
        global_strides: [0; MAX_RANK],
        box_dims: [1; MAX_RANK],
        element_strides: [1; MAX_RANK],
        interleave: options.interleave,
        swizzle: options.swizzle,
        l2_promotion: options.l2_promotion,
        oob_fill: options.oob_fill,
    };
    for d in 0..R {
        let c = R - 1 - d; // the C-order axis of driver dimension d
        desc.global_dims[d] = shape[c] as u64;
        desc.box_dims[d] = box_shape[c];
        desc.element_strides[d] = options.element_strides[c];
        desc.global_strides[d] = if d == 0 {
            size
        } else if shape[c] == 1 {
            // Never stepped along: any stride the driver accepts; the dense one.
            desc.global_strides[d - 1]
                .saturating_mul(desc.global_dims[d - 1])
                .next_multiple_of(16)
        } else if strides[c] < 0 {
            return refuse(format!(
                "axis {c} runs backwards (stride {} elements; shape {shape:?}): tensor map \
                 strides are unsigned; map the array before inverting the axis",
                strides[c]
            ));
        } else {
            (strides[c] as u64).saturating_mul(size)
        };
    }
    if desc.box_bytes() > u64::from(u32::MAX) {
        return refuse(format!(
            "the box {box_shape:?} of {size}-byte elements is {} bytes, more than any shared \
             memory holds; use a smaller box",
            desc.box_bytes()
        ));
    }
    Ok(desc)
}

#[cfg(test)]
mod tests;
