//! Kernels as `.entry` functions: the marks that make a lowered function a kernel, and the
//! children of device-side launches lowered into the launching kernel's module.

use std::collections::HashMap;

use inkwell::context::Context as LlContext;
use inkwell::module::Module;
use inkwell::values::FunctionValue;

use super::{llvm_err, lower_function, PtxOptions, Role, PTX_KERNEL_CC};
use crate::error::Result;
use crate::ir::{FunctionIr, Param};

/// Makes `func` (the lowering of kernel `f`) a `.entry`: the PTX_Kernel calling convention and
/// the nvvm.annotations metadata; launch bounds become `.maxntid` and `.minnctapersm`.
pub(super) fn mark_kernel<'c>(
    ctx: &'c LlContext,
    module: &Module<'c>,
    func: FunctionValue<'c>,
    f: &FunctionIr,
) -> Result<()> {
    // `.entry`: the PTX_Kernel calling convention and the nvvm.annotations metadata; launch
    // bounds become `.maxntid` and `.minnctapersm` (0: none).
    func.set_call_conventions(PTX_KERNEL_CC);
    let (threads, blocks) = f.launch_bounds.unwrap_or((0, 0));
    // Tensor maps are `__grid_constant__`: NVPTX reads them in place (`cvta.param`)
    // instead of copying them to local memory, which TMA could not read.
    let maps: Vec<_> = f
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Param::TensorMap { .. }))
        .map(|(i, _)| i)
        .collect();
    if !maps.is_empty() {
        // Indices count LLVM parameters from 1.
        let idx: Vec<_> = maps
            .iter()
            .map(|&i| {
                let slot: usize = f.params[..i]
                    .iter()
                    .map(|p| match p {
                        Param::Array { ndim, .. } => 1 + *ndim as usize,
                        _ => 1,
                    })
                    .sum();
                ctx.i32_type().const_int(slot as u64 + 1, false).into()
            })
            .collect();
        let list = ctx.metadata_node(&idx);
        let md = ctx.metadata_node(&[
            func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string("grid_constant").into(),
            list.into(),
        ]);
        module
            .add_global_metadata("nvvm.annotations", &md)
            .map_err(|e| llvm_err(&f.name, e))?;
    }
    for (what, v) in [("kernel", 1), ("maxntidx", threads), ("minctasm", blocks)] {
        if v == 0 {
            continue;
        }
        let md = ctx.metadata_node(&[
            func.as_global_value().as_pointer_value().into(),
            ctx.metadata_string(what).into(),
            ctx.i32_type().const_int(v as u64, false).into(),
        ]);
        module
            .add_global_metadata("nvvm.annotations", &md)
            .map_err(|e| llvm_err(&f.name, e))?;
    }
    Ok(())
}

/// The `.entry` of kernel `child` in `module` under the name `name`, lowered (as a kernel, with
/// its marks) on first use: the child of a device-side launch (see `device_launch`).
pub(crate) fn child_entry<'c>(
    ctx: &'c LlContext,
    module: &Module<'c>,
    child: &FunctionIr,
    name: &str,
    opts: &PtxOptions,
) -> Result<FunctionValue<'c>> {
    if let Some(f) = module.get_function(name) {
        return Ok(f);
    }
    let mut lowered = HashMap::new();
    let func = lower_function(ctx, module, child, Role::Kernel, opts, &mut lowered, None)?;
    func.as_global_value().as_pointer_value().set_name(name);
    mark_kernel(ctx, module, func, child)?;
    Ok(func)
}
