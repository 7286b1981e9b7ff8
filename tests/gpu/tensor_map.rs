//! Tiled tensor maps (`TensorMap`, Hopper's TMA): encoding over arrays and strided views, the
//! rules checked before the driver, and the map as a by-value launch argument. On the
//! simulator the maps are its own encoding; on a GPU the driver's (compute capability 9.0+).

use cudajit::memory::{TensorMap, TensorMapOptions, TensorMapSwizzle};
use cudajit::prelude::*;
use cudajit::{bf16, f16, KernelArgs};
use ndarray::s;

use crate::common::ctx;

/// Whether the device can use tensor maps (always on the simulator).
fn has_tma(ctx: &Context) -> bool {
    cudajit::on_simulator() || ctx.device().compute_capability().unwrap() >= (9, 0)
}

/// The message of a usage error (a refusal before the driver is called).
fn usage<T: std::fmt::Debug>(r: cudajit::Result<T>) -> String {
    match r {
        Err(Error::Usage(m)) => m,
        other => panic!("expected a usage error before the driver, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_map_with_128_byte_swizzle() {
    let ctx = ctx();
    if !has_tma(&ctx) {
        return;
    }
    let a = ctx.zeros::<bf16, _>((256, 192)).unwrap();
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let map = TensorMap::<_, 2>::tiled_with(&a, [64, 64], opts).unwrap();
    assert_eq!(map.shape(), [256, 192]);
    assert_eq!(map.box_shape(), [64, 64]);
    assert_eq!(map.swizzle(), TensorMapSwizzle::B128);
    assert_eq!(map.box_bytes(), 64 * 64 * 2);
    assert_eq!(map.options(), opts);
    assert!(!map.is_writable());
    assert!(format!("{map:?}").contains("box [64, 64]"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_boxes_fail_before_the_driver() {
    let ctx = ctx();
    let a = ctx.zeros::<bf16, _>((256, 256)).unwrap();
    // 128 bf16 = 256 bytes along the inner dimension: more than the 128-byte swizzle span.
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let m = usage(TensorMap::<_, 2>::tiled_with(&a, [64, 128], opts));
    assert!(
        m.contains("256 bytes") && m.contains("128-byte span"),
        "{m}"
    );
    // 100 bf16 = 200 bytes: not a multiple of 16.
    let m = usage(TensorMap::<_, 2>::tiled(&a, [64, 100]));
    assert!(m.contains("multiple of 16"), "{m}");
    // More than 256 elements along a dimension.
    let m = usage(TensorMap::<_, 2>::tiled(&a, [512, 64]));
    assert!(m.contains("1 to 256"), "{m}");
    // The wrong rank.
    let m = usage(TensorMap::<_, 3>::tiled(&a, [1, 64, 64]));
    assert!(
        m.contains("TensorMap<_, 3> over an array of 2 dimensions"),
        "{m}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_maps_over_arrays_and_views() {
    let ctx = ctx();
    if !has_tma(&ctx) {
        return;
    }
    let mut a = ctx.zeros::<f16, _>((1024, 512)).unwrap();
    let map = TensorMap::<_, 2>::tiled(&a, [64, 32]).unwrap();
    assert_eq!(map.shape(), [1024, 512]);
    assert_eq!(map.box_bytes(), 64 * 32 * 2);
    assert_eq!(map.context().device().ordinal(), 0);

    // A block of columns (rows stay 1024 bytes apart), and every other row.
    let cols = a.strided().slice(s![.., 64..192]).unwrap();
    let map = TensorMap::<_, 2>::tiled(&cols, [16, 64]).unwrap();
    assert_eq!(map.shape(), [1024, 128]);
    let rows = a.strided().slice(s![..;2, ..]).unwrap();
    assert_eq!(
        TensorMap::<_, 2>::tiled(&rows, [8, 8]).unwrap().shape(),
        [512, 512]
    );

    // Refused: a step along the inner axis, a misaligned start, a transpose.
    let stepped = a.strided().slice(s![.., ..;2]).unwrap();
    let m = usage(TensorMap::<_, 2>::tiled(&stepped, [8, 8]));
    assert!(
        m.contains("innermost dimension has stride 2 elements"),
        "{m}"
    );
    let shifted = a.strided().slice(s![.., 1..]).unwrap();
    let m = usage(TensorMap::<_, 2>::tiled(&shifted, [8, 8]));
    assert!(m.contains("not 16-byte aligned"), "{m}");
    let m = usage(TensorMap::<_, 2>::tiled(&a.t(), [8, 8]));
    assert!(
        m.contains("innermost dimension has stride 512 elements"),
        "{m}"
    );

    // A writable map borrows the array mutably.
    let map = TensorMap::<_, 2>::tiled_mut(&mut a, [64, 64]).unwrap();
    assert!(map.is_writable());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn maps_are_launch_arguments_by_value() {
    let ctx = ctx();
    if !has_tma(&ctx) {
        return;
    }
    let a = ctx.zeros::<f32, _>((64, 64)).unwrap();
    let map = TensorMap::<_, 2>::tiled(&a, [32, 32]).unwrap();
    (7u32, &map).with_params(|params| {
        assert_eq!(params.len(), 2);
        assert_eq!(
            params[1] as usize % 64,
            0,
            "the map's bytes are 64-byte aligned"
        );
        // SAFETY (test): the pointer is to the 128 bytes of the map kept for the call.
        let bytes = unsafe { std::slice::from_raw_parts(params[1] as *const u8, 128) };
        assert!(bytes.iter().any(|&b| b != 0));
        if cudajit::on_simulator() {
            assert_eq!(&bytes[..8], b"CJSIMTM1");
        }
    });
    (&map,).check_context(&ctx).unwrap();
}
