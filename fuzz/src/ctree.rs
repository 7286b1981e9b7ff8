//! Complex trees: the whole language's complex64/complex128 (`cudajit::codegen::CExpr<f32>` /
//! `CExpr<f64>`), generated, modelled and (in `ctree_run.rs`) lowered and checked.
//!
//! A tree is a complex expression over one part type (`f32` or `f64`): `CExpr::new(re, im)` of
//! real expressions, a real value as a complex one (`CExpr::from`), complex literals, elements
//! of a `&[Complex<T>]` input array, `+ - * /`,
//! negation, `conj`, `sqrt`, `exp`, `ln` and scaling by a real (`z * s`). Its real expressions
//! read the thread's inputs and literals, take `.re`, `.im`, `abs()`, `norm_sqr()`, `arg()` of
//! complex ones, and add, subtract and multiply them (so that FMA contraction meets products
//! hidden in complex values: `(z * s).re + c` fuses, the complex operators never do).
//!
//! The host model follows docs/MATH.md's formulas (the builder's, Numba's): the schoolbook
//! product without fma, Smith's division scaled by the larger part of the divisor, the scaled
//! hypotenuse for `abs`, Kahan's square root, `exp`/`ln` from the polar form, each operation
//! rounded as the builder records it, so that results are compared bit for bit. `exp`, `ln` and
//! `arg` use math functions: the kernel stores their values (probes), the model checks each
//! within a bound of an f64 reference and goes on with the device's value.

use num_complex::Complex;

use super::rng::Rng;
use super::tree::{random_val, Ty, Val};

/// Input slots of each part type per thread: `[f32 x SLOTS, f64 x SLOTS]`, one word each.
pub const CSLOTS: usize = 4;

/// Input words per thread.
pub const CINPUTS: usize = 2 * CSLOTS;

/// A real expression of the tree's part type.
#[derive(Clone, Debug, PartialEq)]
pub enum RNode {
    /// Input slot (of the part type).
    In(u8),
    /// A literal, as the part type's bits.
    Lit(u64),
    /// `.re`, `.im`, `abs()`, `norm_sqr()` or `arg()` of a complex expression.
    Part(PartFn, Box<CNode>),
    /// `a + b`, `a - b`, `a * b` (real arithmetic: follows the kernel's contraction).
    Arith(RArith, Box<RNode>, Box<RNode>),
}

/// Real results of complex values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartFn {
    /// `z.re`.
    Re,
    /// `z.im`.
    Im,
    /// `z.abs()`: the scaled hypotenuse.
    Abs,
    /// `z.norm_sqr()`: `re² + im²`, never contracted.
    NormSqr,
    /// `atan2(im, re)`: inexact (probed).
    Arg,
}

/// Real arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RArith {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b` (a product an add may fuse with).
    Mul,
}

/// Complex binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CBin {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`: the schoolbook product.
    Mul,
    /// `a / b`: Smith's division.
    Div,
}

/// Complex unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CUn {
    /// `-z`.
    Neg,
    /// `z.conj()`.
    Conj,
    /// `z.sqrt()`: Kahan's principal root.
    Sqrt,
    /// Inexact (probed).
    Exp,
    /// Inexact (probed).
    Ln,
}

/// A complex expression of the tree's part type.
#[derive(Clone, Debug, PartialEq)]
pub enum CNode {
    /// `CExpr::new(re, im)`.
    New(Box<RNode>, Box<RNode>),
    /// `CExpr::from(x)`: `x + 0i`.
    Real(Box<RNode>),
    /// `CExpr::lit(Complex::new(re, im))`, as the part type's bits.
    Lit(u64, u64),
    /// Element `s` of the thread's row of the part type's complex input array (a
    /// `&[Complex<T>]` parameter, read as one 2-lane vector load): `in[s] + in[s + 1] i`
    /// (slots modulo `CSLOTS`).
    Load(u8),
    /// A binary operator.
    Bin(CBin, Box<CNode>, Box<CNode>),
    /// A unary operation.
    Un(CUn, Box<CNode>),
    /// `z * s` (both parts scaled).
    Scale(Box<CNode>, Box<RNode>),
}

/// A tree: its part type (`true`: f64) and root.
#[derive(Clone, Debug, PartialEq)]
pub struct CTree {
    /// Whether the part type is f64 (else f32).
    pub f64: bool,
    /// The root.
    pub root: CNode,
}

/// Either kind of node, for walking a tree.
#[derive(Clone, Copy, Debug)]
pub enum Any<'a> {
    /// A real expression.
    R(&'a RNode),
    /// A complex expression.
    C(&'a CNode),
}

impl<'a> Any<'a> {
    /// The operands, in the order the kernel and the model evaluate them.
    pub fn children(self) -> Vec<Any<'a>> {
        match self {
            Any::R(r) => match r {
                RNode::In(_) | RNode::Lit(_) => vec![],
                RNode::Part(_, z) => vec![Any::C(z)],
                RNode::Arith(_, a, b) => vec![Any::R(a), Any::R(b)],
            },
            Any::C(c) => match c {
                CNode::New(a, b) => vec![Any::R(a), Any::R(b)],
                CNode::Real(a) => vec![Any::R(a)],
                CNode::Lit(..) | CNode::Load(_) => vec![],
                CNode::Bin(_, a, b) => vec![Any::C(a), Any::C(b)],
                CNode::Un(_, a) => vec![Any::C(a)],
                CNode::Scale(z, s) => vec![Any::C(z), Any::R(s)],
            },
        }
    }
    /// Output words of this node's probe (0: exact).
    pub fn probe_words(self) -> usize {
        match self {
            Any::R(RNode::Part(PartFn::Arg, _)) => 1,
            Any::C(CNode::Un(CUn::Exp | CUn::Ln, _)) => 2,
            _ => 0,
        }
    }
    /// Number of nodes.
    pub fn size(self) -> usize {
        1 + self.children().into_iter().map(Any::size).sum::<usize>()
    }
    /// Every sub-tree, children before parents, this one last.
    pub fn subtrees(self) -> Vec<Any<'a>> {
        let mut out = Vec::new();
        fn walk<'a>(n: Any<'a>, out: &mut Vec<Any<'a>>) {
            for c in n.children() {
                walk(c, out);
            }
            out.push(n);
        }
        walk(self, &mut out);
        out
    }
}

impl CTree {
    /// Probe words of the whole tree.
    pub fn probe_words(&self) -> usize {
        Any::C(&self.root)
            .subtrees()
            .into_iter()
            .map(Any::probe_words)
            .sum()
    }
    /// Nodes.
    pub fn size(&self) -> usize {
        Any::C(&self.root).size()
    }
}

/// A random value of the part type, rich in special values (the scalar trees' generator).
pub fn random_part(rng: &mut Rng, f64: bool) -> u64 {
    random_val(rng, if f64 { Ty::F64 } else { Ty::F32 }).to_bits()
}

/// Random tree generation.
pub struct CGen<'a> {
    /// The random stream.
    pub rng: &'a mut Rng,
    /// Whether the part type is f64.
    pub f64: bool,
}

impl CGen<'_> {
    fn b<T>(x: T) -> Box<T> {
        Box::new(x)
    }

    fn input(&mut self) -> RNode {
        RNode::In(self.rng.below(CSLOTS as u64) as u8)
    }

    fn rleaf(&mut self) -> RNode {
        if self.rng.below(4) == 0 {
            RNode::Lit(random_part(self.rng, self.f64))
        } else {
            self.input()
        }
    }

    fn cleaf(&mut self) -> CNode {
        match self.rng.below(8) {
            0 => CNode::Lit(
                random_part(self.rng, self.f64),
                random_part(self.rng, self.f64),
            ),
            1 => CNode::Real(Self::b(self.rleaf())),
            2 | 3 => CNode::Load(self.rng.below(CSLOTS as u64) as u8),
            _ => CNode::New(Self::b(self.rleaf()), Self::b(self.rleaf())),
        }
    }

    /// A real expression at most `depth` deep.
    pub fn real(&mut self, depth: u32) -> RNode {
        if depth == 0 || self.rng.below(4) == 0 {
            return self.rleaf();
        }
        let d = depth - 1;
        match self.rng.below(8) {
            0..=3 => {
                // `.re`/`.im` twice as often: they pass products on to the adds.
                let f = [
                    PartFn::Re,
                    PartFn::Re,
                    PartFn::Im,
                    PartFn::Im,
                    PartFn::Abs,
                    PartFn::NormSqr,
                    PartFn::Arg,
                ][self.rng.below(7) as usize];
                RNode::Part(f, Self::b(self.complex(d)))
            }
            _ => {
                let op = [RArith::Add, RArith::Sub, RArith::Mul][self.rng.below(3) as usize];
                RNode::Arith(op, Self::b(self.real(d)), Self::b(self.real(d)))
            }
        }
    }

    /// A complex expression at most `depth` deep.
    pub fn complex(&mut self, depth: u32) -> CNode {
        if depth == 0 || self.rng.below(6) == 0 {
            return self.cleaf();
        }
        let d = depth - 1;
        match self.rng.below(16) {
            0..=6 => {
                let op = [CBin::Add, CBin::Sub, CBin::Mul, CBin::Div][self.rng.below(4) as usize];
                CNode::Bin(op, Self::b(self.complex(d)), Self::b(self.complex(d)))
            }
            7..=10 => {
                let op =
                    [CUn::Neg, CUn::Conj, CUn::Sqrt, CUn::Exp, CUn::Ln][self.rng.below(5) as usize];
                CNode::Un(op, Self::b(self.complex(d)))
            }
            11 | 12 => CNode::Scale(Self::b(self.complex(d)), Self::b(self.real(d))),
            13 | 14 => CNode::New(Self::b(self.real(d)), Self::b(self.real(d))),
            _ => CNode::Real(Self::b(self.real(d))),
        }
    }
}

/// A random tree of part type f32 or f64 at most `depth` deep.
pub fn random_tree(rng: &mut Rng, depth: u32) -> CTree {
    let f64 = rng.below(2) == 1;
    let depth = 1 + rng.below(depth.max(1) as u64) as u32;
    let root = CGen { rng, f64 }.complex(depth);
    CTree { f64, root }
}

/// The value of a part type's bits as a scalar value (for printing).
pub fn part_val(f64: bool, bits: u64) -> Val {
    Val::from_bits(if f64 { Ty::F64 } else { Ty::F32 }, bits)
}

/// A complex value as its parts' bits.
pub type Bits2 = Complex<u64>;
