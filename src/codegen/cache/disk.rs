//! The disk cache: one file per key and kind, `<hex key>.ptx` (the PTX) and
//! `<hex key>.<tag>.cubin` (what the driver's JIT made of that PTX; the tag names the driver),
//! each holding a header line and the body.
//!
//! ```text
//! cudajit-ptx-cache 2 <crate version> <hex key> <body length> <MAC, 64 hex digits>\n
//! <PTX, or the cubin's bytes>
//! ```
//!
//! The MAC is HMAC-SHA256, under the directory's secret key (`trust.rs`), of the header's first
//! five fields, the file's suffix (`ptx`, `<tag>.cubin`) and the body: only a process that can
//! read the key makes files this cache accepts, and a file cannot be moved to another key's or
//! another kind's name. Before anything is read, the directory (and then each file, and the
//! key) must pass the trust checks of `trust.rs`; a directory that fails them is neither read
//! nor written, with one warning.
//!
//! Files are written to a temporary name in the same directory and renamed into place, so a
//! reader sees a whole file or none. A file that fails any check is ignored (and replaced by
//! the next store).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use std::sync::OnceLock;

use super::hash::hex;
use super::mac::{same_bytes, HmacSha256};
use super::trust::{self, KeyError, MacKey, Policy, Problem, Untrusted};
use super::Key;

/// First word of every cache file.
pub(crate) const MAGIC: &str = "cudajit-ptx-cache";
/// Version of the file layout (2: an HMAC under the directory's key instead of an FNV-1a
/// checksum; files of version 1 are misses, replaced by the next store).
pub(crate) const FORMAT: u32 = 2;
/// The crate version written in (and required of) every header.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Most cache files kept: past this, the least recently used are removed (down to 3/4) by the
/// first store of a process.
pub(crate) const MAX_FILES: usize = 2048;
/// A hit refreshes a file's modification time (its last use, for the trim) only when it is
/// older than this.
const TOUCH_AFTER: Duration = Duration::from_secs(3600);
/// Longest header accepted.
const MAX_HEADER: usize = 512;
/// Temporary files older than this are removed by [`DiskCache::clear`] (younger ones may
/// belong to a process writing right now).
const STALE_TEMP: Duration = Duration::from_secs(3600);
/// Marks the directory as a cache for backup tools (<https://bford.info/cachedir/>).
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
    # This file is a cache directory tag created by cudajit (compiled PTX kernels).\n\
    # For information about cache directory tags see https://bford.info/cachedir/\n";

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup<T = String> {
    /// A valid file: its body (PTX text, or a binary's bytes).
    Hit(T),
    /// No file for the key.
    Missing,
    /// A file that failed a check (why).
    Rejected(String),
    /// The file could not be read.
    Failed(io::Error),
}

/// What a store did.
#[derive(Debug)]
pub(crate) enum Stored {
    /// Written to this path.
    Written(PathBuf),
    /// Not attempted: an earlier write failed, so the directory is taken as unwritable.
    Disabled,
    /// Failed; writes are off from now on. `first` is true for the failure that turned
    /// them off.
    Failed { error: io::Error, first: bool },
}

/// A cache directory.
#[derive(Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
    policy: Policy,
    writable: AtomicBool,
    trimmed: AtomicBool,
    /// What the trust checks decided, at the first access that found the directory.
    access: OnceLock<Access>,
}

/// What the trust checks decided about a cache directory (once per process).
#[derive(Debug)]
pub(crate) enum Access {
    /// Trusted: entries are made and checked with this key.
    Trusted(MacKey),
    /// Not trusted (one warning): nothing is read from or written to it.
    Untrusted(Untrusted),
    /// Trusted, but it has no key and none could be made (a read-only directory without one,
    /// an I/O error): nothing is read, nothing written.
    NoKey(String),
}

/// Makes temporary names unique between threads of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl DiskCache {
    /// A cache in `dir` (created on the first store) with this process's checks, not opted in.
    #[cfg(test)]
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self::with_policy(dir, Policy::for_process(false))
    }

    /// A cache in `dir` (created on the first store, mode 0700) under the trust checks of
    /// `policy`.
    pub(crate) fn with_policy(dir: PathBuf, policy: Policy) -> Self {
        DiskCache {
            dir,
            policy,
            writable: AtomicBool::new(true),
            trimmed: AtomicBool::new(false),
            access: OnceLock::new(),
        }
    }

    /// The trust checks this cache applies.
    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// The trust decision about the directory, made by the first call that finds it (making
    /// it first when `create`) and kept for the process; `Ok(None)` while it does not exist.
    /// The decision is reported once: a warning on stderr when the directory is not trusted,
    /// a log line (`CUDAJIT_LOG_CACHE=1`) when it has no usable key (a warning when the checks
    /// are skipped, `CUDAJIT_CACHE_TRUST=1`: the user opted in to a cache that cannot serve).
    pub(crate) fn access(&self, create: bool) -> io::Result<Option<&Access>> {
        if let Some(a) = self.access.get() {
            return Ok(Some(a));
        }
        if create {
            self.ensure_dir()?;
        }
        let decided = match trust::check_dir(&self.dir, self.policy) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(e),
            Ok(Some(problem)) => self.untrusted(problem),
            Ok(None) => match trust::key(&self.dir, self.policy) {
                Ok(key) => Access::Trusted(key),
                Err(KeyError::Untrusted(problem)) => self.untrusted(problem),
                Err(KeyError::Io(e)) => Access::NoKey(format!(
                    "no key for the disk cache in {} ({}: {e}); it is not used in this process",
                    self.dir.display(),
                    trust::KEY_FILE
                )),
            },
        };
        let mut first = false;
        let a = self.access.get_or_init(|| {
            first = true;
            decided
        });
        if first {
            match a {
                Access::Trusted(_) => {}
                Access::Untrusted(u) => super::warn(u),
                // Opted in to a shared cache, the user expects hits: say why there are none.
                Access::NoKey(why) if self.policy == Policy::Unchecked => eprintln!(
                    "cudajit: warning: {why} (a shared cache must be shipped with its key, \
                     readable by its users)"
                ),
                Access::NoKey(why) => {
                    if super::logging() {
                        eprintln!("cudajit cache: disk error: {why}");
                    }
                }
            }
        }
        Ok(Some(a))
    }

    fn untrusted(&self, problem: Problem) -> Access {
        Access::Untrusted(Untrusted {
            dir: self.dir.clone(),
            problem,
        })
    }

    /// The key entries are checked with, when the directory exists and is trusted.
    fn read_key(&self) -> io::Result<Option<MacKey>> {
        Ok(match self.access(false)? {
            Some(Access::Trusted(k)) => Some(*k),
            _ => None,
        })
    }

    /// Whether the directory passed the trust checks (made first, mode 0700, when `create`);
    /// false while it does not exist, or cannot be examined.
    pub(crate) fn is_trusted(&self, create: bool) -> bool {
        matches!(
            self.access(create),
            Ok(Some(Access::Trusted(_) | Access::NoKey(_)))
        )
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether stores are still attempted.
    pub(crate) fn is_writable(&self) -> bool {
        self.writable.load(Ordering::Relaxed)
    }

    /// The PTX file for `key`.
    pub(crate) fn path_for(&self, key: &Key) -> PathBuf {
        self.path_with(key, "ptx")
    }

    /// The file for `key` with this suffix (`ptx`, or `<tag>.cubin`).
    pub(crate) fn path_with(&self, key: &Key, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", key.hex()))
    }

    /// Reads and checks the PTX file for `key`. A hit marks the file as recently used (its
    /// modification time, where the directory allows).
    pub(crate) fn load(&self, key: &Key) -> Lookup {
        match self.load_bytes(key, "ptx") {
            Lookup::Hit(bytes) => match ptx_text(bytes) {
                Ok(ptx) => Lookup::Hit(ptx),
                Err(why) => Lookup::Rejected(why),
            },
            Lookup::Missing => Lookup::Missing,
            Lookup::Rejected(why) => Lookup::Rejected(why),
            Lookup::Failed(e) => Lookup::Failed(e),
        }
    }

    /// Reads and checks the file for `key` with this suffix; its body's bytes. Nothing is read
    /// from a directory that is not trusted (a miss), nor from a file of another user (a
    /// rejected file).
    pub(crate) fn load_bytes(&self, key: &Key, suffix: &str) -> Lookup<Vec<u8>> {
        let mac = match self.read_key() {
            Ok(Some(mac)) => mac,
            Ok(None) => return Lookup::Missing,
            Err(e) => return Lookup::Failed(e),
        };
        let path = self.path_with(key, suffix);
        let mut f = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Lookup::Missing,
            Err(e) => return Lookup::Failed(e),
        };
        match trust::check_file(&f, self.policy) {
            Ok(None) => {}
            Ok(Some(problem)) => return Lookup::Rejected(problem.to_string()),
            Err(e) => return Lookup::Failed(e),
        }
        let mut read = || -> io::Result<(Vec<u8>, Option<SystemTime>)> {
            let modified = f.metadata().and_then(|m| m.modified()).ok();
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut f, &mut bytes)?;
            Ok((bytes, modified))
        };
        match read() {
            Ok((bytes, modified)) => match decode_bytes(key, suffix, &mac, bytes) {
                Ok(body) => {
                    // Marked as recently used (for the trim), unless it was within the hour:
                    // one open and one metadata write saved on most hits.
                    let recent = modified
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age < TOUCH_AFTER);
                    if !recent {
                        if let Ok(f) = fs::OpenOptions::new().append(true).open(&path) {
                            let _ = f.set_modified(SystemTime::now());
                        }
                    }
                    Lookup::Hit(body)
                }
                Err(why) => Lookup::Rejected(why),
            },
            Err(e) => Lookup::Failed(e),
        }
    }

    /// Writes `ptx` for `key`, atomically replacing any file there. After a failure, writes
    /// are off for this cache (reads go on: a read-only cache directory still serves hits).
    pub(crate) fn store(&self, key: &Key, ptx: &str) -> Stored {
        self.store_bytes(key, "ptx", ptx.as_bytes())
    }

    /// As [`DiskCache::store`], for any body under any suffix. Nothing is written to a
    /// directory that is not trusted, or has no key (writes are then off).
    pub(crate) fn store_bytes(&self, key: &Key, suffix: &str, body: &[u8]) -> Stored {
        if !self.is_writable() {
            return Stored::Disabled;
        }
        let mac = match self.access(true) {
            Ok(Some(Access::Trusted(mac))) => *mac,
            Ok(Some(Access::Untrusted(_) | Access::NoKey(_))) => {
                self.writable.store(false, Ordering::Relaxed);
                return Stored::Disabled;
            }
            // Only without `create`: a directory made and gone again is an error here.
            Ok(None) => return Stored::Disabled,
            Err(error) => {
                let first = self.writable.swap(false, Ordering::Relaxed);
                return Stored::Failed { error, first };
            }
        };
        match self.write(key, suffix, body, &mac) {
            Ok(path) => {
                if !self.trimmed.swap(true, Ordering::Relaxed) {
                    let _ = self.trim(MAX_FILES, MAX_FILES / 4 * 3);
                }
                Stored::Written(path)
            }
            Err(error) => {
                let first = self.writable.swap(false, Ordering::Relaxed);
                Stored::Failed { error, first }
            }
        }
    }

    fn write(&self, key: &Key, suffix: &str, body: &[u8], mac: &MacKey) -> io::Result<PathBuf> {
        let path = self.path_with(key, suffix);
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.hex(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&encode_bytes(key, suffix, mac, body))?;
            drop(f);
            fs::rename(&tmp, &path)
        })();
        match written {
            Ok(()) => Ok(path),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                // Renaming over a file another process holds open fails on some systems; a
                // valid file in place is as good as ours.
                match self.load_bytes(key, suffix) {
                    Lookup::Hit(_) => Ok(path),
                    _ => Err(e),
                }
            }
        }
    }

    /// Creates the directory if needed (its parents as the umask says, itself private to this
    /// user: mode 0700 on Unix), tagging it as a cache when cudajit made it.
    fn ensure_dir(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = self.dir.parent() {
            fs::create_dir_all(parent)?;
        }
        #[cfg(unix)]
        let builder = {
            use std::os::unix::fs::DirBuilderExt;
            let mut b = fs::DirBuilder::new();
            b.mode(0o700);
            b
        };
        #[cfg(not(unix))]
        let builder = fs::DirBuilder::new();
        match builder.create(&self.dir) {
            Ok(()) => {
                let _ = fs::write(self.dir.join("CACHEDIR.TAG"), CACHEDIR_TAG);
                Ok(())
            }
            // Another process made it meanwhile.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.dir.is_dir() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes every cache file (and temporary files left by crashed writers); returns how
    /// many cache files were removed. A missing directory holds none; a directory that is not
    /// trusted is left alone (an error that says why: its files are not ours to delete).
    pub(crate) fn clear(&self) -> io::Result<usize> {
        if let Some(Access::Untrusted(u)) = self.access(false)? {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                u.to_string(),
            ));
        }
        let entries = match fs::read_dir(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            r => r?,
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if is_cache_file_name(name) {
                match fs::remove_file(entry.path()) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            } else if is_temp_name(name) {
                let stale = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > STALE_TEMP);
                if stale {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok(removed)
    }

    /// When more than `max` cache files exist, removes the least recently used down to `keep`;
    /// returns how many were removed.
    pub(crate) fn trim(&self, max: usize, keep: usize) -> io::Result<usize> {
        let mut files: Vec<(SystemTime, PathBuf)> = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if entry.file_name().to_str().is_some_and(is_cache_file_name) {
                let used = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                files.push((used, entry.path()));
            }
        }
        if files.len() <= max {
            return Ok(0);
        }
        files.sort();
        let excess = files.len() - keep.min(files.len());
        let mut removed = 0;
        for (_, path) in files.into_iter().take(excess) {
            if fs::remove_file(path).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Whether `name` is a cache file's name: 64 lower-case hex digits, then `.ptx` or
/// `.<tag>.cubin` (the tag letters and digits).
pub(crate) fn is_cache_file_name(name: &str) -> bool {
    let hex_key = |stem: &str| {
        stem.len() == 64
            && stem
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if let Some(stem) = name.strip_suffix(".ptx") {
        return hex_key(stem);
    }
    name.strip_suffix(".cubin")
        .and_then(|s| s.split_once('.'))
        .is_some_and(|(stem, tag)| {
            hex_key(stem) && !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// The MAC of a file: HMAC-SHA256 under `mac` of the header's fields before the MAC
/// (`fields`, without the MAC or newline), the file's suffix and its body.
fn tag(mac: &MacKey, fields: &str, suffix: &str, body: &[u8]) -> [u8; 32] {
    let mut m = HmacSha256::new(&mac.0);
    m.update(fields.as_bytes());
    m.update(b"\n");
    m.update(suffix.as_bytes());
    m.update(b"\n");
    m.update(body);
    m.finish()
}

/// The header line of a body stored under `key` with this suffix (with its newline).
fn header_for(key: &Key, suffix: &str, mac: &MacKey, body: &[u8]) -> String {
    let fields = format!("{MAGIC} {FORMAT} {VERSION} {} {}", key.hex(), body.len());
    let sum = hex(&tag(mac, &fields, suffix, body));
    format!("{fields} {sum}\n")
}

/// A cache file's bytes.
fn encode_bytes(key: &Key, suffix: &str, mac: &MacKey, body: &[u8]) -> Vec<u8> {
    let mut out = header_for(key, suffix, mac, body).into_bytes();
    out.extend_from_slice(body);
    out
}

/// A PTX body as text: UTF-8 without NUL bytes.
fn ptx_text(body: Vec<u8>) -> Result<String, String> {
    if body.contains(&0) {
        return Err("the PTX contains a NUL byte".into());
    }
    String::from_utf8(body).map_err(|_| "the PTX is not UTF-8".to_string())
}

/// Checks a cache file's bytes (of a file with this suffix) and returns its body, or why it is
/// rejected.
fn decode_bytes(
    key: &Key,
    suffix: &str,
    mac: &MacKey,
    mut bytes: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let nl = bytes
        .iter()
        .take(MAX_HEADER)
        .position(|&b| b == b'\n')
        .ok_or("no header line")?;
    let header = std::str::from_utf8(&bytes[..nl]).map_err(|_| "the header is not text")?;
    let fields: Vec<&str> = header.split(' ').collect();
    let [magic, format, version, file_key, len, sum] = fields[..] else {
        return Err(format!("malformed header `{}`", header.escape_debug()));
    };
    if magic != MAGIC {
        return Err("not a cudajit cache file".into());
    }
    if format != FORMAT.to_string() {
        return Err(format!("cache format {format}, expected {FORMAT}"));
    }
    if version != VERSION {
        return Err(format!(
            "written by cudajit {version}, this is cudajit {VERSION}"
        ));
    }
    if file_key != key.hex() {
        return Err("the header names another key".into());
    }
    let body_len = bytes.len() - nl - 1;
    if len.parse::<usize>().ok() != Some(body_len) {
        return Err(format!(
            "the header says {len} bytes, the file has {body_len}"
        ));
    }
    let body = &bytes[nl + 1..];
    let fields = &header[..header.len() - sum.len() - 1];
    if !same_bytes(
        hex(&tag(mac, fields, suffix, body)).as_bytes(),
        sum.as_bytes(),
    ) {
        return Err("the MAC does not match (made with another key, or corrupt)".into());
    }
    bytes.drain(..=nl);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "cudajit-disk-unit-{name}-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&d);
        d
    }

    /// [`temp_dir`], made and private (mode 0700, whatever the umask).
    fn private_dir(name: &str) -> PathBuf {
        let d = temp_dir(name);
        fs::create_dir_all(&d).unwrap();
        set_mode(&d, 0o700);
        d
    }

    fn set_mode(p: &Path, mode: u32) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
        }
        let _ = (p, mode);
    }

    /// Removes a test directory even where a test made it read-only.
    fn remove(dir: PathBuf) {
        set_mode(&dir, 0o700);
        let _ = fs::remove_dir_all(dir);
    }

    const PTX: &str = "//\n.version 7.8\n.target sm_90\n";
    /// A key for the encoding tests.
    const MAC: MacKey = MacKey([5; 32]);

    /// The header line for `ptx` stored under `key` (with its newline), with [`MAC`].
    fn header(key: &Key, ptx: &str) -> String {
        header_for(key, "ptx", &MAC, ptx.as_bytes())
    }

    /// A PTX cache file's bytes, with [`MAC`].
    fn encode(key: &Key, ptx: &str) -> Vec<u8> {
        encode_bytes(key, "ptx", &MAC, ptx.as_bytes())
    }

    /// Checks a PTX cache file's bytes with [`MAC`] and returns its PTX, or why it is rejected.
    fn decode(key: &Key, bytes: Vec<u8>) -> Result<String, String> {
        ptx_text(decode_bytes(key, "ptx", &MAC, bytes)?)
    }

    /// A header of the old format (1: an FNV-1a checksum, no MAC) that is right for `body`.
    fn old_header(key: &Key, format: u32, body: &[u8]) -> String {
        format!(
            "{MAGIC} {format} {VERSION} {} {} {:016x}\n",
            key.hex(),
            body.len(),
            super::super::hash::fnv1a64(body)
        )
    }

    /// The process's policy with `CUDAJIT_CACHE_TRUST=1`, through the same environment lookup
    /// as the directory's.
    fn opted_in_policy() -> Policy {
        let get = |k: &str| (k == "CUDAJIT_CACHE_TRUST").then(|| std::ffi::OsString::from("1"));
        Policy::for_process(trust::opted_in(get))
    }

    #[test]
    fn round_trip_and_clear() {
        let dir = temp_dir("rt");
        let cache = DiskCache::new(dir.join("nested"));
        let key = Key([7; 32]);
        assert!(matches!(cache.load(&key), Lookup::Missing));
        let Stored::Written(path) = cache.store(&key, PTX) else {
            panic!("store failed")
        };
        assert_eq!(path, cache.path_for(&key));
        assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
        assert!(dir.join("nested/CACHEDIR.TAG").exists());
        // A binary body beside it (a cubin), under its own suffix.
        let cubin = [0x7f, b'E', b'L', b'F', 0, 1, 0xff];
        assert!(matches!(
            cache.load_bytes(&key, "d1.cubin"),
            Lookup::Missing
        ));
        assert!(matches!(
            cache.store_bytes(&key, "d1.cubin", &cubin),
            Stored::Written(_)
        ));
        assert!(matches!(cache.load_bytes(&key, "d1.cubin"), Lookup::Hit(b) if b == cubin));
        assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
        assert_eq!(cache.clear().unwrap(), 2);
        assert!(matches!(cache.load(&key), Lookup::Missing));
        assert_eq!(cache.clear().unwrap(), 0);
        assert_eq!(DiskCache::new(dir.join("absent")).clear().unwrap(), 0);
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn every_corruption_is_rejected() {
        let key = Key([9; 32]);
        let good = encode(&key, PTX);
        assert_eq!(decode(&key, good.clone()).unwrap(), PTX);
        let hdr = header(&key, PTX);
        let with_header = |h: String, body: &[u8]| {
            let mut v = h.into_bytes();
            v.extend_from_slice(body);
            v
        };
        let bad_utf8: &[u8] = b"\xff\xfe ptx";
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("truncated", good[..good.len() - 3].to_vec()),
            ("extended", [good.clone(), b"x".to_vec()].concat()),
            ("garbage", b"\x00\x01garbage\nmore".to_vec()),
            ("no newline", vec![b'a'; 2000]),
            (
                "other magic",
                with_header(hdr.replace(MAGIC, "other-magic"), PTX.as_bytes()),
            ),
            (
                "other format",
                with_header(
                    hdr.replacen(&format!(" {FORMAT} "), " 3 ", 1),
                    PTX.as_bytes(),
                ),
            ),
            (
                "format 1 with a right FNV checksum",
                with_header(old_header(&key, 1, PTX.as_bytes()), PTX.as_bytes()),
            ),
            (
                "format 2 with a right FNV checksum",
                with_header(old_header(&key, FORMAT, PTX.as_bytes()), PTX.as_bytes()),
            ),
            (
                "MAC of another key",
                encode_bytes(&key, "ptx", &MacKey([6; 32]), PTX.as_bytes()),
            ),
            (
                "MAC of another suffix",
                encode_bytes(&key, "d1.cubin", &MAC, PTX.as_bytes()),
            ),
            (
                "MAC in upper case",
                with_header(
                    {
                        let (fields, sum) = hdr.trim_end().rsplit_once(' ').unwrap();
                        format!("{fields} {}\n", sum.to_ascii_uppercase())
                    },
                    PTX.as_bytes(),
                ),
            ),
            (
                "other version",
                with_header(
                    hdr.replacen(&format!(" {VERSION} "), " 0.0.0-old ", 1),
                    PTX.as_bytes(),
                ),
            ),
            (
                "other key",
                with_header(header(&Key([8; 32]), PTX), PTX.as_bytes()),
            ),
            ("flipped byte", {
                let mut v = good.clone();
                let last = v.len() - 2;
                v[last] ^= 1;
                v
            }),
            (
                "not UTF-8 (MAC right)",
                with_header(header_for(&key, "ptx", &MAC, bad_utf8), bad_utf8),
            ),
        ];
        for (what, bytes) in cases {
            assert!(decode(&key, bytes).is_err(), "{what} accepted");
        }
    }

    #[test]
    fn corrupt_file_is_replaced_by_the_next_store() {
        let dir = temp_dir("replace");
        let cache = DiskCache::new(dir.clone());
        let key = Key([3; 32]);
        fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, 0o700);
        fs::write(cache.path_for(&key), b"junk").unwrap();
        assert!(matches!(cache.load(&key), Lookup::Rejected(_)));
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            !names.iter().any(|n| n.ends_with(".tmp")),
            "temporary file left: {names:?}"
        );
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn unwritable_directory_turns_writes_off_once() {
        let dir = temp_dir("unwritable");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        fs::write(&file, b"").unwrap();
        let cache = DiskCache::new(file.join("cache"));
        let key = Key([1; 32]);
        assert!(matches!(
            cache.store(&key, PTX),
            Stored::Failed { first: true, .. }
        ));
        assert!(!cache.is_writable());
        assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
        assert!(matches!(
            cache.load(&key),
            Lookup::Failed(_) | Lookup::Missing
        ));
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn trim_removes_the_least_recently_used() {
        let dir = temp_dir("trim");
        let cache = DiskCache::new(dir.clone());
        let t0 = SystemTime::now() - Duration::from_secs(10_000);
        for i in 0..6u8 {
            let key = Key([i; 32]);
            assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
            let f = fs::OpenOptions::new()
                .append(true)
                .open(cache.path_for(&key))
                .unwrap();
            f.set_modified(t0 + Duration::from_secs(i as u64)).unwrap();
        }
        // A hit makes key 0 the most recently used.
        assert!(matches!(cache.load(&Key([0; 32])), Lookup::Hit(_)));
        assert_eq!(cache.trim(10, 3).unwrap(), 0, "under the bound");
        assert_eq!(cache.trim(5, 3).unwrap(), 3);
        let left: Vec<bool> = (0..6u8)
            .map(|i| cache.path_for(&Key([i; 32])).exists())
            .collect();
        assert_eq!(left, [true, false, false, false, true, true]);
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn cache_file_names() {
        assert!(is_cache_file_name(&format!("{}.ptx", "ab".repeat(32))));
        assert!(!is_cache_file_name(&format!("{}.ptx", "AB".repeat(32))));
        assert!(!is_cache_file_name("CACHEDIR.TAG"));
        assert!(!is_cache_file_name("kernel.ptx"));
        let key = "0f".repeat(32);
        assert!(is_cache_file_name(&format!("{key}.d13000.cubin")));
        assert!(!is_cache_file_name(&format!("{key}.cubin")));
        assert!(!is_cache_file_name(&format!("{key}.d1-3.cubin")));
        assert!(!is_cache_file_name(&format!("{key}..cubin")));
        assert!(is_temp_name(".abc.12.0.tmp"));
    }

    #[test]
    fn planted_file_with_a_valid_header_and_old_checksum_is_refused() {
        let dir = private_dir("planted");
        let cache = DiskCache::new(dir.clone());
        let key = Key([4; 32]);
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        let real = fs::read(cache.path_for(&key)).unwrap();
        let planted = "//\n.version 7.8\n.target sm_90\n// planted\n";
        for format in [1, FORMAT] {
            let mut bytes = old_header(&key, format, planted.as_bytes()).into_bytes();
            bytes.extend_from_slice(planted.as_bytes());
            fs::write(cache.path_for(&key), &bytes).unwrap();
            assert!(
                matches!(cache.load(&key), Lookup::Rejected(_)),
                "format {format}: the planted file is refused"
            );
        }
        // A planted body of the right length under a real entry's header (a real MAC, of
        // another body).
        let nl = real.iter().position(|&b| b == b'\n').unwrap();
        let body = format!("{:<1$}", "// planted", PTX.len());
        let forged = [&real[..=nl], body.as_bytes()].concat();
        assert_eq!(forged.len(), real.len());
        fs::write(cache.path_for(&key), &forged).unwrap();
        assert!(matches!(cache.load(&key), Lookup::Rejected(why) if why.contains("MAC")));
        // The next store replaces it with a real entry.
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
        assert_eq!(fs::read(cache.path_for(&key)).unwrap(), real);
        remove(dir);
    }

    #[test]
    fn file_made_with_another_directory_key_is_refused() {
        let (a, b) = (private_dir("key-a"), private_dir("key-b"));
        let (ca, cb) = (DiskCache::new(a.clone()), DiskCache::new(b.clone()));
        let key = Key([5; 32]);
        assert!(matches!(ca.store(&key, PTX), Stored::Written(_)));
        assert!(matches!(cb.load(&key), Lookup::Missing));
        fs::copy(ca.path_for(&key), cb.path_for(&key)).unwrap();
        assert!(
            matches!(cb.load(&key), Lookup::Rejected(why) if why.contains("MAC")),
            "a file of another key is refused"
        );
        assert!(matches!(ca.load(&key), Lookup::Hit(p) if p == PTX));
        // A cubin renamed into the PTX's place is refused too (the suffix is authenticated).
        assert!(matches!(
            ca.store_bytes(&key, "d1.cubin", PTX.as_bytes()),
            Stored::Written(_)
        ));
        fs::copy(ca.path_with(&key, "d1.cubin"), ca.path_for(&key)).unwrap();
        assert!(matches!(
            DiskCache::new(a.clone()).load(&key),
            Lookup::Rejected(_)
        ));
        remove(a);
        remove(b);
    }

    #[cfg(unix)]
    #[test]
    fn directory_made_by_cudajit_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = private_dir("made");
        let cache = DiskCache::new(dir.join("cache"));
        assert!(matches!(
            cache.store(&Key([2; 32]), PTX),
            Stored::Written(_)
        ));
        let mode = fs::metadata(dir.join("cache"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let key = fs::metadata(dir.join("cache").join(trust::KEY_FILE)).unwrap();
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        remove(dir);
    }

    #[cfg(unix)]
    #[test]
    fn world_writable_directory_is_neither_read_nor_written() {
        let dir = private_dir("world-writable");
        let key = Key([6; 32]);
        assert!(matches!(
            DiskCache::new(dir.clone()).store(&key, PTX),
            Stored::Written(_)
        ));
        set_mode(&dir, 0o777);
        let cache = DiskCache::new(dir.clone());
        let access = cache.access(false).unwrap();
        let Some(Access::Untrusted(u)) = access else {
            panic!("trusted: {access:?}")
        };
        assert_eq!(u.problem, Problem::DirWritable { mode: 0o777 });
        let warning = u.to_string();
        assert!(warning.contains(&dir.display().to_string()), "{warning}");
        assert!(warning.contains("CUDAJIT_CACHE_TRUST=1"), "{warning}");
        assert!(matches!(cache.load(&key), Lookup::Missing), "not read");
        assert!(!cache.is_trusted(false));
        let before: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(matches!(cache.store(&Key([7; 32]), PTX), Stored::Disabled));
        assert!(!cache.is_writable());
        let after: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(before.len(), after.len(), "nothing written");
        assert!(cache.clear().is_err(), "nothing deleted");
        assert!(cache.path_for(&key).exists());
        // Opted in, it is used.
        let opted = DiskCache::with_policy(dir.clone(), opted_in_policy());
        assert!(matches!(opted.load(&key), Lookup::Hit(p) if p == PTX));
        remove(dir);
    }

    #[cfg(unix)]
    #[test]
    fn directory_of_another_user_is_not_read() {
        if !trust::can_chown() {
            return;
        }
        let dir = private_dir("other-user");
        let key = Key([8; 32]);
        assert!(matches!(
            DiskCache::new(dir.clone()).store(&key, PTX),
            Stored::Written(_)
        ));
        std::os::unix::fs::chown(&dir, Some(trust::NOBODY), Some(trust::NOBODY)).unwrap();
        let cache = DiskCache::new(dir.clone());
        assert!(matches!(
            cache.access(false).unwrap(),
            Some(Access::Untrusted(Untrusted {
                problem: Problem::DirOwner {
                    uid: trust::NOBODY,
                    ..
                },
                ..
            }))
        ));
        assert!(matches!(cache.load(&key), Lookup::Missing));
        assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
        remove(dir);
    }

    #[cfg(unix)]
    #[test]
    fn file_of_another_user_is_rejected() {
        if !trust::can_chown() {
            return;
        }
        let dir = private_dir("other-file");
        let cache = DiskCache::new(dir.clone());
        let key = Key([9; 32]);
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        std::os::unix::fs::chown(cache.path_for(&key), Some(trust::NOBODY), None).unwrap();
        assert!(
            matches!(cache.load(&key), Lookup::Rejected(why) if why.contains("owned by uid 65534"))
        );
        // Replaced by the next store (the directory is ours).
        assert!(matches!(cache.store(&key, PTX), Stored::Written(_)));
        assert!(matches!(cache.load(&key), Lookup::Hit(p) if p == PTX));
        remove(dir);
    }

    #[cfg(unix)]
    #[test]
    fn key_file_readable_by_others_makes_the_cache_untrusted() {
        let dir = private_dir("key-0644");
        let key = Key([10; 32]);
        assert!(matches!(
            DiskCache::new(dir.clone()).store(&key, PTX),
            Stored::Written(_)
        ));
        set_mode(&dir.join(trust::KEY_FILE), 0o644);
        let cache = DiskCache::new(dir.clone());
        assert!(matches!(
            cache.access(false).unwrap(),
            Some(Access::Untrusted(Untrusted {
                problem: Problem::KeyMode { mode: 0o644 },
                ..
            }))
        ));
        assert!(matches!(cache.load(&key), Lookup::Missing));
        assert!(matches!(cache.store(&key, PTX), Stored::Disabled));
        remove(dir);
    }

    /// A shared cache: filled by one user, shipped with its key (readable by all), made
    /// read-only; another user opts in with `CUDAJIT_CACHE_TRUST=1` and gets hits.
    #[cfg(unix)]
    #[test]
    fn opted_in_read_only_prefilled_cache_serves_hits() {
        let dir = private_dir("shared");
        let key = Key([11; 32]);
        let cubin = [0x7f, b'E', b'L', b'F', 2];
        let filler = DiskCache::new(dir.clone());
        assert!(matches!(filler.store(&key, PTX), Stored::Written(_)));
        assert!(matches!(
            filler.store_bytes(&key, "d1.cubin", &cubin),
            Stored::Written(_)
        ));
        set_mode(&dir.join(trust::KEY_FILE), 0o644);
        let given_away = trust::effective_uid() == 0;
        if given_away {
            for e in fs::read_dir(&dir).unwrap() {
                std::os::unix::fs::chown(e.unwrap().path(), Some(trust::NOBODY), None).unwrap();
            }
            std::os::unix::fs::chown(&dir, Some(trust::NOBODY), None).unwrap();
        }
        set_mode(&dir, 0o555);
        let user = DiskCache::new(dir.clone());
        assert!(
            matches!(user.load(&key), Lookup::Missing),
            "not opted in: not trusted"
        );
        let shared = DiskCache::with_policy(dir.clone(), opted_in_policy());
        assert!(matches!(shared.load(&key), Lookup::Hit(p) if p == PTX));
        assert!(matches!(shared.load_bytes(&key, "d1.cubin"), Lookup::Hit(b) if b == cubin));
        assert!(shared.is_trusted(false));
        // The shared cache still authenticates its entries.
        let other = Key([12; 32]);
        let mut planted = old_header(&other, FORMAT, PTX.as_bytes()).into_bytes();
        planted.extend_from_slice(PTX.as_bytes());
        set_mode(&dir, 0o755);
        fs::write(shared.path_for(&other), planted).unwrap();
        set_mode(&dir, 0o555);
        assert!(matches!(shared.load(&other), Lookup::Rejected(_)));
        remove(dir);
    }

    /// A directory whose key cannot be read (here a dangling link in its place) serves nothing
    /// and takes no writes, opted in or not; the link is left alone.
    #[cfg(unix)]
    #[test]
    fn directory_without_a_usable_key_is_not_used() {
        let dir = private_dir("no-key");
        let key_path = dir.join(trust::KEY_FILE);
        std::os::unix::fs::symlink(dir.join("absent"), &key_path).unwrap();
        for policy in [Policy::for_process(false), opted_in_policy()] {
            let cache = DiskCache::with_policy(dir.clone(), policy);
            assert!(
                matches!(cache.access(false).unwrap(), Some(Access::NoKey(_))),
                "{policy:?}"
            );
            assert!(matches!(cache.load(&Key([13; 32])), Lookup::Missing));
            assert!(matches!(cache.store(&Key([13; 32]), PTX), Stored::Disabled));
            assert!(!cache.path_for(&Key([13; 32])).exists());
        }
        assert!(fs::symlink_metadata(&key_path)
            .unwrap()
            .file_type()
            .is_symlink());
        remove(dir);
    }
}
