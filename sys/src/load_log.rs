//! `CUDAJIT_LOG_LOAD=1`: one line on stderr for each library a search chose and why, and for
//! each candidate it skipped and why. One helper for every search (the driver, NCCL, and
//! libdevice in the `cudajit` crate), so that the lines read alike:
//!
//! ```text
//! cudajit: load: NCCL: chose /usr/lib/x86_64-linux-gnu/libnccl.so.2 (rule: usual directory)
//! cudajit: load: NCCL: skipped lib64/libnccl.so.2 (from CUDA_HOME): relative path
//! cudajit: load: libdevice: skipped python3: disabled by CUDAJIT_NO_PYTHON
//! ```
//!
//! The lines are kept in the [`LoadLog`] too (whether or not they are printed), so that tests
//! can read what a search decided.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;

/// The environment variable that turns the log on (anything but empty or `0`).
pub const LOG_ENV: &str = "CUDAJIT_LOG_LOAD";

/// The prefix of every line.
pub const LOG_PREFIX: &str = "cudajit: load:";

/// Whether a variable's value turns a switch on: set, not empty, not `0`.
pub fn is_on(value: Option<&OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "0")
}

/// Which rule of a search chose a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// An explicit override variable (`CUDAJIT_DRIVER`, `CUDAJIT_NCCL`, `CUDAJIT_LIBDEVICE`).
    Override(&'static str),
    /// A CUDA toolkit directory named by an environment variable (`CUDA_HOME`, ...).
    ToolkitDir(&'static str),
    /// One of the directories built into the search.
    UsualDir,
    /// An NVIDIA wheel under a site-packages directory found on disk.
    Wheel,
    /// An NVIDIA wheel in the `nvidia` package that `python3` reported.
    WheelViaPython,
    /// A bare library name handed to the system loader (`dlopen`'s own search).
    SystemLoader,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Override(var) => write!(f, "override variable {var}"),
            Rule::ToolkitDir(var) => write!(f, "toolkit directory from {var}"),
            Rule::UsualDir => f.write_str("usual directory"),
            Rule::Wheel => f.write_str("wheel in site-packages"),
            Rule::WheelViaPython => f.write_str("wheel via python3"),
            Rule::SystemLoader => f.write_str("system loader"),
        }
    }
}

/// Why a search passed over a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Not an absolute path (it would depend on the current directory).
    Relative,
    /// No such file or directory.
    Missing,
    /// It exists but could not be loaded (the loader's message).
    Unloadable(String),
    /// Running `python3` was turned off (`CUDAJIT_NO_PYTHON`).
    PythonDisabled,
    /// No `python3` in an absolute directory of `PATH`.
    PythonNotFound,
    /// `python3` ran past its time limit and was killed.
    PythonTimedOut,
    /// `python3` could not be run or failed.
    PythonFailed(String),
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Relative => f.write_str("relative path"),
            Skip::Missing => f.write_str("missing"),
            Skip::Unloadable(m) => write!(f, "cannot load: {m}"),
            Skip::PythonDisabled => write!(f, "disabled by {}", crate::python::NO_PYTHON_ENV),
            Skip::PythonNotFound => f.write_str("not found in an absolute directory of PATH"),
            Skip::PythonTimedOut => f.write_str("timed out"),
            Skip::PythonFailed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// The log of one search (one library): its lines, printed as they come when enabled.
#[derive(Debug, Clone)]
pub struct LoadLog {
    library: &'static str,
    print: bool,
    lines: Vec<String>,
}

impl LoadLog {
    /// A log for `library` (`"libcuda"`, `"NCCL"`, `"libdevice"`) that prints when `print`.
    pub fn new(library: &'static str, print: bool) -> Self {
        Self {
            library,
            print,
            lines: Vec::new(),
        }
    }

    /// A log for `library` that prints when `CUDAJIT_LOG_LOAD` is on in the environment that
    /// `get` reads.
    pub fn from_env(library: &'static str, get: impl Fn(&str) -> Option<OsString>) -> Self {
        Self::new(library, is_on(get(LOG_ENV).as_ref()))
    }

    /// A log for `library` that prints when the process's `CUDAJIT_LOG_LOAD` is on.
    pub fn from_process(library: &'static str) -> Self {
        Self::from_env(library, |k| std::env::var_os(k))
    }

    /// The lines so far, each with its prefix.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Records that `what` (a path or a library name) was chosen by `rule`.
    pub fn chose(&mut self, what: &Path, rule: Rule) {
        self.line(format!("chose {} (rule: {rule})", what.display()));
    }

    /// Records that `what` was skipped for `why`; `from` says where it came from (a variable,
    /// `python3`), if anywhere in particular.
    pub fn skipped(&mut self, what: &Path, from: Option<&str>, why: &Skip) {
        let from = from.map(|f| format!(" (from {f})")).unwrap_or_default();
        self.line(format!("skipped {}{from}: {why}", what.display()));
    }

    fn line(&mut self, text: String) {
        let line = format!("{LOG_PREFIX} {}: {text}", self.library);
        if self.print {
            eprintln!("{line}");
        }
        self.lines.push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_library_the_rule_and_the_reason() {
        let mut log = LoadLog::new("NCCL", false);
        log.chose(Path::new("/x/libnccl.so.2"), Rule::Override("CUDAJIT_NCCL"));
        log.chose(Path::new("libnccl.so.2"), Rule::SystemLoader);
        log.skipped(Path::new("lib64"), Some("CUDA_HOME"), &Skip::Relative);
        log.skipped(Path::new("python3"), None, &Skip::PythonTimedOut);
        assert_eq!(
            log.lines(),
            [
                "cudajit: load: NCCL: chose /x/libnccl.so.2 (rule: override variable CUDAJIT_NCCL)",
                "cudajit: load: NCCL: chose libnccl.so.2 (rule: system loader)",
                "cudajit: load: NCCL: skipped lib64 (from CUDA_HOME): relative path",
                "cudajit: load: NCCL: skipped python3: timed out",
            ]
        );
    }

    #[test]
    fn the_switch_reads_the_injected_environment() {
        let on = |v: &'static str| move |k: &str| (k == LOG_ENV).then(|| OsString::from(v));
        assert!(LoadLog::from_env("x", on("1")).print);
        assert!(!LoadLog::from_env("x", on("0")).print);
        assert!(!LoadLog::from_env("x", on("")).print);
        assert!(!LoadLog::from_env("x", |_| None).print);
    }
}
