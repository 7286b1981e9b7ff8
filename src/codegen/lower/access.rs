//! Addresses of array elements: parameters, shared (static and dynamic), local and constant
//! arrays, for scalar and vector accesses.

use super::*;

impl<'c> Lowerer<'c, '_> {
    /// The address of element `index` (an i64 value) of an array.
    pub(crate) fn element_ptr(
        &mut self,
        array: ArrayRef,
        index: ValueId,
    ) -> Result<PointerValue<'c>> {
        let idx = self.v(index)?.into_int_value();
        self.gep(array, idx)
    }

    /// The address of element `index * width` (the start of a vector access).
    pub(super) fn vec_ptr(
        &mut self,
        array: ArrayRef,
        index: ValueId,
        width: u32,
    ) -> Result<PointerValue<'c>> {
        let idx = self.v(index)?.into_int_value();
        let scaled = ll!(
            self,
            self.b
                .build_int_mul(idx, idx.get_type().const_int(width as u64, false), "")
        );
        self.gep(array, scaled)
    }

    /// The address of element `idx` of an array.
    pub(super) fn gep(&mut self, array: ArrayRef, idx: IntValue<'c>) -> Result<PointerValue<'c>> {
        let (base, elem) = self.array_base(array)?;
        let ty = mem_type(self.ctx, elem);
        // SAFETY (LLVM): an in-bounds GEP; out-of-bounds indices are the kernel author's error,
        // exactly as in CUDA C.
        Ok(ll!(self, unsafe {
            self.b.build_in_bounds_gep(ty, base, &[idx], "")
        }))
    }

    /// An array's base pointer and element type.
    pub(crate) fn array_base(&mut self, array: ArrayRef) -> Result<(PointerValue<'c>, ScalarTy)> {
        Ok(match array {
            ArrayRef::Param(i) => {
                let (p, _) = self.arrays[i as usize]
                    .as_ref()
                    .ok_or_else(|| self.err("not an array parameter"))?;
                let elem = match &self.f.params[i as usize] {
                    Param::Array { elem, .. } => *elem,
                    Param::Scalar(_) | Param::TensorMap { .. } => {
                        return Err(self.err("not an array parameter"))
                    }
                };
                (*p, elem)
            }
            ArrayRef::Shared(i) => (
                self.shared[i as usize].as_pointer_value(),
                self.f.shared[i as usize].elem,
            ),
            ArrayRef::Local(i) => (self.locals[i as usize], self.f.locals[i as usize].elem),
            ArrayRef::DynShared(elem) => {
                let name = "cudajit_dynamic_shared";
                let g = match self.module.get_global(name) {
                    Some(g) => g,
                    None => {
                        let ty = self.ctx.i8_type().array_type(0);
                        let g = self
                            .module
                            .add_global(ty, Some(AddressSpace::from(SHARED)), name);
                        g.set_linkage(Linkage::External);
                        g.set_alignment(16);
                        g
                    }
                };
                (g.as_pointer_value(), elem)
            }
            ArrayRef::Const(i) => crate::codegen::const_mem::const_base(self, i)?,
        })
    }
}
