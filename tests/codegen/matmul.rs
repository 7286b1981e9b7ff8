//! `ops::Matmul`'s kernels in PTX: the SIMT kernel (f32, FMA-contracted: `fma.rn.f32`, 16-byte
//! vector loads) and the tensor-core kernel for f16, bf16 and tf32 (`mma.sync`), with and
//! without a fused epilogue, compile for sm_80 and sm_90 and pass ptxas; the tensor-core kernel
//! for an older target is a clear error. ptxas's register and spill counts are printed.

use cudajit::codegen::PtxOptions;
use cudajit::ops::{Epilogue, Matmul, MatmulConfig, MatmulInput, MatmulOutput, Transpose};
use cudajit::{bf16, f16, Error};

use crate::common::{check_ptx, wide_shared_or_local_addresses};

const CCS: [(u32, u32); 2] = [(8, 0), (9, 0)];

/// Compiles `mm` under `cfg` for sm_80 and sm_90, checks with ptxas, returns the sm_90 PTX.
fn compile<T: MatmulInput, O: MatmulOutput>(
    mm: &Matmul<T, O>,
    cfg: MatmulConfig,
    what: &str,
) -> String {
    let mut last = String::new();
    for cc in CCS {
        let ptx = mm
            .compile_ptx(cfg, &PtxOptions::for_cc(cc.0, cc.1))
            .unwrap_or_else(|e| panic!("{what} for sm_{}{}: {e}", cc.0, cc.1));
        let r = check_ptx(&ptx, cc, what);
        println!(
            "{what} sm_{}{}: {} registers, {} bytes spilled",
            cc.0, cc.1, r.registers, r.spill_bytes
        );
        last = ptx;
    }
    last
}

#[test]
fn simt_f32_contracts_to_fma_and_loads_vectors() {
    for (cfg, name) in [
        (MatmulConfig::simt(128, 128, 8, 8, 8), "simt_128"),
        (MatmulConfig::simt(64, 64, 8, 4, 4), "simt_64"),
        (
            MatmulConfig::simt(64, 64, 8, 4, 4).with_stages(1),
            "simt_64_s1",
        ),
    ] {
        let ptx = compile(&Matmul::<f32>::new(), cfg, name);
        // Every multiply-add of the register tile is one fma.rn.f32 (the main loop's body,
        // unrolled over block_k; the loop itself is not unrolled).
        let fmas = ptx.matches("fma.rn.f32").count();
        let per_tile = (cfg.sub_m * cfg.sub_n * cfg.block_k) as usize;
        assert!(
            fmas >= per_tile,
            "{name}: {fmas} fma.rn.f32, want at least {per_tile}"
        );
        // The only separate products are the epilogue's alpha·acc, one per output.
        let muls = ptx.matches("mul.rn.f32").count();
        assert!(
            muls <= (cfg.sub_m * cfg.sub_n) as usize,
            "{name}: {muls} mul.rn.f32"
        );
        assert!(!ptx.contains("add.rn.f32"), "{name}");
        assert!(
            ptx.contains("ld.global.nc.v4.f32"),
            "{name}: no 16-byte vector loads:\n{ptx}"
        );
        // The register tile's runs of 4 from shared memory: one 16-byte load per run and
        // k-step, no single-word loads.
        let lds = ptx.matches("ld.shared.v4.f32").count();
        let runs = ((cfg.sub_m + cfg.sub_n) / 4 * cfg.block_k) as usize;
        assert!(lds >= runs, "{name}: {lds} ld.shared.v4.f32, want {runs}");
        assert!(
            !ptx.contains("ld.shared.f32"),
            "{name}: single shared loads"
        );
    }
    // Transposed operands read along M and N: vector loads there too.
    let t = Matmul::<f32>::new()
        .trans_a(Transpose::T)
        .trans_b(Transpose::T);
    let ptx = compile(&t, MatmulConfig::simt(64, 64, 8, 4, 4), "simt_tt");
    assert!(ptx.contains("ld.global.nc.v4.f32"));
}

fn mma_kernel<T: MatmulInput, O: MatmulOutput>(instruction: &str, name: &str) {
    let k = T::K;
    for (cfg, tiles) in [
        (MatmulConfig::mma(128, 128, 2 * k, 64, 64), 4 * 8 * 2),
        (MatmulConfig::mma(64, 64, 2 * k, 32, 32), 2 * 4 * 2),
    ] {
        let mm = Matmul::<T, O>::new().tf32(true);
        let what = format!("{name}_{}", cfg.block_m);
        let ptx = compile(&mm, cfg, &what);
        let n = ptx.matches(instruction).count();
        assert_eq!(n, tiles, "{what}: {n} × {instruction}");
        let err = mm.compile_ptx(cfg, &PtxOptions::for_cc(7, 5)).unwrap_err();
        assert!(
            matches!(err, Error::Codegen(_)) && err.to_string().contains("compute capability 8.0"),
            "{err}"
        );
    }
}

/// The SIMT kernel's cp.async pipeline (f32, 3 or 4 stages): 16-byte copies of the operand
/// contiguous along M or N, 4-byte copies transposing the K-contiguous one, one wait and one
/// barrier per tile, every layout; no spills for sm_80 and sm_90.
#[test]
fn simt_pipeline_copies_asynchronously() {
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
        (Transpose::T, Transpose::T),
    ] {
        for cfg in [
            MatmulConfig::simt(128, 128, 8, 8, 8).with_stages(3),
            MatmulConfig::simt(128, 128, 8, 8, 8).with_stages(4),
            MatmulConfig::simt(256, 128, 8, 16, 8).with_stages(3),
        ] {
            let mm = Matmul::<f32>::new().trans_a(ta).trans_b(tb);
            let what = format!("simt_pipe_{ta:?}{tb:?}_{cfg}").replace(' ', "_");
            let mut last = String::new();
            for cc in CCS {
                let ptx = mm
                    .compile_ptx(cfg, &PtxOptions::for_cc(cc.0, cc.1))
                    .unwrap();
                let r = check_ptx(&ptx, cc, &what);
                println!("{what} sm_{}{}: {} registers", cc.0, cc.1, r.registers);
                // Both operands K-contiguous (A row-major, B transposed): eight 4-byte
                // copies a tile, their addresses live across the loop, and ptxas spills one
                // 8-byte value at the 128 registers of two blocks a multiprocessor.
                let allowed = if ta == Transpose::N && tb == Transpose::T {
                    8
                } else {
                    0
                };
                assert!(r.spill_bytes <= allowed, "{what}: {}", r.log);
                last = ptx;
            }
            let ptx = last;
            // Row-major B and column-major A are contiguous along N and M: 16-byte copies.
            let x_contig = (tb == Transpose::N) || (ta == Transpose::T);
            assert_eq!(
                ptx.contains("cp.async.cg.shared.global"),
                x_contig,
                "{what}"
            );
            let k_contig = (ta == Transpose::N) || (tb == Transpose::T);
            assert_eq!(
                ptx.contains("cp.async.ca.shared.global"),
                k_contig,
                "{what}"
            );
            assert!(ptx.contains("cp.async.wait_group"), "{what}");
            assert!(!ptx.contains("ld.global.nc"), "{what}: register staging");
            let fmas = ptx.matches("fma.rn.f32").count();
            assert!(
                fmas >= (cfg.sub_m * cfg.sub_n * cfg.block_k) as usize,
                "{what}"
            );
        }
    }
}

#[test]
fn mma_f16() {
    mma_kernel::<f16, f16>(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma_f16",
    );
    mma_kernel::<f16, f32>(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma_f16_f32",
    );
}

#[test]
fn mma_bf16() {
    mma_kernel::<bf16, bf16>(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma_bf16",
    );
}

#[test]
fn mma_tf32() {
    mma_kernel::<f32, f32>(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "mma_tf32",
    );
}

/// The tensor-core kernel's `cp.async` pipeline (3 and 4 stages), every operand layout: the
/// tiles staged with 16-byte `cp.async` (zero-filling at the edges), the fragments by `ldmatrix`
/// where `ldmatrix(ta, tb)` says so (f16/bf16 always; tf32 where a tile is K-contiguous), one
/// `mma.sync` per MMA tile and k-step, and no spills (ptxas's report).
fn pipelined<T: MatmulInput>(
    instruction: &str,
    name: &str,
    ldmatrix: fn(Transpose, Transpose) -> bool,
) {
    let k = T::K;
    for stages in [3, 4] {
        let cfg = MatmulConfig::mma(128, 128, 2 * k, 64, 64).with_stages(stages);
        for (ta, tb) in [
            (Transpose::N, Transpose::N),
            (Transpose::N, Transpose::T),
            (Transpose::T, Transpose::N),
            (Transpose::T, Transpose::T),
        ] {
            let mm = Matmul::<T>::new().tf32(true).trans_a(ta).trans_b(tb);
            let what = format!("{name}_s{stages}_{ta:?}{tb:?}");
            let mut spills = Vec::new();
            for cc in CCS {
                let ptx = mm
                    .compile_ptx(cfg, &PtxOptions::for_cc(cc.0, cc.1))
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    ptx.contains("cp.async.cg.shared.global"),
                    "{what}: no cp.async"
                );
                assert!(ptx.contains("cp.async.wait_group"), "{what}");
                assert_eq!(
                    ldmatrix(ta, tb),
                    ptx.contains("ldmatrix.sync.aligned"),
                    "{what}"
                );
                // 32-bit shared addresses: no `[%rd..]` as an `ldmatrix` source or a
                // `cp.async` destination (nor any other shared access).
                let wide = wide_shared_or_local_addresses(&ptx);
                assert!(wide.is_empty(), "{what}: 64-bit shared addresses: {wide:?}");
                assert!(
                    ptx.lines()
                        .any(|l| l.trim().starts_with("cp.async.cg.shared.global [%r")),
                    "{what}"
                );
                // A tile's 4×8 MMA tiles × 2 k-steps, in the two loops (blocks inside the
                // matrix, blocks at its edge) and the partial last k-tile of the first.
                let n = ptx.matches(instruction).count();
                assert_eq!(n, 3 * 4 * 8 * 2, "{what}: {n} × {instruction}");
                let r = check_ptx(&ptx, cc, &what);
                println!(
                    "{what} sm_{}{}: {} registers, {} bytes spilled",
                    cc.0, cc.1, r.registers, r.spill_bytes
                );
                spills.push(r.spill_bytes);
            }
            assert!(spills.iter().all(|&b| b == 0), "{what}: spills {spills:?}");
        }
    }
}

#[test]
fn mma_pipeline_f16() {
    pipelined::<f16>(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "pipe_f16",
        |_, _| true,
    );
}

#[test]
fn mma_pipeline_bf16() {
    pipelined::<bf16>(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "pipe_bf16",
        |_, _| true,
    );
}

#[test]
fn mma_pipeline_tf32() {
    pipelined::<f32>(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "pipe_tf32",
        // A `[m][k]` (not transposed) is K-contiguous: its fragments by `ldmatrix` (no
        // `.trans`); B and the other layouts of A by element loads (B `[n][k]` by `ldmatrix`
        // needed 255 registers and spilled on sm_90).
        |ta, _| ta == Transpose::N,
    );
}

#[test]
fn fused_epilogues_compile() {
    let cfg = MatmulConfig::mma(128, 128, 32, 64, 64);
    let gelu = Matmul::<f16>::new()
        .beta(1.0)
        .epilogue(Epilogue::bias_gelu());
    let ptx = compile(&gelu, cfg, "mma_f16_bias_gelu");
    assert!(ptx.contains("mma.sync"));
    let simt = Matmul::<f32>::new().epilogue(Epilogue::bias_relu());
    let ptx = compile(
        &simt,
        MatmulConfig::simt(128, 128, 8, 8, 8),
        "simt_bias_relu",
    );
    assert!(ptx.contains("max.f32"), "ReLU as max.f32");
}

/// The Hopper engine (TMA + wgmma, sm_90a): every layout the tensor cores take, f16, bf16
/// and tf32 (both operands K-major), with a fused epilogue; through ptxas for sm_90a with no
/// spills; older targets are a clear error.
#[test]
fn wgmma_engine() {
    // `spills`: the bytes of spill stores allowed.
    let check_spills = |ptx: &str, what: &str, n: u32, spills: u32| {
        assert!(ptx.contains(".target sm_90a"), "{what}");
        assert!(
            ptx.contains(&format!("wgmma.mma_async.sync.aligned.m64n{n}k")),
            "{what}: no wgmma m64n{n}"
        );
        assert!(ptx.contains("cp.async.bulk.tensor.3d"), "{what}: no TMA");
        let rep = crate::common::check_ptx_arch(ptx, "sm_90a", what, &[]);
        assert!(rep.spill_bytes <= spills, "{what}: {}", rep.log);
        // ptxas serialises every wgmma (C7520) when one depends on registers written after
        // the last fence; the kernels must not make it.
        assert!(!rep.log.contains("serialized"), "{what}: {}", rep.log);
        eprintln!("{what}: {} registers", rep.registers);
    };
    let check = |ptx: &str, what: &str, n: u32| check_spills(ptx, what, n, 0);
    let o = PtxOptions::for_cc(9, 0);
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::T, Transpose::N),
        (Transpose::N, Transpose::T),
        (Transpose::T, Transpose::T),
    ] {
        for (bm, bn, stages) in [(128, 256, 4), (128, 128, 6), (64, 256, 5)] {
            let cfg = MatmulConfig::wgmma(bm, bn, 64, stages);
            let mm = Matmul::<f16>::new().trans_a(ta).trans_b(tb);
            let what = format!("wgmma_f16_{ta:?}{tb:?}_{bm}x{bn}");
            check(&mm.compile_ptx(cfg, &o).unwrap(), &what, bn);
        }
    }
    let mm = Matmul::<bf16, f32>::new()
        .epilogue(Epilogue::bias_gelu())
        .beta(1.0);
    check(
        &mm.compile_ptx(MatmulConfig::wgmma(128, 256, 64, 4), &o)
            .unwrap(),
        "wgmma_bf16_gelu",
        256,
    );
    // 16-bit C, beta 0: the register epilogue (8-byte vector stores), with the GELU on
    // every element of the fragment, on both Hopper kernels. The warp-specialised kernel is
    // compiled for 168 registers a thread (384 threads; its consumers get 232 only at run
    // time, by `setmaxnreg`), and ptxas spills one 8-byte value there.
    for (cfg, spills) in [
        (MatmulConfig::wgmma(128, 256, 64, 4), 0),
        (MatmulConfig::wgmma_ws(128, 128, 64, 5), 8),
        (MatmulConfig::wgmma_ws_cooperative(128, 256, 64, 4), 0),
        (MatmulConfig::wgmma_ws_cooperative(256, 128, 64, 4), 0),
    ] {
        let mm = Matmul::<bf16>::new().epilogue(Epilogue::bias_gelu());
        let ptx = mm.compile_ptx(cfg, &o).unwrap();
        let what = format!("wgmma_bf16_bf16_gelu_{cfg}");
        assert!(ptx.contains("st.global.v4.b16"), "{what}: no vector stores");
        // The GELU's −|x| as float `abs` + `neg` (ptxas folds them into the operands of its
        // multiply and max), one per element of the fragment; no sign-bit `and`/`xor`.
        let neg_abs = ptx.matches("abs.f32 %cj_na").count();
        assert_eq!(neg_abs, 128, "{what}");
        assert!(
            !ptx.contains("0x80000000") && !ptx.contains("2147483647"),
            "{what}: a sign-bit operation in the GELU"
        );
        check_spills(&ptx, &what, cfg.block_n, spills);
    }
    let mm = Matmul::<f32>::new().tf32(true).trans_b(Transpose::T);
    check(
        &mm.compile_ptx(MatmulConfig::wgmma(128, 128, 32, 4), &o)
            .unwrap(),
        "wgmma_tf32",
        128,
    );
    let err = Matmul::<f16>::new()
        .compile_ptx(
            MatmulConfig::wgmma(128, 256, 64, 4),
            &PtxOptions::for_cc(8, 0),
        )
        .unwrap_err();
    assert!(err.to_string().contains("sm_90"), "{err}");
    assert!(MatmulConfig::wgmma(128, 256, 32, 4)
        .validate(16, 2)
        .is_err());
    assert!(MatmulConfig::wgmma(128, 256, 64, 8)
        .validate(16, 2)
        .is_err()); // > 227 KiB
}
