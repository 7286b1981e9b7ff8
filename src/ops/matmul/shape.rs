//! The operands of a matrix multiply as the kernels see them: a 2-D matrix or a 3-D batch of
//! matrices, row- or column-major (one unit stride among the last two axes), with a leading
//! dimension and a batch stride; and the checks of a problem's shapes, contexts and overlap.

use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{AsStrided, AsStridedMut, DeviceCopy};

/// cuBLAS's `op`: an operand used as given or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transpose {
    /// As given (`CUBLAS_OP_N`).
    #[default]
    N,
    /// Transposed (`CUBLAS_OP_T`): the last two axes swapped.
    T,
}

/// One operand after its `op`: element `[b, i, j]` at `ptr + (b·bs + i·rs + j·cs)·size`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Operand {
    pub ptr: u64,
    pub size: usize,
    pub batch: usize,
    pub rows: usize,
    pub cols: usize,
    /// Whether the columns are the contiguous axis (row-major); else the rows are.
    pub row_major: bool,
    /// The stride of the other axis (the leading dimension), in elements.
    pub ld: usize,
    /// The batch stride, in elements (0: one matrix for every batch).
    pub bs: usize,
}

impl Operand {
    /// Describes the view `v` (2-D or 3-D) of `what` under `op`.
    pub fn of<'v, T: DeviceCopy, X: AsStrided<T> + ?Sized>(
        what: &str,
        v: &'v X,
        op: Transpose,
    ) -> Result<(Operand, &'v Context)> {
        let s = v.as_strided();
        let ctx = s.context();
        let o = Self::from_parts(
            what,
            s.device_ptr(),
            s.shape(),
            &s.strides(),
            op,
            std::mem::size_of::<T>(),
        )?;
        Ok((o, ctx))
    }

    /// Describes the writable view `v` (2-D or 3-D) of `what`.
    pub fn of_mut<'v, T: DeviceCopy, X: AsStridedMut<T> + ?Sized>(
        what: &str,
        v: &'v mut X,
    ) -> Result<(Operand, &'v Context)> {
        let s = v.as_strided_mut();
        let ctx = s.context();
        let o = Self::from_parts(
            what,
            s.device_ptr(),
            s.shape(),
            &s.strides(),
            Transpose::N,
            std::mem::size_of::<T>(),
        )?;
        Ok((o, ctx))
    }

    pub fn from_parts(
        what: &str,
        ptr: u64,
        shape: &[usize],
        strides: &[isize],
        op: Transpose,
        size: usize,
    ) -> Result<Operand> {
        let (batch, bs, rows, cols, rs, cs) = match (shape, strides) {
            (&[r, c], &[rs, cs]) => (1, 0, r, c, rs, cs),
            (&[b, r, c], &[bs, rs, cs]) => (b, if b <= 1 { 0 } else { bs }, r, c, rs, cs),
            _ => {
                return Err(Error::usage(format!(
                    "matmul: {what} must be a matrix (2-D) or a batch of matrices (3-D), not an array of shape {shape:?}"
                )))
            }
        };
        let (rows, cols, rs, cs) = match op {
            Transpose::N => (rows, cols, rs, cs),
            Transpose::T => (cols, rows, cs, rs),
        };
        let neg = |s: isize, len: usize| s < 0 && len > 1;
        if neg(rs, rows) || neg(cs, cols) || (bs < 0 && batch > 1) {
            return Err(Error::usage(format!(
                "matmul: {what} has a reversed axis (strides {strides:?}); reversed views are not \
                 supported: copy it first (`.to_contiguous(stream)`)"
            )));
        }
        let (rs, cs, bs) = (rs.max(0) as usize, cs.max(0) as usize, bs.max(0) as usize);
        let (row_major, ld) = if cs == 1 || cols <= 1 {
            (true, if rows > 1 { rs } else { cols.max(1) })
        } else if rs == 1 || rows <= 1 {
            (false, cs)
        } else {
            return Err(Error::usage(format!(
                "matmul: {what} (shape {shape:?}, strides {strides:?}) has no unit stride along \
                 either of its last two axes; a matrix operand must be row-major or column-major \
                 (any leading dimension): copy it first (`.to_contiguous(stream)`)"
            )));
        };
        if ptr % size as u64 != 0 {
            return Err(Error::usage(format!(
                "matmul: {what} at address {ptr:#x} is not aligned to its {size}-byte elements"
            )));
        }
        Ok(Operand {
            ptr,
            size,
            batch,
            rows,
            cols,
            row_major,
            ld,
            bs,
        })
    }

    /// The number of elements from the first to one past the last (the span the kernel
    /// may read or write); 0 when empty.
    pub fn span(&self) -> usize {
        if self.batch == 0 || self.rows == 0 || self.cols == 0 {
            return 0;
        }
        let (rs, cs) = if self.row_major {
            (self.ld, 1)
        } else {
            (1, self.ld)
        };
        (self.batch - 1) * self.bs + (self.rows - 1) * rs + (self.cols - 1) * cs + 1
    }

    /// The byte range it touches.
    fn bytes(&self) -> (u64, u64) {
        (self.ptr, self.ptr + (self.span() * self.size) as u64)
    }

    /// Whether 4-element vector loads along the contiguous axis are possible: the address, the
    /// leading dimension and the batch stride are multiples of 4 elements (and 4 elements are
    /// at most 16 bytes), and the contiguous extent is a multiple of 4.
    pub fn vec4_ok(&self) -> bool {
        let contiguous = if self.row_major { self.cols } else { self.rows };
        self.size * 4 <= 16
            && self.ptr % (self.size as u64 * 4) == 0
            && self.ld % 4 == 0
            && self.bs % 4 == 0
            && contiguous % 4 == 0
    }
}

/// A checked problem: `C[b] (m×n) = op(A)[b] (m×k) · op(B)[b] (k×n)` for `batch` matrices.
#[derive(Clone, Copy, Debug)]
pub(super) struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub a: Operand,
    pub b: Operand,
    pub c: Operand,
}

impl Problem {
    /// Checks the shapes: inner dimensions agree, C is `m × n`, the batches agree (an operand
    /// of batch 1, or 2-D, is used for every batch of C).
    pub fn new(a: Operand, b: Operand, c: Operand) -> Result<Problem> {
        let (m, k, n) = (a.rows, a.cols, b.cols);
        if b.rows != k {
            return Err(Error::Shape {
                op: "matmul: op(B)'s rows must equal op(A)'s columns (K)",
                expected: vec![k, n],
                actual: vec![b.rows, b.cols],
            });
        }
        if c.rows != m || c.cols != n {
            return Err(Error::Shape {
                op: "matmul: C must be op(A)'s rows × op(B)'s columns",
                expected: vec![m, n],
                actual: vec![c.rows, c.cols],
            });
        }
        let batch = c.batch;
        for (x, name) in [(&a, "A"), (&b, "B")] {
            if x.batch != 1 && x.batch != batch {
                return Err(Error::usage(format!(
                    "matmul: {name} has a batch of {} matrices and C {batch}; an operand's batch \
                     must be C's or 1 (one matrix for every batch)",
                    x.batch
                )));
            }
        }
        let mut p = Problem {
            m,
            n,
            k,
            batch,
            a,
            b,
            c,
        };
        if p.a.batch == 1 {
            p.a.bs = 0;
        }
        if p.b.batch == 1 {
            p.b.bs = 0;
        }
        Ok(p)
    }

    /// Whether nothing is computed (an empty C).
    pub fn is_noop(&self) -> bool {
        self.m == 0 || self.n == 0 || self.batch == 0
    }

    /// Refuses a C that overlaps A or B (the kernel would read what it already wrote).
    pub fn check_overlap(&self) -> Result<()> {
        let (c0, c1) = self.c.bytes();
        for (x, name) in [(&self.a, "A"), (&self.b, "B")] {
            let (x0, x1) = x.bytes();
            if x0 < c1 && c0 < x1 && x0 < x1 && c0 < c1 {
                return Err(Error::usage(format!(
                    "matmul: the output C overlaps the input {name} in memory; write the product \
                     to another array"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let a = Operand::from_parts("A", 0, &[3, 5], &[5, 1], Transpose::N, 4).unwrap();
        assert!(a.row_major && a.ld == 5 && a.rows == 3 && a.cols == 5);
        let t = Operand::from_parts("A", 0, &[3, 5], &[5, 1], Transpose::T, 4).unwrap();
        assert!(!t.row_major && t.ld == 5 && t.rows == 5 && t.cols == 3);
        let f = Operand::from_parts("A", 0, &[3, 5], &[1, 3], Transpose::N, 4).unwrap();
        assert!(!f.row_major && f.ld == 3);
        let b = Operand::from_parts("A", 0, &[2, 3, 5], &[16, 5, 1], Transpose::N, 4).unwrap();
        assert_eq!((b.batch, b.bs, b.span()), (2, 16, 31));
        assert!(Operand::from_parts("A", 0, &[3, 5], &[10, 2], Transpose::N, 4).is_err());
        assert!(Operand::from_parts("A", 0, &[3, 5], &[-5, 1], Transpose::N, 4).is_err());
        assert!(Operand::from_parts("A", 0, &[5], &[1], Transpose::N, 4).is_err());
        // A row vector and a column vector are either.
        assert!(
            Operand::from_parts("A", 0, &[1, 5], &[0, 1], Transpose::N, 4)
                .unwrap()
                .row_major
        );
        let col = Operand::from_parts("A", 0, &[5, 1], &[1, 0], Transpose::N, 4).unwrap();
        assert!(col.row_major && col.ld == 1 && col.span() == 5);
    }

    #[test]
    fn overlap_and_batches() {
        let op = |ptr: u64, shape: &[usize], strides: &[isize]| {
            Operand::from_parts("X", ptr, shape, strides, Transpose::N, 4).unwrap()
        };
        let a = op(0x1000, &[4, 6], &[6, 1]);
        let b = op(0x2000, &[6, 3], &[3, 1]);
        let c = op(0x3000, &[4, 3], &[3, 1]);
        let p = Problem::new(a, b, c).unwrap();
        p.check_overlap().unwrap();
        // C inside A's memory.
        let c_in_a = op(0x1000 + 8, &[4, 3], &[3, 1]);
        let e = Problem::new(a, b, c_in_a)
            .unwrap()
            .check_overlap()
            .unwrap_err();
        assert!(e.to_string().contains("overlaps the input A"), "{e}");
        // Just after B: no overlap.
        let c_after_b = op(0x2000 + 18 * 4, &[4, 3], &[3, 1]);
        Problem::new(a, b, c_after_b)
            .unwrap()
            .check_overlap()
            .unwrap();
        // Batches: a 3-D A of 2 with a 3-D C of 3 is an error; a batch of 1 broadcasts.
        let a2 = op(0x1000, &[2, 4, 6], &[24, 6, 1]);
        let c3 = op(0x9000, &[3, 4, 3], &[12, 3, 1]);
        assert!(Problem::new(a2, b, c3).is_err());
        let a1 = op(0x1000, &[1, 4, 6], &[24, 6, 1]);
        let p = Problem::new(a1, b, c3).unwrap();
        assert_eq!((p.batch, p.a.bs, p.b.bs, p.c.bs), (3, 0, 0, 12));
        assert!(Problem::new(a, op(0x2000, &[5, 3], &[3, 1]), c).is_err());
    }
}
