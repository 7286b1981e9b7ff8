//! Kernels built with the builder, run on the GPU and checked element by element against the
//! host on fresh random inputs.

use cudajit::codegen::{select, DeviceFn, Kernel, NdMut, NdRef};
use cudajit::prelude::*;
use cudajit::DeviceCopy;
use ndarray::Array2;

use crate::common::{ctx, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn vector_add_matches_host() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })
    .unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 127, 128, 129, 1 << 20, (1 << 22) + 5] {
        let x: Vec<f32> = rng.vec(n, |r| r.f32());
        let y: Vec<f32> = rng.vec(n, |r| r.f32());
        let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
        let mut out = c.alloc::<f32, _>(n).unwrap();
        out.fill_async(f32::NAN, &s).unwrap();
        add.launch(
            &s,
            LaunchConfig::for_num_elems(n, 128).unwrap(),
            (&dx, &dy, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            assert_eq!(got[i], x[i] + y[i], "n={n} i={i}");
        }
    }
}

/// One integer type's operators against Rust's wrapping semantics and cudajit's division rules.
macro_rules! int_case {
    ($t:ty, $name:literal, $rng:expr) => {{
        let c = ctx();
        let s = c.new_stream().unwrap();
        let k = Kernel::<(&[$t], &[$t], &mut [$t])>::build($name, |k, (a, b, out)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                let (x, y) = (a.at(i), b.at(i));
                let j = i * 14u64;
                out.set(j, x + y);
                out.set(j + 1u64, x - y);
                out.set(j + 2u64, x * y);
                out.set(j + 3u64, x / y);
                out.set(j + 4u64, x % y);
                out.set(j + 5u64, x & y);
                out.set(j + 6u64, x | y);
                out.set(j + 7u64, x ^ y);
                out.set(j + 8u64, x << y);
                out.set(j + 9u64, x >> y);
                out.set(j + 10u64, x.min(y));
                out.set(j + 11u64, x.max(y));
                out.set(
                    j + 12u64,
                    select(
                        x.lt(y),
                        x.cast::<f64>().cast::<$t>(),
                        x.cast::<u32>().cast::<$t>(),
                    ),
                );
                out.set(j + 13u64, select(x.ge(y).and(x.ne(y)), 1 as $t, 0 as $t));
            });
        })
        .unwrap();
        let rng: &mut Rng = $rng;
        let n = 200_000usize;
        let special: [$t; 6] = [0, 1, <$t>::MAX, <$t>::MIN, (0 as $t).wrapping_sub(1), 63];
        let mut a: Vec<$t> = rng.vec(n, |r| r.next_u64() as $t);
        let mut b: Vec<$t> = rng.vec(n, |r| r.next_u64() as $t);
        // Small divisors and shift amounts too, and every pair of special values.
        for i in (0..n).step_by(3) {
            b[i] = (rng.next_u64() % 70) as $t;
        }
        for (p, &x) in special.iter().enumerate() {
            for (q, &y) in special.iter().enumerate() {
                a[p * 6 + q] = x;
                b[p * 6 + q] = y;
            }
        }
        let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
        let mut out = c.alloc::<$t, _>(n * 14).unwrap();
        out.fill_async(0x5a as $t, &s).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(n, 256).unwrap(),
            (&da, &db, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let div = if y == 0 {
                (0 as $t).wrapping_sub(1)
            } else {
                x.wrapping_div(y)
            };
            let rem = if y == 0 { x } else { x.wrapping_rem(y) };
            let expect: [$t; 14] = [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                div,
                rem,
                x & y,
                x | y,
                x ^ y,
                x.wrapping_shl(y as u32),
                x.wrapping_shr(y as u32),
                x.min(y),
                x.max(y),
                if x < y {
                    (x as f64) as $t
                } else {
                    (x as u32) as $t
                },
                (x > y) as $t,
            ];
            assert_eq!(
                &got[i * 14..i * 14 + 14],
                &expect,
                concat!($name, ": x={} y={}"),
                x,
                y
            );
        }
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_arithmetic_semantics_per_type() {
    let mut rng = Rng::new();
    int_case!(i32, "int_i32", &mut rng);
    int_case!(u32, "int_u32", &mut rng);
    int_case!(i64, "int_i64", &mut rng);
    int_case!(u64, "int_u64", &mut rng);
}

macro_rules! float_case {
    ($t:ty, $name:literal, $gen:expr) => {{
        let c = ctx();
        let s = c.new_stream().unwrap();
        let k = Kernel::<(&[$t], &[$t], &mut [$t], &mut [i32], &mut [bool])>::build(
            $name,
            |k, (a, b, out, ints, flags)| {
                let i = k.grid1();
                k.if_(i.lt(a.len()), |_| {
                    let (x, y) = (a.at(i), b.at(i));
                    let j = i * 8u64;
                    out.set(j, x + y);
                    out.set(j + 1u64, x - y);
                    out.set(j + 2u64, x * y);
                    out.set(j + 3u64, x / y);
                    out.set(j + 4u64, x % y);
                    out.set(j + 5u64, x.min(y));
                    out.set(j + 6u64, x.mul_add(y, x));
                    out.set(j + 7u64, -(x.sqrt()));
                    ints.set(i, (x * (1e6 as $t)).cast::<i32>());
                    flags.set(i, x.lt(y).or(x.ne(x)));
                });
            },
        )
        .unwrap();
        let mut rng = Rng::new();
        let n = 300_000usize;
        let gen = $gen;
        let mut a: Vec<$t> = rng.vec(n, |r| gen(r) * 1000.0);
        let b: Vec<$t> = rng.vec(n, |r| gen(r) * 10.0);
        a[0] = <$t>::NAN;
        a[1] = <$t>::INFINITY;
        a[2] = 1e30 as $t;
        let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
        let mut out = c.alloc::<$t, _>(n * 8).unwrap();
        out.fill_async(-7.0, &s).unwrap();
        let mut ints = c.zeros::<i32, _>(n).unwrap();
        let mut flags = c.zeros::<bool, _>(n).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(n, 256).unwrap(),
            (&da, &db, &mut out, &mut ints, &mut flags),
        )
        .unwrap();
        let (got, gi, gf) = (
            out.to_vec_async(&s).unwrap(),
            ints.to_vec_async(&s).unwrap(),
            flags.to_vec_async(&s).unwrap(),
        );
        let same = |p: $t, q: $t| p == q || (p.is_nan() && q.is_nan());
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let expect = [
                x + y,
                x - y,
                x * y,
                x / y,
                x % y,
                x.min(y),
                x.mul_add(y, x),
                -(x.sqrt()),
            ];
            for (e, (&g, &w)) in got[i * 8..i * 8 + 8].iter().zip(expect.iter()).enumerate() {
                assert!(
                    same(g, w),
                    concat!($name, " op {} x={} y={}: got {} want {}"),
                    e,
                    x,
                    y,
                    g,
                    w
                );
            }
            assert_eq!(gi[i], (x * (1e6 as $t)) as i32, "cast x={x}");
            assert_eq!(gf[i], x < y || x.is_nan(), "flag x={x} y={y}");
        }
    }};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_arithmetic_is_ieee() {
    float_case!(f32, "float_f32", |r: &mut Rng| r.f32());
    float_case!(f64, "float_f64", |r: &mut Rng| r.f64());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn control_flow_loops_and_early_return() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &mut [f32], u32)>::build("loops", |k, (x, out, reps)| {
        let i = k.grid1();
        k.if_(i.ge(x.len()), |k| k.ret());
        let acc = k.var(0.0f32);
        k.for_range(0u32, reps, |k, r| {
            k.if_(r.eq(7u32), |k| k.continue_());
            acc.set(acc.get() + x.at(i) * r.cast::<f32>());
            k.if_(acc.get().gt(50.0f32), |k| k.break_());
        });
        let n = k.var(0u32);
        k.while_(|_| n.get().lt(reps), |_| n.add_assign(3u32));
        k.if_else(
            x.at(i).gt(0.0f32),
            |_| out.set(i, acc.get() + n.get().cast::<f32>()),
            |_| out.set(i, -acc.get()),
        );
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 100_003usize;
    let reps = 20u32;
    let x: Vec<f32> = rng.vec(n, |r| r.f32() * 4.0);
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f32, _>(n).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&dx, &mut out, reps),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let mut acc = 0.0f32;
        for r in 0..reps {
            if r == 7 {
                continue;
            }
            acc = x[i].mul_add(r as f32, acc); // `acc + x * r`: contracted (fma)
            if acc > 50.0 {
                break;
            }
        }
        let mut m = 0u32;
        while m < reps {
            m += 3;
        }
        let want = if x[i] > 0.0 { acc + m as f32 } else { -acc };
        assert_eq!(got[i], want, "i={i} x={}", x[i]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shared_memory_block_sum() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = crate::support::kernels::block_sum::<f64>("block_sum");
    let mut rng = Rng::new();
    let n = 1_000_001usize;
    let x: Vec<f64> = rng.vec(n, |r| r.next_u64() as u32 as f64 / 1024.0);
    let blocks = n.div_ceil(256);
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f64, _>(blocks).unwrap();
    out.fill_async(f64::NAN, &s).unwrap();
    k.launch(&s, LaunchConfig::new(blocks as u32, 256), (&dx, &mut out))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for b in 0..blocks {
        // Integers / 1024 sum exactly in f64: the reduction order does not matter.
        let want: f64 = x[b * 256..((b + 1) * 256).min(n)].iter().sum();
        assert_eq!(got[b], want, "block {b}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiled_transpose_2d() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("transpose", |k, (a, b)| {
        let tile = k.shared_array::<f32>(32 * 33);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 32u32, k.block_idx().y * 32u32);
        let (rows, cols) = (a.dim(0), a.dim(1));
        let (r, cidx) = ((by + ty).cast::<u64>(), (bx + tx).cast::<u64>());
        k.if_(r.lt(rows).and(cidx.lt(cols)), |_| {
            tile.set(ty * 33u32 + tx, a.at2(r, cidx))
        });
        k.syncthreads();
        let (r2, c2) = ((bx + ty).cast::<u64>(), (by + tx).cast::<u64>());
        k.if_(r2.lt(cols).and(c2.lt(rows)), |_| {
            b.set2(r2, c2, tile.at(tx * 33u32 + ty))
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    for (rows, cols) in [(1usize, 1usize), (33, 65), (1000, 777)] {
        let a = Array2::from_shape_fn((rows, cols), |_| rng.f32());
        let da = s.to_device(&a).unwrap();
        let mut db = c.alloc::<f32, _>((cols, rows)).unwrap();
        db.fill_async(f32::NAN, &s).unwrap();
        let cfg = LaunchConfig::new(
            (cols.div_ceil(32) as u32, rows.div_ceil(32) as u32),
            (32, 32),
        );
        k.launch(&s, cfg, (&da, &mut db)).unwrap();
        assert_eq!(
            db.to_array_async(&s).unwrap(),
            a.t().to_owned(),
            "{rows}x{cols}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_shared_memory_and_barrier_reductions() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k =
        Kernel::<(&[f32], &mut [f32], &mut [i32])>::build("dyn_shared", |k, (x, out, votes)| {
            let smem = k.dynamic_shared::<f32>();
            let (t, n) = (k.thread_idx().x, k.block_dim().x);
            let i = k.grid1();
            smem.set(t, x.at(i));
            k.syncthreads();
            out.set(i, smem.at(n - t - 1u32));
            let pred = x.at(i).gt(0.0f32);
            let count = k.syncthreads_count(pred);
            let all = k.syncthreads_and(pred);
            let any = k.syncthreads_or(pred);
            k.if_(t.eq(0u32), |k| {
                let b = k.block_idx().x * 3u32;
                votes.set(b, count);
                votes.set(b + 1u32, select(all, 1i32, 0));
                votes.set(b + 2u32, select(any, 1i32, 0));
            });
        })
        .unwrap();
    let mut rng = Rng::new();
    let (blocks, threads) = (500usize, 128usize);
    let n = blocks * threads;
    let mut x: Vec<f32> = rng.vec(n, |r| r.f32());
    // Some blocks all positive, some all negative.
    x[..threads].iter_mut().for_each(|v| *v = v.abs() + 0.1);
    x[threads..2 * threads]
        .iter_mut()
        .for_each(|v| *v = -v.abs() - 0.1);
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f32, _>(n).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    let mut votes = c.alloc::<i32, _>(blocks * 3).unwrap();
    votes.fill_async(-5, &s).unwrap();
    let cfg = LaunchConfig::new(blocks as u32, threads as u32).with_shared_mem(threads as u32 * 4);
    k.launch(&s, cfg, (&dx, &mut out, &mut votes)).unwrap();
    let (got, v) = (
        out.to_vec_async(&s).unwrap(),
        votes.to_vec_async(&s).unwrap(),
    );
    for b in 0..blocks {
        let chunk = &x[b * threads..(b + 1) * threads];
        for t in 0..threads {
            assert_eq!(got[b * threads + t], chunk[threads - 1 - t]);
        }
        let pos = chunk.iter().filter(|&&v| v > 0.0).count() as i32;
        assert_eq!(
            &v[b * 3..b * 3 + 3],
            &[pos, (pos == threads as i32) as i32, (pos > 0) as i32],
            "block {b}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_functions_and_local_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let sq = DeviceFn::<(f64,), f64>::build("sq", |_, (x,)| x * x).unwrap();
    let sq2 = sq.clone();
    let norm = DeviceFn::<(f64, f64), f64>::build("norm", move |_, (a, b)| {
        (sq2.call((a,)) + sq2.call((b,))).sqrt()
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&[f64], &mut [f64])>::build("use_fns", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |k| {
            let buf = k.local_array::<f64>(4);
            k.for_range(0u32, 4u32, |_, j| buf.set(j, x.at(i) + j.cast::<f64>()));
            let acc = k.var(0.0f64);
            k.for_range(0u32, 4u32, |_, j| {
                acc.set(acc.get() + norm.call((buf.at(j), sq.call((x.at(i),)))))
            });
            out.set(i, acc.get());
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 50_000usize;
    let x: Vec<f64> = rng.vec(n, |r| r.f64());
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f64, _>(n).unwrap();
    out.fill_async(f64::NAN, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&dx, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let want: f64 = (0..4)
            .map(|j| {
                let b = x[i] + j as f64;
                (b * b + (x[i] * x[i]) * (x[i] * x[i])).sqrt()
            })
            .sum();
        assert!(
            (got[i] - want).abs() <= 1e-15 * want.abs().max(1.0),
            "i={i}: {} vs {want}",
            got[i]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grid_geometry_in_3d() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u64],)>::build("geometry3", |k, (out,)| {
        let [x, y, z] = k.grid3();
        let [sx, sy, _] = k.gridsize3();
        let idx = (z * sy + y) * sx + x;
        out.set(idx * 2u64, idx);
        out.set(
            idx * 2u64 + 1u64,
            k.lane_id().min(k.warp_size() - 1u32).cast::<u64>(),
        );
    })
    .unwrap();
    let (g, b) = ((3u32, 2u32, 4u32), (8u32, 4u32, 2u32));
    let total = (g.0 * b.0 * g.1 * b.1 * g.2 * b.2) as usize;
    let mut out = c.alloc::<u64, _>(total * 2).unwrap();
    out.fill_async(u64::MAX, &s).unwrap();
    k.launch(&s, LaunchConfig::new(g, b), (&mut out,)).unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for idx in 0..total {
        assert_eq!(got[idx * 2], idx as u64);
        assert!(got[idx * 2 + 1] < 32);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_errors_are_clear() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u32],)>::build("one", |k, (out,)| out.set(k.grid1(), 1u32)).unwrap();
    let mut out = c.zeros::<u32, _>(64).unwrap();
    let e = k
        .launch(&s, LaunchConfig::new(1, 2048), (&mut out,))
        .unwrap_err();
    assert!(e.to_string().contains("2048"), "{e}");
    let e = k
        .launch(&s, LaunchConfig::new(0, 32), (&mut out,))
        .unwrap_err();
    assert!(matches!(e, cudajit::Error::Launch(_)), "{e:?}");
    k.launch(&s, LaunchConfig::new(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.to_vec_async(&s).unwrap(), vec![1u32; 64]);
    let cfg = k.config_for_num_elems(&c, 1000).unwrap();
    assert!(cfg.grid.x * cfg.block.x >= 1000);
    let f = k.function(&c).unwrap();
    assert!(f.attributes().unwrap().num_regs > 0);
    assert!(
        k.compile_ptx_for_current_device().is_ok() || cudajit::current_context().unwrap().is_none()
    );
    fn _device_copy<T: DeviceCopy>() {}
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn vector_loads_with_a_scalar_tail() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add_v4_tail", |k, (x, y, out)| {
        let i = k.grid1();
        let n = out.len();
        k.if_(i.lt(n / 4u64), |_| {
            let (a, b) = (x.load_vec::<4>(i), y.load_vec::<4>(i));
            out.store_vec(i, [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]);
        });
        let t = (n / 4u64) * 4u64 + i;
        k.if_(t.lt(n), |_| out.set(t, x.at(t) + y.at(t)));
    })
    .unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 3, 4, 5, 1023, 1 << 20, (1 << 20) + 3] {
        let x: Vec<f32> = rng.vec(n, |r| r.f32());
        let y: Vec<f32> = rng.vec(n, |r| r.f32());
        let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
        let mut out = c.alloc::<f32, _>(n).unwrap();
        out.fill_async(f32::NAN, &s).unwrap();
        let threads = n.div_ceil(4).max(4);
        k.launch(
            &s,
            LaunchConfig::for_num_elems(threads, 256).unwrap(),
            (&dx, &dy, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            assert_eq!(got[i], x[i] + y[i], "n={n} i={i}");
        }
    }
    // A view that starts one element in is not 16-byte aligned: refused with a clear error.
    let x = c.to_device(&vec![1.0f32; 65]).unwrap();
    let y = c.to_device(&vec![1.0f32; 64]).unwrap();
    let mut out = c.zeros::<f32, _>(64).unwrap();
    let e = k
        .launch(
            &s,
            LaunchConfig::new(1, 32),
            (&x.slice(1..).unwrap(), &y, &mut out),
        )
        .unwrap_err();
    assert!(e.to_string().contains("aligned"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn threadfence_last_block_sums_the_partials() {
    // numba's threadfence example: each block publishes its partial sum, fences, takes a ticket;
    // the block with the last ticket sums every partial.
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &mut [f32], &mut [u32], &mut [f32])>::build(
        "last_block_sum",
        |k, (x, partials, counter, out)| {
            let tile = k.shared_array::<f32>(256);
            let last = k.shared_array::<bool>(1);
            let t = k.thread_idx().x;
            let i = k.grid1();
            tile.set(
                t,
                select(i.lt(x.len()), x.at(i.min(x.len() - 1u64)), 0.0f32),
            );
            k.syncthreads();
            let stride = k.var(128u32);
            k.while_(
                |_| stride.get().gt(0u32),
                |k| {
                    k.if_(t.lt(stride.get()), |_| {
                        tile.set(t, tile.at(t) + tile.at(t + stride.get()))
                    });
                    k.syncthreads();
                    stride.set(stride.get() >> 1u32);
                },
            );
            k.if_(t.eq(0u32), |k| {
                partials.set(k.block_idx().x, tile.at(0u32));
                k.threadfence();
                k.threadfence_block();
                k.threadfence_system();
                let ticket = counter.atomic_add(0u32, 1u32);
                last.set(0u32, ticket.eq(k.grid_dim().x - 1u32));
            });
            k.syncthreads();
            k.if_(last.at(0u32).and(t.eq(0u32)), |k| {
                let acc = k.var(0.0f32);
                k.for_range(0u32, k.grid_dim().x, |_, b| {
                    acc.set(acc.get() + partials.at(b))
                });
                out.set(0u32, acc.get());
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 1_000_000usize;
    let x: Vec<f32> = rng.vec(n, |r| (r.next_u64() % 16) as f32);
    let blocks = n.div_ceil(256);
    let dx = s.to_device(&x).unwrap();
    let mut partials = c.alloc::<f32, _>(blocks).unwrap();
    partials.fill_async(f32::NAN, &s).unwrap();
    let mut counter = c.zeros::<u32, _>(1).unwrap();
    let mut out = c.alloc::<f32, _>(1).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(blocks as u32, 256),
        (&dx, &mut partials, &mut counter, &mut out),
    )
    .unwrap();
    let want: f32 = x.iter().sum(); // small integers: exact in any order below 2^24
    assert_eq!(out.to_vec_async(&s).unwrap()[0], want);
    assert_eq!(counter.to_vec_async(&s).unwrap()[0], blocks as u32);
}

/// `launch_bounds`: the driver reports the kernel's thread limit, a launch within it runs, a
/// launch past it is an error naming the limit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_bounds_limit_the_block() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &mut [f32])>::build("bounded_twice", |k, (x, out)| {
        k.launch_bounds(128, 8);
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) * 2.0f32));
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 100_003;
    let x: Vec<f32> = rng.vec(n, |r| r.f32());
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f32, _>(n).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    let f = k.function(&c).unwrap();
    assert_eq!(f.attributes().unwrap().max_threads_per_block, 128);
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&dx, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], x[i] * 2.0, "i={i}");
    }
    let e = k
        .launch(
            &s,
            LaunchConfig::for_num_elems(n, 256).unwrap(),
            (&dx, &mut out),
        )
        .unwrap_err();
    assert!(e.to_string().contains("limit of 128 threads"), "{e}");
}

/// `for_step` stops as Rust's `step_by` does, also where `i + step` would wrap around
/// (it used to wrap and run ~2^31 more iterations); a run-time step of 0 runs the body once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn for_step_near_the_top_of_the_range_stops_like_rust() {
    let k = Kernel::<(&mut [u64], u32)>::build("for_step_top", |k, (out, zero)| {
        let (a, b, c, d, e) = (
            k.var(0u64),
            k.var(0u64),
            k.var(0u64),
            k.var(0u64),
            k.var(0u64),
        );
        k.for_step(u32::MAX - 5, u32::MAX, 2u32, |_, i| {
            a.set(a.get() * 16u64 + (u32::MAX - i).cast::<u64>())
        });
        k.for_step(i32::MAX - 6, i32::MAX, 3i32, |_, _| b.set(b.get() + 1u64));
        k.for_step(u64::MAX - 8, u64::MAX, 4u64, |_, _| c.set(c.get() + 1u64));
        k.for_step(i64::MIN, i64::MIN + 10, i64::MAX, |_, _| {
            d.set(d.get() + 1u64)
        });
        k.for_step(3u32, 9u32, zero, |_, _| e.set(e.get() + 1u64));
        out.set(0u32, a.get());
        out.set(1u32, b.get());
        out.set(2u32, c.get());
        out.set(3u32, d.get());
        out.set(4u32, e.get());
    })
    .unwrap();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut out = c.alloc::<u64, _>(5).unwrap();
    k.launch(&s, LaunchConfig::new(1, 1), (&mut out, 0u32))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    let a = ((u32::MAX - 5)..u32::MAX)
        .step_by(2)
        .fold(0u64, |acc, i| acc * 16 + (u32::MAX - i) as u64);
    let want = [
        a,
        ((i32::MAX - 6)..i32::MAX).step_by(3).count() as u64,
        ((u64::MAX - 8)..u64::MAX).step_by(4).count() as u64,
        (i64::MIN..i64::MIN + 10).step_by(i64::MAX as usize).count() as u64,
        1,
    ];
    assert_eq!(got, want);
}
