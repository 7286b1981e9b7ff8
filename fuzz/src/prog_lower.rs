//! Statement programs to kernels through cudajit's public builder (`k.var`, `k.if_else`,
//! `k.for_step`, `k.while_`, `k.break_`, `k.continue_`, `k.ret`, `DeviceFn` and its
//! `k.ret_value`), and to the Rust
//! code that builds them (for reproducers).
//!
//! A batch kernel of `n` programs has the signature `(&[u64], &mut [u64])` and runs
//! `n * threads` threads: thread `i` runs program `i / threads` on input vector
//! `i % threads` (`inp[(i % threads) * INPUTS ..]`, laid out as for the trees) and writes its
//! outputs to `out[i * width ..]` (results, then emit slots; `width` is the widest program's).

use std::cell::RefCell;

use cudajit::codegen::{
    DeviceFn, DeviceParams, Expr, Int, Kernel, KernelBuilder, PtxOptions, SliceMut,
};
use cudajit::prelude::*;

use super::lower::{self, load_inputs, to_u64, BatchKernel, Lower, D, INPUTS, V};
use super::prog::{Func, Prog, Stmt};
use super::tree::{Lang, Node, Ty, Val, SLOTS, TYS};

/// A device function's parameters: one of each type, in `TYS` order.
pub type Params = (bool, i32, u32, i64, u64, f32, f64);

/// The Rust spelling of [`Params`].
const PARAMS: &str = "(bool, i32, u32, i64, u64, f32, f64)";

/// A built device function of any return type.
pub enum F {
    B(DeviceFn<Params, bool>),
    I32(DeviceFn<Params, i32>),
    U32(DeviceFn<Params, u32>),
    I64(DeviceFn<Params, i64>),
    U64(DeviceFn<Params, u64>),
    F32(DeviceFn<Params, f32>),
    F64(DeviceFn<Params, f64>),
}

impl F {
    /// Builds `f` as a device function named `name`, with FMA contraction on or off.
    pub fn build(name: &str, f: &Func, contract: bool) -> Result<F> {
        let body = |k: &KernelBuilder, p: <Params as DeviceParams>::Exprs| {
            let params = [
                D::B(p.0),
                D::I32(p.1),
                D::U32(p.2),
                D::I64(p.3),
                D::U64(p.4),
                D::F32(p.5),
                D::F64(p.6),
            ];
            let inputs: Vec<D> = (0..INPUTS).map(|c| params[c / SLOTS]).collect();
            let pl = ProgLower {
                inputs: &inputs,
                vars: RefCell::new(vec![None; f.vars.len()]),
                funcs: &[],
                out: None,
                results: 0,
            };
            pl.block(k, &f.body);
            pl.expr(&f.result)
        };
        macro_rules! build {
            ($v:ident, $t:ty) => {{
                let opts = PtxOptions::default().contract(contract);
                let d = DeviceFn::<Params, $t>::build_with(name, opts, |k, p| match body(k, p) {
                    D::$v(x) => x,
                    _ => unreachable!("a function result of another type"),
                })?;
                F::$v(if f.inline { d } else { d.no_inline() })
            }};
        }
        Ok(match f.ret {
            Ty::Bool => build!(B, bool),
            Ty::I32 => build!(I32, i32),
            Ty::U32 => build!(U32, u32),
            Ty::I64 => build!(I64, i64),
            Ty::U64 => build!(U64, u64),
            Ty::F32 => build!(F32, f32),
            Ty::F64 => build!(F64, f64),
            t => unreachable!("a device function returning {t:?} (they return core types)"),
        })
    }

    /// `f.call(args)`: one argument per type, in `TYS` order.
    pub fn call(&self, a: &[D]) -> D {
        let args = match a {
            [D::B(a), D::I32(b), D::U32(c), D::I64(d), D::U64(e), D::F32(f), D::F64(g)] => {
                (*a, *b, *c, *d, *e, *f, *g)
            }
            _ => unreachable!("arguments of the wrong types"),
        };
        match self {
            F::B(f) => D::B(f.call(args)),
            F::I32(f) => D::I32(f.call(args)),
            F::U32(f) => D::U32(f.call(args)),
            F::I64(f) => D::I64(f.call(args)),
            F::U64(f) => D::U64(f.call(args)),
            F::F32(f) => D::F32(f.call(args)),
            F::F64(f) => D::F64(f.call(args)),
        }
    }
}

/// Lowers one program (or device function body) inside a kernel being built.
struct ProgLower<'a> {
    inputs: &'a [D],
    /// The variables declared so far, by number.
    vars: RefCell<Vec<Option<V>>>,
    funcs: &'a [F],
    /// The output array and this thread's row (none in a device function).
    out: Option<(SliceMut<u64>, Expr<u64>)>,
    results: usize,
}

/// `k.for_step(start, end, step, |k, i| body(k, i))` on integers of type `T`.
fn for_loop<T: Int>(
    k: &KernelBuilder,
    start: Expr<T>,
    end: Expr<T>,
    step: u8,
    body: impl FnOnce(&KernelBuilder, Expr<T>),
) {
    if step == 1 {
        k.for_range(start, end, body)
    } else {
        k.for_step(start, end, Expr::lit(T::from_bits(step as u64)), body)
    }
}

impl ProgLower<'_> {
    fn expr(&self, n: &Node) -> D {
        let vars = self.vars.borrow().clone();
        let mut no_probe = |_: D| unreachable!("statement programs have no inexact nodes");
        Lower {
            inputs: self.inputs,
            probe: &mut no_probe,
            vars: &vars,
        }
        .node(n)
    }

    fn var(&self, v: u8) -> V {
        self.vars.borrow()[v as usize].expect("a variable is used before it is declared")
    }

    fn declare(&self, k: &KernelBuilder, v: u8, init: D) {
        let var = V::new(k, init);
        self.vars.borrow_mut()[v as usize] = Some(var);
    }

    fn bool(&self, n: &Node) -> Expr<bool> {
        match self.expr(n) {
            D::B(c) => c,
            _ => unreachable!("a condition of another type"),
        }
    }

    fn store_results(&self) {
        let (out, row) = self.out.expect("a program stores outputs");
        for j in 0..self.results {
            out.set(row + j as u64, to_u64(self.var(j as u8).get()));
        }
    }

    fn block(&self, k: &KernelBuilder, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(k, s);
        }
    }

    fn stmt(&self, k: &KernelBuilder, s: &Stmt) {
        match s {
            Stmt::Let { var, init } => {
                let d = self.expr(init);
                self.declare(k, *var, d);
            }
            Stmt::Assign { var, value } => {
                let d = self.expr(value);
                self.var(*var).set(d);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.bool(cond);
                if otherwise.is_empty() {
                    k.if_(c, |k| self.block(k, then));
                } else {
                    k.if_else(c, |k| self.block(k, then), |k| self.block(k, otherwise));
                }
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let body = |k: &KernelBuilder, i: D| {
                    self.declare(k, *var, i);
                    self.block(k, body);
                };
                match (self.expr(start), self.expr(end)) {
                    (D::I32(s), D::I32(e)) => for_loop(k, s, e, *step, |k, i| body(k, D::I32(i))),
                    (D::U32(s), D::U32(e)) => for_loop(k, s, e, *step, |k, i| body(k, D::U32(i))),
                    (D::I64(s), D::I64(e)) => for_loop(k, s, e, *step, |k, i| body(k, D::I64(i))),
                    (D::U64(s), D::U64(e)) => for_loop(k, s, e, *step, |k, i| body(k, D::U64(i))),
                    _ => unreachable!("loop bounds of different or non-integer types"),
                }
            }
            Stmt::While {
                var,
                limit,
                cond,
                body,
            } => {
                let c = k.var(0u32);
                self.vars.borrow_mut()[*var as usize] = Some(V::U32(c));
                k.while_(
                    |_| c.get().lt(*limit).and(self.bool(cond)),
                    |k| {
                        c.set(c.get() + 1u32);
                        self.block(k, body);
                    },
                );
            }
            Stmt::Break => k.break_(),
            Stmt::Continue => k.continue_(),
            Stmt::Return => {
                self.store_results();
                k.ret();
            }
            Stmt::ReturnValue(value) => match self.expr(value) {
                D::B(x) => k.ret_value(x),
                D::I32(x) => k.ret_value(x),
                D::U32(x) => k.ret_value(x),
                D::I64(x) => k.ret_value(x),
                D::U64(x) => k.ret_value(x),
                D::F32(x) => k.ret_value(x),
                D::F64(x) => k.ret_value(x),
                _ => unreachable!("device functions return core types"),
            },
            Stmt::Emit { slot, value } => {
                let d = self.expr(value);
                let (out, row) = self.out.expect("a program stores outputs");
                out.set(row + (self.results + *slot as usize) as u64, to_u64(d));
            }
            Stmt::Call {
                var,
                func,
                args,
                decl,
            } => {
                let a: Vec<D> = args.iter().map(|n| self.expr(n)).collect();
                let r = self.funcs[*func as usize].call(&a);
                if *decl {
                    self.declare(k, *var, r);
                } else {
                    self.var(*var).set(r);
                }
            }
        }
    }
}

/// The batch kernel of `progs` for `threads` input vectors, and its output row width; it and
/// its device functions are built with FMA contraction on or off (`contract`).
pub fn kernel(
    name: &str,
    progs: &[Prog],
    threads: usize,
    contract: bool,
) -> Result<(BatchKernel, usize)> {
    let width = progs.iter().map(Prog::width).max().unwrap_or(0).max(1);
    let funcs: Vec<Vec<F>> = progs
        .iter()
        .enumerate()
        .map(|(j, p)| {
            p.funcs
                .iter()
                .enumerate()
                .map(|(n, f)| F::build(&format!("{name}_p{j}_f{n}"), f, contract))
                .collect()
        })
        .collect::<Result<_>>()?;
    let total = (progs.len() * threads) as u64;
    let lang = progs.first().map_or(Lang::Core, |p| p.lang);
    let stride = lang.inputs() as u64;
    let opts = PtxOptions::default().contract(contract);
    let k = Kernel::<(&[u64], &mut [u64])>::build_with(name, opts, |k, (inp, out)| {
        let i = k.grid1();
        k.if_(i.lt(total), |k| {
            let p = i / threads as u64;
            let base = (i % threads as u64) * stride;
            let inputs = load_inputs(|c| inp.at(base + c), lang);
            let row = i * width as u64;
            for (j, prog) in progs.iter().enumerate() {
                k.if_(p.eq(j as u64), |k| {
                    let pl = ProgLower {
                        inputs: &inputs,
                        vars: RefCell::new(vec![None; prog.vars.len()]),
                        funcs: &funcs[j],
                        out: Some((out, row)),
                        results: prog.results,
                    };
                    pl.block(k, &prog.body);
                    pl.store_results();
                });
            }
        });
    })?;
    Ok((k, width))
}

/// The builder suffix that stores a value of `ty` as a `u64`.
fn store_suffix(ty: Ty) -> &'static str {
    match ty {
        Ty::Bool | Ty::U32 => ".cast::<u64>()",
        Ty::I32 | Ty::F32 => ".bitcast::<u32>().cast::<u64>()",
        Ty::I64 | Ty::F64 => ".bitcast::<u64>()",
        Ty::U64 => "",
        Ty::U8 | Ty::U16 => ".cast::<u64>()",
        Ty::I8 | Ty::E4M3 | Ty::E5M2 => ".bitcast::<u8>().cast::<u64>()",
        Ty::I16 | Ty::F16 | Ty::BF16 => ".bitcast::<u16>().cast::<u64>()",
    }
}

/// Writes builder code for programs and device functions.
struct Printer<'a> {
    out: String,
    /// Variable types (for `k.var::<T>`).
    vars: &'a [Ty],
    results: usize,
    emits: &'a [Ty],
    funcs: &'a [Func],
}

impl Printer<'_> {
    fn line(&mut self, indent: usize, s: &str) {
        self.out.push_str(&"    ".repeat(indent));
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn store_results(&mut self, ind: usize) {
        for j in 0..self.results {
            let ty = self.vars[j];
            self.line(
                ind,
                &format!("out.set({j}u64, v{j}.get(){});", store_suffix(ty)),
            );
        }
    }

    fn block(&mut self, ind: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(ind, s);
        }
    }

    fn stmt(&mut self, ind: usize, s: &Stmt) {
        let r = lower::rust;
        match s {
            Stmt::Let { var, init } => {
                let ty = self.vars[*var as usize].name();
                self.line(ind, &format!("let v{var} = k.var::<{ty}>({});", r(init)));
            }
            Stmt::Assign { var, value } => self.line(ind, &format!("v{var}.set({});", r(value))),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                if otherwise.is_empty() {
                    self.line(ind, &format!("k.if_({}, |k| {{", r(cond)));
                    self.block(ind + 1, then);
                    self.line(ind, "});");
                } else {
                    self.line(ind, &format!("k.if_else({}, |k| {{", r(cond)));
                    self.block(ind + 1, then);
                    self.line(ind, "}, |k| {");
                    self.block(ind + 1, otherwise);
                    self.line(ind, "});");
                }
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let ty = self.vars[*var as usize];
                if *step == 1 {
                    self.line(
                        ind,
                        &format!("k.for_range({}, {}, |k, i| {{", r(start), r(end)),
                    );
                } else {
                    let step = Val::from_bits(ty, *step as u64).rust();
                    self.line(
                        ind,
                        &format!(
                            "k.for_step({}, {}, Expr::lit({step}), |k, i| {{",
                            r(start),
                            r(end)
                        ),
                    );
                }
                self.line(ind + 1, &format!("let v{var} = k.var::<{}>(i);", ty.name()));
                self.block(ind + 1, body);
                self.line(ind, "});");
            }
            Stmt::While {
                var,
                limit,
                cond,
                body,
            } => {
                self.line(ind, &format!("let v{var} = k.var(0u32);"));
                self.line(
                    ind,
                    &format!(
                        "k.while_(|_| v{var}.get().lt({limit}u32).and({}), |k| {{",
                        r(cond)
                    ),
                );
                self.line(ind + 1, &format!("v{var}.set(v{var}.get() + 1u32);"));
                self.block(ind + 1, body);
                self.line(ind, "});");
            }
            Stmt::Break => self.line(ind, "k.break_();"),
            Stmt::Continue => self.line(ind, "k.continue_();"),
            Stmt::Return => {
                self.store_results(ind);
                self.line(ind, "k.ret();");
            }
            Stmt::ReturnValue(value) => self.line(ind, &format!("k.ret_value({});", r(value))),
            Stmt::Emit { slot, value } => {
                let j = self.results + *slot as usize;
                let ty = self.emits[*slot as usize];
                self.line(
                    ind,
                    &format!("out.set({j}u64, {}{});", r(value), store_suffix(ty)),
                );
            }
            Stmt::Call {
                var,
                func,
                args,
                decl,
            } => {
                let a: Vec<String> = args.iter().map(r).collect();
                let call = format!("f{func}.call(({}))", a.join(", "));
                if *decl {
                    let ty = self.funcs[*func as usize].ret.name();
                    self.line(ind, &format!("let v{var} = k.var::<{ty}>({call});"));
                } else {
                    self.line(ind, &format!("v{var}.set({call});"));
                }
            }
        }
    }
}

/// The inputs a program reads (its functions' bodies read their parameters), sorted.
pub fn used_inputs(p: &Prog) -> Vec<(Ty, u8)> {
    let mut v = Vec::new();
    super::prog::walk(&p.body, &mut |s| {
        for e in s.exprs() {
            for n in e.subtrees() {
                if let Node::Input(t, s) = n {
                    v.push((*t, *s));
                }
            }
        }
    });
    v.sort_by_key(|(t, s)| (t.index(), *s));
    v.dedup();
    v
}

/// Rust builder code that rebuilds `p` as a one-thread kernel reading `inp[0..]` (the inputs
/// of [`used_inputs`], in order) and writing `out[0..width]`.
pub fn rust(p: &Prog) -> String {
    let mut pr = Printer {
        out: String::new(),
        vars: &[],
        results: 0,
        emits: &[],
        funcs: &p.funcs,
    };
    let mut called = Vec::new();
    super::prog::walk(&p.body, &mut |s| {
        if let Stmt::Call { func, .. } = s {
            called.push(*func);
        }
    });
    called.sort();
    called.dedup();
    for &n in &called {
        let f = &p.funcs[n as usize];
        pr.vars = &f.vars;
        let names: Vec<String> = TYS.iter().map(|t| format!("x_{}_0", t.name())).collect();
        pr.line(
            0,
            &format!(
                "let f{n} = DeviceFn::<{PARAMS}, {}>::build(\"f{n}\", |k, ({})| {{",
                f.ret.name(),
                names.join(", ")
            ),
        );
        pr.block(1, &f.body);
        pr.line(1, &lower::rust(&f.result));
        pr.line(
            0,
            &format!("}})?{};", if f.inline { "" } else { ".no_inline()" }),
        );
    }
    pr.vars = &p.vars;
    pr.results = p.results;
    pr.emits = &p.emits;
    pr.line(
        0,
        "let k = Kernel::<(&[u64], &mut [u64])>::build(\"repro\", |k, (inp, out)| {",
    );
    for (i, (t, slot)) in used_inputs(p).iter().enumerate() {
        let load = format!("inp.at({i}u64)");
        let conv = match t {
            Ty::Bool => format!("({load} & 1u64).ne(0u64)"),
            Ty::I32 => format!("{load}.cast::<u32>().bitcast::<i32>()"),
            Ty::U32 => format!("{load}.cast::<u32>()"),
            Ty::I64 => format!("{load}.bitcast::<i64>()"),
            Ty::U64 => load,
            Ty::F32 => format!("{load}.cast::<u32>().bitcast::<f32>()"),
            Ty::F64 => format!("{load}.bitcast::<f64>()"),
            Ty::I8 => format!("{load}.cast::<u8>().bitcast::<i8>()"),
            Ty::U8 => format!("{load}.cast::<u8>()"),
            Ty::I16 => format!("{load}.cast::<u16>().bitcast::<i16>()"),
            Ty::U16 => format!("{load}.cast::<u16>()"),
            Ty::F16 => format!("{load}.cast::<u16>().bitcast::<f16>()"),
            Ty::BF16 => format!("{load}.cast::<u16>().bitcast::<bf16>()"),
            Ty::E4M3 => format!("{load}.cast::<u8>().bitcast::<F8E4M3>()"),
            Ty::E5M2 => format!("{load}.cast::<u8>().bitcast::<F8E5M2>()"),
        };
        pr.line(1, &format!("let x_{}_{slot} = {conv};", t.name()));
    }
    pr.block(1, &p.body);
    pr.store_results(1);
    pr.line(0, "})?;");
    pr.out
}
