//! Array operations built on the kernel builder, in the style of CuPy's `ElementwiseKernel` and
//! numba's `@vectorize`: [`Elementwise`] kernels over any number of array and scalar inputs, with
//! NumPy broadcasting, and the everyday operations on [`DeviceArray`](crate::DeviceArray) built on
//! them ([`ArrayOps`]).

pub(crate) mod arg;
mod array_ops;
mod broadcast;
pub(crate) mod elementwise;
mod ew_dim;
mod ew_outputs;
mod ew_variants;
pub mod matmul;
mod reduce;
mod scan;
mod scan_half;
pub(crate) mod strided_copy;
mod strided_ops;
mod strided_views;
mod transpose_copy;

pub use array_ops::{arg_variants_ptx, ArrayOps, BoolOps, OpsScalar, ReduceOps, ReduceScalar};
pub use broadcast::broadcast_shapes;
pub use elementwise::{
    Elem, Elementwise, EwArgs, EwInput, EwInputs, EwOutArgs, EwOutputs, Index, Scalar,
};
pub use matmul::{
    gelu, gelu_tanh, gelu_to_bits, load_matmul_tuning, matmul, matmul_tuning_file,
    matmul_tuning_stats, relu, Engine, Epilogue, EpilogueArgs, EpilogueVectors, Matmul,
    MatmulConfig, MatmulInput, MatmulOutput, MatmulTuningStats, Transpose,
};
#[cfg(test)]
pub(crate) use reduce::flag_join::wait_for_flags;
/// The timed-out status code, for the joins' tests.
#[cfg(test)]
pub(crate) use reduce::flag_join::TIMED_OUT;
pub(crate) use reduce::flag_join::{take_timed_out, FlagPublish, FlagWait, JoinArgs, MAX_PEERS};
pub use reduce::Reduction;
pub use scan::{Scan, ScanKind, ScanOps, ScanScalar};
pub use strided_ops::StridedReduceOps;

use std::sync::OnceLock;

use crate::codegen::Kernel;
use crate::error::Result;

/// One of an operation's kernels: built on first use and kept, with the build's error (which
/// every later use returns) when it fails.
type KernelSlot = OnceLock<Result<Kernel<()>>>;

/// The kernel in `slot`, built by `build` on first use.
fn built(slot: &KernelSlot, build: impl FnOnce() -> Result<Kernel<()>>) -> Result<&Kernel<()>> {
    slot.get_or_init(build).as_ref().map_err(Clone::clone)
}
