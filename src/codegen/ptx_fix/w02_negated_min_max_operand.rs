//! Workaround 2: **a negated operand of a min/max chain is dropped**, and the 64-bit `abs`
//! and its negation are mis-ranged.
//!
//! `neg.s32 c2, c; min.s32 t, b, c2; min.s32 r, a, t` is fused into one three-input `VIMNMX3`
//! without the negation, giving `min(a, b, c)` instead of `min(a, b, -c)` (also for `max`, and
//! for `sub 0, c` or `mul c, -1`, which the compiler turns into the same negation; fuzzer seed
//! 84; also `ptxas` 13.0 offline). Written as `not` + `add 1` the negation is kept (`LOP3` +
//! `VIADDMNMX`), so every `neg.s32` becomes `not.b32 d, a; add.s32 d, d, 1;` (the same two's-
//! complement result). A known issue of NVIDIA's compiler on newer GPUs, reported for
//! `max(abs(x), y)` by Triton and PyTorch users (no report of this exact pattern is known).
//!
//! In 64 bits the negation of an `abs` is taken to be below every negative constant:
//! `min(-|x|, c)` gives `-|x|` and `max(-|x|, c)` gives `c` for any c < 0 (ptxas 12.9 to 13.5;
//! fuzzer seed 5200015), so every `neg.s64` likewise becomes `not.b64` + `add.s64 d, d, 1`.
//! And `abs.s64` is taken to be never negative (ptxas 12.9 and the CUDA 13.0 JIT fold
//! `min(|x|, 0)` to 0, wrong for `i64::MIN`, whose wrapping `abs` is itself; fuzzer seed
//! 7100254; 32 bits and ptxas 13.5 are right, but see workaround 12 for 32 bits), so
//! `abs.s64` is written as `s = a >> 63; d = (a ^ s) - s` (the same bits; three instructions
//! for two).

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 2's descriptor.
pub(crate) const W02: Workaround = Workaround {
    id: 2,
    name: "negated_min_max_operand",
    fixes: "a negated operand of an integer min/max chain is dropped; `-|x|` and `|x|` in 64 \
            bits are mis-ranged",
    seen_on: &[
        "CUDA 13.0 driver JIT (driver 580, H200)",
        "ptxas 13.0 (neg.s32)",
        "ptxas 12.9 to 13.5 (neg.s64)",
        "ptxas 12.9 (abs.s64)",
    ],
    seeds: &[84, 5200015, 7100254],
    tests: &[
        "tests/gpu/nan_compares.rs::min_max_chains_with_a_negated_operand",
        "tests/gpu/nan_compares.rs::min_max_of_an_i64_abs_and_its_negation_against_constants",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/tests.rs::rewrites_f32_abs_and_integer_neg_only",
    ],
    upstream: None,
    fixed_in: None,
    // `abs.s64` is right in ptxas 13.5, `neg.s64` is not.
    ptxas_fixed_in: None,
    apply,
};

/// `neg.s32`/`neg.s64` as `not` + `add 1`; `abs.s64` as `(a ^ s) - s` with `s = a >> 63`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter(|(_, _, i)| matches!(i.op, "neg.s32" | "neg.s64" | "abs.s64"))
        .filter_map(|(n, line, i)| {
            let (d, a) = i.two_operands()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            let new = match i.op {
                "neg.s32" => {
                    format!("{indent}{p}not.b32 \t{d}, {a};\n{indent}{p}add.s32 \t{d}, {d}, 1;{nl}")
                }
                "neg.s64" => {
                    format!("{indent}{p}not.b64 \t{d}, {a};\n{indent}{p}add.s64 \t{d}, {d}, 1;{nl}")
                }
                _ => format!(
                    "{indent}{{ .reg .b64 %cj_s; {p}shr.s64 %cj_s, {a}, 63; {p}xor.b64 {d}, {a}, \
                     %cj_s; {p}sub.s64 {d}, {d}, %cj_s; }}{nl}"
                ),
            };
            Some(Edit::Replace(n, new))
        })
        .collect()
}
