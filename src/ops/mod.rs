//! Array operations built on the kernel builder, in the style of CuPy's `ElementwiseKernel` and
//! numba's `@vectorize`: [`Elementwise`] kernels over any number of array and scalar inputs, with
//! NumPy broadcasting, and the everyday operations on [`DeviceArray`](crate::DeviceArray) built on
//! them ([`ArrayOps`]).

mod arg;
mod array_ops;
mod broadcast;
mod elementwise;
mod reduce;
mod scan;

pub use array_ops::{arg_variants_ptx, ArrayOps, BoolOps, OpsScalar, ReduceOps, ReduceScalar};
pub use broadcast::broadcast_shapes;
pub use elementwise::{Elem, Elementwise, EwArgs, EwInput, EwInputs, EwOutArgs, EwOutputs, Scalar};
pub use reduce::Reduction;
pub use scan::{Scan, ScanKind, ScanOps, ScanScalar};
