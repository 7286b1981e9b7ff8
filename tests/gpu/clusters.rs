//! Thread-block clusters (sm_90) on the GPU and on the simulator:
//! - the cluster registers of every block, with clusters of several shapes and without;
//! - distributed shared memory: each block reads its neighbour's shared array (`at_rank`) and
//!   writes into another's (`set_at_rank`), f32 special values moved bit for bit;
//! - a histogram whose bins are spread over the cluster's blocks (`atomic_add_at_rank`);
//! - TMA multicast: each block of a cluster copies one box into every block of the cluster,
//!   which wait on their own barriers; then each arrives on rank 0's barrier
//!   (`arrive_at_rank`);
//! - bad launches (a grid not a whole number of clusters, a cluster of more than 8) are clear
//!   errors; on the simulator, a rank outside the cluster, a finished block's shared memory
//!   and a cluster barrier one block skips are faults.

use cudajit::codegen::{Expr, Kernel, Tma};
use cudajit::memory::TensorMap;
use cudajit::prelude::*;
use cudajit::FaultKind;

use crate::common::{ctx, fault, sm90, special_f32, Rng};

#[path = "../../examples/clusters/kernels.rs"]
mod kernels;

/// The 14 cluster registers each block reports.
const REGS: usize = 14;

#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_registers() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let kern = Kernel::<(&mut [u32],)>::build("cluster_regs", |k, (out,)| {
        let (b, g) = (k.block_idx(), k.grid_dim());
        let linear = (b.z * g.y + b.y) * g.x + b.x;
        let (id, n, at, dim) = (
            k.cluster_idx(),
            k.cluster_grid_dim(),
            k.block_in_cluster(),
            k.cluster_dim(),
        );
        let vals = [
            k.cluster_rank(),
            k.cluster_size(),
            id.x,
            id.y,
            id.z,
            n.x,
            n.y,
            n.z,
            at.x,
            at.y,
            at.z,
            dim.x,
            dim.y,
            dim.z,
        ];
        k.if_(k.thread_idx().x.eq(0u32), |_| {
            for (j, v) in vals.iter().enumerate() {
                out.set(linear * REGS as u32 + j as u32, *v);
            }
        });
    })
    .unwrap();
    let grid = [6u32, 4, 2];
    for cl in [
        None,
        Some([2u32, 1, 1]),
        Some([3, 2, 1]),
        Some([2, 2, 2]),
        Some([1, 4, 1]),
    ] {
        let blocks = grid.iter().product::<u32>() as usize;
        let mut out = c.alloc::<u32, _>(blocks * REGS).unwrap();
        out.fill_async(0xdead_beef, &s).unwrap();
        let mut cfg = LaunchConfig::new((grid[0], grid[1], grid[2]), 64);
        if let Some(d) = cl {
            cfg = cfg.with_cluster((d[0], d[1], d[2]));
        }
        kern.launch(&s, cfg, (&mut out,)).unwrap();
        let got = out.to_vec_async(&s).unwrap();
        let d = cl.unwrap_or([1, 1, 1]);
        for z in 0..grid[2] {
            for y in 0..grid[1] {
                for x in 0..grid[0] {
                    let b = [x, y, z];
                    let at = [0, 1, 2].map(|k| b[k] % d[k]);
                    let mut want = vec![at[0] + d[0] * (at[1] + d[1] * at[2]), d.iter().product()];
                    want.extend([0, 1, 2].map(|k| b[k] / d[k]));
                    want.extend([0, 1, 2].map(|k| grid[k] / d[k]));
                    want.extend(at);
                    want.extend(d);
                    let l = ((z * grid[1] + y) * grid[0] + x) as usize;
                    assert_eq!(
                        got[l * REGS..(l + 1) * REGS],
                        want[..],
                        "cluster {cl:?}, block {b:?}: rank, size, clusterid, nclusterid, \
                         cluster_ctaid, cluster_nctaid"
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn distributed_shared_memory_moves_values_between_blocks() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    const T: u32 = 128;
    // Each block puts its slice of x in its shared `mine`; reads the next rank's `mine` into
    // `next`, and writes its own values into the previous rank's `inbox`, which it then
    // copies to `got_inbox`: both hold the next rank's slice.
    let kern = Kernel::<(&[f32], &mut [f32], &mut [f32])>::build(
        "dsmem_ring",
        |k, (x, next, got_inbox)| {
            let mine = k.shared_array::<f32>(T as usize);
            let inbox = k.shared_array::<f32>(T as usize);
            let t = k.thread_idx().x;
            let at = k.block_idx().x * T + t;
            let v = x.at(at);
            mine.set(t, v);
            let (r, n) = (k.cluster_rank(), k.cluster_size());
            k.cluster_sync();
            next.set(at, mine.at_rank((r + 1u32) % n, t));
            inbox.set_at_rank((r + n - 1u32) % n, t, v);
            k.cluster_sync();
            got_inbox.set(at, inbox.at(t));
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let blocks = 24u32;
    let n = (blocks * T) as usize;
    let xs = special_f32(&mut rng, n);
    let x = s.to_device(&xs).unwrap();
    for size in [1u32, 2, 4, 8] {
        let mut next = c.alloc::<f32, _>(n).unwrap();
        let mut inbox = c.alloc::<f32, _>(n).unwrap();
        next.fill_async(f32::from_bits(0x7fc0_dead), &s).unwrap();
        inbox.fill_async(f32::from_bits(0x7fc0_dead), &s).unwrap();
        let cfg = LaunchConfig::new(blocks, T).with_cluster(size);
        kern.launch(&s, cfg, (&x, &mut next, &mut inbox)).unwrap();
        for (name, got) in [
            ("at_rank", next.to_vec_async(&s).unwrap()),
            ("set_at_rank", inbox.to_vec_async(&s).unwrap()),
        ] {
            for (i, g) in got.iter().enumerate() {
                let (b, t) = (i as u32 / T, i as u32 % T);
                let nb = b / size * size + (b % size + 1) % size;
                let want = xs[(nb * T + t) as usize];
                assert_eq!(
                    g.to_bits(),
                    want.to_bits(),
                    "{name}, clusters of {size}: element {i} (block {b}, thread {t})"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn histogram_over_the_cluster_shared_memory() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    // examples/clusters' kernel: the bins spread over the cluster's blocks.
    let kern = kernels::histogram().unwrap();
    let mut rng = Rng::new();
    let blocks = 16u32;
    // Skewed values: some bins get many hits, a few none.
    let xs: Vec<u32> = rng.vec((blocks * kernels::PER_BLOCK) as usize, |r| {
        let u = r.next_u64();
        if u % 3 == 0 {
            (u >> 8) as u32 % 7
        } else {
            (u >> 16) as u32
        }
    });
    let x = s.to_device(&xs).unwrap();
    for size in [1u32, 2, 4, 8] {
        let want = kernels::host_histogram(&xs, size);
        let mut hist = c.alloc::<u32, _>(want.len()).unwrap();
        hist.fill_async(u32::MAX, &s).unwrap();
        let cfg = LaunchConfig::new(blocks, 128).with_cluster(size);
        kern.launch(&s, cfg, (&x, &mut hist)).unwrap();
        assert_eq!(hist.to_vec_async(&s).unwrap(), want, "clusters of {size}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tma_multicast_and_remote_arrivals() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    const ROWS: u32 = 8;
    const COLS: u32 = 64;
    const BOX: u32 = ROWS * COLS;
    // Block rank r of a cluster of n copies rows [(cluster·n + r)·8, +8) into slot r of every
    // block of the cluster; each block waits for its n boxes, copies its slots out, and
    // arrives on rank 0's second barrier, which rank 0 waits for.
    let kern = Kernel::<(Tma<u16, 2>, &mut [u16], u32)>::build(
        "tma_multicast",
        |k, (map, out, box_bytes)| {
            let smem = k.dynamic_shared::<u16>();
            let bars = k.mbarriers(2);
            // TMA boxes land 128-byte aligned: the dynamic shared memory starts after the
            // barriers.
            let pad = smem.aligned_index(128);
            let t = k.thread_idx().x;
            let (r, n) = (k.cluster_rank(), k.cluster_size());
            k.if_(t.eq(0u32), |k| {
                bars.init(0u32, 1u32);
                bars.init(1u32, n);
                k.fence_barrier_init();
            });
            // Every block's barriers are set up before any block copies into it.
            k.cluster_sync();
            let all = ((Expr::from(1u32) << n) - 1u32).cast::<u16>();
            k.if_(t.eq(0u32), |_| {
                bars.arrive_expect_tx(0u32, box_bytes * n);
                let row = ((k.cluster_idx().x * n + r) * ROWS).cast::<i32>();
                map.load_multicast([row, 0i32.into()], &smem, pad + r * BOX, &bars, 0u32, all);
            });
            bars.wait(k, 0u32, 0u32);
            let base = k.block_idx().x * n * BOX;
            k.for_step(t, n * BOX, k.block_dim().x, |_, i| {
                out.set(base + i, smem.at(pad + i))
            });
            k.if_(t.eq(0u32), |_| bars.arrive_at_rank(1u32, 0u32));
            k.if_(r.eq(0u32), |k| bars.wait(k, 1u32, 0u32));
            k.cluster_sync();
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let blocks = 16u32;
    let rows = (blocks * ROWS) as usize;
    let host: Vec<u16> = rng.vec(rows * COLS as usize, |r| r.next_u64() as u16);
    let a = s
        .to_device(&ndarray::Array2::from_shape_vec((rows, COLS as usize), host.clone()).unwrap())
        .unwrap();
    let map = TensorMap::<u16, 2>::tiled(&a, [ROWS, COLS]).unwrap();
    for size in [1u32, 2, 4] {
        let len = (blocks * size * BOX) as usize;
        let mut out = c.alloc::<u16, _>(len).unwrap();
        out.fill_async(0xdead, &s).unwrap();
        let cfg = LaunchConfig::new(blocks, 128)
            .with_shared_mem(128 + size * BOX * 2)
            .with_cluster(size);
        kern.launch(&s, cfg, (&map, &mut out, map.box_bytes()))
            .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for b in 0..blocks {
            let cl = b / size;
            for slot in 0..size {
                for e in 0..BOX {
                    let row = (cl * size + slot) * ROWS + e / COLS;
                    let want = host[(row * COLS + e % COLS) as usize];
                    let i = ((b * size + slot) * BOX + e) as usize;
                    assert_eq!(
                        got[i], want,
                        "clusters of {size}: block {b}, slot {slot}, element {e}"
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_cluster_launches_are_clear_errors() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let kern = Kernel::<(&mut [u32],)>::build("cluster_rank_out", |k, (out,)| {
        out.set(k.block_idx().x, k.cluster_rank());
    })
    .unwrap();
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let err = kern
        .launch(&s, LaunchConfig::new(6, 32).with_cluster(4), (&mut out,))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a whole number of clusters"), "{err}");
    let err = kern
        .launch(&s, LaunchConfig::new(64, 32).with_cluster(16), (&mut out,))
        .unwrap_err()
        .to_string();
    assert!(err.contains("a cluster holds 1 to 8 blocks"), "{err}");
    // The occupancy query: clusters of 2 blocks of 128 threads fit, many of them.
    let n = kern
        .max_active_clusters(&c, LaunchConfig::new(2, 128).with_cluster(2))
        .unwrap();
    assert!(n >= 1, "max_active_clusters: {n}");
    // And the context still works.
    kern.launch(&s, LaunchConfig::new(64, 32).with_cluster(8), (&mut out,))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    assert_eq!(got, (0..64).map(|b| b % 8).collect::<Vec<u32>>());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn simulator_reports_cluster_misuse() {
    if !cudajit::on_simulator() {
        println!("skipped: these would hang or fault a GPU; the simulator reports them");
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    // A rank outside the cluster.
    let k = Kernel::<(&mut [f32],)>::build("rank_outside", |k, (out,)| {
        let buf = k.shared_array::<f32>(32);
        buf.set(k.thread_idx().x, 1.0f32);
        k.cluster_sync();
        out.set(k.thread_idx().x, buf.at_rank(k.cluster_size(), 0u32));
        k.cluster_sync();
    })
    .unwrap();
    let mut out = c.zeros::<f32, _>(32).unwrap();
    let cfg = LaunchConfig::new(4, 32).with_cluster(2);
    let (kind, message) = fault(k.launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds, "{message}");
    assert!(
        message.contains("cluster rank 2, but its cluster has 2 blocks"),
        "{message}"
    );
    // Rank 1 reads rank 0's shared memory after rank 0 has exited.
    let k = Kernel::<(&mut [f32],)>::build("reads_exited", |k, (out,)| {
        let buf = k.shared_array::<f32>(32);
        let t = k.thread_idx().x;
        buf.set(t, 2.0f32);
        k.cluster_sync();
        k.if_(k.cluster_rank().eq(1u32), |k| {
            // Rank 1 waits a while (rank 0 goes on to its end).
            k.for_range(0u32, 64u32, |k, _| k.syncthreads());
            out.set(t, buf.at_rank(0u32, t));
        });
    })
    .unwrap();
    let (kind, message) = fault(k.launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds, "{message}");
    assert!(message.contains("which has finished"), "{message}");
    // Rank 0 waits at a named barrier that never fills, so it never reaches the cluster
    // barrier rank 1 waits at.
    let k = Kernel::<(&mut [f32],)>::build("never_arrives", |k, (out,)| {
        k.if_else(
            k.cluster_rank().eq(0u32),
            |k| k.named_barrier_sync(1, 64),
            |k| k.cluster_sync(),
        );
        out.set(k.thread_idx().x, 1.0f32);
    })
    .unwrap();
    let (kind, message) = fault(k.launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::Deadlock, "{message}");
    assert!(
        message.contains("the cluster of blocks (0, 0, 0), (1, 0, 0) is stuck")
            && message.contains("warp 0 waits at the cluster barrier")
            && message.contains("waits at named barrier 1 (32 of 64 threads arrived)"),
        "{message}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_launches_in_graphs() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: clusters need an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    // Each block writes its rank and its cluster's size, read from its neighbour's shared
    // memory (so a node without its cluster shape would give size 1, or fault).
    let kern = Kernel::<(&mut [u32],)>::build("cluster_in_graph", |k, (out,)| {
        let me = k.shared_array::<u32>(1);
        let (r, n) = (k.cluster_rank(), k.cluster_size());
        k.if_(k.thread_idx().x.eq(0u32), |_| me.set(0u32, r * 100u32 + n));
        k.cluster_sync();
        let b = k.block_idx().x;
        k.if_(k.thread_idx().x.eq(0u32), |_| {
            out.set(b, me.at_rank((r + 1u32) % n, 0u32))
        });
        k.cluster_sync();
    })
    .unwrap();
    let blocks = 16u32;
    let want = |size: u32| -> Vec<u32> {
        (0..blocks)
            .map(|b| (b % size + 1) % size * 100 + size)
            .collect()
    };
    for size in [2u32, 4] {
        let cfg = LaunchConfig::new(blocks, 32).with_cluster(size);
        // A hand-built graph: the kernel node carries the cluster shape.
        let mut out = c.zeros::<u32, _>(blocks as usize).unwrap();
        let mut g = cudajit::Graph::new(&c).unwrap();
        kern.add_to_graph(&mut g, cfg, (&mut out,), &[]).unwrap();
        let exec = g.instantiate().unwrap();
        // SAFETY: `out` outlives the launch (synchronised below).
        unsafe { exec.launch(&s) }.unwrap();
        assert_eq!(
            out.to_vec_async(&s).unwrap(),
            want(size),
            "graph node, clusters of {size}"
        );
        // A captured cluster launch.
        let mut out = c.zeros::<u32, _>(blocks as usize).unwrap();
        let graph = s.capture(|s| kern.launch(s, cfg, (&mut out,))).unwrap();
        let exec = graph.instantiate().unwrap();
        // SAFETY: as above.
        unsafe { exec.launch(&s) }.unwrap();
        assert_eq!(
            out.to_vec_async(&s).unwrap(),
            want(size),
            "captured, clusters of {size}"
        );
    }
}
