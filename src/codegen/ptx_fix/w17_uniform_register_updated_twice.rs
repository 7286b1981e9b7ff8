//! Workaround 17: **a uniform register updated in place where the warp may still be split,
//! so that each group of lanes applies the update once more.**
//!
//! Uniform registers (`UR`) hold one value for the whole warp, and a uniform instruction
//! (`UIADD3`, `ULEA`, ..) runs once for each group of lanes that reaches it. ptxas 12.9 and
//! 13.0 (sm_90) compile a short `if` (no loop in it) as a branch without `BSSY`/`BSYNC`, so
//! that the two groups of a diverged warp need not meet again at the join, and place after
//! the join, before the next `WARPSYNC.ALL`, instructions that update a uniform register **in
//! place**: `UIADD3 UR4, UR4, 0x30, URZ` (a shared array's address from the one before it).
//! Each group that reaches it adds `0x30` once more: the group that runs it second computes
//! the shared array's address 48 bytes too far.
//!
//! The block programs of the campaign of 2026-11-27 found it (seed 62700015, program 18, an
//! H200 with driver 580.159.04; it differed alone, minimised to 40 threads): lane 26 of warp 0,
//! alone in a `ballot_sync` under `if (mask >> lane) & 1`, ran the join's `UIADD3` first; the
//! other 31 lanes of warp 0 ran it after and stored `sh[tid]` to `sh[tid + 6]`. Every wrong word
//! is one of those stores: lane 26 read its own slot as thread 20's value, threads 33 to 37
//! (warp 1, not diverged) read theirs as threads 27 to 31's, and lane 26 and warp 1 read the
//! slot 0 that thread 0 had stored to slot 6 as 0. ptxas 13.5 writes the sum to another
//! uniform register in the same kernel (`UIADD3 UR6, UR4, 0x30`), which is harmless.
//!
//! ptxas closes such an `if` with `BSSY`/`BSYNC` when an `activemask` is read at its join (to
//! count the lanes that meet there), so each join (a label that two or more places reach,
//! only from before it: not a loop's head) whose code since the first branch to it holds a
//! warp instruction of a partial mask (a vote, `activemask`, a shuffle, a match, `redux.sync`,
//! `bar.warp.sync`: the `if` of a lane mask around a warp intrinsic, as in the block program)
//! begins with an `activemask` whose result is used: a `trap` if it is 0, which never happens
//! (the lane running it is in it). Every join would be safer, but the reconvergence costs: at
//! every join the SIMT matmul spilled and ptxas serialised the `wgmma` of the wgmma matmul
//! (C7518), so the joins are those of the pattern found. The uniform
//! instructions then run once, in the warp met again. What this does not cover: lanes that a
//! compare-and-swap loop's `YIELD` split (docs/driver-reports/README.md, section 4) may pass a
//! `BSYNC` apart, and a uniform update after one runs once per group as well: workaround 18
//! makes them meet after each such loop.

use super::ptx::{Edit, Function, Kind, PtxLine};
use super::registry::Workaround;

/// Workaround 17's descriptor.
pub(crate) const W17: Workaround = Workaround {
    id: 17,
    name: "uniform_register_updated_twice",
    fixes: "a uniform register updated in place after a join that ptxas does not close with BSYNC: each group of a split warp applies the update again (a shared array's address 0x30 too far)",
    seen_on: &[
        "CUDA 13.0 driver JIT (driver 580, H200)",
        "ptxas 12.9",
        "ptxas 13.0",
    ],
    // A block-program seed (`--blocks`), which tests/fuzz.rs's replay of tree and program
    // batches does not run: the tests below stand for it.
    seeds: &[],
    tests: &[
        "tests/fuzz.rs::block_program_findings_match_the_host_model_on_the_gpu",
        "tests/codegen/warp.rs::each_join_reads_activemask_before_the_code_after_it",
        "src/codegen/ptx_fix/w17_uniform_register_updated_twice.rs::each_join_reads_activemask",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Whether the module can have the bug and take the rewrite: uniform registers came with
/// sm_75 (an older `.target` is left alone) and `activemask` with PTX ISA 6.2 (an older
/// `.version` too). A text without either directive (a test's piece) takes it.
pub(crate) fn applies_to(ptx: &str) -> bool {
    let directive = |name: &str| {
        ptx.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|rest| rest.trim().to_string())
    };
    let target_ok = directive(".target").map_or(true, |t| {
        let sm = t.split([',', ' ']).next().unwrap_or("");
        sm.strip_prefix("sm_")
            .map(|n| n.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
            .and_then(|n| n.parse::<u32>().ok())
            .map_or(true, |n| n >= 75)
    });
    let version_ok = directive(".version").map_or(true, |v| {
        let mut parts = v.split('.').map(|p| p.trim().parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (major, minor) >= (6, 2)
    });
    target_ok && version_ok
}

/// The line inserted after each join's label.
const READ_ACTIVEMASK: &str = "{ .reg .b32 %cj_am; .reg .pred %cj_q; activemask.b32 %cj_am; \
                               setp.eq.u32 %cj_q, %cj_am, 0; @%cj_q trap; }";

/// The branch targets of a line (its `bra`s, also those in a one-line scope).
pub(super) fn branch_targets<'a>(line: &PtxLine<'a>) -> Vec<&'a str> {
    line.instructions()
        .iter()
        .filter(|i| i.op == "bra" || i.op.starts_with("bra."))
        .filter_map(|i| i.operands.first().copied())
        .collect()
}

/// Whether control can fall through from the line before `n` into line `n` (the closest line
/// that is code: not an unguarded `bra`, `ret` or `exit`).
pub(super) fn falls_into(f: &Function<'_>, n: usize) -> bool {
    let prev = f.lines[..n]
        .iter()
        .rev()
        .find(|l| !matches!(l.kind, Kind::Other));
    let last = match prev.map(|l| &l.kind) {
        Some(Kind::Inst(i)) => i,
        Some(Kind::Scope(is)) => match is.last() {
            Some(i) => i,
            None => return true,
        },
        Some(Kind::Label(_)) => return true,
        _ => return false,
    };
    let ends =
        last.op == "bra" || last.op.starts_with("bra.") || last.op == "ret" || last.op == "exit";
    !(ends && last.guard.is_none())
}

/// Whether the line is (or its one-line scope holds) a warp instruction that lanes of a split
/// warp may run apart: a vote, `activemask`, a shuffle, a match, a `redux.sync` or a
/// `bar.warp.sync` whose member mask is not the immediate full warp (with that mask every lane
/// must be there, so the branch around it cannot split the warp).
fn partial_warp_op(line: &PtxLine<'_>) -> bool {
    line.instructions().iter().any(|i| {
        let warp = [
            "vote.",
            "activemask.",
            "shfl.sync.",
            "match.",
            "redux.sync.",
            "bar.warp.sync",
        ]
        .iter()
        .any(|p| i.op.starts_with(p));
        let full = i.op.contains("sync")
            && matches!(
                i.operands.last().map(|m| m.to_ascii_lowercase()).as_deref(),
                Some("-1" | "0xffffffff" | "4294967295")
            );
        warp && !full
    })
}

/// Each join's label line, followed by a line that reads `activemask`, where the code between
/// the first branch to it and it holds a warp instruction of a partial mask.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let branches: Vec<(usize, &str)> = f
        .lines
        .iter()
        .enumerate()
        .flat_map(|(n, l)| branch_targets(l).into_iter().map(move |t| (n, t)))
        .collect();
    f.lines
        .iter()
        .enumerate()
        .filter_map(|(n, line)| {
            let Kind::Label(name) = line.kind else {
                return None;
            };
            let from: Vec<usize> = branches
                .iter()
                .filter(|(_, t)| *t == name)
                .map(|&(b, _)| b)
                .collect();
            let reached = from.len() + usize::from(falls_into(f, n));
            if reached < 2 || from.iter().any(|&b| b > n) {
                return None;
            }
            let first = from.iter().copied().min()?;
            if !f.lines[first..n].iter().any(partial_warp_op) {
                return None;
            }
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n\t{READ_ACTIVEMASK}{}",
                    line.without_newline(),
                    line.newline()
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;
    use super::READ_ACTIVEMASK;

    #[test]
    fn only_modules_for_sm_75_and_ptx_6_2_on() {
        use super::applies_to;
        assert!(applies_to(".version 7.8\n.target sm_90\n"));
        assert!(applies_to(".version 8.0\n.target sm_90a\n"));
        assert!(applies_to(".version 6.4\n.target sm_75\n"));
        assert!(!applies_to(".version 7.8\n.target sm_70\n"));
        assert!(!applies_to(".version 6.0\n.target sm_60\n"));
        assert!(!applies_to(".version 6.1\n.target sm_75\n"));
        assert!(applies_to("\tret;\n"));
        let old = ".version 6.0\n.target sm_60\n\t@%p1 bra \t$L__BB0_2;\n\tmatch.any.sync.b32 \t%r9, %r2, %r11;\n$L__BB0_2:\n\tret;\n";
        assert_eq!(fix(old), old);
        let new = old.replace(".version 6.0\n.target sm_60", ".version 7.8\n.target sm_90");
        assert_ne!(fix(&new), new);
    }

    #[test]
    fn each_join_reads_activemask() {
        // An if around a match of a partial mask (join 2), an if/else with a shuffle of a
        // partial mask on the else side (3 starts the else: one way in; 4 is the join), a loop
        // (5 is its head: a branch back to it) and its exit (6: no warp instruction since the
        // branch to it), an if around a vote of the full warp (7: the warp cannot be split
        // there), and a label only branched to (8: one way in).
        let ptx = "\t@%p1 bra \t$L__BB0_2;\n\tmatch.any.sync.b32 \t%r9, %r2, %r11;\n$L__BB0_2:\n\
                   \t@%p2 bra \t$L__BB0_3;\n\tmov.u32 \t%r2, 1;\n\tbra.uni \t$L__BB0_4;\n\
                   $L__BB0_3:\n\tshfl.sync.down.b32 \t%r2, %r1, 1, 31, %r11;\n$L__BB0_4:\n\
                   $L__BB0_5:\n\tadd.s32 \t%r3, %r3, 1;\n\t@%p3 bra \t$L__BB0_6;\n\
                   \t@%p4 bra \t$L__BB0_5;\n$L__BB0_6:\n\
                   \t@%p5 bra \t$L__BB0_7;\n\tvote.sync.any.pred \t%p6, %p1, -1;\n$L__BB0_7:\n\
                   \tbra.uni \t$L__BB0_8;\n\tret;\n$L__BB0_8:\n\tret;\n";
        let a = format!("\t{READ_ACTIVEMASK}\n");
        let want = format!(
            "\t@%p1 bra \t$L__BB0_2;\n\tmatch.any.sync.b32 \t%r9, %r2, %r11;\n$L__BB0_2:\n{a}\
             \t@%p2 bra \t$L__BB0_3;\n\tmov.u32 \t%r2, 1;\n\tbra.uni \t$L__BB0_4;\n\
             $L__BB0_3:\n\tshfl.sync.down.b32 \t%r2, %r1, 1, 31, %r11;\n$L__BB0_4:\n{a}\
             $L__BB0_5:\n\tadd.s32 \t%r3, %r3, 1;\n\t@%p3 bra \t$L__BB0_6;\n\
             \t@%p4 bra \t$L__BB0_5;\n$L__BB0_6:\n\
             \t@%p5 bra \t$L__BB0_7;\n\tvote.sync.any.pred \t%p6, %p1, -1;\n$L__BB0_7:\n\
             \tbra.uni \t$L__BB0_8;\n\tret;\n$L__BB0_8:\n\tret;\n"
        );
        assert_eq!(fix(ptx), want);
    }
}
