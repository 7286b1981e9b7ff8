//! The driver backend's texture calls: CUDA arrays, 3-D copies, texture and surface objects.

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::texture::{ArrayDesc, Copy3d, CopySide, TexDesc, TexResource};
use crate::backend::TextureApi;
use crate::error::{check, Result};

/// Fills one side of a `CUDA_MEMCPY3D` (`src`: the source fields, else the destination's).
fn side(c: &mut sys::CUDA_MEMCPY3D, s: CopySide, src: bool) {
    use sys::CUmemorytype as M;
    let (ty, host, dev, arr, pitch, height) = match s {
        CopySide::Host { ptr, pitch, height } => (
            M::CU_MEMORYTYPE_HOST,
            ptr,
            0,
            std::ptr::null_mut(),
            pitch,
            height,
        ),
        CopySide::Device { ptr, pitch, height } => (
            M::CU_MEMORYTYPE_DEVICE,
            std::ptr::null_mut(),
            ptr,
            std::ptr::null_mut(),
            pitch,
            height,
        ),
        CopySide::Array(a) => (M::CU_MEMORYTYPE_ARRAY, std::ptr::null_mut(), 0, a, 0, 0),
    };
    if src {
        c.srcMemoryType = ty;
        c.srcHost = host.cast_const().cast();
        c.srcDevice = dev;
        c.srcArray = arr;
        c.srcPitch = pitch;
        c.srcHeight = height;
    } else {
        c.dstMemoryType = ty;
        c.dstHost = host.cast();
        c.dstDevice = dev;
        c.dstArray = arr;
        c.dstPitch = pitch;
        c.dstHeight = height;
    }
}

// SAFETY (whole impl): every `unsafe` block passes valid pointers to locals, and handles and
// ranges that the callers (the safe types) keep alive, as each method's contract states.
impl TextureApi for CudaDriver {
    fn array_create(&self, desc: &ArrayDesc) -> Result<sys::CUarray> {
        let d = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: desc.width,
            Height: desc.height,
            Depth: desc.depth,
            Format: desc.texel.kind.driver_format(),
            NumChannels: desc.texel.channels,
            Flags: desc.flags,
        };
        let mut a = std::ptr::null_mut();
        // SAFETY: valid out-pointer and descriptor.
        unsafe { drv!(cuArray3DCreate_v2(&mut a, &d)) }?;
        Ok(a)
    }

    unsafe fn array_destroy(&self, a: sys::CUarray) -> Result<()> {
        // SAFETY: the caller destroys its own array once.
        unsafe { drv!(cuArrayDestroy(a)) }
    }

    unsafe fn memcpy_3d(&self, copy: &Copy3d, stream: Option<sys::CUstream>) -> Result<()> {
        let mut c = sys::CUDA_MEMCPY3D {
            WidthInBytes: copy.width_bytes,
            Height: copy.height,
            Depth: copy.depth,
            ..Default::default()
        };
        side(&mut c, copy.src, true);
        side(&mut c, copy.dst, false);
        // SAFETY: the caller guarantees live arrays and valid ranges for the box.
        unsafe {
            match stream {
                Some(s) => drv!(cuMemcpy3DAsync_v2(&c, s)),
                None => drv!(cuMemcpy3D_v2(&c)),
            }
        }
    }

    unsafe fn tex_object_create(
        &self,
        res: &TexResource,
        desc: &TexDesc,
    ) -> Result<sys::CUtexObject> {
        let mut r = sys::CUDA_RESOURCE_DESC::default();
        match *res {
            TexResource::Array(a) => {
                r.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
                r.res.array.hArray = a;
            }
            TexResource::Linear { ptr, texel, texels } => {
                r.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
                r.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
                    devPtr: ptr,
                    format: texel.kind.driver_format(),
                    numChannels: texel.channels,
                    sizeInBytes: texels * texel.bytes(),
                };
            }
            TexResource::Pitch2d {
                ptr,
                texel,
                width,
                height,
                pitch,
            } => {
                r.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_PITCH2D;
                r.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
                    devPtr: ptr,
                    format: texel.kind.driver_format(),
                    numChannels: texel.channels,
                    width,
                    height,
                    pitchInBytes: pitch,
                };
            }
        }
        let mut flags = 0;
        if !desc.normalized_float {
            flags |= sys::CU_TRSF_READ_AS_INTEGER;
        }
        if desc.normalized_coords {
            flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
        }
        let filter = match desc.filter {
            crate::backend::texture::FilterMode::Point => {
                sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT
            }
            crate::backend::texture::FilterMode::Linear => {
                sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR
            }
        };
        let t = sys::CUDA_TEXTURE_DESC {
            addressMode: desc.address.map(|m| m.driver()),
            filterMode: filter,
            flags,
            mipmapFilterMode: sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            borderColor: desc.border,
            ..Default::default()
        };
        let mut o = 0;
        // SAFETY: valid out-pointer and descriptors; the caller keeps the resource alive.
        unsafe { drv!(cuTexObjectCreate(&mut o, &r, &t, std::ptr::null())) }?;
        Ok(o)
    }

    unsafe fn tex_object_destroy(&self, t: sys::CUtexObject) -> Result<()> {
        // SAFETY: the caller destroys its own object once.
        unsafe { drv!(cuTexObjectDestroy(t)) }
    }

    unsafe fn surf_object_create(&self, a: sys::CUarray) -> Result<sys::CUsurfObject> {
        let mut r = sys::CUDA_RESOURCE_DESC {
            resType: sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
            ..Default::default()
        };
        r.res.array.hArray = a;
        let mut o = 0;
        // SAFETY: valid out-pointer and descriptor; the caller keeps the array alive.
        unsafe { drv!(cuSurfObjectCreate(&mut o, &r)) }?;
        Ok(o)
    }

    unsafe fn surf_object_destroy(&self, s: sys::CUsurfObject) -> Result<()> {
        // SAFETY: the caller destroys its own object once.
        unsafe { drv!(cuSurfObjectDestroy(s)) }
    }
}
