//! Atomics on the GPU, on fresh random data each run: every operation's exact semantics per
//! element (no contention), then each under heavy contention (about a million threads on a few
//! addresses) with exact final values and checks of the old values returned.

use std::fmt::Debug;

use cudajit::codegen::{Expr, Kernel, Num, SliceMut};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

#[derive(Clone, Copy, Debug, PartialEq)]
enum A {
    Add,
    Sub,
    Min,
    Max,
    NanMin,
    NanMax,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// An element type under test: how to record each atomic, and the host model of it.
trait Case: Num + Copy + PartialEq + Debug + 'static {
    /// The operations this type supports.
    const OPS: &'static [A];
    const FLOAT: bool;
    /// Records `a.op(j, x)` (for `Cas`: expected `y`, new `x`).
    fn apply(op: A, a: SliceMut<Self>, j: Expr<u64>, x: Expr<Self>, y: Expr<Self>) -> Expr<Self>;
    /// The value memory holds after `op` on `old` with operands `x`, `y`.
    fn model(op: A, old: Self, x: Self, y: Self) -> Self;
    /// A random value, special values (0, extremes, NaN, ±inf, ...) often.
    fn random(r: &mut Rng) -> Self;
    /// A value made from a small unsigned integer (exact in every type).
    fn from_small(v: u64) -> Self;
    /// The inverse of `from_small`.
    fn to_small(self) -> u64;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn is_nan(self) -> bool;
}

fn common_apply<T: Num>(
    op: A,
    a: SliceMut<T>,
    j: Expr<u64>,
    x: Expr<T>,
    y: Expr<T>,
) -> Option<Expr<T>> {
    Some(match op {
        A::Add => a.atomic_add(j, x),
        A::Sub => a.atomic_sub(j, x),
        A::Min => a.atomic_min(j, x),
        A::Max => a.atomic_max(j, x),
        A::NanMin => a.atomic_nanmin(j, x),
        A::NanMax => a.atomic_nanmax(j, x),
        A::Exch => a.atomic_exch(j, x),
        A::Cas => a.atomic_cas(j, y, x),
        _ => return None,
    })
}

macro_rules! int_case {
    ($t:ty, $ops:expr, |$op:ident, $a:ident, $j:ident, $x:ident| $counter:expr) => {
        impl Case for $t {
            const OPS: &'static [A] = $ops;
            const FLOAT: bool = false;
            fn apply(
                $op: A,
                $a: SliceMut<$t>,
                $j: Expr<u64>,
                $x: Expr<$t>,
                y: Expr<$t>,
            ) -> Expr<$t> {
                if let Some(e) = common_apply($op, $a, $j, $x, y) {
                    return e;
                }
                match $op {
                    A::And => $a.atomic_and($j, $x),
                    A::Or => $a.atomic_or($j, $x),
                    A::Xor => $a.atomic_xor($j, $x),
                    _ => $counter,
                }
            }
            fn model(op: A, old: $t, x: $t, y: $t) -> $t {
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
                    A::Inc => {
                        if old >= x {
                            0
                        } else {
                            old + 1
                        }
                    }
                    A::Dec => {
                        if old == 0 || old > x {
                            x
                        } else {
                            old - 1
                        }
                    }
                }
            }
            fn random(r: &mut Rng) -> $t {
                let u = r.next_u64();
                match u % 8 {
                    0 => [0, 1, <$t>::MAX, <$t>::MIN, (0 as $t).wrapping_sub(1), 7]
                        [(u >> 8) as usize % 6],
                    1 | 2 => ((u >> 8) % 8) as $t,
                    _ => (u >> 3) as $t,
                }
            }
            fn from_small(v: u64) -> $t {
                v as $t
            }
            fn to_small(self) -> u64 {
                self as u64
            }
            fn is_nan(self) -> bool {
                false
            }
        }
    };
}

const INT_OPS: &[A] = &[
    A::Add,
    A::Sub,
    A::Min,
    A::Max,
    A::NanMin,
    A::NanMax,
    A::Exch,
    A::Cas,
    A::And,
    A::Or,
    A::Xor,
];
const COUNTER_OPS: &[A] = &[
    A::Add,
    A::Sub,
    A::Min,
    A::Max,
    A::NanMin,
    A::NanMax,
    A::Exch,
    A::Cas,
    A::And,
    A::Or,
    A::Xor,
    A::Inc,
    A::Dec,
];
const FLOAT_OPS: &[A] = &[
    A::Add,
    A::Sub,
    A::Min,
    A::Max,
    A::NanMin,
    A::NanMax,
    A::Exch,
    A::Cas,
];

int_case!(i32, INT_OPS, |op, a, j, x| unreachable!("{op:?} on i32"));
int_case!(i64, INT_OPS, |op, a, j, x| unreachable!("{op:?} on i64"));
int_case!(u32, COUNTER_OPS, |op, a, j, x| match op {
    A::Inc => a.atomic_inc(j, x),
    _ => a.atomic_dec(j, x),
});
int_case!(u64, COUNTER_OPS, |op, a, j, x| match op {
    A::Inc => a.atomic_inc(j, x),
    _ => a.atomic_dec(j, x),
});

macro_rules! float_case {
    ($t:ty, $f:ident) => {
        impl Case for $t {
            const OPS: &'static [A] = FLOAT_OPS;
            const FLOAT: bool = true;
            fn apply(op: A, a: SliceMut<$t>, j: Expr<u64>, x: Expr<$t>, y: Expr<$t>) -> Expr<$t> {
                common_apply(op, a, j, x, y).unwrap_or_else(|| unreachable!("{op:?} on floats"))
            }
            fn model(op: A, old: $t, x: $t, y: $t) -> $t {
                match op {
                    A::Add => old + x,
                    A::Sub => old - x,
                    // numba: Python's min(old, x) / max(old, x).
                    A::Min => {
                        if x < old {
                            x
                        } else {
                            old
                        }
                    }
                    A::Max => {
                        if x > old {
                            x
                        } else {
                            old
                        }
                    }
                    // IEEE minNum/maxNum (Rust's min/max): NaN ignored.
                    A::NanMin => old.min(x),
                    A::NanMax => old.max(x),
                    A::Exch => x,
                    A::Cas => {
                        if old.to_bits() == y.to_bits() {
                            x
                        } else {
                            old
                        }
                    }
                    _ => unreachable!(),
                }
            }
            fn random(r: &mut Rng) -> $t {
                let u = r.next_u64();
                if u % 8 == 0 {
                    let s = [
                        <$t>::NAN,
                        -0.0,
                        0.0,
                        <$t>::INFINITY,
                        <$t>::NEG_INFINITY,
                        1.0,
                        -1.0,
                        <$t>::MAX,
                    ];
                    return s[(u >> 8) as usize % s.len()];
                }
                // Normal numbers over a range of exponents (f32 atomic adds flush subnormals).
                let scale = (2.0 as $t).powi(((u >> 8) % 41) as i32 - 20);
                r.$f() * scale
            }
            fn from_small(v: u64) -> $t {
                v as $t
            }
            fn to_small(self) -> u64 {
                self as u64
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
float_case!(f32, f32);
float_case!(f64, f64);

/// Whether the GPU's `got` is the host's `want`: bit for bit, except that any NaN matches any
/// NaN (the hardware's NaN payloads differ from the host's) and, for NaN-ignoring min/max, a
/// zero matches a zero of either sign (IEEE leaves the sign of minNum(-0, +0) open).
fn same<T: Case>(op: A, got: T, want: T) -> bool {
    if got.bits() == want.bits() || (got.is_nan() && want.is_nan()) {
        return true;
    }
    matches!(op, A::NanMin | A::NanMax) && T::FLOAT && got == want
}

/// Every operation of `T`, one thread per element, no contention: old and new values exact.
fn semantics<T: Case>(name: &str, rng: &mut Rng) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let ops = T::OPS;
    let k = Kernel::<(&mut [T], &[T], &[T], &mut [T])>::build(name, |k, (a, v, w, old)| {
        let i = k.grid1();
        let n = v.len();
        k.if_(i.lt(n), |_| {
            let (x, y) = (v.at(i), w.at(i));
            for (slot, &op) in ops.iter().enumerate() {
                let j = n * slot as u64 + i;
                old.set(j, T::apply(op, a, j, x, y));
            }
        });
    })
    .unwrap();
    let n = 100_003usize;
    let init: Vec<T> = rng.vec(n * ops.len(), T::random);
    let v: Vec<T> = rng.vec(n, T::random);
    let cas_slot = ops.iter().position(|&o| o == A::Cas).unwrap();
    // Half the compare-and-swaps expect the value that is there.
    let w: Vec<T> = (0..n)
        .map(|i| {
            if rng.next_u64() % 2 == 0 {
                init[cas_slot * n + i]
            } else {
                T::random(rng)
            }
        })
        .collect();
    let mut da = s.to_device(&init).unwrap();
    let (dv, dw) = (s.to_device(&v).unwrap(), s.to_device(&w).unwrap());
    let mut dold = s
        .to_device(&vec![T::from_small(0xdead); n * ops.len()])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&mut da, &dv, &dw, &mut dold),
    )
    .unwrap();
    let (got, old) = (da.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    for (slot, &op) in ops.iter().enumerate() {
        for i in 0..n {
            let j = slot * n + i;
            assert_eq!(
                old[j].bits(),
                init[j].bits(),
                "{name} {op:?} old value, element {i}"
            );
            let want = T::model(op, init[j], v[i], w[i]);
            assert!(
                same(op, got[j], want),
                "{name} {op:?} element {i}: {:?} op {:?} (expected {:?}) gave {:?}, want {want:?}",
                init[j],
                v[i],
                w[i],
                got[j]
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_atomic_on_every_type_matches_the_host_model() {
    let mut rng = Rng::new();
    semantics::<i32>("atomic_sem_i32", &mut rng);
    semantics::<u32>("atomic_sem_u32", &mut rng);
    semantics::<i64>("atomic_sem_i64", &mut rng);
    semantics::<u64>("atomic_sem_u64", &mut rng);
    semantics::<f32>("atomic_sem_f32", &mut rng);
    semantics::<f64>("atomic_sem_f64", &mut rng);
}

/// A 64-bit mix of a value's bits, for order-free multiset comparisons.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const THREADS: usize = 1 << 20;
const ADDRS: usize = 64;

/// Each op of `ops` under contention: `THREADS` threads, thread `i` applying its operand to
/// address `i % ADDRS`. Final values must equal the host's fold (the ops are order-free), and
/// the old values must chain: per address, {olds} + {final} = {initial} + {op(old, operand)}
/// as multisets, which fails if any update was lost or applied twice.
fn contention<T: Case>(name: &str, ops: &[A], rng: &mut Rng, v: &[T]) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &[T], &mut [T])>::build(name, |k, (a, v, old)| {
        let i = k.grid1();
        let n = v.len();
        k.if_(i.lt(n), |_| {
            let x = v.at(i);
            for (slot, &op) in ops.iter().enumerate() {
                let j = i % ADDRS as u64 + (slot * ADDRS) as u64;
                old.set(n * slot as u64 + i, T::apply(op, a, j, x, x));
            }
        });
    })
    .unwrap();
    let n = v.len();
    let init: Vec<T> = rng.vec(ADDRS * ops.len(), |r| loop {
        let x = T::random(r);
        if !x.is_nan() {
            break x;
        }
    });
    let mut da = s.to_device(&init).unwrap();
    let dv = s.to_device(v).unwrap();
    let mut dold = s
        .to_device(&vec![T::from_small(0xdead); n * ops.len()])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&mut da, &dv, &mut dold),
    )
    .unwrap();
    let (got, old) = (da.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    for (slot, &op) in ops.iter().enumerate() {
        let base = slot * ADDRS;
        let mut fin: Vec<T> = init[base..base + ADDRS].to_vec();
        let mut lhs = vec![0u64; ADDRS];
        let mut rhs = vec![0u64; ADDRS];
        for i in 0..n {
            let j = i % ADDRS;
            fin[j] = T::model(op, fin[j], v[i], v[i]);
            let o = old[slot * n + i];
            lhs[j] = lhs[j].wrapping_add(mix(o.bits()));
            rhs[j] = rhs[j].wrapping_add(mix(T::model(op, o, v[i], v[i]).bits()));
        }
        // Float sums depend on the order: float_add_under_contention bounds them instead.
        let order_free = !(T::FLOAT && op == A::Add);
        for j in 0..ADDRS {
            assert!(
                !order_free || same(op, got[base + j], fin[j]),
                "{name} {op:?} address {j}: got {:?}, want {:?}",
                got[base + j],
                fin[j]
            );
            let l = lhs[j].wrapping_add(mix(got[base + j].bits()));
            let r = rhs[j].wrapping_add(mix(init[base + j].bits()));
            assert_eq!(
                l, r,
                "{name} {op:?} address {j}: the old values do not chain"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_atomics_under_contention() {
    let mut rng = Rng::new();
    let ops = [A::Add, A::Sub, A::And, A::Or, A::Xor, A::Min, A::Max];
    let v: Vec<i32> = rng.vec(THREADS, |r| r.next_u64() as i32);
    contention::<i32>("contend_i32", &ops, &mut rng, &v);
    let v: Vec<u32> = rng.vec(THREADS, |r| r.next_u64() as u32);
    contention::<u32>("contend_u32", &ops, &mut rng, &v);
    // Sparse bits too, so and/or do not saturate after a few updates.
    let v: Vec<i64> = rng.vec(THREADS, |r| {
        (r.next_u64() & r.next_u64() & r.next_u64()) as i64
    });
    contention::<i64>("contend_i64", &ops, &mut rng, &v);
    let v: Vec<u64> = rng.vec(THREADS, |r| !(r.next_u64() & r.next_u64() & r.next_u64()));
    contention::<u64>("contend_u64", &ops, &mut rng, &v);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_min_max_under_contention() {
    // Exact: min/max do not round. A few NaN operands: ignored by every variant.
    let mut rng = Rng::new();
    let ops = [A::Min, A::Max, A::NanMin, A::NanMax];
    let v: Vec<f32> = rng.vec(THREADS, |r| {
        if r.next_u64() % 1000 == 0 {
            f32::NAN
        } else {
            r.f32() * 100.0
        }
    });
    contention::<f32>("contend_minmax_f32", &ops, &mut rng, &v);
    let v: Vec<f64> = rng.vec(THREADS, |r| {
        if r.next_u64() % 1000 == 0 {
            f64::NAN
        } else {
            r.f64() * 1e10
        }
    });
    contention::<f64>("contend_minmax_f64", &ops, &mut rng, &v);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_min_max_keep_or_replace_a_nan_in_memory() {
    // numba's max/min keep a NaN already in memory; nanmax/nanmin replace it.
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [f32], &[f32])>::build("nan_in_memory", |k, (a, v)| {
        let i = k.grid1();
        k.if_(i.lt(v.len()), |_| {
            let x = v.at(i);
            a.atomic_max(0u32, x);
            a.atomic_min(1u32, x);
            a.atomic_nanmax(2u32, x);
            a.atomic_nanmin(3u32, x);
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let v: Vec<f32> = rng.vec(THREADS / 4, |r| r.f32());
    let mut da = s.to_device(&[f32::NAN; 4]).unwrap();
    let dv = s.to_device(&v).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(v.len(), 256).unwrap(),
        (&mut da, &dv),
    )
    .unwrap();
    let got = da.to_vec_async(&s).unwrap();
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = v.iter().copied().fold(f32::INFINITY, f32::min);
    assert!(got[0].is_nan() && got[1].is_nan(), "{got:?}");
    assert_eq!((got[2], got[3]), (max, min));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn float_add_under_contention() {
    // The old values chain exactly (each thread's new value is fl(old + x), as on the host);
    // the totals agree with an f64 sum within the bound for any summation order.
    let mut rng = Rng::new();
    let v: Vec<f32> = rng.vec(THREADS, |r| r.f32());
    contention::<f32>("contend_add_f32", &[A::Add], &mut rng, &v);
    let v: Vec<f64> = rng.vec(THREADS, |r| r.f64());
    contention::<f64>("contend_add_f64", &[A::Add], &mut rng, &v);

    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [f32], &mut [f64], &[f32])>::build("sum_f32_f64", |k, (a, b, v)| {
        let i = k.grid1();
        k.if_(i.lt(v.len()), |_| {
            let j = i % ADDRS as u64;
            a.atomic_add(j, v.at(i));
            b.atomic_add(j, v.at(i).cast::<f64>());
        });
    })
    .unwrap();
    let v: Vec<f32> = rng.vec(THREADS, |r| r.f32() * 3.0);
    let mut da = s.to_device(&vec![0.0f32; ADDRS]).unwrap();
    let mut db = s.to_device(&vec![0.0f64; ADDRS]).unwrap();
    let dv = s.to_device(&v).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(THREADS, 256).unwrap(),
        (&mut da, &mut db, &dv),
    )
    .unwrap();
    let (ga, gb) = (da.to_vec_async(&s).unwrap(), db.to_vec_async(&s).unwrap());
    let per = (THREADS / ADDRS) as f64;
    for j in 0..ADDRS {
        let (mut sum, mut abs) = (0.0f64, 0.0f64);
        for i in (j..THREADS).step_by(ADDRS) {
            sum += v[i] as f64;
            abs += (v[i] as f64).abs();
        }
        // Recursive summation in any order: |error| <= (n - 1) u sum|x| / (1 - (n - 1) u).
        let bound = |u: f64| per * u * abs / (1.0 - per * u) + f64::MIN_POSITIVE;
        let e32 = (ga[j] as f64 - sum).abs();
        assert!(
            e32 <= bound(2f64.powi(-24)),
            "f32 address {j}: {} vs {sum}",
            ga[j]
        );
        let e64 = (gb[j] - sum).abs();
        // (The host's f64 sum has an error of the same size.)
        assert!(
            e64 <= 2.0 * bound(2f64.powi(-53)),
            "f64 address {j}: {} vs {sum}",
            gb[j]
        );
    }
}

/// `THREADS` threads add 1 to one counter: the old values are a permutation of 0..THREADS.
fn add_one<T: Case>(name: &str) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &mut [T])>::build(name, |k, (a, old)| {
        let i = k.grid1();
        k.if_(i.lt(old.len()), |_| {
            old.set(i, a.atomic_add(0u32, T::from_small(1)))
        });
    })
    .unwrap();
    let mut da = s.to_device(&[T::from_small(0)]).unwrap();
    let mut dold = s
        .to_device(&vec![T::from_small(0xdead_beef); THREADS])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(THREADS, 256).unwrap(),
        (&mut da, &mut dold),
    )
    .unwrap();
    assert_eq!(da.to_vec_async(&s).unwrap()[0].to_small(), THREADS as u64);
    let mut seen = vec![false; THREADS];
    for (i, o) in dold.to_vec_async(&s).unwrap().into_iter().enumerate() {
        let o = o.to_small() as usize;
        assert!(
            o < THREADS && !seen[o],
            "{name}: thread {i} saw {o} (twice, or out of range)"
        );
        seen[o] = true;
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn add_one_old_values_are_a_permutation() {
    add_one::<u32>("add_one_u32");
    add_one::<i64>("add_one_i64");
    // 2^20 < 2^24: every count is exact in f32.
    add_one::<f32>("add_one_f32");
    add_one::<f64>("add_one_f64");
}

/// Exchange under contention: thread `i` writes the unique value `salt + i + 1`. The final value
/// is one of them, and the old values are the initial value (`salt`) and every written value but
/// the final, each exactly once.
fn exch<T: Case>(name: &str, salt: u64) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &[T], &mut [T])>::build(name, |k, (a, v, old)| {
        let i = k.grid1();
        k.if_(i.lt(v.len()), |_| {
            old.set(i, a.atomic_exch(i % ADDRS as u64, v.at(i)))
        });
    })
    .unwrap();
    let v: Vec<T> = (0..THREADS)
        .map(|i| T::from_small(salt + i as u64 + 1))
        .collect();
    let mut da = s.to_device(&vec![T::from_small(salt); ADDRS]).unwrap();
    let dv = s.to_device(&v).unwrap();
    let mut dold = s.to_device(&vec![T::from_small(0); THREADS]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(THREADS, 256).unwrap(),
        (&mut da, &dv, &mut dold),
    )
    .unwrap();
    let (fin, old) = (da.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    // seen[0] counts the initial values; seen[t + 1] thread t's value.
    let mut seen = vec![0u32; THREADS + 1];
    let decode = |x: T| -> usize {
        let d = x.to_small().wrapping_sub(salt);
        assert!(d <= THREADS as u64, "{name}: {x:?} was never written");
        d as usize
    };
    for (i, &o) in old.iter().enumerate() {
        let d = decode(o);
        assert!(
            d == 0 || (d - 1) % ADDRS == i % ADDRS,
            "{name}: thread {i} got another address's value"
        );
        seen[d] += 1;
    }
    assert_eq!(
        seen[0] as usize, ADDRS,
        "{name}: each initial value is returned once"
    );
    for (j, &f) in fin.iter().enumerate() {
        let d = decode(f);
        assert!(
            d >= 1 && (d - 1) % ADDRS == j,
            "{name}: final value {f:?} at address {j}"
        );
        assert_eq!(
            seen[d], 0,
            "{name}: the final value was also returned as an old value"
        );
        seen[d] = 1;
    }
    assert!(
        seen[1..].iter().all(|&c| c == 1),
        "{name}: a value returned twice or never"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exch_returns_every_written_value_once() {
    let mut rng = Rng::new();
    // Small salts keep every value exact in f32 (below 2^24).
    let salt = rng.next_u64() % (1 << 22);
    exch::<u32>("exch_u32", salt);
    exch::<i64>("exch_i64", rng.next_u64() >> 2);
    exch::<f32>("exch_f32", salt);
    exch::<f64>("exch_f64", salt);
}

/// A lock-free increment built on `atomic_cas` in a `while_` loop: counters exact, and the
/// values each thread swapped out are a permutation of 0..count per counter.
fn cas_increment<T: Case>(name: &str) {
    const COUNTERS: usize = 256;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &mut [T])>::build(name, |k, (a, won)| {
        let i = k.grid1();
        k.if_(i.lt(won.len()), |k| {
            let j = i % COUNTERS as u64;
            let seen = k.var(a.at(j));
            let done = k.var(false);
            k.while_(
                |_| !done.get(),
                |_| {
                    let expected = seen.get();
                    let old = a.atomic_cas(j, expected, expected + T::from_small(1));
                    done.set(old.eq(expected));
                    seen.set(old);
                },
            );
            won.set(i, seen.get());
        });
    })
    .unwrap();
    let mut da = s.to_device(&vec![T::from_small(0); COUNTERS]).unwrap();
    let mut dwon = s
        .to_device(&vec![T::from_small(0xdead_beef); THREADS])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(THREADS, 256).unwrap(),
        (&mut da, &mut dwon),
    )
    .unwrap();
    let per = THREADS / COUNTERS;
    for (j, x) in da.to_vec_async(&s).unwrap().into_iter().enumerate() {
        assert_eq!(x.to_small() as usize, per, "{name}: counter {j}");
    }
    let mut seen = vec![false; THREADS];
    for (i, w) in dwon.to_vec_async(&s).unwrap().into_iter().enumerate() {
        let w = w.to_small() as usize;
        assert!(w < per, "{name}: thread {i} swapped out {w}");
        let slot = (i % COUNTERS) * per + w;
        assert!(
            !seen[slot],
            "{name}: two threads swapped out {w} of counter {}",
            i % COUNTERS
        );
        seen[slot] = true;
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cas_loop_increment_counts_exactly() {
    cas_increment::<u32>("cas_inc_u32");
    cas_increment::<i64>("cas_inc_i64");
    cas_increment::<f32>("cas_inc_f32");
    cas_increment::<f64>("cas_inc_f64");
}

/// inc/dec under contention with wrap limits: from a start in 0..=limit, `c` increments give
/// (start + c) mod (limit + 1) in any order, and the old values are start, start + 1, ... mod
/// (limit + 1) (decrements: downwards): checked value by value. Thread `i` uses address
/// `i % addrs`.
fn inc_dec<T: Case>(name: &str, addrs: usize, rng: &mut Rng) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k =
        Kernel::<(&mut [T], &mut [T], &[T], &mut [T])>::build(name, |k, (inc, dec, lim, old)| {
            let i = k.grid1();
            let n = old.len() / 2u64;
            k.if_(i.lt(n), |_| {
                let j = i % addrs as u64;
                old.set(i, T::apply(A::Inc, inc, j, lim.at(j), lim.at(j)));
                old.set(n + i, T::apply(A::Dec, dec, j, lim.at(j), lim.at(j)));
            });
        })
        .unwrap();
    let per = (THREADS / addrs) as u64;
    // Limits from below to above the number of updates per address, so some wrap many times.
    let lim: Vec<u64> = rng.vec(addrs, |r| r.next_u64() % (2 * per));
    let start: Vec<u64> = (0..2 * addrs)
        .map(|j| rng.next_u64() % (lim[j % addrs] + 1))
        .collect();
    let conv = |v: &[u64]| v.iter().map(|&x| T::from_small(x)).collect::<Vec<T>>();
    let mut dinc = s.to_device(&conv(&start[..addrs])).unwrap();
    let mut ddec = s.to_device(&conv(&start[addrs..])).unwrap();
    let dlim = s.to_device(&conv(&lim)).unwrap();
    let mut dold = s
        .to_device(&vec![T::from_small(0xdead_beef); 2 * THREADS])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(THREADS, 256).unwrap(),
        (&mut dinc, &mut ddec, &dlim, &mut dold),
    )
    .unwrap();
    let (gi, gd, old) = (
        dinc.to_vec_async(&s).unwrap(),
        ddec.to_vec_async(&s).unwrap(),
        dold.to_vec_async(&s).unwrap(),
    );
    for j in 0..addrs {
        let m = lim[j] + 1;
        let (si, sd) = (start[j], start[addrs + j]);
        assert_eq!(
            gi[j].to_small(),
            (si + per) % m,
            "{name} inc address {j} (limit {})",
            lim[j]
        );
        assert_eq!(
            gd[j].to_small(),
            (sd + m * per - per) % m,
            "{name} dec address {j} (limit {})",
            lim[j]
        );
        // How often each value 0..m must appear among the old values: value x is step
        // k = (x - start) mod m (inc) or (start - x) mod m (dec), taken at k, k + m, ... < per.
        let expect = |k: u64| if k < per { (per - 1 - k) / m + 1 } else { 0 };
        let mut count_inc = vec![0u64; m as usize];
        let mut count_dec = vec![0u64; m as usize];
        for i in (j..THREADS).step_by(addrs) {
            let (a, b) = (old[i].to_small(), old[THREADS + i].to_small());
            assert!(
                a < m && b < m,
                "{name} address {j}: old values {a}, {b} above the limit {}",
                lim[j]
            );
            count_inc[a as usize] += 1;
            count_dec[b as usize] += 1;
        }
        for x in 0..m {
            assert_eq!(
                count_inc[x as usize],
                expect((x + m - si) % m),
                "{name} inc address {j} value {x}"
            );
            assert_eq!(
                count_dec[x as usize],
                expect((sd + m - x) % m),
                "{name} dec address {j} value {x}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn inc_dec_wrap_under_contention() {
    let mut rng = Rng::new();
    inc_dec::<u32>("inc_dec_u32", 64, &mut rng);
    // u64 is a compare-and-swap loop: spread it over more addresses to bound the retries.
    inc_dec::<u64>("inc_dec_u64", 256, &mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shared_memory_histogram() {
    // Per block: a histogram in shared memory (atomic_add, atomic_inc on u32 and atomic_add on
    // f32), then merged into global memory with atomics; exact against the host.
    const BINS: usize = 64;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u32], &mut [u32], &mut [u32], &mut [f32])>::build(
        "shared_histogram",
        |k, (x, hist, wraps, weights)| {
            let t = k.thread_idx().x;
            let i = k.grid1();
            let h = k.shared_array::<u32>(BINS);
            let cnt = k.shared_array::<u32>(BINS);
            let wsum = k.shared_array::<f32>(BINS);
            k.if_(t.lt(BINS as u32), |_| {
                h.set(t, 0u32);
                cnt.set(t, 0u32);
                wsum.set(t, 0.0f32);
            });
            k.syncthreads();
            k.if_(i.lt(x.len()), |_| {
                let b = x.at(i) % BINS as u32;
                h.atomic_add(b, 1u32);
                cnt.atomic_inc(b, 9u32);
                wsum.atomic_add(b, 0.5f32);
            });
            k.syncthreads();
            k.if_(t.lt(BINS as u32), |_| {
                hist.atomic_add(t, h.at(t));
                wraps.atomic_add(t, cnt.at(t));
                weights.atomic_add(t, wsum.at(t));
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let x: Vec<u32> = rng.vec(THREADS + 77, |r| r.next_u64() as u32);
    let dx = s.to_device(&x).unwrap();
    let mut dh = s.to_device(&[0u32; BINS]).unwrap();
    let mut dw = s.to_device(&[0u32; BINS]).unwrap();
    let mut df = s.to_device(&[0f32; BINS]).unwrap();
    let block = 256usize;
    k.launch(
        &s,
        LaunchConfig::for_num_elems(x.len(), block as u32).unwrap(),
        (&dx, &mut dh, &mut dw, &mut df),
    )
    .unwrap();
    let mut hist = [0u32; BINS];
    let mut wraps = [0u32; BINS];
    for chunk in x.chunks(block) {
        let mut per_block = [0u32; BINS];
        for &v in chunk {
            per_block[v as usize % BINS] += 1;
        }
        for b in 0..BINS {
            hist[b] += per_block[b];
            wraps[b] += per_block[b] % 10;
        }
    }
    assert_eq!(dh.to_vec_async(&s).unwrap(), hist.to_vec());
    assert_eq!(dw.to_vec_async(&s).unwrap(), wraps.to_vec());
    let weights: Vec<f32> = hist.iter().map(|&h| h as f32 * 0.5).collect();
    assert_eq!(df.to_vec_async(&s).unwrap(), weights);
}
