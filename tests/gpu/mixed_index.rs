//! `u32` and `u64` expressions mixed without casts (the thread geometry with `grid1`, `len`,
//! `dim`): arithmetic and comparisons widen the `u32` side to `u64` by zero-extension, in both
//! orders, checked against `u64::from` on values past 2^32 (where narrowing would show).

use cudajit::codegen::{select, Expr, Kernel};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

/// Results per element: the arithmetic of `x: u64` with `y: u32` in both orders.
const OPS: usize = 16;

fn host(x: u64, y: u32) -> ([u64; OPS], u32) {
    let w = u64::from(y);
    let div = |a: u64, b: u64| a.checked_div(b).unwrap_or(u64::MAX);
    let rem = |a: u64, b: u64| a.checked_rem(b).unwrap_or(a);
    let arith = [
        x.wrapping_add(w),
        w.wrapping_add(x),
        x.wrapping_sub(w),
        w.wrapping_sub(x),
        x.wrapping_mul(w),
        w.wrapping_mul(x),
        div(x, w),
        div(w, x),
        rem(x, w),
        rem(w, x),
        x & w,
        w & x,
        x | w,
        w | x,
        x ^ w,
        w ^ x,
    ];
    let cmps = [
        x < w,
        w < x,
        x <= w,
        w <= x,
        x > w,
        w > x,
        x >= w,
        w >= x,
        x == w,
        w == x,
        x != w,
        w != x,
    ];
    let bits = cmps
        .iter()
        .enumerate()
        .fold(0u32, |m, (i, &c)| m | (u32::from(c) << i));
    (arith, bits)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn u32_and_u64_expressions_mix_and_widen() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u64], &[u32], &mut [u64], &mut [u32], u32)>::build(
        "mixed_index",
        |k, (xs, ys, arith, cmps, n)| {
            let i = k.grid1();
            // A u64 index against a u32 count, no cast.
            k.if_(i.lt(n), |_| {
                let (x, y) = (xs.at(i), ys.at(i));
                let r = [
                    x + y,
                    y + x,
                    x - y,
                    y - x,
                    x * y,
                    y * x,
                    x / y,
                    y / x,
                    x % y,
                    y % x,
                    x & y,
                    y & x,
                    x | y,
                    y | x,
                    x ^ y,
                    y ^ x,
                ];
                let base = i * OPS as u64;
                for (j, v) in r.into_iter().enumerate() {
                    arith.set(base + j as u64, v);
                }
                let c = [
                    x.lt(y),
                    y.lt(x),
                    x.le(y),
                    y.le(x),
                    x.gt(y),
                    y.gt(x),
                    x.ge(y),
                    y.ge(x),
                    x.eq(y),
                    y.eq(x),
                    x.ne(y),
                    y.ne(x),
                ];
                let mut bits = Expr::lit(0u32);
                for (j, b) in c.into_iter().enumerate() {
                    bits = bits | (b.cast::<u32>() << j as u32);
                }
                // The thread geometry (u32) with the grid index (u64), no cast.
                let t = k.thread_idx().x + k.block_idx().x * k.block_dim().x;
                cmps.set(i, select(t.eq(i), bits, u32::MAX));
            });
        },
    )
    .unwrap();

    let mut rng = Rng::new();
    let n = 3000usize;
    let big = 1u64 << 32;
    let xs_special = [
        0u64,
        1,
        u32::MAX as u64,
        big,
        big + 1,
        big + 5,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
    ];
    let ys_special = [0u32, 1, 5, u32::MAX, u32::MAX - 1, 1 << 31];
    let mut xs: Vec<u64> = rng.vec(n, |r| {
        let u = r.next_u64();
        match u % 4 {
            0 => xs_special[(u >> 8) as usize % xs_special.len()],
            1 => u >> (u % 64),
            _ => r.next_u64(),
        }
    });
    let ys: Vec<u32> = rng.vec(n, |r| {
        let u = r.next_u64();
        match u % 4 {
            0 => ys_special[(u >> 8) as usize % ys_special.len()],
            _ => (r.next_u64() >> 32) as u32,
        }
    });
    // Pairs equal modulo 2^32 but not as u64 (a narrowing comparison would call them equal),
    // and pairs equal as u64.
    for i in (0..n).step_by(7) {
        xs[i] = u64::from(ys[i]) + if i % 2 == 0 { big } else { 0 };
    }
    let dx = s.to_device(&xs).unwrap();
    let dy = s.to_device(&ys).unwrap();
    let mut arith = s.to_device(&vec![0xdead_beefu64; n * OPS]).unwrap();
    let mut cmps = s.to_device(&vec![0xdead_beefu32; n]).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    k.launch(&s, cfg, (&dx, &dy, &mut arith, &mut cmps, n as u32))
        .unwrap();
    let (got_a, got_c) = (
        arith.to_vec_async(&s).unwrap(),
        cmps.to_vec_async(&s).unwrap(),
    );
    let mut narrow_eq = 0;
    for i in 0..n {
        let (want_a, want_c) = host(xs[i], ys[i]);
        assert_eq!(
            &got_a[i * OPS..(i + 1) * OPS],
            &want_a[..],
            "i={i} x={:#x} y={:#x}",
            xs[i],
            ys[i]
        );
        assert_eq!(got_c[i], want_c, "i={i} x={:#x} y={:#x}", xs[i], ys[i]);
        narrow_eq += usize::from(xs[i] as u32 == ys[i] && xs[i] != u64::from(ys[i]));
    }
    assert!(narrow_eq > 100, "{narrow_eq}");
}
