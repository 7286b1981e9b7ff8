//! Matrix multiply: `C = epilogue(alpha·op(A)·op(B) + beta·C)` (cuBLAS's GEMM with a fused
//! epilogue), built with the kernel builder.
//!
//! - Element types: f32 inputs (SIMT fused multiply-adds; or tf32 on the tensor cores with
//!   [`Matmul::tf32`]), f16 and bf16 inputs (tensor cores on sm_80 and later, the SIMT kernel
//!   before), f32 accumulation always; outputs f32, f16 or bf16 ([`Matmul<T, O>`](Matmul)).
//! - Any M, N, K. Operands row- or column-major (any device array or view with a unit stride
//!   along one of its last two axes: `a`, `a.t()`, a Fortran-order `StridedArray`, a slice
//!   of rows or columns), used as given or transposed ([`Transpose`]); 3-D operands are
//!   strided batches (a batch of 1, or a 2-D operand, is used for every batch of C).
//! - A fused epilogue ([`Epilogue`]): a closure over each element's f32 value, with optional
//!   per-column and per-row vectors (bias + ReLU/GELU, a scale), rounded once to the output.
//! - Empty products: M, N or the batch 0 is a no-op; K = 0 gives `epilogue(beta·C)`.
//!
//! ```no_run
//! use cudajit::ops::{matmul, Epilogue, EpilogueVectors, Matmul, Transpose};
//! use cudajit::prelude::*;
//! use cudajit::f16;
//! # fn main() -> cudajit::Result<()> {
//! let ctx = Context::new(0)?;
//! let s = ctx.new_stream()?;
//! let a = s.to_device(&ndarray::Array2::<f32>::ones((256, 64)))?;
//! let b = s.to_device(&ndarray::Array2::<f32>::ones((64, 128)))?;
//! let mut c = ctx.zeros::<f32, _>((256, 128))?;
//! matmul(&s, &a, &b, &mut c)?;                               // C = A·B (f32, SIMT)
//! matmul(&s, &a.t(), &a, &mut ctx.zeros::<f32, _>((64, 64))?)?; // Aᵀ·A: a transposed view
//! // C = 0.5·Aᵀ·B + C with tf32 tensor cores:
//! let mm = Matmul::<f32>::new().tf32(true).alpha(0.5).beta(1.0).trans_a(Transpose::T);
//! mm.run(&s, &ctx.zeros::<f32, _>((64, 256))?, &b, &mut c)?;
//! // f16 inputs, f32 output, bias + GELU fused:
//! let (ah, bh) = (ctx.zeros::<f16, _>((256, 64))?, ctx.zeros::<f16, _>((64, 128))?);
//! let bias = ctx.zeros::<f32, _>(128)?;
//! let gemm = Matmul::<f16, f32>::new().epilogue(Epilogue::bias_gelu());
//! gemm.run_with(&s, &ah, &bh, &mut c, EpilogueVectors::new().col(&bias))?;
//! # Ok(()) }
//! ```

mod activation;
mod autotune;
mod config;
mod epilogue;
mod epilogue_vec;
mod hopper;
mod hopper_ws;
mod launch;
mod mma;
mod params;
mod pipeline;
mod shape;
mod simt;
mod split_k;
mod stage;
mod staging;
mod tune;
mod types;
mod variant;

pub use activation::{gelu, gelu_tanh, gelu_to_bits, relu};
pub use config::{Engine, MatmulConfig};
pub use epilogue::{Epilogue, EpilogueArgs, EpilogueFn, EpilogueVectors};
pub use shape::Transpose;
pub use tune::{load_matmul_tuning, matmul_tuning_file, matmul_tuning_stats, MatmulTuningStats};
pub use types::{MatmulInput, MatmulOutput};

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

use ndarray::IxDyn;

use crate::codegen::{Kernel, PtxOptions};
use crate::error::{Error, Result};
use crate::memory::{AsStrided, AsStridedMut, DeviceArray, DeviceSlice};
use crate::stream::Stream;

use launch::Call;
use shape::{Operand, Problem};
use variant::Variant;

/// Split-K's reduction kernels by (C row-major, C read).
type Reducers = HashMap<(bool, bool), Result<Kernel<()>>>;

/// A matrix multiply `C = epilogue(alpha·op(A)·op(B) + beta·C)` on inputs of `T` giving `O`
/// (f32 accumulation); see the [module docs](self). Its kernels are built on first use of each
/// variant (configuration, layouts, vector loads, whether C is read) and kept, so keep one
/// `Matmul` per use (building is milliseconds; compiled code is also in the compile caches).
///
/// ```no_run
/// # use cudajit::prelude::*;
/// use cudajit::ops::{Matmul, MatmulConfig};
/// # let ctx = Context::new(0)?; let s = ctx.new_stream()?;
/// let a = ctx.zeros::<cudajit::bf16, _>((8, 100, 64))?;  // a batch of 8
/// let b = ctx.zeros::<cudajit::bf16, _>((64, 50))?;      // one B for every batch
/// let mm = Matmul::<cudajit::bf16>::new().config(MatmulConfig::mma(64, 64, 32, 32, 32));
/// let c = mm.call(&s, &a, &b)?;                          // shape (8, 100, 50), bf16
/// # Ok::<(), cudajit::Error>(())
/// ```
pub struct Matmul<T: MatmulInput, O: MatmulOutput = T> {
    alpha: f32,
    beta: f32,
    trans_a: Transpose,
    trans_b: Transpose,
    tf32: bool,
    config: Option<MatmulConfig>,
    tune: bool,
    epilogue: Epilogue,
    kernels: Mutex<HashMap<Variant, Result<Kernel<()>>>>,
    /// Split-K's partial products (f32 out, identity epilogue) and its reductions by C's
    /// layout and whether C is read.
    split_inner: OnceLock<Box<Matmul<T, f32>>>,
    reducers: Mutex<Reducers>,
    _t: PhantomData<fn() -> (T, O)>,
}

impl<T: MatmulInput, O: MatmulOutput> Default for Matmul<T, O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: MatmulInput, O: MatmulOutput> Clone for Matmul<T, O> {
    /// The same settings (the clone builds its own kernels).
    fn clone(&self) -> Self {
        Matmul {
            alpha: self.alpha,
            beta: self.beta,
            trans_a: self.trans_a,
            trans_b: self.trans_b,
            tf32: self.tf32,
            config: self.config,
            tune: self.tune,
            epilogue: self.epilogue.clone(),
            kernels: Mutex::default(),
            split_inner: OnceLock::new(),
            reducers: Mutex::default(),
            _t: PhantomData,
        }
    }
}

impl<T: MatmulInput, O: MatmulOutput> std::fmt::Debug for Matmul<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matmul")
            .field("input", &<T as MatmulOutput>::NAME)
            .field("output", &O::NAME)
            .field("alpha", &self.alpha)
            .field("beta", &self.beta)
            .field("trans_a", &self.trans_a)
            .field("trans_b", &self.trans_b)
            .field("tf32", &self.tf32)
            .field("config", &self.config)
            .field("tune", &self.tune)
            .field("epilogue", &self.epilogue)
            .finish()
    }
}

impl<T: MatmulInput, O: MatmulOutput> Matmul<T, O> {
    /// `C = A·B`: alpha 1, beta 0, no transposes, exact f32 for f32 inputs (no tf32), the
    /// configuration chosen per call, the identity epilogue.
    pub fn new() -> Self {
        Matmul {
            alpha: 1.0,
            beta: 0.0,
            trans_a: Transpose::N,
            trans_b: Transpose::N,
            tf32: false,
            config: None,
            tune: true,
            epilogue: Epilogue::identity(),
            kernels: Mutex::default(),
            split_inner: OnceLock::new(),
            reducers: Mutex::default(),
            _t: PhantomData,
        }
    }

    /// The scale of the product (default 1).
    pub fn alpha(mut self, alpha: f32) -> Self {
        self.alpha = alpha;
        self
    }

    /// The scale of C's old value added (default 0: C is not read, as BLAS, so it may hold
    /// anything, NaN included).
    pub fn beta(mut self, beta: f32) -> Self {
        self.beta = beta;
        self
    }

    /// `op(A)`: A as given or transposed (its last two axes swapped).
    pub fn trans_a(mut self, op: Transpose) -> Self {
        self.trans_a = op;
        self
    }

    /// `op(B)`: B as given or transposed.
    pub fn trans_b(mut self, op: Transpose) -> Self {
        self.trans_b = op;
        self
    }

    /// For f32 inputs: allow the tensor cores, computing with tf32 inputs (10-bit mantissas,
    /// rounded to nearest; f32 accumulation), as torch's `allow_tf32`. Where the device has no
    /// tensor-core tf32 (before sm_80) the exact f32 kernel runs. No effect on f16/bf16.
    pub fn tf32(mut self, allow: bool) -> Self {
        self.tf32 = allow;
        self
    }

    /// Pins the kernel configuration (tile shapes, stages) instead of the default choice by
    /// shape class; checked when the product runs. A tensor-core configuration needs sm_80
    /// or later: on an older GPU its kernel fails to compile with a clear error.
    pub fn config(mut self, config: MatmulConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Whether an unpinned product may be autotuned (default `true`): on the first product of
    /// each tuning key (device, driver, types, layouts, shape class) the candidate
    /// configurations are timed and the fastest kept, in memory and in the tuning file beside
    /// the compile cache ([`matmul_tuning_file`]); later products (and later processes) use
    /// the winner without timing. `false`: the default choice by shape class
    /// ([`MatmulConfig::choose`]), as on the simulator (which never tunes) or with
    /// `CUDAJIT_MATMUL_TUNE=0`. A pinned [`config`](Self::config) is never tuned.
    pub fn tune(mut self, tune: bool) -> Self {
        self.tune = tune;
        self
    }

    /// The fused epilogue (default: [`Epilogue::identity`]).
    pub fn epilogue(mut self, epilogue: Epilogue) -> Self {
        self.epilogue = epilogue;
        self.kernels = Mutex::default();
        self
    }

    /// The pinned configuration, if any.
    pub fn pinned_config(&self) -> Option<MatmulConfig> {
        self.config
    }

    /// `C = epilogue(alpha·op(A)·op(B) + beta·C)` on `stream` (no wait). A: `m × k` after its
    /// op, B: `k × n`, C: `m × n` (each 2-D, or 3-D with a batch axis first; C's batch is the
    /// product's). Errors (never panics) on mismatched shapes, operands of another context,
    /// a reversed or non-unit-stride layout, a C overlapping A or B, an epilogue missing its
    /// vectors.
    pub fn run<A, B, C>(&self, stream: &Stream, a: &A, b: &B, c: &mut C) -> Result<()>
    where
        A: AsStrided<T> + ?Sized,
        B: AsStrided<T> + ?Sized,
        C: AsStridedMut<O> + ?Sized,
    {
        self.run_with(stream, a, b, c, EpilogueVectors::new())
    }

    /// As [`run`](Self::run), with the vectors the epilogue takes.
    pub fn run_with<A, B, C>(
        &self,
        stream: &Stream,
        a: &A,
        b: &B,
        c: &mut C,
        vectors: EpilogueVectors<'_, O>,
    ) -> Result<()>
    where
        A: AsStrided<T> + ?Sized,
        B: AsStrided<T> + ?Sized,
        C: AsStridedMut<O> + ?Sized,
    {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: matmul {}", self.epilogue.name));
        let a = Operand::of::<T, A>("A", a, self.trans_a)?;
        let b = Operand::of::<T, B>("B", b, self.trans_b)?;
        let c = Operand::of_mut::<O, C>("C", c)?;
        self.launch(
            stream,
            Call {
                a,
                b,
                c,
                col: vectors.col,
                row: vectors.row,
                alpha: self.alpha,
                beta: self.beta,
            },
        )
    }

    /// `epilogue(alpha·op(A)·op(B))` into a new C-order array of shape `(m, n)`, or
    /// `(batch, m, n)` when A or B is 3-D (beta is not used: there is no old C).
    pub fn call<A, B>(&self, stream: &Stream, a: &A, b: &B) -> Result<DeviceArray<O, IxDyn>>
    where
        A: AsStrided<T> + ?Sized,
        B: AsStrided<T> + ?Sized,
    {
        self.call_with(stream, a, b, EpilogueVectors::new())
    }

    /// As [`call`](Self::call), with the vectors the epilogue takes.
    pub fn call_with<A, B>(
        &self,
        stream: &Stream,
        a: &A,
        b: &B,
        vectors: EpilogueVectors<'_, O>,
    ) -> Result<DeviceArray<O, IxDyn>>
    where
        A: AsStrided<T> + ?Sized,
        B: AsStrided<T> + ?Sized,
    {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: matmul {}", self.epilogue.name));
        let (ao, actx) = Operand::of::<T, A>("A", a, self.trans_a)?;
        let (bo, bctx) = Operand::of::<T, B>("B", b, self.trans_b)?;
        let batched = a.as_strided().shape().len() == 3 || b.as_strided().shape().len() == 3;
        let batch = ao.batch.max(bo.batch);
        let shape: Vec<usize> = if batched {
            vec![batch, ao.rows, bo.cols]
        } else {
            vec![ao.rows, bo.cols]
        };
        let out = DeviceArray::<O, IxDyn>::alloc_ordered(stream, IxDyn(&shape))?;
        let strides: Vec<isize> = crate::memory::layout::c_strides(&shape);
        let co = Operand::from_parts(
            "C",
            out.device_ptr(),
            &shape,
            &strides,
            Transpose::N,
            O::TY.size(),
        )?;
        self.launch(
            stream,
            Call {
                a: (ao, actx),
                b: (bo, bctx),
                c: (co, stream.context()),
                col: vectors.col,
                row: vectors.row,
                alpha: self.alpha,
                beta: 0.0,
            },
        )?;
        Ok(out)
    }

    /// The configuration a product of `m × n × k` (`batch` of them) would run with on
    /// `stream`'s device: the pinned one, or the default choice.
    pub fn config_for(
        &self,
        stream: &Stream,
        m: usize,
        n: usize,
        k: usize,
        batch: usize,
    ) -> Result<MatmulConfig> {
        let dummy = Operand::from_parts("A", 0, &[1, 1], &[1, 1], Transpose::N, 4)?;
        let p = Problem {
            m,
            n,
            k,
            batch,
            a: dummy,
            b: dummy,
            c: dummy,
        };
        self.config_for_problem(stream.context(), &p)
    }

    /// The PTX of the kernel this `Matmul` runs under `config` (row-major C; A and B
    /// row-major before their ops, 16-byte aligned, so with vector loads where the tiles
    /// allow, and the `cp.async` pipeline for a tensor-core configuration of 3 or 4 stages; C
    /// read when beta is not 0), for `options`' target: for tests and inspection.
    pub fn compile_ptx(&self, config: MatmulConfig, options: &PtxOptions) -> Result<String> {
        self.check_config(&config)?;
        let rm = |op: Transpose| op == Transpose::N;
        let (a_row, b_row) = (rm(self.trans_a), rm(self.trans_b));
        let pipe = (matches!(config.engine, Engine::Mma | Engine::Simt) && config.stages >= 3)
            || config.engine.is_hopper();
        let v = Variant {
            cfg: config,
            pipe,
            a_row,
            b_row,
            c_row: true,
            vec_a: if a_row {
                config.block_k % 4 == 0
            } else {
                config.block_m % 4 == 0
            },
            vec_b: if b_row {
                config.block_n % 4 == 0
            } else {
                config.block_k % 4 == 0
            },
            vec_c: config.engine.is_hopper()
                && self.beta == 0.0
                && epilogue_vec::applies(config.engine, std::mem::size_of::<O>()),
            read_c: self.beta != 0.0,
            col_vec: self.epilogue.col,
            // (Where C's register epilogue applies, as for a vector aligned to two elements.)
            col_pairs: self.epilogue.col
                && config.engine.is_hopper()
                && self.beta == 0.0
                && epilogue_vec::applies(config.engine, std::mem::size_of::<O>()),
            row_vec: self.epilogue.row,
        };
        self.kernel(&v)?.compile_ptx(options)
    }

    /// The kernel of variant `v`: built on first use, then kept (with its error, if the build
    /// failed).
    fn kernel(&self, v: &Variant) -> Result<Kernel<()>> {
        let mut map = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = map.get(v) {
            return k.clone();
        }
        let name = format!(
            "matmul_{}_{}_{}_{}",
            <T as MatmulOutput>::NAME,
            O::NAME,
            v.tag(),
            self.epilogue.name
        );
        let epi = self.epilogue.f.clone();
        let var = *v;
        let built = Kernel::<()>::build(&name, move |k, ()| match var.cfg.engine {
            Engine::Simt => simt::build::<T, O>(k, &var, &*epi),
            Engine::Mma => mma::build::<T, O>(k, &var, &*epi),
            Engine::Wgmma => hopper::build::<T, O>(k, &var, &*epi),
            Engine::WgmmaWs => hopper_ws::build::<T, O>(k, &var, &*epi),
        });
        map.insert(*v, built.clone());
        built
    }
}

/// The `Matmul<T, T>` that [`matmul`] uses, one per type for the process.
fn default_matmul<T: MatmulInput>() -> Result<&'static Matmul<T, T>> {
    type Registry = Mutex<HashMap<TypeId, &'static (dyn Any + Send + Sync)>>;
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    let mut reg = REGISTRY
        .get_or_init(Registry::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let any: &'static (dyn Any + Send + Sync) = *reg
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Box::leak(Box::new(Matmul::<T, T>::new())));
    any.downcast_ref::<Matmul<T, T>>()
        .ok_or_else(|| Error::usage("matmul: internal error: the default Matmul of another type"))
}

/// `C = A·B` (numpy's `matmul(a, b, out=c)`, torch's `torch.matmul(a, b, out=c)`): f32
/// exactly (SIMT FMA), f16/bf16 on the tensor cores (f32 accumulation) where the device has
/// them. Transpose by passing views (`&a.t()`); batches are 3-D operands. For alpha, beta,
/// tf32, epilogues and pinned configurations use [`Matmul`].
///
/// ```no_run
/// # use cudajit::prelude::*;
/// # let ctx = Context::new(0)?; let s = ctx.new_stream()?;
/// let a = ctx.zeros::<f32, _>((300, 200))?;
/// let b = ctx.zeros::<f32, _>((300, 100))?;
/// let mut c = ctx.zeros::<f32, _>((200, 100))?;
/// cudajit::ops::matmul(&s, &a.t(), &b, &mut c)?;         // C = Aᵀ·B
/// # Ok::<(), cudajit::Error>(())
/// ```
pub fn matmul<T, A, B, C>(stream: &Stream, a: &A, b: &B, c: &mut C) -> Result<()>
where
    T: MatmulInput,
    A: AsStrided<T> + ?Sized,
    B: AsStrided<T> + ?Sized,
    C: AsStridedMut<T> + ?Sized,
{
    default_matmul::<T>()?.run(stream, a, b, c)
}
