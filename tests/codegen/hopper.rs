//! Hopper's operations in PTX: a kernel with transaction barriers, a TMA tile load from a
//! tensor-map parameter and warpgroup MMAs compiles for `sm_90a` with PTX ISA 8.0 and passes
//! ptxas; the tensor map is read in place (`__grid_constant__`), not copied to local memory;
//! an older target, a tf32 MN-major operand and a bad N are clear errors.

use cudajit::codegen::{Kernel, PtxOptions, SmemMatrix, Tma, WgmmaAcc, WgmmaMajor, WgmmaSwizzle};
use cudajit::{f16, Error};

use crate::common::check_ptx_arch;

/// One block, one warpgroup: thread 0 loads a 64×64 f16 box of A and of B by TMA onto one
/// barrier, everyone waits, four wgmmas m64n64k16, the 64×64 f32 tile stored.
fn tma_wgmma() -> Kernel<(Tma<f16, 2>, Tma<f16, 2>, &'static mut [f32])> {
    Kernel::<(Tma<f16, 2>, Tma<f16, 2>, &mut [f32])>::build("tma_wgmma", |k, (ma, mb, d)| {
        let smem = k.dynamic_shared::<f16>();
        let bars = k.mbarriers(1);
        let t = k.thread_idx().x;
        let pad = smem.aligned_index(1024);
        k.if_(t.eq(0u32), |k| {
            bars.init(0u32, 1u32);
            k.fence_barrier_init();
        });
        k.syncthreads();
        k.if_(t.eq(0u32), |k| {
            bars.arrive_expect_tx(0u32, 2u32 * 64 * 64 * 2);
            let zero = k.lit(0i32);
            ma.load([zero, zero], &smem, pad, &bars, 0u32);
            mb.load([zero, zero], &smem, pad + 4096u32, &bars, 0u32);
        });
        bars.wait(k, 0u32, 0u32);
        let a = SmemMatrix::new(&smem, pad, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
        let b = SmemMatrix::new(
            &smem,
            pad + 4096u32,
            WgmmaMajor::MN,
            WgmmaSwizzle::B128,
            8192,
            1024,
        );
        k.wgmma_fence();
        let mut acc = WgmmaAcc::zeros(64);
        for s in 0..4u32 {
            acc = k.wgmma(&a.advance(s * 32), &b.advance(s * 2048), &acc, s > 0);
        }
        k.wgmma_commit();
        let acc = k.wgmma_wait(0, &acc);
        acc.for_each(k, |r, c, v| d.set(r * 64u32 + c, v));
    })
    .unwrap()
}

#[test]
fn tma_wgmma_compiles_for_sm90a() {
    let k = tma_wgmma();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    for want in [
        ".version 8.0",
        ".target sm_90a",
        ".param .align 64 .b8 tma_wgmma_param_0[128]",
        "mbarrier.init.shared::cta.b64",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
        "wgmma.wait_group.sync.aligned 0",
        "fence.mbarrier_init.release.cluster",
    ] {
        assert!(ptx.contains(want), "{want} missing:\n{ptx}");
    }
    assert_eq!(ptx.matches("wgmma.mma_async").count(), 4, "{ptx}");
    // The map is read in place: no copy of it to local memory.
    assert!(
        !ptx.contains("__local_depot"),
        "the tensor map was copied:\n{ptx}"
    );
    let rep = check_ptx_arch(&ptx, "sm_90a", k.name(), &[]);
    assert_eq!(rep.spill_bytes, 0, "{}", rep.log);
}

#[test]
fn hopper_needs_sm90() {
    let k = tma_wgmma();
    let err = k.compile_ptx(&PtxOptions::for_cc(8, 0)).unwrap_err();
    assert!(
        matches!(err, Error::Codegen(_))
            && err.to_string().contains("sm_90")
            && err.to_string().contains("sm_80"),
        "{err}"
    );
}

#[test]
fn wgmma_misuse_is_a_build_error() {
    let err = Kernel::<(&mut [f32],)>::build("tf32_mn", |k, (d,)| {
        let smem = k.dynamic_shared::<f32>();
        let a = SmemMatrix::new(&smem, 0u32, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
        let b = SmemMatrix::new(&smem, 4096u32, WgmmaMajor::MN, WgmmaSwizzle::B128, 16, 1024);
        let acc = k.wgmma(&a, &b, &WgmmaAcc::zeros(64), false);
        d.set(0u32, acc.elems()[0]);
    })
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .contains("tf32 wgmma reads both operands K-major"),
        "{err}"
    );
    let err = Kernel::<(&mut [f32],)>::build("bad_n", |k, (d,)| {
        let smem = k.dynamic_shared::<f16>();
        let a = SmemMatrix::new(&smem, 0u32, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
        let acc = k.wgmma(&a, &a, &WgmmaAcc::zeros(12), false);
        d.set(0u32, acc.elems()[0]);
    })
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("multiple of 8 from 8 to 256"),
        "{err}"
    );
}

/// The Hopper code docs/GUIDE.md shows (its "Hopper: TMA, mbarriers and the warpgroup MMA"
/// block) is examples/hopper_tile.rs's, which runs it and checks it against the host: every
/// line of the block stands in the example, in the same order (indentation aside).
#[test]
fn documented_hopper_tile_is_the_example() {
    let example = include_str!("../../examples/hopper_tile.rs");
    let guide = include_str!("../../docs/GUIDE.md");
    let heading = "\n### Hopper: TMA, mbarriers and the warpgroup MMA\n";
    let block = guide
        .split_once(heading)
        .and_then(|(_, section)| section.split_once("```rust\n"))
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .expect("docs/GUIDE.md: no rust block in the Hopper section")
        .0;
    let mut lines = example.lines().map(str::trim);
    for want in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            lines.any(|l| l == want),
            "docs/GUIDE.md's Hopper line\n    {want}\nis not in examples/hopper_tile.rs (after \
             the lines before it)"
        );
    }
}

/// Every line of the first rust block of docs/GUIDE.md's section `heading` stands in
/// `example` (an example's source), in the same order (indentation aside).
pub(crate) fn guide_block_is_in(heading: &str, example: &str, name: &str) {
    let guide = include_str!("../../docs/GUIDE.md");
    let block = guide
        .split_once(&format!("\n### {heading}\n"))
        .and_then(|(_, section)| section.split_once("```rust\n"))
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .unwrap_or_else(|| panic!("docs/GUIDE.md: no rust block in the section {heading}"))
        .0;
    let mut lines = example.lines().map(str::trim);
    for want in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            lines.any(|l| l == want),
            "docs/GUIDE.md's line\n    {want}\nis not in {name} (after the lines before it)"
        );
    }
}

/// The named-barrier code docs/GUIDE.md shows (its "Warp specialisation" block) is
/// examples/warp_specialised's, which runs it and checks it.
#[test]
fn documented_named_barriers_are_the_example() {
    guide_block_is_in(
        "Warp specialisation: producer and consumer warps, named barriers",
        include_str!("../../examples/warp_specialised/kernels.rs"),
        "examples/warp_specialised/kernels.rs",
    );
}

/// The cluster histogram docs/GUIDE.md shows is examples/clusters', which runs it and checks
/// it.
#[test]
fn documented_cluster_histogram_is_the_example() {
    guide_block_is_in(
        "Thread-block clusters and distributed shared memory",
        include_str!("../../examples/clusters/kernels.rs"),
        "examples/clusters/kernels.rs",
    );
}

/// wgmma with A from registers (f16 and tf32, whose fragment is rounded with `cvt.rna`)
/// compiles for sm_90a and passes ptxas.
#[test]
fn wgmma_with_a_from_registers() {
    use cudajit::codegen::FragA;
    fn rs<
        T: cudajit::codegen::WgmmaInput
            + cudajit::codegen::KernelParam<Handle = cudajit::codegen::Expr<T>>,
    >(
        name: &str,
    ) -> String {
        let k = Kernel::<(&[T], &mut [f32])>::build(name, |k, (a, d)| {
            let smem = k.dynamic_shared::<T>();
            let b = SmemMatrix::new(&smem, 0u32, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
            let w = (k.thread_idx().x >> 5u32) & 3u32;
            let fa = FragA::<T>::from_fn(k, |r, c| a.at((w * 16u32 + r) * 64u32 + c));
            k.wgmma_fence();
            let acc = k.wgmma_rs(&fa, &b, &WgmmaAcc::zeros(64), false);
            k.wgmma_commit();
            let acc = k.wgmma_wait(0, &acc);
            acc.for_each(k, |r, c, v| d.set(r * 64u32 + c, v));
        })
        .unwrap();
        let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
        check_ptx_arch(&ptx, "sm_90a", k.name(), &[]);
        ptx
    }
    let ptx = rs::<f16>("rs_f16");
    assert!(
        ptx.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"),
        "{ptx}"
    );
    let ptx = rs::<f32>("rs_tf32");
    assert!(
        ptx.contains("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"),
        "{ptx}"
    );
    assert!(ptx.contains("cvt.rna.tf32.f32"), "{ptx}");
    let ptx = rs::<cudajit::F8E4M3>("rs_e4m3");
    assert!(
        ptx.contains("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"),
        "{ptx}"
    );
}

/// The 8-bit floats' wgmma (K = 32) from shared memory compiles for sm_90a and passes ptxas,
/// with no transpose immediates; an MN-major fp8 operand is a build error that says why.
#[test]
fn wgmma_fp8_from_shared_memory() {
    fn ss<
        T: cudajit::codegen::WgmmaInput
            + cudajit::codegen::KernelParam<Handle = cudajit::codegen::Expr<T>>,
    >(
        name: &str,
        b_major: WgmmaMajor,
    ) -> cudajit::Result<String> {
        let k = Kernel::<(&[T], &mut [f32])>::build(name, |k, (_a, d)| {
            let smem = k.dynamic_shared::<T>();
            let a = SmemMatrix::new(&smem, 0u32, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
            let b = SmemMatrix::new(&smem, 8192u32, b_major, WgmmaSwizzle::B128, 16, 1024);
            k.wgmma_fence();
            let mut acc = WgmmaAcc::zeros(128);
            for st in 0..4u32 {
                acc = k.wgmma(&a.advance(32 * st), &b.advance(32 * st), &acc, st > 0);
            }
            k.wgmma_commit();
            let acc = k.wgmma_wait(0, &acc);
            acc.for_each(k, |r, c, v| d.set(r * 128u32 + c, v));
        })?;
        let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0))?;
        check_ptx_arch(&ptx, "sm_90a", k.name(), &[]);
        Ok(ptx)
    }
    let ptx = ss::<cudajit::F8E4M3>("ss_e4m3", WgmmaMajor::K).unwrap();
    assert_eq!(
        ptx.matches("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3")
            .count(),
        4,
        "{ptx}"
    );
    let ptx = ss::<cudajit::F8E5M2>("ss_e5m2", WgmmaMajor::K).unwrap();
    assert!(
        ptx.contains("wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2"),
        "{ptx}"
    );
    let err = ss::<cudajit::F8E4M3>("ss_e4m3_mn", WgmmaMajor::MN).unwrap_err();
    assert!(
        err.to_string()
            .contains("e4m3 wgmma reads both operands K-major"),
        "{err}"
    );
}

/// A TMA load and store (through a `TmaMut` parameter) compile for sm_90 and pass ptxas.
#[test]
fn tma_store_compiles() {
    use cudajit::codegen::TmaMut;
    let k = Kernel::<(Tma<u16, 2>, TmaMut<u16, 2>, i32, i32, i32, i32)>::build(
        "tma_store",
        |k, (src, dst, r0, c0, r1, c1)| {
            let smem = k.dynamic_shared::<u16>();
            let bars = k.mbarriers(1);
            let t = k.thread_idx().x;
            let pad = smem.aligned_index(1024);
            k.if_(t.eq(0u32), |k| {
                bars.init(0u32, 1u32);
                k.fence_barrier_init();
            });
            k.syncthreads();
            k.if_(t.eq(0u32), |_| {
                bars.arrive_expect_tx(0u32, 16u32 * 64 * 2);
                src.load([r0, c0], &smem, pad, &bars, 0u32);
            });
            bars.wait(k, 0u32, 0u32);
            k.if_(t.eq(0u32), |k| {
                dst.store([r1, c1], &smem, pad);
                k.bulk_commit();
                k.bulk_wait(0, false);
            });
        },
    )
    .unwrap();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    assert!(
        ptx.contains("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"),
        "{ptx}"
    );
    check_ptx_arch(&ptx, "sm_90", k.name(), &[]);
}

/// Named barriers (`bar.arrive` / `bar.sync` with a thread count) in code only some warps
/// reach compile for sm_80 and sm_90 and pass ptxas; a barrier id or count out of range is a
/// build error.
#[test]
fn named_barriers_compile_in_warp_specialised_code() {
    let k = Kernel::<(&mut [f32],)>::build("named_bars", |k, (out,)| {
        let buf = k.shared_array::<f32>(64);
        let t = k.thread_idx().x;
        k.if_else(
            t.lt(64u32),
            |k| {
                buf.set(t, 1.0f32);
                k.named_barrier_arrive(1, 128);
            },
            |k| {
                k.named_barrier_sync(1, 128);
                out.set(t, buf.at(t - 64u32));
            },
        );
    })
    .unwrap();
    for cc in [(8, 0), (9, 0)] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        assert!(
            ptx.contains("bar.arrive 1, 128;") && ptx.contains("bar.sync 1, 128;"),
            "{ptx}"
        );
        check_ptx_arch(&ptx, &format!("sm_{}{}", cc.0, cc.1), k.name(), &[]);
    }
    for (id, count) in [(0, 64), (16, 64), (1, 48), (1, 0), (1, 2048)] {
        let err = Kernel::<(&mut [f32],)>::build("bad_named", |k, (out,)| {
            k.named_barrier_sync(id, count);
            out.set(0u32, 1.0f32);
        })
        .err()
        .unwrap();
        assert!(
            err.to_string().contains("the barrier is 1 to 15"),
            "{id}, {count}: {err}"
        );
    }
}
