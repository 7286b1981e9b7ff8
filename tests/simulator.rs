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

/// Relaxed atomic loads beside other threads' atomics on one shared element are no race (two
/// atomic accesses never race), whichever comes first; a plain read there still is. Found by the
/// fuzzer's block programs: the simulator took `atomic_load` for a plain read and reported
/// `atomic_load` + `atomic_add` on a shared word as a data race.
#[test]
fn atomic_loads_beside_atomics_are_no_shared_race() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // `loads_first`: the odd threads' branch runs first (lanes run the `then` branch first).
    let build = |name: &str, loads_first: bool, atomic_load: bool| {
        Kernel::<(&mut [u32],)>::build(name, move |k, (out,)| {
            let sh = k.shared_array::<u32>(1);
            let t = k.thread_idx().x;
            k.if_(t.eq(0u32), |_| sh.set(0u32, 0u32));
            k.syncthreads();
            let load = |_: &cudajit::codegen::KernelBuilder| {
                let x = if atomic_load {
                    sh.atomic_load(0u32)
                } else {
                    sh.at(0u32)
                };
                out.set(t, x);
            };
            let add = |_: &cudajit::codegen::KernelBuilder| {
                sh.atomic_add(0u32, 1u32);
            };
            let odd = (t & 1u32).eq(1u32);
            if loads_first {
                k.if_else(odd, load, add);
            } else {
                k.if_else(!odd, add, load);
            }
            k.syncthreads();
            k.if_(t.eq(0u32), |_| out.set(0u32, sh.at(0u32)));
        })
        .unwrap()
    };
    for loads_first in [true, false] {
        let mut out = c.zeros::<u32, _>(64).unwrap();
        build("atomic_loads", loads_first, true)
            .launch(&s, LaunchConfig::new(1, 64), (&mut out,))
            .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        assert_eq!(got[0], 32, "every even thread added 1");
        assert!(
            got.iter().skip(1).step_by(2).all(|&v| v <= 32),
            "a load saw a value the word never held: {got:?}"
        );
    }
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let (_, kind, msg) =
        fault(build("plain_loads", true, false).launch(&s, LaunchConfig::new(1, 64), (&mut out,)));
    assert_eq!(kind, FaultKind::SharedRace);
    assert!(msg.contains("atomically updates element 0"), "{msg}");
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

/// The classic `cp.async` bug: reading the destination before `cp_async_wait` covers its
/// group (here the wait keeps the newest group in flight, which is the one read). The fault
/// names the thread, the element and the issuing thread; with the right wait there is none.
#[test]
fn cp_async_read_before_wait() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let build = |name: &str, keep: u8, other: bool| {
        Kernel::<(&[f32], &mut [f32])>::build(name, move |k, (x, out)| {
            let tile = k.shared_array2::<f32>(2, 128);
            let t = k.thread_idx().x;
            tile.cp_async::<16>(tile.index2(0u32, t * 4u32), &x, t * 4u32);
            k.cp_async_commit();
            tile.cp_async::<16>(tile.index2(1u32, t * 4u32), &x, 128u32 + t * 4u32);
            k.cp_async_commit();
            k.cp_async_wait(keep);
            k.syncthreads();
            // Another thread's element of stage 1, or this thread's own.
            let j = if other {
                (t * 4u32 + 4u32) % 128u32
            } else {
                t * 4u32
            };
            out.set(t, tile.at2(0u32, j) + tile.at2(1u32, j));
        })
        .unwrap()
    };
    let x = s.to_device(&vec![1.0f32; 256]).unwrap();
    let mut out = c.zeros::<f32, _>(32).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    build("cp_ok", 0, true)
        .launch(&s, cfg, (&x, &mut out))
        .unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![2.0; 32]);
    let (kernel, kind, msg) = fault(build("cp_early", 1, false).launch(&s, cfg, (&x, &mut out)));
    assert_eq!((kernel.as_str(), kind), ("cp_early", FaultKind::SharedRace));
    assert!(
        msg.contains("thread (0, 0, 0) of block (0, 0, 0) reads element 128 of shared array 0")
            && msg.contains("before cp_async_wait completed its copy: this thread copies into it")
            && msg.contains("1 committed group(s)")
            && msg.contains("tests/simulator.rs"),
        "{msg}"
    );
    let (_, kind, msg) = fault(build("cp_early_other", 1, true).launch(&s, cfg, (&x, &mut out)));
    assert_eq!(kind, FaultKind::SharedRace);
    assert!(
        msg.contains("reads element 132 of shared array 0")
            && msg.contains("thread (1, 0, 0) of block (0, 0, 0) copies into it"),
        "{msg}"
    );
    // Waited for, but read by another thread with no barrier after the wait: a race.
    let k = Kernel::<(&[f32], &mut [f32])>::build("cp_no_barrier", |k, (x, out)| {
        let tile = k.shared_array::<f32>(128);
        let t = k.thread_idx().x;
        tile.cp_async::<16>(t * 4u32, &x, t * 4u32);
        k.cp_async_wait_all();
        out.set(t, tile.at((t * 4u32 + 4u32) % 128u32));
    })
    .unwrap();
    let (_, kind, msg) = fault(k.launch(&s, cfg, (&x, &mut out)));
    assert_eq!(kind, FaultKind::SharedRace);
    assert!(msg.contains("with no syncthreads"), "{msg}");
    // A copy issued over an element another thread read since the last barrier: a race too.
    let k = Kernel::<(&[f32], &mut [f32])>::build("cp_over_read", |k, (x, out)| {
        let tile = k.shared_array::<f32>(128);
        let t = k.thread_idx().x;
        out.set(t, tile.at((t * 4u32 + 4u32) % 128u32));
        tile.cp_async::<16>(t * 4u32, &x, t * 4u32);
        k.cp_async_wait_all();
    })
    .unwrap();
    let (_, kind, msg) = fault(k.launch(&s, cfg, (&x, &mut out)));
    assert_eq!(kind, FaultKind::SharedRace);
    assert!(
        msg.contains("thread (0, 0, 0) of block (0, 0, 0) writes element 0")
            && msg.contains("after thread (31, 0, 0) of block (0, 0, 0) read it"),
        "{msg}"
    );
}

/// `cp.async` addresses must be aligned to the copy's size, in bounds (the source only for the
/// bytes read), with a source size at most the copy's; the faults name thread, array, index.
#[test]
fn cp_async_faults() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let x = s.to_device(&vec![1u32; 64]).unwrap();
    let mut out = c.zeros::<u32, _>(32).unwrap();
    let cfg = LaunchConfig::new(1, 32);
    // (name, destination index, source index, source bytes of a zfill copy, fault, text).
    type Case = (&'static str, u32, u32, Option<u32>, FaultKind, &'static str);
    let cases: [Case; 6] = [
        (
            "dst_misaligned",
            2,
            0,
            None,
            FaultKind::Misaligned,
            "into element 2 of shared array 0",
        ),
        (
            "src_misaligned",
            0,
            6,
            None,
            FaultKind::Misaligned,
            "from element 6 of array parameter 0",
        ),
        (
            "dst_oob",
            256,
            0,
            None,
            FaultKind::OutOfBounds,
            "writes element 256 of shared array 0",
        ),
        (
            "src_oob",
            0,
            64,
            None,
            FaultKind::OutOfBounds,
            "reads element 64 of array parameter 0",
        ),
        (
            "src_size",
            0,
            0,
            Some(17),
            FaultKind::OutOfBounds,
            "source size of 17 bytes",
        ),
        (
            "src_size_partial",
            0,
            64,
            Some(4),
            FaultKind::OutOfBounds,
            "reads element 64",
        ),
    ];
    for (name, d, from, zfill, want, text) in cases {
        let k = Kernel::<(&[u32], &mut [u32])>::build(name, move |k, (x, out)| {
            let tile = k.shared_array::<u32>(256);
            let t = k.thread_idx().x;
            // Thread 5 copies to (or from) the bad place, the others to their own slots.
            let bad = t.eq(5u32);
            let di = cudajit::codegen::select(bad, k.lit(d), t * 4u32 + 128u32);
            let si = cudajit::codegen::select(bad, k.lit(from), 0u32);
            match zfill {
                Some(n) => tile.cp_async_zfill::<16>(
                    di,
                    &x,
                    si,
                    cudajit::codegen::select(bad, k.lit(n), 16u32),
                ),
                None => tile.cp_async::<16>(di, &x, si),
            }
            k.cp_async_wait_all();
            k.syncthreads();
            out.set(t, tile.at(t * 4u32 + 128u32));
        })
        .unwrap();
        let (_, kind, msg) = fault(k.launch(&s, cfg, (&x, &mut out)));
        assert_eq!(kind, want, "{name}: {msg}");
        assert!(
            msg.contains("thread (5, 0, 0) of block (0, 0, 0)") && msg.contains(text),
            "{name}: {msg}"
        );
    }
    // A zero-filling copy that reads nothing needs no source in bounds.
    let k = Kernel::<(&[u32], &mut [u32])>::build("src_size_zero", |k, (x, out)| {
        let tile = k.shared_array::<u32>(128);
        let t = k.thread_idx().x;
        tile.cp_async_zfill::<16>(t * 4u32, &x, 64u32, 0u32);
        k.cp_async_wait_all();
        k.syncthreads();
        out.set(t, tile.at(127u32 - t));
    })
    .unwrap();
    out.fill_async(7, &s).unwrap();
    k.launch(&s, cfg, (&x, &mut out)).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![0; 32]);
    // A source array that does not start at a multiple of the copy's size is refused at
    // launch, as for vector accesses (a view from element 1: 4-byte aligned only).
    let view = x.slice(1..).unwrap();
    let err = k.launch(&s, cfg, (&view, &mut out)).unwrap_err();
    assert!(
        matches!(err, Error::Launch(cudajit::LaunchError::Misaligned { .. }))
            && err.to_string().contains("16-byte"),
        "{err}"
    );
}

/// `ldmatrix` needs the whole warp, 16-byte aligned rows inside the array; the faults name the
/// lane and the index.
#[test]
fn ldmatrix_faults() {
    use cudajit::f16;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let build = |name: &str, row: u32, bad_lane: u32, split: bool| {
        Kernel::<(&mut [u32],)>::build(name, move |k, (out,)| {
            let tile = k.shared_array2::<f16>(32, 8);
            let l = k.lane_id();
            let t = k.thread_idx().x;
            k.for_step(t, 256u32, k.block_dim().x, |_, i| {
                tile.set(i, f16::from_f32(1.0))
            });
            k.syncthreads();
            let idx = cudajit::codegen::select(l.eq(bad_lane), k.lit(row), l * 8u32);
            let run = |_: &cudajit::codegen::KernelBuilder| {
                let [r0, r1] = tile.ldmatrix::<2>(idx);
                out.set(t, r0 ^ r1);
            };
            if split {
                k.if_(l.lt(16u32), run);
            } else {
                run(k);
            }
        })
        .unwrap()
    };
    let cfg = LaunchConfig::new(1, 32);
    build("ldm_ok", 0, 99, false)
        .launch(&s, cfg, (&mut out,))
        .unwrap();
    let (_, kind, msg) = fault(build("ldm_misaligned", 4, 3, false).launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::Misaligned);
    assert!(
        msg.contains("thread (3, 0, 0) of block (0, 0, 0) (lane 3) gives ldmatrix.x2")
            && msg.contains("element 4 of shared array 0"),
        "{msg}"
    );
    let (_, kind, msg) = fault(build("ldm_oob", 256, 9, false).launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.contains("thread (9, 0, 0) of block (0, 0, 0) reads element 256 of shared array 0")
            && msg.contains("lane 9's row of matrix 1"),
        "{msg}"
    );
    // Lanes past 8 x count give no address: an index out of bounds there is ignored.
    build("ldm_unused_lane", 4096, 20, false)
        .launch(&s, cfg, (&mut out,))
        .unwrap();
    let (_, kind, msg) = fault(build("ldm_split", 0, 99, true).launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier);
    assert!(msg.contains("only lanes 0x0000ffff are here"), "{msg}");
    let (_, kind, msg) =
        fault(build("ldm_partial", 0, 99, false).launch(&s, LaunchConfig::new(1, 48), (&mut out,)));
    assert_eq!(kind, FaultKind::DivergentBarrier);
    assert!(msg.contains("the warp has lanes 0x0000ffff"), "{msg}");
}

/// `ldmatrix` of a 32-bit (f32) array: rows of 4 elements, each lane's register one whole
/// element; a row start that is not a multiple of 4 elements (16 bytes) faults, and one past
/// the end reads out of bounds at the element (not at a 16-bit half).
#[test]
fn ldmatrix_faults_f32() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let build = |name: &str, row: u32, bad_lane: u32| {
        Kernel::<(&mut [u32],)>::build(name, move |k, (out,)| {
            let tile = k.shared_array2::<f32>(16, 4);
            let l = k.lane_id();
            k.for_step(l, 64u32, 32u32, |_, i| tile.set(i, i.cast::<f32>()));
            k.syncwarp(u32::MAX);
            let idx = cudajit::codegen::select(l.eq(bad_lane), k.lit(row), l * 4u32);
            let [r0, r1] = tile.ldmatrix::<2>(idx);
            out.set(l * 2u32, r0);
            out.set(l * 2u32 + 1u32, r1);
        })
        .unwrap()
    };
    let cfg = LaunchConfig::new(1, 32);
    build("ldm32_ok", 0, 99)
        .launch(&s, cfg, (&mut out,))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for l in 0..32u32 {
        for i in 0..2u32 {
            // Matrix i is rows 8i..8i+8 (lanes 8i..8i+8 address row l): row l / 4, word l % 4.
            let want = ((8 * i + l / 4) * 4 + l % 4) as f32;
            assert_eq!(
                got[(l * 2 + i) as usize],
                want.to_bits(),
                "lane {l} reg {i}"
            );
        }
    }
    let (_, kind, msg) = fault(build("ldm32_misaligned", 6, 3).launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::Misaligned);
    assert!(
        msg.contains("(lane 3) gives ldmatrix.x2")
            && msg.contains("element 6 of shared array 0 (f32[16][4]) (byte offset 24)")
            && msg.contains("4 32-bit elements"),
        "{msg}"
    );
    let (_, kind, msg) = fault(build("ldm32_oob", 64, 9).launch(&s, cfg, (&mut out,)));
    assert_eq!(kind, FaultKind::OutOfBounds);
    assert!(
        msg.contains("reads element 64 of shared array 0 (f32[16][4]), which has 64 elements")
            && msg.contains("lane 9's row of matrix 1 of an ldmatrix.x2, elements 64..68"),
        "{msg}"
    );
}

/// A surface store outside its array is a fault (the `.trap` mode), naming the thread and
/// the element; the context stays usable.
#[test]
fn surface_store_out_of_range_is_a_fault() {
    use cudajit::codegen::Surface2d;
    use cudajit::memory::{CudaArray, SurfaceObject};
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut a = CudaArray::<f32>::new_2d(&ctx, 4, 3).unwrap();
    let k = Kernel::<(Surface2d<f32>,)>::build("surface_oob", |k, (sf,)| {
        let i = k.grid1().cast::<i32>();
        sf.sust(
            i,
            cudajit::codegen::Expr::lit(1),
            cudajit::codegen::Expr::lit(2.0f32),
        );
    })
    .unwrap();
    {
        let sf = SurfaceObject::new(&mut a).unwrap();
        let (kernel, kind, msg) = fault(k.launch(&s, LaunchConfig::new(1, 8), (&sf,)));
        assert_eq!(kernel, "surface_oob");
        assert_eq!(kind, FaultKind::OutOfBounds);
        assert!(
            msg.contains("thread (4, 0, 0)") && msg.contains("surface element [4, 1]"),
            "{msg}"
        );
    }
    a.copy_from_host(&[0.0; 12]).unwrap();
    assert_eq!(a.to_host().unwrap().len(), 12);
}
