//! The stream-ordered memory pool: arrays from `Stream::alloc_async` hold their data, go back
//! to the pool in stream order, outlive their stream, show in the pool's statistics, and work
//! inside a graph capture (as do the array operations, which allocate from the pool).

use cudajit::codegen::Expr;
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

/// Serialises the tests that read the pool's high watermarks with the one that resets them.
static STATS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
#[ignore = "needs a CUDA GPU"]
fn pool_arrays_hold_data_and_go_back_in_stream_order() {
    let _stats = STATS.lock().unwrap_or_else(|p| p.into_inner());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let pool = c.mem_pool().unwrap();
    s.synchronize().unwrap();
    let before = pool.stats().unwrap();
    let n = 1 << 18;
    let mut rng = Rng::new();
    let host: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let mut a = s.alloc_async::<u32, _>(n).unwrap();
    a.fill_async(0xdead_beef, &s).unwrap();
    a.copy_from_host_async(&host, &s).unwrap();
    assert_eq!(a.to_vec_async(&s).unwrap(), host);
    // Other tests may allocate or free at the same time (the pool is the device's): only
    // what holds whatever they do is checked.
    let during = pool.stats().unwrap();
    assert!(
        during.used_high >= (n * 4) as u64,
        "{before:?} -> {during:?}"
    );
    assert!(during.reserved_high >= during.used_high, "{during:?}");
    let z = s.zeros_async::<f64, _>((3, 5)).unwrap();
    assert_eq!(z.to_vec_async(&s).unwrap(), vec![0.0; 15]);
    drop((a, z));
    s.synchronize().unwrap();
    assert!(pool.stats().unwrap().used_high >= (n * 4) as u64);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pool_array_outlives_its_stream() {
    let _errors = crate::common::drop_errors_lock();
    let c = ctx();
    let a = {
        let s = c.new_stream().unwrap();
        let a = s.zeros_async::<i32, _>(1000).unwrap();
        s.synchronize().unwrap();
        a
    }; // the stream is dropped first; the array keeps its handle until it goes
    let other = c.new_stream().unwrap();
    assert_eq!(a.to_vec_async(&other).unwrap(), vec![0; 1000]);
    drop(a);
    other.synchronize().unwrap();
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pool_settings_and_statistics() {
    let _stats = STATS.lock().unwrap_or_else(|p| p.into_inner());
    let c = ctx();
    let pool = c.mem_pool().unwrap();
    let old = pool.release_threshold().unwrap();
    pool.set_release_threshold(64 << 20).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 64 << 20);
    assert_eq!(pool.stats().unwrap().release_threshold, 64 << 20);
    pool.reset_high_watermarks().unwrap();
    let st = pool.stats().unwrap();
    assert!(st.used_high >= st.used, "{st:?}");
    pool.trim_to(0).unwrap();
    pool.set_release_threshold(old).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn operations_allocate_from_the_pool_inside_a_graph_capture() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let twice = Elementwise::<(Elem<f32>,), Expr<f32>>::new("pool_twice", |(x,)| x * 2.0).unwrap();
    let plus = Elementwise::<(Elem<f32>,), Expr<f32>>::new("pool_plus", |(x,)| x + 0.25).unwrap();
    let n = 5000;
    let mut rng = Rng::new();
    let host: Vec<f32> = rng.vec(n, |r| r.f32() * 100.0);
    let x = s.to_device(&host).unwrap();
    let mut y = s.zeros::<f32, _>(n).unwrap();
    let graph = s
        .capture(|s| {
            let t = twice.call(s, (&x,))?; // from the pool, inside the graph
            plus.apply(s, (&t,), &mut y)?;
            let scratch = s.alloc_async::<f32, _>(n)?;
            drop(scratch);
            Ok(())
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    for _ in 0..3 {
        // SAFETY: x and y outlive the launches; the temporaries belong to the graph.
        unsafe { exec.launch(&s) }.unwrap();
    }
    let got = y.to_vec_async(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], host[i] * 2.0 + 0.25, "i={i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_with_pool_temporaries_is_updated_in_place() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let twice =
        Elementwise::<(Elem<f32>,), Expr<f32>>::new("pool_upd_twice", |(x,)| x * 2.0).unwrap();
    let plus =
        Elementwise::<(Elem<f32>,), Expr<f32>>::new("pool_upd_plus", |(x,)| x + 1.0).unwrap();
    let n = 3000;
    let host: Vec<f32> = (0..n).map(|i| i as f32 - 1500.0).collect();
    let x = s.to_device(&host).unwrap();
    let mut a = s.zeros::<f32, _>(n).unwrap();
    let mut b = s.zeros::<f32, _>(n).unwrap();
    let capture = |out: &mut DeviceArray<f32>| {
        s.capture(|s| {
            let t = twice.call(s, (&x,))?;
            plus.apply(s, (&t,), &mut *out)
        })
        .unwrap()
    };
    let mut exec = capture(&mut a).instantiate().unwrap();
    // The new graph (and its temporaries) is dropped right after the update.
    exec.update(&capture(&mut b)).unwrap();
    // SAFETY: x and b outlive the launch.
    unsafe { exec.launch(&s) }.unwrap();
    let got = b.to_vec_async(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], host[i] * 2.0 + 1.0, "i={i}");
    }
    assert_eq!(a.to_vec_async(&s).unwrap(), vec![0.0; n]);
}
