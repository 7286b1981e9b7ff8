//! Tiled tensor maps (Hopper's Tensor Memory Accelerator): the plain description both backends
//! encode ([`TensorMapDesc`]), the 128 bytes a kernel receives ([`TensorMapBytes`]), the
//! options of `cuTensorMapEncodeTiled`, and [`validate`], which checks every rule the driver's
//! documentation states before either backend encodes a map (so the simulator refuses what the
//! driver would, with a message that says which rule and how to fix it).
//!
//! Dimensions are in the driver's order throughout this module: entry 0 is the innermost
//! (contiguous) dimension. The runtime type (`memory::TensorMap`) converts from C order.

use crate::error::{Error, Result};
use crate::ir::ScalarTy;

/// The most dimensions a tensor map can have.
pub(crate) const MAX_RANK: usize = 5;

/// An encoded tensor map: the 128 bytes `cuTensorMapEncodeTiled` writes (a `CUtensorMap`),
/// 64-byte aligned as the driver and the TMA unit require. Kernels receive it by value, as a
/// `.param .align 64 .b8 [128]` parameter; its contents are opaque (the simulator writes its own
/// self-describing encoding instead).
#[repr(C, align(64))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TensorMapBytes(pub [u8; 128]);

impl Default for TensorMapBytes {
    fn default() -> Self {
        TensorMapBytes([0; 128])
    }
}

/// How the TMA unit shuffles 16-byte chunks across shared-memory banks as it writes a box
/// (`CUtensorMapSwizzle`), so that reading the box by columns does not conflict on banks.
/// With a swizzle (and no interleave), the box's inner dimension must span at most the
/// swizzle's bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TensorMapSwizzle {
    /// No swizzle: the box is written in order (`CU_TENSOR_MAP_SWIZZLE_NONE`).
    #[default]
    None,
    /// 16-byte chunks swizzled within a 32-byte span (`CU_TENSOR_MAP_SWIZZLE_32B`).
    B32,
    /// 16-byte chunks swizzled within a 64-byte span (`CU_TENSOR_MAP_SWIZZLE_64B`).
    B64,
    /// 16-byte chunks swizzled within a 128-byte span (`CU_TENSOR_MAP_SWIZZLE_128B`), the
    /// layout `wgmma` reads without bank conflicts.
    B128,
}

impl TensorMapSwizzle {
    /// The span the chunks are swizzled within, in bytes (`None` for no swizzle).
    pub fn span_bytes(self) -> Option<u32> {
        match self {
            TensorMapSwizzle::None => None,
            TensorMapSwizzle::B32 => Some(32),
            TensorMapSwizzle::B64 => Some(64),
            TensorMapSwizzle::B128 => Some(128),
        }
    }
    /// The driver's `CUtensorMapSwizzle` value.
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
    pub(crate) fn from_code(c: u8) -> Option<Self> {
        [Self::None, Self::B32, Self::B64, Self::B128]
            .get(c as usize)
            .copied()
    }
}

/// An interleaved global layout (`CUtensorMapInterleave`), as NC/8HWC8 (`B16`: 8 channels of 2
/// bytes in 16 bytes) or NC/16HWC16 (`B32`). An interleaved map has rank 3 or more.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TensorMapInterleave {
    /// An ordinary layout (`CU_TENSOR_MAP_INTERLEAVE_NONE`).
    #[default]
    None,
    /// 16-byte interleave (`CU_TENSOR_MAP_INTERLEAVE_16B`).
    B16,
    /// 32-byte interleave (`CU_TENSOR_MAP_INTERLEAVE_32B`): the address must be 32-byte aligned,
    /// the strides multiples of 32 bytes, and the swizzle [`TensorMapSwizzle::B32`].
    B32,
}

impl TensorMapInterleave {
    /// The driver's `CUtensorMapInterleave` value.
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
    pub(crate) fn from_code(c: u8) -> Option<Self> {
        [Self::None, Self::B16, Self::B32].get(c as usize).copied()
    }
}

/// The granularity at which L2 requests of the copy are filled from DRAM
/// (`CUtensorMapL2promotion`): a wider promotion fetches whole lines around what a box touches.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TensorMapL2Promotion {
    /// No promotion (`CU_TENSOR_MAP_L2_PROMOTION_NONE`).
    None,
    /// 64-byte requests (`CU_TENSOR_MAP_L2_PROMOTION_L2_64B`).
    B64,
    /// 128-byte requests (`CU_TENSOR_MAP_L2_PROMOTION_L2_128B`).
    B128,
    /// 256-byte requests (`CU_TENSOR_MAP_L2_PROMOTION_L2_256B`): what CUTLASS's TMA copies use,
    /// and cudajit's default.
    #[default]
    B256,
}

impl TensorMapL2Promotion {
    /// The driver's `CUtensorMapL2promotion` value.
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
    pub(crate) fn from_code(c: u8) -> Option<Self> {
        [Self::None, Self::B64, Self::B128, Self::B256]
            .get(c as usize)
            .copied()
    }
}

/// What a copy writes for elements of a box that lie outside the tensor
/// (`CUtensorMapFloatOOBfill`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum TensorMapOobFill {
    /// Zeros (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`).
    #[default]
    Zero,
    /// A special NaN that fused multiply-adds treat as zero
    /// (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`); floating-point elements only.
    NanRequestZeroFma,
}

impl TensorMapOobFill {
    /// The driver's `CUtensorMapFloatOOBfill` value.
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
    pub(crate) fn from_code(c: u8) -> Option<Self> {
        [Self::Zero, Self::NanRequestZeroFma]
            .get(c as usize)
            .copied()
    }
}

/// Everything `cuTensorMapEncodeTiled` takes, in the driver's order (innermost dimension
/// first). Entries at and beyond `rank` are unused and hold the neutral values given per field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TensorMapDesc {
    /// The element type of the array.
    pub elem: ScalarTy,
    /// The number of dimensions, 1 to 5.
    pub rank: u32,
    /// The device address of element (0, .., 0).
    pub global_address: u64,
    /// The tensor's size along each dimension, innermost first; unused entries 1.
    pub global_dims: [u64; MAX_RANK],
    /// The byte stride of each dimension, innermost first: entry 0 is the element size (the
    /// innermost dimension is contiguous), entry `i` the stride of dimension `i` (the driver
    /// takes entries `1..rank`); unused entries 0.
    pub global_strides: [u64; MAX_RANK],
    /// The box (the tile one copy moves) along each dimension, innermost first; unused 1.
    pub box_dims: [u32; MAX_RANK],
    /// The traversal step within the box along each dimension (entry 0 is ignored by the
    /// hardware without interleave); unused 1.
    pub element_strides: [u32; MAX_RANK],
    /// The interleaved layout.
    pub interleave: TensorMapInterleave,
    /// The shared-memory swizzle.
    pub swizzle: TensorMapSwizzle,
    /// The L2 promotion.
    pub l2_promotion: TensorMapL2Promotion,
    /// The out-of-bounds fill.
    pub oob_fill: TensorMapOobFill,
}

impl TensorMapDesc {
    /// The bytes one box copy writes to shared memory: the product over the dimensions of
    /// `ceil(box / element stride)` elements (the innermost element stride counts as 1 without
    /// interleave), times the element size. What a kernel passes to `mbarrier.expect_tx`.
    pub(crate) fn box_bytes(&self) -> u64 {
        let rank = (self.rank as usize).min(MAX_RANK);
        let mut elems = 1u64;
        for i in 0..rank {
            let step = if i == 0 && self.interleave == TensorMapInterleave::None {
                1
            } else {
                self.element_strides[i].max(1)
            };
            elems *= u64::from(self.box_dims[i].div_ceil(step));
        }
        elems * self.elem.size() as u64
    }
}

/// The driver's `CUtensorMapDataType` value for an element type, if the TMA unit copies it.
pub(crate) fn data_type_code(elem: ScalarTy) -> Option<u32> {
    Some(match elem {
        ScalarTy::U8 => 0,
        ScalarTy::U16 => 1,
        ScalarTy::U32 => 2,
        ScalarTy::I32 => 3,
        ScalarTy::U64 => 4,
        ScalarTy::I64 => 5,
        ScalarTy::F16 => 6,
        ScalarTy::F32 => 7,
        ScalarTy::F64 => 8,
        ScalarTy::BF16 => 9,
        // The 8-bit floats are bytes to the TMA unit.
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 0,
        ScalarTy::Bool | ScalarTy::I8 | ScalarTy::I16 => return None,
    })
}

/// The element type of a `CUtensorMapDataType` value (the inverse of [`data_type_code`]).
pub(crate) fn elem_from_code(code: u8) -> Option<ScalarTy> {
    [
        ScalarTy::U8,
        ScalarTy::U16,
        ScalarTy::U32,
        ScalarTy::I32,
        ScalarTy::U64,
        ScalarTy::I64,
        ScalarTy::F16,
        ScalarTy::F32,
        ScalarTy::F64,
        ScalarTy::BF16,
    ]
    .get(code as usize)
    .copied()
}

/// A refused tensor map: the rule, and what to do.
fn refuse(msg: String) -> Error {
    Error::usage(format!("tensor map: {msg}"))
}

/// Checks `desc` against every rule of `cuTensorMapEncodeTiled` (CUDA driver API, "Tensor Map
/// Object Management") for the element types cudajit maps, and that the unused entries hold
/// their neutral values. Each error names the rule, the values, and what to do.
pub(crate) fn validate(desc: &TensorMapDesc) -> Result<()> {
    let elem = desc.elem;
    if data_type_code(elem).is_none() {
        return Err(refuse(format!(
            "the TMA unit does not copy elements of type {}: it copies u8, u16, u32, i32, u64, \
             i64, f16, bf16, f32, f64 and the 8-bit floats; view the memory as the unsigned type of the same size",
            elem.name()
        )));
    }
    let size = elem.size() as u64;
    let rank = desc.rank as usize;
    let interleaved = desc.interleave != TensorMapInterleave::None;
    if !(1..=MAX_RANK).contains(&rank) {
        return Err(refuse(format!(
            "rank {rank} is outside 1..=5 (cuTensorMapEncodeTiled supports at most 5 \
             dimensions); reshape the array to 5 or fewer dimensions"
        )));
    }
    if interleaved && rank < 3 {
        return Err(refuse(format!(
            "an interleaved map ({:?}) needs rank 3 or more, but the rank is {rank}; use \
             TensorMapInterleave::None or add the interleaved layout's dimensions",
            desc.interleave
        )));
    }
    let align = if desc.interleave == TensorMapInterleave::B32 {
        32
    } else {
        16
    };
    if desc.global_address % align != 0 {
        return Err(refuse(format!(
            "the array starts at {:#x}, which is not {align}-byte aligned (the TMA unit needs \
             {align}-byte alignment{}); start the view at an aligned element",
            desc.global_address,
            if align == 32 {
                " with 32-byte interleave"
            } else {
                ""
            }
        )));
    }
    const MAX_DIM: u64 = 1 << 32;
    for (i, &d) in desc.global_dims[..rank].iter().enumerate() {
        if d == 0 || d > MAX_DIM {
            return Err(refuse(format!(
                "dimension {i} (innermost first) has size {d}; each size must be 1 to 2^32 \
                 (an empty array has no tensor map)"
            )));
        }
    }
    if desc.global_strides[0] != size {
        return Err(refuse(format!(
            "the innermost dimension's stride is {} bytes, not the element size {size}: the \
             TMA unit reads the innermost dimension contiguously; copy the view to a \
             contiguous array first",
            desc.global_strides[0]
        )));
    }
    const MAX_STRIDE: u64 = 1 << 40;
    let stride_multiple = if desc.interleave == TensorMapInterleave::B32 {
        32
    } else {
        16
    };
    for (i, &s) in desc.global_strides[..rank].iter().enumerate().skip(1) {
        if s % stride_multiple != 0 || s >= MAX_STRIDE {
            return Err(refuse(format!(
                "the stride of dimension {i} (innermost first) is {s} bytes; strides must be \
                 multiples of {stride_multiple} bytes{} and less than 2^40; pad the rows of \
                 the array (e.g. allocate a wider array and view part of it) so that each \
                 row starts at a multiple of {stride_multiple} bytes",
                if stride_multiple == 32 {
                    " (32-byte interleave)"
                } else {
                    ""
                }
            )));
        }
    }
    for (i, &b) in desc.box_dims[..rank].iter().enumerate() {
        if b == 0 || b > 256 {
            return Err(refuse(format!(
                "the box has {b} elements along dimension {i} (innermost first); each box \
                 dimension must be 1 to 256; copy a larger tile with several boxes"
            )));
        }
    }
    let inner_bytes = u64::from(desc.box_dims[0]) * size;
    if !interleaved && inner_bytes % 16 != 0 {
        return Err(refuse(format!(
            "the box's inner dimension is {} elements of {size} bytes = {inner_bytes} bytes, \
             not a multiple of 16 bytes; make the innermost box dimension a multiple of {}",
            desc.box_dims[0],
            16 / size.min(16)
        )));
    }
    if let (false, Some(span)) = (interleaved, desc.swizzle.span_bytes()) {
        if inner_bytes > u64::from(span) {
            return Err(refuse(format!(
                "the box's inner dimension is {inner_bytes} bytes ({} elements of {size} \
                 bytes), more than the {span}-byte span of swizzle {:?}; use at most {} \
                 elements along the innermost dimension (and more boxes), or a wider swizzle",
                desc.box_dims[0],
                desc.swizzle,
                u64::from(span) / size
            )));
        }
    }
    if desc.interleave == TensorMapInterleave::B32 && desc.swizzle != TensorMapSwizzle::B32 {
        return Err(refuse(format!(
            "32-byte interleave needs swizzle B32, but the swizzle is {:?}; use \
             TensorMapSwizzle::B32",
            desc.swizzle
        )));
    }
    for (i, &e) in desc.element_strides[..rank].iter().enumerate() {
        if e == 0 || e > 8 {
            return Err(refuse(format!(
                "the element stride along dimension {i} (innermost first) is {e}; element \
                 strides must be 1 to 8"
            )));
        }
    }
    if desc.oob_fill == TensorMapOobFill::NanRequestZeroFma && !elem.is_float() {
        return Err(refuse(format!(
            "out-of-bounds fill NanRequestZeroFma is for floating-point elements, not {}; \
             use TensorMapOobFill::Zero",
            elem.name()
        )));
    }
    let unused = rank..MAX_RANK;
    if desc.global_dims[unused.clone()].iter().any(|&d| d != 1)
        || desc.global_strides[unused.clone()].iter().any(|&s| s != 0)
        || desc.box_dims[unused.clone()].iter().any(|&b| b != 1)
        || desc.element_strides[unused].iter().any(|&e| e != 1)
    {
        return Err(refuse(format!(
            "internal: the entries beyond rank {rank} must be neutral (dims 1, strides 0, box \
             1, element strides 1): {desc:?}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
