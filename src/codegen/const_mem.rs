//! Constant memory (numba's `cuda.const.array_like`): read-only arrays whose contents are
//! baked into the kernel's module, read through the constant cache.

use inkwell::module::Linkage;
use inkwell::values::PointerValue;
use inkwell::AddressSpace;

use super::array::{DArray, ReadOnly};
use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::lower::Lowerer;
use super::scalar::{Scalar, ScalarTy};
use crate::error::Result;
use crate::ir::{ArrayRef, ConstArray, FunctionIr};

/// The most constant memory one module may hold (bytes): CUDA's 64 KiB.
pub const MAX_CONST_BYTES: usize = 64 * 1024;

/// NVPTX's constant address space.
const CONSTANT: u16 = 4;
/// Every constant array starts on this boundary (its global's alignment).
const CONST_ALIGN: usize = 16;

/// The constant memory an array of `bytes` bytes takes in the module: its bytes and the
/// padding up to the next array (ptxas counts both against the 64 KiB).
fn footprint(bytes: usize) -> usize {
    bytes.div_ceil(CONST_ALIGN) * CONST_ALIGN
}

impl KernelBuilder {
    /// A read-only array holding a copy of `data`, baked into the kernel's module in constant
    /// memory (numba's `cuda.const.array_like`): reads go through the constant cache, fastest
    /// when the threads of a warp read the same element. Read it like any array
    /// ([`at`](DArray::at), [`len`](DArray::len), ...). The data is part of the kernel's
    /// compile-cache key: other contents make another kernel.
    ///
    /// A kernel's constant arrays (with those of the device functions it calls) may hold
    /// [`MAX_CONST_BYTES`] (64 KiB) in all, each counted rounded up to 16 bytes (arrays start
    /// on 16-byte boundaries); more is a build error. An empty array is one too.
    #[track_caller]
    pub fn const_array<T: Scalar>(&self, data: &[T]) -> DArray<T, 1, ReadOnly> {
        let _at = crate::codegen::srcloc::at();
        let size = T::TY.size();
        let mut bytes = Vec::with_capacity(data.len() * size);
        for v in data {
            bytes.extend_from_slice(&v.to_bits().to_le_bytes()[..size]);
        }
        let id = with_state(|s| {
            if data.is_empty() {
                s.error(Kind::EmptyArray, format!(
                    "in `{}`: a constant array needs at least one element",
                    s.f.name
                ));
            }
            let before: usize = s.f.consts.iter().map(|c| footprint(c.bytes.len())).sum();
            if before + footprint(bytes.len()) > MAX_CONST_BYTES {
                s.error(Kind::ConstantMemory, format!(
                    "in `{}`: constant arrays of {} bytes in all exceed the 64 KiB ({MAX_CONST_BYTES} \
                     bytes) of constant memory a module may hold; pass larger tables as array \
                     parameters (read-only `&[T]` parameters are read through the read-only cache)",
                    s.f.name,
                    before + footprint(bytes.len())
                ));
            }
            s.f.consts.push(ConstArray {
                elem: T::TY,
                len: data.len() as u64,
                bytes: bytes.into(),
            });
            (s.f.consts.len() - 1) as u32
        })
        .unwrap_or(0);
        DArray::new(self.tag, ArrayRef::Const(id))
    }
}

/// Checks a whole kernel (with the device functions it calls) against the module's 64 KiB of
/// constant memory.
pub(crate) fn check_const_size(f: &FunctionIr) -> Option<String> {
    let total: usize = f
        .tree()
        .iter()
        .flat_map(|g| g.consts.iter())
        .map(|c| footprint(c.bytes.len()))
        .sum();
    (total > MAX_CONST_BYTES).then(|| {
        format!(
            "its constant arrays, with those of the device functions it calls, take {total} bytes \
             (each rounded up to 16), \
             more than the 64 KiB ({MAX_CONST_BYTES} bytes) of constant memory a module may hold; \
             pass larger tables as array parameters"
        )
    })
}

/// The address of constant array `i` of the function being lowered (a global in the
/// constant address space, made on first use), and its element type.
pub(crate) fn const_base<'c>(lw: &Lowerer<'c, '_>, i: u32) -> Result<(PointerValue<'c>, ScalarTy)> {
    let c = lw.f.consts.get(i as usize).ok_or_else(|| {
        super::lower::internal_err(&lw.f.name, "internal: unknown constant array")
    })?;
    let name = format!("{}_const{i}", lw.func.get_name().to_string_lossy());
    let g = match lw.module.get_global(&name) {
        Some(g) => g,
        None => {
            let init = lw.ctx.const_string(&c.bytes, false);
            let g =
                lw.module
                    .add_global(init.get_type(), Some(AddressSpace::from(CONSTANT)), &name);
            g.set_linkage(Linkage::Internal);
            g.set_initializer(&init);
            g.set_constant(true);
            g.set_alignment(16);
            g
        }
    };
    Ok((g.as_pointer_value(), c.elem))
}
