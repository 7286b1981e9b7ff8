//! The host model: each tree evaluated in plain Rust with the semantics cudajit documents
//! (Rust's, plus `x / 0` = all ones, `x % 0` = x, minNum/maxNum for float min/max).
//!
//! Inexact math functions (`exp`, `sin`, `powf`, ...) are not computed here: the kernel also
//! stores each one's result (a "probe"), the model checks that value against std's within the
//! ulp bounds of docs/MATH.md, then goes on with the device's value, so that everything else is
//! compared bit for bit.
//!
//! FMA contraction: a kernel built with contraction on (`PtxOptions::contract`, the default)
//! records a float `a*b + c`, `c + a*b`, `a*b - c` and `c - a*b` whose product is a `Mul` node
//! as one fused multiply-add (docs/GUIDE.md's rule: the left operand's product first; `c - a*b`
//! as `fma(-a, b, c)`); [`Model::contract`] says which setting the kernel was built with, and
//! the model then computes those nodes with `mul_add`, rounded once.

use cudajit::{bf16, f16, F8E4M3, F8E5M2};

use super::tree::{Bin, Cmp, Math, Node, Ty, Un, Val, SLOTS};

/// Evaluation state of one tree on one thread's inputs.
pub struct Model<'a> {
    /// Inputs, `[type index * SLOTS + slot]`.
    pub inputs: &'a [Val],
    /// The device's values of the tree's inexact nodes, in post-order.
    pub probes: &'a [Val],
    /// Values of a program's variables, by number (`None`: unset or NaN-bit-dependent).
    pub vars: &'a [Option<Val>],
    next_probe: usize,
    /// Math results outside their bounds.
    pub errors: Vec<String>,
    /// Whether the kernel was built with FMA contraction (see the module docs).
    pub contract: bool,
    /// Whether the kernel was built with fastmath: every value of f32, f16, bf16 or an 8-bit
    /// float is then open (docs/MATH.md: f32 arithmetic may assume no NaN or infinity, and
    /// flushes subnormals), and so is everything computed from one; f64 and integer code is
    /// compared as without fastmath.
    pub fastmath: bool,
}

impl<'a> Model<'a> {
    pub fn new(inputs: &'a [Val], probes: &'a [Val]) -> Model<'a> {
        Model {
            inputs,
            probes,
            vars: &[],
            next_probe: 0,
            errors: Vec::new(),
            contract: false,
            fastmath: false,
        }
    }

    /// The same model for a kernel built with fastmath on or off.
    pub fn fast(mut self, on: bool) -> Model<'a> {
        self.fastmath = on;
        self
    }

    /// Whether values of `ty` are open under this model's fastmath setting.
    fn fast_open(&self, ty: Ty) -> bool {
        self.fastmath && matches!(ty, Ty::F32 | Ty::F16 | Ty::BF16 | Ty::E4M3 | Ty::E5M2)
    }

    /// The same model for a kernel built with FMA contraction on or off.
    pub fn contracting(mut self, on: bool) -> Model<'a> {
        self.contract = on;
        self
    }

    /// A model of an exact tree that may read a program's variables (no probes).
    pub fn with_vars(inputs: &'a [Val], vars: &'a [Option<Val>]) -> Model<'a> {
        Model {
            vars,
            ..Model::new(inputs, &[])
        }
    }

    /// The tree's value; `None` where Rust leaves it open (the bits of a NaN: a bitcast of a
    /// NaN, or `copysign` with a NaN sign).
    pub fn eval(&mut self, n: &Node) -> Option<Val> {
        let v = self.eval_node(n);
        if self.fast_open(n.ty()) {
            return None;
        }
        v
    }

    fn eval_node(&mut self, n: &Node) -> Option<Val> {
        if let Some(v) = self.fused(n) {
            return v;
        }
        let kids: Vec<Option<Val>> = n.children().into_iter().map(|c| self.eval(c)).collect();
        if n.is_inexact() {
            let got = self.probes[self.next_probe];
            self.next_probe += 1;
            if kids.iter().all(Option::is_some) && !self.fast_open(n.ty()) {
                let args: Vec<Val> = kids.iter().flatten().copied().collect();
                if let Some(e) = check_math(n, &args, got) {
                    self.errors.push(e);
                }
            }
            return Some(got);
        }
        if let Node::Var(_, v) = n {
            return self.vars.get(*v as usize).copied().flatten();
        }
        if let Node::Select(..) = n {
            return match kids[0]? {
                Val::Bool(true) => kids[1],
                _ => kids[2],
            };
        }
        if kids.iter().any(Option::is_none) {
            return None;
        }
        let k: Vec<Val> = kids.into_iter().flatten().collect();
        match n {
            Node::Input(t, s) => Some(self.inputs[t.index() * SLOTS + *s as usize]),
            Node::Lit(v) => Some(*v),
            Node::Un(op, _) => un(*op, k[0]),
            Node::Bin(op, _, _) => bin(*op, k[0], k[1]),
            Node::Cmp(op, _, _) => Some(Val::Bool(cmp(*op, k[0], k[1]))),
            Node::MulAdd(..) => Some(match (k[0], k[1], k[2]) {
                (Val::F32(a), Val::F32(b), Val::F32(c)) => Val::F32(a.mul_add(b, c)),
                (Val::F64(a), Val::F64(b), Val::F64(c)) => Val::F64(a.mul_add(b, c)),
                (a, b, c) => half_fma(a, b, c, false, false),
            }),
            Node::Cast(t, _) => Some(cast(k[0], *t)),
            Node::Bitcast(t, _) => {
                if k[0].is_nan() {
                    None
                } else {
                    Some(Val::from_bits(*t, k[0].to_bits()))
                }
            }
            Node::Select(..) | Node::Var(..) => unreachable!(),
        }
    }
}

impl Model<'_> {
    /// `Some(value)` if `n` is a float add or subtract that the builder fuses with contraction
    /// on: `a*b ± c` (the left operand a product) or else `c ± a*b`. The children are evaluated
    /// in the order `eval` takes them (a product's operands, then the other side), so the
    /// probes, which only inexact nodes take, are met in the same post-order.
    fn fused(&mut self, n: &Node) -> Option<Option<Val>> {
        let Node::Bin(op @ (Bin::Add | Bin::Sub), l, r) = n else {
            return None;
        };
        let sub = *op == Bin::Sub;
        if !self.contract || !n.ty().is_float() {
            return None;
        }
        let (a, b, c, neg_a, neg_c) = match (&**l, &**r) {
            (Node::Bin(Bin::Mul, a, b), _) => {
                let (a, b) = (self.eval(a), self.eval(b));
                (a, b, self.eval(r), false, sub)
            }
            (_, Node::Bin(Bin::Mul, a, b)) => {
                let c = self.eval(l);
                let (a, b) = (self.eval(a), self.eval(b));
                (a, b, c, sub, false)
            }
            _ => return None,
        };
        let (Some(a), Some(b), Some(c)) = (a, b, c) else {
            return Some(None);
        };
        Some(Some(match (a, b, c) {
            (Val::F32(a), Val::F32(b), Val::F32(c)) => {
                let a = if neg_a { -a } else { a };
                Val::F32(a.mul_add(b, if neg_c { -c } else { c }))
            }
            (Val::F64(a), Val::F64(b), Val::F64(c)) => {
                let a = if neg_a { -a } else { a };
                Val::F64(a.mul_add(b, if neg_c { -c } else { c }))
            }
            (a, b, c) => half_fma(a, b, c, neg_a, neg_c),
        }))
    }
}

/// Applies `$e` to the integer payload, keeping the variant.
macro_rules! on_int {
    ($v:expr, |$x:ident| $e:expr) => {
        match $v {
            Val::I32($x) => Val::I32($e),
            Val::U32($x) => Val::U32($e),
            Val::I64($x) => Val::I64($e),
            Val::U64($x) => Val::U64($e),
            Val::I8($x) => Val::I8($e),
            Val::U8($x) => Val::U8($e),
            Val::I16($x) => Val::I16($e),
            Val::U16($x) => Val::U16($e),
            v => unreachable!("integer operation on {v:?}"),
        }
    };
}

/// Applies `$e` to the float payload, keeping the variant.
macro_rules! on_float {
    ($v:expr, |$x:ident| $e:expr) => {
        match $v {
            Val::F32($x) => Val::F32($e),
            Val::F64($x) => Val::F64($e),
            Val::F16(h) => {
                let $x = h.to_f32();
                Val::F16(f16::from_f32($e))
            }
            Val::BF16(h) => {
                let $x = h.to_f32();
                Val::BF16(bf16::from_f32($e))
            }
            v => unreachable!("float operation on {v:?}"),
        }
    };
}

/// The integer result of `$e` as u32.
macro_rules! int_to_u32 {
    ($v:expr, |$x:ident| $e:expr) => {
        match $v {
            Val::I32($x) => $e,
            Val::U32($x) => $e,
            Val::I64($x) => $e,
            Val::U64($x) => $e,
            Val::I8($x) => $e,
            Val::U8($x) => $e,
            Val::I16($x) => $e,
            Val::U16($x) => $e,
            v => unreachable!("integer operation on {v:?}"),
        }
    };
}

fn un(op: Un, a: Val) -> Option<Val> {
    Some(match op {
        Un::Neg => match a {
            Val::F32(x) => Val::F32(-x),
            Val::F64(x) => Val::F64(-x),
            Val::I32(x) => Val::I32(x.wrapping_neg()),
            Val::I64(x) => Val::I64(x.wrapping_neg()),
            Val::I8(x) => Val::I8(x.wrapping_neg()),
            Val::I16(x) => Val::I16(x.wrapping_neg()),
            Val::F16(x) => Val::F16(-x),
            Val::BF16(x) => Val::BF16(-x),
            v => unreachable!("neg on {v:?}"),
        },
        Un::Not => match a {
            Val::Bool(b) => Val::Bool(!b),
            v => on_int!(v, |x| !x),
        },
        Un::Abs => on_float!(a, |x| x.abs()),
        Un::Floor => on_float!(a, |x| x.floor()),
        Un::Ceil => on_float!(a, |x| x.ceil()),
        Un::Trunc => on_float!(a, |x| x.trunc()),
        Un::Round => on_float!(a, |x| x.round()),
        Un::Sqrt => on_float!(a, |x| x.sqrt()),
        Un::IsNan => Val::Bool(a.is_nan()),
        Un::IsInf => Val::Bool(match a {
            Val::F32(x) => x.is_infinite(),
            Val::F64(x) => x.is_infinite(),
            Val::F16(x) => x.is_infinite(),
            Val::BF16(x) => x.is_infinite(),
            v => unreachable!("is_infinite on {v:?}"),
        }),
        Un::Popc => Val::U32(int_to_u32!(a, |x| x.count_ones())),
        Un::Clz => Val::U32(int_to_u32!(a, |x| x.leading_zeros())),
        Un::Ffs => Val::U32(int_to_u32!(a, |x| if x == 0 {
            0
        } else {
            x.trailing_zeros() + 1
        })),
        Un::Brev => on_int!(a, |x| x.reverse_bits()),
        Un::Math(_) => unreachable!("inexact functions come from the probes"),
    })
}

/// minNum / maxNum: a NaN operand gives the other; -0 counts below +0.
fn fminmax<F: Copy + PartialOrd>(
    a: F,
    b: F,
    is_nan: fn(F) -> bool,
    neg: fn(F) -> bool,
    max: bool,
) -> F {
    if is_nan(a) {
        return b;
    }
    if is_nan(b) {
        return a;
    }
    let (lo, hi) = if a < b || (a == b && neg(a)) {
        (a, b)
    } else {
        (b, a)
    };
    if max {
        hi
    } else {
        lo
    }
}

fn bin(op: Bin, a: Val, b: Val) -> Option<Val> {
    use Val::*;
    macro_rules! each_int {
        (|$x:ident, $y:ident| $e:expr) => {
            match (a, b) {
                (I32($x), I32($y)) => I32($e),
                (U32($x), U32($y)) => U32($e),
                (I64($x), I64($y)) => I64($e),
                (U64($x), U64($y)) => U64($e),
                (I8($x), I8($y)) => I8($e),
                (U8($x), U8($y)) => U8($e),
                (I16($x), I16($y)) => I16($e),
                (U16($x), U16($y)) => U16($e),
                _ => unreachable!("{op:?} on {a:?}, {b:?}"),
            }
        };
    }
    macro_rules! each_float {
        (|$x:ident, $y:ident| $e:expr) => {
            match (a, b) {
                (F32($x), F32($y)) => F32($e),
                (F64($x), F64($y)) => F64($e),
                (F16(h), F16(g)) => {
                    let ($x, $y) = (h.to_f32(), g.to_f32());
                    F16(f16::from_f32($e))
                }
                (BF16(h), BF16(g)) => {
                    let ($x, $y) = (h.to_f32(), g.to_f32());
                    BF16(bf16::from_f32($e))
                }
                _ => unreachable!("{op:?} on {a:?}, {b:?}"),
            }
        };
    }
    let float = a.ty().is_float();
    Some(match op {
        Bin::LAnd | Bin::LOr => match (a, b) {
            (Bool(x), Bool(y)) => Bool(if op == Bin::LAnd { x && y } else { x || y }),
            _ => unreachable!("{op:?} on {a:?}, {b:?}"),
        },
        Bin::Add if float => each_float!(|x, y| x + y),
        Bin::Sub if float => each_float!(|x, y| x - y),
        Bin::Mul if float => each_float!(|x, y| x * y),
        Bin::Div if float => each_float!(|x, y| x / y),
        Bin::Rem if float => each_float!(|x, y| x % y),
        Bin::Min if float => match (a, b) {
            (F64(x), F64(y)) => F64(fminmax(x, y, f64::is_nan, f64::is_sign_negative, false)),
            _ => narrow(
                a,
                fminmax(f32v(a), f32v(b), f32::is_nan, f32::is_sign_negative, false),
            ),
        },
        Bin::Max if float => match (a, b) {
            (F64(x), F64(y)) => F64(fminmax(x, y, f64::is_nan, f64::is_sign_negative, true)),
            _ => narrow(
                a,
                fminmax(f32v(a), f32v(b), f32::is_nan, f32::is_sign_negative, true),
            ),
        },
        Bin::Copysign => {
            if b.is_nan() {
                return None;
            }
            each_float!(|x, y| x.copysign(y))
        }
        Bin::Add => each_int!(|x, y| x.wrapping_add(y)),
        Bin::Sub => each_int!(|x, y| x.wrapping_sub(y)),
        Bin::Mul => each_int!(|x, y| x.wrapping_mul(y)),
        Bin::Div => each_int!(|x, y| if y == 0 { !y } else { x.wrapping_div(y) }),
        Bin::Rem => each_int!(|x, y| if y == 0 { x } else { x.wrapping_rem(y) }),
        Bin::And => each_int!(|x, y| x & y),
        Bin::Or => each_int!(|x, y| x | y),
        Bin::Xor => each_int!(|x, y| x ^ y),
        Bin::Shl => each_int!(|x, y| x.wrapping_shl(y as u32)),
        Bin::Shr => each_int!(|x, y| x.wrapping_shr(y as u32)),
        Bin::Min => each_int!(|x, y| x.min(y)),
        Bin::Max => each_int!(|x, y| x.max(y)),
        Bin::Powf | Bin::Atan2 => unreachable!("inexact functions come from the probes"),
    })
}

/// An f32, f16 or bf16 value in f32 (exactly).
fn f32v(v: Val) -> f32 {
    match v {
        Val::F32(x) => x,
        Val::F16(x) => x.to_f32(),
        Val::BF16(x) => x.to_f32(),
        v => unreachable!("{v:?} is not f32-like"),
    }
}

/// `r` (exact in `like`'s type) as a value of `like`'s type.
fn narrow(like: Val, r: f32) -> Val {
    match like {
        Val::F32(_) => Val::F32(r),
        Val::F16(_) => Val::F16(f16::from_f32(r)),
        Val::BF16(_) => Val::BF16(bf16::from_f32(r)),
        v => unreachable!("{v:?} is not f32-like"),
    }
}

fn cmp(op: Cmp, a: Val, b: Val) -> bool {
    use std::cmp::Ordering::*;
    let o = match (a, b) {
        (Val::Bool(x), Val::Bool(y)) => x.partial_cmp(&y),
        (Val::I32(x), Val::I32(y)) => x.partial_cmp(&y),
        (Val::U32(x), Val::U32(y)) => x.partial_cmp(&y),
        (Val::I64(x), Val::I64(y)) => x.partial_cmp(&y),
        (Val::U64(x), Val::U64(y)) => x.partial_cmp(&y),
        (Val::F32(x), Val::F32(y)) => x.partial_cmp(&y),
        (Val::I8(x), Val::I8(y)) => x.partial_cmp(&y),
        (Val::U8(x), Val::U8(y)) => x.partial_cmp(&y),
        (Val::I16(x), Val::I16(y)) => x.partial_cmp(&y),
        (Val::U16(x), Val::U16(y)) => x.partial_cmp(&y),
        (x, y) if x.ty() == y.ty() && x.ty() != Ty::Bool => {
            // Floats: compared by value (-0 == +0, NaN unordered).
            x.as_f64()
                .zip(y.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y))
        }
        _ => unreachable!("comparison of {a:?} and {b:?}"),
    };
    match (op, o) {
        (Cmp::Ne, None) => true,
        (_, None) => false,
        (Cmp::Eq, Some(o)) => o == Equal,
        (Cmp::Ne, Some(o)) => o != Equal,
        (Cmp::Lt, Some(o)) => o == Less,
        (Cmp::Le, Some(o)) => o != Greater,
        (Cmp::Gt, Some(o)) => o == Greater,
        (Cmp::Ge, Some(o)) => o != Less,
    }
}

/// Rust's `as` (the builder's `cast`); to the 16-bit floats one rounding to nearest even of
/// the exact value (docs/GUIDE.md), to the 8-bit floats `F8E4M3::from_f64(value as f64)`.
pub fn cast(v: Val, to: Ty) -> Val {
    // To its own type: the same bits (an 8-bit float's infinity stays infinite).
    if v.ty() == to {
        return v;
    }
    /// A value exactly: an integer, or a float's value.
    enum X {
        Int(i128),
        Float(f64),
    }
    let x = match v {
        Val::Bool(b) => X::Int(b as i128),
        Val::I32(x) => X::Int(x as i128),
        Val::U32(x) => X::Int(x as i128),
        Val::I64(x) => X::Int(x as i128),
        Val::U64(x) => X::Int(x as i128),
        Val::I8(x) => X::Int(x as i128),
        Val::U8(x) => X::Int(x as i128),
        Val::I16(x) => X::Int(x as i128),
        Val::U16(x) => X::Int(x as i128),
        f => X::Float(f.as_f64().unwrap_or(f64::NAN)),
    };
    macro_rules! to_int {
        ($t:ty) => {
            match x {
                X::Int(i) => i as $t,
                X::Float(f) => f as $t,
            }
        };
    }
    // Round to odd in f64 (exact for the floats), then to the target once.
    let odd = match x {
        X::Int(i) => int_to_f64_odd(i),
        X::Float(f) => f,
    };
    match to {
        Ty::Bool => unreachable!("casts to bool are not Rust"),
        Ty::I32 => Val::I32(to_int!(i32)),
        Ty::U32 => Val::U32(to_int!(u32)),
        Ty::I64 => Val::I64(to_int!(i64)),
        Ty::U64 => Val::U64(to_int!(u64)),
        Ty::I8 => Val::I8(to_int!(i8)),
        Ty::U8 => Val::U8(to_int!(u8)),
        Ty::I16 => Val::I16(to_int!(i16)),
        Ty::U16 => Val::U16(to_int!(u16)),
        Ty::F32 => Val::F32(to_int!(f32)),
        Ty::F64 => Val::F64(to_int!(f64)),
        Ty::F16 => Val::F16(f16::from_f32(f64_to_f32_odd(odd))),
        Ty::BF16 => Val::BF16(bf16::from_f32(f64_to_f32_odd(odd))),
        Ty::E4M3 => Val::E4M3(F8E4M3::from_f64(to_int!(f64))),
        Ty::E5M2 => Val::E5M2(F8E5M2::from_f64(to_int!(f64))),
    }
}

/// An integer in f64, rounded to odd (the truncation with its last bit set when inexact):
/// rounding that once more to a format of at most 51 bits gives the integer's own rounding.
fn int_to_f64_odd(i: i128) -> f64 {
    let m = i.unsigned_abs();
    let f = if m < 1 << 53 {
        m as f64
    } else {
        let sh = 128 - m.leading_zeros() - 53;
        let t = (m >> sh) | ((m & ((1u128 << sh) - 1) != 0) as u128);
        t as f64 * 2f64.powi(sh as i32)
    };
    if i < 0 {
        -f
    } else {
        f
    }
}

/// An f64 in f32, rounded to odd (beyond f32's range: its largest finite value, which is odd).
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let f = x as f32;
    if x.is_nan() || f as f64 == x {
        return f;
    }
    if f.is_infinite() {
        return f32::MAX.copysign(f);
    }
    let mut b = f.to_bits();
    if (f as f64).abs() > x.abs() {
        b -= 1;
    }
    f32::from_bits(b | 1)
}

/// `a + b` in f64, rounded to odd (from the exact error of the rounded sum).
fn add_odd(a: f64, b: f64) -> f64 {
    let s = a + b;
    if !s.is_finite() {
        return s;
    }
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    if e == 0.0 {
        return s;
    }
    let mut bits = s.to_bits();
    if (e > 0.0) != (s > 0.0) {
        bits -= 1;
    }
    f64::from_bits(bits | 1)
}

/// `(±a) * b + (±c)` of 16-bit floats rounded once (`fma.rn.f16`/`.bf16`): the product is
/// exact in f64, the sum rounded to odd in f64 and f32, then to the half type.
fn half_fma(a: Val, b: Val, c: Val, neg_a: bool, neg_c: bool) -> Val {
    let (Some(x), Some(y), Some(z)) = (a.as_f64(), b.as_f64(), c.as_f64()) else {
        unreachable!("mul_add on {a:?}")
    };
    let x = if neg_a { -x } else { x };
    let z = if neg_c { -z } else { z };
    let p = x * y;
    let r = if p.is_nan() || z.is_nan() || p.is_infinite() || z.is_infinite() {
        p + z
    } else {
        add_odd(p, z)
    };
    let r = f64_to_f32_odd(r);
    match a {
        Val::F16(_) => Val::F16(f16::from_f32(r)),
        Val::BF16(_) => Val::BF16(bf16::from_f32(r)),
        _ => unreachable!("a fused multiply-add of {a:?}"),
    }
}

extern "C" {
    /// C's `erf` (glibc's libm, which Rust's std links).
    #[link_name = "erf"]
    fn c_erf(x: f64) -> f64;
}

fn erf(x: f64) -> f64 {
    // SAFETY: a pure libm function of a double.
    unsafe { c_erf(x) }
}

/// The f64 reference of an inexact function.
fn reference(n: &Node, a: &[f64]) -> f64 {
    let x = a[0];
    match n {
        // C's Annex F (and IEEE 754): pow(x, ±0) and pow(1, y) are 1 even for a NaN; glibc
        // gives NaN for a signaling one, which Rust leaves open (it calls the platform's pow).
        Node::Bin(Bin::Powf, ..) if a[1] == 0.0 || x == 1.0 => 1.0,
        Node::Bin(Bin::Powf, ..) => x.powf(a[1]),
        Node::Bin(Bin::Atan2, ..) => x.atan2(a[1]),
        Node::Un(Un::Math(m), _) => match m {
            Math::Rsqrt => 1.0 / x.sqrt(),
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
            Math::Erf => erf(x),
        },
        _ => unreachable!("{n:?} is exact"),
    }
}

/// Floats as ordered integers (so the distance counts ulps; -0 and +0 are one apart).
fn ordered(bits: i64, width: u32) -> i128 {
    let min = -(1i128 << (width - 1));
    if bits < 0 {
        min - bits as i128
    } else {
        bits as i128
    }
}

/// Checks one inexact result against std; `Some(reason)` when out of bounds.
fn check_math(n: &Node, args: &[Val], got: Val) -> Option<String> {
    let xs: Vec<f64> = args
        .iter()
        .map(|v| v.as_f64().expect("math on a float"))
        .collect();
    let r = reference(n, &xs);
    let (want, got_f, dist, min_pos, bound) = match got {
        Val::F32(g) => {
            let w = r as f32;
            let d = (ordered(w.to_bits() as i32 as i64, 32)
                - ordered(g.to_bits() as i32 as i64, 32))
            .unsigned_abs()
            .min(u64::MAX as u128) as u64;
            (w as f64, g as f64, d, f32::MIN_POSITIVE as f64, 4u64)
        }
        Val::F64(g) => {
            let d = (ordered(r.to_bits() as i64, 64) - ordered(g.to_bits() as i64, 64))
                .unsigned_abs()
                .min(u64::MAX as u128) as u64;
            (r, g, d, f64::MIN_POSITIVE, 3u64)
        }
        // The f32 function rounded once: within one ulp of the half type (docs/MATH.md).
        Val::F16(_) | Val::BF16(_) => {
            let w = cast(Val::F64(r), got.ty());
            let d = (ordered(w.to_bits() as u16 as i16 as i64, 16)
                - ordered(got.to_bits() as u16 as i16 as i64, 16))
            .unsigned_abs()
            .min(u64::MAX as u128) as u64;
            let min_pos = if got.ty() == Ty::F16 {
                f16::MIN_POSITIVE.to_f64()
            } else {
                bf16::MIN_POSITIVE.to_f64()
            };
            (
                w.as_f64().unwrap_or(0.0),
                got.as_f64().unwrap_or(0.0),
                d,
                min_pos,
                1u64,
            )
        }
        _ => unreachable!(),
    };
    let x = xs[0];
    let what = || {
        format!(
            "{n_name}({args:?}) = {got:?}, std: {want:e}",
            n_name = name(n)
        )
    };
    if want.is_nan() || got_f.is_nan() {
        return (want.is_nan() != got_f.is_nan()).then(|| format!("NaN mismatch: {}", what()));
    }
    // Beyond the own sin/cos/tan's reduction range only boundedness is documented.
    let far = if matches!(got, Val::F64(_)) { 1e9 } else { 1e5 };
    if let Node::Un(Un::Math(m @ (Math::Sin | Math::Cos | Math::Tan)), _) = n {
        if x.abs() > far {
            return (*m != Math::Tan && got_f.abs() > 1.0)
                .then(|| format!("unbounded: {}", what()));
        }
    }
    if dist <= bound || (want.abs() < min_pos && (got_f - want).abs() <= bound as f64 * min_pos) {
        None
    } else {
        Some(format!("{dist} ulps (bound {bound}): {}", what()))
    }
}

fn name(n: &Node) -> &'static str {
    match n {
        Node::Bin(Bin::Powf, ..) => "powf",
        Node::Bin(Bin::Atan2, ..) => "atan2",
        Node::Un(Un::Math(m), _) => m.name(),
        _ => "?",
    }
}
