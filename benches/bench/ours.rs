//! Our implementations: kernels written with the builder (the `cudajit-kernel` rows), kept as a
//! reference for what the builder can do by hand.

use std::cell::OnceCell;

use super::*;

/// Geometry of the elementwise and reduction kernels: a grid-stride loop over 16-byte
/// vectors, `unroll` vectors loaded per input before any is used, a grid of
/// `blocks_per_sm` (capped by occupancy) blocks of `block` threads per multiprocessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EwConfig {
    /// Vectors in flight per thread and input.
    pub unroll: u64,
    /// Blocks per multiprocessor (capped at what fits).
    pub blocks_per_sm: u32,
    /// Threads per block.
    pub block: u32,
}

impl Default for EwConfig {
    fn default() -> Self {
        EwConfig {
            unroll: 4,
            blocks_per_sm: 8,
            block: 256,
        }
    }
}

/// The configurations `--sweep` times for `add` (unroll, blocks per SM, block).
pub const SWEEP: [(u64, u32, u32); 9] = [
    (1, 8, 256),
    (2, 8, 256),
    (4, 8, 256),
    (8, 8, 256),
    (2, 4, 256),
    (4, 4, 256),
    (4, 2, 256),
    (4, 4, 512),
    (4, 16, 128),
];

/// Threads per block of the reductions.
const RBLOCK: u32 = 256;
/// Blocks per multiprocessor of the full reductions' first pass.
const RBPS: u32 = 4;
/// Vectors in flight per thread in the reductions.
const RUNROLL: u64 = 4;

/// A read-only array parameter.
type In<T> = &'static [T];
/// A writable array parameter.
type Out<T> = &'static mut [T];
/// `(x, out)`.
type P2 = (In<f32>, Out<f32>);
/// `(x, y, out)`.
type P3<T> = (In<T>, In<T>, Out<T>);
/// `(x, y, out, a)`.
type PAxpy = (In<f32>, In<f32>, Out<f32>, f32);
/// `(x, partial values, partial indices)`.
type PArgPart = (In<f32>, Out<f32>, Out<u64>);
/// `(partial values, partial indices, index)`.
type PArgFin = (In<f32>, In<u64>, Out<u64>);
/// `(x, out, a length)`.
type PLen = (In<f32>, Out<f32>, u64);
/// `(x, partials, cols, rows per chunk)`.
type PColPart = (In<f32>, Out<f32>, u64, u64);

/// A kernel and its grid cap (multiprocessors x resident blocks), set at first launch.
struct Ew<P> {
    k: Kernel<P>,
    cap: OnceCell<u32>,
}

impl<P: cudajit::codegen::KernelParams> Ew<P> {
    fn new(k: Kernel<P>) -> Self {
        Ew {
            k,
            cap: OnceCell::new(),
        }
    }

    /// `blocks` blocks at most, no more than fit at once.
    fn config(
        &self,
        ctx: &Context,
        sms: u32,
        bps: u32,
        block: u32,
        blocks: u64,
    ) -> Result<LaunchConfig> {
        let cap = match self.cap.get() {
            Some(&c) => c,
            None => {
                let f = self.k.function(ctx)?;
                let fit = f.max_active_blocks_per_multiprocessor(block, 0)?.max(1);
                *self.cap.get_or_init(|| sms * bps.min(fit))
            }
        };
        let grid = blocks.clamp(1, cap as u64) as u32;
        Ok(LaunchConfig::new(grid, block))
    }
}

/// Every kernel of our side, built once.
pub struct Ops {
    sms: u32,
    cfg: EwConfig,
    copy: Ew<P2>,
    add: Ew<P3<f32>>,
    axpy: Ew<PAxpy>,
    chain: Ew<P3<f32>>,
    add_f64: Ew<P3<f64>>,
    bcast: Ew<P3<f32>>,
    sum: Ew<P2>,
    max: Ew<P2>,
    argmax1: Ew<PArgPart>,
    argmax2: Kernel<PArgFin>,
    row_sum: Kernel<PLen>,
    col1: Kernel<PColPart>,
    col2: Kernel<PLen>,
}

impl Ops {
    /// Builds every kernel (compiled and loaded at first launch).
    pub fn new(sms: u32, cfg: EwConfig) -> Result<Ops> {
        let u = cfg.unroll;
        let tag = format!("u{u}");
        Ok(Ops {
            sms,
            cfg,
            copy: Ew::new(Kernel::build(
                &format!("bench_copy_{tag}"),
                |k, (x, out)| ew_body::<f32, 4, 1>(k, [x], out, u, &|[a]| a),
            )?),
            add: Ew::new(binary::<f32, 4>(&format!("bench_add_{tag}"), u, |a, b| {
                a + b
            })?),
            axpy: Ew::new(Kernel::build(
                &format!("bench_axpy_{tag}"),
                |k, (x, y, out, a)| ew_body::<f32, 4, 2>(k, [x, y], out, u, &|[p, q]| a * p + q),
            )?),
            chain: Ew::new(binary::<f32, 4>(
                &format!("bench_chain_{tag}"),
                u,
                |a, b| (a * a + b * b).sqrt() * 0.5f32 + 1.0f32,
            )?),
            add_f64: Ew::new(binary::<f64, 2>(
                &format!("bench_add_f64_{tag}"),
                u,
                |a, b| a + b,
            )?),
            bcast: Ew::new(bcast_kernel(&format!("bench_bcast_add_{tag}"), u)?),
            sum: Ew::new(reduce_kernel("bench_sum", Red::Sum)?),
            max: Ew::new(reduce_kernel("bench_max", Red::Max)?),
            argmax1: Ew::new(argmax_partial()?),
            argmax2: argmax_final()?,
            row_sum: row_sum_kernel()?,
            col1: col_partial_kernel()?,
            col2: col_final_kernel()?,
        })
    }

    /// Every kernel's PTX for `options` (no GPU needed): `(name, ptx)`.
    pub fn ptx_all(&self, options: &PtxOptions) -> Result<Vec<(String, String)>> {
        let mut v = Vec::new();
        macro_rules! each {
            ($($k:expr),*) => {$(
                v.push(($k.name().to_string(), $k.compile_ptx(options)?));
            )*};
        }
        each!(
            self.copy.k,
            self.add.k,
            self.axpy.k,
            self.chain.k,
            self.add_f64.k,
            self.bcast.k,
            self.sum.k,
            self.max.k,
            self.argmax1.k,
            self.argmax2,
            self.row_sum,
            self.col1,
            self.col2
        );
        Ok(v)
    }

    /// A short description of a kernel's geometry and resources, for the `variant` field.
    pub fn describe(&self, ctx: &Context, which: &str) -> String {
        let f = match which {
            "copy" => self.copy.k.function(ctx),
            "add" => self.add.k.function(ctx),
            "axpy" => self.axpy.k.function(ctx),
            "chain" => self.chain.k.function(ctx),
            "add_f64" => self.add_f64.k.function(ctx),
            "bcast_add" => self.bcast.k.function(ctx),
            "sum" => self.sum.k.function(ctx),
            "max" => self.max.k.function(ctx),
            "argmax" => self.argmax1.k.function(ctx),
            "row_sum" => self.row_sum.function(ctx),
            _ => self.col1.function(ctx),
        };
        let regs = f
            .and_then(|f| f.attributes())
            .map(|a| format!("{} regs, {} B local", a.num_regs, a.local_size_bytes))
            .unwrap_or_else(|e| format!("attributes: {e}"));
        let c = self.cfg;
        match which {
            "sum" | "max" | "argmax" => {
                format!("v4 x{RUNROLL}, {RBPS} blocks/SM x {RBLOCK}, {regs}")
            }
            "row_sum" | "col_sum" => format!("v4 x{RUNROLL}, {RBLOCK} threads/block, {regs}"),
            _ => format!(
                "v{} x{}, {} blocks/SM x {}, {regs}",
                if which == "add_f64" { 2 } else { 4 },
                c.unroll,
                c.blocks_per_sm,
                c.block
            ),
        }
    }

    fn ew_config<P: cudajit::codegen::KernelParams>(
        &self,
        e: &Ew<P>,
        ctx: &Context,
        vectors: usize,
    ) -> Result<LaunchConfig> {
        let c = self.cfg;
        e.config(
            ctx,
            self.sms,
            c.blocks_per_sm,
            c.block,
            (vectors as u64).div_ceil(c.block as u64),
        )
    }

    /// `out = x` with the vectorised loop (a diagnostic against the memcpy).
    pub fn copy_kernel(&self, s: &Stream, x: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
        let cfg = self.ew_config(&self.copy, s.context(), out.len() / 4)?;
        self.copy.k.launch(s, cfg, (x, out))
    }

    /// `out = x + y`.
    pub fn add(&self, s: &Stream, x: &A1<f32>, y: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
        let cfg = self.ew_config(&self.add, s.context(), out.len() / 4)?;
        self.add.k.launch(s, cfg, (x, y, out))
    }

    /// `out = a * x + y`.
    pub fn axpy(
        &self,
        s: &Stream,
        a: f32,
        x: &A1<f32>,
        y: &A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        let cfg = self.ew_config(&self.axpy, s.context(), out.len() / 4)?;
        self.axpy.k.launch(s, cfg, (x, y, out, a))
    }

    /// `out = sqrt(x*x + y*y) * 0.5 + 1`, fused.
    pub fn chain(&self, s: &Stream, x: &A1<f32>, y: &A1<f32>, out: &mut A1<f32>) -> Result<()> {
        let cfg = self.ew_config(&self.chain, s.context(), out.len() / 4)?;
        self.chain.k.launch(s, cfg, (x, y, out))
    }

    /// `out = x + y` in f64.
    pub fn add_f64(&self, s: &Stream, x: &A1<f64>, y: &A1<f64>, out: &mut A1<f64>) -> Result<()> {
        let cfg = self.ew_config(&self.add_f64, s.context(), out.len() / 2)?;
        self.add_f64.k.launch(s, cfg, (x, y, out))
    }

    /// `out[r, c] = x[r, c] + row[c]`, C order, `row.len()` columns (a multiple of 4).
    pub fn bcast_add(
        &self,
        s: &Stream,
        x: &A1<f32>,
        row: &A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        let cols = row.len();
        if cols == 0 || cols % 4 != 0 || out.len() % cols != 0 || x.len() != out.len() {
            return Err(cudajit::Error::Usage(format!(
                "bcast_add: {} elements, rows of {cols}: need a whole number of rows of a multiple of 4",
                out.len()
            )));
        }
        let rows = out.len() / cols;
        let cfg = self.ew_config(&self.bcast, s.context(), rows * self.cfg.block as usize)?;
        self.bcast.k.launch(s, cfg, (x, row, out))
    }

    /// Elements of scratch the full reductions need (one partial per block).
    pub fn partials_len(&self) -> usize {
        (self.sms * RBPS) as usize
    }

    fn red_config<P: cudajit::codegen::KernelParams>(
        &self,
        e: &Ew<P>,
        ctx: &Context,
        n: usize,
    ) -> Result<LaunchConfig> {
        e.config(
            ctx,
            self.sms,
            RBPS,
            RBLOCK,
            (n as u64 / 4).div_ceil(RBLOCK as u64),
        )
    }

    fn reduce(
        &self,
        e: &Ew<P2>,
        s: &Stream,
        x: &A1<f32>,
        scratch: &mut A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        let cfg = self.red_config(e, s.context(), x.len())?;
        let g = cfg.grid.x as usize;
        let mut part = scratch.slice_mut(..g)?;
        e.k.launch(s, cfg, (x, &mut part))?;
        e.k.launch(
            s,
            LaunchConfig::new(1u32, RBLOCK),
            (&scratch.slice(..g)?, out),
        )
    }

    /// `out[0] = sum(x)`: block partials into `scratch`, then one block.
    pub fn sum(
        &self,
        s: &Stream,
        x: &A1<f32>,
        scratch: &mut A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        self.reduce(&self.sum, s, x, scratch, out)
    }

    /// `out[0] = max(x)` (NaN inputs are ignored, not propagated).
    pub fn max(
        &self,
        s: &Stream,
        x: &A1<f32>,
        scratch: &mut A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        self.reduce(&self.max, s, x, scratch, out)
    }

    /// `out[0]` = the first index of the maximum of `x`.
    pub fn argmax(
        &self,
        s: &Stream,
        x: &A1<f32>,
        pv: &mut A1<f32>,
        pi: &mut A1<u64>,
        out: &mut A1<u64>,
    ) -> Result<()> {
        let cfg = self.red_config(&self.argmax1, s.context(), x.len())?;
        let g = cfg.grid.x as usize;
        self.argmax1.k.launch(
            s,
            cfg,
            (x, &mut pv.slice_mut(..g)?, &mut pi.slice_mut(..g)?),
        )?;
        self.argmax2.launch(
            s,
            LaunchConfig::new(1u32, RBLOCK),
            (&pv.slice(..g)?, &pi.slice(..g)?, out),
        )
    }

    /// `out[r] = sum(x[r, :])` for a C-order matrix of `cols` columns (a multiple of 4).
    pub fn row_sum(&self, s: &Stream, x: &A1<f32>, cols: usize, out: &mut A1<f32>) -> Result<()> {
        if cols == 0 || cols % 4 != 0 || x.len() != out.len() * cols {
            return Err(cudajit::Error::Usage("row_sum: bad shape".into()));
        }
        self.row_sum.launch(
            s,
            LaunchConfig::new(out.len() as u32, RBLOCK),
            (x, out, cols as u64),
        )
    }

    /// Row chunks of the column sums of a `rows` x `cols` matrix.
    fn col_chunks(&self, rows: usize, cols: usize) -> (usize, usize) {
        let xblocks = (cols / 4).div_ceil(RBLOCK as usize).max(1);
        let want = (self.sms as usize * 8)
            .div_ceil(xblocks)
            .clamp(1, rows.max(1));
        let per = rows.div_ceil(want).max(1);
        (rows.div_ceil(per), per)
    }

    /// Elements of scratch `col_sum` needs.
    pub fn col_partials_len(&self, rows: usize, cols: usize) -> usize {
        self.col_chunks(rows, cols).0 * cols
    }

    /// `out[c] = sum(x[:, c])` for a C-order matrix of `cols` columns (a multiple of 4):
    /// each block sums a chunk of rows for 4 x 256 columns, then one pass adds the chunks.
    pub fn col_sum(
        &self,
        s: &Stream,
        x: &A1<f32>,
        cols: usize,
        scratch: &mut A1<f32>,
        out: &mut A1<f32>,
    ) -> Result<()> {
        if cols == 0 || cols % 4 != 0 || x.len() % cols != 0 || out.len() != cols {
            return Err(cudajit::Error::Usage("col_sum: bad shape".into()));
        }
        let rows = x.len() / cols;
        let (chunks, per) = self.col_chunks(rows, cols);
        let xblocks = (cols / 4).div_ceil(RBLOCK as usize) as u32;
        let mut part = scratch.slice_mut(..chunks * cols)?;
        self.col1.launch(
            s,
            LaunchConfig::new((xblocks, chunks as u32), RBLOCK),
            (x, &mut part, cols as u64, per as u64),
        )?;
        self.col2.launch(
            s,
            LaunchConfig::new(xblocks, RBLOCK),
            (&scratch.slice(..chunks * cols)?, out, chunks as u64),
        )
    }
}

// --- kernel bodies --------------------------------------------------------------------

/// `for m in 0..ceil((end - start) / step)`, visiting `j = start + m * step`: `unroll`
/// iterations at a time whose loads (`load(j)`) are all issued before any is used
/// (`consume(j, loaded)`), then the rest one by one.
fn strided<L>(
    k: &KernelBuilder,
    start: Expr<u64>,
    end: Expr<u64>,
    step: Expr<u64>,
    unroll: u64,
    load: &dyn Fn(Expr<u64>) -> L,
    consume: &dyn Fn(Expr<u64>, L),
) {
    let count = (end.max(start) - start + step - 1u64) / step;
    if unroll > 1 {
        let full = count / unroll * unroll;
        k.for_step(k.lit(0u64), full, k.lit(unroll), |_, m| {
            let base = start + m * step;
            let js: Vec<Expr<u64>> = (0..unroll).map(|u| base + step * u).collect();
            let loaded: Vec<L> = js.iter().map(|&j| load(j)).collect();
            for (j, l) in js.into_iter().zip(loaded) {
                consume(j, l);
            }
        });
        k.for_step(full, count, k.lit(1u64), |_, m| {
            let j = start + m * step;
            consume(j, load(j));
        });
    } else {
        k.for_step(k.lit(0u64), count, k.lit(1u64), |_, m| {
            let j = start + m * step;
            consume(j, load(j));
        });
    }
}

/// An elementwise kernel body over `NIN` inputs of `W`-lane vectors: a grid-stride loop
/// over whole vectors, then one scalar element per thread for the tail.
fn ew_body<T: cudajit::codegen::Num, const W: usize, const NIN: usize>(
    k: &KernelBuilder,
    ins: [Slice<T>; NIN],
    out: SliceMut<T>,
    unroll: u64,
    f: &dyn Fn([Expr<T>; NIN]) -> Expr<T>,
) {
    let n = out.len();
    let nv = n / W as u64;
    strided(
        k,
        k.grid1(),
        nv,
        k.gridsize1(),
        unroll,
        &|j| ins.map(|a| a.load_vec::<W>(j)),
        &|j, v: [[Expr<T>; W]; NIN]| {
            out.store_vec::<W>(
                j,
                std::array::from_fn(|l| f(std::array::from_fn(|a| v[a][l]))),
            )
        },
    );
    let t = nv * W as u64 + k.grid1();
    k.if_(t.lt(n), |_| out.set(t, f(ins.map(|a| a.at(t)))));
}

fn binary<T: cudajit::codegen::Num, const W: usize>(
    name: &str,
    unroll: u64,
    f: fn(Expr<T>, Expr<T>) -> Expr<T>,
) -> Result<Kernel<P3<T>>> {
    Kernel::build(name, |k, (x, y, out)| {
        ew_body::<T, W, 2>(k, [x, y], out, unroll, &|[a, b]| f(a, b))
    })
}

/// Blocks take whole rows (grid-stride over rows); threads stride over a row's vectors.
fn bcast_kernel(name: &str, unroll: u64) -> Result<Kernel<P3<f32>>> {
    Kernel::<P3<f32>>::build(name, |k, (x, row, out)| {
        let ncv = row.len() / 4u64;
        let rows = out.len() / row.len();
        let b = k.block_idx().x.cast::<u64>();
        let g = k.grid_dim().x.cast::<u64>();
        let t = k.thread_idx().x.cast::<u64>();
        let bd = k.block_dim().x.cast::<u64>();
        k.for_step(b, rows, g, |k, r| {
            let base = r * ncv;
            strided(
                k,
                t,
                ncv,
                bd,
                unroll,
                &|c| (x.load_vec::<4>(base + c), row.load_vec::<4>(c)),
                &|c, (a, w): ([Expr<f32>; 4], [Expr<f32>; 4])| {
                    out.store_vec::<4>(base + c, std::array::from_fn(|l| a[l] + w[l]))
                },
            );
        });
    })
}

#[derive(Clone, Copy)]
enum Red {
    Sum,
    Max,
}

impl Red {
    fn init(self) -> f32 {
        match self {
            Red::Sum => 0.0,
            Red::Max => f32::NEG_INFINITY,
        }
    }
    fn op(self, a: Expr<f32>, b: Expr<f32>) -> Expr<f32> {
        match self {
            Red::Sum => a + b,
            Red::Max => a.max(b),
        }
    }
}

/// Reduces `v` (one value per thread) over the block in shared memory: thread 0 gets it.
fn block_reduce(k: &KernelBuilder, v: Expr<f32>, red: Red) -> Expr<f32> {
    let tile = k.shared_array::<f32>(RBLOCK as usize);
    let t = k.thread_idx().x;
    tile.set(t, v);
    k.syncthreads();
    let mut s = RBLOCK / 2;
    while s > 0 {
        k.if_(t.lt(s), |_| tile.set(t, red.op(tile.at(t), tile.at(t + s))));
        k.syncthreads();
        s /= 2;
    }
    tile.at(0u32)
}

/// Four lane accumulators over `x[start..end)` in vectors (indices in vectors).
fn lanes(
    k: &KernelBuilder,
    x: Slice<f32>,
    red: Red,
    start: Expr<u64>,
    end: Expr<u64>,
    step: Expr<u64>,
    offset: Expr<u64>,
) -> [Var<f32>; 4] {
    let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(red.init()));
    strided(
        k,
        start,
        end,
        step,
        RUNROLL,
        &|j| x.load_vec::<4>(offset + j),
        &|_, v: [Expr<f32>; 4]| {
            for l in 0..4 {
                acc[l].set(red.op(acc[l].get(), v[l]));
            }
        },
    );
    acc
}

/// One value per block of `x` (grid-stride over vectors plus the scalar tail): launched
/// over the input with many blocks, then over the partials with one.
fn reduce_kernel(name: &str, red: Red) -> Result<Kernel<P2>> {
    Kernel::<P2>::build(name, |k, (x, out)| {
        let n = x.len();
        let nv = n / 4u64;
        let acc = lanes(k, x, red, k.grid1(), nv, k.gridsize1(), k.lit(0u64));
        let t = nv * 4u64 + k.grid1();
        k.if_(t.lt(n), |_| acc[0].set(red.op(acc[0].get(), x.at(t))));
        let mine = red.op(
            red.op(acc[0].get(), acc[1].get()),
            red.op(acc[2].get(), acc[3].get()),
        );
        let r = block_reduce(k, mine, red);
        k.if_(k.thread_idx().x.eq(0u32), |k| out.set(k.block_idx().x, r));
    })
}

/// Whether `(v, i)` beats `(bv, bi)`: larger, or equal with a smaller index.
fn better(v: Expr<f32>, i: Expr<u64>, bv: Expr<f32>, bi: Expr<u64>) -> Expr<bool> {
    v.gt(bv).or(v.eq(bv).and(i.lt(bi)))
}

/// Block-reduces `(v, i)` pairs: thread 0 gets the best.
fn block_argmax(k: &KernelBuilder, v: Expr<f32>, i: Expr<u64>) -> (Expr<f32>, Expr<u64>) {
    let sv = k.shared_array::<f32>(RBLOCK as usize);
    let si = k.shared_array::<u64>(RBLOCK as usize);
    let t = k.thread_idx().x;
    sv.set(t, v);
    si.set(t, i);
    k.syncthreads();
    let mut s = RBLOCK / 2;
    while s > 0 {
        k.if_(t.lt(s), |_| {
            let (ov, oi) = (sv.at(t + s), si.at(t + s));
            set_if_better(sv, si, t, ov, oi);
        });
        k.syncthreads();
        s /= 2;
    }
    (sv.at(0u32), si.at(0u32))
}

/// `(sv[t], si[t]) = (ov, oi)` if that pair is better.
fn set_if_better(sv: SliceMut<f32>, si: SliceMut<u64>, t: Expr<u32>, ov: Expr<f32>, oi: Expr<u64>) {
    let (mv, mi) = (sv.at(t), si.at(t));
    let b = better(ov, oi, mv, mi);
    sv.set(t, select(b, ov, mv));
    si.set(t, select(b, oi, mi));
}

/// First pass of argmax: per block, the value and first index of its maximum.
fn argmax_partial() -> Result<Kernel<PArgPart>> {
    Kernel::<PArgPart>::build("bench_argmax_partial", |k, (x, pv, pi)| {
        let n = x.len();
        let nv = n / 4u64;
        let bv: [Var<f32>; 4] = std::array::from_fn(|_| k.var(f32::NEG_INFINITY));
        let bi: [Var<u64>; 4] = std::array::from_fn(|_| k.var(u64::MAX));
        // Each lane sees its indices in increasing order: a strict `>` keeps the first.
        strided(
            k,
            k.grid1(),
            nv,
            k.gridsize1(),
            RUNROLL,
            &|j| x.load_vec::<4>(j),
            &|j, v: [Expr<f32>; 4]| {
                for l in 0..4 {
                    let c = v[l].gt(bv[l].get());
                    bi[l].set(select(c, j * 4u64 + l as u64, bi[l].get()));
                    bv[l].set(select(c, v[l], bv[l].get()));
                }
            },
        );
        let t = nv * 4u64 + k.grid1();
        k.if_(t.lt(n), |_| {
            let v = x.at(t);
            let c = better(v, t, bv[0].get(), bi[0].get());
            bi[0].set(select(c, t, bi[0].get()));
            bv[0].set(select(c, v, bv[0].get()));
        });
        for l in 1..4 {
            let c = better(bv[l].get(), bi[l].get(), bv[0].get(), bi[0].get());
            bi[0].set(select(c, bi[l].get(), bi[0].get()));
            bv[0].set(select(c, bv[l].get(), bv[0].get()));
        }
        let (v, i) = block_argmax(k, bv[0].get(), bi[0].get());
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            let b = k.block_idx().x;
            pv.set(b, v);
            pi.set(b, i);
        });
    })
}

/// Second pass of argmax, one block: the index of the best of the partials.
fn argmax_final() -> Result<Kernel<PArgFin>> {
    Kernel::<PArgFin>::build("bench_argmax_final", |k, (pv, pi, oi)| {
        let t = k.thread_idx().x.cast::<u64>();
        let bv = k.var(f32::NEG_INFINITY);
        let bi = k.var(u64::MAX);
        k.for_step(t, pv.len(), k.block_dim().x.cast::<u64>(), |_, j| {
            let (v, i) = (pv.at(j), pi.at(j));
            let c = better(v, i, bv.get(), bi.get());
            bi.set(select(c, i, bi.get()));
            bv.set(select(c, v, bv.get()));
        });
        let (_, i) = block_argmax(k, bv.get(), bi.get());
        k.if_(k.thread_idx().x.eq(0u32), |_| oi.set(0u32, i));
    })
}

/// One block per row.
fn row_sum_kernel() -> Result<Kernel<PLen>> {
    Kernel::<PLen>::build("bench_row_sum", |k, (x, out, cols)| {
        let ncv = cols / 4u64;
        let r = k.block_idx().x.cast::<u64>();
        let t = k.thread_idx().x.cast::<u64>();
        let acc = lanes(
            k,
            x,
            Red::Sum,
            t,
            ncv,
            k.block_dim().x.cast::<u64>(),
            r * ncv,
        );
        let mine = (acc[0].get() + acc[1].get()) + (acc[2].get() + acc[3].get());
        let s = block_reduce(k, mine, Red::Sum);
        k.if_(k.thread_idx().x.eq(0u32), |_| out.set(r, s));
    })
}

/// Column sums, pass 1: block (bx, chunk) sums rows `chunk*per ..` of 4 x 256 columns.
fn col_partial_kernel() -> Result<Kernel<PColPart>> {
    Kernel::<PColPart>::build("bench_col_partial", |k, (x, part, cols, per)| {
        let ncv = cols / 4u64;
        let rows = x.len() / cols;
        let cv = (k.block_idx().x * k.block_dim().x + k.thread_idx().x).cast::<u64>();
        let chunk = k.block_idx().y.cast::<u64>();
        k.if_(cv.lt(ncv), |k| {
            let r0 = chunk * per;
            let r1 = (r0 + per).min(rows);
            let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(0.0f32));
            strided(
                k,
                r0,
                r1,
                k.lit(1u64),
                RUNROLL,
                &|r| x.load_vec::<4>(r * ncv + cv),
                &|_, v: [Expr<f32>; 4]| {
                    for l in 0..4 {
                        acc[l].set(acc[l].get() + v[l]);
                    }
                },
            );
            part.store_vec(chunk * ncv + cv, acc.map(|a| a.get()));
        });
    })
}

/// Column sums, pass 2: each thread adds its 4 columns' chunk partials in order.
fn col_final_kernel() -> Result<Kernel<PLen>> {
    Kernel::<PLen>::build("bench_col_final", |k, (part, out, chunks)| {
        let ncv = out.len() / 4u64;
        let cv = k.grid1();
        k.if_(cv.lt(ncv), |k| {
            let acc: [Var<f32>; 4] = std::array::from_fn(|_| k.var(0.0f32));
            k.for_range(k.lit(0u64), chunks, |_, c| {
                let v = part.load_vec::<4>(c * ncv + cv);
                for l in 0..4 {
                    acc[l].set(acc[l].get() + v[l]);
                }
            });
            out.store_vec(cv, acc.map(|a| a.get()));
        });
    })
}
