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
//! a workload that fails prints a line with `"error"` and the run goes on; one this machine cannot
//! run (a multi-GPU row on one GPU or without NCCL) prints a line with `"skip"`. Device work is timed
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
    "peer_copy",
    "all_reduce",
    "sum_1gpu",
    "sum_sharded",
    "add_1gpu",
    "add_sharded",
    "scan_1gpu",
    "scan_sharded",
    "all_reduce_procs",
    "sum_procs",
    "add_procs",
    "all_reduce_sockets",
    "sum_sockets",
    "add_sockets",
    "matmul_f32",
    "matmul_tf32",
    "matmul_f16",
    "matmul_bf16",
    "matmul_fp8",
    "matmul_batched",
    "matmul_splitk",
    "gemm_bias_gelu",
    "attention",
    "attention_causal",
    "resize",
    "mandelbrot_dp",
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
    if std::env::var(procs::RANK_ENV).is_ok() {
        // A rank of the two-process rows, started by the bench itself.
        return procs::rank_main(&opts);
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

#[path = "bench/attention.rs"]
mod attention;
#[path = "bench/data.rs"]
mod data;
#[path = "bench/device.rs"]
mod device;
#[path = "bench/dynamic.rs"]
mod dynamic;
#[path = "bench/host.rs"]
mod host;
#[path = "bench/matmul.rs"]
mod matmul;
#[path = "bench/mma_peak.rs"]
mod mma_peak;
#[path = "bench/multi.rs"]
mod multi;
#[path = "bench/opts.rs"]
mod opts;
#[path = "bench/ours.rs"]
mod ours;
#[path = "bench/procs.rs"]
mod procs;
#[path = "bench/record.rs"]
mod record;
#[path = "bench/texture.rs"]
mod texture;
#[path = "bench/wgmma_gemm.rs"]
mod wgmma_gemm;

use data::*;
use opts::*;
use record::*;

// ---------------------------------------------------------------------------------------------
// The benchmark.

pub(crate) struct Bench {
    ctx: Context,
    stream: Stream,
    sms: u32,
    opts: Opts,
    sizes: Sizes,
    seed: u64,
    ops: ours::Ops,
}

impl Bench {
    pub(crate) fn new(opts: Opts) -> Res<Bench> {
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
                "{} (sm_{ma}{mi}, {sms} SMs, {:.0} GiB; {} devices), driver CUDA {drv}, cudajit {}, {} host threads, seed {seed:x}{}",
                dev.name().map_err(e)?,
                dev.total_memory().map_err(e)? as f64 / (1u64 << 30) as f64,
                cudajit::device_count().map_err(e)?,
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

    pub(crate) fn run_all(&self) {
        pub(crate) type Work = fn(&Bench) -> Res<()>;
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
            (&["peer_copy"], Bench::peer_copy),
            (&["all_reduce"], Bench::all_reduce),
            (&["sum_1gpu", "add_1gpu", "scan_1gpu"], Bench::one_gpu),
            (
                &["sum_sharded", "add_sharded", "scan_sharded"],
                Bench::sharded,
            ),
            (
                &[
                    "all_reduce_procs",
                    "sum_procs",
                    "add_procs",
                    "all_reduce_sockets",
                    "sum_sockets",
                    "add_sockets",
                ],
                Bench::procs,
            ),
            (
                &[
                    "matmul_f32",
                    "matmul_tf32",
                    "matmul_f16",
                    "matmul_bf16",
                    "matmul_fp8",
                    "matmul_batched",
                    "matmul_splitk",
                    "gemm_bias_gelu",
                ],
                Bench::matmuls,
            ),
            (&["attention", "attention_causal"], Bench::attention),
            (&["resize"], Bench::resize),
            (&["mandelbrot_dp"], Bench::dynamic),
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
    pub(crate) fn size_of(&self, work: &str) -> String {
        let s = &self.sizes;
        match work {
            "add_f64" => size_1d(s.n64, "f64"),
            "scan_i32" => size_1d(s.n, "i32"),
            "bcast_add" | "row_sum" | "col_sum" => format!("{}x{} f32", s.mat, s.mat),
            "attention" | "attention_causal" if self.opts.quick => "2x2x512 d128 bf16".into(),
            "attention" | "attention_causal" => "8x16x4096 d128 bf16".into(),
            "launch" => "1 elem, 3 arrays".into(),
            "resize" => texture::resize_label(self.opts.quick),
            "mandelbrot_dp" => {
                let w = dynamic::side(self.opts.quick);
                format!("{w}x{w} u32, dwell <= 256")
            }
            "compile_cold" | "compile_cached" => "new kernel".into(),
            "compile_new_process" => "cached kernel".into(),
            "graph" => format!("{} kernels, 32 elem", runtime::GRAPH_KERNELS),
            "pool" => size_bytes(runtime::POOL_BYTES),
            w if w.starts_with("h2d") || w.starts_with("d2h") => size_bytes(s.xfer * 4),
            "peer_copy" => multi::peer_label(s.peer_bytes, 0, 1),
            "all_reduce" => {
                multi::all_reduce_label(s.all_reduce_bytes.last().copied().unwrap_or(0))
            }
            "sum_1gpu" | "sum_sharded" | "add_1gpu" | "add_sharded" | "scan_1gpu"
            | "scan_sharded" => size_1d(s.n_multi, "f32"),
            w if w.ends_with("_procs") || w.ends_with("_sockets") => {
                procs::labels(s, w).pop().unwrap_or_default()
            }
            _ => size_1d(s.n, "f32"),
        }
    }

    pub(crate) fn seed(&self, salt: &str) -> u64 {
        salt.bytes().fold(self.seed, |h, b| splitmix(h ^ b as u64))
    }

    pub(crate) fn c<T>(&self, r: cudajit::Result<T>) -> Res<T> {
        r.map_err(|e| e.to_string())
    }

    /// Runs `f` `warmup` times, then `reps` times between two events each: the times in ms.
    pub(crate) fn time_gpu(&self, mut f: impl FnMut() -> cudajit::Result<()>) -> Res<Vec<f64>> {
        self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)
    }

    pub(crate) fn time_gpu_n(
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

    pub(crate) fn upload<T: cudajit::DeviceCopy>(&self, host: &[T]) -> Res<A1<T>> {
        self.c(self.ctx.to_device(host))
    }

    /// An output array filled with NaN, so that unwritten elements fail the check.
    pub(crate) fn poisoned_f32(&self, n: usize) -> Res<A1<f32>> {
        let mut a = self.c(self.ctx.alloc::<f32, _>(n))?;
        self.c(a.fill_async(f32::NAN, &self.stream))?;
        Ok(a)
    }

    pub(crate) fn poisoned_f64(&self, n: usize) -> Res<A1<f64>> {
        let mut a = self.c(self.ctx.alloc::<f64, _>(n))?;
        self.c(a.fill_async(f64::NAN, &self.stream))?;
        Ok(a)
    }
}
