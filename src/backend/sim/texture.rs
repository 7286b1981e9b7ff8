//! CUDA arrays, texture and surface objects on the simulator. A CUDA array is a device
//! allocation holding its texels densely (x fastest, then rows, then slices) with its format
//! and extent; a texture or surface object is a made-up 64-bit handle naming a [`View`] of
//! memory (an array, linear or pitched device memory) and, for a texture, its sampling state.
//! The handles live in one process-wide table, read by kernels' fetches (`sample.rs`).

use std::collections::HashMap;
use std::sync::LazyLock;

use cudajit_sys as sys;
use parking_lot::RwLock;

use super::memory::Kind;
use super::{bad_handle, invalid, Simulator};
use crate::backend::texture::{
    AddressMode, ArrayDesc, Copy3d, CopySide, FilterMode, TexDesc, TexResource, TexelLayout,
};
use crate::backend::TextureApi;
use crate::error::{Error, Result};

/// Texels of memory as a texture or surface sees them.
#[derive(Debug, Clone, Copy)]
pub(super) struct View {
    pub base: u64,
    pub texel: TexelLayout,
    /// Texels per row, rows, slices (1 for the dimensions beyond `dims`).
    pub extent: [usize; 3],
    /// 1, 2 or 3.
    pub dims: u8,
    /// Bytes between rows and between slices.
    pub pitch: usize,
    pub slice: usize,
    /// Linear memory (`tex1Dfetch`): integer coordinates, zero out of range.
    pub linear: bool,
    /// A layered array: `dims` counts a layer's dimensions, the slices are the layers.
    pub layered: bool,
}

struct SimArray {
    addr: u64,
    desc: ArrayDesc,
}

#[derive(Default)]
struct Table {
    next: u64,
    arrays: HashMap<u64, SimArray>,
    textures: HashMap<u64, (View, TexDesc)>,
    surfaces: HashMap<u64, View>,
}

impl Table {
    fn make(&mut self) -> u64 {
        self.next += 1;
        0x7e_0000 + self.next * 16
    }
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(|| RwLock::new(Table::default()));

/// The texture object `h`: its view and sampling state.
pub(super) fn texture(h: u64) -> Option<(View, TexDesc)> {
    TABLE.read().textures.get(&h).copied()
}

/// The surface object `h`'s view.
pub(super) fn surface(h: u64) -> Option<View> {
    TABLE.read().surfaces.get(&h).copied()
}

/// The dimension count of an array (its layers and cube faces count as a third dimension).
fn array_dims(d: &ArrayDesc) -> u8 {
    if d.height == 0 && d.depth == 0 {
        1
    } else if d.depth == 0 {
        2
    } else {
        3
    }
}

fn array_view(a: &SimArray) -> View {
    let e = a.desc.extent();
    let pitch = a.desc.row_bytes();
    let layered = a.desc.flags & sys::CUDA_ARRAY3D_LAYERED != 0;
    View {
        base: a.addr,
        texel: a.desc.texel,
        extent: e,
        dims: if layered {
            1 + (a.desc.height > 0) as u8
        } else {
            array_dims(&a.desc)
        },
        pitch,
        slice: pitch * e[1],
        linear: false,
        layered,
    }
}

/// A side of a copy as (address, row pitch, rows per slice, and the row bytes, rows and
/// slices it holds: `usize::MAX` where the caller guarantees the extent, host memory's).
fn resolve(t: &Table, s: &CopySide) -> Result<(u64, usize, usize, [usize; 3])> {
    match *s {
        CopySide::Host { ptr, pitch, height } => Ok((ptr as u64, pitch, height, [usize::MAX; 3])),
        CopySide::Device { ptr, pitch, height } => {
            Ok((ptr, pitch, height, [pitch, height, usize::MAX]))
        }
        CopySide::Array(a) => {
            let a = t
                .arrays
                .get(&(a as u64))
                .ok_or_else(|| invalid("cuMemcpy3D_v2"))?;
            let e = a.desc.extent();
            Ok((
                a.addr,
                a.desc.row_bytes(),
                e[1],
                [a.desc.row_bytes(), e[1], e[2]],
            ))
        }
    }
}

impl TextureApi for Simulator {
    fn array_create(&self, desc: &ArrayDesc) -> Result<sys::CUarray> {
        let call = "cuArray3DCreate_v2";
        let cube = desc.flags & sys::CUDA_ARRAY3D_CUBEMAP != 0;
        let layered = desc.flags & sys::CUDA_ARRAY3D_LAYERED != 0;
        if desc.width == 0
            || (desc.height == 0 && desc.depth != 0 && !layered)
            || !matches!(desc.texel.channels, 1 | 2 | 4)
            || (cube && (desc.width != desc.height || desc.depth % 6 != 0 || desc.depth == 0))
        {
            return Err(invalid(call));
        }
        let e = desc.extent();
        let bytes = desc
            .row_bytes()
            .checked_mul(e[1])
            .and_then(|b| b.checked_mul(e[2]));
        let bytes = bytes.ok_or_else(|| invalid(call))?;
        let dev = self.current_device();
        let addr = self.alloc(bytes, Kind::Device, dev, call)?;
        let mut t = TABLE.write();
        let h = t.make();
        t.arrays.insert(h, SimArray { addr, desc: *desc });
        Ok(h as sys::CUarray)
    }

    unsafe fn array_destroy(&self, a: sys::CUarray) -> Result<()> {
        let arr = TABLE.write().arrays.remove(&(a as u64));
        match arr {
            Some(arr) => self.free(arr.addr, Some(Kind::Device), "cuArrayDestroy"),
            None => Err(bad_handle("cuArrayDestroy")),
        }
    }

    unsafe fn memcpy_3d(&self, c: &Copy3d, stream: Option<sys::CUstream>) -> Result<()> {
        let call = "cuMemcpy3D_v2";
        if let Some(s) = stream {
            if self.graphs.lock().capturing.contains_key(&(s as usize)) {
                return Err(Error::usage(
                    "copies to and from CUDA arrays cannot be captured into a graph on the simulator",
                ));
            }
        }
        let t = TABLE.read();
        let (src, sp, sh, sfit) = resolve(&t, &c.src)?;
        let (dst, dp, dh, dfit) = resolve(&t, &c.dst)?;
        let fits =
            |fit: [usize; 3]| c.width_bytes <= fit[0] && c.height <= fit[1] && c.depth <= fit[2];
        if !fits(sfit) || !fits(dfit) || c.width_bytes > sp || c.width_bytes > dp {
            return Err(invalid(call));
        }
        if c.width_bytes == 0 || c.height == 0 || c.depth == 0 {
            return Ok(());
        }
        // Device sides: the whole box must be simulator memory.
        let span = |p: usize, h: usize| (c.depth - 1) * p * h + (c.height - 1) * p + c.width_bytes;
        if let CopySide::Device { .. } = c.src {
            self.check_range(src, span(sp, sh), call)?;
        }
        if let CopySide::Device { .. } = c.dst {
            self.check_range(dst, span(dp, dh), call)?;
        }
        for z in 0..c.depth {
            for y in 0..c.height {
                let s = src + (z * sp * sh + y * sp) as u64;
                let d = dst + (z * dp * dh + y * dp) as u64;
                // SAFETY: device and array rows were checked to be simulator memory; host rows
                // are valid as the caller guarantees; `copy` allows overlap.
                unsafe { std::ptr::copy(s as *const u8, d as *mut u8, c.width_bytes) };
            }
        }
        Ok(())
    }

    unsafe fn tex_object_create(
        &self,
        res: &TexResource,
        desc: &TexDesc,
    ) -> Result<sys::CUtexObject> {
        let call = "cuTexObjectCreate";
        let view = match *res {
            TexResource::Array(a) => {
                let t = TABLE.read();
                array_view(t.arrays.get(&(a as u64)).ok_or_else(|| invalid(call))?)
            }
            TexResource::Linear { ptr, texel, texels } => {
                self.check_range(ptr, texels * texel.bytes(), call)?;
                if desc.filter == FilterMode::Linear || desc.normalized_coords {
                    return Err(invalid(call));
                }
                View {
                    base: ptr,
                    texel,
                    extent: [texels, 1, 1],
                    dims: 1,
                    pitch: texels * texel.bytes(),
                    slice: texels * texel.bytes(),
                    linear: true,
                    layered: false,
                }
            }
            TexResource::Pitch2d {
                ptr,
                texel,
                width,
                height,
                pitch,
            } => {
                if width == 0 || height == 0 || pitch < width * texel.bytes() {
                    return Err(invalid(call));
                }
                self.check_range(ptr, (height - 1) * pitch + width * texel.bytes(), call)?;
                View {
                    base: ptr,
                    texel,
                    extent: [width, height, 1],
                    dims: 2,
                    pitch,
                    slice: pitch * height,
                    linear: false,
                    layered: false,
                }
            }
        };
        if !matches!(view.texel.channels, 1 | 2 | 4) {
            return Err(invalid(call));
        }
        // Wrap and mirror need normalized coordinates; linear filtering float results.
        let wraps = desc
            .address
            .iter()
            .any(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror));
        let float_out = view.texel.kind.is_float() || desc.normalized_float;
        if (wraps && !desc.normalized_coords) || (desc.filter == FilterMode::Linear && !float_out) {
            return Err(invalid(call));
        }
        let mut t = TABLE.write();
        let h = t.make();
        t.textures.insert(h, (view, *desc));
        Ok(h)
    }

    unsafe fn tex_object_destroy(&self, h: sys::CUtexObject) -> Result<()> {
        match TABLE.write().textures.remove(&h) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuTexObjectDestroy")),
        }
    }

    unsafe fn surf_object_create(&self, a: sys::CUarray) -> Result<sys::CUsurfObject> {
        let mut t = TABLE.write();
        let arr = t
            .arrays
            .get(&(a as u64))
            .ok_or_else(|| invalid("cuSurfObjectCreate"))?;
        if arr.desc.flags & sys::CUDA_ARRAY3D_SURFACE_LDST == 0 {
            return Err(invalid("cuSurfObjectCreate"));
        }
        let mut v = array_view(arr);
        // Surfaces address a layered array's layers as its third dimension.
        v.dims = array_dims(&arr.desc);
        v.layered = false;
        let h = t.make();
        t.surfaces.insert(h, v);
        Ok(h)
    }

    unsafe fn surf_object_destroy(&self, h: sys::CUsurfObject) -> Result<()> {
        match TABLE.write().surfaces.remove(&h) {
            Some(_) => Ok(()),
            None => Err(bad_handle("cuSurfObjectDestroy")),
        }
    }
}
