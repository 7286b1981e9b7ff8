//! The crate's one error type, with its typed kinds: [`BuildError`] (misuse of the kernel
//! builder), [`LaunchError`] (a launch its configuration or arguments refuse), [`CodegenError`]
//! (LLVM, PTX and link failures), driver and NCCL codes.

use std::fmt;

mod build;
mod codegen;
mod launch;

pub use build::{BuildError, BuildErrorKind};
pub use codegen::{CodegenError, ErrorSource};
pub use launch::LaunchError;

use cudajit_sys as sys;
use parking_lot::Mutex;

pub use sys::LoadError;

/// A shape as error messages print it, NumPy's tuple form: `(3, 4)`, `(7,)`, `()`.
#[derive(Debug, Clone, Copy)]
pub struct ShapeDisplay<'a>(pub &'a [usize]);

impl fmt::Display for ShapeDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [d] => write!(f, "({d},)"),
            dims => {
                f.write_str("(")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Shorthand for `Result<T, cudajit::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in cudajit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The driver library (or one of its functions) could not be loaded.
    Load(LoadError),
    /// A driver call returned an error code.
    Driver {
        /// The driver function that failed (e.g. `cuMemAlloc_v2`).
        call: &'static str,
        /// The code it returned.
        code: DriverCode,
    },
    /// The driver's PTX JIT compiler rejected a module.
    Jit {
        /// The code `cuModuleLoadDataEx` returned.
        code: DriverCode,
        /// The JIT compiler's error log.
        log: String,
    },
    /// Two shapes that must agree do not.
    Shape {
        /// What was being done.
        op: &'static str,
        /// The shape required.
        expected: Vec<usize>,
        /// The shape given.
        actual: Vec<usize>,
    },
    /// An allocation asked for more memory than the device has free.
    OutOfMemory {
        /// Bytes requested.
        requested: usize,
        /// The device's ordinal.
        device: usize,
    },
    /// A kernel (or device function) could not be built: the builder was misused in ways the
    /// types cannot catch. Every misuse found is listed, in the order it was recorded
    /// (`source()` is the first; [`Error::build_errors`] gives them all).
    Build {
        /// The kernel's (or device function's) name.
        kernel: String,
        /// The misuses, each with the source location of the call that made it.
        errors: Vec<BuildError>,
    },
    /// A launch refused before reaching the device: its configuration (grid, block, shared
    /// memory, cooperative limits) or its arguments.
    Launch(LaunchError),
    /// A kernel's code could not be generated or linked (LLVM, the PTX backend, the target, the
    /// driver's linker).
    Codegen(CodegenError),
    /// A kernel that cannot run where it was loaded (the simulator refusing foreign device
    /// code), or an internal inconsistency while loading one.
    Kernel {
        /// The kernel's name.
        kernel: String,
        /// What went wrong.
        message: String,
    },
    /// The API was used in a way it does not allow (the message says how to fix it).
    Usage(String),
    /// NCCL could not be loaded (not installed, a wrong `CUDAJIT_NCCL`, or too old for a call).
    NcclLoad(sys::nccl::NcclLoadError),
    /// An NCCL call returned an error code.
    Nccl {
        /// The NCCL function that failed (e.g. `ncclAllReduce`).
        call: &'static str,
        /// The code it returned.
        code: NcclCode,
        /// NCCL's own account of the last error (`ncclGetLastError`), when it has one.
        detail: String,
    },
    /// Sharing memory, an event or a memory pool with another process failed (`cudajit::ipc`):
    /// a handle that does not match what it is opened as, a handle opened where it cannot be
    /// (the exporting process, another device, the simulator), or a driver error with what it
    /// means for IPC.
    Ipc {
        /// What went wrong and what to do about it.
        message: String,
        /// The driver's code, when a driver call failed.
        code: Option<DriverCode>,
    },
    /// The simulator stopped a kernel that did something the GPU would not catch or would
    /// fault on: an out-of-bounds access, a barrier only part of a block reached, a data race
    /// on shared memory, a misaligned access. The context stays usable.
    Fault {
        /// The kernel's name.
        kernel: String,
        /// What kind of fault.
        kind: FaultKind,
        /// Where and how: block and thread indices, the array, the index and its length.
        message: String,
    },
}

/// What a kernel did wrong, as the simulator reports it ([`Error::Fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// A read or write outside an array (global, shared or local).
    OutOfBounds,
    /// A barrier (`syncthreads`, `syncwarp`, a `*_sync` warp intrinsic) that only part of the
    /// threads it waits for reached, or that they reached at different places.
    DivergentBarrier,
    /// Two threads of a block touched the same shared-memory element between two barriers,
    /// at least one of them writing (and not both atomically).
    SharedRace,
    /// An access at an address that is not a multiple of its size.
    Misaligned,
    /// Something the simulator does not model (the message says what).
    Unsupported,
    /// A kernel given memory of another device whose context has not enabled peer access to
    /// that device (on a GPU, an illegal address; see `Context::enable_peer_access`).
    PeerAccess,
    /// Threads waiting for something that can no longer happen: an `mbarrier` phase whose
    /// arrivals or transaction bytes will never come (on a GPU, a hang).
    Deadlock,
    /// A warpgroup MMA whose shared-memory matrix descriptor does not match what it reads: a
    /// swizzle other than the one TMA wrote the tile with, or threads of the warpgroup giving
    /// different descriptors (on a GPU, silently wrong results).
    BadDescriptor,
    /// A kernel launched from the device into a stream its thread had destroyed, or a stream
    /// destroyed twice (on a GPU, undefined).
    InvalidStream,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::OutOfBounds => "out-of-bounds access",
            FaultKind::DivergentBarrier => "divergent barrier",
            FaultKind::SharedRace => "data race on shared memory",
            FaultKind::Misaligned => "misaligned access",
            FaultKind::Deadlock => "deadlock",
            FaultKind::BadDescriptor => "matrix descriptor that does not match the tile",
            FaultKind::Unsupported => "unsupported operation",
            FaultKind::PeerAccess => "access to another device's memory without peer access",
            FaultKind::InvalidStream => "use of a destroyed device-side stream",
        })
    }
}

/// A raw driver result code with its name and description.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DriverCode(pub sys::CUresult);

impl DriverCode {
    /// The constant's name (`CUDA_ERROR_OUT_OF_MEMORY`), or `None` for a code unknown to this crate.
    pub fn name(self) -> Option<&'static str> {
        sys::result_name(self.0)
    }

    /// The numeric value.
    pub fn value(self) -> u32 {
        self.0 .0
    }

    /// A one-line description: the driver's own if it is loaded, else the header's.
    pub fn description(self) -> String {
        if let Some(s) = driver_error_string(self.0) {
            return s;
        }
        match sys::result_description(self.0) {
            Some(d) => d.to_string(),
            None => format!(
                "unknown result code {} (perhaps from a newer driver than this crate knows)",
                self.value()
            ),
        }
    }

    /// Advice for codes where the fix is known.
    pub fn hint(self) -> Option<&'static str> {
        Some(match self.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                "free device memory or use smaller arrays; Context::memory_info() shows what is free"
            }
            sys::CUresult::CUDA_ERROR_NO_DEVICE => "no CUDA-capable GPU is visible; check nvidia-smi and CUDA_VISIBLE_DEVICES",
            sys::CUresult::CUDA_ERROR_STUB_LIBRARY => {
                "the loaded libcuda is the toolkit's stub; remove its stubs/ directory from LD_LIBRARY_PATH or set CUDAJIT_DRIVER to the real driver"
            }
            sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | sys::CUresult::CUDA_ERROR_LAUNCH_FAILED
            | sys::CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | sys::CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | sys::CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR => {
                "a kernel faulted (check its indexing against the array sizes); this context can no longer be used and the process must restart to use the GPU again"
            }
            sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
                "the kernel needs more registers or shared memory than the block size allows; use a smaller block"
            }
            sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
                "the PTX targets a newer ISA than this driver supports; compile for a lower PTX version or update the driver"
            }
            _ => return None,
        })
    }
}

impl fmt::Debug for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}({})", self.value()),
            None => write!(f, "CUresult({})", self.value()),
        }
    }
}

impl fmt::Display for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.name().unwrap_or("unknown CUDA error"),
            self.value(),
            self.description()
        )?;
        if let Some(h) = self.hint() {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// The driver's short text for a code, when the driver is loaded and knows the code.
fn driver_error_string(code: sys::CUresult) -> Option<String> {
    sys::driver_error_string(code)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Load(e) => e.fmt(f),
            Error::Driver { call, code } => write!(f, "{call} failed: {code}"),
            Error::Jit { code, log } => {
                write!(f, "the driver's PTX JIT compiler rejected the module: {code}")?;
                if log.trim().is_empty() {
                    write!(f, " (the JIT log is empty)")
                } else {
                    write!(f, "\nJIT log:\n{}", log.trim_end())
                }
            }
            Error::Shape {
                op,
                expected,
                actual,
            } => write!(
                f,
                "shape mismatch in {op}: expected {}, got {}",
                ShapeDisplay(expected),
                ShapeDisplay(actual)
            ),
            Error::OutOfMemory { requested, device } => write!(
                f,
                "out of memory on device {device}: could not allocate {requested} bytes ({:.2} GiB); free device \
                 memory or use smaller arrays (Context::memory_info() shows what is free)",
                *requested as f64 / (1u64 << 30) as f64
            ),
            Error::Build { kernel, errors } => {
                write!(f, "kernel `{kernel}`: ")?;
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    e.fmt(f)?;
                }
                Ok(())
            }
            Error::Launch(e) => e.fmt(f),
            Error::Codegen(e) => e.fmt(f),
            Error::Kernel { kernel, message } => write!(f, "kernel `{kernel}`: {message}"),
            Error::Usage(msg) => f.write_str(msg),
            Error::NcclLoad(e) => e.fmt(f),
            Error::Nccl { call, code, detail } => {
                write!(f, "{call} failed: {code}")?;
                if !detail.trim().is_empty() {
                    write!(f, " (NCCL: {})", detail.trim())?;
                }
                Ok(())
            }
            Error::Ipc { message, code } => {
                write!(f, "IPC: {message}")?;
                if let Some(code) = code {
                    write!(f, " (driver: {code})")?;
                }
                Ok(())
            }
            Error::Fault {
                kernel,
                kind,
                message,
            } => write!(
                f,
                "kernel `{kernel}` stopped on the simulator: {kind}: {message} (the context is still usable)"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Load(e) => Some(e),
            Error::NcclLoad(e) => Some(e),
            Error::Launch(e) => Some(e),
            Error::Codegen(e) => Some(e),
            Error::Build { errors, .. } => errors.first().map(|e| e as _),
            _ => None,
        }
    }
}

impl From<sys::nccl::NcclLoadError> for Error {
    fn from(e: sys::nccl::NcclLoadError) -> Self {
        Error::NcclLoad(e)
    }
}

impl From<LaunchError> for Error {
    fn from(e: LaunchError) -> Self {
        Error::Launch(e)
    }
}

impl From<CodegenError> for Error {
    fn from(e: CodegenError) -> Self {
        Error::Codegen(e)
    }
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Self {
        Error::Load(e)
    }
}

impl Error {
    /// The driver code behind this error, if it came from the driver.
    pub fn driver_code(&self) -> Option<DriverCode> {
        match self {
            Error::Driver { code, .. } | Error::Jit { code, .. } => Some(*code),
            Error::Ipc { code, .. } => *code,
            _ => None,
        }
    }

    /// Whether this is the driver's out-of-memory error.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. })
            || self
                .driver_code()
                .is_some_and(|c| c.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)
    }

    /// The misuses of the builder, if this is a kernel's build error.
    pub fn build_errors(&self) -> &[BuildError] {
        match self {
            Error::Build { errors, .. } => errors,
            _ => &[],
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// A launch refused for its grid or block dimensions.
    pub(crate) fn launch_config(message: impl Into<String>) -> Self {
        Error::Launch(LaunchError::Config {
            message: message.into(),
        })
    }

    /// A launch refused for one of its arguments.
    pub(crate) fn launch_argument(message: impl Into<String>) -> Self {
        Error::Launch(LaunchError::Argument {
            message: message.into(),
        })
    }
}

/// Turns a driver call's outcome into a `Result`, naming the call on failure.
#[inline]
pub(crate) fn check(
    res: std::result::Result<sys::CUresult, LoadError>,
    call: &'static str,
) -> Result<()> {
    match res {
        Ok(sys::CUresult::CUDA_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::Driver {
            call,
            code: DriverCode(code),
        }),
        Err(e) => Err(Error::Load(e)),
    }
}

/// The most errors kept from `Drop` implementations before older ones are discarded.
const MAX_DROP_ERRORS: usize = 256;

static DROP_ERRORS: Mutex<Vec<Error>> = Mutex::new(Vec::new());

/// Keeps an error raised while dropping a resource, for [`take_drop_errors`].
pub(crate) fn record_drop_error(e: Error) {
    if std::env::var_os("CUDAJIT_LOG_DROP_ERRORS").is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!("cudajit: error while releasing a resource: {e}");
    }
    let mut errors = DROP_ERRORS.lock();
    if errors.len() >= MAX_DROP_ERRORS {
        errors.remove(0);
    }
    errors.push(e);
}

/// Errors raised while dropping resources (which `Drop` cannot return), oldest first.
///
/// Drained by this call. At most the last 256 are kept. Set `CUDAJIT_LOG_DROP_ERRORS=1` to also
/// print each to stderr as it happens.
pub fn take_drop_errors() -> Vec<Error> {
    std::mem::take(&mut *DROP_ERRORS.lock())
}

/// Keeps the error of a call made inside `Drop`, if it failed.
pub(crate) fn check_in_drop(res: Result<()>) {
    if let Err(e) = res {
        record_drop_error(e);
    }
}

/// An NCCL result code (`ncclResult_t`) with its name and description.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NcclCode(pub sys::nccl::ncclResult_t);

impl NcclCode {
    /// The constant's name (`ncclInvalidUsage`), or `None` for a code unknown to this crate.
    pub fn name(self) -> Option<&'static str> {
        sys::nccl::result_name(self.0)
    }

    /// The numeric value.
    pub fn value(self) -> u32 {
        self.0 .0
    }

    /// A one-line description: NCCL's own (`ncclGetErrorString`) when NCCL can be loaded,
    /// else the table's.
    pub fn description(self) -> String {
        if let Some(s) = sys::nccl::error_string(self.0) {
            return s;
        }
        match sys::nccl::result_description(self.0) {
            Some(d) => d.to_string(),
            None => format!(
                "unknown NCCL result code {} (perhaps from a newer NCCL than this crate knows)",
                self.value()
            ),
        }
    }
}

impl fmt::Debug for NcclCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}({})", self.value()),
            None => write!(f, "ncclResult_t({})", self.value()),
        }
    }
}

impl fmt::Display for NcclCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.name().unwrap_or("unknown NCCL error"),
            self.value(),
            self.description()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn kinds_print_as_before_and_chain_their_sources() {
        let at = std::panic::Location::caller();
        let e = Error::Build {
            kernel: "k".into(),
            errors: vec![
                BuildError::new(BuildErrorKind::OutOfScope, "in `k`: first", at),
                BuildError::new(BuildErrorKind::BadCast, "in `k`: second", at),
            ],
        };
        assert_eq!(
            e.to_string(),
            format!("kernel `k`: in `k`: first (at {at}); in `k`: second (at {at})")
        );
        assert_eq!(e.build_errors()[1].kind(), BuildErrorKind::BadCast);
        assert_eq!(e.build_errors()[1].message(), "in `k`: second");
        assert_eq!(
            e.source().map(|s| s.to_string()),
            Some(format!("in `k`: first (at {at})"))
        );

        let e = Error::from(LaunchError::Config {
            message: "launch of `k`: no".into(),
        });
        assert_eq!(e.to_string(), "launch of `k`: no");
        assert_eq!(
            e.source().map(|s| s.to_string()).as_deref(),
            Some("launch of `k`: no")
        );

        #[derive(Debug)]
        struct Inner;
        impl fmt::Display for Inner {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("inner")
            }
        }
        impl std::error::Error for Inner {}
        let e = Error::from(CodegenError::Llvm {
            kernel: "k".into(),
            message: "internal code generation error: inner".into(),
            source: Some(std::sync::Arc::new(Inner)),
        });
        assert_eq!(
            e.to_string(),
            "kernel `k`: internal code generation error: inner"
        );
        let codegen = e.source().expect("the codegen error");
        assert_eq!(
            codegen.source().map(|s| s.to_string()).as_deref(),
            Some("inner")
        );
        assert_eq!(e.clone(), e);
        assert!(Error::usage("x").source().is_none());
        let e = Error::Shape {
            op: "t",
            expected: vec![3, 4],
            actual: vec![7],
        };
        assert_eq!(
            e.to_string(),
            "shape mismatch in t: expected (3, 4), got (7,)"
        );
        assert_eq!(ShapeDisplay(&[]).to_string(), "()");
    }
}
