//! Inline PTX (with side effects, or pure), and shared-window addresses for it.

use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum};

use super::Lowerer;
use crate::error::Result;
use crate::ir::ValueId;

/// Emits inline PTX `text` with `constraints` over `args`, returning `ret` (or nothing), as a
/// statement with side effects (`asm volatile`): what `cp.async`, the barriers, TMA and wgmma
/// are written with (a `~{memory}` clobber in `constraints` keeps memory accesses on their
/// side of it).
pub(crate) fn asm<'c>(
    lw: &mut Lowerer<'c, '_>,
    text: String,
    constraints: String,
    args: &[BasicValueEnum<'c>],
    ret: Option<BasicTypeEnum<'c>>,
) -> Result<Option<BasicValueEnum<'c>>> {
    inline_asm(lw, text, constraints, args, ret, true)
}

/// [`asm`] without side effects: a pure function of its operands, which LLVM may move, merge
/// or drop like any instruction (e.g. a math approximation).
pub(crate) fn pure_asm<'c>(
    lw: &mut Lowerer<'c, '_>,
    text: &str,
    constraints: &str,
    args: &[BasicValueEnum<'c>],
    ret: BasicTypeEnum<'c>,
) -> Result<BasicValueEnum<'c>> {
    inline_asm(
        lw,
        text.to_string(),
        constraints.to_string(),
        args,
        Some(ret),
        false,
    )?
    .ok_or_else(|| lw.err("an inline asm without its result"))
}

/// The call of an inline asm (`side_effects`: `asm volatile`).
fn inline_asm<'c>(
    lw: &mut Lowerer<'c, '_>,
    text: String,
    constraints: String,
    args: &[BasicValueEnum<'c>],
    ret: Option<BasicTypeEnum<'c>>,
    side_effects: bool,
) -> Result<Option<BasicValueEnum<'c>>> {
    let tys: Vec<BasicMetadataTypeEnum<'c>> = args.iter().map(|a| a.get_type().into()).collect();
    let margs: Vec<BasicMetadataValueEnum<'c>> = args.iter().map(|&a| a.into()).collect();
    let fty = match ret {
        Some(r) => r.fn_type(&tys, false),
        None => lw.ctx.void_type().fn_type(&tys, false),
    };
    let f = lw
        .ctx
        .create_inline_asm(fty, text, constraints, side_effects, false, None, false);
    let call =
        lw.b.build_indirect_call(fty, f, &margs, "")
            .map_err(|e| lw.err(e.to_string()))?;
    Ok(call.try_as_basic_value().basic())
}

/// The 32-bit shared-window address of element `index` of shared array `array`.
pub(crate) fn shared_addr<'c>(
    lw: &mut Lowerer<'c, '_>,
    array: crate::ir::ArrayRef,
    index: ValueId,
) -> Result<BasicValueEnum<'c>> {
    let p = lw.element_ptr(array, index)?;
    let i32t = lw.ctx.i32_type();
    Ok(lw
        .b
        .build_ptr_to_int(p, i32t, "")
        .map_err(|e| lw.err(e.to_string()))?
        .into())
}
