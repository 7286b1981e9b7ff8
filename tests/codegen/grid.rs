//! Grid-wide synchronisation: kernels with `grid_sync()` pass ptxas and carry the hidden
//! barrier parameter; misuse is a build error.

use cudajit::codegen::Kernel;

use crate::common::compile_all;

#[test]
fn a_two_phase_kernel_passes_ptxas_with_a_hidden_barrier_parameter() {
    let k = Kernel::<(&[f32], &mut [f32], &mut [f32])>::build("two_phase", |k, (x, part, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i)));
        k.if_(k.thread_idx().x.eq(0u32), |_| {
            part.set(k.block_idx().x, 1.0f32)
        });
        k.grid_sync();
        k.grid_sync();
        k.if_(i.lt(x.len()), |_| out.set(i, out.at(i) + part.at(0u32)));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    // Three array parameters of the user's, then the barrier's (address and length).
    assert!(ptx.contains("two_phase_param_6"), "{ptx}");
    assert!(!ptx.contains("two_phase_param_8"), "{ptx}");
    assert!(
        ptx.contains("atom.global.add.u32") || ptx.contains("red.global.add.u32"),
        "{ptx}"
    );
    assert!(ptx.matches("bar.sync").count() >= 4, "{ptx}");
}

#[test]
fn grid_sync_in_divergent_code_or_a_device_function_is_a_build_error() {
    let e = Kernel::<(&mut [f32],)>::build("divergent_grid_sync", |k, (out,)| {
        k.if_(k.thread_idx().x.lt(5u32), |k| k.grid_sync());
        out.set(0u32, 1.0f32);
    })
    .err()
    .expect("a divergent grid_sync is refused");
    assert!(e.to_string().contains("syncthreads"), "{e}");
    let f = cudajit::codegen::DeviceFn::<(f32,), f32>::build("helper", |k, (x,)| {
        k.grid_sync();
        x
    });
    let e = f.err().expect("grid_sync in a device function is refused");
    assert!(
        e.to_string()
            .contains("grid_sync() works in a kernel's body only"),
        "{e}"
    );
}
