//! CUDA graphs: a captured chain of kernels, copies, fills and host functions replays with the
//! results of running the work directly; an instantiated graph is updated in place; calls
//! that cannot be captured are errors naming the call, and the capture goes on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::{ctx, same_f32, special_f32, Rng};

type AddScaled = Kernel<(&'static mut [f32], &'static [f32], f32)>;

/// y[i] = y[i] + a * x[i]: with FMA contraction (the default) one fused multiply-add,
/// `x[i].mul_add(a, y[i])` on the host (the product of a subnormal `x[i]` and 0.5 is not exact,
/// so rounding it separately would differ).
fn add_scaled() -> AddScaled {
    AddScaled::build("graph_add_scaled", |k, (y, x, a)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| y.set(i, y.at(i) + x.at(i) * a));
    })
    .unwrap()
}

fn check(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len());
    for i in 0..got.len() {
        assert!(
            same_f32(got[i], want[i]),
            "{what}: element {i}: got {} ({:#010x}), want {} ({:#010x})",
            got[i],
            got[i].to_bits(),
            want[i],
            want[i].to_bits()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_chain_replays_like_the_direct_launches() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = add_scaled();
    let mut rng = Rng::new();
    let n = 10_007;
    let x = special_f32(&mut rng, n);
    let y0 = special_f32(&mut rng, n);
    let dx = s.to_device(&x).unwrap();
    let mut dy = s.to_device(&y0).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    let kernels = 100;
    let graph = s
        .capture(|s| {
            for j in 0..kernels {
                let a = [1.0f32, 0.5, 2.0][j % 3];
                k.launch(s, cfg, (&mut dy, &dx, a))?;
            }
            Ok(())
        })
        .unwrap();
    // Nothing ran during the capture.
    check(&dy.to_vec_async(&s).unwrap(), &y0, "after the capture");
    assert_eq!(graph.node_count().unwrap(), kernels);
    let exec = graph.instantiate().unwrap();
    drop(graph); // the instantiated graph does not need it
    let mut want = y0.clone();
    for launch in 0..3 {
        // SAFETY: dx and dy outlive the launch.
        unsafe { exec.launch(&s) }.unwrap();
        for j in 0..kernels {
            let a = [1.0f32, 0.5, 2.0][j % 3];
            for i in 0..n {
                want[i] = x[i].mul_add(a, want[i]);
            }
        }
        check(
            &dy.to_vec_async(&s).unwrap(),
            &want,
            &format!("launch {launch}"),
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_instantiated_graph_takes_new_arguments_in_place() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = add_scaled();
    let n = 4096;
    let mut rng = Rng::new();
    let x = special_f32(&mut rng, n);
    let dx = s.to_device(&x).unwrap();
    let mut dy = s.zeros::<f32, _>(n).unwrap();
    let mut other = s.zeros::<f32, _>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 256).unwrap();
    let capture = |y: &mut DeviceArray<f32>, a: f32, times: usize| {
        s.capture(|s| {
            for _ in 0..times {
                k.launch(s, cfg, (&mut *y, &dx, a))?;
            }
            Ok(())
        })
        .unwrap()
    };
    let mut exec = capture(&mut dy, 1.0, 2).instantiate().unwrap();
    // Same shape, another scalar and another output array: updated in place.
    exec.update(&capture(&mut other, 2.0, 2)).unwrap();
    // SAFETY: the arrays outlive the launch.
    unsafe { exec.launch(&s) }.unwrap();
    let want: Vec<f32> = x.iter().map(|&v| 0.0f32 + v * 2.0 + v * 2.0).collect();
    check(&other.to_vec_async(&s).unwrap(), &want, "updated graph");
    check(&dy.to_vec_async(&s).unwrap(), &vec![0.0; n], "old output");
    // Another shape: refused, and the instantiated graph is unchanged.
    let e = exec.update(&capture(&mut dy, 1.0, 3)).unwrap_err();
    assert!(e.to_string().contains("instantiate the new graph"), "{e}");
    // SAFETY: as above.
    unsafe { exec.launch(&s) }.unwrap();
    let want2: Vec<f32> = want
        .iter()
        .zip(&x)
        .map(|(&w, &v)| w + v * 2.0 + v * 2.0)
        .collect();
    check(
        &other.to_vec_async(&s).unwrap(),
        &want2,
        "after a refused update",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn copies_fills_and_host_functions_are_captured() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let n = 1000;
    let mut rng = Rng::new();
    let src = special_f32(&mut rng, n);
    let pinned = c.pinned_from_slice(&src).unwrap();
    let mut a = s.zeros::<f32, _>(n).unwrap();
    let mut b = s.zeros::<f32, _>(n).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let graph = s
        .capture(|s| {
            b.fill_async(7.5, s)?;
            pinned.copy_to_device_async(&mut a, s)?;
            b.slice_mut(..n / 2)?
                .copy_from_device_async(&a.slice(n / 2..)?, s)?;
            s.launch_host_fn(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })
        })
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "nothing runs during a capture"
    );
    let exec = graph.instantiate().unwrap();
    for round in 1..=3 {
        // SAFETY: the arrays and the pinned buffer outlive the launches.
        unsafe { exec.launch(&s) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), round);
    }
    check(
        &a.to_vec_async(&s).unwrap(),
        &src,
        "copied from pinned memory",
    );
    let mut want = vec![7.5f32; n];
    want[..n / 2].copy_from_slice(&src[n / 2..]);
    check(
        &b.to_vec_async(&s).unwrap(),
        &want,
        "filled, then half copied",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn calls_that_cannot_be_captured_are_errors_and_the_capture_goes_on() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = add_scaled();
    let n = 256;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = s.to_device(&x).unwrap();
    let mut dy = s.zeros::<f32, _>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    s.begin_capture().unwrap();
    assert!(s.is_capturing().unwrap());
    k.launch(&s, cfg, (&mut dy, &dx, 1.0)).unwrap();
    let refused = [
        s.synchronize().unwrap_err(),
        c.synchronize().unwrap_err(),
        c.alloc::<f32, _>(16).map(drop).unwrap_err(),
        s.to_device(&x).map(drop).unwrap_err(),
        dy.to_vec_async(&s).map(drop).unwrap_err(),
        s.launch_host_func(|| ()).unwrap_err(),
        s.begin_capture().unwrap_err(),
    ];
    for e in &refused {
        let text = e.to_string();
        assert!(
            text.contains("cannot be captured") || text.contains("already capturing"),
            "{text}"
        );
    }
    k.launch(&s, cfg, (&mut dy, &dx, 2.0)).unwrap();
    let graph = s.end_capture().unwrap();
    assert!(!s.is_capturing().unwrap());
    assert_eq!(graph.node_count().unwrap(), 2);
    // SAFETY: dx and dy outlive the launch.
    unsafe { graph.instantiate().unwrap().launch(&s) }.unwrap();
    let want: Vec<f32> = x.iter().map(|&v| 0.0f32 + v * 1.0 + v * 2.0).collect();
    check(
        &dy.to_vec_async(&s).unwrap(),
        &want,
        "the two captured kernels",
    );
    // Misuse outside a capture.
    assert!(s.end_capture().is_err());
    assert!(c.default_stream().begin_capture().is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arrays_dropped_during_the_capture_live_as_long_as_the_graph() {
    let _errors = crate::common::drop_errors_lock();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = add_scaled();
    let n = 2048;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 - 48.0).collect();
    let tmp = s.to_device(&x).unwrap();
    let mut dy = s.zeros::<f32, _>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 256).unwrap();
    let graph = s
        .capture(|s| {
            k.launch(s, cfg, (&mut dy, &tmp, 0.5))?;
            drop(tmp); // kept by the graph
            Ok(())
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    drop(graph);
    for _ in 0..2 {
        // SAFETY: dy outlives the launch; the temporary is kept by the graph.
        unsafe { exec.launch(&s) }.unwrap();
    }
    let want: Vec<f32> = x.iter().map(|&v| 0.0f32 + v * 0.5 + v * 0.5).collect();
    check(
        &dy.to_vec_async(&s).unwrap(),
        &want,
        "through the kept array",
    );
    drop(exec);
    s.synchronize().unwrap();
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_built_by_hand_runs_its_nodes_in_dependency_order() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = add_scaled();
    let n = 3001;
    let mut rng = Rng::new();
    let x = special_f32(&mut rng, n);
    let dx = s.to_device(&x).unwrap();
    let mut y = s.to_device(&special_f32(&mut rng, n)).unwrap();
    let mut z = s.to_device(&special_f32(&mut rng, n)).unwrap();
    let mut w = s.zeros::<u16, _>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    let mut g = cudajit::Graph::new(&c).unwrap();
    let fill = g.add_fill(&mut y, -0.0f32, &[]).unwrap();
    let fill16 = g.add_fill(&mut w, 0xbeefu16, &[]).unwrap();
    let k1 = k
        .add_to_graph(&mut g, cfg, (&mut y, &dx, 2.0), &[fill])
        .unwrap();
    let k2 = k
        .add_to_graph(&mut g, cfg, (&mut y, &dx, 0.5), &[k1])
        .unwrap();
    let join = g.add_empty(&[k2, fill16]).unwrap();
    g.add_copy(&y, &mut z, &[join]).unwrap();
    assert_eq!(g.node_count().unwrap(), 6);
    let exec = g.instantiate().unwrap();
    for _ in 0..2 {
        // SAFETY: every array outlives the launches.
        unsafe { exec.launch(&s) }.unwrap();
    }
    // The second node's product is fused into its add, as the kernel's (`add_scaled`): v·0.5
    // alone is inexact where it is subnormal.
    let want: Vec<f32> = x
        .iter()
        .map(|&v| v.mul_add(0.5, -0.0f32 + v * 2.0))
        .collect();
    check(&y.to_vec_async(&s).unwrap(), &want, "y");
    check(
        &z.to_vec_async(&s).unwrap(),
        &want,
        "z (copied after the join)",
    );
    assert_eq!(w.to_vec_async(&s).unwrap(), vec![0xbeefu16; n]);
    // Misuse: lengths that differ, an 8-byte value with unequal halves.
    let short = s.zeros::<f32, _>(3).unwrap();
    assert!(g.add_copy(&short, &mut z, &[]).is_err());
    let mut d = s.zeros::<f64, _>(4).unwrap();
    assert!(g.add_fill(&mut d, 1.5f64, &[]).is_err());
    assert!(g.add_fill(&mut d, 0.0f64, &[]).is_ok());
}
