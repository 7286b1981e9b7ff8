//! The simulator's tensor maps: instead of the driver's opaque encoding, the 128 bytes hold a
//! magic tag and every field of the [`TensorMapDesc`], little-endian, so the simulator's TMA
//! copies read the description back with [`decode`].
//!
//! Layout (bytes): 0..8 [`MAGIC`]; 8 the `CUtensorMapDataType` code; 9 rank; 10 interleave;
//! 11 swizzle; 12 L2 promotion; 13 OOB fill (each its driver code); 16..24 the global address;
//! 24..44 the dimensions minus 1 (a `u32` each: they are at most 2^32); 48..88 the byte
//! strides (a `u64` each, entry 0 the element size); 88..93 the box dimensions minus 1 (a byte
//! each: at most 256); 93..98 the element strides (a byte each: at most 8); the rest zero.
//! Every array field is stored for all 5 entries (driver order), so the round trip is exact.

use super::Simulator;
use crate::backend::tensor_map::{
    data_type_code, elem_from_code, validate, TensorMapBytes, TensorMapDesc, TensorMapInterleave,
    TensorMapL2Promotion, TensorMapOobFill, TensorMapSwizzle, MAX_RANK,
};
use crate::error::Result;

/// The first 8 bytes of every map the simulator encodes.
pub(crate) const MAGIC: [u8; 8] = *b"CJSIMTM1";

const DIMS: usize = 24;
const STRIDES: usize = 48;
const BOX: usize = 88;
const ESTRIDES: usize = 93;

impl Simulator {
    /// `cuTensorMapEncodeTiled`: validates as the driver does, then writes the description.
    pub(super) fn sim_tensor_map_encode_tiled(
        &self,
        desc: &TensorMapDesc,
    ) -> Result<TensorMapBytes> {
        validate(desc)?;
        Ok(encode(desc))
    }
}

/// Writes a validated description (fields out of their documented ranges are truncated: call
/// [`validate`] first).
pub(crate) fn encode(desc: &TensorMapDesc) -> TensorMapBytes {
    let mut b = [0u8; 128];
    b[..8].copy_from_slice(&MAGIC);
    b[8] = data_type_code(desc.elem).unwrap_or(0xff) as u8;
    b[9] = desc.rank as u8;
    b[10] = desc.interleave.code() as u8;
    b[11] = desc.swizzle.code() as u8;
    b[12] = desc.l2_promotion.code() as u8;
    b[13] = desc.oob_fill.code() as u8;
    b[16..24].copy_from_slice(&desc.global_address.to_le_bytes());
    for i in 0..MAX_RANK {
        let d = desc.global_dims[i].saturating_sub(1) as u32;
        b[DIMS + 4 * i..DIMS + 4 * i + 4].copy_from_slice(&d.to_le_bytes());
        let s = desc.global_strides[i];
        b[STRIDES + 8 * i..STRIDES + 8 * i + 8].copy_from_slice(&s.to_le_bytes());
        b[BOX + i] = desc.box_dims[i].saturating_sub(1) as u8;
        b[ESTRIDES + i] = desc.element_strides[i] as u8;
    }
    TensorMapBytes(b)
}

/// The description a map encoded by the simulator holds: what a simulated TMA copy calls on
/// the 128 bytes of its tensor-map parameter. `None` for bytes the simulator did not write (a
/// map the driver encoded, zeros, corrupted bytes) or that describe an invalid map.
// Read by the simulator's TMA copies, which come with the builder's Hopper ops.
pub(crate) fn decode(bytes: &TensorMapBytes) -> Option<TensorMapDesc> {
    let b = &bytes.0;
    if b[..8] != MAGIC {
        return None;
    }
    let u32_at = |at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[at..at + 4]);
        u32::from_le_bytes(w)
    };
    let u64_at = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let mut desc = TensorMapDesc {
        elem: elem_from_code(b[8])?,
        rank: u32::from(b[9]),
        global_address: u64_at(16),
        global_dims: [1; MAX_RANK],
        global_strides: [0; MAX_RANK],
        box_dims: [1; MAX_RANK],
        element_strides: [1; MAX_RANK],
        interleave: TensorMapInterleave::from_code(b[10])?,
        swizzle: TensorMapSwizzle::from_code(b[11])?,
        l2_promotion: TensorMapL2Promotion::from_code(b[12])?,
        oob_fill: TensorMapOobFill::from_code(b[13])?,
    };
    for i in 0..MAX_RANK {
        desc.global_dims[i] = u64::from(u32_at(DIMS + 4 * i)) + 1;
        desc.global_strides[i] = u64_at(STRIDES + 8 * i);
        desc.box_dims[i] = u32::from(b[BOX + i]) + 1;
        desc.element_strides[i] = u32::from(b[ESTRIDES + i]);
    }
    validate(&desc).ok()?;
    Some(desc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ScalarTy;

    fn sample() -> TensorMapDesc {
        TensorMapDesc {
            elem: ScalarTy::BF16,
            rank: 3,
            global_address: 0x7f00_1234_5600,
            global_dims: [1 << 32, 60, 7, 1, 1],
            global_strides: [2, 1 << 33, 60 << 33, 0, 0],
            box_dims: [64, 256, 1, 1, 1],
            element_strides: [1, 8, 3, 1, 1],
            interleave: TensorMapInterleave::None,
            swizzle: TensorMapSwizzle::B128,
            l2_promotion: TensorMapL2Promotion::B64,
            oob_fill: TensorMapOobFill::NanRequestZeroFma,
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        let d = sample();
        validate(&d).unwrap();
        let bytes = encode(&d);
        assert_eq!(bytes.0[..8], MAGIC);
        assert_eq!(decode(&bytes), Some(d));

        let mut d5 = sample();
        d5.elem = ScalarTy::U8;
        d5.rank = 5;
        d5.global_dims = [16, 2, 3, 4, 5];
        d5.global_strides = [1, 16, 32, 96, 384];
        d5.box_dims = [16, 1, 2, 3, 4];
        d5.element_strides = [1, 1, 1, 2, 1];
        d5.interleave = TensorMapInterleave::B16;
        d5.swizzle = TensorMapSwizzle::None;
        d5.l2_promotion = TensorMapL2Promotion::None;
        d5.oob_fill = TensorMapOobFill::Zero;
        validate(&d5).unwrap();
        assert_eq!(decode(&encode(&d5)), Some(d5));
    }

    #[test]
    fn decode_refuses_foreign_bytes() {
        assert_eq!(decode(&TensorMapBytes([0; 128])), None);
        let mut bytes = encode(&sample());
        bytes.0[11] = 9; // no such swizzle
        assert_eq!(decode(&bytes), None);
        let mut bytes = encode(&sample());
        bytes.0[BOX] = 100; // inner box 101 bf16 = 202 bytes: not a multiple of 16
        assert_eq!(decode(&bytes), None);
    }

    #[test]
    fn encode_validates_first() {
        let mut d = sample();
        d.box_dims[0] = 100; // 200 bytes > the 128-byte swizzle span
        let e = Simulator::new()
            .sim_tensor_map_encode_tiled(&d)
            .unwrap_err();
        assert!(e.to_string().contains("multiple of 16"), "{e}");
    }
}
