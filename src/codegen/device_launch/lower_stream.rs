//! Lowering streams created on the device, as CUDA compiles them in a kernel:
//!
//! ```text
//! cudaStream_t s = 0;                                     // a local slot
//! err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)
//! ... cudaLaunchDeviceV2(buf, s) ...                      // the handle as the stream
//! err = cudaStreamDestroy(s)
//! ```
//!
//! The device runtime's declarations (`libcudadevrt.a`, CUDA's `cuda_device_runtime_api.h`):
//! `cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)` and
//! `cudaError_t cudaStreamDestroy(cudaStream_t stream)`, in PTX `.extern .func (.param .b32
//! func_retval0) cudaStreamCreateWithFlags (.param .b64 pStream, .param .b32 flags)` and
//! `... cudaStreamDestroy (.param .b64 stream)`; the handle is a 64-bit value. The names are
//! the ones the launch's own calls use (`cudaGetParameterBufferV2`, `cudaLaunchDeviceV2`), so
//! every device-runtime call of a kernel comes from the same entry points. A nonzero
//! `cudaError_t` is kept in the status words as a failed launch's is.

use inkwell::module::Linkage;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};

use super::super::lower::{llvm_err, Lowerer};
use super::lower::record_failure;
use crate::error::Result;
use crate::ir::device_launch::{LaunchStream, StreamCreate, StreamDestroy, STREAM_NON_BLOCKING};

/// The device runtime's stream creation.
pub(crate) const CREATE: &str = "cudaStreamCreateWithFlags";
/// The device runtime's stream destruction.
pub(crate) const DESTROY: &str = "cudaStreamDestroy";

/// `name`'s declaration in the module, added on first use: `i32 name(params...)`.
fn declare<'c>(
    lw: &Lowerer<'c, '_>,
    name: &str,
    params: &[inkwell::types::BasicMetadataTypeEnum<'c>],
) -> FunctionValue<'c> {
    lw.module.get_function(name).unwrap_or_else(|| {
        let ty = lw.ctx.i32_type().fn_type(params, false);
        lw.module.add_function(name, ty, Some(Linkage::External))
    })
}

/// Calls `f(args)` (a device-runtime function returning a `cudaError_t`) and keeps a failure
/// in the status words `status` under `site`.
fn call_checked<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: FunctionValue<'c>,
    args: &[inkwell::values::BasicMetadataValueEnum<'c>],
    status: u32,
    site: u32,
) -> Result<()> {
    let name = lw.f.name.clone();
    let e = |x: inkwell::builder::BuilderError| llvm_err(&name, x);
    let ctx = lw.ctx;
    let err: IntValue<'c> =
        lw.b.build_call(f, args, "ds.err")
            .map_err(e)?
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| llvm_err(&name, "a device-runtime call returns nothing"))?
            .into_int_value();
    let status = lw
        .param_array(status)
        .ok_or_else(|| llvm_err(&name, "the status parameter is not an array"))?;
    let (failed, done) = (
        ctx.append_basic_block(lw.func, "ds.failed"),
        ctx.append_basic_block(lw.func, "ds.done"),
    );
    let bad =
        lw.b.build_int_compare(IntPredicate::NE, err, ctx.i32_type().const_zero(), "")
            .map_err(e)?;
    lw.b.build_conditional_branch(bad, failed, done)
        .map_err(e)?;
    lw.b.position_at_end(failed);
    record_failure(lw, status.0, err, site)?;
    lw.b.build_unconditional_branch(done).map_err(e)?;
    lw.b.position_at_end(done);
    Ok(())
}

/// Lowers a stream's creation: the new handle, a `u64` (0, the default stream, if it failed).
pub(crate) fn lower_create<'c>(
    lw: &mut Lowerer<'c, '_>,
    c: &StreamCreate,
) -> Result<BasicValueEnum<'c>> {
    let name = lw.f.name.clone();
    let e = |x: inkwell::builder::BuilderError| llvm_err(&name, x);
    let (ptr, i32t, i64t) = (
        lw.ctx.ptr_type(AddressSpace::default()),
        lw.ctx.i32_type(),
        lw.ctx.i64_type(),
    );
    let create = declare(lw, CREATE, &[ptr.into(), i32t.into()]);
    let slot = lw.entry_alloca(i64t.into())?;
    lw.b.build_store(slot, i64t.const_zero()).map_err(e)?;
    let flags = i32t.const_int(STREAM_NON_BLOCKING as u64, false);
    call_checked(lw, create, &[slot.into(), flags.into()], c.status, c.site)?;
    lw.b.build_load(i64t, slot, "ds.handle").map_err(e)
}

/// Lowers a stream's destruction.
pub(crate) fn lower_destroy(lw: &mut Lowerer<'_, '_>, d: &StreamDestroy) -> Result<()> {
    let ptr = lw.ctx.ptr_type(AddressSpace::default());
    let destroy = declare(lw, DESTROY, &[ptr.into()]);
    let handle = stream_arg(lw, LaunchStream::Created(d.stream))?;
    call_checked(lw, destroy, &[handle.into()], d.status, d.site)
}

/// The `cudaStream_t` (a pointer) a launch or destruction passes for `stream`.
pub(crate) fn stream_arg<'c>(
    lw: &mut Lowerer<'c, '_>,
    stream: LaunchStream,
) -> Result<PointerValue<'c>> {
    let ptr = lw.ctx.ptr_type(AddressSpace::default());
    match (stream, stream.special_handle()) {
        (LaunchStream::Created(id), _) => {
            let h = lw.v(id)?.into_int_value();
            lw.b.build_int_to_ptr(h, ptr, "ds.stream")
                .map_err(|x| llvm_err(&lw.f.name, x))
        }
        (_, Some(h)) => Ok(lw.ctx.i64_type().const_int(h, false).const_to_pointer(ptr)),
        (_, None) => Err(llvm_err(&lw.f.name, "a special stream without a handle")),
    }
}
