//! Workaround 9: **a select of -0.0 and another constant loses the sign of zero.**
//!
//! ptxas turns `selp.f32 f, 0f80000000, 0fBF800000, p` (-0.0 or -1.0) into a conversion of a
//! select of 0 and -1 (`I2FP`), which gives +0.0 (fuzzer seeds 16100220, 16400609:
//! `-tiny.floor()` and `(-0.0).sqrt()`, folded by LLVM to -0.0, selected against -1.0). An
//! immediate -0.0 in a float `selp` becomes a register holding `(tid.x >> 16) | sign bit`.

use super::ptx::{tid_zero, Edit, Function};
use super::registry::Workaround;

/// Workaround 9's descriptor.
pub(crate) const W09: Workaround = Workaround {
    id: 9,
    name: "minus_zero_select",
    fixes: "a float select of an immediate -0.0 and another constant gives +0.0",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[16100220, 16400609],
    tests: &[
        "tests/gpu/nan_bits.rs::minus_zero_selects_and_bits_to_float_in_loops",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w09_minus_zero_select.rs::makes_minus_zero_in_selects_opaque",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// A float `selp` with an immediate -0.0 operand, that operand made opaque.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            let (zero, reg) = match i.op {
                "selp.f32" => ("0f80000000", "{ .reg .b32 %cj_z; "),
                "selp.f64" => (
                    "0d8000000000000000",
                    "{ .reg .b32 %cj_tid; .reg .b64 %cj_z; ",
                ),
                _ => return None,
            };
            let [d, a, b, q] = i.operands[..] else {
                return None;
            };
            if a != zero && b != zero {
                return None;
            }
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            let make = if i.op == "selp.f32" {
                let zero = tid_zero(&p, "%cj_z");
                format!("{zero} {p}or.b32 %cj_z, %cj_z, 0x80000000;")
            } else {
                let zero = tid_zero(&p, "%cj_tid");
                format!(
                    "{zero} {p}cvt.u64.u32 %cj_z, %cj_tid; {p}or.b64 %cj_z, %cj_z, \
                     0x8000000000000000;"
                )
            };
            let (a, b) = (
                if a == zero { "%cj_z" } else { a },
                if b == zero { "%cj_z" } else { b },
            );
            let op = i.op;
            Some(Edit::Replace(
                n,
                format!("{indent}{reg}{make} {p}{op} {d}, {a}, {b}, {q}; }}{nl}"),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

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
        assert_eq!(fix(ptx), want);
    }
}
