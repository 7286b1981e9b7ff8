//! NCCL communicators and collectives on one GPU (a communicator of one rank) and on two.
//!
//! Every test skips itself, printing why, when NCCL is not installed (`pip install
//! nvidia-nccl-cu12`), and the two-GPU tests when fewer than two devices are visible. NCCL does
//! not run on the simulator: these tests are marked `not on the simulator` in their ignore reason, and
//! `simulator_refuses_nccl_clearly` checks the error there.

use cudajit::nccl::{self, Communicator, NcclType, ReduceOp, UniqueId};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

/// The first `n` devices, if NCCL and `n` devices are here; otherwise prints why and `None`.
fn devices_with_nccl(n: usize) -> Option<Vec<Device>> {
    if cudajit::on_simulator() {
        println!("skipping: NCCL does not run on the simulator");
        return None;
    }
    if let Err(e) = nccl::version() {
        assert!(
            crate::common::required_devices() < 2,
            "a multi-GPU run (CUDAJIT_TEST_MIN_DEVICES) needs NCCL: {e}"
        );
        println!("skipping: NCCL is not installed here: {e}");
        return None;
    }
    if !crate::common::has_devices(n) {
        return None;
    }
    Some((0..n).map(|i| Device::get(i).unwrap()).collect())
}

/// A communicator of one rank on device 0.
fn one_rank() -> Option<Communicator> {
    let devs = devices_with_nccl(1)?;
    let mut comms = Communicator::init_all(&devs).expect("ncclCommInitAll on device 0");
    assert_eq!(comms.len(), 1);
    let c = comms.pop().unwrap();
    assert_eq!((c.rank(), c.size(), c.device()), (0, 1, devs[0]));
    Some(c)
}

fn poisoned<T: NcclType + cudajit::AnyBitPattern>(
    ctx: &Context,
    n: usize,
    poison: T,
) -> DeviceArray<T> {
    let mut a = ctx.alloc::<T, _>(n).unwrap();
    a.fill(poison).unwrap();
    a
}

/// all_reduce over one rank is the identity, for every operator, out of place and in place.
fn identity_all_reduce<T: NcclType + cudajit::AnyBitPattern + PartialEq + std::fmt::Debug>(
    comm: &Communicator,
    host: &[T],
    poison: T,
    ops: &[ReduceOp],
) {
    let ctx = comm.context();
    let s = ctx.new_stream().unwrap();
    let send = ctx.to_device(host).unwrap();
    for &op in ops {
        let mut recv = poisoned(ctx, host.len(), poison);
        comm.all_reduce(&send, &mut recv, op, &s).unwrap();
        assert_eq!(
            recv.to_vec_async(&s).unwrap(),
            host,
            "{op:?} on {}",
            T::NAME
        );
        let mut buf = ctx.to_device(host).unwrap();
        comm.all_reduce_in_place(&mut buf, op, &s).unwrap();
        assert_eq!(
            buf.to_vec_async(&s).unwrap(),
            host,
            "in place {op:?} on {}",
            T::NAME
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn one_rank_all_reduce_is_the_identity_for_every_type_and_op() {
    let Some(comm) = one_rank() else { return };
    let all = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Avg,
    ];
    let n: usize = 1000;
    let f: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 100.0).collect();
    identity_all_reduce(&comm, &f, f32::NAN, &all);
    let d: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
    identity_all_reduce(&comm, &d, f64::NAN, &all);
    let h: Vec<f16> = (0..n)
        .map(|i| f16::from_f32((i % 200) as f32 - 50.0))
        .collect();
    identity_all_reduce(&comm, &h, f16::from_f32(-7777.0), &all);
    let b: Vec<bf16> = (0..n)
        .map(|i| bf16::from_f32((i % 200) as f32 - 50.0))
        .collect();
    identity_all_reduce(&comm, &b, bf16::from_f32(-7777.0), &all);
    let int_ops = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max];
    let v: Vec<i8> = (0..n).map(|i| (i % 250) as i8).collect();
    identity_all_reduce(&comm, &v, 99i8, &int_ops);
    let v: Vec<u8> = (0..n).map(|i| (i % 250) as u8).collect();
    identity_all_reduce(&comm, &v, 99u8, &int_ops);
    let v: Vec<i32> = (0..n).map(|i| i as i32 - 500).collect();
    identity_all_reduce(&comm, &v, i32::MIN, &int_ops);
    let v: Vec<u32> = (0..n).map(|i| i as u32 * 3).collect();
    identity_all_reduce(&comm, &v, u32::MAX, &int_ops);
    let v: Vec<i64> = (0..n).map(|i| i as i64 * -(1 << 40)).collect();
    identity_all_reduce(&comm, &v, i64::MIN, &int_ops);
    let v: Vec<u64> = (0..n).map(|i| (i as u64) << 33).collect();
    identity_all_reduce(&comm, &v, u64::MAX, &int_ops);
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn one_rank_broadcast_reduce_all_gather_reduce_scatter() {
    let Some(comm) = one_rank() else { return };
    let ctx = comm.context();
    let s = ctx.new_stream().unwrap();
    let host: Vec<f32> = (0..4096).map(|i| (i as f32).sin()).collect();
    let send = ctx.to_device(&host).unwrap();

    let mut out = poisoned(ctx, host.len(), f32::NAN);
    comm.broadcast(&send, &mut out, 0, &s).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), host, "broadcast");
    let mut buf = ctx.to_device(&host).unwrap();
    comm.broadcast_in_place(&mut buf, 0, &s).unwrap();
    assert_eq!(buf.to_vec_async(&s).unwrap(), host, "broadcast in place");

    let mut out = poisoned(ctx, host.len(), f32::NAN);
    comm.reduce(&send, &mut out, ReduceOp::Sum, 0, &s).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), host, "reduce");

    let mut out = poisoned(ctx, host.len(), f32::NAN);
    comm.all_gather(&send, &mut out, &s).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), host, "all_gather");
    let mut buf = ctx.to_device(&host).unwrap();
    comm.all_gather_in_place(&mut buf, &s).unwrap();
    assert_eq!(buf.to_vec_async(&s).unwrap(), host, "all_gather in place");

    let mut out = poisoned(ctx, host.len(), f32::NAN);
    comm.reduce_scatter(&send, &mut out, ReduceOp::Max, &s)
        .unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), host, "reduce_scatter");
    let mut buf = ctx.to_device(&host).unwrap();
    comm.reduce_scatter_in_place(&mut buf, ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(
        buf.to_vec_async(&s).unwrap(),
        host,
        "reduce_scatter in place"
    );
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn one_rank_send_to_itself_inside_a_group() {
    let Some(comm) = one_rank() else { return };
    let ctx = comm.context();
    let s = ctx.new_stream().unwrap();
    let host: Vec<i64> = (0..10_000).map(|i| i * 7 - 3).collect();
    let send = ctx.to_device(&host).unwrap();
    let mut recv = poisoned(ctx, host.len(), i64::MIN);
    nccl::group(|| {
        comm.send(&send, 0, &s)?;
        comm.recv(&mut recv, 0, &s)
    })
    .unwrap();
    assert_eq!(recv.to_vec_async(&s).unwrap(), host);
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn unique_id_and_init_rank_of_one() {
    let Some(devs) = devices_with_nccl(1) else {
        return;
    };
    let id = UniqueId::new().unwrap();
    let copy = UniqueId::from_bytes(*id.as_bytes());
    assert_eq!(copy, id);
    let comm = Communicator::init_rank(&devs[0], 1, &copy, 0).unwrap();
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    let ctx = comm.context();
    let s = ctx.new_stream().unwrap();
    let host: Vec<u32> = (0..777).collect();
    let send = ctx.to_device(&host).unwrap();
    let mut recv = poisoned(ctx, host.len(), u32::MAX);
    comm.all_reduce(&send, &mut recv, ReduceOp::Sum, &s)
        .unwrap();
    assert_eq!(recv.to_vec_async(&s).unwrap(), host);
    assert!(comm.async_error().unwrap().is_none());
    assert!(Communicator::init_rank(&devs[0], 1, &copy, 1)
        .unwrap_err()
        .to_string()
        .contains("rank 1 is not a rank"));
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn shapes_ranks_and_groups_are_checked_before_nccl() {
    let Some(comm) = one_rank() else { return };
    let ctx = comm.context();
    let s = ctx.new_stream().unwrap();
    let a = ctx.to_device(&[1.0f32; 6]).unwrap();
    let mut b5 = ctx.alloc::<f32, _>(5).unwrap();
    let e = comm.all_reduce(&a, &mut b5, ReduceOp::Sum, &s).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Shape {
                op: "all_reduce",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("expected (6,), got (5,)"), "{e}");
    let e = comm.all_gather(&a, &mut b5, &s).unwrap_err();
    assert!(e.to_string().contains("all_gather"), "{e}");
    let e = comm
        .reduce_scatter(&a, &mut b5, ReduceOp::Sum, &s)
        .unwrap_err();
    assert!(e.to_string().contains("reduce_scatter"), "{e}");
    let mut b6 = ctx.alloc::<f32, _>(6).unwrap();
    let e = comm.broadcast(&a, &mut b6, 1, &s).unwrap_err();
    assert!(e.to_string().contains("root 1 is not a rank"), "{e}");
    let e = comm.reduce(&a, &mut b6, ReduceOp::Sum, 3, &s).unwrap_err();
    assert!(e.to_string().contains("root 3"), "{e}");
    let e = comm.send(&a, 1, &s).unwrap_err();
    assert!(e.to_string().contains("peer 1"), "{e}");
    let dev = comm.device();
    let e = Communicator::init_all(&[dev, dev]).unwrap_err();
    assert!(e.to_string().contains("given twice"), "{e}");
    // A failing group still ends the group: the next call works.
    let e = nccl::group(|| comm.all_reduce(&a, &mut b5, ReduceOp::Sum, &s)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    comm.all_reduce(&a, &mut b6, ReduceOp::Sum, &s).unwrap();
    assert_eq!(b6.to_vec_async(&s).unwrap(), vec![1.0f32; 6]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn simulator_refuses_nccl_clearly() {
    if !cudajit::on_simulator() {
        println!("skipping: checks the simulator's error (this is a GPU run)");
        return;
    }
    let dev = Device::get(0).unwrap();
    for e in [
        Communicator::init_all(&[dev]).unwrap_err(),
        UniqueId::new().unwrap_err(),
        nccl::group(|| Ok(())).unwrap_err(),
    ] {
        assert!(
            e.to_string().contains("cannot run on the CPU simulator"),
            "{e}"
        );
    }
}

// ---- two GPUs -----------------------------------------------------------------------------

/// Per-rank host data for the two-rank tests: rank r's element i.
fn value(rank: usize, i: usize) -> f32 {
    (rank * 1000 + i % 997) as f32
}

#[test]
#[ignore = "needs two CUDA GPUs; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn two_ranks_every_collective_against_the_host() {
    let Some(devs) = devices_with_nccl(2) else {
        return;
    };
    let comms = Communicator::init_all(&devs).unwrap();
    let n = 1 << 16;
    let streams: Vec<Stream> = comms
        .iter()
        .map(|c| c.context().new_stream().unwrap())
        .collect();
    let hosts: Vec<Vec<f32>> = (0..2)
        .map(|r| (0..n).map(|i| value(r, i)).collect())
        .collect();
    let sends: Vec<DeviceArray<f32>> = comms
        .iter()
        .zip(&hosts)
        .map(|(c, h)| c.context().to_device(h).unwrap())
        .collect();
    let fresh = |len: usize| -> Vec<DeviceArray<f32>> {
        comms
            .iter()
            .map(|c| poisoned(c.context(), len, f32::NAN))
            .collect()
    };
    let get = |a: &DeviceArray<f32>, r: usize| a.to_vec_async(&streams[r]).unwrap();

    for (op, f) in [
        (ReduceOp::Sum, (|a, b| a + b) as fn(f32, f32) -> f32),
        (ReduceOp::Prod, |a, b| a * b),
        (ReduceOp::Min, f32::min),
        (ReduceOp::Max, f32::max),
        (ReduceOp::Avg, |a, b| (a + b) / 2.0),
    ] {
        let mut outs = fresh(n);
        nccl::group(|| {
            for (r, out) in outs.iter_mut().enumerate() {
                comms[r].all_reduce(&sends[r], out, op, &streams[r])?;
            }
            Ok(())
        })
        .unwrap();
        let want: Vec<f32> = (0..n).map(|i| f(hosts[0][i], hosts[1][i])).collect();
        for (r, out) in outs.iter().enumerate() {
            assert_eq!(get(out, r), want, "all_reduce {op:?} on rank {r}");
        }
    }

    let mut outs = fresh(n);
    nccl::group(|| {
        for (r, out) in outs.iter_mut().enumerate() {
            comms[r].broadcast(&sends[r], out, 1, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(get(out, r), hosts[1], "broadcast from rank 1, on rank {r}");
    }

    let mut outs = fresh(n);
    nccl::group(|| {
        for (r, out) in outs.iter_mut().enumerate() {
            comms[r].reduce(&sends[r], out, ReduceOp::Sum, 1, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    let sum: Vec<f32> = (0..n).map(|i| hosts[0][i] + hosts[1][i]).collect();
    assert_eq!(get(&outs[1], 1), sum, "reduce to rank 1");
    assert!(
        get(&outs[0], 0).iter().all(|x| x.is_nan()),
        "reduce leaves rank 0's output alone"
    );

    let mut outs = fresh(2 * n);
    nccl::group(|| {
        for (r, out) in outs.iter_mut().enumerate() {
            comms[r].all_gather(&sends[r], out, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    let gathered: Vec<f32> = hosts.concat();
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(get(out, r), gathered, "all_gather on rank {r}");
    }

    let mut outs = fresh(n / 2);
    nccl::group(|| {
        for (r, out) in outs.iter_mut().enumerate() {
            comms[r].reduce_scatter(&sends[r], out, ReduceOp::Sum, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(
            get(out, r),
            sum[r * n / 2..(r + 1) * n / 2],
            "reduce_scatter on rank {r}"
        );
    }

    // send/recv: each rank sends its data to the other.
    let mut outs = fresh(n);
    nccl::group(|| {
        for (r, out) in outs.iter_mut().enumerate() {
            comms[r].send(&sends[r], 1 - r, &streams[r])?;
            comms[r].recv(out, 1 - r, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(get(out, r), hosts[1 - r], "recv on rank {r}");
    }

    // An array of the other rank's device is refused, naming both devices.
    let mut out = poisoned(comms[1].context(), n, f32::NAN);
    let e = comms[0]
        .all_reduce(&sends[0], &mut out, ReduceOp::Sum, &streams[0])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the output is on device 1 but rank 0 of the communicator is on device 0"),
        "{e}"
    );
    let e = comms[0]
        .all_reduce(&sends[0], &mut out, ReduceOp::Sum, &streams[1])
        .unwrap_err();
    assert!(e.to_string().contains("the stream is on device 1"), "{e}");
}

#[test]
#[ignore = "needs two CUDA GPUs; not on the simulator: NCCL needs real device memory: it cannot run on the simulator (nccl::simulator_refuses_nccl_clearly checks the error)"]
fn two_ranks_from_two_threads_with_a_unique_id() {
    let Some(devs) = devices_with_nccl(2) else {
        return;
    };
    let id = UniqueId::new().unwrap();
    let bytes = *id.as_bytes();
    let handles: Vec<_> = devs
        .into_iter()
        .enumerate()
        .map(|(rank, dev)| {
            std::thread::spawn(move || {
                let id = UniqueId::from_bytes(bytes);
                let comm = Communicator::init_rank(&dev, 2, &id, rank).unwrap();
                let ctx = comm.context().clone();
                let s = ctx.new_stream().unwrap();
                let mut buf = ctx.to_device(&vec![rank as i32 + 1; 1000]).unwrap();
                comm.all_reduce_in_place(&mut buf, ReduceOp::Sum, &s)
                    .unwrap();
                buf.to_vec_async(&s).unwrap()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), vec![3; 1000]);
    }
}
