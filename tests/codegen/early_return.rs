//! Early return with a value from device functions (`KernelBuilder::ret_value`): inlined and
//! `no_inline` bodies with returns inside ifs and loops compile and pass ptxas; a return in a
//! kernel, of the wrong type, or of another function's value, is a build error.

use cudajit::codegen::{DeviceFn, Kernel};
use cudajit::Error;

use crate::common::compile_all;

fn build_error_text<T>(r: Result<T, Error>) -> String {
    match r {
        Err(e @ Error::Build { .. }) => e.to_string(),
        Err(e) => panic!("not a build error: {e}"),
        Ok(_) => panic!("built"),
    }
}

#[test]
fn early_returns_compile_inlined_and_called() {
    let sq = DeviceFn::<(f32,), f32>::build("safe_sqrt", |k, (x,)| {
        k.if_(x.lt(0.0f32), |k| k.ret_value(-1.0f32));
        x.sqrt()
    })
    .unwrap();
    // A return two loops deep, and one at the top level with dead code after it.
    let find = DeviceFn::<(u32, u32), i64>::build("find", |k, (a, b)| {
        k.for_range(0u32, a, |k, i| {
            let j = k.var(0u32);
            k.while_(
                |_| j.get().lt(b),
                |k| {
                    k.if_((i ^ j.get()).eq(5u32), |k| {
                        k.ret_value((i * 100u32 + j.get()).cast::<i64>())
                    });
                    j.set(j.get() + 1u32);
                },
            );
        });
        k.ret_value(-1i64);
        k.lit(-2i64)
    })
    .unwrap();
    for inline in [true, false] {
        let (sq, find) = if inline {
            (sq.clone(), find.clone())
        } else {
            (sq.clone().no_inline(), find.clone().no_inline())
        };
        let k =
            Kernel::<(&[f32], &mut [f32], &mut [i64])>::build("early_ret", |k, (x, out, idx)| {
                let i = k.grid1();
                k.if_(i.lt(out.len()), |k| {
                    out.set(i, sq.call((x.at(i),)) + 1.0f32);
                    let t = k.thread_idx().x;
                    idx.set(i, find.call((t % 7u32, t % 9u32)) * 3i64);
                });
            })
            .unwrap();
        let (ptx, _) = compile_all(&k);
        assert_eq!(ptx.contains(".func"), !inline, "{ptx}");
        assert!(ptx.contains("sqrt.rn.f32"), "{ptx}");
        // The device functions on their own, as exported `.func`s.
        let opts = cudajit::codegen::PtxOptions::for_cc(9, 0);
        let f = find.compile_ptx(&opts).unwrap();
        crate::common::check_ptx_args(&f, (9, 0), "find", &["-c"]);
    }
}

#[test]
fn ret_value_misuse_is_a_build_error() {
    // In a kernel: nothing to return.
    let e = build_error_text(Kernel::<(&mut [f32],)>::build(
        "k_ret_value",
        |k, (out,)| {
            k.if_(k.grid1().gt(3u64), |k| k.ret_value(1.0f32));
            out.set(0u64, 1.0f32);
        },
    ));
    assert!(e.contains("ret_value") && e.contains("kernel"), "{e}");
    // Of another type than the function's.
    let e = build_error_text(DeviceFn::<(f32,), f32>::build("wrong_ty", |k, (x,)| {
        k.if_(x.lt(0.0f32), |k| k.ret_value(1i32));
        x
    }));
    assert!(e.contains("i32") && e.contains("f32"), "{e}");
    // A value of another function.
    Kernel::<(&mut [f32],)>::build("outer", |k, (out,)| {
        let v = k.lit(2.0f32) * 3.0f32;
        let f = DeviceFn::<(f32,), f32>::build("foreign_ret", move |k, (x,)| {
            k.if_(x.lt(0.0f32), |k| k.ret_value(v));
            x
        });
        let e = build_error_text(f);
        assert!(e.contains("another"), "{e}");
        out.set(0u64, v);
    })
    .unwrap(); // the kernel itself is fine; only the device function failed
               // A barrier after a return only some threads take.
    let e = build_error_text(DeviceFn::<(f32,), f32>::build("div_ret", |k, (x,)| {
        k.if_(k.thread_idx().x.lt(3u32), |k| k.ret_value(x));
        k.syncthreads();
        x * 2.0f32
    }));
    assert!(e.contains("syncthreads"), "{e}");
    // `ret()` in such a function points at `ret_value`.
    let e = build_error_text(DeviceFn::<(f32,), f32>::build("plain_ret", |k, (x,)| {
        k.ret();
        x
    }));
    assert!(e.contains("ret_value"), "{e}");
}
