//! Emitting cudajit's own math implementations as LLVM IR: each function and type becomes one
//! internal LLVM function per module (`__cudajit_exp_f32`, ...), built on first use by running
//! the algorithm in `alg.rs` with an `Ops` that emits instructions; the O3 inliner then decides
//! where to inline it. With fastmath, f32 exp/ln/log2/log10/powf/sin/cos/tan use the hardware
//! approximations inline instead.

use std::cell::RefCell;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FloatType, IntType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

use super::super::lower::Lowerer;
use super::super::scalar::ScalarTy;
use super::alg::{self, Ops, Own};
use super::{intrinsic, kernel_err, own_fn, MathFn};
use crate::error::Result;

/// Lowers `f` with cudajit's own implementation (`fast`: f32 with fastmath).
pub(crate) fn own<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    f64: bool,
    fast: bool,
    vals: &[BasicValueEnum<'c>],
) -> Result<BasicValueEnum<'c>> {
    if fast {
        if let Some(v) = fast_approx(lw, f, vals)? {
            return Ok(v);
        }
    }
    let Some(which) = own_fn(f) else {
        return Err(kernel_err(
            lw,
            format!(
                "cudajit has no own implementation of `{}` for {}: install libdevice (the CUDA \
                 toolkit, or `pip install nvidia-cuda-nvcc-cu12`) or set CUDAJIT_LIBDEVICE to \
                 libdevice.10.bc",
                f.method(),
                if f64 { "f64" } else { "f32" }
            ),
        ));
    };
    let ty = if f64 { ScalarTy::F64 } else { ScalarTy::F32 };
    let name = format!("__cudajit_{}_{}", f.method(), ty.name());
    if lw.module.get_function(&name).is_none() {
        build(lw.ctx, lw.module, &name, which, f64, lw.opts.fastmath)
            .map_err(|e| kernel_err(lw, format!("internal: building `{name}`: {e}")))?;
    }
    intrinsic(lw, &name, ty, vals)
}

/// The f32 fastmath forms on the hardware approximations (CUDA's `__expf`, `__logf`, ...).
fn fast_approx<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    vals: &[BasicValueEnum<'c>],
) -> Result<Option<BasicValueEnum<'c>>> {
    let f32t = lw.ctx.f32_type();
    let c = |v: f64| -> BasicValueEnum<'c> { f32t.const_float(v).into() };
    let ll = |lw: &Lowerer<'c, '_>, r: std::result::Result<FloatValue<'c>, BuilderError>| {
        r.map(BasicValueEnum::from)
            .map_err(|e| kernel_err(lw, format!("internal: {e}")))
    };
    let mul = |lw: &Lowerer<'c, '_>, a: BasicValueEnum<'c>, b: BasicValueEnum<'c>| {
        ll(
            lw,
            lw.b.build_float_mul(a.into_float_value(), b.into_float_value(), ""),
        )
    };
    let t = ScalarTy::F32;
    let ex2 = "llvm.nvvm.ex2.approx.ftz.f";
    let lg2 = "llvm.nvvm.lg2.approx.ftz.f";
    let log2e = std::f64::consts::LOG2_E;
    Ok(Some(match f {
        MathFn::Exp => {
            let a = mul(lw, vals[0], c(log2e))?;
            intrinsic(lw, ex2, t, &[a])?
        }
        MathFn::Ln | MathFn::Log2 | MathFn::Log10 => {
            let l = intrinsic(lw, lg2, t, &vals[..1])?;
            match f {
                MathFn::Ln => mul(lw, l, c(std::f64::consts::LN_2))?,
                MathFn::Log10 => mul(lw, l, c(std::f64::consts::LOG10_2))?,
                _ => l,
            }
        }
        MathFn::Pow => {
            // CUDA's __powf: 2^(y log2 x); y = 0 and x = 1 still give 1.
            let l = intrinsic(lw, lg2, t, &vals[..1])?;
            let p = mul(lw, vals[1], l)?;
            let r = intrinsic(lw, ex2, t, &[p])?.into_float_value();
            let one = f32t.const_float(1.0);
            let zero = f32t.const_float(0.0);
            let b = &lw.b;
            let y0 =
                b.build_float_compare(FloatPredicate::OEQ, vals[1].into_float_value(), zero, "");
            let x1 =
                b.build_float_compare(FloatPredicate::OEQ, vals[0].into_float_value(), one, "");
            let sel = (|| -> std::result::Result<BasicValueEnum<'c>, BuilderError> {
                let c = b.build_or(y0?, x1?, "")?;
                b.build_select(c, one, r, "")
            })();
            sel.map_err(|e| kernel_err(lw, format!("internal: {e}")))?
        }
        MathFn::Sin => intrinsic(lw, "llvm.nvvm.sin.approx.ftz.f", t, &vals[..1])?,
        MathFn::Cos => intrinsic(lw, "llvm.nvvm.cos.approx.ftz.f", t, &vals[..1])?,
        MathFn::Tan => {
            let s = intrinsic(lw, "llvm.nvvm.sin.approx.ftz.f", t, &vals[..1])?;
            let co = intrinsic(lw, "llvm.nvvm.cos.approx.ftz.f", t, &vals[..1])?;
            intrinsic(lw, "llvm.nvvm.div.approx.ftz.f", t, &[s, co])?
        }
        _ => return Ok(None),
    }))
}

/// Builds the internal function `name` computing `which` on f32 or f64.
fn build<'c>(
    ctx: &'c Context,
    module: &Module<'c>,
    name: &str,
    which: Own,
    f64: bool,
    fastmath: bool,
) -> std::result::Result<(), String> {
    let ft: BasicTypeEnum = if f64 {
        ctx.f64_type().into()
    } else {
        ctx.f32_type().into()
    };
    let two = matches!(which, Own::Pow | Own::Atan2);
    let params: Vec<BasicMetadataTypeEnum> = if two {
        vec![ft.into(), ft.into()]
    } else {
        vec![ft.into()]
    };
    let fty = ft.into_float_type().fn_type(&params, false);
    let func = module.add_function(name, fty, Some(Linkage::Internal));
    let attr = |n: &str, v: u64| ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(n), v);
    for (n, v) in [
        ("nounwind", 0),
        ("willreturn", 0),
        ("nosync", 0),
        ("memory", 0),
    ] {
        func.add_attribute(AttributeLoc::Function, attr(n, v));
    }
    if fastmath {
        func.add_attribute(
            AttributeLoc::Function,
            ctx.create_string_attribute("denormal-fp-math-f32", "preserve-sign,preserve-sign"),
        );
    }
    let entry = ctx.append_basic_block(func, "entry");
    let b = ctx.create_builder();
    b.position_at_end(entry);
    let x = func
        .get_nth_param(0)
        .ok_or("missing parameter")?
        .into_float_value();
    let y = if two {
        func.get_nth_param(1)
            .ok_or("missing parameter")?
            .into_float_value()
    } else {
        x
    };
    let ops = Llvm {
        ctx,
        module,
        b,
        double: f64,
        err: RefCell::new(None),
    };
    let r = alg::eval(&ops, which, x, y);
    if let Some(e) = ops.err.borrow_mut().take() {
        return Err(e);
    }
    ops.b.build_return(Some(&r)).map_err(|e| e.to_string())?;
    Ok(())
}

/// `Ops` that emits LLVM instructions at the builder's position.
struct Llvm<'a, 'c> {
    ctx: &'c Context,
    module: &'a Module<'c>,
    b: Builder<'c>,
    double: bool,
    /// The first builder error (then the results are undef and the build fails).
    err: RefCell<Option<String>>,
}

impl<'c> Llvm<'_, 'c> {
    fn ft(&self) -> FloatType<'c> {
        if self.double {
            self.ctx.f64_type()
        } else {
            self.ctx.f32_type()
        }
    }
    fn it(&self) -> IntType<'c> {
        if self.double {
            self.ctx.i64_type()
        } else {
            self.ctx.i32_type()
        }
    }
    fn sfx(&self) -> &'static str {
        if self.double {
            "f64"
        } else {
            "f32"
        }
    }
    fn note(&self, e: impl std::fmt::Display) {
        let mut err = self.err.borrow_mut();
        if err.is_none() {
            *err = Some(e.to_string());
        }
    }
    fn f(&self, r: std::result::Result<FloatValue<'c>, BuilderError>) -> FloatValue<'c> {
        r.unwrap_or_else(|e| {
            self.note(e);
            self.ft().get_undef()
        })
    }
    fn i(&self, r: std::result::Result<IntValue<'c>, BuilderError>) -> IntValue<'c> {
        r.unwrap_or_else(|e| {
            self.note(e);
            self.it().get_undef()
        })
    }
    fn bl(&self, r: std::result::Result<IntValue<'c>, BuilderError>) -> IntValue<'c> {
        r.unwrap_or_else(|e| {
            self.note(e);
            self.ctx.bool_type().get_undef()
        })
    }
    /// Calls an intrinsic returning `ret`.
    fn call(
        &self,
        name: &str,
        ret: BasicTypeEnum<'c>,
        args: &[BasicValueEnum<'c>],
    ) -> Option<BasicValueEnum<'c>> {
        let f = self.module.get_function(name).unwrap_or_else(|| {
            let ptys: Vec<BasicMetadataTypeEnum> =
                args.iter().map(|a| a.get_type().into()).collect();
            self.module
                .add_function(name, ret.fn_type(&ptys, false), None)
        });
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        match self.b.build_call(f, &margs, "") {
            Ok(c) => {
                let v = c.try_as_basic_value().basic();
                if v.is_none() {
                    self.note(format!("`{name}` returned nothing"));
                }
                v
            }
            Err(e) => {
                self.note(e);
                None
            }
        }
    }
    fn fcall(&self, name: &str, args: &[FloatValue<'c>]) -> FloatValue<'c> {
        let a: Vec<BasicValueEnum> = args.iter().map(|&v| v.into()).collect();
        let name = format!("llvm.{name}.{}", self.sfx());
        self.call(&name, self.ft().into(), &a)
            .map_or_else(|| self.ft().get_undef(), |v| v.into_float_value())
    }
    fn fcmp(&self, p: FloatPredicate, a: FloatValue<'c>, b: FloatValue<'c>) -> IntValue<'c> {
        self.bl(self.b.build_float_compare(p, a, b, ""))
    }
    fn icmp(&self, p: IntPredicate, a: IntValue<'c>, b: IntValue<'c>) -> IntValue<'c> {
        self.bl(self.b.build_int_compare(p, a, b, ""))
    }
}

impl<'c> Ops for Llvm<'_, 'c> {
    type F = FloatValue<'c>;
    type I = IntValue<'c>;
    type B = IntValue<'c>;
    fn double(&self) -> bool {
        self.double
    }
    fn c(&self, v: f64) -> Self::F {
        if self.double {
            self.ft().const_float(v)
        } else {
            // Round to f32 here: LLVM would otherwise see the f64 value.
            self.ft().const_float(v as f32 as f64)
        }
    }
    fn ci(&self, v: i64) -> Self::I {
        self.it().const_int(v as u64, true)
    }
    fn add(&self, a: Self::F, b: Self::F) -> Self::F {
        self.f(self.b.build_float_add(a, b, ""))
    }
    fn sub(&self, a: Self::F, b: Self::F) -> Self::F {
        self.f(self.b.build_float_sub(a, b, ""))
    }
    fn mul(&self, a: Self::F, b: Self::F) -> Self::F {
        self.f(self.b.build_float_mul(a, b, ""))
    }
    fn div(&self, a: Self::F, b: Self::F) -> Self::F {
        self.f(self.b.build_float_div(a, b, ""))
    }
    fn neg(&self, a: Self::F) -> Self::F {
        self.f(self.b.build_float_neg(a, ""))
    }
    fn fma(&self, a: Self::F, b: Self::F, c: Self::F) -> Self::F {
        self.fcall("fma", &[a, b, c])
    }
    fn sqrt(&self, a: Self::F) -> Self::F {
        self.fcall("sqrt", &[a])
    }
    fn abs(&self, a: Self::F) -> Self::F {
        self.fcall("fabs", &[a])
    }
    fn rint(&self, a: Self::F) -> Self::F {
        self.fcall("rint", &[a])
    }
    fn floor(&self, a: Self::F) -> Self::F {
        self.fcall("floor", &[a])
    }
    fn copysign(&self, a: Self::F, sign: Self::F) -> Self::F {
        self.fcall("copysign", &[a, sign])
    }
    fn fmin(&self, a: Self::F, b: Self::F) -> Self::F {
        self.fcall("minnum", &[a, b])
    }
    fn fmax(&self, a: Self::F, b: Self::F) -> Self::F {
        self.fcall("maxnum", &[a, b])
    }
    fn lt(&self, a: Self::F, b: Self::F) -> Self::B {
        self.fcmp(FloatPredicate::OLT, a, b)
    }
    fn le(&self, a: Self::F, b: Self::F) -> Self::B {
        self.fcmp(FloatPredicate::OLE, a, b)
    }
    fn gt(&self, a: Self::F, b: Self::F) -> Self::B {
        self.fcmp(FloatPredicate::OGT, a, b)
    }
    fn eq(&self, a: Self::F, b: Self::F) -> Self::B {
        self.fcmp(FloatPredicate::OEQ, a, b)
    }
    fn is_nan(&self, a: Self::F) -> Self::B {
        self.fcmp(FloatPredicate::UNO, a, a)
    }
    fn sel(&self, c: Self::B, a: Self::F, b: Self::F) -> Self::F {
        match self.b.build_select(c, a, b, "") {
            Ok(v) => v.into_float_value(),
            Err(e) => {
                self.note(e);
                self.ft().get_undef()
            }
        }
    }
    fn seli(&self, c: Self::B, a: Self::I, b: Self::I) -> Self::I {
        match self.b.build_select(c, a, b, "") {
            Ok(v) => v.into_int_value(),
            Err(e) => {
                self.note(e);
                self.it().get_undef()
            }
        }
    }
    fn bits(&self, a: Self::F) -> Self::I {
        match self.b.build_bit_cast(a, self.it(), "") {
            Ok(v) => v.into_int_value(),
            Err(e) => {
                self.note(e);
                self.it().get_undef()
            }
        }
    }
    fn from_bits(&self, a: Self::I) -> Self::F {
        match self.b.build_bit_cast(a, self.ft(), "") {
            Ok(v) => v.into_float_value(),
            Err(e) => {
                self.note(e);
                self.ft().get_undef()
            }
        }
    }
    fn to_int(&self, a: Self::F) -> Self::I {
        let bits = if self.double { 64 } else { 32 };
        let name = format!("llvm.fptosi.sat.i{bits}.{}", self.sfx());
        self.call(&name, self.it().into(), &[a.into()])
            .map_or_else(|| self.it().get_undef(), |v| v.into_int_value())
    }
    fn to_f(&self, a: Self::I) -> Self::F {
        self.f(self.b.build_signed_int_to_float(a, self.ft(), ""))
    }
    fn iadd(&self, a: Self::I, b: Self::I) -> Self::I {
        self.i(self.b.build_int_add(a, b, ""))
    }
    fn isub(&self, a: Self::I, b: Self::I) -> Self::I {
        self.i(self.b.build_int_sub(a, b, ""))
    }
    fn iand(&self, a: Self::I, b: Self::I) -> Self::I {
        self.i(self.b.build_and(a, b, ""))
    }
    fn ior(&self, a: Self::I, b: Self::I) -> Self::I {
        self.i(self.b.build_or(a, b, ""))
    }
    fn ishl(&self, a: Self::I, n: u32) -> Self::I {
        let n = self.it().const_int(n as u64, false);
        self.i(self.b.build_left_shift(a, n, ""))
    }
    fn iasr(&self, a: Self::I, n: u32) -> Self::I {
        let n = self.it().const_int(n as u64, false);
        self.i(self.b.build_right_shift(a, n, true, ""))
    }
    fn ilt(&self, a: Self::I, b: Self::I) -> Self::B {
        self.icmp(IntPredicate::SLT, a, b)
    }
    fn ieq(&self, a: Self::I, b: Self::I) -> Self::B {
        self.icmp(IntPredicate::EQ, a, b)
    }
    fn and(&self, a: Self::B, b: Self::B) -> Self::B {
        self.bl(self.b.build_and(a, b, ""))
    }
    fn or(&self, a: Self::B, b: Self::B) -> Self::B {
        self.bl(self.b.build_or(a, b, ""))
    }
    fn not(&self, a: Self::B) -> Self::B {
        self.bl(self.b.build_not(a, ""))
    }
}
