//! What tells one matrix-multiply kernel from another of the same [`Matmul`](super::Matmul):
//! the configuration, the operands' layouts, the vector loads, whether C is read, which
//! epilogue vectors are passed. Kernels are built once per variant and kept.

use super::config::MatmulConfig;

/// One kernel of a `Matmul` (its element types and epilogue are the `Matmul`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Variant {
    pub cfg: MatmulConfig,
    /// op(A) row-major: K is contiguous.
    pub a_row: bool,
    /// op(B) row-major: N is contiguous.
    pub b_row: bool,
    /// C row-major.
    pub c_row: bool,
    /// 4-element vector loads of A along its contiguous axis.
    pub vec_a: bool,
    /// 4-element vector loads of B along its contiguous axis.
    pub vec_b: bool,
    /// A `cp.async` pipeline (`cfg.stages` 3 or 4): the tensor cores' (both operands in
    /// 16-byte chunks), the SIMT kernel's (f32), or the Hopper engines' TMA; otherwise
    /// `cfg.stages` is 1 or 2 (a pipeline that does not apply falls back).
    pub pipe: bool,
    /// beta is not 0: C is read.
    pub read_c: bool,
    /// The Hopper engines' register epilogue (`epilogue_vec`): C row-major, not read, its
    /// start, leading dimension, batch stride and columns multiples of 4 elements; 16-bit, or
    /// f32 on `Wgmma`.
    pub vec_c: bool,
    /// The epilogue takes a per-column vector.
    pub col_vec: bool,
    /// The register epilogue reads the per-column vector two elements at a time (`vec_c`, and
    /// the vector's start aligned to two elements).
    pub col_pairs: bool,
    /// The epilogue takes a per-row vector.
    pub row_vec: bool,
}

impl Variant {
    /// A short tag for the kernel's name.
    pub fn tag(&self) -> String {
        let c = &self.cfg;
        let e = match c.engine {
            super::config::Engine::Simt => "simt",
            super::config::Engine::Mma => "mma",
            super::config::Engine::Wgmma => "wgmma",
            super::config::Engine::WgmmaWs => "wgmma_ws",
        };
        let l = |row: bool| if row { 'r' } else { 'c' };
        let b = |x: bool| if x { '1' } else { '0' };
        let cluster = if c.cluster_m > 1 {
            format!("_c{}", c.cluster_m)
        } else {
            String::new()
        };
        format!(
            "{e}_{}x{}x{}_{}x{}_s{}{}_{}{}{}_v{}{}{}_{}{}{}{}{cluster}",
            c.block_m,
            c.block_n,
            c.block_k,
            c.sub_m,
            c.sub_n,
            c.stages,
            if self.pipe { "p" } else { "" },
            l(self.a_row),
            l(self.b_row),
            l(self.c_row),
            b(self.vec_a),
            b(self.vec_b),
            b(self.vec_c),
            b(self.read_c),
            b(self.col_vec),
            b(self.row_vec),
            if self.col_pairs { "p" } else { "" }
        )
    }
}
