//! Texture and surface parameters in the kernel language: [`Texture1d`], [`Texture2d`],
//! [`Texture3d`] (fetches `tex1d`, `tex2d`, `tex3d`, `tex2d_lod`, `tex2d_gather`, and `fetch`
//! with integer coordinates), [`Texture1dLayered`], [`Texture2dLayered`] (`tex1d_layered`,
//! `tex2d_layered`) and [`Surface1d`], [`Surface2d`], [`Surface3d`] (`suld`,
//! `sust`). Each receives a 64-bit object handle (`.param .u64`); the launch argument is a
//! [`&TextureObject`](crate::memory::TextureObject) or
//! [`&SurfaceObject`](crate::memory::SurfaceObject) of the same dimension count.

use std::marker::PhantomData;

use super::builder::{with_state, Kind};
use super::expr::Expr;
use super::scalar::Scalar;
use super::signature::{ArgBuffer, ArgFor, KernelParam};
use crate::error::{Error, Result};
use crate::ir::{Op, Param, ScalarTy, Stmt, SurfStore, TexFetch, TexOp, ValueId};
use crate::memory::{SurfaceObject, TexResult, TextureObject};

/// A kernel parameter: a texture object of `D` dimensions whose fetches return `R` per channel
/// (`f32`, `i32`, `u32`). The build closure receives a [`TexHandle`].
pub struct Texture<R, const D: usize>(PhantomData<fn() -> R>);
/// A 1-D texture parameter (over a 1-D CUDA array, or linear memory read with `fetch`).
pub type Texture1d<R> = Texture<R, 1>;
/// A 2-D texture parameter.
pub type Texture2d<R> = Texture<R, 2>;
/// A 3-D texture parameter.
pub type Texture3d<R> = Texture<R, 3>;

/// A kernel parameter: a layered texture object (over a layered CUDA array) of `D`-dimensional
/// layers (1 or 2) whose fetches return `R` per channel. The build closure receives a
/// [`LayeredTexHandle`].
pub struct TextureLayered<R, const D: usize>(PhantomData<fn() -> R>);
/// A layered 1-D texture parameter.
pub type Texture1dLayered<R> = TextureLayered<R, 1>;
/// A layered 2-D texture parameter.
pub type Texture2dLayered<R> = TextureLayered<R, 2>;

/// A layered texture parameter in a kernel being built: fetches within one layer (`i32`,
/// clamped to the layers there are).
pub struct LayeredTexHandle<R, const D: usize> {
    h: Expr<u64>,
    _r: PhantomData<fn() -> R>,
}

impl<R, const D: usize> Clone for LayeredTexHandle<R, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R, const D: usize> Copy for LayeredTexHandle<R, D> {}

impl<R: TexResult + Scalar, const D: usize> KernelParam for TextureLayered<R, D> {
    type Handle = LayeredTexHandle<R, D>;
    fn declare() -> Self::Handle {
        const { assert!(D >= 1 && D <= 2, "a layered texture has 1-D or 2-D layers") };
        LayeredTexHandle {
            h: declare_handle(),
            _r: PhantomData,
        }
    }
}

impl<R: TexResult + Scalar, const D: usize> ArgFor<TextureLayered<R, D>> for &TextureObject<'_, R> {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        if !self.is_layered() || self.ndim() != D {
            return Err(Error::launch_argument(format!(
                "a layered {D}-D texture parameter was given a {}{}-D texture object",
                if self.is_layered() { "layered " } else { "" },
                self.ndim()
            )));
        }
        buf.push_handle(self.context(), "a kernel's texture argument", self.raw())
    }
}

/// Records a layered fetch: float coordinates, then the layer.
fn layered<R: Scalar>(
    h: Expr<u64>,
    xs: &[Expr<f32>],
    layer: Expr<i32>,
    channels: u8,
) -> Vec<Expr<R>> {
    let mut raws = vec![h.raw()];
    raws.extend(xs.iter().map(|c| c.raw()));
    raws.push(layer.raw());
    let ids: Vec<ValueId> = raws.iter().map(|r| ValueId(r.1)).collect();
    (0..channels)
        .map(|channel| {
            let op = TexOp::Fetch {
                tex: ids[0],
                kind: TexFetch::Layered,
                dims: xs.len() as u8,
                coords: ids[1..].to_vec(),
                channel,
            };
            Expr::record(Op::Texture(op), &raws, true)
        })
        .collect()
}

impl<R: TexResult + Scalar> LayeredTexHandle<R, 1> {
    /// Channel 0 at `x` in layer `layer` (`tex1DLayered`).
    #[track_caller]
    pub fn tex1d_layered(&self, x: Expr<f32>, layer: Expr<i32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        layered(self.h, &[x], layer, 1)[0]
    }

    /// All four channels at `x` in layer `layer`.
    #[track_caller]
    pub fn tex1d_layered4(&self, x: Expr<f32>, layer: Expr<i32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        let v = layered(self.h, &[x], layer, 4);
        [v[0], v[1], v[2], v[3]]
    }
}

impl<R: TexResult + Scalar> LayeredTexHandle<R, 2> {
    /// Channel 0 at (`x`, `y`) in layer `layer` (`tex2DLayered`).
    #[track_caller]
    pub fn tex2d_layered(&self, x: Expr<f32>, y: Expr<f32>, layer: Expr<i32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        layered(self.h, &[x, y], layer, 1)[0]
    }

    /// All four channels at (`x`, `y`) in layer `layer`.
    #[track_caller]
    pub fn tex2d_layered4(&self, x: Expr<f32>, y: Expr<f32>, layer: Expr<i32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        let v = layered(self.h, &[x, y], layer, 4);
        [v[0], v[1], v[2], v[3]]
    }
}

/// A kernel parameter: a surface object of `D` dimensions read and written as elements of `T`
/// (any scalar but `bool`; x coordinates count elements of `T`). The build closure receives a
/// [`SurfHandle`].
pub struct Surface<T, const D: usize>(PhantomData<fn() -> T>);
/// A 1-D surface parameter.
pub type Surface1d<T> = Surface<T, 1>;
/// A 2-D surface parameter.
pub type Surface2d<T> = Surface<T, 2>;
/// A 3-D surface parameter.
pub type Surface3d<T> = Surface<T, 3>;

/// A texture parameter in a kernel being built. Fetches return channel 0 (`tex2d`), or all
/// four (`tex2d4`; channels the texels lack read as unspecified values).
pub struct TexHandle<R, const D: usize> {
    h: Expr<u64>,
    _r: PhantomData<fn() -> R>,
}

/// A surface parameter in a kernel being built.
pub struct SurfHandle<T, const D: usize> {
    h: Expr<u64>,
    _t: PhantomData<fn() -> T>,
}

impl<R, const D: usize> Clone for TexHandle<R, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R, const D: usize> Copy for TexHandle<R, D> {}
impl<T, const D: usize> Clone for SurfHandle<T, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const D: usize> Copy for SurfHandle<T, D> {}

fn declare_handle() -> Expr<u64> {
    let i = with_state(|s| s.add_param(Param::Scalar(ScalarTy::U64))).unwrap_or(0);
    Expr::record(Op::Param(i), &[], false)
}

impl<R: TexResult + Scalar, const D: usize> KernelParam for Texture<R, D> {
    type Handle = TexHandle<R, D>;
    fn declare() -> Self::Handle {
        const { assert!(D >= 1 && D <= 3, "a texture has 1, 2 or 3 dimensions") };
        TexHandle {
            h: declare_handle(),
            _r: PhantomData,
        }
    }
}

impl<T: Scalar, const D: usize> KernelParam for Surface<T, D> {
    type Handle = SurfHandle<T, D>;
    fn declare() -> Self::Handle {
        const { assert!(D >= 1 && D <= 3, "a surface has 1, 2 or 3 dimensions") };
        if T::TY == ScalarTy::Bool {
            with_state(|s| {
                s.error(
                    Kind::ArrayAccess,
                    "a surface's elements are 1, 2, 4 or 8-byte numbers, not bool".to_string(),
                )
            });
        }
        SurfHandle {
            h: declare_handle(),
            _t: PhantomData,
        }
    }
}

impl<R: TexResult + Scalar, const D: usize> ArgFor<Texture<R, D>> for &TextureObject<'_, R> {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        if self.ndim() != D || self.is_layered() {
            return Err(Error::launch_argument(format!(
                "a {D}-D texture parameter was given a {}{}-D texture object",
                if self.is_layered() { "layered " } else { "" },
                self.ndim()
            )));
        }
        buf.push_handle(self.context(), "a kernel's texture argument", self.raw())
    }
}

impl<T: Scalar, const D: usize> ArgFor<Surface<T, D>> for &SurfaceObject<'_> {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        if self.ndim() != D {
            return Err(Error::launch_argument(format!(
                "a {D}-D surface parameter was given a {}-D surface object",
                self.ndim()
            )));
        }
        buf.push_handle(self.context(), "a kernel's surface argument", self.raw())
    }
}

/// Records the four channels of a fetch.
fn fetch4<R: Scalar, C: Scalar>(
    h: Expr<u64>,
    kind: TexFetch,
    dims: u8,
    coords: &[Expr<C>],
) -> [Expr<R>; 4] {
    let _at = crate::codegen::srcloc::at();
    let mut raws = vec![h.raw()];
    raws.extend(coords.iter().map(|c| c.raw()));
    let ids: Vec<ValueId> = raws.iter().map(|r| ValueId(r.1)).collect();
    std::array::from_fn(|channel| {
        let op = TexOp::Fetch {
            tex: ids[0],
            kind,
            dims,
            coords: ids[1..].to_vec(),
            channel: channel as u8,
        };
        Expr::record(Op::Texture(op), &raws, true)
    })
}

/// Records channel 0 of a fetch.
fn fetch1<R: Scalar, C: Scalar>(
    h: Expr<u64>,
    kind: TexFetch,
    dims: u8,
    coords: &[Expr<C>],
) -> Expr<R> {
    let mut raws = vec![h.raw()];
    raws.extend(coords.iter().map(|c| c.raw()));
    let op = TexOp::Fetch {
        tex: ValueId(h.raw().1),
        kind,
        dims,
        coords: coords.iter().map(|c| ValueId(c.raw().1)).collect(),
        channel: 0,
    };
    Expr::record(Op::Texture(op), &raws, true)
}

impl<R: TexResult + Scalar> TexHandle<R, 1> {
    /// Channel 0 at float coordinate `x` (`tex1D`).
    #[track_caller]
    pub fn tex1d(&self, x: Expr<f32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        fetch1(self.h, TexFetch::Sample, 1, &[x])
    }

    /// All four channels at float coordinate `x`.
    #[track_caller]
    pub fn tex1d4(&self, x: Expr<f32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        fetch4(self.h, TexFetch::Sample, 1, &[x])
    }

    /// Channel 0 of texel `i` (`tex1Dfetch`: integer coordinates, the way to read a texture
    /// over linear memory, where out of range reads 0).
    #[track_caller]
    pub fn fetch(&self, i: Expr<i32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        fetch1(self.h, TexFetch::Sample, 1, &[i])
    }

    /// All four channels of texel `i`.
    #[track_caller]
    pub fn fetch4(&self, i: Expr<i32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        fetch4(self.h, TexFetch::Sample, 1, &[i])
    }
}

impl<R: TexResult + Scalar> TexHandle<R, 2> {
    /// Channel 0 at (`x`, `y`) (`tex2D`).
    #[track_caller]
    pub fn tex2d(&self, x: Expr<f32>, y: Expr<f32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        fetch1(self.h, TexFetch::Sample, 2, &[x, y])
    }

    /// All four channels at (`x`, `y`).
    #[track_caller]
    pub fn tex2d4(&self, x: Expr<f32>, y: Expr<f32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        fetch4(self.h, TexFetch::Sample, 2, &[x, y])
    }

    /// Channel 0 at (`x`, `y`) at level of detail `lod` (`tex2DLod`; a texture without
    /// mipmaps has only level 0, which every level reads).
    #[track_caller]
    pub fn tex2d_lod(&self, x: Expr<f32>, y: Expr<f32>, lod: Expr<f32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        fetch1(self.h, TexFetch::Level, 2, &[x, y, lod])
    }

    /// All four channels at (`x`, `y`) at level of detail `lod`.
    #[track_caller]
    pub fn tex2d_lod4(&self, x: Expr<f32>, y: Expr<f32>, lod: Expr<f32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        fetch4(self.h, TexFetch::Level, 2, &[x, y, lod])
    }

    /// Channel `component` (0 to 3) of the four texels bilinear filtering at (`x`, `y`) would
    /// read (`tex2Dgather`), in the order (i, j+1), (i+1, j+1), (i+1, j), (i, j) of the
    /// footprint whose corner (i, j) is the texel at (`x` - 0.5, `y` - 0.5).
    #[track_caller]
    pub fn tex2d_gather(&self, x: Expr<f32>, y: Expr<f32>, component: u8) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        if component > 3 {
            with_state(|s| {
                s.error(
                    Kind::ArrayAccess,
                    format!("tex2d_gather: component {component} is not a channel (0 to 3)"),
                )
            });
        }
        fetch4(self.h, TexFetch::Gather(component.min(3)), 2, &[x, y])
    }
}

impl<R: TexResult + Scalar> TexHandle<R, 3> {
    /// Channel 0 at (`x`, `y`, `z`) (`tex3D`).
    #[track_caller]
    pub fn tex3d(&self, x: Expr<f32>, y: Expr<f32>, z: Expr<f32>) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        fetch1(self.h, TexFetch::Sample, 3, &[x, y, z])
    }

    /// All four channels at (`x`, `y`, `z`).
    #[track_caller]
    pub fn tex3d4(&self, x: Expr<f32>, y: Expr<f32>, z: Expr<f32>) -> [Expr<R>; 4] {
        let _at = crate::codegen::srcloc::at();
        fetch4(self.h, TexFetch::Sample, 3, &[x, y, z])
    }
}

/// Records a surface load.
fn suld<T: Scalar>(h: Expr<u64>, coords: &[Expr<i32>]) -> Expr<T> {
    let mut raws = vec![h.raw()];
    raws.extend(coords.iter().map(|c| c.raw()));
    let op = TexOp::SurfLoad {
        surf: ValueId(h.raw().1),
        dims: coords.len() as u8,
        coords: coords.iter().map(|c| ValueId(c.raw().1)).collect(),
    };
    Expr::record(Op::Texture(op), &raws, true)
}

/// Records a surface store.
fn sust<T: Scalar>(h: Expr<u64>, coords: &[Expr<i32>], v: Expr<T>) {
    let mut raws = vec![h.raw(), v.raw()];
    raws.extend(coords.iter().map(|c| c.raw()));
    with_state(|s| {
        s.check_use(&raws);
        s.push_stmt(Stmt::SurfStore(SurfStore {
            surf: ValueId(h.raw().1),
            dims: coords.len() as u8,
            coords: coords.iter().map(|c| ValueId(c.raw().1)).collect(),
            value: ValueId(v.raw().1),
        }));
    });
}

impl<T: Scalar> SurfHandle<T, 1> {
    /// The element at `x` (`surf1Dread`, x in elements; out of range traps).
    #[track_caller]
    pub fn suld(&self, x: Expr<i32>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        suld(self.h, &[x])
    }

    /// Writes `v` at `x` (`surf1Dwrite`; out of range traps).
    #[track_caller]
    pub fn sust(&self, x: Expr<i32>, v: Expr<T>) {
        let _at = crate::codegen::srcloc::at();
        sust(self.h, &[x], v)
    }
}

impl<T: Scalar> SurfHandle<T, 2> {
    /// The element at (`x`, `y`) (`surf2Dread`, x in elements; out of range traps).
    #[track_caller]
    pub fn suld(&self, x: Expr<i32>, y: Expr<i32>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        suld(self.h, &[x, y])
    }

    /// Writes `v` at (`x`, `y`) (`surf2Dwrite`; out of range traps).
    #[track_caller]
    pub fn sust(&self, x: Expr<i32>, y: Expr<i32>, v: Expr<T>) {
        let _at = crate::codegen::srcloc::at();
        sust(self.h, &[x, y], v)
    }
}

impl<T: Scalar> SurfHandle<T, 3> {
    /// The element at (`x`, `y`, `z`) (`surf3Dread`, x in elements; out of range traps).
    #[track_caller]
    pub fn suld(&self, x: Expr<i32>, y: Expr<i32>, z: Expr<i32>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        suld(self.h, &[x, y, z])
    }

    /// Writes `v` at (`x`, `y`, `z`) (`surf3Dwrite`; out of range traps).
    #[track_caller]
    pub fn sust(&self, x: Expr<i32>, y: Expr<i32>, z: Expr<i32>, v: Expr<T>) {
        let _at = crate::codegen::srcloc::at();
        sust(self.h, &[x, y, z], v)
    }
}
