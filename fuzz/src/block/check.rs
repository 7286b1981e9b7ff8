//! Runs batches of block programs (one kernel launch per batch, block `j` running program
//! `j`), compares every output word with the host model, checks the atomics' old values, and
//! minimises each mismatch greedily (drop a phase or a statement, replace an `if` or a loop by
//! its body, replace an expression by a same-typed sub-tree, fewer threads), re-running the
//! program alone in one block, then prints the seed, the builder code and the differing words.

use cudajit::prelude::*;
use cudajit::{bf16, f16};

use super::super::check::{batch_inputs, Contract, FILL};
use super::super::rng::Rng;
use super::super::tree::Val;
use super::gen::{generate, THREADS};
use super::lower::{kernel, Layout, GLOBAL_TYS};
use super::model::{model, word_ok, Outcome, Stats, Want};
use super::{grid_init, print, serial, shrink, ATy, BlockProg, Space, GLOBAL_WORDS};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Block programs in all.
    pub programs: usize,
    /// Seed of the first batch; batch `b` uses `seed + b`.
    pub seed: u64,
    /// Programs per kernel (blocks per launch).
    pub per_kernel: usize,
    /// Threads per block (`None`: drawn per batch from `gen::THREADS`).
    pub threads: Option<u32>,
    /// Stop after this many seconds.
    pub max_seconds: Option<f64>,
    /// Minimise only the first this many mismatches (each costs up to `budget` launches).
    pub minimise: usize,
    /// Launches one minimisation may take.
    pub budget: usize,
    /// FMA contraction of the kernels (which the model follows).
    pub contract: Contract,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            programs: 0,
            seed: 1,
            per_kernel: 32,
            threads: None,
            max_seconds: None,
            minimise: 10,
            budget: 200,
            contract: Contract::Alternate,
        }
    }
}

/// A mismatch, minimised.
#[derive(Clone, Debug)]
pub struct BlockMismatch {
    /// The batch's seed.
    pub seed: u64,
    /// The program's index in its batch.
    pub prog: usize,
    /// Statements before minimising.
    pub original_size: usize,
    /// The program as minimised.
    pub program: BlockProg,
    /// What differs (one line each).
    pub diffs: Vec<String>,
    /// Whether the kernel was built with FMA contraction.
    pub contract: bool,
    /// Where it differs when re-run.
    pub context: String,
}

impl BlockMismatch {
    /// The reproducer: the builder code, the inputs it reads, and what differs.
    pub fn snippet(&self) -> String {
        let inputs = batch_inputs(self.seed, self.program.threads as usize);
        let mut s = print::rust(&self.program, self.contract);
        s.push_str(&print::inputs_note(&self.program, &inputs));
        s.push_str(&format!("// differs {}\n", self.context));
        for d in &self.diffs {
            s.push_str(&format!("// {d}\n"));
        }
        s
    }
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Programs run, launches, and the programs' phases and statements.
    pub programs: usize,
    pub kernels: usize,
    pub phases: usize,
    pub statements: usize,
    /// Output words compared (rows, target words, grid words) and left open.
    pub compared: usize,
    pub open: usize,
    /// What the programs did, per the model.
    pub stats: Stats,
    /// Every mismatch (the first `minimise` minimised).
    pub mismatches: Vec<BlockMismatch>,
}

fn add_stats(a: &mut Stats, b: &Stats) {
    a.atomics += b.atomics;
    a.olds_checked += b.olds_checked;
    a.warp_calls += b.warp_calls;
    a.warp_lanes += b.warp_lanes;
    a.shared_reads += b.shared_reads;
    a.shared_stores += b.shared_stores;
    a.phases += b.phases;
    a.grid_words += b.grid_words;
    a.grid_atomics += b.grid_atomics;
}

/// The programs of batch `seed` (all with one block size).
pub fn batch(seed: u64, cfg: &Config) -> Vec<BlockProg> {
    let mut rng = Rng::new(seed ^ 0x626c_6f63_6b73);
    let threads = cfg
        .threads
        .unwrap_or_else(|| THREADS[rng.below(THREADS.len() as u64) as usize]);
    (0..cfg.per_kernel)
        .map(|_| generate(&mut rng, threads))
        .collect()
}

/// What a launch left in device memory.
struct Device {
    out: Vec<u64>,
    /// The global arrays' words (bits), in `GLOBAL_TYS` order.
    globals: Vec<Vec<u64>>,
    lay: Layout,
}

/// The initial words of type `ty`'s global array: each program's targets, then the grid words.
fn global_init(progs: &[BlockProg], ty: ATy) -> Vec<u64> {
    let mut v = vec![0u64; progs.len() * GLOBAL_WORDS];
    v.extend(grid_init(ty));
    for (j, p) in progs.iter().enumerate() {
        for (i, t) in p.targets.iter().enumerate() {
            if t.space == Space::Global && t.ty == ty {
                let off = j * GLOBAL_WORDS + p.target_offset(i);
                v[off..off + t.init.len()].copy_from_slice(&t.init);
            }
        }
    }
    v
}

fn up<T: cudajit::codegen::Scalar>(s: &Stream, bits: &[u64]) -> Result<DeviceArray<T>> {
    let v: Vec<T> = bits.iter().map(|&b| T::from_bits(b)).collect();
    s.to_device(&v)
}

fn down<T: cudajit::codegen::Scalar>(s: &Stream, a: &DeviceArray<T>) -> Result<Vec<u64>> {
    Ok(a.to_vec_async(s)?
        .into_iter()
        .map(|x| x.to_bits())
        .collect())
}

fn launch(s: &Stream, progs: &[BlockProg], inputs: &[Vec<Val>], contract: bool) -> Result<Device> {
    let (k, lay) = kernel("fuzzb", progs, contract)?;
    let flat: Vec<u64> = inputs.iter().flatten().map(|v| v.to_bits()).collect();
    let dinp = s.to_device(&flat)?;
    let mut out = vec![FILL; lay.len()];
    let g64 = global_init(progs, ATy::U64);
    out[lay.global_u64(0)..].copy_from_slice(&g64);
    debug_assert_eq!(lay.global_u64(0) + g64.len(), lay.len());
    let mut dout = s.to_device(&out)?;
    let g: Vec<Vec<u64>> = GLOBAL_TYS.iter().map(|&t| global_init(progs, t)).collect();
    let mut a0 = up::<u32>(s, &g[0])?;
    let mut a1 = up::<i32>(s, &g[1])?;
    let mut a2 = up::<i64>(s, &g[2])?;
    let mut a3 = up::<f32>(s, &g[3])?;
    let mut a4 = up::<f64>(s, &g[4])?;
    let mut a5 = up::<i8>(s, &g[5])?;
    let mut a6 = up::<u8>(s, &g[6])?;
    let mut a7 = up::<u16>(s, &g[7])?;
    let mut a8 = up::<f16>(s, &g[8])?;
    let mut a9 = up::<bf16>(s, &g[9])?;
    k.launch(
        s,
        LaunchConfig::new(progs.len() as u32, lay.threads as u32),
        (
            &dinp, &mut dout, &mut a0, &mut a1, &mut a2, &mut a3, &mut a4, &mut a5, &mut a6,
            &mut a7, &mut a8, &mut a9,
        ),
    )?;
    let globals = vec![
        down(s, &a0)?,
        down(s, &a1)?,
        down(s, &a2)?,
        down(s, &a3)?,
        down(s, &a4)?,
        down(s, &a5)?,
        down(s, &a6)?,
        down(s, &a7)?,
        down(s, &a8)?,
        down(s, &a9)?,
    ];
    Ok(Device {
        out: dout.to_vec_async(s)?,
        globals,
        lay,
    })
}

/// Grid word `w` of type `ty` as the device left it.
fn grid_word(d: &Device, ty: ATy, w: usize) -> u64 {
    match GLOBAL_TYS.iter().position(|&x| x == ty) {
        Some(g) => d.globals[g][d.lay.grid() + w],
        None => d.out[d.lay.grid_u64() + w],
    }
}

/// The grid words: the atomics of every block on each checked together against every order
/// (`outs[j]` is program `j`'s model outcome); the types whose words differ, and why.
fn grid_check(
    d: &Device,
    progs: &[BlockProg],
    outs: &[Outcome],
    counts: &mut (usize, usize),
    stats: &mut Stats,
) -> Vec<(ATy, String)> {
    let mut diffs = Vec::new();
    for ty in super::ATYS {
        if !progs.iter().any(|p| {
            p.targets
                .iter()
                .any(|t| t.space == Space::Grid && t.ty == ty)
        }) {
            continue;
        }
        let init = grid_init(ty);
        for (w, &init) in init.iter().enumerate() {
            if outs.iter().any(|o| o.grid_open.contains(&(ty, w))) {
                counts.1 += 1;
                continue;
            }
            // Threads numbered across the launch: block j's thread t is j * threads + t.
            let ops: Vec<serial::Op> = outs
                .iter()
                .enumerate()
                .flat_map(|(j, o)| {
                    o.grid_ops
                        .iter()
                        .filter(move |(t, x, _)| *t == ty && *x == w)
                        .map(move |(_, _, op)| serial::Op {
                            thread: op.thread + (j * d.lay.threads) as u32,
                            ..*op
                        })
                })
                .collect();
            stats.olds_checked += ops.len();
            stats.grid_atomics += ops.len();
            stats.grid_words += 1;
            counts.0 += 1;
            let got = grid_word(d, ty, w);
            match serial::serialise(ty, init, &ops) {
                Ok(end) if end == got & ty.mask() => {}
                Ok(end) => diffs.push((
                    ty,
                    format!(
                        "grid word {w} ({}) at the end: Rust {}; device {}",
                        ty.name(),
                        serial::show(ty, end),
                        serial::show(ty, got)
                    ),
                )),
                Err(e) => diffs.push((ty, format!("grid word {w} ({}): {e}", ty.name()))),
            }
        }
    }
    diffs
}

/// Program `j`'s targets' final words as the device left them, in target order.
fn device_words(d: &Device, j: usize, p: &BlockProg) -> Vec<u64> {
    let mut shared = d.lay.shared(j);
    let mut v = Vec::new();
    for (i, t) in p.targets.iter().enumerate() {
        let off = p.target_offset(i);
        for w in 0..t.init.len() {
            v.push(match t.space {
                Space::Shared => {
                    shared += 1;
                    d.out[shared - 1]
                }
                Space::Global if t.ty == ATy::U64 => d.out[d.lay.global_u64(j) + off + w],
                Space::Global => {
                    let g = GLOBAL_TYS.iter().position(|&x| x == t.ty).unwrap_or(0);
                    d.globals[g][j * GLOBAL_WORDS + off + w]
                }
                Space::Grid => grid_word(d, t.ty, w),
            });
        }
    }
    v
}

fn show(w: Want, got: u64) -> (String, String) {
    let want = match w {
        Want::Unwritten => format!("not stored ({FILL:#x})"),
        Want::Val(Some(v)) => v.rust(),
        Want::Bits(Some(b)) => format!("{b:#x}"),
        Want::Old(b) => format!("an old value ({b} bits)"),
        Want::Mask { must, may } => format!("a mask holding {must:#x} within {may:#x}"),
        _ => "(open)".into(),
    };
    let got = match w {
        _ if got == FILL => format!("not stored ({FILL:#x})"),
        Want::Val(Some(v)) => Val::from_bits(v.ty(), got).rust(),
        _ => format!("{got:#x}"),
    };
    (want, got)
}

/// Compares program `j` of a launch with the model: the model's outcome and the differences.
fn compare(
    d: &Device,
    j: usize,
    p: &BlockProg,
    inputs: &[Vec<Val>],
    contract: bool,
    counts: &mut (usize, usize),
) -> (Outcome, Vec<String>) {
    let rows: Vec<&[u64]> = (0..p.threads as usize)
        .map(|t| {
            let r = d.lay.row(j, t);
            &d.out[r..r + d.lay.width]
        })
        .collect();
    let o = model(p, inputs, &rows, contract);
    let mut diffs: Vec<String> = o.errors.clone();
    for (t, row) in rows.iter().enumerate() {
        for (k, &got) in row.iter().enumerate() {
            let w = o.rows[t].get(k).copied().unwrap_or(Want::Unwritten);
            match word_ok(w, got, FILL, None) {
                None => counts.1 += 1,
                Some(ok) => {
                    counts.0 += 1;
                    if !ok {
                        let (a, b) = show(w, got);
                        diffs.push(format!(
                            "thread {t} out[{k}] ({}): Rust {a}; device {b}",
                            print::slot_name(p, k)
                        ));
                    }
                }
            }
        }
    }
    let got = device_words(d, j, p);
    // `FUZZ_BLOCK_DUMP=1`: a differing program's whole device rows and every thread's inputs
    // (to tell the device, the model and the minimiser apart on a replay).
    if !diffs.is_empty() && std::env::var_os("FUZZ_BLOCK_DUMP").is_some() {
        for (t, row) in rows.iter().enumerate() {
            let words: Vec<String> = row.iter().map(|w| format!("{w:#x}")).collect();
            diffs.push(format!("dump: thread {t} row [{}]", words.join(", ")));
        }
        let words: Vec<String> = got.iter().map(|w| format!("{w:#x}")).collect();
        diffs.push(format!("dump: target words [{}]", words.join(", ")));
        diffs.push(format!(
            "dump: inputs\n{}",
            print::inputs_of(p, inputs, usize::MAX)
        ));
    }
    let mut n = 0;
    for (i, t) in p.targets.iter().enumerate() {
        for w in 0..t.init.len() {
            match word_ok(o.words[n], got[n], FILL, None) {
                None => counts.1 += 1,
                Some(ok) => {
                    counts.0 += 1;
                    if !ok {
                        let (a, b) = show(o.words[n], got[n]);
                        diffs.push(format!(
                            "target {i} ({:?} {}) word {w} at the end: Rust {a}; device {b}",
                            t.space,
                            t.ty.name()
                        ));
                    }
                }
            }
            n += 1;
        }
    }
    (o, diffs)
}

/// Whether `p` differs run alone in one block: the differences (empty: it does not; a kernel
/// that fails to build or launch counts as not differing).
pub fn differs_alone(s: &Stream, p: &BlockProg, seed: u64, contract: bool) -> Vec<String> {
    let inputs = batch_inputs(seed, p.threads as usize);
    let Ok(d) = launch(s, std::slice::from_ref(p), &inputs, contract) else {
        return vec![];
    };
    let (o, mut diffs) = compare(&d, 0, p, &inputs, contract, &mut (0, 0));
    let grid = grid_check(
        &d,
        std::slice::from_ref(p),
        &[o],
        &mut (0, 0),
        &mut Stats::default(),
    );
    diffs.extend(grid.into_iter().map(|(_, e)| e));
    diffs
}

/// `p` made as small as it goes while it still differs alone (greedy, up to `budget` runs).
fn minimise(
    s: &Stream,
    p: &BlockProg,
    seed: u64,
    contract: bool,
    budget: usize,
) -> Option<(BlockProg, Vec<String>)> {
    let first = differs_alone(s, p, seed, contract);
    if first.is_empty() {
        return None;
    }
    let mut best = (p.clone(), first);
    let mut tries = 0;
    'outer: while tries < budget {
        for c in shrink::smaller(&best.0) {
            if tries >= budget {
                break 'outer;
            }
            tries += 1;
            let d = differs_alone(s, &c, seed, contract);
            if !d.is_empty() {
                best = (c, d);
                continue 'outer;
            }
        }
        break;
    }
    Some(best)
}

fn run_batch(
    s: &Stream,
    cfg: &Config,
    seed: u64,
    count: usize,
    r: &mut Report,
    log: &mut impl FnMut(&str),
) -> Result<()> {
    let mut progs = batch(seed, cfg);
    progs.truncate(count);
    let contract = cfg.contract.for_seed(seed);
    only_block(&mut progs, contract, log);
    let threads = progs.first().map_or(32, |p| p.threads as usize);
    let inputs = batch_inputs(seed, threads);
    let d = launch(s, &progs, &inputs, contract)?;
    r.kernels += 1;
    let mut outs = Vec::new();
    let mut all_diffs = Vec::new();
    let mut counts = (0, 0);
    for (j, p) in progs.iter().enumerate() {
        r.programs += 1;
        r.phases += p.phases.len();
        r.statements += p.size();
        let (o, diffs) = compare(&d, j, p, &inputs, contract, &mut counts);
        add_stats(&mut r.stats, &o.stats);
        outs.push(o);
        all_diffs.push(diffs);
    }
    // A grid word that differs goes to the first program with a grid target of its type.
    for (ty, e) in grid_check(&d, &progs, &outs, &mut counts, &mut r.stats) {
        let j = progs
            .iter()
            .position(|p| {
                p.targets
                    .iter()
                    .any(|t| t.space == Space::Grid && t.ty == ty)
            })
            .unwrap_or(0);
        all_diffs[j].push(format!("{e} (atomics of every block of the batch)"));
    }
    r.compared += counts.0;
    r.open += counts.1;
    for (j, (p, diffs)) in progs.iter().zip(all_diffs).enumerate() {
        if diffs.is_empty() {
            continue;
        }
        let mut mm = BlockMismatch {
            seed,
            prog: j,
            original_size: p.size(),
            program: p.clone(),
            diffs,
            contract,
            context: format!("in its batch (block {j} of {})", progs.len()),
        };
        if r.mismatches.len() < cfg.minimise {
            match minimise(s, p, seed, contract, cfg.budget) {
                Some((q, diffs)) => {
                    mm.program = q;
                    mm.diffs = diffs;
                    mm.context = "alone, in one block".into();
                }
                None => mm.context.push_str(": not alone (not minimised)"),
            }
        }
        log(&format!(
            "MISMATCH seed {seed} block program {j} ({} threads; {} of {} statements left)\n{}",
            mm.program.threads,
            mm.program.size(),
            mm.original_size,
            mm.snippet()
        ));
        r.mismatches.push(mm);
    }
    Ok(())
}

/// `FUZZ_ONLY_BLOCK=J`: program J of each batch alone, printed (to replay one program of a
/// campaign's report as it was drawn, without the minimiser).
fn only_block(progs: &mut Vec<BlockProg>, contract: bool, log: &mut impl FnMut(&str)) {
    if let Some(j) = std::env::var("FUZZ_ONLY_BLOCK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        *progs = progs.iter().skip(j).take(1).cloned().collect();
        for p in progs.iter() {
            log(&format!("block program {j}:\n{}", print::rust(p, contract)));
        }
    }
}

/// Runs `cfg.programs` block programs in batches of `per_kernel`; `log` receives a line per
/// mismatch and progress.
pub fn run(ctx: &Context, cfg: &Config, mut log: impl FnMut(&str)) -> Result<Report> {
    let s = ctx.new_stream()?;
    let mut r = Report::default();
    let per = cfg.per_kernel.max(1);
    let t0 = std::time::Instant::now();
    for b in 0..cfg.programs.div_ceil(per) {
        if cfg
            .max_seconds
            .is_some_and(|m| t0.elapsed().as_secs_f64() > m)
        {
            log(&format!(
                "time limit reached after {} block programs",
                r.programs
            ));
            break;
        }
        let seed = cfg.seed.wrapping_add(b as u64);
        if std::env::var_os("FUZZ_LOG_BATCH").is_some() {
            log(&format!("block batch {b} (seed {seed})"));
        }
        run_batch(&s, cfg, seed, cfg.programs - b * per, &mut r, &mut log)?;
        if (b + 1) % 20 == 0 {
            log(&format!(
                "progress: {} block programs, {} mismatches",
                r.programs,
                r.mismatches.len()
            ));
        }
    }
    Ok(r)
}

/// Compiles every batch kernel of `cfg` to PTX for compute capability `cc` (no device needed).
/// Returns the number of kernels.
pub fn compile_only(cfg: &Config, cc: (u32, u32), mut log: impl FnMut(&str)) -> Result<usize> {
    let opts = cudajit::codegen::PtxOptions::for_cc(cc.0, cc.1);
    let per = cfg.per_kernel.max(1);
    let mut n = 0;
    for b in 0..cfg.programs.div_ceil(per) {
        let seed = cfg.seed.wrapping_add(b as u64);
        let mut progs = batch(seed, cfg);
        progs.truncate(cfg.programs - b * per);
        let contract = cfg.contract.for_seed(seed);
        only_block(&mut progs, contract, &mut log);
        log(&format!(
            "block batch {b} (seed {seed}): {} programs",
            progs.len()
        ));
        let ptx = kernel("fuzzb", &progs, contract)?.0.compile_ptx(&opts)?;
        crate::check::save_ptx(&format!("block-{seed}"), &ptx);
        n += 1;
    }
    Ok(n)
}
