//! Modules (PTX, cubin, fatbin) loaded into a context, their kernels and globals, and launches.

mod args;
mod function;
mod launch;
mod load;

pub use args::{KernelArg, KernelArgs};
pub use function::{Function, FunctionAttributes};
pub(crate) use launch::{explain_launch_error, launch_raw};
pub use launch::{Dim3, LaunchConfig};
pub use load::Module;
