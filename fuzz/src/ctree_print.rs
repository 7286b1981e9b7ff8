//! The complex trees' reproducers: the Rust builder code of a (minimised) tree, its inputs,
//! and the model's and the device's results.

use super::ctree::{part_val, Any, CBin, CNode, CUn, PartFn, RArith, RNode, CSLOTS};
use super::ctree_run::CMismatch;

/// Rust source of the builder expressions.
fn rust_r(n: &RNode, f64: bool) -> String {
    let t = if f64 { "f64" } else { "f32" };
    match n {
        RNode::In(s) => format!("x_{t}_{s}"),
        RNode::Lit(b) => format!("Expr::lit({})", part_val(f64, *b).rust()),
        RNode::Part(f, z) => {
            let z = rust_c(z, f64);
            match f {
                PartFn::Re => format!("{z}.re"),
                PartFn::Im => format!("{z}.im"),
                PartFn::Abs => format!("{z}.abs()"),
                PartFn::NormSqr => format!("{z}.norm_sqr()"),
                PartFn::Arg => format!("{z}.arg()"),
            }
        }
        RNode::Arith(op, a, b) => {
            let o = match op {
                RArith::Add => "+",
                RArith::Sub => "-",
                RArith::Mul => "*",
            };
            format!("({} {o} {})", rust_r(a, f64), rust_r(b, f64))
        }
    }
}

fn rust_c(n: &CNode, f64: bool) -> String {
    match n {
        CNode::New(a, b) => format!("CExpr::new({}, {})", rust_r(a, f64), rust_r(b, f64)),
        CNode::Real(a) => format!("CExpr::from({})", rust_r(a, f64)),
        CNode::Load(s) => format!("c_{}_{s}", if f64 { "f64" } else { "f32" }),
        CNode::Lit(re, im) => format!(
            "CExpr::lit(Complex::new({}, {}))",
            part_val(f64, *re).rust(),
            part_val(f64, *im).rust()
        ),
        CNode::Bin(op, a, b) => {
            let o = match op {
                CBin::Add => "+",
                CBin::Sub => "-",
                CBin::Mul => "*",
                CBin::Div => "/",
            };
            format!("({} {o} {})", rust_c(a, f64), rust_c(b, f64))
        }
        CNode::Un(op, a) => {
            let a = rust_c(a, f64);
            match op {
                CUn::Neg => format!("(-{a})"),
                CUn::Conj => format!("{a}.conj()"),
                CUn::Sqrt => format!("{a}.sqrt()"),
                CUn::Exp => format!("{a}.exp()"),
                CUn::Ln => format!("{a}.ln()"),
            }
        }
        CNode::Scale(z, s) => format!("({} * {})", rust_c(z, f64), rust_r(s, f64)),
    }
}

impl CMismatch {
    /// A Rust snippet that rebuilds the differing expression and its inputs.
    pub fn snippet(&self) -> String {
        let f64 = self.node.f64;
        let (t, first) = if f64 { ("f64", CSLOTS) } else { ("f32", 0) };
        let used = |f: &dyn Fn(Any) -> Option<u8>| {
            let mut v: Vec<u8> = Any::C(&self.node.root)
                .subtrees()
                .into_iter()
                .filter_map(f)
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let (reals, loads) = (
            used(&|n| match n {
                Any::R(RNode::In(s)) => Some(*s),
                _ => None,
            }),
            used(&|n| match n {
                Any::C(CNode::Load(s)) => Some(*s),
                _ => None,
            }),
        );
        let mut s = String::new();
        if !self.contract {
            s.push_str(
                "// built with FMA contraction off: `PtxOptions::default().contract(false)`\n",
            );
        }
        if self.fastmath {
            s.push_str("// built with fastmath: `PtxOptions::default().fastmath(true)`\n");
        }
        s.push_str(&format!(
            "let k = Kernel::<(&[u64], &[Complex<{t}>], &mut [Complex<{t}>])>::build(\"repro\", |k, (inp, cin, out)| {{\n"
        ));
        for (i, slot) in reals.iter().enumerate() {
            let conv = if f64 {
                ".bitcast::<f64>()"
            } else {
                ".cast::<u32>().bitcast::<f32>()"
            };
            s.push_str(&format!("    let x_{t}_{slot} = inp.at({i}u64){conv};\n"));
        }
        for (i, slot) in loads.iter().enumerate() {
            s.push_str(&format!("    let c_{t}_{slot} = cin.at({i}u64);\n"));
        }
        s.push_str(&format!(
            "    out.set(0u64, {});\n}})?;\n",
            rust_c(&self.node.root, f64)
        ));
        let part = |slot: usize| {
            let b = self.inputs[first + slot % CSLOTS];
            format!("{b:#x} /* {} */", part_val(f64, b).rust())
        };
        let vals: Vec<String> = reals.iter().map(|&slot| part(slot as usize)).collect();
        if !vals.is_empty() {
            s.push_str(&format!("// inp = [{}]\n", vals.join(", ")));
        }
        if !loads.is_empty() {
            let els: Vec<String> = loads
                .iter()
                .map(|&l| format!("({}, {})", part(l as usize), part(l as usize + 1)))
                .collect();
            s.push_str(&format!("// cin = [{}]\n", els.join(", ")));
        }
        let show = |w: Option<u64>| w.map_or("(open)".to_string(), |b| part_val(f64, b).rust());
        s.push_str(&format!(
            "// Rust: ({}, {}); device: ({}, {})\n",
            show(self.want.re),
            show(self.want.im),
            show(Some(self.got.re)),
            show(Some(self.got.im))
        ));
        if let Some(m) = &self.math {
            s.push_str(&format!("// failed: {m}\n"));
        }
        s
    }
}
