//! Kernels that launch kernels (dynamic parallelism), checked against host models: many
//! children, nesting depth, tail-launch ordering, a recursive quicksort, a failing child and a
//! missing device runtime. They run on the GPU (the device runtime, libcudadevrt.a, found as
//! the guide says) and on the simulator (`CUDAJIT_SIMULATOR=1`).

use cudajit::codegen::{DeviceStream, Kernel};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::support::child::{Child, CHILD_OK};

type Fill = Kernel<(&'static mut [u32], u32, u32, u32)>;

/// `out[base + i] = value + i` for `i < len`.
fn fill() -> Fill {
    Fill::build("dp_fill_child", |k, (out, base, len, value)| {
        let i = k.grid1();
        k.if_(i.lt(len.cast::<u64>()), |_| {
            let j = i + base.cast::<u64>();
            out.set(j, value + i.cast::<u32>());
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_many_children() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let child = fill();
    // Each of `parents` threads launches one child over its chunk of `chunk` elements.
    let parent = Kernel::<(&mut [u32], u32)>::build("dp_many", |k, (out, chunk)| {
        let t = k.grid1().cast::<u32>();
        let blocks = (chunk + 31u32) / 32u32;
        // The threads past the last chunk launch nothing.
        k.if_(t.lt(out.len().cast::<u32>() / chunk), |k| {
            k.launch_kernel(
                &child,
                blocks,
                32u32,
                0u32,
                DeviceStream::Default,
                (out, t * chunk, chunk, t * 1000u32),
            );
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    for (parents, chunk) in [(1u32, 1u32), (64, 37), (200, 5)] {
        let n = (parents * chunk) as usize;
        let mut out = s.to_device(&rng.vec(n, |r| r.next_u64() as u32)).unwrap();
        parent
            .launch(
                &s,
                LaunchConfig::new(parents.div_ceil(64), parents.min(64)),
                (&mut out, chunk),
            )
            .unwrap();
        let got = out.to_vec().unwrap();
        let want: Vec<u32> = (0..n as u32)
            .map(|j| (j / chunk) * 1000 + j % chunk)
            .collect();
        assert_eq!(got, want, "{parents} children of {chunk}");
    }
}

type Rec = Kernel<(&'static mut [u32], u32, u32)>;

/// Launches itself `max` levels deep; level `d` writes `d + 1` at `out[d]`.
fn recursive() -> Rec {
    Rec::build("dp_recursive", |k, (out, depth, max)| {
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            k.if_(depth.lt(out.len().cast::<u32>()), |_| {
                out.set(depth, depth + 1u32)
            });
            k.if_(depth.lt(max), |k| {
                k.launch_self::<(&mut [u32], u32, u32), _>(
                    1u32,
                    32u32,
                    0u32,
                    DeviceStream::Default,
                    (out, depth + 1u32, max),
                );
            });
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_nesting_depth() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = recursive();
    for max in [0u32, 1, 5, 12] {
        let mut out = s.to_device(&[0u32; 16]).unwrap();
        k.launch(&s, LaunchConfig::new(1, 32), (&mut out, 0u32, max))
            .unwrap();
        let want: Vec<u32> = (0..16u32)
            .map(|d| if d <= max { d + 1 } else { 0 })
            .collect();
        assert_eq!(out.to_vec().unwrap(), want, "depth {max}");
    }
    // Deeper than CUDA's documented 24 levels: on the simulator the launch that goes too deep
    // fails, and the host hears it. An H100 with driver 580 ran all 31 levels (2026-11-27):
    // there every level must then have written its word.
    let mut out = s.to_device(&[0u32; 32]).unwrap();
    let r = k.launch(&s, LaunchConfig::new(1, 32), (&mut out, 0u32, 30u32));
    if r.is_ok() && !cudajit::on_simulator() {
        let want: Vec<u32> = (0..32u32)
            .map(|d| if d <= 30 { d + 1 } else { 0 })
            .collect();
        assert_eq!(out.to_vec().unwrap(), want, "depth 30");
        return;
    }
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("a kernel launch from the device failed") && e.contains("dp_recursive"),
        "{e}"
    );
    if cudajit::on_simulator() {
        assert!(e.contains("cudaErrorLaunchMaxDepthExceeded (65)"), "{e}");
        let got = out.to_vec().unwrap();
        assert_eq!(&got[..24], &(1..=24).collect::<Vec<u32>>()[..]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_tail_launch_runs_after_the_grid_and_its_children() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // out[0]: the count of parent blocks; out[1]: set by a default-stream child.
    let read = Kernel::<(&mut [u32],)>::build("dp_tail_reader", |_, (out,)| {
        // Runs after the parent grid and its other children: it sees all their writes.
        out.set(2u32, out.atomic_load(0u32) * 10u32 + out.atomic_load(1u32));
    })
    .unwrap();
    let mark = Kernel::<(&mut [u32],)>::build("dp_mark", |_, (out,)| {
        out.atomic_add(1u32, 1u32);
    })
    .unwrap();
    let parent = Kernel::<(&mut [u32],)>::build("dp_tail_parent", |k, (out,)| {
        let first = k.thread_idx().x.eq(0u32);
        k.if_(first, |k| {
            k.if_(k.block_idx().x.eq(0u32), |k| {
                // Launched before the other blocks count themselves in.
                k.launch_kernel(&read, 1u32, 1u32, 0u32, DeviceStream::TailLaunch, (out,));
                k.launch_kernel(&mark, 1u32, 1u32, 0u32, DeviceStream::Default, (out,));
            });
            out.atomic_add(0u32, 1u32);
        });
    })
    .unwrap();
    for blocks in [1u32, 7, 40] {
        let mut out = s.to_device(&[0u32; 3]).unwrap();
        parent
            .launch(&s, LaunchConfig::new(blocks, 64), (&mut out,))
            .unwrap();
        assert_eq!(
            out.to_vec().unwrap(),
            [blocks, 1, blocks * 10 + 1],
            "{blocks} blocks"
        );
    }
}

type Sort = Kernel<(&'static mut [i32], u32, u32, u32)>;

/// A recursive quicksort of `data[lo..hi]` (one thread per range): ranges of 32 or fewer
/// elements, or past depth 16, are insertion-sorted; others are partitioned around their last
/// element and the two halves launched as fire-and-forget children (disjoint ranges).
pub fn quicksort() -> Sort {
    Sort::build("dp_quicksort", |k, (data, lo, hi, depth)| {
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            let small = (hi - lo).le(32u32).or(depth.ge(16u32));
            k.if_else(
                small,
                |k| {
                    k.for_range(lo + 1u32, hi, |k, i| {
                        let key = data.at(i);
                        let j = k.var::<u32>(i);
                        k.while_(
                            |_| j.get().gt(lo).and_then(|| data.at(j.get() - 1u32).gt(key)),
                            |_| {
                                data.set(j.get(), data.at(j.get() - 1u32));
                                j.set(j.get() - 1u32);
                            },
                        );
                        data.set(j.get(), key);
                    });
                },
                |k| {
                    let pivot = data.at(hi - 1u32);
                    let store = k.var::<u32>(lo);
                    k.for_range(lo, hi - 1u32, |k, i| {
                        let v = data.at(i);
                        k.if_(v.lt(pivot), |_| {
                            data.set(i, data.at(store.get()));
                            data.set(store.get(), v);
                            store.set(store.get() + 1u32);
                        });
                    });
                    let p = store.get();
                    data.set(hi - 1u32, data.at(p));
                    data.set(p, pivot);
                    let next = depth + 1u32;
                    k.launch_self::<(&mut [i32], u32, u32, u32), _>(
                        1u32,
                        1u32,
                        0u32,
                        DeviceStream::FireAndForget,
                        (data, lo, p, next),
                    );
                    k.launch_self::<(&mut [i32], u32, u32, u32), _>(
                        1u32,
                        1u32,
                        0u32,
                        DeviceStream::FireAndForget,
                        (data, p + 1u32, hi, next),
                    );
                },
            );
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_quicksort() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = quicksort();
    let mut rng = Rng::new();
    for n in [0usize, 1, 33, 1000, 3001] {
        let mut host: Vec<i32> = rng.vec(n, |r| match r.next_u64() % 6 {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => 0,
            3 => (r.next_u64() % 8) as i32, // many duplicates
            _ => r.next_u64() as i32,
        });
        let mut d = s.to_device(&host).unwrap();
        k.launch(&s, LaunchConfig::new(1, 1), (&mut d, 0u32, n as u32, 0u32))
            .unwrap();
        host.sort_unstable();
        assert_eq!(d.to_vec().unwrap(), host, "n = {n}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_failing_child_is_a_host_error() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let child = fill();
    // A block of 2048 threads: a bad configuration, refused by the device runtime.
    let parent = Kernel::<(&mut [u32], u32)>::build("dp_bad_config", |k, (out, threads)| {
        k.if_(k.grid1().eq(0u64), |k| {
            k.launch_kernel(
                &child,
                1u32,
                threads,
                0u32,
                DeviceStream::Default,
                (out, 0u32, 4u32, 7u32),
            );
        });
    })
    .unwrap();
    let mut out = s.to_device(&[0u32; 4]).unwrap();
    let e = parent
        .launch(&s, LaunchConfig::new(1, 32), (&mut out, 2048u32))
        .unwrap_err()
        .to_string();
    // The configuration is checked before the device runtime is asked, on every device.
    assert!(
        e.contains("a kernel launch from the device failed")
            && e.contains("launch #1 (of `dp_fill_child`)")
            && e.contains("cudaErrorInvalidConfiguration (9)"),
        "{e}"
    );
    // The same kernel with a good configuration works afterwards.
    parent
        .launch(&s, LaunchConfig::new(1, 32), (&mut out, 32u32))
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), [7, 8, 9, 10]);
}

const MISSING: &str = "CUDAJIT_TEST_DP_MISSING_DEVRT";

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_missing_device_runtime_is_a_clear_error() {
    if std::env::var_os(MISSING).is_some() {
        let c = ctx();
        let s = c.new_stream().unwrap();
        // A kernel without device launches keeps working.
        let plain = fill();
        let mut out = s.to_device(&[0u32; 4]).unwrap();
        plain
            .launch(&s, LaunchConfig::new(1, 32), (&mut out, 0u32, 4u32, 1u32))
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), [1, 2, 3, 4]);
        let k = recursive();
        let r = k.launch(&s, LaunchConfig::new(1, 32), (&mut out, 0u32, 1u32));
        if cudajit::on_simulator() {
            // The simulator needs no device runtime.
            r.unwrap();
        } else {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("libcudadevrt.a")
                    && e.contains("pip install nvidia-cuda-runtime-cu12")
                    && e.contains("/nonexistent/libcudadevrt.a"),
                "{e}"
            );
        }
        println!("{CHILD_OK}");
        return;
    }
    Child::test(
        "dynamic_parallelism::dynamic_parallelism_missing_device_runtime_is_a_clear_error",
        MISSING,
        "1",
    )
    .env("CUDAJIT_CUDADEVRT", "/nonexistent/libcudadevrt.a")
    .env("CUDAJIT_CACHE", "0")
    .run_ok();
}
