//! Runs batches of random trees and statement programs on the current backend (GPU or
//! simulator), compares every result with the host model, and minimises each mismatch: a tree
//! to its smallest differing sub-expression, a program by dropping statements (and replacing
//! an `if` by one of its branches) one at a time while it still differs, up to 300 tries, in
//! the smallest company it still differs in (alone on one thread, alone on all the batch's
//! input vectors, or beside as few of its batch's other programs as it needs).

use cudajit::prelude::*;

use super::lower::{self, Mode};
use super::model::Model;
use super::prog::{self, Coverage, Prog, Slot};
use super::prog_lower;
use super::rng::Rng;
use super::tree::{random_val, Gen, Lang, Node, Ty, Val, SLOTS};

/// The output buffers' fill value: an output word never stored keeps it.
pub const FILL: u64 = 0xdead_beef_dead_beef;

/// Statements per generated program (its device functions' not counted).
pub const PROG_STMTS: usize = 10;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Trees in all.
    pub trees: usize,
    /// Statement programs in all (batch `b` of programs runs after tree batch `b`, with the
    /// same seed and input vectors).
    pub programs: usize,
    /// Seed of the first batch; batch `b` uses `seed + b`.
    pub seed: u64,
    /// Trees (and programs) per kernel.
    pub per_kernel: usize,
    /// Input vectors (threads) per kernel.
    pub threads: usize,
    /// Maximum tree depth.
    pub depth: u32,
    /// Stop after this many seconds (the report says how many trees ran).
    pub max_seconds: Option<f64>,
    /// Minimise only the first this many mismatches, of trees and of programs each (each
    /// costs up to 200 small kernels).
    pub minimise: usize,
    /// FMA contraction of the batch kernels (`PtxOptions::contract`), which the model follows.
    pub contract: Contract,
    /// Fastmath of the batch kernels (`PtxOptions::fastmath`; trees only: programs are built
    /// without it). The model leaves what fastmath leaves open unchecked.
    pub fastmath: Fastmath,
    /// The language the trees and programs are drawn from.
    pub lang: Lang,
    /// Whether device functions may return early with a value (`k.ret_value`); off, a seed
    /// gives the programs it gave before that existed (the GPU findings' batches).
    pub ret_values: bool,
}

/// Which tree batches are built with fastmath (`PtxOptions::fastmath`); like [`Contract`],
/// never drawn from the random streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fastmath {
    /// Off in every batch (the core language's runs always were).
    Off,
    /// On in every batch.
    On,
    /// On in the batches whose seed is 2 or 3 modulo 4 (so with [`Contract::Alternate`] each
    /// of the four combinations runs).
    Alternate,
}

impl Fastmath {
    /// Whether batch `seed` is built with fastmath.
    pub fn for_seed(self, seed: u64) -> bool {
        match self {
            Fastmath::Off => false,
            Fastmath::On => true,
            Fastmath::Alternate => seed / 2 % 2 == 1,
        }
    }

    /// The mode named `off`, `on` or `alternate`.
    pub fn parse(s: &str) -> Option<Fastmath> {
        match s {
            "off" => Some(Fastmath::Off),
            "on" => Some(Fastmath::On),
            "alternate" => Some(Fastmath::Alternate),
            _ => None,
        }
    }
}

impl Config {
    /// How batch `seed`'s tree kernel is built.
    pub fn mode(&self, seed: u64) -> Mode {
        Mode {
            contract: self.contract.for_seed(seed),
            fastmath: self.fastmath.for_seed(seed),
            lang: self.lang,
        }
    }
}

/// Which batches are built with FMA contraction (`PtxOptions::contract`). The setting is never
/// drawn from the random streams: the trees, programs and inputs of a seed are the same in
/// every mode, and only how the builder records their `a*b ± c` differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// Off in every batch: the kernels as they were built before contraction existed (how
    /// the GPU findings of docs/RELIABILITY.md ran; their replays use this).
    Off,
    /// On in every batch (the builder's default).
    On,
    /// On in the batches whose seed is odd, off in the others: both settings in one run.
    Alternate,
}

impl Contract {
    /// Whether batch `seed` is built with contraction.
    pub fn for_seed(self, seed: u64) -> bool {
        match self {
            Contract::Off => false,
            Contract::On => true,
            Contract::Alternate => seed % 2 == 1,
        }
    }

    /// The mode named `off`, `on` or `alternate`.
    pub fn parse(s: &str) -> Option<Contract> {
        match s {
            "off" => Some(Contract::Off),
            "on" => Some(Contract::On),
            "alternate" => Some(Contract::Alternate),
            _ => None,
        }
    }
}

/// The line a reproducer starts with when its kernel was built without contraction.
fn contract_note(contract: bool) -> &'static str {
    if contract {
        ""
    } else {
        "// built with FMA contraction off: `build_with(name, PtxOptions::default().contract(false), ..)`\n"
    }
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
    /// How its kernel was built (contraction, fastmath, language).
    pub mode: Mode,
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
        let mut s = contract_note(self.mode.contract).to_string();
        if self.mode.fastmath {
            s.push_str("// built with fastmath: `PtxOptions::default().fastmath(true)`\n");
        }
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
                Ty::I8 => format!("{load}.cast::<u8>().bitcast::<i8>()"),
                Ty::U8 => format!("{load}.cast::<u8>()"),
                Ty::I16 => format!("{load}.cast::<u16>().bitcast::<i16>()"),
                Ty::U16 => format!("{load}.cast::<u16>()"),
                Ty::F16 => format!("{load}.cast::<u16>().bitcast::<f16>()"),
                Ty::BF16 => format!("{load}.cast::<u16>().bitcast::<bf16>()"),
                Ty::E4M3 => format!("{load}.cast::<u8>().bitcast::<F8E4M3>()"),
                Ty::E5M2 => format!("{load}.cast::<u8>().bitcast::<F8E5M2>()"),
            };
            s.push_str(&format!("    let x_{}_{slot} = {conv};\n", t.name()));
        }
        let store = match self.node.ty() {
            Ty::Bool | Ty::U32 => ".cast::<u64>()",
            Ty::I32 | Ty::F32 => ".bitcast::<u32>().cast::<u64>()",
            Ty::I64 | Ty::F64 => ".bitcast::<u64>()",
            Ty::U64 => "",
            Ty::U8 | Ty::U16 => ".cast::<u64>()",
            Ty::I8 | Ty::E4M3 | Ty::E5M2 => ".bitcast::<u8>().cast::<u64>()",
            Ty::I16 | Ty::F16 | Ty::BF16 => ".bitcast::<u16>().cast::<u64>()",
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
        if let Some(m) = &self.math {
            s.push_str(&format!(
                "// out of bounds: {m} (the results above continue from the device's value)\n"
            ));
        }
        s
    }
}

/// One program mismatch, minimised.
#[derive(Clone, Debug)]
pub struct ProgMismatch {
    /// Seed of the batch it was found in.
    pub seed: u64,
    /// Program index in the batch and thread (input vector).
    pub prog: usize,
    pub thread: usize,
    /// The thread's inputs, `[type index * SLOTS + slot]`.
    pub inputs: Vec<Val>,
    /// The program, minimised (the whole program if it was not).
    pub program: Prog,
    /// Statements before minimising.
    pub original_size: usize,
    /// The model's output words and the device's, of `program`.
    pub want: Vec<Slot>,
    pub got: Vec<u64>,
    /// Where it differs when re-run: alone, with its warp's other input vectors, or only
    /// beside other programs of its batch.
    pub context: String,
    /// Whether its kernel was built with FMA contraction.
    pub contract: bool,
}

impl ProgMismatch {
    /// A Rust snippet that rebuilds the program, its inputs and both outputs.
    pub fn snippet(&self) -> String {
        let mut s = contract_note(self.contract).to_string();
        s.push_str(&prog_lower::rust(&self.program));
        let vals: Vec<String> = prog_lower::used_inputs(&self.program)
            .iter()
            .map(|(t, slot)| {
                let v = self.inputs[t.index() * SLOTS + *slot as usize];
                format!("{:#x} /* {} */", v.to_bits(), v.rust())
            })
            .collect();
        s.push_str(&format!("// inp = [{}]\n", vals.join(", ")));
        s.push_str(&format!("// differs {}\n", self.context));
        for (j, (w, g)) in self.want.iter().zip(&self.got).enumerate() {
            let ty = out_ty(&self.program, j);
            let want = match w {
                Slot::Unwritten => format!("not stored ({FILL:#x})"),
                Slot::Written(None) => "(any NaN bits)".into(),
                Slot::Written(Some(v)) => v.rust(),
            };
            let got = if *g == FILL {
                format!("not stored ({FILL:#x})")
            } else {
                Val::from_bits(ty, *g).rust()
            };
            let bad = slot_ok(*w, ty, *g) == Some(false);
            s.push_str(&format!(
                "// out[{j}]: Rust {want}; device {got}{}\n",
                if bad { "   <- differs" } else { "" }
            ));
        }
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
    /// Statement programs run, and their statements (device functions' included).
    pub programs: usize,
    pub statements: usize,
    /// Program output words compared bit for bit (output x program x input vector), stores
    /// that must not have happened included.
    pub prog_compared: usize,
    /// Program runs (program x input vector) not compared: they branched on a value whose
    /// bits depend on a NaN's.
    pub prog_open_runs: usize,
    /// Program output words whose value depends on a NaN's bits, not compared.
    pub prog_open_words: usize,
    /// What the programs did, per the model (all threads).
    pub coverage: Coverage,
    pub prog_mismatches: Vec<ProgMismatch>,
}

impl Report {
    /// Mismatches of trees and programs.
    pub fn total_mismatches(&self) -> usize {
        self.mismatches.len() + self.prog_mismatches.len()
    }
}

/// The trees of batch `seed`.
pub fn batch_trees(seed: u64, cfg: &Config) -> Vec<Node> {
    let mut rng = Rng::new(cfg.lang.batch_seed(seed));
    let tys = cfg.lang.tys();
    // Fastmath batches leave bf16 out (an LLVM 19 bug, see `Gen::no_bf16`).
    let no_bf16 = cfg.lang.whole() && cfg.mode(seed).fastmath;
    (0..cfg.per_kernel)
        .map(|_| {
            let mut ty = tys[rng.below(tys.len() as u64) as usize];
            if ty == Ty::BF16 && no_bf16 {
                ty = Ty::F16;
            }
            let depth = 1 + rng.below(cfg.depth as u64) as u32;
            let mut g = Gen::new(&mut rng).lang(cfg.lang);
            g.no_bf16 = no_bf16;
            g.tree(ty, depth)
        })
        .collect()
}

/// Input vectors of batch `seed` in the core language: `threads` rows of
/// `lower::INPUTS` values.
pub fn batch_inputs(seed: u64, threads: usize) -> Vec<Vec<Val>> {
    batch_inputs_in(seed, threads, Lang::Core)
}

/// Input vectors of batch `seed` for `lang`: `threads` rows of `lang.inputs()` values (the
/// whole language's always with the 8-bit floats' slots, read or not).
pub fn batch_inputs_in(seed: u64, threads: usize, lang: Lang) -> Vec<Vec<Val>> {
    let mut rng = Rng::new(lang.batch_seed(seed) ^ 0xa5a5_a5a5);
    (0..threads)
        .map(|_| {
            (0..lang.inputs())
                .map(|c| random_val(&mut rng, lang.input_ty(c)))
                .collect()
        })
        .collect()
}

/// Runs `trees` on every input vector; returns the output rows and the row width.
fn launch(
    stream: &Stream,
    trees: &[Node],
    inputs: &[Vec<Val>],
    mode: Mode,
) -> Result<(Vec<u64>, usize)> {
    let (k, width) = lower::kernel_with("fuzz", trees, mode)?;
    let flat: Vec<u64> = inputs.iter().flatten().map(|v| v.to_bits()).collect();
    let dinp = stream.to_device(&flat)?;
    let mut out = stream.context().alloc::<u64, _>(inputs.len() * width)?;
    out.fill_async(FILL, stream)?;
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
    mode: Mode,
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
    let mut m = Model::new(inputs, &probe_vals)
        .contracting(mode.contract)
        .fast(mode.fastmath);
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

/// What `check_one` reports for a differing tree: the model's result, the device's, and for a
/// math function out of its bounds, why.
type Differs = (Option<Val>, Val, Option<String>);

/// The smallest sub-tree of `tree` that differs on `inputs` (each tried alone in a kernel; a
/// math function out of its bounds counts as differing).
fn minimise(
    stream: &Stream,
    tree: &Node,
    inputs: &[Val],
    mode: Mode,
) -> Result<Option<(Node, Differs)>> {
    let mut subs: Vec<&Node> = tree.subtrees();
    subs.sort_by_key(|n| n.size());
    subs.dedup();
    let rows = vec![inputs.to_vec()];
    for s in subs.into_iter().filter(|n| n.size() > 1).take(200) {
        let (out, width) = launch(stream, std::slice::from_ref(s), &rows, mode)?;
        let mut scratch = Report::default();
        if let Some(d) = check_one(s, inputs, out[0], &out[1..width], mode, &mut scratch) {
            return Ok(Some((s.clone(), d)));
        }
    }
    Ok(None)
}

/// With `FUZZ_DUMP=DIR`: writes the kernel that `trees` make as it ran (PTX for the current
/// device, `tree-SEED-J[-alone].ptx`), its input words (`.inputs`, one hex `u64` per line,
/// input vector after input vector) and the mismatch's reproducer (`.rs`). The kernel takes
/// `(const u64 *inp, u64 inp_len, u64 *out, u64 out_len)`; thread i's results are tree j's
/// value at `out[i * width + j]`, then the math probes.
fn dump_trees(
    stem: &str,
    trees: &[Node],
    inputs: &[Vec<Val>],
    mm: &Mismatch,
    log: &mut impl FnMut(&str),
) {
    let Ok(dir) = std::env::var("FUZZ_DUMP") else {
        return;
    };
    let stem = format!("{dir}/{stem}");
    let words: Vec<String> = inputs
        .iter()
        .flatten()
        .map(|v| format!("{:#018x}", v.to_bits()))
        .collect();
    let ptx = lower::kernel_with("fuzz", trees, mm.mode)
        .and_then(|(k, _)| k.compile_ptx_for_current_device());
    write_dump(&dir, &stem, ptx, &words, &mm.snippet(), log);
}

/// Writes `stem.ptx`, `stem.inputs` and `stem.rs` under `dir`, and says so in `log`.
fn write_dump(
    dir: &str,
    stem: &str,
    ptx: Result<String>,
    words: &[String],
    snippet: &str,
    log: &mut impl FnMut(&str),
) {
    let written = ptx.map_err(|e| e.to_string()).and_then(|ptx| {
        std::fs::create_dir_all(dir)
            .and_then(|_| std::fs::write(format!("{stem}.ptx"), ptx))
            .and_then(|_| std::fs::write(format!("{stem}.inputs"), words.join("\n")))
            .and_then(|_| std::fs::write(format!("{stem}.rs"), snippet))
            .map_err(|e| e.to_string())
    });
    match written {
        Ok(()) => log(&format!("wrote {stem}.{{ptx,inputs,rs}}")),
        Err(e) => log(&format!("could not write {stem}.*: {e}")),
    }
}

/// The programs of batch `seed`.
pub fn batch_progs(seed: u64, cfg: &Config) -> Vec<Prog> {
    let mut rng = Rng::new(cfg.lang.batch_seed(seed) ^ 0x7072_6f67_7261_6d73);
    (0..cfg.per_kernel)
        .map(|_| prog::generate_in(&mut rng, PROG_STMTS, cfg.lang, cfg.ret_values))
        .collect()
}

/// Runs `progs` on every input vector; returns the output rows (program-major) and the width.
fn launch_progs(
    stream: &Stream,
    progs: &[Prog],
    inputs: &[Vec<Val>],
    contract: bool,
) -> Result<(Vec<u64>, usize)> {
    let (k, width) = prog_lower::kernel("fuzzp", progs, inputs.len(), contract)?;
    let flat: Vec<u64> = inputs.iter().flatten().map(|v| v.to_bits()).collect();
    let dinp = stream.to_device(&flat)?;
    let n = progs.len() * inputs.len();
    let mut out = stream.context().alloc::<u64, _>(n * width)?;
    out.fill_async(FILL, stream)?;
    k.launch(
        stream,
        LaunchConfig::for_num_elems(n, 128)?,
        (&dinp, &mut out),
    )?;
    Ok((out.to_vec_async(stream)?, width))
}

/// The type of a program's output word `j` (words past its width: none stored, any type).
fn out_ty(p: &Prog, j: usize) -> Ty {
    if j < p.width() {
        p.out_ty(j)
    } else {
        Ty::U64
    }
}

/// Whether the device's word `got` is what the model says (`None`: left open). A stored
/// value must also have zero bits above its type's width.
fn slot_ok(want: Slot, ty: Ty, got: u64) -> Option<bool> {
    match want {
        Slot::Unwritten => Some(got == FILL),
        Slot::Written(None) => None,
        Slot::Written(Some(w)) => {
            let g = Val::from_bits(ty, got);
            Some(g.to_bits() == got && w.same(g))
        }
    }
}

/// Compares one thread's output row of program `p` with the model: `Some(model's row)` if it
/// differs.
fn check_prog(
    p: &Prog,
    inputs: &[Val],
    row: &[u64],
    contract: bool,
    report: &mut Report,
) -> Option<Vec<Slot>> {
    let Ok(mut want) = prog::model(p, inputs, contract, &mut report.coverage) else {
        report.prog_open_runs += 1;
        return None;
    };
    want.resize(row.len(), Slot::Unwritten);
    let mut differs = false;
    for (j, (w, g)) in want.iter().zip(row).enumerate() {
        match slot_ok(*w, out_ty(p, j), *g) {
            None => report.prog_open_words += 1,
            Some(ok) => {
                report.prog_compared += 1;
                differs |= !ok;
            }
        }
    }
    differs.then_some(want)
}

/// Where a differing program is re-run while it is minimised: beside `others` (the rest of
/// its batch that is kept, `p` going in at `pos`), on `inputs`, watching input vector `thread`.
/// A program can differ only in company: the other threads of its warp (other input vectors)
/// take other paths, or the other programs change what the PTX compiler does with the kernel.
#[derive(Clone)]
struct ProgCtx {
    others: Vec<Prog>,
    pos: usize,
    inputs: Vec<Vec<Val>>,
    thread: usize,
    /// Whether the kernel is built with FMA contraction.
    contract: bool,
}

impl ProgCtx {
    /// `Some((model, device))` rows of the watched thread if `p` differs there (a kernel that
    /// fails to build or launch counts as not differing).
    fn differs(&self, stream: &Stream, p: &Prog) -> Option<(Vec<Slot>, Vec<u64>)> {
        let mut progs = self.others.clone();
        progs.insert(self.pos, p.clone());
        let (out, width) = launch_progs(stream, &progs, &self.inputs, self.contract).ok()?;
        let t = self.pos * self.inputs.len() + self.thread;
        let row = &out[t * width..(t + 1) * width];
        let mut scratch = Report::default();
        check_prog(
            p,
            &self.inputs[self.thread],
            row,
            self.contract,
            &mut scratch,
        )
        .map(|want| (want, row.to_vec()))
    }

    /// What a reproducer needs besides the program and the watched thread's inputs.
    fn describe(&self, seed: u64) -> String {
        match (self.others.len(), self.inputs.len()) {
            (0, 1) => "alone, on one thread".into(),
            (0, n) => format!(
                "alone, on all {n} input vectors of batch seed {seed} (thread {} watched): \
                 it needs its warp's other threads",
                self.thread
            ),
            (k, n) => format!(
                "beside {k} other programs of batch seed {seed} (as program {}), on {n} input \
                 vectors: it does not differ alone",
                self.pos
            ),
        }
    }
}

/// The smallest context in which program `j` of `batch` still differs on input vector `i`:
/// alone on that one vector, else alone on all vectors, else in the batch with as many other
/// programs dropped as can be (one at a time). `None` if it does not differ again at all.
fn minimise_ctx(
    stream: &Stream,
    batch: &[Prog],
    j: usize,
    inputs: &[Vec<Val>],
    i: usize,
    contract: bool,
) -> Option<ProgCtx> {
    let p = &batch[j];
    let alone = ProgCtx {
        others: vec![],
        pos: 0,
        inputs: vec![inputs[i].clone()],
        thread: 0,
        contract,
    };
    if alone.differs(stream, p).is_some() {
        return Some(alone);
    }
    let all = ProgCtx {
        inputs: inputs.to_vec(),
        thread: i,
        ..alone
    };
    if all.differs(stream, p).is_some() {
        return Some(all);
    }
    let mut ctx = ProgCtx {
        others: batch
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != j)
            .map(|(_, q)| q.clone())
            .collect(),
        pos: j,
        ..all
    };
    ctx.differs(stream, p)?;
    let mut k = 0;
    while k < ctx.others.len() {
        let mut c = ctx.clone();
        c.others.remove(k);
        if k < c.pos {
            c.pos -= 1;
        }
        if c.differs(stream, p).is_some() {
            ctx = c;
        } else {
            k += 1;
        }
    }
    Some(ctx)
}

/// `p` made as small as it goes while it still differs in `ctx` (up to 300 tries of
/// [`prog::smaller`]'s candidates, greedily: the first that still differs is kept and the
/// search goes on from the same candidate position), with the model's and the device's rows.
fn minimise_prog(stream: &Stream, p: &Prog, ctx: &ProgCtx) -> Option<(Prog, Vec<Slot>, Vec<u64>)> {
    let mut best: Option<(Prog, Vec<Slot>, Vec<u64>)> =
        ctx.differs(stream, p).map(|(w, g)| (p.clone(), w, g));
    let (mut tries, mut from, mut progress) = (0, 0, false);
    while tries < 300 {
        let cur = best.as_ref().map_or(p, |b| &b.0);
        let cands = prog::smaller(cur);
        let found = cands.into_iter().enumerate().skip(from).find_map(|(i, c)| {
            if tries >= 300 {
                return None;
            }
            tries += 1;
            ctx.differs(stream, &c).map(|(want, got)| (i, c, want, got))
        });
        match found {
            Some((i, c, want, got)) => {
                best = Some((c, want, got));
                (from, progress) = (i, true);
            }
            // A full pass without progress: done; else one more pass from the start.
            None if from == 0 || !progress => break,
            None => (from, progress) = (0, false),
        }
    }
    best
}

/// With `FUZZ_DUMP=DIR`: writes the minimised mismatch's kernel as it ran (PTX for the current
/// device, `prog-SEED-J.ptx`), its input words (`.inputs`, one hex `u64` per line, input vector
/// after input vector), and the reproducer (`.rs`), so that it can be run without the fuzzer
/// (the kernel takes `(const u64 *inp, u64 inp_len, u64 *out, u64 out_len)`).
fn dump(ctx: &ProgCtx, mm: &ProgMismatch, log: &mut impl FnMut(&str)) {
    let Ok(dir) = std::env::var("FUZZ_DUMP") else {
        return;
    };
    let stem = format!("{dir}/prog-{}-{}", mm.seed, mm.prog);
    let mut progs = ctx.others.clone();
    progs.insert(ctx.pos, mm.program.clone());
    let words: Vec<String> = ctx
        .inputs
        .iter()
        .flatten()
        .map(|v| format!("{:#018x}", v.to_bits()))
        .collect();
    let ptx = prog_lower::kernel("fuzzp", &progs, ctx.inputs.len(), ctx.contract)
        .and_then(|(k, _)| k.compile_ptx_for_current_device());
    write_dump(&dir, &stem, ptx, &words, &mm.snippet(), log);
}

/// Runs one batch of programs: counts into `report`, logs and records each mismatch.
fn run_progs(
    stream: &Stream,
    cfg: &Config,
    seed: u64,
    count: usize,
    report: &mut Report,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let mut progs = batch_progs(seed, cfg);
    progs.truncate(count);
    let inputs = batch_inputs_in(seed, cfg.threads, cfg.lang);
    let contract = cfg.contract.for_seed(seed);
    let (out, width) = launch_progs(stream, &progs, &inputs, contract)?;
    report.kernels += 1;
    report.programs += progs.len();
    report.statements += progs.iter().map(Prog::size).sum::<usize>();
    for (j, p) in progs.iter().enumerate() {
        for (i, inp) in inputs.iter().enumerate() {
            let t = j * inputs.len() + i;
            let row = &out[t * width..(t + 1) * width];
            let Some(want) = check_prog(p, inp, row, contract, report) else {
                continue;
            };
            let mut mm = ProgMismatch {
                seed,
                prog: j,
                thread: i,
                inputs: inp.clone(),
                program: p.clone(),
                original_size: p.size(),
                want,
                got: row.to_vec(),
                context: "not minimised".into(),
                contract,
            };
            if report.prog_mismatches.len() < cfg.minimise {
                match minimise_ctx(stream, &progs, j, &inputs, i, contract) {
                    Some(ctx) => {
                        mm.context = ctx.describe(seed);
                        if let Some((program, want, got)) = minimise_prog(stream, p, &ctx) {
                            (mm.program, mm.want, mm.got) = (program, want, got);
                        }
                        dump(&ctx, &mm, log);
                    }
                    None => mm.context = "not again: it did not differ when re-run".into(),
                }
            }
            log(&format!(
                "MISMATCH seed {seed} program {j} thread {i} ({} of {} statements left)\n{}",
                mm.program.size(),
                mm.original_size,
                mm.snippet()
            ));
            report.prog_mismatches.push(mm);
            break; // one input vector per program is enough
        }
    }
    Ok(())
}

/// Runs one batch of trees: counts into `report`, logs and records each mismatch.
fn run_trees(
    stream: &Stream,
    cfg: &Config,
    seed: u64,
    count: usize,
    report: &mut Report,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let mut trees = batch_trees(seed, cfg);
    trees.truncate(count);
    let inputs = batch_inputs_in(seed, cfg.threads, cfg.lang);
    let mode = cfg.mode(seed);
    let (out, width) = launch(stream, &trees, &inputs, mode)?;
    report.kernels += 1;
    report.trees += trees.len();
    report.nodes += trees.iter().map(Node::size).sum::<usize>();
    let mut probe_at = trees.len();
    for (j, tree) in trees.iter().enumerate() {
        let np = lower::probes(tree);
        for (i, inp) in inputs.iter().enumerate() {
            let row = &out[i * width..(i + 1) * width];
            let probes = &row[probe_at..probe_at + np];
            let Some((want, got, math)) = check_one(tree, inp, row[j], probes, mode, report) else {
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
                mode,
            };
            if report.mismatches.len() < cfg.minimise {
                match minimise(stream, tree, inp, mode)? {
                    Some((node, (want, got, math))) => {
                        (mm.node, mm.want, mm.got, mm.math) = (node, want, got, math);
                        let alone = [mm.node.clone()];
                        let stem = format!("tree-{seed}-{j}-alone");
                        dump_trees(&stem, &alone, std::slice::from_ref(inp), &mm, log);
                    }
                    None => {
                        log(&format!(
                            "seed {seed} tree {j}: no sub-tree differs alone (the whole tree \
                             is printed; it differs only beside the other trees of its batch)"
                        ));
                        dump_trees(&format!("tree-{seed}-{j}"), &trees, &inputs, &mm, log);
                    }
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
    Ok(())
}

/// Runs the configured numbers of trees and programs (tree batch `b`, then program batch `b`,
/// and so on); `log` receives a line per mismatch and progress.
pub fn run(ctx: &Context, cfg: &Config, mut log: impl FnMut(&str)) -> Result<Report> {
    let stream = ctx.new_stream()?;
    let mut report = Report::default();
    let per = cfg.per_kernel.max(1);
    let batches = cfg.trees.div_ceil(per);
    let prog_batches = cfg.programs.div_ceil(per);
    let t0 = std::time::Instant::now();
    for b in 0..batches.max(prog_batches) {
        if cfg
            .max_seconds
            .is_some_and(|s| t0.elapsed().as_secs_f64() > s)
        {
            log(&format!(
                "time limit reached after {} trees and {} programs",
                report.trees, report.programs
            ));
            break;
        }
        let seed = cfg.seed.wrapping_add(b as u64);
        if b < batches {
            run_trees(
                &stream,
                cfg,
                seed,
                cfg.trees - b * per,
                &mut report,
                &mut log,
            )?;
        }
        if b < prog_batches {
            run_progs(
                &stream,
                cfg,
                seed,
                cfg.programs - b * per,
                &mut report,
                &mut log,
            )?;
        }
        if (b + 1) % 100 == 0 {
            log(&format!(
                "progress: {} trees, {} programs, {} mismatches",
                report.trees,
                report.programs,
                report.total_mismatches()
            ));
        }
    }
    Ok(report)
}

/// Compiles every batch kernel of `cfg` to PTX for compute capability `cc` without running
/// anything (no GPU or simulator needed): the lowering and LLVM's NVPTX backend must accept
/// every generated tree and program (with `FUZZ_PTX_DIR=DIR`, each kernel's PTX is written to
/// `DIR/tree-SEED.ptx` / `DIR/prog-SEED.ptx`, e.g. for ptxas). `log` gets a line before each kernel (so that a crash
/// names its batch). Returns the number of kernels compiled.
pub fn compile_only(cfg: &Config, cc: (u32, u32), mut log: impl FnMut(&str)) -> Result<usize> {
    let opts = cudajit::codegen::PtxOptions::for_cc(cc.0, cc.1);
    let per = cfg.per_kernel.max(1);
    let (batches, prog_batches) = (cfg.trees.div_ceil(per), cfg.programs.div_ceil(per));
    let mut n = 0;
    for b in 0..batches.max(prog_batches) {
        let seed = cfg.seed.wrapping_add(b as u64);
        if b < batches {
            let mut trees = batch_trees(seed, cfg);
            trees.truncate(cfg.trees - b * per);
            // `FUZZ_ONLY_TREE=I`: tree I of each batch alone (to find the tree whose code
            // decides the whole kernel's, e.g. one LLVM proves undefined).
            if let Some(i) = std::env::var("FUZZ_ONLY_TREE")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
            {
                trees = trees.into_iter().skip(i).take(1).collect();
                for t in &trees {
                    log(&format!("tree {i}: {}", lower::rust(t)));
                }
            }
            log(&format!("batch {b} (seed {seed}): {} trees", trees.len()));
            let mode = cfg.mode(seed);
            let ptx = lower::kernel_with("fuzz", &trees, mode)?
                .0
                .compile_ptx(&opts.clone().fastmath(mode.fastmath))?;
            save_ptx(&format!("tree-{seed}"), &ptx);
            n += 1;
        }
        if b < prog_batches {
            let mut progs = batch_progs(seed, cfg);
            progs.truncate(cfg.programs - b * per);
            log(&format!(
                "batch {b} (seed {seed}): {} programs",
                progs.len()
            ));
            let ptx =
                prog_lower::kernel("fuzzp", &progs, cfg.threads, cfg.contract.for_seed(seed))?
                    .0
                    .compile_ptx(&opts)?;
            save_ptx(&format!("prog-{seed}"), &ptx);
            n += 1;
        }
    }
    Ok(n)
}

/// With `FUZZ_PTX_DIR=DIR`: writes `ptx` to `DIR/stem.ptx` (errors are printed, not fatal).
pub(crate) fn save_ptx(stem: &str, ptx: &str) {
    if let Ok(dir) = std::env::var("FUZZ_PTX_DIR") {
        let written = std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(format!("{dir}/{stem}.ptx"), ptx));
        if let Err(e) = written {
            eprintln!("fuzz: could not write {dir}/{stem}.ptx: {e}");
        }
    }
}
