//! A FlashAttention-style forward pass written with cudajit's builder, for Hopper (sm_90a):
//! `O = softmax(Q·Kᵀ·scale [+ causal mask])·V` for every (batch, head), in one kernel, f16 or
//! bf16, head dim 64 or 128, f32 accumulation and softmax.
//!
//! Shared by `examples/attention`, the GPU tests (`tests/gpu/attention.rs`) and the benchmark
//! (`benches/bench/attention.rs`), which include this file as a module.
//!
//! How it works (one block of 256 threads, two warpgroups, per 128 rows of Q):
//! - TMA copies the block's Q tile once and the K and V tiles of 128 keys into 3 (head dim
//!   128) or 4 (64) shared-memory stages (128-byte swizzled boxes of 128 rows × 64 columns; a
//!   head dim of 128 is two boxes side by side), each completing on a transaction barrier. A
//!   stage's K and V are released separately (K once S is computed, V once P·V is); thread 0
//!   refills K, thread 128 V, each once both warpgroups have released it.
//! - Each warpgroup owns 64 rows of Q. Per key tile: S = Q·Kᵀ (64×128, f32) by `wgmma` from
//!   shared memory; the online softmax in registers (row maxima across the 4 threads that
//!   share a row by shuffles, `exp2_approx` of the scaled scores, the running sums); P,
//!   rounded to f16/bf16 two columns per instruction, stays in registers as the A operand of
//!   O += P·V (`WgmmaAcc::frag_a` into `wgmma_rs`, V MN-major).
//! - Tile j's S = Q·Kᵀ and tile j − 1's O += P·V are in flight together; the softmax of tile
//!   j runs while the second still computes (FlashAttention-3's intra-warpgroup overlap).
//! - Blocks walk the (head, Q tile) items `gridDim.x` apart, causal items heaviest first (the
//!   last tile of Q first) within each head; the next item's Q and first K/V tiles load while
//!   the current one's O is stored. Non-causal, the blocks are persistent (one per
//!   multiprocessor); causal, each takes one item (their work differs; the hardware balances).
//! - Masking: keys at or past `seq` (the tile past the end is zero-filled by TMA) and, when
//!   causal, keys after the query. Only the last tile (causal: the diagonal one) is masked.
//! - The end: O divided by the row sums, rounded to f16/bf16, stored for rows below `seq`.

use cudajit::codegen::{
    select, DArray, Expr, FragA, Kernel, KernelBuilder, Mbarriers, ReadWrite, SmemMatrix, Tma,
    TmaDesc, Var, WgmmaAcc, WgmmaInput, WgmmaMajor, WgmmaSwizzle,
};
use cudajit::memory::{TensorMap, TensorMapElement, TensorMapOptions, TensorMapSwizzle};
use cudajit::prelude::*;
use ndarray::Ix3;

/// Rows of Q per block (two warpgroups of 64) and keys per tile.
pub const BLOCK: u32 = 128;
/// Columns of one TMA box (128 bytes of f16/bf16: the 128-byte swizzle's span).
const BOX_COLS: u32 = 64;
/// Elements of one box (`BLOCK` rows × `BOX_COLS`).
const BOX: u32 = BLOCK * BOX_COLS;
/// Rows of one warpgroup.
const WG_ROWS: u32 = 64;

/// The kernel's parameters: the maps of Q, K and V (`[batch·heads, seq, head_dim]`), the
/// output (same shape, contiguous), `seq`, and the softmax scale times log2(e).
pub type AttentionParams<T> = (
    Tma<T, 3>,
    Tma<T, 3>,
    Tma<T, 3>,
    DArray<T, 3, ReadWrite>,
    u32,
    f32,
);

/// An element type of the attention kernel: `f16` or `bf16`.
pub trait AttentionElem: WgmmaInput + TensorMapElement {
    /// The name in kernel names and messages.
    const NAME: &'static str;
    /// The unit roundoff (2^-11 for f16, 2^-8 for bf16).
    const UNIT: f64;
    /// `x` rounded to this type.
    fn from_f32(x: f32) -> Self;
    /// The value as f64.
    fn to_f64(self) -> f64;
}

impl AttentionElem for cudajit::f16 {
    const NAME: &'static str = "f16";
    const UNIT: f64 = 1.0 / 2048.0;
    fn from_f32(x: f32) -> Self {
        cudajit::f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl AttentionElem for cudajit::bf16 {
    const NAME: &'static str = "bf16";
    const UNIT: f64 = 1.0 / 256.0;
    fn from_f32(x: f32) -> Self {
        cudajit::bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// A compiled attention forward pass for one element type, head dim and masking.
pub struct Attention<T: AttentionElem> {
    kernel: Kernel<AttentionParams<T>>,
    head_dim: usize,
    stages: u32,
    causal: bool,
}

impl<T: AttentionElem> Attention<T> {
    /// Builds the kernel for `head_dim` 64 or 128, causal or not.
    pub fn new(head_dim: usize, causal: bool) -> cudajit::Result<Self> {
        if head_dim != 64 && head_dim != 128 {
            return Err(cudajit::Error::Usage(format!(
                "attention: head dim {head_dim} is not supported (64 or 128)"
            )));
        }
        // Q plus STAGES × (K, V) must fit the 227 KiB of shared memory a block may have.
        let stages = if head_dim == 64 { 4 } else { 3 };
        let name = format!(
            "attention_{}_d{head_dim}{}",
            T::NAME,
            if causal { "_causal" } else { "" }
        );
        let kernel =
            Kernel::<AttentionParams<T>>::build(&name, |k, (mq, mk, mv, o, seq, scale)| {
                body::<T>(
                    k,
                    (&mq, &mk, &mv),
                    o,
                    seq,
                    scale,
                    head_dim as u32,
                    causal,
                    stages,
                )
            })?;
        Ok(Attention {
            kernel,
            head_dim,
            stages,
            causal,
        })
    }

    /// The builder's kernel (e.g. to print its PTX).
    pub fn kernel(&self) -> &Kernel<AttentionParams<T>> {
        &self.kernel
    }

    /// Bytes of dynamic shared memory one block uses (with 1 KiB for the 1024-byte alignment
    /// of the swizzled tiles).
    pub fn shared_bytes(&self) -> u32 {
        let tile = BLOCK * self.head_dim as u32 * T::TY.size() as u32;
        1024 + tile * (1 + 2 * self.stages)
    }

    /// `out = attention(q, k, v)` on stream `s`: all four `[batch·heads, seq, head_dim]`,
    /// contiguous, `seq` ≥ 1; the scale is `1/√head_dim`.
    pub fn run(
        &self,
        s: &Stream,
        q: &DeviceArray<T, Ix3>,
        k: &DeviceArray<T, Ix3>,
        v: &DeviceArray<T, Ix3>,
        out: &mut DeviceArray<T, Ix3>,
    ) -> cudajit::Result<()> {
        let shape = q.shape().to_vec();
        for (name, a) in [("k", k.shape()), ("v", v.shape()), ("out", out.shape())] {
            if a != shape.as_slice() {
                return Err(cudajit::Error::Usage(format!(
                    "attention: {name} is {a:?} but q is {shape:?} (all [batch·heads, seq, head_dim])"
                )));
            }
        }
        let (bh, seq, d) = (shape[0], shape[1], shape[2]);
        if d != self.head_dim || seq == 0 || bh == 0 {
            return Err(cudajit::Error::Usage(format!(
                "attention: q is {shape:?}; this kernel takes head dim {} and at least one row",
                self.head_dim
            )));
        }
        if seq > u32::MAX as usize / 2 || bh > 65535 || bh * seq * d > u32::MAX as usize {
            return Err(cudajit::Error::Usage(format!(
                "attention: q is {shape:?}: too large for this kernel (32-bit indices)"
            )));
        }
        let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
        let bx = [1, BLOCK, BOX_COLS];
        let (mq, mk, mv) = (
            TensorMap::<T, 3>::tiled_with(q, bx, opts)?,
            TensorMap::<T, 3>::tiled_with(k, bx, opts)?,
            TensorMap::<T, 3>::tiled_with(v, bx, opts)?,
        );
        let scale = std::f32::consts::LOG2_E / (d as f32).sqrt();
        // Persistent blocks, one per multiprocessor (a block takes all of one's shared
        // memory), over every (head, Q tile) item; causal items differ in work, so there each
        // block takes one and the hardware hands the next block to whichever multiprocessor
        // is free (on an H100 the persistent order was 1% slower causal, 4% faster not).
        let items = (seq as u32).div_ceil(BLOCK) * bh as u32;
        let sms = s.context().device().multiprocessor_count()?;
        let blocks = if self.causal {
            items
        } else {
            items.min(sms.max(1))
        };
        let bytes = self.shared_bytes();
        // More than 48 KiB of dynamic shared memory is opted into per function.
        self.kernel
            .function(s.context())?
            .set_max_dynamic_shared_memory(bytes)?;
        let cfg = LaunchConfig::new((blocks, 1, 1), 2 * 128).with_shared_mem(bytes);
        self.kernel
            .launch(s, cfg, (&mq, &mk, &mv, out, seq as u32, scale))
    }
}

/// The loaded tiles' places in dynamic shared memory (in elements, from the 1024-byte aligned
/// start): Q, then per stage K and V, each `head_dim / 64` boxes.
#[derive(Clone, Copy)]
struct Layout {
    pad: Expr<u32>,
    boxes: u32,
}

impl Layout {
    fn q(&self) -> Expr<u32> {
        self.pad
    }
    fn k(&self, s: Expr<u32>) -> Expr<u32> {
        self.pad + (1u32 + s * 2u32) * (self.boxes * BOX)
    }
    fn v(&self, s: Expr<u32>) -> Expr<u32> {
        self.k(s) + self.boxes * BOX
    }
}

/// Barriers: Q's, and per stage K's and V's "full" (TMA's bytes landed) and "empty" (both
/// warpgroups are done with the tile).
struct Barriers {
    q: Mbarriers,
    k_full: Mbarriers,
    v_full: Mbarriers,
    k_empty: Mbarriers,
    v_empty: Mbarriers,
}

/// This thread's running softmax state for its two rows (`g` and `g + 8` of its warp's 16),
/// its part of O, and the previous tile's P (as the registers of `BLOCK / 16` A fragments).
struct RowState {
    max: [Var<f32>; 2],
    sum: [Var<f32>; 2],
    o: Vec<Var<f32>>,
    p: Vec<Var<u32>>,
}

#[allow(clippy::too_many_arguments)]
fn body<T: AttentionElem>(
    k: &KernelBuilder,
    maps: (&TmaDesc<T, 3>, &TmaDesc<T, 3>, &TmaDesc<T, 3>),
    o: DArray<T, 3, ReadWrite>,
    seq: Expr<u32>,
    scale: Expr<f32>,
    d: u32,
    causal: bool,
    stages: u32,
) {
    let (mq, mk, mv) = maps;
    k.launch_bounds(256, 1);
    let es = T::TY.size() as u32;
    let smem = k.dynamic_shared::<T>();
    let lay = Layout {
        // 128-byte swizzled tiles start on a 1024-byte boundary.
        pad: smem.aligned_index(1024),
        boxes: d / BOX_COLS,
    };
    let n = stages as usize;
    let bars = Barriers {
        q: k.mbarriers(1),
        k_full: k.mbarriers(n),
        v_full: k.mbarriers(n),
        k_empty: k.mbarriers(n),
        v_empty: k.mbarriers(n),
    };
    let t = k.thread_idx().x;
    // The warpgroup, from lane 0 so that the compiler knows it is the same in the warp (and
    // keeps the matrix descriptors made from it in uniform registers).
    let wg = k.shfl_sync(u32::MAX, t >> 7u32, 0u32);
    let leader = (t & 127u32).eq(0u32);
    // Persistent blocks: work item w is head w / nq, Q tile w % nq (heaviest first when
    // causal: tile i reads i + 1 key tiles, so the grid ends on light items), and the block
    // takes items `gridDim.x` apart. Key tiles are numbered across the block's items (`g`),
    // so the stages' barriers run on from item to item; the next item's Q and first key tiles
    // load during this one's epilogue.
    let nq = (seq + (BLOCK - 1)) / BLOCK;
    let heads = o.dim(0).cast::<u32>();
    let total = nq * heads;
    let item = |w: Expr<u32>| {
        let qi = w % nq;
        let qt = if causal { nq - 1u32 - qi } else { qi };
        // Key tiles: all visible before the diagonal one when causal.
        let tiles = if causal { qt + 1u32 } else { nq };
        (qt, w / nq, tiles)
    };
    let i32_ = |x: Expr<u32>| x.cast::<i32>();
    let tile_bytes = BLOCK * d * es;
    k.if_(t.eq(0u32), |k| {
        bars.q.init(0u32, 1u32);
        for s in 0..stages {
            bars.k_full.init(s, 1u32);
            bars.v_full.init(s, 1u32);
            bars.k_empty.init(s, 2u32);
            bars.v_empty.init(s, 2u32);
        }
        k.fence_barrier_init();
    });
    k.syncthreads();
    let stage = |g: Expr<u32>| (g % stages, (g / stages) & 1u32);
    // Thread 0: TMA copies of `map`'s rows `row..row + BLOCK` (all columns) of head `bh` to
    // `at`.
    let copy = |map: &TmaDesc<T, 3>,
                (bh, row): (Expr<i32>, Expr<u32>),
                at: Expr<u32>,
                bar: &Mbarriers,
                s| {
        bar.arrive_expect_tx(s, tile_bytes);
        for b in 0..lay.boxes {
            let col = Expr::lit((b * BOX_COLS) as i32);
            map.load([bh, i32_(row), col], &smem, at + b * BOX, bar, s);
        }
    };
    // Key tile j of head `bh`, the block's key tile g, into its stage.
    let load_k = |bh: Expr<i32>, g: Expr<u32>, j: Expr<u32>| {
        let s = g % stages;
        copy(mk, (bh, j * BLOCK), lay.k(s), &bars.k_full, s)
    };
    let load_v = |bh: Expr<i32>, g: Expr<u32>, j: Expr<u32>| {
        let s = g % stages;
        copy(mv, (bh, j * BLOCK), lay.v(s), &bars.v_full, s)
    };
    // Thread 0: item w's Q and first key tiles (the block's key tiles from g0), into a Q
    // buffer and stages that every warpgroup is done with. A stage's last round (key tile
    // g - stages, of an earlier item) was released before the block barrier that precedes
    // this, and no refill waited for it: its "empty" phases are waited for here (they have
    // completed), so that every phase is waited for before the next one's arrivals
    // (compute-sanitizer's synccheck reports "Missing wait" otherwise).
    let start = |k: &KernelBuilder, w: Expr<u32>, g0: Expr<u32>| {
        let (qt, bh, tiles) = item(w);
        let bh = i32_(bh);
        copy(mq, (bh, qt * BLOCK), lay.q(), &bars.q, Expr::lit(0u32));
        k.for_range(0u32, tiles.min(stages), |k, j| {
            let g = g0 + j;
            k.if_(g.ge(stages), |k| {
                let (s, phase) = stage(g - stages);
                bars.k_empty.wait(k, s, phase);
                bars.v_empty.wait(k, s, phase);
            });
            load_k(bh, g, j);
            load_v(bh, g, j);
        });
    };
    let (first, apart) = (k.block_idx().x, k.grid_dim().x);
    k.if_(t.eq(0u32).and(first.lt(total)), |k| {
        start(k, first, Expr::lit(0u32))
    });
    // The block's key tiles before this item's, and its items done (Q's barrier phase).
    let done_tiles = k.var(0u32);
    let done_items = k.var(0u32);

    // This thread's place in its warpgroup's 64-row tile: warp w's rows 16w + g and + 8.
    let lane = t & 31u32;
    let (g, quad) = (lane >> 2u32, lane & 3u32);
    let st = RowState {
        max: [0, 1].map(|_| k.var(f32::NEG_INFINITY)),
        sum: [0, 1].map(|_| k.var(0.0f32)),
        o: WgmmaAcc::zeros(d).vars(k),
        p: (0..BLOCK / 16 * 4).map(|_| k.var(0u32)).collect(),
    };
    k.for_step(first, total, apart, |k, w| {
        let (qt, head, tiles) = item(w);
        let bh = i32_(head);
        let q0 = qt * BLOCK;
        let full = if causal { qt } else { seq / BLOCK };
        let g0 = done_tiles.get();
        let row0 = q0 + wg * WG_ROWS + ((t >> 5u32) & 3u32) * 16u32 + g;
        for h in 0..2 {
            st.max[h].set(f32::NEG_INFINITY);
            st.sum[h].set(0.0f32);
        }
        for v in &st.o {
            v.set(0.0f32);
        }
        bars.q.wait(k, 0u32, done_items.get() & 1u32);

        // Waits until key tile j's K (or V) has landed.
        let wait_k = |k: &KernelBuilder, j: Expr<u32>| {
            let (s, phase) = stage(g0 + j);
            bars.k_full.wait(k, s, phase);
        };
        let wait_v = |k: &KernelBuilder, j: Expr<u32>| {
            let (s, phase) = stage(g0 + j);
            bars.v_full.wait(k, s, phase);
        };
        // S = Q·Kᵀ for key tile j (issued, not committed): A = this warpgroup's 64 rows of
        // Q, B = the tile's keys, both K-major.
        let qk = |k: &KernelBuilder, j: Expr<u32>| {
            let s = (g0 + j) % stages;
            let mut acc = WgmmaAcc::zeros(BLOCK);
            for kk in 0..d / 16 {
                let (b, step) = (kk / 4, (kk % 4) * 32);
                let at = |base: Expr<u32>| {
                    SmemMatrix::new(&smem, base, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024)
                        .advance(step)
                };
                let a = at(lay.q() + b * BOX + wg * (WG_ROWS * BOX_COLS));
                acc = k.wgmma(&a, &at(lay.k(s) + b * BOX), &acc, kk > 0);
            }
            acc
        };
        // O += P·V for key tile j (issued, not committed): A = the P kept in `st.p`, B = V
        // (keys × head dim, MN-major: 64-column boxes `BOX` elements apart).
        let pv = |k: &KernelBuilder, j: Expr<u32>, acc: WgmmaAcc| {
            let s = (g0 + j) % stages;
            let mut acc = acc;
            for c in 0..BLOCK / 16 {
                let regs: Vec<Expr<u32>> = st.p[4 * c as usize..4 * c as usize + 4]
                    .iter()
                    .map(|v| v.get())
                    .collect();
                let a = FragA::<T>::from_regs([regs[0], regs[1], regs[2], regs[3]]);
                let vb = SmemMatrix::new(
                    &smem,
                    lay.v(s),
                    WgmmaMajor::MN,
                    WgmmaSwizzle::B128,
                    BOX * es,
                    1024,
                );
                acc = k.wgmma_rs(&a, &vb.advance(c * 16 * 128), &acc, true);
            }
            acc
        };
        // The online softmax of tile j's scores: new row maxima and sums, P into `st.p`;
        // returns the factors (one per row) by which O must be scaled.
        let softmax = |k: &KernelBuilder, j: Expr<u32>, scores: &WgmmaAcc, masked: bool| {
            let mut x: Vec<Expr<f32>> = scores.elems().to_vec();
            if masked {
                let ninf = Expr::lit(f32::NEG_INFINITY);
                for (e, v) in x.iter_mut().enumerate() {
                    let col = j * BLOCK + acc_col(e) + quad * 2u32;
                    let mut ok = col.lt(seq);
                    if causal {
                        ok = ok.and(col.le(row0 + 8 * acc_row(e) as u32));
                    }
                    *v = select(ok, *v, ninf);
                }
            }
            let mut alpha = [Expr::lit(0.0f32); 2];
            let mut shift = [Expr::lit(0.0f32); 2];
            for h in 0..2 {
                let mine = tree(row_elems(&x, h), |a, b| a.max(b));
                let m1 = mine.max(k.shfl_xor_sync(u32::MAX, mine, 1u32));
                let m = m1.max(k.shfl_xor_sync(u32::MAX, m1, 2u32));
                let old = st.max[h].get();
                let new = old.max(m);
                st.max[h].set(new);
                // Scores are scaled in the exponent: exp2(x·scale - max·scale).
                shift[h] = select(new.eq(f32::NEG_INFINITY), 0.0f32, new * scale);
                alpha[h] = (old * scale - shift[h]).exp2_approx();
            }
            let p: Vec<Expr<f32>> = x
                .iter()
                .enumerate()
                .map(|(e, v)| (*v * scale - shift[acc_row(e)]).exp2_approx())
                .collect();
            for (h, (sum, a)) in st.sum.iter().zip(alpha).enumerate() {
                let part = tree(row_elems(&p, h), |a, b| a + b);
                sum.set(sum.get() * a + part);
            }
            let p = WgmmaAcc::from_elems(p);
            for c in 0..BLOCK / 16 {
                for (v, r) in st.p[4 * c as usize..].iter().zip(p.frag_a::<T>(c).regs()) {
                    v.set(r);
                }
            }
            alpha
        };
        let rescale = |alpha: [Expr<f32>; 2]| {
            for (e, v) in st.o.iter().enumerate() {
                v.set(v.get() * alpha[acc_row(e)]);
            }
        };
        let set_o = |acc: &WgmmaAcc| {
            for (v, e) in st.o.iter().zip(acc.elems()) {
                v.set(*e);
            }
        };

        // Tile 0: S, softmax (masked: it may be the last or the diagonal tile). Each batch
        // of wgmmas is fenced after the barrier waits and the register writes it depends on
        // (a fence before a wait's loop makes ptxas insert its own, serialising every wgmma).
        let zero = Expr::lit(0u32);
        wait_k(k, zero);
        k.wgmma_fence();
        let s0 = qk(k, zero);
        k.wgmma_commit();
        let s0 = k.wgmma_wait(0, &s0);
        k.if_(leader, |_| bars.k_empty.arrive(g0 % stages));
        softmax(k, zero, &s0, true);
        // Tile j ≥ 1: S_j = Q·K_jᵀ and O += P_{j-1}·V_{j-1} in flight together; the softmax of
        // S_j runs while the second is still in the tensor cores (FlashAttention-3's
        // intra-warpgroup overlap); then O is rescaled and the stages are released and
        // refilled.
        let step = |k: &KernelBuilder, j: Expr<u32>, masked: bool| {
            wait_k(k, j);
            wait_v(k, j - 1u32);
            k.wgmma_fence();
            let sj = qk(k, j);
            k.wgmma_commit();
            let acc = pv(k, j - 1u32, WgmmaAcc::from_vars(&st.o));
            k.wgmma_commit();
            let sj = k.wgmma_wait(1, &sj);
            k.if_(leader, |_| bars.k_empty.arrive((g0 + j) % stages));
            let alpha = softmax(k, j, &sj, masked);
            let acc = k.wgmma_wait(0, &acc);
            set_o(&acc);
            rescale(alpha);
            k.if_(leader, |_| bars.v_empty.arrive((g0 + j - 1u32) % stages));
            // Refills, one per warpgroup so that neither carries both: thread 0 the K of
            // tile j - 1 (released by both warpgroups at their tile j - 1) with tile
            // j - 1 + stages, thread 128 the V of tile j - 2 with tile j - 2 + stages.
            // (Measured on an H100: refilling K one tile and V two tiles behind is 4-8%
            // faster than two and three, which wait less for the other warpgroup but
            // prefetch less.)
            let (kb, vb) = (1u32, 2u32);
            k.if_(
                t.eq(0u32).and(j.ge(kb)).and((j + (stages - kb)).lt(tiles)),
                |k| {
                    let (s, phase) = stage(g0 + j - kb);
                    bars.k_empty.wait(k, s, phase);
                    load_k(bh, g0 + j + (stages - kb), j + (stages - kb));
                },
            );
            k.if_(
                t.eq(128u32)
                    .and(j.ge(vb))
                    .and((j + (stages - vb)).lt(tiles)),
                |k| {
                    let (s, phase) = stage(g0 + j - vb);
                    bars.v_empty.wait(k, s, phase);
                    load_v(bh, g0 + j + (stages - vb), j + (stages - vb));
                },
            );
        };
        let first_masked = full.max(1u32);
        k.for_range(1u32, first_masked, |k, j| step(k, j, false));
        k.for_range(first_masked, tiles, |k, j| step(k, j, true));
        // The last tile's P·V.
        let last = tiles - 1u32;
        wait_v(k, last);
        k.wgmma_fence();
        let acc = pv(k, last, WgmmaAcc::from_vars(&st.o));
        k.wgmma_commit();
        let acc = k.wgmma_wait(0, &acc);
        set_o(&acc);
        k.if_(leader, |_| bars.v_empty.arrive((g0 + last) % stages));
        // Every wgmma of this item is done and every stage released: the next item's Q and
        // first key tiles load while this one's O is stored.
        k.syncthreads();
        let next = w + apart;
        k.if_(t.eq(0u32).and(next.lt(total)), |k| {
            start(k, next, g0 + tiles)
        });
        done_tiles.set(g0 + tiles);
        done_items.set(done_items.get() + 1u32);

        // O / row sums (each thread summed its own columns: add the quad's), rounded,
        // stored.
        let inv = st.sum.each_ref().map(|sum| {
            let l = sum.get();
            let l = l + k.shfl_xor_sync(u32::MAX, l, 1u32);
            let l = l + k.shfl_xor_sync(u32::MAX, l, 2u32);
            Expr::lit(1.0f32) / l
        });
        let base = head * seq;
        for (e, v) in st.o.iter().enumerate() {
            let h = acc_row(e);
            let row = row0 + 8 * h as u32;
            let col = quad * 2u32 + acc_col(e);
            k.if_(row.lt(seq), |_| {
                o.set((base + row) * d + col, (v.get() * inv[h]).cast::<T>());
            });
        }
    });
}

/// Which of this thread's two rows accumulator element `e` is in (0: row `g`, 1: row `g + 8`
/// of its warp's 16; `ir::hopper::acc_coord`'s layout, as `WgmmaAcc::for_each` reads it).
fn acc_row(e: usize) -> usize {
    (e / 2) % 2
}

/// Accumulator element `e`'s column, less this thread's `2·(lane % 4)`.
fn acc_col(e: usize) -> u32 {
    (8 * (e / 4) + e % 2) as u32
}

/// The elements of `v` (an accumulator's) in this thread's row `h`.
fn row_elems(v: &[Expr<f32>], h: usize) -> Vec<Expr<f32>> {
    v.iter()
        .enumerate()
        .filter(|(e, _)| acc_row(*e) == h)
        .map(|(_, x)| *x)
        .collect()
}

/// `v` reduced pairwise (a tree of depth log2 n, not a chain of n dependent instructions).
fn tree(mut v: Vec<Expr<f32>>, f: impl Fn(Expr<f32>, Expr<f32>) -> Expr<f32>) -> Expr<f32> {
    while v.len() > 1 {
        v = v
            .chunks(2)
            .map(|c| if c.len() == 2 { f(c[0], c[1]) } else { c[0] })
            .collect();
    }
    v[0]
}

/// The host's attention in f64 for one `[seq, d]` head (`q`, `k`, `v` row-major): per
/// element the output and `Σ p·|v| / Σ p` (the scale of the GPU's rounding errors). A NaN key
/// or value, or an infinite score, that a row sees makes its outputs NaN, as on the GPU.
pub fn reference(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    seq: usize,
    d: usize,
    causal: bool,
) -> Vec<(f64, f64)> {
    (0..seq)
        .flat_map(|i| {
            let keys = if causal { i + 1 } else { seq };
            reference_row(&q[i * d..(i + 1) * d], k, v, keys, d)
        })
        .collect()
}

/// [`reference`] for one query row `q` (`d` values) against the first `keys` rows of `k` and
/// `v`: the row's `d` outputs and their error scales.
pub fn reference_row(q: &[f64], k: &[f64], v: &[f64], keys: usize, d: usize) -> Vec<(f64, f64)> {
    let scale = 1.0 / (d as f64).sqrt();
    let s: Vec<f64> = (0..keys)
        .map(|j| (0..d).map(|x| q[x] * k[j * d + x]).sum::<f64>() * scale)
        .collect();
    let m = s.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let p: Vec<f64> = s.iter().map(|&x| (x - m).exp()).collect();
    let l: f64 = p.iter().sum();
    (0..d)
        .map(|c| {
            let num: f64 = p.iter().enumerate().map(|(j, &pj)| pj * v[j * d + c]).sum();
            let mag: f64 = p
                .iter()
                .enumerate()
                .map(|(j, &pj)| pj * v[j * d + c].abs())
                .sum();
            (num / l, mag / l)
        })
        .collect()
}
