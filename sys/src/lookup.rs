//! What a library search reads from the machine (the environment, the disk, Python), as one
//! value: the process's in normal use, an injected one in tests, so that the decisions can be
//! checked without touching the process environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::load_log::LoadLog;
use crate::python;

/// The machine as a search sees it.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    /// Reads an environment variable.
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    /// Whether a candidate file exists.
    pub is_file: &'a dyn Fn(&Path) -> bool,
    /// The site-packages directories ([`python::site_packages_from`]), logging what it skips.
    pub site_packages: &'a dyn Fn(&mut LoadLog) -> Vec<PathBuf>,
    /// The directories of the `nvidia` package by `python3` ([`python::nvidia_namespace_dirs`]),
    /// logging what it skips; asked only as a last resort.
    pub python_nvidia_dirs: &'a dyn Fn(&mut LoadLog) -> Vec<PathBuf>,
}

impl std::fmt::Debug for Lookup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lookup")
    }
}

fn process_var(k: &str) -> Option<OsString> {
    std::env::var_os(k)
}

fn process_is_file(p: &Path) -> bool {
    p.is_file()
}

fn process_site_packages(log: &mut LoadLog) -> Vec<PathBuf> {
    python::site_packages_from(&process_var, log)
}

fn process_python(log: &mut LoadLog) -> Vec<PathBuf> {
    python::nvidia_namespace_dirs(log)
}

impl Lookup<'static> {
    /// This process's environment, disk and Python.
    pub fn process() -> Self {
        Lookup {
            var: &process_var,
            is_file: &process_is_file,
            site_packages: &process_site_packages,
            python_nvidia_dirs: &process_python,
        }
    }
}
