//! Finding and opening the CUDA driver library.
//!
//! Search order (first match wins):
//! 1. `CUDAJIT_DRIVER`, else `NUMBA_CUDA_DRIVER`: the absolute path of the library file. If set
//!    and it cannot be loaded, that is the error (no fallback); a relative path is refused
//!    ([`LoadError::RelativeOverride`]). Empty means unset; `0` disables the driver (every call
//!    then fails with [`LoadError::Disabled`]).
//! 2. `libcuda.so.1`, then `libcuda.so`, through the system loader (`nvcuda.dll` on Windows).
//! 3. The usual driver directories ([`DRIVER_DIRS`], all absolute).
//!
//! The driver's search never runs Python. `CUDAJIT_LOG_LOAD=1` prints what was chosen and
//! skipped ([`crate::load_log`]).
//!
//! The CUDA toolkit's `stubs/libcuda.so` only serves linking; it is never picked up by the search,
//! and naming it in the override is a [`LoadError::StubLibrary`] error.
//! When nothing loads, [`LoadError::NotFound`] lists every path tried with the loader's message.

use std::ffi::{c_void, OsStr, OsString};
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use crate::load_log::{LoadLog, Rule, Skip};
use crate::paths::usable;

/// Environment variable naming the driver library to load (cudajit's own).
pub const DRIVER_ENV: &str = "CUDAJIT_DRIVER";
/// Numba's variable, honoured the same way for users coming from Numba.
pub const NUMBA_DRIVER_ENV: &str = "NUMBA_CUDA_DRIVER";

/// Library names tried through the system loader, in order.
#[cfg(not(windows))]
pub const SYSTEM_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
/// Library names tried through the system loader, in order.
#[cfg(windows)]
pub const SYSTEM_NAMES: &[&str] = &["nvcuda.dll"];

/// Directories searched after the system loader (Linux distributions, containers, WSL).
#[cfg(not(windows))]
pub const DRIVER_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
    "/run/opengl-driver/lib",
];
/// Directories searched after the system loader.
#[cfg(windows)]
pub const DRIVER_DIRS: &[&str] = &["C:\\Windows\\System32"];

/// Why the driver library, or one of its symbols, could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The override variable was `0`.
    Disabled {
        /// The variable that disabled the driver.
        var: &'static str,
    },
    /// The override variable was a relative path (it would depend on the current directory).
    RelativeOverride {
        /// The variable that was set.
        var: &'static str,
        /// Its value.
        path: String,
    },
    /// The override variable named a file that could not be loaded.
    OverrideFailed {
        /// The variable that was set.
        var: &'static str,
        /// Its value.
        path: String,
        /// The system loader's message.
        message: String,
    },
    /// The override variable named the CUDA toolkit's link-time stub.
    StubLibrary {
        /// The stub's path.
        path: String,
    },
    /// No candidate could be loaded.
    NotFound {
        /// Every path tried, with the loader's message for each.
        tried: Vec<(String, String)>,
    },
    /// The library loaded but lacks a symbol.
    MissingSymbol {
        /// The symbol (e.g. `cuMemAlloc_v2`).
        symbol: String,
        /// How the library was found (its path or name).
        library: String,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Disabled { var } => write!(
                f,
                "the CUDA driver is disabled ({var}=0); unset {var} or set it to the path of libcuda to use the GPU"
            ),
            LoadError::RelativeOverride { var, path } => write!(
                f,
                "{var}={path}: a relative path is refused (it would depend on the current directory); \
                 give the absolute path of the driver's libcuda.so.1 (e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1), \
                 or unset {var} to search the usual places"
            ),
            LoadError::OverrideFailed { var, path, message } => write!(
                f,
                "{var}={path}: cannot load the CUDA driver library from this path: {message}. \
                 Point {var} at the driver's libcuda.so.1 (e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1), \
                 or unset it to search the usual places"
            ),
            LoadError::StubLibrary { path } => write!(
                f,
                "{path} is the CUDA toolkit's stub libcuda (from a stubs/ directory): it only serves linking and cannot \
                 run anything. Install the NVIDIA driver and point {DRIVER_ENV} at its libcuda.so.1, or unset {DRIVER_ENV}"
            ),
            LoadError::NotFound { tried } => {
                write!(
                    f,
                    "no CUDA driver library could be loaded; is the NVIDIA driver installed? \
                     If libcuda lives elsewhere, set {DRIVER_ENV} to its path. Tried:"
                )?;
                for (path, message) in tried {
                    write!(f, "\n  {path}: {message}")?;
                }
                Ok(())
            }
            LoadError::MissingSymbol { symbol, library } => write!(
                f,
                "the CUDA driver library {library} has no function `{symbol}`: the driver is older than this call \
                 needs (update the NVIDIA driver), or the library is not the CUDA driver"
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// The override variables' values, as read from the environment (or given by a test).
#[derive(Debug, Clone, Default)]
pub struct DriverEnv {
    /// Value of `CUDAJIT_DRIVER`.
    pub cudajit_driver: Option<OsString>,
    /// Value of `NUMBA_CUDA_DRIVER`.
    pub numba_cuda_driver: Option<OsString>,
}

impl DriverEnv {
    /// Reads both variables from the process environment.
    pub fn from_process() -> Self {
        Self {
            cudajit_driver: std::env::var_os(DRIVER_ENV),
            numba_cuda_driver: std::env::var_os(NUMBA_DRIVER_ENV),
        }
    }

    /// The override in force: the first non-empty variable, with its name.
    pub fn override_path(&self) -> Option<(&'static str, &OsStr)> {
        [
            (DRIVER_ENV, &self.cudajit_driver),
            (NUMBA_DRIVER_ENV, &self.numba_cuda_driver),
        ]
        .into_iter()
        .find_map(|(var, value)| match value {
            Some(v) if !v.is_empty() => Some((var, v.as_os_str())),
            _ => None,
        })
    }
}

/// An opened driver library.
#[derive(Debug)]
pub struct DriverLibrary {
    library: libloading::Library,
    origin: String,
}

impl DriverLibrary {
    /// How the library was found: the path or name it was opened by.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Resolves `name` (which must end with a NUL byte) to its address.
    pub fn symbol(&self, name: &str) -> Result<*mut c_void, LoadError> {
        // SAFETY: the symbol is only turned into a function pointer by the generated
        // wrappers, with the prototype that cuda.h declares for this exact name.
        let sym = unsafe { self.library.get::<*mut c_void>(name.as_bytes()) };
        match sym {
            Ok(s) if !s.is_null() => Ok(*s),
            _ => Err(LoadError::MissingSymbol {
                symbol: name.trim_end_matches('\0').to_string(),
                library: self.origin.clone(),
            }),
        }
    }

    /// Opens the driver following the search order in this module's documentation, logging
    /// as the process's `CUDAJIT_LOG_LOAD` says.
    pub fn load(env: &DriverEnv) -> Result<Self, LoadError> {
        Self::load_logged(env, &mut LoadLog::from_process("libcuda"))
    }

    /// [`load`](Self::load), logging to `log`.
    pub fn load_logged(env: &DriverEnv, log: &mut LoadLog) -> Result<Self, LoadError> {
        if let Some((var, path)) = env.override_path() {
            let shown = path.to_string_lossy().into_owned();
            if path == "0" {
                return Err(LoadError::Disabled { var });
            }
            if !Path::new(path).is_absolute() {
                log.skipped(Path::new(path), Some(var), &Skip::Relative);
                return Err(LoadError::RelativeOverride { var, path: shown });
            }
            if is_stub(Path::new(path)) {
                return Err(LoadError::StubLibrary { path: shown });
            }
            let lib = open(path).map_err(|message| LoadError::OverrideFailed {
                var,
                path: shown,
                message,
            })?;
            log.chose(Path::new(path), Rule::Override(var));
            return Ok(lib);
        }
        let mut tried = Vec::new();
        for name in SYSTEM_NAMES {
            match open(OsStr::new(name)) {
                Ok(lib) => {
                    log.chose(Path::new(name), Rule::SystemLoader);
                    return Ok(lib);
                }
                Err(message) => {
                    log.skipped(Path::new(name), None, &Skip::Unloadable(message.clone()));
                    tried.push((name.to_string(), message));
                }
            }
        }
        let in_dirs = DRIVER_DIRS.iter().flat_map(|dir| {
            SYSTEM_NAMES
                .iter()
                .map(move |name| Path::new(dir).join(name))
        });
        for candidate in in_dirs {
            if !usable(&candidate, None, &|p| p.exists(), log) {
                continue;
            }
            match open(candidate.as_os_str()) {
                Ok(lib) => {
                    log.chose(&candidate, Rule::UsualDir);
                    return Ok(lib);
                }
                Err(message) => {
                    log.skipped(&candidate, None, &Skip::Unloadable(message.clone()));
                    tried.push((candidate.display().to_string(), message));
                }
            }
        }
        Err(LoadError::NotFound { tried })
    }
}

/// Whether `path` lies in a toolkit `stubs` directory.
fn is_stub(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "stubs")
}

fn open(path: &OsStr) -> Result<DriverLibrary, String> {
    // SAFETY: loading a shared library runs its initialisers; the driver's are safe to run,
    // and a user-provided path is the user's explicit choice of library.
    let library = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
    Ok(DriverLibrary {
        library,
        origin: path.to_string_lossy().into_owned(),
    })
}

/// Resolves a driver symbol (NUL-terminated name), loading the driver if needed.
pub(crate) fn driver_symbol(name: &str) -> Result<*mut c_void, LoadError> {
    driver_library()?.symbol(name)
}

static DRIVER: OnceLock<Result<DriverLibrary, LoadError>> = OnceLock::new();

/// The process-wide driver library if something has loaded it already (never loads it).
pub fn loaded_driver_library() -> Option<&'static DriverLibrary> {
    DRIVER.get().and_then(|r| r.as_ref().ok())
}

/// The process-wide driver library, loaded on first use from [`DriverEnv::from_process`].
///
/// The outcome (success or error) is decided once per process.
pub fn driver_library() -> Result<&'static DriverLibrary, LoadError> {
    DRIVER
        .get_or_init(|| DriverLibrary::load(&DriverEnv::from_process()))
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_override_is_refused_before_anything_loads() {
        for (var, env) in [
            (
                DRIVER_ENV,
                DriverEnv {
                    cudajit_driver: Some("libcuda.so.1".into()),
                    numba_cuda_driver: Some("/abs/libcuda.so.1".into()),
                },
            ),
            (
                NUMBA_DRIVER_ENV,
                DriverEnv {
                    cudajit_driver: None,
                    numba_cuda_driver: Some("./lib/libcuda.so.1".into()),
                },
            ),
        ] {
            let mut log = LoadLog::new("libcuda", false);
            let err = DriverLibrary::load_logged(&env, &mut log).unwrap_err();
            assert!(
                matches!(&err, LoadError::RelativeOverride { var: v, .. } if *v == var),
                "{err:?}"
            );
            let text = err.to_string();
            assert!(text.contains("give the absolute path"), "{text}");
            assert_eq!(log.lines().len(), 1);
            assert!(
                log.lines()[0].ends_with(&format!("(from {var}): relative path")),
                "{:?}",
                log.lines()
            );
        }
    }
}
