use std::sync::Arc;

use cudajit::prelude::*;
use cudajit::{current_context, current_device};

use crate::common::{ctx, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn primary_context_is_shared() {
    let a = ctx();
    let b = Device::get(0).unwrap().primary_context().unwrap();
    assert!(a.same_as(&b));
    assert_eq!(a.device().ordinal(), 0);
    let (free, total) = a.memory_info().unwrap();
    assert!(free > 0 && free <= total, "{free} / {total}");
    a.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn make_current_guard_restores_previous() {
    // A fresh thread starts with no current context.
    std::thread::spawn(|| {
        assert!(current_context().unwrap().is_none());
        assert!(current_device().unwrap().is_none());
        {
            let guard = Device::get(0).unwrap().make_current().unwrap();
            let cur = current_context().unwrap().expect("a current context");
            assert!(cur.same_as(&guard));
            assert_eq!(current_device().unwrap().unwrap().ordinal(), 0);
        }
        assert!(
            current_context().unwrap().is_none(),
            "guard restored no-context"
        );
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_context_many_threads() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new();
                let s = c.new_stream().unwrap();
                for round in 0..20 {
                    let n = 1000 + 37 * t + round;
                    let host: Vec<u64> = rng.vec(n, |r| r.next_u64());
                    let d = s.to_device(&host).unwrap();
                    let mut e = c.zeros::<u64, _>(n).unwrap();
                    e.copy_from_device_async(&d, &s).unwrap();
                    assert_eq!(e.to_vec_async(&s).unwrap(), host);
                }
                // Drop arrays made here on another thread.
                let h: Vec<f32> = rng.vec(500, |r| r.f32());
                (c.to_device(&h).unwrap(), h)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // Check on this thread, then drop in reverse order.
    for (d, h) in results.iter().rev() {
        assert_eq!(&d.to_vec().unwrap(), h);
    }
    drop(results);
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn resources_outlive_their_context_handle() {
    let _lock = crate::common::drop_errors_lock();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let e = c.new_event().unwrap();
    let a = c.to_device(&[1u32, 2, 3]).unwrap();
    drop(c);
    // The array, stream and event keep the context alive; drop them in mixed order, on
    // another thread.
    let arc = Arc::new((s, e, a));
    std::thread::spawn(move || {
        let (s, e, a) = &*arc;
        e.record(s).unwrap();
        assert_eq!(a.to_vec_async(s).unwrap(), vec![1, 2, 3]);
    })
    .join()
    .unwrap();
    assert!(cudajit::take_drop_errors().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reset_refuses_while_resources_live() {
    let c = ctx();
    let a = c.zeros::<f32, _>(10).unwrap();
    let e = c.clone().reset().unwrap_err();
    assert!(e.to_string().contains("still alive"), "{e}");
    assert_eq!(a.to_vec().unwrap(), vec![0.0; 10]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_memory_is_an_error_and_context_survives() {
    let c = ctx();
    let total = c.device().total_memory().unwrap();
    let e = c.alloc::<u8, _>(total * 2).unwrap_err();
    assert!(e.is_out_of_memory(), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("out of memory") && text.contains(&(total * 2).to_string()),
        "{text}"
    );
    // The context still works.
    let mut rng = Rng::new();
    let h: Vec<f64> = rng.vec(4096, |r| r.f64());
    let d = c.to_device(&h).unwrap();
    assert_eq!(d.to_vec().unwrap(), h);
}
