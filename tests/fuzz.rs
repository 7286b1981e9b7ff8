//! CI's slice of the differential fuzzer (`examples/fuzz`): fixed seeds, run on the CPU
//! simulator, every result compared with the host model. The GPU machine runs the example
//! itself with 10^5+ trees (docs/RELIABILITY.md).

use cudajit_fuzz::check::{run, Config, Contract, Fastmath};
use cudajit_fuzz::tree::Lang;

#[path = "support/ptxas.rs"]
mod ptxas;

fn config(trees: usize, programs: usize) -> Config {
    Config {
        trees,
        programs,
        seed: 20261123,
        per_kernel: 32,
        threads: 64,
        depth: 5,
        max_seconds: None,
        minimise: 10,
        // Both settings: batches with odd seeds are built with FMA contraction.
        contract: Contract::Alternate,
        fastmath: Fastmath::Off,
        lang: Lang::Core,
        ret_values: true,
    }
}

/// Switches this test process to the simulator. False (the test skips, saying why) where a
/// GPU test of the same process already uses the driver, as with `--include-ignored` on a GPU
/// machine; CI runs these on the simulator alone.
fn simulator() -> bool {
    match cudajit::use_simulator() {
        Ok(()) => true,
        Err(e) if e.to_string().contains("already in use") => {
            println!("skipping: {e}");
            false
        }
        Err(e) => panic!("{e}"),
    }
}
#[test]
fn fixed_seed_slice_matches_the_host_model_on_the_simulator() {
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = config(20_000, 0);
    let mut lines = Vec::new();
    let r = run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    println!(
        "fuzz: {} trees, {} results compared, {} math results checked, {} mismatches",
        r.trees,
        r.compared,
        r.math_checked,
        r.mismatches.len()
    );
    assert_eq!(r.trees, cfg.trees);
    assert!(r.compared > r.trees * 50, "too few comparisons: {r:?}");
    assert!(r.mismatches.is_empty(), "{}", lines.join("\n"));
}

#[test]
fn fixed_seed_programs_match_the_host_model_on_the_simulator() {
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = config(0, 4_000);
    let mut lines = Vec::new();
    let r = run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    println!(
        "fuzz: {} programs ({} statements), {} output words compared, {} runs left open, {} mismatches",
        r.programs,
        r.statements,
        r.prog_compared,
        r.prog_open_runs,
        r.prog_mismatches.len()
    );
    println!("fuzz: {:?}", r.coverage);
    assert_eq!(r.programs, cfg.programs);
    // Device functions returned early with a value (`k.ret_value`) in some threads.
    assert!(r.coverage.value_returns > 0, "{:?}", r.coverage);
    assert!(
        r.prog_compared > r.programs * 64,
        "too few comparisons: {} words for {} programs",
        r.prog_compared,
        r.programs
    );
    assert!(r.prog_mismatches.is_empty(), "{}", lines.join("\n"));
}

/// The whole language (`--lang whole`): every scalar type (i8, u8, i16, u16, f16, bf16, the
/// 8-bit floats, complex64/128 parts besides the core's), fastmath and contraction each on
/// in half the batches, a fixed-seed slice of trees on the simulator.
fn whole(trees: usize, programs: usize) -> Config {
    Config {
        seed: 31_000_000,
        fastmath: Fastmath::Alternate,
        lang: Lang::Whole { fp8: true },
        ..config(trees, programs)
    }
}

#[test]
fn whole_language_trees_match_the_host_model_on_the_simulator() {
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = whole(10_000, 0);
    let mut lines = Vec::new();
    let r = run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    println!(
        "fuzz (whole): {} trees, {} results compared, {} math results checked, {} open, {} mismatches",
        r.trees,
        r.compared,
        r.math_checked,
        r.indeterminate,
        r.mismatches.len()
    );
    assert_eq!(r.trees, cfg.trees);
    assert!(r.compared > r.trees * 30, "too few comparisons: {r:?}");
    assert!(r.mismatches.is_empty(), "{}", lines.join("\n"));
}

#[test]
fn whole_language_programs_match_the_host_model_on_the_simulator() {
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = whole(0, 2_000);
    let mut lines = Vec::new();
    let r = run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    println!(
        "fuzz (whole): {} programs ({} statements), {} output words compared, {} runs left open, {} mismatches",
        r.programs,
        r.statements,
        r.prog_compared,
        r.prog_open_runs,
        r.prog_mismatches.len()
    );
    assert_eq!(r.programs, cfg.programs);
    assert!(r.prog_compared > r.programs * 64, "too few comparisons");
    assert!(r.prog_mismatches.is_empty(), "{}", lines.join("\n"));
}

/// The whole language's kernels compile to PTX for sm_90 (with the 8-bit floats) and sm_80
/// (without: their casts need sm_89).
#[test]
fn whole_language_slice_compiles_to_ptx() {
    let cfg = whole(32 * 8, 32 * 8);
    assert_eq!(
        cudajit_fuzz::check::compile_only(&cfg, (9, 0), |_| {}).unwrap(),
        16
    );
    let cfg = Config {
        lang: Lang::Whole { fp8: false },
        ..cfg
    };
    assert_eq!(
        cudajit_fuzz::check::compile_only(&cfg, (8, 0), |_| {}).unwrap(),
        16
    );
}

/// The same generator through LLVM to PTX (no device): every kernel must compile. Includes the
/// batch that crashed LLVM 19 before float min/max were emitted as PTX directly (seed 1100120).
#[test]
fn fixed_seed_slice_compiles_to_ptx() {
    let mut cfg = config(32 * 40, 32 * 40);
    let n = cudajit_fuzz::check::compile_only(&cfg, (9, 0), |_| {}).unwrap();
    assert_eq!(n, 80);
    cfg.seed = 1100120;
    cfg.trees = 0;
    cfg.programs = 32;
    cfg.threads = 128;
    assert_eq!(
        cudajit_fuzz::check::compile_only(&cfg, (9, 0), |_| {}).unwrap(),
        1
    );
    // The whole language's batch that aborted LLVM ("Cannot select: bf16 = bitcast") before
    // every bitcast to f16/bf16 went through `mov.b16`: a program's `f16 -> u16 -> bf16`,
    // folded into one bitcast beside another program (seed 37500005, programs 7 and 13).
    cfg.seed = 37500005;
    cfg.lang = Lang::Whole { fp8: true };
    assert_eq!(
        cudajit_fuzz::check::compile_only(&cfg, (9, 0), |_| {}).unwrap(),
        1
    );
}

/// CI's slice of the block programs (`cudajit_fuzz::block`): one thread block per program,
/// phases separated by barriers, shared-memory columns, constant tables, atomics of every kind
/// and element type on shared and global words from many threads (their old values checked
/// against every order the hardware may choose), and warp intrinsics with partial masks.
#[test]
fn fixed_seed_block_programs_match_the_host_model_on_the_simulator() {
    use cudajit_fuzz::block::check as block;
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = block::Config {
        programs: 3200,
        seed: 20261127,
        minimise: 3,
        ..block::Config::default()
    };
    let mut lines = Vec::new();
    let r = block::run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    let s = &r.stats;
    println!(
        "fuzz: {} block programs ({} phases), {} atomics ({} olds checked; {} grid words, {} of their atomics), {} warp calls ({} lanes), {} words compared, {} left open, {} mismatches",
        r.programs,
        r.phases,
        s.atomics,
        s.olds_checked,
        s.grid_words,
        s.grid_atomics,
        s.warp_calls,
        s.warp_lanes,
        r.compared,
        r.open,
        r.mismatches.len()
    );
    assert_eq!(r.programs, cfg.programs);
    assert!(
        s.olds_checked > r.programs * 100 && s.warp_lanes > r.programs * 20 && s.grid_words > 0,
        "too little ran: {r:?}"
    );
    assert!(r.compared > r.programs * 1000, "too few comparisons: {r:?}");
    assert!(r.mismatches.is_empty(), "{}", lines.join("\n"));
}

/// A slice of block programs on the GPU (the GPU bundle runs it): atomics in the hardware's own
/// orders, warp intrinsics with partial masks and `activemask` under independent thread
/// scheduling.
#[test]
#[ignore = "needs a CUDA GPU"]
fn block_programs_match_the_host_model_on_the_gpu() {
    use cudajit_fuzz::block::check as block;
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = block::Config {
        programs: 32 * 40,
        seed: 20261127,
        minimise: 3,
        ..block::Config::default()
    };
    let mut lines = Vec::new();
    let r = block::run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    assert_eq!(r.programs, cfg.programs);
    assert!(r.mismatches.is_empty(), "{}", lines.join("\n"));
}

/// The whole block batches (32 programs, one kernel) of the campaign of 2026-11-27, 23:34 UTC
/// that went wrong on every run of an H100 and an H200 while each program alone ran clean
/// (their batch kernel's code, not the programs, carried the fault): 72400002 (a misaligned
/// compare-and-swap), 72300040 and 70800035 (out-of-bounds stores) faulted, 70700033,
/// 71300025 and 72000009 differed. The warp's groups that a compare-and-swap loop left apart
/// drifted a phase apart and clobbered each other's uniform registers (workaround 18; on an
/// H100, two runs each: every batch wrong without it, none with it). Then the ten that
/// workaround 18 left wrong on every run of an H100, alone: 90000016, 91400000, 91500045,
/// 91600033, 91800025, 92500053 (`ILLEGAL_ADDRESS`, the campaign of 2026-11-28, 00:30 UTC),
/// 72900040 (`ILLEGAL_ADDRESS`), 62600080 and 61100018 (`ILLEGAL_INSTRUCTION`), 60200001 (a
/// mismatch): warps already split when they reached a compare-and-swap loop; right at the
/// JIT's `-O0` (workaround 19), which keeps nothing in uniform registers.
#[test]
#[ignore = "needs a CUDA GPU"]
fn block_batch_findings_match_the_host_model_on_the_gpu() {
    use cudajit_fuzz::block::check as block;
    let ctx = cudajit::Context::new(0).unwrap();
    let mut failed = Vec::new();
    for seed in [
        72400002u64,
        72300040,
        70800035,
        70700033,
        71300025,
        72000009,
        90000016,
        91400000,
        91500045,
        91600033,
        91800025,
        92500053,
        72900040,
        62600080,
        61100018,
        60200001,
    ] {
        let cfg = block::Config {
            programs: 32,
            seed,
            minimise: 0,
            ..block::Config::default()
        };
        let mut lines = Vec::new();
        match block::run(&ctx, &cfg, |l| lines.push(l.to_string())) {
            Ok(r) if r.mismatches.is_empty() => {}
            Ok(_) => failed.push(format!("batch {seed}:\n{}", lines.join("\n"))),
            Err(e) => {
                failed.push(format!("batch {seed}: {e}"));
                break; // a fault leaves the context unusable
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The block programs the whole-language campaign found differing on the GPU, each run alone as
/// it was drawn (seed, program), each differing on an H100 before its workaround (in three runs
/// of three unless said):
/// - 45900117, 2: an `atomic_sub` whose operand an `atomic_load` read became one
///   warp-aggregated atomic built from the leader's operand, while the lanes had read different
///   values (workaround 15; passed on two H200s with it);
/// - 41700131, 21: the same for an `atomic_add` of `(-x) & 15`, `x` from an `atomic_load` two
///   phases before (olds `8 * rank` in warp 2; ptxas's SASS aggregates with `VOTEU.ANY`/`UPOPC`
///   without workaround 15 and with a `SHFL.UP` scan with it);
/// - 44300041, 20: lanes that voted apart (`all_sync` of `activemask`) took the `if` on the
///   vote's result but stored to the `else` side's slot, kept in one uniform register for the
///   warp (workaround 16);
/// - 42900070, 17 and 41700063, 24 (one run of three each): lanes alone in their `activemask`
///   took part in other lanes' `eq_sync` / `match_any_sync` (ptxas waits for an `activemask`
///   mask with a plain `WARPSYNC`; workaround 16 hides the mask's origin, and it waits with
///   `WARPSYNC.EXCLUSIVE`).
///
/// - 41700006, 10: the `if` on an `any_sync` of `activemask` lanes, taken for uniform, had no
///   reconvergence before the phase's closing block barrier, and phase 2's compare-and-swaps
///   ran beside phase 1's (workaround 16).
/// - 62700015, 18 (an H200, driver 580.159.04, in its batch and alone): the join after an `if`
///   of a lane mask around a `ballot_sync` updated the shared array's address in a uniform
///   register in place (`UIADD3 UR4, UR4, 0x30`) once for each group of the split warp; warp
///   0's 31 lanes stored `sh[tid]` to `sh[tid + 6]` (workaround 17).
#[test]
#[ignore = "needs a CUDA GPU"]
fn block_program_findings_match_the_host_model_on_the_gpu() {
    use cudajit_fuzz::block::check as block;
    let ctx = cudajit::Context::new(0).unwrap();
    let s = ctx.new_stream().unwrap();
    let cfg = block::Config::default();
    let mut failed = Vec::new();
    for (seed, j) in [
        (45900117u64, 2usize),
        (41700131, 21),
        (44300041, 20),
        (42900070, 17),
        (41700063, 24),
        (41700006, 10),
        (62700015, 18),
    ] {
        let progs = block::batch(seed, &cfg);
        let diffs = block::differs_alone(&s, &progs[j], seed, cfg.contract.for_seed(seed));
        if !diffs.is_empty() {
            failed.push(format!("seed {seed} program {j}:\n{}", diffs.join("\n")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The block programs through LLVM to PTX for sm_90 (no device), each kernel assembled by
/// ptxas (as the codegen tests do: `CUDAJIT_PTXAS`, PATH, or the nvcc wheel). Includes the
/// batch that aborted LLVM 19 before `atomic_load` was a volatile load (seed 3029: a global
/// array the kernel only read with `atomic_load`) and the one that aborted it before the first
/// load of a compare-and-swap loop was one too (seed 71800039, program 5: an f64 `atomic_max`,
/// found by the campaign of 2026-11-27, 23:34 UTC).
#[test]
fn fixed_seed_block_programs_compile_to_ptx_and_pass_ptxas() {
    use cudajit_fuzz::block::{check as block, lower};
    let cfg = block::Config {
        programs: 32 * 4,
        seed: 20261127,
        ..block::Config::default()
    };
    let dir = std::env::temp_dir().join(format!("cudajit-fuzz-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = cudajit::codegen::PtxOptions::for_cc(9, 0);
    for seed in [
        cfg.seed,
        cfg.seed + 1,
        cfg.seed + 2,
        cfg.seed + 3,
        3029,
        71800039,
    ] {
        let progs = block::batch(seed, &cfg);
        let (k, _) = lower::kernel("fuzzb", &progs, cfg.contract.for_seed(seed)).unwrap();
        let src = dir.join(format!("block-{seed}.ptx"));
        std::fs::write(&src, k.compile_ptx(&opts).unwrap()).unwrap();
        let out = std::process::Command::new(ptxas::ptxas())
            .arg("-arch=sm_90")
            .arg(&src)
            .arg("-o")
            .arg(dir.join(format!("block-{seed}.cubin")))
            .output()
            .expect("running ptxas");
        assert!(
            out.status.success(),
            "ptxas rejected block batch {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The check of the atomics' old values (`block::serial`) accepts every order and only those:
/// the old values of adds are the prefix sums of some order, exch's olds and final value a
/// permutation of the initial and written values, cas's successes a chain; one old value off
/// by one, or a wrong final value, is refused.
#[test]
fn the_atomic_serialisation_check_accepts_exactly_the_orders() {
    use cudajit_fuzz::block::serial::{serialise, Op};
    use cudajit_fuzz::block::{AOp, ATy};
    let op = |op, v, cmp, old| Op {
        op,
        v,
        cmp,
        old,
        thread: 0,
    };
    // add 1, 2, 4 from 10 in the order 4, 1, 2: olds 10, 14, 15.
    let adds = [
        op(AOp::Add, 1, 0, 14),
        op(AOp::Add, 2, 0, 15),
        op(AOp::Add, 4, 0, 10),
    ];
    assert_eq!(serialise(ATy::U32, 10, &adds), Ok(17));
    let mut bad = adds;
    bad[0].old = 13;
    assert!(serialise(ATy::U32, 10, &bad).is_err());
    // i8 adds wrap: 120 + 10 = -126.
    assert_eq!(
        serialise(ATy::I8, 120, &[op(AOp::Add, 10, 0, 120)]),
        Ok(130)
    );
    // exch 5, 6 from 1 in the order 6, 5: olds 1, 6; the final value 5.
    let ex = [op(AOp::Exch, 5, 0, 6), op(AOp::Exch, 6, 0, 1)];
    assert_eq!(serialise(ATy::I64, 1, &ex), Ok(5));
    assert!(serialise(
        ATy::I64,
        1,
        &[op(AOp::Exch, 5, 0, 6), op(AOp::Exch, 6, 0, 6)]
    )
    .is_err());
    // cas: 0 -> 1 (expects 0), 1 -> 2 (expects 1), a failure that saw 2 (expects 0).
    let cas = [
        op(AOp::Cas, 2, 1, 1),
        op(AOp::Cas, 3, 0, 2),
        op(AOp::Cas, 1, 0, 0),
    ];
    assert_eq!(serialise(ATy::U16, 0, &cas), Ok(2));
    // A failure that saw a value the word never held.
    let mut bad = cas;
    bad[1].old = 3;
    assert!(serialise(ATy::U16, 0, &bad).is_err());
    // Float cas compares bits: -0.0 does not match 0.0.
    let z = 0.0f32.to_bits() as u64;
    let nz = (-0.0f32).to_bits() as u64;
    let one = 1.0f32.to_bits() as u64;
    assert_eq!(serialise(ATy::F32, z, &[op(AOp::Cas, one, nz, z)]), Ok(z));
    // numba's float max: a NaN in memory stays.
    let nan = f32::NAN.to_bits() as u64;
    assert_eq!(
        serialise(ATy::F32, nan, &[op(AOp::Max, one, 0, nan)]),
        Ok(nan)
    );
    // inc wraps to 0 at the limit: 3 with limit 3 gives 0.
    assert_eq!(serialise(ATy::U32, 3, &[op(AOp::Inc, 3, 0, 3)]), Ok(0));
}

/// The batches in which the GPU differed from the model (docs/RELIABILITY.md's findings, each
/// fixed since), replayed as they ran: several findings only showed beside the rest of their
/// batch, so the batch, not the minimised reproducer, is the regression test.
const GPU_FINDING_SEEDS: [u64; 23] = [
    84, 1100238, 2400519, 5200015, 7100254, 7500065, 8300081, 8300275, 11300120, 11300214,
    11500273, 11600256, 12300372, 12500197, 14100530, 14300702, 14400471, 14500984, 16100220,
    16400609, 16501093, 18500719, 20200051,
];

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_batches_of_the_gpu_findings_match_the_host_model() {
    let ctx = cudajit::Context::new(0).unwrap();
    let mut failed = Vec::new();
    for seed in GPU_FINDING_SEEDS {
        for per in [32, 64] {
            let cfg = Config {
                seed,
                per_kernel: per,
                threads: 128,
                // As they ran: found before the builder contracted, and before device
                // functions returned early with a value.
                contract: Contract::Off,
                ret_values: false,
                ..config(per, per)
            };
            let mut lines = Vec::new();
            let r = run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
            assert_eq!((r.trees, r.programs), (per, per));
            if r.total_mismatches() > 0 {
                failed.push(format!(
                    "seed {seed}, {per} per kernel:\n{}",
                    lines.join("\n")
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The model follows FMA contraction: `a*b + c`, `c - a*b` and `a*b - c*a` on the fixed slice's
/// input vectors give the device's bits only with the kernel's own setting, and the two
/// settings differ on some of them (so the slices above test the fused model, not only the
/// plain one).
#[test]
fn the_model_follows_the_contraction_setting_on_the_simulator() {
    use cudajit::prelude::*;
    use cudajit_fuzz::check::{batch_inputs, FILL};
    use cudajit_fuzz::model::Model;
    use cudajit_fuzz::tree::{Bin, Node, Ty, Val};
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let s = ctx.new_stream().unwrap();
    let x = |slot| Box::new(Node::Input(Ty::F64, slot));
    let mul = |a, b| Box::new(Node::Bin(Bin::Mul, x(a), x(b)));
    let trees = [
        Node::Bin(Bin::Add, mul(0, 1), x(2)),
        Node::Bin(Bin::Sub, x(2), mul(0, 1)),
        Node::Bin(Bin::Sub, mul(0, 1), mul(2, 0)),
    ];
    let inputs = batch_inputs(20261123, 512);
    let flat: Vec<u64> = inputs.iter().flatten().map(|v| v.to_bits()).collect();
    let dinp = s.to_device(&flat).unwrap();
    let mut differ = 0;
    for contract in [false, true] {
        let (k, width) = cudajit_fuzz::lower::kernel("contract_model", &trees, contract).unwrap();
        assert_eq!(width, trees.len());
        let mut out = s.to_device(&vec![FILL; inputs.len() * width]).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(inputs.len(), 128).unwrap(),
            (&dinp, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for (i, inp) in inputs.iter().enumerate() {
            for (j, t) in trees.iter().enumerate() {
                let g = Val::from_bits(Ty::F64, got[i * width + j]);
                let want = Model::new(inp, &[]).contracting(contract).eval(t).unwrap();
                let other = Model::new(inp, &[]).contracting(!contract).eval(t).unwrap();
                assert!(
                    want.same(g),
                    "contract {contract}, vector {i}, tree {j}: {want:?} vs {g:?}"
                );
                differ += !other.same(g) as usize;
            }
        }
    }
    assert!(differ > 0, "no input vector tells the settings apart");
}

// The complex trees (`cudajit_fuzz::ctree*`: `CExpr<f32>`/`CExpr<f64>` roots, their own batches).

fn complex_config(trees: usize) -> cudajit_fuzz::ctree_run::CConfig {
    cudajit_fuzz::ctree_run::CConfig {
        trees,
        seed: 20261127,
        per_kernel: 32,
        threads: 64,
        depth: 5,
        minimise: 10,
        // Every combination: contraction on odd seeds, fastmath on seeds 2 and 3 mod 4.
        contract: Contract::Alternate,
        fastmath: cudajit_fuzz::check::Fastmath::Alternate,
        max_seconds: None,
    }
}

#[test]
fn fixed_seed_complex_trees_match_the_host_model_on_the_simulator() {
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let cfg = complex_config(8_000);
    let mut lines = Vec::new();
    let r = cudajit_fuzz::ctree_run::run(&ctx, &cfg, |l| lines.push(l.to_string())).unwrap();
    println!(
        "fuzz: {} complex trees ({} nodes, {} with fastmath), {} parts compared (and {} array stores, {} Elementwise parts), {} open, {} exp/ln/arg checked ({} outside the bounds' domain), {} fused adds ({} through complex parts), {} mismatches",
        r.trees,
        r.nodes,
        r.fastmath_trees,
        r.compared,
        r.stores_compared,
        r.ew_compared,
        r.open,
        r.math_checked,
        r.math_unchecked,
        r.fused,
        r.fused_parts,
        r.mismatches.len()
    );
    assert_eq!(r.trees, cfg.trees);
    assert!(r.compared > r.trees * 64, "too few comparisons: {r:?}");
    assert!(r.math_checked > r.trees, "too few math checks: {r:?}");
    assert!(
        r.fused_parts > 0,
        "no add fused through a complex part: {r:?}"
    );
    assert!(r.mismatches.is_empty(), "{}", lines.join("\n"));
    assert!(r.stores_compared > 0 && r.stores_open > 0, "{r:?}");
    assert_eq!(
        r.stores_compared + r.stores_open,
        r.trees * 64 * 2,
        "every root through the arrays (f32 under fastmath open)"
    );
    assert!(
        r.ew_compared > r.trees * 4,
        "too few Elementwise comparisons: {r:?}"
    );
}

/// `(z * s).re + c`, `c - CExpr::new(a * b, ..).re` and `z.conj().re + c` contract (the parts
/// are the kernel's product values) while the complex operators never do: the model gives the
/// device's bits with the kernel's own setting, and the other setting differs.
#[test]
fn the_complex_model_follows_contraction_through_parts_on_the_simulator() {
    use cudajit_fuzz::ctree::{CNode, CTree, CUn, PartFn, RArith, RNode, CINPUTS};
    use cudajit_fuzz::ctree_model::CModel;
    use cudajit_fuzz::ctree_run::{run_trees, CReport};
    if !simulator() {
        return;
    }
    let ctx = cudajit::Context::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    fn b<T>(x: T) -> Box<T> {
        Box::new(x)
    }
    // f32 inputs: x = 1 + 2^-13 (x * x is inexact), 0, -1, 1.
    let x = 1.0f32 + 2.0f32.powi(-13);
    let mut inp = vec![0u64; CINPUTS];
    inp[0] = x.to_bits() as u64;
    inp[2] = (-1.0f32).to_bits() as u64;
    inp[3] = 1.0f32.to_bits() as u64;
    let new = || CNode::New(b(RNode::In(0)), b(RNode::In(1)));
    let square = || {
        CNode::New(
            b(RNode::Arith(RArith::Mul, b(RNode::In(0)), b(RNode::In(0)))),
            b(RNode::In(1)),
        )
    };
    let mut trees = Vec::new();
    for z in [
        CNode::Scale(b(new()), b(RNode::In(0))),
        square(),
        CNode::Un(CUn::Conj, b(square())),
    ] {
        for op in [RArith::Add, RArith::Sub] {
            let part = || RNode::Part(PartFn::Re, b(z.clone()));
            // c = -1 for an add, 1 for a subtract: the exact result is 2^-12 + 2^-26 or its
            // negation, the unfused one 2^-12 (or its negation).
            let c = || RNode::In(if op == RArith::Add { 2 } else { 3 });
            for (l, r) in [(part(), c()), (c(), part())] {
                trees.push(CTree {
                    f64: false,
                    root: CNode::Real(b(RNode::Arith(op, b(l), b(r)))),
                });
            }
        }
    }
    let ins = [x, 0.0, -1.0, 1.0];
    let mut differ = 0;
    for contract in [false, true] {
        let mut rep = CReport::default();
        let mut lines = Vec::new();
        run_trees(
            &stream,
            &trees,
            &[inp.clone()],
            (contract, false),
            (0, 0),
            &mut rep,
            &mut |l| lines.push(l.to_string()),
        )
        .unwrap();
        assert_eq!(rep.compared, 2 * trees.len());
        assert!(
            rep.mismatches.is_empty(),
            "contract {contract}: {}",
            lines.join("\n")
        );
        for t in &trees {
            let mine = CModel::<f32>::new(&ins, &[], contract).complex(&t.root);
            let other = CModel::<f32>::new(&ins, &[], !contract).complex(&t.root);
            differ += (mine.re.unwrap().to_bits() != other.re.unwrap().to_bits()) as usize;
        }
    }
    assert_eq!(
        differ,
        2 * trees.len(),
        "every tree must tell the settings apart"
    );
}

/// The complex trees through LLVM to PTX for sm_90 (no device), fastmath on and off.
#[test]
fn fixed_seed_complex_trees_compile_to_ptx() {
    let cfg = complex_config(32 * 8);
    let n = cudajit_fuzz::ctree_run::compile_only(&cfg, (9, 0), |_| {}).unwrap();
    assert_eq!(n, 8);
}

/// `cudajit::codegen::complex_host` (the host formulas the crate's complex tests compare the
/// GPU with) gives the fuzzer model's bits (written from docs/MATH.md) for `*`, `/`, `abs` and
/// `sqrt` on the fuzzer's inputs, rich in special values.
#[test]
fn complex_host_agrees_with_the_complex_model() {
    use cudajit::codegen::complex_host;
    use cudajit_fuzz::ctree::random_part;
    use cudajit_fuzz::ctree_model::{div, hypot, sqrt};
    use cudajit_fuzz::rng::Rng;
    use num_complex::Complex;
    let mut rng = Rng::new(20261127);
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let same32 = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    for _ in 0..50_000 {
        let mut p = |f64| random_part(&mut rng, f64);
        let (a, b) = (
            Complex::new(f64::from_bits(p(true)), f64::from_bits(p(true))),
            Complex::new(f64::from_bits(p(true)), f64::from_bits(p(true))),
        );
        let d = div((a.re, a.im), (b.re, b.im));
        let h = complex_host::f64::div(a, b);
        assert!(
            same(d.0, h.re) && same(d.1, h.im),
            "{a} / {b}: {d:?} vs {h}"
        );
        assert!(same(hypot(a.re, a.im), complex_host::f64::abs(a)), "|{a}|");
        let m = complex_host::f64::mul(a, b);
        assert!(same(a.re * b.re - a.im * b.im, m.re) && same(a.re * b.im + a.im * b.re, m.im));
        let (re, im) = sqrt((a.re, a.im));
        let h = complex_host::f64::sqrt(a);
        assert!(
            same(re, h.re) && im.map_or(true, |im| same(im, h.im)),
            "sqrt {a}: {re}, {im:?} vs {h}"
        );
        let (x, y) = (
            Complex::new(
                f32::from_bits(p(false) as u32),
                f32::from_bits(p(false) as u32),
            ),
            Complex::new(
                f32::from_bits(p(false) as u32),
                f32::from_bits(p(false) as u32),
            ),
        );
        let d = div((x.re, x.im), (y.re, y.im));
        let h = complex_host::f32::div(x, y);
        assert!(same32(d.0, h.re) && same32(d.1, h.im), "{x} / {y}");
        let (re, im) = sqrt((x.re, x.im));
        let h = complex_host::f32::sqrt(x);
        assert!(
            same32(re, h.re) && im.map_or(true, |im| same32(im, h.im)),
            "sqrt {x}"
        );
    }
}
