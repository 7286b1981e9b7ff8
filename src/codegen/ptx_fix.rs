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
//!    `not.b32 d, a; add.s32 d, d, 1;` (the same two's-complement result).

/// Applies the rewrites above to a whole PTX module's text.
pub(crate) fn work_around_ptxas(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 256);
    for line in ptx.split_inclusive('\n') {
        match rewrite(line) {
            Some(new) => out.push_str(&new),
            None => out.push_str(line),
        }
    }
    out
}

/// The replacement of one instruction line, if it needs one.
fn rewrite(line: &str) -> Option<String> {
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
    let (d, a) = args.split_once(',')?;
    let (d, a) = (d.trim(), a.trim());
    if a.contains(',') || d.is_empty() || a.is_empty() {
        return None;
    }
    let nl = if line.ends_with('\n') { "\n" } else { "" };
    match op {
        "abs.f32" | "abs.ftz.f32" => {
            Some(format!("{indent}{pred}and.b32 \t{d}, {a}, 2147483647;{nl}"))
        }
        "neg.s32" => Some(format!(
            "{indent}{pred}not.b32 \t{d}, {a};\n{indent}{pred}add.s32 \t{d}, {d}, 1;{nl}"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_f32_abs_and_s32_neg_only() {
        let ptx = "\tabs.f32 \t%f3, %f2;\n\tabs.ftz.f32 \t%f4, %f3;\n\tabs.f64 \t%fd2, %fd1;\n\
                   \tneg.s32 \t%r9, %r2;\n\t@%p1 neg.s32 \t%r3, %r3;\n\tneg.s64 \t%rd2, %rd1;\n\
                   \tneg.f32 \t%f5, %f4;\n\tmin.s32 \t%r4, %r9, %r1;\n";
        let want = "\tand.b32 \t%f3, %f2, 2147483647;\n\tand.b32 \t%f4, %f3, 2147483647;\n\
                    \tabs.f64 \t%fd2, %fd1;\n\tnot.b32 \t%r9, %r2;\n\tadd.s32 \t%r9, %r9, 1;\n\
                    \t@%p1 not.b32 \t%r3, %r3;\n\t@%p1 add.s32 \t%r3, %r3, 1;\n\
                    \tneg.s64 \t%rd2, %rd1;\n\tneg.f32 \t%f5, %f4;\n\tmin.s32 \t%r4, %r9, %r1;\n";
        assert_eq!(work_around_ptxas(ptx), want);
    }

    #[test]
    fn leaves_everything_else_alone() {
        let ptx = ".version 7.8\n// abs.f32 in a comment\n\tld.param.u64 \t%rd1, [k_param_0];\n\
                   \tabs.s32 \t%r2, %r1;\n$L__BB0_2:\n\tret;\n}";
        assert_eq!(work_around_ptxas(ptx), ptx);
    }
}
