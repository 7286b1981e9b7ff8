//! Workaround 14: **a 16-bit `min`/`max` compared with an operand reads the wrong half's
//! predicate.**
//!
//! `setp.eq.s16 p, d, c` after `max.u16 d, a, c` (or `min`, `.s16`, any constant or register
//! `c`) is folded into the min/max instruction's own predicate output: ptxas emits
//! `VIMNMX.U16x2 R0, P1, P1, R0, c` (the paired 16-bit form, one predicate per half) and names
//! the same predicate register for both halves, so the high half's answer, about the
//! register's unused upper 16 bits, overwrites the low half's. The whole-language campaign
//! found it as `1u8 / ((c & a.min(x)) & (a * 16))`: LLVM lowers the division's
//! `divisor == 1` test to `max(d, 1) == 1`, and the device took `d = 16` for one (seed
//! 41900213, program 30, on two H200s with driver 580; `ptxas` 12.9 offline emits the same
//! SASS). Every 16-bit `min`/`max` (the 8-bit ones are done in 16-bit registers too) is
//! written as its 32-bit form between widening and narrowing `cvt`s, which ptxas compiles to
//! `VIMNMX.U32` and an explicit `ISETP`.

use super::ptx::{Edit, Function};
use super::registry::Workaround;

/// Workaround 14's descriptor.
pub(crate) const W14: Workaround = Workaround {
    id: 14,
    name: "narrow_min_max_predicate",
    fixes: "a 16-bit `min`/`max` compared with its operand reads the other half's predicate",
    seen_on: &["CUDA 13.0 driver JIT (driver 580, H200)", "ptxas 12.9"],
    // A whole-language seed (`--lang whole`), which tests/fuzz.rs's replay of the core
    // language's findings does not run: the tests below stand for it.
    seeds: &[],
    tests: &[
        "tests/gpu/narrow.rs::narrow_min_max_compared_with_an_operand",
        "src/codegen/ptx_fix/w14_narrow_min_max_predicate.rs::writes_16_bit_min_max_in_32_bits",
    ],
    upstream: None,
    fixed_in: None,
    ptxas_fixed_in: None,
    apply,
};

/// An operand of a 16-bit instruction as a 32-bit one: a register through `cvt` into `tmp`
/// (zero- or sign-extended), an immediate as its 16-bit value, extended the same way.
fn widen(a: &str, signed: bool, tmp: &str, p: &str) -> Option<(String, String)> {
    if a.starts_with('%') {
        let cvt = if signed { "cvt.s32.s16" } else { "cvt.u32.u16" };
        return Some((format!("{p}{cvt} {tmp}, {a}; "), tmp.to_string()));
    }
    let v: i64 = match a.strip_prefix("0x").or_else(|| a.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => a.parse().ok()?,
    };
    let v = if signed {
        i64::from(v as i16)
    } else {
        i64::from(v as u16)
    };
    Some((String::new(), v.to_string()))
}

/// Every `min`/`max` `.u16`/`.s16` `d, a, b` as `cvt` `a` and `b` to 32 bits, the 32-bit
/// `min`/`max`, `cvt.u16.u32 d`.
fn apply(f: &Function<'_>) -> Vec<Edit> {
    f.insts()
        .filter_map(|(n, line, i)| {
            let (what, ty) = i.op.split_once('.')?;
            let signed = match (what, ty) {
                ("min" | "max", "u16") => false,
                ("min" | "max", "s16") => true,
                _ => return None,
            };
            let [d, a, b] = i.operands[..] else {
                return None;
            };
            let p = line.guard_prefix();
            let (ca, a32) = widen(a, signed, "%cj_a", &p)?;
            let (cb, b32) = widen(b, signed, "%cj_b", &p)?;
            let t32 = if signed { "s32" } else { "u32" };
            Some(Edit::Replace(
                n,
                format!(
                    "{}{{ .reg .b32 %cj_a, %cj_b; {ca}{cb}{p}{what}.{t32} %cj_a, {a32}, {b32}; \
                     {p}cvt.u16.u32 {d}, %cj_a; }}{}",
                    line.indent,
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
    fn writes_16_bit_min_max_in_32_bits() {
        let ptx = "\tmax.u16 \t%rs6, %rs5, 1;\n\t@%p1 min.s16 \t%rs7, %rs6, %rs2;\n\
                   \tmax.s16 \t%rs8, %rs7, -7;\n\tmin.u16 \t%rs9, %rs8, 0xFFFF;\n\
                   \tmax.s32 \t%r2, %r1, 3;\n";
        let want = "\t{ .reg .b32 %cj_a, %cj_b; cvt.u32.u16 %cj_a, %rs5; max.u32 %cj_a, %cj_a, 1; \
                    cvt.u16.u32 %rs6, %cj_a; }\n\
                    \t{ .reg .b32 %cj_a, %cj_b; @%p1 cvt.s32.s16 %cj_a, %rs6; @%p1 cvt.s32.s16 \
                    %cj_b, %rs2; @%p1 min.s32 %cj_a, %cj_a, %cj_b; @%p1 cvt.u16.u32 %rs7, %cj_a; }\n\
                    \t{ .reg .b32 %cj_a, %cj_b; cvt.s32.s16 %cj_a, %rs7; max.s32 %cj_a, %cj_a, -7; \
                    cvt.u16.u32 %rs8, %cj_a; }\n\
                    \t{ .reg .b32 %cj_a, %cj_b; cvt.u32.u16 %cj_a, %rs8; min.u32 %cj_a, %cj_a, 65535; \
                    cvt.u16.u32 %rs9, %cj_a; }\n\
                    \tmax.s32 \t%r2, %r1, 3;\n";
        assert_eq!(fix(ptx), want);
    }
}
