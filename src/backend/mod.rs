//! The seam between the safe API and what executes it.
//!
//! Every public type calls the device only through [`Backend`], never the driver directly.
//! Two implementations, chosen once per process in [`backend`], with no change to the public
//! API:
//! - [`cuda::CudaDriver`]: libcuda through `cudajit-sys` (the default);
//! - [`sim::Simulator`]: the CPU simulator (`CUDAJIT_SIMULATOR=1` or [`use_simulator`], as
//!   numba's `NUMBA_ENABLE_CUDASIM`), which executes the kernels' IR instead of loading PTX.
//!
//! Handles stay the driver's opaque types (the simulator makes up its own values for them),
//! device pointers are plain addresses, and errors are [`crate::Error`] values carrying driver
//! result codes. Modules cross the seam as one [`ModuleImage`]; a builder kernel's first load
//! is [`Backend::module_load_kernel`], which either loads the IR (the simulator) or answers
//! that it needs machine code, so nothing above this module branches on the backend. A third backend
//! implements [`Backend`] (a method per driver call it replaces) and is added to the choice in
//! [`backend`].

mod api;
pub(crate) mod cuda;
pub(crate) mod faults;
pub(crate) mod jit_hint;
pub(crate) mod limits;
pub(crate) mod sim;
pub(crate) mod tensor_map;
pub(crate) mod texture;

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use cudajit_sys as sys;

use crate::error::{Error, Result};
use crate::ir::FunctionIr;
pub(crate) use api::{
    no_ipc, Backend, DeviceApi, GraphApi, IpcApi, LaunchApi, MemoryApi, ModuleApi, StreamApi,
    TextureApi,
};

/// A callback that the backend runs in stream order: `(data)`.
pub(crate) type HostFnPtr = unsafe extern "C" fn(*mut c_void);
/// A callback run in stream order with the stream's status: `(stream, status, data)`.
pub(crate) type StreamCallbackPtr = unsafe extern "C" fn(sys::CUstream, sys::CUresult, *mut c_void);

/// A module as it crosses the seam: what [`Backend::module_load`] loads.
pub(crate) enum ModuleImage<'a> {
    /// PTX text with its terminating NUL.
    Ptx(&'a std::ffi::CStr),
    /// A cubin (ELF), copied to 8-byte-aligned words (the driver reads it as structs).
    Cubin(&'a [u64]),
    /// A fatbin, copied to 8-byte-aligned words.
    Fatbin(&'a [u64]),
    /// A kernel's IR, for a backend that executes IR (the simulator).
    Ir(Arc<FunctionIr>),
}

impl ModuleImage<'_> {
    /// What the image is, for messages (`PTX`, `cubin`, `fatbin`, `kernel IR`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ModuleImage::Ptx(_) => "PTX",
            ModuleImage::Cubin(_) => "cubin",
            ModuleImage::Fatbin(_) => "fatbin",
            ModuleImage::Ir(_) => "kernel IR",
        }
    }
}

/// One input of [`Backend::link`].
pub(crate) struct LinkInput<'a> {
    /// `CU_JIT_INPUT_PTX`, `CU_JIT_INPUT_CUBIN`, ...
    pub(crate) kind: sys::CUjitInputType,
    /// The input's bytes (PTX ends with a NUL).
    pub(crate) data: &'a [u8],
    /// A name for the linker's log.
    pub(crate) name: &'a std::ffi::CStr,
}

static BACKEND: OnceLock<&'static dyn Backend> = OnceLock::new();

/// The fault-injecting backend, when a test chose it (see [`crate::fault_injection`]).
static FAULTS: OnceLock<faults::FaultInjector> = OnceLock::new();

/// The process's backend: the simulator when `CUDAJIT_SIMULATOR` is set (`1`, `true`, `yes`,
/// `on`) or [`use_simulator`] was called first, else the CUDA driver.
#[inline]
pub(crate) fn backend() -> &'static dyn Backend {
    *BACKEND.get_or_init(|| {
        if simulator_requested() {
            Box::leak(Box::new(sim::Simulator::new()))
        } else {
            Box::leak(Box::new(cuda::CudaDriver))
        }
    })
}

/// Whether `CUDAJIT_SIMULATOR` asks for the simulator.
fn simulator_requested() -> bool {
    std::env::var("CUDAJIT_SIMULATOR").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Makes every device call of this process run on cudajit's CPU simulator (as setting
/// `CUDAJIT_SIMULATOR=1`), whether or not a GPU is present. Call it before anything else
/// uses the device; afterwards it is an error if the CUDA driver was already chosen.
///
/// ```
/// cudajit::use_simulator().unwrap();
/// assert!(cudajit::on_simulator());
/// ```
pub fn use_simulator() -> Result<()> {
    let chosen = BACKEND.get_or_init(|| Box::leak(Box::new(sim::Simulator::new())));
    if chosen.is_simulator() {
        Ok(())
    } else {
        Err(Error::usage(
            "use_simulator: the CUDA driver is already in use in this process; call \
             use_simulator() before any other cudajit call, or set CUDAJIT_SIMULATOR=1",
        ))
    }
}

/// Whether this process runs on the simulator (`CUDAJIT_SIMULATOR=1` or [`use_simulator`]).
/// Chooses the backend if nothing has yet.
pub fn on_simulator() -> bool {
    backend().is_simulator()
}

/// Chooses the fault-injecting backend (the simulator underneath) for this process; `None` if
/// another backend was chosen first.
pub(crate) fn install_fault_injector() -> Option<&'static faults::FaultInjector> {
    let f: &'static faults::FaultInjector = FAULTS.get_or_init(faults::FaultInjector::new);
    let chosen = *BACKEND.get_or_init(|| f as &'static dyn Backend);
    std::ptr::addr_eq(
        chosen as *const dyn Backend,
        f as *const faults::FaultInjector,
    )
    .then_some(f)
}
