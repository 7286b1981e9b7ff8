//! A block program as the Rust builder code that builds it (for reproducers), with the exact
//! indices the fuzzer's kernel uses when the program runs alone in one block.

use super::super::lower::rust as tree;
use super::super::lower::INPUTS;
use super::super::tree::{Node, Ty, Val, SLOTS};
use super::lower::{members, Layout};
use super::{ATy, Atomic, Barrier, BlockProg, Space, Stmt, WarpOp};

/// `x` (an expression of type `ty`) as the `u64` the kernel stores.
fn widen(ty: Ty, x: &str) -> String {
    match ty {
        Ty::Bool | Ty::U32 => format!("{x}.cast::<u64>()"),
        Ty::I32 | Ty::F32 => format!("{x}.bitcast::<u32>().cast::<u64>()"),
        Ty::I64 | Ty::F64 => format!("{x}.bitcast::<u64>()"),
        _ => x.to_string(),
    }
}

fn widen_a(ty: ATy, x: &str) -> String {
    match ty {
        ATy::I8 => format!("{x}.bitcast::<u8>().cast::<u64>()"),
        ATy::I16 | ATy::F16 | ATy::BF16 => format!("{x}.bitcast::<u16>().cast::<u64>()"),
        ATy::U8 | ATy::U16 | ATy::U32 => format!("{x}.cast::<u64>()"),
        ATy::I32 | ATy::F32 => format!("{x}.bitcast::<u32>().cast::<u64>()"),
        ATy::I64 | ATy::F64 => format!("{x}.bitcast::<u64>()"),
        ATy::U64 => x.to_string(),
    }
}

fn lit_a(ty: ATy, b: u64) -> String {
    match ty {
        ATy::F16 | ATy::BF16 => format!("{}::from_bits({b:#x})", ty.name()),
        ATy::F32 => Val::F32(f32::from_bits(b as u32)).rust(),
        ATy::F64 => Val::F64(f64::from_bits(b)).rust(),
        _ => super::serial::show(ty, b),
    }
}

struct P<'a> {
    p: &'a BlockProg,
    lay: Layout,
    out: String,
}

impl P<'_> {
    fn line(&mut self, depth: usize, s: &str) {
        self.out.push_str(&"    ".repeat(depth));
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn emit(&mut self, d: usize, slot: u16, x: &str) {
        self.line(d, &format!("out.set(row + {slot}u64, {x});"));
    }

    fn set(&mut self, d: usize, dst: u8, x: &str, slot: u16) {
        let ty = self.p.vars[dst as usize];
        self.line(d, &format!("v{dst}.set({x});"));
        self.emit(d, slot, &widen(ty, &format!("v{dst}.get()")));
    }

    /// The array and base index of target `t`.
    fn target(&self, t: u8) -> (String, usize) {
        let tg = &self.p.targets[t as usize];
        let off = self.p.target_offset(t as usize);
        match tg.space {
            Space::Shared => (format!("sh_{}", tg.ty.name()), off),
            Space::Global if tg.ty == ATy::U64 => ("out".into(), self.lay.global_u64(0) + off),
            Space::Global => (format!("g_{}", tg.ty.name()), off),
            Space::Grid if tg.ty == ATy::U64 => ("out".into(), self.lay.grid_u64()),
            Space::Grid => (format!("g_{}", tg.ty.name()), self.lay.grid()),
        }
    }

    fn word(&self, t: u8, w: &Node) -> String {
        let (_, base) = self.target(t);
        let n = self.p.targets[t as usize].init.len();
        format!("{base}u64 + ({} % {n}u32).cast::<u64>()", tree(w))
    }

    fn operand(&self, a: &Atomic, n: &Node) -> String {
        let tg = &self.p.targets[a.target as usize];
        if tg.ty.is_float() {
            format!("tab{}.at({} % {}u32)", a.target, tree(n), tg.table.len())
        } else {
            format!("{}.cast::<{}>()", tree(n), tg.ty.name())
        }
    }

    fn mask(&self, masks: &[u32]) -> String {
        if masks.iter().all(|&m| m == masks[0]) {
            format!("{:#010x}u32", masks[0])
        } else {
            let m: Vec<String> = masks.iter().map(|m| format!("{m:#x}")).collect();
            format!("k.const_array(&[{}u32]).at(tid / 32u32)", m.join(", "))
        }
    }

    fn stmts(&mut self, d: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(d, s);
        }
    }

    fn stmt(&mut self, d: usize, s: &Stmt) {
        let b = self.p.threads;
        match s {
            Stmt::Set { dst, e, slot } => self.set(d, *dst, &tree(e), *slot),
            Stmt::Store { col, e } => {
                let ty = self.p.cols[*col as usize];
                let off = self.p.col_offset(*col as usize);
                self.line(
                    d,
                    &format!("sh_c{}.set(tid + {off}u32, {});", ty.name(), tree(e)),
                );
            }
            Stmt::Load {
                dst,
                col,
                row,
                slot,
            } => {
                let ty = self.p.cols[*col as usize];
                let off = self.p.col_offset(*col as usize);
                let x = format!("sh_c{}.at({} % {b}u32 + {off}u32)", ty.name(), tree(row));
                self.set(d, *dst, &x, *slot);
            }
            Stmt::Const {
                dst,
                table,
                idx,
                clamp,
                slot,
            } => {
                let t = &self.p.tables[*table as usize];
                let n = t.data.len();
                let i = if *clamp {
                    format!("{}.min({}u32)", tree(idx), n - 1)
                } else {
                    format!("{} % {n}u32", tree(idx))
                };
                self.set(d, *dst, &format!("table{table}.at({i})"), *slot);
            }
            Stmt::TargetRead {
                dst,
                target,
                word,
                slot,
                atomic,
            } => {
                let (arr, _) = self.target(*target);
                let ty = self.p.targets[*target as usize].ty;
                let read = if *atomic { "atomic_load" } else { "at" };
                self.line(
                    d,
                    &format!("let x = {arr}.{read}({});", self.word(*target, word)),
                );
                self.emit(d, *slot, &widen_a(ty, "x"));
                if let Some(v) = dst {
                    self.line(d, &format!("v{v}.set(x);"));
                }
            }
            Stmt::Atomic(a) => {
                let (arr, _) = self.target(a.target);
                let ty = self.p.targets[a.target as usize].ty;
                let v = self.operand(a, &a.val);
                let args = match &a.cmp {
                    Some(c) => format!("{}, {v}", self.operand(a, c)),
                    None => v,
                };
                self.line(
                    d,
                    &format!(
                        "let old = {arr}.{}({}, {args});",
                        a.op.name(),
                        self.word(a.target, &a.word)
                    ),
                );
                self.emit(d, a.slot, &widen_a(ty, "old"));
                if let Some(v) = a.dst {
                    self.line(d, &format!("v{v}.set(old);"));
                }
            }
            Stmt::If { cond, then, els } => {
                if els.is_empty() {
                    self.line(d, &format!("k.if_({}, |k| {{", tree(cond)));
                    self.stmts(d + 1, then);
                    self.line(d, "});");
                } else {
                    self.line(d, &format!("k.if_else({}, |k| {{", tree(cond)));
                    self.stmts(d + 1, then);
                    self.line(d, "}, |k| {");
                    self.stmts(d + 1, els);
                    self.line(d, "});");
                }
            }
            Stmt::Loop { n, body } => {
                self.line(d, &format!("k.for_range(0u32, {n}u32, |k, _| {{"));
                self.stmts(d + 1, body);
                self.line(d, "});");
            }
            Stmt::Warp {
                dst,
                op,
                masks,
                value,
                slot,
            } => {
                self.line(d, &format!("let mask = {};", self.mask(masks)));
                self.line(d, "k.if_(((mask >> k.lane_id()) & 1u32).ne(0u32), |k| {");
                let v = tree(value);
                let call = match op {
                    WarpOp::ShflIdx(src) => {
                        let (m, c) = members(masks);
                        let m: Vec<String> = m.iter().map(|x| x.to_string()).collect();
                        let c: Vec<String> = c.iter().map(|x| x.to_string()).collect();
                        self.line(
                            d + 1,
                            &format!(
                                "let count = k.const_array(&[{}u32]).at(tid / 32u32);",
                                c.join(", ")
                            ),
                        );
                        self.line(
                            d + 1,
                            &format!(
                                "let lane = k.const_array(&[{}u32]).at(tid / 32u32 * 32u32 + {} % count);",
                                m.join(", "),
                                tree(src)
                            ),
                        );
                        format!("k.shfl_sync(mask, {v}, lane)")
                    }
                    WarpOp::ShflUp(x) | WarpOp::ShflDown(x) | WarpOp::ShflXor(x) => {
                        format!("k.{}(mask, {v}, {x}u32)", op.name())
                    }
                    WarpOp::MatchAll => format!("k.match_all_sync(mask, {v}).0"),
                    _ => format!("k.{}(mask, {v})", op.name()),
                };
                self.set(d + 1, *dst, &call, *slot);
                self.line(d, "});");
            }
            Stmt::WarpIf {
                cond,
                dst,
                op,
                value,
                mslot,
                slot,
            } => {
                self.line(d, &format!("k.if_({}, |k| {{", tree(cond)));
                self.line(d + 1, "let mask = k.activemask();");
                self.emit(d + 1, *mslot, "mask.cast::<u64>()");
                let v = tree(value);
                let call = match op {
                    WarpOp::MatchAll => format!("k.match_all_sync(mask, {v}).0"),
                    _ => format!("k.{}(mask, {v})", op.name()),
                };
                self.set(d + 1, *dst, &call, *slot);
                self.line(d, "});");
            }
            Stmt::ActiveMask { masks, slot } => {
                self.line(d, &format!("let mask = {};", self.mask(masks)));
                self.line(d, "k.if_(((mask >> k.lane_id()) & 1u32).ne(0u32), |k| {");
                self.emit(d + 1, *slot, "k.activemask().cast::<u64>()");
                self.line(d, "});");
            }
        }
    }

    fn barrier(&mut self, b: &Barrier) {
        let (name, pred, dst, slot) = match b {
            Barrier::Sync => return self.line(1, "k.syncthreads();"),
            Barrier::Count { pred, dst, slot } => ("syncthreads_count", pred, dst, slot),
            Barrier::And { pred, dst, slot } => ("syncthreads_and", pred, dst, slot),
            Barrier::Or { pred, dst, slot } => ("syncthreads_or", pred, dst, slot),
        };
        self.set(1, *dst, &format!("k.{name}({})", tree(pred)), *slot);
    }
}

/// The input slots the program's trees read.
fn used_inputs(p: &BlockProg) -> Vec<(Ty, u8)> {
    let mut v = Vec::new();
    let mut see = |n: &Node| {
        for s in n.subtrees() {
            if let Node::Input(t, slot) = s {
                v.push((*t, *slot));
            }
        }
    };
    super::shrink::each_tree(p, &mut see);
    v.sort_by_key(|(t, s)| (t.index(), *s));
    v.dedup();
    v
}

/// What a program refers to: variables, columns, tables, targets (the reproducer declares
/// only these).
#[derive(Default)]
struct Used {
    vars: Vec<bool>,
    cols: Vec<bool>,
    tables: Vec<bool>,
    targets: Vec<bool>,
}

fn used(p: &BlockProg) -> Used {
    let mut u = Used {
        vars: vec![false; p.vars.len()],
        cols: vec![false; p.cols.len()],
        tables: vec![false; p.tables.len()],
        targets: vec![false; p.targets.len()],
    };
    super::shrink::each_tree(p, &mut |n| {
        for s in n.subtrees() {
            if let Node::Var(_, v) = s {
                u.vars[*v as usize] = true;
            }
        }
    });
    for ph in &p.phases {
        super::walk(&ph.stmts, &mut |s| match s {
            Stmt::Set { dst, .. } | Stmt::Warp { dst, .. } | Stmt::WarpIf { dst, .. } => {
                u.vars[*dst as usize] = true
            }
            Stmt::Store { col, .. } => u.cols[*col as usize] = true,
            Stmt::Load { dst, col, .. } => {
                u.vars[*dst as usize] = true;
                u.cols[*col as usize] = true;
            }
            Stmt::Const { dst, table, .. } => {
                u.vars[*dst as usize] = true;
                u.tables[*table as usize] = true;
            }
            Stmt::TargetRead { dst, target, .. } => {
                if let Some(d) = dst {
                    u.vars[*d as usize] = true;
                }
                u.targets[*target as usize] = true;
            }
            Stmt::Atomic(a) => {
                if let Some(d) = a.dst {
                    u.vars[d as usize] = true;
                }
                u.targets[a.target as usize] = true;
            }
            _ => {}
        });
        match &ph.barrier {
            Barrier::Sync => {}
            Barrier::Count { dst, .. } | Barrier::And { dst, .. } | Barrier::Or { dst, .. } => {
                u.vars[*dst as usize] = true
            }
        }
    }
    u
}

/// The builder code of `p` as the fuzzer runs it alone (block 0 of a one-block launch).
pub fn rust(p: &BlockProg, contract: bool) -> String {
    let lay = Layout::of(std::slice::from_ref(p));
    let mut pr = P {
        p,
        lay,
        out: String::new(),
    };
    if !contract {
        pr.line(0, "// built with FMA contraction off: `build_with(name, PtxOptions::default().contract(false), ..)`");
    }
    pr.line(0, &format!("// one block of {} threads; the global arrays hold each target's initial words at its base index", p.threads));
    pr.line(0, "let k = Kernel::<(&[u64], &mut [u64], &mut [u32], &mut [i32], &mut [i64], &mut [f32], &mut [f64], &mut [i8], &mut [u8], &mut [u16], &mut [f16], &mut [bf16])>::build(\"repro\",");
    pr.line(
        1,
        "|k, (inp, out, g_u32, g_i32, g_i64, g_f32, g_f64, g_i8, g_u8, g_u16, g_f16, g_bf16)| {",
    );
    pr.line(1, "let tid = k.thread_idx().x;");
    pr.line(
        1,
        &format!("let row = tid.cast::<u64>() * {}u64;", lay.width),
    );
    for (t, slot) in used_inputs(p) {
        let at = format!(
            "inp.at(tid.cast::<u64>() * {INPUTS}u64 + {}u64)",
            t.index() * SLOTS + slot as usize
        );
        let conv = match t {
            Ty::Bool => format!("({at} & 1u64).ne(0u64)"),
            Ty::I32 => format!("{at}.cast::<u32>().bitcast::<i32>()"),
            Ty::U32 => format!("{at}.cast::<u32>()"),
            Ty::I64 => format!("{at}.bitcast::<i64>()"),
            Ty::F32 => format!("{at}.cast::<u32>().bitcast::<f32>()"),
            Ty::F64 => format!("{at}.bitcast::<f64>()"),
            _ => at,
        };
        pr.line(1, &format!("let x_{}_{slot} = {conv};", t.name()));
    }
    let u = used(p);
    let mut tys: Vec<Ty> = p
        .cols
        .iter()
        .zip(&u.cols)
        .filter(|(_, &x)| x)
        .map(|(t, _)| *t)
        .collect();
    tys.sort_by_key(|t| t.index());
    tys.dedup();
    for t in tys {
        let n = p.cols.iter().filter(|&&c| c == t).count() * p.threads as usize;
        pr.line(
            1,
            &format!("let sh_c{0} = k.shared_array::<{0}>({n});", t.name()),
        );
    }
    let mut atys: Vec<ATy> = p
        .targets
        .iter()
        .zip(&u.targets)
        .filter(|(t, &x)| x && t.space == Space::Shared)
        .map(|(t, _)| t)
        .map(|t| t.ty)
        .collect();
    atys.dedup();
    for (i, t) in atys.iter().enumerate() {
        if !atys[..i].contains(t) {
            let n = p
                .targets
                .iter()
                .filter(|x| x.ty == *t && x.space == Space::Shared)
                .count();
            pr.line(
                1,
                &format!(
                    "let sh_{0} = k.shared_array::<{0}>({1});",
                    t.name(),
                    n * super::MAX_WORDS
                ),
            );
        }
    }
    for (i, t) in p.tables.iter().enumerate().filter(|(i, _)| u.tables[*i]) {
        let xs: Vec<String> = t
            .data
            .iter()
            .map(|&b| Val::from_bits(t.ty, b).rust())
            .collect();
        pr.line(
            1,
            &format!("let table{i} = k.const_array(&[{}]);", xs.join(", ")),
        );
    }
    for (i, t) in p.targets.iter().enumerate().filter(|(i, _)| u.targets[*i]) {
        if t.ty.is_float() {
            let xs: Vec<String> = t.table.iter().map(|&b| lit_a(t.ty, b)).collect();
            pr.line(
                1,
                &format!("let tab{i} = k.const_array(&[{}]);", xs.join(", ")),
            );
        }
        let init: Vec<String> = t.init.iter().map(|&b| lit_a(t.ty, b)).collect();
        let (arr, base) = pr.target(i as u8);
        pr.line(
            1,
            &format!(
                "// target {i}: {arr}[{base}..{}], initially [{}]",
                base + t.init.len(),
                init.join(", ")
            ),
        );
    }
    for (i, t) in p.vars.iter().enumerate().filter(|(i, _)| u.vars[*i]) {
        if i == 0 {
            pr.line(1, "let v0 = k.var(tid);");
        } else {
            pr.line(
                1,
                &format!(
                    "let v{i} = k.var({});",
                    tree(&Node::Lit(Val::from_bits(*t, 0)))
                ),
            );
        }
    }
    if p.targets.iter().any(|t| t.space == Space::Shared) {
        pr.line(1, "k.if_(tid.eq(0u32), |_| {");
        for (i, t) in p.targets.iter().enumerate() {
            if t.space == Space::Shared && u.targets[i] {
                let (arr, base) = pr.target(i as u8);
                for (w, &b) in t.init.iter().enumerate() {
                    pr.line(
                        2,
                        &format!("{arr}.set({}u64, {});", base + w, lit_a(t.ty, b)),
                    );
                }
            }
        }
        pr.line(1, "});");
        pr.line(1, "k.syncthreads();");
    }
    for (n, ph) in p.phases.iter().enumerate() {
        pr.line(1, &format!("// phase {n}"));
        pr.stmts(1, &ph.stmts);
        pr.barrier(&ph.barrier);
    }
    pr.line(1, &format!("// then: the variables to out[row + {}..], each thread's column slots after them, and thread 0 copies the shared targets' words to out[{}..]", p.slots, lay.shared(0)));
    pr.line(0, "})?;");
    pr.out
}

/// The inputs the program reads, per thread (first threads only).
pub fn inputs_note(p: &BlockProg, inputs: &[Vec<Val>]) -> String {
    inputs_of(p, inputs, 4)
}

/// The inputs the program reads, for the first `threads` threads.
pub fn inputs_of(p: &BlockProg, inputs: &[Vec<Val>], threads: usize) -> String {
    let used = used_inputs(p);
    if used.is_empty() {
        return "// (reads no inputs)\n".into();
    }
    let mut s = String::new();
    for (t, row) in inputs.iter().enumerate().take(threads) {
        let vals: Vec<String> = used
            .iter()
            .map(|(ty, slot)| {
                format!(
                    "x_{}_{slot} = {}",
                    ty.name(),
                    row[ty.index() * SLOTS + *slot as usize].rust()
                )
            })
            .collect();
        s.push_str(&format!("// thread {t}: {}\n", vals.join(", ")));
    }
    s.push_str(
        "// (input vector t of the batch seed's inputs: check::batch_inputs(seed, threads)[t])\n",
    );
    s
}

/// What output word `k` of a row is.
pub fn slot_name(p: &BlockProg, k: usize) -> String {
    let s = p.slots as usize;
    if k < s {
        format!("slot {k}")
    } else if k < s + p.vars.len() {
        format!("v{} at the end", k - s)
    } else if k < p.width() {
        format!("own slot of column {}", k - s - p.vars.len())
    } else {
        "past the row".into()
    }
}
