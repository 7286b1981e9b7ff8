//! Workaround 8: **a clamp written min-then-max is turned into a saturation.**
//!
//! `max(min(x, 1.0), 0.0)` (also when the 0.0 is folded from `max(NaN, 0.0)`) becomes
//! `FADD.SAT`, which gives 0 for a NaN `x` where minNum/maxNum give 1 (fuzzer seed 14300702:
//! `x.min(1.0).max(NaN.max(0.0))`; the max-then-min order is right either way). An f32 `min`
//! whose result an f32 `max` reads is followed by `or.b32 d, d, tid.x >> 16` (zero, but not to
//! ptxas), which keeps the two instructions.

use super::ptx::{tid_zero, Edit, Function};
use super::registry::Workaround;

/// Workaround 8's descriptor.
pub(crate) const W08: Workaround = Workaround {
    id: 8,
    name: "min_max_clamp_saturates",
    fixes: "an f32 `max(min(x, 1), 0)` becomes a saturating add, which maps NaN to 0",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[14300702],
    tests: &[
        "tests/gpu/nan_bits.rs::exp2_comparisons_and_min_then_max_clamps_with_nan",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w08_min_max_clamp_saturates.rs::keeps_a_min_under_a_max_from_becoming_a_saturation",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Whether `op` is the f32 form of `what` (`min`/`max`), with or without `.ftz`.
fn is_f32(op: &str, what: &str) -> bool {
    op.strip_prefix(what)
        .is_some_and(|rest| rest == ".f32" || rest == ".ftz.f32")
}

/// Each f32 `min` whose register an f32 `max` reads, followed by an `or` with `tid.x >> 16`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter(|(_, _, i)| is_f32(i.op, "min"))
        .filter_map(|(n, line, i)| {
            let d = i.dest()?;
            if !f.readers(d).any(|(_, r)| is_f32(r.op, "max")) {
                return None;
            }
            let p = line.guard_prefix();
            let zero = tid_zero(&p, "%cj_tid");
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n{}{{ .reg .b32 %cj_tid; {zero} {p}or.b32 {d}, {d}, %cj_tid; }}{}",
                    line.without_newline(),
                    line.indent,
                    line.newline()
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn keeps_a_min_under_a_max_from_becoming_a_saturation() {
        let ptx = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\tmin.f32 %f10, %f2, %f3;\n\
                   \tmax.f32 %f7, %f9, %f8;\n\tmin.f32 %f11, %f10, %f3;\n}\n";
        let want = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\t{ .reg .b32 %cj_tid; mov.u32 \
                    %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; or.b32 %f8, %f8, %cj_tid; }\n\
                    \tmin.f32 %f10, %f2, %f3;\n\tmax.f32 %f7, %f9, %f8;\n\
                    \tmin.f32 %f11, %f10, %f3;\n}\n";
        assert_eq!(fix(ptx), want);
    }
}
