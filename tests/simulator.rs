//! The simulator's own checks (CPU tests, no GPU): each planted bug is reported as
//! `Error::Fault` naming the kernel, the block and thread, the array and the index; a correct
//! kernel reports nothing; the context stays usable after a fault.
//!
//! The rest of the simulator is tested by running the GPU test suite on it
//! (`scripts/test.sh` runs `tests/gpu` with `CUDAJIT_SIMULATOR=1`).

use cudajit::codegen::{DeviceFn, Kernel, FULL_MASK};
use cudajit::prelude::*;
use cudajit::FaultKind;

fn ctx() -> Context {
    cudajit::use_simulator().expect("the simulator is chosen before anything else");
    Context::new(0).expect("the simulated device")
}

/// The fault a result carries, or a panic naming what came instead.
fn fault<T: std::fmt::Debug>(r: cudajit::Result<T>) -> (String, FaultKind, String) {
    match r {
        Err(Error::Fault {
            kernel,
            kind,
            message,
        }) => (kernel, kind, message),
        other => panic!("expected a simulator fault, got {other:?}"),
    }
}

#[test]
fn runs_on_the_simulator_and_says_so() {
    let c = ctx();
    assert!(cudajit::on_simulator());
    let (report, any) = cudajit::context::detect_report().unwrap();
    assert!(any);
    assert!(report.contains("simulator"), "{report}");
    assert_eq!(c.device().name().unwrap(), "cudajit simulator");
    assert!(c.load_ptx(".version 8.0").is_err());
}

#[test]
fn out_of_bounds_write_names_kernel_thread_array_and_index() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // No `if i < out.len()` guard: threads 100..127 write past the end.
    let k = Kernel::<(&[f32], &mut [f32])>::build("unguarded", |k, (x, out)| {
        let i = k.grid1();
        out.set(i, x.at(i % x.len()) * 2.0f32);
    })
    .unwrap();
    let x = s.to_device(&vec![1.0f32; 100]).unwrap();
    let mut out = c.zeros::<f32, _>(100).unwrap();
    let (kernel, kind, msg) = fault(k.launch(&s, LaunchConfig::new(4, 32), (&x, &mut out)));
    assert_eq!(
        (kernel.as_str(), kind),
        ("unguarded", FaultKind::OutOfBounds)
    );
    assert!(
        msg.contains("thread (4, 0, 0) of block (3, 0, 0) writes element 100 of array parameter 1")
            && msg.contains("100 elements"),
        "{msg}"
    );
    // The context is still usable, and a correct launch reports nothing.
    k.launch(&s, LaunchConfig::new(25, 4), (&x, &mut out))
        .unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![2.0f32; 100]);
}

#[test]
fn out_of_bounds_shared_and_local_reads() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u32],)>::build("shared_oob", |k, (out,)| {
        let sh = k.shared_array::<u32>(32);
        let t = k.thread_idx().x;
        sh.set(t, t);
        k.syncthreads();
        out.set(t, sh.at(t + 1u32));
    })
    .unwrap();
    let mut out = c.zeros::<u32, _>(32).unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.contains(
            "thread (31, 0, 0) of block (0, 0, 0) reads element 32 of shared array 0 (u32[32])"
        ),
        "{msg}"
    );
    let k = Kernel::<(&mut [u32],)>::build("local_oob", |k, (out,)| {
        let loc = k.local_array::<u32>(4);
        let t = k.thread_idx().x;
        loc.set(t % 4u32, t);
        out.set(t, loc.at(t));
    })
    .unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.contains("thread (4, 0, 0)") && msg.contains("element 4 of local array 0"),
        "{msg}"
    );
}

#[test]
fn barrier_reached_by_part_of_a_block() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // The builder rejects a barrier under a thread-dependent branch; one inside a device
    // function called from such a branch only shows when it runs.
    let sync = DeviceFn::<(u32,), u32>::build("with_barrier", |k, (v,)| {
        k.syncthreads();
        v + 1u32
    })
    .unwrap();
    let k = Kernel::<(&mut [u32],)>::build("divergent_barrier", |k, (out,)| {
        let t = k.thread_idx().x;
        k.if_(t.lt(16u32), |_| out.set(t, sync.call((t,))));
    })
    .unwrap();
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let (kernel, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 64), (&mut out,)));
    assert_eq!(
        (kernel.as_str(), kind),
        ("divergent_barrier", FaultKind::DivergentBarrier)
    );
    assert!(
        msg.contains("syncthreads (in device function `with_barrier`) was reached by 16 of the 64")
            && msg.contains("thread (16, 0, 0) of block (0, 0, 0) did not reach it"),
        "{msg}"
    );
    // A warp intrinsic whose mask names lanes that took the other branch.
    let k = Kernel::<(&mut [u32],)>::build("divergent_shfl", |k, (out,)| {
        let t = k.thread_idx().x;
        k.if_(t.lt(8u32), |k| out.set(t, k.shfl_sync(FULL_MASK, t, 0u32)));
    })
    .unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier);
    assert!(
        msg.contains("shfl_sync with mask 0xffffffff in warp 0: lane 8"),
        "{msg}"
    );
}

/// The tensor cores' MMA needs all 32 lanes of a warp: a partial warp, or a branch that splits
/// one, is a fault naming the lanes (on a GPU it is undefined behaviour).
#[test]
fn mma_needs_the_whole_warp() {
    use cudajit::codegen::{FragA, FragB, FragC};
    let c = ctx();
    let s = c.new_stream().unwrap();
    let build = |name: &str, split: bool| {
        Kernel::<(&mut [f32],)>::build(name, move |k, (out,)| {
            let t = k.thread_idx().x;
            let run = |k: &cudajit::codegen::KernelBuilder| {
                let a = FragA::<f32>::from_fn(k, |r, c| (r + c).cast::<f32>());
                let b = FragB::<f32>::from_fn(k, |r, c| (r * c).cast::<f32>());
                let d = k.mma(&a, &b, &FragC::zeros());
                out.set(t, d.elems()[0]);
            };
            if split {
                k.if_(t.lt(8u32), run);
            } else {
                run(k);
            }
        })
        .unwrap()
    };
    let mut out = c.zeros::<f32, _>(64).unwrap();
    let (_, kind, msg) =
        fault(build("mma_split", true).launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier);
    assert!(
        msg.contains("all 32 lanes of a warp must execute it together")
            && msg.contains("only lanes 0x000000ff are here"),
        "{msg}"
    );
    let (_, kind, msg) =
        fault(build("mma_partial_warp", false).launch(&s, LaunchConfig::new(1, 48), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier);
    assert!(msg.contains("the warp has lanes 0x0000ffff"), "{msg}");
}

#[test]
fn shared_memory_race_names_both_threads() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let build = |name: &str, barrier: bool| {
        Kernel::<(&mut [f32],)>::build(name, move |k, (out,)| {
            let sh = k.shared_array::<f32>(64);
            let t = k.thread_idx().x;
            sh.set(t, t.cast::<f32>());
            if barrier {
                k.syncthreads();
            }
            // Reads a neighbour's slot (thread 63 reads slot 0, written by thread 0).
            out.set(t, sh.at((t + 1u32) % 64u32));
        })
        .unwrap()
    };
    let mut out = c.zeros::<f32, _>(64).unwrap();
    let racy = build("racy", false);
    let (kernel, kind, msg) = fault(racy.launch(&s, LaunchConfig::new(1, 64), (&mut out,)));
    assert_eq!((kernel.as_str(), kind), ("racy", FaultKind::SharedRace));
    assert!(
        msg.contains("thread (0, 0, 0) of block (0, 0, 0) reads element 1 of shared array 0")
            && msg.contains("after thread (1, 0, 0) of block (0, 0, 0) wrote it"),
        "{msg}"
    );
    // With the barrier the same kernel is clean and correct.
    build("synced", true)
        .launch(&s, LaunchConfig::new(1, 64), (&mut out,))
        .unwrap();
    let want: Vec<f32> = (0..64).map(|t| ((t + 1) % 64) as f32).collect();
    assert_eq!(out.to_vec_async(&s).unwrap(), want);
}

#[test]
fn warp_reduction_with_syncwarp_is_clean_and_exact() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // A classic block sum: tree steps with syncthreads, the last warp with syncwarp, then
    // shuffles; the simulator must accept it and give the exact integer sums.
    let k = Kernel::<(&[u32], &mut [u32])>::build("block_sum", |k, (x, out)| {
        let sh = k.shared_array::<u32>(128);
        let t = k.thread_idx().x;
        let i = k.grid1();
        sh.set(t, x.at(i));
        k.syncthreads();
        let step = k.var(64u32);
        k.while_(
            |_| step.get().gt(32u32),
            |k| {
                k.if_(t.lt(step.get()), |_| {
                    sh.set(t, sh.at(t) + sh.at(t + step.get()))
                });
                k.syncthreads();
                step.set(step.get() >> 1u32);
            },
        );
        k.if_(t.lt(32u32), |k| {
            let v = k.var(sh.at(t) + sh.at(t + 32u32));
            for d in [16u32, 8, 4, 2, 1] {
                v.set(v.get() + k.shfl_down_sync(FULL_MASK, v.get(), d));
            }
            k.if_(t.eq(0u32), |k| out.set(k.block_idx().x, v.get()));
        });
    })
    .unwrap();
    let n = 128 * 40;
    let host: Vec<u32> = (0..n as u32)
        .map(|v| v.wrapping_mul(2_654_435_761) >> 8)
        .collect();
    let x = s.to_device(&host).unwrap();
    let mut out = c.zeros::<u32, _>(40).unwrap();
    k.launch(&s, LaunchConfig::new(40, 128), (&x, &mut out))
        .unwrap();
    let want: Vec<u32> = host
        .chunks(128)
        .map(|c| c.iter().fold(0u32, |a, &v| a.wrapping_add(v)))
        .collect();
    assert_eq!(out.to_vec_async(&s).unwrap(), want);
}

/// Block `b` waits for block `b - 1`'s flag (read with `atomic_load`), then raises its own:
/// blocks run in parallel on the host's threads and see each other's stores. With `fail`,
/// block 0 writes out of bounds before it raises its flag.
fn chained_flags(fail: bool) -> Kernel<(&'static mut [u32], &'static mut [u32])> {
    let name = if fail { "chain_fail" } else { "chain_ok" };
    Kernel::<(&mut [u32], &mut [u32])>::build(name, move |k, (flags, out)| {
        let b = k.block_idx().x;
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            k.if_(b.gt(0u32), |k| {
                let waiting = k.var(true);
                k.while_(
                    |_| waiting.get(),
                    |_| waiting.set(flags.atomic_load(b - 1u32).eq(0u32)),
                );
            });
            k.if_(b.eq(0u32).and(fail), |_| out.set(out.len(), 1u32));
            out.set(b, b + 1u32);
            flags.atomic_exch(b, 1u32);
        });
    })
    .unwrap()
}

#[test]
fn blocks_waiting_for_each_other_see_stores_and_stop_when_one_faults() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let blocks = 64u32;
    let mut flags = c.zeros::<u32, _>(blocks as usize).unwrap();
    let mut out = c.zeros::<u32, _>(blocks as usize).unwrap();
    chained_flags(false)
        .launch(&s, LaunchConfig::new(blocks, 32), (&mut flags, &mut out))
        .unwrap();
    let want: Vec<u32> = (1..=blocks).collect();
    assert_eq!(out.to_vec_async(&s).unwrap(), want);
    // Block 0 faults before raising its flag: the blocks waiting for it stop, and the fault
    // reported is block 0's, not a waiting block's.
    flags.fill_async(0, &s).unwrap();
    let r = chained_flags(true).launch(&s, LaunchConfig::new(blocks, 32), (&mut flags, &mut out));
    let (kernel, kind, msg) = fault(r);
    assert_eq!(
        (kernel.as_str(), kind),
        ("chain_fail", FaultKind::OutOfBounds)
    );
    assert!(msg.contains("block (0, 0, 0)"), "{msg}");
}

#[test]
fn foreign_device_code_is_a_clear_error_not_a_panic() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &mut [f32])>::build("calls_foreign", |k, (x, out)| {
        let f = k.declare_device::<(f32, f32), f32>("mul_add_ext");
        k.link_ptx(".version 7.0\n.target sm_75\n.address_size 64\n");
        let i = k.grid1();
        out.set(i, f.call((x.at(i), x.at(i))));
    })
    .unwrap();
    let x = s.to_device(&[1.0f32; 32]).unwrap();
    let mut out = c.zeros::<f32, _>(32).unwrap();
    let e = k
        .launch(&s, LaunchConfig::new(1, 32), (&x, &mut out))
        .unwrap_err();
    let m = e.to_string();
    assert!(
        matches!(e, Error::Kernel { .. })
            && m.contains("`mul_add_ext`")
            && m.contains("simulator")
            && m.contains("GPU"),
        "{m}"
    );
    // A kernel that only links code (calling none of it) runs.
    let k = Kernel::<(&mut [f32],)>::build("links_only", |k, (out,)| {
        k.link_ptx(".version 7.0\n.target sm_75\n.address_size 64\n");
        out.set(k.grid1(), 2.0f32);
    })
    .unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![2.0f32; 32]);
}

#[test]
fn const_array_read_out_of_bounds_is_a_fault() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [i32],)>::build("const_oob", |k, (out,)| {
        let t = k.const_array(&[10i32, 20, 30]);
        let i = k.grid1();
        out.set(i, t.at(i));
    })
    .unwrap();
    let mut out = c.zeros::<i32, _>(32).unwrap();
    let (kernel, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(
        (kernel.as_str(), kind),
        ("const_oob", FaultKind::OutOfBounds)
    );
    assert!(
        msg.contains(
            "thread (3, 0, 0) of block (0, 0, 0) reads element 3 of constant array 0 (i32[3])"
        ),
        "{msg}"
    );
    // In bounds, the data reads back.
    let mut out = c.zeros::<i32, _>(3).unwrap();
    k.launch(&s, LaunchConfig::new(1, 3), (&mut out,)).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![10, 20, 30]);
}

#[test]
fn printf_fifo_size_is_kept() {
    let c = ctx();
    assert_eq!(c.printf_fifo_size().unwrap(), 1 << 20);
    c.set_printf_fifo_size(4 << 20).unwrap();
    assert_eq!(c.printf_fifo_size().unwrap(), 4 << 20);
    c.set_printf_fifo_size(1 << 20).unwrap();
}

#[rustfmt::skip]
#[test]
fn faults_name_the_rust_line_that_built_the_faulting_statement() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut store_line = 0;
    let k = Kernel::<(&mut [u32],)>::build("oob_line", |k, (out,)| {
        let i = k.grid1();
        out.set(i + 1u64, 7u32); store_line = line!();
    })
    .unwrap();
    let mut out = c.zeros::<u32, _>(32).unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.ends_with(&format!(", at {}:{store_line}", file!())),
        "{msg}"
    );

    // In a device function: its own line, then the call's.
    let put_line = line!() + 2;
    let put = DeviceFn::<(u32,), u32>::build("put_line", |k, (i,)| {
        let sh = k.shared_array::<u32>(4); let v = sh.at(i);
        v + 1u32
    })
    .unwrap();
    let mut call_line = 0;
    let k = Kernel::<(&mut [u32],)>::build("oob_in_fn", |k, (out,)| {
        let t = k.thread_idx().x;
        out.set(t, put.call((t,))); call_line = line!();
    })
    .unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.ends_with(&format!(
            ", at {f}:{put_line} (called at {f}:{call_line})",
            f = file!()
        )),
        "{msg}"
    );
}

#[test]
fn out_of_bounds_strided_access_is_a_fault() {
    use cudajit::codegen::{NdStrided, NdStridedMut};
    use ndarray::s;
    let c = ctx();
    let s = c.new_stream().unwrap();
    // Reads one column past the end of a transposed view: outside the memory it spans.
    let k =
        Kernel::<(NdStrided<f32, 2>, NdStridedMut<f32, 2>)>::build("strided_oob", |k, (x, y)| {
            let i = k.grid1();
            k.if_(i.lt(x.len()), |_| {
                let (r, col) = (i / x.dim(1), i % x.dim(1));
                y.set2(r, col, x.at2(r, col + 1u64));
            });
        })
        .unwrap();
    let a = c.zeros::<f32, _>((4, 6)).unwrap();
    let mut out = c.zeros::<f32, _>((6, 4)).unwrap();
    let (kernel, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (&a.t(), &mut out)));
    assert_eq!(
        (kernel.as_str(), kind),
        ("strided_oob", FaultKind::OutOfBounds)
    );
    assert!(
        msg.contains("reads element 24") && msg.contains("24 elements"),
        "{msg}"
    );
    // Writes through a step-2 view past its last row.
    let mut big = c.zeros::<f32, _>((10, 4)).unwrap();
    let k = Kernel::<(NdStridedMut<f32, 2>,)>::build("strided_oob_w", |k, (y,)| {
        let i = k.grid1();
        y.set2(i / 4u64, i % 4u64, 1.0f32);
    })
    .unwrap();
    let view = big.strided_mut().slice(s![..;2, ..]).unwrap();
    let (_, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 32), (view,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(msg.contains("writes element 40"), "{msg}");
    // In bounds, no fault.
    let view = big.strided_mut().slice(s![..;2, ..]).unwrap();
    k.launch(&s, LaunchConfig::new(1, 20), (view,)).unwrap();
}
