//! CI's slice of the differential fuzzer (`examples/fuzz`): fixed seeds, run on the CPU
//! simulator, every result compared with the host model. The GPU machine runs the example
//! itself with 10^5+ trees (docs/RELIABILITY.md).

use cudajit_fuzz::check::{run, Config, Contract};

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
    }
}

#[test]
fn fixed_seed_slice_matches_the_host_model_on_the_simulator() {
    cudajit::use_simulator().unwrap();
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
    cudajit::use_simulator().unwrap();
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
    assert_eq!(r.programs, cfg.programs);
    assert!(
        r.prog_compared > r.programs * 64,
        "too few comparisons: {} words for {} programs",
        r.prog_compared,
        r.programs
    );
    assert!(r.prog_mismatches.is_empty(), "{}", lines.join("\n"));
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
}

/// CI's slice of the block programs (`cudajit_fuzz::block`): one thread block per program,
/// phases separated by barriers, shared-memory columns, constant tables, atomics of every kind
/// and element type on shared and global words from many threads (their old values checked
/// against every order the hardware may choose), and warp intrinsics with partial masks.
#[test]
fn fixed_seed_block_programs_match_the_host_model_on_the_simulator() {
    use cudajit_fuzz::block::check as block;
    cudajit::use_simulator().unwrap();
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

/// The block programs through LLVM to PTX for sm_90 (no device), each kernel assembled by
/// ptxas (as the codegen tests do: `CUDAJIT_PTXAS`, PATH, or the nvcc wheel). Includes the
/// batch that aborted LLVM 19 before `atomic_load` was a volatile load (seed 3029: a global
/// array the kernel only read with `atomic_load`).
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
    for seed in [cfg.seed, cfg.seed + 1, cfg.seed + 2, cfg.seed + 3, 3029] {
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
                // As they ran: found before the builder contracted.
                contract: Contract::Off,
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
    cudajit::use_simulator().unwrap();
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
