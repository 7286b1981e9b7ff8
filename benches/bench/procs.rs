//! The two-process rows: our side as two processes, one GPU each, as torch.distributed's rows
//! run. The bench starts itself twice as ranks (torch's `MASTER_ADDR`/`MASTER_PORT`/`RANK`/
//! `WORLD_SIZE`, plus [`RANK_ENV`] naming the works), the ranks meet by
//! `ProcessGroup::from_env` and run:
//!
//! - `all_reduce_procs`: `Communicator::all_reduce_in_place` (sum) of f32 buffers of each
//!   `sizes.all_reduce_bytes` per rank (busbw as nccl-tests);
//! - `sum_procs`: `RankShardedArray::sum_into` a device scalar over `n_multi` f32 (each rank's
//!   half from its own seed, as torch's rows): the local reduction, an NCCL all-gather of the
//!   partials, the combine;
//! - `add_procs`: `Elementwise::apply_ranks` `c = a + b` over the same layout (no
//!   communication);
//!
//! and the same with NCCL's socket transport forced (`NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1`,
//! the stand-in for two hosts): `all_reduce_sockets`, `sum_sockets`, `add_sockets`.
//!
//! Timed as torch's rows: after warm-up and a barrier, each rank records events around every
//! iteration on its group stream; per iteration the slower rank's time counts (the ranks' times
//! all-gathered), and the median is reported. Every result is checked against the host first.
//! Rank 0 prints the records; the launcher passes them on and writes an error record for any
//! row a rank did not finish.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

use cudajit::distributed::{ProcessGroup, RankShardedArray};
use cudajit::nccl::{self, ReduceOp};
use cudajit::ops::{Elem, Elementwise};

/// Set in a rank's environment: the works it runs (comma-separated).
pub(crate) const RANK_ENV: &str = "CUDAJIT_BENCH_RANK_WORKS";
/// The two-process works over NCCL's default transports (NVLink / shared memory).
const DIRECT: [&str; 3] = ["all_reduce_procs", "sum_procs", "add_procs"];
/// The same works over NCCL's socket transport.
const SOCKETS: [&str; 3] = ["all_reduce_sockets", "sum_sockets", "add_sockets"];
/// What forces the socket transport.
const SOCKET_VARS: [(&str, &str); 2] = [("NCCL_P2P_DISABLE", "1"), ("NCCL_SHM_DISABLE", "1")];

/// The transport a variant name states.
fn transport(sockets: bool) -> &'static str {
    if sockets {
        "NCCL sockets forced (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)"
    } else {
        "NCCL default transports"
    }
}

/// The size labels of a two-process work.
pub(crate) fn labels(sizes: &Sizes, work: &str) -> Vec<String> {
    if work.starts_with("all_reduce") {
        sizes
            .all_reduce_bytes
            .iter()
            .map(|&b| multi::all_reduce_label(b))
            .collect()
    } else {
        vec![size_1d(sizes.n_multi, "f32")]
    }
}

impl Bench {
    /// The two-process rows: starts the ranks (twice: default transports, then sockets) and
    /// passes rank 0's records on.
    pub(crate) fn procs(&self) -> Res<()> {
        for (works, sockets) in [(DIRECT, false), (SOCKETS, true)] {
            let works: Vec<&str> = works
                .into_iter()
                .filter(|w| self.opts.selected(w))
                .collect();
            if works.is_empty() {
                continue;
            }
            let all: Vec<(String, String)> = works
                .iter()
                .flat_map(|w| {
                    labels(&self.sizes, w)
                        .into_iter()
                        .map(|l| (w.to_string(), l))
                })
                .collect();
            let world = self.opts.gpus;
            if let Some(why) = self.multi_unavailable(world, true) {
                for (w, l) in &all {
                    Rec::new(w, l).skip(&why).emit();
                }
                continue;
            }
            let why = match self.run_ranks(&works, sockets, world) {
                Ok(seen) => {
                    for (w, l) in all.iter().filter(|k| !seen.contains(k)) {
                        Rec::new(w, l)
                            .devices(world)
                            .error("rank 0 wrote no record for this row")
                            .emit();
                    }
                    continue;
                }
                Err(e) => e,
            };
            eprintln!("bench: two-process rows: {why}");
            for (w, l) in &all {
                Rec::new(w, l).devices(world).error(&why).emit();
            }
        }
        Ok(())
    }

    /// Runs `works` as `world` ranks of this binary (two; one with `--gpus 1`, a rehearsal);
    /// rank 0's record lines are printed; returns the (work, size) of the records seen, or
    /// why the ranks failed.
    fn run_ranks(&self, works: &[&str], sockets: bool, world: usize) -> Res<Vec<(String, String)>> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut kids = Vec::new();
        for r in 0..world {
            let mut c = Command::new(&exe);
            c.args(std::env::args().skip(1))
                .env(RANK_ENV, works.join(","))
                .env("CUDAJIT_BENCH_SEED", self.seed.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env("RANK", r.to_string())
                .env("LOCAL_RANK", r.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("CUDAJIT_RENDEZVOUS_TIMEOUT", "120")
                .env("CUDAJIT_NCCL_TIMEOUT", "300")
                .stdout(if r == 0 {
                    Stdio::piped()
                } else {
                    Stdio::null()
                });
            for (k, v) in SOCKET_VARS {
                if sockets {
                    c.env(k, v);
                } else {
                    c.env_remove(k);
                }
            }
            kids.push(c.spawn().map_err(|e| format!("starting rank {r}: {e}"))?);
        }
        let out = kids[0].stdout.take().ok_or("rank 0 has no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                println!("{line}");
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                    if let (Some(w), Some(s)) = (v["work"].as_str(), v["size"].as_str()) {
                        seen.push((w.to_string(), s.to_string()));
                    }
                }
            }
            seen
        });
        let limit = Duration::from_secs(if self.opts.quick { 180 } else { 900 });
        let t0 = Instant::now();
        let mut codes: Vec<Option<std::process::ExitStatus>> = vec![None; world];
        while codes.iter().any(Option::is_none) {
            for (k, c) in kids.iter_mut().zip(codes.iter_mut()) {
                if c.is_none() {
                    *c = k.try_wait().map_err(|e| e.to_string())?;
                }
            }
            if t0.elapsed() > limit {
                for k in &mut kids {
                    let _ = k.kill();
                    let _ = k.wait();
                }
                return Err(format!(
                    "the ranks did not finish within {} s",
                    limit.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen = reader.join().map_err(|_| "the reader thread panicked")?;
        let failed: Vec<String> = codes
            .iter()
            .enumerate()
            .filter_map(|(r, c)| c.filter(|s| !s.success()).map(|s| format!("rank {r}: {s}")))
            .collect();
        if !failed.is_empty() && seen.is_empty() {
            return Err(format!("the ranks failed ({})", failed.join(", ")));
        }
        Ok(seen)
    }
}

/// One rank: the works of [`RANK_ENV`]; rank 0 prints the records.
pub(crate) fn rank_main(opts: &Opts) -> ExitCode {
    let works: Vec<String> = std::env::var(RANK_ENV)
        .unwrap_or_default()
        .split(',')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    let sockets = std::env::var("NCCL_P2P_DISABLE").is_ok_and(|v| v == "1");
    let group = match ProcessGroup::from_env() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("bench rank: {e}");
            return ExitCode::FAILURE;
        }
    };
    let seed: u64 = std::env::var("CUDAJIT_BENCH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let r = Ranked {
        group,
        opts,
        sizes: Sizes::new(opts.quick),
        seed,
        sockets,
    };
    let mut code = ExitCode::SUCCESS;
    for w in &works {
        for label in labels(&r.sizes, w) {
            if let Err(e) = r.run(w, &label) {
                eprintln!("bench rank {}: {w} {label}: {e}", r.group.rank());
                r.emit(Rec::new(w, &label).devices(r.group.size()).error(&e));
                code = ExitCode::FAILURE;
                if e.contains("communicator") {
                    return code; // the group is gone: nothing more can run
                }
            }
        }
    }
    if let Err(e) = r.group.barrier() {
        eprintln!("bench rank {}: the final barrier: {e}", r.group.rank());
    }
    code
}

/// A rank's state.
struct Ranked<'a> {
    group: ProcessGroup,
    opts: &'a Opts,
    sizes: Sizes,
    seed: u64,
    sockets: bool,
}

impl Ranked<'_> {
    fn c<T>(&self, r: cudajit::Result<T>) -> Res<T> {
        r.map_err(|e| e.to_string())
    }

    fn seed(&self, salt: &str) -> u64 {
        salt.bytes().fold(self.seed, |h, b| splitmix(h ^ b as u64))
    }

    fn emit(&self, rec: Rec) {
        if self.group.rank() == 0 {
            rec.emit();
        }
    }

    /// Every rank's check agreed on (an all-reduce of a failure flag), so that no rank goes on
    /// to the timed collectives alone: this rank's error, or that another rank's check failed.
    fn agree(&self, mine: Res<()>) -> Res<()> {
        let (g, s) = (&self.group, self.group.stream());
        let mut flag = self.c(s.to_device(&[u32::from(mine.is_err())][..]))?;
        self.c(g.with_comm(|c| c.all_reduce_in_place(&mut flag, ReduceOp::Max, s)))?;
        self.c(g.wait("agreeing on the checks"))?;
        let any = self.c(flag.to_vec_async(s))?[0];
        mine?;
        if any > 0 {
            return Err("another rank's check failed (its standard error says why)".into());
        }
        Ok(())
    }

    /// A device scalar all-reduced (sum) over the ranks, to the host.
    fn all_sum_f64(&self, v: f64) -> Res<f64> {
        let s = self.group.stream();
        let mut d = self.c(s.to_device(&[v][..]))?;
        self.c(self
            .group
            .with_comm(|c| c.all_reduce_in_place(&mut d, ReduceOp::Sum, s)))?;
        self.c(self.group.wait("bench all-reduce"))?;
        Ok(self.c(d.to_vec_async(s))?[0])
    }

    /// torch's timing: warm-up, a barrier, events around every iteration on the group's
    /// stream; per iteration the slower rank's time (all-gathered).
    fn time(&self, f: &mut dyn FnMut() -> cudajit::Result<()>) -> Res<Vec<f64>> {
        self.time_with(self.opts.warmup, self.opts.reps, f)
    }

    /// [`time`](Self::time) with its own warm-up and repetition counts.
    fn time_with(
        &self,
        warmup: usize,
        reps: usize,
        f: &mut dyn FnMut() -> cudajit::Result<()>,
    ) -> Res<Vec<f64>> {
        let (g, s) = (&self.group, self.group.stream());
        let mut run = || -> cudajit::Result<Vec<f64>> {
            for _ in 0..warmup {
                f()?;
            }
            g.wait("warm-up")?;
            g.barrier()?;
            let ctx = g.context();
            let evs = (0..reps)
                .map(|_| Ok((ctx.new_event()?, ctx.new_event()?)))
                .collect::<cudajit::Result<Vec<_>>>()?;
            for (a, b) in &evs {
                a.record(s)?;
                f()?;
                b.record(s)?;
            }
            g.wait("the timed iterations")?;
            let mine = evs
                .iter()
                .map(|(a, b)| cudajit::elapsed_ms(a, b).map(|t| t as f64))
                .collect::<cudajit::Result<Vec<f64>>>()?;
            let d = s.to_device(&mine[..])?;
            let mut all = s.zeros::<f64, _>(reps * g.size())?;
            g.with_comm(|c| c.all_gather(&d, &mut all, s))?;
            g.wait("gathering the times")?;
            let all = all.to_vec_async(s)?;
            Ok((0..reps)
                .map(|i| {
                    (0..g.size())
                        .map(|r| all[r * reps + i])
                        .fold(0f64, f64::max)
                })
                .collect())
        };
        self.c(run())
    }

    fn run(&self, work: &str, label: &str) -> Res<()> {
        let base = work.split('_').next().unwrap_or(work);
        match base {
            "all" => self.all_reduce(work, label),
            "sum" => self.sum(work, label),
            "add" => self.add(work, label),
            _ => Err(format!("unknown two-process work {work}")),
        }
    }

    fn note(&self) -> String {
        self.note_timed(
            "per iteration the slower rank's CUDA-event time on its group stream, median",
        )
    }

    /// The rows' common note with `timing` (how the times were taken).
    fn note_timed(&self, timing: &str) -> String {
        let v = nccl::version()
            .map(|(a, b, c)| format!("NCCL {a}.{b}.{c}"))
            .unwrap_or_else(|_| "NCCL ?".into());
        format!(
            "{v}; {}; {} processes (ProcessGroup::from_env), one GPU each; {timing}; ranks \
             aligned by a barrier after warm-up",
            transport(self.sockets),
            self.group.size()
        )
    }

    fn all_reduce(&self, work: &str, label: &str) -> Res<()> {
        let bytes = self
            .sizes
            .all_reduce_bytes
            .iter()
            .copied()
            .find(|&b| multi::all_reduce_label(b) == label)
            .ok_or("unknown size")?;
        let (g, s, n) = (&self.group, self.group.stream(), bytes / 4);
        let host = |r: usize| rand_f32(n, self.seed(&format!("all_reduce/{bytes}/{r}")), -1.0, 1.0);
        let mine = host(g.rank());
        let mut buf = self.c(s.to_device(&mine[..]))?;
        drop(mine);
        self.c(g.with_comm(|c| c.all_reduce_in_place(&mut buf, ReduceOp::Sum, s)))?;
        self.c(g.wait("all_reduce"))?;
        let got = self.c(buf.to_vec_async(s))?;
        let hosts: Vec<Vec<f32>> = (0..g.size()).map(host).collect();
        // Two operands: the f32 sum is exact whatever order NCCL adds in (more: rounding).
        let tol = if g.size() <= 2 { 0.0 } else { 1e-6 };
        self.agree(
            check(
                work,
                n,
                |i| got[i] as f64,
                |i| hosts.iter().map(|h| h[i]).sum::<f32>() as f64,
                tol,
            )
            .map(drop),
        )?;
        drop((got, hosts));
        self.c(buf.fill_async(0.0, s))?; // in-place sums double: time on zeros
        let mut once = || g.with_comm(|c| c.all_reduce_in_place(&mut buf, ReduceOp::Sum, s));
        let per_iter = self.time(&mut once)?;
        // torch's row is also timed as nccl-tests times (one event span of K back-to-back
        // iterations per repetition, averaged): the same here, so like meets like.
        let k = multi::NCCL_TESTS_ITERS;
        let spans = self.time_with(1, self.opts.reps.min(5), &mut || {
            (0..k).try_for_each(|_| once())
        })?;
        let avg: Vec<f64> = spans.iter().map(|t| t / k as f64).collect();
        let spans_note = format!(
            "per repetition the slower rank's event span of {k} iterations on its group stream \
             over {k}, median"
        );
        for (how, t, note) in [
            (
                "median of per-iteration times".to_string(),
                per_iter,
                self.note(),
            ),
            (
                format!("nccl-tests: average of {k} back-to-back"),
                avg,
                self.note_timed(&spans_note),
            ),
        ] {
            let rec = Rec::new(work, label).times(&t);
            let ms = rec.ms.unwrap_or(f64::NAN);
            let ranks = g.size() as f64;
            let busbw = bytes as f64 / (ms * 1e-3) / 1e9 * 2.0 * (ranks - 1.0) / ranks;
            self.emit(
                rec.variant(format!(
                    "Communicator::all_reduce_in_place (sum), {} processes, {}, {how}",
                    g.size(),
                    transport(self.sockets)
                ))
                .bytes(bytes)
                .devices(g.size())
                .busbw_gbs(busbw)
                .note(format!(
                    "{note}; checked against the host, timed on zero-filled buffers"
                )),
            );
        }
        Ok(())
    }

    /// This rank's half of `n_multi` f32 from its own seed (as torch's rows), as a shard.
    fn half(&self, salt: &str, lo: f32) -> Res<(Vec<f32>, RankShardedArray<f32>)> {
        let (g, s) = (&self.group, self.group.stream());
        // The last rank takes what an uneven split leaves.
        let per = self.sizes.n_multi / g.size();
        let half = if g.rank() + 1 == g.size() {
            self.sizes.n_multi - per * (g.size() - 1)
        } else {
            per
        };
        let h = rand_f32(half, self.seed(&format!("{salt}/{}", g.rank())), lo, 1.0);
        let d = self.c(s.to_device(&h[..]))?;
        self.c(s.synchronize())?;
        let a = self.c(RankShardedArray::from_local(g, d))?;
        Ok((h, a))
    }

    fn sum(&self, work: &str, label: &str) -> Res<()> {
        let (g, s) = (&self.group, self.group.stream());
        let (h, x) = self.half("procs_sum/x", 0.0)?;
        let mine: f64 = par_fold(h.len(), || 0f64, |a, i| *a += h[i] as f64, |a, b| a + b);
        drop(h);
        let exact = self.all_sum_f64(mine)?;
        let got = self.c(x.sum())? as f64;
        let rel = ((got - exact) / exact).abs();
        self.agree(if rel.is_nan() || rel > 1e-5 {
            Err(format!(
                "{work}: got {got}, want {exact} (relative error {rel:.1e})"
            ))
        } else {
            Ok(())
        })?;
        let mut out = self.c(s.zeros::<f32, _>(1))?;
        let t = self.time(&mut || x.sum_into(&mut out))?;
        self.emit(
            Rec::new(work, label)
                .variant(format!(
                    "RankShardedArray::sum_into a device scalar, {} processes, {}",
                    g.size(),
                    transport(self.sockets)
                ))
                .times(&t)
                .bytes(self.sizes.n_multi * 4)
                .devices(g.size())
                .note(format!(
                    "{}; relative error {rel:.1e}; each rank's half reduced, {}",
                    self.note(),
                    if g.device_join() {
                        "the partials published into the other ranks' memory (IPC) and \
                         joined on the device, in the same kernel"
                    } else {
                        "the partials all-gathered (NCCL) and combined on every rank"
                    }
                )),
        );
        Ok(())
    }

    fn add(&self, work: &str, label: &str) -> Res<()> {
        let g = &self.group;
        let (ha, a) = self.half("procs_add/a", -1.0)?;
        let (hb, b) = self.half("procs_add/b", -1.0)?;
        let mut c = self.c(a.alloc_like::<f32>())?;
        self.c(c.fill(f32::NAN))?; // poisoned: a stale buffer cannot pass the check
        let add =
            Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("procs_add", |(x, y)| x + y)
                .map_err(|e| e.to_string())?;
        self.c(add.apply_ranks((&a, &b), &mut c))?;
        self.c(g.wait("add"))?;
        let got = self.c(c.local_to_vec())?;
        self.agree(
            check(
                work,
                ha.len(),
                |i| got[i] as f64,
                |i| (ha[i] + hb[i]) as f64,
                0.0,
            )
            .map(drop),
        )?;
        drop((got, ha, hb));
        let t = self.time(&mut || add.apply_ranks((&a, &b), &mut c))?;
        self.emit(
            Rec::new(work, label)
                .variant(format!(
                    "Elementwise::apply_ranks x + y, {} processes, {}",
                    g.size(),
                    transport(self.sockets)
                ))
                .times(&t)
                .bytes(3 * self.sizes.n_multi * 4)
                .devices(g.size())
                .note(format!("{}; no communication", self.note())),
        );
        Ok(())
    }
}
