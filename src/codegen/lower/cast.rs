//! Lowering of casts between scalar types (Rust's `as`), some through inline PTX conversions.

use super::*;

impl<'c> Lowerer<'c, '_> {
    /// A one-operand conversion written as inline PTX (`text` with `$0` = result, `$1` = `v`).
    pub(crate) fn cvt_asm(
        &mut self,
        v: BasicValueEnum<'c>,
        rt: BasicTypeEnum<'c>,
        text: String,
        constraints: String,
    ) -> Result<BasicValueEnum<'c>> {
        let fty = rt.fn_type(&[v.get_type().into()], false);
        let asm = self
            .ctx
            .create_inline_asm(fty, text, constraints, false, false, None, false);
        let call = ll!(self, self.b.build_indirect_call(fty, asm, &[v.into()], ""));
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| self.err("conversion returned nothing"))
    }

    /// Rust `as` semantics between any two scalar types.
    pub(super) fn cast(&mut self, a: ValueId, to: ScalarTy) -> Result<BasicValueEnum<'c>> {
        let from = self.ty(a);
        let v = self.v(a)?;
        self.cast_value(v, from, to)
    }

    /// Rust `as` semantics of the value `v` of type `from` to `to`.
    pub(crate) fn cast_value(
        &mut self,
        v: BasicValueEnum<'c>,
        from: ScalarTy,
        to: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let rt = reg_type(self.ctx, to);
        if from == to {
            return Ok(v);
        }
        if from.is_fp8() || to.is_fp8() {
            return self.fp8_cast(v, from, to);
        }
        if from.is_half() || to.is_half() {
            return self.half_cast(v, from, to);
        }
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => ll!(
                self,
                self.b
                    .build_float_cast(v.into_float_value(), rt.into_float_type(), "")
            )
            .into(),
            // Ints to floats as PTX `cvt.rn` (inline assembly), constants left to LLVM: LLVM 19
            // folds `sitofp (sext i1 b)` into `sitofp i1 b` and the NVPTX back end lowers that
            // as if unsigned, giving 1.0 where -1.0 is right (found by the fuzzer, seed
            // 11500273: a division by zero's all-ones result cast to f32).
            // Narrow integers are extended to 32 bits first (by their signedness), which is
            // exact.
            (false, true)
                if (from.size() >= 4 || from.is_narrow_int()) && !v.into_int_value().is_const() =>
            {
                let (ft, fc) = if to == ScalarTy::F32 {
                    ("f32", "f")
                } else {
                    ("f64", "d")
                };
                let sign = if from.is_signed_int() { "s" } else { "u" };
                let (bits, ic) = if from.size() == 8 {
                    (64, "l")
                } else {
                    (32, "r")
                };
                let v: BasicValueEnum<'c> = if from.is_narrow_int() {
                    let (x, i32t) = (v.into_int_value(), self.ctx.i32_type());
                    if from.is_signed_int() {
                        ll!(self, self.b.build_int_s_extend(x, i32t, "")).into()
                    } else {
                        ll!(self, self.b.build_int_z_extend(x, i32t, "")).into()
                    }
                } else {
                    v
                };
                self.cvt_asm(
                    v,
                    rt,
                    format!("cvt.rn.{ft}.{sign}{bits} $0, $1;"),
                    format!("={fc},{ic}"),
                )?
            }
            (false, true) => {
                let signed = from.is_signed_int();
                if signed {
                    ll!(
                        self,
                        self.b.build_signed_int_to_float(
                            v.into_int_value(),
                            rt.into_float_type(),
                            ""
                        )
                    )
                    .into()
                } else {
                    ll!(
                        self,
                        self.b.build_unsigned_int_to_float(
                            v.into_int_value(),
                            rt.into_float_type(),
                            ""
                        )
                    )
                    .into()
                }
            }
            (true, false) if to == ScalarTy::Bool => {
                let zero = v.into_float_value().get_type().const_zero();
                ll!(
                    self,
                    self.b
                        .build_float_compare(FloatPredicate::UNE, v.into_float_value(), zero, "")
                )
                .into()
            }
            // (A constant is left to LLVM, which folds it: kept as a `cvt`, the PTX compiler's
            // folding of it exposed another of its bugs, seed 11300214.)
            (true, false) if to.size() >= 4 && !v.into_float_value().is_const() => {
                // Rust's `as` (toward zero, saturating, NaN gives 0) is PTX's `cvt.rzi` (which
                // saturates; a NaN gives the type's MIN or 2^31/2^63 on the H200, so a select
                // makes it 0), emitted as inline assembly: LLVM's expansion of `fpto*i.sat`
                // clamps with max/min first, and the PTX compiler reorders that clamp with a
                // `min`/`max` before it, wrong for NaN (`(1.0f64.min(NaN)) as u32` gave 0;
                // found by the fuzzer, seed 8300275).
                let (src, c) = if from == ScalarTy::F32 {
                    ("f32", "f")
                } else {
                    ("f64", "d")
                };
                let sign = if to.is_signed_int() { "s" } else { "u" };
                let (bits, rc) = if to.size() == 8 { (64, "l") } else { (32, "r") };
                self.cvt_asm(
                    v,
                    rt,
                    format!(
                        "{{ .reg .pred %cj_nan; cvt.rzi.{sign}{bits}.{src} $0, $1; \
                         setp.nan.{src} %cj_nan, $1, $1; selp.b{bits} $0, 0, $0, %cj_nan; }}"
                    ),
                    format!("={rc},{c}"),
                )?
            }
            // Narrow integers: the saturating 32-bit conversion, clamped to the narrow type's
            // range (saturation is monotonic, so this is Rust's `as`), then truncated; all in
            // one piece of inline assembly for the reason above.
            (true, false) if to.is_narrow_int() && !v.into_float_value().is_const() => {
                let (src, c) = if from == ScalarTy::F32 {
                    ("f32", "f")
                } else {
                    ("f64", "d")
                };
                let w = to.size() as u32 * 8;
                let (sign, lo, hi) = if to.is_signed_int() {
                    ("s", -(1i64 << (w - 1)), (1i64 << (w - 1)) - 1)
                } else {
                    ("u", 0, (1i64 << w) - 1)
                };
                let i32t = self.ctx.i32_type();
                let r = self.cvt_asm(
                    v,
                    i32t.into(),
                    format!(
                        "{{ .reg .pred %cj_nan; cvt.rzi.{sign}32.{src} $0, $1; \
                         setp.nan.{src} %cj_nan, $1, $1; selp.b32 $0, 0, $0, %cj_nan; \
                         max.{sign}32 $0, $0, {lo}; min.{sign}32 $0, $0, {hi}; }}"
                    ),
                    format!("=r,{c}"),
                )?;
                ll!(
                    self,
                    self.b
                        .build_int_truncate(r.into_int_value(), rt.into_int_type(), "")
                )
                .into()
            }
            (true, false) => {
                // Saturating conversion (NaN gives 0), as Rust's `as`.
                let name = format!(
                    "llvm.fpto{}i.sat.i{}.{}",
                    if to.is_signed_int() { "s" } else { "u" },
                    to.size() * 8,
                    if from == ScalarTy::F32 { "f32" } else { "f64" }
                );
                self.call(&name, Some(rt), &[v])?
                    .ok_or_else(|| self.err("fpto*i.sat returned nothing"))?
            }
            (false, false) => {
                let x = v.into_int_value();
                let it = rt.into_int_type();
                if to == ScalarTy::Bool {
                    let zero = x.get_type().const_zero();
                    return Ok(ll!(
                        self,
                        self.b.build_int_compare(IntPredicate::NE, x, zero, "")
                    )
                    .into());
                }
                let (fw, tw) = (x.get_type().get_bit_width(), it.get_bit_width());
                if fw == tw {
                    x.into()
                } else if fw > tw {
                    ll!(self, self.b.build_int_truncate(x, it, "")).into()
                } else if from.is_signed_int() {
                    ll!(self, self.b.build_int_s_extend(x, it, "")).into()
                } else {
                    ll!(self, self.b.build_int_z_extend(x, it, "")).into()
                }
            }
        })
    }
}
