//! What PTX text asks of the compiler that turns it into machine code: a comment line that
//! cudajit's PTX workarounds put in a module that the PTX compiler must compile without
//! optimisation (workaround 19, `src/codegen/ptx_fix/w19_unoptimised_split_warps.rs`). The
//! driver's JIT, nvJitLink and ptxas all read it through [`ptx_opt_level`].

/// The line that asks for `-O0` (a PTX comment: the compilers themselves ignore it).
pub(crate) const PTX_OPT_LEVEL_0: &str =
    "// cudajit: compile at -O0 (workaround 19: a warp that a compare-and-swap loop splits)";

/// The optimisation level PTX `text` asks for (`Some(0)` when it holds [`PTX_OPT_LEVEL_0`]),
/// or `None`: the compiler's default (or `CUDAJIT_JIT_OPT_LEVEL`'s).
pub(crate) fn ptx_opt_level(text: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(text).ok()?;
    text.contains(PTX_OPT_LEVEL_0).then_some(0)
}

/// The level to compile PTX `text` at, with `env` the one `CUDAJIT_JIT_OPT_LEVEL` sets: the
/// lower of the two (the text's is needed for the code to be right).
pub(crate) fn opt_level(text: &[u8], env: Option<u32>) -> Option<u32> {
    match (ptx_opt_level(text), env) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_asks_for_level_zero_whatever_the_environment() {
        let plain = b".version 8.0\n.target sm_90\n.visible .entry k()\n{\n\tret;\n}\n";
        let marked = format!(
            ".version 8.0\n.target sm_90\n{PTX_OPT_LEVEL_0}\n.visible .entry k()\n{{\n\tret;\n}}\n"
        );
        assert_eq!(ptx_opt_level(plain), None);
        assert_eq!(ptx_opt_level(marked.as_bytes()), Some(0));
        assert_eq!(opt_level(plain, None), None);
        assert_eq!(opt_level(plain, Some(2)), Some(2));
        assert_eq!(opt_level(marked.as_bytes(), None), Some(0));
        assert_eq!(opt_level(marked.as_bytes(), Some(3)), Some(0));
        // Not UTF-8 (a cubin's bytes): no hint.
        assert_eq!(ptx_opt_level(&[0x7f, b'E', b'L', b'F', 0xff, 0xfe]), None);
    }
}
