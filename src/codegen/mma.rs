//! The tensor cores in the kernel language (sm_80 and later): a warp's matrix
//! multiply-accumulate `D = A·B + C` (PTX `mma.sync.aligned.m16n8kK.row.col`) on fragments whose
//! types say their operand, element type and shape, so that a wrong combination does not
//! compile.
//!
//! | inputs `T` | shape (M×N×K) | accumulator |
//! |---|---|---|
//! | `half::f16` | 16×8×16 | `f32` |
//! | `half::bf16` | 16×8×16 | `f32` |
//! | `f32` (computed as tf32: rounded to nearest, ties away, by the MMA) | 16×8×8 | `f32` |
//! | `i8` | 16×8×32 | `i32` (wrapping) |
//! | `u8` | 16×8×32 | `i32` (wrapping) |
//! | [`F8E4M3`](crate::F8E4M3), [`F8E5M2`](crate::F8E5M2) (sm_89 and later) | 16×8×32 | `f32` |
//!
//! A is 16×K, B is K×8, C and D are 16×8. Each lane of the warp holds part of each:
//! [`FragA::from_fn`], [`FragB::from_fn`] and [`FragC::from_fn`] ask for exactly the elements the
//! calling lane holds (by row and column), and [`FragC::for_each`] hands them back, so no code
//! needs to know the hardware's fragment layout. All 32 lanes of a warp must execute an MMA
//! together (no branch may split the warp around it). On the simulator each element of D is
//! `C + Σ A·B` with exact products summed in f64 in order of k and rounded once (see
//! `docs/GUIDE.md`); the GPU's tensor cores agree to within a few units in the last place, and
//! exactly for the integer kinds.
//!
//! ```no_run
//! # use cudajit::prelude::*;
//! # use cudajit::codegen::{FragA, FragB, FragC, Kernel};
//! # use half::f16;
//! // One warp: C (16×8, f32, row-major) = A (16×16, f16, row-major) · B (16×8, f16, row-major).
//! let k = Kernel::<(&[f16], &[f16], &mut [f32])>::build("mma16x8x16", |k, (a, b, c)| {
//!     let fa = FragA::<f16>::from_fn(k, |r, col| a.at(r * 16u32 + col));
//!     let fb = FragB::<f16>::from_fn(k, |kk, n| b.at(kk * 8u32 + n));
//!     let d = k.mma(&fa, &fb, &FragC::zeros());
//!     d.for_each(k, |r, col, v| c.set(r * 8u32 + col, v));
//! })?;
//! # Ok::<(), cudajit::Error>(())
//! ```

use std::marker::PhantomData;

use half::{bf16, f16};
use inkwell::values::BasicValueEnum;

use super::control::KernelBuilder;
use super::expr::Expr;
use super::lower::{unsupported_err, Lowerer};
use super::scalar::{Num, Scalar};
use crate::error::Result;
use crate::ir::mma::{self, Affine, MmaKind, A_REGS, B_REGS, C_ELEMS};
use crate::ir::{Op, ScalarTy, ValueId, WarpOp};

mod sealed {
    pub trait Sealed {}
}

/// An input element type of the tensor cores' MMA: `half::f16`, `half::bf16`, `f32` (as tf32),
/// `i8`, `u8`. It fixes the shape (16×8×K) and the accumulator type.
pub trait MmaInput: Scalar + sealed::Sealed {
    /// The accumulator's type: `f32` for the float inputs, `i32` for the 8-bit integers.
    type Acc: Num;
    /// K, the inner dimension of one MMA: 16 for f16/bf16, 8 for tf32, 32 for i8/u8.
    const K: u32;
    #[doc(hidden)]
    fn kind() -> MmaKindTag;
    #[doc(hidden)]
    fn to_reg_bits(x: Expr<Self>) -> Expr<u32>;
}

/// The IR's kind of an MMA input type (an implementation detail of [`MmaInput`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct MmaKindTag(MmaKind);

macro_rules! mma_input {
    ($t:ty, $acc:ty, $kind:ident, |$x:ident| $bits:expr) => {
        impl sealed::Sealed for $t {}
        impl MmaInput for $t {
            type Acc = $acc;
            const K: u32 = MmaKind::$kind.k();
            fn kind() -> MmaKindTag {
                MmaKindTag(MmaKind::$kind)
            }
            fn to_reg_bits($x: Expr<Self>) -> Expr<u32> {
                $bits
            }
        }
    };
}

mma_input!(f16, f32, F16, |x| x.bitcast::<u16>().cast::<u32>());
mma_input!(bf16, f32, Bf16, |x| x.bitcast::<u16>().cast::<u32>());
mma_input!(f32, f32, Tf32, |x| x.bitcast::<u32>());
mma_input!(i8, i32, S8, |x| x.bitcast::<u8>().cast::<u32>());
mma_input!(u8, i32, U8, |x| x.cast::<u32>());
mma_input!(crate::ir::F8E4M3, f32, E4M3, |x| x
    .bitcast::<u8>()
    .cast::<u32>());
mma_input!(crate::ir::F8E5M2, f32, E5M2, |x| x
    .bitcast::<u8>()
    .cast::<u32>());

fn kind_of<T: MmaInput>() -> MmaKind {
    T::kind().0
}

/// This lane's group (`lane >> 2`) and place in it (`lane & 3`).
fn group(k: &KernelBuilder) -> (Expr<u32>, Expr<u32>) {
    let lane = k.lane_id();
    (lane >> 2u32, lane & 3u32)
}

/// `g·a + t·b + c`, recording only what is not zero.
fn affine_part(g: Expr<u32>, t: Expr<u32>, (a, b, c): (u32, u32, u32)) -> Expr<u32> {
    let term = |x: Expr<u32>, m: u32| match m {
        0 => None,
        1 => Some(x),
        m => Some(x * m),
    };
    let mut acc: Option<Expr<u32>> = None;
    for part in [term(g, a), term(t, b)].into_iter().flatten() {
        acc = Some(match acc {
            Some(s) => s + part,
            None => part,
        });
    }
    match (acc, c) {
        (Some(s), 0) => s,
        (Some(s), c) => s + c,
        (None, c) => Expr::lit(c),
    }
}

fn coords(g: Expr<u32>, t: Expr<u32>, a: Affine) -> (Expr<u32>, Expr<u32>) {
    (affine_part(g, t, a.row), affine_part(g, t, a.col))
}

/// This lane's `n` elements of an operand whose element `e` of lane `l` sits at
/// `coord(kind, l, e)`: `elem(row, col)` for each, in order.
fn lane_elems<T: MmaInput>(
    k: &KernelBuilder,
    n: usize,
    coord: fn(MmaKind, u32, u32) -> (u32, u32),
    elem: &mut impl FnMut(Expr<u32>, Expr<u32>) -> Expr<T>,
) -> Vec<Expr<T>> {
    let kind = kind_of::<T>();
    let (g, t) = group(k);
    (0..n as u32)
        .map(|e| {
            let (r, c) = coords(g, t, mma::affine(|l, e| coord(kind, l, e), e));
            elem(r, c)
        })
        .collect()
}

/// Packs `per` elements per 32-bit register, lower elements in lower bits.
fn pack<T: MmaInput, const R: usize>(elems: Vec<Expr<T>>) -> [Expr<u32>; R] {
    let per = kind_of::<T>().per_reg() as usize;
    let bits = kind_of::<T>().elem_bits();
    std::array::from_fn(|r| {
        let mut reg: Option<Expr<u32>> = None;
        for (i, &e) in elems[r * per..(r + 1) * per].iter().enumerate() {
            let b = T::to_reg_bits(e);
            let b = if i == 0 { b } else { b << (i as u32 * bits) };
            reg = Some(match reg {
                Some(x) => x | b,
                None => b,
            });
        }
        reg.expect("at least one element per register")
    })
}

/// This lane's part of the A operand (16×K, row-major) of a warp MMA on inputs `T`: 4 32-bit
/// registers (`16·K/32` elements).
#[derive(Clone, Copy, Debug)]
pub struct FragA<T: MmaInput> {
    regs: [Expr<u32>; A_REGS],
    _t: PhantomData<T>,
}

/// This lane's part of the B operand (K×8) of a warp MMA on inputs `T`: 2 32-bit registers
/// (`8·K/32` elements).
#[derive(Clone, Copy, Debug)]
pub struct FragB<T: MmaInput> {
    regs: [Expr<u32>; B_REGS],
    _t: PhantomData<T>,
}

/// This lane's part of an accumulator (C or D, 16×8) of a warp MMA on inputs `T`: 4 elements
/// of `T::Acc`.
#[derive(Clone, Copy, Debug)]
pub struct FragC<T: MmaInput> {
    elems: [Expr<T::Acc>; C_ELEMS],
    _t: PhantomData<T>,
}

impl<T: MmaInput> FragA<T> {
    /// Elements of A each lane holds.
    pub const ELEMS: usize = (16 * T::K / 32) as usize;

    /// The fragment whose elements are `elem(row, col)` (0 ≤ row < 16, 0 ≤ col < K): called
    /// once for each element this lane holds, e.g. `|r, c| a.at((r0 + r) * lda + k0 + c)`.
    #[track_caller]
    pub fn from_fn(
        k: &KernelBuilder,
        mut elem: impl FnMut(Expr<u32>, Expr<u32>) -> Expr<T>,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let elems = lane_elems(k, Self::ELEMS, mma::a_coord, &mut elem);
        Self::from_regs(pack::<T, A_REGS>(elems))
    }

    /// The fragment from this lane's [`ELEMS`](Self::ELEMS) elements in the hardware's order
    /// (element `e` at row `g + 8·((e >> 1) & 1)`, column `2t + (e & 1) + 8·(e >> 2)` for
    /// f16/bf16, `g` = lane / 4, `t` = lane % 4; see the PTX ISA's fragment figures), packed
    /// into registers: how a fragment computed in registers is passed on (e.g. an accumulator
    /// converted to the next MMA's A, as attention's P). Another count is a build error.
    #[track_caller]
    pub fn from_elems(elems: &[Expr<T>]) -> Self {
        let _at = crate::codegen::srcloc::at();
        if elems.len() != Self::ELEMS {
            super::builder::with_state(|s| {
                s.error(
                    super::builder::Kind::ArrayAccess,
                    format!(
                        "in `{}`: an A fragment of {} holds {} elements per lane, not {}",
                        s.f.name,
                        T::TY.name(),
                        Self::ELEMS,
                        elems.len()
                    ),
                )
            });
            let zero = Expr::lit(T::from_bits(0));
            return Self::from_regs(pack::<T, A_REGS>(vec![zero; Self::ELEMS]));
        }
        Self::from_regs(pack::<T, A_REGS>(elems.to_vec()))
    }

    /// The fragment from its 32-bit registers as the hardware holds them (e.g. loaded with
    /// `ldmatrix`): 16-bit inputs 2 per register, 8-bit ones 4, lower elements in lower bits.
    pub fn from_regs(regs: [Expr<u32>; A_REGS]) -> Self {
        FragA {
            regs,
            _t: PhantomData,
        }
    }

    /// The fragment's 32-bit registers.
    pub fn regs(&self) -> [Expr<u32>; A_REGS] {
        self.regs
    }
}

impl<T: MmaInput> FragB<T> {
    /// Elements of B each lane holds.
    pub const ELEMS: usize = (8 * T::K / 32) as usize;

    /// The fragment whose elements are `elem(k, n)` (0 ≤ k < K, 0 ≤ n < 8): called once for
    /// each element this lane holds, e.g. `|kk, n| b.at((k0 + kk) * ldb + n0 + n)` for a
    /// row-major B.
    #[track_caller]
    pub fn from_fn(
        k: &KernelBuilder,
        mut elem: impl FnMut(Expr<u32>, Expr<u32>) -> Expr<T>,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let elems = lane_elems(k, Self::ELEMS, mma::b_coord, &mut elem);
        Self::from_regs(pack::<T, B_REGS>(elems))
    }

    /// The fragment from its 32-bit registers as the hardware holds them.
    pub fn from_regs(regs: [Expr<u32>; B_REGS]) -> Self {
        FragB {
            regs,
            _t: PhantomData,
        }
    }

    /// The fragment's 32-bit registers.
    pub fn regs(&self) -> [Expr<u32>; B_REGS] {
        self.regs
    }
}

impl<T: MmaInput> FragC<T> {
    /// An accumulator of zeros.
    #[track_caller]
    pub fn zeros() -> Self {
        let _at = crate::codegen::srcloc::at();
        let z = Expr::lit(<T::Acc as Scalar>::from_bits(0));
        Self::from_elems([z; C_ELEMS])
    }

    /// The accumulator whose elements are `elem(row, col)` (0 ≤ row < 16, 0 ≤ col < 8): called
    /// once for each of the 4 elements this lane holds.
    #[track_caller]
    pub fn from_fn(
        k: &KernelBuilder,
        mut elem: impl FnMut(Expr<u32>, Expr<u32>) -> Expr<T::Acc>,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let (g, t) = group(k);
        let elems = std::array::from_fn(|e| {
            let (r, c) = coords(g, t, mma::affine(mma::c_coord, e as u32));
            elem(r, c)
        });
        Self::from_elems(elems)
    }

    /// The accumulator from this lane's 4 elements, in the hardware's order.
    pub fn from_elems(elems: [Expr<T::Acc>; C_ELEMS]) -> Self {
        FragC {
            elems,
            _t: PhantomData,
        }
    }

    /// This lane's 4 elements, in the hardware's order.
    pub fn elems(&self) -> [Expr<T::Acc>; C_ELEMS] {
        self.elems
    }

    /// Calls `f(row, col, value)` for each of the 4 elements this lane holds (to store them,
    /// e.g. `|r, c, v| out.set((r0 + r) * ldc + n0 + c, v)`).
    #[track_caller]
    pub fn for_each(
        &self,
        k: &KernelBuilder,
        mut f: impl FnMut(Expr<u32>, Expr<u32>, Expr<T::Acc>),
    ) {
        let _at = crate::codegen::srcloc::at();
        let (g, t) = group(k);
        for (e, &v) in self.elems.iter().enumerate() {
            let (r, c) = coords(g, t, mma::affine(mma::c_coord, e as u32));
            f(r, c, v);
        }
    }

    /// Applies `f` to each element (a scale, an activation), keeping the layout.
    pub fn map(&self, mut f: impl FnMut(Expr<T::Acc>) -> Expr<T::Acc>) -> Self {
        Self::from_elems(self.elems.map(&mut f))
    }
}

/// The tensor cores.
impl KernelBuilder {
    /// `D = A·B + C` for the warp on the tensor cores (PTX `mma.sync.aligned.m16n8kK.row.col`,
    /// sm_80 and later; see the [module docs](crate::codegen::mma) for the shapes). All 32 lanes
    /// of the warp must execute it together.
    #[track_caller]
    pub fn mma<T: MmaInput>(&self, a: &FragA<T>, b: &FragB<T>, c: &FragC<T>) -> FragC<T> {
        let _at = crate::codegen::srcloc::at();
        let kind = kind_of::<T>();
        let ids = |v: &[Expr<u32>]| v.iter().map(|x| ValueId(x.id)).collect::<Vec<_>>();
        let (ra, rb) = (ids(&a.regs), ids(&b.regs));
        let rc: Vec<ValueId> = c.elems.iter().map(|x| ValueId(x.id)).collect();
        let operands: Vec<(u32, u32)> = a
            .regs
            .iter()
            .chain(&b.regs)
            .map(|x| x.raw())
            .chain(c.elems.iter().map(|x| x.raw()))
            .collect();
        let elems = std::array::from_fn(|lane| {
            let op = WarpOp::Mma {
                kind,
                a: std::array::from_fn(|i| ra[i]),
                b: std::array::from_fn(|i| rb[i]),
                c: std::array::from_fn(|i| rc[i]),
                lane: lane as u8,
            };
            // Lanes see different elements: never uniform across a block.
            Expr::record(Op::Warp(op), &operands, true)
        });
        FragC::from_elems(elems)
    }
}

/// Lowers element `lane` of an MMA: element 0 emits the instruction, the others extract from it.
pub(crate) fn lower_mma<'c>(
    lw: &mut Lowerer<'c, '_>,
    kind: MmaKind,
    a: &[ValueId; A_REGS],
    b: &[ValueId; B_REGS],
    c: &[ValueId; C_ELEMS],
    lane: u8,
) -> Result<BasicValueEnum<'c>> {
    let key = (kind, *a, *b, *c);
    if lane == 0 {
        let sm = lw.opts.sm();
        if sm < (8, 0) {
            return Err(unsupported_err(
                &lw.f.name,
                format!(
                    "the tensor-core MMA on {} inputs (mma.sync m16n8k{}) needs compute capability \
                     8.0 or later, and this kernel is compiled for sm_{}{}: run it on an Ampere or \
                     newer GPU (or set PtxOptions::cc), or compute without the tensor cores",
                    kind.name(),
                    kind.k(),
                    sm.0,
                    sm.1
                ),
            ));
        }
        let i32t = lw.ctx.i32_type();
        let f32t = lw.ctx.f32_type();
        let mut args: Vec<BasicValueEnum<'c>> = Vec::with_capacity(10);
        for &r in a.iter().chain(b) {
            let v = lw.v(r)?;
            args.push(match kind {
                MmaKind::F16 => {
                    let h2 = lw.ctx.f16_type().vec_type(2);
                    lw.b.build_bit_cast(v, h2, "")
                        .map_err(|e| lw.err(e.to_string()))?
                }
                MmaKind::Tf32 => {
                    let f =
                        lw.b.build_bit_cast(v, f32t, "")
                            .map_err(|e| lw.err(e.to_string()))?;
                    lw.call("llvm.nvvm.f2tf32.rna", Some(i32t.into()), &[f])?
                        .ok_or_else(|| lw.err("f2tf32 returned nothing"))?
                }
                _ => v,
            });
        }
        for &x in c {
            args.push(lw.v(x)?);
        }
        let acc = if kind.acc_ty() == ScalarTy::I32 {
            i32t.into()
        } else {
            f32t.into()
        };
        let ret = lw.ctx.struct_type(&[acc; C_ELEMS], false);
        let d = if kind.is_fp8() {
            // No LLVM 19 intrinsic: inline PTX (ISA 8.4, which the kernel's target then asks for).
            if sm < (8, 9) {
                return Err(unsupported_err(
                    &lw.f.name,
                    format!(
                        "the tensor-core MMA on {} inputs (mma.sync m16n8k32) needs compute \
                         capability 8.9 or later, and this kernel is compiled for sm_{}{}: run it \
                         on an Ada or Hopper GPU (or set PtxOptions::cc)",
                        kind.name(),
                        sm.0,
                        sm.1
                    ),
                ));
            }
            let ty = kind.name();
            let text = format!(
                "mma.sync.aligned.m16n8k32.row.col.f32.{ty}.{ty}.f32 {{$0, $1, $2, $3}}, \
                 {{$4, $5, $6, $7}}, {{$8, $9}}, {{$10, $11, $12, $13}};"
            );
            let cons = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f".to_string();
            super::lower::pure_asm(lw, &text, &cons, &args, ret.into())?.into_struct_value()
        } else {
            let name = match kind {
                MmaKind::F16 => "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                MmaKind::Bf16 => "llvm.nvvm.mma.m16n8k16.row.col.bf16",
                MmaKind::Tf32 => "llvm.nvvm.mma.m16n8k8.row.col.tf32",
                MmaKind::S8 => "llvm.nvvm.mma.m16n8k32.row.col.s8",
                MmaKind::U8 => "llvm.nvvm.mma.m16n8k32.row.col.u8",
                MmaKind::E4M3 | MmaKind::E5M2 => unreachable!("fp8 MMAs are inline PTX"),
            };
            lw.call(name, Some(ret.into()), &args)?
                .ok_or_else(|| lw.err("mma returned nothing"))?
                .into_struct_value()
        };
        lw.last_mma = Some((key, d));
    }
    let d = match lw.last_mma {
        Some((k, d)) if k == key => d,
        _ => return Err(lw.err("an MMA element without its MMA")),
    };
    lw.b.build_extract_value(d, lane as u32, "")
        .map_err(|e| lw.err(e.to_string()))
}
