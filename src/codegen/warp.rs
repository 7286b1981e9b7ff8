//! Warp-level intrinsics (numba's `cuda.shfl_sync`, `cuda.vote`, `cuda.match_*_sync`, ...) as
//! methods of the kernel builder, and bit operations on integers (`popc`, `clz`, `ffs`, `brev`).
//!
//! Each `*_sync` intrinsic takes a `mask` of the lanes taking part: every lane named in it must
//! execute the same intrinsic (with the same mask) before any of them goes on, as in CUDA. Pass
//! `0xffff_ffff` when the whole warp is converged, or [`activemask`](KernelBuilder::activemask)
//! inside a branch.

use inkwell::builder::BuilderError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, IntValue};

use super::control::KernelBuilder;
use super::expr::Expr;
use super::lower::{reg_type, Lowerer};
use super::scalar::{Int, Num, Scalar, ScalarTy};
use crate::error::{Error, Result};
use crate::ir::{BitFn, LaneMask, Op, ShflKind, ValueId, VoteKind, WarpOp};

/// The mask naming all 32 lanes of a warp (for `*_sync` intrinsics in converged code).
pub const FULL_MASK: u32 = 0xffff_ffff;

fn warp<R: Scalar>(op: WarpOp, operands: &[(u32, u32)]) -> Expr<R> {
    // Lanes (and warps) see different results: never uniform across a block.
    Expr::record(Op::Warp(op), operands, true)
}

fn shfl<T: Num>(kind: ShflKind, mask: Expr<u32>, value: Expr<T>, lane: Expr<u32>) -> Expr<T> {
    warp(
        WarpOp::Shfl {
            kind,
            mask: ValueId(mask.id),
            value: ValueId(value.id),
            lane: ValueId(lane.id),
        },
        &[mask.raw(), value.raw(), lane.raw()],
    )
}

fn vote<R: Scalar>(kind: VoteKind, mask: Expr<u32>, pred: Expr<bool>) -> Expr<R> {
    warp(
        WarpOp::Vote {
            kind,
            mask: ValueId(mask.id),
            pred: ValueId(pred.id),
        },
        &[mask.raw(), pred.raw()],
    )
}

/// Warp intrinsics.
impl KernelBuilder {
    /// `__shfl_sync(mask, value, src_lane)` (numba's `cuda.shfl_sync`): `value` as lane
    /// `src_lane % 32` holds it. 64-bit values move as two 32-bit shuffles; 8- and 16-bit ones
    /// are extended to 32 bits and back.
    #[track_caller]
    pub fn shfl_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
        src_lane: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        shfl(ShflKind::Idx, mask.into(), value.into(), src_lane.into())
    }

    /// `__shfl_up_sync(mask, value, delta)` (numba's `cuda.shfl_up_sync`): `value` from lane
    /// `laneid - delta`; lanes below `delta` get their own `value`.
    #[track_caller]
    pub fn shfl_up_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
        delta: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        shfl(ShflKind::Up, mask.into(), value.into(), delta.into())
    }

    /// `__shfl_down_sync(mask, value, delta)` (numba's `cuda.shfl_down_sync`): `value` from lane
    /// `laneid + delta`; lanes above `31 - delta` get their own `value`.
    #[track_caller]
    pub fn shfl_down_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
        delta: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        shfl(ShflKind::Down, mask.into(), value.into(), delta.into())
    }

    /// `__shfl_xor_sync(mask, value, lane_mask)` (numba's `cuda.shfl_xor_sync`): `value` from
    /// lane `laneid ^ lane_mask` (a butterfly, as in warp reductions).
    #[track_caller]
    pub fn shfl_xor_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
        lane_mask: impl Into<Expr<u32>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        shfl(ShflKind::Bfly, mask.into(), value.into(), lane_mask.into())
    }

    /// `__all_sync(mask, pred)` (numba's `cuda.all_sync`): whether `pred` holds in every lane
    /// of `mask`.
    #[track_caller]
    pub fn all_sync(&self, mask: impl Into<Expr<u32>>, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        vote(VoteKind::All, mask.into(), pred.into())
    }

    /// `__any_sync(mask, pred)` (numba's `cuda.any_sync`): whether `pred` holds in some lane of
    /// `mask`.
    #[track_caller]
    pub fn any_sync(&self, mask: impl Into<Expr<u32>>, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        vote(VoteKind::Any, mask.into(), pred.into())
    }

    /// `__uni_sync(mask, pred)` (numba's `cuda.eq_sync`): whether `pred` is the same in every
    /// lane of `mask` (all true or all false).
    #[track_caller]
    pub fn eq_sync(&self, mask: impl Into<Expr<u32>>, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        vote(VoteKind::Uni, mask.into(), pred.into())
    }

    /// `__ballot_sync(mask, pred)` (numba's `cuda.ballot_sync`): bit `l` is set iff lane `l`
    /// is in `mask` and its `pred` holds.
    #[track_caller]
    pub fn ballot_sync(
        &self,
        mask: impl Into<Expr<u32>>,
        pred: impl Into<Expr<bool>>,
    ) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        vote(VoteKind::Ballot, mask.into(), pred.into())
    }

    /// `__activemask()` (numba's `cuda.activemask`): the lanes of this warp executing this
    /// call together.
    #[track_caller]
    pub fn activemask(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::ActiveMask, &[])
    }

    /// `__match_any_sync(mask, value)` (numba's `cuda.match_any_sync`): the lanes of `mask`
    /// whose `value` equals this lane's (floats compare by bits). Needs sm_70.
    #[track_caller]
    pub fn match_any_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
    ) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        let (m, v) = (mask.into(), value.into());
        warp(
            WarpOp::MatchAny {
                mask: ValueId(m.id),
                value: ValueId(v.id),
            },
            &[m.raw(), v.raw()],
        )
    }

    /// `__match_all_sync(mask, value, &pred)` (numba's `cuda.match_all_sync`): `(mask, true)` if
    /// every lane of `mask` has the same `value` (floats compare by bits), else `(0, false)`.
    /// Needs sm_70.
    #[track_caller]
    pub fn match_all_sync<T: Num>(
        &self,
        mask: impl Into<Expr<u32>>,
        value: impl Into<Expr<T>>,
    ) -> (Expr<u32>, Expr<bool>) {
        let _at = crate::codegen::srcloc::at();
        let (m, v) = (mask.into(), value.into());
        let r: Expr<u32> = warp(
            WarpOp::MatchAll {
                mask: ValueId(m.id),
                value: ValueId(v.id),
            },
            &[m.raw(), v.raw()],
        );
        // The calling lane is always in `mask`, so the result is non-zero iff all matched.
        (r, r.ne(0u32))
    }

    /// `%lanemask_lt`: the lanes below this one (bits `0..laneid`).
    #[track_caller]
    pub fn lanemask_lt(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::LaneMask(LaneMask::Lt), &[])
    }
    /// `%lanemask_le`: this lane and those below it.
    #[track_caller]
    pub fn lanemask_le(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::LaneMask(LaneMask::Le), &[])
    }
    /// `%lanemask_eq`: this lane's bit (`1 << laneid`).
    #[track_caller]
    pub fn lanemask_eq(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::LaneMask(LaneMask::Eq), &[])
    }
    /// `%lanemask_ge`: this lane and those above it.
    #[track_caller]
    pub fn lanemask_ge(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::LaneMask(LaneMask::Ge), &[])
    }
    /// `%lanemask_gt`: the lanes above this one.
    #[track_caller]
    pub fn lanemask_gt(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        warp(WarpOp::LaneMask(LaneMask::Gt), &[])
    }
}

fn bit<T: Scalar, R: Scalar>(f: BitFn, x: Expr<T>) -> Expr<R> {
    Expr::record(Op::Warp(WarpOp::Bit(f, ValueId(x.id))), &[x.raw()], false)
}

/// Bit operations (numba's `cuda.popc`, `cuda.clz`, `cuda.ffs`, `cuda.brev`).
impl<T: Int> Expr<T> {
    /// The number of one bits (`popc`; Rust's `count_ones`).
    #[track_caller]
    pub fn popc(self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        bit(BitFn::Popc, self)
    }

    /// The number of leading zero bits, the bit width for 0 (`clz`; Rust's `leading_zeros`).
    #[track_caller]
    pub fn clz(self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        bit(BitFn::Clz, self)
    }

    /// The 1-based position of the least significant one bit, 0 for 0 (CUDA's `__ffs`;
    /// `trailing_zeros() + 1` for non-zero values).
    #[track_caller]
    pub fn ffs(self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        bit(BitFn::Ffs, self)
    }

    /// The bits in reverse order (`brev`; Rust's `reverse_bits`).
    #[track_caller]
    pub fn brev(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        bit(BitFn::Brev, self)
    }
}

fn gen_err(lw: &Lowerer<'_, '_>, e: impl std::fmt::Display) -> Error {
    Error::Codegen(crate::error::CodegenError::Llvm {
        kernel: lw.f.name.clone(),
        message: format!("internal code generation error (warp intrinsics): {e}"),
        source: None,
    })
}

/// An error for an intrinsic the compile target lacks (LLVM would abort the process on it).
fn unsupported(lw: &Lowerer<'_, '_>, what: &str, need: &str) -> Error {
    let (m, n) = lw.opts.sm();
    let (pm, pn) = lw.opts.ptx_isa();
    super::lower::unsupported_err(
        &lw.f.name,
        format!(
            "`{what}` needs {need}; this kernel is being compiled for sm_{m}{n} with PTX ISA {pm}.{pn}"
        ),
    )
}

fn need_sync_ptx(lw: &Lowerer<'_, '_>, what: &str) -> Result<()> {
    if lw.opts.ptx_isa() < (6, 0) {
        return Err(unsupported(
            lw,
            what,
            "PTX ISA 6.0 for the `.sync` warp instructions (cudajit targets it for compute capability 7.0 and newer)",
        ));
    }
    Ok(())
}

fn call1<'c>(
    lw: &Lowerer<'c, '_>,
    name: &str,
    ret: BasicTypeEnum<'c>,
    args: &[BasicValueEnum<'c>],
) -> Result<BasicValueEnum<'c>> {
    lw.call(name, Some(ret), args)?
        .ok_or_else(|| gen_err(lw, format!("{name} returned nothing")))
}

/// Lowers a warp intrinsic or bit operation; `ty` is the result type.
pub(crate) fn lower_warp<'c>(
    lw: &mut Lowerer<'c, '_>,
    w: &WarpOp,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let i32t = lw.ctx.i32_type();
    match w {
        WarpOp::Mma {
            kind,
            a,
            b,
            c,
            lane,
        } => super::mma::lower_mma(lw, *kind, a, b, c, *lane),
        WarpOp::LdMatrix {
            array,
            index,
            count,
            trans,
            reg,
        } => super::ldmatrix::lower_ldmatrix(lw, *array, *index, *count, *trans, *reg),
        WarpOp::ActiveMask => {
            if lw.opts.ptx_isa() >= (6, 2) {
                call1(lw, "llvm.nvvm.activemask", i32t.into(), &[])
            } else {
                // Before PTX 6.2 (sm_70 and sm_72 targets here): a non-`.sync` ballot of
                // `true` gives the lanes executing it, which is what `activemask` reports.
                let fty = i32t.fn_type(&[], false);
                let asm = lw.ctx.create_inline_asm(
                    fty,
                    "vote.ballot.b32 $0, 1;".to_string(),
                    "=r".to_string(),
                    true,
                    false,
                    None,
                    false,
                );
                let call =
                    lw.b.build_indirect_call(fty, asm, &[], "")
                        .map_err(|e| gen_err(lw, e))?;
                call.try_as_basic_value()
                    .basic()
                    .ok_or_else(|| gen_err(lw, "activemask returned nothing"))
            }
        }
        WarpOp::LaneMask(m) => {
            let name = match m {
                LaneMask::Lt => "lt",
                LaneMask::Le => "le",
                LaneMask::Eq => "eq",
                LaneMask::Ge => "ge",
                LaneMask::Gt => "gt",
            };
            call1(
                lw,
                &format!("llvm.nvvm.read.ptx.sreg.lanemask.{name}"),
                i32t.into(),
                &[],
            )
        }
        WarpOp::Shfl {
            kind,
            mask,
            value,
            lane,
        } => {
            need_sync_ptx(lw, "shfl_sync")?;
            let (m, v, l) = (lw.v(*mask)?, lw.v(*value)?, lw.v(*lane)?);
            lower_shfl(lw, *kind, m, v, l, ty)
        }
        WarpOp::Vote { kind, mask, pred } => {
            need_sync_ptx(lw, "vote (all_sync/any_sync/eq_sync/ballot_sync)")?;
            let (m, p) = (lw.v(*mask)?, lw.v(*pred)?);
            let (name, ret): (&str, BasicTypeEnum) = match kind {
                VoteKind::All => ("all", lw.ctx.bool_type().into()),
                VoteKind::Any => ("any", lw.ctx.bool_type().into()),
                VoteKind::Uni => ("uni", lw.ctx.bool_type().into()),
                VoteKind::Ballot => ("ballot", i32t.into()),
            };
            call1(lw, &format!("llvm.nvvm.vote.{name}.sync"), ret, &[m, p])
        }
        WarpOp::MatchAny { mask, value } | WarpOp::MatchAll { mask, value } => {
            let all = matches!(w, WarpOp::MatchAll { .. });
            let what = if all {
                "match_all_sync"
            } else {
                "match_any_sync"
            };
            need_sync_ptx(lw, what)?;
            if lw.opts.sm() < (7, 0) {
                return Err(unsupported(lw, what, "compute capability 7.0"));
            }
            let vty = lw.ty(*value);
            let (m, mut v) = (lw.v(*mask)?, lw.v(*value)?);
            let it = if vty.size() == 8 {
                lw.ctx.i64_type()
            } else {
                i32t
            };
            if vty.is_half() {
                // Equal 16-bit floats (bitwise) have equal zero-extended bits.
                let b16 = lw.ctx.i16_type();
                let x =
                    lw.b.build_bit_cast(v, b16, "")
                        .map_err(|e| gen_err(lw, e))?
                        .into_int_value();
                v =
                    lw.b.build_int_z_extend(x, it, "")
                        .map_err(|e| gen_err(lw, e))?
                        .into();
            } else if vty.is_float() {
                v = lw.b.build_bit_cast(v, it, "").map_err(|e| gen_err(lw, e))?;
            } else if vty.is_narrow_int() {
                // Equal narrow values have equal zero-extensions.
                v =
                    lw.b.build_int_z_extend(v.into_int_value(), it, "")
                        .map_err(|e| gen_err(lw, e))?
                        .into();
            }
            let bits = it.get_bit_width();
            if all {
                let st = lw
                    .ctx
                    .struct_type(&[i32t.into(), lw.ctx.bool_type().into()], false);
                let name = format!("llvm.nvvm.match.all.sync.i{bits}p");
                let r = call1(lw, &name, st.into(), &[m, v])?.into_struct_value();
                lw.b.build_extract_value(r, 0, "")
                    .map_err(|e| gen_err(lw, e))
            } else {
                let name = format!("llvm.nvvm.match.any.sync.i{bits}");
                call1(lw, &name, i32t.into(), &[m, v])
            }
        }
        WarpOp::Bit(f, x) => {
            let x = lw.v(*x)?.into_int_value();
            lower_bit(lw, *f, x)
        }
    }
}

fn lower_shfl<'c>(
    lw: &Lowerer<'c, '_>,
    kind: ShflKind,
    mask: BasicValueEnum<'c>,
    v: BasicValueEnum<'c>,
    lane: BasicValueEnum<'c>,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let i32t = lw.ctx.i32_type();
    let (name, clamp) = match kind {
        ShflKind::Idx => ("idx", 0x1f),
        ShflKind::Up => ("up", 0),
        ShflKind::Down => ("down", 0x1f),
        ShflKind::Bfly => ("bfly", 0x1f),
    };
    let c = i32t.const_int(clamp, false).into();
    let one = |v: BasicValueEnum<'c>| -> Result<BasicValueEnum<'c>> {
        let suffix = if v.is_float_value() { "f32" } else { "i32" };
        call1(
            lw,
            &format!("llvm.nvvm.shfl.sync.{name}.{suffix}"),
            v.get_type(),
            &[mask, v, lane, c],
        )
    };
    if ty.size() == 4 {
        return one(v);
    }
    let e = |err: BuilderError| gen_err(lw, err);
    if ty.is_half() {
        // 16-bit floats: their bits, zero-extended to 32, shuffled and cut back.
        let b16 = lw.ctx.i16_type();
        let x = lw.b.build_bit_cast(v, b16, "").map_err(e)?.into_int_value();
        let wide = lw.b.build_int_z_extend(x, i32t, "").map_err(e)?;
        let r = one(wide.into())?.into_int_value();
        let r = lw.b.build_int_truncate(r, b16, "").map_err(e)?;
        return lw.b.build_bit_cast(r, v.get_type(), "").map_err(e);
    }
    if ty.is_narrow_int() {
        // 8 and 16 bits: extend to 32 (by the type's signedness), shuffle, truncate.
        let x = v.into_int_value();
        let wide = if ty.is_signed_int() {
            lw.b.build_int_s_extend(x, i32t, "").map_err(e)?
        } else {
            lw.b.build_int_z_extend(x, i32t, "").map_err(e)?
        };
        let r = one(wide.into())?.into_int_value();
        return Ok(lw
            .b
            .build_int_truncate(r, x.get_type(), "")
            .map_err(e)?
            .into());
    }
    // 64 bits: shuffle the low and high halves separately, as CUDA's headers do.
    let i64t = lw.ctx.i64_type();
    let bits =
        lw.b.build_bit_cast(v, i64t, "")
            .map_err(e)?
            .into_int_value();
    let lo = lw.b.build_int_truncate(bits, i32t, "").map_err(e)?;
    let hi =
        lw.b.build_right_shift(bits, i64t.const_int(32, false), false, "")
            .map_err(e)?;
    let hi = lw.b.build_int_truncate(hi, i32t, "").map_err(e)?;
    let lo = one(lo.into())?.into_int_value();
    let hi = one(hi.into())?.into_int_value();
    let lo = lw.b.build_int_z_extend(lo, i64t, "").map_err(e)?;
    let hi = lw.b.build_int_z_extend(hi, i64t, "").map_err(e)?;
    let hi =
        lw.b.build_left_shift(hi, i64t.const_int(32, false), "")
            .map_err(e)?;
    let r = lw.b.build_or(lo, hi, "").map_err(e)?;
    lw.b.build_bit_cast(r, reg_type(lw.ctx, ty), "").map_err(e)
}

fn lower_bit<'c>(lw: &Lowerer<'c, '_>, f: BitFn, x: IntValue<'c>) -> Result<BasicValueEnum<'c>> {
    let e = |err: BuilderError| gen_err(lw, err);
    let it = x.get_type();
    let w = it.get_bit_width();
    let no_poison = lw.ctx.bool_type().const_zero().into();
    let r = match f {
        BitFn::Popc => call1(lw, &format!("llvm.ctpop.i{w}"), it.into(), &[x.into()])?,
        BitFn::Clz => call1(
            lw,
            &format!("llvm.ctlz.i{w}"),
            it.into(),
            &[x.into(), no_poison],
        )?,
        BitFn::Brev => {
            return call1(lw, &format!("llvm.bitreverse.i{w}"), it.into(), &[x.into()]);
        }
        BitFn::Ffs => {
            // width - clz(x & -x): the lowest set bit's 1-based position, and 0 for 0.
            let neg = lw.b.build_int_neg(x, "").map_err(e)?;
            let low = lw.b.build_and(x, neg, "").map_err(e)?;
            let lz = call1(
                lw,
                &format!("llvm.ctlz.i{w}"),
                it.into(),
                &[low.into(), no_poison],
            )?
            .into_int_value();
            lw.b.build_int_sub(it.const_int(w as u64, false), lz, "")
                .map_err(e)?
                .into()
        }
    };
    let r = r.into_int_value();
    let i32t = lw.ctx.i32_type();
    Ok(match w {
        32 => r.into(),
        w if w < 32 => lw.b.build_int_z_extend(r, i32t, "").map_err(e)?.into(),
        _ => lw.b.build_int_truncate(r, i32t, "").map_err(e)?.into(),
    })
}
