//! `printf` statements of the kernel IR: the format parser and checker, and the host-side
//! formatting the simulator prints with.

use super::{ScalarTy, ValueId};

mod host;
pub(crate) use host::format_host;

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
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' | 's' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {}
            '*' => {
                return Err(
                    "`*` widths and precisions are not supported; write the number into the format"
                        .into(),
                )
            }
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
        if s.long && matches!(conv, 'c' | 's') {
            return Err(format!("`%l{conv}` is not supported"));
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
        if s.conv == 's' {
            return Err(format!(
                "argument {n} is {} but `%s` prints a string known when the kernel is built \
                 (a `&str` or `String` argument)",
                t.name()
            ));
        }
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

impl Spec {
    /// The conversion as format text.
    pub(crate) fn to_format(self) -> String {
        let mut t = String::from("%");
        for (on, c) in [
            (self.minus, '-'),
            (self.plus, '+'),
            (self.space, ' '),
            (self.alt, '#'),
            (self.zero, '0'),
        ] {
            if on {
                t.push(c);
            }
        }
        if self.width > 0 {
            t.push_str(&self.width.to_string());
        }
        if let Some(p) = self.precision {
            t.push_str(&format!(".{p}"));
        }
        if self.long {
            t.push('l');
        }
        t.push(self.conv);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(check("%s", &[I32]).unwrap_err().contains("%s"));
        assert!(check("%*d", &[I32]).is_err());
        assert!(check("%hd", &[I32]).is_err());
        assert!(check("%q", &[]).is_err());
        assert!(check("100%", &[]).is_err());
        assert!(check("no conversions", &[]).is_ok());
    }
}
