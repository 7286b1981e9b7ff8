//! Fault injection (issue 10, item 3): a scripted workload (context, streams, copies of every
//! kind including a staged large pageable copy, a builder kernel, `Elementwise`, a reduction,
//! pinned memory, events with timing, a host callback, a stream future) runs once to count its
//! backend calls; then, for every N, it runs again with the N-th call failing (the error kinds
//! in turn). Each run must end without a panic or a hang, the failure must come back as an
//! `Err` (or a recorded drop error), or be handled with a correct result; afterwards a clean
//! run must succeed and leave exactly what the first clean run left alive (no leak, no double
//! free: the simulator underneath refuses a second free).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cudajit::codegen::Kernel;
use cudajit::ops::{Elem, Elementwise, ReduceOps};
use cudajit::prelude::*;

mod fault_harness;
use fault_harness::check;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = std::task::Waker::from(Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// The workload: every kind of call the issue lists; verifies every result.
fn workload() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = s.to_device(&x)?;
    let mut out = ctx.alloc::<f32, _>(n)?;
    out.fill_async(-1.0, &s)?;
    let k = Kernel::<(&[f32], &mut [f32])>::build("fi_double", |k, (x, o)| {
        let i = k.grid1();
        k.if_(i.lt(o.len()), |_| o.set(i, x.at(i) * 2.0f32));
    })?;
    let (a, b) = (ctx.new_event()?, ctx.new_event()?);
    a.record(&s)?;
    k.launch(&s, LaunchConfig::for_num_elems(n, 128)?, (&dx, &mut out))?;
    b.record(&s)?;
    let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("fi_add", |(p, q)| p + q)?;
    let y = add.call(&s, (&dx, &out))?; // 3x
    let total = y.sum(&s)?;
    check(total == 3.0 * (n * (n - 1) / 2) as f32, "sum")?;
    let mut pinned = ctx.alloc_pinned::<f32>(n)?;
    pinned.copy_from_device_async(&y, &s)?;
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    s.launch_host_func(move || r2.store(true, Ordering::SeqCst))?;
    block_on(s.done()?)?;
    pinned.wait()?;
    check(ran.load(Ordering::SeqCst), "host callback")?;
    check(
        pinned.as_slice()?[n - 1] == 3.0 * (n - 1) as f32,
        "pinned copy",
    )?;
    b.synchronize()?;
    check(cudajit::elapsed_ms(&a, &b)? >= 0.0, "elapsed time")?;
    // A second stream waiting on an event, and a large pageable copy (staged through pinned
    // buffers by several threads).
    let s2 = ctx.new_stream()?;
    s2.wait_event(&b)?;
    let big: Vec<u8> = (0..(17usize << 20)).map(|i| i as u8).collect();
    let dbig = s2.to_device(&big)?;
    let back = dbig.to_vec_async(&s2)?;
    check(back == big, "staged copy")?;
    let host = out.to_vec_async(&s)?;
    check(host[7] == 14.0, "kernel")?;
    s.synchronize()?;
    s2.synchronize()?;
    Ok(())
}

#[test]
fn every_failing_call_of_the_workload_is_an_error_without_panic_hang_or_leak() {
    fault_harness::fail_every_call("fault injection", workload);
}
