//! Workaround 13: **a 16-bit `neg` or `abs` is not wrapped to 16 bits** when its result is
//! widened or compared.
//!
//! The compiler keeps a 16-bit value in a 32-bit register, sign-extended (`PRMT ..., 0x9910`),
//! and takes `neg.s16` and `abs.s16` to commute with that extension: it negates (`IADD3 R, RZ,
//! -R`) or takes the absolute value (`IABS`) of the 32-bit register and then uses the result as
//! already sign-extended. For `i16::MIN` that gives +32768 where the 16-bit result is -32768:
//! `(-x).cast::<i32>()`, `(-x) / y`, `(-x).max(c)` and the narrow atomics' compare-and-swap
//! loops (`atomic_max` of `-x` on an `i16` element) all see +32768 (found by the whole-language
//! campaign on two H200s, seeds 31200006 (block program 14), 33000033, 33100000, 34000003; ptxas
//! 12.9 offline does the same). `i8` arithmetic is done in 16-bit registers too, so its negation
//! goes through the same instruction. Written as `not.b16` + `add.s16 1` (negation) and
//! `s = a >> 15; d = (a ^ s) - s` (absolute value), the compiler re-extends the sum (`VIADD`
//! then `PRMT 0x9910`), which is right; the same bits, two and three instructions for one.

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 13's descriptor.
pub(crate) const W13: Workaround = Workaround {
    id: 13,
    name: "narrow_neg_abs_not_wrapped",
    fixes: "`neg.s16`/`abs.s16` of `i16::MIN` give +32768 once widened or compared",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)", "ptxas 12.9"],
    // Whole-language and block-program seeds (`--lang whole`), which tests/fuzz.rs's replay of
    // the core language's findings does not run: the tests below stand for them.
    seeds: &[],
    tests: &[
        "tests/gpu/narrow_atomics.rs::narrow_min_max_atomics_of_operands_truncated_in_registers",
        "tests/gpu/narrow.rs::narrow_negation_and_abs_of_min_widen_to_rusts_values",
        "src/codegen/ptx_fix/w13_narrow_neg_abs_not_wrapped.rs::writes_neg_and_abs_s16_without_them",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Every `neg.s16 d, a` as `not.b16 d, a; add.s16 d, d, 1`, and every `abs.s16 d, a` as
/// `s = a >> 15; d = (a ^ s) - s`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter(|(_, _, i)| matches!(i.op, "neg.s16" | "abs.s16"))
        .filter_map(|(n, line, i)| {
            let (d, a) = i.two_operands()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            let new = if i.op == "neg.s16" {
                format!("{indent}{p}not.b16 \t{d}, {a};\n{indent}{p}add.s16 \t{d}, {d}, 1;{nl}")
            } else {
                format!(
                    "{indent}{{ .reg .b16 %cj_s; {p}shr.s16 %cj_s, {a}, 15; {p}xor.b16 {d}, {a}, \
                     %cj_s; {p}sub.s16 {d}, {d}, %cj_s; }}{nl}"
                )
            };
            Some(Edit::Replace(n, new))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn writes_neg_and_abs_s16_without_them() {
        let ptx = "\tneg.s16 \t%rs2, %rs1;\n\t@%p1 abs.s16 \t%rs3, %rs3;\n\tneg.s32 \t%r2, %r1;\n";
        let want = "\tnot.b16 \t%rs2, %rs1;\n\tadd.s16 \t%rs2, %rs2, 1;\n\
                    \t{ .reg .b16 %cj_s; @%p1 shr.s16 %cj_s, %rs3, 15; @%p1 xor.b16 %rs3, %rs3, \
                    %cj_s; @%p1 sub.s16 %rs3, %rs3, %cj_s; }\n\
                    \tnot.b32 \t%r2, %r1;\n\tadd.s32 \t%r2, %r2, 1;\n";
        assert_eq!(fix(ptx), want);
    }
}
