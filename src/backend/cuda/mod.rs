//! The CUDA driver backend: each method is one (or two) driver calls through `cudajit-sys`.
//!
//! The calls are grouped by what they touch: `context.rs` (devices, contexts, peer access, the
//! profiler), `memory.rs` (allocations, memory pools, copies and fills), `streams.rs` (streams
//! and events), `modules.rs` (loading, linking and the JIT's logs), `launch.rs` (kernel
//! functions' attributes, occupancy and launches) and `graphs.rs` (stream capture and graphs).
//! Each file implements the [`Backend`](crate::backend::Backend) trait of its concern (`DeviceApi`, `MemoryApi`,
//! `StreamApi`, `ModuleApi`, `LaunchApi`, `GraphApi`) directly.

/// libcuda, loaded at run time.
pub(crate) struct CudaDriver;

/// Calls a driver function (through `cudajit-sys`'s lazy entry points) and turns its result
/// into `Result<()>`, naming the call on failure. Must be used inside an `unsafe` context.
macro_rules! drv {
    ($f:ident($($arg:expr),* $(,)?)) => {
        check(sys::$f($($arg),*), stringify!($f))
    };
}

mod context;
mod graphs;
mod launch;
mod memory;
mod modules;
mod streams;
