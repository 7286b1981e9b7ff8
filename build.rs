//! Checks the build prerequisites before anything is compiled, so a missing one is one clear
//! message rather than a linker or build-script failure deep in a dependency.
//!
//! cudajit compiles kernels with LLVM 19 (linked statically); it looks for it where
//! `LLVM_SYS_191_PREFIX` points, else for `llvm-config-19` / `llvm-config`. The check is skipped
//! where LLVM is not linked: on docs.rs (`DOCS_RS` set) and with the `no-llvm-linking` feature.

use std::path::{Path, PathBuf};
use std::process::Command;

fn llvm_config_candidates() -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(prefix) = std::env::var_os("LLVM_SYS_191_PREFIX").filter(|p| !p.is_empty()) {
        c.push(Path::new(&prefix).join("bin").join("llvm-config"));
    }
    c.push(PathBuf::from("/usr/lib/llvm-19/bin/llvm-config"));
    c.push(PathBuf::from("llvm-config-19"));
    c.push(PathBuf::from("llvm-config"));
    c
}

fn llvm_version(cfg: &Path) -> Option<String> {
    let out = Command::new(cfg).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A 128-bit FNV-1a hash over every file under `src/ir` and `src/codegen` (the kernel IR and
/// its lowering; sorted relative paths and their bytes): part of the compile cache's key, so
/// changed code generation never reuses old PTX.
fn codegen_fingerprint(root: &Path) -> String {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["ir", "codegen"] {
        walk(&root.join("src").join(dir), &mut files);
    }
    files.sort();
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let prime: u128 = 0x0000000001000000000000000000013B;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= b as u128;
            h = h.wrapping_mul(prime);
        }
    };
    for f in &files {
        eat(f
            .strip_prefix(root)
            .unwrap_or(f)
            .to_string_lossy()
            .as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    format!("{h:032x}")
}

fn main() {
    println!("cargo:rerun-if-changed=src/codegen");
    println!("cargo:rerun-if-changed=src/ir");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!(
        "cargo:rustc-env=CUDAJIT_CODEGEN_FINGERPRINT={}",
        codegen_fingerprint(&root)
    );
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    println!("cargo:rerun-if-env-changed=CUDAJIT_SKIP_LLVM_CHECK");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    // No LLVM is needed (nor looked for) when LLVM is not linked: docs.rs (which sets DOCS_RS and
    // builds with the `no-llvm-linking` feature, see Cargo.toml) or a build asking for that feature.
    let docs_rs = std::env::var_os("DOCS_RS").is_some();
    let no_llvm_linking = std::env::var_os("CARGO_FEATURE_NO_LLVM_LINKING").is_some();
    if docs_rs
        || no_llvm_linking
        || std::env::var_os("CUDAJIT_SKIP_LLVM_CHECK").is_some_and(|v| v == "1")
    {
        return;
    }
    let found = llvm_config_candidates()
        .into_iter()
        .filter_map(|c| llvm_version(&c).map(|v| (c, v)))
        .find(|(_, v)| v.starts_with("19."));
    match found {
        Some((cfg, version)) => {
            println!("cargo:rustc-env=CUDAJIT_LLVM_VERSION={version}");
            println!("cargo:rerun-if-changed={}", cfg.display());
        }
        None => {
            eprintln!(
                "\nerror: cudajit needs LLVM 19 to build (its kernel compiler links LLVM statically), and none was found.\n\
                 Install it, e.g. on Debian/Ubuntu:\n\
                 \n    sudo apt-get install llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libffi-dev\n\
                 \n(on older releases add apt.llvm.org first), or point LLVM_SYS_191_PREFIX at an LLVM 19 install\n\
                 (the directory holding bin/llvm-config). `bash scripts/setup.sh` installs everything.\n"
            );
            std::process::exit(1);
        }
    }
}
