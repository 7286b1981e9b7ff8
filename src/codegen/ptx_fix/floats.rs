//! Rewrites 6, 7, 8 and 10: float min/max, `ex2`, and integer bits moved into float registers
//! in loops.

use super::{instruction, line_parts, tid_zero};

/// Whether `op` is the f32 form of `what` (`min`/`max`), with or without `.ftz`.
fn is_f32(op: &str, what: &str) -> bool {
    op.strip_prefix(what)
        .is_some_and(|rest| rest == ".f32" || rest == ".ftz.f32")
}

/// The f64 registers that a `mov.b64` moves into integer registers (rewrite 6).
pub(super) fn f64_read_as_int(func: &str) -> Vec<&str> {
    let mut regs: Vec<&str> = func
        .lines()
        .filter_map(|line| {
            let (_, op, args) = instruction(line)?;
            if op != "mov.b64" {
                return None;
            }
            let (d, a) = args.rsplit_once(',')?;
            let (d, a) = (d.trim(), a.trim());
            (a.starts_with("%fd") && !d.starts_with("%fd")).then_some(a)
        })
        .collect();
    regs.sort_unstable();
    regs.dedup();
    regs
}

/// Rewrite 6 of one line: a `min.f64`/`max.f64` into a register of `read_as_int`, followed by
/// an add of -0.
pub(super) fn keep_min_max_f64(line: &str, read_as_int: &[&str]) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    if !matches!(op, "min.f64" | "max.f64") {
        return None;
    }
    let d = args.split(',').next()?.trim();
    if !read_as_int.contains(&d) {
        return None;
    }
    let (indent, pred, nl) = line_parts(line)?;
    Some(format!(
        "{}\n{indent}{pred}add.f64 \t{d}, {d}, 0d8000000000000000;{nl}",
        line.trim_end_matches('\n')
    ))
}

/// Rewrite 7: `ex2.approx[.ftz].f32 d, a` as `isnan(a) ? a : ex2(a)`.
pub(super) fn nan_guarded_ex2(line: &str) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    let ftz = match op {
        "ex2.approx.f32" => "",
        "ex2.approx.ftz.f32" => ".ftz",
        _ => return None,
    };
    let (d, a) = args.split_once(',')?;
    let (d, a) = (d.trim(), a.trim());
    let (indent, p, nl) = line_parts(line)?;
    Some(format!(
        "{indent}{{ .reg .pred %cj_q; .reg .f32 %cj_x; {p}mov.f32 %cj_x, {a}; {p}setp.nan.f32 \
         %cj_q, %cj_x, %cj_x; {p}ex2.approx{ftz}.f32 {d}, %cj_x; {p}selp.f32 {d}, %cj_x, {d}, \
         %cj_q; }}{nl}"
    ))
}

/// The registers of `func` that an f32 `min` writes and an f32 `max` reads (rewrite 8).
pub(super) fn mins_under_a_max(func: &str) -> Vec<&str> {
    let mins: Vec<&str> = func
        .lines()
        .filter_map(|line| {
            let (_, op, args) = instruction(line)?;
            is_f32(op, "min").then(|| args.split(',').next().map(str::trim))?
        })
        .collect();
    let mut regs: Vec<&str> = func
        .lines()
        .filter_map(|line| {
            let (_, op, args) = instruction(line)?;
            is_f32(op, "max").then_some(args)
        })
        .flat_map(|args| args.split(',').skip(1).map(str::trim))
        .filter(|r| mins.contains(r))
        .collect();
    regs.sort_unstable();
    regs.dedup();
    regs
}

/// Rewrite 8 of one line: an f32 `min` into a register of `clamped`, followed by an `or` with
/// `tid.x >> 16` (zero, unknown to ptxas).
pub(super) fn opaque_min_under_a_max(line: &str, clamped: &[&str]) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    if !is_f32(op, "min") {
        return None;
    }
    let d = args.split(',').next()?.trim();
    if !clamped.contains(&d) {
        return None;
    }
    let (indent, p, nl) = line_parts(line)?;
    let zero = tid_zero(&p, "%cj_tid");
    Some(format!(
        "{}\n{indent}{{ .reg .b32 %cj_tid; {zero} {p}or.b32 {d}, {d}, %cj_tid; }}{nl}",
        line.trim_end_matches('\n')
    ))
}

/// For each line of `func`, whether it lies in a loop: between a label and a later branch
/// back to it (rewrite 10).
pub(super) fn loop_lines(func: &str) -> Vec<bool> {
    let lines: Vec<&str> = func.split_inclusive('\n').collect();
    let mut in_loop = vec![false; lines.len()];
    let mut labels = std::collections::HashMap::new();
    for (j, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(l) = t.strip_suffix(':') {
            labels.insert(l, j);
            continue;
        }
        let Some((_, op, args)) = instruction(line) else {
            continue;
        };
        if op == "bra" || op == "bra.uni" {
            if let Some(&i) = labels.get(args.trim()) {
                in_loop[i..=j].iter_mut().for_each(|b| *b = true);
            }
        }
    }
    in_loop
}

/// Rewrite 10 of one line (in a loop): `mov.b32 %f, %r` / `mov.b64 %fd, %rd` as an `or` with
/// `tid.x >> 16` (zero, unknown to ptxas).
pub(super) fn opaque_bits_to_float(line: &str) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    let (d, a) = args.split_once(',')?;
    let (d, a) = (d.trim(), a.trim());
    let wide = match op {
        "mov.b32" if d.starts_with("%f") && a.starts_with("%r") => false,
        "mov.b64" if d.starts_with("%fd") && a.starts_with("%rd") => true,
        _ => return None,
    };
    let (indent, p, nl) = line_parts(line)?;
    let get = tid_zero(&p, "%cj_tid");
    Some(if wide {
        format!(
            "{indent}{{ .reg .b32 %cj_tid; .reg .b64 %cj_t; {get} {p}cvt.u64.u32 %cj_t, %cj_tid; \
             {p}or.b64 {d}, {a}, %cj_t; }}{nl}"
        )
    } else {
        format!("{indent}{{ .reg .b32 %cj_tid; {get} {p}or.b32 {d}, {a}, %cj_tid; }}{nl}")
    })
}
