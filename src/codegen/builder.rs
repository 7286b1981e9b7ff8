//! The thread-local recording state behind `Expr` and the kernel builder.
//!
//! While a kernel (or device function) is being built, a `FnState` sits on this thread's stack;
//! expressions and statements append to it. `Expr` values are small `Copy` handles (a build tag
//! and a value index), so operator overloading needs no reference to the builder.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

use super::scalar::ScalarTy;
use super::srcloc::Loc;
pub(crate) use crate::error::BuildErrorKind as Kind;
use crate::error::{BuildError, Error};
use crate::ir::{ArrayDecl, FunctionIr, Op, Param, Stmt, ValueDef, ValueId, VarId};

static NEXT_TAG: AtomicU32 = AtomicU32::new(1);

/// The tag of an expression made outside any build (it can never be used).
pub(crate) const ORPHAN: u32 = 0;

/// A misuse found while recording: its kind, its message, and the location of the builder
/// call that made it (`None` outside any location guard).
pub(crate) type Misuse = (Kind, String, Option<Loc>);

/// Recording state of one function being built.
pub(crate) struct FnState {
    pub tag: u32,
    pub f: FunctionIr,
    /// Statement lists being filled; the last is the current one.
    blocks: Vec<Vec<Stmt>>,
    /// Scope ids, innermost last.
    scopes: Vec<u32>,
    scope_parent: Vec<u32>,
    value_scope: Vec<u32>,
    /// Whether each value may differ between threads of a block.
    pub varying: Vec<bool>,
    var_varying: Vec<bool>,
    var_scope: Vec<u32>,
    /// How many enclosing branches or loops are controlled by a thread-varying condition.
    divergent: u32,
    /// A `return` under divergent control has been recorded: later barriers are divergent.
    returned_divergent: bool,
    loop_depth: u32,
    /// The loop depth at each enclosing `while_` condition being recorded (a `break` or
    /// `continue` there, outside any loop of the condition's own, is refused as in Rust).
    while_cond_depths: Vec<u32>,
    pub errors: Vec<Misuse>,
    /// Whether this is a kernel (not a device function).
    pub kernel: bool,
    /// Whether float `a * b ± c` is recorded as one fused multiply-add (FMA contraction, see
    /// [`FnState::product`] and `expr::binary`): the kernel's or device function's
    /// `PtxOptions::contract`, set before its body is recorded. The decision is made here, at
    /// record time, and kept in the IR (as `MathFn::Fma`), not at lowering: the simulator runs
    /// the IR and not the PTX, so the GPU and the simulator see the same fused operations, and
    /// the compile caches, keyed by the IR, cannot mix the two settings.
    pub contract: bool,
    /// The source location statements are recorded with (see `srcloc.rs`).
    pub loc: Option<super::srcloc::Loc>,
    /// How many location guards are open (only the outermost sets `loc`).
    pub loc_depth: u32,
    /// Whether the outermost open location guard is a block-taking method's (`if_`, loops).
    pub loc_block: bool,
    /// The extents (ids of `i64` values) of each shaped view of the dynamic shared memory
    /// (`dynamic_shared2`/`3`), by the index its `DArray` holds.
    pub dyn_shapes: Vec<Vec<u32>>,
}

/// A declaration of extents `dims`, saturating its length (the shared-memory limit refuses
/// such a kernel when it is loaded).
fn decl(elem: ScalarTy, dims: &[u64]) -> ArrayDecl {
    ArrayDecl {
        elem,
        len: dims.iter().fold(1u64, |a, &d| a.saturating_mul(d)),
        dims: dims.to_vec(),
    }
}

impl FnState {
    fn new(name: &str, ret: Option<ScalarTy>, contract: bool) -> FnState {
        FnState {
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed),
            f: FunctionIr {
                name: name.to_string(),
                params: Vec::new(),
                ret,
                values: Vec::new(),
                vars: Vec::new(),
                shared: Vec::new(),
                locals: Vec::new(),
                uses_dynamic_shared: false,
                body: Vec::new(),
                callees: Vec::new(),
                inline: true,
                launch_bounds: None,
                grid_barrier: None,
                externs: Vec::new(),
                consts: Vec::new(),
                links: Vec::new(),
                lines: Default::default(),
            },
            blocks: vec![Vec::new()],
            scopes: vec![0],
            scope_parent: vec![0],
            value_scope: Vec::new(),
            varying: Vec::new(),
            var_varying: Vec::new(),
            var_scope: Vec::new(),
            divergent: 0,
            returned_divergent: false,
            loop_depth: 0,
            while_cond_depths: Vec::new(),
            errors: Vec::new(),
            kernel: false,
            contract,
            loc: None,
            loc_depth: 0,
            loc_block: false,
            dyn_shapes: Vec::new(),
        }
    }

    fn current_scope(&self) -> u32 {
        *self.scopes.last().unwrap_or(&0)
    }

    /// Whether value `id` of this build may be used here (it was not made inside an if or
    /// loop body that has ended).
    pub fn in_scope(&self, id: u32) -> bool {
        match self.value_scope.get(id as usize) {
            Some(&scope) => self.within(self.current_scope(), scope),
            None => false,
        }
    }

    /// Whether scope `inner` is `outer` or nested in it.
    fn within(&self, mut inner: u32, outer: u32) -> bool {
        loop {
            if inner == outer {
                return true;
            }
            if inner == 0 {
                return false;
            }
            inner = self.scope_parent[inner as usize];
        }
    }

    /// The operands of value `(tag, id)` if contraction is on and that value is a float
    /// product (`Binary(Mul, a, b)`) of this function that may be used here: what an add or
    /// subtract of it fuses with. `None` otherwise (the plain operation is recorded, which also
    /// reports a foreign or out-of-scope operand).
    pub fn product(&self, (tag, id): (u32, u32)) -> Option<(ValueId, ValueId)> {
        if !self.contract || tag != self.tag {
            return None;
        }
        let def = self.f.values.get(id as usize)?;
        let Op::Binary(crate::ir::BinOp::Mul, a, b) = def.op else {
            return None;
        };
        let visible = self.within(self.current_scope(), self.value_scope[id as usize]);
        (def.ty.is_float() && visible).then_some((a, b))
    }

    /// Records a misuse of kind `kind` at the current location (once per message).
    pub fn error(&mut self, kind: Kind, msg: String) {
        if !self.errors.iter().any(|(_, m, _)| *m == msg) {
            self.errors.push((kind, msg, self.loc));
        }
    }

    /// Checks that an operand may be used here; returns whether it varies across threads.
    fn use_value(&mut self, tag: u32, id: u32) -> bool {
        if tag != self.tag {
            self.error(Kind::ForeignValue, format!(
                "in `{}`: an expression from another kernel (or made outside any kernel build) is used; \
                 build each kernel's expressions inside its own closure",
                self.f.name
            ));
            return false;
        }
        let (scope, here) = (self.value_scope[id as usize], self.current_scope());
        if !self.within(here, scope) {
            self.error(
                Kind::OutOfScope,
                format!(
                    "in `{}`: a value computed inside an if/loop body is used after that body ends; \
                     declare a variable before it with `k.var(..)` and assign to it inside",
                    self.f.name
                ),
            );
        }
        self.varying[id as usize]
    }

    /// Checks operands used by a statement (not a value).
    pub fn check_use(&mut self, operands: &[(u32, u32)]) -> bool {
        let mut varying = false;
        for &(tag, id) in operands {
            varying |= self.use_value(tag, id);
        }
        varying
    }

    pub fn push_stmt(&mut self, s: Stmt) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(s);
            self.f.lines.stmts.push(self.loc);
        }
    }

    /// Records `op` as a new value of type `ty`, evaluated here. `operands` are (tag, id).
    pub fn value(
        &mut self,
        ty: ScalarTy,
        op: Op,
        operands: &[(u32, u32)],
        inherently_varying: bool,
    ) -> u32 {
        let mut varying = inherently_varying;
        for &(tag, id) in operands {
            varying |= self.use_value(tag, id);
        }
        if let Op::ReadVar(v) = op {
            varying |= self.var_varying[v.0 as usize];
            if !self.within(self.current_scope(), self.var_scope[v.0 as usize]) {
                self.error(
                    Kind::OutOfScope,
                    format!(
                        "in `{}`: a variable is read outside the block that declared it (after the if \
                         or loop body it was made in); declare it before that block",
                        self.f.name
                    ),
                );
            }
        }
        let id = self.f.values.len() as u32;
        self.f.values.push(ValueDef { ty, op });
        self.value_scope.push(self.current_scope());
        self.varying.push(varying);
        self.push_stmt(Stmt::Let(ValueId(id)));
        id
    }

    /// Declares a variable initialised to `init`.
    pub fn declare_var(&mut self, ty: ScalarTy, init: (u32, u32)) -> u32 {
        let varying = self.use_value(init.0, init.1) || self.divergent > 0;
        let v = self.f.vars.len() as u32;
        self.f.vars.push(ty);
        self.var_varying.push(varying);
        self.var_scope.push(self.current_scope());
        self.push_stmt(Stmt::DeclVar(VarId(v), ValueId(init.1)));
        v
    }

    /// Declares a loop counter (initialised by the loop itself).
    pub fn declare_loop_var(&mut self, ty: ScalarTy, varying: bool) -> u32 {
        let v = self.f.vars.len() as u32;
        self.f.vars.push(ty);
        self.var_varying.push(varying);
        self.var_scope.push(self.current_scope());
        v
    }

    pub fn assign(&mut self, tag: u32, var: u32, value: (u32, u32)) {
        if tag != self.tag {
            self.error(
                Kind::ForeignValue,
                format!(
                    "in `{}`: a variable of another kernel is assigned",
                    self.f.name
                ),
            );
            return;
        }
        let varying = self.use_value(value.0, value.1) || self.divergent > 0;
        self.var_varying[var as usize] |= varying;
        if !self.within(self.current_scope(), self.var_scope[var as usize]) {
            self.error(
                Kind::OutOfScope,
                format!(
                    "in `{}`: a variable is assigned outside the block that declared it",
                    self.f.name
                ),
            );
        }
        self.push_stmt(Stmt::Assign(VarId(var), ValueId(value.1)));
    }

    /// Starts a nested block (an if branch or loop body).
    pub fn open_block(&mut self, divergent: bool, is_loop: bool) {
        let id = self.scope_parent.len() as u32;
        self.scope_parent.push(self.current_scope());
        self.scopes.push(id);
        self.blocks.push(Vec::new());
        self.divergent += divergent as u32;
        self.loop_depth += is_loop as u32;
    }

    /// Ends the innermost block, returning its statements.
    pub fn close_block(&mut self, divergent: bool, is_loop: bool) -> Vec<Stmt> {
        self.scopes.pop();
        self.divergent -= divergent as u32;
        self.loop_depth -= is_loop as u32;
        self.blocks.pop().unwrap_or_default()
    }

    pub fn in_loop(&self) -> bool {
        self.loop_depth > 0
    }

    /// Starts recording a `while_` condition.
    pub fn enter_while_cond(&mut self) {
        self.while_cond_depths.push(self.loop_depth);
    }

    /// Ends recording a `while_` condition.
    pub fn leave_while_cond(&mut self) {
        self.while_cond_depths.pop();
    }

    /// Whether a `break`/`continue` here would leave a `while_` condition.
    pub fn in_while_cond(&self) -> bool {
        self.while_cond_depths.last() == Some(&self.loop_depth)
    }

    /// Whether code here may be reached by only some threads of a block.
    pub fn is_divergent(&self) -> bool {
        self.divergent > 0 || self.returned_divergent
    }

    pub fn note_return(&mut self) {
        if self.divergent > 0 {
            self.returned_divergent = true;
        }
    }

    pub fn add_param(&mut self, p: Param) -> u32 {
        self.f.params.push(p);
        (self.f.params.len() - 1) as u32
    }

    /// Declares a static shared array of extents `dims` (C order); returns its index.
    pub fn add_shared(&mut self, elem: ScalarTy, dims: &[u64]) -> u32 {
        self.f.shared.push(decl(elem, dims));
        (self.f.shared.len() - 1) as u32
    }

    /// Declares a per-thread local array of extents `dims` (C order); returns its index.
    pub fn add_local(&mut self, elem: ScalarTy, dims: &[u64]) -> u32 {
        self.f.locals.push(decl(elem, dims));
        (self.f.locals.len() - 1) as u32
    }

    /// Records the extents (`i64` values) of a shaped view of the dynamic shared memory;
    /// returns the index [`DArray`](super::array::DArray) keeps to find them.
    pub fn add_dyn_shape(&mut self, dims: Vec<u32>) -> u32 {
        self.dyn_shapes.push(dims);
        (self.dyn_shapes.len() - 1) as u32
    }

    /// Finishes the function: its IR, or the misuse errors found.
    pub fn finish(mut self) -> Result<FunctionIr, Vec<Misuse>> {
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        self.f.body = self.blocks.pop().unwrap_or_default();
        let late = super::divergence::divergent_barriers(&self.f, &self.varying);
        if !late.is_empty() {
            return Err(late
                .into_iter()
                .map(|what| {
                    let msg = format!(
                        "in `{}`: `{what}` is in a loop where only some threads of a block may reach it \
                         on a later iteration (a variable it depends on, or a `break`/`continue`/`return` \
                         before it, depends on the thread index); every thread of the block must reach \
                         each barrier, or the kernel hangs",
                        self.f.name
                    );
                    (Kind::DivergentBarrier, msg, None)
                })
                .collect());
        }
        Ok(self.f)
    }
}

thread_local! {
    static STACK: RefCell<Vec<FnState>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with the function being built on this thread, if any.
pub(crate) fn with_state<R>(f: impl FnOnce(&mut FnState) -> R) -> Option<R> {
    STACK.with(|s| s.borrow_mut().last_mut().map(f))
}

/// The current build's tag (`ORPHAN` outside any build).
pub(crate) fn current_tag() -> u32 {
    with_state(|s| s.tag).unwrap_or(ORPHAN)
}

/// Records a function: pushes a fresh state, runs `body`, pops it. Panics in `body` (from user
/// code) leave the stack balanced.
pub(crate) fn record<R>(
    name: &str,
    ret: Option<ScalarTy>,
    body: impl FnOnce() -> R,
) -> (R, Result<FunctionIr, Vec<Misuse>>) {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            if std::thread::panicking() {
                STACK.with(|s| s.borrow_mut().pop());
            }
        }
    }
    STACK.with(|s| {
        let mut stack = s.borrow_mut();
        // A function recorded inside another's build (a device function built in a kernel's
        // closure) takes its contraction setting; others start with the default (on).
        let contract = stack.last().map_or(true, |outer| outer.contract);
        stack.push(FnState::new(name, ret, contract));
    });
    let guard = Pop;
    let r = body();
    std::mem::forget(guard);
    let state = STACK.with(|s| s.borrow_mut().pop());
    let ir = match state {
        Some(st) => st.finish(),
        None => Err(vec![(
            Kind::Internal,
            "internal: the build state was lost".to_string(),
            None,
        )]),
    };
    (r, ir)
}

/// Runs `f` with FMA contraction off in the function being built (and restores the setting):
/// for formulas whose documented rounding is per operation, such as the complex numbers'.
pub(crate) fn without_contraction<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<bool>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(on) = self.0 {
                with_state(|s| s.contract = on);
            }
        }
    }
    let _restore = Restore(with_state(|s| std::mem::replace(&mut s.contract, false)));
    f()
}

/// The error of a build of `kernel` (a kernel or device function) that found `errors`; those
/// without a location (found once the whole function was recorded) get `fallback`, the
/// location of the build call.
pub(crate) fn build_error(kernel: &str, errors: Vec<Misuse>, fallback: Loc) -> Error {
    Error::Build {
        kernel: kernel.to_string(),
        errors: errors
            .into_iter()
            .map(|(kind, msg, at)| BuildError::new(kind, msg, at.unwrap_or(fallback)))
            .collect(),
    }
}
