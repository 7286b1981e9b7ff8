//! The data movement of a fast matrix product on sm_80 and later: asynchronous copies from
//! global to shared memory in commit groups (PTX `cp.async`, `cp.async.commit_group`,
//! `cp.async.wait_group`, `cp.async.wait_all`), and the warp's matrix loads from shared memory
//! (`ldmatrix`, an op of `WarpOp`). Written once: the builder records these, the lowering emits
//! the NVVM intrinsics, the simulator executes them with the layout of [`ldmatrix_coord`].

use super::{ArrayRef, ValueId};

/// Rows of one `ldmatrix` matrix (and 16-bit columns): 8×8.
pub(crate) const LDM_ROWS: u32 = 8;
/// Bytes of one row of an `ldmatrix` matrix (8 × 16 bits); each row address must be aligned to it.
pub(crate) const LDM_ROW_BYTES: u32 = 16;

/// Where the element that lane `lane` receives in half `half` (0: bits 0-15, 1: bits 16-31) of
/// its register for one 8×8 matrix sits in that matrix, as `(row, col)`: row `lane / 4`,
/// columns `2·(lane % 4) + half` (PTX ISA, "Warp-level matrix load instruction: ldmatrix");
/// with `.trans` the matrix is transposed, so the element comes from `(col, row)`.
pub(crate) fn ldmatrix_coord(lane: u32, half: u32, trans: bool) -> (u32, u32) {
    let (r, c) = (lane / 4, 2 * (lane % 4) + half);
    if trans {
        (c, r)
    } else {
        (r, c)
    }
}

/// A statement of the asynchronous copies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AsyncCopy {
    /// `cp.async.{ca,cg}.shared.global [dst], [src], bytes{, src_size}`: this thread copies
    /// `bytes` (4, 8 or 16) from element `src_index` of the global array `src` to element
    /// `dst_index` of the shared array `dst`, asynchronously: the copy joins this thread's
    /// open group, and is complete (visible to this thread) once a wait covers that group.
    /// With `src_size` (a u32 value, at most `bytes`), only that many bytes are read and the
    /// rest of the destination is zero-filled.
    Copy {
        dst: ArrayRef,
        dst_index: ValueId,
        src: ArrayRef,
        src_index: ValueId,
        bytes: u8,
        src_size: Option<ValueId>,
        /// `.cg` (cache in L2 only; 16 bytes only) instead of `.ca`.
        cache_global: bool,
    },
    /// `cp.async.commit_group`: this thread's copies since the last commit become a group.
    Commit,
    /// `cp.async.wait_group n`: waits until at most `n` of this thread's committed groups are
    /// incomplete (the oldest complete first).
    Wait(u32),
    /// `cp.async.wait_all`: commits, then waits for every group.
    WaitAll,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each lane receives 2 elements of each matrix, and the warp covers each matrix exactly
    /// once, with or without `.trans`.
    #[test]
    fn ldmatrix_covers_its_matrix() {
        for trans in [false, true] {
            let mut seen = [0u32; 64];
            for lane in 0..32 {
                for half in 0..2 {
                    let (r, c) = ldmatrix_coord(lane, half, trans);
                    assert!(r < LDM_ROWS && c < LDM_ROWS);
                    seen[(r * 8 + c) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{trans}: {seen:?}");
        }
        assert_eq!(ldmatrix_coord(5, 1, false), (1, 3));
        assert_eq!(ldmatrix_coord(5, 1, true), (3, 1));
    }
}
