//! Each rule of `cuTensorMapEncodeTiled` that [`validate`] checks: a map that breaks it, and
//! the message naming it.

use super::*;

/// A valid map: a 1024 x 512 bf16 matrix (C order), boxes of 64 x 64 swizzled by 128 bytes.
fn ok() -> TensorMapDesc {
    TensorMapDesc {
        elem: ScalarTy::BF16,
        rank: 2,
        global_address: 0x1000,
        global_dims: [512, 1024, 1, 1, 1],
        global_strides: [2, 1024, 0, 0, 0],
        box_dims: [64, 64, 1, 1, 1],
        element_strides: [1, 1, 1, 1, 1],
        interleave: TensorMapInterleave::None,
        swizzle: TensorMapSwizzle::B128,
        l2_promotion: TensorMapL2Promotion::B256,
        oob_fill: TensorMapOobFill::Zero,
    }
}

/// A valid 3-D map with 32-byte interleave.
fn interleaved() -> TensorMapDesc {
    TensorMapDesc {
        elem: ScalarTy::F16,
        rank: 3,
        global_address: 0x2000,
        global_dims: [16, 8, 8, 1, 1],
        global_strides: [2, 32, 256, 0, 0],
        box_dims: [16, 8, 8, 1, 1],
        element_strides: [1, 1, 1, 1, 1],
        interleave: TensorMapInterleave::B32,
        swizzle: TensorMapSwizzle::B32,
        l2_promotion: TensorMapL2Promotion::None,
        oob_fill: TensorMapOobFill::Zero,
    }
}

/// `validate` refuses `d` with a usage error whose message contains every one of `words`.
#[track_caller]
fn refused(d: TensorMapDesc, words: &[&str]) {
    match validate(&d) {
        Err(Error::Usage(msg)) => {
            assert!(msg.starts_with("tensor map: "), "{msg}");
            for w in words {
                assert!(msg.contains(w), "{msg:?} lacks {w:?}");
            }
        }
        other => panic!("expected a usage error for {d:?}, got {other:?}"),
    }
}

#[test]
fn valid_maps_pass() {
    validate(&ok()).unwrap();
    validate(&interleaved()).unwrap();
    let mut d = ok();
    d.global_dims[0] = 1 << 32; // the largest size
    d.global_strides[1] = 1 << 33;
    validate(&d).unwrap();
    let mut d = ok();
    d.swizzle = TensorMapSwizzle::None;
    d.box_dims = [256, 256, 1, 1, 1];
    d.oob_fill = TensorMapOobFill::NanRequestZeroFma;
    validate(&d).unwrap();
}

#[test]
fn element_types() {
    for (ty, code) in [
        (ScalarTy::U8, 0),
        (ScalarTy::U16, 1),
        (ScalarTy::U32, 2),
        (ScalarTy::I32, 3),
        (ScalarTy::U64, 4),
        (ScalarTy::I64, 5),
        (ScalarTy::F16, 6),
        (ScalarTy::F32, 7),
        (ScalarTy::F64, 8),
        (ScalarTy::BF16, 9),
    ] {
        assert_eq!(data_type_code(ty), Some(code), "{ty:?}");
        assert_eq!(elem_from_code(code as u8), Some(ty));
    }
    for ty in [ScalarTy::Bool, ScalarTy::I8, ScalarTy::I16] {
        let mut d = ok();
        d.elem = ty;
        refused(
            d,
            &["does not copy elements of type", ty.name(), "unsigned type"],
        );
    }
}

#[test]
fn rank() {
    for rank in [0, 6] {
        let mut d = ok();
        d.rank = rank;
        refused(d, &[&format!("rank {rank} is outside 1..=5")]);
    }
    let mut d = interleaved();
    d.rank = 2;
    d.global_dims[2] = 1;
    d.global_strides[2] = 0;
    d.box_dims[2] = 1;
    refused(
        d,
        &["interleaved map", "needs rank 3 or more", "the rank is 2"],
    );
}

#[test]
fn address_alignment() {
    let mut d = ok();
    d.global_address = 0x1008;
    refused(d, &["0x1008", "not 16-byte aligned"]);
    let mut d = interleaved();
    d.global_address = 0x2010;
    refused(d, &["0x2010", "not 32-byte aligned", "32-byte interleave"]);
}

#[test]
fn dims() {
    let mut d = ok();
    d.global_dims[1] = 0;
    refused(d, &["dimension 1", "size 0", "1 to 2^32"]);
    let mut d = ok();
    d.global_dims[0] = (1 << 32) + 1;
    refused(d, &["dimension 0", "size 4294967297", "1 to 2^32"]);
}

#[test]
fn strides() {
    let mut d = ok();
    d.global_strides[0] = 4;
    refused(
        d,
        &["innermost dimension's stride is 4 bytes", "element size 2"],
    );
    let mut d = ok();
    d.global_strides[1] = 1000;
    refused(
        d,
        &[
            "dimension 1",
            "1000 bytes",
            "multiples of 16",
            "less than 2^40",
        ],
    );
    let mut d = ok();
    d.global_strides[1] = 1 << 40;
    refused(d, &["1099511627776 bytes", "less than 2^40"]);
    let mut d = interleaved();
    d.global_strides[1] = 48;
    refused(d, &["48 bytes", "multiples of 32", "32-byte interleave"]);
}

#[test]
fn box_dims() {
    for b in [0, 257] {
        let mut d = ok();
        d.box_dims[1] = b;
        refused(
            d,
            &[
                &format!("box has {b} elements along dimension 1"),
                "1 to 256",
            ],
        );
    }
    let mut d = ok();
    d.swizzle = TensorMapSwizzle::None;
    d.box_dims[0] = 12; // 24 bytes
    refused(
        d,
        &[
            "12 elements of 2 bytes = 24 bytes",
            "multiple of 16",
            "multiple of 8",
        ],
    );
    // An interleaved map has no such rule.
    let mut d = interleaved();
    d.box_dims[0] = 12;
    validate(&d).unwrap();
}

#[test]
fn swizzle_span() {
    for (swizzle, span, elems) in [
        (TensorMapSwizzle::B32, 32, 24),
        (TensorMapSwizzle::B64, 64, 40),
        (TensorMapSwizzle::B128, 128, 72),
    ] {
        let mut d = ok();
        d.swizzle = swizzle;
        d.box_dims[0] = elems;
        refused(
            d,
            &[
                &format!("{} bytes", 2 * elems),
                &format!("{span}-byte span of swizzle {swizzle:?}"),
                &format!("at most {} elements", span / 2),
            ],
        );
        let mut d = ok();
        d.swizzle = swizzle;
        d.box_dims[0] = span / 2;
        validate(&d).unwrap();
    }
    let mut d = interleaved();
    d.swizzle = TensorMapSwizzle::B128;
    refused(d, &["32-byte interleave needs swizzle B32", "B128"]);
}

#[test]
fn element_strides() {
    for e in [0, 9] {
        let mut d = ok();
        d.element_strides[1] = e;
        refused(
            d,
            &[
                &format!("element stride along dimension 1 (innermost first) is {e}"),
                "1 to 8",
            ],
        );
    }
}

#[test]
fn oob_fill() {
    let mut d = ok();
    d.elem = ScalarTy::U16;
    d.oob_fill = TensorMapOobFill::NanRequestZeroFma;
    refused(
        d,
        &["NanRequestZeroFma", "floating-point", "not u16", "Zero"],
    );
}

#[test]
fn unused_entries_are_neutral() {
    let mut d = ok();
    d.box_dims[3] = 2;
    refused(d, &["internal", "beyond rank 2"]);
}

#[test]
fn box_bytes() {
    assert_eq!(ok().box_bytes(), 64 * 64 * 2);
    let mut d = ok();
    d.element_strides = [4, 3, 1, 1, 1]; // the innermost step is ignored without interleave
    assert_eq!(d.box_bytes(), 64 * 22 * 2);
    let mut d = interleaved();
    d.element_strides = [2, 1, 3, 1, 1];
    assert_eq!(d.box_bytes(), 8 * 8 * 3 * 2);
}

#[test]
fn driver_codes() {
    assert_eq!(TensorMapSwizzle::B128.code(), 3);
    assert_eq!(TensorMapInterleave::B32.code(), 2);
    assert_eq!(TensorMapL2Promotion::B256.code(), 3);
    assert_eq!(TensorMapOobFill::NanRequestZeroFma.code(), 1);
    assert_eq!(TensorMapSwizzle::from_code(2), Some(TensorMapSwizzle::B64));
    assert_eq!(TensorMapSwizzle::from_code(4), None);
    assert_eq!(std::mem::size_of::<TensorMapBytes>(), 128);
    assert_eq!(std::mem::align_of::<TensorMapBytes>(), 64);
}
