//! Workaround 18: **a warp left split by a compare-and-swap loop, so that its groups run
//! apart past the block barriers that follow and each clobbers the uniform registers the
//! other still reads.**
//!
//! The lanes of a warp leave a compare-and-swap loop (the float min/max atomics, the narrow
//! atomics, what LLVM expands `atomicrmw` into) at different times. ptxas puts the loop in a
//! `BSSY`/`BSYNC` pair and a `YIELD` at its head, but on the GPU the lanes that ran the
//! `YIELD` pass the `BSYNC` without the others (docs/driver-reports/README.md, section 4:
//! `yield_probe.py` read partial `activemask`s after such a loop in every warp). The warp then
//! runs as two or more groups, and ptxas's code still takes it for one: a uniform register
//! (`UR`, one per warp) written by one group is read by the other, and an aligned block
//! barrier (`bar.sync`, `bar.red`) lets the first group of a warp through before the rest
//! arrive, so the groups drift a whole phase apart.
//!
//! The block programs of the campaign of 2026-11-27, 23:34 UTC, found it (two H200s, driver
//! 580.159.04): four batches that faulted, each on every run, alone on the GPU, whose every
//! program ran clean alone and on the simulator. compute-sanitizer named the instructions:
//! seed 72400002, a `ATOMG.E.CAS` at `fuzzb+0xb4a0` whose address `UR4:UR5` (a global array
//! plus 0x180, computed once before the phase) read `0x7f8400000001`, misaligned: its low word
//! had been overwritten by a group of the warp that was running another phase's code; seeds
//! 72300040 (an `STS.64` out of bounds), 70800035 and 72900040 (an `STG.E.64` out of bounds),
//! each an address formed from uniform registers after a compare-and-swap loop.
//!
//! Each compare-and-swap loop (a label, code holding an `atom.*.cas`, a branch back to the
//! label, no other label between, entered only by falling into the label) reads `activemask`
//! before its head (ORed with the hidden zero of workaround 15, so that ptxas waits with
//! `WARPSYNC.EXCLUSIVE` for exactly those lanes) and every way out of it runs `bar.warp.sync`
//! of that mask, so the lanes that entered together leave together. A loop left for more
//! than one place (a branch out of it to another label than the one after it, or than the
//! one an unguarded `bra` after it goes to) is left alone.

use super::ptx::{tid_zero, Edit, Function, Kind, PtxLine};
use super::registry::Workaround;
use super::w17::{branch_targets, falls_into};

/// Workaround 18's descriptor.
pub(crate) const W18: Workaround = Workaround {
    id: 18,
    name: "split_after_cas_loop",
    fixes: "a warp left split by a compare-and-swap loop (lanes that ran its YIELD pass the BSYNC apart): its groups run apart past aligned block barriers and clobber each other's uniform registers (misaligned and out-of-bounds addresses)",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)"],
    // A block-program seed (`--blocks`), which tests/fuzz.rs's replay of tree and program
    // batches does not run: the tests below stand for it.
    seeds: &[],
    tests: &[
        "tests/fuzz.rs::block_batch_findings_match_the_host_model_on_the_gpu",
        "src/codegen/ptx_fix/w18_split_after_cas_loop.rs::each_cas_loop_is_left_together",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Whether the line is (or holds) a compare-and-swap.
fn is_cas(line: &PtxLine<'_>) -> bool {
    line.instructions()
        .iter()
        .any(|i| i.op.starts_with("atom.") && i.op.contains(".cas."))
}

/// One loop to bracket: its head label's line, its backward branch's line, and where it is
/// left for: the label its exits go to, and whether control falls past the backward branch
/// (then that label is the next line or the target of an unguarded `bra` there) or not (the
/// backward branch is unguarded: the exits are the branches out of the body, and the new
/// exit block must jump to the label).
struct Loop<'a> {
    head: usize,
    back: usize,
    exit: Option<&'a str>,
    jump: bool,
}

/// Whether the line is an unguarded `bra`.
fn unguarded_bra(kind: Option<&Kind<'_>>) -> bool {
    matches!(kind, Some(Kind::Inst(i)) if i.guard.is_none() && (i.op == "bra" || i.op.starts_with("bra.")))
}

/// The loop whose head is label `name` on line `n`: its body runs up to the next label, and
/// the loop is there when a branch back to `name` is in it. That branch's line, and whether a
/// compare-and-swap comes before it (a compare-and-swap retry loop). `targets`: each line's
/// branch targets.
fn loop_back(
    f: &Function<'_>,
    targets: &[Vec<&str>],
    n: usize,
    name: &str,
) -> Option<(usize, bool)> {
    let end = (n + 1..f.lines.len())
        .find(|&i| matches!(f.lines[i].kind, Kind::Label(_)))
        .unwrap_or(f.lines.len());
    let back = (n + 1..end).rev().find(|&i| targets[i].contains(&name))?;
    Some((back, (n + 1..back).any(|i| is_cas(&f.lines[i]))))
}

/// Whether `f` has a compare-and-swap retry loop (a label, then a compare-and-swap and a
/// branch back to it before the next label), whether or not it can be bracketed.
pub(super) fn has_cas_retry_loop(f: &Function<'_>) -> bool {
    let targets: Vec<Vec<&str>> = f.lines.iter().map(branch_targets).collect();
    f.lines.iter().enumerate().any(|(n, l)| match l.kind {
        Kind::Label(name) => loop_back(f, &targets, n, name).is_some_and(|(_, cas)| cas),
        _ => false,
    })
}

/// The compare-and-swap loops of `f` that can be bracketed.
fn cas_loops<'a>(f: &Function<'a>) -> Vec<Loop<'a>> {
    let targets: Vec<Vec<&str>> = f.lines.iter().map(branch_targets).collect();
    let mut out = Vec::new();
    let mut n = 0;
    while n < f.lines.len() {
        let Kind::Label(name) = f.lines[n].kind else {
            n += 1;
            continue;
        };
        let Some((back, cas)) = loop_back(f, &targets, n, name) else {
            n += 1;
            continue;
        };
        // No lane leaves the body but through its exits (a `ret` or `exit` would leave the
        // others waiting for it at the `bar.warp.sync`; a call is left out too, to be safe).
        let leaves = (n + 1..=back).any(|i| {
            f.lines[i]
                .instructions()
                .iter()
                .any(|x| x.op == "ret" || x.op == "exit" || x.op.starts_with("call"))
        });
        // Left for one place only: with a guarded branch back, the line after it (a label, or
        // an unguarded `bra`'s target); with an unguarded one, the one label every branch out
        // of the body goes to.
        let jump = unguarded_bra(Some(&f.lines[back].kind));
        let outs: Vec<&str> = (n + 1..=back)
            .flat_map(|i| targets[i].iter().copied())
            .filter(|t| *t != name)
            .collect();
        let exit = if jump {
            outs.first().copied()
        } else {
            match f.lines.get(back + 1).map(|l| &l.kind) {
                Some(Kind::Label(e)) => Some(*e),
                k if unguarded_bra(k) => targets[back + 1].first().copied(),
                _ => None,
            }
        };
        let one_exit = outs.iter().all(|t| Some(*t) == exit) && (exit.is_some() || !jump);
        // Entered only by falling into the head.
        let from_outside = targets
            .iter()
            .enumerate()
            .any(|(i, t)| (i <= n || i > back) && t.contains(&name));
        if cas && !leaves && one_exit && !from_outside && falls_into(f, n) {
            out.push(Loop {
                head: n,
                back,
                exit,
                jump,
            });
        }
        n = back + 1;
    }
    out
}

/// Each compare-and-swap loop: `activemask` (ORed with a hidden zero) into a register of its
/// own before the head; every exit through a new label after the branch back that runs
/// `bar.warp.sync` of it.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let mut edits = Vec::new();
    for (k, lp) in cas_loops(f).into_iter().enumerate() {
        let mask = format!("%cj_wm{k}");
        let label = format!("$L__cj_w18_{k}");
        let indent = "\t";
        edits.push(Edit::InsertBefore(
            lp.head,
            format!(
                "{indent}.reg .b32 {mask};\n{indent}{{ .reg .b32 %cj_tid; activemask.b32 {mask}; {} \
                 or.b32 {mask}, {mask}, %cj_tid; }}\n",
                tid_zero("", "%cj_tid")
            ),
        ));
        // Branches out of the loop go to the new label instead.
        if let Some(exit) = lp.exit {
            for i in lp.head + 1..=lp.back {
                let line = &f.lines[i];
                if branch_targets(line).contains(&exit) {
                    let text = line
                        .text
                        .replacen(&format!("{exit};"), &format!("{label};"), 1);
                    edits.push(Edit::Replace(i, text));
                }
            }
        }
        let jump = match (lp.jump, lp.exit) {
            (true, Some(exit)) => format!("{indent}bra.uni {exit};\n"),
            _ => String::new(),
        };
        edits.push(Edit::InsertBefore(
            lp.back + 1,
            format!("{label}:\n{indent}bar.warp.sync {mask};\n{jump}"),
        ));
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn each_cas_loop_is_left_together() {
        // A narrow atomic's loop (give up to the label after it, or retry), a float min/max
        // loop whose exit falls through, a cas not in a loop, a loop whose branch back is
        // unguarded (two exits to one label), a loop left through a `bra.uni` after it, then
        // a loop entered from a branch (left alone).
        let ptx = "\tld.global.u32 \t%r1, [%rd1];\n$L__BB0_9:\n\tsetp.leu.f32 \t%p1, %f1, %f2;\n\
                   \t@%p1 bra \t$L__BB0_11;\n\tatom.global.cas.b32 \t%r2, [%rd1], %r1, %r3;\n\
                   \tsetp.ne.s32 \t%p2, %r2, %r1;\n\tmov.u32 \t%r1, %r2;\n\t@%p2 bra \t$L__BB0_9;\n\
                   $L__BB0_11:\n\tadd.s32 \t%r4, %r4, 1;\n$L__BB0_12:\n\
                   \tatom.shared.cas.b64 \t%rd2, [%r5], %rd3, %rd4;\n\tsetp.ne.s64 \t%p3, %rd2, %rd3;\n\
                   \t@%p3 bra \t$L__BB0_12;\n\tst.global.u64 \t[%rd5], %rd2;\n\
                   \tatom.global.cas.b32 \t%r6, [%rd1], %r1, %r3;\n$L__BB0_16:\n\
                   \tatom.shared.cas.b32 \t%r8, [%r5], %r1, %r3;\n\t@%p8 bra \t$L__BB0_19;\n\
                   \t@%p9 bra \t$L__BB0_19;\n\tbra.uni \t$L__BB0_16;\n$L__BB0_19:\n\
                   $L__BB0_15:\n\t@%p6 bra \t$L__BB0_17;\n\tatom.shared.cas.b32 \t%r7, [%r5], %r1, %r3;\n\
                   \t@%p7 bra \t$L__BB0_15;\n\tbra.uni \t$L__BB0_17;\n$L__BB0_18:\n\
                   \t@%p4 bra \t$L__BB0_14;\n\tret;\n$L__BB0_14:\n\
                   \tatom.global.cas.b32 \t%r6, [%rd1], %r1, %r3;\n\t@%p5 bra \t$L__BB0_14;\n\tret;\n\
                   $L__BB0_17:\n\tret;\n";
        let m = |k: u32| {
            format!(
                "\t.reg .b32 %cj_wm{k};\n\t{{ .reg .b32 %cj_tid; activemask.b32 %cj_wm{k}; \
                 mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                 or.b32 %cj_wm{k}, %cj_wm{k}, %cj_tid; }}\n"
            )
        };
        let want = format!(
            "\tld.global.u32 \t%r1, [%rd1];\n{}$L__BB0_9:\n\tsetp.leu.f32 \t%p1, %f1, %f2;\n\
             \t@%p1 bra \t$L__cj_w18_0;\n\tatom.global.cas.b32 \t%r2, [%rd1], %r1, %r3;\n\
             \tsetp.ne.s32 \t%p2, %r2, %r1;\n\tmov.u32 \t%r1, %r2;\n\t@%p2 bra \t$L__BB0_9;\n\
             $L__cj_w18_0:\n\tbar.warp.sync %cj_wm0;\n\
             $L__BB0_11:\n\tadd.s32 \t%r4, %r4, 1;\n{}$L__BB0_12:\n\
             \tatom.shared.cas.b64 \t%rd2, [%r5], %rd3, %rd4;\n\tsetp.ne.s64 \t%p3, %rd2, %rd3;\n\
             \t@%p3 bra \t$L__BB0_12;\n$L__cj_w18_1:\n\tbar.warp.sync %cj_wm1;\n\
             \tst.global.u64 \t[%rd5], %rd2;\n\
             \tatom.global.cas.b32 \t%r6, [%rd1], %r1, %r3;\n{}$L__BB0_16:\n\
             \tatom.shared.cas.b32 \t%r8, [%r5], %r1, %r3;\n\t@%p8 bra \t$L__cj_w18_2;\n\
             \t@%p9 bra \t$L__cj_w18_2;\n\tbra.uni \t$L__BB0_16;\n\
             $L__cj_w18_2:\n\tbar.warp.sync %cj_wm2;\n\tbra.uni $L__BB0_19;\n$L__BB0_19:\n\
             {}$L__BB0_15:\n\t@%p6 bra \t$L__cj_w18_3;\n\tatom.shared.cas.b32 \t%r7, [%r5], %r1, %r3;\n\
             \t@%p7 bra \t$L__BB0_15;\n$L__cj_w18_3:\n\tbar.warp.sync %cj_wm3;\n\
             \tbra.uni \t$L__BB0_17;\n$L__BB0_18:\n\
             \t@%p4 bra \t$L__BB0_14;\n\tret;\n$L__BB0_14:\n\
             \tatom.global.cas.b32 \t%r6, [%rd1], %r1, %r3;\n\t@%p5 bra \t$L__BB0_14;\n\tret;\n\
             $L__BB0_17:\n\tret;\n",
            m(0),
            m(1),
            m(2),
            m(3)
        );
        assert_eq!(fix(ptx), want);
    }
}
