//! Trees to kernels through cudajit's public builder, and trees to the Rust code that builds
//! them (for reproducers).
//!
//! A batch kernel has the signature `(&[u64], &mut [u64])`: thread `i` reads its inputs from
//! `inp[i * INPUTS ..]` (slot `s` of type `t` at `t * SLOTS + s`, the type's bits in the low
//! bits) and writes tree `j`'s result to `out[i * width + j]`, then each inexact node's value
//! (the probes, tree by tree, post-order) after the trees.

use cudajit::codegen::{select, Expr, Float, Int, Kernel, KernelBuilder, PtxOptions, Scalar, Var};

use super::tree::{Bin, Cmp, Math, Node, Ty, Un, Val, SLOTS, TYS};

/// Inputs per thread.
pub const INPUTS: usize = SLOTS * TYS.len();

/// A builder expression of any of the types.
#[derive(Clone, Copy)]
pub enum D {
    B(Expr<bool>),
    I32(Expr<i32>),
    U32(Expr<u32>),
    I64(Expr<i64>),
    U64(Expr<u64>),
    F32(Expr<f32>),
    F64(Expr<f64>),
}

macro_rules! each_int {
    ($d:expr, |$x:ident| $e:expr) => {
        match $d {
            D::I32($x) => D::I32($e),
            D::U32($x) => D::U32($e),
            D::I64($x) => D::I64($e),
            D::U64($x) => D::U64($e),
            _ => unreachable!("integer operation on another type"),
        }
    };
}

macro_rules! each_float {
    ($d:expr, |$x:ident| $e:expr) => {
        match $d {
            D::F32($x) => D::F32($e),
            D::F64($x) => D::F64($e),
            _ => unreachable!("float operation on another type"),
        }
    };
}

/// Applies `$e` (which yields a `D`) to any variant's expression.
macro_rules! each_any {
    ($d:expr, |$x:ident| $e:expr) => {
        match $d {
            D::B($x) => $e,
            D::I32($x) => $e,
            D::U32($x) => $e,
            D::I64($x) => $e,
            D::U64($x) => $e,
            D::F32($x) => $e,
            D::F64($x) => $e,
        }
    };
}

macro_rules! pair {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr, $($v:ident),*) => {
        match ($a, $b) {
            $((D::$v($x), D::$v($y)) => D::$v($e),)*
            _ => unreachable!("operands of different types"),
        }
    };
}

/// A builder variable of any of the types.
#[derive(Clone, Copy)]
pub enum V {
    B(Var<bool>),
    I32(Var<i32>),
    U32(Var<u32>),
    I64(Var<i64>),
    U64(Var<u64>),
    F32(Var<f32>),
    F64(Var<f64>),
}

impl V {
    /// `k.var(init)`: a new variable of `init`'s type.
    pub fn new(k: &KernelBuilder, init: D) -> V {
        match init {
            D::B(x) => V::B(k.var(x)),
            D::I32(x) => V::I32(k.var(x)),
            D::U32(x) => V::U32(k.var(x)),
            D::I64(x) => V::I64(k.var(x)),
            D::U64(x) => V::U64(k.var(x)),
            D::F32(x) => V::F32(k.var(x)),
            D::F64(x) => V::F64(k.var(x)),
        }
    }
    /// `v.get()`.
    pub fn get(self) -> D {
        match self {
            V::B(v) => D::B(v.get()),
            V::I32(v) => D::I32(v.get()),
            V::U32(v) => D::U32(v.get()),
            V::I64(v) => D::I64(v.get()),
            V::U64(v) => D::U64(v.get()),
            V::F32(v) => D::F32(v.get()),
            V::F64(v) => D::F64(v.get()),
        }
    }
    /// `v.set(d)` (`d` of the variable's type).
    pub fn set(self, d: D) {
        match (self, d) {
            (V::B(v), D::B(x)) => v.set(x),
            (V::I32(v), D::I32(x)) => v.set(x),
            (V::U32(v), D::U32(x)) => v.set(x),
            (V::I64(v), D::I64(x)) => v.set(x),
            (V::U64(v), D::U64(x)) => v.set(x),
            (V::F32(v), D::F32(x)) => v.set(x),
            (V::F64(v), D::F64(x)) => v.set(x),
            _ => unreachable!("assignment of another type"),
        }
    }
}

/// The literal `v`.
pub fn lit(v: Val) -> D {
    match v {
        Val::Bool(x) => D::B(Expr::lit(x)),
        Val::I32(x) => D::I32(Expr::lit(x)),
        Val::U32(x) => D::U32(Expr::lit(x)),
        Val::I64(x) => D::I64(Expr::lit(x)),
        Val::U64(x) => D::U64(Expr::lit(x)),
        Val::F32(x) => D::F32(Expr::lit(x)),
        Val::F64(x) => D::F64(Expr::lit(x)),
    }
}

/// The value of type `ty` held in the low bits of `raw`.
pub fn from_u64(raw: Expr<u64>, ty: Ty) -> D {
    match ty {
        Ty::Bool => D::B((raw & 1u64).ne(0u64)),
        Ty::I32 => D::I32(raw.cast::<u32>().bitcast()),
        Ty::U32 => D::U32(raw.cast()),
        Ty::I64 => D::I64(raw.bitcast()),
        Ty::U64 => D::U64(raw),
        Ty::F32 => D::F32(raw.cast::<u32>().bitcast()),
        Ty::F64 => D::F64(raw.bitcast()),
    }
}

/// The bits of `d`, zero-extended to 64.
pub fn to_u64(d: D) -> Expr<u64> {
    match d {
        D::B(x) => x.cast(),
        D::I32(x) => x.bitcast::<u32>().cast(),
        D::U32(x) => x.cast(),
        D::I64(x) => x.bitcast(),
        D::U64(x) => x,
        D::F32(x) => x.bitcast::<u32>().cast(),
        D::F64(x) => x.bitcast(),
    }
}

fn cast_to<T: Scalar>(x: Expr<T>, to: Ty) -> D {
    match to {
        Ty::Bool => unreachable!("casts to bool are not Rust"),
        Ty::I32 => D::I32(x.cast()),
        Ty::U32 => D::U32(x.cast()),
        Ty::I64 => D::I64(x.cast()),
        Ty::U64 => D::U64(x.cast()),
        Ty::F32 => D::F32(x.cast()),
        Ty::F64 => D::F64(x.cast()),
    }
}

fn bitcast_to<T: Scalar>(x: Expr<T>, to: Ty) -> D {
    match to {
        Ty::Bool => unreachable!("bitcasts to bool are not allowed"),
        Ty::I32 => D::I32(x.bitcast()),
        Ty::U32 => D::U32(x.bitcast()),
        Ty::I64 => D::I64(x.bitcast()),
        Ty::U64 => D::U64(x.bitcast()),
        Ty::F32 => D::F32(x.bitcast()),
        Ty::F64 => D::F64(x.bitcast()),
    }
}

fn math<T: Float>(x: Expr<T>, m: Math) -> Expr<T> {
    match m {
        Math::Rsqrt => x.rsqrt(),
        Math::Cbrt => x.cbrt(),
        Math::Exp => x.exp(),
        Math::Exp2 => x.exp2(),
        Math::ExpM1 => x.exp_m1(),
        Math::Ln => x.ln(),
        Math::Log2 => x.log2(),
        Math::Log10 => x.log10(),
        Math::Ln1p => x.ln_1p(),
        Math::Sin => x.sin(),
        Math::Cos => x.cos(),
        Math::Tan => x.tan(),
        Math::Asin => x.asin(),
        Math::Acos => x.acos(),
        Math::Atan => x.atan(),
        Math::Sinh => x.sinh(),
        Math::Cosh => x.cosh(),
        Math::Tanh => x.tanh(),
        Math::Erf => x.erf(),
    }
}

fn int_u32<T: Int>(x: Expr<T>, op: Un) -> Expr<u32> {
    match op {
        Un::Popc => x.popc(),
        Un::Clz => x.clz(),
        Un::Ffs => x.ffs(),
        _ => unreachable!("{op:?} is not a bit count"),
    }
}

fn compare<T: Scalar>(op: Cmp, a: Expr<T>, b: Expr<T>) -> Expr<bool> {
    match op {
        Cmp::Eq => a.eq(b),
        Cmp::Ne => a.ne(b),
        Cmp::Lt => a.lt(b),
        Cmp::Le => a.le(b),
        Cmp::Gt => a.gt(b),
        Cmp::Ge => a.ge(b),
    }
}

/// Lowers trees inside a kernel body: `inputs` are the thread's loaded inputs; every inexact
/// node's value is passed to `probe` as it is made (post-order); `vars` are a program's
/// variables by number (`None`: not declared here), read with `get()` where a tree reads one.
pub struct Lower<'a> {
    pub inputs: &'a [D],
    pub probe: &'a mut dyn FnMut(D),
    pub vars: &'a [Option<V>],
}

impl Lower<'_> {
    pub fn node(&mut self, n: &Node) -> D {
        let k: Vec<D> = n.children().into_iter().map(|c| self.node(c)).collect();
        let d = match n {
            Node::Input(t, s) => self.inputs[t.index() * SLOTS + *s as usize],
            Node::Var(_, v) => self.vars[*v as usize]
                .expect("a variable is read outside its scope")
                .get(),
            Node::Lit(v) => lit(*v),
            Node::Un(op, _) => match op {
                Un::Neg => match k[0] {
                    D::I32(x) => D::I32(-x),
                    D::I64(x) => D::I64(-x),
                    D::F32(x) => D::F32(-x),
                    D::F64(x) => D::F64(-x),
                    _ => unreachable!("neg of an unsigned type"),
                },
                Un::Not => match k[0] {
                    D::B(x) => D::B(!x),
                    d => each_int!(d, |x| !x),
                },
                Un::Abs => each_float!(k[0], |x| x.abs()),
                Un::Floor => each_float!(k[0], |x| x.floor()),
                Un::Ceil => each_float!(k[0], |x| x.ceil()),
                Un::Trunc => each_float!(k[0], |x| x.trunc()),
                Un::Round => each_float!(k[0], |x| x.round()),
                Un::Sqrt => each_float!(k[0], |x| x.sqrt()),
                Un::IsNan => match k[0] {
                    D::F32(x) => D::B(x.is_nan()),
                    D::F64(x) => D::B(x.is_nan()),
                    _ => unreachable!(),
                },
                Un::IsInf => match k[0] {
                    D::F32(x) => D::B(x.is_infinite()),
                    D::F64(x) => D::B(x.is_infinite()),
                    _ => unreachable!(),
                },
                Un::Popc | Un::Clz | Un::Ffs => match k[0] {
                    D::I32(x) => D::U32(int_u32(x, *op)),
                    D::U32(x) => D::U32(int_u32(x, *op)),
                    D::I64(x) => D::U32(int_u32(x, *op)),
                    D::U64(x) => D::U32(int_u32(x, *op)),
                    _ => unreachable!(),
                },
                Un::Brev => each_int!(k[0], |x| x.brev()),
                Un::Math(m) => each_float!(k[0], |x| math(x, *m)),
            },
            Node::Bin(op, _, _) => {
                let (a, b) = (k[0], k[1]);
                match op {
                    Bin::Add => pair!(a, b, |x, y| x + y, I32, U32, I64, U64, F32, F64),
                    Bin::Sub => pair!(a, b, |x, y| x - y, I32, U32, I64, U64, F32, F64),
                    Bin::Mul => pair!(a, b, |x, y| x * y, I32, U32, I64, U64, F32, F64),
                    Bin::Div => pair!(a, b, |x, y| x / y, I32, U32, I64, U64, F32, F64),
                    Bin::Rem => pair!(a, b, |x, y| x % y, I32, U32, I64, U64, F32, F64),
                    Bin::Min => pair!(a, b, |x, y| x.min(y), I32, U32, I64, U64, F32, F64),
                    Bin::Max => pair!(a, b, |x, y| x.max(y), I32, U32, I64, U64, F32, F64),
                    Bin::And => pair!(a, b, |x, y| x & y, I32, U32, I64, U64),
                    Bin::Or => pair!(a, b, |x, y| x | y, I32, U32, I64, U64),
                    Bin::Xor => pair!(a, b, |x, y| x ^ y, I32, U32, I64, U64),
                    Bin::Shl => pair!(a, b, |x, y| x << y, I32, U32, I64, U64),
                    Bin::Shr => pair!(a, b, |x, y| x >> y, I32, U32, I64, U64),
                    Bin::Copysign => pair!(a, b, |x, y| x.copysign(y), F32, F64),
                    Bin::Powf => pair!(a, b, |x, y| x.powf(y), F32, F64),
                    Bin::Atan2 => pair!(a, b, |x, y| x.atan2(y), F32, F64),
                    Bin::LAnd => pair!(a, b, |x, y| x.and(y), B),
                    Bin::LOr => pair!(a, b, |x, y| x.or(y), B),
                }
            }
            Node::Cmp(op, _, _) => D::B(match (k[0], k[1]) {
                (D::B(x), D::B(y)) => compare(*op, x, y),
                (D::I32(x), D::I32(y)) => compare(*op, x, y),
                (D::U32(x), D::U32(y)) => compare(*op, x, y),
                (D::I64(x), D::I64(y)) => compare(*op, x, y),
                (D::U64(x), D::U64(y)) => compare(*op, x, y),
                (D::F32(x), D::F32(y)) => compare(*op, x, y),
                (D::F64(x), D::F64(y)) => compare(*op, x, y),
                _ => unreachable!("comparison of different types"),
            }),
            Node::Select(..) => {
                let D::B(c) = k[0] else {
                    unreachable!("select on a non-bool")
                };
                match (k[1], k[2]) {
                    (D::B(x), D::B(y)) => D::B(select(c, x, y)),
                    (a, b) => pair!(a, b, |x, y| select(c, x, y), I32, U32, I64, U64, F32, F64),
                }
            }
            Node::MulAdd(..) => match (k[0], k[1], k[2]) {
                (D::F32(a), D::F32(b), D::F32(c)) => D::F32(a.mul_add(b, c)),
                (D::F64(a), D::F64(b), D::F64(c)) => D::F64(a.mul_add(b, c)),
                _ => unreachable!("mul_add of non-floats"),
            },
            Node::Cast(t, _) => each_any!(k[0], |x| cast_to(x, *t)),
            Node::Bitcast(t, _) => each_any!(k[0], |x| bitcast_to(x, *t)),
        };
        if n.is_inexact() {
            (self.probe)(d);
        }
        d
    }
}

/// Number of inexact nodes (probes) of a tree.
pub fn probes(n: &Node) -> usize {
    n.subtrees().iter().filter(|s| s.is_inexact()).count()
}

/// A batch kernel: inputs in, results and probes out.
pub type BatchKernel = Kernel<(&'static [u64], &'static mut [u64])>;

/// The batch kernel of `trees`, built with FMA contraction on or off (`contract`): its output
/// row width is `trees.len() + total probes`.
pub fn kernel(name: &str, trees: &[Node], contract: bool) -> cudajit::Result<(BatchKernel, usize)> {
    let width = trees.len() + trees.iter().map(probes).sum::<usize>();
    let opts = PtxOptions::default().contract(contract);
    let k = Kernel::<(&[u64], &mut [u64])>::build_with(name, opts, |k, (inp, out)| {
        let i = k.grid1();
        k.if_(i.lt(inp.len() / INPUTS as u64), |_| {
            let base = i * INPUTS as u64;
            let inputs: Vec<D> = (0..INPUTS)
                .map(|c| from_u64(inp.at(base + c as u64), TYS[c / SLOTS]))
                .collect();
            let row = i * width as u64;
            let mut next_probe = trees.len() as u64;
            let mut store_probe = |d: D| {
                out.set(row + next_probe, to_u64(d));
                next_probe += 1;
            };
            let mut lower = Lower {
                inputs: &inputs,
                probe: &mut store_probe,
                vars: &[],
            };
            let results: Vec<D> = trees.iter().map(|t| lower.node(t)).collect();
            for (j, r) in results.into_iter().enumerate() {
                out.set(row + j as u64, to_u64(r));
            }
        });
    })?;
    Ok((k, width))
}

/// The Rust builder expression of a tree; inputs are named `x_<type>_<slot>`.
pub fn rust(n: &Node) -> String {
    let k: Vec<String> = n.children().into_iter().map(rust).collect();
    match n {
        Node::Input(t, s) => format!("x_{}_{s}", t.name()),
        Node::Var(_, v) => format!("v{v}.get()"),
        Node::Lit(v) => format!("Expr::lit({})", v.rust()),
        Node::Un(op, _) => match op {
            Un::Neg => format!("(-{})", k[0]),
            Un::Not => format!("(!{})", k[0]),
            Un::Abs => format!("{}.abs()", k[0]),
            Un::Floor => format!("{}.floor()", k[0]),
            Un::Ceil => format!("{}.ceil()", k[0]),
            Un::Trunc => format!("{}.trunc()", k[0]),
            Un::Round => format!("{}.round()", k[0]),
            Un::Sqrt => format!("{}.sqrt()", k[0]),
            Un::IsNan => format!("{}.is_nan()", k[0]),
            Un::IsInf => format!("{}.is_infinite()", k[0]),
            Un::Popc => format!("{}.popc()", k[0]),
            Un::Clz => format!("{}.clz()", k[0]),
            Un::Ffs => format!("{}.ffs()", k[0]),
            Un::Brev => format!("{}.brev()", k[0]),
            Un::Math(m) => format!("{}.{}()", k[0], m.name()),
        },
        Node::Bin(op, _, _) => {
            let infix = |o: &str| format!("({} {o} {})", k[0], k[1]);
            let method = |m: &str| format!("{}.{m}({})", k[0], k[1]);
            match op {
                Bin::Add => infix("+"),
                Bin::Sub => infix("-"),
                Bin::Mul => infix("*"),
                Bin::Div => infix("/"),
                Bin::Rem => infix("%"),
                Bin::And => infix("&"),
                Bin::Or => infix("|"),
                Bin::Xor => infix("^"),
                Bin::Shl => infix("<<"),
                Bin::Shr => infix(">>"),
                Bin::Min => method("min"),
                Bin::Max => method("max"),
                Bin::Copysign => method("copysign"),
                Bin::Powf => method("powf"),
                Bin::Atan2 => method("atan2"),
                Bin::LAnd => method("and"),
                Bin::LOr => method("or"),
            }
        }
        Node::Cmp(op, _, _) => format!("{}.{}({})", k[0], op.name(), k[1]),
        Node::Select(..) => format!("select({}, {}, {})", k[0], k[1], k[2]),
        Node::MulAdd(..) => format!("{}.mul_add({}, {})", k[0], k[1], k[2]),
        Node::Cast(t, _) => format!("{}.cast::<{}>()", k[0], t.name()),
        Node::Bitcast(t, _) => format!("{}.bitcast::<{}>()", k[0], t.name()),
    }
}
