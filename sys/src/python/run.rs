//! Running a program with a time limit: spawn, poll `try_wait` with short sleeps, kill it when
//! the time is up. Its standard output is read on a thread, so a full pipe cannot stall the
//! poll, and waited for only until the same deadline.

use std::ffi::OsStr;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why [`run_bounded`] has no output to give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The program could not be started (the system's message).
    Spawn(String),
    /// It ran past the time limit and was killed.
    TimedOut(Duration),
    /// It exited unsuccessfully (its exit status).
    Failed(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Spawn(m) => write!(f, "cannot start: {m}"),
            RunError::TimedOut(t) => write!(f, "timed out after {:.1} s", t.as_secs_f64()),
            RunError::Failed(status) => write!(f, "exited with {status}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs `program` (an absolute path, found by the caller) with `args`, from the root directory
/// (so that nothing of the current directory is picked up), with no input and its standard
/// error discarded; gives its standard output when it exits successfully within `timeout`.
pub fn run_bounded(
    program: &Path,
    args: &[&OsStr],
    timeout: Duration,
) -> Result<Vec<u8>, RunError> {
    let start = Instant::now();
    let root = program.ancestors().last().unwrap_or(program);
    let mut child = Command::new(program)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| RunError::Spawn(e.to_string()))?;
    let (tx, rx) = mpsc::channel();
    if let Some(mut stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stdout.read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
    }
    let mut pause = Duration::from_millis(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::TimedOut(timeout));
            }
            Ok(None) => {
                std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Failed(e.to_string()));
            }
        }
    };
    if !status.success() {
        return Err(RunError::Failed(status.to_string()));
    }
    // Whatever holds the pipe open after the exit (a grandchild) gets the rest of the time.
    let left = timeout.saturating_sub(start.elapsed());
    rx.recv_timeout(left.max(Duration::from_millis(100)))
        .map_err(|_| RunError::TimedOut(timeout))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::load_log::LoadLog;
    use crate::python::which::find_program;

    fn program(name: &str) -> std::path::PathBuf {
        let path = std::env::var_os("PATH").unwrap_or_default();
        find_program(name, Some(&path), &mut LoadLog::new("t", false))
            .unwrap_or_else(|| panic!("{name} on PATH"))
    }

    #[test]
    fn a_slow_program_is_killed_at_the_time_limit() {
        let start = Instant::now();
        let r = run_bounded(
            &program("sleep"),
            &[OsStr::new("30")],
            Duration::from_secs(1),
        );
        assert_eq!(r, Err(RunError::TimedOut(Duration::from_secs(1))));
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "took {took:?}");
        assert!(took >= Duration::from_secs(1), "took {took:?}");
    }

    #[test]
    fn output_and_failures_come_back() {
        let out = run_bounded(
            &program("echo"),
            &[OsStr::new("hello")],
            Duration::from_secs(10),
        );
        assert_eq!(out, Ok(b"hello\n".to_vec()));
        let r = run_bounded(&program("false"), &[], Duration::from_secs(10));
        assert!(matches!(r, Err(RunError::Failed(_))), "{r:?}");
        let r = run_bounded(
            Path::new("/nonexistent/python3"),
            &[],
            Duration::from_secs(10),
        );
        assert!(matches!(r, Err(RunError::Spawn(_))), "{r:?}");
    }
}
