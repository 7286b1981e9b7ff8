//! Where libdevice is: the search of docs/MATH.md ("Finding libdevice"), as a decision over an
//! injected machine ([`Lookup`]) so that tests need no process environment.
//!
//! Every candidate is absolute: a relative `CUDA_HOME`/`CUDA_PATH`/`CUDA_ROOT`, `PATH` entry or
//! line of Python's output is skipped (and logged with `CUDAJIT_LOG_LOAD=1`), and a relative
//! `CUDAJIT_LIBDEVICE` is refused with an error.

use cudajit_sys::load_log::LoadLog;
use cudajit_sys::lookup::Lookup;

use super::ENV_PATH;
pub(crate) use crate::codegen::file_search::Found;
use crate::codegen::file_search::{self, Wanted};

/// libdevice under a CUDA toolkit's root.
const IN_CUDA: &str = "nvvm/libdevice/libdevice.10.bc";
/// libdevice under a site-packages directory (the `nvidia-cuda-nvcc-cu12` wheel).
const IN_WHEEL: &str = "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc";
/// libdevice under the `nvidia` namespace package's directory.
const IN_NVIDIA: &str = "cuda_nvcc/nvvm/libdevice/libdevice.10.bc";

/// Where libdevice may be.
const WANTED: Wanted = Wanted {
    env: ENV_PATH,
    file: "libdevice.10.bc",
    in_cuda: &[IN_CUDA],
    usual: &[],
    in_wheel: &[IN_WHEEL],
    in_nvidia: &[IN_NVIDIA],
};

/// The search: `CUDAJIT_LIBDEVICE`, the toolkit directories, the wheel in site-packages, then
/// `python3` (only when nothing else exists). An error when `CUDAJIT_LIBDEVICE` is relative.
pub(crate) fn find(lookup: &Lookup<'_>, log: &mut LoadLog) -> Result<Found, String> {
    file_search::find(&WANTED, lookup, log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

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
