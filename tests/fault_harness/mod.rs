//! The fault-injection harness shared by `tests/faults.rs` (one device) and
//! `tests/faults_sharded.rs` (two simulated devices): run a workload clean to count its backend
//! calls, then once per call with that call failing (the error kinds in turn), each followed by
//! a clean run. A panic, a hang (60 s), a wrong result, a failed clean run afterwards, or a
//! change in what is alive (a leak or a double free) is a problem.

use std::sync::mpsc;
use std::time::Duration;

use cudajit::fault_injection::{self as fi, Injected};
use cudajit::Error;

/// `Ok` if `ok`, else the error that marks a wrong result (a problem, not an error the failure
/// may return).
pub fn check(ok: bool, what: &str) -> cudajit::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!("wrong result: {what}")))
    }
}

enum Outcome {
    Ok,
    Err(Error),
    Panicked,
    Hung,
}

/// Runs the workload on a thread, with a time limit.
fn run_once(workload: fn() -> cudajit::Result<()>) -> Outcome {
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

/// Installs the fault injector, then fails every backend call of `workload` in turn; panics
/// with the list of problems, if any. `name` heads the summary line it prints.
pub fn fail_every_call(name: &str, workload: fn() -> cudajit::Result<()>) {
    fi::install().unwrap();
    // A clean run, twice (the second fills nothing new: pools and caches exist), then count.
    for _ in 0..2 {
        fi::fail_call(0, Injected::OutOfMemory).unwrap();
        match run_once(workload) {
            Outcome::Ok => {}
            Outcome::Err(e) => panic!("the clean workload fails: {e}"),
            _ => panic!("the clean workload panics or hangs"),
        }
    }
    let _ = cudajit::take_drop_errors();
    let baseline = fi::live().unwrap();
    fi::fail_call(0, Injected::OutOfMemory).unwrap();
    assert!(matches!(run_once(workload), Outcome::Ok));
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
        let outcome = run_once(workload);
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
                break; // the hung thread still holds the device
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
        // The context is still usable, and nothing leaked.
        if !matches!(run_once(workload), Outcome::Ok) {
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
        "{name}: {calls} calls failed in turn: {errs} returned an error, {drop_errs} recorded \
         as drop errors, {handled} handled (result still right); {} problems",
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
