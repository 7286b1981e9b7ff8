//! Workaround 19: **a kernel whose warps a compare-and-swap loop may split, and which then
//! passes block barriers, is compiled without optimisation (`-O0`), where ptxas keeps nothing
//! in uniform registers.**
//!
//! Workaround 18 makes the lanes that enter a compare-and-swap loop leave it together. That
//! does not merge a warp that is already split when it reaches the loop (by an earlier loop's
//! `YIELD`, docs/driver-reports/README.md, section 4), and an aligned block barrier lets a
//! warp's first group through before the rest, so the groups drift a phase apart. Each group
//! then runs the uniform instructions (`UMOV`, `ULEA`, `UIADD3`, `ULDC`) of the code it is in,
//! and a uniform register (`UR`, one per warp) that one group set is overwritten by the other
//! before it is read: in block program batch 90000016 (memcheck, H100) an `STG.E.64` took its
//! address's high word from `UR4`, set to 0 right after a `BAR.SYNC`, which a group still
//! before that barrier had set to a shared array's address: `ILLEGAL_ADDRESS`.
//!
//! The block-program campaign of 2026-11-28 (two H100s, driver 580.159.04, with workaround
//! 18) ended 6 of its 30 processes by a fault (about 1.3 faulting batches per 10^4 programs);
//! those six batches and four older ones went wrong on every run, alone on an H100. Replayed
//! at each of the driver JIT's optimisation levels (`CU_JIT_OPTIMIZATION_LEVEL`, one H100,
//! 2026-11-28): at the default (4), 3 and 2 all ten went wrong, at 1 five, at 0 none. ptxas
//! 13.0's SASS of batch 90000016 has 303 instructions that write a uniform register at -O3,
//! 371 at -O1 and none at -O0. With this workaround (one H100, the same day): the ten batches
//! and workaround 18's six right in their test; two block-program campaigns of 15 processes on
//! the GPU, 74,272 programs, no fault and no mismatch (about ten faults were due at the rate
//! before); the GPU suite 381 of 381.
//!
//! So a function that holds a compare-and-swap retry loop (a label, then code holding an
//! `atom.*.cas` and a branch back to the label, with no other label between: the loops of the
//! float min/max atomics, the narrow atomics, LLVM's `atomicrmw` expansions, and a user's own
//! `while` around `atomic_cas`) and a block barrier (`bar.sync`, `bar.red`, `barrier.*`; not
//! `bar.warp.sync`) puts a comment line in the module ([`PTX_OPT_LEVEL_0`]) that the PTX
//! compilers cudajit drives read (`src/backend/jit_hint.rs`: the driver's JIT gets
//! `CU_JIT_OPTIMIZATION_LEVEL` 0, nvJitLink `-O0`). The cost is the kernel's speed (ptxas's
//! -O0 code of batch 90000016 has 2.7 times the instructions), paid only by such kernels:
//! cudajit's own operations have no compare-and-swap retry loop.

use super::ptx::{Edit, Function, PtxLine};
use super::registry::Workaround;
use super::w18;
use crate::backend::jit_hint::PTX_OPT_LEVEL_0;

/// Workaround 19's descriptor.
pub(crate) const W19: Workaround = Workaround {
    id: 19,
    name: "unoptimised_split_warps",
    fixes: "a warp already split when it reaches a compare-and-swap loop, its groups drifting apart past aligned block barriers and clobbering each other's uniform registers (faults at addresses from uniform registers): such kernels are compiled at -O0, without uniform registers",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H100 and H200)"],
    // Block-program seeds (`--blocks`), which tests/fuzz.rs's replay of tree and program
    // batches does not run: the tests below stand for them.
    seeds: &[],
    tests: &[
        "tests/fuzz.rs::block_batch_findings_match_the_host_model_on_the_gpu",
        "tests/codegen/atomics.rs::a_cas_loop_beside_a_block_barrier_asks_for_o0",
        "src/codegen/ptx_fix/w19_unoptimised_split_warps.rs::kernels_with_a_cas_loop_and_a_block_barrier_ask_for_o0",
        "src/backend/jit_hint.rs::the_marker_asks_for_level_zero_whatever_the_environment",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Whether the line holds a block (or cluster) barrier: not `bar.warp.sync`.
fn is_block_barrier(line: &PtxLine<'_>) -> bool {
    line.instructions().iter().any(|i| {
        (i.op.starts_with("bar.") && !i.op.starts_with("bar.warp")) || i.op.starts_with("barrier.")
    })
}

/// The hint before the function's declaration (its `.entry` or `.func` line), when the
/// function has both a compare-and-swap loop and a block barrier.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    if !(w18::has_cas_retry_loop(f) && f.lines.iter().any(is_block_barrier)) {
        return Vec::new();
    }
    let decl = f
        .lines
        .iter()
        .position(|l| {
            let t = l.text.trim_start();
            !t.starts_with("//") && (t.contains(".entry") || t.contains(".func"))
        })
        .unwrap_or(0);
    vec![Edit::InsertBefore(decl, format!("{PTX_OPT_LEVEL_0}\n"))]
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;
    use super::PTX_OPT_LEVEL_0;

    /// A kernel with `body` between its declaration and its `ret`.
    fn kernel(body: &str) -> String {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{{\n{body}\tret;\n}}\n"
        )
    }

    const CAS_LOOP: &str = "$L__BB0_1:\n\tatom.shared.cas.b32 \t%r2, [%r1], %r3, %r4;\n\
                            \tsetp.ne.s32 \t%p1, %r2, %r3;\n\tmov.u32 \t%r3, %r2;\n\
                            \t@%p1 bra \t$L__BB0_1;\n";

    #[test]
    fn kernels_with_a_cas_loop_and_a_block_barrier_ask_for_o0() {
        // A loop and a barrier: the hint, once, before the declaration.
        let both = fix(&kernel(&format!("{CAS_LOOP}\tbar.sync \t0;\n")));
        assert_eq!(both.matches(PTX_OPT_LEVEL_0).count(), 1, "{both}");
        assert!(both.contains(&format!("{PTX_OPT_LEVEL_0}\n.visible .entry k(")));
        // `bar.red` and `barrier.sync` count as block barriers too.
        for bar in [
            "\tbar.red.and.pred \t%p2, 0, %p3;\n",
            "\tbarrier.sync \t0;\n",
        ] {
            assert!(fix(&kernel(&format!("{bar}{CAS_LOOP}"))).contains(PTX_OPT_LEVEL_0));
        }
        // No barrier (a warp barrier is not one), or a cas not in a loop, or a loop without a
        // cas: nothing.
        let warp_only = kernel(&format!("{CAS_LOOP}\tbar.warp.sync \t-1;\n"));
        assert!(!fix(&warp_only).contains(PTX_OPT_LEVEL_0));
        let one_cas = kernel("\tatom.global.cas.b32 \t%r2, [%rd1], %r3, %r4;\n\tbar.sync \t0;\n");
        assert!(!fix(&one_cas).contains(PTX_OPT_LEVEL_0));
        let plain_loop = kernel(
            "$L__BB0_1:\n\tadd.s32 \t%r1, %r1, 1;\n\tsetp.lt.s32 \t%p1, %r1, 9;\n\
             \t@%p1 bra \t$L__BB0_1;\n\tbar.sync \t0;\n",
        );
        assert!(!fix(&plain_loop).contains(PTX_OPT_LEVEL_0));
        // A cas and a branch back across another label (a loop of several blocks, such as a
        // `while` whose body holds an `if`): not a retry loop.
        let wide = kernel(
            "$L__BB0_1:\n\t@%p2 bra \t$L__BB0_3;\n\tatom.global.cas.b32 \t%r2, [%rd1], %r3, %r4;\n\
             $L__BB0_3:\n\t@%p1 bra \t$L__BB0_1;\n\tbar.sync \t0;\n",
        );
        assert!(!fix(&wide).contains(PTX_OPT_LEVEL_0));
    }
}
