//! Rewrite 4: registers set to -1 on one path and to (something ptxas folds to) 1.0f's bits on
//! another, made opaque so that ptxas does not merge them.

use super::{definitions, line_parts, tid_zero};

/// `(register, 64-bit?, value)` of a 32- or 64-bit `mov` of an immediate (predicated or not).
pub(super) fn mov_imm(line: &str) -> Option<(&str, bool, u64)> {
    let body = line.trim();
    let body = match body.strip_prefix('@') {
        Some(r) => r.split_once(char::is_whitespace)?.1.trim_start(),
        None => body,
    };
    let (op, args) = body.split_once(char::is_whitespace)?;
    let wide = match op {
        "mov.b32" | "mov.u32" | "mov.s32" | "mov.f32" => false,
        "mov.b64" | "mov.u64" | "mov.s64" => true,
        _ => return None,
    };
    let (d, v) = args.trim().strip_suffix(';')?.split_once(',')?;
    let v = v.trim();
    let value = if let Some(h) = v.strip_prefix("0f").or_else(|| v.strip_prefix("0x")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(n) = v.strip_prefix('-') {
        n.parse::<u64>().ok()?.wrapping_neg()
    } else {
        v.parse().ok()?
    };
    Some((d.trim(), wide, value))
}

/// Whether a `mov`'s value has the low 32 bits of -1 (`true` as `set.u32` writes it).
pub(super) fn is_minus_one(v: u64) -> bool {
    v as u32 == u32::MAX
}

/// Whether a `mov`'s value is the bits of 1.0f (zero-extended in a 64-bit register).
pub(super) fn is_one_f32(v: u64) -> bool {
    v == 0x3F80_0000
}

/// The registers that `func` sets to -1 somewhere and to the bits of 1.0f elsewhere (rewrite 4).
pub(super) fn minus_one_and_one_f32(func: &str) -> Vec<&str> {
    let movs: Vec<(&str, bool, u64)> = func.lines().filter_map(mov_imm).collect();
    let mut both: Vec<&str> = movs
        .iter()
        .filter(|(d, _, v)| {
            is_one_f32(*v) && movs.iter().any(|(d2, _, v2)| d2 == d && is_minus_one(*v2))
        })
        .map(|(d, ..)| *d)
        .collect();
    both.dedup();
    both
}

/// Rewrite 4 of one line: a `mov` of 1.0f's bits into a register of `both`.
pub(super) fn opaque_one_f32(line: &str, both: &[&str]) -> Option<String> {
    let (d, wide, v) = mov_imm(line)?;
    if !is_one_f32(v) || !both.contains(&d) {
        return None;
    }
    let (indent, pred, nl) = line_parts(line)?;
    let set = if wide {
        format!("{pred}or.b32 %cj_tid, %cj_tid, 1065353216; {pred}cvt.u64.u32 {d}, %cj_tid;")
    } else {
        format!("{pred}or.b32 {d}, %cj_tid, 1065353216;")
    };
    let zero = tid_zero(&pred, "%cj_tid");
    Some(format!("{indent}{{ .reg .b32 %cj_tid; {zero} {set} }}{nl}"))
}

/// Registers that a `mov` sets to -1 (low half all ones) and that something other than an
/// immediate `mov` also writes (rewrite 4, second part).
pub(super) fn merged_minus_ones(func: &str) -> Vec<&str> {
    let defs = definitions(func);
    let movs: Vec<(&str, bool, u64)> = func.lines().filter_map(mov_imm).collect();
    let mut regs: Vec<&str> = movs
        .iter()
        .filter(|(d, _, v)| {
            let imms = movs.iter().filter(|(d2, ..)| d2 == d).count();
            is_minus_one(*v) && defs.get(d).copied().unwrap_or(0) > imms
        })
        .map(|(d, ..)| *d)
        .collect();
    regs.sort_unstable();
    regs.dedup();
    regs
}

/// Rewrite 4, second part: a `mov` of -1 into a register of `merged`, as `~(tid.x >> 16)`
/// (tid.x < 1024, so all ones), masked to the `mov`'s value in 64 bits.
pub(super) fn opaque_minus_one(line: &str, merged: &[&str]) -> Option<String> {
    let (d, wide, v) = mov_imm(line)?;
    if !is_minus_one(v) || !merged.contains(&d) {
        return None;
    }
    let (indent, pred, nl) = line_parts(line)?;
    let high = v & !0xFFFF_FFFF;
    let set = if wide {
        let or = if high == 0 {
            String::new()
        } else {
            format!(" {pred}or.b64 {d}, {d}, {high:#x};")
        };
        format!("{pred}not.b32 %cj_tid, %cj_tid; {pred}cvt.u64.u32 {d}, %cj_tid;{or}")
    } else {
        format!("{pred}not.b32 {d}, %cj_tid;")
    };
    let zero = tid_zero(&pred, "%cj_tid");
    Some(format!("{indent}{{ .reg .b32 %cj_tid; {zero} {set} }}{nl}"))
}
