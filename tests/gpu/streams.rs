use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::Thread;

use cudajit::prelude::*;
use cudajit::StreamOptions;

use crate::common::{ctx, Rng};

/// A minimal executor: polls the future, parking the thread until its waker fires.
fn block_on<F: Future>(f: F) -> F::Output {
    struct ThreadWaker(Thread, AtomicUsize);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.unpark();
        }
    }
    let w = Arc::new(ThreadWaker(std::thread::current(), AtomicUsize::new(0)));
    let waker = Waker::from(w.clone());
    let mut cx = TaskContext::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stream_kinds_and_options() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let (least, greatest) = c.stream_priority_range().unwrap();
    assert!(greatest <= least);
    let hi = c
        .new_stream_with(StreamOptions {
            non_blocking: true,
            priority: greatest,
        })
        .unwrap();
    assert_eq!(hi.priority().unwrap(), greatest);
    assert!(hi.is_non_blocking().unwrap());
    assert!(!c.new_stream().unwrap().is_non_blocking().unwrap());
    let mut rng = Rng::new();
    let host: Vec<i32> = rng.vec(10_000, |r| r.next_u64() as i32);
    for s in [
        hi,
        c.default_stream(),
        c.legacy_default_stream(),
        c.per_thread_default_stream(),
    ] {
        let d = s.to_device(&host).unwrap();
        assert_eq!(d.to_vec_async(&s).unwrap(), host);
        s.synchronize().unwrap();
        assert!(s.query().unwrap());
    }
    // Wrapping a stream made elsewhere: never destroyed by the wrapper.
    let owner = c.new_stream().unwrap();
    let wrapped = unsafe { c.wrap_stream(owner.raw()) };
    let d = wrapped.to_device(&host).unwrap();
    drop(wrapped);
    assert_eq!(d.to_vec_async(&owner).unwrap(), host);
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_functions_run_in_stream_order() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let big = c.zeros::<f32, _>(1 << 24).unwrap();
    let mut copy = c.alloc::<f32, _>(1 << 24).unwrap();
    for i in 0..5 {
        copy.copy_from_device_async(&big, &s).unwrap();
        let o = order.clone();
        s.launch_host_func(move || o.lock().unwrap().push(i))
            .unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    // A panicking host function is caught and kept.
    s.launch_host_func(|| panic!("deliberate")).unwrap();
    s.synchronize().unwrap();
    let errs = cudajit::take_drop_errors();
    assert!(
        errs.iter().any(|e| e.to_string().contains("panicked")),
        "{errs:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn done_future_completes_after_the_work() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let big = c.zeros::<f64, _>(1 << 24).unwrap();
    let mut copy = c.alloc::<f64, _>(1 << 24).unwrap();
    copy.copy_from_device_async(&big, &s).unwrap();
    let f = flag.clone();
    s.launch_host_func(move || f.store(true, Ordering::SeqCst))
        .unwrap();
    let done = s.done().unwrap();
    block_on(done).unwrap();
    assert!(
        flag.load(Ordering::SeqCst),
        "the future completed before earlier work"
    );
    assert!(s.query().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn auto_synchronize_guard() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let host: Vec<u64> = rng.vec(1 << 20, |r| r.next_u64());
    let mut pinned = c.alloc_pinned::<u64>(host.len()).unwrap();
    let d = s.to_device(&host).unwrap();
    {
        let guard = s.auto_synchronize();
        pinned.copy_from_device_async(&d, &guard).unwrap();
    }
    assert!(s.query().unwrap());
    assert_eq!(pinned.as_slice().unwrap(), &host[..]);
    let guard = s.auto_synchronize();
    guard.finish().unwrap();
}
