//! The disk cache: one file per key and kind, `<hex key>.ptx` (the PTX) and
//! `<hex key>.<tag>.cubin` (what the driver's JIT made of that PTX; the tag names the driver),
//! each holding a header line and the body.
//!
//! ```text
//! cudajit-ptx-cache 1 <crate version> <hex key> <body length> <FNV-1a 64 of the body, hex>\n
//! <PTX, or the cubin's bytes>
//! ```
//!
//! Files are written to a temporary name in the same directory and renamed into place, so a
//! reader sees a whole file or none. A file that fails any check is ignored (and replaced by
//! the next store).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::hash::fnv1a64;
use super::Key;

/// First word of every cache file.
pub(crate) const MAGIC: &str = "cudajit-ptx-cache";
/// Version of the file layout.
pub(crate) const FORMAT: u32 = 1;
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
    writable: AtomicBool,
    trimmed: AtomicBool,
}

/// Makes temporary names unique between threads of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl DiskCache {
    /// A cache in `dir` (created on the first store).
    pub(crate) fn new(dir: PathBuf) -> Self {
        DiskCache {
            dir,
            writable: AtomicBool::new(true),
            trimmed: AtomicBool::new(false),
        }
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

    /// Reads and checks the file for `key` with this suffix; its body's bytes.
    pub(crate) fn load_bytes(&self, key: &Key, suffix: &str) -> Lookup<Vec<u8>> {
        let path = self.path_with(key, suffix);
        let read = || -> io::Result<(Vec<u8>, Option<SystemTime>)> {
            let mut f = fs::File::open(&path)?;
            let modified = f.metadata().and_then(|m| m.modified()).ok();
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut f, &mut bytes)?;
            Ok((bytes, modified))
        };
        match read() {
            Ok((bytes, modified)) => match decode_bytes(key, bytes) {
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
            Err(e) if e.kind() == io::ErrorKind::NotFound => Lookup::Missing,
            Err(e) => Lookup::Failed(e),
        }
    }

    /// Writes `ptx` for `key`, atomically replacing any file there. After a failure, writes
    /// are off for this cache (reads go on: a read-only cache directory still serves hits).
    pub(crate) fn store(&self, key: &Key, ptx: &str) -> Stored {
        self.store_bytes(key, "ptx", ptx.as_bytes())
    }

    /// As [`DiskCache::store`], for any body under any suffix.
    pub(crate) fn store_bytes(&self, key: &Key, suffix: &str, body: &[u8]) -> Stored {
        if !self.is_writable() {
            return Stored::Disabled;
        }
        match self.write(key, suffix, body) {
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

    fn write(&self, key: &Key, suffix: &str, body: &[u8]) -> io::Result<PathBuf> {
        self.ensure_dir()?;
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
            f.write_all(&encode_bytes(key, body))?;
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

    /// Creates the directory if needed, tagging it as a cache when cudajit made it.
    fn ensure_dir(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        fs::create_dir_all(&self.dir)?;
        let _ = fs::write(self.dir.join("CACHEDIR.TAG"), CACHEDIR_TAG);
        Ok(())
    }

    /// Removes every cache file (and temporary files left by crashed writers); returns how
    /// many cache files were removed. A missing directory holds none.
    pub(crate) fn clear(&self) -> io::Result<usize> {
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

/// The header line for `ptx` stored under `key` (with its newline).
#[cfg(test)]
pub(crate) fn header(key: &Key, ptx: &str) -> String {
    header_for(key, ptx.as_bytes())
}

/// The header line for a body stored under `key` (with its newline).
fn header_for(key: &Key, body: &[u8]) -> String {
    format!(
        "{MAGIC} {FORMAT} {VERSION} {} {} {:016x}\n",
        key.hex(),
        body.len(),
        fnv1a64(body)
    )
}

/// A PTX cache file's bytes.
#[cfg(test)]
pub(crate) fn encode(key: &Key, ptx: &str) -> Vec<u8> {
    encode_bytes(key, ptx.as_bytes())
}

/// A cache file's bytes.
fn encode_bytes(key: &Key, body: &[u8]) -> Vec<u8> {
    let mut out = header_for(key, body).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Checks a PTX cache file's bytes and returns its PTX, or why it is rejected.
#[cfg(test)]
pub(crate) fn decode(key: &Key, bytes: Vec<u8>) -> Result<String, String> {
    ptx_text(decode_bytes(key, bytes)?)
}

/// A PTX body as text: UTF-8 without NUL bytes.
fn ptx_text(body: Vec<u8>) -> Result<String, String> {
    if body.contains(&0) {
        return Err("the PTX contains a NUL byte".into());
    }
    String::from_utf8(body).map_err(|_| "the PTX is not UTF-8".to_string())
}

/// Checks a cache file's bytes and returns its body, or why it is rejected.
fn decode_bytes(key: &Key, mut bytes: Vec<u8>) -> Result<Vec<u8>, String> {
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
    if u64::from_str_radix(sum, 16).ok() != Some(fnv1a64(body)) {
        return Err("checksum mismatch".into());
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

    const PTX: &str = "//\n.version 7.8\n.target sm_90\n";

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
                with_header(hdr.replacen(" 1 ", " 2 ", 1), PTX.as_bytes()),
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
                "not UTF-8",
                with_header(header_for_bytes(&key, bad_utf8), bad_utf8),
            ),
        ];
        for (what, bytes) in cases {
            assert!(decode(&key, bytes).is_err(), "{what} accepted");
        }
    }

    /// A header with a correct length and checksum for arbitrary bytes.
    fn header_for_bytes(key: &Key, body: &[u8]) -> String {
        format!(
            "{MAGIC} {FORMAT} {VERSION} {} {} {:016x}\n",
            key.hex(),
            body.len(),
            fnv1a64(body)
        )
    }

    #[test]
    fn corrupt_file_is_replaced_by_the_next_store() {
        let dir = temp_dir("replace");
        let cache = DiskCache::new(dir.clone());
        let key = Key([3; 32]);
        fs::create_dir_all(&dir).unwrap();
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
}
