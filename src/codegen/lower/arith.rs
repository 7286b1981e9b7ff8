//! Lowering of arithmetic: unary and binary operations (integer division and float remainder
//! with Rust's semantics), comparisons.

use super::*;

impl<'c> Lowerer<'c, '_> {
    pub(super) fn unary(
        &mut self,
        u: UnOp,
        a: ValueId,
        ty: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let v = self.v(a)?;
        Ok(match (u, ty.is_float()) {
            (UnOp::Neg, true) => ll!(self, self.b.build_float_neg(v.into_float_value(), "")).into(),
            (UnOp::Neg, false) => ll!(self, self.b.build_int_neg(v.into_int_value(), "")).into(),
            (UnOp::Not, _) => ll!(self, self.b.build_not(v.into_int_value(), "")).into(),
        })
    }

    pub(super) fn binary(
        &mut self,
        o: BinOp,
        a: ValueId,
        b: ValueId,
        ty: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let (x, y) = (self.v(a)?, self.v(b)?);
        if ty.is_half() {
            return self.half_binary(o, x.into_float_value(), y.into_float_value(), ty);
        }
        if ty.is_float() {
            let (x, y) = (x.into_float_value(), y.into_float_value());
            let r: BasicValueEnum = match o {
                BinOp::Add => ll!(self, self.b.build_float_add(x, y, "")).into(),
                BinOp::Sub => ll!(self, self.b.build_float_sub(x, y, "")).into(),
                BinOp::Mul => ll!(self, self.b.build_float_mul(x, y, "")).into(),
                BinOp::Div if self.opts.fastmath && ty == ScalarTy::F32 => {
                    // Approximate division (2 ulp), as CUDA's `--use_fast_math`.
                    return self
                        .call(
                            "llvm.nvvm.div.approx.ftz.f",
                            Some(x.get_type().into()),
                            &[x.into(), y.into()],
                        )?
                        .ok_or_else(|| self.err("div.approx returned nothing"));
                }
                BinOp::Div => ll!(self, self.b.build_float_div(x, y, "")).into(),
                BinOp::Rem => self.float_rem(x, y, ty)?,
                BinOp::Min | BinOp::Max => {
                    // PTX min/max.f32/f64 (what llvm.minnum/maxnum lower to) as inline assembly:
                    // LLVM 19's InstSimplify crashes on min/max next to another intrinsic over
                    // the same operands, e.g. `maxnum(maxnum(a, b), fma(b, a, a))`
                    // (llvm-project#173705; found by the fuzzer), and NVVM's own fmin/fmax
                    // intrinsics are turned back into minnum/maxnum by InstCombine.
                    let f32 = ty == ScalarTy::F32;
                    let op = if o == BinOp::Min { "min" } else { "max" };
                    let ftz = if f32 && self.opts.fastmath {
                        ".ftz"
                    } else {
                        ""
                    };
                    let (t, c) = if f32 { ("f32", "f") } else { ("f64", "d") };
                    let ft = x.get_type();
                    let fty = ft.fn_type(&[ft.into(), ft.into()], false);
                    let asm = self.ctx.create_inline_asm(
                        fty,
                        format!("{op}{ftz}.{t} $0, $1, $2;"),
                        format!("={c},{c},{c}"),
                        false,
                        false,
                        None,
                        false,
                    );
                    let call = ll!(
                        self,
                        self.b
                            .build_indirect_call(fty, asm, &[x.into(), y.into()], "")
                    );
                    return call
                        .try_as_basic_value()
                        .basic()
                        .ok_or_else(|| self.err("min/max returned nothing"));
                }
                _ => return Err(self.err(format!("{o:?} on floats"))),
            };
            return Ok(self.fast(r));
        }
        let (x, y) = (x.into_int_value(), y.into_int_value());
        let it = x.get_type();
        let signed = ty.is_signed_int();
        let bits = it.get_bit_width() as u64;
        Ok(match o {
            BinOp::Add => ll!(self, self.b.build_int_add(x, y, "")).into(),
            BinOp::Sub => ll!(self, self.b.build_int_sub(x, y, "")).into(),
            BinOp::Mul => ll!(self, self.b.build_int_mul(x, y, "")).into(),
            BinOp::And => ll!(self, self.b.build_and(x, y, "")).into(),
            BinOp::Or => ll!(self, self.b.build_or(x, y, "")).into(),
            BinOp::Xor => ll!(self, self.b.build_xor(x, y, "")).into(),
            BinOp::Shl | BinOp::Shr => {
                let amt = ll!(self, self.b.build_and(y, it.const_int(bits - 1, false), ""));
                match o {
                    BinOp::Shl => ll!(self, self.b.build_left_shift(x, amt, "")).into(),
                    _ => ll!(self, self.b.build_right_shift(x, amt, signed, "")).into(),
                }
            }
            BinOp::Min | BinOp::Max => {
                let pred = match (o, signed) {
                    (BinOp::Min, true) => IntPredicate::SLT,
                    (BinOp::Min, false) => IntPredicate::ULT,
                    (_, true) => IntPredicate::SGT,
                    (_, false) => IntPredicate::UGT,
                };
                let c = ll!(self, self.b.build_int_compare(pred, x, y, ""));
                ll!(self, self.b.build_select(c, x, y, ""))
            }
            BinOp::Div | BinOp::Rem => self.int_div(o == BinOp::Div, x, y, signed)?,
        })
    }

    /// An alloca in the entry block (where mem2reg promotes it).
    pub(crate) fn entry_alloca(&self, ty: BasicTypeEnum<'c>) -> Result<PointerValue<'c>> {
        let entry = self
            .func
            .get_first_basic_block()
            .ok_or_else(|| self.err("function without an entry block"))?;
        let b = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => b.position_before(&i),
            None => b.position_at_end(entry),
        }
        Ok(ll!(self, b.build_alloca(ty, "tmp")))
    }

    /// Exact floating-point remainder (C's `fmod`, Rust's `%`): LLVM's `frem` is lowered by
    /// NVPTX as `x - trunc(x / y) * y`, which is wrong for large quotients. Subtracts `y`
    /// scaled by powers of two, largest first; each subtraction is exact (Sterbenz). Both loops
    /// are also bounded by a count (more steps than any finite operands take: twice the binades
    /// from the smallest subnormal to MAX), so that they end under fastmath too, where LLVM may take `|x| < inf`
    /// for true and flushing makes `t + t` zero (the whole-language campaign's fastmath trees
    /// never finished on the GPU).
    pub(crate) fn float_rem(
        &mut self,
        x: inkwell::values::FloatValue<'c>,
        y: inkwell::values::FloatValue<'c>,
        ty: ScalarTy,
    ) -> Result<BasicValueEnum<'c>> {
        let ft = x.get_type();
        let sfx = if ty == ScalarTy::F32 { "f32" } else { "f64" };
        let fabs = |lw: &Self,
                    v: inkwell::values::FloatValue<'c>|
         -> Result<inkwell::values::FloatValue<'c>> {
            Ok(lw
                .call(&format!("llvm.fabs.{sfx}"), Some(ft.into()), &[v.into()])?
                .ok_or_else(|| lw.err("fabs returned nothing"))?
                .into_float_value())
        };
        let (ax, ay) = (fabs(self, x)?, fabs(self, y)?);
        let (r, t) = (self.entry_alloca(ft.into())?, self.entry_alloca(ft.into())?);
        let out = self.entry_alloca(ft.into())?;
        let i32t = self.ctx.i32_type();
        let steps = self.entry_alloca(i32t.into())?;
        // Each loop runs at most once per binade between the smallest subnormal and MAX (277 for
        // f32, 2098 for f64), and they share the count.
        let bound = i32t.const_int(if ty == ScalarTy::F32 { 600 } else { 4400 }, false);
        let bb = |n: &str| self.ctx.append_basic_block(self.func, n);
        let (special, finite_y, dbl_head, dbl_body, sub_head, sub_body, done, end) = (
            bb("rem.special"),
            bb("rem.finite"),
            bb("rem.dbl"),
            bb("rem.dbl.body"),
            bb("rem.sub"),
            bb("rem.sub.body"),
            bb("rem.done"),
            bb("rem.end"),
        );
        let inf = ft.const_float(f64::INFINITY);
        // NaN result when y is 0 or NaN, or x is infinite or NaN.
        let y_ok = ll!(
            self,
            self.b
                .build_float_compare(FloatPredicate::OGT, ay, ft.const_zero(), "")
        );
        let x_ok = ll!(
            self,
            self.b.build_float_compare(FloatPredicate::OLT, ax, inf, "")
        );
        let ok = ll!(self, self.b.build_and(y_ok, x_ok, ""));
        ll!(self, self.b.build_store(out, ft.const_float(f64::NAN)));
        ll!(self, self.b.build_conditional_branch(ok, finite_y, special));
        self.b.position_at_end(special);
        ll!(self, self.b.build_unconditional_branch(end));
        // y infinite: x; |x| < |y|: x.
        self.b.position_at_end(finite_y);
        ll!(self, self.b.build_store(out, x));
        let small = ll!(
            self,
            self.b.build_float_compare(FloatPredicate::OLT, ax, ay, "")
        );
        ll!(self, self.b.build_store(r, ax));
        ll!(self, self.b.build_store(t, ay));
        ll!(self, self.b.build_store(steps, i32t.const_zero()));
        ll!(self, self.b.build_conditional_branch(small, end, dbl_head));
        // One more step of a loop, and whether the count allows it.
        let step = |lw: &Self| -> Result<IntValue<'c>> {
            let n = ll!(lw, lw.b.build_load(i32t, steps, "")).into_int_value();
            let n1 = ll!(lw, lw.b.build_int_add(n, i32t.const_int(1, false), ""));
            ll!(lw, lw.b.build_store(steps, n1));
            Ok(ll!(
                lw,
                lw.b.build_int_compare(IntPredicate::ULT, n, bound, "")
            ))
        };
        // Double t while 2t <= r.
        self.b.position_at_end(dbl_head);
        let tv = ll!(self, self.b.build_load(ft, t, "")).into_float_value();
        let t2 = ll!(self, self.b.build_float_add(tv, tv, ""));
        let fits = ll!(
            self,
            self.b.build_float_compare(FloatPredicate::OLE, t2, ax, "")
        );
        let go = step(self)?;
        let fits = ll!(self, self.b.build_and(fits, go, ""));
        ll!(
            self,
            self.b.build_conditional_branch(fits, dbl_body, sub_head)
        );
        self.b.position_at_end(dbl_body);
        ll!(self, self.b.build_store(t, t2));
        ll!(self, self.b.build_unconditional_branch(dbl_head));
        // While t >= |y|: subtract t if it fits, halve t.
        self.b.position_at_end(sub_head);
        let tv = ll!(self, self.b.build_load(ft, t, "")).into_float_value();
        let more = ll!(
            self,
            self.b.build_float_compare(FloatPredicate::OGE, tv, ay, "")
        );
        let go = step(self)?;
        let more = ll!(self, self.b.build_and(more, go, ""));
        ll!(self, self.b.build_conditional_branch(more, sub_body, done));
        self.b.position_at_end(sub_body);
        let rv = ll!(self, self.b.build_load(ft, r, "")).into_float_value();
        let ge = ll!(
            self,
            self.b.build_float_compare(FloatPredicate::OGE, rv, tv, "")
        );
        let diff = ll!(self, self.b.build_float_sub(rv, tv, ""));
        let nr = ll!(self, self.b.build_select(ge, diff, rv, ""));
        ll!(self, self.b.build_store(r, nr));
        let half = ll!(self, self.b.build_float_mul(tv, ft.const_float(0.5), ""));
        ll!(self, self.b.build_store(t, half));
        ll!(self, self.b.build_unconditional_branch(sub_head));
        // The sign of x.
        self.b.position_at_end(done);
        let rv = ll!(self, self.b.build_load(ft, r, ""));
        let signed = self
            .call(
                &format!("llvm.copysign.{sfx}"),
                Some(ft.into()),
                &[rv, x.into()],
            )?
            .ok_or_else(|| self.err("copysign returned nothing"))?;
        ll!(self, self.b.build_store(out, signed));
        ll!(self, self.b.build_unconditional_branch(end));
        self.b.position_at_end(end);
        Ok(ll!(self, self.b.build_load(ft, out, "")))
    }

    /// Integer division with defined results for the cases LLVM leaves undefined.
    pub(super) fn int_div(
        &mut self,
        div: bool,
        x: IntValue<'c>,
        y: IntValue<'c>,
        signed: bool,
    ) -> Result<BasicValueEnum<'c>> {
        let it = x.get_type();
        let (zero, one, all_ones) = (it.const_zero(), it.const_int(1, false), it.const_all_ones());
        let y_zero = ll!(
            self,
            self.b.build_int_compare(IntPredicate::EQ, y, zero, "")
        );
        let mut bad = y_zero;
        if signed {
            let min = it.const_int(1u64 << (it.get_bit_width() - 1), false);
            let x_min = ll!(self, self.b.build_int_compare(IntPredicate::EQ, x, min, ""));
            let y_m1 = ll!(
                self,
                self.b.build_int_compare(IntPredicate::EQ, y, all_ones, "")
            );
            let ovf = ll!(self, self.b.build_and(x_min, y_m1, ""));
            bad = ll!(self, self.b.build_or(bad, ovf, ""));
        }
        // Divide by 1 where the real divisor would be undefined, then patch the result.
        let safe_y = ll!(self, self.b.build_select(bad, one, y, "")).into_int_value();
        let q = match (div, signed) {
            (true, true) => ll!(self, self.b.build_int_signed_div(x, safe_y, "")),
            (true, false) => ll!(self, self.b.build_int_unsigned_div(x, safe_y, "")),
            (false, true) => ll!(self, self.b.build_int_signed_rem(x, safe_y, "")),
            (false, false) => ll!(self, self.b.build_int_unsigned_rem(x, safe_y, "")),
        };
        // x / 0 = all ones; x % 0 = x; MIN / -1 = MIN (x / 1); MIN % -1 = 0 (x % 1).
        let on_zero = if div { all_ones } else { x };
        Ok(ll!(self, self.b.build_select(y_zero, on_zero, q, "")))
    }

    pub(super) fn compare(
        &mut self,
        c: CmpOp,
        a: ValueId,
        b: ValueId,
    ) -> Result<BasicValueEnum<'c>> {
        let ty = self.ty(a);
        let (mut x, mut y) = (self.v(a)?, self.v(b)?);
        if ty == ScalarTy::BF16 && self.opts.fastmath {
            // LLVM 19 would emit `setp.*.ftz.bf16` with fastmath, which ptxas rejects: compare
            // the values widened (exactly) to f32 instead, with f32's fastmath semantics. The
            // widening is by bits: LLVM folds a compare of two `fpext`s back into a bf16 one.
            x = self.bf16_bits_to_f32(x)?;
            y = self.bf16_bits_to_f32(y)?;
        }
        if ty.is_float() {
            let p = match c {
                CmpOp::Eq => FloatPredicate::OEQ,
                CmpOp::Ne => FloatPredicate::UNE,
                CmpOp::Lt => FloatPredicate::OLT,
                CmpOp::Le => FloatPredicate::OLE,
                CmpOp::Gt => FloatPredicate::OGT,
                CmpOp::Ge => FloatPredicate::OGE,
            };
            let r = ll!(
                self,
                self.b
                    .build_float_compare(p, x.into_float_value(), y.into_float_value(), "")
            );
            return Ok(r.into());
        }
        let s = ty.is_signed_int();
        let p = match c {
            CmpOp::Eq => IntPredicate::EQ,
            CmpOp::Ne => IntPredicate::NE,
            CmpOp::Lt if s => IntPredicate::SLT,
            CmpOp::Lt => IntPredicate::ULT,
            CmpOp::Le if s => IntPredicate::SLE,
            CmpOp::Le => IntPredicate::ULE,
            CmpOp::Gt if s => IntPredicate::SGT,
            CmpOp::Gt => IntPredicate::UGT,
            CmpOp::Ge if s => IntPredicate::SGE,
            CmpOp::Ge => IntPredicate::UGE,
        };
        Ok(ll!(
            self,
            self.b
                .build_int_compare(p, x.into_int_value(), y.into_int_value(), "")
        )
        .into())
    }
}
