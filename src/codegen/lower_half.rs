//! Lowering of the 16-bit floats (`f16` as LLVM's `half`, `bf16` as `bfloat`).
//!
//! `+ - * /`, negation and comparisons are LLVM's own instructions on the half types, which
//! the NVPTX back end (LLVM 19) makes native where the target has them (`add.rn.f16`,
//! `mul.rn.f16`, `setp.*.f16` on every supported target; `add.rn.bf16`, `mul.rn.bf16`,
//! `setp.*.bf16` on sm_90, `fma.rn.bf16` on sm_80) and otherwise computes in f32 and rounds
//! once (division always: `div.rn.f32` then `cvt.rn`). Rounding f32 results of `+ - * /` once
//! more to the half type is the correctly rounded result, because f32 keeps at least twice
//! the half type's significant bits plus two (24 >= 2 * 11 + 2 and 2 * 8 + 2). `%` and
//! min/max are computed exactly in f32.
//!
//! Conversions round once to nearest, ties to even. From f32 and f64 LLVM's `fptrunc` does
//! (`cvt.rn.f16.f64`; to bf16 from f64 before sm_90 through f32 with round to odd). Integers
//! go to f16 through f32 (exact below 2^24, and anything larger is infinite in f16), and to
//! bf16 through f64 (exact for 32-bit integers) or, for 64-bit ones, through f32 with round to
//! odd: LLVM's own conversion rounds to f32 and again to bf16, which is wrong next to a tie
//! (2^24 + 2^16 + 1 became 2^24). To integers, a half value widens exactly to f32 first.

use inkwell::values::{BasicValueEnum, FloatValue};

use super::lower::{reg_type, Lowerer};
use super::scalar::ScalarTy;
use crate::error::Result;
use crate::ir::BinOp;

macro_rules! ll {
    ($lw:expr, $e:expr) => {
        $e.map_err(|e| $lw.err(format!("LLVM builder: {e}")))?
    };
}

impl<'c> Lowerer<'c, '_> {
    /// `v` (a half value) widened exactly to f32.
    ///
    /// A `bf16` is widened as bits (its 16 bits above 16 zero bits), not as LLVM's `fpext`:
    /// LLVM 19's instruction combiner takes a `bfloat` to fit in a `half` (both 16 bits wide),
    /// so `fptrunc (fadd (fpext bfloat x), 0.0) to half` became `fadd half (fptrunc x), 0.0`,
    /// which gives +0.0 where `x` rounds to -0.0 in f16 (`(x.cast::<f32>() - -0.0).cast::<f16>()`
    /// for x = -5.0e-13, the whole-language campaign's seed 45400243, program 24). Bits keep
    /// the value (and a signalling NaN's bits, as Rust's `bf16::to_f32`) and hide the `bfloat`
    /// from the combiner.
    pub(crate) fn half_to_f32(&self, v: BasicValueEnum<'c>) -> Result<FloatValue<'c>> {
        let v = v.into_float_value();
        if v.get_type() == self.ctx.bf16_type() {
            return self.bf16_widened(v);
        }
        Ok(ll!(
            self,
            self.b.build_float_ext(v, self.ctx.f32_type(), "")
        ))
    }

    /// A `bf16` value's bits as the f32 of the same value (its 16 bits above 16 zero bits).
    fn bf16_widened(&self, v: FloatValue<'c>) -> Result<FloatValue<'c>> {
        let (i16t, i32t) = (self.ctx.i16_type(), self.ctx.i32_type());
        let bits = ll!(self, self.b.build_bit_cast(v, i16t, "")).into_int_value();
        let wide = ll!(self, self.b.build_int_z_extend(bits, i32t, ""));
        let high = ll!(
            self,
            self.b.build_left_shift(wide, i32t.const_int(16, false), "")
        );
        Ok(ll!(self, self.b.build_bit_cast(high, self.ctx.f32_type(), "")).into_float_value())
    }

    /// An f32 or f64 value rounded once to the half type `to`.
    pub(crate) fn round_to_half(
        &self,
        v: FloatValue<'c>,
        to: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let ht = reg_type(self.ctx, to).into_float_type();
        Ok(ll!(self, self.b.build_float_trunc(v, ht, "")).into())
    }

    /// A binary operation on two values of the half type `ty`.
    pub(crate) fn half_binary(
        &mut self,
        o: BinOp,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
        ty: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        if ty == ScalarTy::BF16
            && self.opts.fastmath
            && matches!(o, BinOp::Add | BinOp::Sub | BinOp::Mul)
        {
            // With fastmath (f32 denormals flushed) LLVM 19 emits `add.rn.ftz.bf16` and the
            // like, which ptxas rejects (`.ftz` is no bf16 modifier): compute in f32 without
            // `.ftz` (exact for bf16 operands' products and sums up to one rounding) and round
            // once, as on targets without native bf16.
            let (a, b) = (self.half_to_f32(x.into())?, self.half_to_f32(y.into())?);
            let op = match o {
                BinOp::Add => "add",
                BinOp::Sub => "sub",
                _ => "mul",
            };
            let r = self.asm2_f32(format!("{op}.rn.f32 $0, $1, $2;"), a, b)?;
            return self.round_to_half(r.into_float_value(), ty);
        }
        Ok(match o {
            BinOp::Add => ll!(self, self.b.build_float_add(x, y, "")).into(),
            BinOp::Sub => ll!(self, self.b.build_float_sub(x, y, "")).into(),
            BinOp::Mul => ll!(self, self.b.build_float_mul(x, y, "")).into(),
            BinOp::Div => ll!(self, self.b.build_float_div(x, y, "")).into(),
            BinOp::Rem | BinOp::Min | BinOp::Max => {
                // Exact in f32 (fmod's result and min/max are operands' values or exact
                // differences), so rounding back changes nothing.
                let (a, b) = (self.half_to_f32(x.into())?, self.half_to_f32(y.into())?);
                let r = match o {
                    BinOp::Rem => self.float_rem(a, b, ScalarTy::F32)?,
                    _ => {
                        let op = if o == BinOp::Min { "min" } else { "max" };
                        // No `.ftz`, even with fastmath: bf16 subnormals are f32 subnormals.
                        self.asm2_f32(format!("{op}.f32 $0, $1, $2;"), a, b)?
                    }
                };
                self.round_to_half(r.into_float_value(), ty)?
            }
            _ => return Err(self.err(format!("{o:?} on floats"))),
        })
    }

    /// A bf16 value as f32 by its bits (the high half of the f32's): exact, and opaque to the
    /// folds that would turn a compare of it back into a bf16 compare.
    pub(crate) fn bf16_bits_to_f32(&self, v: BasicValueEnum<'c>) -> Result<BasicValueEnum<'c>> {
        let f = self.bf16_widened(v.into_float_value())?;
        // Through an opaque `mov`: the back end folds a compare of an extended value with a
        // constant back into a bf16 compare otherwise.
        let ft = self.ctx.f32_type();
        let fty = ft.fn_type(&[ft.into()], false);
        let asm = self.ctx.create_inline_asm(
            fty,
            "mov.b32 $0, $1;".to_string(),
            "=f,f".to_string(),
            false,
            false,
            None,
            false,
        );
        let call = ll!(self, self.b.build_indirect_call(fty, asm, &[f.into()], ""));
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| self.err("inline assembly returned nothing"))
    }

    /// Two f32 operands through a piece of inline PTX (`$0` the result).
    fn asm2_f32(
        &self,
        text: String,
        a: FloatValue<'c>,
        b: FloatValue<'c>,
    ) -> Result<BasicValueEnum<'c>> {
        let ft = self.ctx.f32_type();
        let fty = ft.fn_type(&[ft.into(), ft.into()], false);
        let asm =
            self.ctx
                .create_inline_asm(fty, text, "=f,f,f".to_string(), false, false, None, false);
        let call = ll!(
            self,
            self.b
                .build_indirect_call(fty, asm, &[a.into(), b.into()], "")
        );
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| self.err("inline assembly returned nothing"))
    }

    /// `a * b + c` on bf16 values rounded once, for targets without `fma.rn.bf16` (before
    /// sm_80): the f32 fma rounded to odd (exact results kept; inexact ones truncated toward
    /// zero with the last bit set, found from the results rounded down and up), then rounded to
    /// nearest to bf16. An f32 fma rounded to nearest and then to bf16 is wrong next to a tie.
    pub(crate) fn bf16_fma_odd(
        &self,
        a: FloatValue<'c>,
        b: FloatValue<'c>,
        c: FloatValue<'c>,
    ) -> Result<BasicValueEnum<'c>> {
        let (a, b, c) = (
            self.half_to_f32(a.into())?,
            self.half_to_f32(b.into())?,
            self.half_to_f32(c.into())?,
        );
        let ft = self.ctx.f32_type();
        let fty = ft.fn_type(&[ft.into(), ft.into(), ft.into()], false);
        let text = "{ .reg .f32 %cj_lo, %cj_hi, %cj_z; .reg .b32 %cj_b; .reg .pred %cj_ex; \
                    fma.rn.f32 $0, $1, $2, $3; fma.rm.f32 %cj_lo, $1, $2, $3; \
                    fma.rp.f32 %cj_hi, $1, $2, $3; fma.rz.f32 %cj_z, $1, $2, $3; \
                    setp.eq.f32 %cj_ex, %cj_lo, %cj_hi; mov.b32 %cj_b, %cj_z; \
                    or.b32 %cj_b, %cj_b, 1; @!%cj_ex mov.b32 $0, %cj_b; }";
        let asm = self.ctx.create_inline_asm(
            fty,
            text.to_string(),
            "=&f,f,f,f".to_string(),
            false,
            false,
            None,
            false,
        );
        let call = ll!(
            self,
            self.b
                .build_indirect_call(fty, asm, &[a.into(), b.into(), c.into()], "")
        );
        let r = call
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| self.err("inline assembly returned nothing"))?;
        self.round_to_half(r.into_float_value(), ScalarTy::BF16)
    }

    /// Rust's `as` where `from` or `to` is a 16-bit float.
    pub(crate) fn half_cast(
        &mut self,
        v: BasicValueEnum<'c>,
        from: ScalarTy,
        to: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        if from.is_half() {
            let w = self.half_to_f32(v)?;
            if to.is_half() {
                return self.round_to_half(w, to);
            }
            return self.cast_value(w.into(), ScalarTy::F32, to);
        }
        // `to` is a half type.
        if from.is_float() {
            return self.round_to_half(v.into_float_value(), to);
        }
        if to == ScalarTy::F16 || from.size() <= 4 {
            // f16: through f32 (exact below 2^24; beyond, f16 overflows either way). bf16:
            // through f64, exact for integers of up to 32 bits.
            let via = if to == ScalarTy::F16 {
                ScalarTy::F32
            } else {
                ScalarTy::F64
            };
            let w = self.cast_value(v, from, via)?;
            return self.round_to_half(w.into_float_value(), to);
        }
        // 64-bit integers to bf16: to f32 rounding to odd, then to nearest.
        let sign = if from.is_signed_int() { "s" } else { "u" };
        let f32t = self.ctx.f32_type();
        let text = format!(
            "{{ .reg .b64 %cj_back; .reg .b32 %cj_b; .reg .pred %cj_in; \
             cvt.rz.f32.{sign}64 $0, $1; cvt.rzi.{sign}64.f32 %cj_back, $0; \
             setp.ne.b64 %cj_in, %cj_back, $1; mov.b32 %cj_b, $0; or.b32 %cj_b, %cj_b, 1; \
             @%cj_in mov.b32 $0, %cj_b; }}"
        );
        let w = self.cvt_asm(v, f32t.into(), text, "=&f,l".to_string())?;
        self.round_to_half(w.into_float_value(), to)
    }
}
