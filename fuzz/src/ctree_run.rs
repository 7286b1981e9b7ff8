//! Complex trees (`ctree.rs`) as kernels through `CExpr`, run and compared with the host
//! model (`ctree_model.rs`), minimised to their smallest differing sub-expression and
//! printed as a Rust reproducer.
//!
//! A batch kernel has the signature `(&[u64], &[Complex<f32>], &[Complex<f64>], &mut [u64],
//! &mut [Complex<f32>], &mut [Complex<f64>])`: thread `i` reads `CINPUTS` words (`CSLOTS` f32
//! inputs, then `CSLOTS` f64 ones, each in the low bits of its word) and, for the trees' `Load`
//! leaves, its `CSLOTS` elements of each complex array (element `s` is `in[s] + in[s + 1] i` of
//! the part type, slots modulo `CSLOTS`); it writes, tree after tree, the root's real and
//! imaginary parts and then the probes of the tree's `exp`, `ln` (two words each) and `arg`
//! (one), children before parents, to its row of words, and the root again as element
//! `i * trees + j` of the complex output array of its part type (which must hold the same
//! bits: the 2-lane vector store against the scalar ones).

use cudajit::codegen::{CExpr, CSlice, CSliceMut, ComplexPart, Expr, Kernel, PtxOptions, Scalar};
use cudajit::prelude::*;
use num_complex::Complex;

use super::check::{Config, Contract, Fastmath, FILL};
use super::ctree::{
    random_part, random_tree, Any, CBin, CNode, CTree, CUn, PartFn, RArith, RNode, CINPUTS, CSLOTS,
};
use super::ctree_model::{bits, same, CModel, HostPart};
use super::rng::Rng;

/// A part type on both sides: the builder's `ComplexPart` and the model's `HostPart`, with its
/// words' layout.
pub trait Part: ComplexPart + HostPart {
    /// The Rust name.
    const NAME: &'static str;
    /// The value in the low bits of `raw`.
    fn load(raw: Expr<u64>) -> Expr<Self>;
    /// The bits, zero-extended to 64.
    fn store(x: Expr<Self>) -> Expr<u64>;
    /// Where its inputs start in a thread's words.
    const FIRST: usize;
}

impl Part for f32 {
    const NAME: &'static str = "f32";
    fn load(raw: Expr<u64>) -> Expr<f32> {
        raw.cast::<u32>().bitcast()
    }
    fn store(x: Expr<f32>) -> Expr<u64> {
        x.bitcast::<u32>().cast()
    }
    const FIRST: usize = 0;
}

impl Part for f64 {
    const NAME: &'static str = "f64";
    fn load(raw: Expr<u64>) -> Expr<f64> {
        raw.bitcast()
    }
    fn store(x: Expr<f64>) -> Expr<u64> {
        x.bitcast()
    }
    const FIRST: usize = CSLOTS;
}

/// What a run does: as `check::Config`, for the complex trees.
#[derive(Clone, Debug)]
pub struct CConfig {
    /// Trees in all.
    pub trees: usize,
    /// Seed of the first batch; batch `b` uses `seed + b` (mixed with a constant, so that the
    /// streams differ from the scalar trees').
    pub seed: u64,
    /// Trees per kernel, input vectors (threads) per kernel, maximum depth.
    pub per_kernel: usize,
    /// Input vectors (threads) per kernel.
    pub threads: usize,
    /// Maximum tree depth.
    pub depth: u32,
    /// Minimise only the first this many mismatches.
    pub minimise: usize,
    /// FMA contraction of the batches (the complex operators never contract; the trees' real
    /// adds of products do).
    pub contract: Contract,
    /// Fastmath of the batches. With fastmath, f32 trees are run but left open (f32 arithmetic
    /// may then approximate, flush subnormals and assume no NaN or infinity); f64 ones are
    /// unchanged and compared.
    pub fastmath: Fastmath,
    /// Stop after this many seconds.
    pub max_seconds: Option<f64>,
}

/// Whether batch `seed` is built with fastmath.
pub fn fastmath_for(cfg: &CConfig, seed: u64) -> bool {
    cfg.fastmath.for_seed(seed)
}

impl CConfig {
    /// `trees` complex trees with the seed, batch shape, minimising, contraction, fastmath and
    /// time limit of a scalar run.
    pub fn like(cfg: &Config, trees: usize) -> CConfig {
        CConfig {
            trees,
            seed: cfg.seed,
            per_kernel: cfg.per_kernel,
            threads: cfg.threads,
            depth: cfg.depth,
            minimise: cfg.minimise,
            contract: cfg.contract,
            fastmath: cfg.fastmath,
            max_seconds: cfg.max_seconds,
        }
    }
}

/// One mismatch, minimised.
#[derive(Clone, Debug)]
pub struct CMismatch {
    /// Seed of its batch.
    pub seed: u64,
    /// Tree index in the batch.
    pub tree: usize,
    /// Thread (input vector).
    pub thread: usize,
    /// The thread's input words.
    pub inputs: Vec<u64>,
    /// The smallest differing sub-tree (the whole tree if none smaller differs).
    pub node: CTree,
    /// The model's parts, as bits (`None`: open).
    pub want: Complex<Option<u64>>,
    /// The device's parts, as bits.
    pub got: Complex<u64>,
    /// Why, when it is not (only) a differing result: a math function out of its bounds, or
    /// the complex array's element not the stored parts.
    pub math: Option<String>,
    /// Whether its kernel was built with FMA contraction.
    pub contract: bool,
    /// Whether its kernel was built with fastmath.
    pub fastmath: bool,
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct CReport {
    /// Trees run.
    pub trees: usize,
    /// Their nodes.
    pub nodes: usize,
    /// Kernels launched.
    pub kernels: usize,
    /// Result parts compared bit for bit (part x tree x input vector).
    pub compared: usize,
    /// Root parts compared between the complex output array and the words (the device's
    /// 2-lane vector store against its scalar stores).
    pub stores_compared: usize,
    /// Root parts of the complex output array left open (f32 under fastmath).
    pub stores_open: usize,
    /// Root parts compared between `Elementwise` (every 8th tree) and the batch kernel.
    pub ew_compared: usize,
    /// Parts left open: a sign copied from a NaN, or f32 under fastmath.
    pub open: usize,
    /// `exp`/`ln`/`arg` results checked within bounds, and left unchecked.
    pub math_checked: usize,
    /// `exp`/`ln`/`arg` results left unchecked (open arguments, outside the bounds' domain).
    pub math_unchecked: usize,
    /// Real adds the model fused with a product (contraction on), and of those the ones whose
    /// product was a part of a complex value (`(z * s).re + c`).
    pub fused: usize,
    /// Of those, the ones whose product was a part of a complex value.
    pub fused_parts: usize,
    /// Trees built with fastmath.
    pub fastmath_trees: usize,
    /// The mismatches, minimised.
    pub mismatches: Vec<CMismatch>,
}

/// The trees of batch `seed`.
pub fn batch_trees(seed: u64, cfg: &CConfig) -> Vec<CTree> {
    let mut rng = Rng::new(seed ^ 0x636f_6d70_6c65_7821);
    (0..cfg.per_kernel)
        .map(|_| random_tree(&mut rng, cfg.depth))
        .collect()
}

/// The input vectors of batch `seed`.
pub fn batch_inputs(seed: u64, threads: usize) -> Vec<Vec<u64>> {
    let mut rng = Rng::new(seed ^ 0x6378_696e_7075_7473);
    (0..threads)
        .map(|_| {
            (0..CINPUTS)
                .map(|c| random_part(&mut rng, c >= CSLOTS))
                .collect()
        })
        .collect()
}

/// Lowers one tree of part type `T`.
struct Lower<'a, T> {
    ins: &'a [Expr<T>],
    /// The thread's elements of the complex input array.
    cins: &'a [CExpr<T>],
    probe: &'a mut dyn FnMut(Expr<u64>),
}

impl<T: Part> Lower<'_, T> {
    fn lit(b: u64) -> T {
        <T as Scalar>::from_bits(b)
    }

    fn real(&mut self, n: &RNode) -> Expr<T> {
        match n {
            RNode::In(s) => self.ins[*s as usize],
            RNode::Lit(b) => Expr::lit(Self::lit(*b)),
            RNode::Part(f, z) => {
                let z = self.complex(z);
                match f {
                    PartFn::Re => z.re,
                    PartFn::Im => z.im,
                    PartFn::Abs => z.abs(),
                    PartFn::NormSqr => z.norm_sqr(),
                    PartFn::Arg => {
                        let a = z.arg();
                        (self.probe)(T::store(a));
                        a
                    }
                }
            }
            RNode::Arith(op, a, b) => {
                let (x, y) = (self.real(a), self.real(b));
                match op {
                    RArith::Add => x + y,
                    RArith::Sub => x - y,
                    RArith::Mul => x * y,
                }
            }
        }
    }

    fn complex(&mut self, n: &CNode) -> CExpr<T> {
        match n {
            CNode::New(a, b) => {
                let (x, y) = (self.real(a), self.real(b));
                CExpr::new(x, y)
            }
            CNode::Real(a) => CExpr::from(self.real(a)),
            CNode::Lit(re, im) => CExpr::lit(Complex::new(Self::lit(*re), Self::lit(*im))),
            CNode::Load(s) => self.cins[*s as usize],
            CNode::Bin(op, a, b) => {
                let (x, y) = (self.complex(a), self.complex(b));
                match op {
                    CBin::Add => x + y,
                    CBin::Sub => x - y,
                    CBin::Mul => x * y,
                    CBin::Div => x / y,
                }
            }
            CNode::Un(op, a) => {
                let x = self.complex(a);
                let z = match op {
                    CUn::Neg => -x,
                    CUn::Conj => x.conj(),
                    CUn::Sqrt => x.sqrt(),
                    CUn::Exp => x.exp(),
                    CUn::Ln => x.ln(),
                };
                if matches!(op, CUn::Exp | CUn::Ln) {
                    (self.probe)(T::store(z.re));
                    (self.probe)(T::store(z.im));
                }
                z
            }
            CNode::Scale(z, s) => {
                let z = self.complex(z);
                let s = self.real(s);
                z * s
            }
        }
    }
}

/// A batch kernel: input words and complex arrays in, results and probes out (see the module
/// docs).
pub type CKernel = Kernel<(
    &'static [u64],
    &'static [Complex<f32>],
    &'static [Complex<f64>],
    &'static mut [u64],
    &'static mut [Complex<f32>],
    &'static mut [Complex<f64>],
)>;

/// Output words of a tree: its root's parts and its probes.
fn words(t: &CTree) -> usize {
    2 + t.probe_words()
}

/// The root of tree `root` over the inputs `ins` and complex inputs `cins`, without probes
/// (for `Elementwise` bodies, `ctree_ew.rs`).
pub fn lower_root<T: Part>(root: &CNode, ins: &[Expr<T>], cins: &[CExpr<T>]) -> CExpr<T> {
    Lower {
        ins,
        cins,
        probe: &mut |_| {},
    }
    .complex(root)
}

/// Stores tree `t`'s root and probes from word `base`, and its root as `cout`'s element `at`.
fn lower_tree<T: Part>(
    t: &CNode,
    (ins, cins): (&[Expr<T>], &[CExpr<T>]),
    out: &cudajit::codegen::SliceMut<u64>,
    base: Expr<u64>,
    (cout, at): (&CSliceMut<T>, Expr<u64>),
) {
    let mut next = 2u64;
    let mut store = |d: Expr<u64>| {
        out.set(base + next, d);
        next += 1;
    };
    let z = Lower {
        ins,
        cins,
        probe: &mut store,
    }
    .complex(t);
    out.set(base, T::store(z.re));
    out.set(base + 1u64, T::store(z.im));
    cout.set(at, z);
}

/// The batch kernel of `trees`; its output row width.
pub fn kernel(
    name: &str,
    trees: &[CTree],
    contract: bool,
    fastmath: bool,
) -> cudajit::Result<(CKernel, usize)> {
    let width: usize = trees.iter().map(words).sum();
    let opts = PtxOptions::default().contract(contract).fastmath(fastmath);
    type Params<'a> = (
        &'a [u64],
        &'a [Complex<f32>],
        &'a [Complex<f64>],
        &'a mut [u64],
        &'a mut [Complex<f32>],
        &'a mut [Complex<f64>],
    );
    let n = trees.len() as u64;
    let k = Kernel::<Params>::build_with(name, opts, |k, (inp, c32, c64, out, o32, o64)| {
        let i = k.grid1();
        k.if_(i.lt(inp.len() / CINPUTS as u64), |_| {
            let base = i * CINPUTS as u64;
            let load = |c: usize| inp.at(base + c as u64);
            fn all<T: Part>(load: impl Fn(usize) -> Expr<u64>) -> Vec<Expr<T>> {
                (0..CSLOTS).map(|s| T::load(load(T::FIRST + s))).collect()
            }
            fn elems<T: Part>(a: &CSlice<T>, i: Expr<u64>) -> Vec<CExpr<T>> {
                (0..CSLOTS)
                    .map(|s| a.at(i * CSLOTS as u64 + s as u64))
                    .collect()
            }
            let (f, d) = (all::<f32>(&load), all::<f64>(&load));
            let (cf, cd) = (elems(&c32, i), elems(&c64, i));
            let mut at = 0u64;
            for (j, t) in trees.iter().enumerate() {
                let row = i * width as u64 + at;
                let el = i * n + j as u64;
                if t.f64 {
                    lower_tree(&t.root, (&d, &cd), &out, row, (&o64, el));
                } else {
                    lower_tree(&t.root, (&f, &cf), &out, row, (&o32, el));
                }
                at += words(t) as u64;
            }
        });
    })?;
    Ok((k, width))
}

/// The complex input array of part type `T` for `inputs`: `CSLOTS` elements per thread.
pub fn complex_inputs<T: Part>(inputs: &[Vec<u64>]) -> Vec<Complex<T>> {
    inputs
        .iter()
        .flat_map(|inp| {
            (0..CSLOTS).map(|s| {
                let part = |s: usize| <T as HostPart>::from_bits(inp[T::FIRST + s % CSLOTS]);
                Complex::new(part(s), part(s + 1))
            })
        })
        .collect()
}

/// What a launch gives back: the rows of words, the row width, and the complex output arrays
/// as bits (element `i * trees + j`).
struct Out {
    words: Vec<u64>,
    width: usize,
    c32: Vec<Complex<u64>>,
    c64: Vec<Complex<u64>>,
}

/// Runs `trees` on every input vector.
fn launch(
    stream: &Stream,
    trees: &[CTree],
    inputs: &[Vec<u64>],
    contract: bool,
    fastmath: bool,
) -> Result<Out> {
    let (k, width) = kernel("fuzzc", trees, contract, fastmath)?;
    let flat: Vec<u64> = inputs.iter().flatten().copied().collect();
    let dinp = stream.to_device(&flat)?;
    let d32 = stream.to_device(&complex_inputs::<f32>(inputs))?;
    let d64 = stream.to_device(&complex_inputs::<f64>(inputs))?;
    let mut out = stream.context().alloc::<u64, _>(inputs.len() * width)?;
    out.fill_async(FILL, stream)?;
    let n = inputs.len() * trees.len();
    let fill32 = Complex::new(f32::from_bits(FILL as u32), f32::from_bits(FILL as u32));
    let fill64 = Complex::new(f64::from_bits(FILL), f64::from_bits(FILL));
    let mut o32 = stream.to_device(&vec![fill32; n])?;
    let mut o64 = stream.to_device(&vec![fill64; n])?;
    k.launch(
        stream,
        LaunchConfig::for_num_elems(inputs.len(), 128)?,
        (&dinp, &d32, &d64, &mut out, &mut o32, &mut o64),
    )?;
    let bits32 = |c: &Complex<f32>| Complex::new(c.re.to_bits() as u64, c.im.to_bits() as u64);
    let bits64 = |c: &Complex<f64>| Complex::new(c.re.to_bits(), c.im.to_bits());
    Ok(Out {
        words: out.to_vec_async(stream)?,
        width,
        c32: o32.to_vec_async(stream)?.iter().map(bits32).collect(),
        c64: o64.to_vec_async(stream)?.iter().map(bits64).collect(),
    })
}

impl Out {
    /// Tree `j`'s root on thread `i` as stored in the complex output array, as bits.
    fn element(&self, t: &CTree, i: usize, j: usize, trees: usize) -> Complex<u64> {
        let a = if t.f64 { &self.c64 } else { &self.c32 };
        a[i * trees + j]
    }
}

/// How a tree differs: the model's parts, the device's, and a bound's violation.
type Diff = (Complex<Option<u64>>, Complex<u64>, Option<String>);

fn check_p<T: Part>(
    root: &CNode,
    inp: &[u64],
    w: &[u64],
    contract: bool,
    rep: &mut CReport,
) -> Option<Diff> {
    let ins: Vec<T> = (0..CSLOTS)
        .map(|s| <T as HostPart>::from_bits(inp[T::FIRST + s]))
        .collect();
    let mut m = CModel::<T>::new(&ins, &w[2..], contract);
    let c = m.complex(root);
    rep.math_checked += m.checked;
    rep.math_unchecked += m.unchecked;
    rep.fused += m.fused;
    rep.fused_parts += m.fused_parts;
    let got = Complex::new(w[0], w[1]);
    let parts = [
        same(c.re, <T as HostPart>::from_bits(w[0])),
        same(c.im, <T as HostPart>::from_bits(w[1])),
    ];
    let mut differs = false;
    for p in parts {
        match p {
            None => rep.open += 1,
            Some(ok) => {
                rep.compared += 1;
                differs |= !ok;
            }
        }
    }
    let math = m.errors.into_iter().next().map(|e| {
        format!("out of bounds: {e} (the results above continue from the device's value)")
    });
    (differs || math.is_some()).then(|| (bits(&c), got, math))
}

/// Compares a tree's words `w` (root and probes) on one input vector, and the root as the
/// complex output array holds it (`elem`), which must be the same bits (f32 under fastmath:
/// both open).
fn check_tree(
    t: &CTree,
    inp: &[u64],
    (w, elem): (&[u64], Complex<u64>),
    contract: bool,
    fast: bool,
    rep: &mut CReport,
) -> Option<Diff> {
    // f32 under fastmath is open, the complex array's copy too: LLVM may assume no NaN or
    // infinity, so a value built from one is poison, and a store of poison may be dropped (the
    // array keeps its poison words) or the two stores computed apart (seen on two H200s: 171
    // of 8,896 trees, every one a fastmath batch).
    if fast && !t.f64 {
        rep.open += 2;
        rep.stores_open += 2;
        return None;
    }
    rep.stores_compared += 2;
    if elem != Complex::new(w[0], w[1]) {
        let why = format!(
            "the complex array's element ({:#x}, {:#x}) is not the parts stored as words",
            elem.re, elem.im
        );
        return Some((Complex::new(Some(w[0]), Some(w[1])), elem, Some(why)));
    }
    if t.f64 {
        check_p::<f64>(&t.root, inp, w, contract, rep)
    } else {
        check_p::<f32>(&t.root, inp, w, contract, rep)
    }
}

/// The smallest sub-tree of `t` that differs alone on `inp` (a real one as `CExpr::from`).
fn minimise_tree(
    stream: &Stream,
    t: &CTree,
    inp: &[u64],
    contract: bool,
    fast: bool,
) -> Result<Option<(CTree, Diff)>> {
    let mut subs: Vec<CTree> = Any::C(&t.root)
        .subtrees()
        .into_iter()
        .filter(|n| n.size() > 1)
        .map(|n| CTree {
            f64: t.f64,
            root: match n {
                Any::C(c) => c.clone(),
                Any::R(r) => CNode::Real(Box::new(r.clone())),
            },
        })
        .collect();
    subs.sort_by_key(CTree::size);
    let rows = vec![inp.to_vec()];
    for s in subs.into_iter().take(200) {
        let out = launch(stream, std::slice::from_ref(&s), &rows, contract, fast)?;
        let mut scratch = CReport::default();
        let w = (&out.words[..out.width], out.element(&s, 0, 0, 1));
        if let Some(d) = check_tree(&s, inp, w, contract, fast, &mut scratch) {
            return Ok(Some((s, d)));
        }
    }
    Ok(None)
}

/// Runs one batch.
fn run_batch(
    stream: &Stream,
    cfg: &CConfig,
    seed: u64,
    count: usize,
    rep: &mut CReport,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let mut trees = batch_trees(seed, cfg);
    trees.truncate(count);
    let inputs = batch_inputs(seed, cfg.threads);
    let modes = (cfg.contract.for_seed(seed), fastmath_for(cfg, seed));
    let minimise = cfg.minimise.saturating_sub(rep.mismatches.len());
    run_trees(stream, &trees, &inputs, modes, (seed, minimise), rep, log)
}

/// Runs `trees` on every input vector with contraction and fastmath `(contract, fastmath)`:
/// counts into `rep`, logs and records each mismatch (one input vector per tree), the first
/// `minimise` of them minimised; `seed` only names the batch in the log.
pub fn run_trees(
    stream: &Stream,
    trees: &[CTree],
    inputs: &[Vec<u64>],
    (contract, fast): (bool, bool),
    (seed, minimise): (u64, usize),
    rep: &mut CReport,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let out = launch(stream, trees, inputs, contract, fast)?;
    let width = out.width;
    rep.kernels += 1;
    rep.trees += trees.len();
    rep.nodes += trees.iter().map(CTree::size).sum::<usize>();
    rep.fastmath_trees += if fast { trees.len() } else { 0 };
    let mut at = 0;
    let mut minimised = 0;
    for (j, t) in trees.iter().enumerate() {
        let n = words(t);
        for (i, inp) in inputs.iter().enumerate() {
            let w = &out.words[i * width + at..i * width + at + n];
            let elem = out.element(t, i, j, trees.len());
            let Some((want, got, math)) = check_tree(t, inp, (w, elem), contract, fast, rep) else {
                continue;
            };
            let mut mm = CMismatch {
                seed,
                tree: j,
                thread: i,
                inputs: inp.clone(),
                node: t.clone(),
                want,
                got,
                math,
                contract,
                fastmath: fast,
            };
            if minimised < minimise {
                minimised += 1;
                if let Some((node, (want, got, math))) =
                    minimise_tree(stream, t, inp, contract, fast)?
                {
                    (mm.node, mm.want, mm.got, mm.math) = (node, want, got, math);
                }
            }
            log(&format!(
                "MISMATCH (complex) seed {seed} tree {j} thread {i}{}\n{}",
                mm.math.as_ref().map_or(String::new(), |m| format!(": {m}")),
                mm.snippet()
            ));
            rep.mismatches.push(mm);
            break;
        }
        at += n;
    }
    // Every 8th tree again through `Elementwise`, on all input vectors but the last (an odd
    // count): the same bits as the batch kernel's (f32 with fastmath aside).
    for (j, t) in trees.iter().enumerate().step_by(8) {
        if fast && !t.f64 {
            continue;
        }
        let rows = &inputs[..inputs.len().saturating_sub(1)];
        let ew = super::ctree_ew::roots(stream, t, rows, contract, fast)?;
        for (i, e) in ew.iter().enumerate() {
            let b = out.element(t, i, j, trees.len());
            rep.ew_compared += 2;
            let part = |x: u64, y: u64| x == y || (part_nan(t, x) && part_nan(t, y));
            if part(e.re, b.re) && part(e.im, b.im) {
                continue;
            }
            let ty = if t.f64 { "f64" } else { "f32" };
            let why = format!(
                "Elementwise::<(Elem<{ty}> x {CSLOTS}, Elem<Complex<{ty}>> x {CSLOTS}), CExpr<{ty}>> \
                 over {} elements (the real inputs slot by slot, then the complex ones) gives \
                 ({:#x}, {:#x}) for this tree, the batch kernel ({:#x}, {:#x})",
                rows.len(),
                e.re,
                e.im,
                b.re,
                b.im
            );
            let mm = CMismatch {
                seed,
                tree: j,
                thread: i,
                inputs: inputs[i].clone(),
                node: t.clone(),
                want: Complex::new(Some(b.re), Some(b.im)),
                got: *e,
                math: Some(why),
                contract,
                fastmath: fast,
            };
            log(&format!(
                "MISMATCH (complex, Elementwise) seed {seed} tree {j} thread {i}\n{}",
                mm.snippet()
            ));
            rep.mismatches.push(mm);
            break;
        }
    }
    Ok(())
}

/// Whether the bits `b` of a part of `t`'s type are a NaN.
fn part_nan(t: &CTree, b: u64) -> bool {
    if t.f64 {
        f64::from_bits(b).is_nan()
    } else {
        f32::from_bits(b as u32).is_nan()
    }
}

/// The seed of batch `b` (the generators mix it with their own constants, so the streams are
/// apart from the scalar trees').
fn batch_seed(cfg: &CConfig, b: usize) -> u64 {
    cfg.seed.wrapping_add(b as u64)
}

/// Runs the configured number of complex trees; `log` gets a line per mismatch and a progress
/// line every 100 batches.
pub fn run(ctx: &Context, cfg: &CConfig, mut log: impl FnMut(&str)) -> Result<CReport> {
    let stream = ctx.new_stream()?;
    let mut rep = CReport::default();
    let per = cfg.per_kernel.max(1);
    let t0 = std::time::Instant::now();
    for b in 0..cfg.trees.div_ceil(per) {
        if cfg
            .max_seconds
            .is_some_and(|s| t0.elapsed().as_secs_f64() > s)
        {
            log(&format!(
                "time limit reached after {} complex trees",
                rep.trees
            ));
            break;
        }
        run_batch(
            &stream,
            cfg,
            batch_seed(cfg, b),
            cfg.trees - b * per,
            &mut rep,
            &mut log,
        )?;
        if (b + 1) % 100 == 0 {
            log(&format!(
                "progress: {} complex trees, {} mismatches",
                rep.trees,
                rep.mismatches.len()
            ));
        }
    }
    Ok(rep)
}

/// Compiles every batch kernel to PTX for compute capability `cc` (no device; with
/// `FUZZ_PTX_DIR=DIR` each is written to `DIR/complex-SEED.ptx`): returns the number of
/// kernels.
pub fn compile_only(cfg: &CConfig, cc: (u32, u32), mut log: impl FnMut(&str)) -> Result<usize> {
    let per = cfg.per_kernel.max(1);
    let mut n = 0;
    for b in 0..cfg.trees.div_ceil(per) {
        let seed = batch_seed(cfg, b);
        let mut trees = batch_trees(seed, cfg);
        trees.truncate(cfg.trees - b * per);
        let fast = fastmath_for(cfg, seed);
        log(&format!(
            "complex batch {b} (seed {seed}): {} trees",
            trees.len()
        ));
        let opts = PtxOptions::for_cc(cc.0, cc.1).fastmath(fast);
        let ptx = kernel("fuzzc", &trees, cfg.contract.for_seed(seed), fast)?
            .0
            .compile_ptx(&opts)?;
        // With `FUZZ_PTX_DIR=DIR` (as `check::compile_only`): the PTX, e.g. for ptxas.
        if let Ok(dir) = std::env::var("FUZZ_PTX_DIR") {
            let written = std::fs::create_dir_all(&dir)
                .and_then(|_| std::fs::write(format!("{dir}/complex-{seed}.ptx"), ptx));
            if let Err(e) = written {
                log(&format!("could not write {dir}/complex-{seed}.ptx: {e}"));
            }
        }
        n += 1;
    }
    Ok(n)
}
