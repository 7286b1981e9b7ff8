//! cudajit's side of the benchmark against torch, CuPy and numba-cuda (`benches/peers.py` times
//! the peers; `scripts/bench.sh` runs both and prints one table of ratios). See
//! `docs/BENCHMARKS.md` for what every row measures.
//!
//! ```text
//! bench [--quick] [--only w1,w2] [--reps N] [--sweep] [--ew U,BPS,BLOCK] [--list]
//!       [--emit-ptx DIR] [FILTER]
//! ```
//!
//! Prints one JSON object per line on stdout, the format `peers.py` prints:
//! `{"work": "add", "size": "2^28 f32", "impl": "cudajit", "ms": 0.74, "bytes": 3221225472, ...}`;
//! a workload that fails prints a line with `"error"` and the run goes on. Device work is timed
//! with CUDA events around each repetition (median of `--reps`, at least 20 by default, after
//! warm-up); every workload draws fresh random inputs and checks its result against the host
//! before it is timed. Exits 1 only when there is no device (or a bad argument).
//!
//! The implementations under test are in `mod ours`: kernels written with the builder for now,
//! to be swapped for `cudajit::ops` calls when those land.
//!
//! Built as a bench target (`[[bench]] name = "bench" harness = false`), so the GPU bundle
//! carries it as `bin/bench-bench`; `bash run.sh --only benches` passes `--bench`, ignored here.
#![cfg_attr(test, allow(dead_code))]

#[path = "bench/runtime.rs"]
mod runtime;

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use cudajit::codegen::{select, Expr, Kernel, KernelBuilder, PtxOptions, Slice, SliceMut, Var};
use cudajit::prelude::*;
use ndarray::Ix1;

/// Rows measuring cudajit's library operations (`cudajit::ops`): the "cudajit" column.
const LIB_IMPL: &str = "cudajit";
/// Rows measuring this benchmark's hand-written builder kernels (a reference for the library).
const KERNEL_IMPL: &str = "cudajit-kernel";

/// A 1-D device array.
type A1<T> = DeviceArray<T, Ix1>;
/// Errors of this program: a message.
type Res<T> = std::result::Result<T, String>;

/// Every workload, in run order (the names `peers.py` uses too).
const WORKS: &[&str] = &[
    "copy",
    "add",
    "axpy",
    "chain",
    "add_f64",
    "bcast_add",
    "sum",
    "max",
    "argmax",
    "row_sum",
    "col_sum",
    "scan",
    "scan_i32",
    "launch",
    "compile_cold",
    "compile_cached",
    "compile_new_process",
    "graph",
    "pool",
    "h2d_pinned",
    "d2h_pinned",
    "h2d_pageable",
    "d2h_pageable",
];

/// Entry point (public so that an example can reuse this file as a module).
pub fn main() -> ExitCode {
    let opts = match Opts::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.starts_with("usage:") => {
            println!("{e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    };
    if opts.list {
        for w in WORKS {
            println!("{w}");
        }
        return ExitCode::SUCCESS;
    }
    if let Some(dir) = &opts.emit_ptx {
        return match emit_ptx(dir, opts.ew) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Ok(spec) = std::env::var(runtime::CHILD_ENV) {
        return match runtime::new_process_child(&spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench (new process): {e}");
                ExitCode::FAILURE
            }
        };
    }
    // A fresh, empty disk cache for every kernel of this run, set before the first compile
    // (the cache reads its environment once): `compile_cold` must compile.
    let cache_dir = std::env::temp_dir().join(format!("cudajit-bench-{:x}", nonce()));
    std::env::set_var("CUDAJIT_CACHE_DIR", &cache_dir);
    std::env::remove_var("CUDAJIT_CACHE");
    let code = match Bench::new(opts) {
        Ok(b) => {
            b.run_all();
            ExitCode::SUCCESS
        }
        Err(e) => {
            Rec::new("_env", "-").error(&e).emit();
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    };
    let _ = std::fs::remove_dir_all(&cache_dir);
    code
}

/// Writes every kernel's PTX for sm_90 to `dir/<name>.ptx` (no GPU needed: for ptxas checks
/// and reading the loads and stores).
fn emit_ptx(dir: &std::path::Path, ew: ours::EwConfig) -> Res<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ops = ours::Ops::new(132, ew).map_err(|e| e.to_string())?;
    for (name, ptx) in ops
        .ptx_all(&PtxOptions::for_cc(9, 0))
        .map_err(|e| e.to_string())?
    {
        let p = dir.join(format!("{name}.ptx"));
        std::fs::write(&p, ptx).map_err(|e| format!("{}: {e}", p.display()))?;
        println!("{}", p.display());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Options and sizes.

/// Command-line options.
#[derive(Debug, Clone)]
struct Opts {
    quick: bool,
    only: Option<Vec<String>>,
    filter: Option<String>,
    reps: usize,
    warmup: usize,
    sweep: bool,
    list: bool,
    emit_ptx: Option<std::path::PathBuf>,
    ew: ours::EwConfig,
}

impl Opts {
    fn parse(args: impl Iterator<Item = String>) -> Res<Opts> {
        let mut o = Opts {
            quick: false,
            only: None,
            filter: None,
            reps: 0,
            warmup: 3,
            sweep: false,
            list: false,
            emit_ptx: None,
            ew: ours::EwConfig::default(),
        };
        let mut args = args;
        while let Some(a) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match a.as_str() {
                "--bench" => {} // cargo bench and the bundle's run.sh pass it
                "--quick" => o.quick = true,
                "--sweep" => o.sweep = true,
                "--list" => o.list = true,
                "--emit-ptx" => o.emit_ptx = Some(value("--emit-ptx")?.into()),
                "--only" => {
                    let v = value("--only")?;
                    let names: Vec<String> = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect();
                    if let Some(bad) = names.iter().find(|n| !WORKS.contains(&n.as_str())) {
                        return Err(format!("unknown work `{bad}` (--list names them)"));
                    }
                    o.only = Some(names);
                }
                "--reps" => {
                    o.reps = value("--reps")?
                        .parse()
                        .ok()
                        .filter(|&n: &usize| n > 0)
                        .ok_or("--reps needs a positive number")?
                }
                "--ew" => {
                    let v = value("--ew")?;
                    let p: Vec<u32> = v.split(',').filter_map(|s| s.parse().ok()).collect();
                    match p[..] {
                        [u, bps, block] if u > 0 && bps > 0 && block >= 32 && block % 32 == 0 => {
                            o.ew = ours::EwConfig {
                                unroll: u as u64,
                                blocks_per_sm: bps,
                                block,
                            }
                        }
                        _ => {
                            return Err(
                                "--ew takes UNROLL,BLOCKS_PER_SM,BLOCK (e.g. 4,8,256)".into()
                            )
                        }
                    }
                }
                "-h" | "--help" => {
                    return Err(
                        "usage: bench [--quick] [--only w1,w2] [--reps N] [--sweep] \
                         [--ew U,BPS,BLOCK] [--list] [--emit-ptx DIR] [FILTER]"
                            .into(),
                    )
                }
                s if s.starts_with('-') => return Err(format!("unknown option {s}")),
                s => o.filter = Some(s.to_string()),
            }
        }
        if o.reps == 0 {
            o.reps = if o.quick { 5 } else { 20 };
        }
        if o.quick {
            o.warmup = 1;
        }
        Ok(o)
    }

    fn selected(&self, work: &str) -> bool {
        self.only
            .as_ref()
            .map_or(true, |l| l.iter().any(|w| w == work))
            && self
                .filter
                .as_ref()
                .map_or(true, |f| work.contains(f.as_str()))
    }
}

/// The problem sizes (`peers.py` uses the same ones and the same size labels).
struct Sizes {
    /// f32 elements of the 1-D workloads.
    n: usize,
    /// f64 elements of `add_f64`.
    n64: usize,
    /// Rows and columns of the matrices.
    mat: usize,
    /// f32 elements of each host<->device transfer.
    xfer: usize,
    /// Launches per repetition of `launch`.
    launches: u32,
    /// Kernels built per row of `compile_*`.
    compiles: usize,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                n: 1 << 22,
                n64: 1 << 21,
                mat: 2048,
                xfer: 1 << 24,
                launches: 1000,
                compiles: 3,
            }
        } else {
            Sizes {
                n: 1 << 28,
                n64: 1 << 27,
                mat: 16384,
                xfer: 1 << 28,
                launches: 10_000,
                compiles: 7,
            }
        }
    }
}

/// `2^28 f32` for powers of two, else the number.
fn size_1d(n: usize, ty: &str) -> String {
    if n.is_power_of_two() {
        format!("2^{} {ty}", n.trailing_zeros())
    } else {
        format!("{n} {ty}")
    }
}

/// `1 GiB`, `64 MiB`.
fn size_bytes(b: usize) -> String {
    if b >= 1 << 30 && b % (1 << 30) == 0 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// The constant of the `compile` rows' kernel `i`.
fn compile_constant(i: usize) -> f32 {
    1.0 + i as f32 * 1e-3
}

/// The name of the `compile` rows' kernel `i` of the run tagged `tag`.
fn compile_name(tag: u64, i: usize) -> String {
    format!("compile_{tag:x}_{i}")
}

fn nonce() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    splitmix(t ^ ((std::process::id() as u64) << 32))
}

// ---------------------------------------------------------------------------------------------
// JSON lines.

/// One output line: a measurement or an error.
struct Rec {
    work: String,
    size: String,
    imp: String,
    variant: Option<String>,
    ms: Option<f64>,
    min_ms: Option<f64>,
    max_ms: Option<f64>,
    reps: Option<usize>,
    bytes: Option<u64>,
    unit: Option<&'static str>,
    note: Option<String>,
    error: Option<String>,
}

impl Rec {
    fn new(work: &str, size: &str) -> Rec {
        Rec {
            work: work.into(),
            size: size.into(),
            imp: LIB_IMPL.into(),
            variant: None,
            ms: None,
            min_ms: None,
            max_ms: None,
            reps: None,
            bytes: None,
            unit: None,
            note: None,
            error: None,
        }
    }
    fn imp(mut self, i: &str) -> Rec {
        self.imp = i.into();
        self
    }
    fn variant(mut self, v: impl Into<String>) -> Rec {
        self.variant = Some(v.into());
        self
    }
    /// The median of `times` (ms), with their min, max and count.
    fn times(mut self, times: &[f64]) -> Rec {
        self.ms = Some(median(times));
        self.min_ms = times.iter().copied().reduce(f64::min);
        self.max_ms = times.iter().copied().reduce(f64::max);
        self.reps = Some(times.len());
        self
    }
    fn bytes(mut self, b: usize) -> Rec {
        self.bytes = Some(b as u64);
        self
    }
    fn unit(mut self, u: &'static str) -> Rec {
        self.unit = Some(u);
        self
    }
    fn note(mut self, n: impl Into<String>) -> Rec {
        self.note = Some(n.into());
        self
    }
    fn error(mut self, e: &str) -> Rec {
        self.error = Some(e.into());
        self
    }

    fn emit(&self) {
        let mut s = String::from("{");
        let mut field = |k: &str, v: String| {
            if s.len() > 1 {
                s.push_str(", ");
            }
            s.push_str(&json_str(k));
            s.push_str(": ");
            s.push_str(&v);
        };
        field("work", json_str(&self.work));
        field("size", json_str(&self.size));
        field("impl", json_str(&self.imp));
        let num = |v: f64| {
            if v.is_finite() {
                format!("{v:.6}")
            } else {
                "null".into()
            }
        };
        if let Some(v) = &self.variant {
            field("variant", json_str(v));
        }
        if let Some(v) = self.ms {
            field("ms", num(v));
        }
        if let Some(v) = self.min_ms {
            field("min_ms", num(v));
        }
        if let Some(v) = self.max_ms {
            field("max_ms", num(v));
        }
        if let Some(v) = self.reps {
            field("reps", v.to_string());
        }
        if let Some(v) = self.bytes {
            field("bytes", v.to_string());
        }
        if let Some(v) = self.unit {
            field("unit", json_str(v));
        }
        if let Some(v) = &self.note {
            field("note", json_str(v));
        }
        if let Some(v) = &self.error {
            field("error", json_str(v));
        }
        s.push('}');
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{s}");
        let _ = out.flush();
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

// ---------------------------------------------------------------------------------------------
// Host data: random inputs and checks, in parallel on the host's cores.

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4)
        .min(32)
}

/// `v[i] = f(i)` for every `i`, on all cores.
fn par_fill<T: Send>(v: &mut [T], f: impl Fn(usize) -> T + Sync) {
    let chunk = v.len().div_ceil(threads()).max(1 << 16);
    let f = &f;
    std::thread::scope(|s| {
        for (c, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (k, x) in part.iter_mut().enumerate() {
                    *x = f(c * chunk + k);
                }
            });
        }
    });
}

/// Folds `body` over `0..n` on all cores and merges the per-thread results.
fn par_fold<R: Send>(
    n: usize,
    init: impl Fn() -> R + Sync,
    body: impl Fn(&mut R, usize) + Sync,
    merge: impl Fn(R, R) -> R,
) -> R {
    let chunk = n.div_ceil(threads()).max(1 << 16);
    let (init, body) = (&init, &body);
    let parts: Vec<R> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n.div_ceil(chunk))
            .map(|c| {
                s.spawn(move || {
                    let mut r = init();
                    for i in c * chunk..((c + 1) * chunk).min(n) {
                        body(&mut r, i);
                    }
                    r
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("a host thread panicked"))
            .collect()
    });
    parts.into_iter().fold(init(), merge)
}

/// `n` random f32 in `[lo, hi)` (24 random bits each).
fn rand_f32(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut v = vec![0f32; n];
    let s = splitmix(seed);
    par_fill(&mut v, |i| {
        let u = (splitmix(s ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)) >> 40) as f32
            * (1.0 / 16_777_216.0);
        lo + (hi - lo) * u
    });
    v
}

/// `n` random f64 in `[lo, hi)` (53 random bits each).
fn rand_f64(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut v = vec![0f64; n];
    let s = splitmix(seed);
    par_fill(&mut v, |i| {
        let u = (splitmix(s ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)) >> 11) as f64
            * (1.0 / 9_007_199_254_740_992.0);
        lo + (hi - lo) * u
    });
    v
}

/// Compares `got(i)` with `want(i)` for `i < n`: fails on any non-finite value (the output was
/// poisoned with NaN, so this also finds elements never written) or when
/// `‖got − want‖ / ‖want‖` exceeds `tol`.
fn check(
    what: &str,
    n: usize,
    got: impl Fn(usize) -> f64 + Sync,
    want: impl Fn(usize) -> f64 + Sync,
    tol: f64,
) -> Res<f64> {
    let (d2, r2, bad, first_bad) = par_fold(
        n,
        || (0f64, 0f64, 0usize, usize::MAX),
        |acc, i| {
            let (g, w) = (got(i), want(i));
            if !g.is_finite() {
                acc.2 += 1;
                acc.3 = acc.3.min(i);
            } else {
                acc.0 += (g - w) * (g - w);
                acc.1 += w * w;
            }
        },
        |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3.min(b.3)),
    );
    if bad > 0 {
        return Err(format!(
            "{what}: {bad} of {n} outputs not finite (unwritten?), first at {first_bad}"
        ));
    }
    let rel = if r2 > 0.0 {
        (d2 / r2).sqrt()
    } else {
        d2.sqrt()
    };
    if rel.is_nan() || rel > tol {
        return Err(format!(
            "{what}: relative error {rel:.3e} exceeds {tol:.0e}"
        ));
    }
    Ok(rel)
}

// ---------------------------------------------------------------------------------------------
// The benchmark.

struct Bench {
    ctx: Context,
    stream: Stream,
    sms: u32,
    opts: Opts,
    sizes: Sizes,
    seed: u64,
    ops: ours::Ops,
}

impl Bench {
    fn new(opts: Opts) -> Res<Bench> {
        let e = |e: cudajit::Error| e.to_string();
        let ctx = Context::new(0).map_err(e)?;
        let stream = ctx.new_stream().map_err(e)?;
        let dev = ctx.device();
        let sms = dev.multiprocessor_count().map_err(e)?;
        let (ma, mi) = dev.compute_capability().map_err(e)?;
        let drv = cudajit::driver_version()
            .map(|v| format!("{}.{}", v.major, v.minor))
            .unwrap_or_else(|_| "?".into());
        let seed = nonce();
        Rec::new("_env", "-")
            .note(format!(
                "{} (sm_{ma}{mi}, {sms} SMs, {:.0} GiB), driver CUDA {drv}, cudajit {}, {} host threads, seed {seed:x}{}",
                dev.name().map_err(e)?,
                dev.total_memory().map_err(e)? as f64 / (1u64 << 30) as f64,
                env!("CARGO_PKG_VERSION"),
                threads(),
                if opts.quick { ", --quick" } else { "" }
            ))
            .emit();
        let ops = ours::Ops::new(sms, opts.ew).map_err(e)?;
        Ok(Bench {
            ctx,
            stream,
            sms,
            sizes: Sizes::new(opts.quick),
            opts,
            seed,
            ops,
        })
    }

    fn run_all(&self) {
        type Work = fn(&Bench) -> Res<()>;
        let works: &[(&[&str], Work)] = &[
            (&["copy"], Bench::copy),
            (&["add"], Bench::add),
            (&["axpy"], Bench::axpy),
            (&["chain"], Bench::chain),
            (&["add_f64"], Bench::add_f64),
            (&["bcast_add"], Bench::bcast_add),
            (&["sum", "max"], Bench::sum_max),
            (&["argmax"], Bench::argmax),
            (&["row_sum", "col_sum"], Bench::axis_sums),
            (
                &[
                    "add",
                    "axpy",
                    "chain",
                    "add_f64",
                    "bcast_add",
                    "sum",
                    "max",
                    "argmax",
                    "row_sum",
                    "col_sum",
                ],
                Bench::library,
            ),
            (&["scan", "scan_i32"], Bench::scans),
            (&["launch"], Bench::launch),
            (
                &["compile_cold", "compile_cached", "compile_new_process"],
                Bench::compile,
            ),
            (&["graph"], Bench::graph),
            (&["pool"], Bench::pool),
            (
                &["h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"],
                Bench::transfers,
            ),
        ];
        for (names, f) in works {
            if !names.iter().any(|n| self.opts.selected(n)) {
                continue;
            }
            if let Err(e) = f(self) {
                // The work's own rows were not printed: one error row per selected name.
                for n in names.iter().filter(|n| self.opts.selected(n)) {
                    Rec::new(n, &self.size_of(n)).error(&e).emit();
                }
                eprintln!("bench: {}: {e}", names.join("/"));
            }
            // Errors raised while freeing this work's memory would otherwise stay hidden.
            for e in cudajit::take_drop_errors() {
                eprintln!("bench: error while freeing: {e}");
            }
        }
    }

    /// The size label of a work's rows.
    fn size_of(&self, work: &str) -> String {
        let s = &self.sizes;
        match work {
            "add_f64" => size_1d(s.n64, "f64"),
            "scan_i32" => size_1d(s.n, "i32"),
            "bcast_add" | "row_sum" | "col_sum" => format!("{}x{} f32", s.mat, s.mat),
            "launch" => "1 elem, 3 arrays".into(),
            "compile_cold" | "compile_cached" => "new kernel".into(),
            "compile_new_process" => "cached kernel".into(),
            "graph" => format!("{} kernels, 32 elem", runtime::GRAPH_KERNELS),
            "pool" => size_bytes(runtime::POOL_BYTES),
            w if w.starts_with("h2d") || w.starts_with("d2h") => size_bytes(s.xfer * 4),
            _ => size_1d(s.n, "f32"),
        }
    }

    fn seed(&self, salt: &str) -> u64 {
        salt.bytes().fold(self.seed, |h, b| splitmix(h ^ b as u64))
    }

    fn c<T>(&self, r: cudajit::Result<T>) -> Res<T> {
        r.map_err(|e| e.to_string())
    }

    /// Runs `f` `warmup` times, then `reps` times between two events each: the times in ms.
    fn time_gpu(&self, mut f: impl FnMut() -> cudajit::Result<()>) -> Res<Vec<f64>> {
        self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)
    }

    fn time_gpu_n(
        &self,
        warmup: usize,
        reps: usize,
        f: &mut dyn FnMut() -> cudajit::Result<()>,
    ) -> Res<Vec<f64>> {
        let mut run = || -> cudajit::Result<Vec<f64>> {
            for _ in 0..warmup {
                f()?;
            }
            self.stream.synchronize()?;
            let mut evs = Vec::with_capacity(reps);
            for _ in 0..reps {
                evs.push((self.ctx.new_event()?, self.ctx.new_event()?));
            }
            for (s, e) in &evs {
                s.record(&self.stream)?;
                f()?;
                e.record(&self.stream)?;
            }
            self.stream.synchronize()?;
            evs.iter()
                .map(|(s, e)| cudajit::elapsed_ms(s, e).map(|t| t as f64))
                .collect()
        };
        self.c(run())
    }

    fn upload<T: cudajit::DeviceCopy>(&self, host: &[T]) -> Res<A1<T>> {
        self.c(self.ctx.to_device(host))
    }

    /// An output array filled with NaN, so that unwritten elements fail the check.
    fn poisoned_f32(&self, n: usize) -> Res<A1<f32>> {
        let mut a = self.c(self.ctx.alloc::<f32, _>(n))?;
        self.c(a.fill_async(f32::NAN, &self.stream))?;
        Ok(a)
    }

    fn poisoned_f64(&self, n: usize) -> Res<A1<f64>> {
        let mut a = self.c(self.ctx.alloc::<f64, _>(n))?;
        self.c(a.fill_async(f64::NAN, &self.stream))?;
        Ok(a)
    }

    // --- copy -----------------------------------------------------------------------------

    fn copy(&self) -> Res<()> {
        let n = self.sizes.n;
        let size = self.size_of("copy");
        let host = rand_f32(n, self.seed("copy"), -1.0, 1.0);
        let x = self.upload(&host)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(out.copy_from_device_async(&x, &self.stream))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("copy", n, |i| got[i] as f64, |i| host[i] as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| out.copy_from_device_async(&x, &self.stream))?;
        Rec::new("copy", &size)
            .variant("copy_from_device_async (cuMemcpyDtoDAsync)")
            .times(&t)
            .bytes(2 * n * 4)
            .emit();
        // Diagnostic: the builder's vectorised loop as a copy kernel, against the memcpy.
        self.c(out.fill_async(f32::NAN, &self.stream))?;
        self.c(self.ops.copy_kernel(&self.stream, &x, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("copy kernel", n, |i| got[i] as f64, |i| host[i] as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.copy_kernel(&self.stream, &x, &mut out))?;
        Rec::new("copy", &size)
            .imp("cudajit-diag")
            .variant(format!(
                "copy kernel, {}",
                self.ops.describe(&self.ctx, "copy")
            ))
            .times(&t)
            .bytes(2 * n * 4)
            .emit();
        Ok(())
    }

    // --- elementwise ----------------------------------------------------------------------

    /// Two random f32 inputs of `n` elements in `[-1, 1)`, on the host and the device.
    #[allow(clippy::type_complexity)]
    fn two_inputs(&self, work: &str, n: usize) -> Res<(Vec<f32>, Vec<f32>, A1<f32>, A1<f32>)> {
        let hx = rand_f32(n, self.seed(&format!("{work}/x")), -1.0, 1.0);
        let hy = rand_f32(n, self.seed(&format!("{work}/y")), -1.0, 1.0);
        let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
        Ok((hx, hy, x, y))
    }

    fn add(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("add", n)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.add(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("add", n, |i| got[i] as f64, |i| (hx[i] + hy[i]) as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.add(&self.stream, &x, &y, &mut out))?;
        let size = self.size_of("add");
        Rec::new("add", &size)
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "add"))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        if self.opts.sweep {
            for (u, bps, block) in ours::SWEEP {
                let cfg = ours::EwConfig {
                    unroll: u,
                    blocks_per_sm: bps,
                    block,
                };
                let r = (|| -> Res<()> {
                    let alt = self.c(ours::Ops::new(self.sms, cfg))?;
                    self.c(out.fill_async(f32::NAN, &self.stream))?;
                    self.c(alt.add(&self.stream, &x, &y, &mut out))?;
                    let got = self.c(out.to_vec_async(&self.stream))?;
                    check("add", n, |i| got[i] as f64, |i| (hx[i] + hy[i]) as f64, 0.0)?;
                    drop(got);
                    let t = self.time_gpu(|| alt.add(&self.stream, &x, &y, &mut out))?;
                    Rec::new("add", &size)
                        .imp(KERNEL_IMPL)
                        .imp("cudajit-diag")
                        .variant(format!("sweep {}", alt.describe(&self.ctx, "add")))
                        .times(&t)
                        .bytes(3 * n * 4)
                        .emit();
                    Ok(())
                })();
                if let Err(e) = r {
                    Rec::new("add", &size)
                        .imp(KERNEL_IMPL)
                        .imp("cudajit-diag")
                        .variant(format!("sweep u{u} bps{bps} b{block}"))
                        .error(&e)
                        .emit();
                }
            }
        }
        Ok(())
    }

    fn axpy(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("axpy", n)?;
        let a = 1.0f32 + (self.seed("axpy/a") >> 40) as f32 / 16_777_216.0; // in [1, 2)
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.axpy(&self.stream, a, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "axpy",
            n,
            |i| got[i] as f64,
            |i| a as f64 * hx[i] as f64 + hy[i] as f64,
            1e-6,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.axpy(&self.stream, a, &x, &y, &mut out))?;
        Rec::new("axpy", &self.size_of("axpy"))
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "axpy"))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        Ok(())
    }

    fn chain(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("chain", n)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.chain(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "chain",
            n,
            |i| got[i] as f64,
            |i| {
                let (a, b) = (hx[i] as f64, hy[i] as f64);
                (a * a + b * b).sqrt() * 0.5 + 1.0
            },
            1e-6,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.chain(&self.stream, &x, &y, &mut out))?;
        Rec::new("chain", &self.size_of("chain"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "sqrt(x*x+y*y)*0.5+1, one kernel, {}",
                self.ops.describe(&self.ctx, "chain")
            ))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        Ok(())
    }

    fn add_f64(&self) -> Res<()> {
        let n = self.sizes.n64;
        let hx = rand_f64(n, self.seed("add_f64/x"), -1.0, 1.0);
        let hy = rand_f64(n, self.seed("add_f64/y"), -1.0, 1.0);
        let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
        let mut out = self.poisoned_f64(n)?;
        self.c(self.ops.add_f64(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("add_f64", n, |i| got[i], |i| hx[i] + hy[i], 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.add_f64(&self.stream, &x, &y, &mut out))?;
        Rec::new("add_f64", &self.size_of("add_f64"))
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "add_f64"))
            .times(&t)
            .bytes(3 * n * 8)
            .emit();
        Ok(())
    }

    fn bcast_add(&self) -> Res<()> {
        let m = self.sizes.mat;
        let n = m * m;
        let hx = rand_f32(n, self.seed("bcast/x"), -1.0, 1.0);
        let hr = rand_f32(m, self.seed("bcast/row"), -1.0, 1.0);
        let (x, row) = (self.upload(&hx)?, self.upload(&hr)?);
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.bcast_add(&self.stream, &x, &row, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "bcast_add",
            n,
            |i| got[i] as f64,
            |i| (hx[i] + hr[i % m]) as f64,
            0.0,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.bcast_add(&self.stream, &x, &row, &mut out))?;
        Rec::new("bcast_add", &self.size_of("bcast_add"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "x[{m},{m}] + row[{m}], {}",
                self.ops.describe(&self.ctx, "bcast_add")
            ))
            .times(&t)
            .bytes(2 * n * 4 + m * 4)
            .emit();
        Ok(())
    }

    // --- reductions -----------------------------------------------------------------------

    fn sum_max(&self) -> Res<()> {
        let n = self.sizes.n;
        let size = self.size_of("sum");
        // Inputs in [0, 1): a well-conditioned sum, so f32 accumulation can be checked tightly.
        let hx = rand_f32(n, self.seed("sum/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        let mut scratch = self.c(self.ctx.alloc::<f32, _>(self.ops.partials_len()))?;
        let mut out = self.poisoned_f32(1)?;
        if self.opts.selected("sum") {
            let want = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            self.c(self.ops.sum(&self.stream, &x, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?[0] as f64;
            let rel = ((got - want) / want).abs();
            if !got.is_finite() || rel > 1e-5 {
                Rec::new("sum", &size)
                    .imp(KERNEL_IMPL)
                    .error(&format!(
                        "sum: got {got}, want {want} (relative error {rel:.2e})"
                    ))
                    .emit();
            } else {
                let t = self.time_gpu(|| self.ops.sum(&self.stream, &x, &mut scratch, &mut out))?;
                Rec::new("sum", &size)
                    .imp(KERNEL_IMPL)
                    .variant(format!(
                        "two passes (block partials, then one block), {}",
                        self.ops.describe(&self.ctx, "sum")
                    ))
                    .times(&t)
                    .bytes(n * 4)
                    .note(format!("relative error vs f64 {rel:.1e}"))
                    .emit();
            }
        }
        if self.opts.selected("max") {
            let want = par_fold(n, || f32::NEG_INFINITY, |a, i| *a = a.max(hx[i]), f32::max);
            self.c(out.fill_async(f32::NAN, &self.stream))?;
            self.c(self.ops.max(&self.stream, &x, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?[0];
            if got != want {
                Rec::new("max", &size)
                    .imp(KERNEL_IMPL)
                    .error(&format!("max: got {got}, want {want}"))
                    .emit();
            } else {
                let t = self.time_gpu(|| self.ops.max(&self.stream, &x, &mut scratch, &mut out))?;
                Rec::new("max", &size)
                    .imp(KERNEL_IMPL)
                    .variant(format!(
                        "two passes, {}",
                        self.ops.describe(&self.ctx, "max")
                    ))
                    .times(&t)
                    .bytes(n * 4)
                    .emit();
            }
        }
        Ok(())
    }

    fn argmax(&self) -> Res<()> {
        let n = self.sizes.n;
        // 24-bit values in [0, 1): the maximum occurs many times at 2^28, so ties are tested.
        let hx = rand_f32(n, self.seed("argmax/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        let p = self.ops.partials_len();
        let mut pv = self.c(self.ctx.alloc::<f32, _>(p))?;
        let mut pi = self.c(self.ctx.alloc::<u64, _>(p))?;
        let mut out = self.c(self.ctx.alloc::<u64, _>(1))?;
        self.c(out.fill_async(u64::MAX, &self.stream))?;
        let (want_v, want_i) = par_fold(
            n,
            || (f32::NEG_INFINITY, usize::MAX),
            |a, i| {
                if hx[i] > a.0 {
                    *a = (hx[i], i);
                }
            },
            |a, b| {
                if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                    b
                } else {
                    a
                }
            },
        );
        let ties = par_fold(
            n,
            || 0usize,
            |c, i| *c += (hx[i] == want_v) as usize,
            |a, b| a + b,
        );
        let run = |pv: &mut A1<f32>, pi: &mut A1<u64>, out: &mut A1<u64>| {
            self.ops.argmax(&self.stream, &x, pv, pi, out)
        };
        self.c(run(&mut pv, &mut pi, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?[0];
        if got != want_i as u64 {
            return Err(format!(
                "argmax: got {got}, want {want_i} (the first of {ties} elements equal to the maximum {want_v})"
            ));
        }
        let t = self.time_gpu(|| run(&mut pv, &mut pi, &mut out))?;
        Rec::new("argmax", &self.size_of("argmax"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "two passes, first index of the maximum, {}",
                self.ops.describe(&self.ctx, "argmax")
            ))
            .times(&t)
            .bytes(n * 4)
            .note(format!("the maximum occurs {ties} times"))
            .emit();
        Ok(())
    }

    fn axis_sums(&self) -> Res<()> {
        let m = self.sizes.mat;
        let n = m * m;
        let size = self.size_of("row_sum");
        let hx = rand_f32(n, self.seed("axis/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        if self.opts.selected("row_sum") {
            let mut out = self.poisoned_f32(m)?;
            self.c(self.ops.row_sum(&self.stream, &x, m, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?;
            let want: Vec<f64> = {
                let mut w = vec![0f64; m];
                par_fill(&mut w, |r| {
                    hx[r * m..(r + 1) * m].iter().map(|&v| v as f64).sum()
                });
                w
            };
            check("row_sum", m, |i| got[i] as f64, |i| want[i], 1e-5)?;
            let t = self.time_gpu(|| self.ops.row_sum(&self.stream, &x, m, &mut out))?;
            Rec::new("row_sum", &size)
                .imp(KERNEL_IMPL)
                .variant(format!(
                    "sum along axis 1 (one block per row), {}",
                    self.ops.describe(&self.ctx, "row_sum")
                ))
                .times(&t)
                .bytes(n * 4 + m * 4)
                .emit();
        }
        if self.opts.selected("col_sum") {
            let mut out = self.poisoned_f32(m)?;
            let mut scratch = self.c(self.ctx.alloc::<f32, _>(self.ops.col_partials_len(m, m)))?;
            self.c(self
                .ops
                .col_sum(&self.stream, &x, m, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?;
            let want = par_fold(
                m,
                || vec![0f64; m],
                |acc, r| {
                    for (a, &v) in acc.iter_mut().zip(&hx[r * m..(r + 1) * m]) {
                        *a += v as f64;
                    }
                },
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
            check("col_sum", m, |i| got[i] as f64, |i| want[i], 1e-5)?;
            let t = self.time_gpu(|| {
                self.ops
                    .col_sum(&self.stream, &x, m, &mut scratch, &mut out)
            })?;
            Rec::new("col_sum", &size)
                .imp(KERNEL_IMPL)
                .variant(format!(
                    "sum along axis 0 (row chunks, then chunk partials), {}",
                    self.ops.describe(&self.ctx, "col_sum")
                ))
                .times(&t)
                .bytes(n * 4 + m * 4)
                .emit();
        }
        Ok(())
    }

    // --- the library's operations (cudajit::ops) --------------------------------------------

    /// Runs `op` once, checks it, times it, and emits a library row.
    fn lib_row(
        &self,
        work: &str,
        bytes: usize,
        variant: &str,
        mut op: impl FnMut() -> cudajit::Result<()>,
        verify: impl FnOnce() -> Res<()>,
    ) -> Res<()> {
        self.c(op())?;
        verify()?;
        let t = self.time_gpu(&mut op)?;
        Rec::new(work, &self.size_of(work))
            .imp(LIB_IMPL)
            .variant(variant)
            .times(&t)
            .bytes(bytes)
            .emit();
        Ok(())
    }

    /// Inclusive prefix sums through `cudajit::ops::ScanOps::cumsum_into` (one kernel:
    /// single pass, decoupled look-back): f32 in [0, 1) checked against a float64 prefix sum,
    /// i32 in [-100, 100] checked exactly (wrapping; no wrap at these values).
    fn scans(&self) -> Res<()> {
        use cudajit::ops::ScanOps;
        let s = &self.stream;
        let n = self.sizes.n;
        let variant = format!(
            "cudajit::ops::ScanOps::cumsum_into, single pass, decoupled look-back, CUDAJIT_SCAN_TUNE={}",
            std::env::var("CUDAJIT_SCAN_TUNE").unwrap_or_else(|_| "default (8 rows, 4 blocks/SM x 256)".into())
        );
        if self.opts.selected("scan") {
            let hx = rand_f32(n, self.seed("scan/x"), 0.0, 1.0);
            let x = self.upload(&hx)?;
            let mut out = self.poisoned_f32(n)?;
            self.c(x.cumsum_into(s, &mut out))?;
            let got = self.c(out.to_vec_async(s))?;
            let mut acc = 0f64;
            let want: Vec<f64> = hx
                .iter()
                .map(|&v| {
                    acc += v as f64;
                    acc
                })
                .collect();
            let rel = check("scan", n, |i| got[i] as f64, |i| want[i], 1e-4)?;
            drop((got, want));
            let t = self.time_gpu(|| x.cumsum_into(s, &mut out))?;
            Rec::new("scan", &self.size_of("scan"))
                .imp(LIB_IMPL)
                .variant(variant.clone())
                .times(&t)
                .bytes(2 * n * 4)
                .note(format!("relative error vs float64 {rel:.1e}"))
                .emit();
        }
        if self.opts.selected("scan_i32") {
            let hx: Vec<i32> = rand_f32(n, self.seed("scan_i32/x"), -100.0, 101.0)
                .iter()
                .map(|v| v.floor() as i32)
                .collect();
            let x = self.upload(&hx)?;
            let mut out = self.c(self.ctx.alloc::<i32, _>(n))?;
            self.c(out.fill_async(i32::MIN, s))?;
            self.c(x.cumsum_into(s, &mut out))?;
            let got = self.c(out.to_vec_async(s))?;
            let mut acc = 0i32;
            let bad = hx.iter().zip(&got).position(|(&v, &g)| {
                acc = acc.wrapping_add(v);
                g != acc
            });
            if let Some(i) = bad {
                return Err(format!(
                    "scan_i32: element {i} differs from the host's prefix sum"
                ));
            }
            drop(got);
            let t = self.time_gpu(|| x.cumsum_into(s, &mut out))?;
            Rec::new("scan_i32", &self.size_of("scan_i32"))
                .imp(LIB_IMPL)
                .variant(variant)
                .times(&t)
                .bytes(2 * n * 4)
                .note("exact")
                .emit();
        }
        Ok(())
    }

    /// The workloads through `cudajit::ops`: what a user of the crate gets.
    fn library(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise, ReduceOps, Reduction, Scalar};
        let s = &self.stream;
        let n = self.sizes.n;
        let sel = |w: &str| self.opts.selected(w);
        let e = |e: cudajit::Error| e.to_string();
        if sel("add") || sel("axpy") || sel("chain") {
            let (hx, hy, x, y) = self.two_inputs("lib", n)?;
            let mut out = self.poisoned_f32(n)?;
            if sel("add") {
                let add =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_add", |(x, y)| {
                        x + y
                    })
                    .map_err(e)?;
                self.c(add.apply(s, (&x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib add",
                    n,
                    |i| g[i] as f64,
                    |i| (hx[i] + hy[i]) as f64,
                    0.0,
                )?;
                drop(g);
                self.lib_row(
                    "add",
                    3 * n * 4,
                    "cudajit::ops::Elementwise x + y",
                    || add.apply(s, (&x, &y), &mut out),
                    || Ok(()),
                )?;
            }
            if sel("axpy") {
                let a = 1.5f32;
                let axpy = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), Expr<f32>>::new(
                    "lib_axpy",
                    |(a, x, y)| a * x + y,
                )
                .map_err(e)?;
                self.c(axpy.apply(s, (a, &x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib axpy",
                    n,
                    |i| g[i] as f64,
                    |i| a as f64 * hx[i] as f64 + hy[i] as f64,
                    1e-6,
                )?;
                drop(g);
                self.lib_row(
                    "axpy",
                    3 * n * 4,
                    "cudajit::ops::Elementwise a*x + y",
                    || axpy.apply(s, (a, &x, &y), &mut out),
                    || Ok(()),
                )?;
            }
            if sel("chain") {
                let chain =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_chain", |(x, y)| {
                        (x * x + y * y).sqrt() * 0.5 + 1.0
                    })
                    .map_err(e)?;
                self.c(chain.apply(s, (&x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib chain",
                    n,
                    |i| g[i] as f64,
                    |i| ((hx[i] as f64).powi(2) + (hy[i] as f64).powi(2)).sqrt() * 0.5 + 1.0,
                    1e-6,
                )?;
                drop(g);
                self.lib_row(
                    "chain",
                    3 * n * 4,
                    "cudajit::ops::Elementwise, one fused kernel",
                    || chain.apply(s, (&x, &y), &mut out),
                    || Ok(()),
                )?;
            }
        }
        if sel("add_f64") {
            let n = self.sizes.n64;
            let hx = rand_f64(n, self.seed("lib_f64/x"), -1.0, 1.0);
            let hy = rand_f64(n, self.seed("lib_f64/y"), -1.0, 1.0);
            let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
            let mut out = self.poisoned_f64(n)?;
            let add =
                Elementwise::<(Elem<f64>, Elem<f64>), Expr<f64>>::new("lib_add_f64", |(x, y)| {
                    x + y
                })
                .map_err(e)?;
            self.c(add.apply(s, (&x, &y), &mut out))?;
            let g = self.c(out.to_vec_async(s))?;
            check("lib add_f64", n, |i| g[i], |i| hx[i] + hy[i], 0.0)?;
            drop(g);
            self.lib_row(
                "add_f64",
                3 * n * 8,
                "cudajit::ops::Elementwise x + y",
                || add.apply(s, (&x, &y), &mut out),
                || Ok(()),
            )?;
        }
        let m = self.sizes.mat;
        if sel("bcast_add") || sel("row_sum") || sel("col_sum") {
            let hx = rand_f32(m * m, self.seed("lib_mat/x"), 0.0, 1.0);
            let x2 = self
                .c(self.stream.to_device(&hx))?
                .into_shape((m, m))
                .map_err(e)?;
            if sel("bcast_add") {
                let hr = rand_f32(m, self.seed("lib_mat/row"), -1.0, 1.0);
                let row = self.upload(&hr)?;
                let mut out = self.c(self.ctx.alloc::<f32, _>((m, m)))?;
                self.c(out.fill_async(f32::NAN, s))?;
                let add =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_badd", |(x, r)| {
                        x + r
                    })
                    .map_err(e)?;
                self.c(add.apply(s, (&x2, &row), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib bcast_add",
                    m * m,
                    |i| g[i] as f64,
                    |i| (hx[i] + hr[i % m]) as f64,
                    0.0,
                )?;
                drop(g);
                self.lib_row(
                    "bcast_add",
                    2 * m * m * 4 + m * 4,
                    "cudajit::ops::Elementwise, NumPy broadcasting (strided path)",
                    || add.apply(s, (&x2, &row), &mut out),
                    || Ok(()),
                )?;
            }
            for (work, axis) in [("row_sum", 1usize), ("col_sum", 0)] {
                if !sel(work) {
                    continue;
                }
                let want: Vec<f64> = (0..m)
                    .map(|i| {
                        (0..m)
                            .map(|j| hx[if axis == 1 { i * m + j } else { j * m + i }] as f64)
                            .sum()
                    })
                    .collect();
                let mut got = self.poisoned_f32(m)?;
                self.c(x2.sum_axis_into(s, axis, false, &mut got))?;
                let g = self.c(got.to_vec_async(s))?;
                check(
                    &format!("lib {work}"),
                    m,
                    |i| g[i] as f64,
                    |i| want[i],
                    1e-5,
                )?;
                drop(g);
                self.lib_row(
                    work,
                    m * m * 4 + m * 4,
                    &format!(
                        "cudajit::ops ReduceOps::sum_axis_into({axis}), into an existing array"
                    ),
                    || x2.sum_axis_into(s, axis, false, &mut got),
                    || Ok(()),
                )?;
            }
        }
        if sel("sum") || sel("max") || sel("argmax") {
            let hx = rand_f32(n, self.seed("lib_red/x"), 0.0, 1.0);
            let x = self.upload(&hx)?;
            let exact: f64 = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            let mut one = self.poisoned_f32(1)?;
            let mut idx = self.c(self.ctx.alloc::<u64, _>(1))?;
            if sel("sum") {
                let sum = Reduction::<f32, f32, f32>::new("lib_sum", |x| x, |a, b| a + b, 0.0)
                    .map_err(e)?;
                let got = self.c(x.sum(s))? as f64;
                let rel = ((got - exact) / exact).abs();
                if rel > 1e-5 {
                    return Err(format!(
                        "lib sum: got {got}, want {exact} (relative error {rel:.1e})"
                    ));
                }
                self.lib_row(
                    "sum",
                    n * 4,
                    &format!(
                        "cudajit::ops Reduction, into a device scalar (relative error {rel:.1e})"
                    ),
                    || sum.reduce_into(s, &x, &mut one),
                    || Ok(()),
                )?;
            }
            if sel("max") {
                let want = par_fold(n, || f32::NEG_INFINITY, |a, i| *a = a.max(hx[i]), f32::max);
                let got = self.c(x.max(s))?;
                if got != want {
                    return Err(format!("lib max: got {got}, want {want}"));
                }
                let max = Reduction::<f32, f32, f32>::new(
                    "lib_max",
                    |x| x,
                    |a, b| select(a.gt(b), a, b),
                    f32::NEG_INFINITY,
                )
                .map_err(e)?;
                self.lib_row(
                    "max",
                    n * 4,
                    "cudajit::ops Reduction, result on the device",
                    || max.reduce_into(s, &x, &mut one),
                    || Ok(()),
                )?;
            }
            if sel("argmax") {
                let want = (0..n).fold((f32::NEG_INFINITY, 0usize), |a, i| {
                    if hx[i] > a.0 {
                        (hx[i], i)
                    } else {
                        a
                    }
                });
                let got = self.c(x.argmax(s))?;
                if got != want.1 as u64 {
                    return Err(format!("lib argmax: got {got}, want {}", want.1));
                }
                self.lib_row(
                    "argmax",
                    n * 4,
                    "cudajit::ops ReduceOps::argmax_into (index on the device)",
                    || x.argmax_into(s, &mut idx),
                    || Ok(()),
                )?;
            }
        }
        Ok(())
    }

    // --- host costs -----------------------------------------------------------------------

    /// Host time per launch of a tiny kernel with 3 array arguments: `launches` launches, then
    /// one synchronize; wall clock per launch, median of 5.
    fn launch(&self) -> Res<()> {
        let k = self.c(Kernel::<(&[f32], &[f32], &mut [f32])>::build(
            "bench_tiny",
            |k, (x, y, out)| {
                let i = k.grid1();
                k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
            },
        ))?;
        let (x, y) = (self.upload(&[1.0f32])?, self.upload(&[2.0f32])?);
        let mut out = self.poisoned_f32(1)?;
        let cfg = LaunchConfig::new(1, 32);
        self.c(k.launch(&self.stream, cfg, (&x, &y, &mut out)))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        if got[0] != 3.0 {
            return Err(format!("launch: got {}, want 3", got[0]));
        }
        let launches = self.sizes.launches;
        let mut per = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            for _ in 0..launches {
                self.c(k.launch(&self.stream, cfg, (&x, &y, &mut out)))?;
            }
            self.c(self.stream.synchronize())?;
            per.push(t0.elapsed().as_secs_f64() * 1e3 / launches as f64);
        }
        Rec::new("launch", &self.size_of("launch"))
            .variant(format!(
                "Kernel::launch, {launches} launches then one synchronize, wall clock"
            ))
            .times(&per)
            .unit("us")
            .emit();
        self.launch_diag(&k, &x, &y, &mut out)
    }

    /// Where launch time goes: host enqueue time alone (short bursts that fit the driver's
    /// queue, and long ones), a non-blocking stream, a kernel without parameters. Rows
    /// `cudajit-diag`.
    fn launch_diag(
        &self,
        k: &Kernel<(&[f32], &[f32], &mut [f32])>,
        x: &DeviceArray<f32>,
        y: &DeviceArray<f32>,
        out: &mut DeviceArray<f32>,
    ) -> Res<()> {
        use cudajit::stream::StreamOptions;
        let cfg = LaunchConfig::new(1, 32);
        let nb = self.c(self.ctx.new_stream_with(StreamOptions {
            non_blocking: true,
            priority: 0,
        }))?;
        let empty = self.c(Kernel::<()>::build("bench_empty", |_, ()| {}))?;
        let size = self.size_of("launch");
        let measure = |what: &str,
                       stream: &Stream,
                       burst: usize,
                       reps: usize,
                       f: &mut dyn FnMut(&Stream) -> cudajit::Result<()>|
         -> Res<()> {
            let (mut enq, mut tot) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                self.c(stream.synchronize())?;
                let t0 = Instant::now();
                for _ in 0..burst {
                    self.c(f(stream))?;
                }
                let t1 = t0.elapsed();
                self.c(stream.synchronize())?;
                let t2 = t0.elapsed();
                enq.push(t1.as_secs_f64() * 1e3 / burst as f64);
                tot.push(t2.as_secs_f64() * 1e3 / burst as f64);
            }
            for (label, t) in [("enqueue only", &enq), ("with the final sync", &tot)] {
                Rec::new("launch", &size)
                    .imp("cudajit-diag")
                    .variant(format!("{what}, bursts of {burst}, {label}, per launch"))
                    .times(t)
                    .unit("us")
                    .emit();
            }
            Ok(())
        };
        let mut typed = |s: &Stream| k.launch(s, cfg, (x, y, &mut *out));
        let long = self.sizes.launches as usize;
        measure(
            "Kernel::launch, own stream",
            &self.stream,
            long,
            5,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, own stream",
            &self.stream,
            200,
            30,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, non-blocking stream",
            &nb,
            200,
            30,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, non-blocking stream",
            &nb,
            long,
            5,
            &mut typed,
        )?;
        let mut no_args = |s: &Stream| empty.launch(s, cfg, ());
        measure(
            "empty kernel, no parameters",
            &self.stream,
            200,
            30,
            &mut no_args,
        )?;
        measure(
            "empty kernel, no parameters",
            &self.stream,
            long,
            5,
            &mut no_args,
        )?;
        // The driver alone: cuLaunchKernel and cuLaunchKernelEx called directly, and two
        // calls that do no work, to see what one driver call costs on this host.
        use cudajit::sys;
        let sys_ok = |what: &str, r: Result<sys::CUresult, sys::LoadError>| match r {
            Ok(sys::CUresult::CUDA_SUCCESS) => Ok(()),
            other => Err(cudajit::Error::Usage(format!("{what}: {other:?}"))),
        };
        let f = self.c(empty.function(&self.ctx))?.raw();
        let mut direct = |s: &Stream| {
            // SAFETY: a live function without parameters, a live stream of the current context.
            let r = unsafe {
                sys::cuLaunchKernel(
                    f,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    s.raw(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            sys_ok("cuLaunchKernel", r)
        };
        measure(
            "cuLaunchKernel direct, empty kernel",
            &self.stream,
            200,
            30,
            &mut direct,
        )?;
        let mut ex = |s: &Stream| {
            let config = sys::CUlaunchConfig {
                gridDimX: 1,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: 32,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: s.raw(),
                attrs: std::ptr::null_mut(),
                numAttrs: 0,
            };
            // SAFETY: as above; the configuration outlives the call.
            let r = unsafe {
                sys::cuLaunchKernelEx(&config, f, std::ptr::null_mut(), std::ptr::null_mut())
            };
            sys_ok("cuLaunchKernelEx", r)
        };
        measure(
            "cuLaunchKernelEx direct, empty kernel",
            &self.stream,
            200,
            30,
            &mut ex,
        )?;
        let mut query = |s: &Stream| {
            // SAFETY: a live stream; the query only reads its state.
            let r = unsafe { sys::cuStreamQuery(s.raw()) };
            match r {
                Ok(sys::CUresult::CUDA_ERROR_NOT_READY) => Ok(()),
                r => sys_ok("cuStreamQuery", r),
            }
        };
        measure(
            "cuStreamQuery (no launch)",
            &self.stream,
            200,
            30,
            &mut query,
        )?;
        let mut current = |_: &Stream| {
            let mut c = std::ptr::null_mut();
            // SAFETY: a valid out-pointer.
            sys_ok("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut c) })
        };
        measure(
            "cuCtxGetCurrent (no launch)",
            &self.stream,
            200,
            30,
            &mut current,
        )?;
        Ok(())
    }

    /// A new elementwise kernel's build + compile + load + first launch + synchronize: cold
    /// (a unique kernel each time, empty disk cache) and cached (the same kernels again).
    fn compile(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise};
        let n = 1024usize;
        let hx = rand_f32(n, self.seed("compile/x"), -1.0, 1.0);
        let x = self.upload(&hx)?;
        let mut out = self.poisoned_f32(n)?;
        let tag = nonce();
        let mut build = |i: usize| -> Res<f64> {
            let c = compile_constant(i);
            let t0 = Instant::now();
            let ew = self.c(Elementwise::<(Elem<f32>,), Expr<f32>>::new(
                &compile_name(tag, i),
                move |(x,)| x * c + 0.5,
            ))?;
            self.c(ew.apply(&self.stream, (&x,), &mut out))?;
            self.c(self.stream.synchronize())?;
            Ok(t0.elapsed().as_secs_f64() * 1e3)
        };
        build(usize::MAX / 2)?; // warm-up: LLVM's target and the driver's first load
        let runs = self.sizes.compiles;
        let cold = (0..runs).map(&mut build).collect::<Res<Vec<f64>>>()?;
        let cached = (0..runs).map(&mut build).collect::<Res<Vec<f64>>>()?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        let c = compile_constant(runs - 1);
        check(
            "compile",
            n,
            |i| got[i] as f64,
            |i| (hx[i] * c + 0.5) as f64,
            1e-6,
        )?;
        Rec::new("compile_cold", &self.size_of("compile_cold"))
            .variant("Elementwise::new + first apply + sync (IR, LLVM -> PTX, driver load), empty caches")
            .times(&cold)
            .emit();
        Rec::new("compile_cached", &self.size_of("compile_cached"))
            .variant("the same kernels again: the loaded function found by the IR's hash")
            .times(&cached)
            .emit();
        if self.opts.selected("compile_new_process") {
            self.new_process(tag, runs)?;
        }
        Ok(())
    }

    /// Host<->device copies of `xfer` f32, pinned and pageable, both directions.
    fn transfers(&self) -> Res<()> {
        let n = self.sizes.xfer;
        let src = rand_f32(n, self.seed("xfer/src"), -1.0, 1.0);
        let mut back = vec![0f32; n];
        let mut pinned = self.c(self.ctx.pinned_from_slice(&src))?;
        let mut d = self.c(self.ctx.alloc::<f32, _>(n))?;
        self.c(pinned.copy_to_device_async(&mut d, &self.stream))?;
        self.c(d.copy_to_host_async(&mut back, &self.stream))?;
        if back != src {
            return Err("transfers: the round trip changed the data".into());
        }
        let size = self.size_of("h2d_pinned");
        let emit = |work: &str, variant: &str, t: &[f64]| {
            Rec::new(work, &size)
                .variant(variant)
                .times(t)
                .bytes(n * 4)
                .emit();
        };
        if self.opts.selected("h2d_pinned") {
            let mut f = || -> cudajit::Result<()> {
                pinned.wait()?;
                pinned.copy_to_device_async(&mut d, &self.stream)
            };
            let t = self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)?;
            emit("h2d_pinned", "PinnedHostBuffer::copy_to_device_async", &t);
        }
        if self.opts.selected("d2h_pinned") {
            // `copy_from_device_async` needs `&mut pinned`; waiting first keeps the host's wait
            // for the previous copy out of the timed interval.
            let mut f = || -> cudajit::Result<()> {
                pinned.wait()?;
                pinned.copy_from_device_async(&d, &self.stream)
            };
            let t = self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)?;
            emit("d2h_pinned", "PinnedHostBuffer::copy_from_device_async", &t);
        }
        if self.opts.selected("h2d_pageable") {
            let t = self.time_gpu(|| d.copy_from_host_async(&src[..], &self.stream))?;
            emit(
                "h2d_pageable",
                "DeviceArray::copy_from_host_async (Vec)",
                &t,
            );
        }
        if self.opts.selected("d2h_pageable") {
            let t = self.time_gpu(|| d.copy_to_host_async(&mut back, &self.stream))?;
            emit("d2h_pageable", "DeviceSlice::copy_to_host_async (Vec)", &t);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Our implementations: kernels written with the builder, until `cudajit::ops` provides them.

mod ours {
    use std::cell::OnceCell;

    use super::*;

    /// Geometry of the elementwise and reduction kernels: a grid-stride loop over 16-byte
    /// vectors, `unroll` vectors loaded per input before any is used, a grid of
    /// `blocks_per_sm` (capped by occupancy) blocks of `block` threads per multiprocessor.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct EwConfig {
        /// Vectors in flight per thread and input.
        pub unroll: u64,
        /// Blocks per multiprocessor (capped at what fits).
        pub blocks_per_sm: u32,
        /// Threads per block.
        pub block: u32,
    }

    impl Default for EwConfig {
        fn default() -> Self {
            EwConfig {
                unroll: 4,
                blocks_per_sm: 8,
                block: 256,
            }
        }
    }

    /// The configurations `--sweep` times for `add` (unroll, blocks per SM, block).
    pub const SWEEP: [(u64, u32, u32); 9] = [
        (1, 8, 256),
        (2, 8, 256),
        (4, 8, 256),
        (8, 8, 256),
        (2, 4, 256),
        (4, 4, 256),
        (4, 2, 256),
        (4, 4, 512),
        (4, 16, 128),
    ];

    /// Threads per block of the reductions.
    const RBLOCK: u32 = 256;
    /// Blocks per multiprocessor of the full reductions' first pass.
    const RBPS: u32 = 4;
    /// Vectors in flight per thread in the reductions.
    const RUNROLL: u64 = 4;

    /// A read-only array parameter.
    type In<T> = &'static [T];
    /// A writable array parameter.
    type Out<T> = &'static mut [T];
    /// `(x, out)`.
    type P2 = (In<f32>, Out<f32>);
    /// `(x, y, out)`.
    type P3<T> = (In<T>, In<T>, Out<T>);
    /// `(x, y, out, a)`.
    type PAxpy = (In<f32>, In<f32>, Out<f32>, f32);
    /// `(x, partial values, partial indices)`.
    type PArgPart = (In<f32>, Out<f32>, Out<u64>);
    /// `(partial values, partial indices, index)`.
    type PArgFin = (In<f32>, In<u64>, Out<u64>);
    /// `(x, out, a length)`.
    type PLen = (In<f32>, Out<f32>, u64);
    /// `(x, partials, cols, rows per chunk)`.
    type PColPart = (In<f32>, Out<f32>, u64, u64);

    /// A kernel and its grid cap (multiprocessors x resident blocks), set at first launch.
    struct Ew<P> {
        k: Kernel<P>,
        cap: OnceCell<u32>,
    }

    impl<P: cudajit::codegen::KernelParams> Ew<P> {
        fn new(k: Kernel<P>) -> Self {
            Ew {
                k,
                cap: OnceCell::new(),
            }
        }

        /// `blocks` blocks at most, no more than fit at once.
        fn config(
            &self,
            ctx: &Context,
            sms: u32,
            bps: u32,
            block: u32,
            blocks: u64,
        ) -> Result<LaunchConfig> {
            let cap = match self.cap.get() {
                Some(&c) => c,
                None => {
                    let f = self.k.function(ctx)?;
                    let fit = f.max_active_blocks_per_multiprocessor(block, 0)?.max(1);
                    *self.cap.get_or_init(|| sms * bps.min(fit))
                }
            };
            let grid = blocks.clamp(1, cap as u64) as u32;
            Ok(LaunchConfig::new(grid, block))
        }
    }

    /// Every kernel of our side, built once.
    pub struct Ops {
        sms: u32,
        cfg: EwConfig,
        copy: Ew<P2>,
        add: Ew<P3<f32>>,
        axpy: Ew<PAxpy>,
        chain: Ew<P3<f32>>,
        add_f64: Ew<P3<f64>>,
        bcast: Ew<P3<f32>>,
        sum: Ew<P2>,
        max: Ew<P2>,
        argmax1: Ew<PArgPart>,
        argmax2: Kernel<PArgFin>,
        row_sum: Kernel<PLen>,
        col1: Kernel<PColPart>,
        col2: Kernel<PLen>,
    }

    impl Ops {
        /// Builds every kernel (compiled and loaded at first launch).
        pub fn new(sms: u32, cfg: EwConfig) -> Result<Ops> {
            let u = cfg.unroll;
            let tag = format!("u{u}");
            Ok(Ops {
                sms,
                cfg,
                copy: Ew::new(Kernel::build(
                    &format!("bench_copy_{tag}"),
                    |k, (x, out)| ew_body::<f32, 4, 1>(k, [x], out, u, &|[a]| a),
                )?),
                add: Ew::new(binary::<f32, 4>(&format!("bench_add_{tag}"), u, |a, b| {
                    a + b
                })?),
                axpy: Ew::new(Kernel::build(
                    &format!("bench_axpy_{tag}"),
                    |k, (x, y, out, a)| {
                        ew_body::<f32, 4, 2>(k, [x, y], out, u, &|[p, q]| a * p + q)
                    },
                )?),
                chain: Ew::new(binary::<f32, 4>(
                    &format!("bench_chain_{tag}"),
                    u,
                    |a, b| (a * a + b * b).sqrt() * 0.5f32 + 1.0f32,
                )?),
                add_f64: Ew::new(binary::<f64, 2>(
                    &format!("bench_add_f64_{tag}"),
                    u,
                    |a, b| a + b,
                )?),
                bcast: Ew::new(bcast_kernel(&format!("bench_bcast_add_{tag}"), u)?),
                sum: Ew::new(reduce_kernel("bench_sum", Red::Sum)?),
                max: Ew::new(reduce_kernel("bench_max", Red::Max)?),
                argmax1: Ew::new(argmax_partial()?),
                argmax2: argmax_final()?,
                row_sum: row_sum_kernel()?,
                col1: col_partial_kernel()?,
                col2: col_final_kernel()?,
            })
        }

        /// Every kernel's PTX for `options` (no GPU needed): `(name, ptx)`.
        pub fn ptx_all(&self, options: &PtxOptions) -> Result<Vec<(String, String)>> {
            let mut v = Vec::new();
            macro_rules! each {
                ($($k:expr),*) => {$(
                    v.push(($k.name().to_string(), $k.compile_ptx(options)?));
                )*};
            }
            each!(
                self.copy.k,
                self.add.k,
                self.axpy.k,
                self.chain.k,
                self.add_f64.k,
                self.bcast.k,
                self.sum.k,
                self.max.k,
                self.argmax1.k,
                self.argmax2,
                self.row_sum,
                self.col1,
                self.col2
            );
            Ok(v)
        }

        /// A short description of a kernel's geometry and resources, for the `variant` field.
        pub fn describe(&self, ctx: &Context, which: &str) -> String {
            let f = match which {
                "copy" => self.copy.k.function(ctx),
                "add" => self.add.k.function(ctx),
                "axpy" => self.axpy.k.function(ctx),
                "chain" => self.chain.k.function(ctx),
                "add_f64" => self.add_f64.k.function(ctx),
                "bcast_add" => self.bcast.k.function(ctx),
                "sum" => self.sum.k.function(ctx),
                "max" => self.max.k.function(ctx),
                "argmax" => self.argmax1.k.function(ctx),
                "row_sum" => self.row_sum.function(ctx),
                _ => self.col1.function(ctx),
            };
            let regs = f
                .and_then(|f| f.attributes())
                .map(|a| format!("{} regs, {} B local", a.num_regs, a.local_size_bytes))
                .unwrap_or_else(|e| format!("attributes: {e}"));
            let c = self.cfg;
            match which {
                "sum" | "max" | "argmax" => {
                    format!("v4 x{RUNROLL}, {RBPS} blocks/SM x {RBLOCK}, {regs}")
                }
                "row_sum" | "col_sum" => format!("v4 x{RUNROLL}, {RBLOCK} threads/block, {regs}"),
                _ => format!(
                    "v{} x{}, {} blocks/SM x {}, {regs}",
                    if which == "add_f64" { 2 } else { 4 },
                    c.unroll,
                    c.blocks_per_sm,
                    c.block
                ),
            }
        }

        fn ew_config<P: cudajit::codegen::KernelParams>(
            &self,
            e: &Ew<P>,
            ctx: &Context,
            vectors: usize,
        ) -> Result<LaunchConfig> {
            let c = self.cfg;
            e.config(
                ctx,
                self.sms,
                c.blocks_per_sm,
                c.block,
                (vectors as u64).div_ceil(c.block as u64),
            )
        }

        /// `out = x` with the vectorised loop (a diagnostic against the memcpy).
        pub fn copy_kernel(&self, s: &Stream, x: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
            let cfg = self.ew_config(&self.copy, s.context(), out.len() / 4)?;
            self.copy.k.launch(s, cfg, (x, out))
        }

        /// `out = x + y`.
        pub fn add(&self, s: &Stream, x: &A1<f32>, y: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
            let cfg = self.ew_config(&self.add, s.context(), out.len() / 4)?;
            self.add.k.launch(s, cfg, (x, y, out))
        }

        /// `out = a * x + y`.
        pub fn axpy(
            &self,
            s: &Stream,
            a: f32,
            x: &A1<f32>,
            y: &A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            let cfg = self.ew_config(&self.axpy, s.context(), out.len() / 4)?;
            self.axpy.k.launch(s, cfg, (x, y, out, a))
        }

        /// `out = sqrt(x*x + y*y) * 0.5 + 1`, fused.
        pub fn chain(&self, s: &Stream, x: &A1<f32>, y: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
            let cfg = self.ew_config(&self.chain, s.context(), out.len() / 4)?;
            self.chain.k.launch(s, cfg, (x, y, out))
        }

        /// `out = x + y` in f64.
        pub fn add_f64(
            &self,
            s: &Stream,
            x: &A1<f64>,
            y: &A1<f64>,
            out: &mut A1<f64>,
        ) -> Result<()> {
            let cfg = self.ew_config(&self.add_f64, s.context(), out.len() / 2)?;
            self.add_f64.k.launch(s, cfg, (x, y, out))
        }

        /// `out[r, c] = x[r, c] + row[c]`, C order, `row.len()` columns (a multiple of 4).
        pub fn bcast_add(
            &self,
            s: &Stream,
            x: &A1<f32>,
            row: &A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            let cols = row.len();
            if cols == 0 || cols % 4 != 0 || out.len() % cols != 0 || x.len() != out.len() {
                return Err(cudajit::Error::Usage(format!(
                    "bcast_add: {} elements, rows of {cols}: need a whole number of rows of a multiple of 4",
                    out.len()
                )));
            }
            let rows = out.len() / cols;
            let cfg = self.ew_config(&self.bcast, s.context(), rows * self.cfg.block as usize)?;
            self.bcast.k.launch(s, cfg, (x, row, out))
        }

        /// Elements of scratch the full reductions need (one partial per block).
        pub fn partials_len(&self) -> usize {
            (self.sms * RBPS) as usize
        }

        fn red_config<P: cudajit::codegen::KernelParams>(
            &self,
            e: &Ew<P>,
            ctx: &Context,
            n: usize,
        ) -> Result<LaunchConfig> {
            e.config(
                ctx,
                self.sms,
                RBPS,
                RBLOCK,
                (n as u64 / 4).div_ceil(RBLOCK as u64),
            )
        }

        fn reduce(
            &self,
            e: &Ew<P2>,
            s: &Stream,
            x: &A1<f32>,
            scratch: &mut A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            let cfg = self.red_config(e, s.context(), x.len())?;
            let g = cfg.grid.x as usize;
            let mut part = scratch.slice_mut(..g)?;
            e.k.launch(s, cfg, (x, &mut part))?;
            e.k.launch(
                s,
                LaunchConfig::new(1u32, RBLOCK),
                (&scratch.slice(..g)?, out),
            )
        }

        /// `out[0] = sum(x)`: block partials into `scratch`, then one block.
        pub fn sum(
            &self,
            s: &Stream,
            x: &A1<f32>,
            scratch: &mut A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            self.reduce(&self.sum, s, x, scratch, out)
        }

        /// `out[0] = max(x)` (NaN inputs are ignored, not propagated).
        pub fn max(
            &self,
            s: &Stream,
            x: &A1<f32>,
            scratch: &mut A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            self.reduce(&self.max, s, x, scratch, out)
        }

        /// `out[0]` = the first index of the maximum of `x`.
        pub fn argmax(
            &self,
            s: &Stream,
            x: &A1<f32>,
            pv: &mut A1<f32>,
            pi: &mut A1<u64>,
            out: &mut A1<u64>,
        ) -> Result<()> {
            let cfg = self.red_config(&self.argmax1, s.context(), x.len())?;
            let g = cfg.grid.x as usize;
            self.argmax1.k.launch(
                s,
                cfg,
                (x, &mut pv.slice_mut(..g)?, &mut pi.slice_mut(..g)?),
            )?;
            self.argmax2.launch(
                s,
                LaunchConfig::new(1u32, RBLOCK),
                (&pv.slice(..g)?, &pi.slice(..g)?, out),
            )
        }

        /// `out[r] = sum(x[r, :])` for a C-order matrix of `cols` columns (a multiple of 4).
        pub fn row_sum(
            &self,
            s: &Stream,
            x: &A1<f32>,
            cols: usize,
            out: &mut A1<f32>,
        ) -> Result<()> {
            if cols == 0 || cols % 4 != 0 || x.len() != out.len() * cols {
                return Err(cudajit::Error::Usage("row_sum: bad shape".into()));
            }
            self.row_sum.launch(
                s,
                LaunchConfig::new(out.len() as u32, RBLOCK),
                (x, out, cols as u64),
            )
        }

        /// Row chunks of the column sums of a `rows` x `cols` matrix.
        fn col_chunks(&self, rows: usize, cols: usize) -> (usize, usize) {
            let xblocks = (cols / 4).div_ceil(RBLOCK as usize).max(1);
            let want = (self.sms as usize * 8)
                .div_ceil(xblocks)
                .clamp(1, rows.max(1));
            let per = rows.div_ceil(want).max(1);
            (rows.div_ceil(per), per)
        }

        /// Elements of scratch `col_sum` needs.
        pub fn col_partials_len(&self, rows: usize, cols: usize) -> usize {
            self.col_chunks(rows, cols).0 * cols
        }

        /// `out[c] = sum(x[:, c])` for a C-order matrix of `cols` columns (a multiple of 4):
        /// each block sums a chunk of rows for 4 x 256 columns, then one pass adds the chunks.
        pub fn col_sum(
            &self,
            s: &Stream,
            x: &A1<f32>,
            cols: usize,
            scratch: &mut A1<f32>,
            out: &mut A1<f32>,
        ) -> Result<()> {
            if cols == 0 || cols % 4 != 0 || x.len() % cols != 0 || out.len() != cols {
                return Err(cudajit::Error::Usage("col_sum: bad shape".into()));
            }
            let rows = x.len() / cols;
            let (chunks, per) = self.col_chunks(rows, cols);
            let xblocks = (cols / 4).div_ceil(RBLOCK as usize) as u32;
            let mut part = scratch.slice_mut(..chunks * cols)?;
            self.col1.launch(
                s,
                LaunchConfig::new((xblocks, chunks as u32), RBLOCK),
                (x, &mut part, cols as u64, per as u64),
            )?;
            self.col2.launch(
                s,
                LaunchConfig::new(xblocks, RBLOCK),
                (&scratch.slice(..chunks * cols)?, out, chunks as u64),
            )
        }
    }

    // --- kernel bodies --------------------------------------------------------------------

    /// `for m in 0..ceil((end - start) / step)`, visiting `j = start + m * step`: `unroll`
    /// iterations at a time whose loads (`load(j)`) are all issued before any is used
    /// (`consume(j, loaded)`), then the rest one by one.
    fn strided<L>(
        k: &KernelBuilder,
        start: Expr<u64>,
        end: Expr<u64>,
        step: Expr<u64>,
        unroll: u64,
        load: &dyn Fn(Expr<u64>) -> L,
        consume: &dyn Fn(Expr<u64>, L),
    ) {
        let count = (end.max(start) - start + step - 1u64) / step;
        if unroll > 1 {
            let full = count / unroll * unroll;
            k.for_step(k.lit(0u64), full, k.lit(unroll), |_, m| {
                let base = start + m * step;
                let js: Vec<Expr<u64>> = (0..unroll).map(|u| base + step * u).collect();
                let loaded: Vec<L> = js.iter().map(|&j| load(j)).collect();
                for (j, l) in js.into_iter().zip(loaded) {
                    consume(j, l);
                }
            });
            k.for_step(full, count, k.lit(1u64), |_, m| {
                let j = start + m * step;
                consume(j, load(j));
            });
        } else {
            k.for_step(k.lit(0u64), count, k.lit(1u64), |_, m| {
                let j = start + m * step;
                consume(j, load(j));
            });
        }
    }

    /// An elementwise kernel body over `NIN` inputs of `W`-lane vectors: a grid-stride loop
    /// over whole vectors, then one scalar element per thread for the tail.
    fn ew_body<T: cudajit::codegen::Num, const W: usize, const NIN: usize>(
        k: &KernelBuilder,
        ins: [Slice<T>; NIN],
        out: SliceMut<T>,
        unroll: u64,
        f: &dyn Fn([Expr<T>; NIN]) -> Expr<T>,
    ) {
        let n = out.len();
        let nv = n / W as u64;
        strided(
            k,
            k.grid1(),
            nv,
            k.gridsize1(),
            unroll,
            &|j| ins.map(|a| a.load_vec::<W>(j)),
            &|j, v: [[Expr<T>; W]; NIN]| {
                out.store_vec::<W>(
                    j,
                    std::array::from_fn(|l| f(std::array::from_fn(|a| v[a][l]))),
                )
            },
        );
        let t = nv * W as u64 + k.grid1();
        k.if_(t.lt(n), |_| out.set(t, f(ins.map(|a| a.at(t)))));
    }

    fn binary<T: cudajit::codegen::Num, const W: usize>(
        name: &str,
        unroll: u64,
        f: fn(Expr<T>, Expr<T>) -> Expr<T>,
    ) -> Result<Kernel<P3<T>>> {
        Kernel::build(name, |k, (x, y, out)| {
            ew_body::<T, W, 2>(k, [x, y], out, unroll, &|[a, b]| f(a, b))
        })
    }

    /// Blocks take whole rows (grid-stride over rows); threads stride over a row's vectors.
    fn bcast_kernel(name: &str, unroll: u64) -> Result<Kernel<P3<f32>>> {
        Kernel::<P3<f32>>::build(name, |k, (x, row, out)| {
            let ncv = row.len() / 4u64;
            let rows = out.len() / row.len();
            let b = k.block_idx().x.cast::<u64>();
            let g = k.grid_dim().x.cast::<u64>();
            let t = k.thread_idx().x.cast::<u64>();
            let bd = k.block_dim().x.cast::<u64>();
            k.for_step(b, rows, g, |k, r| {
                let base = r * ncv;
                strided(
                    k,
                    t,
                    ncv,
                    bd,
                    unroll,
                    &|c| (x.load_vec::<4>(base + c), row.load_vec::<4>(c)),
                    &|c, (a, w): ([Expr<f32>; 4], [Expr<f32>; 4])| {
                        out.store_vec::<4>(base + c, std::array::from_fn(|l| a[l] + w[l]))
                    },
                );
            });
        })
    }

    #[derive(Clone, Copy)]
    enum Red {
        Sum,
        Max,
    }

    impl Red {
        fn init(self) -> f32 {
            match self {
                Red::Sum => 0.0,
                Red::Max => f32::NEG_INFINITY,
            }
        }
        fn op(self, a: Expr<f32>, b: Expr<f32>) -> Expr<f32> {
            match self {
                Red::Sum => a + b,
                Red::Max => a.max(b),
            }
        }
    }

    /// Reduces `v` (one value per thread) over the block in shared memory: thread 0 gets it.
    fn block_reduce(k: &KernelBuilder, v: Expr<f32>, red: Red) -> Expr<f32> {
        let tile = k.shared_array::<f32>(RBLOCK as usize);
        let t = k.thread_idx().x;
        tile.set(t, v);
        k.syncthreads();
        let mut s = RBLOCK / 2;
        while s > 0 {
            k.if_(t.lt(s), |_| tile.set(t, red.op(tile.at(t), tile.at(t + s))));
            k.syncthreads();
            s /= 2;
        }
        tile.at(0u32)
    }

    /// Four lane accumulators over `x[start..end)` in vectors (indices in vectors).
    fn lanes(
        k: &KernelBuilder,
        x: Slice<f32>,
        red: Red,
        start: Expr<u64>,
        end: Expr<u64>,
        step: Expr<u64>,
        offset: Expr<u64>,
    ) -> [Var<f32>; 4] {
        let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(red.init()));
        strided(
            k,
            start,
            end,
            step,
            RUNROLL,
            &|j| x.load_vec::<4>(offset + j),
            &|_, v: [Expr<f32>; 4]| {
                for l in 0..4 {
                    acc[l].set(red.op(acc[l].get(), v[l]));
                }
            },
        );
        acc
    }

    /// One value per block of `x` (grid-stride over vectors plus the scalar tail): launched
    /// over the input with many blocks, then over the partials with one.
    fn reduce_kernel(name: &str, red: Red) -> Result<Kernel<P2>> {
        Kernel::<P2>::build(name, |k, (x, out)| {
            let n = x.len();
            let nv = n / 4u64;
            let acc = lanes(k, x, red, k.grid1(), nv, k.gridsize1(), k.lit(0u64));
            let t = nv * 4u64 + k.grid1();
            k.if_(t.lt(n), |_| acc[0].set(red.op(acc[0].get(), x.at(t))));
            let mine = red.op(
                red.op(acc[0].get(), acc[1].get()),
                red.op(acc[2].get(), acc[3].get()),
            );
            let r = block_reduce(k, mine, red);
            k.if_(k.thread_idx().x.eq(0u32), |k| out.set(k.block_idx().x, r));
        })
    }

    /// Whether `(v, i)` beats `(bv, bi)`: larger, or equal with a smaller index.
    fn better(v: Expr<f32>, i: Expr<u64>, bv: Expr<f32>, bi: Expr<u64>) -> Expr<bool> {
        v.gt(bv).or(v.eq(bv).and(i.lt(bi)))
    }

    /// Block-reduces `(v, i)` pairs: thread 0 gets the best.
    fn block_argmax(k: &KernelBuilder, v: Expr<f32>, i: Expr<u64>) -> (Expr<f32>, Expr<u64>) {
        let sv = k.shared_array::<f32>(RBLOCK as usize);
        let si = k.shared_array::<u64>(RBLOCK as usize);
        let t = k.thread_idx().x;
        sv.set(t, v);
        si.set(t, i);
        k.syncthreads();
        let mut s = RBLOCK / 2;
        while s > 0 {
            k.if_(t.lt(s), |_| {
                let (ov, oi) = (sv.at(t + s), si.at(t + s));
                set_if_better(sv, si, t, ov, oi);
            });
            k.syncthreads();
            s /= 2;
        }
        (sv.at(0u32), si.at(0u32))
    }

    /// `(sv[t], si[t]) = (ov, oi)` if that pair is better.
    fn set_if_better(
        sv: SliceMut<f32>,
        si: SliceMut<u64>,
        t: Expr<u32>,
        ov: Expr<f32>,
        oi: Expr<u64>,
    ) {
        let (mv, mi) = (sv.at(t), si.at(t));
        let b = better(ov, oi, mv, mi);
        sv.set(t, select(b, ov, mv));
        si.set(t, select(b, oi, mi));
    }

    /// First pass of argmax: per block, the value and first index of its maximum.
    fn argmax_partial() -> Result<Kernel<PArgPart>> {
        Kernel::<PArgPart>::build("bench_argmax_partial", |k, (x, pv, pi)| {
            let n = x.len();
            let nv = n / 4u64;
            let bv: [Var<f32>; 4] = std::array::from_fn(|_| k.var(f32::NEG_INFINITY));
            let bi: [Var<u64>; 4] = std::array::from_fn(|_| k.var(u64::MAX));
            // Each lane sees its indices in increasing order: a strict `>` keeps the first.
            strided(
                k,
                k.grid1(),
                nv,
                k.gridsize1(),
                RUNROLL,
                &|j| x.load_vec::<4>(j),
                &|j, v: [Expr<f32>; 4]| {
                    for l in 0..4 {
                        let c = v[l].gt(bv[l].get());
                        bi[l].set(select(c, j * 4u64 + l as u64, bi[l].get()));
                        bv[l].set(select(c, v[l], bv[l].get()));
                    }
                },
            );
            let t = nv * 4u64 + k.grid1();
            k.if_(t.lt(n), |_| {
                let v = x.at(t);
                let c = better(v, t, bv[0].get(), bi[0].get());
                bi[0].set(select(c, t, bi[0].get()));
                bv[0].set(select(c, v, bv[0].get()));
            });
            for l in 1..4 {
                let c = better(bv[l].get(), bi[l].get(), bv[0].get(), bi[0].get());
                bi[0].set(select(c, bi[l].get(), bi[0].get()));
                bv[0].set(select(c, bv[l].get(), bv[0].get()));
            }
            let (v, i) = block_argmax(k, bv[0].get(), bi[0].get());
            k.if_(k.thread_idx().x.eq(0u32), |k| {
                let b = k.block_idx().x;
                pv.set(b, v);
                pi.set(b, i);
            });
        })
    }

    /// Second pass of argmax, one block: the index of the best of the partials.
    fn argmax_final() -> Result<Kernel<PArgFin>> {
        Kernel::<PArgFin>::build("bench_argmax_final", |k, (pv, pi, oi)| {
            let t = k.thread_idx().x.cast::<u64>();
            let bv = k.var(f32::NEG_INFINITY);
            let bi = k.var(u64::MAX);
            k.for_step(t, pv.len(), k.block_dim().x.cast::<u64>(), |_, j| {
                let (v, i) = (pv.at(j), pi.at(j));
                let c = better(v, i, bv.get(), bi.get());
                bi.set(select(c, i, bi.get()));
                bv.set(select(c, v, bv.get()));
            });
            let (_, i) = block_argmax(k, bv.get(), bi.get());
            k.if_(k.thread_idx().x.eq(0u32), |_| oi.set(0u32, i));
        })
    }

    /// One block per row.
    fn row_sum_kernel() -> Result<Kernel<PLen>> {
        Kernel::<PLen>::build("bench_row_sum", |k, (x, out, cols)| {
            let ncv = cols / 4u64;
            let r = k.block_idx().x.cast::<u64>();
            let t = k.thread_idx().x.cast::<u64>();
            let acc = lanes(
                k,
                x,
                Red::Sum,
                t,
                ncv,
                k.block_dim().x.cast::<u64>(),
                r * ncv,
            );
            let mine = (acc[0].get() + acc[1].get()) + (acc[2].get() + acc[3].get());
            let s = block_reduce(k, mine, Red::Sum);
            k.if_(k.thread_idx().x.eq(0u32), |_| out.set(r, s));
        })
    }

    /// Column sums, pass 1: block (bx, chunk) sums rows `chunk*per ..` of 4 x 256 columns.
    fn col_partial_kernel() -> Result<Kernel<PColPart>> {
        Kernel::<PColPart>::build("bench_col_partial", |k, (x, part, cols, per)| {
            let ncv = cols / 4u64;
            let rows = x.len() / cols;
            let cv = (k.block_idx().x * k.block_dim().x + k.thread_idx().x).cast::<u64>();
            let chunk = k.block_idx().y.cast::<u64>();
            k.if_(cv.lt(ncv), |k| {
                let r0 = chunk * per;
                let r1 = (r0 + per).min(rows);
                let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(0.0f32));
                strided(
                    k,
                    r0,
                    r1,
                    k.lit(1u64),
                    RUNROLL,
                    &|r| x.load_vec::<4>(r * ncv + cv),
                    &|_, v: [Expr<f32>; 4]| {
                        for l in 0..4 {
                            acc[l].set(acc[l].get() + v[l]);
                        }
                    },
                );
                part.store_vec(chunk * ncv + cv, acc.map(|a| a.get()));
            });
        })
    }

    /// Column sums, pass 2: each thread adds its 4 columns' chunk partials in order.
    fn col_final_kernel() -> Result<Kernel<PLen>> {
        Kernel::<PLen>::build("bench_col_final", |k, (part, out, chunks)| {
            let ncv = out.len() / 4u64;
            let cv = k.grid1();
            k.if_(cv.lt(ncv), |k| {
                let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(0.0f32));
                k.for_range(k.lit(0u64), chunks, |_, c| {
                    let v = part.load_vec::<4>(c * ncv + cv);
                    for l in 0..4 {
                        acc[l].set(acc[l].get() + v[l]);
                    }
                });
                out.store_vec(cv, acc.map(|a| a.get()));
            });
        })
    }
}
