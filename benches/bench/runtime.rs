//! Host-bound rows of the runtime around kernels (issue 13): a chain of tiny kernels replayed
//! as one CUDA graph, allocation and free through the stream-ordered memory pool, and a cached
//! kernel loaded by a new process (this binary run again as a child).

use std::time::Instant;

use cudajit::codegen::{Expr, Kernel};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;

use super::{Bench, Rec, Res};

/// Kernels in the graph row's chain.
pub(super) const GRAPH_KERNELS: usize = 100;
/// Graph launches per timed repetition.
const GRAPH_LAUNCHES: usize = 100;
/// Bytes per allocation of the pool row.
pub(super) const POOL_BYTES: usize = 1 << 20;
/// Allocations per timed repetition of the pool row.
const POOL_ITERS: usize = 10_000;
/// Set in the child process of the new-process row: `<tag>:<count>`.
pub(super) const CHILD_ENV: &str = "CUDAJIT_BENCH_NEW_PROCESS";

impl Bench {
    /// A chain of [`GRAPH_KERNELS`] one-block kernels (`out[i] += x[i]` on 32 elements)
    /// captured once, the graph launched [`GRAPH_LAUNCHES`] times then one synchronize: wall
    /// time per kernel. Beside it (`cudajit-diag`), the same kernels launched one by one.
    pub(super) fn graph(&self) -> Res<()> {
        let k = self.c(Kernel::<(&[f32], &mut [f32])>::build(
            "bench_graph_inc",
            |k, (x, out)| {
                let i = k.grid1();
                k.if_(i.lt(out.len()), |_| out.set(i, out.at(i) + x.at(i)));
            },
        ))?;
        let s = &self.stream;
        let x = self.upload(&[1.0f32; 32])?;
        let mut out = self.c(s.zeros::<f32, _>(32))?;
        let cfg = LaunchConfig::new(1, 32);
        let graph = self.c(s.capture(|s| {
            for _ in 0..GRAPH_KERNELS {
                k.launch(s, cfg, (&x, &mut out))?;
            }
            Ok(())
        }))?;
        let exec = self.c(graph.instantiate())?;
        let mut runs = 0usize;
        let mut launch = || -> Res<()> {
            // SAFETY: `x` and `out` outlive every launch (synchronised below).
            self.c(unsafe { exec.launch(s) })?;
            runs += GRAPH_KERNELS;
            Ok(())
        };
        for _ in 0..10 {
            launch()?;
        }
        self.c(s.synchronize())?;
        let mut per = Vec::new();
        for _ in 0..self.opts.reps.max(20) {
            let t0 = Instant::now();
            for _ in 0..GRAPH_LAUNCHES {
                launch()?;
            }
            self.c(s.synchronize())?;
            per.push(t0.elapsed().as_secs_f64() * 1e3 / (GRAPH_LAUNCHES * GRAPH_KERNELS) as f64);
        }
        let got = self.c(out.to_vec_async(s))?;
        if got.iter().any(|&v| v != runs as f32) {
            return Err(format!("graph: got {}, want {runs}", got[0]));
        }
        let size = self.size_of("graph");
        Rec::new("graph", &size)
            .variant(format!(
                "{GRAPH_KERNELS} kernels captured once; the graph launched {GRAPH_LAUNCHES} times then one synchronize, per kernel"
            ))
            .times(&per)
            .unit("us")
            .emit();
        let mut eager = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            for _ in 0..GRAPH_LAUNCHES * GRAPH_KERNELS / 10 {
                self.c(k.launch(s, cfg, (&x, &mut out)))?;
            }
            self.c(s.synchronize())?;
            eager.push(
                t0.elapsed().as_secs_f64() * 1e3 / (GRAPH_LAUNCHES * GRAPH_KERNELS / 10) as f64,
            );
        }
        Rec::new("graph", &size)
            .imp("cudajit-diag")
            .variant("the same kernel launched one by one (Kernel::launch), per kernel")
            .times(&eager)
            .unit("us")
            .emit();
        Ok(())
    }

    /// [`POOL_ITERS`] allocations of [`POOL_BYTES`] from the stream-ordered pool, each dropped
    /// at once (`Stream::alloc_async` + drop), then one synchronize: time per allocation+free,
    /// with the pool keeping freed memory (release threshold: no limit, as torch's caching
    /// allocator and CuPy's pool keep theirs).
    pub(super) fn pool(&self) -> Res<()> {
        let s = &self.stream;
        let pool = self.c(self.ctx.mem_pool())?;
        let threshold = self.c(pool.release_threshold())?;
        self.c(pool.set_release_threshold(u64::MAX))?;
        let run = || -> Res<f64> {
            let t0 = Instant::now();
            for _ in 0..POOL_ITERS {
                let a = self.c(s.alloc_async::<u8, _>(POOL_BYTES))?;
                drop(a);
            }
            self.c(s.synchronize())?;
            Ok(t0.elapsed().as_secs_f64() * 1e3 / POOL_ITERS as f64)
        };
        run()?;
        let per = (0..self.opts.reps.max(5))
            .map(|_| run())
            .collect::<Res<Vec<f64>>>();
        self.c(pool.set_release_threshold(threshold))?;
        let stats = self.c(pool.stats())?;
        Rec::new("pool", &self.size_of("pool"))
            .variant(format!(
                "Stream::alloc_async + drop, {POOL_ITERS} then one synchronize, per pair"
            ))
            .times(&per?)
            .unit("us")
            .note(format!(
                "pool after: {} B used, {} B reserved, high {} B",
                stats.used, stats.reserved, stats.reserved_high
            ))
            .emit();
        Ok(())
    }

    /// The kernels `compile` built, loaded again by a new process (this binary, as a child
    /// with the same disk cache): build + first apply + synchronize per kernel, the context
    /// made before the clock starts.
    pub(super) fn new_process(&self, tag: u64, count: usize) -> Res<()> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let out = std::process::Command::new(exe)
            .env(CHILD_ENV, format!("{tag:x}:{count}"))
            .output()
            .map_err(|e| format!("new process: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let times: Vec<f64> = text
            .lines()
            .find_map(|l| l.strip_prefix("new-process-ms "))
            .ok_or_else(|| {
                format!(
                    "new process: no times (exit {:?}): {}{}",
                    out.status.code(),
                    text,
                    String::from_utf8_lossy(&out.stderr)
                )
            })?
            .split_whitespace()
            .map(|t| t.parse::<f64>().map_err(|e| e.to_string()))
            .collect::<Res<_>>()?;
        let (first, rest) = times
            .split_first()
            .ok_or("new process: no kernels were timed")?;
        let size = self.size_of("compile_new_process");
        Rec::new("compile_new_process", &size)
            .variant("the cached kernels in a new process: Elementwise::new + first apply + sync (cubin from the disk cache), after the first")
            .times(rest)
            .note(format!("the first kernel of the process (one-time set-up included): {first:.3} ms"))
            .emit();
        Ok(())
    }
}

/// The child process of [`Bench::new_process`]: builds and runs the kernels `compile` made
/// (same names, same bodies), printing `new-process-ms t0 t1 ...`.
pub(super) fn new_process_child(spec: &str) -> Res<()> {
    let (tag, count) = spec
        .split_once(':')
        .and_then(|(t, c)| Some((u64::from_str_radix(t, 16).ok()?, c.parse::<usize>().ok()?)))
        .ok_or_else(|| format!("bad {CHILD_ENV} value {spec:?}"))?;
    let e = |e: cudajit::Error| e.to_string();
    let ctx = Context::new(0).map_err(e)?;
    let s = ctx.new_stream().map_err(e)?;
    let x = s.to_device(&vec![0.5f32; 1024]).map_err(e)?;
    let mut out = s.zeros::<f32, _>(1024).map_err(e)?;
    s.synchronize().map_err(e)?;
    let mut times = Vec::new();
    for i in 0..count {
        let c = super::compile_constant(i);
        let t0 = Instant::now();
        let ew = Elementwise::<(Elem<f32>,), Expr<f32>>::new(
            &super::compile_name(tag, i),
            move |(x,)| x * c + 0.5,
        )
        .map_err(e)?;
        ew.apply(&s, (&x,), &mut out).map_err(e)?;
        s.synchronize().map_err(e)?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let got = out.to_vec_async(&s).map_err(e)?;
    let want = 0.5 * super::compile_constant(count - 1) + 0.5;
    if got.iter().any(|&v| v != want) {
        return Err(format!("new process: got {}, want {want}", got[0]));
    }
    let stats = cudajit::codegen::cache_stats();
    if stats.compiles > 0 {
        return Err(format!(
            "new process: {} kernels compiled; the disk cache did not serve them ({stats:?})",
            stats.compiles
        ));
    }
    let line: Vec<String> = times.iter().map(|t| format!("{t:.4}")).collect();
    println!("new-process-ms {}", line.join(" "));
    eprintln!("{stats:?}");
    Ok(())
}
