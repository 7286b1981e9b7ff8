//! Workaround 3: **a 32-bit select of the bits 1 and 0 is taken for the numbers 1.0 and 0.0**,
//! and the other way round.
//!
//! `selp.f32 f, 0f00000001, 0f00000000, p` (`select(b, f32::from_bits(1), 0.0)`, also from
//! `selp.b32 r, 1, 0, p` moved into an f32 register) is treated as a boolean by the optimiser,
//! and a float conversion of it is folded as if it held 1.0: `floor`/`ceil`/`trunc`/`round`
//! give the subnormal itself (or 1.0), `as i32` gives 1, `as f64` gives 1.0, where each should
//! see the smallest subnormal (seen with ptxas 12.9 to 13.5, `-O1` and up; the driver's JIT at
//! its default level; fuzzer seed 1100238). Adding `-0.0` (exact for both values, no flush
//! without `.ftz`) hides the pattern, so such a select whose register is a float, or an
//! integer register later moved into a float one *in the same function* (register names repeat
//! between functions: taken over the whole module, the add reached an integer `selp` used as a
//! shift amount, which ptxas then took for 0, seeds 14100530 and 14500984), is followed by
//! `add.f32 d, d, 0f80000000;`. f64 is not affected.
//!
//! The other direction is wrong too: `selp.u32 r, 1, 0, p; cvt.rn.f32.u32 f, r` gave the bits
//! 1 instead of 1.0f (`bool as u32 as f32`; ptxas 12.9 to 13.5; fuzzer seed 8300081). A
//! conversion to float of a register defined once, by such a select on a predicate defined
//! once, is therefore written as the select of the converted constants,
//! `selp.f32 f, 0f3F800000, 0f00000000, p` (exact, and one instruction fewer).

use std::collections::{HashMap, HashSet};

use super::ptx::{Edit, Function, Inst};
use super::registry::Workaround;

/// Workaround 3's descriptor.
pub(crate) const W03: Workaround = Workaround {
    id: 3,
    name: "select_of_bits_one_and_zero",
    fixes: "a select of the bits 1 and 0 is converted as if it held 1.0 and 0.0, and a select \
            of 1 and 0 converted to float gives the bits 1",
    seen_on: &[
        "ptxas 12.9 to 13.5 (-O1 and up)",
        "CUDA 13.0 driver JIT (driver 580, H200)",
    ],
    seeds: &[1100238, 8300081, 14100530, 14500984],
    tests: &[
        "tests/gpu/nan_compares.rs::float_conversions_of_a_select_of_one_and_zero_bits",
        "tests/gpu/nan_compares.rs::bool_to_float_and_min_max_to_int_conversions",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w03_select_of_bits_one_and_zero.rs::hides_float_selects_of_one_and_zero",
        "src/codegen/ptx_fix/w03_select_of_bits_one_and_zero.rs::converts_a_select_of_one_and_zero_to_float_by_selecting",
        "src/codegen/ptx_fix/w03_select_of_bits_one_and_zero.rs::float_add_after_a_bool_select_only_where_that_function_moves_it_to_float",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Both parts: conversions to float of a boolean select become selects of 1.0 and 0.0, and a
/// float select of the bits 1 and 0 gets an add of -0.0.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let bools = bool_selects(f);
    let to_float = moved_to_float(f);
    f.insts()
        .filter_map(|(n, line, i)| {
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            if let Some((to, d, a, b, q)) = float_of_bool(i, &bools) {
                return Some(Edit::Replace(
                    n,
                    format!("{indent}{p}selp.{to} \t{d}, {a}, {b}, {q};{nl}"),
                ));
            }
            if !matches!(i.op, "selp.f32" | "selp.b32" | "selp.u32" | "selp.s32") {
                return None;
            }
            let d = selects_one_and_zero(i)?;
            if !(d.starts_with("%f") || to_float.contains(d)) {
                return None;
            }
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n{indent}{p}add.f32 \t{d}, {d}, 0f80000000;{nl}",
                    line.without_newline()
                ),
            ))
        })
        .collect()
}

/// Integer registers defined once, by an unguarded select of 1 and 0 on a predicate defined
/// once: `register -> (predicate, whether 1 is picked when it holds)`.
fn bool_selects<'a>(f: &Function<'a>) -> HashMap<&'a str, (&'a str, bool)> {
    let defs = f.write_counts();
    let once = |r: &str| defs.get(r) == Some(&1);
    f.insts()
        .filter_map(|(_, _, i)| {
            if i.guard.is_some()
                || !i.op.starts_with("selp.")
                || i.op.ends_with("f32")
                || i.op.ends_with("f64")
            {
                return None;
            }
            let [d, a, b, p] = i.operands[..] else {
                return None;
            };
            let one_first = match (a, b) {
                ("1", "0") => true,
                ("0", "1") => false,
                _ => return None,
            };
            (once(d) && once(p)).then_some((d, (p, one_first)))
        })
        .collect()
}

/// For a `cvt.*.f32/f64.{u,s}{32,64} f, r` of a register of `bools`: the float type, `f`, the
/// two converted constants in the select's order, and the predicate.
fn float_of_bool<'a>(
    i: &Inst<'a>,
    bools: &HashMap<&str, (&'a str, bool)>,
) -> Option<(&'a str, &'a str, &'static str, &'static str, &'a str)> {
    if !i.op.starts_with("cvt.") {
        return None;
    }
    let parts: Vec<&str> = i.suffixes().collect();
    let (to, from) = (parts.get(parts.len().checked_sub(2)?)?, parts.last()?);
    if !matches!(*from, "u32" | "s32" | "u64" | "s64") {
        return None;
    }
    let (one, zero) = match *to {
        "f32" => ("0f3F800000", "0f00000000"),
        "f64" => ("0d3FF0000000000000", "0d0000000000000000"),
        _ => return None,
    };
    let (d, r) = i.dest_and_rest()?;
    let &(q, one_first) = bools.get(r)?;
    let (a, b) = if one_first { (one, zero) } else { (zero, one) };
    Some((to, d, a, b, q))
}

/// The integer registers that an unguarded `mov.b32 %fN, %rM` moves into a float register (a
/// bitcast) in this function.
fn moved_to_float<'a>(f: &Function<'a>) -> HashSet<&'a str> {
    f.insts_of("mov.b32")
        .filter(|(_, _, i)| i.guard.is_none())
        .filter_map(|(_, _, i)| {
            let (d, a) = i.dest_and_rest()?;
            (d.starts_with("%f") && a.starts_with("%r")).then_some(a)
        })
        .collect()
}

/// The destination of a `selp` (`d, a, b, p`) of the bits 1 and 0 (in either order).
fn selects_one_and_zero<'a>(i: &Inst<'a>) -> Option<&'a str> {
    let [d, a, b, _] = i.operands[..] else {
        return None;
    };
    let bit = |v: &str| match v {
        "1" | "0f00000001" => Some(1),
        "0" | "0f00000000" => Some(0),
        _ => None,
    };
    (bit(a)? + bit(b)? == 1).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

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
        assert_eq!(fix(ptx), want);
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
        assert_eq!(fix(ptx), want);
    }

    #[test]
    fn float_add_after_a_bool_select_only_where_that_function_moves_it_to_float() {
        let ptx = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
                   .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tmov.b32 \t%f1, %r1;\n}\n";
        let want = ".func f()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\tshr.s64 \t%rd2, %rd1, %r1;\n}\n\
                    .entry k()\n{\n\tselp.u32 \t%r1, 1, 0, %p1;\n\
                    \tadd.f32 \t%r1, %r1, 0f80000000;\n\tmov.b32 \t%f1, %r1;\n}\n";
        assert_eq!(fix(ptx), want);
    }
}
