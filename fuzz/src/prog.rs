//! The fuzzer's second kind of program: small statement programs with control flow (mutable
//! variables, if/else, `for` and `while` loops with break/continue, early return, output
//! stores at several points, device functions), their random generation, and their host model
//! (an interpreter in plain Rust).
//!
//! Expressions inside statements are the trees of `tree.rs` without inexact math functions,
//! with variable reads (`Node::Var`) as extra leaves. Every loop terminates: `for` loops run
//! over small ranges (bounds are literals or `x & 3` / `x & 7`), a `while` loop's condition is
//! `counter < limit && cond` with a small constant limit.
//!
//! A program's outputs (one `u64` each per thread) are its *results*, variables `0..results`
//! (declared first, stored at the end and before every early return), then its *emit slots*,
//! stored by `Stmt::Emit` wherever it occurs (last store wins; a slot never stored keeps the
//! fill value, so a store after a return that was taken shows up as a mismatch).

use super::lower::INPUTS;
use super::model::Model;
pub use super::prog_min::{prog_well_formed, smaller};
use super::rng::Rng;
use super::tree::{Gen, Lang, Node, Ty, Val, SLOTS, TYS};

/// A statement. Variables are numbered per program (or per device function); a variable is
/// declared (by `Let`, a declaring `Call`, or as a loop's index/counter) before it is read,
/// and read only in the block that declares it and blocks nested in it.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let v<var> = k.var(init)`.
    Let { var: u8, init: Node },
    /// `v<var>.set(value)`.
    Assign { var: u8, value: Node },
    /// `k.if_else(cond, |k| then, |k| otherwise)` (`k.if_` when `otherwise` is empty).
    If {
        cond: Node,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `k.for_step(start, end, step, |k, i| { let v<var> = k.var(i); body })` (`for_range`
    /// when `step` is 1); the index variable is only read.
    For {
        var: u8,
        start: Node,
        end: Node,
        step: u8,
        body: Vec<Stmt>,
    },
    /// `let v<var> = k.var(0u32); k.while_(|_| v<var>.get().lt(limit).and(cond), |k| {
    /// v<var>.set(v<var>.get() + 1); body })`; the counter is only read.
    While {
        var: u8,
        limit: u32,
        cond: Node,
        body: Vec<Stmt>,
    },
    /// `k.break_()` (only inside loops).
    Break,
    /// `k.continue_()` (only inside loops).
    Continue,
    /// Stores the results, then `k.ret()` (not in device functions).
    Return,
    /// `k.ret_value(value)`: a device function's early return (`value` has its return type).
    ReturnValue(Node),
    /// Stores `value` in emit slot `slot` (not in device functions).
    Emit { slot: u8, value: Node },
    /// `v<var> = f<func>.call(args)`: one argument per type, in `TYS` order; `decl`: declares
    /// `v<var>` (`let v = k.var(f.call(..))`) instead of assigning it.
    Call {
        var: u8,
        func: u8,
        args: Vec<Node>,
        decl: bool,
    },
}

impl Stmt {
    /// The nested blocks.
    pub fn blocks(&self) -> Vec<&Vec<Stmt>> {
        match self {
            Stmt::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            Stmt::For { body, .. } | Stmt::While { body, .. } => vec![body],
            _ => vec![],
        }
    }
    /// The nested blocks, mutably.
    pub fn blocks_mut(&mut self) -> Vec<&mut Vec<Stmt>> {
        match self {
            Stmt::If {
                then, otherwise, ..
            } => vec![then, otherwise],
            Stmt::For { body, .. } | Stmt::While { body, .. } => vec![body],
            _ => vec![],
        }
    }
    /// The expressions of this statement (not of nested blocks).
    pub fn exprs(&self) -> Vec<&Node> {
        match self {
            Stmt::Let { init: e, .. }
            | Stmt::Assign { value: e, .. }
            | Stmt::Emit { value: e, .. }
            | Stmt::If { cond: e, .. }
            | Stmt::While { cond: e, .. }
            | Stmt::ReturnValue(e) => vec![e],
            Stmt::For { start, end, .. } => vec![start, end],
            Stmt::Call { args, .. } => args.iter().collect(),
            Stmt::Break | Stmt::Continue | Stmt::Return => vec![],
        }
    }
    /// The variable this statement declares, if any.
    pub fn declares(&self) -> Option<u8> {
        match self {
            Stmt::Let { var, .. }
            | Stmt::For { var, .. }
            | Stmt::While { var, .. }
            | Stmt::Call {
                var, decl: true, ..
            } => Some(*var),
            _ => None,
        }
    }
}

/// Statements in `stmts` and all nested blocks.
pub fn count(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| 1 + s.blocks().iter().map(|b| count(b)).sum::<usize>())
        .sum()
}

/// Calls `f` on every statement, parents before children.
pub fn walk<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        for b in s.blocks() {
            walk(b, f);
        }
    }
}

/// A device function: takes one parameter of each type (`Node::Input(ty, 0)` reads the one of
/// type `ty`), runs `body` and returns `result`.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub ret: Ty,
    /// Its variables' types, by number.
    pub vars: Vec<Ty>,
    pub body: Vec<Stmt>,
    pub result: Node,
    /// Inlined (the default) or a real call (`no_inline`).
    pub inline: bool,
}

/// A statement program.
#[derive(Clone, Debug, PartialEq)]
pub struct Prog {
    /// Every variable's type, by number; `0..results` are the results.
    pub vars: Vec<Ty>,
    /// How many results: the body starts with their `Let`s.
    pub results: usize,
    /// The emit slots' types (outputs after the results).
    pub emits: Vec<Ty>,
    pub funcs: Vec<Func>,
    pub body: Vec<Stmt>,
    /// The language it was drawn from (its input layout; its device functions are always
    /// the core's: one parameter per core type).
    pub lang: Lang,
}

impl Prog {
    /// Output words per thread.
    pub fn width(&self) -> usize {
        self.results + self.emits.len()
    }
    /// The type of output `j`.
    pub fn out_ty(&self, j: usize) -> Ty {
        if j < self.results {
            self.vars[j]
        } else {
            self.emits[j - self.results]
        }
    }
    /// Statements, its functions' included.
    pub fn size(&self) -> usize {
        count(&self.body) + self.funcs.iter().map(|f| count(&f.body)).sum::<usize>()
    }
}

/// Program generation.
struct PGen<'a> {
    rng: &'a mut Rng,
    /// Types of the variables declared so far.
    vars: Vec<Ty>,
    /// Variables in scope: (number, assignable).
    visible: Vec<(u8, bool)>,
    /// Loops around the statement being made.
    loops: u32,
    /// Making a device function: no emits, returns or calls; parameters are slot 0.
    in_func: bool,
    /// In a device function: its return type, when it may return early with a value.
    ret_value: Option<Ty>,
    emits: Vec<Ty>,
    /// Return types of the callable functions.
    funcs: Vec<Ty>,
    /// Statements still to make.
    left: usize,
    /// The language of the program body (device functions: always the core).
    lang: Lang,
}

/// Integer types (loop indices).
const INTS: [Ty; 4] = [Ty::I32, Ty::U32, Ty::I64, Ty::U64];

impl PGen<'_> {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn any_ty(&mut self) -> Ty {
        let tys = if self.in_func { &TYS } else { self.lang.tys() };
        tys[self.below(tys.len() as u64) as usize]
    }

    /// An exact tree of type `ty` over the inputs and the visible variables.
    fn expr(&mut self, ty: Ty, depth: u32) -> Node {
        let vars = self
            .visible
            .iter()
            .map(|&(v, _)| (self.vars[v as usize], v))
            .collect();
        let depth = 1 + self.rng.below(depth as u64) as u32;
        Gen {
            rng: self.rng,
            vars,
            exact: true,
            slots: if self.in_func { 1 } else { SLOTS as u8 },
            lang: if self.in_func { Lang::Core } else { self.lang },
            no_bf16: false,
        }
        .tree(ty, depth)
    }

    fn declare(&mut self, ty: Ty, assignable: bool) -> u8 {
        let v = self.vars.len() as u8;
        self.vars.push(ty);
        self.visible.push((v, assignable));
        v
    }

    /// A small integer bound: a literal in `lo..lo + span`, or `x & mask` of a tree.
    fn bound(&mut self, ty: Ty, lo: i64, span: u64, mask: u64) -> Node {
        if self.below(3) == 0 {
            let t = self.expr(ty, 2);
            return Node::Bin(
                super::tree::Bin::And,
                Box::new(t),
                Box::new(Node::Lit(Val::from_bits(ty, mask))),
            );
        }
        let lo = if ty.is_signed() { lo } else { lo.max(0) };
        Node::Lit(Val::from_bits(ty, (lo + self.below(span) as i64) as u64))
    }

    /// Up to `n` statements, nested at most `nest` deep; what they declare stays visible.
    fn stmts(&mut self, nest: u32, n: u64) -> Vec<Stmt> {
        let mut out = Vec::new();
        for _ in 0..n {
            if self.left == 0 {
                break;
            }
            out.push(self.stmt(nest));
        }
        out
    }

    /// A block of `1..=max` statements, nested at most `nest` deep.
    fn block(&mut self, nest: u32, max: u64) -> Vec<Stmt> {
        let mark = self.visible.len();
        let n = 1 + self.below(max);
        let out = self.stmts(nest, n);
        self.visible.truncate(mark);
        out
    }

    /// A branch of an if: a block, sometimes with a break, continue or return somewhere in it
    /// (statements after it are dead code, which the builder must still accept).
    fn branch(&mut self, nest: u32) -> Vec<Stmt> {
        let mut b = self.block(nest, 3);
        let r = self.below(20);
        let jump = match r {
            0..=3 if self.loops > 0 => Some(Stmt::Break),
            4..=7 if self.loops > 0 => Some(Stmt::Continue),
            8..=9 if !self.in_func => Some(Stmt::Return),
            // Its value reads only what is visible before the branch (the block's own
            // variables went out of scope with it).
            8..=9 => self.ret_value.map(|t| Stmt::ReturnValue(self.expr(t, 2))),
            _ => None,
        };
        if let Some(j) = jump {
            let at = if self.below(4) == 0 {
                self.below(b.len() as u64 + 1) as usize
            } else {
                b.len()
            };
            b.insert(at, j);
        }
        b
    }

    /// A loop body: a block, often with `if cond { break }` or `if cond { continue }` at a
    /// random place in it.
    fn loop_body(&mut self, nest: u32) -> Vec<Stmt> {
        self.loops += 1;
        let mut body = self.block(nest, 4);
        if self.below(2) == 0 {
            let cond = self.expr(Ty::Bool, 2);
            let jump = if self.below(2) == 0 {
                Stmt::Break
            } else {
                Stmt::Continue
            };
            let at = self.below(body.len() as u64 + 1) as usize;
            body.insert(
                at,
                Stmt::If {
                    cond,
                    then: vec![jump],
                    otherwise: Vec::new(),
                },
            );
        }
        self.loops -= 1;
        body
    }

    fn assign(&mut self) -> Stmt {
        let targets: Vec<u8> = self
            .visible
            .iter()
            .filter(|(_, a)| *a)
            .map(|(v, _)| *v)
            .collect();
        if targets.is_empty() {
            return self.let_();
        }
        let var = targets[self.below(targets.len() as u64) as usize];
        let value = self.expr(self.vars[var as usize], 3);
        Stmt::Assign { var, value }
    }

    fn let_(&mut self) -> Stmt {
        let ty = self.any_ty();
        let init = self.expr(ty, 3);
        let var = self.declare(ty, true);
        Stmt::Let { var, init }
    }

    fn stmt(&mut self, nest: u32) -> Stmt {
        self.left -= 1;
        let r = self.below(100);
        match r {
            0..=9 => self.let_(),
            10..=27 if nest > 0 => {
                let cond = self.expr(Ty::Bool, 3);
                let then = self.branch(nest - 1);
                let otherwise = if self.below(2) == 0 {
                    self.branch(nest - 1)
                } else {
                    Vec::new()
                };
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                }
            }
            28..=39 if nest > 0 => {
                let ty = INTS[self.below(4) as usize];
                let start = self.bound(ty, -2, 4, 3);
                let end = self.bound(ty, 0, 7, 7);
                let step = 1 + (self.below(3) == 0) as u8 * (1 + self.below(2) as u8);
                let mark = self.visible.len();
                let var = self.declare(ty, false);
                let body = self.loop_body(nest - 1);
                self.visible.truncate(mark);
                Stmt::For {
                    var,
                    start,
                    end,
                    step,
                    body,
                }
            }
            40..=47 if nest > 0 => {
                let mark = self.visible.len();
                let var = self.declare(Ty::U32, false);
                let limit = self.below(6) as u32;
                let cond = self.expr(Ty::Bool, 2);
                let body = self.loop_body(nest - 1);
                self.visible.truncate(mark);
                Stmt::While {
                    var,
                    limit,
                    cond,
                    body,
                }
            }
            48..=57 if !self.in_func && !self.emits.is_empty() => {
                let slot = self.below(self.emits.len() as u64) as u8;
                let value = self.expr(self.emits[slot as usize], 3);
                Stmt::Emit { slot, value }
            }
            58..=67 if !self.in_func && !self.funcs.is_empty() => {
                let func = self.below(self.funcs.len() as u64) as u8;
                let ret = self.funcs[func as usize];
                let args: Vec<Node> = TYS.iter().map(|&t| self.expr(t, 2)).collect();
                let targets: Vec<u8> = self
                    .visible
                    .iter()
                    .filter(|&&(v, a)| a && self.vars[v as usize] == ret)
                    .map(|(v, _)| *v)
                    .collect();
                if targets.is_empty() || self.below(4) == 0 {
                    let var = self.declare(ret, true);
                    Stmt::Call {
                        var,
                        func,
                        args,
                        decl: true,
                    }
                } else {
                    let var = targets[self.below(targets.len() as u64) as usize];
                    Stmt::Call {
                        var,
                        func,
                        args,
                        decl: false,
                    }
                }
            }
            _ => self.assign(),
        }
    }
}

/// A random program of about `max_stmts` statements (device functions not counted).
pub fn generate(rng: &mut Rng, max_stmts: usize) -> Prog {
    generate_in(rng, max_stmts, Lang::Core, true)
}

/// A random program of `lang` (see [`generate`]). `ret_values`: its device functions may
/// return early with a value (`k.ret_value`) in a tenth of their branches; without, a seed
/// gives the programs it gave before that existed.
pub fn generate_in(rng: &mut Rng, max_stmts: usize, lang: Lang, ret_values: bool) -> Prog {
    let mut funcs = Vec::new();
    for _ in 0..rng.below(3) {
        let mut g = PGen {
            rng,
            vars: Vec::new(),
            visible: Vec::new(),
            loops: 0,
            in_func: true,
            ret_value: None,
            emits: Vec::new(),
            funcs: Vec::new(),
            left: 4,
            lang: Lang::Core,
        };
        let ret = g.any_ty();
        g.ret_value = ret_values.then_some(ret);
        // The result may read the variables the body declares at its top level.
        let n = g.below(4);
        let body = g.stmts(2, n);
        let result = g.expr(ret, 3);
        let inline = g.below(2) == 0;
        let vars = g.vars;
        funcs.push(Func {
            ret,
            vars,
            body,
            result,
            inline,
        });
    }
    let mut g = PGen {
        rng,
        vars: Vec::new(),
        visible: Vec::new(),
        loops: 0,
        in_func: false,
        ret_value: None,
        emits: Vec::new(),
        funcs: funcs.iter().map(|f| f.ret).collect(),
        left: max_stmts,
        lang,
    };
    let results = 1 + g.below(3) as usize;
    g.emits = (0..g.below(4)).map(|_| g.any_ty()).collect();
    let mut body = Vec::new();
    for _ in 0..results {
        let ty = g.any_ty();
        let init = g.expr(ty, 2);
        let var = g.declare(ty, true);
        body.push(Stmt::Let { var, init });
    }
    while g.left > 0 {
        body.push(g.stmt(3));
    }
    Prog {
        vars: g.vars,
        results,
        emits: g.emits,
        funcs,
        body,
        lang,
    }
}

/// An output word as the host model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    /// Never stored: the buffer's fill value must still be there.
    Unwritten,
    /// Stored last with this value (`None`: its bits depend on a NaN's, left open).
    Written(Option<Val>),
}

/// The program took a branch (or ran a loop) on a value Rust leaves open (it depends on a
/// NaN's bits): the thread's outputs are not compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open;

/// How a statement list ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

/// What the model saw the programs do (summed over threads): evidence that the control flow
/// is exercised, not only generated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// `if`s run, and how many took the `then` branch.
    pub ifs: usize,
    pub thens: usize,
    /// Loop bodies run (iterations of `for` and `while` loops).
    pub iterations: usize,
    /// Breaks, continues and early returns taken.
    pub breaks: usize,
    pub continues: usize,
    pub returns: usize,
    /// Of the early returns, those of device functions with a value (`k.ret_value`).
    pub value_returns: usize,
    /// Device function calls.
    pub calls: usize,
}

impl Coverage {
    /// Adds `o`'s counts.
    pub fn add(&mut self, o: &Coverage) {
        self.ifs += o.ifs;
        self.thens += o.thens;
        self.iterations += o.iterations;
        self.breaks += o.breaks;
        self.continues += o.continues;
        self.returns += o.returns;
        self.value_returns += o.value_returns;
        self.calls += o.calls;
    }
}

/// The interpreter: one thread of one program (or one call of a device function).
struct Interp<'a> {
    inputs: &'a [Val],
    funcs: &'a [Func],
    vars: Vec<Option<Val>>,
    results: usize,
    out: Vec<Slot>,
    cov: Coverage,
    /// Whether the kernel (and its device functions) were built with FMA contraction.
    contract: bool,
    /// A device function's early return: its value (`None`: left open).
    returned: Option<Option<Val>>,
}

impl Interp<'_> {
    fn eval(&self, n: &Node) -> Option<Val> {
        Model::with_vars(self.inputs, &self.vars)
            .contracting(self.contract)
            .eval(n)
    }

    fn cond(&self, n: &Node) -> Result<bool, Open> {
        match self.eval(n) {
            Some(Val::Bool(b)) => Ok(b),
            _ => Err(Open),
        }
    }

    fn store_results(&mut self) {
        for j in 0..self.results {
            self.out[j] = Slot::Written(self.vars[j]);
        }
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<Flow, Open> {
        for s in stmts {
            let flow = self.stmt(s)?;
            if flow != Flow::Next {
                return Ok(flow);
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<Flow, Open> {
        match s {
            Stmt::Let { var, init: e } | Stmt::Assign { var, value: e } => {
                self.vars[*var as usize] = self.eval(e);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.cov.ifs += 1;
                return if self.cond(cond)? {
                    self.cov.thens += 1;
                    self.block(then)
                } else {
                    self.block(otherwise)
                };
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let (Some(mut i), Some(end)) = (self.eval(start), self.eval(end)) else {
                    return Err(Open);
                };
                let step = Val::from_bits(i.ty(), *step as u64);
                while less(i, end) {
                    self.cov.iterations += 1;
                    self.vars[*var as usize] = Some(i);
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Next | Flow::Continue => {}
                    }
                    i = wrapping_add(i, step);
                }
            }
            Stmt::While {
                var,
                limit,
                cond,
                body,
            } => {
                let v = *var as usize;
                self.vars[v] = Some(Val::U32(0));
                loop {
                    let Some(Val::U32(c)) = self.vars[v] else {
                        unreachable!("a while counter is a u32")
                    };
                    if c >= *limit || !self.cond(cond)? {
                        break;
                    }
                    self.cov.iterations += 1;
                    self.vars[v] = Some(Val::U32(c + 1));
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Next | Flow::Continue => {}
                    }
                }
            }
            Stmt::Break => {
                self.cov.breaks += 1;
                return Ok(Flow::Break);
            }
            Stmt::Continue => {
                self.cov.continues += 1;
                return Ok(Flow::Continue);
            }
            Stmt::Return => {
                self.cov.returns += 1;
                self.store_results();
                return Ok(Flow::Return);
            }
            Stmt::ReturnValue(value) => {
                self.cov.returns += 1;
                self.cov.value_returns += 1;
                self.returned = Some(self.eval(value));
                return Ok(Flow::Return);
            }
            Stmt::Emit { slot, value } => {
                self.out[self.results + *slot as usize] = Slot::Written(self.eval(value));
            }
            Stmt::Call {
                var, func, args, ..
            } => {
                let args: Option<Vec<Val>> = args.iter().map(|a| self.eval(a)).collect();
                self.vars[*var as usize] = match args {
                    // An argument left open: so is the result (a sound approximation).
                    None => None,
                    Some(a) => {
                        self.cov.calls += 1;
                        call(
                            &self.funcs[*func as usize],
                            &a,
                            self.contract,
                            &mut self.cov,
                        )?
                    }
                };
            }
        }
        Ok(Flow::Next)
    }
}

/// `a < b` for two integers of one type.
fn less(a: Val, b: Val) -> bool {
    match (a, b) {
        (Val::I32(x), Val::I32(y)) => x < y,
        (Val::U32(x), Val::U32(y)) => x < y,
        (Val::I64(x), Val::I64(y)) => x < y,
        (Val::U64(x), Val::U64(y)) => x < y,
        _ => unreachable!("loop bounds of different or non-integer types"),
    }
}

fn wrapping_add(a: Val, b: Val) -> Val {
    match (a, b) {
        (Val::I32(x), Val::I32(y)) => Val::I32(x.wrapping_add(y)),
        (Val::U32(x), Val::U32(y)) => Val::U32(x.wrapping_add(y)),
        (Val::I64(x), Val::I64(y)) => Val::I64(x.wrapping_add(y)),
        (Val::U64(x), Val::U64(y)) => Val::U64(x.wrapping_add(y)),
        _ => unreachable!("loop step of a non-integer type"),
    }
}

/// A device function's result for `args` (one per type, in `TYS` order).
fn call(f: &Func, args: &[Val], contract: bool, cov: &mut Coverage) -> Result<Option<Val>, Open> {
    let inputs: Vec<Val> = (0..INPUTS).map(|c| args[c / SLOTS]).collect();
    let mut it = Interp {
        inputs: &inputs,
        funcs: &[],
        vars: vec![None; f.vars.len()],
        results: 0,
        out: Vec::new(),
        cov: Coverage::default(),
        contract,
        returned: None,
    };
    let flow = it.block(&f.body);
    cov.add(&it.cov);
    flow?;
    Ok(match it.returned {
        Some(v) => v,
        None => it.eval(&f.result),
    })
}

/// The host model of one thread: every output word of the program, or `Open` when it
/// branched on a NaN-bit-dependent value. What it did is added to `cov`. `contract`: whether
/// the kernel was built with FMA contraction (see `model.rs`).
pub fn model(
    p: &Prog,
    inputs: &[Val],
    contract: bool,
    cov: &mut Coverage,
) -> Result<Vec<Slot>, Open> {
    let mut it = Interp {
        inputs,
        funcs: &p.funcs,
        vars: vec![None; p.vars.len()],
        results: p.results,
        out: vec![Slot::Unwritten; p.width()],
        cov: Coverage::default(),
        contract,
        returned: None,
    };
    let flow = it.block(&p.body);
    cov.add(&it.cov);
    if flow? != Flow::Return {
        it.store_results();
    }
    Ok(it.out)
}
