//! Rewrites 1, 2, 3 (the float add after a select), 5 and 12: one instruction line at a time.

use super::selects::selects_one_and_zero;

/// The replacement of one instruction line, if it needs one.
pub(super) fn rewrite(line: &str, to_float: &std::collections::HashSet<&str>) -> Option<String> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let (pred, rest) = match body.strip_prefix('@') {
        Some(_) => {
            let (p, r) = body.split_once(char::is_whitespace)?;
            (format!("{p} "), r.trim_start())
        }
        None => (String::new(), body),
    };
    let (op, operands) = rest.split_once(char::is_whitespace)?;
    let operands = operands.trim();
    let args = operands.strip_suffix(';')?;
    let nl = if line.ends_with('\n') { "\n" } else { "" };
    if matches!(op, "selp.f32" | "selp.b32" | "selp.u32" | "selp.s32") {
        let d = selects_one_and_zero(args)?;
        if !(d.starts_with("%f") || to_float.contains(d)) {
            return None;
        }
        let line = line.trim_end_matches('\n');
        return Some(format!(
            "{line}\n{indent}{pred}add.f32 \t{d}, {d}, 0f80000000;{nl}"
        ));
    }
    let (d, a) = args.split_once(',')?;
    let (d, a) = (d.trim(), a.trim());
    if a.contains(',') || d.is_empty() || a.is_empty() {
        return None;
    }
    match op {
        "abs.f32" | "abs.ftz.f32" => {
            Some(format!("{indent}{pred}and.b32 \t{d}, {a}, 2147483647;{nl}"))
        }
        "neg.f32" | "neg.ftz.f32" => {
            Some(format!("{indent}{pred}xor.b32 \t{d}, {a}, 0x80000000;{nl}"))
        }
        "abs.f64" => Some(format!(
            "{indent}{pred}and.b64 \t{d}, {a}, 0x7FFFFFFFFFFFFFFF;{nl}"
        )),
        "neg.f64" => Some(format!(
            "{indent}{pred}xor.b64 \t{d}, {a}, 0x8000000000000000;{nl}"
        )),
        "neg.s32" => Some(format!(
            "{indent}{pred}not.b32 \t{d}, {a};\n{indent}{pred}add.s32 \t{d}, {d}, 1;{nl}"
        )),
        "abs.s32" => Some(format!(
            "{indent}{{ .reg .b32 %cj_s; {pred}shr.s32 %cj_s, {a}, 31; {pred}xor.b32 {d}, {a}, \
             %cj_s; {pred}sub.s32 {d}, {d}, %cj_s; }}{nl}"
        )),
        "abs.s64" => Some(format!(
            "{indent}{{ .reg .b64 %cj_s; {pred}shr.s64 %cj_s, {a}, 63; {pred}xor.b64 {d}, {a}, \
             %cj_s; {pred}sub.s64 {d}, {d}, %cj_s; }}{nl}"
        )),
        "neg.s64" => Some(format!(
            "{indent}{pred}not.b64 \t{d}, {a};\n{indent}{pred}add.s64 \t{d}, {d}, 1;{nl}"
        )),
        _ => None,
    }
}
