//! The atomic element types in the kernel: one trait over the twelve types the builder has
//! atomics for (which operations each has, how its values move to and from the trees' `u64`
//! words), and the typed arrays of the targets.

use cudajit::codegen::{Expr, KernelBuilder, Num, Slice, SliceMut};
use cudajit::{bf16, f16};

use super::super::lower::{Lower, D};
use super::{AOp, ATy, Atomic};

/// An element type with atomics, and how the fuzzer moves its values around.
pub trait AtomElem: Num {
    /// `a.OP(i, v)` (`c`: cas's expected value).
    fn rmw(a: SliceMut<Self>, op: AOp, i: Expr<u64>, v: Expr<Self>, c: Expr<Self>) -> Expr<Self>;
    /// The bits, zero-extended.
    fn bits(e: Expr<Self>) -> Expr<u64>;
    /// An integer tree's value, cast (`as`).
    fn from_d(d: D) -> Expr<Self>;
    /// As a tree value, for the trees' types.
    fn to_d(e: Expr<Self>) -> Option<D>;
}

macro_rules! cast_from_d {
    () => {
        fn from_d(d: D) -> Expr<Self> {
            match d {
                D::I32(x) => x.cast(),
                D::U32(x) => x.cast(),
                D::I64(x) => x.cast(),
                D::U64(x) => x.cast(),
                // (Operands are integer trees: `ATy::operand_ty`.)
                _ => unreachable!("an integer operand"),
            }
        }
    };
}

macro_rules! num_rmw {
    ($a:ident, $op:ident, $i:ident, $v:ident, $c:ident, { $($extra:tt)* }) => {
        match $op {
            AOp::Add => $a.atomic_add($i, $v),
            AOp::Sub => $a.atomic_sub($i, $v),
            AOp::Min => $a.atomic_min($i, $v),
            AOp::Max => $a.atomic_max($i, $v),
            AOp::NanMin => $a.atomic_nanmin($i, $v),
            AOp::NanMax => $a.atomic_nanmax($i, $v),
            AOp::Exch => $a.atomic_exch($i, $v),
            AOp::Cas => $a.atomic_cas($i, $c, $v),
            $($extra)*
        }
    };
}

macro_rules! int_elem {
    ($t:ty, $u:ty, $to_d:expr, counter: $counter:tt) => {
        impl AtomElem for $t {
            fn rmw(a: SliceMut<$t>, op: AOp, i: Expr<u64>, v: Expr<$t>, c: Expr<$t>) -> Expr<$t> {
                int_elem!(@rmw $counter, a, op, i, v, c)
            }
            fn bits(e: Expr<$t>) -> Expr<u64> {
                e.bitcast::<$u>().cast()
            }
            cast_from_d!();
            fn to_d(e: Expr<$t>) -> Option<D> {
                let f: fn(Expr<$t>) -> Option<D> = $to_d;
                f(e)
            }
        }
    };
    (@rmw yes, $a:ident, $op:ident, $i:ident, $v:ident, $c:ident) => {
        num_rmw!($a, $op, $i, $v, $c, {
            AOp::And => $a.atomic_and($i, $v),
            AOp::Or => $a.atomic_or($i, $v),
            AOp::Xor => $a.atomic_xor($i, $v),
            AOp::Inc => $a.atomic_inc($i, $v),
            AOp::Dec => $a.atomic_dec($i, $v),
        })
    };
    (@rmw no, $a:ident, $op:ident, $i:ident, $v:ident, $c:ident) => {
        num_rmw!($a, $op, $i, $v, $c, {
            AOp::And => $a.atomic_and($i, $v),
            AOp::Or => $a.atomic_or($i, $v),
            AOp::Xor => $a.atomic_xor($i, $v),
            AOp::Inc | AOp::Dec => unreachable!("inc/dec on a type without them"),
        })
    };
}

int_elem!(i8, u8, |_| None, counter: no);
int_elem!(u8, u8, |_| None, counter: no);
int_elem!(i16, u16, |_| None, counter: no);
int_elem!(u16, u16, |_| None, counter: no);
int_elem!(i32, u32, |e| Some(D::I32(e)), counter: no);
int_elem!(u32, u32, |e| Some(D::U32(e)), counter: yes);
int_elem!(i64, u64, |e| Some(D::I64(e)), counter: no);
int_elem!(u64, u64, |e| Some(D::U64(e)), counter: yes);

macro_rules! float_elem {
    ($t:ty, $u:ty, $to_d:expr) => {
        impl AtomElem for $t {
            fn rmw(a: SliceMut<$t>, op: AOp, i: Expr<u64>, v: Expr<$t>, c: Expr<$t>) -> Expr<$t> {
                num_rmw!(a, op, i, v, c, {
                    _ => unreachable!("{op:?} on a float"),
                })
            }
            fn bits(e: Expr<$t>) -> Expr<u64> {
                e.bitcast::<$u>().cast()
            }
            fn from_d(_: D) -> Expr<$t> {
                unreachable!("float operands come from the target's table")
            }
            fn to_d(e: Expr<$t>) -> Option<D> {
                let f: fn(Expr<$t>) -> Option<D> = $to_d;
                f(e)
            }
        }
    };
}

float_elem!(f16, u16, |_| None);
float_elem!(bf16, u16, |_| None);
float_elem!(f32, u32, |e| Some(D::F32(e)));
float_elem!(f64, u64, |e| Some(D::F64(e)));

/// A target's array (shared or global) of any atomic type, with the float operand table.
#[derive(Clone, Copy)]
pub enum TArr {
    I8(SliceMut<i8>),
    U8(SliceMut<u8>),
    I16(SliceMut<i16>),
    U16(SliceMut<u16>),
    I32(SliceMut<i32>),
    U32(SliceMut<u32>),
    I64(SliceMut<i64>),
    U64(SliceMut<u64>),
    F16(SliceMut<f16>, Option<Slice<f16>>),
    BF16(SliceMut<bf16>, Option<Slice<bf16>>),
    F32(SliceMut<f32>, Option<Slice<f32>>),
    F64(SliceMut<f64>, Option<Slice<f64>>),
}

/// Runs `$body` with `$a` the typed array and `$tab` its table (`None` for integers).
macro_rules! on_tarr {
    ($x:expr, |$a:ident, $tab:ident| $body:expr) => {
        match $x {
            TArr::I8($a) => {
                let $tab: Option<cudajit::codegen::Slice<i8>> = None;
                $body
            }
            TArr::U8($a) => {
                let $tab: Option<cudajit::codegen::Slice<u8>> = None;
                $body
            }
            TArr::I16($a) => {
                let $tab: Option<cudajit::codegen::Slice<i16>> = None;
                $body
            }
            TArr::U16($a) => {
                let $tab: Option<cudajit::codegen::Slice<u16>> = None;
                $body
            }
            TArr::I32($a) => {
                let $tab: Option<cudajit::codegen::Slice<i32>> = None;
                $body
            }
            TArr::U32($a) => {
                let $tab: Option<cudajit::codegen::Slice<u32>> = None;
                $body
            }
            TArr::I64($a) => {
                let $tab: Option<cudajit::codegen::Slice<i64>> = None;
                $body
            }
            TArr::U64($a) => {
                let $tab: Option<cudajit::codegen::Slice<u64>> = None;
                $body
            }
            TArr::F16($a, $tab) => $body,
            TArr::BF16($a, $tab) => $body,
            TArr::F32($a, $tab) => $body,
            TArr::F64($a, $tab) => $body,
        }
    };
}

/// An operand: an integer tree cast, or a float target's table entry at `index % len`.
pub(super) fn operand<T: AtomElem>(tab: Option<Slice<T>>, d: D, len: usize) -> Expr<T> {
    match (tab, d) {
        (Some(t), D::U32(i)) => t.at(i % len as u32),
        _ => T::from_d(d),
    }
}

pub(super) fn atomic_t<T: AtomElem>(
    a: SliceMut<T>,
    tab: Option<Slice<T>>,
    at: &Atomic,
    index: Expr<u64>,
    lw: &mut Lower,
    tlen: usize,
) -> (Expr<u64>, Option<D>) {
    let v = operand(tab, lw.node(&at.val), tlen);
    let c = match &at.cmp {
        Some(c) => operand(tab, lw.node(c), tlen),
        None => v,
    };
    let old = T::rmw(a, at.op, index, v, c);
    (T::bits(old), T::to_d(old))
}

/// `a[index]`, read plainly or as a relaxed atomic load.
pub(super) fn read_t<T: AtomElem>(
    a: SliceMut<T>,
    index: Expr<u64>,
    atomic: bool,
) -> (Expr<u64>, Option<D>) {
    let x = if atomic {
        a.atomic_load(index)
    } else {
        a.at(index)
    };
    (T::bits(x), T::to_d(x))
}

pub(super) fn init_t<T: AtomElem>(a: SliceMut<T>, index: u64, bits: u64) {
    a.set(index, Expr::lit(T::from_bits(bits)));
}

pub(super) fn float_table<T: cudajit::codegen::Scalar>(
    k: &KernelBuilder,
    data: &[u64],
) -> Option<Slice<T>> {
    let xs: Vec<T> = data.iter().map(|&b| T::from_bits(b)).collect();
    Some(k.const_array(&xs))
}

pub(super) fn shared_tarr(k: &KernelBuilder, ty: ATy, n: usize) -> TArr {
    match ty {
        ATy::I8 => TArr::I8(k.shared_array(n)),
        ATy::U8 => TArr::U8(k.shared_array(n)),
        ATy::I16 => TArr::I16(k.shared_array(n)),
        ATy::U16 => TArr::U16(k.shared_array(n)),
        ATy::I32 => TArr::I32(k.shared_array(n)),
        ATy::U32 => TArr::U32(k.shared_array(n)),
        ATy::I64 => TArr::I64(k.shared_array(n)),
        ATy::U64 => TArr::U64(k.shared_array(n)),
        ATy::F16 => TArr::F16(k.shared_array(n), None),
        ATy::BF16 => TArr::BF16(k.shared_array(n), None),
        ATy::F32 => TArr::F32(k.shared_array(n), None),
        ATy::F64 => TArr::F64(k.shared_array(n), None),
    }
}

/// `arr` with the constant table `data` (floats).
pub(super) fn with_table(k: &KernelBuilder, arr: TArr, data: &[u64]) -> TArr {
    match arr {
        TArr::F16(a, _) => TArr::F16(a, float_table(k, data)),
        TArr::BF16(a, _) => TArr::BF16(a, float_table(k, data)),
        TArr::F32(a, _) => TArr::F32(a, float_table(k, data)),
        TArr::F64(a, _) => TArr::F64(a, float_table(k, data)),
        a => a,
    }
}

pub(super) use on_tarr;
