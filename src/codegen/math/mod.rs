//! Math functions on `Expr<f32>`, `Expr<f64>`, `Expr<f16>` and `Expr<bf16>` (Rust's std
//! names; the 16-bit floats compute in f32 and round once, see `lower_half_math`).
//!
//! Each function lowers in one of three ways (docs/MATH.md has the details and accuracies):
//! - an LLVM intrinsic or a plain instruction (sqrt, abs, floor, ceil, trunc, round, mul_add,
//!   copysign, is_nan, is_infinite);
//! - NVIDIA's libdevice (`__nv_expf`, ...) when it is installed (`CUDAJIT_LIBDEVICE`,
//!   `$CUDA_HOME`, `/usr/local/cuda`, or the `nvidia-cuda-nvcc-cu12` wheel), linked into each
//!   module that uses it;
//! - cudajit's own implementations otherwise, or when `CUDAJIT_NO_LIBDEVICE=1`.
//!
//! With fastmath (f32 only, as CUDA's `--use_fast_math`) sqrt, rsqrt, exp, exp2, ln, log2,
//! log10, powf, sin, cos and tan use the hardware approximations (`ex2.approx`, `lg2.approx`,
//! `sin.approx`, `cos.approx`, `sqrt.approx`, `rsqrt.approx`); the others flush denormals.

use std::collections::HashSet;

use inkwell::values::BasicValueEnum;
use inkwell::FloatPredicate;

use super::expr::Expr;
use super::lower::{reg_type, Lowerer};
use super::scalar::{Float, Scalar, ScalarTy};
use crate::error::{Error, Result};
use crate::ir::{FunctionIr, Op, ValueId};

pub(crate) use crate::ir::math::{alg, own_fn, MathFn};
mod emit;
mod libdevice;

pub(crate) fn record_math<T: Scalar>(f: MathFn, args: &[Expr<T>]) -> Expr<T> {
    let ids = args.iter().map(|a| ValueId(a.id)).collect();
    let raws: Vec<(u32, u32)> = args.iter().map(|a| a.raw()).collect();
    Expr::record(Op::Math(f, ids), &raws, false)
}

fn record_test<T: Scalar>(f: MathFn, x: Expr<T>) -> Expr<bool> {
    Expr::record(Op::Math(f, vec![ValueId(x.id)]), &[x.raw()], false)
}

/// Math on `f32`, `f64`, `f16` and `bf16` expressions, with Rust's std names (the 16-bit
/// floats compute in f32 and round the result once; `mul_add` is one fused rounding). Accuracy per function and
/// implementation (libdevice, cudajit's own, fastmath) is in docs/MATH.md.
impl<T: Float> Expr<T> {
    /// Square root (correctly rounded; approximate with fastmath).
    #[track_caller]
    pub fn sqrt(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Sqrt, &[self])
    }
    /// `1 / sqrt(self)`.
    #[track_caller]
    pub fn rsqrt(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Rsqrt, &[self])
    }
    /// Cube root.
    #[track_caller]
    pub fn cbrt(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Cbrt, &[self])
    }
    /// `e^self`.
    #[track_caller]
    pub fn exp(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Exp, &[self])
    }
    /// `2^self`.
    #[track_caller]
    pub fn exp2(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Exp2, &[self])
    }
    /// `e^self - 1`, accurate near zero.
    #[track_caller]
    pub fn exp_m1(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::ExpM1, &[self])
    }
    /// Natural logarithm.
    #[track_caller]
    pub fn ln(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Ln, &[self])
    }
    /// Base-2 logarithm.
    #[track_caller]
    pub fn log2(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Log2, &[self])
    }
    /// Base-10 logarithm.
    #[track_caller]
    pub fn log10(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Log10, &[self])
    }
    /// `ln(1 + self)`, accurate near zero.
    #[track_caller]
    pub fn ln_1p(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Ln1p, &[self])
    }
    /// `self^n` (C's `pow`, with its special cases).
    #[track_caller]
    pub fn powf(self, n: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Pow, &[self, n.into()])
    }
    /// Sine (radians).
    #[track_caller]
    pub fn sin(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Sin, &[self])
    }
    /// Cosine (radians).
    #[track_caller]
    pub fn cos(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Cos, &[self])
    }
    /// Tangent (radians).
    #[track_caller]
    pub fn tan(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Tan, &[self])
    }
    /// Arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1].
    #[track_caller]
    pub fn asin(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Asin, &[self])
    }
    /// Arccosine, in [0, pi]; NaN outside [-1, 1].
    #[track_caller]
    pub fn acos(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Acos, &[self])
    }
    /// Arctangent, in [-pi/2, pi/2].
    #[track_caller]
    pub fn atan(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Atan, &[self])
    }
    /// Four-quadrant arctangent of `self / other` (`self` is y), in [-pi, pi].
    #[track_caller]
    pub fn atan2(self, other: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Atan2, &[self, other.into()])
    }
    /// Hyperbolic sine.
    #[track_caller]
    pub fn sinh(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Sinh, &[self])
    }
    /// Hyperbolic cosine.
    #[track_caller]
    pub fn cosh(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Cosh, &[self])
    }
    /// Hyperbolic tangent.
    #[track_caller]
    pub fn tanh(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Tanh, &[self])
    }
    /// The error function.
    #[track_caller]
    pub fn erf(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Erf, &[self])
    }
    /// Absolute value.
    #[track_caller]
    pub fn abs(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Abs, &[self])
    }
    /// Largest integer not above.
    #[track_caller]
    pub fn floor(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Floor, &[self])
    }
    /// Smallest integer not below.
    #[track_caller]
    pub fn ceil(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Ceil, &[self])
    }
    /// Rounds toward zero.
    #[track_caller]
    pub fn trunc(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Trunc, &[self])
    }
    /// Rounds half away from zero (as Rust's `round`).
    #[track_caller]
    pub fn round(self) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Round, &[self])
    }
    /// `self * a + b` with one rounding.
    #[track_caller]
    pub fn mul_add(self, a: impl Into<Expr<T>>, b: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Fma, &[self, a.into(), b.into()])
    }
    /// `self`'s magnitude with `sign`'s sign.
    #[track_caller]
    pub fn copysign(self, sign: impl Into<Expr<T>>) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Copysign, &[self, sign.into()])
    }
    /// Whether `self` is NaN (exact, also with fastmath).
    #[track_caller]
    pub fn is_nan(self) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        record_test(MathFn::IsNan, self)
    }
    /// Whether `self` is positive or negative infinity (exact, also with fastmath).
    #[track_caller]
    pub fn is_infinite(self) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        record_test(MathFn::IsInfinite, self)
    }
}

impl Expr<f32> {
    /// `2^self` by the hardware's approximation, one instruction (`ex2.approx.ftz.f32`, what
    /// CUDA's `exp2f` becomes under `--use_fast_math`) where [`exp2`](Expr::exp2) takes
    /// several: within 2 ulp of 2^x (the simulator computes 2^x rounded), subnormal arguments
    /// and results flushed to zero, +∞ → +∞, −∞ → +0, a NaN → a NaN. For softmax-like code
    /// (attention's `exp2(x·scale − max)`), without turning fastmath on for the whole kernel.
    ///
    /// Unlike `exp2`, it is not guarded against a ptxas folding (workaround 7, docs/MATH.md):
    /// a comparison of its result with a constant ≤ 0 (`x.exp2_approx().ge(0.0)`) may be
    /// compiled as if the result could not be NaN. Feed it to arithmetic, or use `exp2`.
    #[track_caller]
    pub fn exp2_approx(self) -> Expr<f32> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::Exp2Approx, &[self])
    }

    /// `-|self|` for arithmetic: `abs.f32` + `neg.f32` in a one-line scope, which ptxas folds
    /// into the operand of the instruction that reads it (the sign-bit `and`/`xor` that
    /// workarounds 1 and 5 make of `-self.abs()` cost an instruction each). Not guarded: a
    /// comparison of the result may be compiled as if it could not be NaN (workaround 1), and
    /// a NaN's sign and payload are not kept (workaround 5); feed it to arithmetic only.
    #[track_caller]
    pub(crate) fn neg_abs(self) -> Expr<f32> {
        let _at = crate::codegen::srcloc::at();
        record_math(MathFn::NegAbs, &[self])
    }
}

/// The libdevice function for `f`, if it is one (`fast`: f32 with fastmath).
fn libdevice_name(f: MathFn, f64: bool, fast: bool) -> Option<&'static str> {
    use MathFn::*;
    let (single, double, fast_single) = match f {
        Rsqrt => ("__nv_rsqrtf", "__nv_rsqrt", None),
        Cbrt => ("__nv_cbrtf", "__nv_cbrt", None),
        Exp => ("__nv_expf", "__nv_exp", Some("__nv_fast_expf")),
        Exp2 => ("__nv_exp2f", "__nv_exp2", None),
        ExpM1 => ("__nv_expm1f", "__nv_expm1", None),
        Ln => ("__nv_logf", "__nv_log", Some("__nv_fast_logf")),
        Log2 => ("__nv_log2f", "__nv_log2", Some("__nv_fast_log2f")),
        Log10 => ("__nv_log10f", "__nv_log10", Some("__nv_fast_log10f")),
        Ln1p => ("__nv_log1pf", "__nv_log1p", None),
        Pow => ("__nv_powf", "__nv_pow", Some("__nv_fast_powf")),
        Sin => ("__nv_sinf", "__nv_sin", Some("__nv_fast_sinf")),
        Cos => ("__nv_cosf", "__nv_cos", Some("__nv_fast_cosf")),
        Tan => ("__nv_tanf", "__nv_tan", Some("__nv_fast_tanf")),
        Asin => ("__nv_asinf", "__nv_asin", None),
        Acos => ("__nv_acosf", "__nv_acos", None),
        Atan => ("__nv_atanf", "__nv_atan", None),
        Atan2 => ("__nv_atan2f", "__nv_atan2", None),
        Sinh => ("__nv_sinhf", "__nv_sinh", None),
        Cosh => ("__nv_coshf", "__nv_cosh", None),
        Tanh => ("__nv_tanhf", "__nv_tanh", None),
        Erf => ("__nv_erff", "__nv_erf", None),
        Sqrt | Abs | Floor | Ceil | Trunc | Round | Fma | Copysign | IsNan | IsInfinite
        | Exp2Approx | NegAbs => return None,
    };
    if f64 {
        Some(double)
    } else if fast {
        // rsqrt and exp2 use the hardware approximations directly (see `lower_math`).
        match f {
            Rsqrt | Exp2 => None,
            _ => fast_single.or(Some(single)),
        }
    } else {
        Some(single)
    }
}

/// The libdevice functions `f` and the device functions it calls use.
fn libdevice_names(f: &FunctionIr, fastmath: bool, out: &mut HashSet<String>) {
    for v in &f.values {
        if let Op::Math(mf, args) = &v.op {
            let f64 = args
                .first()
                .and_then(|a| f.values.get(a.0 as usize))
                .is_some_and(|d| d.ty == ScalarTy::F64);
            if let Some(n) = libdevice_name(*mf, f64, fastmath && !f64) {
                out.insert(n.to_string());
            }
        }
    }
    for c in &f.callees {
        libdevice_names(c, fastmath, out);
    }
}

/// An error of code generation for math: `internal: ..` is a broken invariant, anything else
/// something the target or the installed libraries (libdevice) lack.
fn kernel_err(lw: &Lowerer<'_, '_>, message: String) -> Error {
    if message.starts_with("internal") {
        super::lower::internal_err(&lw.f.name, message)
    } else {
        super::lower::unsupported_err(&lw.f.name, message)
    }
}

/// Calls an LLVM or NVVM intrinsic that returns a value.
pub(crate) fn intrinsic<'c>(
    lw: &Lowerer<'c, '_>,
    name: &str,
    ret: ScalarTy,
    args: &[BasicValueEnum<'c>],
) -> Result<BasicValueEnum<'c>> {
    lw.call(name, Some(reg_type(lw.ctx, ret)), args)?
        .ok_or_else(|| kernel_err(lw, format!("internal: `{name}` returned nothing")))
}

/// Lowers a math function call. `ty` is the result's type.
pub(crate) fn lower_math<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    args: &[ValueId],
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let vals = args.iter().map(|a| lw.v(*a)).collect::<Result<Vec<_>>>()?;
    let arg_ty = args.first().map_or(ty, |a| lw.ty(*a));
    if arg_ty.is_half() {
        return lower_half_math(lw, f, vals, arg_ty, ty);
    }
    lower_math_values(lw, f, vals, arg_ty, ty)
}

/// A math function on 16-bit floats (`arg` is the half type, `ty` the result's): `mul_add` is
/// the native `fma.rn.f16` (`fma.rn.bf16` from sm_80, before that an f32 fma rounded to odd
/// and then to nearest: one rounding); the rest are computed in f32 and rounded once to the
/// half type (exact for abs, floor, ceil, trunc, round, copysign and the tests).
fn lower_half_math<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    vals: Vec<BasicValueEnum<'c>>,
    arg: ScalarTy,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    if f == MathFn::Fma {
        let fv: Vec<_> = vals.iter().map(|v| v.into_float_value()).collect();
        // With fastmath, LLVM 19 would emit `fma.rn.ftz.bf16`, which ptxas rejects.
        if arg == ScalarTy::BF16 && (lw.opts.sm() < (8, 0) || lw.opts.fastmath) {
            return lw.bf16_fma_odd(fv[0], fv[1], fv[2]);
        }
        let sfx = if arg == ScalarTy::F16 { "f16" } else { "bf16" };
        return intrinsic(lw, &format!("llvm.fma.{sfx}"), ty, &vals);
    }
    let wide = vals
        .iter()
        .map(|v| lw.half_to_f32(*v).map(Into::into))
        .collect::<Result<Vec<BasicValueEnum<'c>>>>()?;
    let rty = if ty.is_half() { ScalarTy::F32 } else { ty };
    let r = lower_math_values(lw, f, wide, ScalarTy::F32, rty)?;
    if ty.is_half() {
        lw.round_to_half(r.into_float_value(), ty)
    } else {
        Ok(r)
    }
}

/// Lowers a math function of f32 or f64 values (`arg_ty`), with result type `ty`.
fn lower_math_values<'c>(
    lw: &mut Lowerer<'c, '_>,
    f: MathFn,
    vals: Vec<BasicValueEnum<'c>>,
    arg_ty: ScalarTy,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let f64 = arg_ty == ScalarTy::F64;
    let sfx = if f64 { "f64" } else { "f32" };
    let fast = lw.opts.fastmath && !f64;
    let plain = match f {
        MathFn::Sqrt if fast => return intrinsic(lw, "llvm.nvvm.sqrt.approx.ftz.f", ty, &vals),
        MathFn::Rsqrt if fast => return intrinsic(lw, "llvm.nvvm.rsqrt.approx.ftz.f", ty, &vals),
        MathFn::Exp2 if fast => return intrinsic(lw, "llvm.nvvm.ex2.approx.ftz.f", ty, &vals),
        // One-line scopes, which the workarounds leave alone: workaround 7's NaN guard would
        // double `ex2.approx`'s cost (docs/MATH.md), and workarounds 1 and 5 would turn -|x|
        // into integer `and` + `xor` that ptxas cannot fold into operands.
        MathFn::Exp2Approx | MathFn::NegAbs => {
            let text = if f == MathFn::Exp2Approx {
                "{ ex2.approx.ftz.f32 $0, $1; }"
            } else {
                "{ .reg .f32 %cj_na; abs.f32 %cj_na, $1; neg.f32 $0, %cj_na; }"
            };
            let f32t = lw.ctx.f32_type().into();
            return super::lower::pure_asm(lw, text, "=f,f", &vals, f32t);
        }
        MathFn::Sqrt => Some("sqrt"),
        MathFn::Abs => Some("fabs"),
        MathFn::Floor => Some("floor"),
        MathFn::Ceil => Some("ceil"),
        MathFn::Trunc => Some("trunc"),
        MathFn::Round => Some("round"),
        MathFn::Fma => Some("fma"),
        MathFn::Copysign => Some("copysign"),
        MathFn::IsNan | MathFn::IsInfinite => {
            // No fast-math flags: `nnan`/`ninf` would fold these tests away.
            let x = vals[0].into_float_value();
            let (pred, other) = if f == MathFn::IsNan {
                (FloatPredicate::UNO, x)
            } else {
                let inf = x.get_type().const_float(f64::INFINITY);
                let a = intrinsic(lw, &format!("llvm.fabs.{sfx}"), arg_ty, &vals)?;
                return lw
                    .b
                    .build_float_compare(FloatPredicate::OEQ, a.into_float_value(), inf, "")
                    .map(Into::into)
                    .map_err(|e| kernel_err(lw, format!("internal: {e}")));
            };
            return lw
                .b
                .build_float_compare(pred, x, other, "")
                .map(Into::into)
                .map_err(|e| kernel_err(lw, format!("internal: {e}")));
        }
        _ => None,
    };
    if let Some(name) = plain {
        let v = intrinsic(lw, &format!("llvm.{name}.{sfx}"), ty, &vals)?;
        return Ok(lw.fast(v));
    }
    if let Some(name) = libdevice_name(f, f64, fast) {
        match libdevice::get() {
            Err(e) => return Err(kernel_err(lw, e)),
            Ok(Some(_)) => {
                let defined = lw
                    .module
                    .get_function(name)
                    .is_some_and(|g| !g.as_global_value().is_declaration());
                if !defined {
                    let mut wanted = HashSet::new();
                    libdevice_names(lw.f, lw.opts.fastmath, &mut wanted);
                    wanted.insert(name.to_string());
                    libdevice::link(lw.ctx, lw.module, &wanted, lw.opts)
                        .map_err(|e| kernel_err(lw, e))?;
                }
                return intrinsic(lw, name, ty, &vals);
            }
            Ok(None) => {}
        }
    }
    emit::own(lw, f, f64, fast, &vals)
}

/// Called once per module after lowering and before optimisation. Math functions link what
/// they need while they are lowered, so this only links libdevice functions that something
/// else declared.
pub(crate) fn prepare_module<'c>(
    ctx: &'c inkwell::context::Context,
    module: &inkwell::module::Module<'c>,
    opts: &super::options::PtxOptions,
) -> std::result::Result<(), String> {
    let wanted: HashSet<String> = module
        .get_functions()
        .filter(|f| f.as_global_value().is_declaration())
        .filter_map(|f| f.get_name().to_str().ok().map(str::to_string))
        .filter(|n| n.starts_with("__nv_"))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    libdevice::link(ctx, module, &wanted, opts)
}

/// What decides how math functions compile on this machine, for the compile cache's key: the
/// libdevice file used (path and size), or `own` for cudajit's implementations.
pub(crate) fn cache_key() -> String {
    match libdevice::get() {
        Ok(Some(l)) => format!(
            "libdevice:{}:{}:{:016x}",
            l.path.display(),
            l.len,
            source_hash()
        ),
        Ok(None) => format!("own:{:016x}", source_hash()),
        Err(e) => format!("error:{e}"),
    }
}

/// A hash of this module's source, so that cached PTX made by an older version of the math
/// code is not reused.
fn source_hash() -> u64 {
    static HASH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *HASH.get_or_init(|| {
        [
            include_str!("mod.rs"),
            include_str!("../../ir/math/mod.rs"),
            include_str!("../../ir/math/alg.rs"),
            include_str!("../../ir/math/alg/consts.rs"),
            include_str!("emit.rs"),
            include_str!("libdevice/mod.rs"),
        ]
        .iter()
        .flat_map(|s| s.bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    })
}

/// Where cudajit found NVIDIA's libdevice (`libdevice.10.bc`), which math functions use when
/// present: `None` when it is not installed or `CUDAJIT_NO_LIBDEVICE` is set (then cudajit's
/// own implementations are used; docs/MATH.md compares them).
#[allow(dead_code)] // until codegen/mod.rs re-exports it
pub fn libdevice_path() -> Option<std::path::PathBuf> {
    libdevice::get().ok().flatten().map(|l| l.path.clone())
}
