//! Differential fuzzer for the kernel builder: random well-typed expression trees over bool,
//! i32, u32, i64, u64, f32 and f64 (every operator, comparison, select, cast, bitcast, bit
//! operation and math function), inputs rich in NaN, infinities, signed zeros, subnormals and
//! MIN/MAX, run as kernels and compared element by element with a host model in plain Rust
//! (bit for bit for exact operations, the ulp bounds of docs/MATH.md for math functions).
//! Each mismatch is minimised to its smallest differing sub-expression and printed with its
//! seed, inputs and a Rust snippet that rebuilds it.
//!
//! Also random statement programs with control flow (engine/prog.rs): mutable variables of
//! every type, if/else, `for_range`/`for_step` and `while_` loops with `break_`/`continue_`,
//! early `ret()`, output stores at several points, and device functions (inlined or real
//! calls) built from generated bodies; each thread's output words are compared bit for bit
//! with an interpreter in plain Rust, and a mismatching program is shrunk statement by
//! statement. Exits 1 if anything differed.
//!
//! `--blocks N` also runs N block programs (`cudajit_fuzz::block`): one thread block of 32 to
//! 128 threads in phases separated by barriers, with shared-memory columns, constant tables,
//! atomics of every kind and type on shared and global words (old values checked against every
//! order the hardware may choose), and warp intrinsics with partial masks; `--block-threads T`
//! fixes the block size (default: drawn per batch). `--ptx-only` compiles 1,000 of them unless
//! `--blocks` says otherwise.
//!
//! ```sh
//! cargo run --release --example fuzz -- [--trees N] [--programs P] [--seed S] [--per-kernel K]
//!                                        [--threads T] [--depth D] [--seconds S] [--minimise M]
//!                                        [--contract off|on|alternate]
//!                                        [--fastmath off|on|alternate] [--lang core|whole]
//!                                        [--ret-values on|off]
//!                                        [--complex N] [--blocks N] [--block-threads T]
//! CUDAJIT_SIMULATOR=1 cargo run --release --example fuzz     # on the CPU simulator
//! ```
//!
//! Defaults: 2,000 trees, 1,000 programs, seed 1, 32 trees (or programs) per kernel, 128 input
//! vectors, depth 5, no time limit (`--seconds` stops early and reports how many ran); the
//! first 50 mismatches of each kind are minimised (`--minimise M`: the first M; a campaign
//! passes a few, so that its time box holds).
//!
//! `--contract` sets FMA contraction (`PtxOptions::contract`) of the batch kernels, which the
//! host model follows (fused `a*b ± c` as `mul_add`): `alternate` (the default) builds the
//! batches with odd seeds with it and the others without, `on` and `off` every batch. The
//! setting is not drawn from the random streams, so a seed gives the same trees, programs and
//! inputs in every mode; `--contract off` rebuilds a batch as it ran before contraction existed
//! (the GPU findings of docs/RELIABILITY.md). `--ret-values off` likewise draws the programs
//! as before their device functions could return early with a value (`k.ret_value`, on by
//! default).
//!
//! `--lang whole` draws from every scalar type (i8, u8, i16, u16, f16, bf16 and the 8-bit
//! floats too) with new streams (its batch seeds are mixed with a constant); its tree batches
//! alternate fastmath unless `--fastmath` says otherwise (`--lang core`, the default, never
//! uses fastmath unless told). With `--ptx-only` below 8.9 it leaves the 8-bit floats out.
//!
//! `--complex N` then runs N complex trees (`CExpr<f32>`/`CExpr<f64>` roots: `+ - * /`, `conj`,
//! `sqrt`, `exp`, `ln`, `z * s`, and real expressions of `.re`, `.im`, `abs`, `norm_sqr`,
//! `arg`; docs/RELIABILITY.md); by default a quarter of `--trees` with `--lang whole`, none with
//! `--lang core`. With `--ptx-only` they are compiled too.

use cudajit::prelude::*;
use cudajit_fuzz::block;
use cudajit_fuzz::check::{run, Config, Contract, Fastmath};
use cudajit_fuzz::ctree_run::CConfig;
use cudajit_fuzz::tree::Lang;

fn main() {
    match main_() {
        Ok(0) => {}
        Ok(_) => std::process::exit(1),
        Err(e) => {
            eprintln!("fuzz: {e}");
            std::process::exit(2);
        }
    }
}

/// `--ptx-only MAJOR.MINOR`: compile every kernel for that compute capability, run nothing.
fn ptx_only() -> Option<(u32, u32)> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--ptx-only")?;
    let (a, b) = args.get(i + 1)?.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn parse_args() -> std::result::Result<(Config, block::check::Config), String> {
    let mut cfg = Config {
        trees: 2000,
        programs: 1000,
        seed: 1,
        per_kernel: 32,
        threads: 128,
        depth: 5,
        max_seconds: None,
        minimise: 50,
        contract: Contract::Alternate,
        fastmath: Fastmath::Off,
        lang: Lang::Core,
        ret_values: true,
    };
    // `--blocks` not given: none in a run, 1,000 with `--ptx-only` (so that compiling every
    // kernel for a target covers the block programs too).
    let mut bcfg = block::check::Config {
        programs: if ptx_only().is_some() { 1000 } else { 0 },
        ..Default::default()
    };
    let mut fastmath = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| -> std::result::Result<u64, String> {
            let v = args.next().ok_or(format!("{what} needs a number"))?;
            v.replace('_', "")
                .parse()
                .map_err(|_| format!("{what}: not a number: {v}"))
        };
        match a.as_str() {
            "--trees" => cfg.trees = num("--trees")? as usize,
            "--programs" => cfg.programs = num("--programs")? as usize,
            "--seed" => cfg.seed = num("--seed")?,
            "--per-kernel" => cfg.per_kernel = num("--per-kernel")?.max(1) as usize,
            "--threads" => cfg.threads = num("--threads")?.max(1) as usize,
            "--depth" => cfg.depth = num("--depth")?.clamp(1, 12) as u32,
            "--seconds" => cfg.max_seconds = Some(num("--seconds")? as f64),
            "--minimise" => cfg.minimise = num("--minimise")? as usize,
            "--contract" => {
                let v = args.next().unwrap_or_default();
                cfg.contract = Contract::parse(&v)
                    .ok_or(format!("--contract: off, on or alternate, not `{v}`"))?;
            }
            "--blocks" => bcfg.programs = num("--blocks")? as usize,
            "--block-threads" => bcfg.threads = Some(num("--block-threads")?.clamp(1, 1024) as u32),
            "--fastmath" => {
                let v = args.next().unwrap_or_default();
                fastmath = Some(
                    Fastmath::parse(&v)
                        .ok_or(format!("--fastmath: off, on or alternate, not `{v}`"))?,
                );
            }
            "--ret-values" => match args.next().as_deref() {
                Some("on") => cfg.ret_values = true,
                Some("off") => cfg.ret_values = false,
                v => return Err(format!("--ret-values: on or off, not `{}`", v.unwrap_or(""))),
            },
            "--lang" => match args.next().as_deref() {
                Some("core") => cfg.lang = Lang::Core,
                Some("whole") => cfg.lang = Lang::Whole { fp8: true },
                v => return Err(format!("--lang: core or whole, not `{}`", v.unwrap_or(""))),
            },
            "--ptx-only" | "--complex" => {
                args.next(); // read by ptx_only() / complex_trees()
            }
            "-h" | "--help" => {
                return Err("usage: fuzz [--trees N] [--programs P] [--seed S] [--per-kernel K] [--threads T] [--depth D] [--seconds S] [--minimise M] [--contract off|on|alternate] [--fastmath off|on|alternate] [--lang core|whole] [--ret-values on|off] [--complex N] [--blocks N] [--block-threads T] [--ptx-only 9.0]".into())
            }
            _ => return Err(format!("unknown argument {a} (see --help)")),
        }
    }
    // Fastmath alternates in the whole language unless told; the core's runs never had it.
    cfg.fastmath = fastmath.unwrap_or(if cfg.lang.whole() {
        Fastmath::Alternate
    } else {
        Fastmath::Off
    });
    // The 8-bit floats' casts need sm_89+.
    if let (Some(cc), Lang::Whole { .. }) = (ptx_only(), cfg.lang) {
        cfg.lang = Lang::Whole { fp8: cc >= (8, 9) };
    }
    // The block programs share the seed, batch size, time limit, contraction and minimising.
    bcfg.seed = cfg.seed;
    bcfg.per_kernel = cfg.per_kernel;
    bcfg.max_seconds = cfg.max_seconds;
    bcfg.minimise = cfg.minimise;
    bcfg.contract = cfg.contract;
    Ok((cfg, bcfg))
}

fn main_() -> Result<usize> {
    let (cfg, bcfg) = parse_args().map_err(Error::Usage)?;
    if let Some(cc) = ptx_only() {
        let t0 = std::time::Instant::now();
        let n = cudajit_fuzz::check::compile_only(&cfg, cc, |l| eprintln!("{l}"))?
            + block::check::compile_only(&bcfg, cc, |l| eprintln!("{l}"))?;
        println!(
            "fuzz: {n} kernels ({} trees, {} programs, {} block programs) compiled to PTX for sm_{}{} in {:.1} s",
            cfg.trees,
            cfg.programs,
            bcfg.programs,
            cc.0,
            cc.1,
            t0.elapsed().as_secs_f64()
        );
        let ccfg = CConfig::like(&cfg, complex_trees(&cfg));
        let n = cudajit_fuzz::ctree_run::compile_only(&ccfg, cc, |l| eprintln!("{l}"))?;
        println!(
            "fuzz: {n} kernels ({} complex trees) compiled to PTX for sm_{}{}",
            ccfg.trees, cc.0, cc.1
        );
        return Ok(0);
    }
    let ctx = Context::new(0)?;
    let on = if cudajit::on_simulator() {
        "the simulator"
    } else {
        "the GPU"
    };
    println!(
        "fuzz: {} trees and {} programs (seed {}, {} per kernel, {} input vectors, depth <= {}, contraction {:?}, fastmath {:?}, {:?}) on {on}: {}",
        cfg.trees,
        cfg.programs,
        cfg.seed,
        cfg.per_kernel,
        cfg.threads,
        cfg.depth,
        cfg.contract,
        cfg.fastmath,
        cfg.lang,
        ctx.device().name()?
    );
    let t0 = std::time::Instant::now();
    let r = run(&ctx, &cfg, |line| println!("{line}"))?;
    println!(
        "fuzz: {} trees ({} nodes) in {} kernels, {} results compared bit for bit, {} math results checked, {} left open (NaN bits), {} mismatches; {:.1} s",
        r.trees,
        r.nodes,
        r.kernels,
        r.compared,
        r.math_checked,
        r.indeterminate,
        r.mismatches.len(),
        t0.elapsed().as_secs_f64()
    );
    println!(
        "fuzz: {} programs ({} statements), {} output words compared bit for bit, {} runs and {} words left open (NaN bits), {} mismatches",
        r.programs,
        r.statements,
        r.prog_compared,
        r.prog_open_runs,
        r.prog_open_words,
        r.prog_mismatches.len()
    );
    let c = &r.coverage;
    println!(
        "fuzz: the programs ran {} ifs ({} then), {} loop iterations, {} breaks, {} continues, {} early returns ({} with a value), {} device function calls",
        c.ifs, c.thens, c.iterations, c.breaks, c.continues, c.returns, c.value_returns, c.calls
    );
    for m in &r.mismatches {
        println!(
            "  seed {} tree {} thread {}: {}",
            m.seed,
            m.tree,
            m.thread,
            cudajit_fuzz::lower::rust(&m.node)
        );
    }
    for m in &r.prog_mismatches {
        println!(
            "  seed {} program {} thread {}: {} of {} statements left (snippet above)",
            m.seed,
            m.prog,
            m.thread,
            m.program.size(),
            m.original_size
        );
    }
    let mut total = r.total_mismatches();
    if bcfg.programs > 0 {
        let t1 = std::time::Instant::now();
        let b = block::check::run(&ctx, &bcfg, |line| println!("{line}"))?;
        let s = &b.stats;
        println!(
            "fuzz: {} block programs ({} phases, {} statements) in {} kernels: {} atomics ({} old values checked against an order; {} grid words hit by {} atomics of several blocks), {} warp intrinsic calls ({} lanes), {} shared reads, {} shared stores; {} words compared, {} left open, {} mismatches; {:.1} s",
            b.programs,
            b.phases,
            b.statements,
            b.kernels,
            s.atomics,
            s.olds_checked,
            s.grid_words,
            s.grid_atomics,
            s.warp_calls,
            s.warp_lanes,
            s.shared_reads,
            s.shared_stores,
            b.compared,
            b.open,
            b.mismatches.len(),
            t1.elapsed().as_secs_f64()
        );
        for m in &b.mismatches {
            println!(
                "  seed {} block program {}: {} of {} statements left (snippet above)",
                m.seed,
                m.prog,
                m.program.size(),
                m.original_size
            );
        }
        total += b.mismatches.len();
    }
    let ccfg = CConfig::like(&cfg, complex_trees(&cfg));
    if ccfg.trees == 0 {
        return Ok(total);
    }
    let t0 = std::time::Instant::now();
    let c = cudajit_fuzz::ctree_run::run(&ctx, &ccfg, |line| println!("{line}"))?;
    println!(
        "fuzz: {} complex trees ({} nodes, {} with fastmath) in {} kernels, {} parts compared bit for bit ({} more between the complex array and the words, {} between Elementwise and the batch kernel), {} left open, {} exp/ln/arg results checked ({} outside the bounds' domain), {} adds fused ({} through complex parts), {} mismatches; {:.1} s",
        c.trees,
        c.nodes,
        c.fastmath_trees,
        c.kernels,
        c.compared,
        c.stores_compared,
        c.ew_compared,
        c.open,
        c.math_checked,
        c.math_unchecked,
        c.fused,
        c.fused_parts,
        c.mismatches.len(),
        t0.elapsed().as_secs_f64()
    );
    for m in &c.mismatches {
        println!(
            "  complex: seed {} tree {} thread {} (snippet above)",
            m.seed, m.tree, m.thread
        );
    }
    Ok(total + c.mismatches.len())
}

/// `--complex N`: complex trees (`cudajit_fuzz::ctree*`) to run after the others; by default
/// a quarter of `--trees` with `--lang whole`, none with `--lang core`.
fn complex_trees(cfg: &Config) -> usize {
    let args: Vec<String> = std::env::args().collect();
    let given = args.iter().position(|a| a == "--complex");
    match given.and_then(|i| args.get(i + 1)?.replace('_', "").parse().ok()) {
        Some(n) => n,
        None if cfg.lang.whole() => cfg.trees / 4,
        None => 0,
    }
}
