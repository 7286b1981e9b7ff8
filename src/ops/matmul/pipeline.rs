//! The tensor-core kernel's `cp.async` multistage main loop (CUTLASS's sm80 "multistage"
//! structure): A and B tiles are copied global → shared in 16-byte chunks with no registers
//! (`cp.async.cg`), into `stages` buffers of the dynamic shared memory; the prologue issues
//! `stages - 1` tiles (one commit group each), then each k-tile waits for its group
//! (`cp.async.wait_group stages - 2`), synchronises the block, issues the tile `stages - 1`
//! ahead into the buffer computed last, and computes its own buffer with `ldmatrix` + `mma`.
//!
//! Each operand's tile is kept as its global layout has it, lines along the contiguous axis
//! (A `[m][k]` or `[k][m]`, B `[k][n]` or `[n][k]`), each line padded by 16 bytes against
//! bank conflicts; the transposed layouts use the transposing fragment loaders. Edges need no
//! branch: a chunk the matrix ends in reads only its elements inside (`cp.async` with a
//! source size, the rest zero-filled), a chunk wholly outside reads nothing from a clamped,
//! in-bounds, aligned address. Shared indices are u32, and each thread's copy addresses are
//! computed once, outside the loop (only the K offset moves).

use crate::codegen::{
    select, DArray, Expr, FragA, FragB, KernelBuilder, MmaInput, ReadWrite, Scalar, Var,
};

use super::stage::TileSrc;
use super::types::MatmulInput;

/// One operand's source (as the register-staged loop's [`TileSrc`] describes it) and its
/// shared tile in the pipeline.
pub(super) struct PipeSrc<'a, T: Scalar> {
    pub src: TileSrc<'a, T>,
    /// Where the operand's buffers start in the dynamic shared memory (elements).
    pub offset: u32,
    /// Elements of padding per line.
    pub pad: u32,
}

impl<T: Scalar> PipeSrc<'_, T> {
    /// (lines, elements per line) of one buffer, padding included.
    fn lines(&self) -> (u32, u32) {
        if self.src.contig_k {
            (self.src.x_tile, self.src.k_tile + self.pad)
        } else {
            (self.src.k_tile, self.src.x_tile + self.pad)
        }
    }

    /// Elements per line (the stride between lines).
    pub fn stride(&self) -> u32 {
        self.lines().1
    }

    /// Elements of one buffer.
    pub fn stage_elems(&self) -> u32 {
        let (l, s) = self.lines();
        l * s
    }

    /// The flat index in the dynamic shared memory of buffer `buf`'s first element.
    pub fn buffer(&self, buf: Expr<u32>) -> Expr<u32> {
        buf * self.stage_elems() + self.offset
    }

    /// The offset within a buffer of the tile's element `(x, kk)`.
    pub fn offset_of(&self, x: Expr<u32>, kk: Expr<u32>) -> Expr<u32> {
        let (o, c) = if self.src.contig_k { (x, kk) } else { (kk, x) };
        o * self.stride() + c
    }

    /// [`offset_of`](PipeSrc::offset_of) of a constant position.
    pub fn offset_of_lit(&self, x: u32, kk: u32) -> u32 {
        let (o, c) = if self.src.contig_k { (x, kk) } else { (kk, x) };
        o * self.stride() + c
    }

    /// The tile's 16-byte chunks: (elements per chunk, chunks per line, chunks in all).
    fn chunks(&self) -> (u32, u32, u32) {
        let e = (16 / T::TY.size()) as u32;
        let (o_len, c_len) = if self.src.contig_k {
            (self.src.x_tile, self.src.k_tile)
        } else {
            (self.src.k_tile, self.src.x_tile)
        };
        (e, c_len / e, o_len * (c_len / e))
    }

    /// This thread's copies, prepared once: per chunk, its destination within a buffer and
    /// the parts of its source that do not move with K.
    fn plan(&self, k: &KernelBuilder, threads: u32) -> Vec<Chunk> {
        let (e, per_line, total) = self.chunks();
        let tid = k.thread_idx().x;
        (0..total.div_ceil(threads))
            .map(|r| {
                let v = tid + r * threads;
                let guard = (total % threads != 0).then(|| v.lt(total));
                let (o, c) = (v / per_line, (v % per_line) * e);
                let dst = o * self.stride() + c + self.offset;
                let fixed = if self.src.contig_k {
                    // The line (a row of the matrix) is fixed: clamp it, keep its start.
                    let gx = self.src.x0 + o;
                    let row = gx.min(self.src.x_total - 1u32).cast::<u64>();
                    Fixed::Line {
                        start: self.src.base + row * self.src.ld,
                        inside: gx.lt(self.src.x_total),
                        c,
                    }
                } else {
                    // The position along the line is fixed: its valid elements too.
                    let gx = self.src.x0 + c;
                    let valid = (self.src.x_total.max(gx) - gx).min(e);
                    let col = select(valid.gt(0u32), gx, 0u32).cast::<u64>();
                    Fixed::Column {
                        start: self.src.base + col,
                        valid,
                        o,
                    }
                };
                Chunk { dst, fixed, guard }
            })
            .collect()
    }

    /// Whether this block's tile lies wholly inside the matrix along X (every chunk of every
    /// line is whole there, whatever K).
    fn inside(&self) -> Expr<bool> {
        (self.src.x0 + self.src.x_tile).le(self.src.x_total)
    }

    /// This thread's copies for tiles wholly inside the matrix, when its chunks are whole
    /// lines apart (`None` otherwise): chunk `r` is line `o0 + r·lines`, the same position
    /// along the line, so its source is chunk 0's plus `r` line steps and its destination
    /// chunk 0's plus a constant.
    fn fast_plan(&self, k: &KernelBuilder, threads: u32) -> Option<Fast> {
        let (e, per_line, total) = self.chunks();
        if threads % per_line != 0 || total % threads != 0 {
            return None;
        }
        let lines = threads / per_line;
        let tid = k.thread_idx().x;
        let (o, c) = (tid / per_line, (tid % per_line) * e);
        let src0 = if self.src.contig_k {
            self.src.base + (self.src.x0 + o).cast::<u64>() * self.src.ld + c.cast::<u64>()
        } else {
            self.src.base + (self.src.x0 + c).cast::<u64>() + o.cast::<u64>() * self.src.ld
        };
        Some(Fast {
            src0,
            step: self.src.ld * u64::from(lines),
            dst0: o * self.stride() + c + self.offset,
            dst_step: lines * self.stride(),
            chunks: total / threads,
        })
    }

    /// Issues this thread's copies of the tile at depth `k0` into buffer `buf` for a tile
    /// wholly inside the matrix (no bounds, whole 16-byte copies).
    fn issue_fast(&self, sh: &DArray<T, 1, ReadWrite>, f: &Fast, k0: Expr<u32>, buf: Expr<u32>) {
        let koff = if self.src.contig_k {
            k0.cast::<u64>()
        } else {
            k0.cast::<u64>() * self.src.ld
        };
        let base = buf * self.stage_elems() + f.dst0;
        let mut src = f.src0 + koff;
        for r in 0..f.chunks {
            if r > 0 {
                src = src + f.step;
            }
            sh.cp_async::<16>(base + r * f.dst_step, self.src.arr, src);
        }
    }

    /// Issues this thread's copies of the tile at depth `k0` into buffer `buf` (not
    /// committed).
    fn issue(
        &self,
        k: &KernelBuilder,
        sh: &DArray<T, 1, ReadWrite>,
        plan: &[Chunk],
        k0: Expr<u32>,
        buf: Expr<u32>,
    ) {
        let e = (16 / T::TY.size()) as u32;
        let size = T::TY.size() as u32;
        let base = buf * self.stage_elems();
        for ch in plan {
            let (src, valid) = match &ch.fixed {
                Fixed::Line { start, inside, c } => {
                    let gk = k0 + *c;
                    let valid = select(*inside, (self.src.k_total.max(gk) - gk).min(e), 0u32);
                    let col = select(valid.gt(0u32), gk, 0u32).cast::<u64>();
                    (*start + col, valid)
                }
                Fixed::Column { start, valid, o } => {
                    let gk = k0 + *o;
                    let valid = select(gk.lt(self.src.k_total), *valid, 0u32);
                    let row = gk.min(self.src.k_total - 1u32).cast::<u64>();
                    (*start + row * self.src.ld, valid)
                }
            };
            let put = || sh.cp_async_zfill::<16>(base + ch.dst, self.src.arr, src, valid * size);
            match ch.guard {
                Some(g) => k.if_(g, |_| put()),
                None => put(),
            }
        }
    }
}

/// The parts of a chunk's source that do not move with K.
enum Fixed {
    /// Lines along K (a row of the matrix): its start (clamped inside the matrix), whether
    /// the row is inside, the chunk's offset along K in the tile.
    Line {
        start: Expr<u64>,
        inside: Expr<bool>,
        c: Expr<u32>,
    },
    /// Lines along X: the chunk's start along X (0 when wholly outside), its elements inside
    /// the matrix, its line (K offset) in the tile.
    Column {
        start: Expr<u64>,
        valid: Expr<u32>,
        o: Expr<u32>,
    },
}

/// A thread's copies of a tile wholly inside the matrix ([`PipeSrc::fast_plan`]).
struct Fast {
    /// The source element of chunk 0 at K offset 0.
    src0: Expr<u64>,
    /// Source elements from one chunk to the next.
    step: Expr<u64>,
    /// The destination of chunk 0 within a buffer (the operand's offset included).
    dst0: Expr<u32>,
    /// Shared elements from one chunk to the next.
    dst_step: u32,
    /// Chunks per thread.
    chunks: u32,
}

/// One 16-byte copy of a thread: its destination within a buffer (the operand's offset
/// included), what of its source is fixed, the guard of a thread past the tile's last chunk.
struct Chunk {
    dst: Expr<u32>,
    fixed: Fixed,
    guard: Option<Expr<bool>>,
}

/// The pipelined main loop over the `kt` k-tiles of `steps` MMA k-steps each:
/// `load(k, buf, step)` reads k-step `step`'s fragments of buffer `buf` (of both operands),
/// `mma(k, frags)` multiplies them into the accumulators. Nothing is done when `kt` is 0.
///
/// A block whose tiles lie wholly inside the matrix (most blocks of a large product) runs a
/// loop over the whole k-tiles with the copies of [`PipeSrc::issue_fast`] (no bounds), then
/// the partial last k-tile, if K has one, on its own; the other blocks run the loop with the
/// bounded copies of [`PipeSrc::issue`]. Two loops, so that neither carries the other's
/// address arithmetic (ptxas would predicate both into one).
#[allow(clippy::too_many_arguments)]
pub(super) fn main_loop<T: MatmulInput>(
    k: &KernelBuilder,
    sh: &DArray<T, 1, ReadWrite>,
    stages: u32,
    threads: u32,
    kt: Expr<u32>,
    srcs: [&PipeSrc<'_, T>; 2],
    steps: u32,
    load: impl Fn(&KernelBuilder, Expr<u32>, u32) -> Frags<T>,
    mma: impl Fn(&KernelBuilder, &Frags<T>),
) {
    let k_tile = srcs[0].src.k_tile;
    let general = |k: &KernelBuilder, t: Expr<u32>, buf: Expr<u32>| {
        for s in srcs {
            let plan = s.plan(k, threads);
            s.issue(k, sh, &plan, t * k_tile, buf);
        }
    };
    let pipe = |k: &KernelBuilder, tiles: Expr<u32>, issue: &IssueFn<'_>| {
        pipelined(k, stages, tiles, steps, issue, &load, &mma)
    };
    let fast_possible = srcs.iter().all(|s| s.fast_plan(k, threads).is_some());
    if !fast_possible {
        return pipe(k, kt, &general);
    }
    let inside = srcs[0].inside().and(srcs[1].inside());
    let whole = srcs[0].src.k_total / k_tile;
    k.if_else(
        inside,
        |k| {
            let plans: Vec<Fast> = srcs
                .iter()
                .filter_map(|s| s.fast_plan(k, threads))
                .collect();
            pipe(k, whole, &|_, t, buf| {
                for (s, f) in srcs.iter().zip(&plans) {
                    s.issue_fast(sh, f, t * k_tile, buf);
                }
            });
            // The partial last k-tile: into buffer 0 once every warp is done with the loop.
            k.if_(whole.lt(kt), |k| {
                k.syncthreads();
                general(k, whole, Expr::lit(0));
                k.cp_async_commit();
                k.cp_async_wait(0);
                k.syncthreads();
                for step in 0..steps {
                    let f = load(k, Expr::lit(0), step);
                    mma(k, &f);
                }
            });
        },
        |k| pipe(k, kt, &general),
    );
}

/// The multistage loop over `tiles` k-tiles, whose copies `issue(k, tile, buf)` issues (not
/// committed); tiles from `tiles` on are not copied. Nothing is done when `tiles` is 0; every
/// copy has landed when it ends.
///
/// The fragments are loaded one k-step ahead of the MMAs that use them, across tiles too: in
/// each tile's last k-step the block waits for the next tile's copies and synchronises, loads
/// that tile's first fragments, and only then issues the last k-step's MMAs, so the tensor
/// cores have work while the loads are in flight (CUTLASS's sm80 multistage order).
fn pipelined<T: MatmulInput>(
    k: &KernelBuilder,
    stages: u32,
    tiles: Expr<u32>,
    steps: u32,
    issue: &IssueFn<'_>,
    load: &LoadFn<'_, T>,
    mma: &MmaFn<'_, T>,
) {
    let issue = |k: &KernelBuilder, t: Expr<u32>, buf: Expr<u32>| {
        k.if_(t.lt(tiles), |k| issue(k, t, buf));
        k.cp_async_commit();
    };
    k.if_(tiles.gt(0u32), |k| {
        // Prologue: tiles 0..stages-1, then tile 0's first fragments.
        for s in 0..stages - 1 {
            issue(k, Expr::lit(s), Expr::lit(s));
        }
        k.cp_async_wait((stages - 2) as u8);
        k.syncthreads();
        let read = k.var(0u32);
        let write = k.var(stages - 1);
        let next = |b: Expr<u32>| select((b + 1u32).lt(stages), b + 1u32, 0u32);
        let first = load(k, read.get(), 0);
        let held = FragVars::new(k, &first);
        k.for_range(0u32, tiles, |k, t| {
            let mut cur = held.get();
            for step in 0..steps {
                if step == steps - 1 {
                    // The next tile's group is in (for this thread), and for the block after
                    // the barrier.
                    k.cp_async_wait((stages - 2) as u8);
                    k.syncthreads();
                    read.set(next(read.get()));
                }
                let ahead = load(k, read.get(), (step + 1) % steps);
                if step == 0 {
                    // Into the buffer of the tile before this one, which every warp finished
                    // reading before the last barrier.
                    issue(k, t + (stages - 1), write.get());
                    write.set(next(write.get()));
                }
                mma(k, &cur);
                cur = ahead;
            }
            held.set(&cur);
        });
        k.cp_async_wait(0);
    });
}

/// Issues the copies of k-tile `t` into buffer `buf` (not committed).
type IssueFn<'a> = dyn Fn(&KernelBuilder, Expr<u32>, Expr<u32>) + 'a;
/// Loads k-step `step`'s fragments of buffer `buf`.
type LoadFn<'a, T> = dyn Fn(&KernelBuilder, Expr<u32>, u32) -> Frags<T> + 'a;
/// Multiplies one k-step's fragments into the accumulators.
type MmaFn<'a, T> = dyn Fn(&KernelBuilder, &Frags<T>) + 'a;

/// One k-step's fragments of a warp: its A fragments (along M), then its B fragments (along N).
pub(super) struct Frags<T: MmaInput> {
    pub a: Vec<FragA<T>>,
    pub b: Vec<FragB<T>>,
}

/// Fragments kept in variables from one iteration of the main loop to the next.
struct FragVars {
    a: Vec<[Var<u32>; 4]>,
    b: Vec<[Var<u32>; 2]>,
}

impl FragVars {
    fn new<T: MmaInput>(k: &KernelBuilder, f: &Frags<T>) -> Self {
        FragVars {
            a: f.a.iter().map(|x| x.regs().map(|r| k.var(r))).collect(),
            b: f.b.iter().map(|x| x.regs().map(|r| k.var(r))).collect(),
        }
    }

    fn get<T: MmaInput>(&self) -> Frags<T> {
        Frags {
            a: self
                .a
                .iter()
                .map(|v| FragA::from_regs(v.map(|x| x.get())))
                .collect(),
            b: self
                .b
                .iter()
                .map(|v| FragB::from_regs(v.map(|x| x.get())))
                .collect(),
        }
    }

    fn set<T: MmaInput>(&self, f: &Frags<T>) {
        for (v, x) in self.a.iter().zip(&f.a) {
            for (var, r) in v.iter().zip(x.regs()) {
                var.set(r);
            }
        }
        for (v, x) in self.b.iter().zip(&f.b) {
            for (var, r) in v.iter().zip(x.regs()) {
                var.set(r);
            }
        }
    }
}
