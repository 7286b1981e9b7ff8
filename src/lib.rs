//! # cudajit
//!
//! Drive NVIDIA GPUs from Rust with nothing but the NVIDIA driver installed: cudajit loads
//! `libcuda` at run time and wraps it in safe RAII types.
//!
//! - Enquiry: [`is_available`], [`detect`], [`devices`], [`Device`], [`driver_version`].
//! - Contexts: [`Context`] (a device's primary context), [`CurrentGuard`], [`current_context`].
//! - Memory: [`DeviceArray`] (n-D, ndarray shapes) and its views, with copies from the
//!   [`DeviceSlice`] / [`DeviceSliceMut`] traits; [`PinnedHostBuffer`], [`MappedHostBuffer`],
//!   [`ManagedBuffer`].
//! - Streams and events: [`Stream`] (host callbacks, a `Future`, an auto-synchronising guard),
//!   [`Event`] (timing with [`elapsed_ms`]).
//! - Modules: [`Module`] from PTX, cubin or fatbin; [`Function`] attributes, occupancy and
//!   [`Function::launch`].
//! - Profiler: [`profile_start`], [`profile_stop`], [`profiling`]; NVTX ranges and marks for
//!   Nsight Systems in [`nvtx`] (loaded at run time; `CUDAJIT_NVTX=1` adds cudajit's own).
//! - Several GPUs: [`sharded`] (a [`sharded::Mesh`] of devices and [`sharded::ShardedArray`]s
//!   split over it, with elementwise kernels and reductions on every device at once), peer
//!   access ([`Device::can_access_peer`], [`Context::enable_peer_access`]) and NCCL
//!   collectives in [`nccl`] (loaded at run time).
//! - Without a GPU: [`use_simulator`] (or `CUDAJIT_SIMULATOR=1`) runs everything on cudajit's
//!   CPU simulator, which also reports out-of-bounds accesses, divergent barriers and
//!   shared-memory races as [`Error::Fault`]; [`on_simulator`] says which backend runs.
//!
//! Every fallible call returns [`Result`] with the one [`Error`] type; nothing panics on user
//! input or driver errors. Errors raised while dropping are kept: see [`take_drop_errors`].
//!
//! ```no_run
//! use cudajit::prelude::*;
//!
//! # fn main() -> cudajit::Result<()> {
//! let ctx = Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let x = stream.to_device(&[1.0f32, 2.0, 3.0])?;
//! let mut y = ctx.zeros::<f32, _>(3)?;
//! y.copy_from_device_async(&x, &stream)?;
//! assert_eq!(y.to_vec_async(&stream)?, vec![1.0, 2.0, 3.0]);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod backend;
pub mod codegen;
pub mod context;
pub mod error;
pub mod event;
pub mod fault_injection;
pub mod graph;
mod ir;
pub mod memory;
pub mod module;
pub mod nccl;
pub mod nvtx;
pub mod ops;
pub mod profiler;
pub mod random;
pub mod sharded;
pub mod stream;

pub use backend::{on_simulator, use_simulator};
pub use context::{
    current_context, current_device, detect, device_count, devices, driver_version, is_available,
    Context, CurrentGuard, Device, DeviceAttribute, DriverVersion,
};
pub use error::{
    take_drop_errors, BuildError, BuildErrorKind, CodegenError, DriverCode, Error, FaultKind,
    LaunchError, LoadError, Result,
};
pub use event::{elapsed_ms, Event};
pub use graph::{Graph, GraphExec, GraphNode};
/// The 16-bit float types of kernels and device arrays (from the `half` crate).
pub use half::{bf16, f16};
pub use memory::{
    AnyBitPattern, AsStrided, AsStridedMut, DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut,
    DeviceView, DeviceViewMut, HostSource, ManagedBuffer, MappedHostBuffer, MemPool,
    PinnedHostBuffer, PoolStats, PrefetchTarget, StridedArray, StridedView, StridedViewMut,
};
pub use module::{Dim3, Function, FunctionAttributes, KernelArg, KernelArgs, LaunchConfig, Module};
pub use profiler::{profile_start, profile_stop, profiling, Profiling};
pub use stream::{AutoSynchronize, Stream, StreamDone, StreamOptions};

/// The raw driver bindings (`cudajit-sys`), for calls cudajit does not wrap.
pub use cudajit_sys as sys;

/// Everything most programs need: `use cudajit::prelude::*;`.
pub mod prelude {
    pub use crate::{
        AsStrided, AsStridedMut, Context, Device, DeviceArray, DeviceSlice, DeviceSliceMut, Error,
        Event, LaunchConfig, Module, Result, Stream,
    };
}
