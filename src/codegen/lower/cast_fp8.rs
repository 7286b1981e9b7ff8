//! Casts to and from the 8-bit floats (`F8E4M3`, `F8E5M2`), through PTX's `cvt` to and from
//! `e4m3x2`/`e5m2x2` (compute capability 8.9 and later).
//!
//! From fp8: the exact f16 (`cvt.rn.f16x2.e4m3x2`; an e5m2 byte is the high byte of its f16),
//! then the f16's cast. To fp8: the value as f32 (Rust's `as`, exact or saturating-far for every
//! source but f64), then `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`: round to nearest even, finite
//! values and ±∞ beyond the largest finite one saturating to it, NaN to NaN. An f64 goes to f32
//! rounding to odd first (`cvt.rz`, then the last bit set when inexact), so that the two
//! roundings give the f64's own nearest fp8 (24 bits hold the 3 of e4m3 plus two).

use super::*;

impl<'c> Lowerer<'c, '_> {
    /// Rust `as` semantics where `from` or `to` is an 8-bit float.
    pub(crate) fn fp8_cast(
        &mut self,
        v: BasicValueEnum<'c>,
        from: ScalarTy,
        to: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let sm = self.opts.sm();
        if sm < (8, 9) {
            let ty = if from.is_fp8() { from } else { to };
            return Err(unsupported_err(
                &self.f.name,
                format!(
                    "a cast {} {} (or a comparison of them) needs compute capability 8.9 or later \
                     (PTX's cvt to and from e4m3x2/e5m2x2), and this kernel is compiled for \
                     sm_{}{}: run it on an Ada or Hopper GPU (or set PtxOptions::cc), or decode \
                     the bits yourself",
                    if from.is_fp8() { "from" } else { "to" },
                    ty.name(),
                    sm.0,
                    sm.1
                ),
            ));
        }
        if from.is_fp8() {
            let h = self.fp8_to_f16(v, from)?;
            return if to == ScalarTy::F16 {
                Ok(h)
            } else {
                self.half_cast(h, ScalarTy::F16, to)
            };
        }
        let i16t = self.ctx.i16_type();
        let fmt = if to == ScalarTy::F8E4M3 {
            "e4m3x2"
        } else {
            "e5m2x2"
        };
        let packed = if from == ScalarTy::F64 {
            self.cvt_asm(
                v,
                i16t.into(),
                format!(
                    "{{ .reg .f32 %cj_f; .reg .f64 %cj_back; .reg .pred %cj_in; .reg .b32 %cj_b; \
                     cvt.rz.f32.f64 %cj_f, $1; cvt.f64.f32 %cj_back, %cj_f; \
                     setp.ne.f64 %cj_in, %cj_back, $1; mov.b32 %cj_b, %cj_f; \
                     or.b32 %cj_b, %cj_b, 1; @%cj_in mov.b32 %cj_f, %cj_b; \
                     cvt.rn.satfinite.{fmt}.f32 $0, %cj_f, %cj_f; }}"
                ),
                "=h,d".to_string(),
            )?
        } else {
            let w = self.cast_value(v, from, ScalarTy::F32)?;
            self.cvt_asm(
                w,
                i16t.into(),
                format!("cvt.rn.satfinite.{fmt}.f32 $0, $1, $1;"),
                "=h,f".to_string(),
            )?
        };
        Ok(ll!(
            self,
            self.b
                .build_int_truncate(packed.into_int_value(), self.ctx.i8_type(), "")
        )
        .into())
    }

    /// The exact f16 of an fp8 byte.
    fn fp8_to_f16(&mut self, v: BasicValueEnum<'c>, from: ScalarTy) -> Result<BasicValueEnum<'c>> {
        let i16t = self.ctx.i16_type();
        let wide = ll!(
            self,
            self.b.build_int_z_extend(v.into_int_value(), i16t, "")
        );
        if from == ScalarTy::F8E5M2 {
            // e5m2 is f16 with its low byte dropped.
            let hi = ll!(
                self,
                self.b.build_left_shift(wide, i16t.const_int(8, false), "")
            );
            return Ok(ll!(
                self,
                self.b.build_bit_cast(hi, self.ctx.f16_type(), "")
            ));
        }
        self.cvt_asm(
            wide.into(),
            self.ctx.f16_type().into(),
            "{ .reg .b32 %cj_p; .reg .b16 %cj_hi; cvt.rn.f16x2.e4m3x2 %cj_p, $1; \
             mov.b32 {$0, %cj_hi}, %cj_p; }"
                .to_string(),
            "=h,h".to_string(),
        )
    }
}
