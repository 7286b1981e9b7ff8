//! The 8-bit floats of Hopper's tensor cores (`wgmma` with `.e4m3` / `.e5m2` operands, and
//! `torch.float8_e4m3fn` / `torch.float8_e5m2`): host-side storage types with exact
//! conversions.
//!
//! - [`F8E4M3`]: 1 sign, 4 exponent (bias 7) and 3 mantissa bits; no infinities, one NaN
//!   pattern per sign (`S.1111.111`); largest finite ±448, smallest subnormal 2⁻⁹ (the OCP
//!   "E4M3" format, torch's `float8_e4m3fn`).
//! - [`F8E5M2`]: 1 sign, 5 exponent (bias 15) and 2 mantissa bits; IEEE-like, with infinities
//!   and NaNs; largest finite ±57344, smallest subnormal 2⁻¹⁶ (torch's `float8_e5m2`).
//!
//! `from_f32` rounds to nearest, ties to even, and saturates: a finite value beyond the
//! largest finite one, and an infinity, become the largest finite value of its sign (as PTX's
//! `cvt.rn.satfinite`); NaN stays NaN. `to_f32` is exact.

/// The parameters of one 8-bit format.
struct Format {
    /// Mantissa bits.
    mant: u32,
    /// Exponent bias.
    bias: i32,
    /// The largest finite magnitude's bits (sign clear).
    max_bits: u8,
    /// The NaN produced for a NaN input (sign clear).
    nan_bits: u8,
    /// Whether an all-ones exponent is infinity/NaN (E5M2) rather than ordinary numbers with
    /// one NaN mantissa (E4M3).
    ieee_specials: bool,
}

const E4M3: Format = Format {
    mant: 3,
    bias: 7,
    max_bits: 0x7e,
    nan_bits: 0x7f,
    ieee_specials: false,
};

const E5M2: Format = Format {
    mant: 2,
    bias: 15,
    max_bits: 0x7b,
    nan_bits: 0x7e,
    ieee_specials: true,
};

impl Format {
    /// The exponent field's all-ones value.
    fn exp_ones(&self) -> u32 {
        (1 << (7 - self.mant)) - 1
    }

    /// Whether `bits` is a NaN.
    fn is_nan(&self, bits: u8) -> bool {
        let m = bits & 0x7f;
        if self.ieee_specials {
            (m >> self.mant) as u32 == self.exp_ones() && m & ((1 << self.mant) - 1) != 0
        } else {
            m == 0x7f
        }
    }

    /// The value of `bits`, exactly.
    fn decode(&self, bits: u8) -> f32 {
        let sign = if bits & 0x80 != 0 { -1.0f32 } else { 1.0 };
        let m = (bits & 0x7f) as u32;
        let (e, f) = (m >> self.mant, m & ((1 << self.mant) - 1));
        if self.is_nan(bits) {
            return f32::NAN.copysign(sign);
        }
        if self.ieee_specials && e == self.exp_ones() {
            return f32::INFINITY * sign;
        }
        let mag = if e == 0 {
            f as f32 * (2.0f32).powi(1 - self.bias - self.mant as i32)
        } else {
            (f + (1 << self.mant)) as f32 * (2.0f32).powi(e as i32 - self.bias - self.mant as i32)
        };
        sign * mag
    }

    /// `x` rounded to nearest (ties to even), saturating; NaN to NaN.
    fn encode(&self, x: f64) -> u8 {
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        if x.is_nan() {
            return sign | self.nan_bits;
        }
        let a = x.abs();
        let max = self.decode(self.max_bits) as f64;
        if a >= max {
            // Saturate; values between max and the next (unrepresentable) step round to max
            // anyway, and satfinite sends everything beyond there too.
            return sign | self.max_bits;
        }
        if a == 0.0 {
            return sign;
        }
        // The quantum at a's binade (never below the subnormals'): a / q is exact.
        let emin = 1 - self.bias;
        let e = binade(a).max(emin);
        let q = 2f64.powi(e - self.mant as i32);
        let r = (a / q).round_ties_even() * q;
        if r >= max {
            return sign | self.max_bits;
        }
        // Encode r (exact in the format): its binade may be one above a's after rounding.
        let er = binade(r);
        let bits = if er < emin {
            // Subnormal: exponent field 0.
            (r / 2f64.powi(emin - self.mant as i32)) as u32
        } else {
            let f = (r / 2f64.powi(er - self.mant as i32)) as u32 - (1 << self.mant);
            (((er + self.bias) as u32) << self.mant) | f
        };
        sign | bits as u8
    }
}

/// `floor(log2(v))` of a positive normal f64, exactly (its exponent field).
fn binade(v: f64) -> i32 {
    ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

macro_rules! fp8 {
    ($name:ident, $fmt:ident, $doc:literal) => {
        #[doc = $doc]
        ///
        /// A storage type: its bits as they lie in memory ([`to_bits`](Self::to_bits)); device
        /// arrays of it carry fp8 tensors (e.g. to and from torch), and the tensor cores read
        /// it. `==` compares bits.
        #[repr(transparent)]
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name(u8);

        impl $name {
            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }

            /// Its bits.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// `x` rounded to nearest, ties to even; beyond the largest finite value (and
            /// ±∞), the largest finite value of its sign; NaN to NaN (see the module docs).
            pub fn from_f32(x: f32) -> Self {
                Self($fmt.encode(x as f64))
            }

            /// `x` rounded once to nearest, ties to even, saturating as
            /// [`from_f32`](Self::from_f32) (no double rounding through f32).
            pub fn from_f64(x: f64) -> Self {
                Self($fmt.encode(x))
            }

            /// Its value, exactly.
            pub fn to_f32(self) -> f32 {
                $fmt.decode(self.0)
            }

            /// Whether it is a NaN.
            pub fn is_nan(self) -> bool {
                $fmt.is_nan(self.0)
            }

            /// The largest finite value.
            pub const MAX: Self = Self($fmt.max_bits);
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "{}({:#04x} = {:?})",
                    stringify!($name),
                    self.0,
                    self.to_f32()
                )
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        impl From<$name> for f32 {
            fn from(x: $name) -> f32 {
                x.to_f32()
            }
        }
    };
}

fp8!(
    F8E4M3,
    E4M3,
    "An 8-bit float with 4 exponent and 3 mantissa bits (torch's `float8_e4m3fn`): ±448 at \
     most, no infinities."
);
fp8!(
    F8E5M2,
    E5M2,
    "An 8-bit float with 5 exponent and 2 mantissa bits (torch's `float8_e5m2`): ±57344 at \
     most, with infinities."
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest code to `x` by scanning every finite code (ties to the even code), with
    /// saturation: the model `from_f32` is checked against.
    fn nearest(x: f32, decode: impl Fn(u8) -> f32, max: f32) -> f32 {
        if x.abs() >= max {
            return max.copysign(x);
        }
        let mut best: Option<(f64, u8)> = None;
        for c in 0u8..=0x7f {
            let v = decode(c);
            if !v.is_finite() {
                continue;
            }
            let d = (v as f64 - x.abs() as f64).abs();
            best = match best {
                Some((bd, bc)) if bd < d || (bd == d && bc % 2 == 0) => Some((bd, bc)),
                _ => Some((d, c)),
            };
        }
        decode(best.unwrap().1).copysign(x)
    }

    #[test]
    fn e4m3_values() {
        let v = |b: u8| F8E4M3::from_bits(b).to_f32();
        assert_eq!(v(0x38), 1.0);
        assert_eq!(v(0x7e), 448.0);
        assert_eq!(v(0xfe), -448.0);
        assert_eq!(v(0x01), 2f32.powi(-9));
        assert_eq!(v(0x08), 2f32.powi(-6));
        assert_eq!(v(0x07), 7.0 * 2f32.powi(-9));
        assert!(v(0x7f).is_nan() && v(0xff).is_nan());
        assert_eq!(v(0x80).to_bits(), (-0.0f32).to_bits());
        assert_eq!(F8E4M3::MAX.to_f32(), 448.0);
        // 255 values besides the two NaNs, strictly increasing over the positive codes.
        for c in 1u8..0x7f {
            assert!(v(c) > v(c - 1), "{c:#x}");
        }
    }

    #[test]
    fn e5m2_values() {
        let v = |b: u8| F8E5M2::from_bits(b).to_f32();
        assert_eq!(v(0x3c), 1.0);
        assert_eq!(v(0x7b), 57344.0);
        assert_eq!(v(0x7c), f32::INFINITY);
        assert_eq!(v(0xfc), f32::NEG_INFINITY);
        assert!(v(0x7d).is_nan() && v(0x7e).is_nan() && v(0x7f).is_nan());
        assert_eq!(v(0x01), 2f32.powi(-16));
        assert_eq!(v(0x04), 2f32.powi(-14));
        for c in 1u8..0x7c {
            assert!(v(c) > v(c - 1), "{c:#x}");
        }
    }

    #[test]
    fn every_code_round_trips() {
        for b in 0u8..=255 {
            let x = F8E4M3::from_bits(b);
            if !x.is_nan() {
                assert_eq!(F8E4M3::from_f32(x.to_f32()), x, "{x:?}");
            }
            let y = F8E5M2::from_bits(b);
            if !y.is_nan() && y.to_f32().is_finite() {
                assert_eq!(F8E5M2::from_f32(y.to_f32()), y, "{y:?}");
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even_and_saturating() {
        // Midpoints round to the even code; just off them, to the nearer one.
        let (one, next) = (1.0f32, 1.125f32);
        assert_eq!(F8E4M3::from_f32(1.0625).to_f32(), one);
        assert_eq!(
            F8E4M3::from_f32(f32::from_bits(1.0625f32.to_bits() + 1)).to_f32(),
            next
        );
        assert_eq!(F8E4M3::from_f32(1.1875).to_f32(), 1.25);
        assert_eq!(F8E4M3::from_f32(464.0).to_f32(), 448.0);
        assert_eq!(F8E4M3::from_f32(1e30).to_f32(), 448.0);
        assert_eq!(F8E4M3::from_f32(f32::NEG_INFINITY).to_f32(), -448.0);
        assert!(F8E4M3::from_f32(f32::NAN).is_nan());
        assert_eq!(F8E5M2::from_f32(f32::INFINITY).to_f32(), 57344.0);
        assert!(F8E5M2::from_f32(-f32::NAN).is_nan());
        // Below half the smallest subnormal: ±0, sign kept; at half it, the even code 0.
        assert_eq!(F8E4M3::from_f32(2f32.powi(-10)).to_bits(), 0);
        assert_eq!(F8E4M3::from_f32(-2f32.powi(-11)).to_bits(), 0x80);
        assert_eq!(F8E4M3::from_f32(3.0 * 2f32.powi(-11)).to_bits(), 0x01);
    }

    /// `from_f64` rounds once: just above a midpoint by less than f32 can hold, it rounds up
    /// where the f32 would round to the midpoint and then to even.
    #[test]
    fn from_f64_rounds_once() {
        let x = 1.0 + 2f64.powi(-4) + 2f64.powi(-30);
        assert_eq!(F8E4M3::from_f64(x).to_f32(), 1.125);
        assert_eq!(F8E4M3::from_f32(x as f32).to_f32(), 1.0);
        let y = -(1.0 + 2f64.powi(-3) + 2f64.powi(-40));
        assert_eq!(F8E5M2::from_f64(y).to_f32(), -1.25);
        assert_eq!(F8E5M2::from_f64(1e300).to_f32(), 57344.0);
        assert_eq!(F8E4M3::from_f64(-f64::MIN_POSITIVE).to_bits(), 0x80);
        assert!(F8E4M3::from_f64(f64::NAN).is_nan());
    }

    /// `from_f32` against the scan over every code, on f32s spread over every binade the
    /// formats cover (and past them), with special values.
    #[test]
    fn from_f32_matches_the_nearest_code() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut xs: Vec<f32> = vec![0.0, -0.0, 448.0, 449.0, 480.0, 57344.0, 61440.0, 1e-30];
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let mant = (s >> 41) as u32 & 0x7f_ffff;
            let exp = 127 - 20 + (s % 40) as u32; // 2^-20 .. 2^19
            let sign = ((s >> 63) as u32) << 31;
            xs.push(f32::from_bits(sign | exp << 23 | mant));
        }
        for &x in &xs {
            let want = nearest(x, |b| F8E4M3::from_bits(b).to_f32(), 448.0);
            let got = F8E4M3::from_f32(x).to_f32();
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "e4m3 {x:e}: {got} want {want}"
            );
            let want = nearest(x, |b| F8E5M2::from_bits(b).to_f32(), 57344.0);
            let got = F8E5M2::from_f32(x).to_f32();
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "e5m2 {x:e}: {got} want {want}"
            );
        }
    }
}
