//! Lowering of texture fetches and surface loads and stores to inline PTX (`tex`, `tex.level`,
//! `tld4`, `suld.b`, `sust.b`, all with 64-bit object handles: the unified texture mode).
//! A fetch's four channels, recorded as consecutive values, share one instruction: channel 0
//! emits it, the others extract their channel from its result. Surface accesses are
//! `volatile` (they read and write memory).

use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum};

use super::lower::{asm, pure_asm, Lowerer};
use crate::error::Result;
use crate::ir::{ScalarTy, SurfStore, TexFetch, TexOp, ValueId};

/// The PTX type and constraint letter of a fetch's result type.
fn result_kind(ty: ScalarTy) -> (&'static str, &'static str) {
    match ty {
        ScalarTy::I32 => ("s32", "r"),
        ScalarTy::U32 => ("u32", "r"),
        _ => ("f32", "f"),
    }
}

/// `{$a, $b, ...}` of a vector operand, with `n` registers from `first` (a 3-D coordinate
/// repeats its last: the vector has four).
fn vec_operand(first: usize, n: usize) -> String {
    let mut regs: Vec<String> = (first..first + n).map(|i| format!("${i}")).collect();
    if n == 3 {
        regs.push(format!("${}", first + 2));
    }
    format!("{{{}}}", regs.join(", "))
}

/// A texture fetch's channel, or a surface load.
pub(crate) fn lower_texture_op<'c>(
    lw: &mut Lowerer<'c, '_>,
    id: ValueId,
    op: &TexOp,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    if let Some(v) = same_fetch(lw, id, op)? {
        return Ok(v);
    }
    match op {
        TexOp::Fetch {
            tex,
            kind,
            dims,
            coords,
            channel,
        } => {
            let (out, oc) = result_kind(ty);
            let int_coords = coords.first().is_some_and(|c| lw.ty(*c) != ScalarTy::F32);
            let (ct, cc) = if int_coords {
                ("s32", "r")
            } else {
                ("f32", "f")
            };
            let d = *dims as usize;
            let layered = *kind == TexFetch::Layered;
            let at = vec_operand(5, d);
            let text = match kind {
                TexFetch::Sample => {
                    format!("tex.{d}d.v4.{out}.{ct} {{$0, $1, $2, $3}}, [$4, {at}];")
                }
                TexFetch::Level => {
                    format!(
                        "tex.level.{d}d.v4.{out}.f32 {{$0, $1, $2, $3}}, [$4, {at}], ${};",
                        5 + d
                    )
                }
                TexFetch::Layered => {
                    // The layer comes first in the vector: {layer, x} or {layer, x, y, y}.
                    let layer = format!("${}", 5 + d);
                    let xs: Vec<String> = (5..5 + d).map(|i| format!("${i}")).collect();
                    let v = if d == 1 {
                        format!("{{{layer}, {}}}", xs[0])
                    } else {
                        format!("{{{layer}, {}, {}, {}}}", xs[0], xs[1], xs[1])
                    };
                    format!("tex.a{d}d.v4.{out}.f32 {{$0, $1, $2, $3}}, [$4, {v}];")
                }
                TexFetch::Gather(c) => {
                    let comp = ["r", "g", "b", "a"][*c as usize % 4];
                    format!("tld4.{comp}.2d.v4.{out}.f32 {{$0, $1, $2, $3}}, [$4, {at}];")
                }
            };
            let mut cons = vec![format!("={oc}"); 4];
            cons.push("l".into());
            cons.extend(coords.iter().enumerate().map(|(k, _)| {
                if layered && k == d {
                    "r".to_string()
                } else {
                    cc.to_string()
                }
            }));
            let mut args = vec![lw.v(*tex)?];
            for c in coords {
                args.push(lw.v(*c)?);
            }
            let elem = super::lower::reg_type(
                lw.ctx,
                if oc == "f" {
                    ScalarTy::F32
                } else {
                    ScalarTy::I32
                },
            );
            let st = lw.ctx.struct_type(&[elem; 4], false);
            let r = pure_asm(lw, &text, &cons.join(","), &args, st.into())?;
            let v =
                lw.b.build_extract_value(r.into_struct_value(), *channel as u32, "")
                    .map_err(|e| lw.err(e.to_string()))?;
            Ok(v)
        }
        TexOp::SurfLoad { surf, dims, coords } => {
            let (bits, rc, rt) = surf_reg(lw, ty);
            let d = *dims as usize;
            let text = format!(
                "suld.b.{d}d.b{bits}.trap {{$0}}, [$1, {}];",
                vec_operand(2, d)
            );
            let mut cons = vec![format!("={rc}"), "l".into()];
            cons.extend(coords.iter().map(|_| "r".to_string()));
            cons.push("~{memory}".into());
            let args = surf_args(lw, *surf, coords, ty)?;
            let r = asm(lw, text, cons.join(","), &args, Some(rt))?
                .ok_or_else(|| lw.err("a surface load without its result"))?;
            from_surf_reg(lw, r, ty)
        }
    }
}

/// Channel `c` > 0 of a fetch whose channel 0 is the value `c` before it: extracted from that
/// channel's instruction result.
fn same_fetch<'c>(
    lw: &mut Lowerer<'c, '_>,
    id: ValueId,
    op: &TexOp,
) -> Result<Option<BasicValueEnum<'c>>> {
    let TexOp::Fetch { channel, .. } = op else {
        return Ok(None);
    };
    let c = *channel as u32;
    if c == 0 || id.0 < c {
        return Ok(None);
    }
    let first = ValueId(id.0 - c);
    let mut op0 = op.clone();
    if let TexOp::Fetch { channel, .. } = &mut op0 {
        *channel = 0;
    }
    if lw.f.values[first.0 as usize].op != crate::ir::Op::Texture(op0) {
        return Ok(None);
    }
    let Ok(v0) = lw.v(first) else { return Ok(None) };
    let agg = v0
        .as_instruction_value()
        .filter(|i| i.get_opcode() == inkwell::values::InstructionOpcode::ExtractValue)
        .and_then(|i| i.get_operand(0))
        .and_then(|o| match o {
            inkwell::values::Operand::Value(v) => Some(v),
            _ => None,
        });
    let Some(agg) = agg.filter(|a| a.is_struct_value()) else {
        return Ok(None);
    };
    let v =
        lw.b.build_extract_value(agg.into_struct_value(), c, "")
            .map_err(|e| lw.err(e.to_string()))?;
    Ok(Some(v))
}

/// A surface store.
pub(crate) fn lower_surf_store<'c>(lw: &mut Lowerer<'c, '_>, s: &SurfStore) -> Result<()> {
    let ty = lw.ty(s.value);
    let (bits, rc, rt) = surf_reg(lw, ty);
    let d = s.dims as usize;
    let text = format!(
        "sust.b.{d}d.b{bits}.trap [$0, {}], {{${}}};",
        vec_operand(1, d),
        1 + d
    );
    let mut cons = vec!["l".to_string()];
    cons.extend(s.coords.iter().map(|_| "r".to_string()));
    cons.push(rc.to_string());
    cons.push("~{memory}".into());
    let mut args = surf_args(lw, s.surf, &s.coords, ty)?;
    let v = lw.v(s.value)?;
    args.push(to_surf_reg(lw, v, ty, rt)?);
    asm(lw, text, cons.join(","), &args, None)?;
    Ok(())
}

/// The data register of a surface access of `ty`: its bits, constraint and LLVM type (bytes
/// travel in 16-bit registers).
fn surf_reg<'c>(lw: &Lowerer<'c, '_>, ty: ScalarTy) -> (usize, &'static str, BasicTypeEnum<'c>) {
    match ty.size() {
        1 => (8, "h", lw.ctx.i16_type().into()),
        2 => (16, "h", lw.ctx.i16_type().into()),
        8 => (64, "l", lw.ctx.i64_type().into()),
        _ => (32, "r", lw.ctx.i32_type().into()),
    }
}

/// The handle and coordinates of a surface access: x scaled to bytes.
fn surf_args<'c>(
    lw: &mut Lowerer<'c, '_>,
    surf: ValueId,
    coords: &[ValueId],
    ty: ScalarTy,
) -> Result<Vec<BasicValueEnum<'c>>> {
    let mut args = vec![lw.v(surf)?];
    for (k, c) in coords.iter().enumerate() {
        let mut v = lw.v(*c)?;
        if k == 0 && ty.size() > 1 {
            let size = lw.ctx.i32_type().const_int(ty.size() as u64, false);
            v =
                lw.b.build_int_mul(v.into_int_value(), size, "")
                    .map_err(|e| lw.err(e.to_string()))?
                    .into();
        }
        args.push(v);
    }
    Ok(args)
}

/// A loaded register as a value of `ty`.
fn from_surf_reg<'c>(
    lw: &mut Lowerer<'c, '_>,
    r: BasicValueEnum<'c>,
    ty: ScalarTy,
) -> Result<BasicValueEnum<'c>> {
    let want = super::lower::reg_type(lw.ctx, ty);
    let mut r = r;
    if ty.size() == 1 {
        r =
            lw.b.build_int_truncate(r.into_int_value(), lw.ctx.i8_type(), "")
                .map_err(|e| lw.err(e.to_string()))?
                .into();
    }
    if r.get_type() == want {
        return Ok(r);
    }
    lw.b.build_bit_cast(r, want, "")
        .map_err(|e| lw.err(e.to_string()))
}

/// A value of `ty` as the register of its surface store.
fn to_surf_reg<'c>(
    lw: &mut Lowerer<'c, '_>,
    v: BasicValueEnum<'c>,
    ty: ScalarTy,
    rt: BasicTypeEnum<'c>,
) -> Result<BasicValueEnum<'c>> {
    let int_ty = match ty.size() {
        1 => lw.ctx.i8_type(),
        2 => lw.ctx.i16_type(),
        8 => lw.ctx.i64_type(),
        _ => lw.ctx.i32_type(),
    };
    let mut r = v;
    if !r.is_int_value() {
        r =
            lw.b.build_bit_cast(r, int_ty, "")
                .map_err(|e| lw.err(e.to_string()))?;
    }
    if ty.size() == 1 {
        r =
            lw.b.build_int_z_extend(r.into_int_value(), rt.into_int_type(), "")
                .map_err(|e| lw.err(e.to_string()))?
                .into();
    }
    Ok(r)
}
