//! The rule every search follows: a candidate is an absolute path, never one that depends on
//! the current directory. Relative entries are skipped and logged ([`LoadLog`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::load_log::{LoadLog, Skip};

/// The value of `var` as an absolute path: `None` when it is unset or empty, and when it is
/// relative (then logged as skipped).
pub fn absolute_var(
    get: &dyn Fn(&str) -> Option<OsString>,
    var: &'static str,
    log: &mut LoadLog,
) -> Option<PathBuf> {
    let value = PathBuf::from(get(var).filter(|v| !v.is_empty())?);
    if value.is_absolute() {
        Some(value)
    } else {
        log.skipped(&value, Some(var), &Skip::Relative);
        None
    }
}

/// The absolute entries of a `PATH`-style list, in order; relative (and empty) entries are
/// logged as skipped (`var` names the list in the log).
pub fn absolute_entries(list: &OsString, var: &str, log: &mut LoadLog) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::env::split_paths(list) {
        if entry.is_absolute() {
            out.push(entry);
        } else {
            log.skipped(&entry, Some(var), &Skip::Relative);
        }
    }
    out
}

/// Whether `path` is a candidate: absolute (else logged as relative) and, by `exists`, there
/// (else logged as missing). `from` says where it came from, for the log.
pub fn usable(
    path: &Path,
    from: Option<&str>,
    exists: &dyn Fn(&Path) -> bool,
    log: &mut LoadLog,
) -> bool {
    if !path.is_absolute() {
        log.skipped(path, from, &Skip::Relative);
        false
    } else if !exists(path) {
        log.skipped(path, from, &Skip::Missing);
        false
    } else {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn relative_variables_are_skipped_and_logged() {
        let mut log = LoadLog::new("t", false);
        let get = env(&[("A", "/abs"), ("B", "rel/dir"), ("C", ""), ("D", ".")]);
        assert_eq!(
            absolute_var(&get, "A", &mut log),
            Some(PathBuf::from("/abs"))
        );
        assert_eq!(absolute_var(&get, "B", &mut log), None);
        assert_eq!(absolute_var(&get, "C", &mut log), None);
        assert_eq!(absolute_var(&get, "D", &mut log), None);
        assert_eq!(absolute_var(&get, "E", &mut log), None);
        assert_eq!(
            log.lines(),
            [
                "cudajit: load: t: skipped rel/dir (from B): relative path",
                "cudajit: load: t: skipped . (from D): relative path",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn relative_and_empty_list_entries_are_skipped() {
        let mut log = LoadLog::new("t", false);
        let list = OsString::from("/usr/bin::bin:./x:/opt/y");
        assert_eq!(
            absolute_entries(&list, "PATH", &mut log),
            [PathBuf::from("/usr/bin"), PathBuf::from("/opt/y")]
        );
        assert_eq!(log.lines().len(), 3, "{:?}", log.lines());
        assert!(log
            .lines()
            .iter()
            .all(|l| l.ends_with("(from PATH): relative path")));
    }

    #[test]
    fn usable_needs_absolute_and_existing() {
        let mut log = LoadLog::new("t", false);
        let exists = |p: &Path| p == Path::new("/there");
        assert!(usable(Path::new("/there"), None, &exists, &mut log));
        assert!(!usable(Path::new("/gone"), None, &exists, &mut log));
        // A relative path is refused before anything looks at the disk.
        let never = |_: &Path| -> bool { panic!("looked at the disk") };
        assert!(!usable(
            Path::new("there"),
            Some("python3"),
            &never,
            &mut log
        ));
        assert_eq!(
            log.lines(),
            [
                "cudajit: load: t: skipped /gone: missing",
                "cudajit: load: t: skipped there (from python3): relative path",
            ]
        );
    }
}
