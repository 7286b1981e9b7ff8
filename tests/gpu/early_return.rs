//! Early return with a value from device functions (`KernelBuilder::ret_value`): numba's
//! `if x < 0: return -1.0 ... return math.sqrt(x)`, and returns from inside `for`/`while`
//! loops, inlined and `no_inline`, each checked against a host model. An inlined early return
//! must go on after the call (the kernel stores the result and more after it), not leave the
//! kernel.

use cudajit::codegen::{select, DeviceFn, Kernel};
use cudajit::prelude::*;

use crate::common::{ctx, special_f32, Rng};

/// `if x < 0 { return -1 } sqrt(x)`.
fn safe_sqrt(inline: bool) -> DeviceFn<(f32,), f32> {
    let f = DeviceFn::<(f32,), f32>::build("safe_sqrt", |k, (x,)| {
        k.if_(x.lt(0.0f32), |k| k.ret_value(-1.0f32));
        x.sqrt()
    })
    .unwrap();
    if inline {
        f
    } else {
        f.no_inline()
    }
}

fn host_safe_sqrt(x: f32) -> f32 {
    if x < 0.0 {
        -1.0
    } else {
        x.sqrt()
    }
}

/// The Collatz steps from `n` to 1 (at most `limit`; -1 past it): a return inside a `for`.
fn collatz(inline: bool) -> DeviceFn<(u32, u32), i32> {
    let f = DeviceFn::<(u32, u32), i32>::build("collatz", |k, (n, limit)| {
        let v = k.var(n);
        k.for_range(0u32, limit, |k, i| {
            k.if_(v.get().le(1u32), |k| k.ret_value(i.cast::<i32>()));
            let x = v.get();
            v.set(select((x & 1u32).eq(0u32), x / 2u32, x * 3u32 + 1u32));
        });
        k.lit(-1i32)
    })
    .unwrap();
    if inline {
        f
    } else {
        f.no_inline()
    }
}

fn host_collatz(n: u32, limit: u32) -> i32 {
    let mut v = n;
    for i in 0..limit {
        if v <= 1 {
            return i as i32;
        }
        v = if v % 2 == 0 {
            v / 2
        } else {
            v.wrapping_mul(3).wrapping_add(1)
        };
    }
    -1
}

/// The first (i, j) with `(7i + 3j) % 11 == c`, a `while` nested in a `for`, the inner loop
/// cut short by a `break`: a return from two loops deep.
fn pair(inline: bool) -> DeviceFn<(u32, u32, u32), u32> {
    let f = DeviceFn::<(u32, u32, u32), u32>::build("pair", |k, (a, b, c)| {
        k.for_range(0u32, a, |k, i| {
            let j = k.var(0u32);
            k.while_(
                |_| j.get().lt(b),
                |k| {
                    k.if_(j.get().gt(i + 3u32), |k| k.break_());
                    k.if_(((i * 7u32 + j.get() * 3u32) % 11u32).eq(c), |k| {
                        k.ret_value(i * 1000u32 + j.get())
                    });
                    j.set(j.get() + 1u32);
                },
            );
        });
        u32::MAX - a
    })
    .unwrap();
    if inline {
        f
    } else {
        f.no_inline()
    }
}

fn host_pair(a: u32, b: u32, c: u32) -> u32 {
    for i in 0..a {
        let mut j = 0;
        while j < b {
            if j > i + 3 {
                break;
            }
            if (i * 7 + j * 3) % 11 == c {
                return i * 1000 + j;
            }
            j += 1;
        }
    }
    u32::MAX - a
}

type Params = (
    &'static [f32],
    &'static [u32],
    &'static mut [f32],
    &'static mut [i32],
    &'static mut [u32],
    u32,
);

fn kernel(inline: bool) -> Kernel<Params> {
    let (sq, cz, pr) = (safe_sqrt(inline), collatz(inline), pair(inline));
    Kernel::<(&[f32], &[u32], &mut [f32], &mut [i32], &mut [u32], u32)>::build(
        "early_returns",
        move |k, (x, n, out_f, out_c, out_p, limit)| {
            let i = k.grid1();
            k.if_(i.lt(out_f.len()), |k| {
                // Code after the calls runs: the stores, and the work between them.
                out_f.set(i, sq.call((x.at(i),)) * 2.0f32);
                let acc = k.var(0i32);
                k.for_range(0u32, 3u32, |_, r| {
                    acc.set(acc.get() + cz.call((n.at(i) + r, limit)))
                });
                out_c.set(i, acc.get());
                let m = n.at(i);
                out_p.set(i, pr.call((m % 13u32, m / 13u32 % 9u32, m % 11u32)) ^ 1u32);
            });
        },
    )
    .unwrap()
}

fn nan_eq(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_functions_return_early_from_ifs_and_loops() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let len = 2000usize;
    let x = special_f32(&mut rng, len);
    let specials = [0u32, 1, 2, 3, 27, 97, u32::MAX, u32::MAX - 1, 1 << 31];
    let n: Vec<u32> = rng.vec(len, |r| {
        let u = r.next_u64();
        if u % 4 == 0 {
            specials[(u >> 8) as usize % specials.len()]
        } else {
            (u >> 20) as u32 % 5000
        }
    });
    let limit = 120u32;
    let dx = s.to_device(&x).unwrap();
    let dn = s.to_device(&n).unwrap();
    for inline in [true, false] {
        let k = kernel(inline);
        let mut out_f = s.to_device(&vec![7.5f32; len]).unwrap();
        let mut out_c = s.to_device(&vec![i32::MIN; len]).unwrap();
        let mut out_p = s.to_device(&vec![7u32; len]).unwrap();
        let cfg = LaunchConfig::for_num_elems(len, 128).unwrap();
        k.launch(
            &s,
            cfg,
            (&dx, &dn, &mut out_f, &mut out_c, &mut out_p, limit),
        )
        .unwrap();
        let (f, cz, p) = (
            out_f.to_vec_async(&s).unwrap(),
            out_c.to_vec_async(&s).unwrap(),
            out_p.to_vec_async(&s).unwrap(),
        );
        let mut early = 0;
        for i in 0..len {
            let want = host_safe_sqrt(x[i]) * 2.0;
            assert!(
                nan_eq(f[i], want),
                "inline={inline} i={i} x={}: got {} want {want}",
                x[i],
                f[i]
            );
            early += usize::from(x[i] < 0.0);
            let want: i32 = (0..3)
                .map(|r| host_collatz(n[i].wrapping_add(r), limit))
                .sum();
            assert_eq!(cz[i], want, "inline={inline} i={i} n={}", n[i]);
            let m = n[i];
            let want = host_pair(m % 13, m / 13 % 9, m % 11) ^ 1;
            assert_eq!(p[i], want, "inline={inline} i={i} n={m}");
        }
        // Both paths were taken: early returns and the returns at the end.
        assert!(early > len / 20 && early < len / 2, "{early}");
    }
}
