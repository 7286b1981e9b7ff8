//! `ldmatrix` on the simulator: the warp's load of 1, 2 or 4 8×8 matrices of 16-bit elements
//! from shared memory, executed warp-wide when register 0 is met (the later registers, recorded
//! consecutively after it, are then already written).
//!
//! Lanes `0..8·count` give the rows' element indices: each row (16 bytes: 8 elements of a 16-bit
//! array, 4 of a 32-bit one, each then split into its 16-bit halves, low first, as the hardware
//! sees them) must be 16-byte aligned and its elements inside the array (each read is checked, for bounds, races and copies in flight,
//! as a read by the lane that gave the address); the other lanes' indices are not used. All
//! 32 lanes of the warp must execute it together.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use super::access::{index_of, Access};
use super::async_copy::elem_ty;
use super::block::{Block, Frame, Mask};
use super::fault::{array_name, Fault};
use crate::error::FaultKind;
use crate::ir::async_copy::{ldmatrix_coord, LDM_ROWS, LDM_ROW_BYTES};
use crate::ir::{ArrayRef, ValueId};

impl Block<'_> {
    /// One warp-wide `ldmatrix` for every warp here, writing values `dst..dst + count`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ldmatrix(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        array: ArrayRef,
        index: ValueId,
        count: u8,
        trans: bool,
        reg: u8,
        m: &Mask,
    ) -> Result<(), Fault> {
        if reg != 0 {
            return Ok(());
        }
        let (n, f) = (self.n, fr.f);
        let what = format!("ldmatrix.x{count}{}", if trans { ".trans" } else { "" });
        // The array's own elements are read (for bounds, races and copies in flight), then
        // split into the 16-bit halves ldmatrix moves.
        let ety = elem_ty(f, array)
            .filter(|t| matches!(t.size(), 2 | 4))
            .ok_or_else(|| {
                Fault::internal("ldmatrix from an array of neither 16- nor 32-bit elements")
            })?;
        let esz = ety.size();
        let (per_row, halves) = (LDM_ROW_BYTES as usize / esz, esz / 2);
        let tg = self.target(f, array, ety)?;
        let ib = index.0 as usize * n;
        let rows = LDM_ROWS as usize;
        for w in 0..self.nw {
            if m[w] == 0 {
                continue;
            }
            let here = m[w];
            self.whole_warp(w, here, &what, "ldmatrix.sync.aligned", "it")?;
            let base = w * 32;
            // The rows the addressing lanes give: matrix i, row r is lane 8i + r's.
            let mut data = vec![0u16; count as usize * rows * rows];
            for l in 0..count as usize * rows {
                let t = base + l;
                let idx = index_of(f, index, fr.regs[ib + t]);
                let byte = idx.wrapping_mul(esz as i64);
                if byte % LDM_ROW_BYTES as i64 != 0 {
                    return Err(Fault::new(
                        FaultKind::Misaligned,
                        format!(
                            "{} (lane {l}) gives {what} the row starting at element {idx} of {} \
                             (byte offset {byte}), which is not 16-byte aligned: each row of \
                             {per_row} {}-bit elements must start at a multiple of {per_row} \
                             elements",
                            self.who(t),
                            array_name(f, array, None),
                            8 * esz
                        ),
                    ));
                }
                for j in 0..per_row {
                    let e = idx.wrapping_add(j as i64);
                    let v = self
                        .access(fr, array, tg, ety, t, e, Access::Read, |_| None)
                        .map_err(|mut fault| {
                            fault.message += &format!(
                                " (lane {l}'s row of matrix {} of an {what}, elements \
                                 {idx}..{})",
                                l / rows,
                                idx.wrapping_add(per_row as i64)
                            );
                            fault
                        })?;
                    for h in 0..halves {
                        data[l * rows + j * halves + h] = (v >> (16 * h)) as u16;
                    }
                }
            }
            for l in 0..32u32 {
                let t = base + l as usize;
                for i in 0..count as usize {
                    let mut bits = 0u32;
                    for half in 0..2 {
                        let (r, c) = ldmatrix_coord(l, half, trans);
                        let v = data[(i * rows + r as usize) * rows + c as usize];
                        bits |= (v as u32) << (16 * half);
                    }
                    fr.regs[(dst.0 as usize + i) * n + t] = bits as u64;
                }
            }
        }
        Ok(())
    }
}
