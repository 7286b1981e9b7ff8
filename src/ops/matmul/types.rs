//! The element types of a matrix multiply: inputs ([`MatmulInput`]: f32, f16, bf16) and
//! outputs ([`MatmulOutput`]: f32, f16, bf16); accumulation is always f32.

use half::{bf16, f16};

use crate::codegen::{Float, MmaInput, Scalar};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// An input element type of [`Matmul`](super::Matmul): `f32` (SIMT FMA, or tf32 on the tensor
/// cores when allowed), `half::f16` and `half::bf16` (tensor cores on sm_80+, SIMT before);
/// f32 accumulation for all. Each is also an output type.
pub trait MatmulInput:
    Float + MmaInput<Acc = f32> + MatmulOutput + sealed::Sealed + Send + Sync + 'static
{
}

impl MatmulInput for f32 {}
impl MatmulInput for f16 {}
impl MatmulInput for bf16 {}

/// An output element type of [`Matmul`](super::Matmul): `f32`, `half::f16`, `half::bf16`. The
/// f32 result of the epilogue is rounded once to it (to nearest, ties to even).
pub trait MatmulOutput: Scalar + sealed::Sealed + Send + Sync + 'static {
    /// The type's name in kernel names.
    const NAME: &'static str;
}

impl MatmulOutput for f32 {
    const NAME: &'static str = "f32";
}
impl MatmulOutput for f16 {
    const NAME: &'static str = "f16";
}
impl MatmulOutput for bf16 {
    const NAME: &'static str = "bf16";
}
