//! Workaround 12: **`abs.s32` is taken to be never negative** (as `abs.s64` in workaround 2).
//!
//! `abs(i32::MIN) % 194670849` (Rust: -6104309) was computed as an unsigned remainder,
//! +6104309 (fuzzer seed 20200051: `v.max(-v)` for `v = i32::MIN`, which LLVM turns into
//! `abs`; ptxas 12.9 and the CUDA 13.0 JIT then drop the remainder's sign test). `abs.s32` is
//! written as `s = a >> 31; d = (a ^ s) - s` (the same bits; three instructions for one).

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 12's descriptor.
pub(crate) const W12: Workaround = Workaround {
    id: 12,
    name: "abs_s32_never_negative",
    fixes: "`abs.s32` is taken to be never negative (wrong for `i32::MIN`)",
    seen_on: &["ptxas 12.9", "CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[20200051],
    tests: &[
        "tests/gpu/nan_bits.rs::remainder_of_an_i32_abs_of_min",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w12_abs_s32_never_negative.rs::writes_abs_s32_with_a_shift",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Every `abs.s32 d, a` as `s = a >> 31; d = (a ^ s) - s`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts_of("abs.s32")
        .filter_map(|(n, line, i)| {
            let (d, a) = i.two_operands()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            Some(Edit::Replace(
                n,
                format!(
                    "{indent}{{ .reg .b32 %cj_s; {p}shr.s32 %cj_s, {a}, 31; {p}xor.b32 {d}, {a}, \
                     %cj_s; {p}sub.s32 {d}, {d}, %cj_s; }}{nl}"
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn writes_abs_s32_with_a_shift() {
        let ptx = "\tabs.s32 \t%r2, %r1;\n\t@%p1 abs.s32 \t%r3, %r3;\n\tabs.bf16 \t%rs2, %rs1;\n";
        let want = "\t{ .reg .b32 %cj_s; shr.s32 %cj_s, %r1, 31; xor.b32 %r2, %r1, %cj_s; \
                    sub.s32 %r2, %r2, %cj_s; }\n\
                    \t{ .reg .b32 %cj_s; @%p1 shr.s32 %cj_s, %r3, 31; @%p1 xor.b32 %r3, %r3, \
                    %cj_s; @%p1 sub.s32 %r3, %r3, %cj_s; }\n\tabs.bf16 \t%rs2, %rs1;\n";
        assert_eq!(fix(ptx), want);
    }
}
