//! One test of this test binary run again in a child process, for what needs a fresh process:
//! an environment variable read once per process, the compile cache's first use, a fault that
//! poisons the context, kernels' printf (which the driver writes to file descriptor 1).
//!
//! The child test does its work only when its marker variable is set, and prints [`CHILD_OK`]
//! when all of it passed.

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// What a child test prints when all of it passed.
pub const CHILD_OK: &str = "CHILD OK";

/// A child process that runs one test of this binary.
pub struct Child {
    cmd: Command,
}

/// What a child printed, and whether it exited successfully.
pub struct Output {
    /// Whether the child exited with status 0.
    pub success: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Child {
    /// The test `test` (its path in this binary, e.g. `cache::child_process`), run alone
    /// (`--exact`, ignored tests included, output not captured, one thread), with
    /// `marker=value` in its environment.
    pub fn test(test: &str, marker: &str, value: impl AsRef<OsStr>) -> Child {
        let mut cmd = Command::new(std::env::current_exe().expect("the test binary's path"));
        cmd.args([
            test,
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(marker, value);
        Child { cmd }
    }

    /// Sets `key=value` in the child's environment.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Child {
        self.cmd.env(key, value);
        self
    }

    /// Sets each `(key, value)` in the child's environment.
    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Child {
        self.cmd.envs(vars);
        self
    }

    /// Leaves `key` out of the child's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Child {
        self.cmd.env_remove(key);
        self
    }

    /// Runs the child to its end.
    pub fn run(mut self) -> Output {
        Output::from(self.cmd.output().expect("starting the test binary again"))
    }

    /// Starts the child; [`Running::wait`] collects what it printed.
    pub fn spawn(mut self) -> Running {
        let child = self
            .cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the test binary again");
        Running(child)
    }

    /// Runs the child and checks that it passed (exit status 0 and [`CHILD_OK`] printed);
    /// returns its output. Panics with everything it printed if not.
    pub fn run_ok(self) -> Output {
        let out = self.run();
        assert!(out.passed(), "the child test failed:\n{}", out.text());
        out
    }
}

/// A child started by [`Child::spawn`].
pub struct Running(std::process::Child);

impl Running {
    /// Waits for the child to end.
    pub fn wait(self) -> Output {
        Output::from(
            self.0
                .wait_with_output()
                .expect("waiting for the child test"),
        )
    }
}

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Output {
        Output {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Output {
    /// Standard output, then standard error.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Whether the child exited successfully and printed [`CHILD_OK`].
    pub fn passed(&self) -> bool {
        self.success && (self.stdout.contains(CHILD_OK) || self.stderr.contains(CHILD_OK))
    }
}
