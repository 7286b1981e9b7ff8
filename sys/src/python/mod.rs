//! Where Python keeps its packages on this machine, for the libraries NVIDIA ships as wheels
//! (`nvidia-cuda-nvcc-cu12`'s libdevice, `nvidia-nccl-cu12`'s libnccl, ...).
//!
//! Every directory here is absolute: relative values of `VIRTUAL_ENV`, `HOME` and `PATH`
//! entries are skipped (and logged, [`LoadLog`]), as are relative or missing paths that
//! `python3` prints. Nothing here runs anything except [`nvidia_namespace_dirs`], which asks
//! `python3`, found only in an absolute directory of `PATH`, under a time limit
//! ([`PYTHON_TIMEOUT`]), unless `CUDAJIT_NO_PYTHON` is on.

mod run;
mod which;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::load_log::{is_on, LoadLog, Skip};
use crate::paths::{absolute_entries, absolute_var, usable};

pub use run::{run_bounded, RunError};
pub use which::find_program;

/// The environment variable that, set to anything but empty or `0`, stops every search from
/// running `python3`.
pub const NO_PYTHON_ENV: &str = "CUDAJIT_NO_PYTHON";

/// How long `python3` may run before it is killed and the search goes on without it.
pub const PYTHON_TIMEOUT: Duration = Duration::from_secs(10);

/// The script `python3` runs: drop relative entries of `sys.path` (the current directory of
/// `-c`, relative `PYTHONPATH` entries) so that no `nvidia` package there is imported, then
/// print where the `nvidia` namespace package lives.
const NVIDIA_SCRIPT: &str = "import os, sys\n\
sys.path[:] = [p for p in sys.path if os.path.isabs(p)]\n\
import nvidia\n\
for p in nvidia.__path__: print(p)";

/// The `site-packages` (and `dist-packages`) directories that exist on this machine, most
/// specific first: the active virtual environment (`VIRTUAL_ENV`), those of the `python3`
/// executables on `PATH`, the user's (`~/.local`, pyenv versions), virtual environments under
/// `/opt/*/` (`.venv`, `venv`), then the system's (`/usr/lib`, `/usr/local/lib`, `/usr/lib64`).
/// Reads the process's environment; relative values are skipped.
pub fn site_packages() -> Vec<PathBuf> {
    site_packages_from(
        &|k| std::env::var_os(k),
        &mut LoadLog::from_process("python"),
    )
}

/// [`site_packages`] for the environment that `get` reads, logging what it skips to `log`.
pub fn site_packages_from(
    get: &dyn Fn(&str) -> Option<OsString>,
    log: &mut LoadLog,
) -> Vec<PathBuf> {
    let mut site: Vec<PathBuf> = Vec::new();
    if let Some(v) = absolute_var(get, "VIRTUAL_ENV", log) {
        site.extend(python_dirs(&v.join("lib"), &["site-packages"]));
    }
    if let Some(path) = get("PATH") {
        for bin in absolute_entries(&path, "PATH", log) {
            let has_python = bin.join("python3").is_file() || bin.join("python").is_file();
            if let (true, Some(prefix)) = (has_python, bin.parent()) {
                site.extend(python_dirs(
                    &prefix.join("lib"),
                    &["site-packages", "dist-packages"],
                ));
            }
        }
    }
    if let Some(h) = absolute_var(get, "HOME", log) {
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
        d.is_absolute()
            && d.is_dir()
            && seen.insert(std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
    });
    site
}

/// Asks `python3` where the `nvidia` namespace package lives: the directories that hold
/// `nvidia/<wheel>/` trees. Empty when `CUDAJIT_NO_PYTHON` is on, when there is no `python3` in
/// an absolute directory of `PATH`, when it runs past [`PYTHON_TIMEOUT`] or fails, or when it
/// has no such package; each of these is logged to `log`. Runs a process: callers use it as a
/// last resort. Reads the process's environment.
pub fn nvidia_namespace_dirs(log: &mut LoadLog) -> Vec<PathBuf> {
    nvidia_namespace_dirs_from(&|k| std::env::var_os(k), PYTHON_TIMEOUT, log)
}

/// [`nvidia_namespace_dirs`] for the environment that `get` reads, with time limit `timeout`.
pub fn nvidia_namespace_dirs_from(
    get: &dyn Fn(&str) -> Option<OsString>,
    timeout: Duration,
    log: &mut LoadLog,
) -> Vec<PathBuf> {
    let python = Path::new("python3");
    if is_on(get(NO_PYTHON_ENV).as_ref()) {
        log.skipped(python, None, &Skip::PythonDisabled);
        return Vec::new();
    }
    let Some(program) = find_program("python3", get("PATH").as_ref(), log) else {
        log.skipped(python, None, &Skip::PythonNotFound);
        return Vec::new();
    };
    let out = match run_bounded(
        &program,
        &[OsStr::new("-c"), OsStr::new(NVIDIA_SCRIPT)],
        timeout,
    ) {
        Ok(out) => out,
        Err(RunError::TimedOut(_)) => {
            log.skipped(&program, None, &Skip::PythonTimedOut);
            return Vec::new();
        }
        Err(e) => {
            log.skipped(&program, None, &Skip::PythonFailed(e.to_string()));
            return Vec::new();
        }
    };
    printed_dirs(&String::from_utf8_lossy(&out), &|p| p.is_dir(), log)
}

/// The directories in `python3`'s output, one a line: only absolute ones that exist (by
/// `exists`); the others are logged as skipped.
pub fn printed_dirs(out: &str, exists: &dyn Fn(&Path) -> bool, log: &mut LoadLog) -> Vec<PathBuf> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .filter(|p| usable(p, Some("python3"), exists, log))
        .collect()
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

#[cfg(test)]
mod tests;
