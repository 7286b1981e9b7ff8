//! Where Python keeps its packages on this machine, for the libraries NVIDIA ships as wheels
//! (`nvidia-cuda-nvcc-cu12`'s libdevice, `nvidia-nccl-cu12`'s libnccl, ...).
//!
//! Nothing here loads or runs anything except [`nvidia_namespace_dirs`], which asks `python3`.

use std::path::{Path, PathBuf};

/// The `site-packages` (and `dist-packages`) directories that exist on this machine, most
/// specific first: the active virtual environment (`VIRTUAL_ENV`), those of the `python3`
/// executables on `PATH`, the user's (`~/.local`, pyenv versions), virtual environments under
/// `/opt/*/` (`.venv`, `venv`), then the system's (`/usr/lib`, `/usr/local/lib`, `/usr/lib64`).
pub fn site_packages() -> Vec<PathBuf> {
    let mut site: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        site.extend(python_dirs(&Path::new(&v).join("lib"), &["site-packages"]));
    }
    if let Some(path) = std::env::var_os("PATH") {
        for bin in std::env::split_paths(&path) {
            let has_python = bin.join("python3").is_file() || bin.join("python").is_file();
            if let (true, Some(prefix)) = (has_python, bin.parent()) {
                site.extend(python_dirs(
                    &prefix.join("lib"),
                    &["site-packages", "dist-packages"],
                ));
            }
        }
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let h = PathBuf::from(h);
        site.extend(python_dirs(&h.join(".local/lib"), &["site-packages"]));
        for v in sorted_dir(&h.join(".pyenv/versions")) {
            site.extend(python_dirs(&v.join("lib"), &["site-packages"]));
        }
    }
    for opt in sorted_dir(Path::new("/opt")) {
        for venv in [".venv", "venv"] {
            site.extend(python_dirs(&opt.join(venv).join("lib"), &["site-packages"]));
        }
    }
    for root in ["/usr/lib", "/usr/local/lib", "/usr/lib64"] {
        site.extend(python_dirs(
            Path::new(root),
            &["site-packages", "dist-packages"],
        ));
    }
    let mut seen = std::collections::HashSet::new();
    site.retain(|d| {
        d.is_dir() && seen.insert(std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
    });
    site
}

/// Asks `python3` (the one on `PATH`) where the `nvidia` namespace package lives: the
/// directories that hold `nvidia/<wheel>/` trees. Empty when there is no such Python or package.
/// Runs a process: callers use it as a last resort.
pub fn nvidia_namespace_dirs() -> Vec<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import nvidia\nfor p in nvidia.__path__: print(p)"])
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// The entries of `dir`, sorted.
fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `<lib>/python3*/<leaf>` for each leaf.
fn python_dirs(lib: &Path, leaves: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in sorted_dir(lib) {
        let is_py = d
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python3"));
        if is_py {
            out.extend(leaves.iter().map(|l| d.join(l)));
        }
    }
    out
}
