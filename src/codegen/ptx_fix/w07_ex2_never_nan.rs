//! Workaround 7: **`ex2.approx.f32` is assumed never NaN.**
//!
//! ptxas folds `ex2(x) >= c` and `ex2(x) > c` for c <= 0 to true (ptxas 12.9 to 13.5), wrong
//! for a NaN `x`; `exp2`, `exp` and `powf` (libdevice's and the fast ones) are built on it
//! (`0.0 <= (-x).sqrt().exp2()` was true for x = 118.75, fuzzer seed 14400471). Each
//! `ex2.approx` becomes `isnan(a) ? a : ex2(a)` (`setp.nan` + `selp`; the same value, and
//! ptxas no longer knows its range).

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 7's descriptor.
pub(crate) const W07: Workaround = Workaround {
    id: 7,
    name: "ex2_never_nan",
    fixes: "`ex2.approx.f32` compared with a constant <= 0 is folded as if it could not be NaN",
    seen_on: &[
        "ptxas 12.9 to 13.5",
        "CUDA 13.0 driver JIT (driver 580, H200)",
    ],
    seeds: &[14400471],
    tests: &[
        "tests/gpu/nan_bits.rs::exp2_comparisons_and_min_then_max_clamps_with_nan",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w07_ex2_never_nan.rs::guards_ex2_against_nan",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// `ex2.approx[.ftz].f32 d, a` as `isnan(a) ? a : ex2(a)`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            let ftz = match i.op {
                "ex2.approx.f32" => "",
                "ex2.approx.ftz.f32" => ".ftz",
                _ => return None,
            };
            let (d, a) = i.dest_and_rest()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            Some(Edit::Replace(
                n,
                format!(
                    "{indent}{{ .reg .pred %cj_q; .reg .f32 %cj_x; {p}mov.f32 %cj_x, {a}; \
                     {p}setp.nan.f32 %cj_q, %cj_x, %cj_x; {p}ex2.approx{ftz}.f32 {d}, %cj_x; \
                     {p}selp.f32 {d}, %cj_x, {d}, %cj_q; }}{nl}"
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn guards_ex2_against_nan() {
        let ptx = "\tex2.approx.f32 \t%f3, %f2;\n\t@%p1 ex2.approx.ftz.f32 \t%f4, %f3;\n";
        let want = "\t{ .reg .pred %cj_q; .reg .f32 %cj_x; mov.f32 %cj_x, %f2; setp.nan.f32 \
                    %cj_q, %cj_x, %cj_x; ex2.approx.f32 %f3, %cj_x; selp.f32 %f3, %cj_x, %f3, \
                    %cj_q; }\n\t{ .reg .pred %cj_q; .reg .f32 %cj_x; @%p1 mov.f32 %cj_x, %f3; \
                    @%p1 setp.nan.f32 %cj_q, %cj_x, %cj_x; @%p1 ex2.approx.ftz.f32 %f4, %cj_x; \
                    @%p1 selp.f32 %f4, %cj_x, %f4, %cj_q; }\n";
        assert_eq!(fix(ptx), want);
    }
}
