//! Streams created on the device (`device_stream_create` / `device_stream_destroy`, CUDA's
//! `cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)` and `cudaStreamDestroy` in a
//! kernel), checked against host models: the children of one stream run in launch order,
//! those of the block's other streams beside them, all before the parent grid completes (a
//! tail launch sees them done), a stream destroyed with work pending still runs it; a failed
//! launch into a created stream is a host error naming its site; misuse is a simulator fault.
//! They run on the GPU and on the simulator (`CUDAJIT_SIMULATOR=1`).

use cudajit::codegen::{DeviceStream, Kernel};
use cudajit::prelude::*;
use cudajit::FaultKind;

use crate::common::{ctx, fault, Rng};

type Append = Kernel<(&'static mut [u32], u32, u32)>;

/// A grid of one block of 32 whose thread 0 appends `value` to the log at `base`: `log[base]`
/// counts the entries, which follow it.
fn append() -> Append {
    Append::build("ds_append", |k, (log, base, value)| {
        k.if_(k.grid1().eq(0u64), |_| {
            let pos = log.atomic_add(base, 1u32);
            log.set(base + 1u32 + pos, value);
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_created_streams_run_in_launch_order() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let child = append();
    // Sums the blocks' counts into the log's last word: a tail launch, which starts after the
    // parent grid and everything it launched into its other streams.
    let total = Kernel::<(&mut [u32], u32, u32)>::build("ds_total", |k, (log, blocks, cap)| {
        let sum = k.var(0u32);
        k.for_range(0u32, blocks, |_, b| sum.set(sum.get() + log.at(b * cap)));
        log.set(blocks * cap, sum.get());
    })
    .unwrap();
    // Threads 0..streams of each block create a stream each, launch `per` children into it
    // (thread t's i-th appends t * 1000 + i to its block's log) and destroy it at once.
    let parent = Kernel::<(&mut [u32], u32, u32)>::build("ds_streams", |k, (log, streams, per)| {
        let t = k.thread_idx().x;
        let cap = 1u32 + streams * per;
        let base = k.block_idx().x * cap;
        k.if_(t.lt(streams), |k| {
            let st = k.device_stream_create();
            k.for_range(0u32, per, |k, i| {
                k.launch_kernel(&child, 1u32, 32u32, 0u32, st, (log, base, t * 1000u32 + i));
            });
            k.device_stream_destroy(st);
        });
        k.if_(k.grid1().eq(0u64), |k| {
            let blocks = k.grid_dim().x;
            k.launch_kernel(
                &total,
                1u32,
                1u32,
                0u32,
                DeviceStream::TailLaunch,
                (log, blocks, cap),
            );
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    for (blocks, streams, per) in [(1u32, 1u32, 1u32), (3, 2, 4), (6, 4, 3)] {
        let cap = 1 + streams * per;
        let n = (blocks * cap + 1) as usize;
        // Counters zero, entries random (each is overwritten).
        let mut host = rng.vec(n, |r| r.next_u64() as u32);
        for b in 0..blocks {
            host[(b * cap) as usize] = 0;
        }
        let mut log = s.to_device(&host).unwrap();
        parent
            .launch(&s, LaunchConfig::new(blocks, 32), (&mut log, streams, per))
            .unwrap();
        let got = log.to_vec().unwrap();
        let what = format!("{blocks} blocks of {streams} streams of {per} children");
        for b in 0..blocks as usize {
            let at = b * cap as usize;
            assert_eq!(got[at], streams * per, "{what}: block {b}'s count");
            let entries = &got[at + 1..at + cap as usize];
            // Each stream's entries in its launch order; the streams' interleaving is free.
            for t in 0..streams {
                let mine: Vec<u32> = entries.iter().copied().filter(|v| v / 1000 == t).collect();
                let want: Vec<u32> = (0..per).map(|i| t * 1000 + i).collect();
                assert_eq!(mine, want, "{what}: block {b}, stream {t}: {entries:?}");
            }
        }
        assert_eq!(
            got[n - 1],
            blocks * streams * per,
            "{what}: the tail's total"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_failed_launch_into_a_created_stream_names_its_site() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let child = append();
    // Call #1 creates the stream, #2 launches with `threads` threads a block, #3 destroys.
    let parent = Kernel::<(&mut [u32], u32)>::build("ds_bad_config", |k, (log, threads)| {
        k.if_(k.grid1().eq(0u64), |k| {
            let st = k.device_stream_create();
            k.launch_kernel(&child, 1u32, threads, 0u32, st, (log, 0u32, 7u32));
            k.device_stream_destroy(st);
        });
    })
    .unwrap();
    let mut log = s.to_device(&[0u32; 2]).unwrap();
    let e = parent
        .launch(&s, LaunchConfig::new(1, 32), (&mut log, 2048u32))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a kernel launch from the device failed")
            && e.contains("launch #2 (of `ds_append`)")
            && e.contains("cudaErrorInvalidConfiguration (9)"),
        "{e}"
    );
    assert_eq!(log.to_vec().unwrap(), [0, 0], "nothing ran");
    parent
        .launch(&s, LaunchConfig::new(1, 32), (&mut log, 32u32))
        .unwrap();
    assert_eq!(log.to_vec().unwrap(), [1, 7]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_parallelism_destroyed_stream_misuse_is_a_simulator_fault() {
    if !cudajit::on_simulator() {
        println!("skipped: undefined on a GPU; the simulator reports it");
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let child = append();
    // A launch into a stream its thread destroyed.
    let k = Kernel::<(&mut [u32],)>::build("ds_after_destroy", |k, (log,)| {
        k.if_(k.thread_idx().x.eq(1u32), |k| {
            let st = k.device_stream_create();
            k.device_stream_destroy(st);
            k.launch_kernel(&child, 1u32, 32u32, 0u32, st, (log, 0u32, 1u32));
        });
    })
    .unwrap();
    let mut log = s.to_device(&[0u32; 2]).unwrap();
    let (kind, message) = fault(k.launch(&s, LaunchConfig::new(2, 32), (&mut log,)));
    assert_eq!(kind, FaultKind::InvalidStream, "{message}");
    assert!(
        message.contains("thread (1, 0, 0) of block (")
            && message.contains("launched `ds_append` into a stream it had destroyed")
            && message.contains("dynamic_parallelism_streams.rs"),
        "{message}"
    );
    // A stream destroyed twice.
    let k = Kernel::<(&mut [u32],)>::build("ds_destroy_twice", |k, (log,)| {
        let st = k.device_stream_create();
        k.launch_kernel(&child, 1u32, 32u32, 0u32, st, (log, 0u32, 1u32));
        k.device_stream_destroy(st);
        k.device_stream_destroy(st);
    })
    .unwrap();
    let (kind, message) = fault(k.launch(&s, LaunchConfig::new(1, 1), (&mut log,)));
    assert_eq!(kind, FaultKind::InvalidStream, "{message}");
    assert!(
        message.contains("destroyed a stream it had destroyed already"),
        "{message}"
    );
}
