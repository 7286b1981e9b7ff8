//! Kernels that launch kernels: the device runtime's calls in the PTX (checked by ptxas as
//! relocatable code, which the driver's linker joins with `libcudadevrt.a`), the children in
//! the same module, and the build errors for launches that cannot be made.

use cudajit::codegen::{DeviceStream, Kernel, PtxOptions};
use cudajit::Error;

use crate::common::compile_all_args;

type Child = Kernel<(&'static mut [f32], u32, f32)>;

fn child() -> Child {
    Child::build("dp_fill", |k, (out, base, v)| {
        let i = k.grid1() + base.cast::<u64>();
        k.if_(i.lt(out.len()), |_| out.set(i, v));
    })
    .unwrap()
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_launch_calls_the_device_runtime_and_names_the_child_entry() {
    let c = child();
    let k = Kernel::<(&mut [f32], u32)>::build("dp_parent", |k, (out, n)| {
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            let blocks = (n + 63u32) / 64u32;
            k.launch_kernel(
                &c,
                blocks,
                64u32,
                0u32,
                DeviceStream::Default,
                (out, 0u32, 2.5f32),
            );
            k.launch_kernel(
                &c,
                1u32,
                32u32,
                0u32,
                DeviceStream::TailLaunch,
                (out, n, 1.0f32),
            );
            k.launch_kernel(
                &c,
                1u32,
                32u32,
                0u32,
                DeviceStream::FireAndForget,
                (out, n, 1.0f32),
            );
        });
    })
    .unwrap();
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    let w = words(&ptx);
    assert!(w.contains("cudaGetParameterBufferV2"), "{ptx}");
    assert!(w.contains("cudaLaunchDeviceV2"), "{ptx}");
    assert!(w.contains(".entry dp_parent("), "{ptx}");
    assert!(ptx.contains(".entry dp_fill__dp"), "{ptx}");
    // The child is lowered once (a declaration, then its body), and its address is taken.
    assert!(ptx.matches(".entry dp_fill__dp").count() <= 2, "{ptx}");
    assert!(
        w.contains("mov.u64 %rd7, dp_fill__dp") || w.contains(", dp_fill__dp"),
        "{ptx}"
    );
}

#[test]
fn a_kernel_launches_itself() {
    type K = Kernel<(&'static mut [u32], u32)>;
    let k = K::build("dp_rec", |k, (out, depth)| {
        k.if_(k.thread_idx().x.eq(0u32), |k| {
            out.set(depth, depth);
            k.if_(depth.lt(4u32), |k| {
                k.launch_self::<(&mut [u32], u32), _>(
                    1u32,
                    1u32,
                    0u32,
                    DeviceStream::Default,
                    (out, depth + 1u32),
                );
            });
        });
    })
    .unwrap();
    let (ptx, _) = compile_all_args(&k, &["-c"]);
    assert!(
        words(&ptx).contains("mov.u64 %rd") && ptx.contains("dp_rec;"),
        "{ptx}"
    );
    let _ = PtxOptions::default();
}

fn build_message(e: Error) -> String {
    match e {
        e @ Error::Build { .. } => e.to_string(),
        other => panic!("expected a build error, got {other:?}"),
    }
}

#[test]
fn misuse_is_a_build_error() {
    let c = child();
    // A shared array cannot be passed.
    let e = Kernel::<(u32,)>::build("dp_shared", |k, (n,)| {
        let s = k.shared_array::<f32>(64);
        k.launch_kernel(&c, 1u32, 64u32, 0u32, DeviceStream::Default, (s, n, 1.0f32));
    })
    .err()
    .map(build_message)
    .unwrap();
    assert!(e.contains("global memory"), "{e}");
    // launch_self with another parameter list.
    let e = Kernel::<(&mut [f32], u32)>::build("dp_self_bad", |k, (out, n)| {
        k.launch_self::<(&mut [f32],), _>(1u32, 1u32, 0u32, DeviceStream::Default, (out,));
        let _ = n;
    })
    .err()
    .map(build_message)
    .unwrap();
    assert!(e.contains("launch_self::<P>"), "{e}");
}
