//! Rewrites of the PTX that LLVM emits, around miscompilations in NVIDIA's PTX compiler (the
//! driver's JIT and `ptxas`, CUDA 12.9 and 13.0, seen on an H200 with driver 580). Both were
//! found by the differential fuzzer (`examples/fuzz`); `docs/RELIABILITY.md` has the details.
//!
//! 1. **`abs.f32` is assumed never NaN.** `abs.f32 %f2, %f1; setp.gt.f32 %p1, %f2, -1.5` is
//!    folded to true, so `x.abs() > -1.5` holds for a NaN `x` (also `>= c` for c <= 0, and
//!    `-x.abs() < c` for c > 0). f64 is not affected. The same bits computed with an integer
//!    `and` are compared correctly, so every `abs.f32` / `abs.ftz.f32` becomes
//!    `and.b32 d, a, 0x7FFFFFFF` (identical bits; with fastmath a subnormal input keeps its
//!    magnitude instead of flushing to +0, which any later `.ftz` operation flushes anyway).
//! 2. **A negated operand of a min/max chain is dropped.** `neg.s32 c2, c; min.s32 t, b, c2;
//!    min.s32 r, a, t` is fused into one three-input `VIMNMX3` without the negation, giving
//!    `min(a, b, c)` instead of `min(a, b, -c)` (also for `max`, and for `sub 0, c` or
//!    `mul c, -1`, which the compiler turns into the same negation). Written as `not` + `add 1`
//!    the negation is kept (`LOP3` + `VIADDMNMX`), so every `neg.s32` becomes
//!    `not.b32 d, a; add.s32 d, d, 1;` (the same two's-complement result). In 64 bits the
//!    negation of an `abs` is taken to be below every negative constant: `min(-|x|, c)` gives
//!    `-|x|` and `max(-|x|, c)` gives `c` for any c < 0 (ptxas 12.9 to 13.5; fuzzer seed
//!    5200015), so every `neg.s64` likewise becomes `not.b64` + `add.s64 d, d, 1`.
//!    And `abs.s64` is taken to be never negative (ptxas 12.9 and the CUDA 13.0 JIT fold
//!    `min(|x|, 0)` to 0, wrong for `i64::MIN`, whose wrapping `abs` is itself; fuzzer seed
//!    7100254; 32 bits and ptxas 13.5 are right), so `abs.s64` is written as
//!    `s = a >> 63; d = (a ^ s) - s` (the same bits; three instructions for two).
//! 3. **A 32-bit select of the bits 1 and 0 is taken for the numbers 1.0 and 0.0.**
//!    `selp.f32 f, 0f00000001, 0f00000000, p` (`select(b, f32::from_bits(1), 0.0)`, also from
//!    `selp.b32 r, 1, 0, p` moved into an f32 register) is treated as a boolean by the
//!    optimiser, and a float conversion of it is folded as if it held 1.0: `floor`/`ceil`/
//!    `trunc`/`round` give the subnormal itself (or 1.0), `as i32` gives 1, `as f64` gives
//!    1.0, where each should see the smallest subnormal (seen with ptxas 12.9 to 13.5, `-O1`
//!    and up; the driver's JIT at its default level; fuzzer seed 1100238). Adding `-0.0`
//!    (exact for both values, no flush without `.ftz`) hides the pattern, so such a select
//!    whose register is a float, or an integer register later moved into a float one, is
//!    followed by `add.f32 d, d, 0f80000000;`. f64 is not affected.
//!    The other direction is wrong too: `selp.u32 r, 1, 0, p; cvt.rn.f32.u32 f, r` gave the
//!    bits 1 instead of 1.0f (`bool as u32 as f32`; ptxas 12.9 to 13.5; fuzzer seed
//!    8300081). A conversion to float of a register defined once, by such a select on a
//!    predicate defined once, is therefore written as the select of the converted constants,
//!    `selp.f32 f, 0f3F800000, 0f00000000, p` (exact, and one instruction fewer).
//! 4. **A register set to -1 on one path and to the bits of 1.0f on another keeps -1.**
//!    (Also a 64-bit register whose low half is all ones, beside 1.0f's bits zero-extended.)
//!    `mov.b32 r, -1; @p bra L; mov.b32 r, 1065353216; L:` is compiled as if `r` were always
//!    -1 (ptxas 12.9 and the CUDA 13.0 driver's JIT; fixed by 13.5; fuzzer seed 2400519: a
//!    `u32` variable holding `u32::MAX`, then `1.0f32.to_bits()` inside a loop). Perhaps both
//!    are taken for "true" (as `set.u32` and `set.f32` write it). Constant folding happens
//!    first, so the 1.0f must be a run-time value: in a function that sets a register to both,
//!    each 1.0f is written `(tid.x >> 16) | 1065353216` (tid.x < 1024, so the same bits; two
//!    instructions, on that path only).
//!    The same merge happens when the 1.0f is not a literal in the PTX but a value ptxas folds
//!    to one (`cvt.rn.f32.u32` of a register holding 1, once LLVM has propagated the constant
//!    into an int-to-float cast; the regression test above failed that way on the H200). So
//!    the -1 is made opaque too: a `mov` of -1 (or of a 64-bit value whose low half is all
//!    ones) into a register that something other than immediate `mov`s also writes becomes
//!    `~(tid.x >> 16)` (the high half or-ed in, in 64 bits).
//!    A merge of -1 and 0 alone (a boolean) is left as it is.
//! 5. **`neg.f32`, `neg.f64` and `abs.f64` do not keep a NaN's bits.** ptxas compiles them as
//!    an add of -0 (`FADD R, -a, -RZ`, `DADD R, -RZ, |a|`), which returns the canonical NaN
//!    (0x7FFFFFFF): the negation of a negative NaN comes out positive. LLVM's `fneg`/`fabs`
//!    are bit operations, and libdevice relies on that: `log1pf(-|x|)` reads the bits of its
//!    argument to route a NaN, and gave 89.416 (129 ln 2) for a NaN (fuzzer seeds 11600256,
//!    12300372). Rust's `-x` and `abs` are sign-bit operations too. So `neg.f32` becomes
//!    `xor.b32 d, a, 0x80000000`, `neg.f64` `xor.b64` with the sign bit, and `abs.f64`
//!    `and.b64 d, a, 0x7FFFFFFFFFFFFFFF` (`abs.f32` already is an `and`, rewrite 1); ptxas still
//!    folds them into its operand modifiers where a float instruction consumes them.
//! 6. **An f64 `min`/`max` whose bits are read as an integer loses its comparison.** When only
//!    the low word of `mov.b64 %rd, %fd` of a `min.f64`/`max.f64` result is used (`& 7`),
//!    ptxas (12.9 to 13.5) picks that word from the first operand unless the other is NaN,
//!    without comparing (fuzzer seeds 11300120, 12500197; only beside other code). Adding -0
//!    after such a min/max (exact: -0 + -0 = -0, +0 + -0 = +0) keeps the comparison, so every
//!    `min.f64`/`max.f64` whose register is moved into an integer register is followed by
//!    `add.f64 d, d, 0d8000000000000000`. f32 is not affected.

//! 7. **`ex2.approx.f32` is assumed never NaN.** ptxas folds `ex2(x) >= c` and `ex2(x) > c`
//!    for c <= 0 to true (ptxas 12.9 to 13.5), wrong for a NaN `x`; `exp2`, `exp` and `powf`
//!    (libdevice's and the fast ones) are built on it (`0.0 <= (-x).sqrt().exp2()` was true
//!    for x = 118.75, fuzzer seed 14400471). Each `ex2.approx` becomes `isnan(a) ? a : ex2(a)`
//!    (`setp.nan` + `selp`; the same value, and ptxas no longer knows its range).
//! 8. **A clamp written min-then-max is turned into a saturation.** `max(min(x, 1.0), 0.0)`
//!    (also when the 0.0 is folded from `max(NaN, 0.0)`) becomes `FADD.SAT`, which gives 0 for
//!    a NaN `x` where minNum/maxNum give 1 (fuzzer seed 14300702; the max-then-min order is
//!    right either way). An f32 `min` whose result an f32 `max` reads is followed by
//!    `or.b32 d, d, tid.x >> 16` (zero, but not to ptxas), which keeps the two instructions.
//! 9. **A select of -0.0 and another constant lost the sign of zero.** ptxas turns
//!    `selp.f32 f, 0f80000000, 0fBF800000, p` (-0.0 or -1.0) into a conversion of a select of
//!    0 and -1 (`I2FP`), which gives +0.0 (fuzzer seeds 16100220, 16400609). An immediate -0.0
//!    in a float `selp` becomes a register holding `(tid.x >> 16) | sign bit`.
//! 10. **Integer bits moved into a float register in a loop were evaluated as numbers.** ptxas
//!     evaluated a loop with `v2 = f32::from_bits(counter)` and `while 1.75 >= v2` at compile
//!     time, comparing the counter's value (2) rather than its bits (a subnormal) with 1.75, and
//!     stored the wrong result (fuzzer seed 16501093; ptxas 12.9 to 13.5). A `mov.b32 %f, %r`
//!     (or `mov.b64 %fd, %rd`) in a loop becomes an `or` with `tid.x >> 16`, which keeps the
//!     loop a loop.
//! 11. **A register undefined on one path was taken to be defined on all.** See
//!     `ptx_undef.rs` (fuzzer seed 18500719): every register that some path may read before
//!     writing gets a zero at the function's entry.
//! 12. **`abs.s32` is taken to be never negative** (like `abs.s64` in rewrite 2):
//!     `abs(i32::MIN) % 194670849` (Rust: -6104309) was computed as an unsigned remainder,
//!     +6104309 (fuzzer seed 20200051: `v.max(-v)` for `v = i32::MIN`, which LLVM turns into
//!     `abs`). `abs.s32` is written as `s = a >> 31; d = (a ^ s) - s` too.

/// Applies the rewrites above to a whole PTX module's text.
pub(crate) fn work_around_ptxas(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 256);
    for func in functions(ptx) {
        let to_float = moved_to_float(func);
        let clamped = mins_under_a_max(func);
        let both = minus_one_and_one_f32(func);
        let merged = merged_minus_ones(func);
        let bools = bool_selects(func);
        let read_as_int = f64_read_as_int(func);
        let loops = loop_lines(func);
        let zeros = super::ptx_undef::zero_maybe_undefined(func);
        for (n, line) in func.split_inclusive('\n').enumerate() {
            if let Some((at, init)) = &zeros {
                if n == at + 1 {
                    out.push_str(init);
                }
            }
            if let Some(new) = opaque_one_f32(line, &both)
                .or_else(|| opaque_minus_one(line, &merged))
                .or_else(|| float_of_bool(line, &bools))
                .or_else(|| keep_min_max_f64(line, &read_as_int))
                .or_else(|| nan_guarded_ex2(line))
                .or_else(|| opaque_min_under_a_max(line, &clamped))
                .or_else(|| opaque_minus_zero_select(line))
                .or_else(|| loops[n].then(|| opaque_bits_to_float(line)).flatten())
            {
                out.push_str(&new);
                continue;
            }
            match rewrite(line, &to_float) {
                Some(new) => out.push_str(&new),
                None => out.push_str(line),
            }
        }
    }
    out
}

/// The module's text cut after each line that closes a function (`}` alone at the start of a
/// line), so that per-function facts stay in their function; the pieces cover all of it.
fn functions(ptx: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in ptx.split_inclusive('\n') {
        at += line.len();
        if line.trim_end() == "}" {
            pieces.push(&ptx[start..at]);
            start = at;
        }
    }
    pieces.push(&ptx[start..]);
    pieces
}

/// An instruction line's opcode and operands (without the predicate and the `;`).
fn instruction(line: &str) -> Option<(&str, &str, &str)> {
    let body = line.trim();
    let (pred, body) = match body.strip_prefix('@') {
        Some(r) => {
            let (p, rest) = r.split_once(char::is_whitespace)?;
            (p, rest.trim_start())
        }
        None => ("", body),
    };
    let (op, args) = body.split_once(char::is_whitespace)?;
    Some((pred, op, args.trim().strip_suffix(';')?))
}

/// How many times each register is written in `func` (an instruction's first operand, `|`
/// pairs and `{..}` vectors included; stores, branches and calls write none).
fn definitions(func: &str) -> std::collections::HashMap<&str, usize> {
    let mut defs = std::collections::HashMap::new();
    for line in func.lines() {
        let Some((_, op, args)) = instruction(line) else {
            continue;
        };
        if op.starts_with("st.") || op.starts_with("bra") || op.starts_with("call") || op == "ret" {
            continue;
        }
        let first = match args.strip_prefix('{') {
            Some(v) => v.split('}').next().unwrap_or(""),
            None => args.split(',').next().unwrap_or(""),
        };
        for r in first
            .split([',', '|'])
            .map(str::trim)
            .filter(|r| r.starts_with('%'))
        {
            *defs.entry(r).or_insert(0) += 1;
        }
    }
    defs
}

/// Integer registers defined once, by a select of 1 and 0 on a predicate defined once:
/// `register -> (predicate, whether 1 is picked when it holds)` (rewrite 3, second part).
fn bool_selects(func: &str) -> std::collections::HashMap<&str, (&str, bool)> {
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
fn float_of_bool(
    line: &str,
    bools: &std::collections::HashMap<&str, (&str, bool)>,
) -> Option<String> {
    let (pred, op, args) = instruction(line)?;
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
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let pred = if pred.is_empty() {
        String::new()
    } else {
        format!("@{pred} ")
    };
    let nl = if line.ends_with('\n') { "\n" } else { "" };
    Some(format!(
        "{indent}{pred}selp.{to} \t{}, {a}, {b}, {p};{nl}",
        d.trim()
    ))
}

/// `(register, 64-bit?, value)` of a 32- or 64-bit `mov` of an immediate (predicated or not).
fn mov_imm(line: &str) -> Option<(&str, bool, u64)> {
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
fn is_minus_one(v: u64) -> bool {
    v as u32 == u32::MAX
}

/// Whether a `mov`'s value is the bits of 1.0f (zero-extended in a 64-bit register).
fn is_one_f32(v: u64) -> bool {
    v == 0x3F80_0000
}

/// The registers that `func` sets to -1 somewhere and to the bits of 1.0f elsewhere (rewrite 4).
fn minus_one_and_one_f32(func: &str) -> Vec<&str> {
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

/// Registers that a `mov` sets to -1 (low half all ones) and that something other than an
/// immediate `mov` also writes (rewrite 4, second part).
fn merged_minus_ones(func: &str) -> Vec<&str> {
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
fn opaque_minus_one(line: &str, merged: &[&str]) -> Option<String> {
    let (d, wide, v) = mov_imm(line)?;
    if !is_minus_one(v) || !merged.contains(&d) {
        return None;
    }
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let pred = match body.strip_prefix('@') {
        Some(_) => format!("{} ", body.split_once(char::is_whitespace)?.0),
        None => String::new(),
    };
    let nl = if line.ends_with('\n') { "\n" } else { "" };
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
    Some(format!(
        "{indent}{{ .reg .b32 %cj_tid; {pred}mov.u32 %cj_tid, %tid.x; {pred}shr.u32 %cj_tid, \
         %cj_tid, 16; {set} }}{nl}"
    ))
}

/// The f64 registers that a `mov.b64` moves into integer registers (rewrite 6).
fn f64_read_as_int(func: &str) -> Vec<&str> {
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
fn keep_min_max_f64(line: &str, read_as_int: &[&str]) -> Option<String> {
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
fn nan_guarded_ex2(line: &str) -> Option<String> {
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
fn mins_under_a_max(func: &str) -> Vec<&str> {
    let is = |op: &str, what: &str| op == format!("{what}.f32") || op == format!("{what}.ftz.f32");
    let mins: Vec<&str> = func
        .lines()
        .filter_map(|line| {
            let (_, op, args) = instruction(line)?;
            is(op, "min").then(|| args.split(',').next().map(str::trim))?
        })
        .collect();
    let mut regs: Vec<&str> = func
        .lines()
        .filter_map(|line| {
            let (_, op, args) = instruction(line)?;
            is(op, "max").then_some(args)
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
fn opaque_min_under_a_max(line: &str, clamped: &[&str]) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    if op != "min.f32" && op != "min.ftz.f32" {
        return None;
    }
    let d = args.split(',').next()?.trim();
    if !clamped.contains(&d) {
        return None;
    }
    let (indent, p, nl) = line_parts(line)?;
    Some(format!(
        "{}\n{indent}{{ .reg .b32 %cj_tid; {p}mov.u32 %cj_tid, %tid.x; {p}shr.u32 %cj_tid, \
         %cj_tid, 16; {p}or.b32 {d}, {d}, %cj_tid; }}{nl}",
        line.trim_end_matches('\n')
    ))
}

/// `(indent, "@p " or "", newline or "")` of an instruction line.
fn line_parts(line: &str) -> Option<(&str, String, &str)> {
    let (pred, _, _) = instruction(line)?;
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let p = if pred.is_empty() {
        String::new()
    } else {
        format!("@{pred} ")
    };
    Some((indent, p, if line.ends_with('\n') { "\n" } else { "" }))
}

/// Rewrite 9: a float `selp` with an immediate -0.0 operand, that operand made opaque
/// (`(tid.x >> 16) | sign bit`).
fn opaque_minus_zero_select(line: &str) -> Option<String> {
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
        format!(
            "{p}mov.u32 %cj_z, %tid.x; {p}shr.u32 %cj_z, %cj_z, 16; {p}or.b32 %cj_z, %cj_z, \
             0x80000000;"
        )
    } else {
        format!(
            "{p}mov.u32 %cj_tid, %tid.x; {p}shr.u32 %cj_tid, %cj_tid, 16; {p}cvt.u64.u32 %cj_z, \
             %cj_tid; {p}or.b64 %cj_z, %cj_z, 0x8000000000000000;"
        )
    };
    let (a, b) = (
        if a == zero { "%cj_z" } else { a },
        if b == zero { "%cj_z" } else { b },
    );
    Some(format!(
        "{indent}{reg}{make} {p}{op} {d}, {a}, {b}, {q}; }}{nl}"
    ))
}

/// For each line of `func`, whether it lies in a loop: between a label and a later branch
/// back to it (rewrite 10).
fn loop_lines(func: &str) -> Vec<bool> {
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
fn opaque_bits_to_float(line: &str) -> Option<String> {
    let (_, op, args) = instruction(line)?;
    let (d, a) = args.split_once(',')?;
    let (d, a) = (d.trim(), a.trim());
    let wide = match op {
        "mov.b32" if d.starts_with("%f") && a.starts_with("%r") => false,
        "mov.b64" if d.starts_with("%fd") && a.starts_with("%rd") => true,
        _ => return None,
    };
    let (indent, p, nl) = line_parts(line)?;
    let get = format!("{p}mov.u32 %cj_tid, %tid.x; {p}shr.u32 %cj_tid, %cj_tid, 16;");
    Some(if wide {
        format!(
            "{indent}{{ .reg .b32 %cj_tid; .reg .b64 %cj_t; {get} {p}cvt.u64.u32 %cj_t, %cj_tid; \
             {p}or.b64 {d}, {a}, %cj_t; }}{nl}"
        )
    } else {
        format!("{indent}{{ .reg .b32 %cj_tid; {get} {p}or.b32 {d}, {a}, %cj_tid; }}{nl}")
    })
}

/// Rewrite 4 of one line: a `mov` of 1.0f's bits into a register of `both`.
fn opaque_one_f32(line: &str, both: &[&str]) -> Option<String> {
    let (d, wide, v) = mov_imm(line)?;
    if !is_one_f32(v) || !both.contains(&d) {
        return None;
    }
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let pred = match body.strip_prefix('@') {
        Some(_) => format!("{} ", body.split_once(char::is_whitespace)?.0),
        None => String::new(),
    };
    let nl = if line.ends_with('\n') { "\n" } else { "" };
    let set = if wide {
        format!("{pred}or.b32 %cj_tid, %cj_tid, 1065353216; {pred}cvt.u64.u32 {d}, %cj_tid;")
    } else {
        format!("{pred}or.b32 {d}, %cj_tid, 1065353216;")
    };
    Some(format!(
        "{indent}{{ .reg .b32 %cj_tid; {pred}mov.u32 %cj_tid, %tid.x; {pred}shr.u32 %cj_tid, \
         %cj_tid, 16; {set} }}{nl}"
    ))
}

/// The integer registers that some `mov.b32 %fN, %rM` moves into a float register (a
/// bitcast) in function `func`. (Per function: register names repeat between functions, and
/// an integer register that is not a float must not get rewrite 3's float add - ptxas took
/// `selp.u32 r, 1, 0, p; add.f32 r, r, -0.0` used as a shift amount for 0, fuzzer seeds
/// 14100530 and 14500984, when the set was taken over the whole module.)
fn moved_to_float(func: &str) -> std::collections::HashSet<&str> {
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
fn selects_one_and_zero(args: &str) -> Option<&str> {
    let mut it = args.split(',').map(str::trim);
    let (d, a, b, _p) = (it.next()?, it.next()?, it.next()?, it.next()?);
    let bit = |v: &str| match v {
        "1" | "0f00000001" => Some(1),
        "0" | "0f00000000" => Some(0),
        _ => None,
    };
    (it.next().is_none() && bit(a)? + bit(b)? == 1).then_some(d)
}

/// The replacement of one instruction line, if it needs one.
fn rewrite(line: &str, to_float: &std::collections::HashSet<&str>) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_f32_abs_and_integer_neg_only() {
        let ptx = "\tabs.f32 \t%f3, %f2;\n\tabs.ftz.f32 \t%f4, %f3;\n\tabs.f64 \t%fd2, %fd1;\n\
                   \tneg.s32 \t%r9, %r2;\n\t@%p1 neg.s32 \t%r3, %r3;\n\tneg.s64 \t%rd2, %rd1;\n\
                   \t@%p2 abs.s64 \t%rd3, %rd3;\n\
                   \tneg.f32 \t%f5, %f4;\n\tmin.s32 \t%r4, %r9, %r1;\n";
        let want = "\tand.b32 \t%f3, %f2, 2147483647;\n\tand.b32 \t%f4, %f3, 2147483647;\n\
                    \tand.b64 \t%fd2, %fd1, 0x7FFFFFFFFFFFFFFF;\n\tnot.b32 \t%r9, %r2;\n\tadd.s32 \t%r9, %r9, 1;\n\
                    \t@%p1 not.b32 \t%r3, %r3;\n\t@%p1 add.s32 \t%r3, %r3, 1;\n\
                    \tnot.b64 \t%rd2, %rd1;\n\tadd.s64 \t%rd2, %rd2, 1;\n\
                    \t{ .reg .b64 %cj_s; @%p2 shr.s64 %cj_s, %rd3, 63; @%p2 xor.b64 %rd3, %rd3, \
                    %cj_s; @%p2 sub.s64 %rd3, %rd3, %cj_s; }\n\
                    \txor.b32 \t%f5, %f4, 0x80000000;\n\tmin.s32 \t%r4, %r9, %r1;\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn float_negation_keeps_nan_bits() {
        let ptx =
            "\tneg.f64 \t%fd3, %fd2;\n\t@%p1 neg.ftz.f32 \t%f2, %f1;\n\tneg.s16 \t%rs2, %rs1;\n";
        let want = "\txor.b64 \t%fd3, %fd2, 0x8000000000000000;\n\
                    \t@%p1 xor.b32 \t%f2, %f1, 0x80000000;\n\tneg.s16 \t%rs2, %rs1;\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn f64_min_max_read_as_an_integer_get_an_add_of_minus_zero() {
        let ptx = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
                   \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
        let want = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\
                    \tadd.f64 \t%fd28, %fd28, 0d8000000000000000;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
                    \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn makes_minus_one_opaque_where_it_merges_with_a_computed_value() {
        let ptx = ".func a()\n{\n\tmov.b32 \t%r14, -1;\n\tmov.b32 \t%r13, -1;\n\
                   \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
                   \tmov.u64 \t%rd4, 4294967295;\n\tcvt.u64.u32 \t%rd4, %r14;\n}\n";
        let want =
            ".func a()\n{\n\t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, \
                    %cj_tid, 16; not.b32 %r14, %cj_tid; }\n\tmov.b32 \t%r13, -1;\n\
                    \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    not.b32 %cj_tid, %cj_tid; cvt.u64.u32 %rd4, %cj_tid; }\n\
                    \tcvt.u64.u32 \t%rd4, %r14;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn hides_float_selects_of_one_and_zero() {
        let ptx = "\tselp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n\
                   \t@%p2 selp.f32 \t%f7, 0f00000000, 0f00000001, %p1;\n\
                   \tselp.u32 \t%r3, 1, 0, %p1;\n\tmov.b32 \t%f8, %r3;\n\
                   \tselp.u32 \t%r4, 1, 0, %p1;\n\tselp.f32 \t%f9, 0f00000002, 0f00000000, %p1;\n\
                   \tselp.f32 \t%f10, 0f3F800000, 0f00000000, %p1;\n";
        let want = "\tselp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n\
                    \tadd.f32 \t%f6, %f6, 0f80000000;\n\
                    \t@%p2 selp.f32 \t%f7, 0f00000000, 0f00000001, %p1;\n\
                    \t@%p2 add.f32 \t%f7, %f7, 0f80000000;\n\
                    \tselp.u32 \t%r3, 1, 0, %p1;\n\tadd.f32 \t%r3, %r3, 0f80000000;\n\
                    \tmov.b32 \t%f8, %r3;\n\
                    \tselp.u32 \t%r4, 1, 0, %p1;\n\tselp.f32 \t%f9, 0f00000002, 0f00000000, %p1;\n\
                    \tselp.f32 \t%f10, 0f3F800000, 0f00000000, %p1;\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn makes_one_f32_opaque_beside_minus_one() {
        let ptx = ".func a()\n{\n\tmov.b32 \t%r12, -1;\n\t@%p3 bra \t$L__BB0_4;\n\
                   \tmov.b32 \t%r12, 1065353216;\n\t@%p1 mov.b32 \t%r12, 1065353216;\n\
                   \tmov.b32 \t%r13, 1065353216;\n}\n\
                   .func b()\n{\n\tmov.b32 \t%r12, 1065353216;\n\tmov.u64 \t%rd4, 4294967295;\n\
                   \tmov.u64 \t%rd4, 1065353216;\n}\n";
        let want = ".func a()\n{\n\tmov.b32 \t%r12, -1;\n\t@%p3 bra \t$L__BB0_4;\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    or.b32 %r12, %cj_tid, 1065353216; }\n\
                    \t{ .reg .b32 %cj_tid; @%p1 mov.u32 %cj_tid, %tid.x; @%p1 shr.u32 %cj_tid, \
                    %cj_tid, 16; @%p1 or.b32 %r12, %cj_tid, 1065353216; }\n\
                    \tmov.b32 \t%r13, 1065353216;\n}\n\
                    .func b()\n{\n\tmov.b32 \t%r12, 1065353216;\n\tmov.u64 \t%rd4, 4294967295;\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    or.b32 %cj_tid, %cj_tid, 1065353216; cvt.u64.u32 %rd4, %cj_tid; }\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn converts_a_select_of_one_and_zero_to_float_by_selecting() {
        let ptx = ".func a()\n{\n\tsetp.ne.s64 \t%p10, %rd3, 0;\n\tselp.u32 \t%r4, 1, 0, %p10;\n\
                   \tcvt.rn.f32.u32 \t%f1, %r4;\n\tselp.u64 \t%rd5, 0, 1, %p10;\n\
                   \tcvt.rn.f64.u64 \t%fd1, %rd5;\n\tselp.u32 \t%r6, 1, 0, %p11;\n\
                   \tsetp.eq.s32 \t%p11, %r1, 0;\n\tsetp.eq.s32 \t%p11, %r2, 0;\n\
                   \tcvt.rn.f32.u32 \t%f2, %r6;\n}\n";
        let want = ".func a()\n{\n\tsetp.ne.s64 \t%p10, %rd3, 0;\n\tselp.u32 \t%r4, 1, 0, %p10;\n\
                    \tselp.f32 \t%f1, 0f3F800000, 0f00000000, %p10;\n\tselp.u64 \t%rd5, 0, 1, %p10;\n\
                    \tselp.f64 \t%fd1, 0d0000000000000000, 0d3FF0000000000000, %p10;\n\
                    \tselp.u32 \t%r6, 1, 0, %p11;\n\tsetp.eq.s32 \t%p11, %r1, 0;\n\
                    \tsetp.eq.s32 \t%p11, %r2, 0;\n\tcvt.rn.f32.u32 \t%f2, %r6;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn guards_ex2_against_nan() {
        let ptx = "\tex2.approx.f32 \t%f3, %f2;\n\t@%p1 ex2.approx.ftz.f32 \t%f4, %f3;\n";
        let want = "\t{ .reg .pred %cj_q; .reg .f32 %cj_x; mov.f32 %cj_x, %f2; setp.nan.f32 \
                    %cj_q, %cj_x, %cj_x; ex2.approx.f32 %f3, %cj_x; selp.f32 %f3, %cj_x, %f3, \
                    %cj_q; }\n\t{ .reg .pred %cj_q; .reg .f32 %cj_x; @%p1 mov.f32 %cj_x, %f3; \
                    @%p1 setp.nan.f32 %cj_q, %cj_x, %cj_x; @%p1 ex2.approx.ftz.f32 %f4, %cj_x; \
                    @%p1 selp.f32 %f4, %cj_x, %f4, %cj_q; }\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn keeps_a_min_under_a_max_from_becoming_a_saturation() {
        let ptx = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\tmin.f32 %f10, %f2, %f3;\n\
                   \tmax.f32 %f7, %f9, %f8;\n\tmin.f32 %f11, %f10, %f3;\n}\n";
        let want = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\t{ .reg .b32 %cj_tid; mov.u32 \
                    %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; or.b32 %f8, %f8, %cj_tid; }\n\
                    \tmin.f32 %f10, %f2, %f3;\n\tmax.f32 %f7, %f9, %f8;\n\
                    \tmin.f32 %f11, %f10, %f3;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn float_add_after_a_bool_select_only_where_that_function_moves_it_to_float() {
        let ptx = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
                   .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tmov.b32 \t%f1, %r1;\n}\n";
        let want = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
                    .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\
                    \tadd.f32 \t%r1, %r1, 0f80000000;\n\tmov.b32 \t%f1, %r1;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn makes_minus_zero_in_selects_opaque() {
        let ptx = "\tselp.f32 \t%f1, 0f80000000, 0fBF800000, %p3;\n\
                   \tselp.f64 \t%fd2, %fd1, 0d8000000000000000, %p2;\n\
                   \tselp.f32 \t%f3, 0f00000000, 0fBF800000, %p3;\n";
        let want = "\t{ .reg .b32 %cj_z; mov.u32 %cj_z, %tid.x; shr.u32 %cj_z, %cj_z, 16; \
                    or.b32 %cj_z, %cj_z, 0x80000000; selp.f32 %f1, %cj_z, 0fBF800000, %p3; }\n\
                    \t{ .reg .b32 %cj_tid; .reg .b64 %cj_z; mov.u32 %cj_tid, %tid.x; shr.u32 \
                    %cj_tid, %cj_tid, 16; cvt.u64.u32 %cj_z, %cj_tid; or.b64 %cj_z, %cj_z, \
                    0x8000000000000000; selp.f64 %fd2, %fd1, %cj_z, %p2; }\n\
                    \tselp.f32 \t%f3, 0f00000000, 0fBF800000, %p3;\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn makes_bits_moved_to_float_in_loops_opaque() {
        let ptx = ".func a()\n{\n\tmov.b32 \t%f1, %r1;\n$L__BB0_11:\n\tmov.b32 \t%f23, %r2;\n\
                   \tmov.b64 \t%fd2, %rd3;\n\tmov.b32 \t%r4, %f23;\n\t@%p11 bra \t$L__BB0_11;\n\
                   \tmov.b32 \t%f5, %r2;\n}\n";
        let want = ".func a()\n{\n\tmov.b32 \t%f1, %r1;\n$L__BB0_11:\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    or.b32 %f23, %r2, %cj_tid; }\n\
                    \t{ .reg .b32 %cj_tid; .reg .b64 %cj_t; mov.u32 %cj_tid, %tid.x; shr.u32 \
                    %cj_tid, %cj_tid, 16; cvt.u64.u32 %cj_t, %cj_tid; or.b64 %fd2, %rd3, %cj_t; }\n\
                    \tmov.b32 \t%r4, %f23;\n\t@%p11 bra \t$L__BB0_11;\n\tmov.b32 \t%f5, %r2;\n}\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn leaves_everything_else_alone() {
        let ptx = ".version 7.8\n// abs.f32 in a comment\n\tld.param.u64 \t%rd1, [k_param_0];\n\
                   \tpopc.b32 \t%r2, %r1;\n$L__BB0_2:\n\tret;\n}";
        assert_eq!(work_around_ptxas(ptx), ptx);
    }
}
