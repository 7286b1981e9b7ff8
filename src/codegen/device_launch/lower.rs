//! Lowering a device-side launch to the device runtime's calls, as CUDA 12 compiles
//! `child<<<grid, block, shared, stream>>>(args...)`:
//!
//! ```text
//! buf = cudaGetParameterBufferV2(&child, grid, block, shared)   // NULL: no buffer
//! *(T0*)(buf + off0) = arg0; ...                                // the child's .param layout
//! err = cudaLaunchDeviceV2(buf, stream)                         // cudaError_t
//! ```
//!
//! (`stream` is a special handle, or a stream created on the device: see `lower_stream.rs`.)
//!
//! `dim3` travels by value (`.param .align 4 .b8 [12]`); the child is named by the address of
//! its `.entry`, lowered into the same module. A failure (a NULL buffer, a nonzero error) is
//! kept in the status words: the first failure's code (compare-and-swap from 0) and its
//! launch site.

use std::hash::{Hash, Hasher};

use inkwell::module::Linkage;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering, IntPredicate};

use super::super::lower::{child_entry, llvm_err, Lowerer};
use crate::error::Result;
use crate::ir::device_launch::{code, DeviceArg, DeviceLaunch, LaunchTarget};
use crate::ir::{FunctionIr, Param, ScalarTy};

/// The name of a child's `.entry` in the launching kernel's module: its own name and a hash
/// of its IR (two children of one name stay apart).
pub(crate) fn entry_name(child: &FunctionIr) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    child.hash(&mut h);
    format!("{}__dp{:016x}", child.name, h.finish())
}

/// Each parameter slot of `f` as it lies in a parameter buffer: (byte offset, size); an
/// array takes its address and one `u64` per extent, a scalar its own size (a `bool` one
/// byte), each aligned to its size. Returns the slots and the buffer's size.
pub(crate) fn param_layout(f: &FunctionIr) -> (Vec<(u32, u32)>, u32) {
    let mut out = Vec::new();
    let mut off = 0u32;
    let put = |size: u32, align: u32, off: &mut u32, out: &mut Vec<(u32, u32)>| {
        *off = off.next_multiple_of(align);
        out.push((*off, size));
        *off += size;
    };
    for p in &f.params {
        match p {
            Param::Scalar(t) => put(t.size() as u32, t.size() as u32, &mut off, &mut out),
            Param::Array { ndim, .. } => {
                for _ in 0..=*ndim {
                    put(8, 8, &mut off, &mut out);
                }
            }
            Param::TensorMap { .. } => put(128, 64, &mut off, &mut out),
        }
    }
    (out, off)
}

fn declare<'c>(lw: &Lowerer<'c, '_>) -> (FunctionValue<'c>, FunctionValue<'c>) {
    let ctx = lw.ctx;
    let ptr = ctx.ptr_type(AddressSpace::default());
    let i32t = ctx.i32_type();
    let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
    let get = lw
        .module
        .get_function("cudaGetParameterBufferV2")
        .unwrap_or_else(|| {
            let ty = ptr.fn_type(&[ptr.into(), dim3.into(), dim3.into(), i32t.into()], false);
            lw.module
                .add_function("cudaGetParameterBufferV2", ty, Some(Linkage::External))
        });
    let launch = lw
        .module
        .get_function("cudaLaunchDeviceV2")
        .unwrap_or_else(|| {
            let ty = i32t.fn_type(&[ptr.into(), ptr.into()], false);
            lw.module
                .add_function("cudaLaunchDeviceV2", ty, Some(Linkage::External))
        });
    (get, launch)
}

/// Lowers one device-side launch.
pub(crate) fn lower_launch(lw: &mut Lowerer<'_, '_>, l: &DeviceLaunch) -> Result<()> {
    let name = lw.f.name.clone();
    let e = |x: inkwell::builder::BuilderError| llvm_err(&name, x);
    let ctx = lw.ctx;
    let (child_ir, entry): (&FunctionIr, FunctionValue<'_>) = match &l.target {
        LaunchTarget::Itself => (lw.f, lw.func),
        LaunchTarget::Kernel(c) => {
            let entry = child_entry(ctx, lw.module, c, &entry_name(c), lw.opts)?;
            (c, entry)
        }
    };
    let (get, launch) = declare(lw);
    let i32t = ctx.i32_type();
    let dim3 = ctx.struct_type(&[i32t.into(), i32t.into(), i32t.into()], false);
    let mut dims = Vec::new();
    for ids in [l.grid, l.block] {
        let mut agg = dim3.get_undef();
        for (k, id) in ids.iter().enumerate() {
            let v = lw.v(*id)?.into_int_value();
            agg =
                lw.b.build_insert_value(agg, v, k as u32, "")
                    .map_err(e)?
                    .into_struct_value();
        }
        dims.push(agg);
    }
    // A configuration the device runtime must refuse is refused here, the same way on every
    // device and on the simulator: `cudaErrorInvalidConfiguration`, and no launch.
    let (valid_bb, invalid_bb, done) = (
        ctx.append_basic_block(lw.func, "dp.valid"),
        ctx.append_basic_block(lw.func, "dp.invalid"),
        ctx.append_basic_block(lw.func, "dp.done"),
    );
    let valid = config_valid(lw, l, max_threads(child_ir))?;
    lw.b.build_conditional_branch(valid, valid_bb, invalid_bb)
        .map_err(e)?;
    lw.b.position_at_end(invalid_bb);
    let status = lw
        .param_array(l.status)
        .ok_or_else(|| llvm_err(&name, "the status parameter is not an array"))?;
    record_failure(
        lw,
        status.0,
        i32t.const_int(code::INVALID_CONFIGURATION as u64, false),
        l.site,
    )?;
    lw.b.build_unconditional_branch(done).map_err(e)?;
    lw.b.position_at_end(valid_bb);
    let fptr = entry.as_global_value().as_pointer_value();
    let shared = lw.v(l.shared)?;
    let buf =
        lw.b.build_call(
            get,
            &[fptr.into(), dims[0].into(), dims[1].into(), shared.into()],
            "dp.buf",
        )
        .map_err(e)?
        .try_as_basic_value()
        .basic()
        .ok_or_else(|| llvm_err(&name, "cudaGetParameterBufferV2 returns nothing"))?
        .into_pointer_value();
    let (fill, no_buf) = (
        ctx.append_basic_block(lw.func, "dp.fill"),
        ctx.append_basic_block(lw.func, "dp.nobuf"),
    );
    let null = lw.b.build_is_null(buf, "").map_err(e)?;
    lw.b.build_conditional_branch(null, no_buf, fill)
        .map_err(e)?;
    lw.b.position_at_end(no_buf);
    record_failure(
        lw,
        status.0,
        i32t.const_int(code::MEMORY_ALLOCATION as u64, false),
        l.site,
    )?;
    lw.b.build_unconditional_branch(done).map_err(e)?;

    lw.b.position_at_end(fill);
    let (slots, _) = param_layout(child_ir);
    let mut values: Vec<BasicValueEnum<'_>> = Vec::new();
    let child_status = crate::ir::device_launch::status_param(child_ir);
    let mut arg = l.args.iter();
    for (i, p) in child_ir.params.iter().enumerate() {
        let array = if Some(i as u32) == child_status {
            Some(status.clone())
        } else {
            match (p, arg.next()) {
                (Param::Scalar(t), Some(DeviceArg::Scalar(id))) => {
                    let mut v = lw.v(*id)?;
                    if *t == ScalarTy::Bool {
                        v =
                            lw.b.build_int_z_extend(v.into_int_value(), ctx.i8_type(), "")
                                .map_err(e)?
                                .into();
                    }
                    values.push(v);
                    None
                }
                (Param::Array { .. }, Some(DeviceArg::Array(j))) => Some(
                    lw.param_array(*j)
                        .ok_or_else(|| llvm_err(&name, "an array argument is not an array"))?,
                ),
                _ => {
                    return Err(llvm_err(
                        &name,
                        format!(
                            "internal: the launch of `{}` does not match its parameters",
                            child_ir.name
                        ),
                    ))
                }
            }
        };
        if let Some((ptr, ext)) = array {
            values.push(ptr.into());
            values.extend(ext.into_iter().map(BasicValueEnum::from));
        }
    }
    for ((off, size), v) in slots.iter().zip(&values) {
        let at = slot_ptr(lw, buf, *off)?;
        let st = lw.b.build_store(at, *v).map_err(e)?;
        let _ = st.set_alignment(*size);
    }
    let stream = super::lower_stream::stream_arg(lw, l.stream)?;
    let err =
        lw.b.build_call(launch, &[buf.into(), stream.into()], "dp.err")
            .map_err(e)?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| llvm_err(&name, "cudaLaunchDeviceV2 returns nothing"))?
            .into_int_value();
    let (failed, ok) = (
        ctx.append_basic_block(lw.func, "dp.failed"),
        ctx.append_basic_block(lw.func, "dp.ok"),
    );
    let bad =
        lw.b.build_int_compare(IntPredicate::NE, err, i32t.const_zero(), "")
            .map_err(e)?;
    lw.b.build_conditional_branch(bad, failed, ok).map_err(e)?;
    lw.b.position_at_end(failed);
    record_failure(lw, status.0, err, l.site)?;
    lw.b.build_unconditional_branch(done).map_err(e)?;
    lw.b.position_at_end(ok);
    lw.b.build_unconditional_branch(done).map_err(e)?;
    lw.b.position_at_end(done);
    Ok(())
}

/// The most threads a block of `f` may have (its launch bounds, else 1024).
pub(crate) fn max_threads(f: &FunctionIr) -> u64 {
    f.launch_bounds
        .map_or(1024, |(t, _)| t.clamp(1, 1024) as u64)
}

/// Whether a launch's grid and block are ones CUDA accepts: every extent positive, the grid
/// at most (2^31 - 1, 65535, 65535), the block at most (1024, 1024, 64) and `max_threads`
/// threads in all.
fn config_valid<'c>(
    lw: &mut Lowerer<'c, '_>,
    l: &DeviceLaunch,
    max_threads: u64,
) -> Result<IntValue<'c>> {
    let name = lw.f.name.clone();
    let e = |x: inkwell::builder::BuilderError| llvm_err(&name, x);
    let (i32t, i64t) = (lw.ctx.i32_type(), lw.ctx.i64_type());
    let mut ok = lw.ctx.bool_type().const_int(1, false);
    let limits = [i32::MAX as u64, 65535, 65535, 1024, 1024, 64];
    let ids = [l.grid, l.block].concat();
    let mut product = i64t.const_int(1, false);
    for (k, (id, limit)) in ids.iter().zip(limits).enumerate() {
        let v = lw.v(*id)?.into_int_value();
        let pos =
            lw.b.build_int_compare(IntPredicate::NE, v, i32t.const_zero(), "")
                .map_err(e)?;
        let le =
            lw.b.build_int_compare(IntPredicate::ULE, v, i32t.const_int(limit, false), "")
                .map_err(e)?;
        ok = lw.b.build_and(ok, pos, "").map_err(e)?;
        ok = lw.b.build_and(ok, le, "").map_err(e)?;
        if k >= 3 {
            let w = lw.b.build_int_z_extend(v, i64t, "").map_err(e)?;
            product = lw.b.build_int_mul(product, w, "").map_err(e)?;
        }
    }
    let fits =
        lw.b.build_int_compare(
            IntPredicate::ULE,
            product,
            i64t.const_int(max_threads, false),
            "",
        )
        .map_err(e)?;
    lw.b.build_and(ok, fits, "").map_err(e)
}

/// `buf + off` as a generic pointer.
fn slot_ptr<'c>(lw: &Lowerer<'c, '_>, buf: PointerValue<'c>, off: u32) -> Result<PointerValue<'c>> {
    let i8t = lw.ctx.i8_type();
    let idx = lw.ctx.i64_type().const_int(off as u64, false);
    // SAFETY: an in-bounds byte offset into the parameter buffer the device runtime allocated
    // for the child's parameters (`param_layout` is the child's own layout).
    unsafe { lw.b.build_in_bounds_gep(i8t, buf, &[idx], "dp.slot") }
        .map_err(|x| llvm_err(&lw.f.name, x))
}

/// Keeps the first failure: `status[0]` from 0 to `code` (compare-and-swap); the one that
/// set it writes `site` to `status[1]`.
pub(super) fn record_failure<'c>(
    lw: &mut Lowerer<'c, '_>,
    status: PointerValue<'c>,
    code: IntValue<'c>,
    site: u32,
) -> Result<()> {
    let name = lw.f.name.clone();
    let e = |x: inkwell::builder::BuilderError| llvm_err(&name, x);
    let ctx = lw.ctx;
    let i32t = ctx.i32_type();
    let relaxed = AtomicOrdering::Monotonic;
    let pair =
        lw.b.build_cmpxchg(status, i32t.const_zero(), code, relaxed, relaxed)
            .map_err(e)?;
    let won =
        lw.b.build_extract_value(pair, 1, "")
            .map_err(e)?
            .into_int_value();
    let (set, after) = (
        ctx.append_basic_block(lw.func, "dp.site"),
        ctx.append_basic_block(lw.func, "dp.kept"),
    );
    lw.b.build_conditional_branch(won, set, after).map_err(e)?;
    lw.b.position_at_end(set);
    let one = ctx.i64_type().const_int(1, false);
    // SAFETY: the status array has two words.
    let at = unsafe { lw.b.build_in_bounds_gep(i32t, status, &[one], "") }.map_err(e)?;
    lw.b.build_store(at, i32t.const_int(site as u64, false))
        .map_err(e)?;
    lw.b.build_unconditional_branch(after).map_err(e)?;
    lw.b.position_at_end(after);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::Kernel;

    #[test]
    fn the_parameter_buffer_follows_the_param_layout() {
        // (bool, &[f32], u16, f64, &mut [u8; 2-D]): each slot aligned to its size.
        type P = (bool, &'static [f32], u16, f64, crate::codegen::NdMut<u8, 2>);
        let k = Kernel::<P>::build("layout", |_, _| {}).unwrap();
        let (slots, size) = param_layout(k.ir());
        assert_eq!(
            slots,
            [
                (0, 1),
                (8, 8),
                (16, 8),
                (24, 2),
                (32, 8),
                (40, 8),
                (48, 8),
                (56, 8)
            ]
        );
        assert_eq!(size, 64);
    }
}
