//! Atomic operations on array elements.

use inkwell::values::BasicValueEnum;

use super::ir::ArrayRef;
use super::lower::Lowerer;
use super::scalar::ScalarTy;
use crate::error::{Error, Result};

/// An atomic read-modify-write (filled in by the atomics work).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AtomicOp {
    pub array: ArrayRef,
}

/// Lowers an atomic operation.
pub(crate) fn lower_atomic<'c>(
    lw: &mut Lowerer<'c, '_>,
    _a: &AtomicOp,
    _ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    Err(Error::usage(format!(
        "atomics are not implemented yet (kernel `{}`)",
        lw.f.name
    )))
}
