//! The warp's matrix loads from shared memory (PTX `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}
//! {,.trans}.shared.b16`, sm_80 and later here), and the tensor-core fragments loaded with
//! them.
//!
//! One `ldmatrix` loads 1, 2 or 4 matrices of 8×8 16-bit elements for the whole warp: lanes
//! `8i..8i+8` each give the shared-memory address of one row (8 consecutive elements, 16
//! bytes, 16-byte aligned) of matrix `i`, and every lane receives one 32-bit register per
//! matrix holding 2 elements: lane `t` gets row `t / 4`, columns `2·(t % 4)` (low 16 bits) and
//! `2·(t % 4) + 1` (high 16 bits) — with `.trans`, of the transposed matrix. That is exactly
//! the tensor cores' fragment layout, so [`FragA::load_shared`] and the `FragB` loaders fill a
//! fragment with one instruction instead of 8 (or 4) scalar loads and the packing.
//!
//! ```no_run
//! # use cudajit::codegen::{FragA, FragB, FragC, Kernel};
//! # use cudajit::f16;
//! // One warp: D (16×8, f32) = A (16×16, row-major) · B (16×8, row-major), through shared memory.
//! let k = Kernel::<(&[f16], &[f16], &mut [f32])>::build("mma_ldmatrix", |k, (a, b, d)| {
//!     let (sa, sb) = (k.shared_array2::<f16>(16, 16), k.shared_array2::<f16>(16, 8));
//!     let l = k.lane_id();
//!     k.for_step(l, 256u32, 32u32, |_, i| sa.set(i, a.at(i)));
//!     k.for_step(l, 128u32, 32u32, |_, i| sb.set(i, b.at(i)));
//!     k.syncwarp(u32::MAX);
//!     let fa = FragA::<f16>::load_shared(k, &sa, |r, c| sa.index2(r, c));
//!     let fb = FragB::<f16>::load_shared(k, &sb, |kk, n| sb.index2(kk, n));
//!     k.mma(&fa, &fb, &FragC::zeros()).for_each(k, |r, c, v| d.set(r * 8u32 + c, v));
//! })?;
//! # Ok::<(), cudajit::Error>(())
//! ```

use half::{bf16, f16};
use inkwell::values::BasicValueEnum;

use super::array::{DArray, Index};
use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::expr::Expr;
use super::lower::{unsupported_err, Lowerer};
use super::mma::{FragA, FragB, MmaInput};
use super::scalar::Scalar;
use crate::error::Result;
use crate::ir::{ArrayRef, Op, ValueId, WarpOp};

mod sealed {
    pub trait Sealed {}
}

/// An element type of a shared array that `ldmatrix` (without `.trans`) loads from: the
/// 16-bit types ([`LdMatrixElem`]) and the 32-bit `f32`, `u32`, `i32`. A matrix row is 16 bytes
/// either way: 8 16-bit elements, or 4 32-bit ones (each then one whole register of the lane
/// that receives it, as the tf32 fragments want). Other element types do not compile:
///
/// ```compile_fail
/// # use cudajit::codegen::Kernel;
/// Kernel::<(&mut [u32],)>::build("ldm_f64", |k, (out,)| {
///     let tile = k.shared_array2::<f64>(8, 2);
///     let [r] = tile.ldmatrix::<1>(k.lane_id() * 2u32); // f64: not a 16- or 32-bit type
///     out.set(k.lane_id(), r);
/// });
/// ```
#[diagnostic::on_unimplemented(
    message = "`ldmatrix` loads from shared arrays of 16-bit (`f16`, `bf16`, `u16`, `i16`) or \
               32-bit (`f32`, `u32`, `i32`) elements, not `{Self}`",
    note = "load other element types with element loads (`at`, `FragA::from_fn`)"
)]
pub trait LdMatrixSrc: Scalar + sealed::Sealed {
    /// Elements in one 16-byte matrix row: 8 for 16-bit types, 4 for 32-bit ones.
    const ROW_ELEMS: u32;
}

/// A 16-bit element type that `ldmatrix` loads, also with `.trans`: `half::f16`, `half::bf16`,
/// `u16`, `i16`.
#[diagnostic::on_unimplemented(
    message = "this `ldmatrix` form works on 16-bit elements (`f16`, `bf16`, `u16`, `i16`), not \
               `{Self}`",
    note = "`.trans` transposes 16-bit elements; 32-bit (tf32) tiles load only without it, from \
            a K-contiguous layout: see `FragA::<f32>::load_shared_tf32` and \
            `FragB::<f32>::load_shared_transposed_tf32`"
)]
///
/// `.trans` and the 16-bit fragment loaders do not compile for f32 tiles (use the `_tf32`
/// loaders):
///
/// ```compile_fail
/// # use cudajit::codegen::Kernel;
/// Kernel::<(&mut [u32],)>::build("ldm_t_f32", |k, (out,)| {
///     let tile = k.shared_array2::<f32>(8, 4);
///     let [r] = tile.ldmatrix_trans::<1>(k.lane_id() * 4u32); // .trans moves 16-bit halves
///     out.set(k.lane_id(), r);
/// });
/// ```
///
/// ```compile_fail
/// # use cudajit::codegen::{FragA, Kernel};
/// Kernel::<(&mut [u32],)>::build("frag_f32", |k, (out,)| {
///     let tile = k.shared_array2::<f32>(16, 8);
///     let fa = FragA::<f32>::load_shared(k, &tile, |r, c| tile.index2(r, c)); // load_shared_tf32
///     out.set(k.lane_id(), fa.regs()[0]);
/// });
/// ```
pub trait LdMatrixElem: LdMatrixSrc {}

macro_rules! ldm_src {
    ($($t:ty => $n:expr),*) => {$(
        impl sealed::Sealed for $t {}
        impl LdMatrixSrc for $t {
            const ROW_ELEMS: u32 = $n;
        }
    )*};
}
ldm_src!(f16 => 8, bf16 => 8, u16 => 8, i16 => 8, f32 => 4, u32 => 4, i32 => 4);
impl LdMatrixElem for f16 {}
impl LdMatrixElem for bf16 {}
impl LdMatrixElem for u16 {}
impl LdMatrixElem for i16 {}

/// What identifies one `ldmatrix` in the lowering: its array, index value, count and `.trans`.
pub(crate) type LdKey = (ArrayRef, ValueId, u8, bool);

/// Records an `ldmatrix` of `N` matrices: `N` values, register 0 first.
#[track_caller]
fn ldmatrix<T: LdMatrixSrc, const N: usize, const D: usize, A>(
    tile: &DArray<T, D, A>,
    row: impl Index,
    trans: bool,
) -> [Expr<u32>; N] {
    const {
        assert!(
            N == 1 || N == 2 || N == 4,
            "ldmatrix loads 1, 2 or 4 matrices"
        )
    };
    let _at = crate::codegen::srcloc::at();
    let (tag, array) = (tile.tag, tile.array);
    with_state(|s| {
        if s.tag != tag {
            s.error(
                Kind::ForeignValue,
                format!("in `{}`: an array of another kernel is used", s.f.name),
            );
        } else if !matches!(array, ArrayRef::Shared(_) | ArrayRef::DynShared(_)) {
            s.error(
                Kind::ArrayAccess,
                format!(
                    "in `{}`: ldmatrix loads from shared memory, but this array is a kernel \
                     parameter, a local or a constant array; copy the tile into a shared array \
                     (`shared_array2`, `dynamic_shared2`, or with `cp_async`) and load from that",
                    s.f.name
                ),
            );
        }
    });
    let row = row.to_index();
    std::array::from_fn(|reg| {
        let op = WarpOp::LdMatrix {
            array,
            index: ValueId(row.id),
            count: N as u8,
            trans,
            reg: reg as u8,
        };
        // Lanes receive different elements: never uniform across a block.
        Expr::record(Op::Warp(op), &[row.raw()], true)
    })
}

/// `ldmatrix`: the warp's loads of 8×8 matrices of 16-bit elements (8×4 of 32-bit ones) from a
/// shared array.
impl<T: LdMatrixSrc, const D: usize, A> DArray<T, D, A> {
    /// Loads `N` (1, 2 or 4) 8×8 matrices for the warp (PTX
    /// `ldmatrix.sync.aligned.m8n8.xN.shared.b16`, sm_80 and later): lanes `8i..8i+8` each
    /// give in `row_start` the flat index of the first of the consecutive elements of this
    /// shared array that form one 16-byte row of matrix `i` (8 16-bit elements, or 4 32-bit
    /// ones; the other lanes' indices are not used); each row must start at a 16-byte aligned
    /// address (a multiple of 8, or 4, elements from the start of the array). Every lane
    /// receives register `i` of matrix `i`: its row `lane / 4`, columns `2·(lane % 4)` (low 16
    /// bits) and `2·(lane % 4) + 1` (high 16 bits) — for 32-bit elements, element `lane % 4`
    /// of the row, whole. All 32 lanes of the warp must execute it together.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// # use cudajit::f16;
    /// let k = Kernel::<(&mut [u32],)>::build("ldm", |k, (out,)| {
    ///     let tile = k.shared_array2::<f16>(16, 16);
    ///     let l = k.lane_id();
    ///     k.for_step(l, 256u32, 32u32, |_, i| tile.set(i, i.cast::<f16>()));
    ///     k.syncwarp(u32::MAX);
    ///     // Lanes 0-15 address rows 0-15 of columns 0-7, lanes 16-31 those of columns 8-15.
    ///     let regs = tile.ldmatrix::<4>(tile.index2(l & 15u32, (l >> 4u32) * 8u32));
    ///     for (i, r) in regs.into_iter().enumerate() {
    ///         out.set(l * 4u32 + i as u32, r);
    ///     }
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn ldmatrix<const N: usize>(&self, row_start: impl Index) -> [Expr<u32>; N] {
        ldmatrix::<T, N, D, A>(self, row_start, false)
    }
}

/// `ldmatrix.trans`: the warp's transposing loads of 8×8 matrices of 16-bit elements.
impl<T: LdMatrixElem, const D: usize, A> DArray<T, D, A> {
    /// [`ldmatrix`](DArray::ldmatrix) with `.trans`: each matrix is transposed as it is
    /// loaded, so lane `t` receives column `t / 4`, rows `2·(t % 4)` and `2·(t % 4) + 1` of
    /// the matrix as stored (the rows given by the lanes' addresses).
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// # use cudajit::f16;
    /// let k = Kernel::<(&mut [u32],)>::build("ldm_t", |k, (out,)| {
    ///     let tile = k.shared_array2::<f16>(16, 8);
    ///     let l = k.lane_id();
    ///     k.for_step(l, 128u32, 32u32, |_, i| tile.set(i, i.cast::<f16>()));
    ///     k.syncwarp(u32::MAX);
    ///     let [r0, r1] = tile.ldmatrix_trans::<2>(tile.index2(l & 15u32, 0u32));
    ///     out.set(l * 2u32, r0);
    ///     out.set(l * 2u32 + 1u32, r1);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn ldmatrix_trans<const N: usize>(&self, row_start: impl Index) -> [Expr<u32>; N] {
        ldmatrix::<T, N, D, A>(self, row_start, true)
    }
}

/// This lane's (row, col) in a 16×16 operand stored row-major whose four 8×8 quarters are
/// addressed by lanes 0-7 (rows 0-7, col 0), 8-15 (rows 8-15, col 0), 16-23 (rows 0-7, col 8)
/// and 24-31 (rows 8-15, col 8).
fn quarters_by_rows(l: Expr<u32>) -> (Expr<u32>, Expr<u32>) {
    (l & 15u32, (l >> 4u32) << 3u32)
}

/// Loading fragments of A from shared memory with one `ldmatrix.x4` (16-bit inputs).
impl<T: MmaInput + LdMatrixElem> FragA<T> {
    /// This lane's A fragment (16×16) from a shared tile holding A row-major: `index(row,
    /// col)` gives the flat index in `tile` of element `(row, col)` of A, e.g. `|r, c|
    /// tile.index2(r0 + r, k0 + c)`. It is called once, with this lane's row start (row `lane %
    /// 16`, column 0 or 8); the 8 elements `(row, col..col + 8)` must be consecutive in `tile`
    /// and 16-byte aligned. One `ldmatrix.x4` (sm_80 and later); all 32 lanes of the warp must
    /// execute it together. The result equals [`FragA::from_fn`] of the same elements.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragA, Kernel};
    /// # use cudajit::f16;
    /// let k = Kernel::<(&[f16], &mut [u32])>::build("load_a", |k, (a, out)| {
    ///     let sa = k.shared_array2::<f16>(16, 24); // 16 x 16 used, rows padded to 48 bytes
    ///     let l = k.lane_id();
    ///     k.for_step(l, 256u32, 32u32, |_, i| sa.set2(i / 16u32, i % 16u32, a.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fa = FragA::<f16>::load_shared(k, &sa, |r, c| sa.index2(r, c));
    ///     for (i, r) in fa.regs().into_iter().enumerate() {
    ///         out.set(l * 4u32 + i as u32, r);
    ///     }
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let (r, c) = quarters_by_rows(k.lane_id());
        Self::from_regs(tile.ldmatrix::<4>(index(r, c)))
    }

    /// This lane's A fragment (16×16) from a shared tile holding A transposed (Aᵀ row-major,
    /// i.e. A column-major, K×16): `index(kk, m)` gives the flat index in `tile` of element
    /// `(kk, m)` of Aᵀ (that is A's `(m, kk)`), e.g. `|kk, m| tile.index2(k0 + kk, m0 + m)`.
    /// Called once with this lane's row start; the 8 elements `(kk, m..m + 8)` must be
    /// consecutive and 16-byte aligned. One `ldmatrix.x4.trans`.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragA, Kernel};
    /// # use cudajit::f16;
    /// let k = Kernel::<(&[f16], &mut [u32])>::build("load_at", |k, (at, out)| {
    ///     let st = k.shared_array2::<f16>(16, 16); // Aᵀ: row kk holds A[0..16][kk]
    ///     let l = k.lane_id();
    ///     k.for_step(l, 256u32, 32u32, |_, i| st.set(i, at.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fa = FragA::<f16>::load_shared_transposed(k, &st, |kk, m| st.index2(kk, m));
    ///     out.set(l, fa.regs()[0]);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared_transposed<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i (lanes 8i..8i+8) is A's quarter (i % 2, i / 2) in (row, col) blocks: rows
        // kk of Aᵀ from 8·(i / 2), columns m from 8·(i % 2).
        let kk = (l & 7u32) + ((l >> 4u32) << 3u32);
        let m = ((l >> 3u32) & 1u32) << 3u32;
        Self::from_regs(tile.ldmatrix_trans::<4>(index(kk, m)))
    }
}

/// Loading fragments of B from shared memory with one `ldmatrix.x2` (16-bit inputs).
impl<T: MmaInput + LdMatrixElem> FragB<T> {
    /// This lane's B fragment (16×8) from a shared tile holding B row-major (K×N, rows along
    /// K): `index(kk, n)` gives the flat index in `tile` of element `(kk, n)` of B, e.g.
    /// `|kk, n| tile.index2(k0 + kk, n0 + n)`. Called once, with this lane's row start (row
    /// `lane % 16`, column 0); the 8 elements `(kk, n..n + 8)` must be consecutive and 16-byte
    /// aligned. One `ldmatrix.x2.trans` (the MMA wants B by columns). The result equals
    /// [`FragB::from_fn`] of the same elements.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragB, Kernel};
    /// # use cudajit::bf16;
    /// let k = Kernel::<(&[bf16], &mut [u32])>::build("load_b", |k, (b, out)| {
    ///     let sb = k.shared_array2::<bf16>(16, 8);
    ///     let l = k.lane_id();
    ///     k.for_step(l, 128u32, 32u32, |_, i| sb.set(i, b.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fb = FragB::<bf16>::load_shared(k, &sb, |kk, n| sb.index2(kk, n));
    ///     out.set(l, fb.regs()[0]);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        // Lanes 16-31 repeat lanes 0-15's addresses (ldmatrix.x2 does not read them).
        let kk = k.lane_id() & 15u32;
        Self::from_regs(tile.ldmatrix_trans::<2>(index(kk, Expr::lit(0u32))))
    }

    /// This lane's B fragment (16×8) from a shared tile holding B transposed (Bᵀ row-major,
    /// N×K: B column-major, the MMA's own `.col` layout): `index(n, kk)` gives the flat index
    /// in `tile` of element `(n, kk)` of Bᵀ (B's `(kk, n)`), e.g. `|n, kk| tile.index2(n0 + n,
    /// k0 + kk)`. Called once with this lane's row start (row `lane % 8`, column 0 or 8); the 8
    /// elements `(n, kk..kk + 8)` must be consecutive and 16-byte aligned. One `ldmatrix.x2`
    /// (no transpose).
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragB, Kernel};
    /// # use cudajit::f16;
    /// let k = Kernel::<(&[f16], &mut [u32])>::build("load_bt", |k, (bt, out)| {
    ///     let sbt = k.shared_array2::<f16>(8, 16); // row n holds B[0..16][n]
    ///     let l = k.lane_id();
    ///     k.for_step(l, 128u32, 32u32, |_, i| sbt.set(i, bt.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fb = FragB::<f16>::load_shared_transposed(k, &sbt, |n, kk| sbt.index2(n, kk));
    ///     out.set(l, fb.regs()[1]);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared_transposed<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        let n = l & 7u32;
        let kk = ((l >> 3u32) & 1u32) << 3u32;
        Self::from_regs(tile.ldmatrix::<2>(index(n, kk)))
    }
}

/// Loading two adjacent B fragments (16×16: columns `n..n + 8` and `n + 8..n + 16`) with one
/// `ldmatrix.x4` (16-bit inputs): half the instructions of two [`FragB::load_shared`].
impl<T: MmaInput + LdMatrixElem> FragB<T> {
    /// The B fragments of columns `0..8` and `8..16` of a 16×16 block of B held row-major
    /// (rows along K): `index(kk, n)` as for [`FragB::load_shared`], called once with this
    /// lane's row start (row `lane % 16`, column 0 or 8). One `ldmatrix.x4.trans`. The results
    /// equal two `load_shared` of columns `0..8` and `8..16`.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragB, Kernel};
    /// # use cudajit::f16;
    /// let k = Kernel::<(&[f16], &mut [u32])>::build("load_b2", |k, (b, out)| {
    ///     let sb = k.shared_array2::<f16>(16, 16);
    ///     let l = k.lane_id();
    ///     k.for_step(l, 256u32, 32u32, |_, i| sb.set(i, b.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let [b0, b1] = FragB::<f16>::load_shared_pair(k, &sb, |kk, n| sb.index2(kk, n));
    ///     out.set(l, b1.regs()[0]);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared_pair<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> [Self; 2] {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i (lanes 8i..8i+8): rows kk from 8·(i % 2), columns n from 8·(i / 2).
        let (kk, n) = quarters_by_rows(l);
        let [r0, r1, r2, r3] = tile.ldmatrix_trans::<4>(index(kk, n));
        [Self::from_regs([r0, r1]), Self::from_regs([r2, r3])]
    }

    /// The B fragments of columns `0..8` and `8..16` of a 16×16 block of B held transposed
    /// (Bᵀ row-major, rows along N): `index(n, kk)` as for
    /// [`FragB::load_shared_transposed`]. One `ldmatrix.x4` (no transpose). The results equal
    /// two `load_shared_transposed` of columns `0..8` and `8..16`.
    #[track_caller]
    pub fn load_shared_transposed_pair<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<T, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> [Self; 2] {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i: rows n from 8·(i / 2), columns kk from 8·(i % 2).
        let n = (l & 7u32) + ((l >> 4u32) << 3u32);
        let kk = ((l >> 3u32) & 1u32) << 3u32;
        let [r0, r1, r2, r3] = tile.ldmatrix::<4>(index(n, kk));
        [Self::from_regs([r0, r1]), Self::from_regs([r2, r3])]
    }
}

/// Loading tf32 fragments (`f32` inputs, m16n8k8) from shared memory with `ldmatrix` (no
/// `.trans`), where the tile is stored K-contiguous: a 16-byte matrix row is then 4 f32 along
/// K, and lane `l` receives the whole element at row `l / 4`, column `l % 4` of each 8×4
/// block — exactly the tf32 fragment layout (A: `a0` `(g, t)`, `a1` `(g + 8, t)`,
/// `a2` `(g, t + 4)`, `a3` `(g + 8, t + 4)`; B: `b0` `(k t, n g)`, `b1` `(k t + 4, n g)`, with
/// `g = lane / 4`, `t = lane % 4`). The registers hold the f32 bits as stored; the MMA rounds them to
/// tf32 as it does for [`FragA::from_fn`]'s, so the fragments are the same bit for bit. Tiles
/// with M (or N) contiguous have no such load (`.trans` moves 16-bit halves): use `from_fn`.
impl FragA<f32> {
    /// This lane's A fragment (16×8) from a shared f32 tile holding A row-major (`[m][k]`):
    /// `index(row, col)` gives the flat index in `tile` of element `(row, col)` of A, e.g.
    /// `|r, c| tile.index2(r0 + r, k0 + c)`. It is called once, with this lane's row start (row
    /// `lane % 16`, column 0 or 4); the 4 elements `(row, col..col + 4)` must be consecutive
    /// in `tile` and 16-byte aligned. One `ldmatrix.x4` (sm_80 and later) instead of 4 element
    /// loads; all 32 lanes of the warp must execute it together. The result equals
    /// [`FragA::from_fn`] of the same elements.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragA, Kernel};
    /// let k = Kernel::<(&[f32], &mut [u32])>::build("load_a_tf32", |k, (a, out)| {
    ///     let sa = k.shared_array2::<f32>(16, 12); // 16 x 8 used, rows padded to 48 bytes
    ///     let l = k.lane_id();
    ///     k.for_step(l, 128u32, 32u32, |_, i| sa.set2(i / 8u32, i % 8u32, a.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fa = FragA::<f32>::load_shared_tf32(k, &sa, |r, c| sa.index2(r, c));
    ///     for (i, r) in fa.regs().into_iter().enumerate() {
    ///         out.set(l * 4u32 + i as u32, r);
    ///     }
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared_tf32<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<f32, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i (lanes 8i..8i+8): rows from 8·(i % 2), columns from 4·(i / 2).
        let (r, c) = (l & 15u32, (l >> 4u32) << 2u32);
        Self::from_regs(tile.ldmatrix::<4>(index(r, c)))
    }
}

/// Loading tf32 B fragments from a shared f32 tile holding B transposed (`[n][k]`, K
/// contiguous): see [`FragA::load_shared_tf32`].
impl FragB<f32> {
    /// This lane's B fragment (8×8) from a shared f32 tile holding B transposed (Bᵀ row-major,
    /// N×K): `index(n, kk)` gives the flat index in `tile` of element `(n, kk)` of Bᵀ (B's
    /// `(kk, n)`), e.g. `|n, kk| tile.index2(n0 + n, k0 + kk)`. Called once with this lane's row
    /// start (row `lane % 8`, column 0 or 4); the 4 elements `(n, kk..kk + 4)` must be
    /// consecutive and 16-byte aligned. One `ldmatrix.x2` instead of 2 element loads. The
    /// result equals [`FragB::from_fn`] of the same elements.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{FragB, Kernel};
    /// let k = Kernel::<(&[f32], &mut [u32])>::build("load_bt_tf32", |k, (bt, out)| {
    ///     let sbt = k.shared_array2::<f32>(8, 8); // row n holds B[0..8][n]
    ///     let l = k.lane_id();
    ///     k.for_step(l, 64u32, 32u32, |_, i| sbt.set(i, bt.at(i)));
    ///     k.syncwarp(u32::MAX);
    ///     let fb = FragB::<f32>::load_shared_transposed_tf32(k, &sbt, |n, kk| sbt.index2(n, kk));
    ///     out.set(l, fb.regs()[1]);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn load_shared_transposed_tf32<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<f32, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> Self {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i (lanes 8i..8i+8; lanes 16-31 repeat 0-15, unread): columns from 4·i.
        let n = l & 7u32;
        let kk = ((l >> 3u32) & 1u32) << 2u32;
        Self::from_regs(tile.ldmatrix::<2>(index(n, kk)))
    }

    /// The B fragments of columns `0..8` and `8..16` of an 8×16 block of B held transposed
    /// (`[n][k]`): `index(n, kk)` as for [`FragB::load_shared_transposed_tf32`] with `n` in
    /// `0..16`. One `ldmatrix.x4`. The results equal two `load_shared_transposed_tf32` of
    /// columns `0..8` and `8..16`.
    #[track_caller]
    pub fn load_shared_transposed_pair_tf32<const D: usize, A, I: Index>(
        k: &KernelBuilder,
        tile: &DArray<f32, D, A>,
        index: impl FnOnce(Expr<u32>, Expr<u32>) -> I,
    ) -> [Self; 2] {
        let _at = crate::codegen::srcloc::at();
        let l = k.lane_id();
        // Matrix i: rows n from 8·(i / 2), columns kk from 4·(i % 2).
        let n = (l & 7u32) + ((l >> 4u32) << 3u32);
        let kk = ((l >> 3u32) & 1u32) << 2u32;
        let [r0, r1, r2, r3] = tile.ldmatrix::<4>(index(n, kk));
        [Self::from_regs([r0, r1]), Self::from_regs([r2, r3])]
    }
}

/// Lowers register `reg` of an `ldmatrix`: register 0 emits the instruction, the others extract
/// from it.
pub(crate) fn lower_ldmatrix<'c>(
    lw: &mut Lowerer<'c, '_>,
    array: ArrayRef,
    index: ValueId,
    count: u8,
    trans: bool,
    reg: u8,
) -> Result<BasicValueEnum<'c>> {
    let key: LdKey = (array, index, count, trans);
    if reg == 0 {
        let sm = lw.opts.sm();
        if sm < (8, 0) {
            return Err(unsupported_err(
                &lw.f.name,
                format!(
                    "ldmatrix (the warp's matrix load from shared memory, used by \
                     FragA/FragB::load_shared) needs compute capability 8.0 or later here, and \
                     this kernel is compiled for sm_{}{}: run it on an Ampere or newer GPU (or \
                     set PtxOptions::cc), or build the fragments with from_fn",
                    sm.0, sm.1
                ),
            ));
        }
        if !matches!(array, ArrayRef::Shared(_) | ArrayRef::DynShared(_)) {
            return Err(lw.err("ldmatrix from an array outside shared memory"));
        }
        let p = lw.element_ptr(array, index)?;
        let name = format!(
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{}.b16.p3",
            if trans { ".trans" } else { "" }
        );
        let i32t = lw.ctx.i32_type();
        let ret = if count == 1 {
            i32t.into()
        } else {
            lw.ctx
                .struct_type(&vec![i32t.into(); count as usize], false)
                .into()
        };
        let v = lw
            .call(&name, Some(ret), &[p.into()])?
            .ok_or_else(|| lw.err("ldmatrix returned nothing"))?;
        let regs = if count == 1 {
            vec![v]
        } else {
            let s = v.into_struct_value();
            (0..count as u32)
                .map(|i| {
                    lw.b.build_extract_value(s, i, "")
                        .map_err(|e| lw.err(e.to_string()))
                })
                .collect::<Result<Vec<_>>>()?
        };
        lw.last_ldmatrix = Some((key, regs));
    }
    match &lw.last_ldmatrix {
        Some((k, regs)) if *k == key => regs
            .get(reg as usize)
            .copied()
            .ok_or_else(|| lw.err("an ldmatrix register past its count")),
        _ => Err(lw.err("an ldmatrix register without its load")),
    }
}
