//! `printf` from kernels (numba's `print`): a C format string checked against the arguments'
//! types when the kernel is built, lowered to the driver's `vprintf` (the arguments packed in a
//! local buffer with C's varargs promotions), and formatted on the host by the simulator with
//! the same rules.
//!
//! Supported conversions: `%d %i` (signed), `%u %x %X %o` (unsigned), `%c`, with `l` or `ll`
//! for 64-bit integers; `%f %F %e %E %g %G` (f32 or f64, `l` allowed); `%s` for a string known
//! when the kernel is built (written into the format then); `%%`. Flags `- + space # 0`, a width
//! and a precision as digits. Not supported: `%p`, `%a`, `%n`, `*` widths,
//! `h`/`hh`/`z`/`j`/`t`/`L` lengths.

use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;
use inkwell::AddressSpace;

use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::expr::Expr;
use super::lower::Lowerer;
use super::scalar::{Scalar, ScalarTy};
use crate::error::{Error, Result};
use crate::ir::{Stmt, ValueId};

pub(crate) use crate::ir::printf::{check, parse, Piece, PrintfStmt};

/// One argument of [`KernelBuilder::printf`]: any scalar expression, or a string for `%s`
/// (`x.into()`, `"text".into()`).
#[derive(Debug, Clone)]
pub struct PrintfArg(ArgKind);

#[derive(Debug, Clone)]
enum ArgKind {
    Value {
        tag: u32,
        id: u32,
        ty: ScalarTy,
    },
    /// A string known when the kernel is built: written into the format.
    Str(String),
}

impl<T: Scalar> From<Expr<T>> for PrintfArg {
    fn from(e: Expr<T>) -> Self {
        if T::TY.is_fp8() {
            // An 8-bit float prints as its value (`%f` and friends).
            return e.cast::<f32>().into();
        }
        PrintfArg(ArgKind::Value {
            tag: e.tag,
            id: e.id,
            ty: T::TY,
        })
    }
}

impl From<&str> for PrintfArg {
    fn from(s: &str) -> Self {
        PrintfArg(ArgKind::Str(s.to_string()))
    }
}

impl From<String> for PrintfArg {
    fn from(s: String) -> Self {
        PrintfArg(ArgKind::Str(s))
    }
}

impl KernelBuilder {
    /// Prints from every thread that runs this statement, with a C format string (CUDA's
    /// `printf`, numba's `print`): `k.printf("i = %d, x = %f\n", &[i.into(), x.into()])`.
    /// The format is checked against the arguments' types when the kernel is built. Supported:
    /// `%d %i %u %x %X %o %c` for integers of 32 bits or fewer and `bool`, the same with `l`
    /// or `ll` (`%ld %lu %lx ...`) for 64-bit integers, `%f %F %e %E %g %G` for f32 and f64,
    /// `%%`; flags `- + space # 0`, width and precision as digits; `%s` with a string argument
    /// (`"text".into()`), which must be known when the kernel is built: it is written into the
    /// format (kernels have no string values). Not supported: `%p`, `%a`, `%n`, `*` widths,
    /// `h`/`hh`/`z` lengths.
    ///
    /// On a GPU the output goes through the driver's FIFO buffer (1 MiB by default,
    /// [`Context::set_printf_fifo_size`](crate::Context::set_printf_fifo_size); records past
    /// it are lost) and is written to the process's standard output at the next
    /// synchronisation point (stream or context synchronise, a blocking copy), as in CUDA. The
    /// simulator prints at the point of execution, the lanes of a block in thread order.
    #[track_caller]
    pub fn printf(&self, format: &str, args: &[PrintfArg]) {
        let _at = crate::codegen::srcloc::at();
        let (baked, values) = match bake(format, args) {
            Ok(b) => b,
            Err(e) => {
                with_state(|s| {
                    s.error(
                        Kind::Printf,
                        format!("in `{}`: printf({format:?}): {e}", s.f.name),
                    )
                });
                return;
            }
        };
        let types: Vec<ScalarTy> = values.iter().map(|v| v.2).collect();
        let raws: Vec<(u32, u32)> = values.iter().map(|v| (v.0, v.1)).collect();
        let format = baked.as_str();
        with_state(|s| {
            if let Err(e) = check(format, &types) {
                s.error(
                    Kind::Printf,
                    format!("in `{}`: printf({format:?}): {e}", s.f.name),
                );
            }
            if format.contains('\0') {
                s.error(
                    Kind::Printf,
                    format!("in `{}`: printf: the format must not contain NUL", s.f.name),
                );
            }
            s.check_use(&raws);
            s.push_stmt(Stmt::Printf(PrintfStmt {
                format: format.to_string(),
                args: raws.iter().map(|&(_, id)| ValueId(id)).collect(),
            }));
        });
    }
}
/// A value argument: its build tag, value id and type.
type ValueArg = (u32, u32, ScalarTy);

/// Writes the string arguments into the format (their `%s` replaced by the text, padded and
/// cut as C would, `%` doubled): the format and the value arguments that remain.
fn bake(format: &str, args: &[PrintfArg]) -> std::result::Result<(String, Vec<ValueArg>), String> {
    let escape = |t: &str| t.replace('%', "%%");
    let mut out = String::new();
    let mut values = Vec::new();
    let mut next = args.iter().enumerate();
    for piece in parse(format)? {
        match piece {
            Piece::Text(t) => out.push_str(&escape(&t)),
            Piece::Conv(s) => match next.next() {
                Some((n, PrintfArg(ArgKind::Str(text)))) => {
                    if s.conv != 's' {
                        return Err(format!(
                            "argument {n} is a string, which only `%s` prints (not `{}`)",
                            s.to_format()
                        ));
                    }
                    let cut: String = match s.precision {
                        Some(p) => text.chars().take(p).collect(),
                        None => text.clone(),
                    };
                    let pad = " ".repeat(s.width.saturating_sub(cut.chars().count()));
                    let padded = if s.minus {
                        format!("{cut}{pad}")
                    } else {
                        format!("{pad}{cut}")
                    };
                    out.push_str(&escape(&padded));
                }
                Some((_, PrintfArg(ArgKind::Value { tag, id, ty }))) => {
                    out.push_str(&s.to_format());
                    values.push((*tag, *id, *ty));
                }
                None => out.push_str(&s.to_format()),
            },
        }
    }
    let extra = next.count();
    if extra > 0 {
        return Err(format!(
            "the format has {} conversion(s) but {} argument(s) are given",
            args.len() - extra,
            args.len()
        ));
    }
    Ok((out, values))
}

/// Lowers a `printf` to `vprintf(format, args)`: the format a constant global, the arguments
/// promoted (f32 to f64, narrower integers and bool to i32) in a local struct.
pub(crate) fn lower_printf<'c>(lw: &mut Lowerer<'c, '_>, p: &PrintfStmt) -> Result<()> {
    let name = lw.f.name.clone();
    let err = |e: &dyn std::fmt::Display| {
        Error::Codegen(crate::error::CodegenError::Llvm {
            kernel: name.clone(),
            message: format!("printf: {e}"),
            source: None,
        })
    };
    let ctx = lw.ctx;
    // The format: a constant global string, cast to a generic pointer.
    let init = ctx.const_string(p.format.as_bytes(), true);
    let g = lw.module.add_global(
        init.get_type(),
        Some(AddressSpace::from(1u16)),
        "printf_format",
    );
    g.set_linkage(Linkage::Internal);
    g.set_initializer(&init);
    g.set_constant(true);
    let generic = ctx.ptr_type(AddressSpace::default());
    let fmt =
        lw.b.build_address_space_cast(g.as_pointer_value(), generic, "")
            .map_err(|e| err(&e))?;
    // The arguments, promoted as C's varargs.
    let mut vals: Vec<BasicValueEnum<'c>> = Vec::new();
    for a in &p.args {
        let v = lw.v(*a)?;
        let t = lw.ty(*a);
        let pv: BasicValueEnum<'c> = if t.is_float() {
            if t.size() < 8 {
                lw.b.build_float_ext(v.into_float_value(), ctx.f64_type(), "")
                    .map_err(|e| err(&e))?
                    .into()
            } else {
                v
            }
        } else if t.size() < 4 || t == ScalarTy::Bool {
            let iv = v.into_int_value();
            if t.is_signed_int() {
                lw.b.build_int_s_extend(iv, ctx.i32_type(), "")
            } else {
                lw.b.build_int_z_extend(iv, ctx.i32_type(), "")
            }
            .map_err(|e| err(&e))?
            .into()
        } else {
            v
        };
        vals.push(pv);
    }
    let args_ptr: BasicValueEnum<'c> = if vals.is_empty() {
        generic.const_null().into()
    } else {
        let fields: Vec<BasicTypeEnum<'c>> = vals.iter().map(|v| v.get_type()).collect();
        let st = ctx.struct_type(&fields, false);
        // The buffer lives in the entry block (one per printf, reused by every execution).
        let entry = lw
            .func
            .get_first_basic_block()
            .ok_or_else(|| err(&"no entry block"))?;
        let eb = ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => eb.position_before(&i),
            None => eb.position_at_end(entry),
        }
        let buf = eb.build_alloca(st, "printf_args").map_err(|e| err(&e))?;
        for (i, v) in vals.iter().enumerate() {
            let fp =
                lw.b.build_struct_gep(st, buf, i as u32, "")
                    .map_err(|e| err(&e))?;
            lw.b.build_store(fp, *v).map_err(|e| err(&e))?;
        }
        buf.into()
    };
    lw.call(
        "vprintf",
        Some(ctx.i32_type().into()),
        &[fmt.into(), args_ptr],
    )?;
    Ok(())
}
