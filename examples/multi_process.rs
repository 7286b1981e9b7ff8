//! NCCL across processes: this example starts N copies of itself (one per GPU, as `torchrun`
//! would), each finds its rank in torch's variables (`MASTER_ADDR`, `MASTER_PORT`, `RANK`,
//! `WORLD_SIZE`), meets the others through `ProcessGroup::from_env` (a `Communicator` over the
//! processes and a stream), all-reduces a buffer, and works on one array whose shards live in
//! different processes (`RankShardedArray`, one shard per rank): its sum (every rank gets the
//! whole array's), an elementwise `2x + index` on every rank's shard, and the result gathered
//! whole to every rank; every rank checks everything against the host.
//!
//! ```sh
//! cargo run --release --example multi_process            # one process per GPU
//! cargo run --release --example multi_process -- 4       # 4 processes over the GPUs there are
//! NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 cargo run --release --example multi_process
//!                                                        # NCCL's socket transport (two hosts' stand-in)
//! ```
//!
//! Without two GPUs and NCCL it says so and exits 0; a rank that fails makes the launcher exit 1.

use std::process::Command;
use std::time::Duration;

use cudajit::codegen::Expr;
use cudajit::distributed::{ProcessGroup, RankShardedArray};
use cudajit::nccl::{self, ReduceOp};
use cudajit::ops::{Elem, Elementwise, Index};
use cudajit::prelude::*;

/// Elements of the all-reduced buffer and of the whole sharded array.
const N: usize = 1 << 20;

fn main() {
    let code = match std::env::var("RANK") {
        Ok(_) => match rank_main() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!(
                    "multi_process rank {}: {e}",
                    std::env::var("RANK").unwrap_or_default()
                );
                1
            }
        },
        Err(_) => launcher(),
    };
    std::process::exit(code);
}

/// Starts the ranks and waits for them.
fn launcher() -> i32 {
    let devices = cudajit::device_count().unwrap_or(0);
    let world: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(devices);
    if cudajit::on_simulator() || devices < 2 || !nccl::is_available() || world < 2 {
        println!(
            "multi_process: needs two GPUs and NCCL (devices: {devices}, NCCL: {}, simulator: {})",
            nccl::is_available(),
            cudajit::on_simulator()
        );
        return 0;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(29500);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("multi_process: {e}");
            return 1;
        }
    };
    println!("multi_process: {world} processes on {devices} GPUs, rendezvous at 127.0.0.1:{port}");
    let children: Vec<_> = (0..world)
        .map(|r| {
            Command::new(&exe)
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("CUDAJIT_RENDEZVOUS_TIMEOUT", "60")
                .spawn()
        })
        .collect();
    let mut code = 0;
    for (r, c) in children.into_iter().enumerate() {
        match c.and_then(|mut c| c.wait()) {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("multi_process: rank {r} exited with {s}");
                code = 1;
            }
            Err(e) => {
                eprintln!("multi_process: rank {r}: {e}");
                code = 1;
            }
        }
    }
    if code == 0 {
        println!("multi_process: all {world} ranks agree");
    }
    code
}

/// One rank: meet, all-reduce, then sum, transform and gather an array sharded over the
/// processes; check.
fn rank_main() -> Result<()> {
    let t0 = std::time::Instant::now();
    // The GPU: LOCAL_RANK if set, else RANK modulo the GPUs there are.
    let group = ProcessGroup::from_env()?;
    let (rank, world) = (group.rank(), group.size());
    let s = group.stream();
    let met = t0.elapsed();

    // All-reduce through the group's communicator: rank r contributes r + 1 in every element.
    let mut buf = s.to_device(&vec![(rank + 1) as f32; N])?;
    group.with_comm(|c| c.all_reduce_in_place(&mut buf, ReduceOp::Sum, s))?;
    group.wait("all-reduce")?;
    let want = (world * (world + 1) / 2) as f32;
    let got = buf.to_vec_async(s)?;
    if let Some(i) = got.iter().position(|&v| v != want) {
        return Err(Error::Usage(format!(
            "all-reduce: element {i} is {}, want {want}",
            got[i]
        )));
    }

    // One array of N integers 0..N (as f64, exact) sharded over the processes: every rank
    // passes the same host data and keeps its rows; the sum is every rank's.
    let host: Vec<f64> = (0..N).map(|i| i as f64).collect();
    let x = RankShardedArray::from_host(&group, &host)?;
    let total = x.sum()?;
    let want = (N * (N - 1) / 2) as f64;
    if total != want {
        return Err(Error::Usage(format!("sharded sum: {total}, want {want}")));
    }
    // An elementwise kernel on every rank's shard (the index counts over the whole array),
    // then the whole result gathered to every rank.
    let f = Elementwise::<(Elem<f64>, Index), Expr<f64>>::new("twice_plus_index", |(x, i)| {
        x + x + i.cast::<f64>()
    })?;
    let mut y = x.alloc_like::<f64>()?;
    f.apply_ranks((&x, Index), &mut y)?;
    let whole = y.to_vec()?;
    if let Some(i) = (0..N).find(|&i| whole[i] != 3.0 * i as f64) {
        return Err(Error::Usage(format!(
            "2x + index: element {i} is {}, want {}",
            whole[i],
            3 * i
        )));
    }
    let rows = x.rows(rank);
    println!(
        "rank {rank}/{world} on GPU {}: met the others in {:.0} ms; all-reduce {} = {}; \
         holds rows {}..{} of {N}; sum {total}; 2x + index gathered whole and checked",
        group.context().device().ordinal(),
        met.as_secs_f64() * 1e3,
        (1..=world)
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        got[0],
        rows.start,
        rows.end,
    );
    // Every rank is done before any tears NCCL down.
    group.barrier()?;
    drop((x, y, buf, group));
    std::thread::sleep(Duration::from_millis(10));
    Ok(())
}
