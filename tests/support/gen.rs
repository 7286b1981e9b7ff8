//! Random values of every scalar type for the tests, rich in the values that casts, rounding and
//! comparisons treat specially: for integers the bounds of every narrower type and just past
//! them, and values whose f16/bf16 rounding ties; for floats NaN, infinities, signed zeros,
//! subnormals, MIN/MAX, fractions, integer bounds as floats, values beside the ties of the
//! 16-bit floats, and raw bit patterns. One generator per type, shared by the cast tests of
//! tests/gpu's `narrow.rs` and `half.rs` (f16/bf16's is in tests/gpu/half.rs, beside the `Half`
//! helpers it uses).

use std::fmt::Debug;

use cudajit::codegen::Scalar;

use super::rng::Rng;

/// A random value of a scalar type, from [`Rng`] (see the module docs for what it favours).
pub trait Gen: Scalar + Debug + Copy {
    fn gen(r: &mut Rng) -> Self;
}

/// Integers every integer generator draws from (as `i64`, wrapped into the type).
const INT_SPECIALS: [i64; 24] = [
    0,
    1,
    -1,
    2,
    127,
    128,
    -128,
    -129,
    255,
    256,
    257,
    2048,
    2049,
    32767,
    32768,
    -32768,
    -32769,
    65519,
    65520,
    65535,
    65536,
    i64::MIN,
    i64::MAX,
    i32::MIN as i64,
];

macro_rules! gen_int {
    ($($t:ty),*) => {$(
        impl Gen for $t {
            fn gen(r: &mut Rng) -> $t {
                let u = r.next_u64();
                match u % 6 {
                    0 | 1 => INT_SPECIALS[(u >> 8) as usize % INT_SPECIALS.len()] as $t,
                    2 => [<$t>::MIN, <$t>::MAX, <$t>::MAX / 2 + 1, u32::MAX as $t]
                        [(u >> 8) as usize % 4],
                    // Values whose bf16/f16 rounding ties or lands next to a tie.
                    3 => (((u >> 8) % 4096) as $t)
                        .wrapping_shl(((u >> 20) % 50) as u32)
                        .wrapping_add(((u >> 40) % 3) as $t),
                    4 => (u >> 8) as i16 as $t,
                    _ => (u >> 3) as $t,
                }
            }
        }
    )*};
}
gen_int!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! gen_float {
    ($($t:ident, $bits:ident, $from:ident);*) => {$(
        impl Gen for $t {
            fn gen(r: &mut Rng) -> $t {
                let u = r.next_u64();
                let specials: [$t; 38] = [
                    $t::NAN, -$t::NAN, $t::INFINITY, $t::NEG_INFINITY, 0.0, -0.0, 0.5, -0.5,
                    -0.9, 0.9, 127.0, 127.5, 127.99, 128.0, -128.0, -128.5, -128.99, -129.0,
                    255.0, 255.5, 256.0, 32767.5, 32768.0, -32768.9, -32769.0, 65535.9,
                    65536.0, 1e10, -1e10, $t::MAX, $t::MIN, $t::MIN_POSITIVE / 4.0,
                    65520.0, 65519.99, 3.4e38 as $t, 1.0 + (2.0 as $t).powi(-11),
                    1.0 + (2.0 as $t).powi(-8), $t::MIN_POSITIVE,
                ];
                match u % 6 {
                    0 | 1 => specials[(u >> 8) as usize % specials.len()],
                    // Just above and below a tie of f16 or bf16, by less than the type keeps
                    // beside it (exactly the tie in f32).
                    2 => {
                        let t = [
                            1.0 + (2.0 as $t).powi(-11),
                            1.0 + (2.0 as $t).powi(-8),
                            3.0 * (2.0 as $t).powi(-134),
                        ][(u >> 8) as usize % 3];
                        t + [-1.0, 0.0, 1.0][(u >> 12) as usize % 3] * t * (2.0 as $t).powi(-40)
                    }
                    3 => $t::from_bits(u.rotate_left(7) as $bits),
                    4 => r.$from() * 100.0,
                    _ => r.$from() * 70000.0,
                }
            }
        }
    )*};
}
gen_float!(f32, u32, f32; f64, u64, f64);

/// Every code of the 8-bit floats alike (NaN, ±0, ±∞ for e5m2, subnormals, ±MAX included).
macro_rules! gen_fp8 {
    ($($t:ty),*) => {$(
        impl Gen for $t {
            fn gen(r: &mut Rng) -> $t {
                <$t>::from_bits(r.next_u64() as u8)
            }
        }
    )*};
}
gen_fp8!(cudajit::F8E4M3, cudajit::F8E5M2);

impl Gen for bool {
    fn gen(r: &mut Rng) -> bool {
        r.next_u64() & 1 == 1
    }
}
