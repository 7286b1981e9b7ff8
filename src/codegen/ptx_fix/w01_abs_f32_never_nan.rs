//! Workaround 1: **`abs.f32` is assumed never NaN.**
//!
//! `abs.f32 %f2, %f1; setp.gt.f32 %p1, %f2, -1.5` is folded to true, so `x.abs() > -1.5` holds
//! for a NaN `x` (also `>= c` for c <= 0, and `-x.abs() < c` for c > 0). f64 is not affected.
//! The same bits computed with an integer `and` are compared correctly, so every `abs.f32` /
//! `abs.ftz.f32` becomes `and.b32 d, a, 0x7FFFFFFF` (identical bits; with fastmath a subnormal
//! input keeps its magnitude instead of flushing to +0, which any later `.ftz` operation
//! flushes anyway). It also covers the `fabs` that LLVM and libdevice emit.
//!
//! Found from issue 10's report (`select(Expr::lit(-1.5f32).lt(y.abs()), -7.25, y.max(x))`
//! gave -7.25 for y = NaN), not by the fuzzer, and probed with hand-written PTX on the H200.

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 1's descriptor.
pub(crate) const W01: Workaround = Workaround {
    id: 1,
    name: "abs_f32_never_nan",
    fixes: "`abs.f32` compared with a constant is folded as if it could not be NaN",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[],
    tests: &[
        "tests/gpu/nan_compares.rs::comparisons_of_nan_results_against_constants_f32",
        "tests/gpu/nan_compares.rs::issue_abs_nan_select",
        "src/codegen/ptx_fix/tests.rs::rewrites_f32_abs_and_integer_neg_only",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Every `abs.f32` / `abs.ftz.f32` as an `and` with 0x7FFFFFFF.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter(|(_, _, i)| matches!(i.op, "abs.f32" | "abs.ftz.f32"))
        .filter_map(|(n, line, i)| {
            let (d, a) = i.two_operands()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            Some(Edit::Replace(
                n,
                format!("{indent}{p}and.b32 \t{d}, {a}, 2147483647;{nl}"),
            ))
        })
        .collect()
}
