//! Complex numbers in the whole language (`--lang whole`): `CExpr<f32>` (complex64) and
//! `CExpr<f64>` (complex128) sub-expressions inside real trees. They are never inputs, results
//! or variables: a complex value is made from two real trees (`CExpr::new`), combined, and
//! read back as a real (`.re`, `.im`, `abs`, `norm_sqr`).
//!
//! The operations are the ones docs/MATH.md lists as exact given IEEE arithmetic and square
//! roots (`+ - * /`, `-z`, `conj`, `sqrt`, `abs`, `norm_sqr`); the model computes them with
//! `cudajit::codegen::complex_host`, the crate's host formulas (Smith's division, Kahan's
//! square root, the scaled hypotenuse), and compares bit for bit. Left out: `exp`, `ln`,
//! `arg` (inexact, built from the math functions checked elsewhere), and `z * real`, which
//! the builder records as plain products that an enclosing add may contract (the model's
//! contraction rule only looks at the tree's own `Mul` nodes).

use cudajit::codegen::complex_host;
use cudajit::codegen::CExpr;
use num_complex::Complex;

use super::lower::D;
use super::tree::{Node, Ty, Val};

/// A complex operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cx {
    /// `CExpr::new(re, im)` (two reals of one type).
    New,
    /// `z.re` (real).
    Re,
    /// `z.im` (real).
    Im,
    /// `z.abs()` (real).
    Abs,
    /// `z.norm_sqr()` (real).
    NormSqr,
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Conj,
    Sqrt,
}

/// The operations of one or two complex operands that give a complex value.
pub const COMPLEX_OPS: [Cx; 7] = [
    Cx::Add,
    Cx::Sub,
    Cx::Mul,
    Cx::Div,
    Cx::Neg,
    Cx::Conj,
    Cx::Sqrt,
];

/// The projections to a real value.
pub const PROJECTIONS: [Cx; 4] = [Cx::Re, Cx::Im, Cx::Abs, Cx::NormSqr];

impl Cx {
    /// The result type, given the first operand's type.
    pub fn ty(self, operand: Ty) -> Ty {
        match self {
            Cx::New => {
                if operand == Ty::F32 {
                    Ty::C64
                } else {
                    Ty::C128
                }
            }
            Cx::Re | Cx::Im | Cx::Abs | Cx::NormSqr => {
                if operand == Ty::C64 {
                    Ty::F32
                } else {
                    Ty::F64
                }
            }
            _ => operand,
        }
    }
}

/// The builder expression of `op` on lowered operands.
pub fn lower(op: Cx, k: &[D]) -> D {
    macro_rules! each {
        ($z:ident => $e:expr) => {
            match k[0] {
                D::C64($z) => D::C64($e),
                D::C128($z) => D::C128($e),
                _ => unreachable!("complex operation on a real"),
            }
        };
    }
    macro_rules! real {
        ($z:ident => $e:expr) => {
            match k[0] {
                D::C64($z) => D::F32($e),
                D::C128($z) => D::F64($e),
                _ => unreachable!("complex operation on a real"),
            }
        };
    }
    macro_rules! two {
        ($z:ident, $w:ident => $e:expr) => {
            match (k[0], k[1]) {
                (D::C64($z), D::C64($w)) => D::C64($e),
                (D::C128($z), D::C128($w)) => D::C128($e),
                _ => unreachable!("complex operation on a real"),
            }
        };
    }
    match op {
        Cx::New => match (k[0], k[1]) {
            (D::F32(re), D::F32(im)) => D::C64(CExpr::new(re, im)),
            (D::F64(re), D::F64(im)) => D::C128(CExpr::new(re, im)),
            _ => unreachable!("a complex number of other parts"),
        },
        Cx::Re => real!(z => z.re),
        Cx::Im => real!(z => z.im),
        Cx::Abs => real!(z => z.abs()),
        Cx::NormSqr => real!(z => z.norm_sqr()),
        Cx::Add => two!(z, w => z + w),
        Cx::Sub => two!(z, w => z - w),
        Cx::Mul => two!(z, w => z * w),
        Cx::Div => two!(z, w => z / w),
        Cx::Neg => each!(z => -z),
        Cx::Conj => each!(z => z.conj()),
        Cx::Sqrt => each!(z => z.sqrt()),
    }
}

/// The host model of `op` (the crate's host formulas).
pub fn eval(op: Cx, k: &[Val]) -> Val {
    macro_rules! model {
        ($m:ident, $c:ident, $r:ident) => {{
            let z = |v: Val| match v {
                Val::$c(z) => z,
                v => unreachable!("complex operation on {v:?}"),
            };
            match op {
                Cx::New => unreachable!(),
                Cx::Re => Val::$r(z(k[0]).re),
                Cx::Im => Val::$r(z(k[0]).im),
                Cx::Abs => Val::$r(complex_host::$m::abs(z(k[0]))),
                Cx::NormSqr => {
                    let z = z(k[0]);
                    Val::$r(z.re * z.re + z.im * z.im)
                }
                Cx::Add => Val::$c(z(k[0]) + z(k[1])),
                Cx::Sub => Val::$c(z(k[0]) - z(k[1])),
                Cx::Mul => Val::$c(complex_host::$m::mul(z(k[0]), z(k[1]))),
                Cx::Div => Val::$c(complex_host::$m::div(z(k[0]), z(k[1]))),
                Cx::Neg => {
                    let z = z(k[0]);
                    Val::$c(Complex::new(-z.re, -z.im))
                }
                Cx::Conj => {
                    let z = z(k[0]);
                    Val::$c(Complex::new(z.re, -z.im))
                }
                Cx::Sqrt => Val::$c(complex_host::$m::sqrt(z(k[0]))),
            }
        }};
    }
    match (op, k[0]) {
        (Cx::New, Val::F32(re)) => match k[1] {
            Val::F32(im) => Val::C64(Complex::new(re, im)),
            v => unreachable!("complex parts {v:?}"),
        },
        (Cx::New, Val::F64(re)) => match k[1] {
            Val::F64(im) => Val::C128(Complex::new(re, im)),
            v => unreachable!("complex parts {v:?}"),
        },
        (_, Val::C64(_)) => model!(f32, C64, F32),
        (_, Val::C128(_)) => model!(f64, C128, F64),
        (_, v) => unreachable!("{op:?} on {v:?}"),
    }
}

/// The Rust builder expression of `op` on its operands' expressions.
pub fn rust(op: Cx, k: &[String]) -> String {
    match op {
        Cx::New => format!("CExpr::new({}, {})", k[0], k[1]),
        Cx::Re => format!("{}.re", k[0]),
        Cx::Im => format!("{}.im", k[0]),
        Cx::Abs => format!("{}.abs()", k[0]),
        Cx::NormSqr => format!("{}.norm_sqr()", k[0]),
        Cx::Add => format!("({} + {})", k[0], k[1]),
        Cx::Sub => format!("({} - {})", k[0], k[1]),
        Cx::Mul => format!("({} * {})", k[0], k[1]),
        Cx::Div => format!("({} / {})", k[0], k[1]),
        Cx::Neg => format!("(-{})", k[0]),
        Cx::Conj => format!("{}.conj()", k[0]),
        Cx::Sqrt => format!("{}.sqrt()", k[0]),
    }
}

/// A part of `CExpr::new`: never a bare product, which `CExpr::new` would pass on as it is
/// and an add around `.re` could then contract beyond the model's view; a product `p` becomes
/// `p + -0.0` (the same value bit for bit, fused or not).
pub fn part(n: Node) -> Node {
    if let Node::Bin(super::tree::Bin::Mul, ..) = n {
        let zero = match n.ty() {
            Ty::F32 => Val::F32(-0.0),
            _ => Val::F64(-0.0),
        };
        Node::Bin(
            super::tree::Bin::Add,
            Box::new(n),
            Box::new(Node::Lit(zero)),
        )
    } else {
        n
    }
}
