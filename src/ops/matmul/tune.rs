//! Autotuning of [`Matmul`](super::Matmul)'s configuration, with a persistent cache.
//!
//! On the first unpinned product of a *tuning key* — the device (name and compute capability),
//! the driver version, the cudajit version, the input and output types, the tf32 flag, the
//! operands' layouts and the shape class (M, N and K each rounded up to a power of two, capped
//! at 2^14; whether there is a batch) — each candidate configuration
//! ([`tune_candidates`](super::autotune::tune_candidates)) that is valid for the types and fits
//! the device's shared memory is compiled and timed with CUDA events on a scratch output (one
//! warm-up launch, then the median of [`TIMED_LAUNCHES`]; `autotune.rs` does the timing); the
//! fastest wins, and the user's product runs once, with it, on the user's C. This file holds
//! the keys, the tuning file and the process's winners.
//!
//! Winners are kept in a process-wide map and written to `<cache_dir>/matmul-tuning-v1.txt`
//! ([`matmul_tuning_file`]): one line per key, `key<TAB>config`, read once per process
//! (a line that does not parse is ignored and counted), written whole under a temporary name
//! and renamed into place (merged with what another process wrote meanwhile). The file in the
//! cache directory is read and written only when that directory passes the compile cache's
//! trust checks (`docs/CACHE.md`, "Trust": owned by the user, not writable by others, or
//! `CUDAJIT_CACHE_TRUST=1`), and read only when the file itself belongs to the user (checked on
//! the opened file). A tuning file shipped with a program (`CUDAJIT_MATMUL_TUNING_FILE`, or
//! [`load_matmul_tuning`]) is the user's own choice: it is read wherever it is, without those
//! checks; it is read only, and its entries take precedence. `CUDAJIT_MATMUL_TUNE=0` turns tuning off for the
//! process (known winners are still used); `CUDAJIT_CACHE=0` means nothing is written.
//! The simulator never tunes: its choice is [`MatmulConfig::choose`]'s.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::codegen::cache::{read_trusted_file, trusted_dir};
use crate::codegen::cache_dir;
use crate::context::Context;
use crate::error::{Error, Result};

use super::config::{Engine, MatmulConfig};

/// The file name of the tuning file in the cache directory.
pub const TUNING_FILE_NAME: &str = "matmul-tuning-v1.txt";

/// The first line of a tuning file.
const HEADER: &str = "# cudajit matmul tuning v1: key<TAB>config";

/// The format tag every key starts with.
const KEY_TAG: &str = "mm1";

/// Timed launches per candidate (after one warm-up); the median is kept.
pub const TIMED_LAUNCHES: usize = 3;

/// The largest bucket of M, N or K in a shape class.
const BUCKET_CAP: usize = 1 << 14;

/// What identifies a tuning result: the parts of [`TuneKey::line`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TuneKey {
    /// The device's name.
    pub device: String,
    /// Its compute capability.
    pub cc: (u32, u32),
    /// The driver's CUDA version, `major.minor`.
    pub driver: String,
    /// cudajit's version.
    pub version: String,
    /// The input type's name.
    pub input: &'static str,
    /// The output type's name.
    pub output: &'static str,
    /// tf32 allowed.
    pub tf32: bool,
    /// op(A), op(B), C row-major.
    pub layouts: (bool, bool, bool),
    /// The buckets of M, N, K.
    pub buckets: (usize, usize, usize),
    /// More than one product.
    pub batched: bool,
}

/// The bucket of a dimension: the next power of two, capped at 2^14 (1 for 0).
pub(crate) fn bucket(x: usize) -> usize {
    x.max(1)
        .checked_next_power_of_two()
        .unwrap_or(BUCKET_CAP)
        .min(BUCKET_CAP)
}

impl TuneKey {
    /// The key of a problem of `m × n × k` (`batch` of them).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: (&str, (u32, u32)),
        driver: &str,
        types: (&'static str, &'static str),
        tf32: bool,
        layouts: (bool, bool, bool),
        (m, n, k): (usize, usize, usize),
        batch: usize,
    ) -> TuneKey {
        TuneKey {
            device: device.0.to_string(),
            cc: device.1,
            driver: driver.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            input: types.0,
            output: types.1,
            tf32,
            layouts,
            buckets: (bucket(m), bucket(n), bucket(k)),
            batched: batch > 1,
        }
    }

    /// The key as one field of a tuning file's line (no tab, no newline).
    pub fn line(&self) -> String {
        let l = |row: bool| if row { 'r' } else { 'c' };
        let dev: String = self
            .device
            .chars()
            .map(|c| if c.is_control() || c == '|' { ' ' } else { c })
            .collect();
        format!(
            "{KEY_TAG}|{}|sm_{}{}|drv {}|cudajit {}|{}>{}|tf32 {}|{}{}{}|m{} n{} k{}|batch {}",
            dev.trim(),
            self.cc.0,
            self.cc.1,
            self.driver,
            self.version,
            self.input,
            self.output,
            u8::from(self.tf32),
            l(self.layouts.0),
            l(self.layouts.1),
            l(self.layouts.2),
            self.buckets.0,
            self.buckets.1,
            self.buckets.2,
            u8::from(self.batched),
        )
    }
}

/// A configuration as a tuning file writes it: `simt 128x128x8 8x8 s2`.
pub(crate) fn config_to_text(c: &MatmulConfig) -> String {
    let e = match c.engine {
        Engine::Simt => "simt",
        Engine::Mma => "mma",
        Engine::Wgmma => "wgmma",
        Engine::WgmmaWs => "wgmma_ws",
    };
    let mut cluster = if c.cluster_m > 1 {
        format!(" c{}", c.cluster_m)
    } else {
        String::new()
    };
    if c.split_k > 1 {
        cluster += &format!(" k{}", c.split_k);
    }
    format!(
        "{e} {}x{}x{} {}x{} s{}{cluster}",
        c.block_m, c.block_n, c.block_k, c.sub_m, c.sub_n, c.stages
    )
}

/// Parses [`config_to_text`]'s form; `None` for anything else.
pub(crate) fn config_from_text(s: &str) -> Option<MatmulConfig> {
    let mut it = s.split_whitespace();
    let engine = match it.next()? {
        "simt" => Engine::Simt,
        "mma" => Engine::Mma,
        "wgmma" => Engine::Wgmma,
        "wgmma_ws" => Engine::WgmmaWs,
        _ => return None,
    };
    let nums = |t: &str, n: usize| -> Option<Vec<u32>> {
        let v: Vec<u32> = t
            .split('x')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == n).then_some(v)
    };
    let b = nums(it.next()?, 3)?;
    let sub = nums(it.next()?, 2)?;
    let stages: u32 = it.next()?.strip_prefix('s')?.parse().ok()?;
    let (mut cluster_m, mut split_k) = (1, 1);
    for t in it {
        if let Some(c) = t.strip_prefix('c') {
            cluster_m = c.parse().ok()?;
        } else {
            split_k = t.strip_prefix('k')?.parse().ok()?;
        }
    }
    Some(MatmulConfig {
        engine,
        block_m: b[0],
        block_n: b[1],
        block_k: b[2],
        sub_m: sub[0],
        sub_n: sub[1],
        stages,
        cluster_m,
        split_k,
    })
}

/// The entries of a tuning file's text, and how many lines were ignored (not a header or
/// comment, and not `key<TAB>config` with a key of this format and a configuration that
/// parses).
pub(crate) fn parse_file(text: &str) -> (HashMap<String, MatmulConfig>, u64) {
    let mut map = HashMap::new();
    let mut bad = 0;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed = line.split_once('\t').and_then(|(k, c)| {
            let ok = k.starts_with(KEY_TAG) && k.as_bytes().get(KEY_TAG.len()) == Some(&b'|');
            Some((k, config_from_text(c)?)).filter(|_| ok)
        });
        match parsed {
            Some((k, c)) => {
                map.insert(k.to_string(), c);
            }
            None => bad += 1,
        }
    }
    (map, bad)
}

/// The text of a tuning file holding `entries` (sorted by key).
pub(crate) fn file_text(entries: &HashMap<String, MatmulConfig>) -> String {
    let mut keys: Vec<&String> = entries.keys().collect();
    keys.sort();
    let mut out = String::from(HEADER);
    out.push('\n');
    for k in keys {
        out.push_str(k);
        out.push('\t');
        out.push_str(&config_to_text(&entries[k]));
        out.push('\n');
    }
    out
}

/// Writes `entries` to `path` atomically: merged with the entries the file holds now (ours
/// win), written under a temporary name in the same directory (made if missing), renamed into
/// place.
pub(crate) fn write_file(path: &Path, entries: &HashMap<String, MatmulConfig>) -> Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let io = |e: std::io::Error| Error::usage(format!("matmul tuning file {path:?}: {e}"));
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    // Another user's file is not merged (it is replaced).
    let mut all = read_trusted_file(path)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(|t| parse_file(&t).0)
        .unwrap_or_default();
    all.extend(entries.iter().map(|(k, v)| (k.clone(), *v)));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| TUNING_FILE_NAME.into());
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let r = std::fs::write(&tmp, file_text(&all)).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.map_err(io)
}

/// Counters of the process's matrix-multiply tuning ([`matmul_tuning_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatmulTuningStats {
    /// Keys tuned (timed) in this process.
    pub tunings: u64,
    /// Kernel launches made to time candidates (warm-ups included).
    pub tuning_launches: u64,
    /// Candidates skipped because they failed to compile, load or launch.
    pub candidates_skipped: u64,
    /// Products whose configuration came from a known winner (memory, disk or shipped file).
    pub hits: u64,
    /// Entries read from the tuning file in the cache directory.
    pub file_entries: u64,
    /// Entries read from shipped tuning files.
    pub shipped_entries: u64,
    /// Lines of tuning files ignored (corrupt, or of another format).
    pub ignored_lines: u64,
    /// Times the tuning file was written.
    pub writes: u64,
    /// Failed writes (after the first, the process stops writing).
    pub write_errors: u64,
}

/// The process's tuning state.
#[derive(Default)]
struct Store {
    /// Winners tuned here or read from the cache directory's file.
    learned: HashMap<String, MatmulConfig>,
    /// Winners of shipped files (precedence over `learned`).
    shipped: HashMap<String, MatmulConfig>,
    /// The cache directory's file has been read.
    read_disk: bool,
    /// The environment's shipped file has been read.
    read_env: bool,
    /// A write failed: no more writes.
    no_writes: bool,
    stats: MatmulTuningStats,
}

fn store() -> std::sync::MutexGuard<'static, Store> {
    static STORE: OnceLock<Mutex<Store>> = OnceLock::new();
    let mut s = STORE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if !s.read_env {
        s.read_env = true;
        if let Some(p) = std::env::var_os("CUDAJIT_MATMUL_TUNING_FILE").filter(|v| !v.is_empty()) {
            if let Err(e) = load_into(&mut s, Path::new(&p)) {
                log_line(format_args!("{e}"));
            }
        }
    }
    if !s.read_disk {
        s.read_disk = true;
        if let Some(dir) = trusted_dir(false) {
            if let Some(text) = read_cache_dir_file(&dir.join(TUNING_FILE_NAME)) {
                let (map, bad) = parse_file(&text);
                s.stats.file_entries += map.len() as u64;
                s.stats.ignored_lines += bad;
                for (k, v) in map {
                    s.learned.entry(k).or_insert(v);
                }
            }
        }
    }
    s
}

/// The text of the tuning file in the (trusted) cache directory, if it belongs to the user (or
/// `CUDAJIT_CACHE_TRUST=1`); a file of another user is ignored, with a log line.
fn read_cache_dir_file(path: &Path) -> Option<String> {
    match read_trusted_file(path) {
        Ok(bytes) => String::from_utf8(bytes).ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            log_line(format_args!("{e}"));
            None
        }
    }
}

/// Reads a tuning file the user named (`CUDAJIT_MATMUL_TUNING_FILE`, [`load_matmul_tuning`]):
/// the user's choice, so without the cache directory's trust checks.
fn load_into(s: &mut Store, path: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("matmul tuning file {path:?}: {e}")))?;
    let (map, bad) = parse_file(&text);
    s.stats.shipped_entries += map.len() as u64;
    s.stats.ignored_lines += bad;
    let n = map.len();
    s.shipped.extend(map);
    Ok(n)
}

/// One stderr line when `CUDAJIT_LOG_CACHE=1`.
pub(crate) fn log_line(args: std::fmt::Arguments<'_>) {
    if crate::codegen::cache::logging() {
        eprintln!("cudajit matmul tuning: {args}");
    }
}

/// Where this process writes tuning winners: `<cache_dir>/matmul-tuning-v1.txt`, or `None`
/// when the disk cache is off (`CUDAJIT_CACHE=0`) or has no directory.
pub fn matmul_tuning_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join(TUNING_FILE_NAME))
}

/// Reads a tuning file shipped with a program (as `CUDAJIT_MATMUL_TUNING_FILE` does): its
/// entries take precedence over tuned ones and are never written back. Returns how many
/// entries it held; lines that do not parse are ignored (and counted in
/// [`matmul_tuning_stats`]). Errors if the file cannot be read. Naming the file is the
/// caller's choice: unlike the tuning file in the cache directory, it is read whoever owns it
/// (its entries are still checked, as any configuration, before they are used).
pub fn load_matmul_tuning(path: impl AsRef<Path>) -> Result<usize> {
    let mut s = store();
    load_into(&mut s, path.as_ref())
}

/// The counters of this process's matrix-multiply tuning.
pub fn matmul_tuning_stats() -> MatmulTuningStats {
    store().stats
}

/// Whether `CUDAJIT_MATMUL_TUNE` allows tuning (read once per process).
pub(crate) fn tuning_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !env_off(std::env::var_os("CUDAJIT_MATMUL_TUNE")))
}

fn env_off(v: Option<OsString>) -> bool {
    v.is_some_and(|v| {
        matches!(
            v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref(),
            Some("0" | "off" | "false" | "no")
        )
    })
}

/// The known winner of `key` (a shipped one first), counted as a hit.
pub(crate) fn lookup(key: &str) -> Option<MatmulConfig> {
    let mut s = store();
    let c = s.shipped.get(key).or_else(|| s.learned.get(key)).copied();
    if c.is_some() {
        s.stats.hits += 1;
    }
    c
}

/// Records the winner of `key` and writes the file (unless writes are off).
pub(crate) fn record(key: String, cfg: MatmulConfig) {
    let mut s = store();
    s.stats.tunings += 1;
    s.learned.insert(key.clone(), cfg);
    if s.no_writes {
        return;
    }
    let Some(path) = matmul_tuning_file() else {
        return;
    };
    if trusted_dir(true).is_none() {
        // Not trusted (warned once by the compile cache), or it cannot be made.
        s.no_writes = true;
        log_line(format_args!(
            "the cache directory is not usable; winners are kept in memory only"
        ));
        return;
    }
    let one: HashMap<String, MatmulConfig> = [(key, cfg)].into_iter().collect();
    match write_file(&path, &one) {
        Ok(()) => s.stats.writes += 1,
        Err(e) => {
            s.stats.write_errors += 1;
            s.no_writes = true;
            log_line(format_args!("{e}; winners are kept in memory only"));
        }
    }
}

/// Counts tuning launches and skipped candidates.
pub(crate) fn count(launches: u64, skipped: u64) {
    let mut s = store();
    s.stats.tuning_launches += launches;
    s.stats.candidates_skipped += skipped;
}

/// Notes a skipped candidate (with `CUDAJIT_LOG_CACHE=1`).
pub(crate) fn note_skip(cfg: &MatmulConfig, why: &Error) {
    log_line(format_args!("skipped {}: {why}", config_to_text(cfg)));
}

/// The device part of a key for `ctx`'s device: name, compute capability, driver version
/// (queried once per device ordinal).
pub(crate) fn device_id(ctx: &Context) -> Result<(String, (u32, u32), String)> {
    type Ids = Mutex<HashMap<usize, (String, (u32, u32), String)>>;
    static IDS: OnceLock<Ids> = OnceLock::new();
    let dev = ctx.device();
    let mut ids = IDS
        .get_or_init(Ids::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(id) = ids.get(&dev.ordinal()) {
        return Ok(id.clone());
    }
    let id = (
        dev.name()?,
        dev.compute_capability()?,
        crate::context::driver_version()?.to_string(),
    );
    ids.insert(dev.ordinal(), id.clone());
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TuneKey {
        TuneKey::new(
            ("NVIDIA H100 80GB HBM3", (9, 0)),
            "13.0",
            ("f16", "f32"),
            false,
            (true, true, true),
            (1000, 4096, 300),
            1,
        )
    }

    #[test]
    fn buckets() {
        assert_eq!(bucket(0), 1);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket(1000), 1024);
        assert_eq!(bucket(1024), 1024);
        assert_eq!(bucket(1025), 2048);
        assert_eq!(bucket(1 << 20), BUCKET_CAP);
        assert_eq!(bucket(usize::MAX), BUCKET_CAP);
    }

    #[test]
    fn every_part_changes_the_key() {
        let base = key();
        let line = base.line();
        assert!(!line.contains('\t') && !line.contains('\n'));
        assert!(line.starts_with("mm1|NVIDIA H100 80GB HBM3|sm_90|drv 13.0|"));
        let mut variants = Vec::new();
        let mut k = base.clone();
        k.device = "NVIDIA H200".into();
        variants.push(k);
        let mut k = base.clone();
        k.cc = (8, 0);
        variants.push(k);
        let mut k = base.clone();
        k.driver = "12.8".into();
        variants.push(k);
        let mut k = base.clone();
        k.version = "9.9.9".into();
        variants.push(k);
        let mut k = base.clone();
        k.input = "bf16";
        variants.push(k);
        let mut k = base.clone();
        k.output = "f16";
        variants.push(k);
        let mut k = base.clone();
        k.tf32 = true;
        variants.push(k);
        for l in [
            (false, true, true),
            (true, false, true),
            (true, true, false),
        ] {
            let mut k = base.clone();
            k.layouts = l;
            variants.push(k);
        }
        for b in [(2048, 4096, 512), (1024, 2048, 512), (1024, 4096, 256)] {
            let mut k = base.clone();
            k.buckets = b;
            variants.push(k);
        }
        let mut k = base.clone();
        k.batched = true;
        variants.push(k);
        let mut lines: Vec<String> = variants.iter().map(TuneKey::line).collect();
        lines.push(line.clone());
        let n = lines.len();
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), n, "every part of the key changes it");
        // Same class, same key.
        let same = TuneKey::new(
            ("NVIDIA H100 80GB HBM3", (9, 0)),
            "13.0",
            ("f16", "f32"),
            false,
            (true, true, true),
            (513, 4000, 257),
            1,
        );
        assert_eq!(same.line(), line);
        // Control characters and '|' in a device name cannot break the line.
        let mut odd = base;
        odd.device = "a\tb\nc|d".into();
        let l = odd.line();
        assert!(!l.contains('\t') && !l.contains('\n'));
        assert!(l.starts_with("mm1|a b c d|"));
    }

    #[test]
    fn configs_round_trip_as_text() {
        for c in [
            MatmulConfig::simt(128, 128, 8, 8, 8),
            MatmulConfig::mma(64, 128, 32, 32, 64).with_stages(1),
            MatmulConfig::wgmma(128, 256, 64, 4),
            MatmulConfig::wgmma(128, 128, 64, 4).with_split_k(8),
            MatmulConfig::wgmma_ws(128, 128, 64, 5)
                .with_cluster_m(2)
                .with_split_k(2),
        ] {
            assert_eq!(config_from_text(&config_to_text(&c)), Some(c));
        }
        assert_eq!(
            config_to_text(&MatmulConfig::wgmma(128, 128, 64, 4).with_split_k(4)),
            "wgmma 128x128x64 64x128 s4 k4"
        );
        assert_eq!(
            config_to_text(&MatmulConfig::simt(64, 64, 8, 4, 4)),
            "simt 64x64x8 4x4 s2"
        );
        for bad in [
            "",
            "simt",
            "simt 64x64 4x4 s2",
            "simt 64x64x8 4x4 2",
            "tcgen05 64x64x8 4x4 s2",
            "simt 64x64x8 4x4 s2 extra",
            "simt -1x64x8 4x4 s2",
        ] {
            assert_eq!(config_from_text(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn file_round_trip_and_corrupt_lines() {
        let mut m = HashMap::new();
        m.insert(key().line(), MatmulConfig::mma(128, 128, 32, 64, 64));
        let mut k2 = key();
        k2.batched = true;
        m.insert(k2.line(), MatmulConfig::simt(64, 64, 8, 4, 4));
        let text = file_text(&m);
        assert!(text.starts_with(HEADER));
        assert_eq!(parse_file(&text), (m.clone(), 0));
        // Garbage, a foreign key, a bad configuration, a line without a tab, a truncated line.
        let corrupt = format!(
            "{text}garbage\nother|x\tsimt 64x64x8 4x4 s2\n{}\tsimt 64x\n{}\n\0\u{fffd}\n\n# a comment\n",
            key().line(),
            key().line()
        );
        let (got, bad) = parse_file(&corrupt);
        assert_eq!(got, m);
        assert_eq!(bad, 5);
    }

    #[test]
    fn atomic_write_merges_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!(
            "cudajit-mm-tune-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub").join(TUNING_FILE_NAME);
        let a: HashMap<_, _> = [(key().line(), MatmulConfig::simt(64, 64, 8, 4, 4))].into();
        write_file(&path, &a).unwrap();
        let mut k2 = key();
        k2.tf32 = true;
        let b: HashMap<_, _> = [(k2.line(), MatmulConfig::simt(128, 128, 8, 8, 8))].into();
        write_file(&path, &b).unwrap();
        let (got, bad) = parse_file(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(bad, 0);
        assert_eq!(got.len(), 2, "the second write keeps the first's entry");
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec![TUNING_FILE_NAME.to_string()],
            "no temporary left"
        );
        // A corrupt file is replaced by a whole one on the next write.
        std::fs::write(&path, "\u{0}\u{1}garbage\n").unwrap();
        write_file(&path, &a).unwrap();
        assert_eq!(
            parse_file(&std::fs::read_to_string(&path).unwrap()),
            (a.clone(), 0)
        );
        // An unwritable place is an error, not a panic.
        let blocked = path.join("under-a-file").join(TUNING_FILE_NAME);
        assert!(write_file(&blocked, &a).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A tuning file in the cache directory that another user made is neither read nor merged
    /// into the next write (which replaces it). Needs root (to give the file away).
    #[cfg(unix)]
    #[test]
    fn tuning_file_of_another_user_is_not_read() {
        let root = crate::codegen::cache::effective_uid() == 0;
        if !root || std::env::var_os("CUDAJIT_CACHE_TRUST").is_some() {
            eprintln!("note: not root (or CUDAJIT_CACHE_TRUST is set): test skipped");
            return;
        }
        let dir = std::env::temp_dir().join(format!(
            "cudajit-mm-tune-owner-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(TUNING_FILE_NAME);
        let a: HashMap<_, _> = [(key().line(), MatmulConfig::simt(64, 64, 8, 4, 4))].into();
        write_file(&path, &a).unwrap();
        assert!(read_cache_dir_file(&path).is_some(), "ours is read");
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        assert_eq!(read_cache_dir_file(&path), None, "another user's is not");
        let mut k2 = key();
        k2.tf32 = true;
        let b: HashMap<_, _> = [(k2.line(), MatmulConfig::simt(128, 128, 8, 8, 8))].into();
        write_file(&path, &b).unwrap();
        let (got, _) = parse_file(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(got, b, "the other user's entries are not merged");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn env_switch() {
        assert!(env_off(Some("0".into())));
        assert!(env_off(Some(" OFF ".into())));
        assert!(!env_off(Some("1".into())));
        assert!(!env_off(None));
    }
}
