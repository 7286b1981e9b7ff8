//! The registry's tests, and the exact-output tests that cross workarounds (each
//! workaround's own are in its file).

use super::registry::{by_id, claims, Workaround, PRECEDENCE, WORKAROUNDS};
use super::{work_around_ptxas, WorkaroundSet};
use crate::context::DriverVersion;

/// `ptx` with every workaround applied (what a compilation with no driver known gets).
pub(super) fn fix(ptx: &str) -> String {
    work_around_ptxas(ptx, WorkaroundSet::ALL)
}

fn v(major: u32, minor: u32) -> DriverVersion {
    DriverVersion { major, minor }
}

#[test]
fn rewrites_f32_abs_and_integer_neg_only() {
    let ptx = "\tabs.f32 \t%f3, %f2;\n\tabs.ftz.f32 \t%f4, %f3;\n\tabs.f64 \t%fd2, %fd1;\n\
               \tneg.s32 \t%r9, %r2;\n\t@%p1 neg.s32 \t%r3, %r3;\n\tneg.s64 \t%rd2, %rd1;\n\
               \t@%p2 abs.s64 \t%rd3, %rd3;\n\
               \tneg.f32 \t%f5, %f4;\n\tmin.s32 \t%r4, %r9, %r1;\n";
    let want = "\tand.b32 \t%f3, %f2, 2147483647;\n\tand.b32 \t%f4, %f3, 2147483647;\n\
                \tand.b64 \t%fd2, %fd1, 0x7FFFFFFFFFFFFFFF;\n\tnot.b32 \t%r9, %r2;\n\tadd.s32 \t%r9, %r9, 1;\n\
                \t@%p1 not.b32 \t%r3, %r3;\n\t@%p1 add.s32 \t%r3, %r3, 1;\n\
                \tnot.b64 \t%rd2, %rd1;\n\tadd.s64 \t%rd2, %rd2, 1;\n\
                \t{ .reg .b64 %cj_s; @%p2 shr.s64 %cj_s, %rd3, 63; @%p2 xor.b64 %rd3, %rd3, \
                %cj_s; @%p2 sub.s64 %rd3, %rd3, %cj_s; }\n\
                \txor.b32 \t%f5, %f4, 0x80000000;\n\tmin.s32 \t%r4, %r9, %r1;\n";
    assert_eq!(fix(ptx), want);
}

#[test]
fn leaves_everything_else_alone() {
    let ptx = ".version 7.8\n// abs.f32 in a comment\n\tld.param.u64 \t%rd1, [k_param_0];\n\
               \tpopc.b32 \t%r2, %r1;\n$L__BB0_2:\n\tret;\n}";
    assert_eq!(fix(ptx), ptx);
}

#[test]
fn an_empty_set_leaves_the_ptx_as_it_is() {
    let ptx = "\tabs.f32 \t%f3, %f2;\n\tneg.s32 \t%r9, %r2;\n";
    assert_eq!(
        work_around_ptxas(ptx, WorkaroundSet::for_driver(None).without(1)),
        "\tabs.f32 \t%f3, %f2;\n\tnot.b32 \t%r9, %r2;\n\tadd.s32 \t%r9, %r9, 1;\n"
    );
    let none = WORKAROUNDS
        .iter()
        .fold(WorkaroundSet::ALL, |s, w| s.without(w.id));
    assert_eq!(work_around_ptxas(ptx, none), ptx);
}

#[test]
fn ids_are_unique_and_in_order_and_the_precedence_names_each_once() {
    let ids: Vec<u8> = WORKAROUNDS.iter().map(|w| w.id).collect();
    assert_eq!(
        ids,
        (1..=19).collect::<Vec<u8>>(),
        "by id, from 1, none missing"
    );
    let mut order = PRECEDENCE.to_vec();
    order.sort_unstable();
    assert_eq!(order, ids, "the precedence lists every workaround once");
    for w in WORKAROUNDS {
        assert!(by_id(w.id).is_some_and(|b| b.name == w.name));
        assert!(!w.name.is_empty() && !w.fixes.is_empty() && !w.seen_on.is_empty());
        assert!(
            w.upstream.is_none(),
            "no upstream report is known: update this test"
        );
    }
    assert_eq!(WorkaroundSet::ALL.bits(), 0x7FFFF);
}

#[test]
fn each_descriptor_names_tests_that_exist_and_its_seeds_are_replayed() {
    let root = env!("CARGO_MANIFEST_DIR");
    // This reads the sources: a test binary run away from them (the GPU bundle) has nothing to
    // check here (CI runs it where they are).
    let Ok(fuzz) = std::fs::read_to_string(format!("{root}/tests/fuzz.rs")) else {
        eprintln!("the source tree is not at {root}: nothing to check");
        return;
    };
    for w in WORKAROUNDS {
        assert!(!w.tests.is_empty(), "workaround {} names no test", w.id);
        for t in w.tests {
            let (path, name) = t.rsplit_once("::").unwrap();
            let text = std::fs::read_to_string(format!("{root}/{path}"))
                .unwrap_or_else(|e| panic!("workaround {}: {path}: {e}", w.id));
            assert!(
                text.contains(&format!("fn {name}(")) || text.contains(&format!("({name},")),
                "workaround {}: no test `{name}` in {path}",
                w.id
            );
        }
        for seed in w.seeds {
            assert!(
                fuzz.contains(&format!(" {seed},")),
                "workaround {}: seed {seed} is not in tests/fuzz.rs's GPU_FINDING_SEEDS",
                w.id
            );
        }
    }
}

#[test]
fn a_driver_at_or_past_a_fix_drops_that_workaround() {
    // A hypothetical future driver whose JIT fixes workaround 4 (ptxas 13.5 does).
    let fixed = Workaround {
        fixed_in: Some(v(13, 5)),
        ..*by_id(4).unwrap()
    };
    let list: Vec<&Workaround> = WORKAROUNDS
        .iter()
        .map(|&w| if w.id == 4 { &fixed } else { w })
        .collect();
    let all = WorkaroundSet::ALL;
    assert_eq!(
        WorkaroundSet::select(&list, None),
        all,
        "unknown driver: all"
    );
    assert_eq!(WorkaroundSet::select(&list, Some(v(13, 0))), all);
    assert_eq!(WorkaroundSet::select(&list, Some(v(13, 5))), all.without(4));
    assert_eq!(WorkaroundSet::select(&list, Some(v(14, 1))), all.without(4));
    assert!(!all.without(4).contains(4) && all.without(4).contains(3));
    // What is known of 4: ptxas 13.5 compiles it right; no driver with the fix is known.
    let w4 = by_id(4).unwrap();
    assert_eq!((w4.fixed_in, w4.ptxas_fixed_in), (None, Some(v(13, 5))));
    // No driver is known to fix any of them today: every one applies to every driver.
    for d in [None, Some(v(12, 8)), Some(v(13, 0)), Some(v(99, 0))] {
        assert_eq!(WorkaroundSet::for_driver(d), all);
    }
}

#[test]
fn no_line_is_claimed_by_two_workarounds() {
    // Every instruction a workaround rewrites, in one function, with the neighbours that
    // their function-wide conditions need.
    let ptx = ".entry k()\n{\n\t.reg .b32 \t%r<20>;\n\n\tmov.b32 \t%r12, -1;\n\
               \t@%p3 bra \t$L__BB0_4;\n\tmov.b32 \t%r12, 1065353216;\n\tmov.b32 \t%r14, -1;\n\
               \tmov.b32 \t%r14, %f2;\n\tselp.u32 \t%r4, 1, 0, %p10;\n\
               \tcvt.rn.f32.u32 \t%f1, %r4;\n\tselp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n\
               \tmin.f64 \t%fd28, %fd2, %fd1;\n\tmov.b64 \t%rd49, %fd28;\n\
               \tex2.approx.f32 \t%f3, %f2;\n\tmin.f32 \t%f8, %f2, %f3;\n\
               \tmax.f32 \t%f7, %f9, %f8;\n\tselp.f32 \t%f1, 0f80000000, 0fBF800000, %p3;\n\
               $L__BB0_11:\n\tmov.b32 \t%f23, %r2;\n\t@%p11 bra \t$L__BB0_11;\n\
               \tabs.f32 \t%f3, %f2;\n\tneg.f32 \t%f5, %f4;\n\tabs.f64 \t%fd2, %fd1;\n\
               \tneg.s32 \t%r9, %r2;\n\tabs.s64 \t%rd3, %rd3;\n\tabs.s32 \t%r3, %r3;\n\
               \tneg.s16 \t%rs2, %rs1;\n\tabs.s16 \t%rs4, %rs3;\n\tmax.u16 \t%rs6, %rs5, 1;\n\
               \tld.volatile.global.u32 \t%r18, [%rd2];\n\
               \tvote.sync.all.pred \t%p4, %p1, %r18;\n$L__BB0_12:\n\t@%p5 bra \t$L__BB0_13;\n\
               \tatom.global.cas.b32 \t%r19, [%rd2], %r18, %r17;\n\t@%p6 bra \t$L__BB0_12;\n\
               $L__BB0_13:\n$L__BB0_4:\n\
               \tadd.s32 \t%r15, %r16, %r17;\n\tret;\n}\n";
    let claims = claims(ptx);
    let claimed: Vec<u8> = claims.iter().flat_map(|(_, ids)| ids.clone()).collect();
    for id in PRECEDENCE.iter().filter(|&&id| id != 11 && id != 19) {
        assert!(
            claimed.contains(id),
            "workaround {id} found nothing to rewrite"
        );
    }
    for (line, ids) in claims {
        assert_eq!(ids.len(), 1, "{line:?} is claimed by {ids:?}");
    }
}
