//! Split-K ([`MatmulConfig::split_k`]): a product with few tiles of C and a long K, where
//! one block per tile would leave most multiprocessors idle, is computed as `S` partial
//! products over slices of K, run as one strided-batched product (batch `s` reads A's and B's
//! `s`-th slice of K: the batch stride is the slice's offset) into an f32 workspace of `S`
//! M×N matrices, then one elementwise kernel sums the slices in a fixed order (slice 0
//! first), applies alpha, beta·C and the epilogue, and writes C.
//!
//! Only a single product (batch 1) whose K splits into `S` equal slices of whole 16-byte
//! chunks (`K·size % (16·S) == 0`) is split; anything else runs unsplit.
//!
//! [`MatmulConfig::split_k`]: super::MatmulConfig::split_k

use crate::codegen::{declare_scalar_param, Kernel, KernelBuilder, KernelParam};
use crate::error::Result;
use crate::memory::scratch::Scratch;
use crate::module::LaunchConfig;
use crate::stream::Stream;

use super::epilogue::OutC;
use super::launch::Call;
use super::shape::{Operand, Problem};
use super::types::{MatmulInput, MatmulOutput};
use super::{Matmul, MatmulConfig};

/// Threads per block of the reduction.
const THREADS: u32 = 256;

/// The slices problem `p` splits into under `cfg`, and each one's extent of K; `None` where
/// it does not split (see the module docs).
pub(super) fn slices(p: &Problem, cfg: &MatmulConfig, size: usize) -> Option<(usize, usize)> {
    let s = cfg.split_k as usize;
    if s <= 1 || p.batch != 1 || p.k % s != 0 {
        return None;
    }
    let kc = p.k / s;
    ((kc * size) % 16 == 0).then_some((s, kc))
}

/// Split-K candidates for the tuner (Hopper's `Wgmma` tiles): where the product's 128×128
/// tiles would not fill half the multiprocessors and K is at least 1024, 2, 4 and 8 slices
/// of whichever splits apply.
pub(super) fn candidates(
    p: &Problem,
    cc: (u32, u32),
    sms: usize,
    size: usize,
) -> Vec<MatmulConfig> {
    let tiles = p.m.div_ceil(128) * p.n.div_ceil(128);
    if cc != (9, 0) || p.batch != 1 || 2 * tiles >= sms || p.k < 1024 {
        return Vec::new();
    }
    let line = (128 / size) as u32;
    let mut out = Vec::new();
    for s in [2, 4, 8] {
        for (bm, bn) in [(128, 128), (128, 256)] {
            let c = MatmulConfig::wgmma(bm, bn, line, 4).with_split_k(s);
            if slices(p, &c, size).is_some() {
                out.push(c);
            }
        }
    }
    out
}

/// The partial products' problem: batch `i` is slice `i` of K of `p`, written to the f32
/// workspace at `ws` (`s` row-major M×N matrices).
fn partials(p: &Problem, (s, kc): (usize, usize), ws: u64) -> Problem {
    // A is m×k: K is its columns; B is k×n: K is its rows. A slice starts kc elements further
    // along K: kc when K is the contiguous axis, kc rows or columns of `ld` otherwise.
    let along_k = |o: &Operand, k_contiguous: bool| if k_contiguous { kc } else { kc * o.ld };
    let a = Operand {
        batch: s,
        cols: kc,
        bs: along_k(&p.a, p.a.row_major),
        ..p.a
    };
    let b = Operand {
        batch: s,
        rows: kc,
        bs: along_k(&p.b, !p.b.row_major),
        ..p.b
    };
    let c = Operand {
        ptr: ws,
        size: 4,
        batch: s,
        rows: p.m,
        cols: p.n,
        row_major: true,
        ld: p.n,
        bs: p.m * p.n,
    };
    Problem {
        m: p.m,
        n: p.n,
        k: kc,
        batch: s,
        a,
        b,
        c,
    }
}

impl<T: MatmulInput, O: MatmulOutput> Matmul<T, O> {
    /// Runs `call` (problem `p`, batch 1) split along K into `slices` (see the module docs).
    pub(super) fn run_split_k(
        &self,
        stream: &Stream,
        call: &Call<'_>,
        p: &Problem,
        cfg: MatmulConfig,
        slices: (usize, usize),
    ) -> Result<()> {
        let ctx = stream.context();
        let ws = Scratch::<f32>::new(stream, slices.0 * p.m * p.n)?;
        let q = partials(p, slices, ws.ptr());
        let inner = self
            .split_inner
            .get_or_init(|| Box::new(Matmul::<T, f32>::new().tf32(self.tf32)));
        let part = Call {
            a: (q.a, call.a.1),
            b: (q.b, call.b.1),
            c: (q.c, ctx),
            col: None,
            row: None,
            alpha: 1.0,
            beta: 0.0,
        };
        inner.run_config(stream, &part, &q, cfg.with_split_k(1), false)?;
        let read_c = call.beta != 0.0;
        let kernel = self.reducer(p.c.row_major, read_c)?;
        let n = p.m * p.n;
        let lc = LaunchConfig::covering(n, THREADS)?;
        kernel.launch_with(stream, lc, |buf| {
            buf.push_flat(ctx, ws.ptr(), slices.0 * n)?;
            buf.push_flat(call.c.1, p.c.ptr, p.c.span())?;
            for v in [call.col, call.row].into_iter().flatten() {
                buf.push_flat(v.ctx, v.ptr, v.len)?;
            }
            for x in [slices.0, p.m, p.n, p.c.ld] {
                buf.push_scalar(x as u64)?;
            }
            buf.push_scalar(crate::codegen::Scalar::to_bits(call.alpha))?;
            buf.push_scalar(crate::codegen::Scalar::to_bits(call.beta))?;
            Ok(())
        })
    }

    /// The reduction kernel for C row- or column-major, read or not: built once, then kept.
    fn reducer(&self, c_row: bool, read_c: bool) -> Result<Kernel<()>> {
        let mut map = self.reducers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = map.get(&(c_row, read_c)) {
            return k.clone();
        }
        let (col_vec, row_vec) = (self.epilogue.col, self.epilogue.row);
        let epi = self.epilogue.f.clone();
        let name = format!(
            "matmul_split_k_sum_{}_{}{}{}_{}",
            O::NAME,
            if c_row { 'r' } else { 'c' },
            u8::from(read_c),
            u8::from(col_vec),
            self.epilogue.name
        );
        let built = Kernel::<()>::build(&name, move |k, ()| {
            reduce::<O>(k, (c_row, read_c, col_vec, row_vec), &*epi)
        });
        map.insert((c_row, read_c), built.clone());
        built
    }
}

/// Records the reduction: element `idx` of the M×N result (row-major order) is the sum of
/// the slices' elements `idx`, slice 0 first, then `alpha·sum (+ beta·C)`, the epilogue and
/// the cast to `O`, stored at its place in C.
fn reduce<O: MatmulOutput>(
    k: &KernelBuilder,
    (c_row, read_c, col_vec, row_vec): (bool, bool, bool, bool),
    epi: &super::epilogue::EpilogueFn,
) {
    let ws = <&[f32] as KernelParam>::declare();
    let c = <&mut [O] as KernelParam>::declare();
    let colv = col_vec.then(<&[O] as KernelParam>::declare);
    let rowv = row_vec.then(<&[O] as KernelParam>::declare);
    let slices = declare_scalar_param::<u32>();
    let m = declare_scalar_param::<u32>();
    let n = declare_scalar_param::<u32>();
    let ldc = declare_scalar_param::<u64>();
    let alpha = declare_scalar_param::<f32>();
    let beta = declare_scalar_param::<f32>();
    let idx = k.grid1();
    let total = m.cast::<u64>() * n.cast::<u64>();
    k.if_(idx.lt(total), |k| {
        let sum = k.var(0.0f32);
        k.for_range(0u32, slices, |_, s| {
            sum.set(sum.get() + ws.at(s.cast::<u64>() * total + idx));
        });
        let n64 = n.cast::<u64>();
        let (row, col) = (idx / n64, idx % n64);
        let at = if c_row {
            row * ldc + col
        } else {
            col * ldc + row
        };
        let out = OutC {
            c,
            colv,
            rowv,
            alpha,
            beta,
            read_c,
        };
        let rc = (row.cast::<u32>(), col.cast::<u32>());
        out.store(epi, at, rc, sum.get(), None);
    });
}
