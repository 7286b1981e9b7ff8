//! Where the time goes when a kernel is compiled, loaded and launched, on device 0.
//!
//! `cargo run --release --example kernel_timings [RUNS]` (default 7 runs per row; medians).
//!
//! 1. Compile + load of a new kernel (a unique name and constant per run, so no cache can help
//!    the first time), each step timed apart: `build` (recording the IR), `ptx` (LLVM, or a
//!    cache hit) and `load` (`cuModuleLoadData`: the driver's PTX JIT, then the function):
//!    - `cold`: empty disk cache (a fresh temporary `CUDAJIT_CACHE_DIR`), nothing in memory.
//!    - `memory`: the same kernels built again in the same process: the PTX comes from the
//!      memory cache; the load is the driver's again (its own JIT cache, `~/.nv/ComputeCache`,
//!      has just seen this PTX).
//!    - `disk`: a new process (this program, run again) builds the same kernels: the PTX comes
//!      from the disk cache; `disk, no driver cache` is the same with `CUDA_CACHE_DISABLE=1`,
//!      so its load is a full PTX JIT.
//! 2. Host time per launch of a tiny kernel (`(&[f32], &[f32], &mut [f32])`, one block of 32
//!    threads): 10,000 launches then one synchronize, median of 5 repetitions, through
//!    `Kernel::launch` and through the raw `Function::launch`.
//!
//! Every measurement runs in a child process (this program with `--phase ...`) whose cache
//! directory is the temporary one, so the user's cache is never touched. Exits non-zero on
//! any error.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

type Res<T> = std::result::Result<T, String>;

const LAUNCHES: u32 = 10_000;
const LAUNCH_REPS: usize = 5;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = if args.get(1).map(String::as_str) == Some("--phase") {
        child(&args[2..])
    } else {
        let runs = match args.get(1).map(|s| s.parse::<usize>()) {
            None => Ok(7),
            Some(Ok(n)) if n > 0 => Ok(n),
            Some(_) => Err(format!("usage: {} [RUNS > 0]", args[0])),
        };
        runs.and_then(parent)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kernel_timings: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: runs the phases in child processes and prints the table.

fn parent(runs: usize) -> Res<()> {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 ^ std::process::id() as u64)
        .unwrap_or(std::process::id() as u64);
    let dir = std::env::temp_dir().join(format!("cudajit-kernel-timings-{nonce:x}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Private whatever the umask: the disk cache trusts no directory that others can write.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let out = run_phases(&dir, nonce, runs);
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    print_report(&out, runs);
    Ok(())
}

struct ChildOut {
    stdout: String,
    stderr: String,
}

impl ChildOut {
    /// Log lines of one kind of cache event (`CUDAJIT_LOG_CACHE=1`).
    fn events(&self, event: &str) -> usize {
        let prefix = format!("cudajit cache: {event}");
        self.stderr
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .count()
    }

    /// `(build, ptx, load)` in ms of every `STEPS <label>` line.
    fn steps(&self, label: &str) -> Vec<[f64; 3]> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                if w.next() != Some("STEPS") || w.next() != Some(label) {
                    return None;
                }
                let v: Vec<f64> = w.filter_map(|x| x.parse().ok()).collect();
                (v.len() == 3).then(|| [v[0], v[1], v[2]])
            })
            .collect()
    }

    /// Values of every `<tag> <label> <value>` line.
    fn values(&self, tag: &str, label: &str) -> Vec<f64> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(tag) && w.next() == Some(label))
                    .then(|| w.next()?.parse().ok())?
            })
            .collect()
    }
}

fn run_child(
    dir: &Path,
    phase: &str,
    nonce: u64,
    runs: usize,
    no_driver_cache: bool,
) -> Res<ChildOut> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["--phase", phase, &nonce.to_string(), &runs.to_string()])
        .env("CUDAJIT_CACHE_DIR", dir)
        .env("CUDAJIT_LOG_CACHE", "1")
        .env_remove("CUDAJIT_CACHE");
    if no_driver_cache {
        cmd.env("CUDA_CACHE_DISABLE", "1");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running phase {phase}: {e}"))?;
    let co = ChildOut {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    if !out.status.success() {
        let log: String = co
            .stderr
            .lines()
            .filter(|l| !l.starts_with("cudajit cache: "))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!("phase {phase} failed ({}):\n{log}", out.status));
    }
    Ok(co)
}

struct Phases {
    compile: ChildOut,
    disk: ChildOut,
    disk_nodrv: ChildOut,
    launch: ChildOut,
    device: String,
}

fn run_phases(dir: &Path, nonce: u64, runs: usize) -> Res<Phases> {
    let compile = run_child(dir, "compile", nonce, runs, false)?;
    let disk = run_child(dir, "disk", nonce, runs, false)?;
    let disk_nodrv = run_child(dir, "disk", nonce, runs, true)?;
    let launch = run_child(dir, "launch", nonce, runs, false)?;
    let device = compile
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("DEVICE "))
        .unwrap_or("?")
        .to_string();
    Ok(Phases {
        compile,
        disk,
        disk_nodrv,
        launch,
        device,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn print_report(p: &Phases, runs: usize) {
    println!("kernel_timings on {}", p.device);
    println!();
    println!("compile + load of a new kernel (median of {runs} runs, ms)");
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>9}   cache events",
        "", "build", "ptx", "load", "total"
    );
    // Each child also builds one warm-up kernel first: compiled in the compile phase, read
    // from disk in the disk phases.
    let disk_events = |o: &ChildOut| {
        format!(
            "{}/{runs} disk hits, {} compiled",
            o.events("disk hit").saturating_sub(1),
            o.events("compiled")
        )
    };
    let rows: [(&str, &ChildOut, &str, String); 4] = [
        (
            "cold (empty caches)",
            &p.compile,
            "cold",
            format!(
                "{}/{runs} compiled",
                p.compile.events("compiled").saturating_sub(1)
            ),
        ),
        (
            "memory cache",
            &p.compile,
            "memory",
            format!("{}/{runs} memory hits", p.compile.events("memory hit")),
        ),
        (
            "disk cache, new process",
            &p.disk,
            "disk",
            disk_events(&p.disk),
        ),
        (
            "  same, no driver cache",
            &p.disk_nodrv,
            "disk",
            disk_events(&p.disk_nodrv),
        ),
    ];
    for (name, out, label, events) in rows {
        let s = out.steps(label);
        let col = |i: usize| median(s.iter().map(|r| r[i]).collect());
        let total = median(s.iter().map(|r| r[0] + r[1] + r[2]).collect());
        println!(
            "{name:<24} {:>9.3} {:>9.3} {:>9.3} {:>9.3}   {events}",
            col(0),
            col(1),
            col(2),
            total
        );
    }
    println!();
    println!(
        "host time per launch, 1 block of 32 threads, {LAUNCHES} launches + 1 synchronize \
         (median of {LAUNCH_REPS}, us)"
    );
    println!("{:<24} {:>12} {:>12}", "", "enqueue", "incl. sync");
    for (name, label) in [
        ("Kernel::launch", "typed"),
        ("Function::launch (raw)", "raw"),
    ] {
        println!(
            "{name:<24} {:>12.3} {:>12.3}",
            median(p.launch.values("ENQUEUE", label)),
            median(p.launch.values("TOTAL", label))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The children.

fn child(args: &[String]) -> Res<()> {
    let [phase, nonce, runs] = args else {
        return Err("usage: --phase PHASE NONCE RUNS".into());
    };
    let nonce: u64 = nonce.parse().map_err(|_| "bad nonce")?;
    let runs: usize = runs.parse().map_err(|_| "bad run count")?;
    let ctx = Context::new(0).map_err(|e| e.to_string())?;
    match phase.as_str() {
        "compile" => {
            let dev = ctx.device();
            let (ma, mi) = dev.compute_capability().map_err(|e| e.to_string())?;
            println!(
                "DEVICE {} (sm_{ma}{mi}), driver {:?}",
                dev.name().map_err(|e| e.to_string())?,
                cudajit::driver_version().map_err(|e| e.to_string())?
            );
            // Warm-up: LLVM's and the driver's one-time initialisation.
            compile_and_load(&ctx, nonce, usize::MAX)?;
            for i in 0..runs {
                print_steps("cold", compile_and_load(&ctx, nonce, i)?);
            }
            for i in 0..runs {
                print_steps("memory", compile_and_load(&ctx, nonce, i)?);
            }
            Ok(())
        }
        "disk" => {
            compile_and_load(&ctx, nonce, usize::MAX)?;
            for i in 0..runs {
                print_steps("disk", compile_and_load(&ctx, nonce, i)?);
            }
            Ok(())
        }
        "launch" => launch_timings(&ctx).map_err(|e| e.to_string()),
        other => Err(format!("unknown phase `{other}`")),
    }
}

fn print_steps(label: &str, [b, p, l]: [Duration; 3]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("STEPS {label} {:.4} {:.4} {:.4}", ms(b), ms(p), ms(l));
}

/// Builds kernel `i` of this run (a name and constant no earlier run used), compiles it for
/// the device and loads it: the time of each step.
fn compile_and_load(ctx: &Context, nonce: u64, i: usize) -> Res<[Duration; 3]> {
    let name = format!("timing_{nonce:x}_{i:x}");
    let c = (nonce % 1000) as f32 + i as f32 * 0.001 + 0.5;
    let t = Instant::now();
    let k = Kernel::<(&[f32], &mut [f32])>::build(&name, |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| {
            let v = x.at(i) * c + 1.0;
            out.set(i, v.abs().sqrt() * (v - c).mul_add(2.0, 0.25));
        });
    })
    .map_err(|e| e.to_string())?;
    let build = t.elapsed();
    let opts = k.options_for(&ctx.device()).map_err(|e| e.to_string())?;
    let t = Instant::now();
    k.compile_ptx(&opts).map_err(|e| e.to_string())?;
    let ptx = t.elapsed();
    let t = Instant::now();
    k.function(ctx).map_err(|e| e.to_string())?;
    let load = t.elapsed();
    Ok([build, ptx, load])
}

fn launch_timings(ctx: &Context) -> cudajit::Result<()> {
    let stream = ctx.new_stream()?;
    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("timing_add", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })?;
    let n = 32usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 100.0 - 2.0 * i as f32).collect();
    let x = ctx.to_device(&xs[..])?;
    let y = ctx.to_device(&ys[..])?;
    let mut out = ctx.zeros::<f32, _>(n)?;
    let cfg = LaunchConfig::new(1u32, 32u32);
    let f = add.function(ctx)?;
    let len = n as u64;
    let expected: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + b).collect();

    for (label, typed) in [("typed", true), ("raw", false)] {
        let launch = |out: &mut DeviceArray<f32, ndarray::Ix1>| -> cudajit::Result<()> {
            if typed {
                add.launch(&stream, cfg, (&x, &y, out))
            } else {
                // SAFETY: a builder kernel's parameters are, per array, its pointer and then
                // its extent per dimension as u64: (x, len, y, len, out, len), with 32 elements
                // each and one block of 32 threads.
                unsafe { f.launch(&stream, cfg, (&x, len, &y, len, &mut *out, len)) }
            }
        };
        // Warm-up, and a check that the launch computes the right thing.
        out.fill_async(0.0, &stream)?;
        launch(&mut out)?;
        stream.synchronize()?;
        if out.to_vec()? != expected {
            return Err(cudajit::Error::Usage(format!(
                "{label} launch computed a wrong result"
            )));
        }
        for _ in 0..LAUNCH_REPS {
            let t = Instant::now();
            for _ in 0..LAUNCHES {
                launch(&mut out)?;
            }
            let enqueue = t.elapsed();
            stream.synchronize()?;
            let total = t.elapsed();
            let us = |d: Duration| d.as_secs_f64() * 1e6 / LAUNCHES as f64;
            println!("ENQUEUE {label} {:.4}", us(enqueue));
            println!("TOTAL {label} {:.4}", us(total));
        }
    }
    Ok(())
}
