//! [`LaunchError`]: a launch that its configuration or arguments refuse.

use std::fmt;

/// A launch refused before it reached the device, because of its configuration (grid, block,
/// shared memory, cooperative limits) or its arguments ([`Error::Launch`](super::Error::Launch)).
///
/// Each variant carries the message, which names the kernel and says how to fix the launch;
/// `Display` gives it as is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchError {
    /// The grid or block dimensions: a zero dimension, a block larger than the kernel or the
    /// hardware allows, a grid beyond the hardware's limits.
    Config {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// More dynamic shared memory per block than the kernel or the device allows.
    SharedMemory {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// An argument the kernel cannot take: too many argument slots, a strided view for a
    /// contiguous array parameter.
    Argument {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// An array argument, or the stream, of another context (device) than the kernel's.
    WrongContext {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// An array that does not start at the alignment the kernel's vector accesses need.
    Misaligned {
        /// What is wrong, and how to fix it.
        message: String,
    },
    /// A kernel that calls `grid_sync()` launched in a way a cooperative launch does not
    /// allow: more blocks than fit on the device at once, or as a hand-built graph node.
    Cooperative {
        /// What is wrong, and how to fix it.
        message: String,
    },
}

impl LaunchError {
    /// The message: what is wrong with the launch, and how to fix it.
    pub fn message(&self) -> &str {
        match self {
            LaunchError::Config { message }
            | LaunchError::SharedMemory { message }
            | LaunchError::Argument { message }
            | LaunchError::WrongContext { message }
            | LaunchError::Misaligned { message }
            | LaunchError::Cooperative { message } => message,
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for LaunchError {}
