//! [`CodegenError`]: a kernel's IR could not be turned into LLVM IR, PTX or linked code.

use std::fmt;
use std::sync::Arc;

/// An underlying error kept as the [`source`](std::error::Error::source) of a [`CodegenError`].
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A failure to generate or link a kernel's code ([`Error::Codegen`](super::Error::Codegen)):
/// LLVM's or the PTX backend's, a target that lacks what the kernel uses, or the driver's
/// linker refusing the kernel's external code.
///
/// `Display` gives `` kernel `name`: `` and the message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CodegenError {
    /// LLVM failed to build, verify, optimise or emit the kernel's code (an internal error of
    /// cudajit: please report it).
    Llvm {
        /// The kernel's name.
        kernel: String,
        /// What failed.
        message: String,
        /// LLVM's own error, where it gave one as an error value.
        source: Option<ErrorSource>,
    },
    /// The compile target (compute capability, PTX ISA) lacks an instruction the kernel uses.
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// What is needed, and what the target is.
        message: String,
    },
    /// Linking the kernel with its external device code (`link_ptx`, `link_file`) failed.
    Link {
        /// The kernel's name.
        kernel: String,
        /// Which functions are at fault, and the linker's log.
        message: String,
    },
    /// An invariant of cudajit's code generation does not hold (please report it).
    Internal {
        /// The kernel's name.
        kernel: String,
        /// What went wrong.
        message: String,
    },
}

impl CodegenError {
    /// The name of the kernel whose code failed.
    pub fn kernel(&self) -> &str {
        match self {
            CodegenError::Llvm { kernel, .. }
            | CodegenError::Unsupported { kernel, .. }
            | CodegenError::Link { kernel, .. }
            | CodegenError::Internal { kernel, .. } => kernel,
        }
    }

    /// What went wrong (without the kernel's name).
    pub fn message(&self) -> &str {
        match self {
            CodegenError::Llvm { message, .. }
            | CodegenError::Unsupported { message, .. }
            | CodegenError::Link { message, .. }
            | CodegenError::Internal { message, .. } => message,
        }
    }
}

impl PartialEq for CodegenError {
    /// Equal kinds, kernels and messages (the sources are not compared).
    fn eq(&self, other: &CodegenError) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.kernel() == other.kernel()
            && self.message() == other.message()
    }
}

impl Eq for CodegenError {}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`: {}", self.kernel(), self.message())
    }
}

impl std::error::Error for CodegenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodegenError::Llvm {
                source: Some(s), ..
            } => Some(&**s as &(dyn std::error::Error + 'static)),
            _ => None,
        }
    }
}
