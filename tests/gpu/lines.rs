//! Kernels compiled with Rust source lines (`PtxOptions::lineinfo`) load and compute exactly
//! what they compute without them.

use cudajit::codegen::{DeviceFn, Kernel, PtxOptions};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn lineinfo_kernel_with_device_functions_matches_host() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let scale = DeviceFn::<(f32, f32), f32>::build("li_scale", |_, (x, a)| x * a + 1.0).unwrap();
    let twice = DeviceFn::<(f32,), f32>::build("li_twice", |_, (x,)| x + x)
        .unwrap()
        .no_inline();
    let opts = PtxOptions::default().lineinfo(true);
    let k = Kernel::<(f32, &[f32], &mut [f32])>::build_with(
        "li_kernel",
        opts.clone(),
        |k, (a, x, out)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |k| {
                let acc = k.var(scale.call((x.at(i), a)));
                k.for_range(0u32, 4u32, |_, j| {
                    acc.set(acc.get() + j.cast::<f32>().sqrt());
                });
                out.set(i, twice.call((acc.get(),)));
            });
        },
    )
    .unwrap();
    let ptx = k.compile_ptx(&opts).unwrap();
    assert!(
        ptx.contains(".loc") && ptx.contains("tests/gpu/lines.rs"),
        "{ptx}"
    );
    let mut rng = Rng::new();
    let a = 1.5f32;
    for n in [1usize, 1000, (1 << 20) + 3] {
        let x: Vec<f32> = rng.vec(n, |r| r.f32());
        let dx = s.to_device(&x).unwrap();
        let mut out = c.alloc::<f32, _>(n).unwrap();
        out.fill_async(f32::NAN, &s).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(n, 128).unwrap(),
            (a, &dx, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            let mut acc = x[i].mul_add(a, 1.0); // `x * a + 1.0`: contracted
            for j in 0..4u32 {
                acc += (j as f32).sqrt();
            }
            assert_eq!(got[i], acc + acc, "n={n} i={i}");
        }
    }
}
