//! Whether the disk cache's directory, its files and its key can be trusted (issue 28: a cache
//! that cannot be planted). See `docs/CACHE.md`, "Trust".
//!
//! On Unix, unless `CUDAJIT_CACHE_TRUST=1` opts in:
//! - the directory (after following a symbolic link; a link itself must belong to this user or
//!   to root) must belong to the process's effective user and not be writable by group or
//!   others (`mode & 0o022 == 0`);
//! - every file read must belong to this user (checked on the opened file, not by a second
//!   lookup of its path);
//! - the key file ([`KEY_FILE`]: 32 random bytes, made by the first process that needs it with
//!   mode 0600) must belong to this user, be readable by nobody else (`mode & 0o077 == 0`) and
//!   hold exactly [`KEY_LEN`] bytes.
//!
//! With the opt-in, the checks are skipped (a shared, read-only cache that another user filled
//! and shipped with its key serves hits), but every entry must still carry a valid MAC under
//! the directory's key. On other targets there are no ownership checks.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The key file's name in the cache directory.
pub(crate) const KEY_FILE: &str = ".cudajit-key";
/// The key's length in bytes.
pub(crate) const KEY_LEN: usize = 32;
/// The environment variable that skips the ownership and mode checks.
pub(crate) const TRUST_VAR: &str = "CUDAJIT_CACHE_TRUST";

/// Whether an environment (`get` looks a variable up, as for `dir_from_env`) opts in to a cache
/// directory that fails the ownership checks: `CUDAJIT_CACHE_TRUST` is `1`, `on`, `true` or
/// `yes`.
pub(crate) fn opted_in(get: impl Fn(&str) -> Option<OsString>) -> bool {
    get(TRUST_VAR).is_some_and(|v| {
        matches!(
            v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref(),
            Some("1" | "on" | "true" | "yes")
        )
    })
}

/// What the checks require.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// The directory, the key and every file read belong to this user id (the process's
    /// effective one), and the directory and key are private as above.
    #[cfg_attr(not(unix), allow(dead_code))]
    Owner(u32),
    /// No ownership or mode checks: `CUDAJIT_CACHE_TRUST=1`, or a target without Unix
    /// ownership. Entries still need a valid MAC.
    Unchecked,
}

impl Policy {
    /// The policy of this process: [`Policy::Owner`] with the effective user id on Unix unless
    /// `opted_in`, else [`Policy::Unchecked`].
    pub(crate) fn for_process(opted_in: bool) -> Policy {
        #[cfg(unix)]
        if !opted_in {
            return Policy::Owner(effective_uid());
        }
        let _ = opted_in;
        Policy::Unchecked
    }
}

/// The process's effective user id.
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: `geteuid` takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why a cache directory, file or key is not trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The path is not a directory.
    NotADirectory,
    /// The directory belongs to another user.
    DirOwner { uid: u32, euid: u32 },
    /// The directory is writable by group or others.
    DirWritable { mode: u32 },
    /// The path is a symbolic link that belongs to another user (who could point it elsewhere).
    LinkOwner { uid: u32, euid: u32 },
    /// A file belongs to another user.
    FileOwner { uid: u32, euid: u32 },
    /// The key file belongs to another user.
    KeyOwner { uid: u32, euid: u32 },
    /// The key file can be read or written by group or others.
    KeyMode { mode: u32 },
    /// The key file is not a regular file.
    KeyNotAFile,
    /// The key file does not hold [`KEY_LEN`] bytes.
    KeyLength { len: u64 },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Problem::NotADirectory => write!(f, "it is not a directory"),
            Problem::DirOwner { uid, euid } => {
                write!(f, "it is owned by uid {uid}, not by you (uid {euid})")
            }
            Problem::DirWritable { mode } => write!(
                f,
                "its mode is {mode:#o}: writable by {} (run `chmod go-w` on it)",
                writable_by(mode)
            ),
            Problem::LinkOwner { uid, euid } => write!(
                f,
                "it is a symbolic link owned by uid {uid}, not by you (uid {euid}) or root"
            ),
            Problem::FileOwner { uid, euid } => {
                write!(f, "the file is owned by uid {uid}, not by you (uid {euid})")
            }
            Problem::KeyOwner { uid, euid } => write!(
                f,
                "its key file {KEY_FILE} is owned by uid {uid}, not by you (uid {euid})"
            ),
            Problem::KeyMode { mode } => write!(
                f,
                "its key file {KEY_FILE} has mode {mode:#o}: others may read or change it (it \
                 must be private: `chmod 600` it)"
            ),
            Problem::KeyNotAFile => write!(f, "its key file {KEY_FILE} is not a regular file"),
            Problem::KeyLength { len } => write!(
                f,
                "its key file {KEY_FILE} holds {len} bytes, not {KEY_LEN} (remove it: cudajit \
                 makes a new one, and the entries made with the old one are compiled again)"
            ),
        }
    }
}

/// Who a directory mode lets write: "group", "others" or "group and others".
fn writable_by(mode: u32) -> &'static str {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "group and others",
        (true, false) => "group",
        _ => "others",
    }
}

/// A cache directory that is not trusted, and why: its `Display` is the warning cudajit prints
/// (once per process) before ignoring the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Untrusted {
    /// The directory.
    pub(crate) dir: PathBuf,
    /// What is wrong.
    pub(crate) problem: Problem,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the compile cache directory {} is not trusted: {}. Nothing is read from or written \
             to it in this process (kernels are compiled). To use it, make it private to you \
             (`chmod go-w`, owned by you), or set CUDAJIT_CACHE_DIR to a private directory, or \
             set {TRUST_VAR}=1 if it is a shared cache you trust (e.g. a read-only, pre-filled \
             cache shipped with its key).",
            self.dir.display(),
            self.problem
        )
    }
}

/// Why a directory's key could not be had.
#[derive(Debug)]
pub(crate) enum KeyError {
    /// The key file exists and is not trusted.
    Untrusted(Problem),
    /// It could not be read or made (a read-only directory without a key, an I/O error).
    Io(io::Error),
}

/// The secret key of a cache directory, which authenticates its entries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct MacKey(pub(crate) [u8; KEY_LEN]);

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// What is wrong with a directory of owner `uid` and `mode` for `policy`, if anything.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn dir_problem_of(uid: u32, mode: u32, policy: Policy) -> Option<Problem> {
    let Policy::Owner(euid) = policy else {
        return None;
    };
    if uid != euid {
        Some(Problem::DirOwner { uid, euid })
    } else if mode & 0o022 != 0 {
        Some(Problem::DirWritable {
            mode: mode & 0o7777,
        })
    } else {
        None
    }
}

/// What is wrong with the key file of owner `uid` and `mode` for `policy`, if anything.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn key_problem_of(uid: u32, mode: u32, policy: Policy) -> Option<Problem> {
    let Policy::Owner(euid) = policy else {
        return None;
    };
    if uid != euid {
        Some(Problem::KeyOwner { uid, euid })
    } else if mode & 0o077 != 0 {
        Some(Problem::KeyMode {
            mode: mode & 0o7777,
        })
    } else {
        None
    }
}

/// Checks the cache directory `dir`: `Ok(None)` when it may be used, `Ok(Some(problem))` when
/// it may not, an error when it cannot be examined (`NotFound` when it does not exist).
pub(crate) fn check_dir(dir: &Path, policy: Policy) -> io::Result<Option<Problem>> {
    let link = fs::symlink_metadata(dir)?;
    let target = if link.file_type().is_symlink() {
        fs::metadata(dir)?
    } else {
        link.clone()
    };
    if !target.is_dir() {
        return Ok(Some(Problem::NotADirectory));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Policy::Owner(euid) = policy {
            if link.file_type().is_symlink() && link.uid() != euid && link.uid() != 0 {
                return Ok(Some(Problem::LinkOwner {
                    uid: link.uid(),
                    euid,
                }));
            }
        }
        Ok(dir_problem_of(target.uid(), target.mode(), policy))
    }
    #[cfg(not(unix))]
    {
        let _ = policy;
        Ok(None)
    }
}

/// Checks an opened file (its own metadata, `fstat`: no second lookup of its path) for
/// `policy`: it must belong to this user.
pub(crate) fn check_file(file: &fs::File, policy: Policy) -> io::Result<Option<Problem>> {
    #[cfg(unix)]
    if let Policy::Owner(euid) = policy {
        use std::os::unix::fs::MetadataExt;
        let uid = file.metadata()?.uid();
        if uid != euid {
            return Ok(Some(Problem::FileOwner { uid, euid }));
        }
    }
    let _ = (file, policy);
    Ok(None)
}

/// Reads the file at `path` if `policy` trusts it (see [`check_file`]); a file of another
/// user is an error of kind `PermissionDenied` that says so.
pub(crate) fn read_trusted(path: &Path, policy: Policy) -> io::Result<Vec<u8>> {
    let mut f = fs::File::open(path)?;
    if let Some(problem) = check_file(&f, policy)? {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: not read: {problem}", path.display()),
        ));
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The key of the cache directory `dir` (already checked with [`check_dir`]), made if it has
/// none. Several processes may make one at once: each writes its own under a temporary name and
/// links it into place, which only the first does; the others read the winner's.
pub(crate) fn key(dir: &Path, policy: Policy) -> Result<MacKey, KeyError> {
    match read_key(dir, policy) {
        Err(KeyError::Io(e)) if e.kind() == io::ErrorKind::NotFound => make_key(dir, policy),
        r => r,
    }
}

/// Reads and checks the key file of `dir`.
pub(crate) fn read_key(dir: &Path, policy: Policy) -> Result<MacKey, KeyError> {
    let path = dir.join(KEY_FILE);
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    if let Policy::Owner(_) = policy {
        // The key file itself, not where a link would lead.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let f = options.open(&path).map_err(KeyError::Io)?;
    let meta = f.metadata().map_err(KeyError::Io)?;
    if !meta.is_file() {
        return Err(KeyError::Untrusted(Problem::KeyNotAFile));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Some(p) = key_problem_of(meta.uid(), meta.mode(), policy) {
            return Err(KeyError::Untrusted(p));
        }
    }
    let mut bytes = Vec::with_capacity(KEY_LEN + 1);
    f.take(KEY_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(KeyError::Io)?;
    let key: [u8; KEY_LEN] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| KeyError::Untrusted(Problem::KeyLength { len: meta.len() }))?;
    Ok(MacKey(key))
}

/// Makes the key file of `dir` (mode 0600), or reads the one another process made first.
fn make_key(dir: &Path, policy: Policy) -> Result<MacKey, KeyError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let key = MacKey(random_key().map_err(KeyError::Io)?);
    let path = dir.join(KEY_FILE);
    let tmp = dir.join(format!(
        "{KEY_FILE}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    write_new(&tmp, &key.0).map_err(KeyError::Io)?;
    // A hard link never replaces an existing file: exactly one process's key gets in, whole.
    let linked = fs::hard_link(&tmp, &path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(dir, policy),
        // A file system without hard links: create the key file itself.
        Err(_) => match write_new(&path, &key.0) {
            Ok(()) => Ok(key),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_key(dir, policy),
            Err(e) => Err(KeyError::Io(e)),
        },
    }
}

/// Creates `path` (which must not exist) private to this user (0600 on Unix) holding `bytes`;
/// a failed write removes what it created.
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if written.is_err() {
        drop(f);
        let _ = fs::remove_file(path);
    }
    written
}

/// [`KEY_LEN`] bytes from the operating system's random number generator.
#[cfg(unix)]
fn random_key() -> io::Result<[u8; KEY_LEN]> {
    let mut key = [0u8; KEY_LEN];
    fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    Ok(key)
}

/// [`KEY_LEN`] bytes from the operating system's random number generator: std's `RandomState`
/// is seeded from it (on Windows, `ProcessPrng`); several, with the time, through SHA-256.
#[cfg(not(unix))]
fn random_key() -> io::Result<[u8; KEY_LEN]> {
    use std::hash::{BuildHasher, Hasher};
    let mut h = super::hash::Sha256::new();
    for i in 0..8u64 {
        let mut s = std::collections::hash_map::RandomState::new().build_hasher();
        s.write_u64(i);
        h.update(&s.finish().to_le_bytes());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(&now.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    Ok(h.finish())
}

/// Whether this process may give files away (root): the tests of other users' files need it;
/// when not, it prints a note (the test then returns early).
#[cfg(all(test, unix))]
pub(crate) fn can_chown() -> bool {
    if effective_uid() == 0 {
        return true;
    }
    eprintln!("note: not root, so files of another user cannot be made: test skipped");
    false
}

/// A user id not ours, for the tests that give files away: 65534, `nobody` on most systems.
#[cfg(all(test, unix))]
pub(crate) const NOBODY: u32 = 65534;

#[cfg(test)]
mod tests {
    use super::super::test_support::{env, private_dir, set_mode};
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        private_dir("trust-unit", name)
    }

    #[test]
    fn trust_opt_in_from_the_environment() {
        for on in ["1", "on", "TRUE", " yes "] {
            assert!(opted_in(env(&[(TRUST_VAR, on)])), "{on:?}");
        }
        for off in ["", "0", "off", "no", "maybe"] {
            assert!(!opted_in(env(&[(TRUST_VAR, off)])), "{off:?}");
        }
        assert!(!opted_in(env(&[])));
        assert_eq!(Policy::for_process(true), Policy::Unchecked);
    }

    #[test]
    fn directory_decision_by_owner_and_mode() {
        let me = Policy::Owner(1000);
        assert_eq!(dir_problem_of(1000, 0o40700, me), None);
        assert_eq!(dir_problem_of(1000, 0o40755, me), None);
        assert_eq!(
            dir_problem_of(1000, 0o41755, me),
            None,
            "sticky, not writable"
        );
        assert_eq!(
            dir_problem_of(1000, 0o40777, me),
            Some(Problem::DirWritable { mode: 0o777 })
        );
        assert_eq!(
            dir_problem_of(1000, 0o40775, me),
            Some(Problem::DirWritable { mode: 0o775 })
        );
        assert_eq!(
            dir_problem_of(0, 0o40700, me),
            Some(Problem::DirOwner { uid: 0, euid: 1000 })
        );
        assert_eq!(dir_problem_of(0, 0o40777, Policy::Unchecked), None);
        assert_eq!(key_problem_of(1000, 0o100600, me), None);
        assert_eq!(key_problem_of(1000, 0o100400, me), None);
        assert_eq!(
            key_problem_of(1000, 0o100644, me),
            Some(Problem::KeyMode { mode: 0o644 })
        );
        assert_eq!(
            key_problem_of(7, 0o100600, me),
            Some(Problem::KeyOwner { uid: 7, euid: 1000 })
        );
        assert_eq!(key_problem_of(7, 0o100644, Policy::Unchecked), None);
    }

    #[test]
    fn warning_names_the_directory_the_problem_and_the_remedies() {
        let w = Untrusted {
            dir: PathBuf::from("/shared/cache"),
            problem: Problem::DirWritable { mode: 0o777 },
        }
        .to_string();
        for part in [
            "/shared/cache",
            "0o777",
            "group and others",
            "chmod go-w",
            "CUDAJIT_CACHE_DIR",
            "CUDAJIT_CACHE_TRUST=1",
        ] {
            assert!(w.contains(part), "{part:?} missing from: {w}");
        }
        let w = Untrusted {
            dir: PathBuf::from("/c"),
            problem: Problem::DirOwner {
                uid: 65534,
                euid: 1000,
            },
        }
        .to_string();
        assert!(
            w.contains("owned by uid 65534, not by you (uid 1000)"),
            "{w}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn world_writable_directory_is_not_trusted() {
        let dir = temp_dir("writable");
        let me = Policy::for_process(false);
        assert_eq!(check_dir(&dir, me).unwrap(), None);
        set_mode(&dir, 0o777);
        assert_eq!(
            check_dir(&dir, me).unwrap(),
            Some(Problem::DirWritable { mode: 0o777 })
        );
        set_mode(&dir, 0o770);
        assert_eq!(
            check_dir(&dir, me).unwrap(),
            Some(Problem::DirWritable { mode: 0o770 })
        );
        assert_eq!(check_dir(&dir, Policy::Unchecked).unwrap(), None);
        let missing = check_dir(&dir.join("absent"), me).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let file = dir.join("file");
        fs::write(&file, b"").unwrap();
        assert_eq!(check_dir(&file, me).unwrap(), Some(Problem::NotADirectory));
        set_mode(&dir, 0o700);
        let _ = fs::remove_dir_all(dir);
    }

    #[cfg(unix)]
    #[test]
    fn directory_of_another_user_is_not_trusted() {
        if !can_chown() {
            return;
        }
        let dir = temp_dir("other-owner");
        let me = Policy::for_process(false);
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
        assert_eq!(
            check_dir(&dir, me).unwrap(),
            Some(Problem::DirOwner {
                uid: NOBODY,
                euid: effective_uid()
            })
        );
        assert_eq!(check_dir(&dir, Policy::Unchecked).unwrap(), None);
        // A link of ours to it is judged by where it leads.
        let link = temp_dir("link-holder").join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(
            check_dir(&link, me).unwrap(),
            Some(Problem::DirOwner { uid: NOBODY, .. })
        ));
        // A link of another user to a directory of ours could be pointed elsewhere.
        let mine = temp_dir("mine");
        let link2 = dir.join("link2");
        std::os::unix::fs::symlink(&mine, &link2).unwrap();
        std::os::unix::fs::lchown(&link2, Some(NOBODY), Some(NOBODY)).unwrap();
        assert!(matches!(
            check_dir(&link2, me).unwrap(),
            Some(Problem::LinkOwner { uid: NOBODY, .. })
        ));
        // A file of another user is refused on the opened handle.
        let file = mine.join("f");
        fs::write(&file, b"data").unwrap();
        assert_eq!(read_trusted(&file, me).unwrap(), b"data");
        std::os::unix::fs::chown(&file, Some(NOBODY), None).unwrap();
        let err = read_trusted(&file, me).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
        assert_eq!(read_trusted(&file, Policy::Unchecked).unwrap(), b"data");
        for d in [dir, link.parent().unwrap().to_path_buf(), mine] {
            let _ = fs::remove_dir_all(d);
        }
    }

    #[test]
    fn key_file_is_made_private_and_kept() {
        let dir = temp_dir("key");
        let me = Policy::for_process(false);
        let k = key(&dir, me).unwrap();
        assert_eq!(key(&dir, me).unwrap(), k, "the same key next time");
        assert_eq!(read_key(&dir, me).unwrap(), k);
        assert_ne!(k.0, [0; KEY_LEN]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(names.len(), 1, "no temporary left");
        // Another directory, another key.
        let other = temp_dir("key2");
        assert_ne!(key(&other, me).unwrap(), k);
        for d in [dir, other] {
            let _ = fs::remove_dir_all(d);
        }
    }

    #[test]
    fn concurrent_key_makers_agree() {
        let dir = temp_dir("key-race");
        let me = Policy::for_process(false);
        let keys: Vec<MacKey> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| key(&dir, me).unwrap())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| *k == keys[0]));
        let _ = fs::remove_dir_all(dir);
    }

    #[cfg(unix)]
    #[test]
    fn key_file_readable_by_others_is_not_trusted() {
        let dir = temp_dir("key-mode");
        let me = Policy::for_process(false);
        let k = key(&dir, me).unwrap();
        set_mode(&dir.join(KEY_FILE), 0o644);
        assert!(matches!(
            read_key(&dir, me),
            Err(KeyError::Untrusted(Problem::KeyMode { mode: 0o644 }))
        ));
        assert!(
            matches!(key(&dir, me), Err(KeyError::Untrusted(_))),
            "an untrusted key is not replaced"
        );
        assert_eq!(read_key(&dir, Policy::Unchecked).unwrap(), k, "opted in");
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn key_file_of_the_wrong_length_is_not_trusted() {
        let dir = temp_dir("key-len");
        let me = Policy::for_process(false);
        write_new(&dir.join(KEY_FILE), b"short").unwrap();
        assert!(matches!(
            key(&dir, me),
            Err(KeyError::Untrusted(Problem::KeyLength { len: 5 }))
        ));
        assert_eq!(
            fs::read(dir.join(KEY_FILE)).unwrap(),
            b"short",
            "never replaced"
        );
        let _ = fs::remove_dir_all(dir);
    }

    #[cfg(unix)]
    #[test]
    fn key_file_that_is_a_link_is_not_followed() {
        let dir = temp_dir("key-link");
        let elsewhere = temp_dir("key-target");
        let me = Policy::for_process(false);
        key(&elsewhere, me).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(KEY_FILE), dir.join(KEY_FILE)).unwrap();
        assert!(matches!(read_key(&dir, me), Err(KeyError::Io(_))));
        for d in [dir, elsewhere] {
            let _ = fs::remove_dir_all(d);
        }
    }
}
