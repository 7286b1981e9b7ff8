//! Two GPUs (docs/GUIDE.md's "Several GPUs" example): an array sharded over both devices, doubled
//! and summed by both at once, then an NCCL all-reduce. Needs two devices (on the simulator:
//! `CUDAJIT_SIMULATOR=1 CUDAJIT_SIM_DEVICES=2`); the all-reduce also needs NCCL
//! (`pip install nvidia-nccl-cu12`) and real GPUs. Says what it skips and why.

use cudajit::nccl::{self, Communicator, ReduceOp};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};

fn main() -> cudajit::Result<()> {
    let n = cudajit::device_count()?;
    if n < 2 {
        println!(
            "needs two devices: this machine has {n} (on the simulator: CUDAJIT_SIM_DEVICES=2)"
        );
        return Ok(());
    }
    // A mesh of devices 0 and 1 (one stream each; peer access on where the devices allow it).
    let mesh = Mesh::new(&[0, 1])?;
    let host: Vec<f32> = (0..1 << 22).map(|i| (i % 1000) as f32).collect();
    let x = ShardedArray::from_host(&mesh, &host)?; // rows 0..n/2 on device 0, the rest on 1
    let double = Elementwise::<(Elem<f32>,), _>::new("double", |(v,)| v + v)?;
    let y = double.call_sharded((&x,))?; // each device doubles its half, at once
    let want: f64 = host.iter().map(|&v| 2.0 * v as f64).sum();
    println!(
        "sharded over {:?}: {} + {} elements, sum of doubles {} (host: {want})",
        mesh.devices()
            .iter()
            .map(|d| d.ordinal())
            .collect::<Vec<_>>(),
        y.rows(0).len(),
        y.rows(1).len(),
        y.sum()?
    );

    if cudajit::on_simulator() || !nccl::is_available() {
        println!(
            "all-reduce skipped: {}",
            if cudajit::on_simulator() {
                "NCCL needs real GPUs (this is the simulator)".to_string()
            } else {
                nccl::version().map_or_else(|e| e.to_string(), |v| format!("NCCL {v:?}"))
            }
        );
        return Ok(());
    }
    let comms = Communicator::init_all(&mesh.devices())?; // rank k on the mesh's device k
    let mut parts = Vec::new();
    for k in 0..2 {
        parts.push(mesh.stream(k).to_device(&vec![k as f32 + 1.0; 1 << 20])?);
    }
    // One thread drives both ranks: their calls go in one group.
    nccl::group(|| {
        for (k, (comm, part)) in comms.iter().zip(parts.iter_mut()).enumerate() {
            comm.all_reduce_in_place(part, ReduceOp::Sum, mesh.stream(k))?;
        }
        Ok(())
    })?;
    println!(
        "all-reduce over two GPUs (NCCL {:?}): 1 + 2 = {} on device 0, {} on device 1",
        nccl::version()?,
        parts[0].to_vec_async(mesh.stream(0))?[0],
        parts[1].to_vec_async(mesh.stream(1))?[0]
    );
    Ok(())
}
