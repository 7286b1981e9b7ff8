//! Workaround 6: **an f64 `min`/`max` whose bits are read as an integer loses its comparison.**
//!
//! When only the low word of `mov.b64 %rd, %fd` of a `min.f64`/`max.f64` result is used
//! (`& 7`), ptxas (12.9 to 13.5) picks that word from the first operand unless the other is
//! NaN, without comparing (fuzzer seeds 11300120, 12500197: `x.min(y).bitcast::<u64>() & 7`
//! took x's low word; only beside other code). Adding -0 after such a min/max (exact:
//! -0 + -0 = -0, +0 + -0 = +0) keeps the comparison, so every `min.f64`/`max.f64` whose
//! register is moved into an integer register is followed by
//! `add.f64 d, d, 0d8000000000000000`. f32 is not affected.

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 6's descriptor.
pub(crate) const W06: Workaround = Workaround {
    id: 6,
    name: "f64_min_max_read_as_int",
    fixes: "the low word of an f64 min/max read as an integer is taken from one operand \
            without comparing",
    seen_on: &["ptxas 12.9 to 13.5", "CUDA 13.0 driver JIT (driver 580, H200)"],
    seeds: &[11300120, 12500197],
    tests: &[
        "tests/gpu/nan_bits.rs::low_bits_of_f64_min_max",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w06_f64_min_max_read_as_int.rs::f64_min_max_read_as_an_integer_get_an_add_of_minus_zero",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// Each `min.f64`/`max.f64` into a register that a `mov.b64` moves into a non-float register,
/// followed by an add of -0.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    let read_as_int: Vec<&str> = f
        .insts_of("mov.b64")
        .filter_map(|(_, _, i)| {
            let a = *i.operands.last()?;
            let d = i.dest()?;
            (i.operands.len() > 1 && a.starts_with("%fd") && !d.starts_with("%fd")).then_some(a)
        })
        .collect();
    f.insts()
        .filter(|(_, _, i)| matches!(i.op, "min.f64" | "max.f64"))
        .filter_map(|(n, line, i)| {
            let d = i.dest()?;
            if !read_as_int.contains(&d) {
                return None;
            }
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            Some(Edit::Replace(
                n,
                format!(
                    "{}\n{indent}{p}add.f64 \t{d}, {d}, 0d8000000000000000;{nl}",
                    line.without_newline()
                ),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn f64_min_max_read_as_an_integer_get_an_add_of_minus_zero() {
        let ptx = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
                   \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
        let want = ".func a()\n{\n\tmin.f64 %fd28, %fd2, %fd1;\n\
                    \tadd.f64 \t%fd28, %fd28, 0d8000000000000000;\n\tmax.f64 %fd29, %fd2, %fd1;\n\
                    \tmov.b64 \t%rd49, %fd28;\n\tmov.b64 \t%fd30, %fd29;\n}\n";
        assert_eq!(fix(ptx), want);
    }
}
