//! [`SurfaceObject`]: a surface object (`cuSurfObjectCreate`) over a CUDA array, for kernels'
//! surface loads and stores.

use std::marker::PhantomData;

use cudajit_sys as sys;

use super::array::CudaArray;
use super::format::TexelFormat;
use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};

/// A surface object over a CUDA array made with surface access
/// ([`ArrayOptions::surface`](super::ArrayOptions), the default of
/// [`CudaArray::new_2d`]), borrowing it mutably for `'a` (kernels write it). Passed to kernels'
/// surface parameters ([`Surface1d`](crate::codegen::Surface1d),
/// [`Surface2d`](crate::codegen::Surface2d), [`Surface3d`](crate::codegen::Surface3d)) as its
/// 64-bit handle. Destroyed on drop.
pub struct SurfaceObject<'a> {
    ctx: Context,
    raw: sys::CUsurfObject,
    dims: usize,
    _a: PhantomData<&'a mut ()>,
}

// SAFETY: the handle is a 64-bit value valid in every thread of its context's process.
unsafe impl Send for SurfaceObject<'_> {}
// SAFETY: shared references only read the handle.
unsafe impl Sync for SurfaceObject<'_> {}

impl Drop for SurfaceObject<'_> {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the object is this value's own, destroyed once.
        check_in_drop(unsafe { backend().surf_object_destroy(self.raw) });
    }
}

impl std::fmt::Debug for SurfaceObject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SurfaceObject {{ {}-D, handle: {:#x} }}",
            self.dims, self.raw
        )
    }
}

impl<'a> SurfaceObject<'a> {
    /// A surface over `array` (which must allow surface access).
    pub fn new<T: TexelFormat>(array: &'a mut CudaArray<T>) -> Result<Self> {
        if !array.surface_capable() {
            return Err(Error::usage(
                "a surface object needs a CUDA array made with surface access \
                 (ArrayOptions { surface: true, .. }, as CudaArray::new_2d makes them)",
            ));
        }
        array.context().bind()?;
        // SAFETY: the array is borrowed for `'a`, longer than the object lives.
        let raw = unsafe { backend().surf_object_create(array.raw()) }?;
        Ok(SurfaceObject {
            ctx: array.context().clone(),
            raw,
            dims: array.ndim(),
            _a: PhantomData,
        })
    }

    /// The 64-bit handle kernels receive (`CUsurfObject`).
    pub fn raw(&self) -> sys::CUsurfObject {
        self.raw
    }

    /// 1, 2 or 3.
    pub fn ndim(&self) -> usize {
        self.dims
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}
