//! The narrow integers `i8`, `u8`, `i16`, `u16` on the GPU, on fresh random data rich in
//! special values (MIN, MAX, 0, -1, 1, shift widths) each run, every output element checked
//! against a host model in plain Rust, outputs poisoned first: arithmetic and comparisons, bit
//! operations, loops, scalar parameters, casts to and from every scalar type, shuffles and
//! match, elementwise ops, reductions and scans. Atomics: `narrow_atomics.rs`.

// The cast models are written `x as $t` for every pair of types, the same type included.
#![allow(clippy::unnecessary_cast)]

use std::fmt::Debug;

use cudajit::codegen::{Expr, Int, Kernel, Scalar as ScalarT, FULL_MASK};
use cudajit::ops::{
    ArrayOps, Elem, Elementwise, ReduceOps, ReduceScalar, Scalar, ScanOps, ScanScalar,
};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::gen::Gen;
use crate::narrow_atomics::A;

/// A narrow integer type under test, with its host models.
pub(crate) trait Narrow:
    Int + ReduceScalar + ScanScalar + cudajit::AnyBitPattern + Ord + Debug + 'static
{
    /// A random value: special values (0, ±1, MIN, MAX, shift widths) often.
    fn random(r: &mut Rng) -> Self;
    /// `wrapping_add` and friends, in the order of [`ops`].
    fn model(x: Self, y: Self) -> [Self; 13];
    /// The comparisons `<`, `<=`, `>`, `>=`, `==`, `!=`.
    fn cmps(x: Self, y: Self) -> [bool; 6];
    /// `count_ones`, `leading_zeros`, `trailing_zeros + 1` (0 for 0).
    fn bits3(x: Self) -> [u32; 3];
    fn reverse(x: Self) -> Self;
    /// `(start..end).step_by(step)`: the number of iterations and the sum of the counters
    /// (wrapping).
    fn steps(start: Self, end: Self, step: Self) -> (u32, Self);
    fn wadd(x: Self, y: Self) -> Self;
    fn wmul(x: Self, y: Self) -> Self;
    fn to_f64(self) -> f64;
    fn from_u64(v: u64) -> Self;
    /// The value memory holds after atomic `op` on `old` with operand `x` (CAS: expected `y`).
    fn atomic(op: A, old: Self, x: Self, y: Self) -> Self;
}

macro_rules! narrow {
    ($t:ty) => {
        impl Narrow for $t {
            fn random(r: &mut Rng) -> $t {
                let u = r.next_u64();
                let specials: [$t; 12] = [
                    0,
                    1,
                    (0 as $t).wrapping_sub(1),
                    <$t>::MIN,
                    <$t>::MAX,
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX - 1,
                    2,
                    7,
                    8,
                    15,
                    16,
                ];
                match u % 4 {
                    0 => specials[(u >> 8) as usize % specials.len()],
                    1 => ((u >> 8) % 20) as $t,
                    _ => (u >> 16) as $t,
                }
            }
            fn model(x: $t, y: $t) -> [$t; 13] {
                [
                    x.wrapping_add(y),
                    x.wrapping_sub(y),
                    x.wrapping_mul(y),
                    // Division by zero: all ones; remainder: the dividend; MIN / -1 wraps.
                    if y == 0 { !0 } else { x.wrapping_div(y) },
                    if y == 0 { x } else { x.wrapping_rem(y) },
                    x & y,
                    x | y,
                    x ^ y,
                    x.wrapping_shl(y as u32),
                    x.wrapping_shr(y as u32),
                    x.min(y),
                    x.max(y),
                    !x,
                ]
            }
            fn cmps(x: $t, y: $t) -> [bool; 6] {
                [x < y, x <= y, x > y, x >= y, x == y, x != y]
            }
            fn bits3(x: $t) -> [u32; 3] {
                [
                    x.count_ones(),
                    x.leading_zeros(),
                    if x == 0 { 0 } else { x.trailing_zeros() + 1 },
                ]
            }
            fn reverse(x: $t) -> $t {
                x.reverse_bits()
            }
            fn steps(start: $t, end: $t, step: $t) -> (u32, $t) {
                let mut n = 0;
                let mut sum: $t = 0;
                for i in (start..end).step_by(step as usize) {
                    n += 1;
                    sum = sum.wrapping_add(i);
                }
                (n, sum)
            }
            fn wadd(x: $t, y: $t) -> $t {
                x.wrapping_add(y)
            }
            fn wmul(x: $t, y: $t) -> $t {
                x.wrapping_mul(y)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_u64(v: u64) -> $t {
                v as $t
            }
            fn atomic(op: A, old: $t, x: $t, y: $t) -> $t {
                match op {
                    A::Add => old.wrapping_add(x),
                    A::Sub => old.wrapping_sub(x),
                    A::Min | A::NanMin => old.min(x),
                    A::Max | A::NanMax => old.max(x),
                    A::Exch => x,
                    A::Cas => {
                        if old == y {
                            x
                        } else {
                            old
                        }
                    }
                    A::And => old & x,
                    A::Or => old | x,
                    A::Xor => old ^ x,
                }
            }
        }
    };
}
narrow!(i8);
narrow!(u8);
narrow!(i16);
narrow!(u16);

/// A poison value for outputs (never what a correct kernel writes by chance for every
/// element).
pub(crate) fn poison<T: ScalarT>() -> T {
    T::from_bits(0x5a5a_5a5a_5a5a_5a5a)
}

/// The operators of the arithmetic kernel, in the order of [`Narrow::model`].
fn ops<T: Int>(x: Expr<T>, y: Expr<T>) -> [Expr<T>; 13] {
    [
        x + y,
        x - y,
        x * y,
        x / y,
        x % y,
        x & y,
        x | y,
        x ^ y,
        x << y,
        x >> y,
        x.min(y),
        x.max(y),
        !x,
    ]
}

/// Arithmetic, comparisons, bit operations, a scalar parameter and `for_step` loops.
fn arithmetic<T: Narrow>(rng: &mut Rng) {
    let name = T::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[T], &[T], &mut [T], &mut [bool], &mut [u32], T)>::build(
        &format!("narrow_arith_{name}"),
        |k, (a, b, out, flags, bits, p)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |k| {
                let (x, y) = (a.at(i), b.at(i));
                for (j, v) in ops(x, y).into_iter().enumerate() {
                    out.set(i * 17u64 + j as u64, v);
                }
                out.set(i * 17u64 + 13u64, x.brev());
                out.set(i * 17u64 + 14u64, x + p);
                let cmps = [x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y)];
                for (j, c) in cmps.into_iter().enumerate() {
                    flags.set(i * 6u64 + j as u64, c);
                }
                bits.set(i * 5u64, x.popc());
                bits.set(i * 5u64 + 1u64, x.clz());
                bits.set(i * 5u64 + 2u64, x.ffs());
                // A loop with a narrow counter: from x to x + (y & 31) (wrapping: maybe below
                // x) in steps of 1 + (p & 3).
                let step = (p & T::from_u64(3)) + T::from_u64(1);
                let end = x + (y & T::from_u64(31));
                let (count, sum) = (k.var(0u32), k.var(T::from_u64(0)));
                k.for_step(x, end, step, |_, j| {
                    count.set(count.get() + 1u32);
                    sum.set(sum.get() + j);
                });
                bits.set(i * 5u64 + 3u64, count.get());
                out.set(i * 17u64 + 15u64, sum.get());
                out.set(i * 17u64 + 16u64, step);
            });
        },
    )
    .unwrap();
    let n = 50_000usize;
    let x: Vec<T> = rng.vec(n, T::random);
    let y: Vec<T> = rng.vec(n, T::random);
    let p = T::random(rng);
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
    let mut out = s.to_device(&vec![poison::<T>(); 17 * n]).unwrap();
    let mut flags = s.to_device(&vec![true; 6 * n]).unwrap();
    let mut bits = s.to_device(&vec![0xdead_beefu32; 5 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&dx, &dy, &mut out, &mut flags, &mut bits, p),
    )
    .unwrap();
    let (out, flags, bits) = (
        out.to_vec_async(&s).unwrap(),
        flags.to_vec_async(&s).unwrap(),
        bits.to_vec_async(&s).unwrap(),
    );
    let names = [
        "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "min", "max", "!", "brev", "+ p",
    ];
    let step = T::from_u64((p.to_bits() & 3) + 1);
    for i in 0..n {
        let (a, b) = (x[i], y[i]);
        let mut want = T::model(a, b).to_vec();
        want.push(T::reverse(a));
        want.push(T::wadd(a, p));
        for (j, w) in want.iter().enumerate() {
            assert_eq!(
                out[17 * i + j],
                *w,
                "{name} {a:?} {} {b:?}, element {i}",
                names[j]
            );
        }
        assert_eq!(
            &flags[6 * i..6 * i + 6],
            &T::cmps(a, b),
            "{name} {a:?} vs {b:?}"
        );
        assert_eq!(
            &bits[5 * i..5 * i + 3],
            &T::bits3(a),
            "{name} bits of {a:?}"
        );
        let end = T::wadd(a, T::from_u64(b.to_bits() & 31));
        let (count, sum) = T::steps(a, end, step);
        assert_eq!(
            (bits[5 * i + 3], out[17 * i + 15], out[17 * i + 16]),
            (count, sum, step),
            "{name} for_step({a:?}, {end:?}, {step:?})"
        );
        assert_eq!(
            bits[5 * i + 4],
            0xdead_beef,
            "{name} element {i} was written"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_arithmetic_comparisons_bits_and_loops_match_rust() {
    let mut rng = Rng::new();
    arithmetic::<i8>(&mut rng);
    arithmetic::<u8>(&mut rng);
    arithmetic::<i16>(&mut rng);
    arithmetic::<u16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_negation_wraps() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[i8], &[i16], &mut [i8], &mut [i16])>::build(
        "narrow_neg",
        |k, (a, b, oa, ob)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                oa.set(i, -a.at(i));
                ob.set(i, -b.at(i));
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 4099;
    let a: Vec<i8> = rng.vec(n, i8::random);
    let b: Vec<i16> = rng.vec(n, i16::random);
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut oa = s.to_device(&vec![poison::<i8>(); n]).unwrap();
    let mut ob = s.to_device(&vec![poison::<i16>(); n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&da, &db, &mut oa, &mut ob),
    )
    .unwrap();
    let (oa, ob) = (oa.to_vec_async(&s).unwrap(), ob.to_vec_async(&s).unwrap());
    for i in 0..n {
        assert_eq!(oa[i], a[i].wrapping_neg(), "-{}", a[i]);
        assert_eq!(ob[i], b[i].wrapping_neg(), "-{}", b[i]);
    }
}

/// Every `i16` (and so every `i8`): `-x` and `x.max(-x)` (which LLVM makes an `abs`) widened to
/// `i32` and compared with `x`, against Rust's wrapping values: `i16::MIN` negates to itself (the
/// PTX compiler gave +32768 until workaround 13, `src/codegen/ptx_fix/w13_*`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_negation_and_abs_of_min_widen_to_rusts_values() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[i16], &mut [i32])>::build("narrow_neg_abs_widened", |k, (a, out)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            let x = a.at(i);
            let (n, m) = (-x, x.max(-x));
            out.set(i * 4u64, n.cast::<i32>());
            out.set(i * 4u64 + 1u64, m.cast::<i32>());
            out.set(
                i * 4u64 + 2u64,
                n.gt(x).cast::<i32>() + m.lt(Expr::lit(0i16)).cast::<i32>() * 2i32,
            );
            let b = x.cast::<i8>();
            out.set(
                i * 4u64 + 3u64,
                (-b).cast::<i32>() * 256i32 + b.max(-b).cast::<i32>(),
            );
        });
    })
    .unwrap();
    let a: Vec<i16> = (i16::MIN..=i16::MAX).collect();
    let n = a.len();
    let da = s.to_device(&a).unwrap();
    let mut out = s.to_device(&vec![poison::<i32>(); 4 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&da, &mut out),
    )
    .unwrap();
    let out = out.to_vec_async(&s).unwrap();
    for (i, &x) in a.iter().enumerate() {
        let (nx, mx, b) = (x.wrapping_neg(), x.max(x.wrapping_neg()), x as i8);
        let want = [
            nx as i32,
            mx as i32,
            (nx > x) as i32 + 2 * (mx < 0) as i32,
            b.wrapping_neg() as i32 * 256 + b.max(b.wrapping_neg()) as i32,
        ];
        assert_eq!(out[4 * i..4 * i + 4], want, "x = {x}");
    }
}

/// 16-bit (and 8-bit) `min`/`max` compared with one of their operands, for every `u16` `x`
/// against a random partner `y`: the PTX compiler folded `setp.eq (max.u16 d, c), c` into the
/// paired-halves `VIMNMX.U16x2` and read the high half's predicate (workaround 14,
/// `src/codegen/ptx_fix/w14_*`); the whole-language campaign's `1u8 / (x & 0x90)` is one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_min_max_compared_with_an_operand() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u16], &[u16], &mut [u32])>::build("narrow_min_max_eq", |k, (a, b, out)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            let (u, v) = (a.at(i), b.at(i));
            let (s, t) = (u.bitcast::<i16>(), v.bitcast::<i16>());
            let (u8_, s8) = (u.cast::<u8>(), u.cast::<u8>().bitcast::<i8>());
            let bits = [
                u.max(Expr::lit(1u16)).eq(1u16),
                u.min(Expr::lit(7u16)).eq(7u16),
                s.max(Expr::lit(-7i16)).eq(-7i16),
                s.min(Expr::lit(3i16)).eq(3i16),
                u.max(v).eq(v),
                s.min(t).eq(t),
                u8_.max(Expr::lit(1u8)).eq(1u8),
                s8.min(Expr::lit(-3i8)).eq(-3i8),
                (u8_ & Expr::lit(0x90u8)).max(Expr::lit(1u8)).eq(1u8),
            ];
            let mut w = Expr::lit(0u32);
            for (n, bit) in bits.into_iter().enumerate() {
                w = w | (bit.cast::<u32>() << (n as u32));
            }
            out.set(i * 2u64, w);
            out.set(
                i * 2u64 + 1u64,
                (Expr::lit(1u8) / (u8_ & Expr::lit(0x90u8))).cast::<u32>(),
            );
        });
    })
    .unwrap();
    let a: Vec<u16> = (0..=u16::MAX).collect();
    let mut rng = Rng::new();
    let b: Vec<u16> = (0..a.len())
        .map(|i| match i % 4 {
            0 => a[i],
            1 => [0, 1, 7, 0x7FFF, 0x8000, 0xFFFF][(rng.next_u64() % 6) as usize],
            _ => rng.next_u64() as u16,
        })
        .collect();
    let n = a.len();
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut out = s.to_device(&vec![poison::<u32>(); 2 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&da, &db, &mut out),
    )
    .unwrap();
    let out = out.to_vec_async(&s).unwrap();
    for (i, (&u, &v)) in a.iter().zip(&b).enumerate() {
        let (s, t, u8_) = (u as i16, v as i16, u as u8);
        let bits = [
            u.max(1) == 1,
            u.min(7) == 7,
            s.max(-7) == -7,
            s.min(3) == 3,
            u.max(v) == v,
            s.min(t) == t,
            u8_.max(1) == 1,
            (u8_ as i8).min(-3) == -3,
            (u8_ & 0x90).max(1) == 1,
        ];
        let w = bits
            .iter()
            .enumerate()
            .fold(0u32, |w, (n, &b)| w | (b as u32) << n);
        // The crate's integer division by zero gives all ones (PTX's `div.u32`), narrowed.
        let d = u8_ & 0x90;
        let q = 1u8.checked_div(d).unwrap_or(u8::MAX);
        assert_eq!(
            out[2 * i..2 * i + 2],
            [w, q as u32],
            "x = {u:#x}, y = {v:#x}"
        );
    }
}

/// `x.cast::<D>()` for random `x`, against `host(x)`, bit for bit.
fn cast_case<S: Gen, D: Gen>(rng: &mut Rng, host: impl Fn(S) -> D) {
    let name = format!("narrow_cast_{}_{}", S::TY.name(), D::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[S], &mut [D])>::build(&name, |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).cast::<D>()));
    })
    .unwrap();
    let n = 3001;
    let x: Vec<S> = rng.vec(n, S::gen);
    let dx = s.to_device(&x).unwrap();
    // bool outputs cannot be poisoned with another bit pattern; both are tried.
    for fill in [poison::<D>(), D::from_bits(0), D::from_bits(1)] {
        let mut out = s.to_device(&vec![fill; n]).unwrap();
        k.launch(
            &s,
            LaunchConfig::for_num_elems(n, 128).unwrap(),
            (&dx, &mut out),
        )
        .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            assert_eq!(
                got[i].to_bits(),
                host(x[i]).to_bits(),
                "{name}: {:?} as {} gave {:?}, want {:?}",
                x[i],
                D::TY.name(),
                got[i],
                host(x[i])
            );
        }
        if D::TY.name() != "bool" {
            break;
        }
    }
}

/// Casts from and to the narrow type `$n`, from and to every scalar type, as Rust's `as`.
macro_rules! casts_of {
    ($rng:expr, $n:ty) => {{
        casts_of!(@both $rng, $n: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
        cast_case::<$n, bool>($rng, |x| x != 0);
        cast_case::<bool, $n>($rng, |b| b as $n);
    }};
    (@both $rng:expr, $n:ty: $($t:ty),*) => {$(
        cast_case::<$n, $t>($rng, |x| x as $t);
        cast_case::<$t, $n>($rng, |x| x as $n);
    )*};
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_casts_to_and_from_every_type_are_rusts_as() {
    let mut rng = Rng::new();
    let rng = &mut rng;
    casts_of!(rng, i8);
    casts_of!(rng, u8);
    casts_of!(rng, i16);
    casts_of!(rng, u16);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_bitcasts_keep_the_bits() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[i8], &[u16], &mut [u8], &mut [i16])>::build(
        "narrow_bitcast",
        |k, (a, b, oa, ob)| {
            let i = k.grid1();
            k.if_(i.lt(a.len()), |_| {
                oa.set(i, a.at(i).bitcast::<u8>());
                ob.set(i, b.at(i).bitcast::<i16>());
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 1000;
    let a: Vec<i8> = rng.vec(n, i8::random);
    let b: Vec<u16> = rng.vec(n, u16::random);
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut oa = s.to_device(&vec![0x5au8; n]).unwrap();
    let mut ob = s.to_device(&vec![0x5a5ai16; n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 128).unwrap(),
        (&da, &db, &mut oa, &mut ob),
    )
    .unwrap();
    let (oa, ob) = (oa.to_vec_async(&s).unwrap(), ob.to_vec_async(&s).unwrap());
    for i in 0..n {
        assert_eq!(oa[i], a[i] as u8);
        assert_eq!(ob[i], b[i] as i16);
    }
}

/// The four shuffles with per-thread random lanes, and `match_any_sync` on a few distinct
/// values, against a host model of the warp.
fn shuffles<T: Narrow>(rng: &mut Rng) {
    const WARP: usize = 32;
    let name = format!("narrow_shfl_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k =
        Kernel::<(&[T], &[u32], &mut [T], &mut [u32])>::build(&name, |k, (x, lanes, out, m)| {
            let i = k.grid1();
            let (v, l) = (x.at(i), lanes.at(i));
            let d = l % 32u32;
            out.set(i * 4u64, k.shfl_sync(FULL_MASK, v, l));
            out.set(i * 4u64 + 1u64, k.shfl_up_sync(FULL_MASK, v, d));
            out.set(i * 4u64 + 2u64, k.shfl_down_sync(FULL_MASK, v, d));
            out.set(i * 4u64 + 3u64, k.shfl_xor_sync(FULL_MASK, v, d));
            m.set(i, k.match_any_sync(FULL_MASK, v));
        })
        .unwrap();
    let n = 256 * 65;
    // Half the warps hold few distinct values (so that match finds groups).
    let x: Vec<T> = (0..n)
        .map(|i| {
            if (i / WARP) % 2 == 0 {
                T::random(rng)
            } else {
                [
                    T::LIMITS.0,
                    T::LIMITS.1,
                    T::from_u64(0),
                    T::from_u64(u64::MAX),
                ][(rng.next_u64() % 4) as usize]
            }
        })
        .collect();
    let lanes: Vec<u32> = rng.vec(n, |r| (r.next_u64() % 64) as u32);
    let (dx, dl) = (s.to_device(&x).unwrap(), s.to_device(&lanes).unwrap());
    let mut out = s.to_device(&vec![poison::<T>(); 4 * n]).unwrap();
    let mut m = s.to_device(&vec![0u32; n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dx, &dl, &mut out, &mut m),
    )
    .unwrap();
    let (got, m) = (out.to_vec_async(&s).unwrap(), m.to_vec_async(&s).unwrap());
    for i in 0..n {
        let (base, lane) = (i - i % WARP, i % WARP);
        let d = lanes[i] as usize % WARP;
        let want = [
            x[base + d],
            if lane >= d { x[base + lane - d] } else { x[i] },
            if lane + d < WARP {
                x[base + lane + d]
            } else {
                x[i]
            },
            x[base + (lane ^ d)],
        ];
        assert_eq!(
            &got[4 * i..4 * i + 4],
            &want,
            "{name} thread {i}, operand {}",
            lanes[i]
        );
        let same = (0..WARP)
            .filter(|&l| x[base + l] == x[i])
            .fold(0u32, |acc, l| acc | 1 << l);
        assert_eq!(m[i], same, "{name} match_any_sync, thread {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_shuffles_and_match_match_a_host_warp_model() {
    let mut rng = Rng::new();
    shuffles::<i8>(&mut rng);
    shuffles::<u8>(&mut rng);
    shuffles::<i16>(&mut rng);
    shuffles::<u16>(&mut rng);
}

/// Elementwise ops (the cached `add`/`mul`/`div`, and a custom `a * x + y`), reductions and
/// cumulative sums: integers wrap in the element type; `sum_f64` and `mean` are exact in f64.
fn ops_and_reductions<T: Narrow>(rng: &mut Rng) {
    let name = T::TY.name();
    let c = ctx();
    let s = c.new_stream().unwrap();
    let axpy = Elementwise::<(Scalar<T>, Elem<T>, Elem<T>), _>::new(
        &format!("narrow_axpy_{name}"),
        |(a, x, y)| a * x + y,
    )
    .unwrap();
    for n in [1usize, 3, 4, 17, 1000, 100_003] {
        let x: Vec<T> = rng.vec(n + 1, T::random);
        let y: Vec<T> = rng.vec(n + 1, |r| {
            let v = T::random(r);
            // Few zeros: division by zero is checked once per run, not drowned out.
            if v == T::from_u64(0) {
                T::from_u64(3)
            } else {
                v
            }
        });
        let a = T::random(rng);
        let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
        // Aligned, and shifted by one element (odd addresses for u8).
        for off in [0usize, 1] {
            let (vx, vy) = (
                dx.slice(off..off + n).unwrap(),
                dy.slice(off..off + n).unwrap(),
            );
            let (hx, hy) = (&x[off..off + n], &y[off..off + n]);
            let sum = vx.add(&s, &vy).unwrap().to_vec_async(&s).unwrap();
            let prod = vx.mul(&s, &vy).unwrap().to_vec_async(&s).unwrap();
            let quot = vx.div(&s, &vy).unwrap().to_vec_async(&s).unwrap();
            let mut out = c.alloc::<T, _>(n).unwrap();
            out.fill_async(poison::<T>(), &s).unwrap();
            axpy.apply(&s, (a, &vx, &vy), &mut out).unwrap();
            let ax = out.to_vec_async(&s).unwrap();
            for i in 0..n {
                let m = T::model(hx[i], hy[i]);
                assert_eq!(sum[i], m[0], "{name} add n={n} off={off} i={i}");
                assert_eq!(prod[i], m[2], "{name} mul n={n} off={off} i={i}");
                assert_eq!(quot[i], m[3], "{name} div n={n} off={off} i={i}");
                assert_eq!(
                    ax[i],
                    T::wadd(T::wmul(a, hx[i]), hy[i]),
                    "{name} axpy i={i}"
                );
            }
            let hsum = hx.iter().fold(T::from_u64(0), |s, &v| T::wadd(s, v));
            let hprod = hx.iter().fold(T::from_u64(1), |s, &v| T::wmul(s, v));
            let exact: f64 = hx.iter().map(|v| v.to_f64()).sum();
            let (min, max) = (
                hx.iter().fold(T::LIMITS.1, |m, &v| m.min(v)),
                hx.iter().fold(T::LIMITS.0, |m, &v| m.max(v)),
            );
            let what = format!("{name} n={n} off={off}");
            assert_eq!(vx.sum(&s).unwrap(), hsum, "{what} sum");
            assert_eq!(vx.prod(&s).unwrap(), hprod, "{what} prod");
            assert_eq!(vx.min(&s).unwrap(), min, "{what} min");
            assert_eq!(vx.max(&s).unwrap(), max, "{what} max");
            assert_eq!(vx.sum_f64(&s).unwrap(), exact, "{what} sum_f64");
            let mean = vx.mean(&s).unwrap();
            assert!(
                (mean - exact / n as f64).abs() <= 1e-12 * exact.abs().max(1.0),
                "{what} mean"
            );
            let first = |m: T| hx.iter().position(|&v| v == m).unwrap() as u64;
            assert_eq!(vx.argmin(&s).unwrap(), first(min), "{what} argmin");
            assert_eq!(vx.argmax(&s).unwrap(), first(max), "{what} argmax");
            let cs = vx.cumsum(&s).unwrap().to_vec_async(&s).unwrap();
            let mut acc = T::from_u64(0);
            for i in 0..n {
                acc = T::wadd(acc, hx[i]);
                assert_eq!(cs[i], acc, "{what} cumsum element {i}");
            }
        }
    }
    // Along each axis of a matrix (the rows and the columns kernels), wrapping as well.
    let (rows, cols) = (37usize, 301usize);
    let host: Vec<T> = rng.vec(rows * cols, T::random);
    let m = ndarray::Array2::from_shape_vec((rows, cols), host.clone()).unwrap();
    let dm = s.to_device(&m).unwrap();
    let along_rows = dm.sum_axis(&s, 1, false).unwrap().to_vec_async(&s).unwrap();
    let along_cols = dm.sum_axis(&s, 0, false).unwrap().to_vec_async(&s).unwrap();
    let max_cols = dm.max_axis(&s, 0, false).unwrap().to_vec_async(&s).unwrap();
    for r in 0..rows {
        let want = (0..cols).fold(T::from_u64(0), |a, c| T::wadd(a, host[r * cols + c]));
        assert_eq!(along_rows[r], want, "{name} sum_axis(1) row {r}");
    }
    for c in 0..cols {
        let want = (0..rows).fold(T::from_u64(0), |a, r| T::wadd(a, host[r * cols + c]));
        assert_eq!(along_cols[c], want, "{name} sum_axis(0) column {c}");
        let want = (0..rows).map(|r| host[r * cols + c]).max().unwrap();
        assert_eq!(max_cols[c], want, "{name} max_axis(0) column {c}");
    }
    // Division by zero in the cached op: all ones, as in kernels.
    let dx = s.to_device(&vec![T::from_u64(5), T::from_u64(0)]).unwrap();
    let dz = s.to_device(&vec![T::from_u64(0); 2]).unwrap();
    let q = dx.div(&s, &dz).unwrap().to_vec_async(&s).unwrap();
    assert_eq!(q, vec![T::from_u64(u64::MAX); 2], "{name} division by zero");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_elementwise_ops_reductions_and_scans_wrap_in_the_element_type() {
    let mut rng = Rng::new();
    ops_and_reductions::<i8>(&mut rng);
    ops_and_reductions::<u8>(&mut rng);
    ops_and_reductions::<i16>(&mut rng);
    ops_and_reductions::<u16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_vector_loads_and_stores() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u16], &mut [u16])>::build("narrow_vec_u16", |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len() / 4u64), |_| {
            let v = x.load_vec::<4>(i);
            out.store_vec::<4>(i, [v[3], v[2], v[1], v[0] + 1u16]);
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 4 * 1025;
    let x: Vec<u16> = rng.vec(n, u16::random);
    let dx = s.to_device(&x).unwrap();
    let mut out = s.to_device(&vec![0x5a5au16; n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n / 4, 128).unwrap(),
        (&dx, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for v in 0..n / 4 {
        let w = &x[4 * v..4 * v + 4];
        let want = [w[3], w[2], w[1], w[0].wrapping_add(1)];
        assert_eq!(&got[4 * v..4 * v + 4], &want, "vector {v}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_device_functions_local_and_shared_arrays() {
    use cudajit::codegen::DeviceFn;
    let c = ctx();
    let s = c.new_stream().unwrap();
    // A real call (not inlined): narrow arguments and result through the call ABI.
    let f = DeviceFn::<(i8, u16), i16>::build("narrow_fn", |_, (a, b)| {
        a.cast::<i16>() * 3i16 - b.cast::<i16>()
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&[i8], &[u16], &mut [i16], &mut [u8])>::build(
        "narrow_fns",
        |k, (a, b, out, bytes)| {
            let i = k.grid1();
            let t = k.thread_idx().x;
            let local = k.local_array::<u8>(4);
            let shared = k.shared_array::<i16>(128);
            let (x, y) = (a.at(i), b.at(i));
            k.for_range(0u32, 4u32, |_, j| {
                local.set(j, x.cast::<u8>() + j.cast::<u8>());
            });
            shared.set(t, f.call((x, y)));
            k.syncthreads();
            out.set(i, shared.at(127u32 - t));
            bytes.set(i, local.at(3u32) ^ local.at(1u32));
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 128 * 40;
    let a: Vec<i8> = rng.vec(n, i8::random);
    let b: Vec<u16> = rng.vec(n, u16::random);
    let (da, db) = (s.to_device(&a).unwrap(), s.to_device(&b).unwrap());
    let mut out = s.to_device(&vec![0x5a5ai16; n]).unwrap();
    let mut bytes = s.to_device(&vec![0x5au8; n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 128) as u32, 128),
        (&da, &db, &mut out, &mut bytes),
    )
    .unwrap();
    let (out, bytes) = (
        out.to_vec_async(&s).unwrap(),
        bytes.to_vec_async(&s).unwrap(),
    );
    let f = |a: i8, b: u16| (a as i16).wrapping_mul(3).wrapping_sub(b as i16);
    for i in 0..n {
        let j = i - i % 128 + 127 - i % 128;
        assert_eq!(out[i], f(a[j], b[j]), "thread {i}");
        let x = a[i] as u8;
        assert_eq!(
            bytes[i],
            x.wrapping_add(3) ^ x.wrapping_add(1),
            "thread {i}"
        );
    }
}
