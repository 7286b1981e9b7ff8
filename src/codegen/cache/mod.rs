//! The compile cache: PTX by a hash of everything that determines it, in memory (per process)
//! and on disk (shared between processes and runs). See `docs/CACHE.md`.
//!
//! The key is the SHA-256 of: the kernel IR and the [`PtxOptions`] as their `Hash` byte stream
//! (a canonical form for a given build: the IR is plain data in `Vec`s; with `lineinfo`, the
//! Rust source location of each statement too, which the IR's `Hash` leaves out), the crate version, the
//! LLVM version (built against and linked), a fingerprint of this build of the code generator
//! (so a changed lowering never reuses stale PTX, even without a version bump), the
//! libdevice settings, and the set of driver-JIT workarounds applied (chosen from
//! [`PtxOptions::driver`], which the options' `Hash` leaves out: drivers that need the same
//! workarounds share entries).
//!
//! Environment (read once per process, at the first compile):
//! - `CUDAJIT_CACHE_DIR`: the disk cache's directory; else `$XDG_CACHE_HOME/cudajit`, else
//!   `$HOME/.cache/cudajit` (Windows: `%LOCALAPPDATA%\cudajit`).
//! - `CUDAJIT_CACHE=0` (or `off`, `false`, `no`): no disk cache (the memory cache stays).
//! - `CUDAJIT_LOG_CACHE=1`: one line on stderr per cache event, and when the disk cache turns
//!   out to be unwritable.
//! - `CUDAJIT_CACHE_TRUST=1` (or `on`, `true`, `yes`): trust the cache directory without the
//!   ownership and mode checks (a shared, possibly read-only cache, filled by another user and
//!   shipped with its key); entries must still carry a valid MAC.
//!
//! Trust (`trust.rs`, Unix): before anything is read from the disk cache, its directory must
//! belong to this (effective) user and not be writable by group or others, each file read must
//! belong to this user, and every entry must carry an HMAC-SHA256 (`mac.rs`) under the
//! directory's secret key (`.cudajit-key`, 32 random bytes, mode 0600). A directory that fails
//! is neither read nor written, with one warning on stderr naming the directory, the problem and
//! the remedies. The matrix-multiply tuning file in the same directory follows the same rules.

mod disk;
mod hash;
pub(crate) mod loaded;
mod mac;
mod memory;
#[cfg(test)]
mod test_support;
mod trust;

/// The process's effective user id (for the tests of files owned by others).
#[cfg(all(test, unix))]
pub(crate) use trust::effective_uid;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::options::PtxOptions;
use crate::error::{Error, Result};
use crate::ir::FunctionIr;

use disk::{DiskCache, Lookup, Stored};
use hash::{hex, Sha256};
use memory::MEMORY;

/// Bumped whenever what goes into the key changes meaning (2: the IR's `Hash` bytes, not its
/// `Debug` text; 3: the workaround set).
const KEY_FORMAT: u32 = 3;

/// What identifies this build of the code generator, beyond the crate version (which does
/// not change while cudajit itself is being developed): a hash of the code generator's sources
/// when the build script provides one (`CUDAJIT_CODEGEN_FINGERPRINT`), else the running
/// executable's size and modification time (never stale, but shared only by runs of the
/// same binary), else the process id (no sharing between processes).
fn build_fingerprint() -> &'static str {
    static FP: OnceLock<String> = OnceLock::new();
    FP.get_or_init(|| {
        if let Some(fp) = option_env!("CUDAJIT_CODEGEN_FINGERPRINT") {
            return format!("source {fp}");
        }
        let exe = std::env::current_exe().and_then(|p| {
            let m = std::fs::metadata(&p)?;
            let mtime = m
                .modified()?
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(std::io::Error::other)?;
            Ok(format!(
                "exe {} {} {}",
                p.display(),
                m.len(),
                mtime.as_nanos()
            ))
        });
        exe.unwrap_or_else(|_| format!("process {}", std::process::id()))
    })
}

/// A cache key: SHA-256 of the key material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key(pub(crate) [u8; 32]);

impl Key {
    /// 64 lower-case hex digits (the disk file's name).
    pub(crate) fn hex(&self) -> String {
        hex(&self.0)
    }

    /// The first 16 hex digits, for log lines.
    fn short(&self) -> String {
        hex(&self.0[..8])
    }
}

/// The key for compiling `ir` with `opts` in this build of cudajit and this environment.
pub(crate) fn key_for(ir: &FunctionIr, opts: &PtxOptions) -> Key {
    key_with(ir, opts, libdevice_fingerprint())
}

/// What decides how math functions compile here (which libdevice file, or cudajit's own
/// implementations), plus the libdevice environment variables; read once per process.
fn libdevice_fingerprint() -> &'static str {
    static FP: OnceLock<String> = OnceLock::new();
    FP.get_or_init(|| {
        format!(
            "{} no_libdevice={:?} libdevice={:?}",
            super::math::cache_key(),
            std::env::var_os("CUDAJIT_NO_LIBDEVICE"),
            std::env::var_os("CUDAJIT_LIBDEVICE")
        )
    })
}

/// Collects a value's `Hash` byte stream (what `derive(Hash)` writes: the same bytes for equal
/// values in one build), for the key's SHA-256.
struct HashBytes(Vec<u8>);

impl std::hash::Hasher for HashBytes {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn finish(&self) -> u64 {
        0
    }
}

fn key_with(ir: &FunctionIr, opts: &PtxOptions, libdevice: &str) -> Key {
    key_with_workarounds(ir, opts, libdevice, opts.ptx_workarounds())
}

/// [`key_with`] for the workaround set `workarounds` (the one `opts` chooses, but for tests).
fn key_with_workarounds(
    ir: &FunctionIr,
    opts: &PtxOptions,
    libdevice: &str,
    workarounds: super::ptx_fix::WorkaroundSet,
) -> Key {
    let (ma, mi, pa) = inkwell::support::get_llvm_version();
    let mut h = Sha256::new();
    // Writing to a `Sha256` cannot fail.
    let _ = write!(
        h,
        "cudajit-ptx-key {KEY_FORMAT}\ncrate {}\nllvm {} {ma}.{mi}.{pa}\nbuild {}\n\
         libdevice {libdevice}\nworkarounds {:#x}\n",
        disk::VERSION,
        option_env!("CUDAJIT_LLVM_VERSION").unwrap_or("unknown"),
        build_fingerprint(),
        workarounds.bits(),
    );
    let mut bytes = HashBytes(Vec::with_capacity(2048));
    std::hash::Hash::hash(opts, &mut bytes);
    std::hash::Hash::hash(ir, &mut bytes);
    if opts.lineinfo {
        // The `.file`/`.loc` lines depend on where each operation was built.
        super::srcloc::hash_tree_lines(ir, &mut bytes);
    }
    h.update(&bytes.0);
    Key(h.finish())
}

/// Counters of what the compile cache did in this process, from [`cache_stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Kernels built again and found already loaded in their context (no PTX, no module
    /// load: the loaded function is reused).
    pub loaded_hits: u64,
    /// PTX found in the memory cache.
    pub memory_hits: u64,
    /// PTX read from the disk cache.
    pub disk_hits: u64,
    /// Kernels loaded from the driver's compiled code (cubin) in the disk cache: no LLVM, no
    /// driver JIT.
    pub cubin_hits: u64,
    /// PTX compiled by LLVM (both caches missed, or the disk cache was off).
    pub compiles: u64,
    /// Files written to the disk cache (PTX and cubins).
    pub disk_writes: u64,
    /// Disk cache files ignored as corrupt, truncated or from another version (each is
    /// replaced by the next write).
    pub disk_rejected: u64,
    /// Disk cache reads or writes that failed (a failed write turns writes off for the
    /// process).
    pub disk_errors: u64,
    /// Entries in the memory cache now.
    pub memory_entries: usize,
    /// Bytes of PTX in the memory cache now.
    pub memory_bytes: usize,
    /// Loaded kernels kept for reuse now.
    pub loaded_entries: usize,
}

struct Counters {
    loaded_hits: AtomicU64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    cubin_hits: AtomicU64,
    compiles: AtomicU64,
    disk_writes: AtomicU64,
    disk_rejected: AtomicU64,
    disk_errors: AtomicU64,
}

static COUNTERS: Counters = Counters {
    loaded_hits: AtomicU64::new(0),
    memory_hits: AtomicU64::new(0),
    disk_hits: AtomicU64::new(0),
    cubin_hits: AtomicU64::new(0),
    compiles: AtomicU64::new(0),
    disk_writes: AtomicU64::new(0),
    disk_rejected: AtomicU64::new(0),
    disk_errors: AtomicU64::new(0),
};

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What the compile cache did so far in this process.
pub fn cache_stats() -> CacheStats {
    let c = &COUNTERS;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mem = MEMORY.lock();
    CacheStats {
        loaded_hits: load(&c.loaded_hits),
        memory_hits: load(&c.memory_hits),
        disk_hits: load(&c.disk_hits),
        cubin_hits: load(&c.cubin_hits),
        compiles: load(&c.compiles),
        disk_writes: load(&c.disk_writes),
        disk_rejected: load(&c.disk_rejected),
        disk_errors: load(&c.disk_errors),
        memory_entries: mem.len(),
        memory_bytes: mem.bytes(),
        loaded_entries: loaded::len(),
    }
}

/// Whether `CUDAJIT_LOG_CACHE` asks for log lines.
pub(crate) fn logging() -> bool {
    static LOG: OnceLock<bool> = OnceLock::new();
    *LOG.get_or_init(|| {
        std::env::var_os("CUDAJIT_LOG_CACHE").is_some_and(|v| {
            matches!(
                v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref(),
                Some("1" | "on" | "true" | "yes")
            )
        })
    })
}

macro_rules! log {
    ($($t:tt)*) => {
        if $crate::codegen::cache::logging() {
            eprintln!("cudajit cache: {}", format_args!($($t)*));
        }
    };
}

/// Whether an environment value turns the disk cache off.
fn is_off(v: &OsString) -> bool {
    matches!(
        v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref(),
        Some("0" | "off" | "false" | "no")
    )
}

/// The disk cache's directory for an environment (`get` looks a variable up; empty values
/// count as unset), or `None` when the disk cache is off or no directory can be found.
pub(crate) fn dir_from_env(get: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let get = |k: &str| get(k).filter(|v| !v.is_empty());
    if get("CUDAJIT_CACHE").is_some_and(|v| is_off(&v)) {
        return None;
    }
    if let Some(d) = get("CUDAJIT_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if cfg!(windows) {
        return get("LOCALAPPDATA").map(|d| PathBuf::from(d).join("cudajit"));
    }
    // The XDG spec ignores relative values.
    if let Some(d) = get("XDG_CACHE_HOME").map(PathBuf::from) {
        if d.is_absolute() {
            return Some(d.join("cudajit"));
        }
    }
    get("HOME").map(|h| PathBuf::from(h).join(".cache").join("cudajit"))
}

/// A disk cache for an environment (`get` as for [`dir_from_env`]): its directory, and the
/// trust checks it applies (`CUDAJIT_CACHE_TRUST`).
fn disk_cache_from_env(get: impl Fn(&str) -> Option<OsString>) -> Option<DiskCache> {
    let policy = trust::Policy::for_process(trust::opted_in(&get));
    dir_from_env(get).map(|dir| DiskCache::with_policy(dir, policy))
}

/// The process's disk cache, configured from the environment on first use.
fn disk_cache() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(|| disk_cache_from_env(|k| std::env::var_os(k)))
        .as_ref()
}

/// The warning for a cache directory that is not trusted, on stderr whatever
/// `CUDAJIT_LOG_CACHE` says (once per process: the directory's trust is decided once).
fn warn(untrusted: &trust::Untrusted) {
    eprintln!("cudajit: warning: {untrusted}");
}

/// The disk cache's directory when it passes the trust checks (see `docs/CACHE.md`, "Trust"),
/// made first (mode 0700) when `create`; `None` when the disk cache is off, the directory does
/// not exist (and `create` is false) or cannot be made, or is not trusted (one warning for the
/// process). For the files kept beside the compile cache (the matrix-multiply tuning file).
pub(crate) fn trusted_dir(create: bool) -> Option<PathBuf> {
    let d = disk_cache()?;
    d.is_trusted(create).then(|| d.dir().to_path_buf())
}

/// Reads a file of the cache directory (from [`trusted_dir`]) if the trust checks accept it:
/// it must belong to this user, checked on the opened file (unless `CUDAJIT_CACHE_TRUST=1`).
/// A file of another user is an error of kind `PermissionDenied` that says so.
pub(crate) fn read_trusted_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let policy = disk_cache().map_or(trust::Policy::for_process(false), DiskCache::policy);
    trust::read_trusted(path, policy)
}

/// The directory of the disk cache (from `CUDAJIT_CACHE_DIR`, `XDG_CACHE_HOME` or `HOME`;
/// fixed at the first use in the process), or `None` when `CUDAJIT_CACHE=0` turns it off or
/// no directory is configured. The directory may not exist yet: it is made at the first write
/// (mode 0700 on Unix). It is used only if it passes the trust checks (`docs/CACHE.md`,
/// "Trust"; `CUDAJIT_CACHE_TRUST=1` skips them).
pub fn cache_dir() -> Option<PathBuf> {
    disk_cache().map(|d| d.dir().to_path_buf())
}

/// Empties this process's memory caches (PTX, and the loaded kernels kept for reuse); returns
/// how many PTX entries it held. Kernels already built keep their PTX and loaded functions;
/// the next [`Kernel::build`](super::Kernel::build) of a kernel reads the disk cache (or
/// compiles) and loads its module again.
pub fn clear_memory_cache() -> usize {
    loaded::clear();
    MEMORY.lock().clear()
}

/// A disk lookup's body when it found a valid file; counts (and logs) a rejected file or a read
/// error (`path`: the file's).
fn usable<T>(found: Lookup<T>, path: impl FnOnce() -> PathBuf) -> Option<T> {
    let c = &COUNTERS;
    match found {
        Lookup::Hit(body) => Some(body),
        Lookup::Missing => None,
        Lookup::Rejected(why) => {
            bump(&c.disk_rejected);
            log!("rejected {}: {why}", path().display());
            None
        }
        Lookup::Failed(e) => {
            bump(&c.disk_errors);
            log!("disk error reading {}: {e}", path().display());
            None
        }
    }
}

/// Counts (and logs) what a store into the disk cache did.
fn count_store(d: &DiskCache, stored: Stored) {
    let c = &COUNTERS;
    match stored {
        Stored::Written(path) => {
            bump(&c.disk_writes);
            log!("stored {}", path.display());
        }
        Stored::Disabled => {}
        Stored::Failed { error, first } => {
            bump(&c.disk_errors);
            if first {
                log!(
                    "disk error writing to {}: {error}; the disk cache is off for this process",
                    d.dir().display()
                );
            }
        }
    }
}

// After `log!`, which it uses.
mod load;
pub(crate) use load::{function, ptx};

/// Empties the memory cache and deletes every file of the disk cache (see [`cache_dir`]);
/// returns how many files were deleted. Other processes using the same directory are not
/// disturbed: they compile what they no longer find. The directory's key file stays. A
/// directory that fails the trust checks (`docs/CACHE.md`, "Trust") is left alone: an error
/// that says why.
pub fn clear_cache() -> Result<usize> {
    clear_memory_cache();
    match disk_cache() {
        None => Ok(0),
        Some(d) => d.clear().map_err(|e| {
            Error::usage(format!(
                "clearing the compile cache in {}: {e}",
                d.dir().display()
            ))
        }),
    }
}

/// The PTX for `key` (`name`: the kernel's, for log lines): the memory cache, else the disk
/// cache `disk`, else `compile` (whose result both caches then keep; errors are not kept).
fn lookup_or_compile(
    key: Key,
    name: &str,
    disk: Option<&DiskCache>,
    compile: impl FnOnce() -> Result<String>,
) -> Result<Arc<str>> {
    let c = &COUNTERS;
    if let Some(p) = MEMORY.lock().get(&key) {
        bump(&c.memory_hits);
        log!("memory hit {} `{name}`", key.short());
        return Ok(p);
    }
    if let Some(d) = disk {
        if let Some(ptx) = usable(d.load(&key), || d.path_for(&key)) {
            bump(&c.disk_hits);
            log!("disk hit {} `{name}`", key.short());
            let ptx: Arc<str> = ptx.into();
            MEMORY.lock().insert(key, ptx.clone());
            return Ok(ptx);
        }
    }
    let ptx: Arc<str> = compile()?.into();
    bump(&c.compiles);
    log!("compiled {} `{name}`", key.short());
    if let Some(d) = disk {
        count_store(d, d.store(&key, &ptx));
    }
    MEMORY.lock().insert(key, ptx.clone());
    Ok(ptx)
}

#[cfg(test)]
mod tests {
    use super::test_support::env;
    use super::*;

    #[test]
    fn directory_from_the_environment() {
        let d = |pairs: &[(&str, &str)]| dir_from_env(env(pairs));
        assert_eq!(
            d(&[("CUDAJIT_CACHE_DIR", "/c"), ("HOME", "/h")]),
            Some(PathBuf::from("/c"))
        );
        for off in ["0", "off", "OFF", "false", " no "] {
            assert_eq!(
                d(&[("CUDAJIT_CACHE", off), ("CUDAJIT_CACHE_DIR", "/c")]),
                None
            );
        }
        assert_eq!(
            d(&[("CUDAJIT_CACHE", "1"), ("CUDAJIT_CACHE_DIR", "/c")]),
            Some(PathBuf::from("/c"))
        );
        if cfg!(windows) {
            assert_eq!(
                d(&[("LOCALAPPDATA", r"C:\l")]),
                Some(PathBuf::from(r"C:\l").join("cudajit"))
            );
        } else {
            assert_eq!(
                d(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]),
                Some(PathBuf::from("/x/cudajit"))
            );
            assert_eq!(
                d(&[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")]),
                Some(PathBuf::from("/h/.cache/cudajit"))
            );
            assert_eq!(
                d(&[("CUDAJIT_CACHE_DIR", ""), ("HOME", "/h")]),
                Some(PathBuf::from("/h/.cache/cudajit"))
            );
        }
        assert_eq!(d(&[]), None);
    }

    fn ir(name: &str, c: u64) -> FunctionIr {
        use super::super::scalar::ScalarTy;
        use crate::ir::{Op, ValueDef};
        FunctionIr {
            name: name.into(),
            params: vec![],
            ret: None,
            values: vec![ValueDef {
                ty: ScalarTy::U32,
                op: Op::Const(c),
            }],
            vars: vec![],
            shared: vec![],
            locals: vec![],
            uses_dynamic_shared: false,
            body: vec![],
            callees: vec![],
            inline: false,
            launch_bounds: None,
            grid_barrier: None,
            externs: vec![],
            consts: vec![],
            links: vec![],
            lines: Default::default(),
        }
    }

    fn with_const(bytes: &[u8]) -> FunctionIr {
        let mut f = ir("k", 1);
        f.consts.push(crate::ir::ConstArray {
            elem: super::super::scalar::ScalarTy::U32,
            len: bytes.len() as u64 / 4,
            bytes: bytes.into(),
        });
        f
    }

    /// `ir("k", 1)` with one statement built at `at`.
    fn at_line(at: &'static std::panic::Location<'static>) -> FunctionIr {
        let mut f = ir("k", 1);
        f.lines.stmts.push(Some(at));
        f
    }

    #[test]
    fn source_lines_are_in_the_key_only_with_lineinfo() {
        let (a, b) = (
            at_line(std::panic::Location::caller()),
            at_line(std::panic::Location::caller()),
        );
        assert_eq!(a, b, "the IR's Eq ignores source lines");
        let off = PtxOptions::for_cc(7, 5).lineinfo(false);
        let on = off.clone().lineinfo(true);
        assert_eq!(key_with(&a, &off, "none"), key_with(&b, &off, "none"));
        assert_eq!(
            key_with(&a, &off, "none"),
            key_with(&ir("k", 1), &off, "none")
        );
        assert_ne!(key_with(&a, &on, "none"), key_with(&b, &on, "none"));
        assert_eq!(key_with(&a, &on, "none"), key_with(&a.clone(), &on, "none"));
        assert_eq!(loaded::hash(&a, &off), loaded::hash(&b, &off));
        assert_ne!(loaded::hash(&a, &on), loaded::hash(&b, &on));
        assert!(!super::super::srcloc::same_tree_lines(&a, &b));
        assert!(super::super::srcloc::same_tree_lines(&a, &a.clone()));
    }

    fn with_link(data: &[u8]) -> FunctionIr {
        let mut f = ir("k", 1);
        f.links.push(crate::ir::LinkData {
            kind: super::super::extern_fn::LinkKind::Ptx,
            name: "x.ptx".into(),
            data: data.into(),
        });
        f
    }

    #[test]
    fn keys_follow_everything_that_changes_the_ptx() {
        let o = PtxOptions::for_cc(7, 5);
        let base = key_with(&ir("k", 1), &o, "none");
        assert_eq!(base, key_with(&ir("k", 1), &o, "none"), "deterministic");
        let others = [
            key_with(&ir("k", 2), &o, "none"),
            key_with(&ir("j", 1), &o, "none"),
            key_with(&ir("k", 1), &PtxOptions::for_cc(9, 0), "none"),
            key_with(&ir("k", 1), &o.clone().fastmath(true), "none"),
            key_with(
                &ir("k", 1),
                &PtxOptions {
                    opt: 1,
                    ..o.clone()
                },
                "none",
            ),
            key_with(
                &ir("k", 1),
                &PtxOptions {
                    debug: true,
                    ..o.clone()
                },
                "none",
            ),
            key_with(
                &ir("k", 1),
                &PtxOptions {
                    lineinfo: true,
                    ..o.clone()
                },
                "none",
            ),
            key_with(&ir("k", 1), &o, "libdevice=a"),
            key_with(&with_const(&[1, 2, 3, 4]), &o, "none"),
            key_with(&with_const(&[1, 2, 3, 5]), &o, "none"),
            key_with(&with_link(b"// a"), &o, "none"),
            key_with(&with_link(b"// b"), &o, "none"),
        ];
        assert_ne!(others[8], others[9], "constant data is part of the key");
        assert_ne!(others[10], others[11], "linked code is part of the key");
        for (i, k) in others.iter().enumerate() {
            assert_ne!(*k, base, "variant {i}");
        }
        let all = super::super::ptx_fix::WorkaroundSet::ALL;
        assert_eq!(base, key_with_workarounds(&ir("k", 1), &o, "none", all));
        assert_ne!(
            base,
            key_with_workarounds(&ir("k", 1), &o, "none", all.without(4)),
            "the workaround set is part of the key"
        );
        let driver = crate::context::DriverVersion {
            major: 13,
            minor: 0,
        };
        assert_eq!(
            base,
            key_with(&ir("k", 1), &o.clone().driver(Some(driver)), "none"),
            "a driver that needs every workaround shares the entries of an unknown one"
        );
    }

    #[test]
    fn memory_then_disk_then_compile() {
        let dir = std::env::temp_dir().join(format!("cudajit-cache-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let disk = DiskCache::new(dir.clone());
        let key = key_with(&ir("unit_probe", 42), &PtxOptions::for_cc(7, 5), "unit");
        let compiles = std::cell::Cell::new(0);
        let compile = || {
            compiles.set(compiles.get() + 1);
            Ok::<_, Error>("// ptx".to_string())
        };
        let p = lookup_or_compile(key, "unit_probe", Some(&disk), compile).unwrap();
        assert_eq!(&*p, "// ptx");
        lookup_or_compile(key, "unit_probe", Some(&disk), compile).unwrap();
        assert_eq!(compiles.get(), 1, "the second is a memory hit");
        MEMORY.lock().clear();
        let p = lookup_or_compile(key, "unit_probe", Some(&disk), compile).unwrap();
        assert_eq!((&*p, compiles.get()), ("// ptx", 1), "a disk hit");
        assert!(MEMORY.lock().get(&key).is_some(), "disk hits fill memory");
        // Compile errors are returned and not cached.
        let other = key_with(&ir("unit_probe", 43), &PtxOptions::for_cc(7, 5), "unit");
        let err = lookup_or_compile(other, "unit_probe", Some(&disk), || Err(Error::usage("no")));
        assert!(err.is_err());
        assert!(!disk.path_for(&other).exists());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A file planted in the cache directory with a valid header and an old-style FNV checksum
    /// (no MAC of the directory's key) is never handed to the caller: the kernel is compiled
    /// again and the file replaced.
    #[test]
    fn planted_file_is_compiled_again_not_used() {
        let dir = std::env::temp_dir().join(format!("cudajit-cache-plant-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let disk = DiskCache::new(dir.clone());
        let key = key_with(&ir("plant_probe", 7), &PtxOptions::for_cc(7, 5), "unit");
        let real = "// the real ptx";
        let compiles = std::cell::Cell::new(0);
        let compile = || {
            compiles.set(compiles.get() + 1);
            Ok::<_, Error>(real.to_string())
        };
        lookup_or_compile(key, "plant_probe", Some(&disk), compile).unwrap();
        let planted = "// planted ptx";
        for format in [1, disk::FORMAT] {
            let file = format!(
                "{} {format} {} {} {} {:016x}\n{planted}",
                disk::MAGIC,
                disk::VERSION,
                key.hex(),
                planted.len(),
                hash::fnv1a64(planted.as_bytes())
            );
            std::fs::write(disk.path_for(&key), file).unwrap();
            MEMORY.lock().clear();
            let before = compiles.get();
            let got = lookup_or_compile(key, "plant_probe", Some(&disk), compile).unwrap();
            assert_eq!(
                &*got, real,
                "format {format}: the planted PTX never reaches the caller"
            );
            assert_eq!(compiles.get(), before + 1, "compiled again");
            let file = std::fs::read_to_string(disk.path_for(&key)).unwrap();
            assert!(file.ends_with(real), "replaced: {file}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    /// `CUDAJIT_CACHE_TRUST` comes through the same environment lookup as the directory.
    #[test]
    fn trust_opt_in_from_the_environment_lookup() {
        let d = disk_cache_from_env(env(&[
            ("CUDAJIT_CACHE_DIR", "/c"),
            ("CUDAJIT_CACHE_TRUST", "1"),
        ]))
        .unwrap();
        assert_eq!(d.policy(), trust::Policy::Unchecked);
        let d = disk_cache_from_env(env(&[("CUDAJIT_CACHE_DIR", "/c")])).unwrap();
        assert_eq!(d.policy(), trust::Policy::for_process(false));
        assert!(
            disk_cache_from_env(env(&[("CUDAJIT_CACHE", "0"), ("CUDAJIT_CACHE_TRUST", "1")]))
                .is_none()
        );
    }
}
