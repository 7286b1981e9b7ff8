//! The epilogue of a matrix multiply: what happens to each accumulator between the last MMA
//! (or FMA) and the store. `alpha·acc + beta·C` first, then the user's [`Epilogue`] closure
//! (a bias, an activation, a scale), then a cast to the output type, all in the same kernel.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::codegen::{DArray, Expr, KernelBuilder, ReadOnly, ReadWrite, WgmmaAcc};
use crate::context::Context;
use crate::error::Result;
use crate::memory::DeviceSlice;

use super::activation::{gelu_to_bits, relu};
use super::params::Params;
use super::types::{MatmulInput, MatmulOutput};
use super::variant::Variant;

/// The epilogue's closure type.
pub type EpilogueFn = dyn Fn(EpilogueArgs) -> Expr<f32> + Send + Sync;

/// What an epilogue closure sees for one element of C.
#[derive(Clone, Copy, Debug)]
pub struct EpilogueArgs {
    /// `alpha·(op(A)·op(B))[row, col] + beta·C[row, col]`, in f32 (the C term only when beta
    /// is not 0: with beta 0 C is not read, as BLAS).
    pub value: Expr<f32>,
    /// The element's row in C.
    pub row: Expr<u32>,
    /// The element's column in C.
    pub col: Expr<u32>,
    /// The per-column vector's element at `col` (a bias, as torch's `addmm`), in f32; 0 when
    /// the epilogue takes no column vector ([`Epilogue::with_col_vector`]).
    pub col_vec: Expr<f32>,
    /// The per-row vector's element at `row`, in f32; 0 when the epilogue takes no row vector
    /// ([`Epilogue::with_row_vector`]).
    pub row_vec: Expr<f32>,
    /// The significant bits of C's element type (24 for f32, 11 for f16, 8 for bf16): the
    /// result is rounded to that, so an epilogue may compute to it (as
    /// [`Epilogue::bias_gelu`] does, with [`gelu_to_bits`](crate::ops::gelu_to_bits)).
    pub out_bits: u32,
}

/// An expression applied to every element of C before it is stored, fused into the matrix
/// multiply's kernel (as an [`Elementwise`](crate::ops::Elementwise) closure: recorded once,
/// run per element). Its result, an f32, is rounded once to the output type.
///
/// ```
/// use cudajit::ops::{gelu, Epilogue};
/// // torch: gelu(a @ b + bias), one kernel.
/// let bias_gelu = Epilogue::new("bias_gelu", |e| gelu(e.value + e.col_vec))?.with_col_vector();
/// let scaled_relu = Epilogue::new("relu2", |e| (e.value * 2.0f32).max(0.0f32))?;
/// # Ok::<(), cudajit::Error>(())
/// ```
#[derive(Clone)]
pub struct Epilogue {
    pub(super) name: String,
    pub(super) f: Arc<EpilogueFn>,
    pub(super) col: bool,
    pub(super) row: bool,
}

impl std::fmt::Debug for Epilogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epilogue")
            .field("name", &self.name)
            .field("col_vector", &self.col)
            .field("row_vector", &self.row)
            .finish()
    }
}

impl Epilogue {
    /// An epilogue computing `f(args)` for every element; `name` (a C identifier) goes into
    /// the kernel's name, so that the compile caches tell epilogues apart in their listings.
    pub fn new(
        name: &str,
        f: impl Fn(EpilogueArgs) -> Expr<f32> + Send + Sync + 'static,
    ) -> Result<Self> {
        crate::codegen::check_kernel_name(name)?;
        Ok(Epilogue {
            name: name.to_string(),
            f: Arc::new(f),
            col: false,
            row: false,
        })
    }

    /// The plain epilogue: the value as it is.
    pub fn identity() -> Self {
        Epilogue {
            name: "id".into(),
            f: Arc::new(|e| e.value),
            col: false,
            row: false,
        }
    }

    /// `max(value, 0)`.
    pub fn relu() -> Self {
        Epilogue {
            name: "relu".into(),
            f: Arc::new(|e| relu(e.value)),
            col: false,
            row: false,
        }
    }

    /// `value + bias[col]` (a per-column vector of N elements).
    pub fn bias() -> Self {
        Epilogue {
            name: "bias".into(),
            f: Arc::new(|e| e.value + e.col_vec),
            col: true,
            row: false,
        }
    }

    /// `relu(value + bias[col])`.
    pub fn bias_relu() -> Self {
        Epilogue {
            name: "bias_relu".into(),
            f: Arc::new(|e| relu(e.value + e.col_vec)),
            col: true,
            row: false,
        }
    }

    /// `gelu(value + bias[col])` with the exact (erf) GELU, as torch's default, computed to
    /// the output's precision ([`gelu_to_bits`](crate::ops::gelu_to_bits)): for f32 C as
    /// [`gelu`](crate::ops::gelu), for 16-bit C within 2⁻¹⁶ relative before the rounding to 8
    /// or 11 bits (a cheaper polynomial).
    pub fn bias_gelu() -> Self {
        Epilogue {
            name: "bias_gelu".into(),
            f: Arc::new(|e| gelu_to_bits(e.value + e.col_vec, e.out_bits)),
            col: true,
            row: false,
        }
    }

    /// The same epilogue, taking a per-column vector (N elements of the output type) at run
    /// time ([`EpilogueVectors::col`]): `args.col_vec` is its element at the column.
    pub fn with_col_vector(mut self) -> Self {
        self.col = true;
        self
    }

    /// The same epilogue, taking a per-row vector (M elements of the output type) at run time
    /// ([`EpilogueVectors::row`]): `args.row_vec` is its element at the row.
    pub fn with_row_vector(mut self) -> Self {
        self.row = true;
        self
    }

    /// The epilogue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it takes a per-column vector.
    pub fn takes_col_vector(&self) -> bool {
        self.col
    }

    /// Whether it takes a per-row vector.
    pub fn takes_row_vector(&self) -> bool {
        self.row
    }
}

/// One vector of an epilogue: where it is and how long.
#[derive(Clone, Copy)]
pub(super) struct VecArg<'a> {
    pub ptr: u64,
    pub len: usize,
    pub ctx: &'a Context,
}

/// The vectors an [`Epilogue`] reads at run time, of the output type `O`.
///
/// ```no_run
/// # use cudajit::prelude::*;
/// use cudajit::ops::{Epilogue, EpilogueVectors, Matmul};
/// # let ctx = Context::new(0)?; let s = ctx.new_stream()?;
/// # let a = ctx.zeros::<f32, _>((64, 32))?; let b = ctx.zeros::<f32, _>((32, 16))?;
/// let bias = ctx.zeros::<f32, _>(16)?;
/// let mut c = ctx.zeros::<f32, _>((64, 16))?;
/// let mm = Matmul::<f32>::new().epilogue(Epilogue::bias_relu());
/// mm.run_with(&s, &a, &b, &mut c, EpilogueVectors::new().col(&bias))?;
/// # Ok::<(), cudajit::Error>(())
/// ```
pub struct EpilogueVectors<'a, O> {
    pub(super) col: Option<VecArg<'a>>,
    pub(super) row: Option<VecArg<'a>>,
    _t: PhantomData<fn() -> O>,
}

impl<O> Default for EpilogueVectors<'_, O> {
    fn default() -> Self {
        EpilogueVectors {
            col: None,
            row: None,
            _t: PhantomData,
        }
    }
}

impl<'a, O: MatmulOutput> EpilogueVectors<'a, O> {
    /// No vectors.
    pub fn new() -> Self {
        Self::default()
    }

    /// The per-column vector: N contiguous elements (any shape of N elements).
    pub fn col<X: DeviceSlice<O> + ?Sized>(mut self, v: &'a X) -> Self {
        self.col = Some(VecArg {
            ptr: v.device_ptr(),
            len: v.len(),
            ctx: v.context(),
        });
        self
    }

    /// The per-row vector: M contiguous elements.
    pub fn row<X: DeviceSlice<O> + ?Sized>(mut self, v: &'a X) -> Self {
        self.row = Some(VecArg {
            ptr: v.device_ptr(),
            len: v.len(),
            ctx: v.context(),
        });
        self
    }
}

/// Stores the accumulator `acc` of C's element `(row, col)` of the batch whose C starts at
/// `cbase`: predicated on the element being inside C, then `alpha·acc (+ beta·C)`, the
/// epilogue, and the cast to `O`.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_out<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    cbase: Expr<u64>,
    row: Expr<u32>,
    col: Expr<u32>,
    acc: Expr<f32>,
) {
    store_out_with(k, p, v, epi, cbase, (row, col), acc, None);
}

/// [`store_out`], with the column vector's element at `col` already read (`col_vec`).
#[allow(clippy::too_many_arguments)]
fn store_out_with<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    cbase: Expr<u64>,
    (row, col): (Expr<u32>, Expr<u32>),
    acc: Expr<f32>,
    col_vec: Option<Expr<f32>>,
) {
    k.if_(row.lt(p.m).and(col.lt(p.n)), |_| {
        let (r64, c64) = (row.cast::<u64>(), col.cast::<u64>());
        let idx = if v.c_row {
            cbase + r64 * p.ldc + c64
        } else {
            cbase + c64 * p.ldc + r64
        };
        let out = OutC {
            c: p.c,
            colv: p.colv,
            rowv: p.rowv,
            alpha: p.alpha,
            beta: p.beta,
            read_c: v.read_c,
        };
        out.store(epi, idx, (row, col), acc, col_vec);
    });
}

/// What an element's result is made of besides its accumulator, and where it goes: C (read
/// too when `read_c`: beta is not 0), the epilogue's vectors, alpha and beta.
#[derive(Clone, Copy)]
pub(super) struct OutC<O: MatmulOutput> {
    pub c: DArray<O, 1, ReadWrite>,
    pub colv: Option<DArray<O, 1, ReadOnly>>,
    pub rowv: Option<DArray<O, 1, ReadOnly>>,
    pub alpha: Expr<f32>,
    pub beta: Expr<f32>,
    pub read_c: bool,
}

impl<O: MatmulOutput> OutC<O> {
    /// `C[at] = epi(alpha·acc (+ beta·C[at]))`, cast to `O`, for C's element `(row, col)`
    /// (`col_vec`: the column vector's element at `col` if already read).
    pub fn store(
        &self,
        epi: &EpilogueFn,
        at: Expr<u64>,
        (row, col): (Expr<u32>, Expr<u32>),
        acc: Expr<f32>,
        col_vec: Option<Expr<f32>>,
    ) {
        let mut value = acc * self.alpha;
        if self.read_c {
            value = self.c.at(at).cast::<f32>() * self.beta + value;
        }
        let zero = Expr::lit(0.0f32);
        let args = EpilogueArgs {
            value,
            row,
            col,
            col_vec: col_vec
                .or_else(|| self.colv.map(|cv| cv.at(col).cast::<f32>()))
                .unwrap_or(zero),
            row_vec: self.rowv.map_or(zero, |rv| rv.at(row).cast::<f32>()),
            out_bits: out_bits::<O>(),
        };
        self.c.set(at, epi(args).cast::<O>());
    }
}

/// Stores this warp's 16 rows of a warpgroup accumulator `acc` (64 × `acc.n()`) to rows
/// `r0..r0 + 16` and columns `c0..` of C: staged in shared memory `st` from word `base` (rows
/// `stride` words apart), then [`store_slice`]. The caller keeps the region free until then.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_acc_slice<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    cbase: Expr<u64>,
    acc: &WgmmaAcc,
    (st, base, stride): (&DArray<f32, 1, ReadWrite>, Expr<u32>, u32),
    (r0, c0): (Expr<u32>, Expr<u32>),
) {
    let lane = k.lane_id();
    acc.for_each(k, |r, c, value| {
        st.set(base + (r & 15u32) * stride + c, value)
    });
    k.syncwarp(u32::MAX);
    store_slice(
        k,
        p,
        v,
        epi,
        cbase,
        (st, base, stride),
        (r0, c0),
        (acc.n(), lane),
    );
}

/// Stores one warp's 16-row slice of accumulators, staged in shared memory `st` from word
/// `base` (rows `stride` words apart, `width` columns, a multiple of 32; `lane` the lane id),
/// to rows
/// `r0..r0 + 16` and columns `c0..c0 + width` of C with [`store_out`]: along C's contiguous
/// axis, consecutive lanes on consecutive elements, so that each store instruction of the warp
/// writes whole runs of C (row-major C: lane `l` takes columns `l, l + 32, ...` of each row;
/// column-major: lanes 0-15 take the 16 rows of one column, lanes 16-31 the next).
#[allow(clippy::too_many_arguments)]
pub(super) fn store_slice<T: MatmulInput, O: MatmulOutput>(
    k: &KernelBuilder,
    p: &Params<T, O>,
    v: &Variant,
    epi: &EpilogueFn,
    cbase: Expr<u64>,
    (st, base, stride): (&DArray<f32, 1, ReadWrite>, Expr<u32>, u32),
    (r0, c0): (Expr<u32>, Expr<u32>),
    (width, lane): (u32, Expr<u32>),
) {
    // (Storing pairs of 16-bit elements as one access, lane l on columns 2l and 2l + 1, was
    // 2-4% slower on an H100: the staged reads conflict two ways.)
    if v.c_row {
        // A lane's columns are the same in every row: their column-vector elements are read
        // once, before the rows.
        let cvs: Vec<Option<Expr<f32>>> = (0..width / 32)
            .map(|j| {
                p.colv.map(|cv| {
                    let col = c0 + lane + j * 32;
                    let x = k.var(0.0f32);
                    k.if_(col.lt(p.n), |_| x.set(cv.at(col).cast::<f32>()));
                    x.get()
                })
            })
            .collect();
        // (Unrolling the 16 rows was 2-4% slower on an H100.)
        k.for_range(0u32, 16u32, |k, r| {
            for (j, cv) in cvs.iter().enumerate() {
                let c = lane + j as u32 * 32;
                let val = st.at(base + r * stride + c);
                store_out_with(k, p, v, epi, cbase, (r0 + r, c0 + c), val, *cv);
            }
        });
    } else {
        let r = lane & 15u32;
        k.for_range(0u32, width / 2, |k, cc| {
            let c = cc * 2u32 + (lane >> 4u32);
            let val = st.at(base + r * stride + c);
            store_out(k, p, v, epi, cbase, r0 + r, c0 + c, val);
        });
    }
}

/// The significant bits of output type `O` (the implicit bit included).
pub(super) fn out_bits<O: MatmulOutput>() -> u32 {
    use crate::ir::ScalarTy;
    match O::TY {
        ScalarTy::F16 => 11,
        ScalarTy::BF16 => 8,
        _ => 24,
    }
}
