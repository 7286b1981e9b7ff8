//! Texture fetches and surface loads and stores: a texture or surface object is a 64-bit
//! handle (`CUtexObject`, `CUsurfObject`) received as a `u64` scalar parameter.
//!
//! A fetch returns four channels; the builder records one value per channel it reads, each an
//! [`TexOp`] naming the channel (lowering fetches once per distinct operand list, as the four
//! are one instruction on the GPU; the simulator samples once per value).

use super::ValueId;

/// What a texture fetch computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TexFetch {
    /// `tex.{1d,2d,3d}` at `dims` float coordinates.
    Sample,
    /// `tex.level.2d`: at an explicit level of detail (the last operand; level 0 of a texture
    /// without mipmaps is the texture itself).
    Level,
    /// `tex.{a1d,a2d}`: a layered texture at `dims` float coordinates within the layer given by
    /// the last operand (an `i32`).
    Layered,
    /// `tld4.{r,g,b,a}.2d`: channel `0..4` of the four texels bilinear filtering would read
    /// (in the order (0, 1), (1, 1), (1, 0), (0, 0) of the footprint, as CUDA's `tex2Dgather`).
    Gather(u8),
}

/// A value read from a texture or a surface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TexOp {
    /// Channel `channel` (0 to 3) of a fetch from texture object `tex` at `coords` (`f32`
    /// values: 1, 2 or 3 of them, then the level for [`TexFetch::Level`]). The value's type
    /// is the fetch's: `f32` (float texels, or normalized-float reads), `i32` or `u32`
    /// (element-type reads of signed or unsigned integer texels).
    Fetch {
        tex: ValueId,
        kind: TexFetch,
        dims: u8,
        coords: Vec<ValueId>,
        channel: u8,
    },
    /// An element (the value's type: 1, 2, 4 or 8 bytes) loaded from surface object `surf`
    /// at `coords` (`i32`: x in elements, then y, then z), trapping out of range.
    SurfLoad {
        surf: ValueId,
        dims: u8,
        coords: Vec<ValueId>,
    },
}

/// A surface store: `value` (1, 2, 4 or 8 bytes) to surface object `surf` at `coords` (`i32`:
/// x in elements, then y, then z), trapping out of range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SurfStore {
    pub surf: ValueId,
    pub dims: u8,
    pub coords: Vec<ValueId>,
    pub value: ValueId,
}
