//! Cumulative sums of `f16` and `bf16` arrays, accumulated in f32: the input is widened to an
//! f32 array (exact), scanned with the f32 scan, and each result rounded once to the half
//! type, so a long run of small values does not stall where the half type's spacing exceeds
//! them (an f16 running sum of ones would stop at 2048).

use std::sync::OnceLock;

use ndarray::Dimension;

use super::array_ops::ArrayOps;
use super::elementwise::{Elem, Elementwise};
use super::scan::{ScanKernels, ScanKind, ScanScalar};
use crate::codegen::Expr;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// `wide` rounded once into `out` (of `wide`'s element count and shape).
fn narrow_into<H: ScanScalar, X: DeviceSlice<f32>, O: DeviceSliceMut<H> + ?Sized>(
    stream: &Stream,
    wide: &X,
    out: &mut O,
) -> Result<()> {
    let name = format!("cast_f32_to_{}", H::TY.name());
    let k = Elementwise::<(Elem<f32>,), Expr<H>>::new(&name, |(x,)| x.cast::<H>())?;
    k.apply(stream, (wide,), out)
}

fn check_len(
    op: &'static str,
    expected: &[usize],
    actual: &[usize],
    same_shape: bool,
) -> Result<()> {
    let ok = if same_shape {
        expected == actual
    } else {
        expected.iter().product::<usize>() == actual.iter().product::<usize>()
    };
    if ok {
        Ok(())
    } else {
        Err(Error::Shape {
            op,
            expected: expected.to_vec(),
            actual: actual.to_vec(),
        })
    }
}

macro_rules! half_scan {
    ($($t:ty: $zero:expr),*) => {$(
        impl ScanScalar for $t {
            const ZERO: $t = $zero;
            fn scans() -> &'static ScanKernels<$t> {
                static K: ScanKernels<$t> = ScanKernels { sum: OnceLock::new() };
                &K
            }
            fn sum_scan<X: DeviceSlice<$t>>(
                stream: &Stream,
                x: &X,
                kind: ScanKind,
            ) -> Result<DeviceArray<$t>> {
                let wide = x.cast::<f32>(stream)?;
                let sums = f32::sum_scan(stream, &wide, kind)?;
                sums.cast::<$t>(stream)
            }
            fn sum_scan_into<X: DeviceSlice<$t>, O: DeviceSliceMut<$t> + ?Sized>(
                stream: &Stream,
                x: &X,
                kind: ScanKind,
                out: &mut O,
            ) -> Result<()> {
                check_len(
                    "scan_into (an output of as many elements as the input)",
                    &[x.len()],
                    out.shape(),
                    false,
                )?;
                let shape = out.shape().to_vec();
                let sums = f32::sum_scan(stream, &x.cast::<f32>(stream)?, kind)?;
                narrow_into(stream, &sums.reshape(shape)?, out)
            }
            fn sum_scan_axis<D: Dimension, X: DeviceSlice<$t, Dim = D>>(
                stream: &Stream,
                x: &X,
                axis: usize,
                kind: ScanKind,
            ) -> Result<DeviceArray<$t, D>> {
                let wide = x.cast::<f32>(stream)?;
                let sums = f32::sum_scan_axis(stream, &wide, axis, kind)?;
                sums.cast::<$t>(stream)
            }
            fn sum_scan_axis_into<X: DeviceSlice<$t>, O: DeviceSliceMut<$t> + ?Sized>(
                stream: &Stream,
                x: &X,
                axis: usize,
                kind: ScanKind,
                out: &mut O,
            ) -> Result<()> {
                check_len(
                    "scan_axis_into (an output of the input's shape)",
                    x.shape(),
                    out.shape(),
                    true,
                )?;
                let wide = x.cast::<f32>(stream)?;
                let sums = f32::sum_scan_axis(stream, &wide, axis, kind)?;
                narrow_into(stream, &sums, out)
            }
        }
    )*};
}
half_scan!(half::f16: half::f16::NEG_ZERO, half::bf16: half::bf16::NEG_ZERO);
