//! Scans (prefix sums) on the GPU, every output element checked against a host model: sizes
//! around the tile sizes, aligned and unaligned arrays, inclusive and exclusive, integers
//! (wrapping, exact), floats (exact on integer-valued data, where every order of addition
//! gives the same bits; within a bound scaled to the number of tiles on random data, where
//! the look-back groups additions differently from the host's left-to-right sum), special
//! float values, user-defined and non-commutative operators, scans along axes, repeated scans
//! on one stream (stale descriptors of earlier scans), and a scan captured into a graph.

use cudajit::codegen::{select, Expr};
use cudajit::ops::{Scan, ScanKind, ScanOps};
use cudajit::prelude::*;
use ndarray::{Array, Array2, Array3, ArrayD, Axis, IxDyn};

use crate::common::{ctx, Rng};

/// Elements per tile of the whole-array scan: aligned 4-byte elements, aligned 8-byte
/// elements, unaligned (256 threads x 4 rows x the vector width).
const TILE4: usize = 4096;
const TILE8: usize = 2048;
const TILE1: usize = 1024;

/// Sizes around the tile boundaries of `tile` elements, up to several tiles.
fn sizes(tile: usize) -> Vec<usize> {
    vec![
        0,
        1,
        2,
        5,
        TILE1 - 1,
        TILE1 + 1,
        tile - 1,
        tile,
        tile + 1,
        2 * tile + 3,
        7 * tile,
        37 * tile + 5,
    ]
}

/// The host's inclusive or exclusive scan, left to right.
fn host_scan<T: Copy>(x: &[T], id: T, kind: ScanKind, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = id;
    x.iter()
        .map(|&v| {
            let before = acc;
            acc = f(acc, v);
            if kind == ScanKind::Inclusive {
                acc
            } else {
                before
            }
        })
        .collect()
}

const KINDS: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];

/// Checks `scan` of `x` at offsets 0 and 1, every size, both kinds, with `same(got, want,
/// scale, n)`, `scale` being the sum of `|x|` up to the element (the bound of rounding errors).
fn check_sizes<T>(
    scan: &Scan<T>,
    tile: usize,
    draw: impl Fn(&mut Rng) -> T,
    poison: T,
    host: impl Fn(&[T], ScanKind) -> Vec<T>,
    same: impl Fn(T, T, f64, usize) -> bool,
) where
    T: cudajit::codegen::Num + cudajit::memory::AnyBitPattern + std::fmt::Debug + 'static,
{
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    for n in sizes(tile) {
        let x: Vec<T> = rng.vec(n + 1, &draw);
        let dx = s.to_device(&x).unwrap();
        let mut dout = c.alloc::<T, _>(n + 1).unwrap();
        for off in [0usize, 1] {
            let view = dx.slice(off..off + n).unwrap();
            let xs = &x[off..off + n];
            let scale: Vec<f64> = xs
                .iter()
                .scan(0.0, |a, v| {
                    *a += magnitude(v);
                    Some(*a)
                })
                .collect();
            for kind in KINDS {
                let want = host(xs, kind);
                let made = scan.scan(&s, &view, kind).unwrap();
                assert_eq!(made.shape(), &[n]);
                let got = made.to_vec_async(&s).unwrap();
                dout.fill_async(poison, &s).unwrap();
                let mut out = dout.slice_mut(off..off + n).unwrap();
                scan.scan_into(&s, &view, kind, &mut out).unwrap();
                let into = out.to_vec_async(&s).unwrap();
                for i in 0..n {
                    assert!(
                        same(got[i], want[i], scale[i], n),
                        "n={n} off={off} {kind:?} i={i}: got {:?}, want {:?}",
                        got[i],
                        want[i]
                    );
                    assert!(
                        same(into[i], want[i], scale[i], n),
                        "into: n={n} off={off} {kind:?} i={i}: got {:?}, want {:?}",
                        into[i],
                        want[i]
                    );
                }
            }
        }
    }
}

/// `|v|` for floats (the scale of rounding errors), 0 for other types.
fn magnitude<T: std::fmt::Debug + 'static>(v: &T) -> f64 {
    let any = v as &dyn std::any::Any;
    if let Some(f) = any.downcast_ref::<f32>() {
        f.abs() as f64
    } else if let Some(f) = any.downcast_ref::<f64>() {
        f.abs()
    } else {
        0.0
    }
}

fn wrapping_sum<T: Copy>(zero: T, add: fn(T, T) -> T) -> impl Fn(&[T], ScanKind) -> Vec<T> {
    move |x, kind| host_scan(x, zero, kind, add)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_cumsums_wrap_and_are_exact() {
    fn eq<T: PartialEq>(a: T, b: T, _: f64, _: usize) -> bool {
        a == b
    }
    let sum = Scan::<i32>::new("t_cumsum_i32", |a, b| a + b, 0).unwrap();
    // Large values: the sums wrap around many times.
    check_sizes(
        &sum,
        TILE4,
        |r| r.next_u64() as i32,
        i32::MIN,
        wrapping_sum(0, i32::wrapping_add),
        eq,
    );
    let sum = Scan::<u32>::new("t_cumsum_u32", |a, b| a + b, 0).unwrap();
    check_sizes(
        &sum,
        TILE4,
        |r| r.next_u64() as u32,
        0xdead_beef,
        wrapping_sum(0, u32::wrapping_add),
        eq,
    );
    let sum = Scan::<i64>::new("t_cumsum_i64", |a, b| a + b, 0).unwrap();
    check_sizes(
        &sum,
        TILE8,
        |r| r.next_u64() as i64,
        i64::MIN,
        wrapping_sum(0, i64::wrapping_add),
        eq,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_cumsums_of_integer_values_are_exact() {
    // Small integers: every partial sum is exact, so every order gives the same bits.
    let bits32 = |a: f32, b: f32, _, _| a.to_bits() == b.to_bits();
    let sum = Scan::<f32>::new("t_cumsum_f32", |a, b| a + b, -0.0).unwrap();
    let draw = |r: &mut Rng| (r.next_u64() % 7) as f32 - 3.0;
    check_sizes(
        &sum,
        TILE4,
        draw,
        f32::NAN,
        wrapping_sum(-0.0, |a, b| a + b),
        bits32,
    );
    let bits64 = |a: f64, b: f64, _, _| a.to_bits() == b.to_bits();
    let sum = Scan::<f64>::new("t_cumsum_f64", |a, b| a + b, -0.0).unwrap();
    let draw = |r: &mut Rng| (r.next_u64() % 2001) as f64 - 1000.0;
    check_sizes(
        &sum,
        TILE8,
        draw,
        f64::NAN,
        wrapping_sum(-0.0, |a, b| a + b),
        bits64,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_cumsums_of_random_values_are_within_the_rounding_bound() {
    // Any grouping of a sum is within (height of its tree) * eps * sum |x| of the exact sum;
    // the look-back's chains are at most as long as the number of tiles.
    fn bound(scale: f64, n: usize, eps: f64) -> f64 {
        ((n / TILE1 + 64) as f64) * eps * scale
    }
    let sum = Scan::<f32>::new("t_cumsum_f32r", |a, b| a + b, -0.0).unwrap();
    let near32 = |got: f32, want: f32, scale, n| {
        (got as f64 - want as f64).abs() <= bound(scale, n, f32::EPSILON as f64)
    };
    // The host sums in f64: `want` is (nearly) exact.
    let host32 = |x: &[f32], kind| {
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        host_scan(&x64, 0.0, kind, |a, b| a + b)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    };
    check_sizes(&sum, TILE4, |r| r.f32() * 100.0, f32::NAN, host32, near32);
    let sum = Scan::<f64>::new("t_cumsum_f64r", |a, b| a + b, -0.0).unwrap();
    let near64 =
        |got: f64, want: f64, scale, n| (got - want).abs() <= 2.0 * bound(scale, n, f64::EPSILON);
    check_sizes(
        &sum,
        TILE8,
        |r| r.f64() * 100.0,
        f64::NAN,
        wrapping_sum(0.0, |a, b| a + b),
        near64,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_cumsums_propagate_special_values() {
    // NaN, infinities and signed zeros among small integers: NaN and infinite results, and
    // the sign of zero sums, are the same in every order of addition.
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    let sum = Scan::<f32>::new("t_cumsum_f32s", |a, b| a + b, -0.0).unwrap();
    let bits = |a: f32, b: f32, _, _| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    // Rare specials (so that long stretches stay finite), then only zeros of both signs.
    let draw = move |r: &mut Rng| {
        let u = r.next_u64();
        if u % 4099 == 0 {
            specials[(u >> 20) as usize % 3]
        } else if u % 3 == 0 {
            specials[3 + (u >> 20) as usize % 2]
        } else {
            (u % 5) as f32 - 2.0
        }
    };
    check_sizes(
        &sum,
        TILE4,
        draw,
        7.0,
        wrapping_sum(-0.0, |a, b| a + b),
        bits,
    );
    let zeros = |r: &mut Rng| if r.next_u64() % 2 == 0 { -0.0f32 } else { 0.0 };
    check_sizes(
        &sum,
        TILE4,
        zeros,
        7.0,
        wrapping_sum(-0.0, |a, b| a + b),
        bits,
    );
    let c = ctx();
    let s = c.new_stream().unwrap();
    let x = s.to_device(&vec![-0.0f32; 5000]).unwrap();
    let got = x.cumsum(&s).unwrap().to_vec_async(&s).unwrap();
    assert!(got.iter().all(|v| v.to_bits() == (-0.0f32).to_bits()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn user_operators_running_max_and_non_commutative_affine_maps() {
    // A running maximum that propagates NaN (NumPy's maximum.accumulate).
    let max = Scan::<f32>::new(
        "t_cummax",
        |a, b| select(a.gt(b).or(a.ne(a)), a, b),
        f32::NEG_INFINITY,
    )
    .unwrap();
    let host_max = |a: f32, b: f32| if a > b || a.is_nan() { a } else { b };
    let bits = |a: f32, b: f32, _, _| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let draw = |r: &mut Rng| {
        if r.next_u64() % 9001 == 0 {
            f32::NAN
        } else {
            r.f32() * 1e6
        }
    };
    check_sizes(
        &max,
        TILE4,
        draw,
        0.5,
        wrapping_sum(f32::NEG_INFINITY, host_max),
        bits,
    );
    // Affine maps x -> a*x + b (mod 2^32), `a` in the high half and `b` in the low half of a
    // u64, composed left to right: associative, not commutative, so any element combined out
    // of order (or a prefix combined on the wrong side) shows.
    fn compose_host(f: u64, g: u64) -> u64 {
        let (af, bf, ag, bg) = ((f >> 32) as u32, f as u32, (g >> 32) as u32, g as u32);
        let a = af.wrapping_mul(ag);
        let b = ag.wrapping_mul(bf).wrapping_add(bg);
        ((a as u64) << 32) | b as u64
    }
    let compose = |f: Expr<u64>, g: Expr<u64>| {
        let (af, bf) = ((f >> 32u64).cast::<u32>(), f.cast::<u32>());
        let (ag, bg) = ((g >> 32u64).cast::<u32>(), g.cast::<u32>());
        let a = (af * ag).cast::<u64>();
        let b = (ag * bf + bg).cast::<u64>();
        (a << 32u64) | b
    };
    let affine = Scan::<u64>::new("t_affine", compose, 1u64 << 32).unwrap();
    let eq = |a: u64, b: u64, _, _| a == b;
    // Odd multipliers, so the maps never collapse to constants.
    let draw = |r: &mut Rng| r.next_u64() | (1u64 << 32);
    check_sizes(
        &affine,
        TILE8,
        draw,
        0,
        wrapping_sum(1u64 << 32, compose_host),
        eq,
    );
}

/// The host's scan of `x` along `axis` (left to right), inclusive or exclusive.
fn host_axis<T: Copy>(
    x: &ArrayD<T>,
    axis: usize,
    id: T,
    kind: ScanKind,
    f: impl Fn(T, T) -> T + Copy,
) -> ArrayD<T> {
    let mut out = x.clone();
    for mut lane in out.lanes_mut(Axis(axis)) {
        let v: Vec<T> = lane.iter().copied().collect();
        for (o, w) in lane.iter_mut().zip(host_scan(&v, id, kind, f)) {
            *o = w;
        }
    }
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scans_along_every_axis_of_2d_and_3d_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let sum = Scan::<i32>::new("t_axis_i32", |a, b| a + b, 0).unwrap();
    let shapes: [&[usize]; 9] = [
        &[3, 5],
        &[1, 9000],
        &[9000, 1],
        &[70, 300],
        &[300, 70],
        &[2, 1100],
        &[4, 5, 6],
        &[3, 1, 700],
        &[0, 4],
    ];
    for shape in shapes {
        let x = Array::from_shape_fn(IxDyn(shape), |_| rng.next_u64() as i32);
        let dx = s.to_device(&x).unwrap();
        for axis in 0..shape.len() {
            for kind in KINDS {
                let want = host_axis(&x, axis, 0, kind, i32::wrapping_add);
                let got = sum.scan_axis(&s, &dx, axis, kind).unwrap();
                assert_eq!(got.shape(), shape);
                assert_eq!(
                    got.to_array_async(&s).unwrap(),
                    want,
                    "{shape:?} axis {axis} {kind:?}"
                );
                let mut out = c.alloc::<i32, _>(IxDyn(shape)).unwrap();
                out.fill_async(-7, &s).unwrap();
                sum.scan_axis_into(&s, &dx, axis, kind, &mut out).unwrap();
                assert_eq!(
                    out.to_array_async(&s).unwrap(),
                    want,
                    "into {shape:?} axis {axis}"
                );
            }
        }
    }
    // ScanOps on f32 (integer values: exact in any order), 2-D and 3-D.
    let x2 = Array2::from_shape_fn((130, 257), |(i, j)| ((i * 7 + j * 3) % 11) as f32 - 5.0);
    let d2 = s.to_device(&x2).unwrap();
    for axis in 0..2 {
        let want = host_axis(
            &x2.clone().into_dyn(),
            axis,
            -0.0,
            ScanKind::Inclusive,
            |a, b| a + b,
        );
        let got = d2
            .cumsum_axis(&s, axis)
            .unwrap()
            .to_array_async(&s)
            .unwrap();
        assert_eq!(got.into_dyn(), want, "axis {axis}");
    }
    let x3 = Array3::from_shape_fn((5, 40, 33), |(i, j, k)| {
        ((i + 2 * j + 5 * k) % 9) as f32 - 4.0
    });
    let d3 = s.to_device(&x3).unwrap();
    for axis in 0..3 {
        let want = host_axis(
            &x3.clone().into_dyn(),
            axis,
            -0.0,
            ScanKind::Inclusive,
            |a, b| a + b,
        );
        let mut out = c.alloc::<f32, _>((5, 40, 33)).unwrap();
        out.fill_async(f32::NAN, &s).unwrap();
        d3.cumsum_axis_into(&s, axis, &mut out).unwrap();
        assert_eq!(
            out.to_array_async(&s).unwrap().into_dyn(),
            want,
            "axis {axis}"
        );
    }
    // The whole 2-D array, flattened (np.cumsum without an axis).
    let flat: Vec<f32> = x2.iter().copied().collect();
    let want = host_scan(&flat, -0.0, ScanKind::Inclusive, |a, b| a + b);
    assert_eq!(d2.cumsum(&s).unwrap().to_vec_async(&s).unwrap(), want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_axes_and_shapes_are_errors() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let x = s.to_device(&Array2::<f32>::zeros((4, 6))).unwrap();
    let e = x.cumsum_axis(&s, 2).expect_err("axis 2 of a 2-D array");
    assert!(e.to_string().contains("axis 2"), "{e}");
    let mut wrong = c.alloc::<f32, _>((6, 4)).unwrap();
    assert!(x.cumsum_axis_into(&s, 0, &mut wrong).is_err());
    let mut short = c.alloc::<f32, _>(23).unwrap();
    assert!(x.cumsum_into(&s, &mut short).is_err());
    // A flat scan takes any output of as many elements.
    x.cumsum_into(&s, &mut wrong).unwrap();
    assert!(wrong.to_vec_async(&s).unwrap().iter().all(|&v| v == 0.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn repeated_scans_on_one_stream_ignore_stale_descriptors() {
    // Large, small and large again on one stream (descriptors of earlier scans left in
    // place), other types sharing the stream's space, another stream, and the per-thread
    // default stream (a space of its own per scan); every result exact and repeatable.
    let c = ctx();
    let streams = [c.new_stream().unwrap(), c.per_thread_default_stream()];
    let mut rng = Rng::new();
    for s in &streams {
        for (round, n) in [50_000usize, 3, 9_000, 50_000, 4096, 123_457]
            .into_iter()
            .enumerate()
        {
            let x: Vec<i32> = rng.vec(n, |r| r.next_u64() as i32);
            let dx = s.to_device(&x).unwrap();
            let want = host_scan(&x, 0, ScanKind::Inclusive, i32::wrapping_add);
            let first = dx.cumsum(s).unwrap().to_vec_async(s).unwrap();
            assert_eq!(first, want, "round {round}, n={n}");
            let again = dx.cumsum(s).unwrap().to_vec_async(s).unwrap();
            assert_eq!(again, first, "round {round}: a second run");
            let y: Vec<f64> = rng.vec(n / 2, |r| (r.next_u64() % 100) as f64);
            let dy = s.to_device(&y).unwrap();
            let want = host_scan(&y, 0.0, ScanKind::Exclusive, |a, b| a + b);
            assert_eq!(
                dy.cumsum_exclusive(s).unwrap().to_vec_async(s).unwrap(),
                want
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_scan_replays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 100_003usize;
    let x: Vec<i32> = rng.vec(n, |r| (r.next_u64() % 1000) as i32 - 500);
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<i32, _>(n).unwrap();
    out.fill_async(0, &s).unwrap();
    s.synchronize().unwrap();
    let graph = s.capture(|s| dx.cumsum_into(s, &mut out)).unwrap();
    let exec = graph.instantiate().unwrap();
    let want = host_scan(&x, 0, ScanKind::Inclusive, i32::wrapping_add);
    for _ in 0..3 {
        out.fill_async(0, &s).unwrap();
        // SAFETY: dx and out outlive the launch.
        unsafe { exec.launch(&s) }.unwrap();
        assert_eq!(out.to_vec_async(&s).unwrap(), want);
        // A direct scan between replays moves the stream's epoch on.
        assert_eq!(dx.cumsum(&s).unwrap().to_vec_async(&s).unwrap(), want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scans_continue_after_a_carry() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    // Integer sums, exact: a chunk scanned after the sum of what came before gives the whole
    // array's scan, for sizes around the tiles (the vector and element-wise kernels), and a
    // carry of several values combines them all, in order.
    let sum = Scan::<i32>::new("carry_sum", |a, b| a + b, 0).unwrap();
    for n in sizes(TILE4) {
        let hx: Vec<i32> = rng.vec(n, |r| match r.next_u64() % 8 {
            0 => i32::MAX,
            1 => i32::MIN,
            _ => r.next_u64() as i32,
        });
        let hc: Vec<i32> = rng.vec(3, |r| r.next_u64() as i32);
        let (x, c) = (s.to_device(&hx).unwrap(), s.to_device(&hc).unwrap());
        let start = hc.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
            let mut out = s.to_device(&vec![0x5a5a_5a5a_i32; n]).unwrap();
            sum.scan_into_after(&s, &x, kind, &c, &mut out).unwrap();
            let got = out.to_vec_async(&s).unwrap();
            let want: Vec<i32> = host_scan(&hx, 0, kind, |a, b| a.wrapping_add(b))
                .into_iter()
                .map(|v| start.wrapping_add(v))
                .collect();
            assert_eq!(got, want, "n={n} {kind:?}");
        }
        // An empty carry is a plain scan.
        let mut out = s.to_device(&vec![0x5a5a_5a5a_i32; n]).unwrap();
        let none = s.to_device(&Vec::<i32>::new()).unwrap();
        sum.scan_into_after(&s, &x, ScanKind::Inclusive, &none, &mut out)
            .unwrap();
        let want = host_scan(&hx, 0, ScanKind::Inclusive, |a, b| a.wrapping_add(b));
        assert_eq!(out.to_vec_async(&s).unwrap(), want, "n={n}, empty carry");
    }
    // A non-commutative operator (affine maps x -> a x + b composed in order, exact in
    // integers): the carry comes first.
    let compose = Scan::<u64>::new(
        "carry_affine",
        |f, g| {
            let (fa, fb) = (f >> 32u64, f & 0xffff_ffffu64);
            let (ga, gb) = (g >> 32u64, g & 0xffff_ffffu64);
            (((ga * fa) & 0xffff_ffffu64) << 32u64) | ((ga * fb + gb) & 0xffff_ffffu64)
        },
        1u64 << 32,
    )
    .unwrap();
    let host_compose = |f: u64, g: u64| {
        let (fa, fb) = (f >> 32, f & 0xffff_ffff);
        let (ga, gb) = (g >> 32, g & 0xffff_ffff);
        (((ga.wrapping_mul(fa)) & 0xffff_ffff) << 32)
            | ((ga.wrapping_mul(fb).wrapping_add(gb)) & 0xffff_ffff)
    };
    let n = 3 * TILE8 + 17;
    let hx: Vec<u64> = rng.vec(n, |r| r.next_u64() & 0x0000_00ff_0000_00ff);
    let hc: Vec<u64> = rng.vec(2, |r| r.next_u64() & 0x0000_00ff_0000_00ff);
    let (x, c) = (s.to_device(&hx).unwrap(), s.to_device(&hc).unwrap());
    let mut out = s.to_device(&vec![0u64; n]).unwrap();
    compose
        .scan_into_after(&s, &x, ScanKind::Inclusive, &c, &mut out)
        .unwrap();
    let mut all = hc.clone();
    all.extend_from_slice(&hx);
    let want = host_scan(&all, 1u64 << 32, ScanKind::Inclusive, host_compose);
    assert_eq!(
        out.to_vec_async(&s).unwrap(),
        want[2..],
        "affine maps after a carry"
    );
    // A wrong output length is refused before anything runs.
    let mut short = s.to_device(&vec![0u64; n - 1]).unwrap();
    let e = compose
        .scan_into_after(&s, &x, ScanKind::Inclusive, &c, &mut short)
        .unwrap_err();
    assert!(e.to_string().contains("elements"), "{e}");
}
