//! [`TextureObject`]: a texture object (`cuTexObjectCreate`) over a [`CudaArray`], linear
//! device memory or pitched 2-D device memory, with its sampling state ([`TextureDesc`]).

use std::marker::PhantomData;

use cudajit_sys as sys;

use super::array::CudaArray;
use super::format::{TexResult, TexelFormat};
use super::{AddressMode, FilterMode};
use crate::backend::backend;
use crate::backend::texture::{TexDesc, TexResource, TexelLayout};
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::ir::ScalarTy;
use crate::memory::DeviceSlice;

/// How a texture samples: address mode per dimension (x, y, z), filtering, whether
/// coordinates are normalized (\[0, 1) across the texture) and whether integer texels read as
/// normalized floats. The default: clamp, point sampling, texel coordinates, texels read as
/// they are (`f32` for float texels; `i32`/`u32` for integer ones). The border color is 0.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TextureDesc {
    /// What coordinates outside the texture read, per dimension.
    pub address: [AddressMode; 3],
    /// Point sampling or linear interpolation.
    pub filter: FilterMode,
    /// Coordinates in \[0, 1) across each dimension instead of texel units.
    pub normalized_coords: bool,
    /// Integer texels read as floats in \[0, 1\] (unsigned: `v / MAX`) or \[-1, 1\] (signed:
    /// `max(v / MAX, -1)`); the fetch's result type is then `f32`.
    pub read_normalized: bool,
}

impl TextureDesc {
    /// The same address mode in every dimension.
    pub fn address(mut self, mode: AddressMode) -> Self {
        self.address = [mode; 3];
        self
    }

    /// Linear or point filtering.
    pub fn filter(mut self, f: FilterMode) -> Self {
        self.filter = f;
        self
    }

    /// Normalized coordinates on or off.
    pub fn normalized_coords(mut self, on: bool) -> Self {
        self.normalized_coords = on;
        self
    }

    /// Integer texels read as normalized floats on or off.
    pub fn read_normalized(mut self, on: bool) -> Self {
        self.read_normalized = on;
        self
    }
}

/// A texture object whose fetches return `R` per channel (`f32`, `i32` or `u32`, see
/// [`TexResult`]), borrowing what it reads for `'a`. Passed to kernels' texture parameters
/// ([`Texture1d`](crate::codegen::Texture1d), [`Texture2d`](crate::codegen::Texture2d),
/// [`Texture3d`](crate::codegen::Texture3d)) as its 64-bit handle. Destroyed on drop.
pub struct TextureObject<'a, R: TexResult> {
    ctx: Context,
    raw: sys::CUtexObject,
    dims: usize,
    linear: bool,
    layered: bool,
    _r: PhantomData<fn() -> R>,
    _a: PhantomData<&'a ()>,
}

// SAFETY: the handle is a 64-bit value valid in every thread of its context's process.
unsafe impl<R: TexResult> Send for TextureObject<'_, R> {}
// SAFETY: shared references only read the handle.
unsafe impl<R: TexResult> Sync for TextureObject<'_, R> {}

impl<R: TexResult> Drop for TextureObject<'_, R> {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the object is this value's own, destroyed once.
        check_in_drop(unsafe { backend().tex_object_destroy(self.raw) });
    }
}

impl<R: TexResult> std::fmt::Debug for TextureObject<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TextureObject<{}> {{ {}-D, handle: {:#x} }}",
            std::any::type_name::<R>(),
            self.dims,
            self.raw
        )
    }
}

/// Checks that texels of `texel` read with `desc` give `R`, and the sampling state is one the
/// hardware has; a clear error otherwise.
fn check<R: TexResult>(texel: TexelLayout, desc: &TextureDesc, linear_memory: bool) -> Result<()> {
    let kind = texel.kind;
    let float = kind.is_float() || desc.read_normalized;
    let want = if float {
        ScalarTy::F32
    } else if kind.is_signed_int() {
        ScalarTy::I32
    } else {
        ScalarTy::U32
    };
    if R::RESULT != want {
        return Err(Error::usage(format!(
            "a texture of {kind:?} texels read {} returns {} per channel, not {}: make it a \
             TextureObject<{}>{}",
            if desc.read_normalized {
                "as normalized floats"
            } else {
                "as they are"
            },
            want.name(),
            R::RESULT.name(),
            want.name(),
            if kind.is_float() || desc.read_normalized {
                ""
            } else {
                " (or set read_normalized for f32 results)"
            }
        )));
    }
    if desc.filter == FilterMode::Linear && !float {
        return Err(Error::usage(format!(
            "linear filtering needs float results: {kind:?} texels must be read as normalized \
             floats (TextureDesc::read_normalized) to be filtered"
        )));
    }
    let wraps = desc
        .address
        .iter()
        .any(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror));
    if wraps && !desc.normalized_coords {
        return Err(Error::usage(
            "the wrap and mirror address modes need normalized coordinates \
             (TextureDesc::normalized_coords)",
        ));
    }
    if linear_memory && (desc.filter == FilterMode::Linear || desc.normalized_coords) {
        return Err(Error::usage(
            "a texture over linear memory is read with integer coordinates only (Texture1d::fetch): \
             no linear filtering, no normalized coordinates (use a CUDA array for those)",
        ));
    }
    Ok(())
}

/// Checks a texture's start address (and pitch) over device memory against the device's
/// texture alignments (`CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT`, `..._PITCH_ALIGNMENT`).
fn check_alignment(ctx: &Context, ptr: u64, pitch: Option<usize>) -> Result<()> {
    use sys::CUdevice_attribute as A;
    let dev = ctx.device();
    let base = dev
        .attribute(A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?
        .max(1) as u64;
    if ptr % base != 0 {
        return Err(Error::usage(format!(
            "a texture over device memory must start at an address aligned to {base} bytes              (the device's texture alignment); this memory starts at {ptr:#x} (a view at an              offset, or an allocation shared with others: allocate the texture's memory alone,              or view it from an aligned element)"
        )));
    }
    if let Some(p) = pitch {
        let pa = dev
            .attribute(A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)?
            .max(1) as usize;
        if p % pa != 0 {
            return Err(Error::usage(format!(
                "a pitched 2-D texture's pitch must be a multiple of {pa} bytes (the device's                  texture pitch alignment), not {p}"
            )));
        }
    }
    Ok(())
}

/// The backend's description. Float texels are "read as normalized floats" (the driver's
/// default promotion, a no-op for them): `CU_TRSF_READ_AS_INTEGER` is set only for integer
/// texels read as they are.
fn to_backend(desc: &TextureDesc, texel: TexelLayout) -> TexDesc {
    TexDesc {
        address: desc.address,
        filter: desc.filter,
        normalized_coords: desc.normalized_coords,
        normalized_float: desc.read_normalized || texel.kind.is_float(),
        border: [0.0; 4],
    }
}

impl<'a, R: TexResult> TextureObject<'a, R> {
    fn create(
        ctx: &Context,
        res: TexResource,
        texel: TexelLayout,
        desc: &TextureDesc,
        dims: usize,
        linear: bool,
    ) -> Result<Self> {
        ctx.bind()?;
        // SAFETY: the resource is borrowed for `'a`, longer than the object lives.
        let raw = unsafe { backend().tex_object_create(&res, &to_backend(desc, texel)) }?;
        Ok(TextureObject {
            ctx: ctx.clone(),
            raw,
            dims,
            linear,
            layered: false,
            _r: PhantomData,
            _a: PhantomData,
        })
    }

    /// A texture over a CUDA array (of its dimension count; over a layered array, a layered
    /// texture of its layers' dimension count, for [`Texture1dLayered`](crate::codegen::Texture1dLayered)
    /// and [`Texture2dLayered`](crate::codegen::Texture2dLayered) parameters).
    pub fn from_array<T: TexelFormat>(array: &'a CudaArray<T>, desc: &TextureDesc) -> Result<Self> {
        check::<R>(T::LAYOUT, desc, false)?;
        if array.desc().flags & sys::CUDA_ARRAY3D_CUBEMAP != 0 {
            return Err(Error::usage(
                "textures over cube-map CUDA arrays are not supported yet (their fetches, \
                 tex.cube, are not in the kernel language)",
            ));
        }
        if array.is_layered() {
            let dims = if array.extent()[1] == 0 { 1 } else { 2 };
            let mut t = Self::create(
                array.context(),
                TexResource::Array(array.raw()),
                T::LAYOUT,
                desc,
                dims,
                false,
            )?;
            t.layered = true;
            return Ok(t);
        }
        Self::create(
            array.context(),
            TexResource::Array(array.raw()),
            T::LAYOUT,
            desc,
            array.ndim(),
            false,
        )
    }

    /// A 1-D texture over linear device memory (`src`'s texels), read with integer coordinates
    /// ([`TexHandle::fetch`](crate::codegen::TexHandle::fetch)); out of range reads 0. `src`
    /// must start at the device's texture alignment (512 bytes on current GPUs).
    pub fn from_linear<T: TexelFormat, S: DeviceSlice<T> + ?Sized>(
        src: &'a S,
        desc: &TextureDesc,
    ) -> Result<Self> {
        check::<R>(T::LAYOUT, desc, true)?;
        if src.len() == 0 {
            return Err(Error::usage(
                "a texture over linear memory needs at least one texel",
            ));
        }
        check_alignment(src.context(), src.device_ptr(), None)?;
        let res = TexResource::Linear {
            ptr: src.device_ptr(),
            texel: T::LAYOUT,
            texels: src.len(),
        };
        Self::create(src.context(), res, T::LAYOUT, desc, 1, true)
    }

    /// A 2-D texture over pitched device memory: `height` rows of `width` texels of `T`, each
    /// row `pitch_bytes` after the one before, starting at `src`'s first element: the pitch a
    /// multiple of the device's texture pitch alignment (32 bytes on current GPUs), the start
    /// aligned to its texture alignment (512 bytes); checked, a clear error otherwise.
    pub fn from_pitch2d<T: TexelFormat, S: DeviceSlice<T> + ?Sized>(
        src: &'a S,
        width: usize,
        height: usize,
        pitch_bytes: usize,
        desc: &TextureDesc,
    ) -> Result<Self> {
        check::<R>(T::LAYOUT, desc, false)?;
        let row = width * T::LAYOUT.bytes();
        let need = if height == 0 {
            0
        } else {
            (height - 1) * pitch_bytes + row
        };
        let have = src.len() * std::mem::size_of::<T>();
        if width == 0 || height == 0 || pitch_bytes < row || need > have {
            return Err(Error::usage(format!(
                "a pitched 2-D texture of {height} rows of {width} texels ({row} bytes), \
                 {pitch_bytes} bytes apart, needs {need} bytes and a pitch of at least a row; \
                 the memory given has {have}"
            )));
        }
        check_alignment(src.context(), src.device_ptr(), Some(pitch_bytes))?;
        let res = TexResource::Pitch2d {
            ptr: src.device_ptr(),
            texel: T::LAYOUT,
            width,
            height,
            pitch: pitch_bytes,
        };
        Self::create(src.context(), res, T::LAYOUT, desc, 2, false)
    }

    /// The 64-bit handle kernels receive (`CUtexObject`).
    pub fn raw(&self) -> sys::CUtexObject {
        self.raw
    }

    /// 1, 2 or 3.
    pub fn ndim(&self) -> usize {
        self.dims
    }

    /// Whether it is a layered texture (over a layered CUDA array).
    pub fn is_layered(&self) -> bool {
        self.layered
    }

    /// Whether it reads linear memory (integer-coordinate fetches only).
    pub fn is_linear(&self) -> bool {
        self.linear
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}
