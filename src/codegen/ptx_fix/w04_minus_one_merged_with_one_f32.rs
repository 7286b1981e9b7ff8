//! Workaround 4: **a register set to -1 on one path and to the bits of 1.0f on another keeps
//! -1.** (Also a 64-bit register whose low half is all ones, beside 1.0f's bits zero-extended.)
//!
//! `mov.b32 r, -1; @p bra L; mov.b32 r, 1065353216; L:` is compiled as if `r` were always -1
//! (ptxas 12.9 and the CUDA 13.0 driver's JIT; ptxas 13.5 compiles it right; fuzzer seed
//! 2400519: a `u32` variable holding `u32::MAX`, then `1.0f32.to_bits()` inside a loop).
//! Perhaps both are taken for "true" (as `set.u32` and `set.f32` write it). Constant folding
//! happens first, so the 1.0f must be a run-time value: in a function that sets a register to
//! both, each 1.0f is written `(tid.x >> 16) | 1065353216` (tid.x < 1024, so the same bits; two
//! instructions, on that path only).
//!
//! The same merge happens when the 1.0f is not a literal in the PTX but a value ptxas folds to
//! one (`cvt.rn.f32.u32` of a register holding 1, once LLVM has propagated the constant into an
//! int-to-float cast; the regression test failed that way on the H200). So the -1 is made
//! opaque too: a `mov` of -1 (or of a 64-bit value whose low half is all ones) into a register
//! that something other than immediate `mov`s also writes becomes `~(tid.x >> 16)` (the high
//! half or-ed in, in 64 bits). A merge of -1 and 0 alone (a boolean) is left as it is.
//!
//! Fixed in ptxas 13.5; which driver's JIT has the fix is not known (no driver newer than CUDA
//! 13.0 has been tried), so it applies to every driver.

use super::ptx::{tid_zero, Edit, Function, Inst};
use super::registry::Workaround;
use crate::context::DriverVersion;

/// Workaround 4's descriptor.
pub(crate) const W04: Workaround = Workaround {
    id: 4,
    name: "minus_one_merged_with_one_f32",
    fixes: "a register set to -1 on one path and to 1.0f's bits on another is taken to be -1",
    seen_on: &["ptxas 12.9", "CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[2400519],
    tests: &[
        "tests/gpu/nan_compares.rs::a_variable_set_to_minus_one_then_to_the_bits_of_one",
        "tests/gpu/nan_compares.rs::the_fuzzers_minus_one_then_one_f32_program",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w04_minus_one_merged_with_one_f32.rs::makes_one_f32_opaque_beside_minus_one",
        "src/codegen/ptx_fix/w04_minus_one_merged_with_one_f32.rs::makes_minus_one_opaque_where_it_merges_with_a_computed_value",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: Some(DriverVersion {
        major: 13,
        minor: 5,
    }),
    apply,
};

/// The 1.0f beside a -1, and the -1 beside a computed value, made run-time values.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let movs: Vec<(usize, (&str, bool, u64))> = f
        .insts()
        .filter_map(|(n, _, i)| Some((n, mov_imm(i)?)))
        .collect();
    let defs = f.write_counts();
    let minus_one_to = |d: &str| movs.iter().any(|(_, m)| m.0 == d && is_minus_one(m.2));
    let imms_to = |d: &str| movs.iter().filter(|(_, m)| m.0 == d).count();
    let mut edits = Vec::new();
    for &(n, (d, wide, v)) in &movs {
        let line = &f.lines[n];
        let (indent, pred, nl) = (line.indent, line.guard_prefix(), line.newline());
        let zero = tid_zero(&pred, "%cj_tid");
        let set = if is_one_f32(v) && minus_one_to(d) {
            if wide {
                format!(
                    "{pred}or.b32 %cj_tid, %cj_tid, 1065353216; {pred}cvt.u64.u32 {d}, %cj_tid;"
                )
            } else {
                format!("{pred}or.b32 {d}, %cj_tid, 1065353216;")
            }
        } else if is_minus_one(v) && defs.get(d).copied().unwrap_or(0) > imms_to(d) {
            let high = v & !0xFFFF_FFFF;
            if wide {
                let or = if high == 0 {
                    String::new()
                } else {
                    format!(" {pred}or.b64 {d}, {d}, {high:#x};")
                };
                format!("{pred}not.b32 %cj_tid, %cj_tid; {pred}cvt.u64.u32 {d}, %cj_tid;{or}")
            } else {
                format!("{pred}not.b32 {d}, %cj_tid;")
            }
        } else {
            continue;
        };
        edits.push(Edit::Replace(
            n,
            format!("{indent}{{ .reg .b32 %cj_tid; {zero} {set} }}{nl}"),
        ));
    }
    edits
}

/// `(register, 64-bit?, value)` of a 32- or 64-bit `mov` of an immediate (guarded or not).
fn mov_imm<'a>(i: &Inst<'a>) -> Option<(&'a str, bool, u64)> {
    let wide = match i.op {
        "mov.b32" | "mov.u32" | "mov.s32" | "mov.f32" => false,
        "mov.b64" | "mov.u64" | "mov.s64" => true,
        _ => return None,
    };
    let (d, v) = i.dest_and_rest()?;
    let value = if let Some(h) = v.strip_prefix("0f").or_else(|| v.strip_prefix("0x")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(n) = v.strip_prefix('-') {
        n.parse::<u64>().ok()?.wrapping_neg()
    } else {
        v.parse().ok()?
    };
    Some((d, wide, value))
}

/// Whether a `mov`'s value has the low 32 bits of -1 (`true` as `set.u32` writes it).
fn is_minus_one(v: u64) -> bool {
    v as u32 == u32::MAX
}

/// Whether a `mov`'s value is the bits of 1.0f (zero-extended in a 64-bit register).
fn is_one_f32(v: u64) -> bool {
    v == 0x3F80_0000
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn makes_minus_one_opaque_where_it_merges_with_a_computed_value() {
        let ptx = ".func a()\n{\n\tmov.b32 \t%r14, -1;\n\tmov.b32 \t%r13, -1;\n\
                   \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
                   \tmov.u64 \t%rd4, 4294967295;\n\tcvt.u64.u32 \t%rd4, %r14;\n}\n";
        let want = ".func a()\n{\n\t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 \
                    %cj_tid, %cj_tid, 16; not.b32 %r14, %cj_tid; }\n\tmov.b32 \t%r13, -1;\n\
                    \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    not.b32 %cj_tid, %cj_tid; cvt.u64.u32 %rd4, %cj_tid; }\n\
                    \tcvt.u64.u32 \t%rd4, %r14;\n}\n";
        assert_eq!(fix(ptx), want);
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
        assert_eq!(fix(ptx), want);
    }
}
