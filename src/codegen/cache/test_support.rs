//! What the cache's unit tests share: scratch directories, modes and injected environments.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh path under the system's temporary directory (removed if it existed, not made):
/// `cudajit-<tag>-<name>-<pid>-<n>`.
pub(super) fn scratch_dir(tag: &str, name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "cudajit-{tag}-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&d);
    d
}

/// [`scratch_dir`], made and private (mode 0700, whatever the umask).
pub(super) fn private_dir(tag: &str, name: &str) -> PathBuf {
    let d = scratch_dir(tag, name);
    fs::create_dir_all(&d).unwrap();
    set_mode(&d, 0o700);
    d
}

/// Sets `p`'s permission bits (Unix; elsewhere nothing).
pub(super) fn set_mode(p: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }
    let _ = (p, mode);
}

/// An environment of these variables only, as the `get` closures of the cache's lookups take.
pub(super) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let m: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |k| m.get(k).cloned()
}
