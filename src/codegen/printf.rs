//! `printf` from kernels (numba's `print`): a C format string checked against the arguments'
//! types when the kernel is built, lowered to the driver's `vprintf` (the arguments packed in a
//! local buffer with C's varargs promotions), and formatted on the host by the simulator with
//! the same rules.
//!
//! Supported conversions: `%d %i` (signed), `%u %x %X %o` (unsigned), `%c`, with `l` or `ll`
//! for 64-bit integers; `%f %F %e %E %g %G` (f32 or f64, `l` allowed); `%%`. Flags `- + space #
//! 0`, a width and a precision as digits. Not supported: `%s` (put literal text in the format
//! itself), `%p`, `%a`, `%n`, `*` widths, `h`/`hh`/`z`/`j`/`t`/`L` lengths.

use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;
use inkwell::AddressSpace;

use super::builder::with_state;
use super::control::KernelBuilder;
use super::expr::Expr;
use super::ir::{Stmt, ValueId};
use super::lower::Lowerer;
use super::scalar::{Scalar, ScalarTy};
use crate::error::{Error, Result};

/// One argument of [`KernelBuilder::printf`]: any scalar expression (`x.into()`).
#[derive(Debug, Clone, Copy)]
pub struct PrintfArg {
    tag: u32,
    id: u32,
    ty: ScalarTy,
}

impl<T: Scalar> From<Expr<T>> for PrintfArg {
    fn from(e: Expr<T>) -> Self {
        PrintfArg {
            tag: e.tag,
            id: e.id,
            ty: T::TY,
        }
    }
}

/// A recorded `printf`: the format (already checked) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PrintfStmt {
    pub format: String,
    pub args: Vec<ValueId>,
}

/// One conversion of a format string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spec {
    pub minus: bool,
    pub plus: bool,
    pub space: bool,
    pub alt: bool,
    pub zero: bool,
    pub width: usize,
    pub precision: Option<usize>,
    /// `l` or `ll`: a 64-bit integer.
    pub long: bool,
    pub conv: char,
}

/// A piece of a parsed format: literal text, or a conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Conv(Spec),
}

/// Parses a format string; an unsupported or malformed conversion is an error.
pub(crate) fn parse(format: &str) -> std::result::Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            text.push('%');
            continue;
        }
        let mut s = Spec {
            minus: false,
            plus: false,
            space: false,
            alt: false,
            zero: false,
            width: 0,
            precision: None,
            long: false,
            conv: ' ',
        };
        while let Some(&f) = chars.peek() {
            match f {
                '-' => s.minus = true,
                '+' => s.plus = true,
                ' ' => s.space = true,
                '#' => s.alt = true,
                '0' => s.zero = true,
                _ => break,
            }
            chars.next();
        }
        let digits = |chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut n: usize = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as usize);
                chars.next();
            }
            n
        };
        s.width = digits(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            s.precision = Some(digits(&mut chars));
        }
        if chars.peek() == Some(&'l') {
            chars.next();
            s.long = true;
            if chars.peek() == Some(&'l') {
                chars.next();
            }
        }
        let conv = chars.next().ok_or_else(|| {
            "the format ends inside a conversion (a lone `%`; write `%%` for a percent sign)"
                .to_string()
        })?;
        match conv {
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {}
            '*' => return Err("`*` widths and precisions are not supported; write the number into the format".into()),
            's' => return Err("`%s` is not supported: kernels have no strings; write the text into the format itself".into()),
            'h' | 'z' | 'j' | 't' | 'L' | 'q' => {
                return Err(format!(
                    "the length modifier `{conv}` is not supported (use no modifier for 32-bit and \
                     narrower integers, `l` for 64-bit ones)"
                ))
            }
            other => {
                return Err(format!(
                    "the conversion `%{other}` is not supported (supported: %d %i %u %x %X %o %c, \
                     with `l` for 64-bit integers, %f %F %e %E %g %G, %%)"
                ))
            }
        }
        if s.long && conv == 'c' {
            return Err("`%lc` is not supported".into());
        }
        s.conv = conv;
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(Piece::Conv(s));
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// Checks the conversions against the arguments' types.
pub(crate) fn check(format: &str, types: &[ScalarTy]) -> std::result::Result<(), String> {
    let pieces = parse(format)?;
    let specs: Vec<&Spec> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Conv(s) => Some(s),
            Piece::Text(_) => None,
        })
        .collect();
    if specs.len() != types.len() {
        return Err(format!(
            "the format has {} conversion(s) but {} argument(s) are given",
            specs.len(),
            types.len()
        ));
    }
    for (n, (s, &t)) in specs.iter().zip(types).enumerate() {
        let ok = match s.conv {
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' => t.is_float(),
            _ if s.long => t.is_int() && t.size() == 8,
            _ => t == ScalarTy::Bool || (t.is_int() && t.size() <= 4),
        };
        if !ok {
            let want = match s.conv {
                'f' | 'F' | 'e' | 'E' | 'g' | 'G' => "f32 or f64",
                _ if s.long => "a 64-bit integer (i64 or u64)",
                _ => "an integer of 32 bits or fewer, or bool (64-bit integers need `l`: %ld, %lu, %lx)",
            };
            return Err(format!(
                "argument {n} is {} but its conversion `%{}{}` wants {want}",
                t.name(),
                if s.long { "l" } else { "" },
                s.conv
            ));
        }
    }
    Ok(())
}

impl KernelBuilder {
    /// Prints from every thread that runs this statement, with a C format string (CUDA's
    /// `printf`, numba's `print`): `k.printf("i = %d, x = %f\n", &[i.into(), x.into()])`.
    /// The format is checked against the arguments' types when the kernel is built. Supported:
    /// `%d %i %u %x %X %o %c` for integers of 32 bits or fewer and `bool`, the same with `l`
    /// or `ll` (`%ld %lu %lx ...`) for 64-bit integers, `%f %F %e %E %g %G` for f32 and f64,
    /// `%%`; flags `- + space # 0`, width and precision as digits. Not supported: `%s` (write
    /// the text into the format), `%p`, `%a`, `*` widths, `h`/`hh`/`z` lengths.
    ///
    /// On a GPU the output goes through the driver's FIFO buffer (1 MiB by default,
    /// [`Context::set_printf_fifo_size`](crate::Context::set_printf_fifo_size); records past
    /// it are lost) and is written to the process's standard output at the next
    /// synchronisation point (stream or context synchronise, a blocking copy), as in CUDA. The
    /// simulator prints at the point of execution, the lanes of a block in thread order.
    pub fn printf(&self, format: &str, args: &[PrintfArg]) {
        let types: Vec<ScalarTy> = args.iter().map(|a| a.ty).collect();
        let raws: Vec<(u32, u32)> = args.iter().map(|a| (a.tag, a.id)).collect();
        with_state(|s| {
            if let Err(e) = check(format, &types) {
                s.error(format!("in `{}`: printf({format:?}): {e}", s.f.name));
            }
            if format.contains('\0') {
                s.error(format!(
                    "in `{}`: printf: the format must not contain NUL",
                    s.f.name
                ));
            }
            s.check_use(&raws);
            s.push_stmt(Stmt::Printf(PrintfStmt {
                format: format.to_string(),
                args: raws.iter().map(|&(_, id)| ValueId(id)).collect(),
            }));
        });
    }
}

/// Lowers a `printf` to `vprintf(format, args)`: the format a constant global, the arguments
/// promoted (f32 to f64, narrower integers and bool to i32) in a local struct.
pub(crate) fn lower_printf<'c>(lw: &mut Lowerer<'c, '_>, p: &PrintfStmt) -> Result<()> {
    let name = lw.f.name.clone();
    let err = |e: &dyn std::fmt::Display| Error::Kernel {
        kernel: name.clone(),
        message: format!("printf: {e}"),
    };
    let ctx = lw.ctx;
    // The format: a constant global string, cast to a generic pointer.
    let init = ctx.const_string(p.format.as_bytes(), true);
    let g = lw.module.add_global(
        init.get_type(),
        Some(AddressSpace::from(1u16)),
        "printf_format",
    );
    g.set_linkage(Linkage::Internal);
    g.set_initializer(&init);
    g.set_constant(true);
    let generic = ctx.ptr_type(AddressSpace::default());
    let fmt =
        lw.b.build_address_space_cast(g.as_pointer_value(), generic, "")
            .map_err(|e| err(&e))?;
    // The arguments, promoted as C's varargs.
    let mut vals: Vec<BasicValueEnum<'c>> = Vec::new();
    for a in &p.args {
        let v = lw.v(*a)?;
        let t = lw.ty(*a);
        let pv: BasicValueEnum<'c> = if t.is_float() {
            if t.size() < 8 {
                lw.b.build_float_ext(v.into_float_value(), ctx.f64_type(), "")
                    .map_err(|e| err(&e))?
                    .into()
            } else {
                v
            }
        } else if t.size() < 4 || t == ScalarTy::Bool {
            let iv = v.into_int_value();
            if t.is_signed_int() {
                lw.b.build_int_s_extend(iv, ctx.i32_type(), "")
            } else {
                lw.b.build_int_z_extend(iv, ctx.i32_type(), "")
            }
            .map_err(|e| err(&e))?
            .into()
        } else {
            v
        };
        vals.push(pv);
    }
    let args_ptr: BasicValueEnum<'c> = if vals.is_empty() {
        generic.const_null().into()
    } else {
        let fields: Vec<BasicTypeEnum<'c>> = vals.iter().map(|v| v.get_type()).collect();
        let st = ctx.struct_type(&fields, false);
        // The buffer lives in the entry block (one per printf, reused by every execution).
        let entry = lw
            .func
            .get_first_basic_block()
            .ok_or_else(|| err(&"no entry block"))?;
        let eb = ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => eb.position_before(&i),
            None => eb.position_at_end(entry),
        }
        let buf = eb.build_alloca(st, "printf_args").map_err(|e| err(&e))?;
        for (i, v) in vals.iter().enumerate() {
            let fp =
                lw.b.build_struct_gep(st, buf, i as u32, "")
                    .map_err(|e| err(&e))?;
            lw.b.build_store(fp, *v).map_err(|e| err(&e))?;
        }
        buf.into()
    };
    lw.call(
        "vprintf",
        Some(ctx.i32_type().into()),
        &[fmt.into(), args_ptr],
    )?;
    Ok(())
}

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
        let x = if ty.size() == 4 {
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
    }

    #[test]
    fn format_checks() {
        use ScalarTy::*;
        assert!(check(
            "%d %u %x %ld %f %e %g %%",
            &[I32, U32, Bool, I64, F32, F64, F32]
        )
        .is_ok());
        assert!(
            check("%d", &[I64]).unwrap_err().contains("need `l`")
                || check("%d", &[I64]).unwrap_err().contains("`l`")
        );
        assert!(check("%ld", &[I32]).unwrap_err().contains("64-bit"));
        assert!(check("%f", &[I32]).unwrap_err().contains("f32 or f64"));
        assert!(check("%d", &[F32]).is_err());
        assert!(check("%d %d", &[I32]).unwrap_err().contains("2 conversion"));
        assert!(check("%s", &[]).unwrap_err().contains("%s"));
        assert!(check("%*d", &[I32]).is_err());
        assert!(check("%hd", &[I32]).is_err());
        assert!(check("%q", &[]).is_err());
        assert!(check("100%", &[]).is_err());
        assert!(check("no conversions", &[]).is_ok());
    }
}
