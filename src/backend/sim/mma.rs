//! The tensor cores' warp-wide `D = A·B + C` on the simulator.
//!
//! The accumulation order is documented, not the hardware's (which NVIDIA does not specify):
//! each element of D is `C + Σ_k A·B` with every product exact and the sum taken in f64 in
//! order of k, rounded once to f32 (the GPU's result differs from this by at most a few units
//! in the last place, tested with that tolerance); tf32 inputs are first rounded as
//! `cvt.rna.tf32.f32` does. Integer MMAs are exact, wrapping in i32, as on the GPU.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use half::{bf16, f16};

use super::block::{Block, Frame, Mask};
use super::fault::Fault;
use crate::ir::mma::{self, MmaKind, A_REGS, B_REGS, C_ELEMS};
use crate::ir::ValueId;

/// Element `e` (of `per` per register) of a 32-bit register, as f64 or as an integer.
pub(super) fn element(kind: MmaKind, reg: u32, e: u32) -> f64 {
    let bits = kind.elem_bits();
    let raw = if bits == 32 {
        reg
    } else {
        (reg >> ((e % kind.per_reg()) * bits)) & ((1 << bits) - 1)
    };
    match kind {
        MmaKind::F16 => f16::from_bits(raw as u16).to_f64(),
        MmaKind::Bf16 => bf16::from_bits(raw as u16).to_f64(),
        MmaKind::Tf32 => f32::from_bits(mma::round_tf32(raw)) as f64,
        MmaKind::S8 => raw as u8 as i8 as f64,
        MmaKind::U8 => raw as u8 as f64,
        MmaKind::E4M3 => crate::ir::F8E4M3::from_bits(raw as u8).to_f32() as f64,
        MmaKind::E5M2 => crate::ir::F8E5M2::from_bits(raw as u8).to_f32() as f64,
    }
}

impl Block<'_> {
    /// One warp-wide MMA for every warp here: writes all four elements of D (values `dst` to
    /// `dst + 3`, recorded consecutively) when it meets element 0; the later elements' are then
    /// already written.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mma(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        kind: MmaKind,
        a: &[ValueId; A_REGS],
        b: &[ValueId; B_REGS],
        c: &[ValueId; C_ELEMS],
        lane: u8,
        m: &Mask,
    ) -> Result<(), Fault> {
        if lane != 0 {
            return Ok(());
        }
        let n = self.n;
        let reg = |fr: &Frame<'_>, v: ValueId, t: usize| fr.regs[v.0 as usize * n + t];
        let k = kind.k() as usize;
        let int = matches!(kind, MmaKind::S8 | MmaKind::U8);
        for w in 0..self.nw {
            if m[w] == 0 {
                continue;
            }
            let here = m[w];
            self.whole_warp(
                w,
                here,
                &format!("mma ({} inputs)", kind.name()),
                "mma.sync.aligned",
                "tensor-core code",
            )?;
            let base = w * 32;
            let (mut am, mut bm, mut cm) = (
                vec![0f64; mma::M as usize * k],
                vec![0f64; k * mma::N as usize],
                [0f64; (mma::M * mma::N) as usize],
            );
            let per = kind.per_reg();
            for l in 0..32u32 {
                let t = base + l as usize;
                for e in 0..A_REGS as u32 * per {
                    let (r, col) = mma::a_coord(kind, l, e);
                    let v = reg(fr, a[(e / per) as usize], t) as u32;
                    am[r as usize * k + col as usize] = element(kind, v, e);
                }
                for e in 0..B_REGS as u32 * per {
                    let (r, col) = mma::b_coord(kind, l, e);
                    let v = reg(fr, b[(e / per) as usize], t) as u32;
                    bm[r as usize * mma::N as usize + col as usize] = element(kind, v, e);
                }
                for e in 0..C_ELEMS as u32 {
                    let (r, col) = mma::c_coord(l, e);
                    let v = reg(fr, c[e as usize], t) as u32;
                    cm[(r * mma::N + col) as usize] = if int {
                        v as i32 as f64
                    } else {
                        f32::from_bits(v) as f64
                    };
                }
            }
            for l in 0..32u32 {
                let t = base + l as usize;
                for e in 0..C_ELEMS as u32 {
                    let (r, col) = mma::c_coord(l, e);
                    let (r, col) = (r as usize, col as usize);
                    let bits = if int {
                        // Exact: each product fits in 16 bits; wrap the sum as the GPU does.
                        let mut acc = cm[r * mma::N as usize + col] as i32;
                        for i in 0..k {
                            let p = am[r * k + i] as i32 * bm[i * mma::N as usize + col] as i32;
                            acc = acc.wrapping_add(p);
                        }
                        acc as u32 as u64
                    } else {
                        let mut acc = cm[r * mma::N as usize + col];
                        for i in 0..k {
                            acc += am[r * k + i] * bm[i * mma::N as usize + col];
                        }
                        (acc as f32).to_bits() as u64
                    };
                    fr.regs[(dst.0 as usize + e as usize) * n + t] = bits;
                }
            }
        }
        Ok(())
    }
}
