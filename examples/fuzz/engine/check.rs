//! Runs batches of random trees on the current backend (GPU or simulator), compares every
//! result with the host model, and minimises each mismatch to its smallest differing
//! sub-expression.

use cudajit::prelude::*;

use super::lower::{self, INPUTS};
use super::model::Model;
use super::rng::Rng;
use super::tree::{random_val, Gen, Node, Ty, Val, SLOTS, TYS};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Trees in all.
    pub trees: usize,
    /// Seed of the first batch; batch `b` uses `seed + b`.
    pub seed: u64,
    /// Trees per kernel.
    pub per_kernel: usize,
    /// Input vectors (threads) per kernel.
    pub threads: usize,
    /// Maximum tree depth.
    pub depth: u32,
    /// Stop after this many seconds (the report says how many trees ran).
    pub max_seconds: Option<f64>,
    /// Minimise only the first this many mismatches (each costs up to 200 small kernels).
    pub minimise: usize,
}

/// One mismatch, minimised.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Seed of the batch it was found in.
    pub seed: u64,
    /// Tree index in the batch and thread (input vector).
    pub tree: usize,
    pub thread: usize,
    /// The thread's inputs, `[type index * SLOTS + slot]`.
    pub inputs: Vec<Val>,
    /// The smallest differing sub-expression (the whole tree if none smaller differs).
    pub node: Node,
    /// Rust's value (None: indeterminate) and the device's.
    pub want: Option<Val>,
    pub got: Val,
    /// For an inexact function out of its bounds: why.
    pub math: Option<String>,
}

impl Mismatch {
    /// A Rust snippet that rebuilds the differing expression and its inputs.
    pub fn snippet(&self) -> String {
        let used: Vec<(Ty, u8)> = {
            let mut v: Vec<(Ty, u8)> = self
                .node
                .subtrees()
                .into_iter()
                .filter_map(|n| match n {
                    Node::Input(t, s) => Some((*t, *s)),
                    _ => None,
                })
                .collect();
            v.sort_by_key(|(t, s)| (t.index(), *s));
            v.dedup();
            v
        };
        let mut s = String::new();
        s.push_str("let k = Kernel::<(&[u64], &mut [u64])>::build(\"repro\", |k, (inp, out)| {\n");
        for (i, (t, slot)) in used.iter().enumerate() {
            let load = format!("inp.at({i}u64)");
            let conv = match t {
                Ty::Bool => format!("({load} & 1u64).ne(0u64)"),
                Ty::I32 => format!("{load}.cast::<u32>().bitcast::<i32>()"),
                Ty::U32 => format!("{load}.cast::<u32>()"),
                Ty::I64 => format!("{load}.bitcast::<i64>()"),
                Ty::U64 => load,
                Ty::F32 => format!("{load}.cast::<u32>().bitcast::<f32>()"),
                Ty::F64 => format!("{load}.bitcast::<f64>()"),
            };
            s.push_str(&format!("    let x_{}_{slot} = {conv};\n", t.name()));
        }
        let store = match self.node.ty() {
            Ty::Bool | Ty::U32 => ".cast::<u64>()",
            Ty::I32 | Ty::F32 => ".bitcast::<u32>().cast::<u64>()",
            Ty::I64 | Ty::F64 => ".bitcast::<u64>()",
            Ty::U64 => "",
        };
        s.push_str(&format!(
            "    out.set(0u64, {}{store});\n}})?;\n",
            lower::rust(&self.node)
        ));
        let vals: Vec<String> = used
            .iter()
            .map(|(t, slot)| {
                let v = self.inputs[t.index() * SLOTS + *slot as usize];
                format!("{:#x} /* {} */", v.to_bits(), v.rust())
            })
            .collect();
        s.push_str(&format!("// inp = [{}]\n", vals.join(", ")));
        s.push_str(&format!(
            "// Rust: {}; device: {}\n",
            self.want.map_or("(any NaN bits)".into(), |v| v.rust()),
            self.got.rust()
        ));
        s
    }
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub trees: usize,
    pub kernels: usize,
    pub nodes: usize,
    /// Results compared bit for bit (tree x input vector).
    pub compared: usize,
    /// Inexact results checked within their bounds.
    pub math_checked: usize,
    /// Results Rust leaves open (NaN bits), not compared.
    pub indeterminate: usize,
    pub mismatches: Vec<Mismatch>,
}

/// The trees of batch `seed`.
pub fn batch_trees(seed: u64, cfg: &Config) -> Vec<Node> {
    let mut rng = Rng::new(seed);
    (0..cfg.per_kernel)
        .map(|_| {
            let ty = TYS[rng.below(TYS.len() as u64) as usize];
            let depth = 1 + rng.below(cfg.depth as u64) as u32;
            Gen { rng: &mut rng }.tree(ty, depth)
        })
        .collect()
}

/// Input vectors of batch `seed`: `threads` rows of `INPUTS` values.
pub fn batch_inputs(seed: u64, threads: usize) -> Vec<Vec<Val>> {
    let mut rng = Rng::new(seed ^ 0xa5a5_a5a5);
    (0..threads)
        .map(|_| {
            (0..INPUTS)
                .map(|c| random_val(&mut rng, TYS[c / SLOTS]))
                .collect()
        })
        .collect()
}

/// Runs `trees` on every input vector; returns the output rows and the row width.
fn launch(stream: &Stream, trees: &[Node], inputs: &[Vec<Val>]) -> Result<(Vec<u64>, usize)> {
    let (k, width) = lower::kernel("fuzz", trees)?;
    let flat: Vec<u64> = inputs.iter().flatten().map(|v| v.to_bits()).collect();
    let dinp = stream.to_device(&flat)?;
    let mut out = stream.context().alloc::<u64, _>(inputs.len() * width)?;
    out.fill_async(0xdead_beef_dead_beef, stream)?;
    k.launch(
        stream,
        LaunchConfig::for_num_elems(inputs.len(), 128)?,
        (&dinp, &mut out),
    )?;
    Ok((out.to_vec_async(stream)?, width))
}

/// Compares tree `j` of a batch on one thread: `Some(mismatch)` if it differs.
fn check_one(
    tree: &Node,
    inputs: &[Val],
    result: u64,
    probes: &[u64],
    report: &mut Report,
) -> Option<(Option<Val>, Val, Option<String>)> {
    let probe_vals: Vec<Val> = {
        let mut ps = Vec::new();
        for n in tree.subtrees() {
            if n.is_inexact() {
                ps.push(Val::from_bits(n.ty(), probes[ps.len()]));
            }
        }
        ps
    };
    let mut m = Model::new(inputs, &probe_vals);
    let want = m.eval(tree);
    report.math_checked += probe_vals.len();
    let got = Val::from_bits(tree.ty(), result);
    if let Some(e) = m.errors.into_iter().next() {
        return Some((want, got, Some(e)));
    }
    match want {
        None => {
            report.indeterminate += 1;
            None
        }
        Some(w) => {
            report.compared += 1;
            (!w.same(got)).then_some((want, got, None))
        }
    }
}

/// The smallest sub-tree of `tree` that differs on `inputs` (each tried alone in a kernel).
fn minimise(
    stream: &Stream,
    tree: &Node,
    inputs: &[Val],
) -> Result<Option<(Node, Option<Val>, Val)>> {
    let mut subs: Vec<&Node> = tree.subtrees();
    subs.sort_by_key(|n| n.size());
    subs.dedup();
    let rows = vec![inputs.to_vec()];
    for s in subs.into_iter().filter(|n| n.size() > 1).take(200) {
        let (out, width) = launch(stream, std::slice::from_ref(s), &rows)?;
        let mut scratch = Report::default();
        if let Some((want, got, _)) = check_one(s, inputs, out[0], &out[1..width], &mut scratch) {
            return Ok(Some((s.clone(), want, got)));
        }
    }
    Ok(None)
}

/// Runs the configured number of trees; `log` receives a line per mismatch and progress.
pub fn run(ctx: &Context, cfg: &Config, mut log: impl FnMut(&str)) -> Result<Report> {
    let stream = ctx.new_stream()?;
    let mut report = Report::default();
    let batches = cfg.trees.div_ceil(cfg.per_kernel.max(1));
    let t0 = std::time::Instant::now();
    for b in 0..batches {
        if cfg
            .max_seconds
            .is_some_and(|s| t0.elapsed().as_secs_f64() > s)
        {
            log(&format!("time limit reached after {} trees", report.trees));
            break;
        }
        let seed = cfg.seed.wrapping_add(b as u64);
        let mut trees = batch_trees(seed, cfg);
        trees.truncate(cfg.trees - b * cfg.per_kernel);
        let inputs = batch_inputs(seed, cfg.threads);
        let (out, width) = launch(&stream, &trees, &inputs)?;
        report.kernels += 1;
        report.trees += trees.len();
        report.nodes += trees.iter().map(Node::size).sum::<usize>();
        let mut probe_at = trees.len();
        for (j, tree) in trees.iter().enumerate() {
            let np = lower::probes(tree);
            for (i, inp) in inputs.iter().enumerate() {
                let row = &out[i * width..(i + 1) * width];
                let probes = &row[probe_at..probe_at + np];
                let Some((want, got, math)) = check_one(tree, inp, row[j], probes, &mut report)
                else {
                    continue;
                };
                let mut mm = Mismatch {
                    seed,
                    tree: j,
                    thread: i,
                    inputs: inp.clone(),
                    node: tree.clone(),
                    want,
                    got,
                    math,
                };
                if mm.math.is_none() && report.mismatches.len() < cfg.minimise {
                    if let Some((node, want, got)) = minimise(&stream, tree, inp)? {
                        (mm.node, mm.want, mm.got) = (node, want, got);
                    }
                }
                log(&format!(
                    "MISMATCH seed {seed} tree {j} thread {i}{}\n{}",
                    mm.math.as_ref().map_or(String::new(), |m| format!(": {m}")),
                    mm.snippet()
                ));
                report.mismatches.push(mm);
                break; // one input vector per tree is enough
            }
            probe_at += np;
        }
        if (b + 1) % 100 == 0 {
            log(&format!(
                "progress: {} trees, {} compared, {} mismatches",
                report.trees,
                report.compared,
                report.mismatches.len()
            ));
        }
    }
    Ok(report)
}
