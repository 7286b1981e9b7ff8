//! Workaround 16: **a warp vote's result is taken for a warp-uniform value, in code where the
//! warp is diverged.**
//!
//! ptxas (12.9, 13.0 and 13.5 offline, sm_90) treats the results of `vote.sync` (`all`, `any`,
//! `uni`, `ballot`), of `activemask`, of `match.all.sync`, of `shfl.sync.idx` and of
//! `redux.sync` as the same in every lane of the warp, whatever the member mask. That holds
//! for the lanes of the mask only: when the mask is `activemask` (or any partial mask) and the
//! warp is split, each group of lanes votes on its own and the groups get different results.
//! A branch on such a result is then compiled as a uniform branch: no `BSSY`/`BSYNC` around
//! it, and a value that merges the two sides (LLVM's phi of the store slot 7 or 8 after an
//! `if`/`else` whose sides store to different slots) is kept in a **uniform register**
//! (`UMOV UR7, 0x7` on one side, `UMOV UR7, 0x8` on the other). Each group of lanes writes the
//! warp's one `UR7` on its side, and a lane that ran its side before the other group ran the
//! other reads the other side's value.
//!
//! The block programs of the whole-language campaign found it (seed 44300041, program 20, on
//! an H100 with driver 580, three runs of three): after a phase whose compare-and-swap loop
//! had split warp 1 (its lanes 3 and 20 each alone, `activemask` 0x8 and 0x100000), each of
//! the two ran `all_sync(activemask, ..)` alone and got true; the other lanes got false. In the
//! next phase lane 3 took the `if`'s side (its `v5` was set by the side's `atomic_max`, `v6`
//! was not) but stored the old value to the `else` side's slot 8 (lane 20 too), the slot
//! index being `UR7`, last written by the other lanes. A hand-written kernel of ten lines (a per-lane predicate,
//! `activemask`, a vote, a branch on it with an atomic and a constant on each side, a store at
//! `tid * 16 + constant`) shows the same SASS for each of these instructions, and a per-lane
//! `BSSY`/`BSYNC` branch with the constant in a per-lane register once the result is per-lane
//! (`match.any.sync`, whose result is per-lane, is compiled that way already).
//!
//! The branch taken for uniform also loses the warp's meeting again before an aligned block
//! barrier: seed 41700006 (program 10) had an `if` on `any_sync(activemask, ..)` just before a
//! phase's closing `bar.red.and`, with no `BSSY`/`BSYNC` and no `WARPSYNC.ALL` between; the
//! lanes that skipped the `if` reached the barrier while the rest of their warp was in it, and
//! the next phase's compare-and-swaps ran beside this one's (olds that fit no order).
//!
//! `activemask`'s result is also how ptxas picks the wait of a `.sync` warp instruction: with
//! a mask it sees to be an `activemask` result it waits with a plain `WARPSYNC R` (it takes the
//! lanes that arrive for exactly the mask's), with any other mask it cannot see through with
//! `WARPSYNC.EXCLUSIVE R`. On the GPU lanes of another group came to the instruction too and
//! took part: seed 42900070 (program 17: lane 9, alone in its `activemask` 0x200, got
//! `eq_sync` false) and seed 41700063 (program 24: lanes 10 and 11, each alone in its mask,
//! both got `match_any_sync` 0xc00), each in one run of three. With `activemask`'s result ORed
//! as below, ptxas waits with `WARPSYNC.EXCLUSIVE` there too (12.9 and 13.0).
//!
//! Each result is ORed with a zero ptxas cannot see as one (`%tid.x >> 16`, as workaround 15):
//! a predicate with `%tid.x >> 16 != 0`, a 32-bit register with `%tid.x >> 16`. ptxas then
//! takes it as per-lane. Left alone: those whose member mask is the immediate full warp (`-1`,
//! `0xffffffff`), where every lane of the warp takes part in the one instruction and the
//! result is the same in every lane (the library's reductions and scans use that mask).

use super::ptx::{tid_zero, Edit, Function, Inst};
use super::registry::Workaround;

/// Workaround 16's descriptor.
pub(crate) const W16: Workaround = Workaround {
    id: 16,
    name: "warp_vote_taken_as_uniform",
    fixes: "a warp vote's (or activemask's, match.all's, a broadcast shuffle's) result taken as warp-uniform while the warp is diverged; lanes outside an activemask mask taking part in a vote or match",
    seen_on: &[
        "CUDA 13.0 driver JIT (driver 580, H100)",
        "ptxas 12.9",
        "ptxas 13.0",
        "ptxas 13.5 (the reduced kernel of docs/driver-reports/)",
    ],
    // A block-program seed (`--blocks`), which tests/fuzz.rs's replay of tree and program
    // batches does not run: the tests below stand for it.
    seeds: &[],
    tests: &[
        "tests/fuzz.rs::block_program_findings_match_the_host_model_on_the_gpu",
        "tests/codegen/warp.rs::warp_vote_results_are_ored_with_a_hidden_zero",
        "src/codegen/ptx_fix/w16_warp_vote_taken_as_uniform.rs::ors_each_partial_mask_vote_result_with_a_hidden_zero",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Whether ptxas takes `i`'s results for warp-uniform.
fn uniform_result(i: &Inst<'_>) -> bool {
    let op = i.op;
    op.starts_with("vote.")
        || op.starts_with("activemask.")
        || op.starts_with("match.all.")
        || op.starts_with("shfl.sync.idx.")
        || op.starts_with("redux.sync.")
}

/// Whether `i`'s member mask (its last operand; `activemask` and the old `vote` without
/// `.sync` have none) is the immediate full warp.
fn full_warp_mask(i: &Inst<'_>) -> bool {
    if i.op.starts_with("activemask.") || !i.op.contains(".sync") {
        return false;
    }
    matches!(
        i.operands.last().map(|m| m.to_ascii_lowercase()).as_deref(),
        Some("-1" | "0xffffffff" | "4294967295")
    )
}

/// The OR of one written register with the zero in `%cj_tid` (`None`: not a predicate or a
/// 32-bit register, which these instructions do not write). An `f32` register (a shuffle of an
/// `f32`) takes `or.b32` as it is, as workaround 1's `and.b32` does.
fn or_zero(p: &str, reg: &str) -> Option<String> {
    let kind = reg
        .strip_prefix('%')?
        .trim_end_matches(|c: char| c.is_ascii_digit());
    match kind {
        "p" => Some(format!(
            "{p}setp.ne.u32 %cj_q, %cj_tid, 0; {p}or.pred {reg}, {reg}, %cj_q;"
        )),
        "r" | "f" => Some(format!("{p}or.b32 {reg}, {reg}, %cj_tid;")),
        _ => None,
    }
}

/// Every such instruction whose mask is not the full warp, followed by the ORs of what it
/// writes with `%tid.x >> 16`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            if !uniform_result(i) || full_warp_mask(i) {
                return None;
            }
            let p = line.guard_prefix();
            let ors: Vec<String> = i.written().map(|r| or_zero(&p, r)).collect::<Option<_>>()?;
            if ors.is_empty() {
                return None;
            }
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n{}{{ .reg .b32 %cj_tid; .reg .pred %cj_q; {} {} }}{}",
                    line.without_newline(),
                    line.indent,
                    tid_zero(&p, "%cj_tid"),
                    ors.join(" "),
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
    fn ors_each_partial_mask_vote_result_with_a_hidden_zero() {
        let ptx = "\tactivemask.b32 \t%r36;\n\
                   \tvote.sync.all.pred \t%p44, %p20, %r36;\n\
                   \t@%p2 vote.sync.ballot.b32 \t%r5, %p1, %r11;\n\
                   \tmatch.all.sync.b32 \t%r6|%p3, %r2, %r11;\n\
                   \tshfl.sync.idx.b32 \t%r7, %r2, 0, 31, %r11;\n\
                   \tshfl.sync.idx.b32 \t%f2, %f1, 0, 31, %r11;\n\
                   \tvote.sync.any.pred \t%p5, %p1, -1;\n\
                   \tshfl.sync.down.b32 \t%r8, %r2, 1, 31, %r11;\n\
                   \tmatch.any.sync.b32 \t%r9, %r2, %r11;\n";
        let zero = "mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16;";
        let g = "@%p2 mov.u32 %cj_tid, %tid.x; @%p2 shr.u32 %cj_tid, %cj_tid, 16;";
        let scope = "{ .reg .b32 %cj_tid; .reg .pred %cj_q;";
        let want = format!(
            "\tactivemask.b32 \t%r36;\n\
             \t{scope} {zero} or.b32 %r36, %r36, %cj_tid; }}\n\
             \tvote.sync.all.pred \t%p44, %p20, %r36;\n\
             \t{scope} {zero} setp.ne.u32 %cj_q, %cj_tid, 0; or.pred %p44, %p44, %cj_q; }}\n\
             \t@%p2 vote.sync.ballot.b32 \t%r5, %p1, %r11;\n\
             \t{scope} {g} @%p2 or.b32 %r5, %r5, %cj_tid; }}\n\
             \tmatch.all.sync.b32 \t%r6|%p3, %r2, %r11;\n\
             \t{scope} {zero} or.b32 %r6, %r6, %cj_tid; setp.ne.u32 %cj_q, %cj_tid, 0; \
             or.pred %p3, %p3, %cj_q; }}\n\
             \tshfl.sync.idx.b32 \t%r7, %r2, 0, 31, %r11;\n\
             \t{scope} {zero} or.b32 %r7, %r7, %cj_tid; }}\n\
             \tshfl.sync.idx.b32 \t%f2, %f1, 0, 31, %r11;\n\
             \t{scope} {zero} or.b32 %f2, %f2, %cj_tid; }}\n\
             \tvote.sync.any.pred \t%p5, %p1, -1;\n\
             \tshfl.sync.down.b32 \t%r8, %r2, 1, 31, %r11;\n\
             \tmatch.any.sync.b32 \t%r9, %r2, %r11;\n"
        );
        assert_eq!(fix(ptx), want);
    }
}
