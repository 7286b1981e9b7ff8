//! Workaround 10: **integer bits moved into a float register in a loop are evaluated as
//! numbers.**
//!
//! ptxas evaluated a loop with `v2 = f32::from_bits(counter)` and `while 1.75 >= v2` at
//! compile time, comparing the counter's value (2) rather than its bits (a subnormal) with
//! 1.75, and stored the wrong result (fuzzer seed 16501093:
//! `while n < 5 && 1.75 >= v { n += 1; v = f32::from_bits(n) }` stopped at n = 2; ptxas 12.9 to
//! 13.5). A `mov.b32 %f, %r` (or `mov.b64 %fd, %rd`) in a loop becomes an `or` with
//! `tid.x >> 16`, which keeps the loop a loop.

use std::collections::HashMap;

use super::ptx::{tid_zero, Edit, Function, Kind};
use super::registry::Workaround;

/// Workaround 10's descriptor.
pub(crate) const W10: Workaround = Workaround {
    id: 10,
    name: "bits_to_float_in_loop",
    fixes: "a loop over `f32::from_bits(counter)` is evaluated at compile time with the \
            counter's value instead of its bits",
    seen_on: &["ptxas 12.9 to 13.5", "CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[16501093],
    tests: &[
        "tests/gpu/nan_bits.rs::minus_zero_selects_and_bits_to_float_in_loops",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w10_bits_to_float_in_loop.rs::makes_bits_moved_to_float_in_loops_opaque",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Each `mov.b32 %f, %r` / `mov.b64 %fd, %rd` in a loop as an `or` with `tid.x >> 16`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let in_loop = loop_lines(f);
    f.insts()
        .filter(|&(n, _, _)| in_loop[n])
        .filter_map(|(n, line, i)| {
            let (d, a) = i.dest_and_rest()?;
            let wide = match i.op {
                "mov.b32" if d.starts_with("%f") && a.starts_with("%r") => false,
                "mov.b64" if d.starts_with("%fd") && a.starts_with("%rd") => true,
                _ => return None,
            };
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            let get = tid_zero(&p, "%cj_tid");
            Some(Edit::Replace(
                n,
                if wide {
                    format!(
                        "{indent}{{ .reg .b32 %cj_tid; .reg .b64 %cj_t; {get} {p}cvt.u64.u32 \
                         %cj_t, %cj_tid; {p}or.b64 {d}, {a}, %cj_t; }}{nl}"
                    )
                } else {
                    format!(
                        "{indent}{{ .reg .b32 %cj_tid; {get} {p}or.b32 {d}, {a}, %cj_tid; }}{nl}"
                    )
                },
            ))
        })
        .collect()
}

/// For each line, whether it lies in a loop: between a label and a later branch back to it.
fn loop_lines(f: &Function<'_>) -> Vec<bool> {
    let mut in_loop = vec![false; f.lines.len()];
    let mut labels = HashMap::new();
    for (j, line) in f.lines.iter().enumerate() {
        match &line.kind {
            Kind::Label(l) => {
                labels.insert(*l, j);
            }
            Kind::Inst(i) if i.op == "bra" || i.op == "bra.uni" => {
                if let Some(&start) = labels.get(i.args) {
                    in_loop[start..=j].iter_mut().for_each(|b| *b = true);
                }
            }
            _ => {}
        }
    }
    in_loop
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn makes_bits_moved_to_float_in_loops_opaque() {
        let ptx = ".func a()\n{\n\tmov.b32 \t%f1, %r1;\n$L__BB0_11:\n\tmov.b32 \t%f23, %r2;\n\
                   \tmov.b64 \t%fd2, %rd3;\n\tmov.b32 \t%r4, %f23;\n\t@%p11 bra \t$L__BB0_11;\n\
                   \tmov.b32 \t%f5, %r2;\n}\n";
        let want = ".func a()\n{\n\tmov.b32 \t%f1, %r1;\n$L__BB0_11:\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    or.b32 %f23, %r2, %cj_tid; }\n\
                    \t{ .reg .b32 %cj_tid; .reg .b64 %cj_t; mov.u32 %cj_tid, %tid.x; shr.u32 \
                    %cj_tid, %cj_tid, 16; cvt.u64.u32 %cj_t, %cj_tid; or.b64 %fd2, %rd3, %cj_t; }\n\
                    \tmov.b32 \t%r4, %f23;\n\t@%p11 bra \t$L__BB0_11;\n\tmov.b32 \t%f5, %r2;\n}\n";
        assert_eq!(fix(ptx), want);
    }
}
