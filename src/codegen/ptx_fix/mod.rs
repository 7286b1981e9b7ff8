//! Rewrites of the PTX that LLVM emits, around miscompilations in NVIDIA's PTX compiler (the
//! driver's JIT and `ptxas`, CUDA 12.9 and 13.0, seen on an H200 with driver 580). All were
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
//!     `undef.rs` (fuzzer seed 18500719): every register that some path may read before
//!     writing gets a zero at the function's entry.
//! 12. **`abs.s32` is taken to be never negative** (like `abs.s64` in rewrite 2):
//!     `abs(i32::MIN) % 194670849` (Rust: -6104309) was computed as an unsigned remainder,
//!     +6104309 (fuzzer seed 20200051: `v.max(-v)` for `v = i32::MIN`, which LLVM turns into
//!     `abs`). `abs.s32` is written as `s = a >> 31; d = (a ^ s) - s` too.

mod floats;
mod lines;
mod merges;
mod selects;
#[cfg(test)]
mod tests;
mod undef;

use floats::{
    f64_read_as_int, keep_min_max_f64, loop_lines, mins_under_a_max, nan_guarded_ex2,
    opaque_bits_to_float, opaque_min_under_a_max,
};
use lines::rewrite;
use merges::{merged_minus_ones, minus_one_and_one_f32, opaque_minus_one, opaque_one_f32};
use selects::{bool_selects, float_of_bool, moved_to_float, opaque_minus_zero_select};

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
        let zeros = undef::zero_maybe_undefined(func);
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
pub(super) fn functions(ptx: &str) -> Vec<&str> {
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
pub(super) fn instruction(line: &str) -> Option<(&str, &str, &str)> {
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
pub(super) fn definitions(func: &str) -> std::collections::HashMap<&str, usize> {
    let mut defs = std::collections::HashMap::new();
    for line in func.lines() {
        let Some((_, op, args)) = instruction(line) else {
            continue;
        };
        if writes_nothing(op) {
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

/// Whether an opcode writes no register (its first operand, if any, is read).
pub(super) fn writes_nothing(op: &str) -> bool {
    [
        "st.", "bra", "call", "ret", "exit", "bar", "membar", "fence", "red.", "prefetch", "trap",
    ]
    .iter()
    .any(|p| op.starts_with(p))
}

/// `{p}mov.u32 r, %tid.x; {p}shr.u32 r, r, 16;`: a zero that ptxas cannot see as one
/// (tid.x < 1024), the run-time value behind rewrites 4, 8, 9 and 10.
pub(super) fn tid_zero(p: &str, r: &str) -> String {
    format!("{p}mov.u32 {r}, %tid.x; {p}shr.u32 {r}, {r}, 16;")
}

/// `(indent, "@p " or "", newline or "")` of an instruction line.
pub(super) fn line_parts(line: &str) -> Option<(&str, String, &str)> {
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
