//! The CUDA driver backend: each method is one (or two) driver calls through `cudajit-sys`.
//!
//! The calls are grouped by what they touch: `context.rs` (devices, contexts, peer access, the
//! profiler), `memory.rs` (allocations, memory pools, copies and fills), `streams.rs` (streams
//! and events), `modules.rs` (loading, linking and the JIT's logs), `launch.rs` (kernel
//! functions' attributes, occupancy and launches), `graphs.rs` (stream capture and graphs) and
//! `ipc.rs` (memory, events and pools shared with other processes), `texture.rs` (CUDA arrays,
//! their copies, texture and surface objects).
//! Each file implements the [`Backend`](crate::backend::Backend) trait of its concern (`DeviceApi`, `MemoryApi`,
//! `StreamApi`, `ModuleApi`, `LaunchApi`, `GraphApi`, `IpcApi`, `TextureApi`) directly.

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
mod ipc;
mod launch;
mod memory;
mod modules;
mod streams;
mod texture;
