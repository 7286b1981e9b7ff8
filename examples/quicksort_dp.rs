//! A recursive quicksort whose kernels launch kernels (dynamic parallelism), as CUDA's
//! `cdpSimpleQuicksort` sample: one thread partitions its range around the last element and
//! launches itself on the two halves (fire-and-forget: the halves are disjoint); ranges of 32
//! elements or fewer, or 16 levels deep, are insertion-sorted. The host launches the kernel
//! once; every other launch is made on the device. The result is checked against the host's
//! sort, and the number of launches and the depth reached are printed.
//!
//! On a GPU, loading the kernel links the CUDA device runtime (`libcudadevrt.a`: the
//! `nvidia-cuda-runtime-cu12` wheel, a CUDA toolkit, or `CUDAJIT_CUDADEVRT`). Runs on cudajit's
//! CPU simulator with `CUDAJIT_SIMULATOR=1` (what `bash scripts/run-example.sh quicksort_dp`
//! does without a GPU).
//!
//! `cargo run --release --example quicksort_dp [n]`

use cudajit::codegen::{DeviceStream, Kernel};
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("quicksort_dp: {e}");
        std::process::exit(1);
    }
}

/// `(data, lo, hi, depth, stats)`: sorts `data[lo..hi]`; `stats[0]` counts the kernels run,
/// `stats[1]` keeps the deepest level.
type Sort = Kernel<(&'static mut [i32], u32, u32, u32, &'static mut [u32])>;

const SMALL: u32 = 32;
const MAX_DEPTH: u32 = 16;

fn quicksort() -> cudajit::Result<Sort> {
    Sort::build("quicksort_dp", |k, (data, lo, hi, depth, stats)| {
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            stats.atomic_add(0u32, 1u32);
            stats.atomic_max(1u32, depth);
            let small = (hi - lo).le(SMALL).or(depth.ge(MAX_DEPTH));
            k.if_else(
                small,
                |k| {
                    // Insertion sort of data[lo..hi].
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
                    // Lomuto partition around data[hi - 1].
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
                    // quicksort<<<1, 1, 0, cudaStreamFireAndForget>>>(data, lo, p, depth + 1, stats)
                    for (a, b) in [(lo, p), (p + 1u32, hi)] {
                        k.launch_self::<(&mut [i32], u32, u32, u32, &mut [u32]), _>(
                            1u32,
                            1u32,
                            0u32,
                            DeviceStream::FireAndForget,
                            (data, a, b, depth + 1u32, stats),
                        );
                    }
                },
            );
        });
    })
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let t0 = std::time::Instant::now();
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let sim = cudajit::on_simulator();
    let backend = if sim {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {backend}: {}", ctx.device().name()?);
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| format!("not a number of elements: {a}"))?,
        None if sim => 20_000,
        None => 200_000,
    };
    // Random values with many duplicates and the extremes.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let host: Vec<i32> = (0..n)
        .map(|_| match next() % 8 {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => (next() % 16) as i32,
            _ => next() as i32,
        })
        .collect();

    let sort = quicksort()?;
    let mut data = stream.to_device(&host)?;
    let mut stats = stream.to_device(&[0u32; 2])?;
    let t1 = std::time::Instant::now();
    // Kernel::launch waits for a kernel that launches kernels (and reports a failed launch).
    sort.launch(
        &stream,
        LaunchConfig::new(1, 1),
        (&mut data, 0u32, n as u32, 0u32, &mut stats),
    )?;
    let took = t1.elapsed();
    let got = data.to_vec()?;
    let stats = stats.to_vec()?;
    let mut want = host;
    want.sort_unstable();
    let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    println!(
        "sorted {n} i32 with {} kernels ({} launched from the device), {} levels deep, in {:.1} ms",
        stats[0],
        stats[0].saturating_sub(1),
        stats[1] + 1,
        took.as_secs_f64() * 1e3
    );
    println!(
        "checked against the host's sort: {wrong} wrong; {:.0} ms in all",
        t0.elapsed().as_secs_f64() * 1e3
    );
    if wrong != 0 {
        return Err(format!("{wrong} elements out of place").into());
    }
    Ok(())
}
