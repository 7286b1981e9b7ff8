//! The element types cudajit exchanges through DLPack, and their `DLDataType`s.

use super::ffi::{DLDataType, DLDataTypeCode};
use crate::memory::DeviceCopy;

mod sealed {
    pub trait Sealed {}
}

/// A cudajit element type with a DLPack data type: the numbers, `bool`, `f16`, `bf16`, the two
/// FP8 formats and the complex numbers. Sealed: the set is closed, as DLPack's is.
///
/// | Rust | DLPack (`code`, `bits`) | torch / CuPy |
/// | --- | --- | --- |
/// | `i8` `i16` `i32` `i64` | `kDLInt`, 8 to 64 | `int8` ... `int64` |
/// | `u8` `u16` `u32` `u64` | `kDLUInt`, 8 to 64 | `uint8` ... `uint64` |
/// | `f16` `f32` `f64` | `kDLFloat`, 16 / 32 / 64 | `float16` `float32` `float64` |
/// | `bf16` | `kDLBfloat`, 16 | `bfloat16` |
/// | `bool` | `kDLBool`, 8 | `bool` |
/// | `F8E4M3` / `F8E5M2` | `kDLFloat8_e4m3fn` / `kDLFloat8_e5m2`, 8 | `float8_e4m3fn` / `float8_e5m2` |
/// | `Complex<f32>` / `Complex<f64>` | `kDLComplex`, 64 / 128 | `complex64` / `complex128` |
///
/// Every type has one lane (DLPack's vector types have no cudajit counterpart).
pub trait DlpackElement: DeviceCopy + sealed::Sealed {
    /// The DLPack data type of this element type.
    const DTYPE: DLDataType;
}

/// A one-lane `DLDataType`.
const fn dt(code: DLDataTypeCode, bits: u8) -> DLDataType {
    DLDataType {
        code: code.0 as u8,
        bits,
        lanes: 1,
    }
}

macro_rules! elements {
    ($($t:ty => $code:ident, $bits:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl DlpackElement for $t {
            const DTYPE: DLDataType = dt(DLDataTypeCode::$code, $bits);
        }
    )*};
}
elements! {
    i8 => kDLInt, 8;
    i16 => kDLInt, 16;
    i32 => kDLInt, 32;
    i64 => kDLInt, 64;
    u8 => kDLUInt, 8;
    u16 => kDLUInt, 16;
    u32 => kDLUInt, 32;
    u64 => kDLUInt, 64;
    half::f16 => kDLFloat, 16;
    f32 => kDLFloat, 32;
    f64 => kDLFloat, 64;
    half::bf16 => kDLBfloat, 16;
    bool => kDLBool, 8;
    crate::ir::F8E4M3 => kDLFloat8_e4m3fn, 8;
    crate::ir::F8E5M2 => kDLFloat8_e5m2, 8;
    num_complex::Complex<f32> => kDLComplex, 64;
    num_complex::Complex<f64> => kDLComplex, 128;
}

/// The usual name of a DLPack data type (`float32`, `int64`, `bfloat16`, `complex64`,
/// `float8_e4m3fn`, ...), with its lanes when more than one; the raw fields for codes without a
/// name here.
pub fn dtype_name(dtype: DLDataType) -> String {
    let code = DLDataTypeCode(u32::from(dtype.code));
    let base = match code {
        DLDataTypeCode::kDLInt => "int",
        DLDataTypeCode::kDLUInt => "uint",
        DLDataTypeCode::kDLFloat => "float",
        DLDataTypeCode::kDLBfloat => "bfloat",
        DLDataTypeCode::kDLComplex => "complex",
        DLDataTypeCode::kDLBool => "bool",
        DLDataTypeCode::kDLOpaqueHandle => "opaque",
        DLDataTypeCode::kDLFloat8_e3m4 => "float8_e3m4",
        DLDataTypeCode::kDLFloat8_e4m3 => "float8_e4m3",
        DLDataTypeCode::kDLFloat8_e4m3b11fnuz => "float8_e4m3b11fnuz",
        DLDataTypeCode::kDLFloat8_e4m3fn => "float8_e4m3fn",
        DLDataTypeCode::kDLFloat8_e4m3fnuz => "float8_e4m3fnuz",
        DLDataTypeCode::kDLFloat8_e5m2 => "float8_e5m2",
        DLDataTypeCode::kDLFloat8_e5m2fnuz => "float8_e5m2fnuz",
        DLDataTypeCode::kDLFloat8_e8m0fnu => "float8_e8m0fnu",
        DLDataTypeCode::kDLFloat6_e2m3fn => "float6_e2m3fn",
        DLDataTypeCode::kDLFloat6_e3m2fn => "float6_e3m2fn",
        DLDataTypeCode::kDLFloat4_e2m1fn => "float4_e2m1fn",
        _ => {
            return format!(
                "(type code {}, {} bits, {} lanes)",
                dtype.code, dtype.bits, dtype.lanes
            )
        }
    };
    // The sized families carry their width in the name; the others have a fixed one.
    let sized = matches!(
        code,
        DLDataTypeCode::kDLInt
            | DLDataTypeCode::kDLUInt
            | DLDataTypeCode::kDLFloat
            | DLDataTypeCode::kDLBfloat
            | DLDataTypeCode::kDLComplex
            | DLDataTypeCode::kDLOpaqueHandle
    );
    let natural = match code {
        DLDataTypeCode::kDLBool => 8,
        DLDataTypeCode::kDLFloat6_e2m3fn | DLDataTypeCode::kDLFloat6_e3m2fn => 6,
        DLDataTypeCode::kDLFloat4_e2m1fn => 4,
        _ => 8,
    };
    let mut name = if sized {
        format!("{base}{}", dtype.bits)
    } else if dtype.bits == natural {
        base.to_string()
    } else {
        format!("{base} ({} bits)", dtype.bits)
    };
    if dtype.lanes != 1 {
        name.push_str(&format!("x{}", dtype.lanes));
    }
    name
}
