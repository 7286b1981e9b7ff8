//! Rewrites 3 and 9: selects of the bits 1 and 0, their conversions to float, and selects of
//! an immediate -0.0.

use super::{definitions, instruction, line_parts, tid_zero};

/// Integer registers defined once, by a select of 1 and 0 on a predicate defined once:
/// `register -> (predicate, whether 1 is picked when it holds)` (rewrite 3, second part).
pub(super) fn bool_selects(func: &str) -> std::collections::HashMap<&str, (&str, bool)> {
    let defs = definitions(func);
    let once = |r: &str| defs.get(r) == Some(&1);
    func.lines()
        .filter_map(|line| {
            let (pred, op, args) = instruction(line)?;
            if !pred.is_empty()
                || !op.starts_with("selp.")
                || op.ends_with("f32")
                || op.ends_with("f64")
            {
                return None;
            }
            let v: Vec<&str> = args.split(',').map(str::trim).collect();
            let [d, a, b, p] = v[..] else {
                return None;
            };
            let one_first = match (a, b) {
                ("1", "0") => true,
                ("0", "1") => false,
                _ => return None,
            };
            (once(d) && once(p)).then_some((d, (p, one_first)))
        })
        .collect()
}

/// Rewrite 3, second part: `cvt.*.f32/f64.{u,s}{32,64} f, r` of a register of `bools`.
pub(super) fn float_of_bool(
    line: &str,
    bools: &std::collections::HashMap<&str, (&str, bool)>,
) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    let mut parts = op.split('.');
    if parts.next() != Some("cvt") {
        return None;
    }
    let rest: Vec<&str> = parts.collect();
    let (to, from) = (rest.get(rest.len().checked_sub(2)?)?, rest.last()?);
    if !matches!(*from, "u32" | "s32" | "u64" | "s64") {
        return None;
    }
    let (one, zero) = match *to {
        "f32" => ("0f3F800000", "0f00000000"),
        "f64" => ("0d3FF0000000000000", "0d0000000000000000"),
        _ => return None,
    };
    let (d, r) = args.split_once(',')?;
    let &(p, one_first) = bools.get(r.trim())?;
    let (a, b) = if one_first { (one, zero) } else { (zero, one) };
    let (indent, pred, nl) = line_parts(line)?;
    Some(format!(
        "{indent}{pred}selp.{to} \t{}, {a}, {b}, {p};{nl}",
        d.trim()
    ))
}

/// The integer registers that some `mov.b32 %fN, %rM` moves into a float register (a
/// bitcast) in function `func`. (Per function: register names repeat between functions, and
/// an integer register that is not a float must not get rewrite 3's float add - ptxas took
/// `selp.u32 r, 1, 0, p; add.f32 r, r, -0.0` used as a shift amount for 0, fuzzer seeds
/// 14100530 and 14500984, when the set was taken over the whole module.)
pub(super) fn moved_to_float(func: &str) -> std::collections::HashSet<&str> {
    func.lines()
        .filter_map(|l| {
            let (d, a) = l
                .trim()
                .strip_prefix("mov.b32")?
                .trim()
                .strip_suffix(';')?
                .split_once(',')?;
            (d.trim().starts_with("%f") && a.trim().starts_with("%r")).then_some(a.trim())
        })
        .collect()
}

/// Whether `selp` operands `args` (`d, a, b, p`) select the bits 1 and 0 (rewrite 3).
pub(super) fn selects_one_and_zero(args: &str) -> Option<&str> {
    let mut it = args.split(',').map(str::trim);
    let (d, a, b, _p) = (it.next()?, it.next()?, it.next()?, it.next()?);
    let bit = |v: &str| match v {
        "1" | "0f00000001" => Some(1),
        "0" | "0f00000000" => Some(0),
        _ => None,
    };
    (it.next().is_none() && bit(a)? + bit(b)? == 1).then_some(d)
}

/// Rewrite 9: a float `selp` with an immediate -0.0 operand, that operand made opaque
/// (`(tid.x >> 16) | sign bit`).
pub(super) fn opaque_minus_zero_select(line: &str) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    let (zero, reg) = match op {
        "selp.f32" => ("0f80000000", "{ .reg .b32 %cj_z; "),
        "selp.f64" => (
            "0d8000000000000000",
            "{ .reg .b32 %cj_tid; .reg .b64 %cj_z; ",
        ),
        _ => return None,
    };
    let v: Vec<&str> = args.split(',').map(str::trim).collect();
    let [d, a, b, q] = v[..] else {
        return None;
    };
    if a != zero && b != zero {
        return None;
    }
    let (indent, p, nl) = line_parts(line)?;
    let make = if op == "selp.f32" {
        let zero = tid_zero(&p, "%cj_z");
        format!("{zero} {p}or.b32 %cj_z, %cj_z, 0x80000000;")
    } else {
        let zero = tid_zero(&p, "%cj_tid");
        format!("{zero} {p}cvt.u64.u32 %cj_z, %cj_tid; {p}or.b64 %cj_z, %cj_z, 0x8000000000000000;")
    };
    let (a, b) = (
        if a == zero { "%cj_z" } else { a },
        if b == zero { "%cj_z" } else { b },
    );
    Some(format!(
        "{indent}{reg}{make} {p}{op} {d}, {a}, {b}, {q}; }}{nl}"
    ))
}
