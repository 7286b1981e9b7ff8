//! What the backend's texture calls take: CUDA arrays (`cuArray3DCreate`), copies to and from
//! them (`cuMemcpy3D`), and the descriptions of texture and surface objects
//! (`cuTexObjectCreate`, `cuSurfObjectCreate`). Plain data, the same for the driver and the
//! simulator.

use cudajit_sys as sys;

/// The type of one channel of a texel: the channel formats textures and surfaces read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// `u8` (`CU_AD_FORMAT_UNSIGNED_INT8`).
    U8,
    /// `u16` (`CU_AD_FORMAT_UNSIGNED_INT16`).
    U16,
    /// `i8` (`CU_AD_FORMAT_SIGNED_INT8`).
    I8,
    /// `i16` (`CU_AD_FORMAT_SIGNED_INT16`).
    I16,
    /// IEEE half precision (`CU_AD_FORMAT_HALF`).
    F16,
    /// `f32` (`CU_AD_FORMAT_FLOAT`).
    F32,
}

impl ChannelKind {
    /// Bytes per channel.
    pub fn size(self) -> usize {
        match self {
            ChannelKind::U8 | ChannelKind::I8 => 1,
            ChannelKind::U16 | ChannelKind::I16 | ChannelKind::F16 => 2,
            ChannelKind::F32 => 4,
        }
    }

    /// Whether the channel is a floating-point number.
    pub fn is_float(self) -> bool {
        matches!(self, ChannelKind::F16 | ChannelKind::F32)
    }

    /// Whether the channel is a signed integer.
    pub fn is_signed_int(self) -> bool {
        matches!(self, ChannelKind::I8 | ChannelKind::I16)
    }

    /// The driver's `CUarray_format`.
    pub(crate) fn driver_format(self) -> sys::CUarray_format {
        match self {
            ChannelKind::U8 => sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
            ChannelKind::U16 => sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
            ChannelKind::I8 => sys::CUarray_format::CU_AD_FORMAT_SIGNED_INT8,
            ChannelKind::I16 => sys::CUarray_format::CU_AD_FORMAT_SIGNED_INT16,
            ChannelKind::F16 => sys::CUarray_format::CU_AD_FORMAT_HALF,
            ChannelKind::F32 => sys::CUarray_format::CU_AD_FORMAT_FLOAT,
        }
    }
}

/// A texel's format: its channel type and channel count (1, 2 or 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TexelLayout {
    /// The type of each channel.
    pub kind: ChannelKind,
    /// Channels per texel: 1, 2 or 4.
    pub channels: u32,
}

impl TexelLayout {
    /// Bytes per texel.
    pub fn bytes(self) -> usize {
        self.kind.size() * self.channels as usize
    }
}

/// A CUDA array's description (`CUDA_ARRAY3D_DESCRIPTOR`): extents in texels (`height` 0 for
/// 1-D, `depth` 0 for 1-D and 2-D; a layered array's `depth` is its layer count), its texel
/// layout and flags (`CUDA_ARRAY3D_LAYERED`, `CUDA_ARRAY3D_SURFACE_LDST`,
/// `CUDA_ARRAY3D_CUBEMAP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ArrayDesc {
    pub width: usize,
    pub height: usize,
    pub depth: usize,
    pub texel: TexelLayout,
    pub flags: u32,
}

impl ArrayDesc {
    /// The extents with 0s read as 1: texels per row, rows, slices.
    pub(crate) fn extent(&self) -> [usize; 3] {
        [self.width, self.height.max(1), self.depth.max(1)]
    }

    /// Bytes of one row.
    pub(crate) fn row_bytes(&self) -> usize {
        self.width * self.texel.bytes()
    }
}

/// One side of a copy ([`Copy3d`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopySide {
    /// Host memory: rows `pitch` bytes apart, slices `pitch * height` bytes apart.
    Host {
        ptr: *mut u8,
        pitch: usize,
        height: usize,
    },
    /// Device memory, laid out as host memory is.
    Device {
        ptr: sys::CUdeviceptr,
        pitch: usize,
        height: usize,
    },
    /// A CUDA array (its own layout).
    Array(sys::CUarray),
}

/// A copy of a box of `width_bytes` × `height` × `depth` between two sides, from the origin of
/// each (`cuMemcpy3D`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Copy3d {
    pub src: CopySide,
    pub dst: CopySide,
    pub width_bytes: usize,
    pub height: usize,
    pub depth: usize,
}

/// What a texture object reads (`CUDA_RESOURCE_DESC`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum TexResource {
    /// A CUDA array.
    Array(sys::CUarray),
    /// Linear device memory of `texels` texels (a 1-D texture read with `tex1Dfetch`-style
    /// integer or float coordinates).
    Linear {
        ptr: sys::CUdeviceptr,
        texel: TexelLayout,
        texels: usize,
    },
    /// Pitched 2-D device memory: `height` rows of `width` texels, `pitch` bytes apart.
    Pitch2d {
        ptr: sys::CUdeviceptr,
        texel: TexelLayout,
        width: usize,
        height: usize,
        pitch: usize,
    },
}

/// How coordinates outside the texture are answered, per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AddressMode {
    /// Repeats the texture (normalized coordinates only).
    Wrap,
    /// The nearest edge texel.
    #[default]
    Clamp,
    /// Repeats the texture mirrored every other time (normalized coordinates only).
    Mirror,
    /// Zero (the border color) outside the texture.
    Border,
}

impl AddressMode {
    pub(crate) fn driver(self) -> sys::CUaddress_mode {
        match self {
            AddressMode::Wrap => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Clamp => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Mirror => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        }
    }
}

/// How a texture fetch combines texels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FilterMode {
    /// The texel holding the coordinate.
    #[default]
    Point,
    /// Linear (bilinear, trilinear) interpolation of the nearest 2, 4 or 8 texels, with 8-bit
    /// fractional weights (needs float results).
    Linear,
}

/// A texture object's sampling state (`CUDA_TEXTURE_DESC`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct TexDesc {
    pub address: [AddressMode; 3],
    pub filter: FilterMode,
    /// Coordinates in [0, 1) across the texture instead of texels.
    pub normalized_coords: bool,
    /// Integer texels read as floats in [0, 1] (unsigned) or [-1, 1] (signed).
    pub normalized_float: bool,
    /// The border color (its channels, as floats).
    pub border: [f32; 4],
}
