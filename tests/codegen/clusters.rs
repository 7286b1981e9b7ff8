//! Thread-block clusters in PTX (sm_90): the cluster registers, the cluster barrier,
//! distributed shared memory loads, stores and atomics through `mapa`, remote mbarrier
//! arrivals and multicast TMA copies compile for sm_90 and pass ptxas; an older target, an
//! array that is not shared and an atomic type the hardware lacks are clear build errors.

use cudajit::codegen::{Expr, Kernel, PtxOptions, Tma};

use crate::common::check_ptx_arch;

/// Every cluster operation in one kernel.
fn everything() -> Kernel<(Tma<u16, 2>, &'static mut [f32], &'static mut [u32])> {
    Kernel::<(Tma<u16, 2>, &mut [f32], &mut [u32])>::build("cluster_all", |k, (map, out, hist)| {
        let smem = k.dynamic_shared::<u16>();
        let buf = k.shared_array::<f32>(128);
        let bins = k.shared_array::<u32>(64);
        let bars = k.mbarriers(2);
        let t = k.thread_idx().x;
        let (r, n) = (k.cluster_rank(), k.cluster_size());
        k.if_(t.eq(0u32), |k| {
            bars.init(0u32, 1u32);
            bars.init(1u32, n);
            k.fence_barrier_init();
        });
        buf.set(t, t.cast::<f32>());
        k.cluster_arrive_relaxed();
        k.cluster_wait();
        let next = (r + 1u32) % n;
        out.set(t, buf.at_rank(next, t) + buf.at_rank(next, 127u32 - t));
        buf.set_at_rank(next, t, 1.0f32);
        bins.atomic_add_at_rank(next, t % 64u32, 1u32);
        buf.atomic_add_at_rank(r, 0u32, 0.5f32);
        k.if_(t.eq(0u32), |_| {
            bars.arrive_expect_tx(0u32, 1024u32);
            let all = ((Expr::from(1u32) << n) - 1u32).cast::<u16>();
            map.load_multicast([0i32.into(), 0i32.into()], &smem, 0u32, &bars, 0u32, all);
            bars.arrive_at_rank(1u32, 0u32);
        });
        bars.wait(k, 0u32, 0u32);
        let at = k.block_in_cluster();
        let id = k.cluster_idx();
        hist.set(
            t,
            at.x + at.y + id.z + k.cluster_dim().x + k.cluster_grid_dim().y,
        );
        k.cluster_sync();
    })
    .unwrap()
}

#[test]
fn cluster_operations_compile_for_sm90() {
    let k = everything();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    for want in [
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%cluster_ctaid.x",
        "%clusterid.z",
        "%cluster_nctaid.x",
        "%nclusterid.y",
        "barrier.cluster.arrive.relaxed;",
        "barrier.cluster.arrive.release;",
        "barrier.cluster.wait.acquire;",
        "mapa.u64",
        "mapa.shared::cluster.u32",
        "mbarrier.arrive.shared::cluster.b64",
        ".multicast::cluster",
        "atom.add.u32",
        "atom.add.f32",
    ] {
        assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
    }
    check_ptx_arch(&ptx, "sm_90", k.name(), &[]);
}

#[test]
fn cluster_misuse_is_a_clear_error() {
    let err = everything()
        .compile_ptx(&PtxOptions::for_cc(8, 0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs an sm_90 GPU"), "{err}");
    let err = Kernel::<(&mut [f32],)>::build("not_shared", |_, (out,)| {
        out.set(0u32, out.at_rank(1u32, 0u32));
    })
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("use a shared array"), "{err}");
    let err = Kernel::<(&mut [f32],)>::build("narrow_atomic", |k, (out,)| {
        let s = k.shared_array::<u16>(4);
        s.atomic_add_at_rank(1u32, 0u32, 1u16);
        out.set(0u32, 1.0f32);
    })
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("take u32, i32, u64, f32 or f64"), "{err}");
}
