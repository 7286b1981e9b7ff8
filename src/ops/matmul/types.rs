//! The element types of a matrix multiply: inputs ([`MatmulInput`]: f32, f16, bf16) and
//! outputs ([`MatmulOutput`]: f32, f16, bf16); accumulation is always f32.

use half::{bf16, f16};

use crate::codegen::{
    DArray, Expr, FragA, FragB, KernelBuilder, MmaInput, NdMut, ReadWrite, Scalar,
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for crate::ir::F8E4M3 {}
    impl Sealed for crate::ir::F8E5M2 {}
}

/// An input element type of [`Matmul`](super::Matmul): `f32` (SIMT FMA, or tf32 on the tensor
/// cores when allowed), `half::f16` and `half::bf16` (tensor cores on sm_80+, SIMT before), the
/// 8-bit floats [`F8E4M3`](crate::F8E4M3) and [`F8E5M2`](crate::F8E5M2) (the wgmma engines on
/// sm_90 with both operands read K-major, others staged so; `mma.sync` on sm_89; SIMT before);
/// f32 accumulation for all. Each is also an output type.
pub trait MatmulInput:
    Scalar
    + MmaInput<Acc = f32>
    + crate::codegen::WgmmaInput
    + MatmulOutput
    + sealed::Sealed
    + Send
    + Sync
    + 'static
{
    /// The A fragment of the 16×K MMA tile at `(row0, k0)` of shared buffer `buf` (`[m][k]`,
    /// rows 16-byte aligned): one `ldmatrix.x4` (for tf32 too: its rows are K-contiguous).
    #[doc(hidden)]
    fn frag_a(
        k: &KernelBuilder,
        sa: &NdMut<Self, 3>,
        buf: Expr<u32>,
        row0: Expr<u32>,
        k0: u32,
    ) -> FragA<Self>;

    /// The B fragment of the K×8 MMA tile at `(k0, col0)` of shared buffer `buf` (`[k][n]`,
    /// rows 16-byte aligned): one `ldmatrix.x2.trans` for the 16-bit types, element loads for
    /// tf32.
    #[doc(hidden)]
    fn frag_b(
        k: &KernelBuilder,
        sb: &NdMut<Self, 3>,
        buf: Expr<u32>,
        k0: u32,
        col0: Expr<u32>,
    ) -> FragB<Self>;

    /// The A fragment (16×K) from the flat shared array `sh`: `idx(m, kk)` is the flat index
    /// of the fragment's element `(m, kk)`; `trans` when the tile is stored `[k][m]` (lines
    /// along M), else `[m][k]`. Lines 16-byte aligned. One `ldmatrix.x4` (`.trans` when
    /// `trans`) for the 16-bit types; for tf32 one `ldmatrix.x4` from `[m][k]`, element loads
    /// from `[k][m]`.
    #[doc(hidden)]
    fn frag_a_flat(
        k: &KernelBuilder,
        sh: &DArray<Self, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> FragA<Self>;

    /// The B fragment (K×8) from the flat shared array `sh`: `idx(kk, n)` is the flat index
    /// of the fragment's element `(kk, n)`; `trans` when the tile is stored `[n][k]` (lines
    /// along K), else `[k][n]`. One `ldmatrix.x2` (`.trans` for `[k][n]`) for the 16-bit
    /// types; for tf32 one `ldmatrix.x2` from `[n][k]`, element loads from `[k][n]`.
    #[doc(hidden)]
    fn frag_b_flat(
        k: &KernelBuilder,
        sh: &DArray<Self, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> FragB<Self>;

    /// The B fragments of columns `0..8` and `8..16` (K×16) from the flat shared array `sh`,
    /// `idx` and `trans` as for [`frag_b_flat`](MatmulInput::frag_b_flat) with `n` in
    /// `0..16`. One `ldmatrix.x4` for the 16-bit types, and for tf32 from `[n][k]`; element
    /// loads for tf32 from `[k][n]`.
    #[doc(hidden)]
    fn frag_b2_flat(
        k: &KernelBuilder,
        sh: &DArray<Self, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> [FragB<Self>; 2] {
        [
            Self::frag_b_flat(k, sh, trans, idx),
            Self::frag_b_flat(k, sh, trans, &|kk, n| idx(kk, n + 8u32)),
        ]
    }
}

impl MatmulInput for f32 {
    fn frag_a(
        k: &KernelBuilder,
        sa: &NdMut<f32, 3>,
        buf: Expr<u32>,
        row0: Expr<u32>,
        k0: u32,
    ) -> FragA<f32> {
        // [m][k]: K-contiguous rows of 4 f32 are ldmatrix rows.
        FragA::load_shared_tf32(k, sa, |r, c| sa.index3(buf, row0 + r, c + k0))
    }

    fn frag_b(
        k: &KernelBuilder,
        sb: &NdMut<f32, 3>,
        buf: Expr<u32>,
        k0: u32,
        col0: Expr<u32>,
    ) -> FragB<f32> {
        FragB::from_fn(k, |r, c| sb.at3(buf, r + k0, col0 + c))
    }

    fn frag_a_flat(
        k: &KernelBuilder,
        sh: &DArray<f32, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> FragA<f32> {
        if trans {
            FragA::from_fn(k, |r, c| sh.at(idx(r, c)))
        } else {
            // [m][k]: K-contiguous rows of 4 f32 are ldmatrix rows.
            FragA::load_shared_tf32(k, sh, idx)
        }
    }

    fn frag_b_flat(
        k: &KernelBuilder,
        sh: &DArray<f32, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> FragB<f32> {
        // Element loads, [k][n] or [n][k]: `ldmatrix` could load the [n][k] ones
        // (`FragB::load_shared_transposed_tf32`), but with it ptxas needs 255 registers and
        // spills in the NT kernel on sm_90, for no measurable gain.
        let _ = trans;
        FragB::from_fn(k, |r, c| sh.at(idx(r, c)))
    }

    fn frag_b2_flat(
        k: &KernelBuilder,
        sh: &DArray<f32, 1, ReadWrite>,
        trans: bool,
        idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
    ) -> [FragB<f32>; 2] {
        [
            Self::frag_b_flat(k, sh, trans, idx),
            Self::frag_b_flat(k, sh, trans, &|kk, n| idx(kk, n + 8u32)),
        ]
    }
}

macro_rules! ldmatrix_input {
    ($t:ty) => {
        impl MatmulInput for $t {
            fn frag_a(
                k: &KernelBuilder,
                sa: &NdMut<$t, 3>,
                buf: Expr<u32>,
                row0: Expr<u32>,
                k0: u32,
            ) -> FragA<$t> {
                FragA::load_shared(k, sa, |r, c| sa.index3(buf, row0 + r, c + k0))
            }

            fn frag_b(
                k: &KernelBuilder,
                sb: &NdMut<$t, 3>,
                buf: Expr<u32>,
                k0: u32,
                col0: Expr<u32>,
            ) -> FragB<$t> {
                FragB::load_shared(k, sb, |r, c| sb.index3(buf, r + k0, col0 + c))
            }

            fn frag_a_flat(
                k: &KernelBuilder,
                sh: &DArray<$t, 1, ReadWrite>,
                trans: bool,
                idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
            ) -> FragA<$t> {
                if trans {
                    FragA::load_shared_transposed(k, sh, |kk, m| idx(m, kk))
                } else {
                    FragA::load_shared(k, sh, |m, kk| idx(m, kk))
                }
            }

            fn frag_b_flat(
                k: &KernelBuilder,
                sh: &DArray<$t, 1, ReadWrite>,
                trans: bool,
                idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
            ) -> FragB<$t> {
                if trans {
                    FragB::load_shared_transposed(k, sh, |n, kk| idx(kk, n))
                } else {
                    FragB::load_shared(k, sh, |kk, n| idx(kk, n))
                }
            }

            fn frag_b2_flat(
                k: &KernelBuilder,
                sh: &DArray<$t, 1, ReadWrite>,
                trans: bool,
                idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
            ) -> [FragB<$t>; 2] {
                if trans {
                    FragB::load_shared_transposed_pair(k, sh, |n, kk| idx(kk, n))
                } else {
                    FragB::load_shared_pair(k, sh, |kk, n| idx(kk, n))
                }
            }
        }
    };
}

ldmatrix_input!(f16);
ldmatrix_input!(bf16);

/// The 8-bit floats: element loads for `mma.sync` (sm_89's engine; `ldmatrix` has no 8-bit
/// transpose before sm_100), the wgmma engines read shared memory themselves.
macro_rules! element_input {
    ($t:ty) => {
        impl MatmulInput for $t {
            fn frag_a(
                k: &KernelBuilder,
                sa: &NdMut<$t, 3>,
                buf: Expr<u32>,
                row0: Expr<u32>,
                k0: u32,
            ) -> FragA<$t> {
                FragA::from_fn(k, |r, c| sa.at3(buf, row0 + r, c + k0))
            }

            fn frag_b(
                k: &KernelBuilder,
                sb: &NdMut<$t, 3>,
                buf: Expr<u32>,
                k0: u32,
                col0: Expr<u32>,
            ) -> FragB<$t> {
                FragB::from_fn(k, |r, c| sb.at3(buf, r + k0, col0 + c))
            }

            fn frag_a_flat(
                k: &KernelBuilder,
                sh: &DArray<$t, 1, ReadWrite>,
                _trans: bool,
                idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
            ) -> FragA<$t> {
                FragA::from_fn(k, |r, c| sh.at(idx(r, c)))
            }

            fn frag_b_flat(
                k: &KernelBuilder,
                sh: &DArray<$t, 1, ReadWrite>,
                _trans: bool,
                idx: &dyn Fn(Expr<u32>, Expr<u32>) -> Expr<u32>,
            ) -> FragB<$t> {
                FragB::from_fn(k, |r, c| sh.at(idx(r, c)))
            }
        }
    };
}

element_input!(crate::ir::F8E4M3);
element_input!(crate::ir::F8E5M2);

/// An output element type of [`Matmul`](super::Matmul): `f32`, `half::f16`, `half::bf16`, and
/// the 8-bit floats. The f32 result of the epilogue is rounded once to it (to nearest, ties to
/// even; saturating for the 8-bit floats, as PTX's `cvt.rn.satfinite`).
pub trait MatmulOutput: Scalar + sealed::Sealed + Send + Sync + 'static {
    /// The type's name in kernel names.
    const NAME: &'static str;
}

impl MatmulOutput for f32 {
    const NAME: &'static str = "f32";
}
impl MatmulOutput for f16 {
    const NAME: &'static str = "f16";
}
impl MatmulOutput for bf16 {
    const NAME: &'static str = "bf16";
}
impl MatmulOutput for crate::ir::F8E4M3 {
    const NAME: &'static str = "e4m3";
}
impl MatmulOutput for crate::ir::F8E5M2 {
    const NAME: &'static str = "e5m2";
}
