//! TMA tile copies (`TmaDesc::load`, sm_90) on the GPU and on the simulator:
//! - a box of a 2-D f16 array, partly outside it, copied into shared memory with each swizzle
//!   and read back raw: every shared-memory element is where the simulator's model of the
//!   swizzle puts it (element `e` of the box at the swizzled byte `2e`), zero outside the array;
//! - a small GEMM fed by TMA through transaction barriers, computed by wgmma: C (M×N, odd sizes)
//!   = A·B, f16 and bf16, A K-major and B MN-major (row-major both) in 128-byte swizzled 64×64
//!   boxes, the boxes past the edges zero-filled; every element of C against the host model.

use cudajit::codegen::{Kernel, SmemMatrix, Tma, TmaMut, WgmmaAcc, WgmmaMajor, WgmmaSwizzle};
use cudajit::memory::{TensorMap, TensorMapOptions, TensorMapSwizzle};
use cudajit::prelude::*;
use cudajit::{bf16, f16, FaultKind};

use crate::common::{ctx, fault, sm90, Rng};
use crate::gen::Gen;
use crate::support::mma_model::{check_product, draw, AccModel, MmaModel};

/// Byte `off` from a 1024-byte aligned base, swizzled with `bits` (0..3).
fn swizzle(off: usize, bits: u32) -> usize {
    if bits == 0 {
        off
    } else {
        off ^ (((off >> 7) & ((1 << bits) - 1)) << 4)
    }
}

/// The prelude of the kernels here: one transaction barrier set up by thread 0 for one
/// arrival (then published to the block), and the offset, in 16-bit elements, from the start of
/// the dynamic shared memory `smem` to its first 1024-byte boundary (where 128-byte swizzled
/// tiles start).
fn one_barrier<T: cudajit::codegen::Scalar>(
    k: &cudajit::codegen::KernelBuilder,
    smem: &cudajit::codegen::DArray<T, 1, cudajit::codegen::ReadWrite>,
) -> (cudajit::codegen::Mbarriers, cudajit::codegen::Expr<u32>) {
    let bars = k.mbarriers(1);
    let pad = smem.aligned_index(1024);
    k.if_(k.thread_idx().x.eq(0u32), |k| {
        bars.init(0u32, 1u32);
        k.fence_barrier_init();
    });
    k.syncthreads();
    (bars, pad)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_load_swizzles_and_fills() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: TMA needs an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let (rows, cols) = (40usize, 72usize);
    let mut rng = Rng::new();
    let host: Vec<u16> = rng.vec(rows * cols, |r| (r.next_u64() as u16) | 1);
    let a = s
        .to_device(&ndarray::Array2::from_shape_vec((rows, cols), host.clone()).unwrap())
        .unwrap();
    let kern = Kernel::<(Tma<u16, 2>, &mut [u16], i32, i32, u32)>::build(
        "tma_box",
        |k, (map, out, r0, c0, bytes)| {
            let smem = k.dynamic_shared::<u16>();
            let t = k.thread_idx().x;
            let (bars, pad) = one_barrier(k, &smem);
            k.if_(t.eq(0u32), |_| {
                bars.arrive_expect_tx(0u32, bytes);
                map.load([r0, c0], &smem, pad, &bars, 0u32);
            });
            bars.wait(k, 0u32, 0u32);
            k.for_step(t, bytes / 2u32, 128u32, |_, i| out.set(i, smem.at(pad + i)));
        },
    )
    .unwrap();
    for (swz, bits) in [
        (TensorMapSwizzle::None, 0),
        (TensorMapSwizzle::B64, 2),
        (TensorMapSwizzle::B128, 3),
    ] {
        // A box of 32 rows × 64 columns (128 bytes): 64-byte swizzle takes boxes of 32 columns.
        let bc = if bits == 2 { 32 } else { 64 };
        let map = TensorMap::<u16, 2>::tiled_with(
            &a,
            [32, bc as u32],
            TensorMapOptions::default().swizzle(swz),
        )
        .unwrap();
        for (r0, c0) in [(0i32, 0i32), (24, 40), (-8, -16)] {
            let mut out = c.alloc::<u16, _>(32 * 64).unwrap();
            out.fill_async(0xdead, &s).unwrap();
            kern.launch(
                &s,
                LaunchConfig::new(1, 128).with_shared_mem(1024 + 32 * 64 * 2),
                (&map, &mut out, r0, c0, map.box_bytes()),
            )
            .unwrap();
            let got = out.to_vec_async(&s).unwrap();
            let mut want = vec![0xdeadu16; 32 * 64];
            for e in 0..32 * bc {
                let (br, bcol) = (e / bc, e % bc);
                let (gr, gc) = (r0 as i64 + br as i64, c0 as i64 + bcol as i64);
                let v = if (0..rows as i64).contains(&gr) && (0..cols as i64).contains(&gc) {
                    host[gr as usize * cols + gc as usize]
                } else {
                    0
                };
                want[swizzle(2 * e, bits) / 2] = v;
            }
            let bad: Vec<_> = (0..32 * 64).filter(|&i| got[i] != want[i]).collect();
            assert!(
                bad.is_empty(),
                "{swz:?} box at ({r0}, {c0}): {} of {} elements differ, first at {}: got {:#x}, want {:#x}",
                bad.len(),
                32 * 64,
                bad[0],
                got[bad[0]],
                want[bad[0]]
            );
        }
    }
    // The same launch captured into a graph and replayed: the map's 128 bytes travel with it.
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let map = TensorMap::<u16, 2>::tiled_with(&a, [32, 64], opts).unwrap();
    let cfg = LaunchConfig::new(1, 128).with_shared_mem(1024 + 32 * 64 * 2);
    let bytes = map.box_bytes();
    let mut direct = c.alloc::<u16, _>(32 * 64).unwrap();
    kern.launch(&s, cfg, (&map, &mut direct, 24, 40, bytes))
        .unwrap();
    let mut replay = c.alloc::<u16, _>(32 * 64).unwrap();
    replay.fill_async(0xdead, &s).unwrap();
    let graph = s
        .capture(|s| kern.launch(s, cfg, (&map, &mut replay, 24, 40, bytes)))
        .unwrap();
    let exec = graph.instantiate().unwrap();
    // SAFETY: the output and the map's array outlive the launch.
    unsafe { exec.launch(&s) }.unwrap();
    assert_eq!(
        replay.to_vec_async(&s).unwrap(),
        direct.to_vec_async(&s).unwrap(),
        "a TMA kernel replayed from a graph"
    );
}

/// A box loaded by TMA from one array and stored by TMA into another at other coordinates
/// (partly outside it: only the part inside is written), through a `TmaMut` parameter; a
/// read-only map given to that parameter is an error before anything runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_store_writes_a_box_back() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: TMA needs an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let (rows, cols) = (40usize, 72usize);
    let mut rng = Rng::new();
    let host: Vec<u16> = rng.vec(rows * cols, |r| (r.next_u64() as u16) | 1);
    let a = s
        .to_device(&ndarray::Array2::from_shape_vec((rows, cols), host.clone()).unwrap())
        .unwrap();
    let mut out = s
        .to_device(&ndarray::Array2::from_elem((rows, cols), 0xdeadu16))
        .unwrap();
    let kern = Kernel::<(Tma<u16, 2>, TmaMut<u16, 2>, i32, i32, i32, i32)>::build(
        "tma_store",
        |k, (src, dst, r0, c0, r1, c1)| {
            let smem = k.dynamic_shared::<u16>();
            let t = k.thread_idx().x;
            let (bars, pad) = one_barrier(k, &smem);
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
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let ms = TensorMap::<u16, 2>::tiled_with(&a, [16, 64], opts).unwrap();
    let cfg = LaunchConfig::new(1, 128).with_shared_mem(1024 + 16 * 64 * 2);
    let (r0, c0, r1, c1) = (4i32, 8i32, 30i32, 24i32);
    {
        let md = TensorMap::<u16, 2>::tiled_mut_with(&mut out, [16, 64], opts).unwrap();
        kern.launch(&s, cfg, (&ms, &md, r0, c0, r1, c1)).unwrap();
    }
    let got = out.to_vec_async(&s).unwrap();
    let mut want = vec![0xdeadu16; rows * cols];
    for br in 0..16i32 {
        for bc in 0..64i32 {
            let (sr, sc) = (r0 + br, c0 + bc);
            let v = if (sr as usize) < rows && (sc as usize) < cols {
                host[sr as usize * cols + sc as usize]
            } else {
                0
            };
            let (dr, dc) = (r1 + br, c1 + bc);
            if (dr as usize) < rows && (dc as usize) < cols {
                want[dr as usize * cols + dc as usize] = v;
            }
        }
    }
    let bad = (0..rows * cols).filter(|&i| got[i] != want[i]).count();
    assert_eq!(bad, 0, "{bad} elements differ after the TMA store");
    // A read-only map for the parameter that stores: refused at launch.
    let ro = TensorMap::<u16, 2>::tiled_with(&a, [16, 64], opts).unwrap();
    let err = kern
        .launch(&s, cfg, (&ms, &ro, r0, c0, r1, c1))
        .unwrap_err();
    assert!(err.to_string().contains("tiled_mut"), "{err}");
}

/// A type for the TMA-fed GEMM.
trait Case:
    MmaModel<Acc = f32>
    + cudajit::codegen::WgmmaInput
    + cudajit::memory::TensorMapElement
    + Gen
    + cudajit::AnyBitPattern
{
}
impl<T> Case for T where
    T: MmaModel<Acc = f32>
        + cudajit::codegen::WgmmaInput
        + cudajit::memory::TensorMapElement
        + Gen
        + cudajit::AnyBitPattern
{
}

/// C = A·B (M×N×K) with one warpgroup per 64×64 tile of C: for each 64-deep k-tile, thread 0
/// loads the A and B boxes by TMA onto one barrier, the warpgroup waits for the phase and runs
/// four wgmmas; the single stage is released with a syncthreads.
fn tma_gemm<T: Case>(m: usize, n: usize, kd: usize) {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: TMA and wgmma need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let name = format!("tma_gemm_{}", T::TY.name());
    let kern = Kernel::<(Tma<T, 2>, Tma<T, 2>, &mut [f32], u32, u32, u32)>::build(
        &name,
        |k, (ma, mb, out, m, n, kd)| {
            let smem = k.dynamic_shared::<T>();
            let t = k.thread_idx().x;
            let (bars, pad) = one_barrier(k, &smem);
            let (m0, n0) = (k.block_idx().y * 64u32, k.block_idx().x * 64u32);
            let da = SmemMatrix::new(&smem, pad, WgmmaMajor::K, WgmmaSwizzle::B128, 16, 1024);
            let db = SmemMatrix::new(
                &smem,
                pad + 4096u32,
                WgmmaMajor::MN,
                WgmmaSwizzle::B128,
                8192,
                1024,
            );
            let acc0 = WgmmaAcc::zeros(64);
            let vars = acc0.vars(k);
            let tiles = (kd + 63u32) / 64u32;
            k.for_range(0u32, tiles, |k, kt| {
                k.if_(t.eq(0u32), |_| {
                    bars.arrive_expect_tx(0u32, 2u32 * 64 * 64 * 2);
                    let k0 = (kt * 64u32).cast::<i32>();
                    ma.load([m0.cast::<i32>(), k0], &smem, pad, &bars, 0u32);
                    mb.load([k0, n0.cast::<i32>()], &smem, pad + 4096u32, &bars, 0u32);
                });
                bars.wait(k, 0u32, kt & 1u32);
                k.wgmma_fence();
                let mut acc = WgmmaAcc::from_vars(&vars);
                for st in 0..4u32 {
                    acc = k.wgmma(&da.advance(st * 32), &db.advance(st * 2048), &acc, true);
                }
                k.wgmma_commit();
                let acc = k.wgmma_wait(0, &acc);
                for (v, e) in vars.iter().zip(acc.elems()) {
                    v.set(*e);
                }
                k.syncthreads();
            });
            WgmmaAcc::from_vars(&vars).for_each(k, |r, col, v| {
                let (i, j) = (m0 + r, n0 + col);
                k.if_(i.lt(m).and(j.lt(n)), |_| out.set(i * n + j, v));
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let a: Vec<T> = rng.vec(m * kd, draw);
    let b: Vec<T> = rng.vec(kd * n, draw);
    let da = s
        .to_device(&ndarray::Array2::from_shape_vec((m, kd), a.clone()).unwrap())
        .unwrap();
    let db = s
        .to_device(&ndarray::Array2::from_shape_vec((kd, n), b.clone()).unwrap())
        .unwrap();
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let ma = TensorMap::<T, 2>::tiled_with(&da, [64, 64], opts).unwrap();
    let mb = TensorMap::<T, 2>::tiled_with(&db, [64, 64], opts).unwrap();
    let mut out = c.alloc::<f32, _>(m * n).unwrap();
    out.fill_async(<f32 as AccModel>::poison(), &s).unwrap();
    let grid = (n.div_ceil(64) as u32, m.div_ceil(64) as u32);
    kern.launch(
        &s,
        LaunchConfig::new(grid, 128).with_shared_mem(1024 + 2 * 8192),
        (&ma, &mb, &mut out, m as u32, n as u32, kd as u32),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    // The model sees the zero-filled k past K, as the wgmmas do.
    let kp = kd.div_ceil(64) * 64;
    let zero = <T as cudajit::codegen::Scalar>::from_bits(0);
    let ap: Vec<T> = (0..m * kp)
        .map(|i| {
            if i % kp < kd {
                a[i / kp * kd + i % kp]
            } else {
                zero
            }
        })
        .collect();
    let bp: Vec<T> = (0..kp * n)
        .map(|i| if i / n < kd { b[i] } else { zero })
        .collect();
    check_product(&name, (m, n, kp), (&ap, &bp, &vec![0.0; m * n]), &got);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_gemm_f16() {
    tma_gemm::<f16>(100, 136, 144);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_gemm_bf16() {
    tma_gemm::<bf16>(64, 64, 64);
    tma_gemm::<bf16>(130, 72, 200);
}

/// What the simulator reports instead of a GPU's silently wrong tile or hang (run there only):
/// a wgmma whose descriptor reads a TMA-written tile with another swizzle, descriptors that
/// differ across the warpgroup, and a wait on a transaction barrier whose announced bytes never
/// come.
#[test]
#[ignore = "needs a CUDA GPU"]
fn simulator_reports_bad_descriptors_and_deadlocks() {
    if !cudajit::on_simulator() {
        println!("skipped: on a GPU these kernels compute garbage or hang");
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let a = c.zeros::<f16, _>((64, 64)).unwrap();
    let opts = TensorMapOptions::default().swizzle(TensorMapSwizzle::B128);
    let map = TensorMap::<f16, 2>::tiled_with(&a, [64, 64], opts).unwrap();
    // 0: the tile read with 64-byte swizzle; 1: each thread's own descriptor; 2: no copy.
    for case in 0..3u32 {
        let k = Kernel::<(Tma<f16, 2>, &mut [f32])>::build("bad_tile", |k, (m, out)| {
            let smem = k.dynamic_shared::<f16>();
            let (bars, pad) = one_barrier(k, &smem);
            let t = k.thread_idx().x;
            k.if_(t.eq(0u32), |k| {
                bars.arrive_expect_tx(0u32, 64u32 * 64 * 2);
                if case != 2 {
                    let zero = k.lit(0i32);
                    m.load([zero, zero], &smem, pad, &bars, 0u32);
                }
            });
            bars.wait(k, 0u32, 0u32);
            let (swizzle, at) = match case {
                0 => (WgmmaSwizzle::B64, pad),
                _ => (WgmmaSwizzle::B128, pad + (t & 1u32) * 512u32),
            };
            let a = SmemMatrix::new(&smem, at, WgmmaMajor::K, swizzle, 16, 1024);
            k.wgmma_fence();
            let acc = k.wgmma(&a, &a, &WgmmaAcc::zeros(64), false);
            k.wgmma_commit();
            let acc = k.wgmma_wait(0, &acc);
            acc.for_each(k, |r, col, v| out.set(r * 64u32 + col, v));
        })
        .unwrap();
        let mut out = c.zeros::<f32, _>(64 * 64).unwrap();
        let cfg = LaunchConfig::new(1, 128).with_shared_mem(1024 + 64 * 64 * 2);
        let (kind, message) = fault(k.launch(&s, cfg, (&map, &mut out)));
        let want = match case {
            0 => (
                FaultKind::BadDescriptor,
                "reads with 64-byte swizzle the shared byte",
            ),
            1 => (
                FaultKind::BadDescriptor,
                "a warpgroup's threads must give one descriptor",
            ),
            _ => (FaultKind::Deadlock, "8192"),
        };
        assert_eq!(kind, want.0, "case {case}: {message}");
        assert!(message.contains(want.1), "case {case}: {message}");
    }
}
