//! Fault injection over two simulated devices (issue 12): a scripted workload of sharded
//! arrays (a mesh with peer access and one without, host copies both ways, a sharded
//! elementwise kernel, whole-array and axis reductions, argmax, a scan, a gather to the second
//! device) runs once to count its backend calls; then, for every N, again with the N-th call
//! failing (the error kinds in turn), as `tests/faults.rs` does for one device. Each run must
//! end without a panic or a hang, the failure must come back as an `Err` (or a recorded drop
//! error) or be handled with a right result, and afterwards a clean run must succeed and leave
//! exactly what the first clean run left alive.

use std::sync::mpsc;
use std::time::Duration;

use cudajit::fault_injection::{self as fi, Injected};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};
use ndarray::Array2;

fn check(ok: bool, what: &str) -> cudajit::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!("wrong result: {what}")))
    }
}

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

enum Outcome {
    Ok,
    Err(Error),
    Panicked,
    Hung,
}

/// Runs the workload on a thread, with a time limit.
fn run_once() -> Outcome {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = workload();
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(())) => {
            let _ = h.join();
            Outcome::Ok
        }
        Ok(Err(e)) => {
            let _ = h.join();
            Outcome::Err(e)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = h.join();
            Outcome::Panicked
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Hung,
    }
}

#[test]
fn every_failing_call_of_the_sharded_workload_is_an_error_without_panic_hang_or_leak() {
    // This test binary is its own process: two simulated devices for it alone.
    std::env::set_var("CUDAJIT_SIM_DEVICES", "2");
    fi::install().unwrap();
    for _ in 0..2 {
        fi::fail_call(0, Injected::OutOfMemory).unwrap();
        match run_once() {
            Outcome::Ok => {}
            Outcome::Err(e) => panic!("the clean workload fails: {e}"),
            _ => panic!("the clean workload panics or hangs"),
        }
    }
    let _ = cudajit::take_drop_errors();
    let baseline = fi::live().unwrap();
    fi::fail_call(0, Injected::OutOfMemory).unwrap();
    assert!(matches!(run_once(), Outcome::Ok));
    let calls = fi::calls().unwrap();
    assert_eq!(
        fi::live().unwrap(),
        baseline,
        "a clean run changed what is alive"
    );
    assert!(calls > 50, "only {calls} backend calls in the workload");

    let (mut errs, mut drop_errs, mut handled) = (0, 0, 0);
    let mut problems = Vec::new();
    for nth in 1..=calls {
        let kind = Injected::ALL[nth as usize % Injected::ALL.len()];
        let before = fi::injected().unwrap();
        fi::fail_call(nth, kind).unwrap();
        let outcome = run_once();
        let fired = fi::injected().unwrap() > before;
        fi::fail_call(0, kind).unwrap();
        let dropped = cudajit::take_drop_errors();
        let what = match &outcome {
            Outcome::Err(e) => format!("error: {e}"),
            _ if !dropped.is_empty() => format!("drop error: {}", dropped[0]),
            _ => "handled".to_string(),
        };
        match outcome {
            Outcome::Panicked => problems.push(format!("call {nth} ({kind:?}): panicked")),
            Outcome::Hung => {
                problems.push(format!("call {nth} ({kind:?}): hung"));
                break; // the hung thread still holds the devices
            }
            // A failed call must not give a wrong answer that looks right to the library.
            Outcome::Err(Error::Usage(m)) if m.starts_with("wrong result") => {
                problems.push(format!("call {nth} ({kind:?}): {m}"))
            }
            Outcome::Err(_) => errs += 1,
            Outcome::Ok if !dropped.is_empty() => drop_errs += 1,
            Outcome::Ok => handled += 1,
        }
        if !fired {
            problems.push(format!(
                "call {nth} ({kind:?}): the failure was not injected"
            ));
        }
        if !matches!(run_once(), Outcome::Ok) {
            problems.push(format!(
                "call {nth} ({kind:?}, {what}): a clean run afterwards fails"
            ));
        }
        let _ = cudajit::take_drop_errors();
        let live = fi::live().unwrap();
        if live != baseline {
            problems.push(format!(
                "call {nth} ({kind:?}, {what}): alive afterwards {live:?}, before {baseline:?}"
            ));
        }
    }
    println!(
        "sharded fault injection: {calls} calls failed in turn: {errs} returned an error, \
         {drop_errs} recorded as drop errors, {handled} handled (result still right); {} problems",
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
