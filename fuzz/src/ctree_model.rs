//! The host model of the complex trees (`ctree.rs`): docs/MATH.md's formulas, each
//! operation rounded in the part type as the builder records it, so that exact results are
//! compared bit for bit; `exp`, `ln` and `arg` are checked within bounds (see [`CModel`]).
//!
//! FMA contraction: the complex operators never contract (docs/GUIDE.md), but a real `a + b`
//! or `a - b` of the tree does when one operand is a product *value* of the kernel: a real
//! `x * y`, or a part that is one (`CExpr::new(x * y, ..).re`, `(z * s).re`, `z.conj().re` of
//! such a part). The model tracks, beside each value, whether it is such a product and of what
//! (`prod`), and fuses those adds as the builder does (the left operand's product first;
//! `c - a*b` as `fma(-a, b, c)`).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

use num_complex::Complex;

use super::ctree::{CBin, CNode, CUn, PartFn, RArith, RNode, CSLOTS};

/// A part type on the host: `f32` or `f64`.
pub trait HostPart:
    Copy
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// `0.5`.
    const HALF: Self;
    /// `+inf`.
    const INF: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// Bits of the type.
    const BITS: u32;
    /// The ulp bound of one math function (docs/MATH.md's, as the scalar trees check it).
    const ULPS: u64;
    /// Beyond this the own sin/cos only promise boundedness.
    const FAR: f64;
    /// The smallest normal number.
    const MIN_POS: f64;
    /// The value of the low bits of `b`.
    fn from_bits(b: u64) -> Self;
    /// The bits, zero-extended.
    fn to_bits(self) -> u64;
    /// `x as Self`.
    fn from_f64(x: f64) -> Self;
    /// `self as f64` (exact).
    fn to_f64(self) -> f64;
    /// std's `abs`.
    fn abs(self) -> Self;
    /// std's `sqrt` (correctly rounded).
    fn sqrt(self) -> Self;
    /// std's `copysign`.
    fn copysign(self, s: Self) -> Self;
    /// std's `mul_add` (one rounding).
    fn mul_add(self, b: Self, c: Self) -> Self;
    /// std's `is_nan`.
    fn is_nan(self) -> bool;
    /// std's `is_infinite`.
    fn is_infinite(self) -> bool;
}

macro_rules! host_part {
    ($t:ident, $bits:expr, $ulps:expr, $far:expr, $u:ident) => {
        impl HostPart for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const HALF: $t = 0.5;
            const INF: $t = $t::INFINITY;
            const NAN: $t = $t::NAN;
            const BITS: u32 = $bits;
            const ULPS: u64 = $ulps;
            const FAR: f64 = $far;
            const MIN_POS: f64 = $t::MIN_POSITIVE as f64;
            fn from_bits(b: u64) -> $t {
                $t::from_bits(b as $u)
            }
            fn to_bits(self) -> u64 {
                $t::to_bits(self) as u64
            }
            fn from_f64(x: f64) -> $t {
                x as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn abs(self) -> $t {
                $t::abs(self)
            }
            fn sqrt(self) -> $t {
                $t::sqrt(self)
            }
            fn copysign(self, s: $t) -> $t {
                $t::copysign(self, s)
            }
            fn mul_add(self, b: $t, c: $t) -> $t {
                $t::mul_add(self, b, c)
            }
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            fn is_infinite(self) -> bool {
                $t::is_infinite(self)
            }
        }
    };
}
host_part!(f32, 32, 4, 1e5, u32);
host_part!(f64, 64, 3, 1e9, u64);

/// `ln(MAX)` of the part type.
fn ln_max<P: HostPart>() -> f64 {
    if P::BITS == 32 {
        (f32::MAX as f64).ln()
    } else {
        f64::MAX.ln()
    }
}

/// A real value: `None` where Rust leaves it open (a sign copied from a NaN); `prod`: the
/// operands when the value is a product the builder would fuse with an add.
#[derive(Clone, Copy, Debug)]
pub struct R<P> {
    /// The value (`None`: open).
    pub v: Option<P>,
    /// The product's operands, if the value is a product.
    pub prod: Option<(Option<P>, Option<P>)>,
}

/// A complex value, part by part (as [`R`]).
#[derive(Clone, Copy, Debug)]
pub struct C<P> {
    /// The real part (`None`: open).
    pub re: Option<P>,
    /// The imaginary part (`None`: open).
    pub im: Option<P>,
    /// The real part's product operands, if it is a product.
    pub re_prod: Option<(Option<P>, Option<P>)>,
    /// The imaginary part's product operands, if it is a product.
    pub im_prod: Option<(Option<P>, Option<P>)>,
}

impl<P: HostPart> C<P> {
    fn plain(re: Option<P>, im: Option<P>) -> C<P> {
        C {
            re,
            im,
            re_prod: None,
            im_prod: None,
        }
    }
    fn both(self) -> Option<(P, P)> {
        Some((self.re?, self.im?))
    }
}

fn r<P>(v: Option<P>) -> R<P> {
    R { v, prod: None }
}

/// `sqrt(a² + b²)` scaled by the larger magnitude (the builder's `hypot`).
pub fn hypot<P: HostPart>(a: P, b: P) -> P {
    let (a, b) = (a.abs(), b.abs());
    let a_first = a >= b || a.is_nan();
    let (big, small) = if a_first { (a, b) } else { (b, a) };
    let q = small / big;
    let h = big * (P::ONE + q * q).sqrt();
    let h = if big == P::ZERO { P::ZERO } else { h };
    if a.is_infinite() || b.is_infinite() {
        P::INF
    } else {
        h
    }
}

/// Smith's division, as `CExpr`'s `/`.
pub fn div<P: HostPart>((ar, ai): (P, P), (br, bi): (P, P)) -> (P, P) {
    let by_re = br.abs() >= bi.abs();
    let zero_div = if by_re { br == P::ZERO } else { bi == P::ZERO };
    if zero_div {
        return (P::NAN, P::NAN);
    }
    if by_re {
        let ratio = bi / br;
        let denom = br + bi * ratio;
        ((ar + ai * ratio) / denom, (ai - ar * ratio) / denom)
    } else {
        let ratio = br / bi;
        let denom = br * ratio + bi;
        ((ar * ratio + ai) / denom, (ai * ratio - ar) / denom)
    }
}

/// Kahan's square root, as `CExpr::sqrt`; the imaginary part is open where it copies the sign
/// of a NaN onto a number.
pub fn sqrt<P: HostPart>((x, y): (P, P)) -> (P, Option<P>) {
    if x == P::ZERO && y == P::ZERO {
        return (P::ZERO, Some(y));
    }
    let t = ((x.abs() + hypot(x, y)) * P::HALF).sqrt();
    let two_t = t + t;
    if x >= P::ZERO {
        (t, Some(y / two_t))
    } else {
        let im = if y.is_nan() && !t.is_nan() {
            None
        } else {
            Some(t.copysign(y))
        };
        (y.abs() / two_t, im)
    }
}

/// Floats as ordered integers (ulp distances; -0 and +0 one apart).
fn ordered<P: HostPart>(x: P) -> i128 {
    let b = x.to_bits();
    let sign = b >> (P::BITS - 1) & 1 == 1;
    let mag = (b & ((1u128 << (P::BITS - 1)) - 1) as u64) as i128;
    if sign {
        -mag - 1
    } else {
        mag
    }
}

/// Whether `got` is within `bound` ulps of the f64 reference `want` (NaN only for NaN; below
/// the smallest normal number an absolute tolerance of `bound × MIN_POSITIVE`).
pub fn within<P: HostPart>(got: P, want: f64, bound: u64) -> bool {
    let w = P::from_f64(want);
    if w.is_nan() || got.is_nan() {
        return w.is_nan() && got.is_nan();
    }
    let dist = (ordered(w) - ordered(got)).unsigned_abs();
    dist <= bound as u128
        || (want.abs() < P::MIN_POS && (got.to_f64() - want).abs() <= bound as f64 * P::MIN_POS)
}

/// Evaluation of one tree on one thread.
pub struct CModel<'a, P> {
    /// The thread's inputs of the part type.
    pub inputs: &'a [P],
    /// The device's probe words, in post-order.
    pub probes: &'a [u64],
    next: usize,
    /// Whether the kernel was built with FMA contraction.
    pub contract: bool,
    /// Probes out of their bounds.
    pub errors: Vec<String>,
    /// Probe values checked, and left unchecked (open arguments, or outside the domain the
    /// bounds cover: exp's overflow, sin/cos beyond their reduction range).
    pub checked: usize,
    /// Probe values left unchecked.
    pub unchecked: usize,
    /// Adds fused with a product, and those whose product was a part of a complex value
    /// (not a real `*` of the tree).
    pub fused: usize,
    /// Of those, the fusions with a complex value's part.
    pub fused_parts: usize,
}

impl<'a, P: HostPart> CModel<'a, P> {
    /// A model of one thread's `inputs` (of the part type) and its `probes` words, for a kernel built with contraction `contract`.
    pub fn new(inputs: &'a [P], probes: &'a [u64], contract: bool) -> CModel<'a, P> {
        CModel {
            inputs,
            probes,
            next: 0,
            contract,
            errors: Vec::new(),
            checked: 0,
            unchecked: 0,
            fused: 0,
            fused_parts: 0,
        }
    }

    fn probe(&mut self) -> P {
        let v = P::from_bits(self.probes[self.next]);
        self.next += 1;
        v
    }

    fn error(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.errors.push(what());
        }
    }

    fn count_fused(&mut self, direct: bool) {
        self.fused += 1;
        self.fused_parts += !direct as usize;
    }

    /// A real expression's value.
    pub fn real(&mut self, n: &RNode) -> R<P> {
        match n {
            RNode::In(s) => r(Some(self.inputs[*s as usize])),
            RNode::Lit(b) => r(Some(P::from_bits(*b))),
            RNode::Part(f, z) => {
                let c = self.complex(z);
                match f {
                    PartFn::Re => R {
                        v: c.re,
                        prod: c.re_prod,
                    },
                    PartFn::Im => R {
                        v: c.im,
                        prod: c.im_prod,
                    },
                    PartFn::Abs => r(c.both().map(|(a, b)| hypot(a, b))),
                    PartFn::NormSqr => r(c.both().map(|(a, b)| a * a + b * b)),
                    PartFn::Arg => {
                        let got = self.probe();
                        match c.both() {
                            Some((re, im)) => {
                                let want = im.to_f64().atan2(re.to_f64());
                                self.error(within(got, want, P::ULPS), || {
                                    format!("arg({re:?} + {im:?}i) = {got:?}, std: {want:e}")
                                });
                            }
                            None => self.unchecked += 1,
                        }
                        r(Some(got))
                    }
                }
            }
            RNode::Arith(op, a, b) => {
                let (x, y) = (self.real(a), self.real(b));
                match op {
                    RArith::Mul => R {
                        v: x.v.zip(y.v).map(|(x, y)| x * y),
                        prod: Some((x.v, y.v)),
                    },
                    RArith::Add | RArith::Sub => {
                        let sub = *op == RArith::Sub;
                        let fused = |(p, q): (Option<P>, Option<P>), c: Option<P>, neg_p: bool| {
                            let (p, q, c) = (p?, q?, c?);
                            let p = if neg_p { -p } else { p };
                            Some(p.mul_add(q, if sub && !neg_p { -c } else { c }))
                        };
                        let direct = |n: &RNode| matches!(n, RNode::Arith(RArith::Mul, ..));
                        let v = match (self.contract, x.prod, y.prod) {
                            (true, Some(pq), _) => {
                                self.count_fused(direct(a));
                                fused(pq, y.v, false)
                            }
                            (true, None, Some(pq)) => {
                                self.count_fused(direct(b));
                                fused(pq, x.v, sub)
                            }
                            _ => x.v.zip(y.v).map(|(x, y)| if sub { x - y } else { x + y }),
                        };
                        r(v)
                    }
                }
            }
        }
    }

    /// A complex expression's value.
    pub fn complex(&mut self, n: &CNode) -> C<P> {
        match n {
            CNode::New(a, b) => {
                let (x, y) = (self.real(a), self.real(b));
                C {
                    re: x.v,
                    im: y.v,
                    re_prod: x.prod,
                    im_prod: y.prod,
                }
            }
            CNode::Real(a) => {
                let x = self.real(a);
                C {
                    re: x.v,
                    im: Some(P::ZERO),
                    re_prod: x.prod,
                    im_prod: None,
                }
            }
            CNode::Lit(re, im) => C::plain(Some(P::from_bits(*re)), Some(P::from_bits(*im))),
            CNode::Load(s) => {
                let s = *s as usize;
                C::plain(Some(self.inputs[s]), Some(self.inputs[(s + 1) % CSLOTS]))
            }
            CNode::Bin(op, a, b) => {
                let (x, y) = (self.complex(a), self.complex(b));
                let part = |p: Option<P>, q: Option<P>, f: fn(P, P) -> P| Some(f(p?, q?));
                match op {
                    CBin::Add => C::plain(
                        part(x.re, y.re, |p, q| p + q),
                        part(x.im, y.im, |p, q| p + q),
                    ),
                    CBin::Sub => C::plain(
                        part(x.re, y.re, |p, q| p - q),
                        part(x.im, y.im, |p, q| p - q),
                    ),
                    CBin::Mul => match x.both().zip(y.both()) {
                        Some(((ar, ai), (br, bi))) => {
                            C::plain(Some(ar * br - ai * bi), Some(ar * bi + ai * br))
                        }
                        None => C::plain(None, None),
                    },
                    CBin::Div => match x.both().zip(y.both()) {
                        Some((a, b)) => {
                            let (re, im) = div(a, b);
                            C::plain(Some(re), Some(im))
                        }
                        None => C::plain(None, None),
                    },
                }
            }
            CNode::Un(op, a) => {
                let x = self.complex(a);
                match op {
                    CUn::Neg => C::plain(x.re.map(|v| -v), x.im.map(|v| -v)),
                    CUn::Conj => C {
                        re: x.re,
                        im: x.im.map(|v| -v),
                        re_prod: x.re_prod,
                        im_prod: None,
                    },
                    CUn::Sqrt => match x.both() {
                        Some(z) => {
                            let (re, im) = sqrt(z);
                            C::plain(Some(re), im)
                        }
                        None => C::plain(None, None),
                    },
                    CUn::Exp | CUn::Ln => {
                        let got = (self.probe(), self.probe());
                        match x.both() {
                            Some(z) if *op == CUn::Exp => self.check_exp(z, got),
                            Some(z) => self.check_ln(z, got),
                            None => self.unchecked += 2,
                        }
                        C::plain(Some(got.0), Some(got.1))
                    }
                }
            }
            CNode::Scale(z, s) => {
                let (x, s) = (self.complex(z), self.real(s));
                let mul = |p: Option<P>| Some(p? * s.v?);
                C {
                    re: mul(x.re),
                    im: mul(x.im),
                    re_prod: Some((x.re, s.v)),
                    im_prod: Some((x.im, s.v)),
                }
            }
        }
    }

    /// `ln z = ln|z| + i arg z`: `|z|` is exact (the model's own hypot), so the real part is
    /// checked against the f64 `ln` of that value, the imaginary part against `atan2`.
    fn check_ln(&mut self, (re, im): (P, P), got: (P, P)) {
        let want = (hypot(re, im).to_f64().ln(), im.to_f64().atan2(re.to_f64()));
        let ok = within(got.0, want.0, P::ULPS) && within(got.1, want.1, P::ULPS);
        self.error(ok, || {
            format!(
                "ln({re:?} + {im:?}i) = {got:?}, std: ({:e}, {:e})",
                want.0, want.1
            )
        });
    }

    /// `exp z = e^re (cos im + i sin im)`, `e^re + 0i` (the zero's sign kept) when `im` is 0:
    /// each part within `2 × ULPS + 3` ulps of the f64 formula (two math functions and a
    /// product), NaN exactly where the formula gives NaN; unchecked where `e^re` overflows, for
    /// infinite `re` and beyond sin/cos's reduction range.
    fn check_exp(&mut self, (x, y): (P, P), got: (P, P)) {
        let (xf, yf) = (x.to_f64(), y.to_f64());
        if y == P::ZERO {
            let ok = within(got.0, xf.exp(), P::ULPS) && got.1.to_bits() == y.to_bits();
            self.error(ok, || {
                format!("exp({x:?} + {y:?}i) = {got:?}, std: {:e}", xf.exp())
            });
            return;
        }
        if x.is_nan() || y.is_nan() || y.is_infinite() {
            let ok = got.0.is_nan() && got.1.is_nan();
            self.error(ok, || {
                format!("exp({x:?} + {y:?}i) = {got:?}, want NaN + NaN i")
            });
            return;
        }
        if x.is_infinite() || xf > ln_max::<P>() - 1.0 || yf.abs() > P::FAR {
            self.unchecked += 2;
            return;
        }
        let m = xf.exp();
        let want = (m * yf.cos(), m * yf.sin());
        let bound = 2 * P::ULPS + 3;
        let ok = within(got.0, want.0, bound) && within(got.1, want.1, bound);
        self.error(ok, || {
            format!(
                "exp({x:?} + {y:?}i) = {got:?}, std: ({:e}, {:e})",
                want.0, want.1
            )
        });
    }
}

/// Whether the device's part `got` is what the model says (`None`: open).
pub fn same<P: HostPart>(want: Option<P>, got: P) -> Option<bool> {
    let w = want?;
    Some((w.is_nan() && got.is_nan()) || w.to_bits() == got.to_bits())
}

/// The model's value of a whole tree as its parts' bits (`None`: open).
pub fn bits<P: HostPart>(c: &C<P>) -> Complex<Option<u64>> {
    Complex::new(c.re.map(P::to_bits), c.im.map(P::to_bits))
}
