//! The host model of a block program: the block's threads in lockstep, statement by
//! statement, in plain Rust.
//!
//! Expressions are the trees' model (`model::Model`, with the program's variables and FMA
//! contraction as the kernel was built). Shared columns hold each thread's stores (a slot never
//! stored is unknown, and a read of it left open). A warp intrinsic is computed for every lane
//! of its mask from the values of the others: a shuffle takes its source lane's value
//! (`shfl_up`: lane - delta, its own below delta; `shfl_down`: lane + delta, its own above
//! 31; `shfl_xor`: lane ^ mask; `shfl_sync`: the lane the program names), `all`/`any`/`eq`
//! and `ballot` the predicates of the mask's lanes, `match_any` the lanes of the mask with the
//! same bits, `match_all` the mask if all have the same bits, else 0; `activemask` may be any
//! subset of the mask that holds the calling lane. A barrier's `count`/`and`/`or` reduce the
//! predicates of the whole block.
//!
//! Atomics: each thread's old value comes from the device (as the trees' math probes do), and
//! at the end of each phase the olds of every target word are checked against every order the
//! hardware may choose (`serial`), which also gives the word's value after the phase; the
//! final words must equal the last phase's.
//!
//! A condition, index or operand whose value Rust leaves open (it depends on a NaN's bits)
//! makes what depends on it open, not compared: the variables, slots and columns the skipped
//! code may write, and the target words its atomics may touch.

use std::collections::{BTreeMap, BTreeSet};

use super::super::model::Model;
use super::super::tree::{Node, Ty, Val};
use super::lower::members;
use super::serial::{self, Op};
use super::warp_model::lane_result;
use super::{ATy, Atomic, Barrier, BlockProg, Space, Stmt, WarpOp};

/// What an output word must hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Want {
    /// Never stored: the fill value.
    Unwritten,
    /// A value of the trees' types (`None`: left open).
    Val(Option<Val>),
    /// These bits exactly (narrow and 16-bit float targets; `None`: left open).
    Bits(Option<u64>),
    /// Some old value of an atomic of this many bits (checked by the serialisation).
    Old(u32),
    /// `activemask()`: holds `must`, within `may`.
    Mask { must: u32, may: u32 },
    /// Maybe stored, maybe not (under a condition left open).
    Open,
}

/// What the model saw the programs do.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Atomics run (thread x atomic statement) and their old values checked against an order.
    pub atomics: usize,
    pub olds_checked: usize,
    /// Warp intrinsics called (warp x statement) and lane results.
    pub warp_calls: usize,
    pub warp_lanes: usize,
    /// Shared-memory reads and stores (thread x statement).
    pub shared_reads: usize,
    pub shared_stores: usize,
    /// Phases run.
    pub phases: usize,
    /// Grid words checked (every block's atomics on each together) and their atomics.
    pub grid_words: usize,
    pub grid_atomics: usize,
}

/// The model's outputs of one program.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Per thread: its row.
    pub rows: Vec<Vec<Want>>,
    /// Every target's final words, in target order.
    pub words: Vec<Want>,
    /// Atomics whose olds fit no order.
    pub errors: Vec<String>,
    pub stats: Stats,
    /// The atomics on grid words (type, word, the op), checked with the other blocks'; and
    /// the grid words whose atomics are not all known.
    pub grid_ops: Vec<(ATy, usize, Op)>,
    pub grid_open: Vec<(ATy, usize)>,
}

struct St<'a> {
    p: &'a BlockProg,
    inputs: &'a [Vec<Val>],
    rows: &'a [&'a [u64]],
    contract: bool,
    vars: Vec<Vec<Option<Val>>>,
    /// `[column][thread]`.
    cols: Vec<Vec<Option<Val>>>,
    /// `[target][word]`: the value at the start of the phase.
    words: Vec<Vec<Option<u64>>>,
    want: Vec<Vec<Want>>,
    /// This phase's atomics by word, and the words whose atomics are not all known.
    log: BTreeMap<(u8, usize), Vec<Op>>,
    open_words: BTreeSet<(u8, usize)>,
    /// The targets this phase's atomics touch, and its atomic loads of them: thread, slot,
    /// target, word (`None`: open) and the value the device read.
    busy: BTreeSet<u8>,
    loads: Vec<(usize, u16, u8, Option<usize>, u64)>,
    errors: Vec<String>,
    stats: Stats,
    grid_ops: Vec<(ATy, usize, Op)>,
    grid_open: Vec<(ATy, usize)>,
}

impl St<'_> {
    fn eval(&self, t: usize, n: &Node) -> Option<Val> {
        Model::with_vars(&self.inputs[t], &self.vars[t])
            .contracting(self.contract)
            .eval(n)
    }

    fn u32_of(&self, t: usize, n: &Node) -> Option<u32> {
        match self.eval(t, n)? {
            Val::U32(x) => Some(x),
            _ => None,
        }
    }

    fn set(&mut self, t: usize, dst: u8, v: Option<Val>, slot: u16) {
        self.vars[t][dst as usize] = v;
        self.want[t][slot as usize] = Want::Val(v);
    }

    /// Code a thread may or may not have run: what it may write becomes open.
    fn poison(&mut self, t: usize, stmts: &[Stmt]) {
        super::walk(stmts, &mut |s| match s {
            Stmt::Set { dst, slot, .. }
            | Stmt::Load { dst, slot, .. }
            | Stmt::Const { dst, slot, .. } => {
                self.vars[t][*dst as usize] = None;
                self.want[t][*slot as usize] = Want::Open;
            }
            Stmt::TargetRead { dst, slot, .. } => {
                if let Some(d) = dst {
                    self.vars[t][*d as usize] = None;
                }
                self.want[t][*slot as usize] = Want::Open;
            }
            Stmt::Store { col, .. } => self.cols[*col as usize][t] = None,
            Stmt::Atomic(a) => {
                if let Some(d) = a.dst {
                    self.vars[t][d as usize] = None;
                }
                self.want[t][a.slot as usize] = Want::Open;
                for w in 0..self.p.targets[a.target as usize].init.len() {
                    self.open_words.insert((a.target, w));
                }
            }
            _ => {}
        });
    }

    fn stmts(&mut self, t: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(t, s);
        }
    }

    fn stmt(&mut self, t: usize, s: &Stmt) {
        let b = self.p.threads;
        match s {
            Stmt::Set { dst, e, slot } => {
                let v = self.eval(t, e);
                self.set(t, *dst, v, *slot);
            }
            Stmt::Store { col, e } => {
                self.stats.shared_stores += 1;
                self.cols[*col as usize][t] = self.eval(t, e);
            }
            Stmt::Load {
                dst,
                col,
                row,
                slot,
            } => {
                self.stats.shared_reads += 1;
                let v = self
                    .u32_of(t, row)
                    .and_then(|r| self.cols[*col as usize][(r % b) as usize]);
                self.set(t, *dst, v, *slot);
            }
            Stmt::Const {
                dst,
                table,
                idx,
                clamp,
                slot,
            } => {
                let tb = &self.p.tables[*table as usize];
                let n = tb.data.len() as u32;
                let v = self.u32_of(t, idx).map(|i| {
                    let i = if *clamp { i.min(n - 1) } else { i % n };
                    Val::from_bits(tb.ty, tb.data[i as usize])
                });
                self.set(t, *dst, v, *slot);
            }
            Stmt::TargetRead {
                dst,
                target,
                word,
                slot,
                ..
            } if self.busy.contains(target) => {
                // An atomic load beside the phase's atomics: any value the word held.
                let tg = &self.p.targets[*target as usize];
                let got = self.rows[t][*slot as usize];
                self.want[t][*slot as usize] = Want::Open;
                let n = tg.init.len() as u32;
                let w = self.u32_of(t, word).map(|w| (w % n) as usize);
                // The value goes to the variable after the index is read.
                if let (Some(d), Some(ty)) = (dst, tg.ty.tree_ty()) {
                    self.vars[t][*d as usize] = Some(Val::from_bits(ty, got));
                }
                self.loads.push((t, *slot, *target, w, got));
            }
            Stmt::TargetRead {
                dst,
                target,
                word,
                slot,
                ..
            } => {
                let tg = &self.p.targets[*target as usize];
                let n = tg.init.len() as u32;
                let bits = self
                    .u32_of(t, word)
                    .and_then(|w| self.words[*target as usize][(w % n) as usize]);
                self.want[t][*slot as usize] = match tg.ty.tree_ty() {
                    Some(ty) => Want::Val(bits.map(|b| Val::from_bits(ty, b))),
                    None => Want::Bits(bits),
                };
                if let (Some(d), Some(ty)) = (dst, tg.ty.tree_ty()) {
                    self.vars[t][*d as usize] = bits.map(|b| Val::from_bits(ty, b));
                }
            }
            Stmt::Atomic(a) => self.atomic(t, a),
            Stmt::If { cond, then, els } => match self.eval(t, cond) {
                Some(Val::Bool(true)) => self.stmts(t, then),
                Some(Val::Bool(false)) => self.stmts(t, els),
                _ => {
                    self.poison(t, then);
                    self.poison(t, els);
                }
            },
            Stmt::Loop { n, body } => {
                for _ in 0..*n {
                    self.stmts(t, body);
                }
            }
            Stmt::Warp { .. } | Stmt::ActiveMask { .. } | Stmt::WarpIf { .. } => {
                unreachable!("warp statements run for the whole warp")
            }
        }
    }

    fn atomic(&mut self, t: usize, a: &Atomic) {
        self.atomic_run(t, a);
        // The old value goes to the variable after the operands are read.
        let got = self.rows[t][a.slot as usize];
        let ty = self.p.targets[a.target as usize].ty;
        if let (Some(d), Some(tt)) = (a.dst, ty.tree_ty()) {
            self.vars[t][d as usize] = Some(Val::from_bits(tt, got));
        }
    }

    fn atomic_run(&mut self, t: usize, a: &Atomic) {
        let tg = &self.p.targets[a.target as usize];
        let ty = tg.ty;
        self.stats.atomics += 1;
        let got = self.rows[t][a.slot as usize];
        self.want[t][a.slot as usize] = Want::Old(ty.bits());
        let n = tg.init.len() as u32;
        let Some(w) = self.u32_of(t, &a.word) else {
            for w in 0..n as usize {
                self.open_words.insert((a.target, w));
            }
            return;
        };
        let w = (w % n) as usize;
        let operand = |st: &Self, node: &Node| -> Option<u64> {
            let v = st.eval(t, node)?;
            if ty.is_float() {
                let Val::U32(i) = v else { return None };
                Some(tg.table[i as usize % tg.table.len()])
            } else {
                Some(v.to_bits() & ty.mask())
            }
        };
        let v = operand(self, &a.val);
        let c = match &a.cmp {
            Some(c) => operand(self, c),
            None => Some(0),
        };
        match (v, c) {
            (Some(v), Some(cmp)) => self.log.entry((a.target, w)).or_default().push(Op {
                op: a.op,
                v,
                cmp,
                old: got & ty.mask(),
                thread: t as u32,
            }),
            _ => {
                self.open_words.insert((a.target, w));
            }
        }
    }

    fn warp(&mut self, s: &Stmt) {
        let (masks, slot) = match s {
            Stmt::Warp { masks, slot, .. } | Stmt::ActiveMask { masks, slot } => (masks, *slot),
            _ => unreachable!(),
        };
        for (w, &m) in masks.iter().enumerate() {
            if m == 0 {
                continue;
            }
            self.stats.warp_calls += 1;
            let lanes: Vec<usize> = (0..32).filter(|l| m >> l & 1 == 1).collect();
            self.stats.warp_lanes += lanes.len();
            let Stmt::Warp { dst, op, value, .. } = s else {
                for &l in &lanes {
                    self.want[w * 32 + l][slot as usize] = Want::Mask {
                        must: 1 << l,
                        may: m,
                    };
                }
                continue;
            };
            let mut vals = [None; 32];
            for &l in &lanes {
                vals[l] = self.eval(w * 32 + l, value);
            }
            for &l in &lanes {
                let t = w * 32 + l;
                let idx_src = match op {
                    WarpOp::ShflIdx(n) => self.u32_of(t, n).map(|x| {
                        let (mem, cnt) = members(masks);
                        mem[w * 32 + (x % cnt[w]) as usize] as usize
                    }),
                    _ => None,
                };
                let r = lane_result(op, l, m, &vals, idx_src);
                // A NaN moved by a shuffle keeps its bits; a value the model leaves open stays open.
                self.set(t, *dst, r, slot);
            }
        }
    }

    /// A vote, ballot or match under a per-thread condition, over `activemask()`: the
    /// device's masks must hold their lane, name only lanes that took the branch, and agree
    /// between the lanes they name; each lane's result is then computed over its mask.
    fn warp_if(&mut self, s: &Stmt) {
        let Stmt::WarpIf {
            cond,
            dst,
            op,
            value,
            mslot,
            slot,
        } = s
        else {
            unreachable!()
        };
        let (dst, mslot, slot) = (*dst as usize, *mslot as usize, *slot as usize);
        for w in 0..self.p.warps() {
            let valid = self.p.valid_lanes(w);
            let lanes: Vec<usize> = (0..32).filter(|l| valid >> l & 1 == 1).collect();
            let conds: Vec<Option<bool>> = lanes
                .iter()
                .map(|&l| match self.eval(w * 32 + l, cond) {
                    Some(Val::Bool(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if conds.iter().any(Option::is_none) {
                // Which lanes run it is open: so is what they get.
                for (&l, c) in lanes.iter().zip(&conds) {
                    if *c != Some(false) {
                        let t = w * 32 + l;
                        self.vars[t][dst] = None;
                        self.want[t][mslot] = Want::Open;
                        self.want[t][slot] = Want::Open;
                    }
                }
                continue;
            }
            let ran: u32 = lanes
                .iter()
                .zip(&conds)
                .filter(|(_, c)| **c == Some(true))
                .map(|(&l, _)| 1u32 << l)
                .sum();
            let mut vals = [None; 32];
            for (l, v) in vals.iter_mut().enumerate() {
                if ran >> l & 1 == 1 {
                    *v = self.eval(w * 32 + l, value);
                }
            }
            let mut groups = Vec::new();
            for l in (0..32).filter(|l| ran >> l & 1 == 1) {
                let t = w * 32 + l;
                let m = self.rows[t][mslot] as u32;
                self.want[t][mslot] = Want::Mask {
                    must: 1 << l,
                    may: ran,
                };
                let agree = (0..32)
                    .filter(|o| m >> o & 1 == 1)
                    .all(|o| ran >> o & 1 == 1 && self.rows[w * 32 + o][mslot] as u32 == m);
                let r = if agree && m >> l & 1 == 1 {
                    if !groups.contains(&m) {
                        groups.push(m);
                        self.stats.warp_calls += 1;
                        self.stats.warp_lanes += m.count_ones() as usize;
                    }
                    lane_result(op, l, m, &vals, None)
                } else {
                    self.errors.push(format!(
                        "warp {w} lane {l}: activemask() gave {m:#x}, which the lanes it names do \
                         not all give (lanes that took the branch: {ran:#x})"
                    ));
                    None
                };
                self.vars[t][dst] = r;
                self.want[t][slot] = Want::Val(r);
            }
        }
    }

    fn barrier(&mut self, b: &Barrier) {
        let (pred, dst, slot) = match b {
            Barrier::Sync => return,
            Barrier::Count { pred, dst, slot }
            | Barrier::And { pred, dst, slot }
            | Barrier::Or { pred, dst, slot } => (pred, *dst, *slot),
        };
        let n = self.p.threads as usize;
        let preds: Option<Vec<bool>> = (0..n)
            .map(|t| match self.eval(t, pred)? {
                Val::Bool(x) => Some(x),
                _ => None,
            })
            .collect();
        let r = preds.map(|p| match b {
            Barrier::Count { .. } => Val::I32(p.iter().filter(|&&x| x).count() as i32),
            Barrier::And { .. } => Val::Bool(p.iter().all(|&x| x)),
            _ => Val::Bool(p.iter().any(|&x| x)),
        });
        for t in 0..n {
            self.set(t, dst, r, slot);
        }
    }

    /// The end of a phase: every target word's atomics checked, its next value known.
    fn end_phase(&mut self) {
        let log = std::mem::take(&mut self.log);
        let open = std::mem::take(&mut self.open_words);
        for (t, slot, ti, w, got) in std::mem::take(&mut self.loads) {
            let tg = &self.p.targets[ti as usize];
            let Some(w) = w.filter(|&w| !open.contains(&(ti, w))) else {
                continue;
            };
            let Some(init) = self.words[ti as usize][w] else {
                continue;
            };
            let ops = log.get(&(ti, w)).map_or(&[][..], |v| &v[..]);
            let held = got == init
                || ops
                    .iter()
                    .any(|o| serial::apply(tg.ty, o.op, o.old, o.v, o.cmp) == got);
            self.want[t][slot as usize] = Want::Old(tg.ty.bits());
            if !held {
                self.errors.push(format!(
                    "thread {t}: atomic_load of target {ti} word {w} read {}, a value the word \
                     never held in the phase",
                    serial::show(tg.ty, got)
                ));
            }
        }
        for (ti, tg) in self.p.targets.iter().enumerate() {
            for w in 0..tg.init.len() {
                let key = (ti as u8, w);
                let ops = log.get(&key).map_or(&[][..], |v| &v[..]);
                if tg.space == Space::Grid {
                    // Checked with the other blocks' atomics (`check::grid_check`).
                    if open.contains(&key) {
                        self.grid_open.push((tg.ty, w));
                    }
                    self.grid_ops.extend(ops.iter().map(|o| (tg.ty, w, *o)));
                    self.words[ti][w] = None;
                    continue;
                }
                let cur = self.words[ti][w];
                self.words[ti][w] = match cur {
                    _ if open.contains(&key) => None,
                    None => None,
                    Some(init) => {
                        self.stats.olds_checked += ops.len();
                        match serial::serialise(tg.ty, init, ops) {
                            Ok(end) => Some(end),
                            Err(e) => {
                                self.errors.push(format!(
                                    "target {ti} ({:?} {}) word {w}: {e}",
                                    tg.space,
                                    tg.ty.name()
                                ));
                                None
                            }
                        }
                    }
                };
            }
        }
    }
}

/// Runs `p` on `inputs` (thread `t` on `inputs[t]`), taking the atomics' old values from the
/// device's `rows` (thread `t`'s output row).
pub fn model(p: &BlockProg, inputs: &[Vec<Val>], rows: &[&[u64]], contract: bool) -> Outcome {
    let n = p.threads as usize;
    let mut st = St {
        p,
        inputs,
        rows,
        contract,
        vars: (0..n)
            .map(|t| {
                p.vars
                    .iter()
                    .enumerate()
                    .map(|(i, &ty)| {
                        Some(if i == 0 {
                            Val::U32(t as u32)
                        } else {
                            Val::from_bits(ty, 0)
                        })
                    })
                    .collect()
            })
            .collect(),
        cols: vec![vec![None; n]; p.cols.len()],
        words: p
            .targets
            .iter()
            .map(|t| t.init.iter().map(|&b| Some(b & t.ty.mask())).collect())
            .collect(),
        want: vec![vec![Want::Unwritten; p.slots as usize]; n],
        log: BTreeMap::new(),
        open_words: BTreeSet::new(),
        busy: BTreeSet::new(),
        loads: Vec::new(),
        errors: Vec::new(),
        stats: Stats::default(),
        grid_ops: Vec::new(),
        grid_open: Vec::new(),
    };
    for ph in &p.phases {
        st.stats.phases += 1;
        st.busy.clear();
        super::walk(&ph.stmts, &mut |s| {
            if let Stmt::Atomic(a) = s {
                st.busy.insert(a.target);
            }
        });
        for s in &ph.stmts {
            match s {
                Stmt::Warp { .. } | Stmt::ActiveMask { .. } => st.warp(s),
                Stmt::WarpIf { .. } => st.warp_if(s),
                _ => {
                    for t in 0..n {
                        st.stmt(t, s);
                    }
                }
            }
        }
        st.barrier(&ph.barrier);
        st.end_phase();
    }
    let mut rows = st.want.clone();
    for (t, row) in rows.iter_mut().enumerate() {
        row.extend(st.vars[t].iter().map(|&v| Want::Val(v)));
        row.extend(st.cols.iter().map(|c| Want::Val(c[t])));
    }
    let words = p
        .targets
        .iter()
        .enumerate()
        .flat_map(|(i, tg)| {
            let w = &st.words[i];
            (0..tg.init.len()).map(move |k| match tg.ty.tree_ty() {
                Some(ty) => Want::Val(w[k].map(|b| Val::from_bits(ty, b))),
                None => Want::Bits(w[k]),
            })
        })
        .collect();
    Outcome {
        rows,
        words,
        errors: st.errors,
        stats: st.stats,
        grid_ops: st.grid_ops,
        grid_open: st.grid_open,
    }
}

/// Whether the device's word `got` is what `want` says (`None`: left open). `fill` is the
/// buffer's fill value; a stored value must have zero bits above its type's width.
pub fn word_ok(want: Want, got: u64, fill: u64, ty: Option<Ty>) -> Option<bool> {
    match want {
        Want::Unwritten => Some(got == fill),
        Want::Open | Want::Val(None) | Want::Bits(None) => None,
        Want::Val(Some(w)) => {
            let g = Val::from_bits(ty.unwrap_or(w.ty()), got);
            Some(g.to_bits() == got && w.same(g))
        }
        Want::Bits(Some(b)) => Some(b == got),
        Want::Old(bits) => Some(bits == 64 || (got >> bits == 0)),
        Want::Mask { must, may } => {
            Some(got >> 32 == 0 && got as u32 & must == must && got as u32 & !may == 0)
        }
    }
}
