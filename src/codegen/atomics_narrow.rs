//! Atomics on 8- and 16-bit integers (`i8`, `u8`, `i16`, `u16`), and the min/max, exchange
//! and compare-and-swap atomics of the 16-bit floats (`f16`, `bf16`: on their bits).
//!
//! PTX has no 8- or 16-bit atomic read-modify-writes (only a 16-bit `atom.cas.b16` on sm_70
//! and newer), so each one is a compare-and-swap loop on the naturally aligned 32-bit word
//! that holds the element: read the word, compute the element's new value, and swap in the
//! word with only the element's bits replaced. A concurrent change to any byte of the word
//! (another element updated, atomically or by a plain store) makes the swap fail and the loop
//! retry with the fresh word, so neighbouring elements are never clobbered. An operation that
//! would leave the element unchanged (a failed `atomic_cas`, a `min` that does not lower it)
//! returns without writing. Relaxed (`Monotonic`) ordering, as the other atomics. The word may
//! extend past an array's last element: cudajit allocates whole words (`DeviceArray`), so it
//! stays inside the allocation (memory from elsewhere needs the same: round its size up to 4).

use inkwell::builder::BuilderError;
use inkwell::types::FloatType;
use inkwell::values::{BasicValue, BasicValueEnum, IntValue, PointerValue};
use inkwell::{AtomicOrdering, FloatPredicate, IntPredicate};

use super::lower::Lowerer;
use crate::error::{Error, Result};
use crate::ir::AtomicKind;

const RELAXED: AtomicOrdering = AtomicOrdering::Monotonic;

fn gen_err(lw: &Lowerer<'_, '_>, e: impl std::fmt::Display) -> Error {
    Error::Codegen(crate::error::CodegenError::Llvm {
        kernel: lw.f.name.clone(),
        message: format!("internal code generation error (narrow atomics): {e}"),
        source: None,
    })
}

/// The new bits of a 16-bit float element for `min`/`max` (numba's: a NaN on either side
/// leaves the element) and `nanmin`/`nanmax` (IEEE minNum/maxNum, -0 below +0, as the
/// simulator's and `Expr::min`'s), computed on the half values `old` and `v` given as bits.
fn half_minmax<'c>(
    lw: &Lowerer<'c, '_>,
    kind: AtomicKind,
    ft: FloatType<'c>,
    old: IntValue<'c>,
    v: IntValue<'c>,
) -> Result<IntValue<'c>> {
    let e = |err: BuilderError| gen_err(lw, err);
    let b = &lw.b;
    let o = b.build_bit_cast(old, ft, "").map_err(e)?.into_float_value();
    let x = b.build_bit_cast(v, ft, "").map_err(e)?.into_float_value();
    let cmp = |p: FloatPredicate, a, c| b.build_float_compare(p, a, c, "").map_err(e);
    let sel = |c, a: IntValue<'c>, d: IntValue<'c>| -> Result<IntValue<'c>> {
        Ok(b.build_select(c, a, d, "").map_err(e)?.into_int_value())
    };
    let max = matches!(kind, AtomicKind::Max | AtomicKind::NanMax);
    let (better, worse) = if max {
        (FloatPredicate::OGT, FloatPredicate::OLT)
    } else {
        (FloatPredicate::OLT, FloatPredicate::OGT)
    };
    if matches!(kind, AtomicKind::Min | AtomicKind::Max) {
        let c = cmp(better, x, o)?;
        return sel(c, v, old);
    }
    let zero = old.get_type().const_zero();
    let o_neg = b
        .build_int_compare(IntPredicate::SLT, old, zero, "")
        .map_err(e)?;
    // Equal values (only zeros differ): min keeps a negative `old`, max a positive one.
    let mut r = if max {
        sel(o_neg, v, old)?
    } else {
        sel(o_neg, old, v)?
    };
    r = sel(cmp(better, x, o)?, v, r)?;
    r = sel(cmp(worse, x, o)?, old, r)?;
    r = sel(cmp(FloatPredicate::UNO, x, x)?, old, r)?;
    sel(cmp(FloatPredicate::UNO, o, o)?, v, r)
}

/// The new element value an atomic computes from the old one (the loop's body); `half` is the
/// float type when the element is a 16-bit float held as its bits.
fn apply<'c>(
    lw: &Lowerer<'c, '_>,
    kind: AtomicKind,
    old: IntValue<'c>,
    v: IntValue<'c>,
    cmp: Option<IntValue<'c>>,
    signed: bool,
    half: Option<FloatType<'c>>,
) -> Result<IntValue<'c>> {
    let e = |err: BuilderError| gen_err(lw, err);
    let b = &lw.b;
    if let Some(ft) = half {
        if matches!(
            kind,
            AtomicKind::Min | AtomicKind::Max | AtomicKind::NanMin | AtomicKind::NanMax
        ) {
            return half_minmax(lw, kind, ft, old, v);
        }
    }
    let pick = |pred: IntPredicate| -> Result<IntValue<'c>> {
        let keep = b.build_int_compare(pred, old, v, "").map_err(e)?;
        Ok(b.build_select(keep, old, v, "")
            .map_err(e)?
            .into_int_value())
    };
    Ok(match kind {
        AtomicKind::Add => b.build_int_add(old, v, "").map_err(e)?,
        AtomicKind::Sub => b.build_int_sub(old, v, "").map_err(e)?,
        AtomicKind::And => b.build_and(old, v, "").map_err(e)?,
        AtomicKind::Or => b.build_or(old, v, "").map_err(e)?,
        AtomicKind::Xor => b.build_xor(old, v, "").map_err(e)?,
        AtomicKind::Min | AtomicKind::NanMin if signed => pick(IntPredicate::SLT)?,
        AtomicKind::Min | AtomicKind::NanMin => pick(IntPredicate::ULT)?,
        AtomicKind::Max | AtomicKind::NanMax if signed => pick(IntPredicate::SGT)?,
        AtomicKind::Max | AtomicKind::NanMax => pick(IntPredicate::UGT)?,
        AtomicKind::Exch => v,
        AtomicKind::Cas => {
            let cmp = cmp.ok_or_else(|| gen_err(lw, "atomic_cas without an expected value"))?;
            let hit = b
                .build_int_compare(IntPredicate::EQ, old, cmp, "")
                .map_err(e)?;
            b.build_select(hit, v, old, "").map_err(e)?.into_int_value()
        }
        AtomicKind::Inc | AtomicKind::Dec | AtomicKind::Load => {
            return Err(gen_err(
                lw,
                format!("{kind:?} is not a narrow read-modify-write"),
            ))
        }
    })
}

/// Lowers a read-modify-write of the 8- or 16-bit integer at `ptr` (naturally aligned) as a
/// compare-and-swap loop on its 32-bit word; returns the element's old value.
pub(crate) fn lower_narrow_rmw<'c>(
    lw: &Lowerer<'c, '_>,
    kind: AtomicKind,
    ptr: PointerValue<'c>,
    v: IntValue<'c>,
    cmp: Option<IntValue<'c>>,
    signed: bool,
    half: Option<FloatType<'c>>,
) -> Result<BasicValueEnum<'c>> {
    let e = |err: BuilderError| gen_err(lw, err);
    let b = &lw.b;
    let (i8t, i32t) = (lw.ctx.i8_type(), lw.ctx.i32_type());
    let nt = v.get_type();
    let width = nt.get_bit_width() as u64;
    // The word: the element's address rounded down to a multiple of 4, in an integer as wide
    // as the pointer (64-bit global, 32-bit shared), so that LLVM folds the GEP below into one
    // `and` of the address.
    let at = super::lower::address_int_type(lw.ctx, ptr);
    let addr = b.build_ptr_to_int(ptr, at, "").map_err(e)?;
    let off = b.build_and(addr, at.const_int(3, false), "").map_err(e)?;
    let back = b.build_int_neg(off, "").map_err(e)?;
    // SAFETY (LLVM): a GEP of at most 3 bytes back from a valid element address, to the start
    // of the aligned word that contains it (allocations are at least 4-byte aligned, and
    // cudajit's are whole words long, so the word lies inside the allocation).
    let word = unsafe { b.build_gep(i8t, ptr, &[back], "") }.map_err(e)?;
    // Little-endian: the element's bits start at bit 8 * (address % 4) of the word.
    let off32 = b.build_int_truncate_or_bit_cast(off, i32t, "").map_err(e)?;
    let shift = b
        .build_left_shift(off32, i32t.const_int(3, false), "")
        .map_err(e)?;
    let ones = i32t.const_int((1u64 << width) - 1, false);
    let mask = b.build_left_shift(ones, shift, "").map_err(e)?;
    let keep = b.build_not(mask, "").map_err(e)?;

    let entry = b
        .get_insert_block()
        .ok_or_else(|| e(BuilderError::UnsetPosition))?;
    let first = b.build_load(i32t, word, "").map_err(e)?;
    if let Some(inst) = first.as_instruction_value() {
        inst.set_alignment(4).map_err(|m| gen_err(lw, m))?;
        inst.set_atomic_ordering(RELAXED)
            .map_err(|m| gen_err(lw, m))?;
        // Volatile, as `atomics::atomic_load` says why: never made `ld.global.nc`.
        inst.set_volatile(true).map_err(|m| gen_err(lw, m))?;
    }
    let head = lw.ctx.append_basic_block(lw.func, "atomic.narrow.head");
    let attempt = lw.ctx.append_basic_block(lw.func, "atomic.narrow.cas");
    let done = lw.ctx.append_basic_block(lw.func, "atomic.narrow.done");
    b.build_unconditional_branch(head).map_err(e)?;

    b.position_at_end(head);
    let cur = b.build_phi(i32t, "word").map_err(e)?;
    let cur_word = cur.as_basic_value().into_int_value();
    let shifted = b.build_right_shift(cur_word, shift, false, "").map_err(e)?;
    let old = b.build_int_truncate(shifted, nt, "").map_err(e)?;
    let new = apply(lw, kind, old, v, cmp, signed, half)?;
    let same = b
        .build_int_compare(IntPredicate::EQ, new, old, "")
        .map_err(e)?;
    b.build_conditional_branch(same, done, attempt).map_err(e)?;

    b.position_at_end(attempt);
    let new32 = b.build_int_z_extend(new, i32t, "").map_err(e)?;
    let placed = b.build_left_shift(new32, shift, "").map_err(e)?;
    let rest = b.build_and(cur_word, keep, "").map_err(e)?;
    let new_word = b.build_or(rest, placed, "").map_err(e)?;
    let pair = b
        .build_cmpxchg(word, cur_word, new_word, RELAXED, RELAXED)
        .map_err(e)?;
    let seen = b.build_extract_value(pair, 0, "").map_err(e)?;
    let ok = b
        .build_extract_value(pair, 1, "")
        .map_err(e)?
        .into_int_value();
    let attempt_end = b.get_insert_block().unwrap_or(attempt);
    b.build_conditional_branch(ok, done, head).map_err(e)?;
    cur.add_incoming(&[(&first, entry), (&seen, attempt_end)]);

    b.position_at_end(done);
    Ok(old.as_basic_value_enum())
}
