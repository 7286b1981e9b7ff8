//! Finding a program on `PATH` the careful way: only absolute directories (an empty or relative
//! entry would mean the current directory), only files that can be executed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::load_log::LoadLog;
use crate::paths::absolute_entries;

/// The first `name` in an absolute directory of `path` (the value of `PATH`), as an absolute
/// path; relative entries are skipped and logged. `None` when `path` is unset or has none.
pub fn find_program(name: &str, path: Option<&OsString>, log: &mut LoadLog) -> Option<PathBuf> {
    let path = path?;
    absolute_entries(path, "PATH", log)
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file() || p.with_extension("exe").is_file()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn relative_entries_are_never_searched() {
        // A `sh` in a relative directory that exists (`/bin` seen from `/`) is not found
        // through it: only absolute entries are looked at.
        let mut log = LoadLog::new("t", false);
        let path = OsString::from("bin:usr/bin:.:");
        assert_eq!(find_program("sh", Some(&path), &mut log), None);
        assert_eq!(log.lines().len(), 4, "{:?}", log.lines());
        let mut log = LoadLog::new("t", false);
        let path = OsString::from("bin:/nonexistent:/bin:/usr/bin");
        let sh = find_program("sh", Some(&path), &mut log).expect("sh in /bin or /usr/bin");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(
            log.lines(),
            ["cudajit: load: t: skipped bin (from PATH): relative path"]
        );
        assert_eq!(find_program("sh", None, &mut log), None);
    }

    #[test]
    fn files_that_are_not_executable_are_passed_over() {
        let mut log = LoadLog::new("t", false);
        let path = OsString::from("/etc");
        assert_eq!(find_program("passwd", Some(&path), &mut log), None);
    }
}
