//! [`BuildError`]: misuse of the kernel builder, found while a kernel is recorded.

use std::fmt;
use std::panic::Location;

/// Declares [`BuildError`] (one variant per kind of misuse, each with its message and source
/// location) and [`BuildErrorKind`] (the same kinds, without data).
macro_rules! build_errors {
    ($($(#[doc = $doc:literal])* $v:ident,)*) => {
        /// A misuse of the kernel builder that the types cannot catch, found while a kernel (or
        /// device function) is recorded: one of the errors of [`Error::Build`](super::Error::Build).
        ///
        /// Each variant carries the message (what went wrong and how to fix it) and the Rust
        /// source location of the builder call that caused it (of `Kernel::build` itself for
        /// what is checked once the whole kernel is recorded). `Display` gives the message
        /// followed by ` (at file:line:column)`.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum BuildError {
            $(
                $(#[doc = $doc])*
                $v {
                    /// What went wrong, and how to fix it.
                    message: String,
                    /// Where the offending builder call was made.
                    location: &'static Location<'static>,
                },
            )*
        }

        /// The kind of a [`BuildError`], without its message and location.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum BuildErrorKind {
            $(
                $(#[doc = $doc])*
                $v,
            )*
        }

        impl BuildError {
            /// A build error of kind `kind`.
            pub fn new(
                kind: BuildErrorKind,
                message: impl Into<String>,
                location: &'static Location<'static>,
            ) -> BuildError {
                let message = message.into();
                match kind {
                    $(BuildErrorKind::$v => BuildError::$v { message, location },)*
                }
            }

            /// The kind of misuse.
            pub fn kind(&self) -> BuildErrorKind {
                match self {
                    $(BuildError::$v { .. } => BuildErrorKind::$v,)*
                }
            }

            /// What went wrong, and how to fix it (without the location).
            pub fn message(&self) -> &str {
                match self {
                    $(BuildError::$v { message, .. } => message,)*
                }
            }

            /// Where in the Rust source the offending builder call was made.
            pub fn location(&self) -> &'static Location<'static> {
                match self {
                    $(BuildError::$v { location, .. } => location,)*
                }
            }
        }
    };
}

build_errors! {
    /// The name given to `Kernel::build` or `DeviceFn::build` cannot be a PTX identifier.
    InvalidName,
    /// An expression, variable, array or external function of another kernel (or made outside
    /// any kernel build) is used.
    ForeignValue,
    /// A value or variable is used outside the if/loop body that made it.
    OutOfScope,
    /// A barrier (`syncthreads`, `syncwarp`, a `*_sync` warp operation) in code that only some
    /// threads of a block may reach.
    DivergentBarrier,
    /// A bitcast between types of different sizes, or of `bool`.
    BadCast,
    /// `break`/`continue` outside a loop or in a `while_` condition, `ret()` in a device
    /// function that returns a value, or a loop step that is not positive.
    ControlFlow,
    /// A shared, local or constant array declared with no element.
    EmptyArray,
    /// The kernel's constant arrays exceed the 64 KiB of constant memory.
    ConstantMemory,
    /// A wrong use of an array handle: a dimension or stride it does not have, a wrong number
    /// of indices, the length of the dynamic shared array, an unsupported vector width, an
    /// atomic operation on a local array.
    ArrayAccess,
    /// An external device function (`declare_device`) declared with a bad or conflicting
    /// signature, or one that disagrees with its definition in linked PTX.
    ExternSignature,
    /// A link input (`link_ptx`, `link_file`) that cannot be used.
    LinkInput,
    /// A `printf` whose format is invalid or does not match its arguments.
    Printf,
    /// Something that only a kernel may do (`grid_sync`, `launch_bounds`) in a device function.
    KernelOnly,
    /// `launch_bounds` with a block size outside 1 to 1024 threads.
    LaunchBounds,
    /// A Hopper operation used wrongly: a wgmma shape or operand layout, a matrix
    /// descriptor's offsets, a register budget.
    Hopper,
    /// A kernel launch from device code (`launch_kernel`, `launch_self`) that cannot be
    /// made: in a device function, an array the child cannot receive, a child that needs a
    /// cooperative launch, a parameter list that does not match; or a stream created on the
    /// device used where it cannot be (in a device function, by another kernel, after the if
    /// or loop body that created it).
    DeviceLaunch,
    /// An inconsistency of cudajit's builder (please report it).
    Internal,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message(), self.location())
    }
}

impl std::error::Error for BuildError {}
