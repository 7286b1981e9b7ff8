//! Where libdevice is: the search of docs/MATH.md ("Finding libdevice"), as a decision over an
//! injected machine ([`Lookup`]) so that tests need no process environment.
//!
//! Every candidate is absolute: a relative `CUDA_HOME`/`CUDA_PATH`/`CUDA_ROOT`, `PATH` entry or
//! line of Python's output is skipped (and logged with `CUDAJIT_LOG_LOAD=1`), and a relative
//! `CUDAJIT_LIBDEVICE` is refused with an error.

use std::path::{Path, PathBuf};

use cudajit_sys::load_log::{LoadLog, Rule, Skip};
use cudajit_sys::lookup::Lookup;
use cudajit_sys::paths::{absolute_var, usable};

use super::ENV_PATH;

/// libdevice under a CUDA toolkit's root.
const IN_CUDA: &str = "nvvm/libdevice/libdevice.10.bc";
/// libdevice under a site-packages directory (the `nvidia-cuda-nvcc-cu12` wheel).
const IN_WHEEL: &str = "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc";
/// libdevice under the `nvidia` namespace package's directory.
const IN_NVIDIA: &str = "cuda_nvcc/nvvm/libdevice/libdevice.10.bc";

/// What the search decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// `CUDAJIT_LIBDEVICE`'s absolute path (not checked yet: reading it is the check).
    Override(PathBuf),
    /// The first candidate that exists.
    Searched(PathBuf),
    /// No candidate exists.
    Nothing,
}

/// The search: `CUDAJIT_LIBDEVICE`, the toolkit directories, the wheel in site-packages, then
/// `python3` (only when nothing else exists). An error when `CUDAJIT_LIBDEVICE` is relative.
pub(crate) fn find(lookup: &Lookup<'_>, log: &mut LoadLog) -> Result<Found, String> {
    if let Some(p) = (lookup.var)(ENV_PATH).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_absolute() {
            log.skipped(&p, Some(ENV_PATH), &Skip::Relative);
            return Err(format!(
                "{ENV_PATH}={}: a relative path is refused (it would depend on the current \
                 directory); give the absolute path of libdevice.10.bc",
                p.display()
            ));
        }
        log.chose(&p, Rule::Override(ENV_PATH));
        return Ok(Found::Override(p));
    }
    let mut candidates: Vec<(PathBuf, Rule)> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(h) = absolute_var(lookup.var, var, log) {
            candidates.push((h.join(IN_CUDA), Rule::ToolkitDir(var)));
        }
    }
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        candidates.push((Path::new(root).join(IN_CUDA), Rule::UsualDir));
    }
    for site in (lookup.site_packages)(log) {
        candidates.push((site.join(IN_WHEEL), Rule::Wheel));
    }
    if let Some(found) = first_usable(&candidates, lookup, log) {
        return Ok(found);
    }
    let from_python: Vec<(PathBuf, Rule)> = (lookup.python_nvidia_dirs)(log)
        .into_iter()
        .map(|d| (d.join(IN_NVIDIA), Rule::WheelViaPython))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::ffi::OsString;

    fn var(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn none(_: &mut LoadLog) -> Vec<PathBuf> {
        Vec::new()
    }

    #[test]
    fn a_relative_override_is_an_error_naming_the_fix() {
        let get = var(&[(ENV_PATH, "libdevice.10.bc")]);
        let never = |_: &Path| -> bool { panic!("searched") };
        let lookup = Lookup {
            var: &get,
            is_file: &never,
            site_packages: &none,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libdevice", false);
        let err = find(&lookup, &mut log).unwrap_err();
        assert!(err.contains("CUDAJIT_LIBDEVICE=libdevice.10.bc"), "{err}");
        assert!(err.contains("absolute path"), "{err}");
        assert_eq!(
            log.lines(),
            ["cudajit: load: libdevice: skipped libdevice.10.bc (from CUDAJIT_LIBDEVICE): relative path"]
        );
    }

    #[test]
    fn an_absolute_override_is_taken_as_is() {
        let get = var(&[(ENV_PATH, "/x/libdevice.10.bc"), ("CUDA_HOME", "/cuda")]);
        let never = |_: &Path| -> bool { panic!("searched") };
        let lookup = Lookup {
            var: &get,
            is_file: &never,
            site_packages: &none,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libdevice", false);
        assert_eq!(
            find(&lookup, &mut log),
            Ok(Found::Override(PathBuf::from("/x/libdevice.10.bc")))
        );
        assert_eq!(
            log.lines(),
            ["cudajit: load: libdevice: chose /x/libdevice.10.bc (rule: override variable CUDAJIT_LIBDEVICE)"]
        );
    }

    #[test]
    fn relative_toolkit_roots_are_skipped_never_the_current_directory() {
        // Everything "exists": only the absolute candidates may be chosen.
        let get = var(&[
            ("CUDA_HOME", "."),
            ("CUDA_PATH", "cuda"),
            ("CUDA_ROOT", "/r"),
        ]);
        let all = |_: &Path| true;
        let lookup = Lookup {
            var: &get,
            is_file: &all,
            site_packages: &none,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libdevice", false);
        assert_eq!(
            find(&lookup, &mut log),
            Ok(Found::Searched(PathBuf::from("/r").join(IN_CUDA)))
        );
        assert_eq!(
            log.lines(),
            [
                "cudajit: load: libdevice: skipped . (from CUDA_HOME): relative path".to_string(),
                "cudajit: load: libdevice: skipped cuda (from CUDA_PATH): relative path".to_string(),
                format!(
                    "cudajit: load: libdevice: chose /r/{IN_CUDA} (rule: toolkit directory from CUDA_ROOT)"
                ),
            ]
        );
    }

    #[test]
    fn python_runs_only_when_nothing_else_exists() {
        let asked = Cell::new(0);
        let get = var(&[]);
        let python = |_: &mut LoadLog| {
            asked.set(asked.get() + 1);
            vec![PathBuf::from("/py/nvidia")]
        };
        // A wheel on disk: python is not asked.
        let wheel = PathBuf::from("/site").join(IN_WHEEL);
        let is_wheel = |p: &Path| p == wheel;
        let site = |_: &mut LoadLog| vec![PathBuf::from("/site")];
        let lookup = Lookup {
            var: &get,
            is_file: &is_wheel,
            site_packages: &site,
            python_nvidia_dirs: &python,
        };
        let mut log = LoadLog::new("libdevice", false);
        assert_eq!(find(&lookup, &mut log), Ok(Found::Searched(wheel.clone())));
        assert_eq!(asked.get(), 0);
        assert!(log
            .lines()
            .last()
            .unwrap()
            .ends_with("(rule: wheel in site-packages)"));
        // Nothing on disk: python is asked once, and its answer checked like the rest.
        let via_python = PathBuf::from("/py/nvidia").join(IN_NVIDIA);
        let is_py = |p: &Path| p == via_python;
        let lookup = Lookup {
            is_file: &is_py,
            ..lookup
        };
        let mut log = LoadLog::new("libdevice", false);
        assert_eq!(
            find(&lookup, &mut log),
            Ok(Found::Searched(via_python.clone()))
        );
        assert_eq!(asked.get(), 1);
        assert!(log
            .lines()
            .last()
            .unwrap()
            .ends_with("(rule: wheel via python3)"));
        // Nothing anywhere.
        let no = |_: &Path| false;
        let lookup = Lookup {
            is_file: &no,
            ..lookup
        };
        assert_eq!(
            find(&lookup, &mut LoadLog::new("libdevice", false)),
            Ok(Found::Nothing)
        );
    }
}
