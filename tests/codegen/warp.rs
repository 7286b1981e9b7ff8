//! Warp intrinsics and bit operations: every one for every type, compiled for sm_75 and sm_90
//! and checked by ptxas; the PTX each lowers to; targets that lack them give errors, not aborts.

use cudajit::codegen::{Expr, Kernel, KernelBuilder, Num, PtxOptions, FULL_MASK};
use cudajit::Error;

use crate::common::{check_ptx, compile_all};

/// All four shuffles of `x`, summed.
fn shuffles<T: Num>(k: &KernelBuilder, x: Expr<T>) -> Expr<T> {
    let lane = k.lane_id();
    k.shfl_sync(FULL_MASK, x, (lane + 3u32) % 32u32)
        + k.shfl_up_sync(FULL_MASK, x, 1u32)
        + k.shfl_down_sync(FULL_MASK, x, 2u32)
        + k.shfl_xor_sync(FULL_MASK, x, 5u32)
}

macro_rules! shuffle_kernel {
    ($t:ty, $name:literal) => {
        Kernel::<(&[$t], &mut [$t])>::build($name, |k, (x, out)| {
            let i = k.grid1();
            out.set(i, shuffles(k, x.at(i)));
        })
        .unwrap()
    };
}

fn count(ptx: &str, pat: &str) -> usize {
    ptx.matches(pat).count()
}

#[test]
fn shuffles_for_every_type() {
    for (ptx, wide) in [
        (compile_all(&shuffle_kernel!(i32, "shfl_i32")).0, false),
        (compile_all(&shuffle_kernel!(u32, "shfl_u32")).0, false),
        (compile_all(&shuffle_kernel!(f32, "shfl_f32")).0, false),
        (compile_all(&shuffle_kernel!(i64, "shfl_i64")).0, true),
        (compile_all(&shuffle_kernel!(u64, "shfl_u64")).0, true),
        (compile_all(&shuffle_kernel!(f64, "shfl_f64")).0, true),
    ] {
        // 64-bit values move as two 32-bit shuffles.
        let per = if wide { 2 } else { 1 };
        for kind in ["idx", "up", "down", "bfly"] {
            assert_eq!(
                count(&ptx, &format!("shfl.sync.{kind}.b32")),
                per,
                "{kind}:\n{ptx}"
            );
        }
        // Clamp: 31 for idx/down/xor, 0 for up (CUDA's width-32 defaults).
        assert!(ptx.contains(", 1, 0, -1;"), "{ptx}");
        assert!(ptx.contains(", 2, 31, -1;"), "{ptx}");
        assert!(ptx.contains(", 5, 31, -1;"), "{ptx}");
    }
}

#[test]
fn one_64_bit_shuffle_is_two_32_bit_shuffles() {
    let k = Kernel::<(&[f64], &mut [f64], u32)>::build("shfl_one_f64", |k, (x, out, src)| {
        let i = k.grid1();
        out.set(i, k.shfl_sync(0x0000_ffffu32, x.at(i), src));
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    assert_eq!(count(&ptx, "shfl.sync.idx.b32"), 2, "{ptx}");
    assert_eq!(count(&ptx, "shfl.sync"), 2, "{ptx}");
    assert!(ptx.contains("65535"), "the mask is passed through:\n{ptx}");
}

#[test]
fn votes_ballot_activemask_and_lanemasks() {
    let k = Kernel::<(&[f32], &mut [u32])>::build("votes", |k, (x, out)| {
        let i = k.grid1();
        let p = x.at(i).gt(0.0f32);
        let all = k.all_sync(FULL_MASK, p);
        let any = k.any_sync(FULL_MASK, p);
        let uni = k.eq_sync(FULL_MASK, p);
        let ballot = k.ballot_sync(FULL_MASK, p);
        let flags = all.cast::<u32>() + (any.cast::<u32>() << 1u32) + (uni.cast::<u32>() << 2u32);
        out.set(i * 4u64, flags);
        out.set(i * 4u64 + 1u64, ballot);
        k.if_((k.lane_id() % 2u32).eq(1u32), |k| {
            out.set(i * 4u64 + 2u64, k.activemask())
        });
        out.set(
            i * 4u64 + 3u64,
            k.lanemask_lt() ^ k.lanemask_le() ^ k.lanemask_eq() ^ k.lanemask_ge() ^ k.lanemask_gt(),
        );
    });
    let ptx = compile_all(&k.unwrap()).0;
    for pat in [
        "vote.sync.all.pred",
        "vote.sync.any.pred",
        "vote.sync.uni.pred",
        "vote.sync.ballot.b32",
        "activemask.b32",
        "%lanemask_lt",
        "%lanemask_le",
        "%lanemask_eq",
        "%lanemask_ge",
        "%lanemask_gt",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }
}

macro_rules! match_kernel {
    ($t:ty, $name:literal) => {
        Kernel::<(&[$t], &mut [u32])>::build($name, |k, (x, out)| {
            let i = k.grid1();
            let any = k.match_any_sync(FULL_MASK, x.at(i));
            let (all, pred) = k.match_all_sync(FULL_MASK, x.at(i));
            out.set(i * 3u64, any);
            out.set(i * 3u64 + 1u64, all);
            out.set(i * 3u64 + 2u64, pred.cast::<u32>());
        })
        .unwrap()
    };
}

#[test]
fn match_any_and_all_for_every_type() {
    for (ptx, bits) in [
        (compile_all(&match_kernel!(i32, "match_i32")).0, 32),
        (compile_all(&match_kernel!(u32, "match_u32")).0, 32),
        (compile_all(&match_kernel!(f32, "match_f32")).0, 32),
        (compile_all(&match_kernel!(i64, "match_i64")).0, 64),
        (compile_all(&match_kernel!(u64, "match_u64")).0, 64),
        (compile_all(&match_kernel!(f64, "match_f64")).0, 64),
    ] {
        assert!(ptx.contains(&format!("match.any.sync.b{bits}")), "{ptx}");
        assert!(ptx.contains(&format!("match.all.sync.b{bits}")), "{ptx}");
    }
}

macro_rules! bits_kernel {
    ($t:ty, $name:literal) => {
        Kernel::<(&[$t], &mut [u32], &mut [$t])>::build($name, |k, (x, counts, rev)| {
            let i = k.grid1();
            let v = x.at(i);
            counts.set(i * 3u64, v.popc());
            counts.set(i * 3u64 + 1u64, v.clz());
            counts.set(i * 3u64 + 2u64, v.ffs());
            rev.set(i, v.brev());
        })
        .unwrap()
    };
}

#[test]
fn bit_operations_for_every_integer_type() {
    for (ptx, w) in [
        (compile_all(&bits_kernel!(i32, "bits_i32")).0, 32),
        (compile_all(&bits_kernel!(u32, "bits_u32")).0, 32),
        (compile_all(&bits_kernel!(i64, "bits_i64")).0, 64),
        (compile_all(&bits_kernel!(u64, "bits_u64")).0, 64),
    ] {
        for pat in [
            format!("popc.b{w}"),
            format!("clz.b{w}"),
            format!("brev.b{w}"),
        ] {
            assert!(ptx.contains(&pat), "{pat} missing:\n{ptx}");
        }
    }
}

fn compile_error<P: cudajit::codegen::KernelParams>(k: &Kernel<P>, cc: (u32, u32)) -> String {
    match k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)) {
        Err(e @ Error::Codegen(_)) => e.to_string(),
        Err(e) => panic!("expected a kernel error, got {e:?}"),
        Ok(ptx) => panic!("expected an error for sm_{}{}, got PTX:\n{ptx}", cc.0, cc.1),
    }
}

#[test]
fn old_targets_get_errors_or_fallbacks_not_llvm_aborts() {
    // Every target gets PTX ISA 6.0 or newer, so the `.sync` warp instructions exist even on
    // sm_60 (LLVM would abort the process on them below 6.0; lowering refuses there).
    let shfl = shuffle_kernel!(f32, "shfl_old");
    let ptx = shfl.compile_ptx(&PtxOptions::for_cc(6, 0)).unwrap();
    assert!(ptx.contains("shfl.sync"), "{ptx}");
    check_ptx(&ptx, (6, 0), "shfl_sm60");

    let m = match_kernel!(u32, "match_old");
    let e = compile_error(&m, (6, 1));
    assert!(e.contains("match_"), "{e}");
    // sm_70 (PTX ISA 6.0) has match.sync.
    let ptx = m.compile_ptx(&PtxOptions::for_cc(7, 0)).unwrap();
    check_ptx(&ptx, (7, 0), "match_sm70");

    // activemask needs PTX ISA 6.2; on sm_6x (6.0) a plain ballot stands in for it.
    let k = Kernel::<(&mut [u32],)>::build("activemask_old", |k, (out,)| {
        let i = k.grid1();
        k.if_(k.lane_id().lt(7u32), |k| out.set(i, k.activemask()));
    })
    .unwrap();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(6, 0)).unwrap();
    assert!(ptx.contains("vote.ballot.b32"), "{ptx}");
    check_ptx(&ptx, (6, 0), "activemask_old");
    let ptx = compile_all(&k).0;
    assert!(ptx.contains("activemask.b32"), "{ptx}");

    // Bit operations need nothing special.
    let b = bits_kernel!(u64, "bits_old");
    let ptx = b.compile_ptx(&PtxOptions::for_cc(5, 0)).unwrap();
    check_ptx(&ptx, (5, 0), "bits_old");
}

/// A vote whose mask is not the immediate full warp (here `activemask`, read after a branch
/// that splits the warp) is followed by an OR of its result with `%tid.x >> 16`, and so are
/// `activemask` itself and a broadcast shuffle of an `f32` (workaround 16: ptxas took the
/// result for the same in every lane and kept a value merged after a branch on it in a uniform
/// register, seed 44300041); a vote of the full warp is left alone. Through ptxas for every
/// target.
#[test]
fn warp_vote_results_are_ored_with_a_hidden_zero() {
    let k = Kernel::<(&[u32], &mut [u32])>::build("vote_hidden_zero", |k, (x, out)| {
        let t = k.thread_idx().x;
        let v = k.var(false);
        k.if_(x.at(t).gt(3u32), |k| {
            let mask = k.activemask();
            v.set(k.all_sync(mask, x.at(t).lt(9u32)));
            let first = k.shfl_sync(mask, x.at(t).cast::<f32>(), 0u32);
            out.set(t * 16u32 + 9u32, first.bitcast::<u32>());
        });
        let full = k.any_sync(FULL_MASK, x.at(t).eq(0u32));
        k.if_else(
            v.get(),
            |_| out.set(t * 16u32 + 7u32, full.cast::<u32>()),
            |_| out.set(t * 16u32 + 8u32, x.at(t)),
        );
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    let lines: Vec<&str> = ptx.lines().collect();
    let hidden_zero = |i: usize| {
        let next = lines.get(i + 1).copied().unwrap_or("");
        next.contains("shr.u32 %cj_tid, %cj_tid, 16") && next.contains("or.")
    };
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate() {
        // Workaround 17's reads of `activemask` at the joins are checked below.
        if (l.contains("activemask.b32") && !l.contains("%cj_am"))
            || l.contains("vote.sync.all.pred")
            || l.contains("shfl.sync.idx")
        {
            assert!(hidden_zero(i), "without workaround 16's OR: {l}\n{ptx}");
            seen += 1;
        }
        if l.contains("vote.sync.any.pred") {
            assert!(l.trim_end().ends_with("-1;"), "{l}");
            assert!(!hidden_zero(i), "a full-warp vote was rewritten: {l}");
            seen += 1;
        }
    }
    assert_eq!(seen, 4, "{ptx}");
}

/// The join of an `if` around a warp instruction of a partial mask (a label two ways reach,
/// none from after it) begins with a read of `activemask` that traps if it is 0 (workaround
/// 17: ptxas 12.9 and 13.0 closed a short `if` without `BSSY`/`BSYNC` and updated a uniform
/// register in place after its join, `UIADD3 UR4, UR4, 0x30`, once for each group of the split
/// warp: the second group's shared array address went 0x30 too far, seed 62700015). Here the
/// `if` of a lane mask around a `ballot_sync`, then a store to a shared array, as in that block
/// program; a loop's head is left alone. Through ptxas for every target.
#[test]
fn each_join_reads_activemask_before_the_code_after_it() {
    let k = Kernel::<(&[u32], &mut [u32])>::build("join_activemask", |k, (x, out)| {
        let t = k.thread_idx().x;
        let sh = k.shared_array::<u32>(64);
        let v = k.var(0u32);
        let mask = 0x0400_0000u32;
        k.if_(((Expr::lit(mask) >> k.lane_id()) & 1u32).ne(0u32), |k| {
            v.set(k.ballot_sync(mask, x.at(t).gt(3u32)));
        });
        sh.set(t, x.at(t));
        k.syncthreads();
        let acc = k.var(0u32);
        k.for_range(0u32, x.at(0u32) % 8u32, |_, i| {
            acc.set(acc.get() + sh.at(i))
        });
        out.set(t, v.get() + sh.at((t + 1u32) % 64u32) + acc.get());
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    let lines: Vec<&str> = ptx.lines().collect();
    let reads = |i: usize| {
        lines
            .get(i + 1)
            .is_some_and(|n| n.contains("activemask.b32 %cj_am") && n.contains("@%cj_q trap"))
    };
    // The label after the ballot (the `if`'s join) reads it; a loop's head does not.
    let ballot = lines
        .iter()
        .position(|l| l.contains("vote.sync.ballot"))
        .expect("the ballot");
    let join = (ballot..lines.len())
        .find(|&i| lines[i].trim().starts_with('$') && lines[i].trim().ends_with(':'))
        .expect("the if's join");
    assert!(reads(join), "the join does not read activemask\n{ptx}");
    for (i, l) in lines.iter().enumerate() {
        let Some(label) = l.trim().strip_suffix(':').filter(|n| n.starts_with('$')) else {
            continue;
        };
        let target = format!("{label};");
        let back = (i + 1..lines.len())
            .any(|j| lines[j].contains("bra") && lines[j].trim_end().ends_with(&target));
        if back {
            assert!(!reads(i), "a loop head reads activemask: {label}\n{ptx}");
        }
    }
}
