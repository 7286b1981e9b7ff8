//! The prototypes of the functions a PTX text defines (`.visible .func`), read well enough to
//! check `declare_device` declarations against them: parameter count and widths.

use crate::codegen::scalar::ScalarTy;
use crate::ir::ExternFn;

/// A `.func`'s parameter and result widths in bits, as PTX declares them (`None`: a parameter
/// this check does not understand, such as an aligned byte array).
pub(super) type Proto = (Vec<Option<u32>>, Option<Option<u32>>);

/// Strips `//` and `/* */` comments from PTX text.
fn strip_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            out.push(' ');
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The width of one `.param` declaration (`.param .b32 x`), if it is a plain scalar.
fn param_width(decl: &str) -> Option<u32> {
    if decl.contains('[') || decl.contains(".align") || decl.contains(".ptr") {
        return None;
    }
    let ty = decl
        .split_whitespace()
        .find(|t| t.starts_with('.') && *t != ".param" && *t != ".reg")?;
    ty.trim_start_matches(|c: char| c == '.' || c.is_ascii_alphabetic())
        .parse()
        .ok()
}

/// The contents of the parenthesised list starting at `s` (after white space), and the rest.
fn paren_list(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start().strip_prefix('(')?;
    let end = s.find(')')?;
    Some((&s[..end], &s[end + 1..]))
}

/// The functions a PTX text defines (`.visible .func` or `.weak .func`), with their prototypes.
pub(super) fn defined_funcs(ptx: &str) -> Vec<(String, Proto)> {
    let text = strip_comments(ptx);
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find(".func") {
        let start = at + i;
        at = start + 5;
        let line_start = text[..start].rfind(['\n', ';', '}']).map_or(0, |j| j + 1);
        let head = &text[line_start..start];
        if !(head.contains(".visible") || head.contains(".weak")) || head.contains(".extern") {
            continue;
        }
        let mut rest = &text[at..];
        let mut ret = None;
        if rest.trim_start().starts_with('(') {
            let Some((r, after)) = paren_list(rest) else {
                continue;
            };
            ret = Some(param_width(r));
            rest = after;
        }
        let rest_t = rest.trim_start();
        let name_len = rest_t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest_t.len());
        let name = &rest_t[..name_len];
        let params = match paren_list(&rest_t[name_len..]) {
            Some((p, _)) if !p.trim().is_empty() => p.split(',').map(param_width).collect(),
            Some(_) => Vec::new(),
            None => continue,
        };
        if !name.is_empty() {
            out.push((name.to_string(), (params, ret)));
        }
    }
    out
}

/// The widths a declaration passes: 32 bits for types of 4 bytes or fewer (PTX passes
/// narrower scalars in 32-bit parameters), else 64.
pub(super) fn declared_widths(e: &ExternFn) -> Proto {
    let w = |t: ScalarTy| Some(if t.size() <= 4 { 32 } else { 64 });
    (e.params.iter().map(|t| w(*t)).collect(), e.ret.map(w))
}

/// Whether a PTX prototype can be called as declared: as many parameters, each as wide (a
/// narrower PTX scalar counts as 32 bits; what the check does not understand passes).
pub(super) fn proto_matches(declared: &Proto, defined: &Proto) -> bool {
    let same = |d: &Option<u32>, p: &Option<u32>| match (d, p) {
        (Some(d), Some(p)) => *d == (*p).max(32),
        _ => true,
    };
    let ret_ok = match (&declared.1, &defined.1) {
        (None, None) => true,
        (Some(d), Some(p)) => same(d, p),
        _ => false,
    };
    ret_ok
        && declared.0.len() == defined.0.len()
        && declared.0.iter().zip(&defined.0).all(|(d, p)| same(d, p))
}

/// `(.param .b32, .param .b64) -> .b32`, for messages.
pub(super) fn proto_text(p: &Proto) -> String {
    let w = |x: &Option<u32>| x.map_or(".param ?".to_string(), |b| format!(".param .b{b}"));
    let params: Vec<String> = p.0.iter().map(w).collect();
    match &p.1 {
        Some(r) => format!("({}) -> {}", params.join(", "), w(r)),
        None => format!("({})", params.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod fixtures {
        include!("../../../tests/support/fixtures.rs");
    }

    #[test]
    fn ptx_prototypes_are_read() {
        let ptx = std::fs::read_to_string(fixtures::fixture("ext_funcs.ptx")).unwrap();
        let funcs = defined_funcs(&ptx);
        let names: Vec<&str> = funcs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["mul_add_ext", "imul_add1_ext", "dsquare_ext"]);
        assert_eq!(funcs[0].1, (vec![Some(32), Some(32)], Some(Some(32))));
        assert_eq!(funcs[2].1, (vec![Some(64)], Some(Some(64))));
        let more = defined_funcs(
            ".extern .func (.param .b32 r) skip_me(.param .b32 a);\n\
             /* .visible .func commented(.param .b32 a) */\n\
             .weak .func void_fn(.param .b8 a, .param .align 8 .b8 s[16])\n{ ret; }\n\
             .visible .func no_params()\n{ ret; }",
        );
        assert_eq!(
            more,
            [
                ("void_fn".to_string(), (vec![Some(8), None], None)),
                ("no_params".to_string(), (vec![], None)),
            ]
        );
        let decl = |params: Vec<ScalarTy>, ret| {
            declared_widths(&ExternFn {
                name: "x".into(),
                params,
                ret,
            })
        };
        use ScalarTy::*;
        assert!(proto_matches(&decl(vec![F32, I32], Some(F32)), &funcs[0].1));
        assert!(!proto_matches(
            &decl(vec![F64, F64], Some(F64)),
            &funcs[0].1
        ));
        assert!(!proto_matches(&decl(vec![F32], Some(F32)), &funcs[0].1));
        assert!(proto_matches(&decl(vec![Bool, U64], None), &more[0].1));
        assert!(!proto_matches(
            &decl(vec![Bool, U64], Some(I32)),
            &more[0].1
        ));
    }
}
