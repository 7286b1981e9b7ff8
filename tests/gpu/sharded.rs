//! Sharded arrays over every device of the machine (`Mesh::all`): on one GPU a mesh of one,
//! on two GPUs (or the simulator with `CUDAJIT_SIM_DEVICES=2`, as scripts/test.sh runs it)
//! shards on both. Every result is checked against a host model, outputs poisoned first.

use cudajit::ops::{Elem, Elementwise, Reduction, Scalar};
use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};
use ndarray::{Array2, IxDyn};

use crate::common::{same_f32, special_f32, Rng};

fn mesh() -> Mesh {
    let m = Mesh::all().expect("a mesh of every device");
    println!("mesh of {} device(s)", m.len());
    let required = crate::common::required_devices();
    assert!(
        m.len() >= required,
        "CUDAJIT_TEST_MIN_DEVICES={required}: a mesh of {} device(s)",
        m.len()
    );
    m
}

/// Lengths around the interesting edges: empty, fewer elements than devices, odd splits,
/// and past the size where host copies run one thread per device (16 MiB).
const LENGTHS: [usize; 6] = [0, 1, 3, 1001, 65_537, (16 << 20) / 4 + 5];

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_round_trip_splits_evenly_for_every_length() {
    let m = mesh();
    let mut rng = Rng::new();
    for n in LENGTHS {
        let host: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
        let x = ShardedArray::from_host(&m, &host).unwrap();
        assert_eq!(x.shape(), &[n]);
        assert_eq!(x.shards().len(), m.len());
        let mut start = 0;
        for k in 0..m.len() {
            let r = x.rows(k);
            assert_eq!(r.start, start);
            let want = n / m.len() + usize::from(k < n % m.len());
            assert_eq!(r.len(), want, "n={n}, shard {k}");
            assert_eq!(x.shards()[k].context().device(), m.context(k).device());
            assert_eq!(x.shards()[k].to_vec().unwrap(), &host[r.clone()]);
            start = r.end;
        }
        assert_eq!(x.to_vec().unwrap(), host, "n={n}");
        let mut back = vec![0xdead_beefu32; n];
        x.copy_to_host(&mut back).unwrap();
        assert_eq!(back, host);
        for k in 0..m.len() {
            let g = x.gather_to(k).unwrap();
            assert_eq!(g.context().device(), m.context(k).device());
            assert_eq!(
                g.to_vec_async(m.stream(k)).unwrap(),
                host,
                "gather to {k}, n={n}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_dimensional_arrays_split_by_rows() {
    let m = mesh();
    let mut rng = Rng::new();
    let host = Array2::from_shape_vec((7, 5), rng.vec(35, |r| r.f64())).unwrap();
    let mut x = ShardedArray::from_host(&m, &host).unwrap();
    assert_eq!(x.shape(), &[7, 5]);
    assert_eq!(x.to_array().unwrap(), host);
    assert_eq!(x.shards()[0].shape(), &[x.rows(0).len(), 5]);
    x.fill(-0.0).unwrap();
    assert!(x
        .to_vec()
        .unwrap()
        .iter()
        .all(|v| v.to_bits() == (-0.0f64).to_bits()));
    let wrong = vec![1.0; 34];
    let e = x.copy_from_host(&wrong).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    let z = ShardedArray::<i16, _>::zeros(&m, (3, 2)).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![0; 6]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_runs_on_every_shard_against_the_host() {
    let m = mesh();
    let mut rng = Rng::new();
    let ew =
        Elementwise::<(Elem<f32>, Elem<f32>, Scalar<f32>), _>::new("sh_diff_scale", |(a, b, s)| {
            (a - b, a * s)
        })
        .unwrap();
    for n in LENGTHS {
        let (ha, hb) = (special_f32(&mut rng, n), special_f32(&mut rng, n));
        let s = rng.f32() * 4.0;
        let a = ShardedArray::from_host(&m, &ha).unwrap();
        let b = ShardedArray::from_host(&m, &hb).unwrap();
        let mut d = ShardedArray::<f32>::alloc(&m, n).unwrap();
        let mut p = ShardedArray::<f32>::alloc(&m, n).unwrap();
        d.fill(f32::from_bits(0x7fc0_dead)).unwrap();
        p.fill(f32::from_bits(0x7fc0_dead)).unwrap();
        ew.apply_sharded((&a, &b, s), (&mut d, &mut p)).unwrap();
        let (gd, gp) = (d.to_vec().unwrap(), p.to_vec().unwrap());
        for i in 0..n {
            assert!(
                same_f32(gd[i], ha[i] - hb[i]),
                "n={n} i={i}: {} - {} gave {}",
                ha[i],
                hb[i],
                gd[i]
            );
            assert!(
                same_f32(gp[i], ha[i] * s),
                "n={n} i={i}: {} * {s} gave {}",
                ha[i],
                gp[i]
            );
        }
    }
    // A new output from call_sharded: the inputs' shape and split, IxDyn.
    let host: Vec<i32> = rng.vec(12_345, |r| r.next_u64() as i32);
    let x = ShardedArray::from_host(&m, &host).unwrap();
    let neg = Elementwise::<(Elem<i32>,), _>::new("sh_wrapping_neg", |(v,)| -v).unwrap();
    let y: ShardedArray<i32, IxDyn> = neg.call_sharded((&x,)).unwrap();
    assert_eq!(y.shape(), &[12_345]);
    let got = y.to_vec().unwrap();
    for (i, (&g, &h)) in got.iter().zip(&host).enumerate() {
        assert_eq!(g, h.wrapping_neg(), "i={i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_refuses_mismatched_sharded_arrays() {
    let m = mesh();
    let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("sh_add", |(a, b)| a + b).unwrap();
    let a = ShardedArray::from_host(&m, &vec![1.0f32; 10]).unwrap();
    let b = ShardedArray::from_host(&m, &vec![1.0f32; 11]).unwrap();
    let mut out = ShardedArray::<f32>::alloc(&m, 10).unwrap();
    let e = add.apply_sharded((&a, &b), &mut out).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
    assert!(e.to_string().contains("no broadcasting"), "{e}");
    // Another mesh over the same devices is another mesh.
    let other = mesh();
    let c = ShardedArray::from_host(&other, &vec![1.0f32; 10]).unwrap();
    let e = add.apply_sharded((&a, &c), &mut out).unwrap_err();
    assert!(e.to_string().contains("different meshes"), "{e}");
}

/// `f32` sum of `x` on the host in `f64`, and the sum of magnitudes (for the tolerance).
fn host_sum(x: &[f32]) -> (f64, f64) {
    x.iter().fold((0.0, 0.0), |(s, a), &v| {
        (s + v as f64, a + (v as f64).abs())
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_combine_every_shard_against_the_host() {
    let m = mesh();
    let mut rng = Rng::new();
    for n in LENGTHS {
        let h: Vec<f32> = rng.vec(n, |r| r.f32());
        let x = ShardedArray::from_host(&m, &h).unwrap();
        let (want, mag) = host_sum(&h);
        let got = x.sum().unwrap() as f64;
        assert!(
            (got - want).abs() <= 1e-5 * mag + 1e-6,
            "n={n}: sum {got} vs {want}"
        );
        let got64 = x.sum_f64().unwrap();
        assert!(
            (got64 - want).abs() <= 1e-9 * mag + 1e-12,
            "n={n}: sum_f64 {got64} vs {want}"
        );
        if n == 0 {
            assert_eq!(got, 0.0);
            assert_eq!(x.prod().unwrap(), 1.0);
            for e in [
                x.min().unwrap_err(),
                x.max().unwrap_err(),
                x.mean().unwrap_err(),
            ] {
                assert!(e.to_string().contains("empty"), "{e}");
            }
            continue;
        }
        let hmin = h.iter().copied().fold(f32::INFINITY, f32::min);
        let hmax = h.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(x.min().unwrap(), hmin, "n={n}");
        assert_eq!(x.max().unwrap(), hmax, "n={n}");
        let mean = x.mean().unwrap();
        assert!(
            (mean - want / n as f64).abs() <= 1e-9 * mag / n as f64 + 1e-12,
            "n={n}: mean {mean}"
        );
        // On the device, without a host wait until the read.
        let d = x.sum_to_device().unwrap();
        assert_eq!(d.context().device(), m.context(0).device());
        let dv = d.to_vec_async(m.stream(0)).unwrap()[0] as f64;
        assert!((dv - want).abs() <= 1e-5 * mag + 1e-6);
        let mut o = m.context(0).alloc::<f32, _>(1).unwrap();
        o.fill(f32::NAN).unwrap();
        x.sum_into(&mut o).unwrap();
        assert_eq!(
            o.to_vec_async(m.stream(0)).unwrap()[0] as f64,
            dv,
            "sum_into"
        );
        let mut two = m.context(0).alloc::<f32, _>(2).unwrap();
        assert!(matches!(
            x.sum_into(&mut two).unwrap_err(),
            Error::Shape { .. }
        ));
        if m.len() > 1 {
            let mut elsewhere = m.context(1).alloc::<f32, _>(1).unwrap();
            let e = x.sum_into(&mut elsewhere).unwrap_err();
            assert!(e.to_string().contains("first device"), "{e}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn min_max_propagate_nan_and_integer_sums_wrap() {
    let m = mesh();
    let mut rng = Rng::new();
    let n = 100_003;
    let mut h = special_f32(&mut rng, n);
    h.retain(|v| !v.is_nan());
    let x = ShardedArray::from_host(&m, &h).unwrap();
    assert_eq!(
        x.min().unwrap(),
        h.iter().copied().fold(f32::INFINITY, f32::min)
    );
    assert_eq!(
        x.max().unwrap(),
        h.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    );
    // A NaN in the last shard only.
    let mut h2 = h.clone();
    let last = h2.len() - 1;
    h2[last] = f32::NAN;
    let x2 = ShardedArray::from_host(&m, &h2).unwrap();
    assert!(x2.min().unwrap().is_nan() && x2.max().unwrap().is_nan());
    let hi: Vec<i32> = rng.vec(n, |r| r.next_u64() as i32);
    let xi = ShardedArray::from_host(&m, &hi).unwrap();
    let want = hi.iter().fold(0i32, |a, &v| a.wrapping_add(v));
    assert_eq!(xi.sum().unwrap(), want);
    let hu: Vec<u8> = rng.vec(n, |r| r.next_u64() as u8);
    let xu = ShardedArray::from_host(&m, &hu).unwrap();
    assert_eq!(
        xu.sum().unwrap(),
        hu.iter().fold(0u8, |a, &v| a.wrapping_add(v))
    );
    assert_eq!(xu.max().unwrap(), *hu.iter().max().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn custom_reduction_posts_once_with_the_whole_count() {
    let m = mesh();
    let mut rng = Rng::new();
    // Root mean square: map x*x, combine +, post sqrt(s / n) with n the whole array's count.
    let rms = Reduction::<f64, f64, f64>::new("sh_rms", |x| x * x, |a, b| a + b, 0.0)
        .unwrap()
        .post(|s, n| (s / n.cast::<f64>()).sqrt());
    for n in [1usize, 2, 5, 77_777] {
        let h: Vec<f64> = rng.vec(n, |r| r.f64());
        let x = ShardedArray::from_host(&m, &h).unwrap();
        let want = (h.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
        let got = x.reduce(&rms).unwrap();
        assert!(
            (got - want).abs() <= 1e-12 * want.max(1e-300),
            "n={n}: {got} vs {want}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn back_to_back_reductions_reuse_the_partial_slots_safely() {
    let m = mesh();
    let mut rng = Rng::new();
    let arrays: Vec<(Vec<i64>, ShardedArray<i64>)> = (0..6)
        .map(|i| {
            let h: Vec<i64> = rng.vec(200_000 + i * 77, |r| (r.next_u64() >> 20) as i64);
            let x = ShardedArray::from_host(&m, &h).unwrap();
            (h, x)
        })
        .collect();
    for _round in 0..5 {
        // Queue every sum before reading any: the slots are reused while earlier ones run.
        let outs: Vec<_> = arrays
            .iter()
            .map(|(_, x)| x.sum_to_device().unwrap())
            .collect();
        for ((h, _), d) in arrays.iter().zip(&outs) {
            let want = h.iter().fold(0i64, |a, &v| a.wrapping_add(v));
            assert_eq!(d.to_vec_async(m.stream(0)).unwrap()[0], want);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn arrays_from_existing_shards_with_any_rows() {
    let m = mesh();
    let lens: Vec<usize> = (0..m.len()).map(|k| 3 + 5 * k).collect();
    let mut shards = Vec::new();
    let mut host = Vec::new();
    for (k, &len) in lens.iter().enumerate() {
        let part: Vec<f32> = (0..len).map(|i| (k * 1000 + i) as f32).collect();
        shards.push(m.context(k).to_device(&part).unwrap());
        host.extend(part);
    }
    let x = ShardedArray::from_shards(&m, shards).unwrap();
    assert_eq!(x.len(), host.len());
    assert_eq!(x.to_vec().unwrap(), host);
    assert_eq!(x.gather_to(0).unwrap().to_vec().unwrap(), host);
    assert_eq!(x.sum().unwrap(), host.iter().sum::<f32>());
    // Too few shards, or a shard on the wrong device.
    let e = ShardedArray::<f32>::from_shards(&m, vec![]).unwrap_err();
    assert!(e.to_string().contains("one per device"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn meshes_refuse_bad_device_lists_and_join_streams() {
    let n = cudajit::device_count().unwrap();
    for (ords, text) in [
        (vec![], "at least one"),
        (vec![0, 0], "given twice"),
        (vec![n], "does not exist"),
    ] {
        let e = Mesh::new(&ords).unwrap_err();
        assert!(e.to_string().contains(text), "{ords:?}: {e}");
    }
    let m = mesh();
    assert_eq!(m.devices().len(), n);
    m.fork_from(0).unwrap();
    m.join_on(0).unwrap();
    assert!(m.join_on(n).is_err());
    m.synchronize().unwrap();
    println!(
        "{m:?}, peer access to the first: {:?}",
        (0..n)
            .map(|k| m.has_peer_access_to_first(k))
            .collect::<Vec<_>>()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_without_peer_access_copy_the_partials() {
    let n = cudajit::device_count().unwrap();
    let m = Mesh::without_peer_access(&(0..n).collect::<Vec<_>>()).unwrap();
    assert!((1..n).all(|k| !m.has_peer_access_to_first(k)));
    let mut rng = Rng::new();
    for len in [5usize, 100_001] {
        let h: Vec<i32> = rng.vec(len, |r| (r.next_u64() >> 40) as i32);
        let x = ShardedArray::from_host(&m, &h).unwrap();
        assert_eq!(
            x.sum().unwrap(),
            h.iter().fold(0i32, |a, &v| a.wrapping_add(v))
        );
        assert_eq!(x.max().unwrap(), *h.iter().max().unwrap());
        assert_eq!(x.gather_to(n - 1).unwrap().to_vec().unwrap(), h);
    }
}

/// NumPy's argmax/argmin: the first extreme, the first NaN if any.
fn host_arg(x: &[f32], largest: bool) -> u64 {
    let mut best = 0;
    for i in 1..x.len() {
        let (a, b) = (x[i], x[best]);
        if b.is_nan() {
            break;
        }
        if a.is_nan() || (largest && a > b) || (!largest && a < b) {
            best = i;
        }
    }
    best as u64
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn argmin_argmax_find_the_first_extreme_across_shards() {
    let m = mesh();
    let mut rng = Rng::new();
    for n in [1usize, 2, 3, 1001, 65_537] {
        // Few distinct values: ties across shards, so "first" matters.
        let mut h: Vec<f32> = rng.vec(n, |r| (r.next_u64() % 7) as f32 - 3.0);
        for pass in 0..3 {
            if pass == 1 {
                let i = (rng.next_u64() as usize) % n;
                h[i] = f32::NAN; // a NaN somewhere: it is the extreme
            }
            if pass == 2 {
                h[n - 1] = f32::NAN; // and one in the last shard (the first one still wins)
            }
            let x = ShardedArray::from_host(&m, &h).unwrap();
            assert_eq!(x.argmax().unwrap(), host_arg(&h, true), "n={n} pass {pass}");
            assert_eq!(
                x.argmin().unwrap(),
                host_arg(&h, false),
                "n={n} pass {pass}"
            );
            let mut o = m.context(0).alloc::<u64, _>(1).unwrap();
            o.fill(u64::MAX).unwrap();
            x.argmax_into(&mut o).unwrap();
            assert_eq!(o.to_vec_async(m.stream(0)).unwrap()[0], host_arg(&h, true));
        }
    }
    // A 2-D array: flat C-order indices.
    let h2: Vec<i32> = rng.vec(6 * 5, |r| (r.next_u64() % 1000) as i32);
    let x2 =
        ShardedArray::from_host(&m, &Array2::from_shape_vec((6, 5), h2.clone()).unwrap()).unwrap();
    let want = h2
        .iter()
        .enumerate()
        .max_by_key(|&(i, v)| (*v, std::cmp::Reverse(i)))
        .unwrap()
        .0;
    assert_eq!(x2.argmax().unwrap(), want as u64);
    let empty = ShardedArray::from_host(&m, &Vec::<f32>::new()).unwrap();
    assert!(empty.argmax().unwrap_err().to_string().contains("empty"));
    let nopeer = Mesh::without_peer_access(&(0..m.len()).collect::<Vec<_>>()).unwrap();
    let y = ShardedArray::from_host(&nopeer, &h2).unwrap();
    assert_eq!(y.argmax().unwrap(), want as u64, "without peer access");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axis_reductions_against_the_host() {
    let m = mesh();
    let mut rng = Rng::new();
    for (rows, cols) in [(1usize, 3usize), (2, 1), (7, 5), (1000, 33), (3, 70_000)] {
        let h: Vec<i64> = rng.vec(rows * cols, |r| (r.next_u64() >> 30) as i64 - (1 << 33));
        let host = Array2::from_shape_vec((rows, cols), h).unwrap();
        let x = ShardedArray::from_host(&m, &host).unwrap();
        // Along axis 1: split like the input.
        let s1 = x.sum_axis(1, false).unwrap();
        assert_eq!(s1.shape(), &[rows]);
        for k in 0..m.len() {
            assert_eq!(s1.rows(k), x.rows(k));
        }
        let want1: Vec<i64> = host.rows().into_iter().map(|r| r.iter().sum()).collect();
        assert_eq!(s1.to_vec().unwrap(), want1, "{rows}x{cols} axis 1");
        // Along axis 0: on the first device.
        let s0 = x.sum_axis(0, false).unwrap();
        assert_eq!(s0.shape(), &[cols]);
        assert_eq!(s0.rows(0), 0..cols);
        let want0: Vec<i64> = host.columns().into_iter().map(|c| c.iter().sum()).collect();
        assert_eq!(s0.to_vec().unwrap(), want0, "{rows}x{cols} axis 0");
        assert_eq!(s0.shards()[0].context().device(), m.context(0).device());
        let k0 = x.max_axis(0, true).unwrap();
        assert_eq!(k0.shape(), &[1, cols]);
        let wmax: Vec<i64> = host
            .columns()
            .into_iter()
            .map(|c| *c.iter().max().unwrap())
            .collect();
        assert_eq!(k0.to_vec().unwrap(), wmax);
        // The mean divides by the whole row count, once.
        let mean = x.mean_axis(0, false).unwrap().to_vec().unwrap();
        for (c, (&g, &s)) in mean.iter().zip(&want0).enumerate() {
            let w = s as f64 / rows as f64;
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "mean col {c}: {g} vs {w}"
            );
        }
    }
    // A 3-D f32 array with NaNs, along every axis.
    let h3: Vec<f32> = special_f32(&mut rng, 5 * 4 * 3);
    let host3 = ndarray::Array3::from_shape_vec((5, 4, 3), h3).unwrap();
    let x3 = ShardedArray::from_host(&m, &host3).unwrap();
    for axis in 0..3 {
        let got = x3.max_axis(axis, false).unwrap().to_vec().unwrap();
        let want: Vec<f32> = host3
            .lanes(ndarray::Axis(axis))
            .into_iter()
            .map(|l| {
                l.iter().copied().fold(f32::NEG_INFINITY, |a, b| {
                    if a.is_nan() || b.is_nan() {
                        f32::NAN
                    } else {
                        a.max(b)
                    }
                })
            })
            .collect();
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                same_f32(g, w) || (g == 0.0 && w == 0.0),
                "axis {axis} [{i}]: {g} vs {w}"
            );
        }
    }
    // Errors: an axis out of range, axis 0 of a 1-D array, an empty axis for max.
    let x1 = ShardedArray::from_host(&m, &vec![1.0f32; 9]).unwrap();
    assert!(x1
        .sum_axis(1, false)
        .unwrap_err()
        .to_string()
        .contains("out of range"));
    assert!(x1
        .sum_axis(0, false)
        .unwrap_err()
        .to_string()
        .contains("whole-array"));
    assert_eq!(x1.sum_axis(0, true).unwrap().to_vec().unwrap(), vec![9.0]);
    let e0 = ShardedArray::<f32, _>::zeros(&m, (0, 4)).unwrap();
    assert_eq!(
        e0.sum_axis(0, false).unwrap().to_vec().unwrap(),
        vec![0.0; 4]
    );
    assert!(e0
        .max_axis(0, false)
        .unwrap_err()
        .to_string()
        .contains("empty"));
    let nopeer = Mesh::without_peer_access(&(0..m.len()).collect::<Vec<_>>()).unwrap();
    let host = Array2::from_shape_fn((9, 4), |(r, c)| (r * 10 + c) as i32);
    let y = ShardedArray::from_host(&nopeer, &host).unwrap();
    let want: Vec<i32> = host.columns().into_iter().map(|c| c.iter().sum()).collect();
    assert_eq!(
        y.sum_axis(0, false).unwrap().to_vec().unwrap(),
        want,
        "without peer access"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn replicated_inputs_broadcast_against_every_shard() {
    use cudajit::sharded::Replicated;
    let m = mesh();
    let mut rng = Rng::new();
    let (rows, cols) = (1001usize, 7usize);
    let hx = Array2::from_shape_vec((rows, cols), special_f32(&mut rng, rows * cols)).unwrap();
    let hb = special_f32(&mut rng, cols);
    let x = ShardedArray::from_host(&m, &hx).unwrap();
    let bias = Replicated::from_host(&m, &hb).unwrap();
    assert_eq!(bias.shape(), &[cols]);
    assert_eq!(bias.copies().len(), m.len());
    let add = Elementwise::<(Elem<f32>, Elem<f32>), _>::new("sh_add_bias", |(v, b)| v + b).unwrap();
    let y = add.call_sharded((&x, &bias)).unwrap();
    assert_eq!(y.shape(), &[rows, cols]);
    let got = y.to_vec().unwrap();
    for r in 0..rows {
        for c in 0..cols {
            let want = hx[[r, c]] + hb[c];
            assert!(
                same_f32(got[r * cols + c], want),
                "[{r}, {c}]: {} vs {want}",
                got[r * cols + c]
            );
        }
    }
    // From a device array on device 0, copied to every device.
    let d = m.context(0).to_device(&hb).unwrap();
    let bias2 = Replicated::from_device(&m, &d).unwrap();
    let mut out = ShardedArray::<f32, _>::alloc(&m, (rows, cols)).unwrap();
    out.fill(f32::from_bits(0x7fc0_dead)).unwrap();
    add.apply_sharded((&x, &bias2), &mut out).unwrap();
    assert_eq!(
        out.to_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // A replicated input on another mesh is refused.
    let other = mesh();
    let bias3 = Replicated::from_host(&other, &hb).unwrap();
    let e = add.apply_sharded((&x, &bias3), &mut out).unwrap_err();
    assert!(e.to_string().contains("another mesh"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn index_counts_over_the_whole_sharded_array() {
    use cudajit::codegen::Expr;
    use cudajit::ops::Index;
    use cudajit::random::Philox;
    use cudajit::sharded::Replicated;
    let m = mesh();
    let mut rng = Rng::new();
    // The index itself, for every length (odd splits, empty shards, the vector and tail paths).
    let idx = Elementwise::<(Elem<f32>, Index), _>::new("sh_index", |(_x, i)| i).unwrap();
    for n in LENGTHS {
        let x = ShardedArray::from_host(&m, &special_f32(&mut rng, n)).unwrap();
        let mut out = ShardedArray::<u64>::alloc(&m, n).unwrap();
        out.fill(u64::MAX).unwrap();
        idx.apply_sharded((&x, Index), &mut out).unwrap();
        let got = out.to_vec().unwrap();
        for (i, &g) in got.iter().enumerate() {
            assert_eq!(g, i as u64, "n={n}: element {i}");
        }
    }
    // Counter-based random numbers: the same as one device's for the same seed, every element.
    let seed = rng.next_u64();
    let noisy = Elementwise::<(Elem<f32>, Index, Scalar<u64>), Expr<f32>>::new(
        "sh_noisy",
        |(x, i, seed)| x + Philox::new(seed).uniform_f32(i),
    )
    .unwrap();
    let n = 65_537;
    let hx = special_f32(&mut rng, n);
    let x = ShardedArray::from_host(&m, &hx).unwrap();
    let y = noisy.call_sharded((&x, Index, seed)).unwrap();
    let ctx = m.context(0);
    let s = ctx.new_stream().unwrap();
    let dx = ctx.to_device(&hx).unwrap();
    let mut want = ctx.alloc::<f32, _>(n).unwrap();
    noisy.apply(&s, (&dx, Index, seed), &mut want).unwrap();
    let (got, want) = (y.to_vec().unwrap(), want.to_vec_async(&s).unwrap());
    for i in 0..n {
        assert!(
            same_f32(got[i], want[i]),
            "i={i}: {} vs {}",
            got[i],
            want[i]
        );
    }
    // Broadcasting (a replicated row against a sharded matrix): the output's flat index.
    let (rows, cols) = (1001usize, 7usize);
    let hm = Array2::from_shape_vec((rows, cols), special_f32(&mut rng, rows * cols)).unwrap();
    let xm = ShardedArray::from_host(&m, &hm).unwrap();
    let row = Replicated::from_host(&m, &special_f32(&mut rng, cols)).unwrap();
    let flat =
        Elementwise::<(Elem<f32>, Elem<f32>, Index), _>::new("sh_bcast_index", |(_x, _r, i)| i)
            .unwrap();
    let got = flat
        .call_sharded((&xm, &row, Index))
        .unwrap()
        .to_vec()
        .unwrap();
    for (i, &g) in got.iter().enumerate() {
        assert_eq!(g, i as u64, "[{}, {}]", i / cols, i % cols);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scans_run_over_the_whole_sharded_array() {
    use cudajit::codegen::select;
    use cudajit::ops::{Scan, ScanKind};
    let m = mesh();
    let mut rng = Rng::new();
    // A running maximum that keeps a NaN (exactly associative): bit for bit, special values.
    let cummax = Scan::<f32>::new(
        "sh_cummax",
        |a, b| select(a.gt(b).or(a.ne(a)), a, b),
        f32::NEG_INFINITY,
    )
    .unwrap();
    let host_max = |a: f32, b: f32| if a > b || a.is_nan() { a } else { b };
    for n in LENGTHS {
        let hx = special_f32(&mut rng, n);
        let x = ShardedArray::from_host(&m, &hx).unwrap();
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
            let got = x.scan(&cummax, kind).unwrap();
            assert_eq!(got.shape(), &[n]);
            let got = got.to_vec().unwrap();
            let mut acc = f32::NEG_INFINITY;
            for i in 0..n {
                let want = match kind {
                    ScanKind::Inclusive => host_max(acc, hx[i]),
                    ScanKind::Exclusive => acc,
                };
                assert!(
                    same_f32(got[i], want),
                    "n={n} {kind:?} i={i}: {} vs {want}",
                    got[i]
                );
                acc = host_max(acc, hx[i]);
            }
        }
    }
    // Integer sums wrap and are exact: every element against the host's, MIN/MAX included.
    for n in LENGTHS {
        let hx: Vec<i32> = rng.vec(n, |r| match r.next_u64() % 8 {
            0 => i32::MAX,
            1 => i32::MIN,
            _ => r.next_u64() as i32,
        });
        let x = ShardedArray::from_host(&m, &hx).unwrap();
        let (inc, exc) = (x.cumsum().unwrap(), x.cumsum_exclusive().unwrap());
        let (inc, exc) = (inc.to_vec().unwrap(), exc.to_vec().unwrap());
        let mut acc = 0i32;
        for i in 0..n {
            assert_eq!(exc[i], acc, "n={n} exclusive i={i}");
            acc = acc.wrapping_add(hx[i]);
            assert_eq!(inc[i], acc, "n={n} inclusive i={i}");
        }
    }
    // f32 sums of a 2-D array (values in [0, 1]: no cancellation), in C order across the
    // shards, against a float64 running sum.
    let (rows, cols) = (1001usize, 257usize);
    let hm: Vec<f32> = rng.vec(rows * cols, |r| r.f32().abs());
    let x = ShardedArray::from_host(
        &m,
        &Array2::from_shape_vec((rows, cols), hm.clone()).unwrap(),
    )
    .unwrap();
    let mut out = ShardedArray::<f32, _>::alloc(&m, (rows, cols)).unwrap();
    out.fill(f32::NAN).unwrap();
    let sum = Scan::<f32>::new("sh_sum", |a, b| a + b, -0.0).unwrap();
    x.scan_into(&sum, ScanKind::Inclusive, &mut out).unwrap();
    let got = out.to_vec().unwrap();
    let mut acc = 0f64;
    for (i, (&g, &h)) in got.iter().zip(&hm).enumerate() {
        acc += h as f64;
        assert!(
            ((g as f64 - acc) / acc.max(1e-30)).abs() < 1e-5,
            "[{}, {}]: {g} vs {acc}",
            i / cols,
            i % cols
        );
    }
    // Along axis 1 every device scans its own rows (exact: integers); axis 0 is refused.
    let hi: Vec<i64> = rng.vec(rows * cols, |r| r.next_u64() as i64);
    let xi = ShardedArray::from_host(
        &m,
        &Array2::from_shape_vec((rows, cols), hi.clone()).unwrap(),
    )
    .unwrap();
    let gi = xi.cumsum_axis(1).unwrap();
    assert_eq!(gi.shape(), &[rows, cols]);
    let gi = gi.to_vec().unwrap();
    for r in 0..rows {
        let mut acc = 0i64;
        for c in 0..cols {
            acc = acc.wrapping_add(hi[r * cols + c]);
            assert_eq!(gi[r * cols + c], acc, "axis 1 [{r}, {c}]");
        }
    }
    let e = xi.cumsum_axis(0).unwrap_err();
    assert!(e.to_string().contains("axis 0"), "{e}");
    assert!(xi.cumsum_axis(2).is_err());
    // The output must have the input's shape and split; a 1-D output of 2-D data is refused.
    let mut flat = ShardedArray::<f32>::alloc(&m, rows * cols).unwrap();
    let e = x
        .scan_into(&sum, ScanKind::Inclusive, &mut flat)
        .unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    // Without peer access the totals are copied to each device first.
    let nopeer = Mesh::without_peer_access(&(0..m.len()).collect::<Vec<_>>()).unwrap();
    let hx: Vec<u32> = rng.vec(65_537, |r| r.next_u64() as u32);
    let got = ShardedArray::from_host(&nopeer, &hx)
        .unwrap()
        .cumsum()
        .unwrap()
        .to_vec()
        .unwrap();
    let mut acc = 0u32;
    for (i, (&g, &h)) in got.iter().zip(&hx).enumerate() {
        acc = acc.wrapping_add(h);
        assert_eq!(g, acc, "no peer access: i={i}");
    }
}
