//! Workaround 15: **a volatile load from a warp-uniform address is taken for a warp-uniform
//! value, in code where the warp is diverged.**
//!
//! `atomic_load` is `ld.volatile` (a relaxed load). After a compare-and-swap loop (the float
//! min/max atomics, the narrow ones) the lanes of a warp leave the loop at different times and
//! each runs the next loads on its own, so a lane may read a word after another lane's atomic
//! changed it. ptxas still treats the value of a load from a warp-uniform address as the same
//! in every lane: a later `atom.add` whose operand it computes from that value becomes one
//! warp-aggregated atomic, the leader adding `operand * active lanes` and every lane getting
//! `leader's old + its own operand * its rank`, right only if the operand is the same in
//! every lane. The block programs of the whole-language campaign found it
//! (seed 45900117, program 2, on an H100 with driver 580, three runs of three): 124 lanes
//! subtracting 2 and 4 subtracting 3 from one word; the word lost 2 for each of the four,
//! and each of their old values was `rank` too low, their own operand 3 times their rank taken
//! for the leader's 2 (`ptxas` 12.9 offline emits the same
//! `VOTEU.ANY`/`UPOPC`/`IMAD R, operand, UR_count` aggregation). Each volatile (or relaxed)
//! load's value is ORed with a zero ptxas cannot see as one (`%tid.x >> 16`), which makes it a
//! per-lane value: ptxas then aggregates with a per-lane scan (`SHFL.UP`), which is right.

use super::ptx::{tid_zero, Edit, Function};
use super::registry::Workaround;

/// Workaround 15's descriptor.
pub(crate) const W15: Workaround = Workaround {
    id: 15,
    name: "volatile_load_taken_as_uniform",
    fixes: "a volatile load from a uniform address taken as the same value in every lane of a diverged warp",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H100)", "ptxas 12.9"],
    // A block-program seed (`--blocks`), which tests/fuzz.rs's replay of tree and program
    // batches does not run: the tests below stand for it.
    seeds: &[],
    tests: &[
        "tests/fuzz.rs::block_program_findings_match_the_host_model_on_the_gpu",
        "tests/codegen/atomics.rs::volatile_loads_are_ored_with_a_hidden_zero",
        "src/codegen/ptx_fix/w15_volatile_load_taken_as_uniform.rs::ors_each_volatile_load_with_a_hidden_zero",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// The width of a destination register from its name (`%rs` 16, `%r`/`%f` 32, `%rd`/`%fd` 64).
fn width(reg: &str) -> Option<u32> {
    let name = reg
        .strip_prefix('%')?
        .trim_end_matches(|c: char| c.is_ascii_digit());
    match name {
        "rs" | "h" => Some(16),
        "r" | "f" => Some(32),
        "rd" | "fd" => Some(64),
        _ => None,
    }
}

/// Every `ld.volatile.*`/`ld.relaxed.*` of one register `d` as itself followed by
/// `or d, d, zero` of `d`'s width.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            if !(i.op.starts_with("ld.volatile.") || i.op.starts_with("ld.relaxed.")) {
                return None;
            }
            let [d, _] = i.operands[..] else {
                return None; // vector loads are not emitted for atomic loads
            };
            let p = line.guard_prefix();
            let zero = tid_zero(&p, "%cj_tid");
            let or = match width(d)? {
                16 => format!(
                    "{{ .reg .b32 %cj_tid; .reg .b16 %cj_h; {zero} {p}cvt.u16.u32 %cj_h, %cj_tid; \
                     {p}or.b16 {d}, {d}, %cj_h; }}"
                ),
                32 => format!("{{ .reg .b32 %cj_tid; {zero} {p}or.b32 {d}, {d}, %cj_tid; }}"),
                _ => format!(
                    "{{ .reg .b32 %cj_tid; .reg .b64 %cj_t; {zero} {p}cvt.u64.u32 %cj_t, %cj_tid; \
                     {p}or.b64 {d}, {d}, %cj_t; }}"
                ),
            };
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n{}{or}{}",
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
    fn ors_each_volatile_load_with_a_hidden_zero() {
        let ptx = "\tld.volatile.global.u32 \t%r32, [%rd19];\n\
                   \t@%p2 ld.volatile.shared.f64 \t%fd8, [%r15];\n\
                   \tld.volatile.shared.u8 \t%rs3, [%r4+2];\n\
                   \tld.global.u32 \t%r33, [%rd19];\n";
        let want = "\tld.volatile.global.u32 \t%r32, [%rd19];\n\
                    \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                    or.b32 %r32, %r32, %cj_tid; }\n\
                    \t@%p2 ld.volatile.shared.f64 \t%fd8, [%r15];\n\
                    \t{ .reg .b32 %cj_tid; .reg .b64 %cj_t; @%p2 mov.u32 %cj_tid, %tid.x; @%p2 \
                    shr.u32 %cj_tid, %cj_tid, 16; @%p2 cvt.u64.u32 %cj_t, %cj_tid; \
                    @%p2 or.b64 %fd8, %fd8, %cj_t; }\n\
                    \tld.volatile.shared.u8 \t%rs3, [%r4+2];\n\
                    \t{ .reg .b32 %cj_tid; .reg .b16 %cj_h; mov.u32 %cj_tid, %tid.x; shr.u32 \
                    %cj_tid, %cj_tid, 16; cvt.u16.u32 %cj_h, %cj_tid; or.b16 %rs3, %rs3, %cj_h; }\n\
                    \tld.global.u32 \t%r33, [%rd19];\n";
        assert_eq!(fix(ptx), want);
    }
}
