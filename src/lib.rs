//! # cudajit
//!
//! Drive NVIDIA GPUs from Rust with nothing but the NVIDIA driver installed — what Numba's CUDA
//! target is for Python. cudajit loads `libcuda` at run time and wraps it in safe RAII types
//! (devices, contexts, streams, events, device arrays, modules, graphs), and builds kernels at
//! run time from a typed Rust builder, lowered to LLVM IR and compiled to PTX by LLVM's NVPTX
//! backend (LLVM 19, linked statically). No CUDA toolkit, nvcc or NVRTC at build or run time.
//! Without a GPU, the same program runs on cudajit's CPU simulator.
//!
//! ## A first kernel
//!
//! Numba's classic `add_arrays`, built with the kernel builder, compiled to PTX (which needs no
//! GPU), then launched. [`use_simulator`] sends every device call of the process to the CPU
//! simulator, so this example runs anywhere; without it (and without `CUDAJIT_SIMULATOR=1`) the
//! same code runs on the GPU.
//!
//! ```
//! use cudajit::codegen::{Kernel, PtxOptions};
//! use cudajit::ops::ReduceOps;
//! use cudajit::prelude::*;
//!
//! # fn main() -> cudajit::Result<()> {
//! cudajit::use_simulator()?; // before any other cudajit call
//!
//! // The parameter list is a Rust type: launching with wrong arguments does not compile.
//! let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_arrays", |k, (x, y, out)| {
//!     let i = k.grid1(); // numba's cuda.grid(1)
//!     k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
//! })?;
//! let ptx = add.compile_ptx(&PtxOptions::for_cc(9, 0))?;
//! assert!(ptx.contains(".visible .entry add_arrays"));
//!
//! let ctx = Context::new(0)?;
//! let stream = ctx.new_stream()?;
//! let n = 1000;
//! let x = stream.to_device(&vec![1.0f32; n])?;
//! let y = stream.to_device(&vec![2.0f32; n])?;
//! let mut out = ctx.zeros::<f32, _>(n)?;
//! add.launch(&stream, LaunchConfig::for_num_elems(n, 128)?, (&x, &y, &mut out))?;
//! assert!(out.to_vec_async(&stream)?.iter().all(|&v| v == 3.0));
//! assert_eq!(out.sum(&stream)?, 3000.0); // a reduction from `ops`
//! # Ok(())
//! # }
//! ```
//!
//! Every fallible call returns [`Result`] with the one [`Error`] type; nothing panics on user
//! input, a missing driver or a driver error. Errors raised while dropping are kept: see
//! [`take_drop_errors`].
//!
//! ## The layers
//!
//! From the bottom up; each layer builds on the ones listed before it.
//!
//! - [`sys`] (the `cudajit-sys` crate): the driver API's types and functions, generated from
//!   `cuda.h` and resolved lazily from `libcuda` at run time (and NCCL's, from `libnccl`). For
//!   calls cudajit does not wrap.
//! - [`error`]: the one [`Error`] type, with typed kinds (driver codes with their names and
//!   messages, [`LoadError`], build, launch and codegen errors, simulator [`FaultKind`]s).
//! - The kernel IR (internal): what the builder records, its scalar types and operations, and the
//!   math semantics written once; the lowering compiles it and the simulator executes it.
//! - The backend (internal): the seam every device call passes through, with two
//!   implementations, the CUDA driver and the CPU simulator ([`use_simulator`] or
//!   `CUDAJIT_SIMULATOR=1`; [`on_simulator`] says which runs), which also reports out-of-bounds
//!   accesses, divergent barriers and shared-memory races as [`Error::Fault`]. [`fault_injection`]
//!   fails chosen backend calls, for testing error paths.
//! - Run-time types, safe RAII over the backend; each holds what keeps it valid (its context):
//!   - [`context`]: enquiry ([`is_available`], [`detect`], [`devices`], [`driver_version`]),
//!     [`Device`], [`Context`] (a device's primary context), [`CurrentGuard`], peer access
//!     ([`Device::can_access_peer`], [`Context::enable_peer_access`]);
//!   - [`memory`]: [`DeviceArray`] (n-D, ndarray shapes) and its views, strided views, copies
//!     through the [`DeviceSlice`] / [`DeviceSliceMut`] traits, [`PinnedHostBuffer`] (copied in
//!     chunks through [`PinnedSlice`] / [`PinnedSliceMut`]), [`MappedHostBuffer`],
//!     [`ManagedBuffer`] (all three n-D too: [`Context::pinned_array`] and its siblings), the
//!     stream-ordered [`MemPool`];
//!   - [`stream`] and [`event`]: [`Stream`] (host callbacks, a `Future`, an auto-synchronising
//!     guard), [`Event`] (timing with [`elapsed_ms`]);
//!   - [`graph`]: CUDA graphs, captured or built, instantiated and launched;
//!   - [`profiler`] ([`profile_start`], [`profile_stop`]) and [`nvtx`] (NVTX ranges and marks
//!     for Nsight Systems, loaded at run time).
//! - [`module`]: [`Module`] from PTX, cubin or fatbin, [`Function`] attributes and occupancy,
//!   [`LaunchConfig`] and launches with typed arguments ([`KernelArgs`]).
//! - [`codegen`]: the typed kernel builder ([`codegen::Kernel`], [`codegen::KernelBuilder`],
//!   device functions [`codegen::DeviceFn`], expressions [`codegen::Expr`]), its lowering to LLVM
//!   IR and PTX ([`codegen::PtxOptions`]), the workarounds for the driver's PTX compiler, and the
//!   compile cache in memory and on disk ([`codegen::cache_dir`]).
//! - [`ops`]: array operations on the builder: [`ops::Elementwise`] kernels (CuPy's
//!   `ElementwiseKernel`, with broadcasting), everyday operations ([`ops::ArrayOps`]),
//!   reductions ([`ops::ReduceOps`]) and scans ([`ops::ScanOps`]); [`random`]: Numba's
//!   xoroshiro128+ and Philox4x32-10 generators in kernels, with host models.
//! - [`sharded`] and [`nccl`]: several GPUs. A [`sharded::Mesh`] of devices and
//!   [`sharded::ShardedArray`]s split over it, with elementwise kernels and reductions on every
//!   device at once; NCCL communicators and collectives (`libnccl` loaded at run time).
//! - [`distributed`]: several processes, one GPU each. A [`distributed::ProcessGroup`] (a rank
//!   of an NCCL communicator over processes, meeting as `torch.distributed`'s do) and
//!   [`distributed::RankShardedArray`]s, one shard per rank, with the reductions, elementwise
//!   kernels and gathers of sharded arrays through NCCL.
//!
//! [`prelude`] holds what most programs need: `use cudajit::prelude::*;`.
//!
//! ## Building
//!
//! cudajit links LLVM 19 statically. Its build (llvm-sys's build script, through inkwell, and
//! cudajit's own) looks for LLVM where `LLVM_SYS_191_PREFIX` points (the directory holding
//! `bin/llvm-config`), else for `llvm-config-19` (or a 19.x `llvm-config`) on `PATH`. Debian's and
//! Ubuntu's `llvm-19-dev` (with `libpolly-19-dev`, `libzstd-dev`, `zlib1g-dev`, `libffi-dev`)
//! install `/usr/bin/llvm-config-19`, so a crate depending on cudajit needs no variable there; the
//! repository's `scripts/setup.sh` installs them. The `no-llvm-linking` feature builds without
//! LLVM, for documentation only (docs.rs uses it): a program linked with it fails to link.
//! The driver is never needed to build, only to run on a GPU.
//!
//! ## Where to go next
//!
//! - [`codegen::KernelBuilder`] and the builder's arrays ([`codegen::Slice`],
//!   [`codegen::SliceMut`]): everything a kernel can do (control flow, shared memory, barriers,
//!   atomics, warp operations, vector loads, printf, grid synchronisation).
//! - [`ops`] for array operations without writing kernels; [`sharded`] for several GPUs.
//! - [`Stream`] and [`graph`] for ordering work and replaying it cheaply.
//! - The repository's README (the simulator's variables and checks, the element types, tuning)
//!   and its `examples/` (`add_arrays`, `vector_add`, `shared_memory`, `compile_ptx`,
//!   `multi_gpu`, ...).

#![warn(missing_docs)]

mod backend;
pub mod codegen;
pub mod context;
pub mod distributed;
pub mod dlpack;
pub mod error;
pub mod event;
pub mod fault_injection;
pub mod graph;
pub mod ipc;
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
pub use ir::{F8E4M3, F8E5M2};
pub use memory::{
    AnyBitPattern, AsStrided, AsStridedMut, DeviceArray, DeviceCopy, DeviceSlice, DeviceSliceMut,
    DeviceView, DeviceViewMut, HostSource, ManagedBuffer, MappedHostBuffer, MemPool,
    PinnedHostBuffer, PinnedSlice, PinnedSliceMut, PoolStats, PrefetchTarget, StridedArray,
    StridedView, StridedViewMut, TensorMap, TensorMapOptions, TensorMapSwizzle,
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
        Event, LaunchConfig, Module, Result, Stream, TensorMap, TensorMapOptions, TensorMapSwizzle,
    };
}
