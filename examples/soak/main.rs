//! Soak test: many host threads share the GPUs for a while. Every other round of each thread
//! mixes allocation, pageable and pinned copies (small and staged-large), builder kernels,
//! `Elementwise`, reductions, events with timing, host callbacks, stream futures, and stream
//! creation and destruction; the rounds between take the newer paths in turn (`newer.rs`): CUDA
//! graphs with memory from the pool, the pool with scans, sharded arrays over devices 0 and 1,
//! and NCCL collectives (the last two where there are two GPUs). Every result is checked.
//! Device memory in use (on each device) and the process's resident memory are read after a
//! warm-up round and at the end and printed; the run fails on any error, wrong result, or
//! growth beyond a small allowance.
//!
//! ```sh
//! cargo run --release --example soak -- [THREADS] [SECONDS]     # default 16 threads, 60 s
//! ```
//!
//! glibc's allocator keeps freed large blocks in per-thread arenas once its dynamic mmap
//! threshold has risen past them (the 20 MiB buffers here), which reads as hundreds of MiB of
//! growth that no leak causes (measured on an H200 host: +632 MiB in 25 s by default, +0.9
//! MiB with the threshold fixed). So the soak runs itself again with `MALLOC_MMAP_THRESHOLD_`
//! fixed at 1 MiB and `MALLOC_ARENA_MAX=4` unless the threshold is already set.

mod newer;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudajit::codegen::Kernel;
use cudajit::ops::{Elem, Elementwise, ReduceOps, Scalar};
use cudajit::prelude::*;

type Axpy = Elementwise<(Scalar<f32>, Elem<f32>, Elem<f32>), cudajit::codegen::Expr<f32>>;

fn main() {
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        let status = std::env::current_exe().and_then(|exe| {
            std::process::Command::new(exe)
                .args(std::env::args().skip(1))
                .env("MALLOC_MMAP_THRESHOLD_", "1048576")
                .env("MALLOC_ARENA_MAX", "4")
                .status()
        });
        match status {
            Ok(s) => std::process::exit(s.code().unwrap_or(1)),
            Err(e) => {
                eprintln!("soak: could not run itself again with a fixed malloc threshold: {e}");
                std::process::exit(1);
            }
        }
    }
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let threads = args.first().copied().unwrap_or(16).max(1) as usize;
    let seconds = args.get(1).copied().unwrap_or(60);
    if let Err(e) = run(threads, seconds) {
        eprintln!("soak: {e}");
        std::process::exit(1);
    }
}

/// Resident memory of this process, bytes (Linux; 0 elsewhere).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Device memory in use on each device, bytes: this process's own where `nvidia-smi` lists it
/// (`--query-compute-apps`: other processes on the GPUs, e.g. a fuzzing campaign beside the
/// soak, do not count), else the whole device's.
fn device_used(ctxs: &[Context]) -> Result<Vec<u64>> {
    if let Some(own) = own_device_memory(ctxs) {
        return Ok(own);
    }
    ctxs.iter()
        .map(|c| {
            let (free, total) = c.memory_info()?;
            Ok((total - free) as u64)
        })
        .collect()
}

/// This process's device memory on each of `ctxs`' devices, as `nvidia-smi` reports it (MiB
/// granularity); `None` where it cannot say (no nvidia-smi, or another PID namespace).
fn own_device_memory(ctxs: &[Context]) -> Option<Vec<u64>> {
    let run = |args: &[&str]| {
        let out = std::process::Command::new("nvidia-smi")
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let gpus = run(&["--query-gpu=index,pci.bus_id", "--format=csv,noheader"])?;
    let apps = run(&[
        "--query-compute-apps=pid,gpu_bus_id,used_memory",
        "--format=csv,noheader,nounits",
    ])?;
    let me = std::process::id().to_string();
    let mut per_bus = std::collections::HashMap::new();
    let mut seen = false;
    for line in apps.lines() {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() == 3 && f[0] == me {
            seen = true;
            *per_bus.entry(f[1].to_lowercase()).or_insert(0u64) += f[2].parse::<u64>().ok()? << 20;
        }
    }
    if !seen {
        return None;
    }
    // nvidia-smi's index order is the PCI order, which CUDA's default order follows.
    let buses: Vec<String> = gpus
        .lines()
        .filter_map(|l| l.split(',').nth(1).map(|b| b.trim().to_lowercase()))
        .collect();
    Some(
        (0..ctxs.len())
            .map(|k| {
                buses
                    .get(k)
                    .and_then(|b| per_bus.get(b))
                    .copied()
                    .unwrap_or(0)
            })
            .collect(),
    )
}

/// Megabytes of each device's reading, for printing.
fn mib(v: &[u64]) -> String {
    v.iter()
        .map(|b| format!("{:.1}", *b as f64 / 1048576.0))
        .collect::<Vec<_>>()
        .join(" + ")
}

struct Shared {
    ctx: Context,
    scale: Kernel<(&'static [f32], &'static mut [f32], f32)>,
    axpy: Axpy,
    newer: newer::Newer,
    ops: AtomicU64,
    stop: AtomicBool,
}

fn run(threads: usize, seconds: u64) -> Result<()> {
    let ctx = Context::new(0)?;
    let ctxs: Vec<Context> = (0..cudajit::device_count()?.min(2))
        .map(Context::new)
        .collect::<Result<_>>()?;
    let newer = newer::Newer::new()?;
    println!(
        "soak: {threads} threads for {seconds} s on {} ({} device(s)); newer paths: {}",
        ctx.device().name()?,
        ctxs.len(),
        newer.describe()
    );
    let scale = Kernel::<(&[f32], &mut [f32], f32)>::build("soak_scale", |k, (x, out, a)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) * a));
    })?;
    let axpy: Axpy = Elementwise::new("soak_axpy", |(a, x, y)| a * x + y)?;
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        scale,
        axpy,
        newer,
        ops: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });

    // Warm-up: one round per thread, so caches, staging buffers and pools exist before the
    // first reading.
    std::thread::scope(|s| -> Result<()> {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let sh = &shared;
                s.spawn(move || {
                    round(sh, t as u64, 0)?;
                    sh.newer.round(&sh.ctx, t as u64, t as u64)
                })
            })
            .collect();
        for h in hs {
            h.join()
                .map_err(|_| Error::Usage("a soak thread panicked".into()))??;
        }
        Ok(())
    })?;
    for c in &ctxs {
        c.synchronize()?;
    }
    let (dev0, rss0) = (device_used(&ctxs)?, rss_bytes());
    println!(
        "after warm-up: device memory in use {} MiB ({}), host RSS {:.1} MiB",
        mib(&dev0),
        if own_device_memory(&ctxs).is_some() {
            "this process's, from nvidia-smi"
        } else {
            "the whole device's"
        },
        rss0 as f64 / 1048576.0
    );

    let t0 = Instant::now();
    let result = std::thread::scope(|s| -> Result<()> {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let sh = &shared;
                s.spawn(move || -> Result<()> {
                    let mut r = 1u64;
                    while !sh.stop.load(Ordering::Relaxed) {
                        if r % 2 == 0 {
                            round(sh, t as u64, r)?;
                        } else {
                            sh.newer.round(&sh.ctx, t as u64, r / 2)?;
                        }
                        r += 1;
                    }
                    Ok(())
                })
            })
            .collect();
        while t0.elapsed() < Duration::from_secs(seconds) {
            std::thread::sleep(Duration::from_millis(200));
            if hs.iter().any(|h| h.is_finished()) {
                break; // a thread stopped early: an error
            }
        }
        shared.stop.store(true, Ordering::Relaxed);
        let mut first = Ok(());
        for h in hs {
            let r = h
                .join()
                .map_err(|_| Error::Usage("a soak thread panicked".into()))
                .and_then(|r| r);
            if first.is_ok() {
                first = r;
            }
        }
        first
    });
    for c in &ctxs {
        c.synchronize()?;
    }
    let (dev1, rss1) = (device_used(&ctxs)?, rss_bytes());
    let ops = shared.ops.load(Ordering::Relaxed);
    let kinds: Vec<String> = newer::KINDS
        .iter()
        .zip(&shared.newer.done)
        .map(|(k, n)| format!("{} {k}", n.load(Ordering::Relaxed)))
        .collect();
    let grew: Vec<f64> = dev0
        .iter()
        .zip(&dev1)
        .map(|(a, b)| (*b as f64 - *a as f64) / 1048576.0)
        .collect();
    println!(
        "after {:.0} s: {ops} classic rounds and {}; device memory in use {} MiB ({} MiB), host RSS {:.1} MiB ({:+.1} MiB)",
        t0.elapsed().as_secs_f64(),
        kinds.join(", "),
        mib(&dev1),
        grew.iter().map(|g| format!("{g:+.1}")).collect::<Vec<_>>().join(", "),
        rss1 as f64 / 1048576.0,
        (rss1 as f64 - rss0 as f64) / 1048576.0
    );
    result?;
    // Allowances: the driver's own pools may round up by a few MiB (the stream-ordered pool
    // keeps what it has until its release threshold); the allocator may keep some freed host
    // memory.
    for (k, (a, b)) in dev0.iter().zip(&dev1).enumerate() {
        if *b > a + (64 << 20) {
            return Err(Error::Usage(format!(
                "device {k}'s memory grew by {} MiB",
                (b - a) >> 20
            )));
        }
    }
    if rss1 > rss0 + (256 << 20) {
        return Err(Error::Usage(format!(
            "host memory grew by {} MiB",
            (rss1 - rss0) >> 20
        )));
    }
    println!("soak: ok");
    Ok(())
}

/// Waits for a future by polling it (a stream's `done()` future needs no executor).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = std::task::Waker::from(Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// One round of mixed work on a new stream, every result checked.
fn round(sh: &Shared, t: u64, r: u64) -> Result<()> {
    // Never beside a capture (newer.rs, `CAPTURE`).
    let _beside = newer::CAPTURE.read().unwrap_or_else(|e| e.into_inner());
    let ctx = &sh.ctx;
    let s = ctx.new_stream()?;
    // Sizes cycle through small, medium, and (rarely) staged-large pageable copies.
    let n = match (t + r) % 16 {
        0 => (5 << 20) + 3, // 20 MiB of f32: staged through pinned buffers
        k => 1000 + (k as usize * 7919 + r as usize * 131) % 200_000,
    };
    let x: Vec<f32> = (0..n).map(|i| ((i as u64 + t + r) % 1000) as f32).collect();
    let dx = s.to_device(&x)?;
    let mut out = ctx.alloc::<f32, _>(n)?;
    let (start, end) = (ctx.new_event()?, ctx.new_event()?);
    start.record(&s)?;
    sh.scale.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256)?,
        (&dx, &mut out, 2.0f32),
    )?;
    end.record(&s)?;
    let y = sh.axpy.call(&s, (0.5f32, &out, &dx))?; // 0.5 * 2x + x = 2x
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = flag.clone();
    s.launch_host_func(move || f2.store(true, Ordering::SeqCst))?;
    let total = y.sum_f64(&s)?;
    let want: f64 = x.iter().map(|&v| 2.0 * v as f64).sum();
    if (total - want).abs() > want.abs() * 1e-5 + 1.0 {
        return Err(Error::Usage(format!(
            "thread {t} round {r}: sum {total}, want {want}"
        )));
    }
    // The result into pinned memory, then wait for the stream through its future.
    let mut pinned = ctx.alloc_pinned::<f32>(n)?;
    pinned.copy_from_device_async(&y, &s)?;
    block_on(s.done()?)?;
    if !flag.load(Ordering::SeqCst) {
        return Err(Error::Usage(format!(
            "thread {t} round {r}: the host callback did not run before the stream finished"
        )));
    }
    pinned.wait()?;
    let got = pinned.as_slice()?;
    if let Some(i) = (0..n).find(|&i| got[i] != 2.0 * x[i]) {
        return Err(Error::Usage(format!(
            "thread {t} round {r}: element {i} is {}, want {}",
            got[i],
            2.0 * x[i]
        )));
    }
    let ms = cudajit::elapsed_ms(&start, &end)?;
    if ms.is_nan() || ms < 0.0 {
        return Err(Error::Usage(format!(
            "thread {t} round {r}: elapsed {ms} ms"
        )));
    }
    if n > (4 << 20) {
        let back = y.to_vec_async(&s)?; // a staged-large pageable copy back
        if back[n - 1] != 2.0 * x[n - 1] {
            return Err(Error::Usage(format!(
                "thread {t} round {r}: last element wrong"
            )));
        }
    }
    sh.ops.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
