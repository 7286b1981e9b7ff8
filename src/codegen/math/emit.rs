//! Emitting cudajit's own math implementations as LLVM IR.

use inkwell::values::BasicValueEnum;

use super::super::lower::Lowerer;
use super::{kernel_err, MathFn};
use crate::error::Result;

/// Lowers `f` with cudajit's own implementation.
pub(crate) fn own<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    f64: bool,
    _fast: bool,
    _vals: &[BasicValueEnum<'c>],
) -> Result<BasicValueEnum<'c>> {
    Err(kernel_err(
        lw,
        format!(
            "cudajit has no own implementation of `{}` for {} yet: install libdevice (the CUDA toolkit, or `pip install nvidia-cuda-nvcc-cu12`) or set CUDAJIT_LIBDEVICE to libdevice.10.bc",
            f.method(),
            if f64 { "f64" } else { "f32" }
        ),
    ))
}
