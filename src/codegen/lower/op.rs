//! Lowering of the operations that define values (`Op`): constants, parameters, special
//! registers, arithmetic, comparisons, loads, and the dispatch to the per-op emitters.

use super::*;

impl<'c> Lowerer<'c, '_> {
    /// Lowers the operation that defines value `id`.
    pub(super) fn op(&mut self, id: ValueId) -> Result<BasicValueEnum<'c>> {
        let def = &self.f.values[id.0 as usize];
        let ty = def.ty;
        let rt = reg_type(self.ctx, ty);
        Ok(match &def.op {
            Op::Const(bits) => match ty {
                ScalarTy::F32 => self
                    .ctx
                    .f32_type()
                    .const_float(f32::from_bits(*bits as u32) as f64)
                    .into(),
                ScalarTy::F64 => self
                    .ctx
                    .f64_type()
                    .const_float(f64::from_bits(*bits))
                    .into(),
                // The half types' bits, bitcast (folded into a constant).
                ScalarTy::F16 | ScalarTy::BF16 => {
                    let b16 = self.ctx.i16_type().const_int(*bits, false);
                    ll!(self, self.b.build_bit_cast(b16, rt, ""))
                }
                _ => rt.into_int_type().const_int(*bits, false).into(),
            },
            Op::Param(i) => {
                self.scalars[*i as usize].ok_or_else(|| self.err("not a scalar parameter"))?
            }
            Op::Special(r) if r.is_cluster() => crate::codegen::hopper::lower_sreg(self, *r)?,
            // The timer changes between reads: LLVM's intrinsic has side effects (never merged
            // or hoisted); `%globaltimer_lo` has no intrinsic in LLVM 19, so an `asm volatile`.
            Op::Special(Sreg::GlobalTimer) => self
                .call(
                    "llvm.nvvm.read.ptx.sreg.globaltimer",
                    Some(self.ctx.i64_type().into()),
                    &[],
                )?
                .ok_or_else(|| self.err("special register read returned nothing"))?,
            Op::Special(Sreg::GlobalTimerLo) => super::asm::asm(
                self,
                "mov.u32 $0, %globaltimer_lo;".into(),
                "=r".into(),
                &[],
                Some(self.ctx.i32_type().into()),
            )?
            .ok_or_else(|| self.err("special register read returned nothing"))?,
            Op::Special(r) => {
                let (name, dim) = match r {
                    Sreg::Tid(d) => ("tid", Some(*d)),
                    Sreg::Ntid(d) => ("ntid", Some(*d)),
                    Sreg::Ctaid(d) => ("ctaid", Some(*d)),
                    Sreg::Nctaid(d) => ("nctaid", Some(*d)),
                    Sreg::LaneId => ("laneid", None),
                    Sreg::WarpSize => ("warpsize", None),
                    _ => return Err(self.err("a cluster register read as an ordinary one")),
                };
                let full = match dim {
                    Some(d) => format!(
                        "llvm.nvvm.read.ptx.sreg.{name}.{}",
                        ["x", "y", "z"][d as usize % 3]
                    ),
                    None => format!("llvm.nvvm.read.ptx.sreg.{name}"),
                };
                self.call(&full, Some(self.ctx.i32_type().into()), &[])?
                    .ok_or_else(|| self.err("special register read returned nothing"))?
            }
            Op::Unary(u, a) => self.unary(*u, *a, ty)?,
            Op::Binary(o, a, b) => self.binary(*o, *a, *b, ty)?,
            Op::Cmp(c, a, b) => self.compare(*c, *a, *b)?,
            Op::Select(c, a, b) => {
                let (c, a, b) = (self.v(*c)?.into_int_value(), self.v(*a)?, self.v(*b)?);
                ll!(self, self.b.build_select(c, a, b, ""))
            }
            Op::Cast(a) => self.cast(*a, ty)?,
            Op::Bitcast(a) => {
                let mut v = self.v(*a)?;
                // To a 16-bit float (f16, bf16) from anything else, through an i16
                // `mov.b16`: NVPTX cannot select a direct `bf16 = bitcast f16`, and LLVM folds
                // a chain of bitcasts into one, also `f16 -> u16 -> bf16` (the whole-language
                // campaign's programs aborted LLVM with it: "Cannot select: bf16 = bitcast").
                if ty.is_half() && v.get_type() != rt {
                    let i16t = self.ctx.i16_type();
                    let bits = ll!(self, self.b.build_bit_cast(v, i16t, ""));
                    v = super::asm::pure_asm(
                        self,
                        "mov.b16 $0, $1;",
                        "=h,h",
                        &[bits],
                        i16t.into(),
                    )?;
                }
                ll!(self, self.b.build_bit_cast(v, rt, ""))
            }
            Op::Load { array, index } => {
                let p = self.element_ptr(*array, *index)?;
                let mt = mem_type(self.ctx, ty);
                let v = ll!(self, self.b.build_load(mt, p, ""));
                if let Some(inst) = v.as_instruction_value() {
                    let _ = inst.set_alignment(ty.size() as u32);
                }
                if ty == ScalarTy::Bool {
                    let zero = self.ctx.i8_type().const_zero();
                    ll!(
                        self,
                        self.b
                            .build_int_compare(IntPredicate::NE, v.into_int_value(), zero, "")
                    )
                    .into()
                } else {
                    v
                }
            }
            Op::LoadLane {
                array,
                index,
                lane,
                width,
            } => {
                if *lane == 0 {
                    let p = self.vec_ptr(*array, *index, *width as u32)?;
                    let vt = match rt {
                        BasicTypeEnum::FloatType(t) => t.vec_type(*width as u32),
                        BasicTypeEnum::IntType(t) => t.vec_type(*width as u32),
                        _ => return Err(self.err("vector of an unsupported type")),
                    };
                    let v = ll!(self, self.b.build_load(vt, p, ""));
                    if let Some(inst) = v.as_instruction_value() {
                        let _ = inst.set_alignment(*width as u32 * ty.size() as u32);
                    }
                    self.last_vec = Some((*array, *index, *width, v.into_vector_value()));
                }
                let vec = match self.last_vec {
                    Some((a, i, w, v)) if a == *array && i == *index && w == *width => v,
                    _ => return Err(self.err("vector lane without its load")),
                };
                let idx = self.ctx.i32_type().const_int(*lane as u64, false);
                ll!(self, self.b.build_extract_element(vec, idx, ""))
            }
            Op::ArrayDim { array, dim } => match array {
                ArrayRef::Param(i) => {
                    let (_, dims) = self.arrays[*i as usize]
                        .as_ref()
                        .ok_or_else(|| self.err("not an array parameter"))?;
                    (*dims
                        .get(*dim as usize)
                        .ok_or_else(|| self.err("no such dimension"))?)
                    .into()
                }
                ArrayRef::Shared(i) | ArrayRef::Local(i) => {
                    let decls = match array {
                        ArrayRef::Shared(_) => &self.f.shared,
                        _ => &self.f.locals,
                    };
                    let e = decls
                        .get(*i as usize)
                        .and_then(|d| d.dim(*dim as usize))
                        .ok_or_else(|| self.err("no such dimension"))?;
                    self.ctx.i64_type().const_int(e, false).into()
                }
                ArrayRef::DynShared(_) => {
                    return Err(self.err("the dynamic shared array has no known length"))
                }
                ArrayRef::Const(i) => self
                    .ctx
                    .i64_type()
                    .const_int(crate::ir::const_len(self.f, *i), false)
                    .into(),
            },
            Op::NdIndex { indices, dims, .. } => {
                // `(i0 * d1 + i1) * d2 + i2`: the extents of static arrays are constants, so
                // this folds to shifts or multiply-adds; the leading extent is unused.
                let first = indices
                    .first()
                    .ok_or_else(|| self.err("an n-D index with no index"))?;
                let mut flat = self.v(*first)?.into_int_value();
                for (i, d) in indices.iter().zip(dims).skip(1) {
                    let (i, d) = (self.v(*i)?.into_int_value(), self.v(*d)?.into_int_value());
                    let scaled = ll!(self, self.b.build_int_mul(flat, d, ""));
                    flat = ll!(self, self.b.build_int_add(scaled, i, ""));
                }
                flat.into()
            }
            Op::ReadVar(var) => ll!(self, self.b.build_load(rt, self.vars[var.0 as usize], "")),
            Op::SyncReduce(kind, pred) => {
                let p = self.v(*pred)?.into_int_value();
                let p32 = ll!(self, self.b.build_int_z_extend(p, self.ctx.i32_type(), ""));
                let name = match kind {
                    SyncReduce::Count => "llvm.nvvm.barrier0.popc",
                    SyncReduce::And => "llvm.nvvm.barrier0.and",
                    SyncReduce::Or => "llvm.nvvm.barrier0.or",
                };
                let r = self
                    .call(name, Some(self.ctx.i32_type().into()), &[p32.into()])?
                    .ok_or_else(|| self.err("barrier reduction returned nothing"))?
                    .into_int_value();
                match kind {
                    SyncReduce::Count => r.into(),
                    _ => {
                        let zero = self.ctx.i32_type().const_zero();
                        ll!(
                            self,
                            self.b.build_int_compare(IntPredicate::NE, r, zero, "")
                        )
                        .into()
                    }
                }
            }
            Op::Call(fid, args) => {
                let callee = *self
                    .callees
                    .get(fid.0 as usize)
                    .ok_or_else(|| self.err("unknown device function"))?;
                let mut margs: Vec<BasicMetadataValueEnum> = Vec::new();
                for a in args {
                    let mut v = self.v(*a)?;
                    if self.ty(*a) == ScalarTy::Bool {
                        v = ll!(
                            self,
                            self.b
                                .build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "")
                        )
                        .into();
                    }
                    margs.push(v.into());
                }
                let call = ll!(self, self.b.build_call(callee, &margs, ""));
                call.try_as_basic_value()
                    .basic()
                    .unwrap_or_else(|| self.ctx.bool_type().const_zero().into())
            }
            Op::Math(mf, args) => crate::codegen::math::lower_math(self, *mf, args, ty)?,
            Op::Atomic(a) => crate::codegen::atomics::lower_atomic(self, a, ty)?,
            Op::Warp(w) => crate::codegen::warp::lower_warp(self, w, ty)?,
            Op::Hopper(h) => crate::codegen::hopper::lower_hopper_op(self, id, h)?,
            Op::StreamCreate(c) => {
                crate::codegen::device_launch::lower_stream::lower_create(self, c)?
            }
            Op::Texture(t) => crate::codegen::texture_lower::lower_texture_op(self, id, t, ty)?,
            Op::CallExtern(e, args) => {
                crate::codegen::extern_fn::lower_call_extern(self, *e, args)?
            }
        })
    }
}
