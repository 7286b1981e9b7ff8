//! C order to the driver's order, and byte strides from arrays' layouts ([`describe`]).

use super::*;
use crate::backend::tensor_map::validate;
use crate::memory::layout::Layout;
use ndarray::{s, Dimension, Ix2};

fn usage(r: Result<TensorMapDesc>) -> String {
    match r {
        Err(Error::Usage(m)) => m,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

#[test]
fn two_d_c_order() {
    // A 1024 x 512 f16 matrix, boxes of 64 rows by 32 columns.
    let d = describe(
        ScalarTy::F16,
        0x10000,
        &[1024, 512],
        &[512, 1],
        [64, 32],
        &TensorMapOptions::default(),
    )
    .unwrap();
    assert_eq!(d.rank, 2);
    assert_eq!(d.global_address, 0x10000);
    assert_eq!(d.global_dims, [512, 1024, 1, 1, 1]);
    assert_eq!(d.global_strides, [2, 1024, 0, 0, 0]);
    assert_eq!(d.box_dims, [32, 64, 1, 1, 1]);
    assert_eq!(d.element_strides, [1; 5]);
    assert_eq!(d.l2_promotion, TensorMapL2Promotion::B256);
    assert_eq!(d.swizzle, TensorMapSwizzle::None);
    assert_eq!(d.box_bytes(), 64 * 32 * 2);
    validate(&d).unwrap();
}

#[test]
fn three_d_c_order_with_options() {
    let opts = TensorMapOptions::default()
        .swizzle(TensorMapSwizzle::B64)
        .element_strides([1, 2, 1])
        .oob_fill(TensorMapOobFill::NanRequestZeroFma)
        .l2_promotion(TensorMapL2Promotion::B128);
    let d = describe(
        ScalarTy::F32,
        0x20000,
        &[4, 6, 8],
        &[48, 8, 1],
        [2, 4, 8],
        &opts,
    )
    .unwrap();
    assert_eq!(d.rank, 3);
    assert_eq!(d.global_dims, [8, 6, 4, 1, 1]);
    assert_eq!(d.global_strides, [4, 32, 192, 0, 0]);
    assert_eq!(d.box_dims, [8, 4, 2, 1, 1]);
    assert_eq!(d.element_strides, [1, 2, 1, 1, 1]);
    assert_eq!(d.swizzle, TensorMapSwizzle::B64);
    assert_eq!(d.oob_fill, TensorMapOobFill::NanRequestZeroFma);
    assert_eq!(d.l2_promotion, TensorMapL2Promotion::B128);
    assert_eq!(d.box_bytes(), 8 * 2 * 2 * 4);
    validate(&d).unwrap();
}

#[test]
fn strided_view() {
    // Rows 0, 2, 4, .. and columns 8..24 of a 10 x 32 f32 array at 0x40000.
    let lay = Layout::c_order(0x40000, Ix2(10, 32))
        .slice_each(&s![..;2, 8..24], 4)
        .unwrap();
    assert_eq!(lay.dim.slice(), &[5, 16]);
    let d = describe(
        ScalarTy::F32,
        lay.ptr,
        lay.dim.slice(),
        &lay.strides_isize(),
        [5, 4],
        &TensorMapOptions::default(),
    )
    .unwrap();
    assert_eq!(d.global_address, 0x40000 + 8 * 4);
    assert_eq!(d.global_dims, [16, 5, 1, 1, 1]);
    assert_eq!(d.global_strides, [4, 2 * 32 * 4, 0, 0, 0]);
    validate(&d).unwrap();

    // A step along the innermost axis is refused, a transpose too.
    let stepped = Layout::c_order(0x40000, Ix2(10, 32))
        .slice_each(&s![.., ..;2], 4)
        .unwrap();
    let m = usage(describe(
        ScalarTy::F32,
        stepped.ptr,
        stepped.dim.slice(),
        &stepped.strides_isize(),
        [4, 4],
        &TensorMapOptions::default(),
    ));
    assert!(
        m.contains("innermost dimension has stride 2 elements") && m.contains("contiguous"),
        "{m}"
    );
    let t = Layout::c_order(0x40000, Ix2(10, 32)).reversed_axes();
    let m = usage(describe(
        ScalarTy::F32,
        t.ptr,
        t.dim.slice(),
        &t.strides_isize(),
        [4, 4],
        &TensorMapOptions::default(),
    ));
    assert!(m.contains("stride 32 elements"), "{m}");
}

#[test]
fn reversed_outer_axis_is_refused() {
    let m = usage(describe(
        ScalarTy::F32,
        0x1000,
        &[4, 8],
        &[-8, 1],
        [4, 4],
        &TensorMapOptions::default(),
    ));
    assert!(m.contains("axis 0 runs backwards"), "{m}");
}

#[test]
fn unit_axes_take_any_stride() {
    // A single row (shape 1 x 8 with an odd row stride), and a unit innermost axis.
    let d = describe(
        ScalarTy::F32,
        0x1000,
        &[1, 8],
        &[3, 1],
        [1, 4],
        &TensorMapOptions::default(),
    )
    .unwrap();
    assert_eq!(d.global_strides, [4, 32, 0, 0, 0]);
    validate(&d).unwrap();
    let d = describe(
        ScalarTy::U8,
        0x1000,
        &[32, 1],
        &[16, 7],
        [16, 1],
        &TensorMapOptions::default(),
    )
    .unwrap();
    assert_eq!(d.global_strides, [1, 16, 0, 0, 0]);
}

#[test]
fn rank_mismatch_and_empty_arrays() {
    let m = usage(describe(
        ScalarTy::F32,
        0x1000,
        &[4, 8, 2],
        &[16, 2, 1],
        [4, 4],
        &TensorMapOptions::default(),
    ));
    assert!(
        m.contains("TensorMap<_, 2> over an array of 3 dimensions")
            && m.contains("TensorMap::<_, 3>"),
        "{m}"
    );
    let m = usage(describe::<6>(
        ScalarTy::F32,
        0x1000,
        &[1; 6],
        &[1; 6],
        [1; 6],
        &TensorMapOptions::default(),
    ));
    assert!(m.contains("1 to 5 dimensions"), "{m}");
    let m = usage(describe(
        ScalarTy::F32,
        0x1000,
        &[0, 8],
        &[8, 1],
        [4, 4],
        &TensorMapOptions::default(),
    ));
    assert!(m.contains("empty"), "{m}");
}

#[test]
fn huge_boxes_are_refused() {
    let m = usage(describe(
        ScalarTy::F64,
        0x1000,
        &[256; 5],
        &[256 * 256 * 256 * 256, 256 * 256 * 256, 256 * 256, 256, 1],
        [256; 5],
        &TensorMapOptions::default(),
    ));
    assert!(m.contains("more than any shared memory"), "{m}");
}

#[test]
fn options_builder() {
    let o = TensorMapOptions::<3>::default();
    assert_eq!(o.swizzle, TensorMapSwizzle::None);
    assert_eq!(o.interleave, TensorMapInterleave::None);
    assert_eq!(o.l2_promotion, TensorMapL2Promotion::B256);
    assert_eq!(o.oob_fill, TensorMapOobFill::Zero);
    assert_eq!(o.element_strides, [1; 3]);
    let o = o.interleave(TensorMapInterleave::B16);
    assert_eq!(o.interleave, TensorMapInterleave::B16);
}

#[test]
fn maps_are_send_and_sync() {
    fn send_sync<X: Send + Sync>() {}
    send_sync::<TensorMap<'static, half::bf16, 2>>();
    assert_eq!(std::mem::align_of::<TensorMap<'static, f32, 1>>(), 64);
}
