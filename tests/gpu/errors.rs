//! Errors that say what to do: launches over the shared-memory limits, timing events that
//! cannot be timed. (Issue 10, item 4: the driver says only "invalid argument" / "invalid
//! resource handle" for these.)

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::ctx;

fn usage_text(e: Error) -> String {
    match e {
        Error::Usage(m) => m,
        Error::Launch(e) => e.to_string(),
        other => panic!("expected a usage or launch error, got {other:?}: {other}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_shared_memory_over_the_limits_says_how_to_opt_in() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [f32],)>::build("dyn_smem_user", |k, (out,)| {
        let sh = k.dynamic_shared::<f32>();
        let t = k.thread_idx().x;
        sh.set(t, t.cast::<f32>());
        k.syncthreads();
        out.set(t, sh.at(t));
    })
    .unwrap();
    let mut out = c.alloc::<f32, _>(64).unwrap();
    let big = 64 * 1024;
    let e = k
        .launch(
            &s,
            LaunchConfig::new(1, 64).with_shared_mem(big),
            (&mut out,),
        )
        .unwrap_err();
    let m = usage_text(e);
    assert!(
        m.contains("65536 bytes of dynamic shared memory")
            && m.contains("set_max_dynamic_shared_memory(65536)"),
        "{m}"
    );
    // Opting in makes the same launch work.
    let optin = c.device().max_shared_memory_per_block_optin().unwrap();
    assert!(optin >= big, "device opt-in limit {optin}");
    k.function(&c)
        .unwrap()
        .set_max_dynamic_shared_memory(big)
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::new(1, 64).with_shared_mem(big),
        (&mut out,),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == i as f32));
    // Beyond what the device allows at all.
    let e = k
        .launch(
            &s,
            LaunchConfig::new(1, 64).with_shared_mem(optin + 4096),
            (&mut out,),
        )
        .unwrap_err();
    let m = usage_text(e);
    assert!(m.contains("exceed what the device allows"), "{m}");
    // The context is still usable.
    k.launch(
        &s,
        LaunchConfig::new(1, 64).with_shared_mem(256),
        (&mut out,),
    )
    .unwrap();
    s.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn timing_events_that_cannot_be_timed_says_why() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let (a, b) = (c.new_event().unwrap(), c.new_event().unwrap());
    let untimed = c.new_event_with(false, false).unwrap();
    untimed.record(&s).unwrap();
    a.record(&s).unwrap();
    s.synchronize().unwrap();
    let m = usage_text(cudajit::elapsed_ms(&a, &untimed).unwrap_err());
    assert!(m.contains("end event was created without timing"), "{m}");
    let m = usage_text(cudajit::elapsed_ms(&untimed, &a).unwrap_err());
    assert!(m.contains("start event was created without timing"), "{m}");
    // `b` was never recorded.
    let m = usage_text(cudajit::elapsed_ms(&a, &b).unwrap_err());
    assert!(m.contains("never recorded"), "{m}");
    b.record(&s).unwrap();
    b.synchronize().unwrap();
    assert!(cudajit::elapsed_ms(&a, &b).unwrap() >= 0.0);
}
