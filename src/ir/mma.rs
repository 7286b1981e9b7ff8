//! Warp-level matrix multiply-accumulate on the tensor cores (PTX
//! `mma.sync.aligned.m16n8kK.row.col`, sm_80 and later): the operand types, the shapes, and where
//! each element of a lane's fragment sits in the matrices. Written once: the builder derives its
//! address arithmetic from [`a_coord`], [`b_coord`] and [`c_coord`], the simulator executes with
//! them, and the tests check both against the GPU.
//!
//! One MMA of a warp computes `D = A·B + C` with A 16×K (row-major), B K×8 (column-major, the
//! PTX `.row.col` form), C and D 16×8. Each of the 32 lanes holds 4 registers of A, 2 of B and 4
//! accumulator elements of C and D; 16-bit inputs pack 2 elements per 32-bit register, 8-bit
//! inputs 4, lower elements in the lower bits (PTX ISA, "Matrix fragments for mma.m16n8k*").

use super::ScalarTy;

/// Rows of A, C and D.
pub(crate) const M: u32 = 16;
/// Columns of B, C and D.
pub(crate) const N: u32 = 8;
/// 32-bit registers of A per lane.
pub(crate) const A_REGS: usize = 4;
/// 32-bit registers of B per lane.
pub(crate) const B_REGS: usize = 2;
/// Accumulator elements (of C and of D) per lane.
pub(crate) const C_ELEMS: usize = 4;

/// The operand types of an MMA, which fix its K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MmaKind {
    /// f16 × f16 + f32, m16n8k16.
    F16,
    /// bf16 × bf16 + f32, m16n8k16.
    Bf16,
    /// tf32 × tf32 + f32, m16n8k8: f32 inputs rounded to tf32 (10 stored mantissa bits, to
    /// nearest with ties away from zero, `cvt.rna.tf32.f32`) by the MMA itself.
    Tf32,
    /// s8 × s8 + s32, m16n8k32, wrapping.
    S8,
    /// u8 × u8 + s32, m16n8k32, wrapping.
    U8,
    /// e4m3 × e4m3 + f32 (8-bit floats, `F8E4M3`), m16n8k32 (sm_89, PTX ISA 8.4; wgmma on
    /// sm_90a).
    E4M3,
    /// e5m2 × e5m2 + f32 (`F8E5M2`), m16n8k32, as [`MmaKind::E4M3`].
    E5M2,
}

impl MmaKind {
    /// K: the inner dimension.
    pub(crate) const fn k(self) -> u32 {
        match self {
            MmaKind::F16 | MmaKind::Bf16 => 16,
            MmaKind::Tf32 => 8,
            MmaKind::S8 | MmaKind::U8 | MmaKind::E4M3 | MmaKind::E5M2 => 32,
        }
    }

    /// Whether the inputs are 8-bit floats.
    pub(crate) fn is_fp8(self) -> bool {
        matches!(self, MmaKind::E4M3 | MmaKind::E5M2)
    }

    /// Bits of one element of A and B.
    pub(crate) fn elem_bits(self) -> u32 {
        match self {
            MmaKind::F16 | MmaKind::Bf16 => 16,
            MmaKind::Tf32 => 32,
            MmaKind::S8 | MmaKind::U8 | MmaKind::E4M3 | MmaKind::E5M2 => 8,
        }
    }

    /// Elements of A and B per 32-bit register.
    pub(crate) fn per_reg(self) -> u32 {
        32 / self.elem_bits()
    }

    /// The accumulator's type (of C and D).
    pub(crate) fn acc_ty(self) -> ScalarTy {
        match self {
            MmaKind::S8 | MmaKind::U8 => ScalarTy::I32,
            _ => ScalarTy::F32,
        }
    }

    /// The PTX name of the input type.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MmaKind::F16 => "f16",
            MmaKind::Bf16 => "bf16",
            MmaKind::Tf32 => "tf32",
            MmaKind::S8 => "s8",
            MmaKind::U8 => "u8",
            MmaKind::E4M3 => "e4m3",
            MmaKind::E5M2 => "e5m2",
        }
    }
}

/// Lane `lane`'s group (`%laneid >> 2`) and its place in the group (`%laneid % 4`).
fn group(lane: u32) -> (u32, u32) {
    (lane >> 2, lane & 3)
}

/// Row and column in A (16×K) of element `e` of lane `lane`'s A fragment (element `e` is in
/// register `e / per_reg`, bits `(e % per_reg) * elem_bits` up).
pub(crate) fn a_coord(kind: MmaKind, lane: u32, e: u32) -> (u32, u32) {
    let (g, t) = group(lane);
    match kind {
        MmaKind::F16 | MmaKind::Bf16 => (g + 8 * ((e >> 1) & 1), t * 2 + (e & 1) + 8 * (e >> 2)),
        MmaKind::Tf32 => (g + 8 * (e & 1), t + 4 * (e >> 1)),
        MmaKind::S8 | MmaKind::U8 | MmaKind::E4M3 | MmaKind::E5M2 => {
            (g + 8 * ((e >> 2) & 1), t * 4 + (e & 3) + 16 * (e >> 3))
        }
    }
}

/// Row (in K) and column (in N) in B (K×8) of element `e` of lane `lane`'s B fragment.
pub(crate) fn b_coord(kind: MmaKind, lane: u32, e: u32) -> (u32, u32) {
    let (g, t) = group(lane);
    match kind {
        MmaKind::F16 | MmaKind::Bf16 => (t * 2 + (e & 1) + 8 * (e >> 1), g),
        MmaKind::Tf32 => (t + 4 * e, g),
        MmaKind::S8 | MmaKind::U8 | MmaKind::E4M3 | MmaKind::E5M2 => {
            (t * 4 + (e & 3) + 16 * (e >> 2), g)
        }
    }
}

/// Row and column in C and D (16×8) of accumulator element `e` of lane `lane`.
pub(crate) fn c_coord(lane: u32, e: u32) -> (u32, u32) {
    let (g, t) = group(lane);
    (g + 8 * (e >> 1), t * 2 + (e & 1))
}

/// A coordinate function as `(row, col) = (g·rg + t·rt + r0, g·cg + t·ct + c0)` of the lane's
/// group `g` and place `t`: what the builder emits. Every coordinate function above has this
/// form (checked by the tests for every lane and element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Affine {
    /// Row: per group, per place, constant.
    pub row: (u32, u32, u32),
    /// Column: per group, per place, constant.
    pub col: (u32, u32, u32),
}

/// The affine form of `coord` for element `e`, read off lanes 0, 1 and 4.
pub(crate) fn affine(coord: impl Fn(u32, u32) -> (u32, u32), e: u32) -> Affine {
    let (r0, c0) = coord(0, e);
    let (r1, c1) = coord(1, e);
    let (r4, c4) = coord(4, e);
    Affine {
        row: (r4 - r0, r1 - r0, r0),
        col: (c4 - c0, c1 - c0, c0),
    }
}

/// Rounds f32 bits to tf32 as `cvt.rna.tf32.f32` does: to nearest, ties away from zero, the
/// low 13 bits cleared (NaN stays NaN; values past the largest tf32 become infinities).
pub(crate) fn round_tf32(bits: u32) -> u32 {
    if (bits & 0x7fff_ffff) > 0x7f80_0000 {
        return bits | 0x0040_0000; // NaN: quiet, payload kept
    }
    if (bits & 0x7f80_0000) == 0x7f80_0000 {
        return bits; // infinity
    }
    bits.wrapping_add(0x1000) & 0xffff_e000
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [MmaKind; 5] = [
        MmaKind::F16,
        MmaKind::Bf16,
        MmaKind::Tf32,
        MmaKind::S8,
        MmaKind::U8,
    ];

    /// Each fragment covers its matrix exactly once over the warp, and every coordinate is
    /// affine in the lane's group and place.
    #[test]
    fn fragments_tile_their_matrices() {
        for kind in KINDS {
            let k = kind.k();
            let per = kind.per_reg();
            let check =
                |rows: u32, cols: u32, elems: u32, coord: &dyn Fn(u32, u32) -> (u32, u32)| {
                    let mut seen = vec![0u32; (rows * cols) as usize];
                    for e in 0..elems {
                        let a = affine(coord, e);
                        for lane in 0..32 {
                            let (r, c) = coord(lane, e);
                            assert!(r < rows && c < cols, "{kind:?} lane {lane} e {e}");
                            seen[(r * cols + c) as usize] += 1;
                            let (g, t) = (lane >> 2, lane & 3);
                            assert_eq!(
                                (
                                    g * a.row.0 + t * a.row.1 + a.row.2,
                                    g * a.col.0 + t * a.col.1 + a.col.2
                                ),
                                (r, c),
                                "{kind:?}: not affine at lane {lane} e {e}"
                            );
                        }
                    }
                    assert!(seen.iter().all(|&n| n == 1), "{kind:?}: {seen:?}");
                };
            check(M, k, A_REGS as u32 * per, &|l, e| a_coord(kind, l, e));
            check(k, N, B_REGS as u32 * per, &|l, e| b_coord(kind, l, e));
            check(M, N, C_ELEMS as u32, &c_coord);
        }
    }

    #[test]
    fn tf32_rounding() {
        assert_eq!(round_tf32(1.0f32.to_bits()), 1.0f32.to_bits());
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: away from zero.
        assert_eq!(
            round_tf32((1.0f32 + 2f32.powi(-11)).to_bits()),
            (1.0f32 + 2f32.powi(-10)).to_bits()
        );
        assert_eq!(
            round_tf32((-1.0f32 - 2f32.powi(-12)).to_bits()),
            (-1.0f32).to_bits()
        );
        assert_eq!(round_tf32(f32::MAX.to_bits()), f32::INFINITY.to_bits());
        assert_eq!(
            round_tf32(f32::NEG_INFINITY.to_bits()),
            f32::NEG_INFINITY.to_bits()
        );
        assert!(f32::from_bits(round_tf32(f32::NAN.to_bits())).is_nan());
        assert_eq!(round_tf32(0x8000_0000), 0x8000_0000);
    }
}
