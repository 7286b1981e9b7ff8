//! Arrays sharded over processes (`cudajit::distributed`) on two GPUs: the test starts this
//! test binary again as two ranks (torch's variables, `ProcessGroup::from_env`), each rank
//! runs a worker test and checks every element it gets against the host; with NVLink/shared
//! memory and with NCCL's socket transport forced; and a rank that dies is an error on the
//! other, not a hang.
//!
//! Each launcher skips itself, printing why, on the simulator, without NCCL, or with fewer than
//! two GPUs.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cudajit::codegen::Expr;
use cudajit::distributed::{ProcessGroup, RankShardedArray};
use cudajit::nccl;
use cudajit::ops::{Elem, Elementwise, Index, Scalar};
use cudajit::prelude::*;

/// Set in the ranks' environment: which worker to run.
const CHILD: &str = "CUDAJIT_DIST_CHILD";

/// Whether two GPUs and NCCL are here; prints why not.
fn two_gpus_with_nccl() -> bool {
    if cudajit::on_simulator() {
        println!("skipping: NCCL does not run on the simulator");
        return false;
    }
    if let Err(e) = nccl::version() {
        assert!(
            crate::common::required_devices() < 2,
            "a multi-GPU run (CUDAJIT_TEST_MIN_DEVICES) needs NCCL: {e}"
        );
        println!("skipping: NCCL is not installed here: {e}");
        return false;
    }
    crate::common::has_devices(2)
}

/// Runs the worker test `test` as two ranks (this binary again, `CHILD=test`), with `extra`
/// variables; returns each rank's exit success and standard output (their standard error
/// goes to this test's), killing ranks after `limit`.
fn run_ranks(test: &str, extra: &[(&str, &str)], limit: Duration) -> Vec<(bool, String)> {
    run_world(test, 2, extra, limit)
}

/// [`run_ranks`] with `world` ranks.
fn run_world(
    test: &str,
    world: usize,
    extra: &[(&str, &str)],
    limit: Duration,
) -> Vec<(bool, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut kids: Vec<_> = (0..world)
        .map(|r| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    test,
                    "--exact",
                    "--include-ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, test)
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("CUDAJIT_RENDEZVOUS_TIMEOUT", "60")
                .envs(extra.iter().copied())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    // Each rank's output read as it comes (a full pipe would stop the rank).
    let readers: Vec<_> = kids
        .iter_mut()
        .map(|k| {
            let mut out = k.stdout.take().unwrap();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = out.read_to_string(&mut text);
                text
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut done: Vec<Option<bool>> = vec![None; world];
    while done.iter().any(Option::is_none) {
        for (k, d) in kids.iter_mut().zip(done.iter_mut()) {
            if d.is_none() {
                if let Some(s) = k.try_wait().unwrap() {
                    *d = Some(s.success());
                }
            }
        }
        if t0.elapsed() > limit {
            for (k, d) in kids.iter_mut().zip(done.iter_mut()) {
                if d.is_none() {
                    let _ = k.kill();
                    let _ = k.wait();
                    *d = Some(false);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    readers
        .into_iter()
        .zip(done)
        .map(|(r, ok)| (ok.unwrap_or(false), r.join().unwrap_or_default()))
        .collect()
}

/// Runs `test` as two ranks and asserts both passed (printing their output).
fn both_pass(test: &str, extra: &[(&str, &str)]) {
    let got = run_ranks(test, extra, Duration::from_secs(240));
    for (r, (ok, out)) in got.iter().enumerate() {
        println!("--- rank {r} ---\n{out}");
        assert!(ok, "rank {r} failed:\n{out}");
        assert!(
            out.contains("DIST RANK OK"),
            "rank {r} did not finish:\n{out}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn two_processes_reduce_add_and_gather() {
    if two_gpus_with_nccl() {
        both_pass("distributed::worker_arrays", &[]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn two_processes_over_the_socket_transport() {
    if two_gpus_with_nccl() {
        both_pass(
            "distributed::worker_arrays",
            &[("NCCL_P2P_DISABLE", "1"), ("NCCL_SHM_DISABLE", "1")],
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn a_dead_rank_is_an_error_not_a_hang() {
    if !two_gpus_with_nccl() {
        return;
    }
    // The ranks' reductions join on the device where the GPUs are peers: a dead rank is then
    // the waiting kernel's timeout (10 s here). Through NCCL it is not caught in time yet (on
    // two H200s, NCCL 2.28.3, the survivor spun in NCCL's connection setup with the dead
    // peer), so the workers skip that case unless CUDAJIT_TEST_DEAD_RANK=1.
    let got = run_ranks(
        "distributed::worker_dead_peer",
        &[("CUDAJIT_NCCL_TIMEOUT", "10")],
        Duration::from_secs(120),
    );
    let (ok0, out0) = &got[0];
    println!("--- rank 0 ---\n{out0}\n--- rank 1 ---\n{}", got[1].1);
    assert!(ok0, "rank 0 did not get its error in time:\n{out0}");
    assert!(out0.contains("DIST RANK OK"), "{out0}");
}

/// On the simulator a process group cannot be made: a clear error on its rank, not a crash
/// or a hang (the rank is a child process, so torch's variables stay out of this one).
#[test]
#[ignore = "needs a CUDA GPU"]
fn simulator_refuses_a_process_group_clearly() {
    if !cudajit::on_simulator() {
        println!("skipping: this checks the simulator's refusal");
        return;
    }
    let got = run_world(
        "distributed::worker_simulator_refusal",
        1,
        &[("CUDAJIT_SIMULATOR", "1")],
        Duration::from_secs(120),
    );
    assert!(got[0].0, "the rank failed:\n{}", got[0].1);
    assert!(got[0].1.contains("DIST RANK OK"), "{}", got[0].1);
}

/// The rank of `simulator_refuses_a_process_group_clearly`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn worker_simulator_refusal() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    let e = ProcessGroup::from_env().unwrap_err().to_string();
    assert!(e.contains("simulator"), "{e}");
    say("DIST RANK OK");
}

/// The rank's group, made from the variables the launcher set.
fn group() -> ProcessGroup {
    let g = ProcessGroup::from_env().expect("ProcessGroup::from_env");
    assert_eq!(g.size(), 2);
    g
}

fn say(line: &str) {
    use std::io::Write;
    println!("{line}");
    std::io::stdout().flush().unwrap();
}

/// A rank: every operation of `RankShardedArray`, each result checked against the host.
#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: a rank of distributed::two_processes_reduce_add_and_gather (NCCL needs real device memory)"]
fn worker_arrays() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    let g = group();
    let rank = g.rank();
    // An odd length: rank 0 holds 5001 elements, rank 1 5000 (uneven gathers).
    let n = 10_001;
    let hx: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let hy: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    let x = RankShardedArray::from_host(&g, &hx).unwrap();
    let y = RankShardedArray::from_host(&g, &hy).unwrap();
    assert_eq!(x.shape(), &[n]);
    assert_eq!(x.row_ranges(), &[0..5001, 5001..n]);
    let own = x.rows(rank);
    assert_eq!(x.local_offset(), own.start);
    assert_eq!(x.local_to_vec().unwrap(), hx[own.clone()]);

    // Reductions: the same value on every rank.
    let exact: f64 = hx.iter().map(|&v| v as f64).sum();
    assert_eq!(x.sum().unwrap() as f64, exact); // small integers: exact in f32
    assert_eq!(x.sum_f64().unwrap(), exact);
    assert_eq!(x.mean().unwrap(), exact / n as f64);
    assert_eq!(x.min().unwrap(), -50.0);
    assert_eq!(x.max().unwrap(), 50.0);
    let d = x.sum_to_device().unwrap();
    g.wait("test").unwrap();
    assert_eq!(d.to_vec_async(g.stream()).unwrap(), vec![exact as f32]);
    let mut one = g.stream().zeros::<f32, _>(1).unwrap();
    x.sum_into(&mut one).unwrap();
    g.wait("test").unwrap();
    assert_eq!(one.to_vec_async(g.stream()).unwrap(), vec![exact as f32]);

    // NaN on one rank's shard only: min and max are NaN on both.
    let mut hn = hx.clone();
    hn[n - 3] = f32::NAN;
    let xn = RankShardedArray::from_host(&g, &hn).unwrap();
    assert!(xn.min().unwrap().is_nan() && xn.max().unwrap().is_nan());

    // Integers: the product and a wrapping sum.
    let hi: Vec<i32> = (0..n as i32)
        .map(|i| if i % 1000 == 7 { 3 } else { 1 })
        .collect();
    let xi = RankShardedArray::from_host(&g, &hi).unwrap();
    assert_eq!(xi.prod().unwrap(), 3i32.pow(10));
    let big = RankShardedArray::filled(&g, 4usize, i32::MAX).unwrap();
    assert_eq!(big.sum().unwrap(), i32::MAX.wrapping_mul(4));

    // Elementwise: a * x + y + index, with a scalar and the whole array's index.
    let f = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>, Index), Expr<f32>>::new(
        "dist_axpyi",
        |(a, x, y, i)| a * x + y + i.cast::<f32>(),
    )
    .unwrap();
    let mut out = x.alloc_like::<f32>().unwrap();
    out.fill(f32::NAN).unwrap();
    f.apply_ranks((2.0f32, &x, &y, Index), &mut out).unwrap();
    let want: Vec<f32> = (0..n).map(|i| 2.0 * hx[i] + hy[i] + i as f32).collect();
    assert_eq!(out.local_to_vec().unwrap(), want[own.clone()]);
    assert_eq!(out.to_vec().unwrap(), want); // every element, on every rank
    let called = f.call_ranks((0.5f32, &x, &y, Index)).unwrap();
    let want2: Vec<f32> = (0..n).map(|i| 0.5 * hx[i] + hy[i] + i as f32).collect();
    assert_eq!(called.to_vec().unwrap(), want2);

    // Scans over both ranks: rank 1's part starts from rank 0's total.
    let c = x.cumsum().unwrap();
    let mut run = 0f32;
    let want: Vec<f32> = hx
        .iter()
        .map(|&v| {
            run += v;
            run
        })
        .collect();
    assert_eq!(c.to_vec().unwrap(), want); // integers: exact in f32
    let sumscan = cudajit::ops::Scan::<i64>::new("dist_scan", |a, b| a + b, 0).unwrap();
    let hl: Vec<i64> = (0..n as i64).map(|i| i % 13 - 6).collect();
    let xl = RankShardedArray::from_host(&g, &hl).unwrap();
    let ex = xl
        .scan(&sumscan, cudajit::ops::ScanKind::Exclusive)
        .unwrap();
    let mut acc = 0i64;
    let want: Vec<i64> = hl
        .iter()
        .map(|&v| {
            let before = acc;
            acc += v;
            before
        })
        .collect();
    assert_eq!(ex.to_vec().unwrap(), want);

    // Another split: a clear error, no launch.
    let add =
        Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("dist_add", |(a, b)| a + b).unwrap();
    let rows = if rank == 0 { 3 } else { 10_001 - 3 };
    let other =
        RankShardedArray::from_local(&g, g.stream().zeros::<f32, _>(rows).unwrap()).unwrap();
    assert_eq!(other.shape(), &[n]);
    let e = add
        .apply_ranks((&x, &other), &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("split differently"), "{e}");

    // from_local with uneven 2-D shards: rank 0 3 rows, rank 1 5 rows of 4.
    let local_rows = if rank == 0 { 3 } else { 5 };
    let start = if rank == 0 { 0 } else { 3 };
    let hl: Vec<f64> = (0..local_rows * 4)
        .map(|k| (start * 4 + k) as f64)
        .collect();
    let l = g
        .stream()
        .to_device(&ndarray::Array2::from_shape_vec((local_rows, 4), hl).unwrap())
        .unwrap();
    g.stream().synchronize().unwrap();
    let m = RankShardedArray::from_local(&g, l).unwrap();
    assert_eq!(m.shape(), &[8, 4]);
    assert_eq!(m.row_ranges(), &[0..3, 3..8]);
    let whole = m.to_array().unwrap();
    assert_eq!(whole.shape(), &[8, 4]);
    assert!(whole.iter().enumerate().all(|(k, &v)| v == k as f64));
    assert_eq!(m.sum().unwrap(), (0..32).sum::<i32>() as f64);
    let on_dev = m.gather().unwrap();
    g.wait("test").unwrap();
    assert_eq!(
        on_dev.to_vec_async(g.stream()).unwrap(),
        whole.iter().copied().collect::<Vec<_>>()
    );

    // One element over two ranks: rank 1's shard is empty.
    let tiny = RankShardedArray::from_host(&g, &[7.5f32][..]).unwrap();
    assert_eq!(tiny.rows(1), 1..1);
    assert_eq!((tiny.sum().unwrap(), tiny.min().unwrap()), (7.5, 7.5));
    assert_eq!(tiny.to_vec().unwrap(), vec![7.5]);
    assert_eq!(tiny.cumsum().unwrap().to_vec().unwrap(), vec![7.5]);
    let z = RankShardedArray::<f32>::zeros(&g, 0usize).unwrap();
    assert_eq!(z.sum().unwrap(), 0.0);
    assert!(z.max().unwrap_err().to_string().contains("empty"));

    // Even split of 2-D zeros: one NCCL all-gather.
    let zz = RankShardedArray::<u64, _>::zeros(&g, (6, 3)).unwrap();
    assert_eq!(zz.to_vec().unwrap(), vec![0u64; 18]);

    // Ranks that disagree: the same error on both, and the group still works after.
    let len = if rank == 0 { 10 } else { 12 };
    let e = RankShardedArray::<f32>::zeros(&g, len)
        .unwrap_err()
        .to_string();
    assert!(e.contains("disagree on the whole array's length"), "{e}");
    let e = if rank == 0 {
        RankShardedArray::<f32>::zeros(&g, 4usize).map(|_| ())
    } else {
        RankShardedArray::<i32>::zeros(&g, 4usize).map(|_| ())
    }
    .unwrap_err()
    .to_string();
    assert!(e.contains("disagree on the element type"), "{e}");
    assert_eq!(x.sum().unwrap() as f64, exact);
    g.barrier().unwrap();
    say("DIST RANK OK");
}

/// A rank of `a_dead_rank_is_an_error_not_a_hang`: rank 1 exits after the group is made;
/// rank 0's sum must fail (NCCL's error or the time limit) rather than hang.
#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: a rank of distributed::a_dead_rank_is_an_error_not_a_hang (NCCL needs real device memory)"]
fn worker_dead_peer() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    let g = group();
    if !g.device_join() && std::env::var_os("CUDAJIT_TEST_DEAD_RANK").is_none() {
        println!("skipping: reductions join through NCCL here (set CUDAJIT_TEST_DEAD_RANK=1)");
        say("DIST RANK OK");
        return;
    }
    let x = RankShardedArray::from_host(&g, &vec![1.0f32; 1 << 16]).unwrap();
    if g.rank() == 1 {
        say("DIST RANK 1 LEAVES");
        std::process::exit(3);
    }
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    // NCCL's own error (the peer's connection closed) or the group's time limit (10 s).
    let e = x.sum().unwrap_err().to_string();
    println!("rank 0's error: {e}");
    // The device-side join's timeout (one machine, peer GPUs), or NCCL's error or the
    // group's time limit (reductions through NCCL).
    assert!(
        e.contains("device-side join")
            || e.contains("NCCL")
            || e.contains("communicator was aborted"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    say("DIST RANK OK");
}
