//! [`CudaArray`]: texels in the GPU's texture layout (`cuArray3DCreate`), with copies from and
//! to host memory, device arrays and other CUDA arrays (`cuMemcpy3D`).

use std::marker::PhantomData;

use cudajit_sys as sys;

use super::format::TexelFormat;
use crate::backend::backend;
use crate::backend::texture::{ArrayDesc, Copy3d, CopySide};
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::memory::{DeviceSlice, DeviceSliceMut};

/// How a [`CudaArray`] is made beyond its extent and texel type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArrayOptions {
    /// A layered array (`CUDA_ARRAY3D_LAYERED`): its depth counts layers of 1-D or 2-D
    /// textures.
    pub layered: bool,
    /// A cube map (`CUDA_ARRAY3D_CUBEMAP`): width equals height, depth is 6 (or a multiple of
    /// 6 when layered).
    pub cubemap: bool,
    /// Surface objects may be made over it (`CUDA_ARRAY3D_SURFACE_LDST`).
    pub surface: bool,
}

/// A CUDA array of texels of type `T` (see [`TexelFormat`]): 1-D (`height` and `depth` 0),
/// 2-D (`depth` 0) or 3-D, in the layout the texture units read (opaque: reach it with the
/// copies here, textures and surfaces). Destroyed on drop; keeps its context alive.
///
/// ```no_run
/// use cudajit::memory::CudaArray;
/// let ctx = cudajit::Context::new(0)?;
/// let mut img = CudaArray::<[u8; 4]>::new_2d(&ctx, 640, 480)?;
/// img.copy_from_host(&vec![[0u8; 4]; 640 * 480])?;
/// # Ok::<(), cudajit::Error>(())
/// ```
pub struct CudaArray<T: TexelFormat> {
    ctx: Context,
    raw: sys::CUarray,
    desc: ArrayDesc,
    _t: PhantomData<T>,
}

// SAFETY: a CUDA array is reachable from any thread through its context; shared references
// only read its handle and description or enqueue reads of it.
unsafe impl<T: TexelFormat> Send for CudaArray<T> {}
// SAFETY: as above.
unsafe impl<T: TexelFormat> Sync for CudaArray<T> {}

impl<T: TexelFormat> Drop for CudaArray<T> {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the array is this object's own, destroyed once.
        check_in_drop(unsafe { backend().array_destroy(self.raw) });
    }
}

impl<T: TexelFormat> std::fmt::Debug for CudaArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaArray<{}> {{ extent: {} x {} x {}, flags: {:#x} }}",
            std::any::type_name::<T>(),
            self.desc.width,
            self.desc.height,
            self.desc.depth,
            self.desc.flags
        )
    }
}

impl<T: TexelFormat> CudaArray<T> {
    /// A 1-D array of `width` texels.
    pub fn new_1d(ctx: &Context, width: usize) -> Result<Self> {
        Self::new(ctx, [width, 0, 0], ArrayOptions::default())
    }

    /// A 2-D array of `height` rows of `width` texels (surface loads and stores allowed).
    pub fn new_2d(ctx: &Context, width: usize, height: usize) -> Result<Self> {
        let opts = ArrayOptions {
            surface: true,
            ..Default::default()
        };
        Self::new(ctx, [width, height, 0], opts)
    }

    /// A 3-D array of `depth` slices of `height` rows of `width` texels.
    pub fn new_3d(ctx: &Context, width: usize, height: usize, depth: usize) -> Result<Self> {
        Self::new(ctx, [width, height, depth], ArrayOptions::default())
    }

    /// An array of extent `[width, height, depth]` (0 for the dimensions it lacks) with
    /// `opts`' flags.
    pub fn new(ctx: &Context, extent: [usize; 3], opts: ArrayOptions) -> Result<Self> {
        let [width, height, depth] = extent;
        if width == 0 || (height == 0 && depth != 0 && !opts.layered) {
            return Err(Error::usage(format!(
                "a CUDA array's extent must be [width > 0, height, depth] with depth 0 for 1-D and \
                 2-D arrays (height 0 for 1-D): [{width}, {height}, {depth}] is not one"
            )));
        }
        let mut flags = 0;
        if opts.layered {
            flags |= sys::CUDA_ARRAY3D_LAYERED;
        }
        if opts.cubemap {
            flags |= sys::CUDA_ARRAY3D_CUBEMAP;
        }
        if opts.surface {
            flags |= sys::CUDA_ARRAY3D_SURFACE_LDST;
        }
        let desc = ArrayDesc {
            width,
            height,
            depth,
            texel: T::LAYOUT,
            flags,
        };
        crate::graph::refuse("creating a CUDA array (cuArray3DCreate)")?;
        ctx.bind()?;
        let raw = backend().array_create(&desc)?;
        Ok(CudaArray {
            ctx: ctx.clone(),
            raw,
            desc,
            _t: PhantomData,
        })
    }

    /// The extent as made: `[width, height, depth]` (0 for the dimensions it lacks).
    pub fn extent(&self) -> [usize; 3] {
        [self.desc.width, self.desc.height, self.desc.depth]
    }

    /// 1, 2 or 3 (layers and cube faces count as the third dimension).
    pub fn ndim(&self) -> usize {
        if self.desc.height == 0 && self.desc.depth == 0 {
            1
        } else if self.desc.depth == 0 {
            2
        } else {
            3
        }
    }

    /// Texels in all.
    pub fn len(&self) -> usize {
        self.desc.extent().iter().product()
    }

    /// Whether it holds no texels (never: extents are positive).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUarray {
        self.raw
    }

    /// Whether it is layered (its depth counts layers).
    pub fn is_layered(&self) -> bool {
        self.desc.flags & sys::CUDA_ARRAY3D_LAYERED != 0
    }

    /// Whether surface objects may be made over it.
    pub fn surface_capable(&self) -> bool {
        self.desc.flags & sys::CUDA_ARRAY3D_SURFACE_LDST != 0
    }

    pub(crate) fn desc(&self) -> &ArrayDesc {
        &self.desc
    }

    fn check_len(&self, op: &'static str, len: usize) -> Result<()> {
        if len != self.len() {
            let e = self.desc.extent();
            return Err(Error::Shape {
                op,
                expected: vec![e[2], e[1], e[0]],
                actual: vec![len],
            });
        }
        Ok(())
    }

    /// A copy of the whole array from or to a dense side (rows of `width` texels).
    fn copy(&self, src: CopySide, dst: CopySide) -> Result<()> {
        let e = self.desc.extent();
        let c = Copy3d {
            src,
            dst,
            width_bytes: self.desc.row_bytes(),
            height: e[1],
            depth: e[2],
        };
        crate::graph::refuse("a copy to or from a CUDA array (cuMemcpy3D)")?;
        self.ctx.bind()?;
        // SAFETY: the array is live; the callers checked the other side holds the whole box.
        unsafe { backend().memcpy_3d(&c, None) }
    }

    /// Copies `src` (the texels in C order: x fastest, then rows, then slices) into the array;
    /// `src.len()` must be [`len`](Self::len). Synchronous.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.check_len("CudaArray::copy_from_host", src.len())?;
        let e = self.desc.extent();
        let side = CopySide::Host {
            ptr: src.as_ptr() as *mut u8,
            pitch: self.desc.row_bytes(),
            height: e[1],
        };
        self.copy(side, CopySide::Array(self.raw))
    }

    /// Copies the array into `dst` (C order); `dst.len()` must be [`len`](Self::len).
    /// Synchronous.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.check_len("CudaArray::copy_to_host", dst.len())?;
        let e = self.desc.extent();
        let side = CopySide::Host {
            ptr: dst.as_mut_ptr().cast(),
            pitch: self.desc.row_bytes(),
            height: e[1],
        };
        self.copy(CopySide::Array(self.raw), side)
    }

    /// The array's texels in C order.
    pub fn to_host(&self) -> Result<Vec<T>> {
        let mut v: Vec<T> = Vec::with_capacity(self.len());
        // The copy writes every element before the length is set.
        let e = self.desc.extent();
        let side = CopySide::Host {
            ptr: v.as_mut_ptr().cast(),
            pitch: self.desc.row_bytes(),
            height: e[1],
        };
        self.copy(CopySide::Array(self.raw), side)?;
        // SAFETY: the copy succeeded and wrote all `len` texels (plain data of `T`).
        unsafe { v.set_len(self.len()) };
        Ok(v)
    }

    /// Copies a device array of [`len`](Self::len) texels (C order) into the array.
    pub fn copy_from_device<S: DeviceSlice<T> + ?Sized>(&mut self, src: &S) -> Result<()> {
        self.check_len("CudaArray::copy_from_device", src.len())?;
        self.ctx
            .check_same(src.context(), "CudaArray::copy_from_device")?;
        let e = self.desc.extent();
        let side = CopySide::Device {
            ptr: src.device_ptr(),
            pitch: self.desc.row_bytes(),
            height: e[1],
        };
        self.copy(side, CopySide::Array(self.raw))
    }

    /// Copies the array into a device array of [`len`](Self::len) texels (C order).
    pub fn copy_to_device<S: DeviceSliceMut<T> + ?Sized>(&self, dst: &mut S) -> Result<()> {
        self.check_len("CudaArray::copy_to_device", dst.len())?;
        self.ctx
            .check_same(dst.context(), "CudaArray::copy_to_device")?;
        let e = self.desc.extent();
        let side = CopySide::Device {
            ptr: dst.device_ptr(),
            pitch: self.desc.row_bytes(),
            height: e[1],
        };
        self.copy(CopySide::Array(self.raw), side)
    }

    /// Copies another array of the same extent into this one.
    pub fn copy_from_array(&mut self, src: &CudaArray<T>) -> Result<()> {
        if src.desc.extent() != self.desc.extent() {
            let (a, b) = (self.desc.extent(), src.desc.extent());
            return Err(Error::Shape {
                op: "CudaArray::copy_from_array",
                expected: vec![a[2], a[1], a[0]],
                actual: vec![b[2], b[1], b[0]],
            });
        }
        self.ctx
            .check_same(src.context(), "CudaArray::copy_from_array")?;
        self.copy(CopySide::Array(src.raw), CopySide::Array(self.raw))
    }
}
