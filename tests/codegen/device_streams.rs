//! Streams created on the device (`device_stream_create` / `device_stream_destroy`): the
//! device runtime's calls in the PTX with CUDA's prototypes (checked by ptxas as relocatable
//! code for sm_75 and sm_90), the created handle as the launches' stream, and the build errors
//! for a handle used where it cannot be.

use cudajit::codegen::{CreatedStream, DeviceFn, DeviceStream, Kernel};
use cudajit::Error;

use crate::common::compile_all_args;

type Child = Kernel<(&'static mut [u32], u32)>;

fn child() -> Child {
    Child::build("ds_child", |k, (out, v)| {
        k.if_(k.grid1().eq(0u64), |_| out.set(0u32, v));
    })
    .unwrap()
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn build_message<T>(r: Result<T, Error>) -> String {
    match r {
        Err(e @ Error::Build { .. }) => e.to_string(),
        Err(e) => panic!("expected a build error, got {e:?}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn a_created_stream_calls_the_device_runtime_with_cudas_prototypes() {
    let c = child();
    let k = Kernel::<(&mut [u32], u32)>::build("ds_parent", |k, (out, n)| {
        k.if_(k.thread_idx().x.lt(2u32), |k| {
            let s = k.device_stream_create();
            k.launch_kernel(&c, 1u32, 32u32, 0u32, s, (out, n));
            k.launch_kernel(
                &c,
                1u32,
                32u32,
                0u32,
                DeviceStream::Created(s),
                (out, n + 1u32),
            );
            k.device_stream_destroy(s);
        });
    })
    .unwrap();
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    let w = words(&ptx);
    // The declarations, as CUDA's device runtime declares them in PTX.
    assert!(
        w.contains(
            ".extern .func (.param .b32 func_retval0) cudaStreamCreateWithFlags ( .param .b64"
        ),
        "{ptx}"
    );
    assert!(
        w.contains(".extern .func (.param .b32 func_retval0) cudaStreamDestroy ( .param .b64"),
        "{ptx}"
    );
    // One creation, with the flag cudaStreamNonBlocking (1); two launches; one destruction.
    let calls: Vec<&str> = w.split("callseq").collect();
    let call_of = |f: &str| -> Vec<&str> {
        calls
            .iter()
            .copied()
            .filter(|c| c.contains(&format!("{f}, (")))
            .collect()
    };
    let create = call_of("cudaStreamCreateWithFlags");
    assert_eq!(create.len(), 1, "{ptx}");
    assert!(create[0].contains("st.param.b32 [param1+0], 1;"), "{ptx}");
    assert_eq!(call_of("cudaLaunchDeviceV2").len(), 2, "{ptx}");
    assert_eq!(call_of("cudaStreamDestroy").len(), 1, "{ptx}");
    // The handle lives in a local slot whose generic address the creation writes through.
    assert!(w.contains("cvta.local.u64"), "{ptx}");
}

#[test]
fn the_launches_stream_is_the_created_handle() {
    let c = child();
    // With a created stream, the stream argument of cudaLaunchDeviceV2 is a register; with
    // the special streams it is a constant (0x3 tail launch, 0x4 fire-and-forget).
    let k = Kernel::<(&mut [u32], u32)>::build("ds_handle", |k, (out, n)| {
        let s = k.device_stream_create();
        k.launch_kernel(&c, 1u32, 1u32, 0u32, s, (out, n));
    })
    .unwrap();
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    let launch = ptx
        .split("cudaLaunchDeviceV2,")
        .next()
        .and_then(|before| before.rsplit("st.param.b64").next())
        .unwrap_or("");
    assert!(
        launch.contains("%rd"),
        "the stream is not a register:\n{launch}\n--- PTX ---\n{ptx}"
    );
}

#[test]
fn a_created_stream_misused_is_a_build_error() {
    let c = child();
    // A handle from another kernel's build.
    let mut leaked: Option<CreatedStream> = None;
    Kernel::<(u32,)>::build("ds_maker", |k, _| leaked = Some(k.device_stream_create())).unwrap();
    let leaked = leaked.unwrap();
    let e = build_message(Kernel::<(&mut [u32],)>::build("ds_foreign", |k, (out,)| {
        k.launch_kernel(&c, 1u32, 1u32, 0u32, leaked, (out, 1u32));
    }));
    assert!(e.contains("created by another kernel"), "{e}");
    let e = build_message(Kernel::<(u32,)>::build("ds_foreign_destroy", |k, _| {
        k.device_stream_destroy(leaked);
    }));
    assert!(
        e.contains("device_stream_destroy of a stream created on the device"),
        "{e}"
    );
    // Used after the if body that created it.
    let e = build_message(Kernel::<(&mut [u32], u32)>::build(
        "ds_scope",
        |k, (out, n)| {
            let mut s = None;
            k.if_(n.gt(0u32), |k| s = Some(k.device_stream_create()));
            k.launch_kernel(&c, 1u32, 1u32, 0u32, s.unwrap(), (out, n));
        },
    ));
    assert!(
        e.contains("inside an if or loop body that has ended"),
        "{e}"
    );
    // In a device function.
    let e = build_message(DeviceFn::<(u32,), u32>::build("ds_fn", |k, (x,)| {
        let _ = k.device_stream_create();
        x
    }));
    assert!(e.contains("in a kernel's body only"), "{e}");
}
