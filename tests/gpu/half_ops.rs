//! The 16-bit floats in atomics (under contention: sums of small integers, exact), shuffles,
//! half2 vector accesses, device functions and local arrays, and the ops kernels: Elementwise,
//! sum/max reductions and cumulative sums (sums accumulate in f32, rounded once). Host models
//! and generators: `half.rs`.

use cudajit::codegen::{DeviceFn, Kernel, FULL_MASK};
use cudajit::ops::{ArrayOps, Elem, Elementwise, ReduceOps, Scalar, ScanOps};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

use crate::common::{ctx, Rng};
use crate::half::{poison, random, round_exact, round_f64, same, Half};

fn atomics<H: Half>(rng: &mut Rng) {
    let name = H::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    // 16 slots (8 in each of two 32-bit words' worth, neighbours in one word), every thread
    // adds a small integer to one slot and takes part in the max; sums stay below 256 so
    // they are exact in both types.
    let slots = 16usize;
    let k = Kernel::<(&[u32], &[H], &mut [H], &mut [H], &mut [H])>::build(
        &format!("half_atomics_{name}"),
        |k, (slot, v, sums, maxes, nanmins)| {
            let i = k.grid1();
            k.if_(i.lt(v.len()), |_| {
                let j = slot.at(i);
                sums.atomic_add(j, v.at(i));
                sums.atomic_sub(j + 16u32, v.at(i));
                maxes.atomic_max(j, v.at(i));
                nanmins.atomic_nanmin(j, v.at(i));
            });
        },
    )
    .unwrap();
    let n = 2000usize;
    let slot: Vec<u32> = rng.vec(n, |r| (r.next_u64() % slots as u64) as u32);
    let vals: Vec<H> = rng.vec(n, |r| H::from_f32((r.next_u64() % 3) as f32));
    // Keep each slot's total at most 255.
    let mut totals = vec![0u32; slots];
    let vals: Vec<H> = vals
        .iter()
        .zip(&slot)
        .map(|(v, &j)| {
            let add = v.to_f32() as u32;
            if totals[j as usize] + add > 255 {
                H::from_f32(0.0)
            } else {
                totals[j as usize] += add;
                *v
            }
        })
        .collect();
    let (ds, dv) = (s.to_device(&slot).unwrap(), s.to_device(&vals).unwrap());
    let mut sums = s.to_device(&vec![H::from_f32(0.0); 2 * slots]).unwrap();
    let mut maxes = s.to_device(&vec![H::from_f32(-1.0); slots]).unwrap();
    let mut nanmins = s.to_device(&vec![H::from_f32(f32::NAN); slots]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&ds, &dv, &mut sums, &mut maxes, &mut nanmins),
    )
    .unwrap();
    let (sums, maxes, nanmins) = (
        sums.to_vec_async(&s).unwrap(),
        maxes.to_vec_async(&s).unwrap(),
        nanmins.to_vec_async(&s).unwrap(),
    );
    for j in 0..slots {
        let mine: Vec<f32> = (0..n)
            .filter(|&i| slot[i] as usize == j)
            .map(|i| vals[i].to_f32())
            .collect();
        let total: f32 = mine.iter().sum();
        assert_eq!(sums[j].to_f32(), total, "{name} atomic_add, slot {j}");
        assert_eq!(
            sums[j + slots].to_f32(),
            -total,
            "{name} atomic_sub, slot {j}"
        );
        let mx = mine.iter().copied().fold(-1.0f32, f32::max);
        assert_eq!(maxes[j].to_f32(), mx, "{name} atomic_max, slot {j}");
        let mn = mine.iter().copied().fold(f32::NAN, f32::min);
        assert!(
            same(nanmins[j], H::from_f32(mn)),
            "{name} atomic_nanmin, slot {j}: {:?}",
            nanmins[j]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_atomics_under_contention_are_exact() {
    let mut rng = Rng::new();
    atomics::<f16>(&mut rng);
    atomics::<bf16>(&mut rng);
}

fn shuffles_and_vectors<H: Half>(rng: &mut Rng) {
    const WARP: usize = 32;
    let name = H::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[H], &[u32], &mut [H], &mut [H])>::build(
        &format!("half_shfl_{name}"),
        |k, (x, lanes, out, vec_out)| {
            let i = k.grid1();
            let (v, d) = (x.at(i), lanes.at(i) % 32u32);
            out.set(i * 3u64, k.shfl_sync(FULL_MASK, v, d));
            out.set(i * 3u64 + 1u64, k.shfl_down_sync(FULL_MASK, v, d));
            out.set(i * 3u64 + 2u64, k.shfl_xor_sync(FULL_MASK, v, d));
            // half2: a pair loaded and stored swapped, in one 4-byte access each.
            let [p, q] = x.load_vec::<2>(i);
            vec_out.store_vec(i, [q, p]);
        },
    )
    .unwrap();
    let n = 256 * 9;
    let x: Vec<H> = rng.vec(2 * n, random::<H>);
    let lanes: Vec<u32> = rng.vec(n, |r| (r.next_u64() % 64) as u32);
    let (dx, dl) = (s.to_device(&x).unwrap(), s.to_device(&lanes).unwrap());
    let mut out = s.to_device(&vec![poison::<H>(); 3 * n]).unwrap();
    let mut vec_out = s.to_device(&vec![poison::<H>(); 2 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dx, &dl, &mut out, &mut vec_out),
    )
    .unwrap();
    let (got, vgot) = (
        out.to_vec_async(&s).unwrap(),
        vec_out.to_vec_async(&s).unwrap(),
    );
    for i in 0..n {
        let (base, lane) = (i - i % WARP, i % WARP);
        let d = lanes[i] as usize % WARP;
        let want = [
            x[base + d],
            if lane + d < WARP {
                x[base + lane + d]
            } else {
                x[i]
            },
            x[base + (lane ^ d)],
        ];
        for j in 0..3 {
            // Shuffles move bits: NaN payloads too.
            assert_eq!(
                got[3 * i + j].bits(),
                want[j].bits(),
                "{name} shuffle {j}, thread {i}"
            );
        }
        assert_eq!(
            vgot[2 * i].bits(),
            x[2 * i + 1].bits(),
            "{name} half2, thread {i}"
        );
        assert_eq!(
            vgot[2 * i + 1].bits(),
            x[2 * i].bits(),
            "{name} half2, thread {i}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_shuffles_and_half2_vector_accesses_move_bits() {
    let mut rng = Rng::new();
    shuffles_and_vectors::<f16>(&mut rng);
    shuffles_and_vectors::<bf16>(&mut rng);
}

fn ops<H: Half + cudajit::ops::OpsScalar>(rng: &mut Rng) {
    let name = H::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    // Without FMA contraction: the product and the sum each round to the half type (the
    // host model below); contracted half arithmetic is tested in contract.rs and codegen.
    let axpy = Elementwise::<(Scalar<H>, Elem<H>, Elem<H>), _>::with_options(
        &format!("half_axpy_{name}"),
        cudajit::codegen::PtxOptions::default().contract(false),
        |(a, x, y)| a * x + y,
    )
    .unwrap();
    for n in [1usize, 3, 4, 17, 1000, 30_001] {
        let x: Vec<H> = rng.vec(n + 1, random::<H>);
        let y: Vec<H> = rng.vec(n + 1, random::<H>);
        let a = random::<H>(rng);
        let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
        for off in [0usize, 1] {
            let (vx, vy) = (
                dx.slice(off..off + n).unwrap(),
                dy.slice(off..off + n).unwrap(),
            );
            let (hx, hy) = (&x[off..off + n], &y[off..off + n]);
            let sum = vx.add(&s, &vy).unwrap().to_vec_async(&s).unwrap();
            let mut out = c.alloc::<H, _>(n).unwrap();
            out.fill_async(poison::<H>(), &s).unwrap();
            axpy.apply(&s, (a, &vx, &vy), &mut out).unwrap();
            let ax = out.to_vec_async(&s).unwrap();
            for i in 0..n {
                let w = H::from_f32(hx[i].to_f32() + hy[i].to_f32());
                assert!(same(sum[i], w), "{name} add n={n} off={off} i={i}");
                let w =
                    H::from_f32(H::from_f32(a.to_f32() * hx[i].to_f32()).to_f32() + hy[i].to_f32());
                assert!(same(ax[i], w), "{name} axpy n={n} off={off} i={i}");
            }
            // max: NaN-propagating (NumPy's).
            let mx = vx.max(&s).unwrap();
            let want = hx
                .iter()
                .map(|h| h.to_f32())
                .fold(f32::NEG_INFINITY, |m, v| {
                    if m.is_nan() || v.is_nan() {
                        f32::NAN
                    } else {
                        m.max(v)
                    }
                });
            // (Which zero a max of +0 and -0 keeps depends on the order: compared as values.)
            let ok = (mx.to_f32().is_nan() && want.is_nan()) || mx.to_f32() == want;
            assert!(ok, "{name} max n={n}: {mx:?} vs {want}");
        }
    }
    // Sums accumulate in f32 and round once: 10_000 ones are 10000 (an f16 accumulator stops
    // at 2048, a bf16 one at 256); small integers are exact in f32 in any order.
    for n in [10_000usize, 100_003] {
        let ones = s.to_device(&vec![H::from_f32(1.0); n]).unwrap();
        let want: H = round_exact(false, n as u128, 0);
        assert!(same(ones.sum(&s).unwrap(), want), "{name} sum of {n} ones");
        let v: Vec<H> = rng.vec(n, |r| H::from_f32((r.next_u64() % 9) as f32 - 4.0));
        let total: i64 = v.iter().map(|h| h.to_f32() as i64).sum();
        let dv = s.to_device(&v).unwrap();
        let want: H = round_exact(total < 0, total.unsigned_abs() as u128, 0);
        assert!(same(dv.sum(&s).unwrap(), want), "{name} sum n={n}");
    }
}

/// Cumulative sums accumulate in f32: of small integers (exact prefix sums in f32), each
/// rounded once; flat, exclusive, into a 2-D output, and along both axes of a 2-D array.
fn scans<H: Half + cudajit::ops::ScanScalar>(rng: &mut Rng) {
    let name = H::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let round = |t: i64| -> H { round_exact(t < 0, t.unsigned_abs() as u128, 0) };
    for n in [1usize, 5, 1000, 10_000, 70_001] {
        let v: Vec<H> = rng.vec(n, |r| H::from_f32((r.next_u64() % 7) as f32));
        let dv = s.to_device(&v).unwrap();
        let inc = dv.cumsum(&s).unwrap().to_vec_async(&s).unwrap();
        let exc = dv.cumsum_exclusive(&s).unwrap().to_vec_async(&s).unwrap();
        let mut total = 0i64;
        for i in 0..n {
            let before = total;
            total += v[i].to_f32() as i64;
            assert!(
                same(inc[i], round(total)),
                "{name} cumsum n={n} i={i}: {:?}",
                inc[i]
            );
            let want = if i == 0 {
                H::from_f32(-0.0)
            } else {
                round(before)
            };
            assert!(same(exc[i], want), "{name} cumsum_exclusive n={n} i={i}");
        }
    }
    // 2-D: 37 x 53, along each axis, and flat into a 2-D output.
    let (r, k) = (37usize, 53usize);
    let v: Vec<H> = rng.vec(r * k, |g| H::from_f32((g.next_u64() % 5) as f32 - 2.0));
    let dv = s.to_device(&v).unwrap().into_shape((r, k)).unwrap();
    let rows = dv.cumsum_axis(&s, 1).unwrap().to_vec_async(&s).unwrap();
    let cols = dv.cumsum_axis(&s, 0).unwrap().to_vec_async(&s).unwrap();
    let mut flat = c.alloc::<H, _>((k, r)).unwrap();
    flat.fill_async(poison::<H>(), &s).unwrap();
    dv.cumsum_into(&s, &mut flat).unwrap();
    let flat = flat.to_vec_async(&s).unwrap();
    let at = |i: usize, j: usize| v[i * k + j].to_f32() as i64;
    let mut total = 0;
    for i in 0..r {
        for j in 0..k {
            total += at(i, j);
            let row: i64 = (0..=j).map(|jj| at(i, jj)).sum();
            let col: i64 = (0..=i).map(|ii| at(ii, j)).sum();
            assert!(
                same(rows[i * k + j], round(row)),
                "{name} cumsum_axis(1) [{i}, {j}]"
            );
            assert!(
                same(cols[i * k + j], round(col)),
                "{name} cumsum_axis(0) [{i}, {j}]"
            );
            assert!(
                same(flat[i * k + j], round(total)),
                "{name} cumsum_into [{i}, {j}]"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_cumsums_accumulate_in_f32() {
    let mut rng = Rng::new();
    scans::<f16>(&mut rng);
    scans::<bf16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_elementwise_and_reductions_accumulate_in_f32() {
    let mut rng = Rng::new();
    ops::<f16>(&mut rng);
    ops::<bf16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_arguments_and_results_of_device_functions_and_local_arrays() {
    let mut rng = Rng::new();
    let c = ctx();
    let s = c.new_stream().unwrap();
    // A non-inlined call: f16 and bf16 arguments, an f16 result (a * b rounded in f16, then
    // + b rounded in f16, b converted from bf16 once: built without FMA contraction).
    let no_fma = cudajit::codegen::PtxOptions::default().contract(false);
    let f = DeviceFn::<(f16, bf16), f16>::build_with("half_fn", no_fma, |_, (a, b)| {
        let b16 = b.cast::<f16>();
        a * b16 + b16
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&[f16], &[bf16], &mut [f16], &mut [bf16])>::build(
        "half_fn_kernel",
        move |k, (x, y, out, rev)| {
            let i = k.grid1();
            k.if_(i.lt(x.len()), |k| {
                out.set(i, f.call((x.at(i), y.at(i))));
                // Through a local array, reversed in groups of 4.
                let loc = k.local_array::<bf16>(4);
                let base = i - i % 4u64;
                k.for_range(0u64, 4u64, |_, j| loc.set(j, y.at(base + j)));
                rev.set(i, loc.at(3u64 - i % 4u64));
            });
        },
    )
    .unwrap();
    let n = 4096usize;
    let x: Vec<f16> = rng.vec(n, random::<f16>);
    let y: Vec<bf16> = rng.vec(n, random::<bf16>);
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
    let mut out = s.to_device(&vec![poison::<f16>(); n]).unwrap();
    let mut rev = s.to_device(&vec![poison::<bf16>(); n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&dx, &dy, &mut out, &mut rev),
    )
    .unwrap();
    let (out, rev) = (out.to_vec_async(&s).unwrap(), rev.to_vec_async(&s).unwrap());
    for i in 0..n {
        let b: f16 = round_f64(y[i].to_f64());
        let p = f16::from_f32(x[i].to_f32() * b.to_f32());
        let want = f16::from_f32(p.to_f32() + b.to_f32());
        assert!(
            same(out[i], want),
            "half_fn({:?}, {:?}) gave {:?}",
            x[i],
            y[i],
            out[i]
        );
        assert_eq!(
            rev[i].bits(),
            y[i - i % 4 + 3 - i % 4].bits(),
            "local array, {i}"
        );
    }
}
