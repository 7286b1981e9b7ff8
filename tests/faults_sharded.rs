//! Fault injection over two simulated devices (issue 12): a scripted workload of sharded
//! arrays (a mesh with peer access and one without, host copies both ways, a sharded
//! elementwise kernel, whole-array and axis reductions, argmax, a scan, a gather to the second
//! device) runs once to count its backend calls; then, for every N, again with the N-th call
//! failing (the error kinds in turn), as `tests/faults.rs` does for one device. Each run must
//! end without a panic or a hang, the failure must come back as an `Err` (or a recorded drop
//! error) or be handled with a right result, and afterwards a clean run must succeed and leave
//! exactly what the first clean run left alive.

use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};
use ndarray::Array2;

mod fault_harness;
use fault_harness::check;

/// The workload: the sharded operations, every result verified.
fn workload() -> cudajit::Result<()> {
    let mesh = Mesh::all()?;
    check(mesh.len() == 2, "a mesh of the two simulated devices")?;
    let n = 1001usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let total: f32 = host.iter().sum();
    let x = ShardedArray::from_host(&mesh, &host)?;
    let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("fis_add", |(a, b)| a + b)?;
    let y = add.call_sharded((&x, &x))?;
    check(y.sum()? == 2.0 * total, "sharded sum")?;
    check(y.argmax()? == 16, "sharded argmax")?;
    let c = y.cumsum()?.to_vec()?;
    check(c.last() == Some(&(2.0 * total)), "sharded scan")?;
    let g = y.gather_to(1)?.to_vec()?;
    check(g[n - 1] == 2.0 * host[n - 1], "gather to device 1")?;
    let m = Array2::from_shape_fn((101, 7), |(r, c)| (r * 7 + c) as f32);
    let xm = ShardedArray::from_host(&mesh, &m)?;
    let cols = xm.sum_axis(0, false)?.to_vec()?;
    check(cols[3] == m.column(3).sum(), "sum along axis 0")?;
    let rows = xm.sum_axis(1, false)?.to_vec()?;
    check(rows[100] == m.row(100).sum(), "sum along axis 1")?;
    // Partial results copied between the devices by the driver (no peer access).
    let nopeer = Mesh::without_peer_access(&[0, 1])?;
    let z = ShardedArray::from_host(&nopeer, &host)?;
    check(z.sum()? == total, "sum without peer access")?;
    mesh.synchronize()?;
    nopeer.synchronize()
}

#[test]
fn every_failing_call_of_the_sharded_workload_is_an_error_without_panic_hang_or_leak() {
    // This test binary is its own process: two simulated devices for it alone.
    std::env::set_var("CUDAJIT_SIM_DEVICES", "2");
    fault_harness::fail_every_call("sharded fault injection", workload);
}
