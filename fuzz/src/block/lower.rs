//! A batch of block programs to one kernel through cudajit's public builder: block `j` runs
//! program `j` (under `if block_idx == j`, a block-uniform condition, so the barriers inside
//! are legal), its thread `t` on input vector `t`.
//!
//! Parameters ([`Params`]): the inputs (`&[u64]`, laid out as for the trees), the output
//! words (`&mut [u64]`), then one array per atomic element type for the global targets (each
//! program owns [`GLOBAL_WORDS`] words of each; `u64` targets live in the output buffer's
//! tail; `i16` has no global targets, as the builder takes at most 12 parameters).
//!
//! The output buffer holds, in order: every thread's row (`(j * threads + t) * width`: its
//! statements' output slots, its variables at the end, its own slot of each column), the
//! shared targets' final words of each program (`shared_words` per program), and the `u64`
//! global targets, then the `u64` grid words ([`GRID_WORDS`], which every block hits; the
//! other types' grid words follow the programs' words in their arrays).

use cudajit::codegen::{Expr, Kernel, KernelBuilder, PtxOptions, SliceMut};
use cudajit::{bf16, f16};

use super::super::lower::{from_u64, lit, to_u64, Lower, D, INPUTS, V};
use super::super::tree::{Node, Ty, Val, TYS};
use super::elem::{atomic_t, init_t, on_tarr, read_t, shared_tarr, with_table, TArr};
use super::{ATy, Barrier, BlockProg, Space, Stmt, WarpOp, GLOBAL_WORDS, GRID_WORDS, MAX_WORDS};

/// The kernel's parameters.
pub type Params = (
    &'static [u64],
    &'static mut [u64],
    &'static mut [u32],
    &'static mut [i32],
    &'static mut [i64],
    &'static mut [f32],
    &'static mut [f64],
    &'static mut [i8],
    &'static mut [u8],
    &'static mut [u16],
    &'static mut [f16],
    &'static mut [bf16],
);

/// A batch kernel of block programs.
pub type BlockKernel = Kernel<Params>;

/// The global atomic types that have their own parameter, in parameter order (after `inp`
/// and `out`).
pub const GLOBAL_TYS: [ATy; 10] = [
    ATy::U32,
    ATy::I32,
    ATy::I64,
    ATy::F32,
    ATy::F64,
    ATy::I8,
    ATy::U8,
    ATy::U16,
    ATy::F16,
    ATy::BF16,
];

/// Where a batch's outputs lie in the output buffer.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Programs (blocks) and threads per block.
    pub programs: usize,
    pub threads: usize,
    /// Row width (the widest program's).
    pub width: usize,
    /// Shared-target words per program (the most any program has).
    pub shared_words: usize,
}

impl Layout {
    /// The layout of `progs` (which share one block size).
    pub fn of(progs: &[BlockProg]) -> Layout {
        Layout {
            programs: progs.len(),
            threads: progs.first().map_or(32, |p| p.threads as usize),
            width: progs.iter().map(BlockProg::width).max().unwrap_or(0),
            shared_words: progs.iter().map(BlockProg::shared_words).max().unwrap_or(0),
        }
    }
    /// The first word of thread `t` of program `j`.
    pub fn row(&self, j: usize, t: usize) -> usize {
        (j * self.threads + t) * self.width
    }
    /// The first shared-target word of program `j`.
    pub fn shared(&self, j: usize) -> usize {
        self.programs * self.threads * self.width + j * self.shared_words
    }
    /// The first `u64` global-target word of program `j`.
    pub fn global_u64(&self, j: usize) -> usize {
        self.programs * (self.threads * self.width + self.shared_words) + j * GLOBAL_WORDS
    }
    /// The first `u64` grid word (shared by every block of the launch).
    pub fn grid_u64(&self) -> usize {
        self.global_u64(self.programs)
    }
    /// The first grid word in the other types' global arrays (after every program's words).
    pub fn grid(&self) -> usize {
        self.programs * GLOBAL_WORDS
    }
    /// Output words in all.
    pub fn len(&self) -> usize {
        self.grid_u64() + GRID_WORDS
    }
    /// Whether there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared column array of any of the trees' types.
#[derive(Clone, Copy)]
enum Col {
    B(SliceMut<bool>),
    I32(SliceMut<i32>),
    U32(SliceMut<u32>),
    I64(SliceMut<i64>),
    U64(SliceMut<u64>),
    F32(SliceMut<f32>),
    F64(SliceMut<f64>),
}

impl Col {
    fn new(k: &KernelBuilder, ty: Ty, n: usize) -> Col {
        match ty {
            Ty::Bool => Col::B(k.shared_array(n)),
            Ty::I32 => Col::I32(k.shared_array(n)),
            Ty::U32 => Col::U32(k.shared_array(n)),
            Ty::I64 => Col::I64(k.shared_array(n)),
            Ty::U64 => Col::U64(k.shared_array(n)),
            Ty::F32 => Col::F32(k.shared_array(n)),
            _ => Col::F64(k.shared_array(n)),
        }
    }
    fn at(self, i: Expr<u32>) -> D {
        match self {
            Col::B(a) => D::B(a.at(i)),
            Col::I32(a) => D::I32(a.at(i)),
            Col::U32(a) => D::U32(a.at(i)),
            Col::I64(a) => D::I64(a.at(i)),
            Col::U64(a) => D::U64(a.at(i)),
            Col::F32(a) => D::F32(a.at(i)),
            Col::F64(a) => D::F64(a.at(i)),
        }
    }
    fn set(self, i: Expr<u32>, d: D) {
        match (self, d) {
            (Col::B(a), D::B(x)) => a.set(i, x),
            (Col::I32(a), D::I32(x)) => a.set(i, x),
            (Col::U32(a), D::U32(x)) => a.set(i, x),
            (Col::I64(a), D::I64(x)) => a.set(i, x),
            (Col::U64(a), D::U64(x)) => a.set(i, x),
            (Col::F32(a), D::F32(x)) => a.set(i, x),
            (Col::F64(a), D::F64(x)) => a.set(i, x),
            _ => unreachable!("a store of another type"),
        }
    }
}

/// A constant table of the trees' types, read as a tree value.
fn const_read(k: &KernelBuilder, ty: Ty, data: &[u64], i: Expr<u32>) -> D {
    macro_rules! t {
        ($t:ty, $v:ident) => {{
            let xs: Vec<$t> = data
                .iter()
                .map(|&b| <$t as cudajit::codegen::Scalar>::from_bits(b))
                .collect();
            D::$v(k.const_array(&xs).at(i))
        }};
    }
    match ty {
        Ty::I32 => t!(i32, I32),
        Ty::U32 => t!(u32, U32),
        Ty::I64 => t!(i64, I64),
        Ty::U64 => t!(u64, U64),
        Ty::F32 => t!(f32, F32),
        _ => t!(f64, F64),
    }
}

/// What the kernel declares for every program: the global arrays by type, the thread's
/// inputs, the shared columns and targets by type, and the output layout.
struct Globals {
    out: SliceMut<u64>,
    arrs: Vec<(ATy, TArr)>,
    inputs: Vec<D>,
    shared: Vec<(ATy, TArr)>,
    cols: Vec<(Ty, Col)>,
    lay: Layout,
}

fn zero(ty: Ty) -> D {
    lit(Val::from_bits(ty, 0))
}

/// Lowers one program inside its block.
struct PLower<'a> {
    p: &'a BlockProg,
    inputs: Vec<D>,
    vars: Vec<Option<V>>,
    cols: Vec<Col>,
    targets: Vec<(TArr, Expr<u64>)>,
    out: SliceMut<u64>,
    row: Expr<u64>,
    tid: Expr<u32>,
}

impl PLower<'_> {
    fn node(&self, n: &Node) -> D {
        Lower {
            inputs: &self.inputs,
            probe: &mut |_| {},
            vars: &self.vars,
        }
        .node(n)
    }

    fn var(&self, v: u8) -> V {
        self.vars[v as usize].expect("every variable is declared at the top")
    }

    fn emit(&self, slot: u16, d: Expr<u64>) {
        self.out.set(self.row + slot as u64, d);
    }

    fn set(&self, dst: u8, d: D, slot: u16) {
        self.var(dst).set(d);
        self.emit(slot, to_u64(d));
    }

    fn word(&self, t: u8, word: &Node) -> Expr<u64> {
        let n = self.p.targets[t as usize].init.len() as u32;
        let D::U32(w) = self.node(word) else {
            unreachable!("a word index is u32")
        };
        self.targets[t as usize].1 + (w % n).cast::<u64>()
    }

    fn stmts(&self, k: &KernelBuilder, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(k, s);
        }
    }

    fn stmt(&self, k: &KernelBuilder, s: &Stmt) {
        let b = self.p.threads;
        match s {
            Stmt::Set { dst, e, slot } => self.set(*dst, self.node(e), *slot),
            Stmt::Store { col, e } => {
                let base = self.p.col_offset(*col as usize) as u32;
                self.cols[*col as usize].set(self.tid + base, self.node(e));
            }
            Stmt::Load {
                dst,
                col,
                row,
                slot,
            } => {
                let base = self.p.col_offset(*col as usize) as u32;
                let D::U32(r) = self.node(row) else {
                    unreachable!("a row is u32")
                };
                let d = self.cols[*col as usize].at(r % b + base);
                self.set(*dst, d, *slot);
            }
            Stmt::Const {
                dst,
                table,
                idx,
                clamp,
                slot,
            } => {
                let t = &self.p.tables[*table as usize];
                let D::U32(i) = self.node(idx) else {
                    unreachable!("an index is u32")
                };
                let n = t.data.len() as u32;
                let i = if *clamp { i.min(n - 1) } else { i % n };
                self.set(*dst, const_read(k, t.ty, &t.data, i), *slot);
            }
            Stmt::TargetRead {
                dst,
                target,
                word,
                slot,
                atomic,
            } => {
                let i = self.word(*target, word);
                let (bits, d) = on_tarr!(self.targets[*target as usize].0, |a, _t| read_t(
                    a, i, *atomic
                ));
                self.emit(*slot, bits);
                if let (Some(v), Some(d)) = (dst, d) {
                    self.var(*v).set(d);
                }
            }
            Stmt::Atomic(at) => {
                let i = self.word(at.target, &at.word);
                let tlen = self.p.targets[at.target as usize].table.len();
                let mut lw = Lower {
                    inputs: &self.inputs,
                    probe: &mut |_| {},
                    vars: &self.vars,
                };
                let (bits, d) = on_tarr!(self.targets[at.target as usize].0, |a, tab| {
                    atomic_t(a, tab, at, i, &mut lw, tlen)
                });
                self.emit(at.slot, bits);
                if let (Some(v), Some(d)) = (at.dst, d) {
                    self.var(v).set(d);
                }
            }
            Stmt::If { cond, then, els } => {
                let D::B(c) = self.node(cond) else {
                    unreachable!("a condition is bool")
                };
                if els.is_empty() {
                    k.if_(c, |k| self.stmts(k, then));
                } else {
                    k.if_else(c, |k| self.stmts(k, then), |k| self.stmts(k, els));
                }
            }
            Stmt::Loop { n, body } => {
                k.for_range(0u32, *n as u32, |k, _| self.stmts(k, body));
            }
            Stmt::Warp {
                dst,
                op,
                masks,
                value,
                slot,
            } => {
                let mask = self.mask(k, masks);
                let lane = k.lane_id();
                k.if_(((mask >> lane) & 1u32).ne(0u32), |k| {
                    let v = self.node(value);
                    let r = self.warp(k, op, masks, mask, v);
                    self.set(*dst, r, *slot);
                });
            }
            Stmt::WarpIf {
                cond,
                dst,
                op,
                value,
                mslot,
                slot,
            } => {
                let D::B(c) = self.node(cond) else {
                    unreachable!("a condition is bool")
                };
                k.if_(c, |k| {
                    let mask = k.activemask();
                    self.emit(*mslot, mask.cast());
                    let v = self.node(value);
                    let r = self.warp(k, op, &[], mask, v);
                    self.set(*dst, r, *slot);
                });
            }
            Stmt::ActiveMask { masks, slot } => {
                let mask = self.mask(k, masks);
                let lane = k.lane_id();
                k.if_(((mask >> lane) & 1u32).ne(0u32), |k| {
                    self.emit(*slot, k.activemask().cast());
                });
            }
        }
    }

    /// The warp's mask: a literal if every warp has the same, else a constant table.
    fn mask(&self, k: &KernelBuilder, masks: &[u32]) -> Expr<u32> {
        if masks.iter().all(|&m| m == masks[0]) {
            Expr::lit(masks[0])
        } else {
            k.const_array(masks).at(self.tid / 32u32)
        }
    }

    fn warp(&self, k: &KernelBuilder, op: &WarpOp, masks: &[u32], mask: Expr<u32>, v: D) -> D {
        macro_rules! num {
            ($v:expr, |$x:ident| $e:expr) => {
                match $v {
                    D::I32($x) => $e,
                    D::U32($x) => $e,
                    D::I64($x) => $e,
                    D::U64($x) => $e,
                    D::F32($x) => $e,
                    D::F64($x) => $e,
                    _ => unreachable!("a warp value is one of the numeric tree types"),
                }
            };
        }
        macro_rules! same {
            ($v:expr, |$x:ident| $e:expr) => {
                match $v {
                    D::I32($x) => D::I32($e),
                    D::U32($x) => D::U32($e),
                    D::I64($x) => D::I64($e),
                    D::U64($x) => D::U64($e),
                    D::F32($x) => D::F32($e),
                    D::F64($x) => D::F64($e),
                    _ => unreachable!("a shuffled value is one of the numeric tree types"),
                }
            };
        }
        let pred = |v: D| match v {
            D::B(p) => p,
            _ => unreachable!("a vote's predicate is bool"),
        };
        match op {
            WarpOp::ShflIdx(src) => {
                let (members, counts) = members(masks);
                let D::U32(s) = self.node(src) else {
                    unreachable!("a source index is u32")
                };
                let w = self.tid / 32u32;
                let cnt = k.const_array(&counts).at(w);
                let lane = k.const_array(&members).at(w * 32u32 + s % cnt);
                same!(v, |x| k.shfl_sync(mask, x, lane))
            }
            WarpOp::ShflUp(d) => same!(v, |x| k.shfl_up_sync(mask, x, *d as u32)),
            WarpOp::ShflDown(d) => same!(v, |x| k.shfl_down_sync(mask, x, *d as u32)),
            WarpOp::ShflXor(m) => same!(v, |x| k.shfl_xor_sync(mask, x, *m as u32)),
            WarpOp::All => D::B(k.all_sync(mask, pred(v))),
            WarpOp::Any => D::B(k.any_sync(mask, pred(v))),
            WarpOp::Eq => D::B(k.eq_sync(mask, pred(v))),
            WarpOp::Ballot => D::U32(k.ballot_sync(mask, pred(v))),
            WarpOp::MatchAny => D::U32(num!(v, |x| k.match_any_sync(mask, x))),
            WarpOp::MatchAll => D::U32(num!(v, |x| k.match_all_sync(mask, x).0)),
        }
    }

    fn barrier(&self, k: &KernelBuilder, b: &Barrier) {
        let p = |n: &Node| match self.node(n) {
            D::B(x) => x,
            _ => unreachable!("a barrier predicate is bool"),
        };
        match b {
            Barrier::Sync => k.syncthreads(),
            Barrier::Count { pred, dst, slot } => {
                let r = k.syncthreads_count(p(pred));
                self.set(*dst, D::I32(r), *slot);
            }
            Barrier::And { pred, dst, slot } => {
                let r = k.syncthreads_and(p(pred));
                self.set(*dst, D::B(r), *slot);
            }
            Barrier::Or { pred, dst, slot } => {
                let r = k.syncthreads_or(p(pred));
                self.set(*dst, D::B(r), *slot);
            }
        }
    }
}

/// Per warp, the lanes of its mask in order (`members[w * 32 + i]`), and how many.
pub fn members(masks: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut m = Vec::new();
    let mut c = Vec::new();
    for &mask in masks {
        let lanes: Vec<u32> = (0..32).filter(|l| mask >> l & 1 == 1).collect();
        c.push(lanes.len() as u32);
        m.extend((0..32).map(|i| lanes.get(i).copied().unwrap_or(0)));
    }
    (m, c)
}

/// The most columns of each type any program has.
fn col_counts(progs: &[BlockProg]) -> Vec<(Ty, usize)> {
    TYS.iter()
        .map(|&t| {
            let n = progs
                .iter()
                .map(|p| p.cols.iter().filter(|&&c| c == t).count())
                .max()
                .unwrap_or(0);
            (t, n)
        })
        .collect()
}

/// The most shared targets of each type any program has.
fn shared_counts(progs: &[BlockProg]) -> Vec<(ATy, usize)> {
    super::ATYS
        .iter()
        .map(|&t| {
            let n = progs
                .iter()
                .map(|p| {
                    p.targets
                        .iter()
                        .filter(|x| x.ty == t && x.space == Space::Shared)
                        .count()
                })
                .max()
                .unwrap_or(0);
            (t, n)
        })
        .collect()
}

/// Lowers program `j` (the body of `if block_idx == j`).
fn program(k: &KernelBuilder, j: usize, p: &BlockProg, g: &Globals) {
    let (lay, inputs, shared, cols) = (&g.lay, &g.inputs, &g.shared, &g.cols);
    let tid = k.thread_idx().x;
    let vars: Vec<Option<V>> = p
        .vars
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            Some(if i == 0 {
                V::U32(k.var(tid))
            } else {
                V::new(k, zero(t))
            })
        })
        .collect();
    let col_arrs: Vec<Col> = p
        .cols
        .iter()
        .map(|t| cols.iter().find(|(c, _)| c == t).expect("declared").1)
        .collect();
    let targets: Vec<(TArr, Expr<u64>)> = p
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let off = p.target_offset(i) as u64;
            let (arr, base) = match t.space {
                Space::Shared => (
                    shared.iter().find(|(a, _)| *a == t.ty).expect("declared").1,
                    off,
                ),
                Space::Global if t.ty == ATy::U64 => {
                    (TArr::U64(g.out), (lay.global_u64(j) as u64) + off)
                }
                Space::Global => (
                    g.arrs
                        .iter()
                        .find(|(a, _)| *a == t.ty)
                        .expect("a parameter")
                        .1,
                    (j * GLOBAL_WORDS) as u64 + off,
                ),
                Space::Grid if t.ty == ATy::U64 => (TArr::U64(g.out), lay.grid_u64() as u64),
                Space::Grid => (
                    g.arrs
                        .iter()
                        .find(|(a, _)| *a == t.ty)
                        .expect("a parameter")
                        .1,
                    lay.grid() as u64,
                ),
            };
            (with_table(k, arr, &t.table), Expr::lit(base))
        })
        .collect();
    let row = (Expr::lit(j as u64 * lay.threads as u64) + tid.cast::<u64>()) * lay.width as u64;
    let pl = PLower {
        p,
        inputs: inputs.to_vec(),
        vars,
        cols: col_arrs,
        targets,
        out: g.out,
        row,
        tid,
    };
    // The shared targets' initial values, before the first phase.
    if p.targets.iter().any(|t| t.space == Space::Shared) {
        k.if_(tid.eq(0u32), |_| {
            for (i, t) in p.targets.iter().enumerate() {
                if t.space == Space::Shared {
                    let off = p.target_offset(i) as u64;
                    for (w, &b) in t.init.iter().enumerate() {
                        on_tarr!(pl.targets[i].0, |a, _t| init_t(a, off + w as u64, b));
                    }
                }
            }
        });
        k.syncthreads();
    }
    for ph in &p.phases {
        pl.stmts(k, &ph.stmts);
        pl.barrier(k, &ph.barrier);
    }
    let at = pl.row + p.slots as u64;
    for (i, v) in pl.vars.iter().enumerate() {
        g.out.set(at + i as u64, to_u64(v.expect("declared").get()));
    }
    let at = at + p.vars.len() as u64;
    for (c, col) in pl.cols.iter().enumerate() {
        let base = p.col_offset(c) as u32;
        g.out.set(at + c as u64, to_u64(col.at(tid + base)));
    }
    k.if_(tid.eq(0u32), |_| {
        let mut n = lay.shared(j) as u64;
        for (i, t) in p.targets.iter().enumerate() {
            if t.space == Space::Shared {
                for w in 0..t.init.len() {
                    let (bits, _) = on_tarr!(pl.targets[i].0, |a, _t| read_t(
                        a,
                        pl.targets[i].1 + w as u64,
                        false
                    ));
                    g.out.set(n, bits);
                    n += 1;
                }
            }
        }
    });
}

/// The kernel of a batch of programs (one block each, all of `progs[0].threads` threads), built
/// with FMA contraction on or off.
pub fn kernel(
    name: &str,
    progs: &[BlockProg],
    contract: bool,
) -> cudajit::Result<(BlockKernel, Layout)> {
    let lay = Layout::of(progs);
    let opts = PtxOptions::default().contract(contract);
    let k = Kernel::<(
        &[u64],
        &mut [u64],
        &mut [u32],
        &mut [i32],
        &mut [i64],
        &mut [f32],
        &mut [f64],
        &mut [i8],
        &mut [u8],
        &mut [u16],
        &mut [f16],
        &mut [bf16],
    )>::build_with(
        name,
        opts,
        |k, (inp, out, gu32, gi32, gi64, gf32, gf64, gi8, gu8, gu16, gf16, gbf16)| {
            let tid = k.thread_idx().x;
            let base = tid.cast::<u64>() * INPUTS as u64;
            let inputs: Vec<D> = (0..INPUTS)
                .map(|c| from_u64(inp.at(base + c as u64), TYS[c / super::super::tree::SLOTS]))
                .collect();
            let cols: Vec<(Ty, Col)> = col_counts(progs)
                .into_iter()
                .filter(|&(_, n)| n > 0)
                .map(|(t, n)| (t, Col::new(k, t, n * lay.threads)))
                .collect();
            let shared: Vec<(ATy, TArr)> = shared_counts(progs)
                .into_iter()
                .filter(|&(_, n)| n > 0)
                .map(|(t, n)| (t, shared_tarr(k, t, n * MAX_WORDS)))
                .collect();
            let g = Globals {
                out,
                arrs: vec![
                    (ATy::U32, TArr::U32(gu32)),
                    (ATy::I32, TArr::I32(gi32)),
                    (ATy::I64, TArr::I64(gi64)),
                    (ATy::F32, TArr::F32(gf32, None)),
                    (ATy::F64, TArr::F64(gf64, None)),
                    (ATy::I8, TArr::I8(gi8)),
                    (ATy::U8, TArr::U8(gu8)),
                    (ATy::U16, TArr::U16(gu16)),
                    (ATy::F16, TArr::F16(gf16, None)),
                    (ATy::BF16, TArr::BF16(gbf16, None)),
                ],
                inputs,
                shared,
                cols,
                lay,
            };
            let blk = k.block_idx().x;
            for (j, p) in progs.iter().enumerate() {
                k.if_(blk.eq(j as u32), |k| program(k, j, p, &g));
            }
        },
    )?;
    Ok((k, lay))
}
