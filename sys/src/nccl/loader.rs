//! Finding and opening NCCL (`libnccl.so.2`).
//!
//! Search order (first library that loads and has `ncclGetVersion` wins):
//! 1. `CUDAJIT_NCCL`: the absolute path of the library file. If set and it cannot be loaded (or
//!    is not NCCL), that is the error (no fallback); a relative path is refused
//!    ([`NcclLoadError::RelativeOverride`]). Empty means unset; `0` disables NCCL.
//! 2. The usual directories ([`NCCL_DIRS`], then `$CUDA_HOME/lib64` and `$CUDA_PATH/lib64`).
//! 3. The `nvidia-nccl-cu12` / `nvidia-nccl-cu13` wheels' `lib/` under every Python
//!    site-packages directory found on the machine ([`crate::python::site_packages`]), then
//!    under the `nvidia` package of the `python3` on `PATH` (asked only if nothing was found,
//!    under a time limit, not at all with `CUDAJIT_NO_PYTHON=1`).
//! 4. `libnccl.so.2`, then `libnccl.so`, through the system loader (`LD_LIBRARY_PATH`, ldconfig).
//!
//! Every directory and file of steps 2 and 3 is absolute: relative values (`CUDA_HOME=cuda`,
//! a relative `PATH` entry, a relative line of Python's output) are skipped, never resolved
//! against the current directory. `CUDAJIT_LOG_LOAD=1` prints what was chosen and skipped
//! ([`crate::load_log`]).
//!
//! When nothing loads, [`NcclLoadError::NotFound`] says what to install and lists every place
//! looked at.

use std::ffi::{c_void, OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::load_log::{LoadLog, Rule, Skip};
use crate::lookup::Lookup;
use crate::paths::{absolute_var, usable};

/// Environment variable naming the NCCL library to load.
pub const NCCL_ENV: &str = "CUDAJIT_NCCL";

/// Library names tried through the system loader, in order.
pub const NCCL_SYSTEM_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];

/// Directories searched for `libnccl.so.2` before the Python wheels.
pub const NCCL_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/nccl/lib",
    "/opt/nccl/lib",
];

/// Where the NCCL wheels (`nvidia-nccl-cu12` and `nvidia-nccl-cu13` alike) put the library,
/// relative to a site-packages directory.
pub const NCCL_IN_WHEELS: &[&str] = &["nvidia/nccl/lib/libnccl.so.2"];

/// What to install, for the error messages.
const INSTALL_HINT: &str = "install NCCL with `pip install nvidia-nccl-cu12` (or `nvidia-nccl-cu13` with CUDA 13) \
     or the distribution's package (Debian/Ubuntu: libnccl2; RHEL: libnccl), or set CUDAJIT_NCCL to the path of libnccl.so.2";

/// Why NCCL, or one of its symbols, could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NcclLoadError {
    /// `CUDAJIT_NCCL` was `0`.
    Disabled,
    /// `CUDAJIT_NCCL` was a relative path (it would depend on the current directory).
    RelativeOverride {
        /// Its value.
        path: String,
    },
    /// `CUDAJIT_NCCL` named a file that could not be loaded.
    OverrideFailed {
        /// Its value.
        path: String,
        /// The system loader's message.
        message: String,
    },
    /// A library loaded but is not NCCL (it has no `ncclGetVersion`).
    NotNccl {
        /// The library's path or name.
        library: String,
    },
    /// No candidate could be loaded.
    NotFound {
        /// The directories and names looked at.
        looked_in: Vec<String>,
        /// Every file that exists and was tried, with the loader's message for each.
        tried: Vec<(String, String)>,
    },
    /// NCCL loaded but lacks a symbol (an older NCCL than the call needs).
    MissingSymbol {
        /// The symbol (e.g. `ncclCommInitAll`).
        symbol: String,
        /// How the library was found (its path or name).
        library: String,
    },
}

impl fmt::Display for NcclLoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclLoadError::Disabled => write!(
                f,
                "NCCL is disabled ({NCCL_ENV}=0); unset {NCCL_ENV} or set it to the path of libnccl.so.2"
            ),
            NcclLoadError::RelativeOverride { path } => write!(
                f,
                "{NCCL_ENV}={path}: a relative path is refused (it would depend on the current directory); \
                 give the absolute path of libnccl.so.2, or unset {NCCL_ENV} to search the usual places"
            ),
            NcclLoadError::OverrideFailed { path, message } => write!(
                f,
                "{NCCL_ENV}={path}: cannot load NCCL from this path: {message}. Point {NCCL_ENV} at libnccl.so.2 \
                 (e.g. <site-packages>/nvidia/nccl/lib/libnccl.so.2), or unset it to search the usual places"
            ),
            NcclLoadError::NotNccl { library } => write!(
                f,
                "{library} is not NCCL (it has no function `ncclGetVersion`); point {NCCL_ENV} at libnccl.so.2"
            ),
            NcclLoadError::NotFound { looked_in, tried } => {
                write!(f, "NCCL (libnccl.so.2) was not found: {INSTALL_HINT}. Looked in:")?;
                for place in looked_in {
                    write!(f, "\n  {place}")?;
                }
                if !tried.is_empty() {
                    write!(f, "\nFound but could not load:")?;
                    for (path, message) in tried {
                        write!(f, "\n  {path}: {message}")?;
                    }
                }
                Ok(())
            }
            NcclLoadError::MissingSymbol { symbol, library } => write!(
                f,
                "NCCL at {library} has no function `{symbol}`: it is older than this call needs; \
                 update it (e.g. `pip install -U nvidia-nccl-cu12`)"
            ),
        }
    }
}

impl std::error::Error for NcclLoadError {}

/// The override variable's value, as read from the environment (or given by a test).
#[derive(Debug, Clone, Default)]
pub struct NcclEnv {
    /// Value of `CUDAJIT_NCCL`.
    pub cudajit_nccl: Option<OsString>,
    /// Whether to search (when there is no override); `false` stops after the override, so
    /// tests can see the "not found" error on a machine that has NCCL.
    pub search: bool,
}

impl NcclEnv {
    /// Reads `CUDAJIT_NCCL` from the process environment; searching is on.
    pub fn from_process() -> Self {
        Self {
            cudajit_nccl: std::env::var_os(NCCL_ENV),
            search: true,
        }
    }
}

/// An opened NCCL library.
#[derive(Debug)]
pub struct NcclLibrary {
    library: libloading::Library,
    origin: String,
    version: i32,
}

impl NcclLibrary {
    /// How the library was found: the path or name it was opened by.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// NCCL's version code (`ncclGetVersion`: e.g. 22803 for 2.28.3).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Resolves `name` (which must end with a NUL byte) to its address.
    pub fn symbol(&self, name: &str) -> Result<*mut c_void, NcclLoadError> {
        // SAFETY: the symbol is only turned into a function pointer by the generated
        // wrappers, with the prototype that nccl.h declares for this exact name.
        let sym = unsafe { self.library.get::<*mut c_void>(name.as_bytes()) };
        match sym {
            Ok(s) if !s.is_null() => Ok(*s),
            _ => Err(NcclLoadError::MissingSymbol {
                symbol: name.trim_end_matches('\0').to_string(),
                library: self.origin.clone(),
            }),
        }
    }

    /// Opens NCCL following the search order in this module's documentation, reading the
    /// process's environment, logging as `CUDAJIT_LOG_LOAD` says.
    pub fn load(env: &NcclEnv) -> Result<Self, NcclLoadError> {
        Self::load_with(env, &Lookup::process(), &mut LoadLog::from_process("NCCL"))
    }

    /// [`load`](Self::load) with the machine as `lookup` sees it, logging to `log`.
    pub fn load_with(
        env: &NcclEnv,
        lookup: &Lookup<'_>,
        log: &mut LoadLog,
    ) -> Result<Self, NcclLoadError> {
        if let Some(path) = env.cudajit_nccl.as_deref().filter(|p| !p.is_empty()) {
            if path == "0" {
                return Err(NcclLoadError::Disabled);
            }
            let shown = path.to_string_lossy().into_owned();
            if !Path::new(path).is_absolute() {
                log.skipped(Path::new(path), Some(NCCL_ENV), &Skip::Relative);
                return Err(NcclLoadError::RelativeOverride { path: shown });
            }
            let lib = open(path).map_err(|e| match e {
                OpenError::Load(message) => NcclLoadError::OverrideFailed {
                    path: shown,
                    message,
                },
                OpenError::NotNccl(e) => e,
            })?;
            log.chose(Path::new(path), Rule::Override(NCCL_ENV));
            return Ok(lib);
        }
        let mut looked_in = Vec::new();
        let mut tried = Vec::new();
        if !env.search {
            looked_in.push("nowhere (the search is off)".to_string());
            return Err(NcclLoadError::NotFound { looked_in, tried });
        }
        for (file, rule) in candidates(lookup, &mut looked_in, log) {
            match open(file.as_os_str()) {
                Ok(lib) => {
                    log.chose(&file, rule);
                    return Ok(lib);
                }
                Err(e) => {
                    log.skipped(&file, None, &Skip::Unloadable(e.to_string()));
                    tried.push((file.display().to_string(), e.to_string()));
                }
            }
        }
        for name in NCCL_SYSTEM_NAMES {
            looked_in.push(format!("{name} through the system loader"));
            match open(OsStr::new(name)) {
                Ok(lib) => {
                    log.chose(Path::new(name), Rule::SystemLoader);
                    return Ok(lib);
                }
                Err(e) => {
                    log.skipped(Path::new(name), None, &Skip::Unloadable(e.to_string()));
                    if let OpenError::NotNccl(e) = e {
                        tried.push((name.to_string(), e.to_string()));
                    }
                }
            }
        }
        Err(NcclLoadError::NotFound { looked_in, tried })
    }
}

/// The files of steps 2 and 3 of the search that exist, in order, each with the rule that
/// found it; every place looked at goes to `looked_in`, every file passed over to `log`.
/// `python3` is asked only when nothing else exists.
pub fn candidates(
    lookup: &Lookup<'_>,
    looked_in: &mut Vec<String>,
    log: &mut LoadLog,
) -> Vec<(PathBuf, Rule)> {
    let mut dirs: Vec<(PathBuf, Rule)> = NCCL_DIRS
        .iter()
        .map(|d| (PathBuf::from(d), Rule::UsualDir))
        .collect();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = absolute_var(lookup.var, var, log) {
            dirs.push((h.join("lib64"), Rule::ToolkitDir(var)));
        }
    }
    let mut files: Vec<(PathBuf, Rule)> = Vec::new();
    for (dir, rule) in dirs {
        looked_in.push(dir.display().to_string());
        files.push((dir.join("libnccl.so.2"), rule));
    }
    let in_roots = |roots: &[PathBuf], rule: Rule| -> Vec<(PathBuf, Rule)> {
        roots
            .iter()
            .flat_map(|r| NCCL_IN_WHEELS.iter().map(move |w| (r.join(w), rule)))
            .collect()
    };
    let wheel_roots = (lookup.site_packages)(log);
    files.extend(in_roots(&wheel_roots, Rule::Wheel));
    for root in &wheel_roots {
        looked_in.push(format!("{}/nvidia/nccl/lib", root.display()));
    }
    if !files
        .iter()
        .any(|(f, _)| f.is_absolute() && (lookup.is_file)(f))
    {
        // The nvidia namespace's parent is a site-packages directory.
        let mut more = Vec::new();
        for root in (lookup.python_nvidia_dirs)(log)
            .iter()
            .filter_map(|d| d.parent().map(Path::to_path_buf))
        {
            let same = |r: &PathBuf| {
                r == &root
                    || matches!((std::fs::canonicalize(r), std::fs::canonicalize(&root)),
                        (Ok(a), Ok(b)) if a == b)
            };
            if !wheel_roots.iter().chain(&more).any(same) {
                looked_in.push(format!("{}/nvidia/nccl/lib", root.display()));
                more.push(root);
            }
        }
        files.extend(in_roots(&more, Rule::WheelViaPython));
    }
    files.retain(|(f, _)| usable(f, None, lookup.is_file, log));
    files
}

/// Why one candidate did not do.
enum OpenError {
    /// The system loader's message.
    Load(String),
    /// It loaded but is not NCCL.
    NotNccl(NcclLoadError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Load(m) => f.write_str(m),
            OpenError::NotNccl(e) => e.fmt(f),
        }
    }
}

fn open(path: &OsStr) -> Result<NcclLibrary, OpenError> {
    // SAFETY: loading a shared library runs its initialisers; NCCL's are safe to run, and a
    // user-provided path is the user's explicit choice of library.
    let library =
        unsafe { libloading::Library::new(path) }.map_err(|e| OpenError::Load(e.to_string()))?;
    let origin = path.to_string_lossy().into_owned();
    let not_nccl = || {
        OpenError::NotNccl(NcclLoadError::NotNccl {
            library: origin.clone(),
        })
    };
    // SAFETY: `ncclGetVersion` has had the prototype `ncclResult_t (int*)` since NCCL 2.3.
    let get_version = unsafe {
        library.get::<unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_uint>(
            b"ncclGetVersion\0",
        )
    }
    .map_err(|_| not_nccl())?;
    let mut version = 0;
    // SAFETY: the pointer is to a live local int, as the prototype asks.
    if unsafe { get_version(&mut version) } != 0 {
        return Err(not_nccl());
    }
    Ok(NcclLibrary {
        library,
        origin,
        version,
    })
}

static NCCL: OnceLock<Result<NcclLibrary, NcclLoadError>> = OnceLock::new();

/// The process-wide NCCL library, loaded on first use from [`NcclEnv::from_process`].
///
/// The outcome (success or error) is decided once per process.
pub fn nccl_library() -> Result<&'static NcclLibrary, NcclLoadError> {
    NCCL.get_or_init(|| NcclLibrary::load(&NcclEnv::from_process()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Resolves an NCCL symbol (NUL-terminated name), loading NCCL if needed.
pub(crate) fn nccl_symbol(name: &str) -> Result<*mut c_void, NcclLoadError> {
    nccl_library()?.symbol(name)
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
