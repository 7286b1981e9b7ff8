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
use super::mac::HmacSha256;
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

/// The MAC of a file, unfinished: HMAC-SHA256 under `mac` of the header's fields before the
/// MAC (`fields`, without the MAC or newline), the file's suffix and its body.
fn tag(mac: &MacKey, fields: &str, suffix: &str, body: &[u8]) -> HmacSha256 {
    let mut m = HmacSha256::new(&mac.0);
    m.update(fields.as_bytes());
    m.update(b"\n");
    m.update(suffix.as_bytes());
    m.update(b"\n");
    m.update(body);
    m
}

/// The header line of a body stored under `key` with this suffix (with its newline).
fn header_for(key: &Key, suffix: &str, mac: &MacKey, body: &[u8]) -> String {
    let fields = format!("{MAGIC} {FORMAT} {VERSION} {} {}", key.hex(), body.len());
    let sum = hex(&tag(mac, &fields, suffix, body).finish());
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
    if !tag(mac, fields, suffix, body).verify_hex(sum) {
        return Err("the MAC does not match (made with another key, or corrupt)".into());
    }
    bytes.drain(..=nl);
    Ok(bytes)
}

#[cfg(test)]
mod tests;
