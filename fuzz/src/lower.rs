//! Trees to kernels through cudajit's public builder, and trees to the Rust code that builds
//! them (for reproducers).
//!
//! A batch kernel has the signature `(&[u64], &mut [u64])`: thread `i` reads its inputs from
//! `inp[i * INPUTS ..]` (slot `s` of type `t` at `t * SLOTS + s`, the type's bits in the low
//! bits) and writes tree `j`'s result to `out[i * width + j]`, then each inexact node's value
//! (the probes, tree by tree, post-order) after the trees.

use cudajit::codegen::{select, Expr, Float, Int, Kernel, KernelBuilder, PtxOptions, Scalar, Var};

use cudajit::{bf16, f16, F8E4M3, F8E5M2};

use super::tree::{Bin, Cmp, Lang, Math, Node, Ty, Un, Val, SLOTS, TYS};

/// Inputs per thread (the core language's; [`Lang::inputs`] gives each language's).
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
    I8(Expr<i8>),
    U8(Expr<u8>),
    I16(Expr<i16>),
    U16(Expr<u16>),
    F16(Expr<f16>),
    BF16(Expr<bf16>),
    E4M3(Expr<F8E4M3>),
    E5M2(Expr<F8E5M2>),
}

macro_rules! each_int {
    ($d:expr, |$x:ident| $e:expr) => {
        match $d {
            D::I32($x) => D::I32($e),
            D::U32($x) => D::U32($e),
            D::I64($x) => D::I64($e),
            D::U64($x) => D::U64($e),
            D::I8($x) => D::I8($e),
            D::U8($x) => D::U8($e),
            D::I16($x) => D::I16($e),
            D::U16($x) => D::U16($e),
            _ => unreachable!("integer operation on another type"),
        }
    };
}

macro_rules! each_float {
    ($d:expr, |$x:ident| $e:expr) => {
        match $d {
            D::F32($x) => D::F32($e),
            D::F64($x) => D::F64($e),
            D::F16($x) => D::F16($e),
            D::BF16($x) => D::BF16($e),
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
            D::I8($x) => $e,
            D::U8($x) => $e,
            D::I16($x) => $e,
            D::U16($x) => $e,
            D::F16($x) => $e,
            D::BF16($x) => $e,
            D::E4M3($x) => $e,
            D::E5M2($x) => $e,
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
    I8(Var<i8>),
    U8(Var<u8>),
    I16(Var<i16>),
    U16(Var<u16>),
    F16(Var<f16>),
    BF16(Var<bf16>),
    E4M3(Var<F8E4M3>),
    E5M2(Var<F8E5M2>),
}

/// `$m!(Variant, type)` for every type but bool.
macro_rules! each_ty {
    ($m:ident) => {
        $m!(I32, i32);
        $m!(U32, u32);
        $m!(I64, i64);
        $m!(U64, u64);
        $m!(F32, f32);
        $m!(F64, f64);
        $m!(I8, i8);
        $m!(U8, u8);
        $m!(I16, i16);
        $m!(U16, u16);
        $m!(F16, f16);
        $m!(BF16, bf16);
        $m!(E4M3, F8E4M3);
        $m!(E5M2, F8E5M2);
    };
}

impl V {
    /// `k.var(init)`: a new variable of `init`'s type.
    pub fn new(k: &KernelBuilder, init: D) -> V {
        macro_rules! arm {
            ($v:ident, $t:ty) => {
                if let D::$v(x) = init {
                    return V::$v(k.var(x));
                }
            };
        }
        each_ty!(arm);
        match init {
            D::B(x) => V::B(k.var(x)),
            _ => unreachable!(),
        }
    }
    /// `v.get()`.
    pub fn get(self) -> D {
        macro_rules! arm {
            ($v:ident, $t:ty) => {
                if let V::$v(x) = self {
                    return D::$v(x.get());
                }
            };
        }
        each_ty!(arm);
        match self {
            V::B(v) => D::B(v.get()),
            _ => unreachable!(),
        }
    }
    /// `v.set(d)` (`d` of the variable's type).
    pub fn set(self, d: D) {
        macro_rules! arm {
            ($v:ident, $t:ty) => {
                if let (V::$v(v), D::$v(x)) = (self, d) {
                    return v.set(x);
                }
            };
        }
        each_ty!(arm);
        match (self, d) {
            (V::B(v), D::B(x)) => v.set(x),
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
        Val::I8(x) => D::I8(Expr::lit(x)),
        Val::U8(x) => D::U8(Expr::lit(x)),
        Val::I16(x) => D::I16(Expr::lit(x)),
        Val::U16(x) => D::U16(Expr::lit(x)),
        Val::F16(x) => D::F16(Expr::lit(x)),
        Val::BF16(x) => D::BF16(Expr::lit(x)),
        Val::E4M3(x) => D::E4M3(Expr::lit(x)),
        Val::E5M2(x) => D::E5M2(Expr::lit(x)),
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
        Ty::I8 => D::I8(raw.cast::<u8>().bitcast()),
        Ty::U8 => D::U8(raw.cast()),
        Ty::I16 => D::I16(raw.cast::<u16>().bitcast()),
        Ty::U16 => D::U16(raw.cast()),
        Ty::F16 => D::F16(raw.cast::<u16>().bitcast()),
        Ty::BF16 => D::BF16(raw.cast::<u16>().bitcast()),
        Ty::E4M3 => D::E4M3(raw.cast::<u8>().bitcast()),
        Ty::E5M2 => D::E5M2(raw.cast::<u8>().bitcast()),
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
        D::I8(x) => x.bitcast::<u8>().cast(),
        D::U8(x) => x.cast(),
        D::I16(x) => x.bitcast::<u16>().cast(),
        D::U16(x) => x.cast(),
        D::F16(x) => x.bitcast::<u16>().cast(),
        D::BF16(x) => x.bitcast::<u16>().cast(),
        D::E4M3(x) => x.bitcast::<u8>().cast(),
        D::E5M2(x) => x.bitcast::<u8>().cast(),
    }
}

fn cast_to<T: Scalar>(x: Expr<T>, to: Ty) -> D {
    macro_rules! arm {
        ($v:ident, $t:ty) => {
            if to == Ty::$v {
                return D::$v(x.cast());
            }
        };
    }
    each_ty!(arm);
    unreachable!("casts to bool are not Rust")
}

fn bitcast_to<T: Scalar>(x: Expr<T>, to: Ty) -> D {
    macro_rules! arm {
        ($v:ident, $t:ty) => {
            if to == Ty::$v {
                return D::$v(x.bitcast());
            }
        };
    }
    each_ty!(arm);
    unreachable!("bitcasts to bool are not allowed")
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
                    D::I8(x) => D::I8(-x),
                    D::I16(x) => D::I16(-x),
                    D::F16(x) => D::F16(-x),
                    D::BF16(x) => D::BF16(-x),
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
                    D::F16(x) => D::B(x.is_nan()),
                    D::BF16(x) => D::B(x.is_nan()),
                    _ => unreachable!(),
                },
                Un::IsInf => match k[0] {
                    D::F32(x) => D::B(x.is_infinite()),
                    D::F64(x) => D::B(x.is_infinite()),
                    D::F16(x) => D::B(x.is_infinite()),
                    D::BF16(x) => D::B(x.is_infinite()),
                    _ => unreachable!(),
                },
                Un::Popc | Un::Clz | Un::Ffs => match k[0] {
                    D::I32(x) => D::U32(int_u32(x, *op)),
                    D::U32(x) => D::U32(int_u32(x, *op)),
                    D::I64(x) => D::U32(int_u32(x, *op)),
                    D::U64(x) => D::U32(int_u32(x, *op)),
                    D::I8(x) => D::U32(int_u32(x, *op)),
                    D::U8(x) => D::U32(int_u32(x, *op)),
                    D::I16(x) => D::U32(int_u32(x, *op)),
                    D::U16(x) => D::U32(int_u32(x, *op)),
                    _ => unreachable!(),
                },
                Un::Brev => each_int!(k[0], |x| x.brev()),
                Un::Math(m) => each_float!(k[0], |x| math(x, *m)),
            },
            Node::Bin(op, _, _) => {
                let (a, b) = (k[0], k[1]);
                match op {
                    Bin::Add => pair!(
                        a,
                        b,
                        |x, y| x + y,
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Sub => pair!(
                        a,
                        b,
                        |x, y| x - y,
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Mul => pair!(
                        a,
                        b,
                        |x, y| x * y,
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Div => pair!(
                        a,
                        b,
                        |x, y| x / y,
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Rem => pair!(
                        a,
                        b,
                        |x, y| x % y,
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Min => pair!(
                        a,
                        b,
                        |x, y| x.min(y),
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::Max => pair!(
                        a,
                        b,
                        |x, y| x.max(y),
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16
                    ),
                    Bin::And => pair!(a, b, |x, y| x & y, I32, U32, I64, U64, I8, U8, I16, U16),
                    Bin::Or => pair!(a, b, |x, y| x | y, I32, U32, I64, U64, I8, U8, I16, U16),
                    Bin::Xor => pair!(a, b, |x, y| x ^ y, I32, U32, I64, U64, I8, U8, I16, U16),
                    Bin::Shl => pair!(a, b, |x, y| x << y, I32, U32, I64, U64, I8, U8, I16, U16),
                    Bin::Shr => pair!(a, b, |x, y| x >> y, I32, U32, I64, U64, I8, U8, I16, U16),
                    Bin::Copysign => pair!(a, b, |x, y| x.copysign(y), F32, F64, F16, BF16),
                    Bin::Powf => pair!(a, b, |x, y| x.powf(y), F32, F64, F16, BF16),
                    Bin::Atan2 => pair!(a, b, |x, y| x.atan2(y), F32, F64, F16, BF16),
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
                (D::I8(x), D::I8(y)) => compare(*op, x, y),
                (D::U8(x), D::U8(y)) => compare(*op, x, y),
                (D::I16(x), D::I16(y)) => compare(*op, x, y),
                (D::U16(x), D::U16(y)) => compare(*op, x, y),
                (D::F16(x), D::F16(y)) => compare(*op, x, y),
                (D::BF16(x), D::BF16(y)) => compare(*op, x, y),
                (D::E4M3(x), D::E4M3(y)) => compare(*op, x, y),
                (D::E5M2(x), D::E5M2(y)) => compare(*op, x, y),
                _ => unreachable!("comparison of different types"),
            }),
            Node::Select(..) => {
                let D::B(c) = k[0] else {
                    unreachable!("select on a non-bool")
                };
                match (k[1], k[2]) {
                    (D::B(x), D::B(y)) => D::B(select(c, x, y)),
                    (a, b) => pair!(
                        a,
                        b,
                        |x, y| select(c, x, y),
                        I32,
                        U32,
                        I64,
                        U64,
                        F32,
                        F64,
                        I8,
                        U8,
                        I16,
                        U16,
                        F16,
                        BF16,
                        E4M3,
                        E5M2
                    ),
                }
            }
            Node::MulAdd(..) => match (k[0], k[1], k[2]) {
                (D::F32(a), D::F32(b), D::F32(c)) => D::F32(a.mul_add(b, c)),
                (D::F64(a), D::F64(b), D::F64(c)) => D::F64(a.mul_add(b, c)),
                (D::F16(a), D::F16(b), D::F16(c)) => D::F16(a.mul_add(b, c)),
                (D::BF16(a), D::BF16(b), D::BF16(c)) => D::BF16(a.mul_add(b, c)),
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
    kernel_with(
        name,
        trees,
        Mode {
            contract,
            fastmath: false,
            lang: Lang::Core,
        },
    )
}

/// How a batch kernel is built: its options and its input layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// FMA contraction (`PtxOptions::contract`).
    pub contract: bool,
    /// `PtxOptions::fastmath`.
    pub fastmath: bool,
    /// The language (the input layout: [`Lang::inputs`] words per thread).
    pub lang: Lang,
}

impl Mode {
    /// Its `PtxOptions`.
    pub fn options(self) -> PtxOptions {
        PtxOptions::default()
            .contract(self.contract)
            .fastmath(self.fastmath)
    }
}

/// A thread's inputs: `word(c)` for each slot `c` of `lang`'s layout (the types `lang` leaves
/// out are not loaded; nothing reads them).
pub fn load_inputs(word: impl Fn(u64) -> Expr<u64>, lang: Lang) -> Vec<D> {
    let n = SLOTS * lang.tys().len();
    (0..n)
        .map(|c| from_u64(word(c as u64), lang.input_ty(c)))
        .collect()
}

/// [`kernel`] in any [`Mode`].
pub fn kernel_with(
    name: &str,
    trees: &[Node],
    mode: Mode,
) -> cudajit::Result<(BatchKernel, usize)> {
    let width = trees.len() + trees.iter().map(probes).sum::<usize>();
    let stride = mode.lang.inputs() as u64;
    let k = Kernel::<(&[u64], &mut [u64])>::build_with(name, mode.options(), |k, (inp, out)| {
        let i = k.grid1();
        k.if_(i.lt(inp.len() / stride), |_| {
            let base = i * stride;
            let inputs = load_inputs(|c| inp.at(base + c), mode.lang);
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
