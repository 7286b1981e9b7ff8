//! n-D shared and local arrays (issue 24): a tiled transpose and a 16x16 tiled matmul
//! through 2-D shared tiles, a 3-D local array, shaped views of the dynamic shared memory,
//! atomics on a 2-D shared array, each checked element by element against a host model on
//! random inputs (outputs poisoned first); an index outside one dimension is a fault on the
//! simulator; a kernel over the device's static shared-memory limit is refused when it is
//! loaded, saying what to do, and the same tile as dynamic shared memory runs.

use cudajit::codegen::{select, Expr, Kernel, NdMut, NdRef};
use cudajit::prelude::*;
use cudajit::{FaultKind, LaunchError};
use ndarray::Array2;

use crate::common::{ctx, special_f32, Rng};

/// A value no kernel here writes: an element left at it was not written.
const POISON: f32 = -7.777e29;

#[test]
#[ignore = "needs a CUDA GPU"]
fn transpose_through_a_2d_shared_tile() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("transpose_nd", |k, (a, b)| {
        let tile = k.shared_array2::<f32>(16, 17);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 16u32, k.block_idx().y * 16u32);
        let (rows, cols) = (a.dim(0), a.dim(1));
        let (r, cl) = ((by + ty).cast::<u64>(), (bx + tx).cast::<u64>());
        k.if_(r.lt(rows).and(cl.lt(cols)), |_| {
            tile.set2(ty, tx, a.at2(r, cl))
        });
        k.syncthreads();
        let (r2, c2) = ((bx + ty).cast::<u64>(), (by + tx).cast::<u64>());
        k.if_(r2.lt(cols).and(c2.lt(rows)), |_| {
            b.set2(r2, c2, tile.at2(tx, ty))
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    for (rows, cols) in [(1usize, 1usize), (16, 16), (33, 65), (300, 177)] {
        let v = special_f32(&mut rng, rows * cols);
        let a = Array2::from_shape_vec((rows, cols), v).unwrap();
        let da = s.to_device(&a).unwrap();
        let mut db = c.alloc::<f32, _>((cols, rows)).unwrap();
        db.fill_async(POISON, &s).unwrap();
        let cfg = LaunchConfig::new(
            (cols.div_ceil(16) as u32, rows.div_ceil(16) as u32),
            (16, 16),
        );
        k.launch(&s, cfg, (&da, &mut db)).unwrap();
        let got = db.to_array_async(&s).unwrap();
        for ((j, i), g) in got.indexed_iter() {
            let want = a[(i, j)];
            assert_eq!(
                g.to_bits(),
                want.to_bits(),
                "{rows}x{cols}: b[{j}][{i}] = {g:e}, want {want:e}"
            );
        }
    }
}

/// `got` is `want` up to the rounding of a different summation or a fused multiply-add
/// (`scale`: the sum of the products' magnitudes); NaN and infinities exactly.
fn close(got: f32, want: f32, scale: f32) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    got == want || (want.is_finite() && (got - want).abs() <= 1e-5 * scale + f32::MIN_POSITIVE)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matmul_with_16x16_shared_tiles() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(NdRef<f32, 2>, NdRef<f32, 2>, NdMut<f32, 2>)>::build(
        "matmul16",
        |k, (a, b, out)| {
            let (sa, sb) = (
                k.shared_array2::<f32>(16, 16),
                k.shared_array2::<f32>(16, 16),
            );
            let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
            let row = (k.block_idx().y * 16u32 + ty).cast::<u64>();
            let col = (k.block_idx().x * 16u32 + tx).cast::<u64>();
            let (m, kk, n) = (a.dim(0), a.dim(1), b.dim(1));
            let acc = k.var(0.0f32);
            k.for_range(0u64, (kk + 15u64) / 16u64, |k, t| {
                let (ac, br) = (t * 16u64 + tx.cast::<u64>(), t * 16u64 + ty.cast::<u64>());
                sa.set2(ty, tx, 0.0f32);
                sb.set2(ty, tx, 0.0f32);
                k.if_(row.lt(m).and(ac.lt(kk)), |_| {
                    sa.set2(ty, tx, a.at2(row, ac))
                });
                k.if_(br.lt(kk).and(col.lt(n)), |_| {
                    sb.set2(ty, tx, b.at2(br, col))
                });
                k.syncthreads();
                k.for_range(0u32, 16u32, |_, e| {
                    acc.set(acc.get() + sa.at2(ty, e) * sb.at2(e, tx))
                });
                k.syncthreads();
            });
            k.if_(row.lt(m).and(col.lt(n)), |_| out.set2(row, col, acc.get()));
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    for (m, kk, n) in [(1usize, 1usize, 1usize), (16, 16, 16), (50, 45, 37)] {
        let mut a = Array2::from_shape_fn((m, kk), |_| rng.f32());
        let mut b = Array2::from_shape_fn((kk, n), |_| rng.f32() * 4.0);
        // A few special values: the rows and columns they reach become NaN, infinite or keep
        // their sign of zero, the rest stays finite.
        let specials = [f32::NAN, f32::INFINITY, -0.0, f32::from_bits(1), f32::MAX];
        for (q, &v) in specials.iter().enumerate() {
            a[((q * 7) % m, (q * 5) % kk)] = v;
            b[((q * 3 + 1) % kk, (q * 11) % n)] = -v;
        }
        let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
        let mut dc = c.alloc::<f32, _>((m, n)).unwrap();
        dc.fill_async(POISON, &s).unwrap();
        let cfg = LaunchConfig::new((n.div_ceil(16) as u32, m.div_ceil(16) as u32), (16, 16));
        k.launch(&s, cfg, (&da, &db, &mut dc)).unwrap();
        let got = dc.to_array_async(&s).unwrap();
        // The kernel's order: k ascending, with the zero padding of the last tile, each step
        // one fused multiply-add.
        for ((i, j), &g) in got.indexed_iter() {
            let (mut want, mut scale) = (0.0f32, 0.0f32);
            for e in 0..kk.div_ceil(16) * 16 {
                let (x, y) = if e < kk {
                    (a[(i, e)], b[(e, j)])
                } else {
                    (0.0, 0.0)
                };
                want = x.mul_add(y, want); // `acc + a * b`: contracted (fma)
                scale += (x * y).abs();
            }
            assert!(
                close(g, want, scale),
                "{m}x{kk}x{n}: c[{i}][{j}] = {g:e}, want {want:e}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn local_3d_array_per_thread() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u32], u32)>::build("local3", |k, (out, salt)| {
        let m = k.local_array3::<u32>(2, 3, 4);
        let i = k.grid1();
        let seed = i.cast::<u32>() ^ salt;
        k.for_range(0u32, 2u32, |k, a| {
            k.for_range(0u32, 3u32, |k, b| {
                k.for_range(0u32, 4u32, |_, e| {
                    m.set3(a, b, e, seed * 31u32 + a * 100u32 + b * 10u32 + e)
                })
            })
        });
        let j = seed % 24u32;
        k.if_(i.lt(out.len()), |_| {
            // An n-D read, and a flat one of the same array.
            let v = m.at3(j % 2u32, j / 2u32 % 3u32, j / 6u32 % 4u32);
            out.set(i, v + m.at(23u32 - j) * 2u32 + m.dim(1).cast::<u32>());
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let salt = rng.next_u64() as u32;
    let n = 1000usize;
    let mut out = c.alloc::<u32, _>(n).unwrap();
    out.fill_async(0xdead_beef, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&mut out, salt),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for (i, &g) in got.iter().enumerate() {
        let seed = i as u32 ^ salt;
        let m = |a: u32, b: u32, e: u32| seed.wrapping_mul(31).wrapping_add(a * 100 + b * 10 + e);
        let j = seed % 24;
        let f = 23 - j;
        let want = m(j % 2, j / 2 % 3, j / 6 % 4)
            .wrapping_add(m(f / 12, f / 4 % 3, f % 4).wrapping_mul(2))
            .wrapping_add(3);
        assert_eq!(g, want, "thread {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_shared_memory_viewed_in_2d_and_3d() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // A transpose whose tile side is a parameter: the tile is (t, t + 1) f64 of dynamic
    // shared memory.
    let tr =
        Kernel::<(NdRef<f64, 2>, NdMut<f64, 2>, u32)>::build("transpose_dyn", |k, (a, b, t)| {
            let tile = k.dynamic_shared2::<f64>(t, t + 1u32);
            let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
            let (bx, by) = (k.block_idx().x * t, k.block_idx().y * t);
            let (rows, cols) = (a.dim(0), a.dim(1));
            let (r, cl) = ((by + ty).cast::<u64>(), (bx + tx).cast::<u64>());
            k.if_(r.lt(rows).and(cl.lt(cols)), |_| {
                tile.set2(ty, tx, a.at2(r, cl))
            });
            k.syncthreads();
            let (r2, c2) = ((bx + ty).cast::<u64>(), (by + tx).cast::<u64>());
            k.if_(r2.lt(cols).and(c2.lt(rows)), |_| {
                // The view's extent is the launch's value.
                let extent_ok = tile.dim(1).eq((t + 1u32).cast::<u64>());
                b.set2(r2, c2, select(extent_ok, tile.at2(tx, ty), f64::NAN))
            });
        })
        .unwrap();
    let mut rng = Rng::new();
    for (t, rows, cols) in [(8u32, 20usize, 13usize), (16, 70, 33)] {
        let a = Array2::from_shape_fn((rows, cols), |_| rng.f64());
        let da = s.to_device(&a).unwrap();
        let mut db = c.alloc::<f64, _>((cols, rows)).unwrap();
        db.fill_async(POISON as f64, &s).unwrap();
        let tb = t as usize;
        let cfg = LaunchConfig::new((cols.div_ceil(tb) as u32, rows.div_ceil(tb) as u32), (t, t))
            .with_shared_mem(t * (t + 1) * 8);
        tr.launch(&s, cfg, (&da, &mut db, t)).unwrap();
        assert_eq!(db.to_array_async(&s).unwrap(), a.t().to_owned(), "tile {t}");
    }

    // Two stages of a (2, h, w) i32 buffer: each thread writes its value to stage 0, its
    // negation to stage 1, and reads both back from its mirror thread.
    let st = Kernel::<(&mut [i32], u32, u32)>::build("stages_dyn", |k, (out, h, w)| {
        let buf = k.dynamic_shared3::<i32>(2u32, h, w);
        let (x, y) = (k.thread_idx().x, k.thread_idx().y);
        let v = (y * w + x).cast::<i32>() * 3i32 + 1i32;
        buf.set3(0u32, y, x, v);
        buf.set3(1u32, y, x, -v);
        k.syncthreads();
        let (my, mx) = (h - 1u32 - y, w - 1u32 - x);
        out.set(
            buf.index3(0u32, y, x),
            buf.at3(0u32, my, mx) * 1000i32 + buf.at3(1u32, my, mx),
        );
    })
    .unwrap();
    let (h, w) = (5u32, 7u32);
    let mut out = c.alloc::<i32, _>((h * w) as usize).unwrap();
    out.fill_async(i32::MIN, &s).unwrap();
    let cfg = LaunchConfig::new(1, (w, h)).with_shared_mem(2 * h * w * 4);
    st.launch(&s, cfg, (&mut out, h, w)).unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for y in 0..h {
        for x in 0..w {
            let v = (((h - 1 - y) * w + (w - 1 - x)) * 3 + 1) as i32;
            assert_eq!(got[(y * w + x) as usize], v * 1000 - v, "[{y}][{x}]");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn atomics_on_a_2d_shared_histogram() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u8], &[u8], &mut [u32])>::build("hist2d", |k, (a, b, out)| {
        let h = k.shared_array2::<u32>(16, 16);
        let t = k.thread_idx().x; // 256 threads: one bin each
        h.set2(t / 16u32, t % 16u32, 0u32);
        k.syncthreads();
        k.for_step(k.grid1(), a.len(), k.gridsize1(), |_, i| {
            let (x, y) = (a.at(i) >> 4u8, b.at(i) & 15u8);
            h.atomic_add(h.index2(x, y), 1u32);
        });
        k.syncthreads();
        out.atomic_add(t, h.at2(t / 16u32, t % 16u32));
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 100_000;
    let (a, b) = (
        rng.vec(n, |r| r.next_u64() as u8),
        rng.vec(n, |r| r.next_u64() as u8),
    );
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut out = c.zeros::<u32, _>(256).unwrap();
    k.launch(&s, LaunchConfig::new(8, 256), (&da, &db, &mut out))
        .unwrap();
    let mut want = vec![0u32; 256];
    for (x, y) in a.iter().zip(&b) {
        want[(x >> 4) as usize * 16 + (y & 15) as usize] += 1;
    }
    assert_eq!(out.to_vec_async(&s).unwrap(), want);
}

/// Threads 0..24 each write `tile[t / 8][t % 8 + 1]` of a 4 x 8 tile: thread 7 writes
/// `[0][8]`, outside dimension 1, though its flat index (8, the next row's first element) is
/// inside the tile. The GPU checks nothing (the kernel runs, writing the flat element); the
/// simulator stops it with a fault naming the dimension, the index and the extent.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_index_outside_one_dimension_is_a_fault_on_the_simulator() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u32],)>::build("row_overrun", |k, (out,)| {
        let tile = k.shared_array2::<u32>(4, 8);
        let t = k.thread_idx().x;
        tile.set2(t / 8u32, t % 8u32 + 1u32, t);
        k.syncthreads();
        out.set(t, tile.at(t + 1u32));
    })
    .unwrap();
    let mut out = c.alloc::<u32, _>(24).unwrap();
    out.fill_async(u32::MAX, &s).unwrap();
    let r = k.launch(&s, LaunchConfig::new(1, 24), (&mut out,));
    if cudajit::on_simulator() {
        match r {
            Err(Error::Fault {
                kernel,
                kind,
                message,
            }) => {
                assert_eq!(
                    (kernel.as_str(), kind),
                    ("row_overrun", FaultKind::OutOfBounds)
                );
                assert!(
                    message.contains(
                        "thread (7, 0, 0) of block (0, 0, 0) indexes element [0, 8] of shared \
                         array 0 (u32[4][8]): index 8 of dimension 1 is outside its extent 8"
                    ) && message.contains("tests/gpu/shared_nd.rs"),
                    "{message}"
                );
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        // The context stays usable.
        out.fill_async(1, &s).unwrap();
        assert_eq!(out.to_vec_async(&s).unwrap(), vec![1; 24]);
    } else {
        r.unwrap();
        let want: Vec<u32> = (0..24).collect();
        assert_eq!(out.to_vec_async(&s).unwrap(), want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn static_shared_memory_over_the_device_limit_is_refused_saying_what_to_do() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let limit = c.device().max_shared_memory_per_block().unwrap();
    let optin = c.device().max_shared_memory_per_block_optin().unwrap();
    // 128 KiB: the simulator used to run it; the GPU refuses any static shared memory over
    // 48 KiB.
    let (rows, cols) = (256u32, 128u32);
    let big = Kernel::<(&mut [f32],)>::build("too_much_shared", |k, (out,)| {
        let t = k.shared_array2::<f32>(rows as usize, cols as usize);
        let i = k.thread_idx().x;
        t.set2(i, 0u32, i.cast::<f32>());
        k.syncthreads();
        out.set(i, t.at2(Expr::from(rows - 1) - i, 0u32));
    })
    .unwrap();
    let mut out = c.alloc::<f32, _>(rows as usize).unwrap();
    out.fill_async(POISON, &s).unwrap();
    let e = big
        .launch(&s, LaunchConfig::new(1, rows), (&mut out,))
        .unwrap_err();
    let m = match &e {
        Error::Launch(LaunchError::SharedMemory { message }) => message.clone(),
        other => panic!("expected a shared-memory launch error, got {other:?}: {other}"),
    };
    for part in [
        "kernel `too_much_shared` declares 131072 bytes (128.0 KiB) of static shared memory"
            .to_string(),
        format!("over the device's limit of {limit} bytes"),
        "dynamic shared memory".to_string(),
        "smaller tiles".to_string(),
    ] {
        assert!(m.contains(&part), "{part:?} not in: {m}");
    }
    assert!(big.function(&c).is_err());

    // Exactly the limit loads and runs.
    let (r48, c48) = (limit / 4 / 128, 128u32);
    let at_limit = Kernel::<(&mut [f32],)>::build("shared_at_limit", |k, (out,)| {
        let t = k.shared_array2::<f32>(r48 as usize, c48 as usize);
        let i = k.thread_idx().x;
        t.set2(i, c48 - 1, i.cast::<f32>());
        k.syncthreads();
        out.set(i, t.at2(Expr::from(r48 - 1) - i, c48 - 1));
    })
    .unwrap();
    let mut o48 = c.alloc::<f32, _>(r48 as usize).unwrap();
    o48.fill_async(POISON, &s).unwrap();
    at_limit
        .launch(&s, LaunchConfig::new(1, r48), (&mut o48,))
        .unwrap();
    let want: Vec<f32> = (0..r48).rev().map(|v| v as f32).collect();
    assert_eq!(o48.to_vec_async(&s).unwrap(), want);

    // What the message says to do: the same tile as dynamic shared memory, opted in.
    let bytes = rows * cols * 4;
    assert!(optin >= bytes, "device opt-in limit {optin}");
    let dynamic = Kernel::<(&mut [f32], u32, u32)>::build("dyn_tile", |k, (out, r, cl)| {
        let t = k.dynamic_shared2::<f32>(r, cl);
        let i = k.thread_idx().x;
        t.set2(i, 0u32, i.cast::<f32>());
        k.syncthreads();
        out.set(i, t.at2(r - 1u32 - i, 0u32));
    })
    .unwrap();
    dynamic
        .function(&c)
        .unwrap()
        .set_max_dynamic_shared_memory(bytes)
        .unwrap();
    dynamic
        .launch(
            &s,
            LaunchConfig::new(1, rows).with_shared_mem(bytes),
            (&mut out, rows, cols),
        )
        .unwrap();
    let want: Vec<f32> = (0..rows).rev().map(|v| v as f32).collect();
    assert_eq!(out.to_vec_async(&s).unwrap(), want);
}
