//! `printf` formatted on the host (the simulator), with C's rules for the conversions that
//! the build-time check accepts.

use super::{parse, Piece, Spec};
use crate::ir::ScalarTy;

/// Formats one `printf` on the host (the simulator): `args` are each argument's bits and type.
pub(crate) fn format_host(format: &str, args: &[(u64, ScalarTy)]) -> String {
    let Ok(pieces) = parse(format) else {
        return String::new();
    };
    let mut out = String::new();
    let mut next = args.iter();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(&t),
            Piece::Conv(s) => {
                let Some(&(bits, ty)) = next.next() else {
                    break;
                };
                out.push_str(&format_one(&s, bits, ty));
            }
        }
    }
    out
}

/// The value promoted as the varargs call does: a float as f64, an integer as i64/u64 bits.
fn promoted(bits: u64, ty: ScalarTy) -> (f64, u64) {
    if ty.is_float() {
        let x = if ty == ScalarTy::F16 {
            half::f16::from_bits(bits as u16).to_f64()
        } else if ty == ScalarTy::BF16 {
            half::bf16::from_bits(bits as u16).to_f64()
        } else if ty.size() == 4 {
            f32::from_bits(bits as u32) as f64
        } else {
            f64::from_bits(bits)
        };
        return (x, 0);
    }
    let size = ty.size();
    let v = if ty == ScalarTy::Bool {
        bits & 1
    } else if size >= 8 {
        bits
    } else {
        let shift = 64 - 8 * size as u32;
        if ty.is_signed_int() {
            (((bits << shift) as i64) >> shift) as u64
        } else {
            (bits << shift) >> shift
        }
    };
    (0.0, v)
}

fn format_one(s: &Spec, bits: u64, ty: ScalarTy) -> String {
    let (x, v) = promoted(bits, ty);
    let (sign, body, zero_ok): (&str, String, bool) = match s.conv {
        'd' | 'i' => {
            let n = if s.long {
                v as i64
            } else {
                v as u32 as i32 as i64
            };
            let sign = if n < 0 {
                "-"
            } else if s.plus {
                "+"
            } else if s.space {
                " "
            } else {
                ""
            };
            (
                sign,
                int_digits(n.unsigned_abs(), 10, false, s.precision),
                s.precision.is_none(),
            )
        }
        'u' | 'x' | 'X' | 'o' => {
            let n = if s.long { v } else { v as u32 as u64 };
            let (radix, upper) = match s.conv {
                'x' => (16, false),
                'X' => (16, true),
                'o' => (8, false),
                _ => (10, false),
            };
            let mut d = int_digits(n, radix, upper, s.precision);
            let prefix = match s.conv {
                'x' if s.alt && n != 0 => "0x",
                'X' if s.alt && n != 0 => "0X",
                _ => "",
            };
            if s.conv == 'o' && s.alt && !d.starts_with('0') {
                d.insert(0, '0');
            }
            (prefix, d, s.precision.is_none())
        }
        'c' => ("", ((v as u8) as char).to_string(), false),
        _ => {
            let sign = if x.is_sign_negative() {
                "-"
            } else if s.plus {
                "+"
            } else if s.space {
                " "
            } else {
                ""
            };
            let upper = s.conv.is_ascii_uppercase();
            let body = float_body(s, x.abs(), upper);
            (sign, body, x.is_finite())
        }
    };
    let len = sign.chars().count() + body.chars().count();
    let pad = s.width.saturating_sub(len);
    if s.minus {
        format!("{sign}{body}{}", " ".repeat(pad))
    } else if s.zero && zero_ok {
        format!("{sign}{}{body}", "0".repeat(pad))
    } else {
        format!("{}{sign}{body}", " ".repeat(pad))
    }
}

/// An integer's digits with C's precision (the fewest digits; 0 and `.0` give nothing).
fn int_digits(n: u64, radix: u32, upper: bool, precision: Option<usize>) -> String {
    if n == 0 && precision == Some(0) {
        return String::new();
    }
    let mut d = match radix {
        16 if upper => format!("{n:X}"),
        16 => format!("{n:x}"),
        8 => format!("{n:o}"),
        _ => n.to_string(),
    };
    if let Some(p) = precision {
        if d.len() < p {
            d = format!("{}{d}", "0".repeat(p - d.len()));
        }
    }
    d
}

/// `%f`/`%e`/`%g` of a non-negative value (the sign is added by the caller).
fn float_body(s: &Spec, x: f64, upper: bool) -> String {
    let text = if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        "inf".to_string()
    } else {
        let p = s.precision.unwrap_or(6);
        match s.conv.to_ascii_lowercase() {
            'f' => fixed(x, p, s.alt),
            'e' => sci(x, p, s.alt),
            _ => general(x, p, s.alt),
        }
    };
    if upper {
        text.to_ascii_uppercase()
    } else {
        text
    }
}

fn fixed(x: f64, p: usize, alt: bool) -> String {
    let mut t = format!("{x:.p$}");
    if alt && p == 0 {
        t.push('.');
    }
    t
}

/// `d.ddde±XX`.
fn sci(x: f64, p: usize, alt: bool) -> String {
    let t = format!("{x:.p$e}");
    let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mut m = m.to_string();
    if alt && p == 0 {
        m.push('.');
    }
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `%g`: `%e` or `%f` by the exponent, trailing zeros removed unless `#`.
fn general(x: f64, p: usize, alt: bool) -> String {
    let p = p.max(1);
    let exp = if x == 0.0 {
        0
    } else {
        let t = format!("{x:.*e}", p - 1);
        t.split_once('e')
            .and_then(|(_, e)| e.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let (mut t, is_sci) = if (exp as i64) < p as i64 && exp >= -4 {
        (fixed(x, (p as i64 - 1 - exp as i64) as usize, alt), false)
    } else {
        (sci(x, p - 1, alt), true)
    };
    if !alt {
        let (m, rest) = if is_sci {
            let i = t.find('e').unwrap_or(t.len());
            (t[..i].to_string(), t[i..].to_string())
        } else {
            (t.clone(), String::new())
        };
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m
        };
        t = format!("{m}{rest}");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[(u64, ScalarTy)]) -> String {
        format_host(fmt, args)
    }
    fn f64b(x: f64) -> (u64, ScalarTy) {
        (x.to_bits(), ScalarTy::F64)
    }
    fn i32b(x: i32) -> (u64, ScalarTy) {
        (x as u32 as u64, ScalarTy::I32)
    }

    #[test]
    fn integers_as_c() {
        assert_eq!(
            f(
                "%d|%5d|%-5d|%05d",
                &[i32b(-7), i32b(42), i32b(42), i32b(-42)]
            ),
            "-7|   42|42   |-0042"
        );
        assert_eq!(f("%+d % d %.3d", &[i32b(5), i32b(5), i32b(5)]), "+5  5 005");
        assert_eq!(
            f(
                "%u %x %X %#x %o %#o",
                &[
                    (u32::MAX as u64, ScalarTy::U32),
                    (255, ScalarTy::U32),
                    (255, ScalarTy::U32),
                    (255, ScalarTy::U32),
                    (8, ScalarTy::U32),
                    (8, ScalarTy::U32)
                ]
            ),
            "4294967295 ff FF 0xff 10 010"
        );
        assert_eq!(
            f(
                "%ld %lu %llx",
                &[
                    ((-3i64) as u64, ScalarTy::I64),
                    (u64::MAX, ScalarTy::U64),
                    (u64::MAX, ScalarTy::U64)
                ]
            ),
            "-3 18446744073709551615 ffffffffffffffff"
        );
        assert_eq!(
            f("%d %c%%", &[(1, ScalarTy::Bool), (65, ScalarTy::I32)]),
            "1 A%"
        );
        assert_eq!(f("[%.0d]", &[i32b(0)]), "[]");
    }

    #[test]
    fn floats_as_c() {
        assert_eq!(f("%f", &[f64b(1.5)]), "1.500000");
        assert_eq!(
            f(
                "%.2f|%8.3f|%-8.1f|%08.2f",
                &[f64b(3.25159), f64b(-2.5), f64b(2.25), f64b(-1.5)]
            ),
            "3.25|  -2.500|2.2     |-0001.50"
        );
        assert_eq!(
            f("%e|%.2E", &[f64b(12345.678), f64b(0.000123)]),
            "1.234568e+04|1.23E-04"
        );
        assert_eq!(
            f(
                "%g|%g|%g|%g|%g",
                &[
                    f64b(100000.0),
                    f64b(1000000.0),
                    f64b(0.0001),
                    f64b(0.00001),
                    f64b(1.5)
                ]
            ),
            "100000|1e+06|0.0001|1e-05|1.5"
        );
        assert_eq!(
            f("%g|%.3g|%#g", &[f64b(0.0), f64b(3.25159), f64b(1.0)]),
            "0|3.25|1.00000"
        );
        assert_eq!(
            f(
                "%f|%f|%F|%5.1f",
                &[
                    f64b(f64::NAN),
                    f64b(f64::NEG_INFINITY),
                    f64b(f64::INFINITY),
                    f64b(f64::INFINITY)
                ]
            ),
            "nan|-inf|INF|  inf"
        );
        assert_eq!(
            f(
                "%f %f",
                &[(1.25f32.to_bits() as u64, ScalarTy::F32), f64b(-0.0)]
            ),
            "1.250000 -0.000000"
        );
        assert_eq!(f("%e", &[f64b(0.0)]), "0.000000e+00");
        // The 16-bit floats, promoted to f64 as the device's varargs call does.
        assert_eq!(
            f(
                "%g %g",
                &[
                    (half::f16::from_f32(-1.5).to_bits() as u64, ScalarTy::F16),
                    (half::bf16::from_f32(3.0).to_bits() as u64, ScalarTy::BF16)
                ]
            ),
            "-1.5 3"
        );
    }
}
