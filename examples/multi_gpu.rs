//! An all-reduce over two GPUs with NCCL (the README's "Several GPUs" example). Needs two
//! devices and NCCL (`pip install nvidia-nccl-cu12`); says so and exits otherwise.

use cudajit::nccl::{self, Communicator, ReduceOp};
use cudajit::prelude::*;

fn main() -> cudajit::Result<()> {
    if cudajit::device_count()? < 2 || !nccl::is_available() {
        println!(
            "needs two CUDA devices and NCCL: {} device(s); NCCL: {}",
            cudajit::device_count()?,
            nccl::version().map_or_else(|e| e.to_string(), |v| format!("{v:?}"))
        );
        return Ok(());
    }
    let devices = [Device::get(0)?, Device::get(1)?];
    let comms = Communicator::init_all(&devices)?; // rank i on devices[i]
    let streams = comms
        .iter()
        .map(|c| c.context().new_stream())
        .collect::<cudajit::Result<Vec<Stream>>>()?;
    let mut parts = Vec::new();
    for (r, s) in streams.iter().enumerate() {
        parts.push(s.to_device(&vec![r as f32 + 1.0; 1 << 20])?);
    }
    // One thread drives both ranks: their calls go in one group.
    nccl::group(|| {
        for ((comm, s), part) in comms.iter().zip(&streams).zip(parts.iter_mut()) {
            comm.all_reduce_in_place(part, ReduceOp::Sum, s)?;
        }
        Ok(())
    })?;
    assert_eq!(parts[1].to_vec_async(&streams[1])?[0], 3.0);
    println!(
        "all-reduce over two GPUs: 1 + 2 = {}",
        parts[0].to_vec_async(&streams[0])?[0]
    );
    Ok(())
}
