//! Atomic read-modify-write operations on array elements (numba's `cuda.atomic`).
//!
//! Every operation is a method of a writable array (a `&mut [T]` parameter, a shared array or
//! the dynamic shared array), takes a flat (C-order) index, and returns the element's value from
//! just before the operation. They are relaxed (`Monotonic`, as CUDA's `atomicAdd`) and
//! device-wide for global memory, block-wide for shared memory.

use inkwell::builder::BuilderError;
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FloatValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, AtomicRMWBinOp, FloatPredicate};

use super::array::{DArray, Index, ReadWrite};
use super::builder::{with_state, Kind};
use super::expr::Expr;
use super::lower::{reg_type, Lowerer};
use super::scalar::{Int, Num, Scalar, ScalarTy};
use crate::error::{CodegenError, Error, Result};
use crate::ir::{ArrayRef, AtomicKind, AtomicOp, Op, ValueId};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The unsigned integers [`atomic_inc`](DArray::atomic_inc) and
/// [`atomic_dec`](DArray::atomic_dec) work on: `u32` (the hardware's `atom.inc`/`atom.dec`) and
/// `u64` (a compare-and-swap loop).
pub trait AtomicCounter: Int + sealed::Sealed {}
impl AtomicCounter for u32 {}
impl AtomicCounter for u64 {}

fn record_atomic<T: Scalar, const N: usize>(
    arr: &DArray<T, N, ReadWrite>,
    kind: AtomicKind,
    index: Expr<i64>,
    value: Expr<T>,
    compare: Option<Expr<T>>,
) -> Expr<T> {
    let (tag, array) = (arr.tag, arr.array);
    with_state(|s| {
        if s.tag != tag {
            s.error(
                Kind::ForeignValue,
                format!("in `{}`: an array of another kernel is used", s.f.name),
            );
        }
        if let ArrayRef::Local(_) = array {
            s.error(Kind::ArrayAccess, format!(
                "in `{}`: `{}` on a local array: local memory is private to its thread, so it needs \
                 no atomics (and the hardware has none for it); read and write it directly",
                s.f.name,
                kind.name()
            ));
        }
    });
    let mut operands = vec![index.raw(), value.raw()];
    operands.extend(compare.map(|c| c.raw()));
    Expr::record(
        Op::Atomic(AtomicOp {
            kind,
            array,
            index: ValueId(index.id),
            value: ValueId(value.id),
            compare: compare.map(|c| ValueId(c.id)),
        }),
        &operands,
        // Old values differ between threads even when every thread adds the same operand.
        true,
    )
}

/// Atomics on every numeric element type. On 8- and 16-bit integers, which PTX has no atomics
/// for, each one is a compare-and-swap loop on the aligned 32-bit word holding the element
/// (neighbouring elements in that word are left as they are, even while other threads update
/// them).
impl<T: Num, const N: usize> DArray<T, N, ReadWrite> {
    /// `old = a[i]; a[i] = old + v; old`, atomically (numba's `cuda.atomic.add`). Integers wrap;
    /// f32 and f64 use the hardware's `atom.add.f32`/`.f64` (f64 needs sm_60, else a
    /// compare-and-swap loop), rounding to nearest. As in CUDA, the f32 add flushes subnormal
    /// operands and results to zero (the PTX ISA's rule for `atom.add.f32`); f64 keeps them.
    /// f16 uses `atom.add.noftz.f16` (sm_70+) and bf16 `atom.add.noftz.bf16` (sm_90), both
    /// keeping subnormals; elsewhere a compare-and-swap loop on the containing 32-bit word.
    #[track_caller]
    pub fn atomic_add(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Add, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = old - v; old`, atomically (numba's `cuda.atomic.sub`): an atomic add
    /// of `-v` (wrapping for unsigned integers).
    #[track_caller]
    pub fn atomic_sub(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Sub, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = if v < old { v } else { old }; old`, atomically (numba's
    /// `cuda.atomic.min`, which is Python's `min(old, v)`). For floats a NaN already in `a[i]`
    /// stays and a NaN `v` changes nothing; see [`atomic_nanmin`](Self::atomic_nanmin) for
    /// NaN-ignoring semantics. Integers use `atom.min`; floats a compare-and-swap loop that
    /// returns without writing when `v` is not smaller.
    #[track_caller]
    pub fn atomic_min(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Min, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = if v > old { v } else { old }; old`, atomically (numba's
    /// `cuda.atomic.max`, Python's `max(old, v)`): for floats a NaN already in `a[i]` stays and
    /// a NaN `v` changes nothing.
    #[track_caller]
    pub fn atomic_max(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Max, i, v.into(), None)
    }

    /// `a[i] = a[i].min(v)` atomically, returning the old value, with NaN treated as missing
    /// (IEEE minNum, as [`Expr::min`]): a NaN `v` is ignored and a NaN in `a[i]` is replaced by
    /// `v` (numba's `cuda.atomic.nanmin`). Same as [`atomic_min`](Self::atomic_min) for
    /// integers.
    #[track_caller]
    pub fn atomic_nanmin(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::NanMin, i, v.into(), None)
    }

    /// `a[i] = a[i].max(v)` atomically, returning the old value, with NaN treated as missing
    /// (IEEE maxNum, numba's `cuda.atomic.nanmax`).
    #[track_caller]
    pub fn atomic_nanmax(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::NanMax, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = v; old`, atomically (numba's `cuda.atomic.exch`, `atom.exch`).
    #[track_caller]
    pub fn atomic_exch(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Exch, i, v.into(), None)
    }

    /// `old = a[i]; if old == expected { a[i] = new }; old`, atomically (numba's
    /// `cuda.atomic.cas`, `atom.cas`). The swap happened iff the returned value equals
    /// `expected`. Floats are compared by their bits: `-0.0` does not match `0.0`, and a NaN
    /// matches a NaN with the same bits.
    #[track_caller]
    pub fn atomic_cas(
        &self,
        i: impl Index,
        expected: impl Into<Expr<T>>,
        new: impl Into<Expr<T>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        let (expected, new) = (expected.into(), new.into());
        record_atomic(self, AtomicKind::Cas, i, new, Some(expected))
    }

    /// `a[i]`, read as one relaxed atomic access (an LLVM `load atomic volatile monotonic`: PTX
    /// `ld.volatile` or `ld.relaxed`), device-wide for global memory. Unlike [`at`](DArray::at)
    /// it is never served from the multiprocessor's L1 cache, never merged with another read
    /// and never hoisted out of a loop, so a loop that waits for another block's store (a flag
    /// published with [`atomic_exch`](Self::atomic_exch) after a
    /// [`threadfence`](super::KernelBuilder::threadfence)) sees it arrive. 64-bit elements are
    /// read whole (no torn halves).
    #[track_caller]
    pub fn atomic_load(&self, i: impl Index) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Load, i, Expr::lit(T::from_bits(0)), None)
    }
}

/// Bitwise atomics on integers.
impl<T: Int, const N: usize> DArray<T, N, ReadWrite> {
    /// `old = a[i]; a[i] = old & v; old`, atomically (numba's `cuda.atomic.and_`).
    #[track_caller]
    pub fn atomic_and(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::And, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = old | v; old`, atomically (numba's `cuda.atomic.or_`).
    #[track_caller]
    pub fn atomic_or(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Or, i, v.into(), None)
    }

    /// `old = a[i]; a[i] = old ^ v; old`, atomically (numba's `cuda.atomic.xor`).
    #[track_caller]
    pub fn atomic_xor(&self, i: impl Index, v: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Xor, i, v.into(), None)
    }
}

/// Wrapping counters on unsigned integers.
impl<T: AtomicCounter, const N: usize> DArray<T, N, ReadWrite> {
    /// `old = a[i]; a[i] = if old >= limit { 0 } else { old + 1 }; old`, atomically (numba's
    /// `cuda.atomic.inc`, CUDA's `atomicInc`): counts from 0 up to `limit`, then wraps to 0.
    #[track_caller]
    pub fn atomic_inc(&self, i: impl Index, limit: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Inc, i, limit.into(), None)
    }

    /// `old = a[i]; a[i] = if old == 0 || old > limit { limit } else { old - 1 }; old`,
    /// atomically (numba's `cuda.atomic.dec`, CUDA's `atomicDec`): counts down to 0, then wraps
    /// to `limit`.
    #[track_caller]
    pub fn atomic_dec(&self, i: impl Index, limit: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        record_atomic(self, AtomicKind::Dec, i, limit.into(), None)
    }
}

fn gen_err(lw: &Lowerer<'_, '_>, e: BuilderError) -> Error {
    Error::Codegen(CodegenError::Llvm {
        kernel: lw.f.name.clone(),
        message: format!("internal code generation error (atomics): {e}"),
        source: Some(std::sync::Arc::new(e)),
    })
}

const RELAXED: AtomicOrdering = AtomicOrdering::Monotonic;

/// Lowers an atomic operation; `ty` is the element type.
pub(crate) fn lower_atomic<'c>(
    lw: &mut Lowerer<'c, '_>,
    a: &AtomicOp,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let addr_space = match a.array {
        ArrayRef::Param(_) => 1,
        ArrayRef::Shared(_) | ArrayRef::DynShared(_) => 3,
        ArrayRef::Local(_) | ArrayRef::Const(_) => {
            return Err(super::lower::internal_err(
                &lw.f.name,
                format!("`{}` on a local array", a.kind.name()),
            ))
        }
    };
    let ptr = lw.element_ptr(a.array, a.index)?;
    if a.kind == AtomicKind::Load {
        return atomic_load(lw, ptr, ty);
    }
    let v = lw.v(a.value)?;
    let signed = ty.is_signed_int();
    if ty.is_half()
        && matches!(
            a.kind,
            AtomicKind::Min
                | AtomicKind::Max
                | AtomicKind::NanMin
                | AtomicKind::NanMax
                | AtomicKind::Exch
                | AtomicKind::Cas
        )
    {
        // min/max, exchange and compare-and-swap on the 16-bit word's bits: the loop on the
        // containing 32-bit word (add and sub are LLVM's `atomicrmw fadd`, below).
        let it = lw.ctx.i16_type();
        let ft = v.into_float_value().get_type();
        let bits = bitcast(lw, v, it.into())?.into_int_value();
        let cmp = match a.compare {
            Some(c) => Some(bitcast(lw, lw.v(c)?, it.into())?.into_int_value()),
            None => None,
        };
        let old =
            super::atomics_narrow::lower_narrow_rmw(lw, a.kind, ptr, bits, cmp, false, Some(ft))?;
        return bitcast(lw, old, ft.into());
    }
    if ty.is_float() {
        let f = v.into_float_value();
        return match a.kind {
            AtomicKind::Add => float_rmw(lw, FloatRmw::Add, ptr, f),
            AtomicKind::Sub => {
                let neg = lw.b.build_float_neg(f, "").map_err(|e| gen_err(lw, e))?;
                float_rmw(lw, FloatRmw::Add, ptr, neg)
            }
            AtomicKind::NanMin => float_rmw(lw, FloatRmw::Min, ptr, f),
            AtomicKind::NanMax => float_rmw(lw, FloatRmw::Max, ptr, f),
            AtomicKind::Min | AtomicKind::Max => {
                float_minmax_loop(lw, ptr, f, a.kind == AtomicKind::Max)
            }
            AtomicKind::Exch | AtomicKind::Cas => {
                let it = int_type_for(lw, ty);
                let bits = bitcast(lw, v, it.into())?.into_int_value();
                let cmp = match a.compare {
                    Some(c) => Some(bitcast(lw, lw.v(c)?, it.into())?.into_int_value()),
                    None => None,
                };
                let old = int_exch_or_cas(lw, ptr, bits, cmp)?;
                bitcast(lw, old.into(), reg_type(lw.ctx, ty))
            }
            AtomicKind::And
            | AtomicKind::Or
            | AtomicKind::Xor
            | AtomicKind::Inc
            | AtomicKind::Dec
            | AtomicKind::Load => Err(super::lower::internal_err(
                &lw.f.name,
                format!("`{}` needs an integer element type", a.kind.name()),
            )),
        };
    }
    let x = v.into_int_value();
    if ty.is_narrow_int() {
        let cmp = match a.compare {
            Some(c) => Some(lw.v(c)?.into_int_value()),
            None => None,
        };
        if matches!(a.kind, AtomicKind::Inc | AtomicKind::Dec) {
            return Err(super::lower::internal_err(
                &lw.f.name,
                format!("`{}` needs a u32 or u64 element type", a.kind.name()),
            ));
        }
        return super::atomics_narrow::lower_narrow_rmw(lw, a.kind, ptr, x, cmp, signed, None);
    }
    let rmw = |lw: &Lowerer<'c, '_>, op: AtomicRMWBinOp, x: IntValue<'c>| {
        lw.b.build_atomicrmw(op, ptr, x, RELAXED)
            .map(BasicValueEnum::from)
            .map_err(|e| gen_err(lw, e))
    };
    match a.kind {
        AtomicKind::Add => rmw(lw, AtomicRMWBinOp::Add, x),
        // LLVM 19's NVPTX backend prints `atomicrmw sub` as an `atom.add` with a placeholder
        // operand ("temp") that ptxas rejects; add the negation instead.
        AtomicKind::Sub => {
            let neg = lw.b.build_int_neg(x, "").map_err(|e| gen_err(lw, e))?;
            rmw(lw, AtomicRMWBinOp::Add, neg)
        }
        AtomicKind::And => rmw(lw, AtomicRMWBinOp::And, x),
        AtomicKind::Or => rmw(lw, AtomicRMWBinOp::Or, x),
        AtomicKind::Xor => rmw(lw, AtomicRMWBinOp::Xor, x),
        AtomicKind::Min | AtomicKind::NanMin if signed => rmw(lw, AtomicRMWBinOp::Min, x),
        AtomicKind::Min | AtomicKind::NanMin => rmw(lw, AtomicRMWBinOp::UMin, x),
        AtomicKind::Max | AtomicKind::NanMax if signed => rmw(lw, AtomicRMWBinOp::Max, x),
        AtomicKind::Max | AtomicKind::NanMax => rmw(lw, AtomicRMWBinOp::UMax, x),
        AtomicKind::Exch => Ok(int_exch_or_cas(lw, ptr, x, None)?.into()),
        AtomicKind::Cas => {
            let cmp = match a.compare {
                Some(c) => lw.v(c)?.into_int_value(),
                None => {
                    return Err(super::lower::internal_err(
                        &lw.f.name,
                        "internal: atomic_cas without an expected value",
                    ))
                }
            };
            Ok(int_exch_or_cas(lw, ptr, x, Some(cmp))?.into())
        }
        AtomicKind::Inc | AtomicKind::Dec if ty == ScalarTy::U32 => {
            // `atomicrmw uinc_wrap/udec_wrap` on i32 becomes a compare-and-swap loop in LLVM 19;
            // these intrinsics are the hardware's `atom.inc.u32`/`atom.dec.u32`.
            let name = format!(
                "llvm.nvvm.atomic.load.{}.32.p{addr_space}",
                if a.kind == AtomicKind::Inc {
                    "inc"
                } else {
                    "dec"
                }
            );
            lw.call(
                &name,
                Some(lw.ctx.i32_type().into()),
                &[ptr.into(), x.into()],
            )?
            .ok_or_else(|| {
                super::lower::internal_err(&lw.f.name, "internal: atom.inc returned nothing")
            })
        }
        // u64: LLVM expands these into a compare-and-swap loop with exactly CUDA's semantics.
        AtomicKind::Inc => rmw(lw, AtomicRMWBinOp::UIncWrap, x),
        AtomicKind::Dec => rmw(lw, AtomicRMWBinOp::UDecWrap, x),
        AtomicKind::Load => atomic_load(lw, ptr, ty),
    }
}

/// A relaxed (`monotonic`) atomic load of a `ty` element, naturally aligned.
fn atomic_load<'c>(
    lw: &Lowerer<'c, '_>,
    ptr: PointerValue<'c>,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let v =
        lw.b.build_load(reg_type(lw.ctx, ty), ptr, "")
            .map_err(|e| gen_err(lw, e))?;
    if let Some(inst) = v.as_instruction_value() {
        let bad = |m: inkwell::values::InstructionValueError| {
            Error::Codegen(CodegenError::Llvm {
                kernel: lw.f.name.clone(),
                message: format!("internal code generation error (atomic load): {m}"),
                source: Some(std::sync::Arc::new(m)),
            })
        };
        inst.set_alignment(ty.size() as u32).map_err(bad)?;
        inst.set_atomic_ordering(RELAXED).map_err(bad)?;
        // Also volatile: LLVM 19's NVPTX backend takes a load from a kernel parameter it finds
        // read-only (`noalias`, and nothing in the kernel writes it) for `ld.global.nc`, which
        // has no atomic form, and aborts the process ("Cannot select: AtomicLoad") when the
        // array is only ever read with `atomic_load` (found by the fuzzer's block programs). A
        // volatile load is never made non-coherent; the PTX is the same `ld.volatile.global`
        // (or `ld.relaxed.gpu`) as for the other relaxed loads.
        inst.set_volatile(true).map_err(bad)?;
    }
    Ok(v)
}

fn int_type_for<'c>(lw: &Lowerer<'c, '_>, ty: ScalarTy) -> inkwell::types::IntType<'c> {
    if ty.size() == 8 {
        lw.ctx.i64_type()
    } else {
        lw.ctx.i32_type()
    }
}

fn bitcast<'c>(
    lw: &Lowerer<'c, '_>,
    v: BasicValueEnum<'c>,
    to: inkwell::types::BasicTypeEnum<'c>,
) -> Result<BasicValueEnum<'c>> {
    lw.b.build_bit_cast(v, to, "").map_err(|e| gen_err(lw, e))
}

/// `atom.exch` (no `cmp`) or `atom.cas` on an integer, returning the old value.
fn int_exch_or_cas<'c>(
    lw: &Lowerer<'c, '_>,
    ptr: PointerValue<'c>,
    new: IntValue<'c>,
    cmp: Option<IntValue<'c>>,
) -> Result<IntValue<'c>> {
    match cmp {
        None => {
            lw.b.build_atomicrmw(AtomicRMWBinOp::Xchg, ptr, new, RELAXED)
                .map_err(|e| gen_err(lw, e))
        }
        Some(cmp) => {
            let pair =
                lw.b.build_cmpxchg(ptr, cmp, new, RELAXED, RELAXED)
                    .map_err(|e| gen_err(lw, e))?;
            Ok(lw
                .b
                .build_extract_value(pair, 0, "")
                .map_err(|e| gen_err(lw, e))?
                .into_int_value())
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum FloatRmw {
    Add,
    Min,
    Max,
}

/// A floating-point `atomicrmw` (inkwell's builder only takes integers).
pub(crate) fn float_rmw<'c>(
    lw: &Lowerer<'c, '_>,
    op: FloatRmw,
    ptr: PointerValue<'c>,
    v: FloatValue<'c>,
) -> Result<BasicValueEnum<'c>> {
    use inkwell::llvm_sys::core::LLVMBuildAtomicRMW;
    use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMAtomicRMWBinOp};
    if lw.b.get_insert_block().is_none() {
        return Err(gen_err(lw, BuilderError::UnsetPosition));
    }
    let op = match op {
        FloatRmw::Add => LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpFAdd,
        FloatRmw::Min => LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpFMin,
        FloatRmw::Max => LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpFMax,
    };
    // SAFETY: the builder is positioned in a block of the function being lowered (checked
    // above); `ptr` points to an element of `v`'s type in global or shared memory and both
    // values belong to the builder's context; fadd/fmin/fmax accept f16, bf16, f32 and f64
    // operands (LLVM expands what the target lacks into a compare-and-swap loop), and
    // LLVM gives the instruction the type's natural alignment. The returned value is the new
    // instruction, of `v`'s float type.
    let r = unsafe {
        let r = LLVMBuildAtomicRMW(
            lw.b.as_mut_ptr(),
            op,
            ptr.as_value_ref(),
            v.as_value_ref(),
            LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
            0,
        );
        if r.is_null() {
            None
        } else {
            Some(FloatValue::new(r))
        }
    };
    r.map(|f| f.as_basic_value_enum()).ok_or_else(|| {
        Error::Codegen(CodegenError::Llvm {
            kernel: lw.f.name.clone(),
            message: "internal code generation error: LLVM built no atomicrmw".into(),
            source: None,
        })
    })
}

/// numba's float `atomic.max`/`min`: a compare-and-swap loop that stores `v` only while it is
/// greater (smaller) than the value in memory, so a NaN on either side leaves memory alone.
fn float_minmax_loop<'c>(
    lw: &Lowerer<'c, '_>,
    ptr: PointerValue<'c>,
    v: FloatValue<'c>,
    max: bool,
) -> Result<BasicValueEnum<'c>> {
    let e = |err: BuilderError| gen_err(lw, err);
    let ft = v.get_type();
    let it = if ft == lw.ctx.f64_type() {
        lw.ctx.i64_type()
    } else {
        lw.ctx.i32_type()
    };
    let bytes = if it.get_bit_width() == 64 { 8 } else { 4 };
    let new_bits = lw.b.build_bit_cast(v, it, "").map_err(e)?.into_int_value();
    let entry =
        lw.b.get_insert_block()
            .ok_or_else(|| e(BuilderError::UnsetPosition))?;
    let first = lw.b.build_load(it, ptr, "").map_err(e)?;
    if let Some(inst) = first.as_instruction_value() {
        let bad = |m: inkwell::values::InstructionValueError| {
            Error::Codegen(CodegenError::Llvm {
                kernel: lw.f.name.clone(),
                message: format!("internal code generation error (atomics): {m}"),
                source: Some(std::sync::Arc::new(m)),
            })
        };
        inst.set_alignment(bytes).map_err(bad)?;
        inst.set_atomic_ordering(RELAXED).map_err(bad)?;
        // Volatile, as `atomic_load` says why: LLVM 19's NVPTX backend may take a relaxed
        // load for `ld.global.nc` and abort ("Cannot select: AtomicLoad"; block program seed
        // 71800039, program 5: an f64 `atomic_max` whose first load it found read-only).
        inst.set_volatile(true).map_err(bad)?;
    }
    let head = lw.ctx.append_basic_block(lw.func, "atomic.minmax.head");
    let attempt = lw.ctx.append_basic_block(lw.func, "atomic.minmax.cas");
    let done = lw.ctx.append_basic_block(lw.func, "atomic.minmax.done");
    lw.b.build_unconditional_branch(head).map_err(e)?;

    lw.b.position_at_end(head);
    let cur = lw.b.build_phi(it, "old").map_err(e)?;
    let cur_bits = cur.as_basic_value().into_int_value();
    let cur_f =
        lw.b.build_bit_cast(cur_bits, ft, "")
            .map_err(e)?
            .into_float_value();
    let pred = if max {
        FloatPredicate::OGT
    } else {
        FloatPredicate::OLT
    };
    let better = lw.b.build_float_compare(pred, v, cur_f, "").map_err(e)?;
    lw.b.build_conditional_branch(better, attempt, done)
        .map_err(e)?;

    lw.b.position_at_end(attempt);
    let pair =
        lw.b.build_cmpxchg(ptr, cur_bits, new_bits, RELAXED, RELAXED)
            .map_err(e)?;
    let seen = lw.b.build_extract_value(pair, 0, "").map_err(e)?;
    let ok =
        lw.b.build_extract_value(pair, 1, "")
            .map_err(e)?
            .into_int_value();
    let attempt_end = lw.b.get_insert_block().unwrap_or(attempt);
    lw.b.build_conditional_branch(ok, done, head).map_err(e)?;
    cur.add_incoming(&[(&first, entry), (&seen, attempt_end)]);

    lw.b.position_at_end(done);
    // Whether it swapped or gave up, the value seen last is the old value.
    Ok(cur_f.as_basic_value_enum())
}
