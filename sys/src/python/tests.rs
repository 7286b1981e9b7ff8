//! The python side of the searches, with injected environments and fake `python3` scripts.

use super::*;
use std::time::Instant;

fn env(pairs: Vec<(&'static str, OsString)>) -> impl Fn(&str) -> Option<OsString> {
    move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
}

#[test]
fn no_python_skips_python_before_looking_for_it() {
    let get = |k: &str| -> Option<OsString> {
        assert_ne!(k, "PATH", "PATH was read although python is off");
        (k == NO_PYTHON_ENV).then(|| OsString::from("1"))
    };
    let mut log = LoadLog::new("t", false);
    assert!(nvidia_namespace_dirs_from(&get, PYTHON_TIMEOUT, &mut log).is_empty());
    assert_eq!(
        log.lines(),
        ["cudajit: load: t: skipped python3: disabled by CUDAJIT_NO_PYTHON"]
    );
}

#[test]
fn python_is_looked_for_only_in_absolute_directories() {
    let get = env(vec![(NO_PYTHON_ENV, "0".into()), ("PATH", ".:bin:".into())]);
    let mut log = LoadLog::new("t", false);
    assert!(nvidia_namespace_dirs_from(&get, PYTHON_TIMEOUT, &mut log).is_empty());
    let lines = log.lines();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[..3]
        .iter()
        .all(|l| l.ends_with("(from PATH): relative path")));
    assert_eq!(
        lines[3],
        "cudajit: load: t: skipped python3: not found in an absolute directory of PATH"
    );
}

#[test]
fn printed_paths_must_be_absolute_and_exist() {
    let mut log = LoadLog::new("t", false);
    let exists = |p: &Path| p == Path::new("/site/nvidia");
    let out = "nvidia\n\n/site/nvidia\n/gone/nvidia\n  ./x  \n";
    assert_eq!(
        printed_dirs(out, &exists, &mut log),
        [PathBuf::from("/site/nvidia")]
    );
    assert_eq!(
        log.lines(),
        [
            "cudajit: load: t: skipped nvidia (from python3): relative path",
            "cudajit: load: t: skipped /gone/nvidia (from python3): missing",
            "cudajit: load: t: skipped ./x (from python3): relative path",
        ]
    );
}

#[test]
fn relative_environment_values_do_not_reach_site_packages() {
    let get = env(vec![
        ("VIRTUAL_ENV", "venv".into()),
        ("HOME", "home".into()),
        ("PATH", "bin".into()),
    ]);
    let mut log = LoadLog::new("t", false);
    let site = site_packages_from(&get, &mut log);
    assert!(site.iter().all(|d| d.is_absolute()), "{site:?}");
    assert_eq!(
        log.lines(),
        [
            "cudajit: load: t: skipped venv (from VIRTUAL_ENV): relative path",
            "cudajit: load: t: skipped bin (from PATH): relative path",
            "cudajit: load: t: skipped home (from HOME): relative path",
        ]
    );
}

/// A directory holding an executable `python3` shell script with `body`.
#[cfg(unix)]
fn fake_python(tag: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir =
        std::env::temp_dir().join(format!("cudajit-fake-python-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("python3");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[cfg(unix)]
#[test]
fn a_slow_python_is_killed_and_logged() {
    let dir = fake_python("slow", "exec sleep 30");
    let get = env(vec![("PATH", dir.clone().into_os_string())]);
    let mut log = LoadLog::new("t", false);
    let start = Instant::now();
    assert!(nvidia_namespace_dirs_from(&get, Duration::from_secs(1), &mut log).is_empty());
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(
        log.lines(),
        [format!(
            "cudajit: load: t: skipped {}: timed out",
            dir.join("python3").display()
        )]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn only_absolute_existing_directories_that_python_prints_are_kept() {
    let real = std::env::temp_dir();
    let dir = fake_python(
        "prints",
        &format!(
            "echo nvidia\necho /nonexistent/nvidia\necho {}",
            real.display()
        ),
    );
    let get = env(vec![("PATH", dir.clone().into_os_string())]);
    let mut log = LoadLog::new("t", false);
    let dirs = nvidia_namespace_dirs_from(&get, PYTHON_TIMEOUT, &mut log);
    assert_eq!(dirs, [real]);
    assert_eq!(log.lines().len(), 2, "{:?}", log.lines());
    let _ = std::fs::remove_dir_all(dir);
}
