//! Random block programs: well-typed, race-free and legal by construction (barriers only at
//! the top level of a program, warp intrinsics only under an `if` that lets exactly the lanes
//! of their mask in, every shuffle's source lane in the mask, a column never read in a phase
//! that writes it, a target never read plainly in a phase whose atomics touch it, and each
//! thread at most one atomic on a target per phase).

use super::super::rng::Rng;
use super::super::tree::{random_val, Bin, Gen, Node, Ty, Val, SLOTS};
use super::{
    grid_init, AOp, ATy, Atomic, Barrier, BlockProg, Phase, Space, Stmt, Table, Target, WarpOp,
    ATYS, GRID_WORDS, MAX_TARGETS, MAX_WORDS,
};

/// The types of variables and shared columns.
pub const VTYS: [Ty; 7] = [
    Ty::Bool,
    Ty::I32,
    Ty::U32,
    Ty::I64,
    Ty::U64,
    Ty::F32,
    Ty::F64,
];

/// The types shuffles and match move (the numeric ones).
pub const NUM_TYS: [Ty; 6] = [Ty::I32, Ty::U32, Ty::I64, Ty::U64, Ty::F32, Ty::F64];

/// Block sizes: whole warps, and some with a partial last warp.
pub const THREADS: [u32; 7] = [32, 64, 96, 128, 40, 72, 100];

/// Most variables per program.
const MAX_VARS: usize = 16;

struct G<'a> {
    rng: &'a mut Rng,
    p: BlockProg,
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

/// Dyadic values k/4, |k| <= 8: every sum of a few hundred is exact in each float type
/// (bf16's 8 bits up to 64 in quarters, beyond that each step is still modelled exactly).
fn dyadic(ty: ATy) -> Vec<u64> {
    (-8..=8).map(|k| float_bits(ty, k as f64 / 4.0)).collect()
}

fn float_bits(ty: ATy, x: f64) -> u64 {
    match ty {
        ATy::F16 => cudajit::f16::from_f64(x).to_bits() as u64,
        ATy::BF16 => cudajit::bf16::from_f64(x).to_bits() as u64,
        ATy::F32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// Special values: ±0, ±1, ±inf, NaNs with payloads and both signs, subnormals, extremes.
fn special(ty: ATy) -> Vec<u64> {
    let mut v: Vec<u64> = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        1.5,
        -7.25,
        f64::INFINITY,
        -f64::INFINITY,
    ]
    .iter()
    .map(|&x| float_bits(ty, x))
    .collect();
    v.extend_from_slice(match ty {
        ATy::F16 => &[0x7e00, 0x7e01, 0xfe00, 0x0001, 0x8001, 0x0400, 0x7bff],
        ATy::BF16 => &[0x7fc0, 0x7fc1, 0xffc0, 0x0001, 0x8001, 0x0080, 0x7f7f],
        ATy::F32 => &[
            0x7fc0_0000,
            0x7fc0_0001,
            0xffc0_0000,
            1,
            0x8000_0001,
            0x0080_0000,
            0x7f7f_ffff,
        ],
        _ => &[
            0x7ff8_0000_0000_0000,
            0x7ff8_0000_0000_0001,
            0xfff8_0000_0000_0000,
            1,
            0x8000_0000_0000_0001,
            0x0010_0000_0000_0000,
            0x7fef_ffff_ffff_ffff,
        ],
    });
    v
}

/// Shuffles' masks hold every lane a lane of the mask reads from (the lanes that exist in
/// `valid`): lanes are added while their readers exist, else the reader is dropped.
pub fn close_mask(op: &WarpOp, mut mask: u32, valid: u32) -> u32 {
    mask &= valid;
    let src = |l: u32| -> Option<u32> {
        match op {
            WarpOp::ShflUp(d) => l.checked_sub(*d as u32),
            WarpOp::ShflDown(d) => Some(l + *d as u32).filter(|&s| s < 32),
            WarpOp::ShflXor(m) => Some(l ^ *m as u32),
            _ => None,
        }
    };
    for _ in 0..64 {
        let before = mask;
        for l in 0..32 {
            if mask >> l & 1 == 0 {
                continue;
            }
            if let Some(s) = src(l) {
                if mask >> s & 1 == 0 {
                    if valid >> s & 1 == 1 {
                        mask |= 1 << s;
                    } else {
                        mask &= !(1 << l);
                    }
                }
            }
        }
        if mask == before {
            break;
        }
    }
    mask
}

impl G<'_> {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn tree(&mut self, ty: Ty, depth: u32) -> Node {
        let vars: Vec<(Ty, u8)> = self
            .p
            .vars
            .iter()
            .enumerate()
            .map(|(i, &t)| (t, i as u8))
            .collect();
        let d = 1 + self.rng.below(depth as u64) as u32;
        Gen {
            rng: self.rng,
            vars,
            exact: true,
            slots: SLOTS as u8,
            // The block programs' trees are the core language's (their own types and inputs).
            lang: crate::tree::Lang::Core,
            no_bf16: false,
        }
        .tree(ty, d)
    }

    /// A variable of type `ty` to assign (never `v0`, the thread index): an existing one or,
    /// below `MAX_VARS` variables (or if none has the type), a new one.
    fn dst(&mut self, ty: Ty) -> u8 {
        let have: Vec<u8> = (1..self.p.vars.len())
            .filter(|&i| self.p.vars[i] == ty)
            .map(|i| i as u8)
            .collect();
        if have.is_empty() || (self.p.vars.len() < MAX_VARS && self.below(2) == 0) {
            self.p.vars.push(ty);
            return (self.p.vars.len() - 1) as u8;
        }
        pick(self.rng, &have)
    }

    fn any_vty(&mut self) -> Ty {
        pick(self.rng, &VTYS)
    }

    fn set(&mut self) -> Stmt {
        let ty = self.any_vty();
        let e = self.tree(ty, 3);
        let dst = self.dst(ty);
        Stmt::Set { dst, e, slot: 0 }
    }

    /// A statement that does not synchronise and touches no column or target it may not.
    /// `busy_targets` (with atomics in this phase) are read only with `atomic_load`.
    fn simple(
        &mut self,
        readable_cols: &[u8],
        readable_targets: &[u8],
        busy_targets: &[u8],
    ) -> Stmt {
        match self.below(6) {
            0 | 1 if !readable_cols.is_empty() => {
                let col = pick(self.rng, readable_cols);
                let row = self.tree(Ty::U32, 2);
                let ty = self.p.cols[col as usize];
                Stmt::Load {
                    dst: self.dst(ty),
                    col,
                    row,
                    slot: 0,
                }
            }
            2 if !self.p.tables.is_empty() => {
                let table = self.below(self.p.tables.len() as u64) as u8;
                let idx = self.tree(Ty::U32, 2);
                let ty = self.p.tables[table as usize].ty;
                Stmt::Const {
                    dst: self.dst(ty),
                    table,
                    idx,
                    clamp: self.below(3) == 0,
                    slot: 0,
                }
            }
            3 if !readable_targets.is_empty() || !busy_targets.is_empty() => {
                let all: Vec<u8> = readable_targets
                    .iter()
                    .chain(busy_targets)
                    .copied()
                    .collect();
                let target = pick(self.rng, &all);
                let atomic = busy_targets.contains(&target) || self.below(2) == 0;
                let word = self.tree(Ty::U32, 2);
                let dst = match self.p.targets[target as usize].ty.tree_ty() {
                    Some(t) if self.below(2) == 0 => Some(self.dst(t)),
                    _ => None,
                };
                Stmt::TargetRead {
                    dst,
                    target,
                    word,
                    slot: 0,
                    atomic,
                }
            }
            _ => self.set(),
        }
    }

    fn maybe_if(&mut self, s: Stmt, other: Option<Stmt>) -> Stmt {
        if self.below(3) != 0 {
            return s;
        }
        let cond = self.tree(Ty::Bool, 3);
        Stmt::If {
            cond,
            then: vec![s],
            els: other.into_iter().collect(),
        }
    }

    fn atomic(&mut self, target: u8) -> Atomic {
        let tg = self.p.targets[target as usize].clone();
        let ops: Vec<AOp> = tg
            .ty
            .ops()
            .iter()
            .copied()
            .filter(|op| !tg.special || matches!(op, AOp::Min | AOp::Max | AOp::Exch | AOp::Cas))
            .collect();
        let op = pick(self.rng, &ops);
        let word = self.tree(Ty::U32, 2);
        let oty = tg.ty.operand_ty();
        let small = |g: &mut G, mask: u64| {
            let t = g.tree(oty, 2);
            Node::Bin(
                Bin::And,
                Box::new(t),
                Box::new(Node::Lit(Val::from_bits(oty, mask))),
            )
        };
        let (val, cmp) = if tg.ty.is_float() {
            let v = self.tree(Ty::U32, 2);
            let c = (op == AOp::Cas).then(|| self.tree(Ty::U32, 2));
            (v, c)
        } else {
            match op {
                AOp::Cas => (small(self, 3), Some(small(self, 3))),
                AOp::Inc | AOp::Dec => (small(self, 7), None),
                _ if self.below(2) == 0 => (small(self, 15), None),
                _ => (self.tree(oty, 3), None),
            }
        };
        let dst = match tg.ty.tree_ty() {
            Some(t) if self.below(2) == 0 => Some(self.dst(t)),
            _ => None,
        };
        Atomic {
            target,
            op,
            word,
            val,
            cmp,
            dst,
            slot: 0,
        }
    }

    fn masks(&mut self, op: &WarpOp) -> Vec<u32> {
        let kind = self.below(5);
        let r = self.rng.next_u64();
        (0..self.p.warps())
            .map(|w| {
                let valid = self.p.valid_lanes(w);
                let r = if self.below(3) == 0 {
                    self.rng.next_u64()
                } else {
                    r
                };
                let base = match kind {
                    0 => valid,
                    1 => r as u32,
                    2 => {
                        let (a, b) = ((r % 32) as u32, ((r >> 8) % 32) as u32);
                        let (lo, hi) = (a.min(b), a.max(b));
                        (((1u64 << (hi + 1)) - 1) as u32) & !((1u32 << lo) - 1)
                    }
                    3 => 1 << (r % 32),
                    _ => (r as u32) & ((r >> 32) as u32),
                };
                close_mask(op, base, valid)
            })
            .collect()
    }

    fn warp(&mut self) -> Stmt {
        if self.below(8) == 0 {
            let masks = self.masks(&WarpOp::All);
            return Stmt::ActiveMask { masks, slot: 0 };
        }
        if self.below(4) == 0 {
            let op = match self.below(6) {
                0 => WarpOp::All,
                1 => WarpOp::Any,
                2 => WarpOp::Eq,
                3 => WarpOp::Ballot,
                4 => WarpOp::MatchAny,
                _ => WarpOp::MatchAll,
            };
            let vty = match op {
                WarpOp::MatchAny | WarpOp::MatchAll => pick(self.rng, &NUM_TYS),
                _ => Ty::Bool,
            };
            let cond = self.tree(Ty::Bool, 3);
            let value = self.tree(vty, 2);
            let dst = self.dst(op.result_ty(vty));
            return Stmt::WarpIf {
                cond,
                dst,
                op,
                value,
                mslot: 0,
                slot: 0,
            };
        }
        let op = match self.below(10) {
            0 => WarpOp::ShflIdx(self.tree(Ty::U32, 2)),
            1 => WarpOp::ShflUp(1 + self.below(31) as u8),
            2 => WarpOp::ShflDown(1 + self.below(31) as u8),
            3 => WarpOp::ShflXor(1 + self.below(31) as u8),
            4 => WarpOp::All,
            5 => WarpOp::Any,
            6 => WarpOp::Eq,
            7 => WarpOp::Ballot,
            8 => WarpOp::MatchAny,
            _ => WarpOp::MatchAll,
        };
        let vty = match op {
            WarpOp::All | WarpOp::Any | WarpOp::Eq | WarpOp::Ballot => Ty::Bool,
            _ => pick(self.rng, &NUM_TYS),
        };
        // Small values often, so that match and the votes see equal values.
        let value = if self.below(2) == 0 && vty != Ty::Bool && !vty.is_float() {
            let t = self.tree(vty, 2);
            Node::Bin(
                Bin::And,
                Box::new(t),
                Box::new(Node::Lit(Val::from_bits(vty, 3))),
            )
        } else {
            self.tree(vty, 3)
        };
        let masks = self.masks(&op);
        let rty = op.result_ty(vty);
        let dst = self.dst(rty);
        Stmt::Warp {
            dst,
            op,
            masks,
            value,
            slot: 0,
        }
    }

    fn phase(&mut self, n: usize) -> Phase {
        let ncols = self.p.cols.len();
        let written: Vec<u8> = (0..ncols as u8)
            .filter(|_| n == 0 || self.rng.below(3) == 0)
            .collect();
        let readable_cols: Vec<u8> = if n == 0 {
            vec![]
        } else {
            (0..ncols as u8).filter(|c| !written.contains(c)).collect()
        };
        // A grid target gets atomics in one phase only (the other blocks' order is free).
        let mut grid_done = vec![false; self.p.targets.len()];
        for ph in &self.p.phases {
            super::walk(&ph.stmts, &mut |s| {
                if let Stmt::Atomic(a) = s {
                    grid_done[a.target as usize] = true;
                }
            });
        }
        let atomics: Vec<u8> = (0..self.p.targets.len() as u8)
            .filter(|&t| {
                self.rng.below(3) != 0
                    && !(self.p.targets[t as usize].space == Space::Grid && grid_done[t as usize])
            })
            .collect();
        let grid = |p: &BlockProg, t: &u8| p.targets[*t as usize].space == Space::Grid;
        let readable_targets: Vec<u8> = (0..self.p.targets.len() as u8)
            .filter(|t| !atomics.contains(t) && !grid(&self.p, t))
            .collect();
        let busy_targets: Vec<u8> = atomics
            .iter()
            .copied()
            .filter(|t| !grid(&self.p, t))
            .collect();
        let mut stmts = Vec::new();
        for &col in &written {
            let e = self.tree(self.p.cols[col as usize], 3);
            let s = Stmt::Store { col, e };
            stmts.push(if n == 0 { s } else { self.maybe_if(s, None) });
        }
        for &t in &atomics {
            let a = Stmt::Atomic(self.atomic(t));
            let b = (self.below(3) == 0).then(|| Stmt::Atomic(self.atomic(t)));
            stmts.push(self.maybe_if(a, b));
        }
        for _ in 0..1 + self.below(5) {
            let s = match self.below(8) {
                0 | 1 => self.warp(),
                2 => {
                    let body = (0..1 + self.below(3))
                        .map(|_| self.simple(&readable_cols, &[], &[]))
                        .collect();
                    Stmt::Loop {
                        n: self.below(4) as u8,
                        body,
                    }
                }
                3 => {
                    let cond = self.tree(Ty::Bool, 3);
                    let then = (0..1 + self.below(2))
                        .map(|_| self.simple(&readable_cols, &readable_targets, &busy_targets))
                        .collect();
                    let els = (0..self.below(2))
                        .map(|_| self.simple(&readable_cols, &readable_targets, &busy_targets))
                        .collect();
                    Stmt::If { cond, then, els }
                }
                _ => self.simple(&readable_cols, &readable_targets, &busy_targets),
            };
            stmts.push(s);
        }
        // Shuffle (Fisher-Yates).
        for i in (1..stmts.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            stmts.swap(i, j);
        }
        let barrier = match self.below(6) {
            0 => {
                let pred = self.tree(Ty::Bool, 3);
                let dst = self.dst(Ty::I32);
                Barrier::Count { pred, dst, slot: 0 }
            }
            1 => {
                let pred = self.tree(Ty::Bool, 3);
                let dst = self.dst(Ty::Bool);
                Barrier::And { pred, dst, slot: 0 }
            }
            2 => {
                let pred = self.tree(Ty::Bool, 3);
                let dst = self.dst(Ty::Bool);
                Barrier::Or { pred, dst, slot: 0 }
            }
            _ => Barrier::Sync,
        };
        Phase { stmts, barrier }
    }
}

/// A random program of `threads` threads.
pub fn generate(rng: &mut Rng, threads: u32) -> BlockProg {
    let mut g = G {
        rng,
        p: BlockProg {
            threads,
            vars: vec![Ty::U32],
            cols: Vec::new(),
            tables: Vec::new(),
            targets: Vec::new(),
            phases: Vec::new(),
            slots: 0,
        },
    };
    for _ in 0..1 + g.below(3) {
        let t = g.any_vty();
        g.p.cols.push(t);
    }
    for _ in 0..1 + g.below(2) {
        let ty = pick(g.rng, &super::gen::NUM_TYS);
        let n = 1 + g.below(12);
        let data = (0..n).map(|_| random_val(g.rng, ty).to_bits()).collect();
        g.p.tables.push(Table { ty, data });
    }
    for _ in 0..1 + g.below(MAX_TARGETS as u64) {
        let ty = pick(g.rng, &ATYS);
        let grid_free =
            !g.p.targets
                .iter()
                .any(|t| t.space == Space::Grid && t.ty == ty);
        let space = match g.below(6) {
            0 if ty.has_global() && grid_free => Space::Grid,
            0..=2 if ty.has_global() => Space::Global,
            _ => Space::Shared,
        };
        let is_special = ty.is_float() && space != Space::Grid && g.below(2) == 0;
        let table = match (ty.is_float(), is_special) {
            (false, _) => vec![],
            (true, false) => dyadic(ty),
            (true, true) => special(ty),
        };
        let words = if space == Space::Grid {
            GRID_WORDS
        } else {
            1 + g.below(MAX_WORDS as u64) as usize
        };
        let init = (0..words)
            .map(|_| {
                if ty.is_float() {
                    table[g.below(table.len() as u64) as usize]
                } else if g.below(2) == 0 {
                    g.below(4)
                } else {
                    g.rng.next_u64() & ty.mask()
                }
            })
            .collect();
        let init = if space == Space::Grid {
            grid_init(ty)
        } else {
            init
        };
        g.p.targets.push(Target {
            space,
            ty,
            init,
            table,
            special: is_special,
        });
    }
    for n in 0..2 + g.below(3) as usize {
        let ph = g.phase(n);
        g.p.phases.push(ph);
    }
    g.p.renumber();
    g.p
}
