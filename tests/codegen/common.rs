//! Helpers for the CPU codegen tests: compile for several targets and check with ptxas.

use std::process::Command;

use cudajit::codegen::{Kernel, KernelParams, PtxOptions};

pub use crate::support::fixtures::fixture;
pub use crate::support::ptxas::ptxas;

/// The targets every test kernel is compiled for and checked by ptxas.
pub const TARGETS: [(u32, u32); 2] = [(7, 5), (9, 0)];

/// What ptxas said about one kernel.
#[derive(Debug)]
#[allow(dead_code)] // registers and log are printed by tests that want them
pub struct PtxasReport {
    pub registers: u32,
    pub spill_bytes: u32,
    pub stack_bytes: u32,
    pub log: String,
}

/// Assembles `ptx` for `cc` with ptxas; panics with ptxas's message if it rejects it.
pub fn check_ptx(ptx: &str, cc: (u32, u32), what: &str) -> PtxasReport {
    check_ptx_args(ptx, cc, what, &[])
}

/// [`check_ptx`] with more ptxas arguments (e.g. `-c` for PTX that calls external functions).
pub fn check_ptx_args(ptx: &str, cc: (u32, u32), what: &str, args: &[&str]) -> PtxasReport {
    check_ptx_arch(ptx, &format!("sm_{}{}", cc.0, cc.1), what, args)
}

/// [`check_ptx_args`] for a named architecture (e.g. `sm_90a`).
pub fn check_ptx_arch(ptx: &str, arch: &str, what: &str, args: &[&str]) -> PtxasReport {
    let dir = std::env::temp_dir().join(format!("cudajit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = format!("{what}_{arch}_{:x}", fxhash(ptx));
    let src = dir.join(format!("{stem}.ptx"));
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(ptxas())
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .args(args)
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{stem}.cubin")))
        .output()
        .expect("running ptxas");
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if log.contains("is not defined for option 'gpu-name'") {
        // CUDA 13's ptxas dropped targets below sm_75; CI's ptxas (12.x) still checks them.
        eprintln!("note: this ptxas cannot assemble {arch}; {what} not checked for it");
        return PtxasReport {
            registers: 0,
            spill_bytes: 0,
            stack_bytes: 0,
            log,
        };
    }
    assert!(
        out.status.success(),
        "ptxas rejected {what} for {arch}:\n{log}\n--- PTX ---\n{ptx}"
    );
    let num = |key: &str| -> u32 {
        log.lines()
            .filter_map(|l| {
                let i = l.find(key)?;
                l[..i].split_whitespace().last()?.parse::<u32>().ok()
            })
            .max()
            .unwrap_or(0)
    };
    PtxasReport {
        registers: num(" registers"),
        spill_bytes: num(" bytes spill stores"),
        stack_bytes: num(" bytes stack frame"),
        log,
    }
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Compiles a kernel for every target in [`TARGETS`], checks each with ptxas, and returns the
/// sm_90 PTX and report.
pub fn compile_all<P: KernelParams>(k: &Kernel<P>) -> (String, PtxasReport) {
    compile_all_args(k, &[])
}

/// [`compile_all`] with more ptxas arguments.
pub fn compile_all_args<P: KernelParams>(k: &Kernel<P>, args: &[&str]) -> (String, PtxasReport) {
    let mut last = None;
    for cc in TARGETS {
        let opts = PtxOptions {
            cc,
            ..k.options().clone()
        };
        let ptx = k
            .compile_ptx(&opts)
            .unwrap_or_else(|e| panic!("compiling {} for sm_{}{}: {e}", k.name(), cc.0, cc.1));
        let report = check_ptx_args(&ptx, cc, k.name(), args);
        last = Some((ptx, report));
    }
    last.unwrap()
}

/// The instructions of `ptx` that address shared or local memory whose address operand (the
/// first `[..]`: the shared destination of a `cp.async`, whose global source comes second) is
/// not a 32-bit register (`%r<n>`, with or without an offset) or a symbol: e.g. `[%rd12]`.
/// cudajit's shared and local pointers are 32-bit (`-nvptx-short-ptr`).
pub fn wide_shared_or_local_addresses(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| {
            // The opcode, after a guard (`@%p1 `); declarations (`.shared ..`) are not.
            let mut words = l.split_whitespace();
            let op = match words.next() {
                Some(g) if g.starts_with('@') => words.next().unwrap_or(""),
                w => w.unwrap_or(""),
            };
            let shared_or_local = op.split('.').any(|s| s == "shared" || s == "local");
            shared_or_local && !op.starts_with('.') && !op.starts_with("cvta")
        })
        .filter(|l| {
            let Some(at) = l.find('[') else { return false };
            let addr = &l[at + 1..];
            let reg32 = addr
                .strip_prefix("%r")
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
            let symbol = addr.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            !(reg32 || symbol)
        })
        .collect()
}
