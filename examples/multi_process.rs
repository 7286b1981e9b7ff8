//! NCCL across processes: this example starts N copies of itself (one per GPU, as `torchrun`
//! would), each finds its rank in torch's variables (`MASTER_ADDR`, `MASTER_PORT`, `RANK`,
//! `WORLD_SIZE`), meets the others through `Communicator::from_env`, all-reduces a buffer, and
//! sums its shard of one array whose shards live in different processes (the total
//! all-reduced); every rank checks both against the host.
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

use cudajit::nccl::{self, Communicator, ReduceOp};
use cudajit::ops::ReduceOps;
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

/// One rank: meet, all-reduce, sum this rank's shard, check.
fn rank_main() -> Result<()> {
    let t0 = std::time::Instant::now();
    let dev = Device::get(
        std::env::var("RANK")
            .ok()
            .and_then(|r| r.parse::<usize>().ok())
            .unwrap_or(0)
            % cudajit::device_count()?,
    )?;
    let comm = Communicator::from_env(&dev)?;
    let (rank, world) = (comm.rank(), comm.size());
    let ctx = comm.context().clone();
    let s = ctx.new_stream()?;
    let met = t0.elapsed();

    // All-reduce: rank r contributes r + 1 in every element.
    let mut buf = s.to_device(&vec![(rank + 1) as f32; N])?;
    comm.all_reduce_in_place(&mut buf, ReduceOp::Sum, &s)?;
    let want = (world * (world + 1) / 2) as f32;
    let got = buf.to_vec_async(&s)?;
    if let Some(i) = got.iter().position(|&v| v != want) {
        return Err(Error::Usage(format!(
            "all-reduce: element {i} is {}, want {want}",
            got[i]
        )));
    }

    // One array of N integers 0..N (as f64, exact) in `world` shards, one per process: each
    // sums its own on its GPU, and the totals are all-reduced.
    let per = N.div_ceil(world);
    let (lo, hi) = (rank * per, ((rank + 1) * per).min(N));
    let shard: Vec<f64> = (lo..hi).map(|i| i as f64).collect();
    let mut total = s.to_device(&[s.to_device(&shard)?.sum(&s)?])?;
    comm.all_reduce_in_place(&mut total, ReduceOp::Sum, &s)?;
    let total = total.to_vec_async(&s)?[0];
    let want = (N * (N - 1) / 2) as f64;
    if total != want {
        return Err(Error::Usage(format!("sharded sum: {total}, want {want}")));
    }
    println!(
        "rank {rank}/{world} on GPU {}: met the others in {:.0} ms; all-reduce {} = {}; sum of its shard {}..{} and the others' = {total}",
        dev.ordinal(),
        met.as_secs_f64() * 1e3,
        (1..=world).map(|r| r.to_string()).collect::<Vec<_>>().join(" + "),
        got[0],
        lo,
        hi
    );
    // Let NCCL's proxy threads finish before the process exits.
    drop(comm);
    std::thread::sleep(Duration::from_millis(10));
    Ok(())
}
