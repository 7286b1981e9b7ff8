//! The rewrites' unit tests: exact PTX in, exact PTX out.

use super::work_around_ptxas;

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
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn float_negation_keeps_nan_bits() {
    let ptx = "\tneg.f64 \t%fd3, %fd2;\n\t@%p1 neg.ftz.f32 \t%f2, %f1;\n\tneg.s16 \t%rs2, %rs1;\n";
    let want = "\txor.b64 \t%fd3, %fd2, 0x8000000000000000;\n\
                \t@%p1 xor.b32 \t%f2, %f1, 0x80000000;\n\tneg.s16 \t%rs2, %rs1;\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn f64_min_max_read_as_an_integer_get_an_add_of_minus_zero() {
    let ptx = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
               \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
    let want = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\
                \tadd.f64 \t%fd28, %fd28, 0d8000000000000000;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
                \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn makes_minus_one_opaque_where_it_merges_with_a_computed_value() {
    let ptx = ".func a()\n{\n\tmov.b32 \t%r14, -1;\n\tmov.b32 \t%r13, -1;\n\
               \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
               \tmov.u64 \t%rd4, 4294967295;\n\tcvt.u64.u32 \t%rd4, %r14;\n}\n";
    let want = ".func a()\n{\n\t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, \
                %cj_tid, 16; not.b32 %r14, %cj_tid; }\n\tmov.b32 \t%r13, -1;\n\
                \t@%p3 bra \t$L__BB0_6;\n\tmov.b32 \t%r14, %f2;\n\tmov.b32 \t%r13, 0;\n\
                \t{ .reg .b32 %cj_tid; mov.u32 %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; \
                not.b32 %cj_tid, %cj_tid; cvt.u64.u32 %rd4, %cj_tid; }\n\
                \tcvt.u64.u32 \t%rd4, %r14;\n}\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn hides_float_selects_of_one_and_zero() {
    let ptx = "\tselp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n\
               \t@%p2 selp.f32 \t%f7, 0f00000000, 0f00000001, %p1;\n\
               \tselp.u32 \t%r3, 1, 0, %p1;\n\tmov.b32 \t%f8, %r3;\n\
               \tselp.u32 \t%r4, 1, 0, %p1;\n\tselp.f32 \t%f9, 0f00000002, 0f00000000, %p1;\n\
               \tselp.f32 \t%f10, 0f3F800000, 0f00000000, %p1;\n";
    let want = "\tselp.f32 \t%f6, 0f00000001, 0f00000000, %p11;\n\
                \tadd.f32 \t%f6, %f6, 0f80000000;\n\
                \t@%p2 selp.f32 \t%f7, 0f00000000, 0f00000001, %p1;\n\
                \t@%p2 add.f32 \t%f7, %f7, 0f80000000;\n\
                \tselp.u32 \t%r3, 1, 0, %p1;\n\tadd.f32 \t%r3, %r3, 0f80000000;\n\
                \tmov.b32 \t%f8, %r3;\n\
                \tselp.u32 \t%r4, 1, 0, %p1;\n\tselp.f32 \t%f9, 0f00000002, 0f00000000, %p1;\n\
                \tselp.f32 \t%f10, 0f3F800000, 0f00000000, %p1;\n";
    assert_eq!(work_around_ptxas(ptx), want);
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
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn converts_a_select_of_one_and_zero_to_float_by_selecting() {
    let ptx = ".func a()\n{\n\tsetp.ne.s64 \t%p10, %rd3, 0;\n\tselp.u32 \t%r4, 1, 0, %p10;\n\
               \tcvt.rn.f32.u32 \t%f1, %r4;\n\tselp.u64 \t%rd5, 0, 1, %p10;\n\
               \tcvt.rn.f64.u64 \t%fd1, %rd5;\n\tselp.u32 \t%r6, 1, 0, %p11;\n\
               \tsetp.eq.s32 \t%p11, %r1, 0;\n\tsetp.eq.s32 \t%p11, %r2, 0;\n\
               \tcvt.rn.f32.u32 \t%f2, %r6;\n}\n";
    let want = ".func a()\n{\n\tsetp.ne.s64 \t%p10, %rd3, 0;\n\tselp.u32 \t%r4, 1, 0, %p10;\n\
                \tselp.f32 \t%f1, 0f3F800000, 0f00000000, %p10;\n\tselp.u64 \t%rd5, 0, 1, %p10;\n\
                \tselp.f64 \t%fd1, 0d0000000000000000, 0d3FF0000000000000, %p10;\n\
                \tselp.u32 \t%r6, 1, 0, %p11;\n\tsetp.eq.s32 \t%p11, %r1, 0;\n\
                \tsetp.eq.s32 \t%p11, %r2, 0;\n\tcvt.rn.f32.u32 \t%f2, %r6;\n}\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn guards_ex2_against_nan() {
    let ptx = "\tex2.approx.f32 \t%f3, %f2;\n\t@%p1 ex2.approx.ftz.f32 \t%f4, %f3;\n";
    let want = "\t{ .reg .pred %cj_q; .reg .f32 %cj_x; mov.f32 %cj_x, %f2; setp.nan.f32 \
                %cj_q, %cj_x, %cj_x; ex2.approx.f32 %f3, %cj_x; selp.f32 %f3, %cj_x, %f3, \
                %cj_q; }\n\t{ .reg .pred %cj_q; .reg .f32 %cj_x; @%p1 mov.f32 %cj_x, %f3; \
                @%p1 setp.nan.f32 %cj_q, %cj_x, %cj_x; @%p1 ex2.approx.ftz.f32 %f4, %cj_x; \
                @%p1 selp.f32 %f4, %cj_x, %f4, %cj_q; }\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn keeps_a_min_under_a_max_from_becoming_a_saturation() {
    let ptx = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\tmin.f32 %f10, %f2, %f3;\n\
               \tmax.f32 %f7, %f9, %f8;\n\tmin.f32 %f11, %f10, %f3;\n}\n";
    let want = ".func a()\n{\n\tmin.f32 %f8, %f2, %f3;\n\t{ .reg .b32 %cj_tid; mov.u32 \
                %cj_tid, %tid.x; shr.u32 %cj_tid, %cj_tid, 16; or.b32 %f8, %f8, %cj_tid; }\n\
                \tmin.f32 %f10, %f2, %f3;\n\tmax.f32 %f7, %f9, %f8;\n\
                \tmin.f32 %f11, %f10, %f3;\n}\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn float_add_after_a_bool_select_only_where_that_function_moves_it_to_float() {
    let ptx = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
               .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tmov.b32 \t%f1, %r1;\n}\n";
    let want = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
                .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\
                \tadd.f32 \t%r1, %r1, 0f80000000;\n\tmov.b32 \t%f1, %r1;\n}\n";
    assert_eq!(work_around_ptxas(ptx), want);
}

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
    assert_eq!(work_around_ptxas(ptx), want);
}

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
    assert_eq!(work_around_ptxas(ptx), want);
}

#[test]
fn leaves_everything_else_alone() {
    let ptx = ".version 7.8\n// abs.f32 in a comment\n\tld.param.u64 \t%rd1, [k_param_0];\n\
               \tpopc.b32 \t%r2, %r1;\n$L__BB0_2:\n\tret;\n}";
    assert_eq!(work_around_ptxas(ptx), ptx);
}
