//! The inputs' values: each type's special values (NaNs, infinities, signed zeros,
//! subnormals, MIN/MAX, ...) and random values rich in them, for inputs and literals.

use cudajit::{bf16, f16, F8E4M3, F8E5M2};

use super::rng::Rng;
use super::tree::{Ty, Val};

/// Special values of each type, for inputs and literals.
pub fn special(ty: Ty) -> Vec<Val> {
    let f32s: [f32; 24] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -1.5,
        2.0,
        3.0,
        -7.25,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_0001),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        1e10,
        16777217.0,
        2147483648.0,
    ];
    let f64s: [f64; 24] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -1.5,
        2.0,
        3.0,
        -7.25,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_0001),
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::from_bits(0x8000_0000_0000_0001),
        f32::MAX as f64,
        f64::MAX,
        f64::MIN,
        1e300,
        9007199254740993.0,
        9.223372036854776e18,
    ];
    match ty {
        Ty::Bool => vec![Val::Bool(false), Val::Bool(true)],
        Ty::I32 => [
            0,
            1,
            -1,
            2,
            31,
            32,
            33,
            -32,
            7,
            i32::MIN,
            i32::MAX,
            i32::MIN + 1,
        ]
        .map(Val::I32)
        .to_vec(),
        Ty::U32 => [0, 1, 2, 31, 32, 33, 7, u32::MAX, u32::MAX - 1, 1 << 31]
            .map(Val::U32)
            .to_vec(),
        Ty::I64 => [
            0,
            1,
            -1,
            2,
            63,
            64,
            65,
            -64,
            7,
            i64::MIN,
            i64::MAX,
            i64::MIN + 1,
        ]
        .map(Val::I64)
        .to_vec(),
        Ty::U64 => [0, 1, 2, 63, 64, 65, 7, u64::MAX, u64::MAX - 1, 1 << 63]
            .map(Val::U64)
            .to_vec(),
        Ty::F32 => f32s.map(Val::F32).to_vec(),
        Ty::F64 => f64s.map(Val::F64).to_vec(),
        Ty::I8 => [0, 1, -1, 2, 7, 8, 9, -8, i8::MIN, i8::MAX, i8::MIN + 1]
            .map(Val::I8)
            .to_vec(),
        Ty::U8 => [0, 1, 2, 7, 8, 9, u8::MAX, u8::MAX - 1, 1 << 7]
            .map(Val::U8)
            .to_vec(),
        Ty::I16 => [
            0,
            1,
            -1,
            2,
            15,
            16,
            17,
            -16,
            i16::MIN,
            i16::MAX,
            i16::MIN + 1,
        ]
        .map(Val::I16)
        .to_vec(),
        Ty::U16 => [0, 1, 2, 15, 16, 17, u16::MAX, u16::MAX - 1, 1 << 15]
            .map(Val::U16)
            .to_vec(),
        // Bits: ±0, ±1, 0.5, -1.5, 2, 3, ±inf, NaNs (quiet, negative, payload, signaling),
        // smallest normal and subnormal (both signs), largest subnormal, MAX, MIN, 2049 (f16:
        // between two representable values once rounded) and the largest values below a
        // power of two.
        Ty::F16 => [
            0x0000, 0x8000, 0x3c00, 0xbc00, 0x3800, 0xbe00, 0x4000, 0x4200, 0x7c00, 0xfc00, 0x7e00,
            0xfe00, 0x7e01, 0x7d00, 0x0400, 0x8400, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x6800,
            0x3bff, 0x5640,
        ]
        .map(|b| Val::F16(f16::from_bits(b)))
        .to_vec(),
        Ty::BF16 => [
            0x0000, 0x8000, 0x3f80, 0xbf80, 0x3f00, 0xbfc0, 0x4000, 0x4040, 0x7f80, 0xff80, 0x7fc0,
            0xffc0, 0x7fc1, 0x7fa0, 0x0080, 0x8080, 0x0001, 0x8001, 0x007f, 0x7f7f, 0xff7f, 0x4b80,
            0x3f7f, 0x4f00,
        ]
        .map(|b| Val::BF16(bf16::from_bits(b)))
        .to_vec(),
        // ±0, ±1, 0.5, -1.5, NaN (both signs), MAX, MIN, smallest subnormal and normal, 3.
        Ty::E4M3 => [
            0x00, 0x80, 0x38, 0xb8, 0x30, 0xbc, 0x7f, 0xff, 0x7e, 0xfe, 0x01, 0x81, 0x08, 0x44,
        ]
        .map(|b| Val::E4M3(F8E4M3::from_bits(b)))
        .to_vec(),
        // As E4M3's, and ±inf.
        Ty::E5M2 => [
            0x00, 0x80, 0x3c, 0xbc, 0x38, 0xbe, 0x7f, 0xfe, 0x7b, 0xfb, 0x01, 0x81, 0x04, 0x42,
            0x7c, 0xfc,
        ]
        .map(|b| Val::E5M2(F8E5M2::from_bits(b)))
        .to_vec(),
    }
}

/// A random value of `ty`: half special values, half random (floats: random bits or a
/// random moderate number).
pub fn random_val(rng: &mut Rng, ty: Ty) -> Val {
    if rng.below(2) == 0 {
        let s = special(ty);
        return s[rng.below(s.len() as u64) as usize];
    }
    let b = rng.next_u64();
    match ty {
        Ty::F32 if rng.below(2) == 0 => Val::F32(((b % 2001) as f32 - 1000.0) / 8.0),
        Ty::F64 if rng.below(2) == 0 => Val::F64(((b % 2001) as f64 - 1000.0) / 8.0),
        Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 if rng.below(2) == 0 => {
            Val::from_bits(ty, (b % 80).wrapping_sub(16))
        }
        // The whole language's types (never drawn in the core's streams).
        Ty::F16 if rng.below(2) == 0 => Val::F16(f16::from_f32(((b % 2001) as f32 - 1000.0) / 8.0)),
        Ty::BF16 if rng.below(2) == 0 => {
            Val::BF16(bf16::from_f32(((b % 2001) as f32 - 1000.0) / 8.0))
        }
        Ty::E4M3 | Ty::E5M2 if rng.below(2) == 0 => {
            let x = ((b % 161) as f64 - 80.0) / 4.0;
            if ty == Ty::E4M3 {
                Val::E4M3(F8E4M3::from_f64(x))
            } else {
                Val::E5M2(F8E5M2::from_f64(x))
            }
        }
        Ty::I8 | Ty::U8 | Ty::I16 | Ty::U16 if rng.below(2) == 0 => {
            Val::from_bits(ty, (b % 40).wrapping_sub(8))
        }
        _ => Val::from_bits(ty, b),
    }
}
