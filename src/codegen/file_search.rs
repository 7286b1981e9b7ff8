//! The search for a file of NVIDIA's that cudajit reads at run time (libdevice, the device
//! runtime `libcudadevrt.a`), as a decision over an injected machine ([`Lookup`]) so that
//! tests need no process environment: an override variable, the CUDA toolkit's directories,
//! NVIDIA's wheels in site-packages, then `python3` (only when nothing else exists).
//!
//! Every candidate is absolute: a relative `CUDA_HOME`/`CUDA_PATH`/`CUDA_ROOT` or line of
//! Python's output is skipped (and logged with `CUDAJIT_LOG_LOAD=1`), and a relative override
//! is refused with an error.

use std::path::{Path, PathBuf};

use cudajit_sys::load_log::{LoadLog, Rule, Skip};
use cudajit_sys::lookup::Lookup;
use cudajit_sys::paths::{absolute_var, usable};

/// What the search decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The override variable's absolute path (not checked yet: reading it is the check).
    Override(PathBuf),
    /// The first candidate that exists.
    Searched(PathBuf),
    /// No candidate exists.
    Nothing,
}

/// Where one file may be.
pub(crate) struct Wanted {
    /// The override variable (e.g. `CUDAJIT_LIBDEVICE`).
    pub env: &'static str,
    /// The file's name, for the error about a relative override.
    pub file: &'static str,
    /// Its paths under a CUDA toolkit's root.
    pub in_cuda: &'static [&'static str],
    /// Further absolute paths, tried after the toolkits' usual roots.
    pub usual: &'static [&'static str],
    /// Its paths under a site-packages directory.
    pub in_wheel: &'static [&'static str],
    /// Its paths under the `nvidia` namespace package's directory (what `python3` reports).
    pub in_nvidia: &'static [&'static str],
}

/// The search (see the module's documentation). An error when the override is relative.
pub(crate) fn find(w: &Wanted, lookup: &Lookup<'_>, log: &mut LoadLog) -> Result<Found, String> {
    if let Some(p) = (lookup.var)(w.env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_absolute() {
            log.skipped(&p, Some(w.env), &Skip::Relative);
            return Err(format!(
                "{}={}: a relative path is refused (it would depend on the current \
                 directory); give the absolute path of {}",
                w.env,
                p.display(),
                w.file
            ));
        }
        log.chose(&p, Rule::Override(w.env));
        return Ok(Found::Override(p));
    }
    let mut candidates: Vec<(PathBuf, Rule)> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(h) = absolute_var(lookup.var, var, log) {
            candidates.extend(w.in_cuda.iter().map(|c| (h.join(c), Rule::ToolkitDir(var))));
        }
    }
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        candidates.extend(
            w.in_cuda
                .iter()
                .map(|c| (Path::new(root).join(c), Rule::UsualDir)),
        );
    }
    candidates.extend(w.usual.iter().map(|p| (PathBuf::from(p), Rule::UsualDir)));
    for site in (lookup.site_packages)(log) {
        candidates.extend(w.in_wheel.iter().map(|p| (site.join(p), Rule::Wheel)));
    }
    if let Some(found) = first_usable(&candidates, lookup, log) {
        return Ok(found);
    }
    let from_python: Vec<(PathBuf, Rule)> = (lookup.python_nvidia_dirs)(log)
        .into_iter()
        .flat_map(|d| {
            w.in_nvidia
                .iter()
                .map(move |n| (d.join(n), Rule::WheelViaPython))
        })
        .collect();
    Ok(first_usable(&from_python, lookup, log).unwrap_or(Found::Nothing))
}

/// The first candidate that is absolute and exists, logged as chosen; the ones before it are
/// logged as skipped.
fn first_usable(
    candidates: &[(PathBuf, Rule)],
    lookup: &Lookup<'_>,
    log: &mut LoadLog,
) -> Option<Found> {
    let (path, rule) = candidates
        .iter()
        .find(|(p, _)| usable(p, None, lookup.is_file, log))?;
    log.chose(path, *rule);
    Some(Found::Searched(path.clone()))
}
