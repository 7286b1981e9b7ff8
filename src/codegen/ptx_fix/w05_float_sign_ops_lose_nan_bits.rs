//! Workaround 5: **`neg.f32`, `neg.f64` and `abs.f64` do not keep a NaN's bits.**
//!
//! ptxas compiles them as an add of -0 (`FADD R, -a, -RZ`, `DADD R, -RZ, |a|`), which returns
//! the canonical NaN (0x7FFFFFFF): the negation of a negative NaN comes out positive. LLVM's
//! `fneg`/`fabs` are bit operations, and libdevice relies on that: `log1pf(-|x|)` reads the bits
//! of its argument to route a NaN, and gave 89.416 (129 ln 2) for a NaN (fuzzer seeds 11600256,
//! 12300372). Rust's `-x` and `abs` are sign-bit operations too. So `neg.f32` becomes
//! `xor.b32 d, a, 0x80000000`, `neg.f64` `xor.b64` with the sign bit, and `abs.f64`
//! `and.b64 d, a, 0x7FFFFFFFFFFFFFFF` (`abs.f32` already is an `and`, workaround 1); ptxas
//! still folds them into its operand modifiers where a float instruction consumes them.

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 5's descriptor.
pub(crate) const W05: Workaround = Workaround {
    id: 5,
    name: "float_sign_ops_lose_nan_bits",
    fixes: "`neg.f32`, `neg.f64` and `abs.f64` return the canonical NaN instead of flipping or \
            clearing the sign bit",
    seen_on: &[
        "CUDA 13.0 driver JIT (driver 580, H200)",
        "ptxas (its SASS, read while reducing; version not recorded)",
    ],
    seeds: &[11600256, 12300372],
    tests: &[
        "tests/gpu/nan_bits.rs::negation_abs_and_copysign_keep_nan_bits_f32",
        "tests/gpu/nan_bits.rs::negation_abs_and_copysign_keep_nan_bits_f64",
        "tests/fuzz.rs::the_batches_of_the_gpu_findings_match_the_host_model",
        "src/codegen/ptx_fix/w05_float_sign_ops_lose_nan_bits.rs::float_negation_keeps_nan_bits",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// `neg.f32`/`neg.ftz.f32`/`neg.f64` as an `xor` with the sign bit, `abs.f64` as an `and`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            let (mask, what) = match i.op {
                "neg.f32" | "neg.ftz.f32" => ("0x80000000", "xor.b32"),
                "abs.f64" => ("0x7FFFFFFFFFFFFFFF", "and.b64"),
                "neg.f64" => ("0x8000000000000000", "xor.b64"),
                _ => return None,
            };
            let (d, a) = i.two_operands()?;
            let (indent, p, nl) = (line.indent, line.guard_prefix(), line.newline());
            Some(Edit::Replace(
                n,
                format!("{indent}{p}{what} \t{d}, {a}, {mask};{nl}"),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::fix;

    #[test]
    fn float_negation_keeps_nan_bits() {
        let ptx =
            "\tneg.f64 \t%fd3, %fd2;\n\t@%p1 neg.ftz.f32 \t%f2, %f1;\n\tneg.f16 \t%rs2, %rs1;\n";
        let want = "\txor.b64 \t%fd3, %fd2, 0x8000000000000000;\n\
                    \t@%p1 xor.b32 \t%f2, %f1, 0x80000000;\n\tneg.f16 \t%rs2, %rs1;\n";
        assert_eq!(fix(ptx), want);
    }
}
