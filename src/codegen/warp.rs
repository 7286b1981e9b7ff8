//! Warp-level intrinsics.

use inkwell::values::BasicValueEnum;

use super::lower::Lowerer;
use super::scalar::ScalarTy;
use crate::error::{Error, Result};

/// A warp intrinsic (filled in by the warp work).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum WarpOp {
    ActiveMask,
}

/// Lowers a warp intrinsic.
pub(crate) fn lower_warp<'c>(
    lw: &mut Lowerer<'c, '_>,
    _w: &WarpOp,
    _ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    Err(Error::usage(format!(
        "warp intrinsics are not implemented yet (kernel `{}`)",
        lw.f.name
    )))
}
