//! Atomics on the narrow integers `i8`, `u8`, `i16`, `u16` on the GPU (compare-and-swap loops
//! on the containing 32-bit word), on fresh random data each run, against host models: every
//! operation exactly with neighbouring elements updated at the same time, under contention on
//! the elements of two words, next to plain stores to the other elements of the word, and in
//! shared memory.

use cudajit::codegen::{Expr, Int, Kernel, SliceMut};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::narrow::{poison, Narrow};

/// The atomics of narrow integers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum A {
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
}

const OPS: [A; 11] = [
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

/// Records `a.op(j, x)` (CAS: expected `y`, new `x`).
fn apply<T: Int>(op: A, a: SliceMut<T>, j: Expr<u64>, x: Expr<T>, y: Expr<T>) -> Expr<T> {
    match op {
        A::Add => a.atomic_add(j, x),
        A::Sub => a.atomic_sub(j, x),
        A::Min => a.atomic_min(j, x),
        A::Max => a.atomic_max(j, x),
        A::NanMin => a.atomic_nanmin(j, x),
        A::NanMax => a.atomic_nanmax(j, x),
        A::Exch => a.atomic_exch(j, x),
        A::Cas => a.atomic_cas(j, y, x),
        A::And => a.atomic_and(j, x),
        A::Or => a.atomic_or(j, x),
        A::Xor => a.atomic_xor(j, x),
    }
}

/// Every atomic, one thread per element: old and new values exact. Thread `i` updates element
/// `i` of each operation's block, so the other bytes of its word are updated at the same time
/// by its neighbours (which must not be clobbered).
fn atomic_semantics<T: Narrow>(rng: &mut Rng) {
    let name = format!("narrow_atomics_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &[T], &[T], &mut [T])>::build(&name, |k, (a, v, w, old)| {
        let i = k.grid1();
        let n = v.len();
        k.if_(i.lt(n), |_| {
            let (x, y) = (v.at(i), w.at(i));
            for (slot, &op) in OPS.iter().enumerate() {
                let j = n * slot as u64 + i;
                old.set(j, apply(op, a, j, x, y));
            }
        });
    })
    .unwrap();
    let n = 20_011usize;
    let init: Vec<T> = rng.vec(n * OPS.len(), T::random);
    let v: Vec<T> = rng.vec(n, T::random);
    let cas = OPS.iter().position(|&o| o == A::Cas).unwrap();
    // Half the compare-and-swaps expect the value that is there.
    let w: Vec<T> = (0..n)
        .map(|i| {
            if rng.next_u64() % 2 == 0 {
                init[cas * n + i]
            } else {
                T::random(rng)
            }
        })
        .collect();
    let mut da = s.to_device(&init).unwrap();
    let (dv, dw) = (s.to_device(&v).unwrap(), s.to_device(&w).unwrap());
    let mut dold = s.to_device(&vec![poison::<T>(); n * OPS.len()]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&mut da, &dv, &dw, &mut dold),
    )
    .unwrap();
    let (got, old) = (da.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    for (slot, &op) in OPS.iter().enumerate() {
        for i in 0..n {
            let j = slot * n + i;
            assert_eq!(old[j], init[j], "{name} {op:?} old value, element {i}");
            let want = T::atomic(op, init[j], v[i], w[i]);
            assert_eq!(
                got[j], want,
                "{name} {op:?} element {i}: {:?} op {:?} (expected {:?})",
                init[j], v[i], w[i]
            );
        }
    }
}

/// A 64-bit mix of a value's bits, for order-free multiset comparisons.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every atomic under contention: `THREADS` threads on the elements of two 32-bit words
/// (8 bytes or 4 halves), thread `i` on element `i % elems`. Final values must equal the
/// host's fold for the order-free operations, and the old values must chain: per element,
/// {olds} + {final} = {initial} + {op(old, operand)} as multisets, which fails if an update
/// was lost, applied twice, or clobbered by a neighbour's.
fn atomic_contention<T: Narrow>(rng: &mut Rng) {
    const THREADS: usize = 1 << 16;
    let elems = 8 / T::TY.size();
    let name = format!("narrow_contention_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &[T], &[T], &mut [T])>::build(&name, |k, (a, v, w, old)| {
        let i = k.grid1();
        let n = v.len();
        k.if_(i.lt(n), |_| {
            let (x, y) = (v.at(i), w.at(i));
            for (slot, &op) in OPS.iter().enumerate() {
                let j = i % elems as u64 + (slot * elems) as u64;
                old.set(n * slot as u64 + i, apply(op, a, j, x, y));
            }
        });
    })
    .unwrap();
    let n = THREADS;
    // Small values, so that compare-and-swaps often hit.
    let small = |r: &mut Rng| T::from_u64(r.next_u64() % 4);
    let init: Vec<T> = rng.vec(elems * OPS.len(), small);
    let v: Vec<T> = rng.vec(n, T::random);
    let w: Vec<T> = rng.vec(n, small);
    let mut da = s.to_device(&init).unwrap();
    let (dv, dw) = (s.to_device(&v).unwrap(), s.to_device(&w).unwrap());
    let mut dold = s.to_device(&vec![poison::<T>(); n * OPS.len()]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&mut da, &dv, &dw, &mut dold),
    )
    .unwrap();
    let (got, old) = (da.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    for (slot, &op) in OPS.iter().enumerate() {
        let base = slot * elems;
        let mut fin: Vec<T> = init[base..base + elems].to_vec();
        let (mut lhs, mut rhs) = (vec![0u64; elems], vec![0u64; elems]);
        for i in 0..n {
            let j = i % elems;
            fin[j] = T::atomic(op, fin[j], v[i], w[i]);
            let o = old[slot * n + i];
            lhs[j] = lhs[j].wrapping_add(mix(o.to_bits()));
            rhs[j] = rhs[j].wrapping_add(mix(T::atomic(op, o, v[i], w[i]).to_bits()));
        }
        for j in 0..elems {
            let (f, i0) = (got[base + j], init[base + j]);
            if !matches!(op, A::Exch | A::Cas) {
                assert_eq!(f, fin[j], "{name} {op:?} element {j}: final value");
            }
            assert_eq!(
                lhs[j].wrapping_add(mix(f.to_bits())),
                rhs[j].wrapping_add(mix(i0.to_bits())),
                "{name} {op:?} element {j}: the old values do not chain (an update lost or doubled)"
            );
        }
    }
}

/// Atomic adds on the first element of each word while other threads of the same warps store
/// to the word's other elements with plain stores: no store may be lost to a compare-and-swap
/// that writes back a stale neighbour, and no add may be lost.
fn atomics_next_to_plain_stores<T: Narrow>(rng: &mut Rng) {
    const WORDS: usize = 64;
    const ROUNDS: u32 = 16;
    let per = 4 / T::TY.size();
    let name = format!("narrow_neighbours_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [T], &[T])>::build(&name, |k, (a, v)| {
        let i = k.grid1();
        let (g, r) = (i / per as u64, i % per as u64);
        let w = g % WORDS as u64;
        k.for_range(0u32, ROUNDS, |k, round| {
            k.if_else(
                r.eq(0u64),
                |_| {
                    a.atomic_add(w * per as u64, Expr::lit(T::from_u64(1)));
                },
                |k| {
                    // One storing thread per element: the first WORDS groups.
                    k.if_(g.lt(WORDS as u64), |_| {
                        a.set(w * per as u64 + r, v.at(i) + round.cast::<T>());
                    });
                },
            );
        });
    })
    .unwrap();
    let threads = 1usize << 15;
    let init: Vec<T> = rng.vec(WORDS * per, T::random);
    let v: Vec<T> = rng.vec(threads, T::random);
    let mut da = s.to_device(&init).unwrap();
    let dv = s.to_device(&v).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(threads, 256).unwrap(),
        (&mut da, &dv),
    )
    .unwrap();
    let got = da.to_vec_async(&s).unwrap();
    let adders = threads / per / WORDS;
    for w in 0..WORDS {
        let adds = T::from_u64((adders as u64) * ROUNDS as u64);
        assert_eq!(
            got[w * per],
            T::wadd(init[w * per], adds),
            "{name} word {w}: adds"
        );
        for r in 1..per {
            let i = w * per + r;
            let want = T::wadd(v[i], T::from_u64(ROUNDS as u64 - 1));
            assert_eq!(
                got[i], want,
                "{name} word {w} element {r}: the last plain store"
            );
        }
    }
}

/// Atomics on a shared-memory array: a per-block histogram of 16 bins (counts wrap in `T`),
/// a per-bin maximum and a per-bin xor, written out by the first 16 threads.
fn shared_atomics<T: Narrow>(rng: &mut Rng) {
    let name = format!("narrow_shared_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u32], &[T], &mut [T])>::build(&name, |k, (bins, v, out)| {
        let i = k.grid1();
        let t = k.thread_idx().x;
        let (count, max, xor) = (
            k.shared_array::<T>(16),
            k.shared_array::<T>(16),
            k.shared_array::<T>(16),
        );
        k.if_(t.lt(16u32), |_| {
            count.set(t, Expr::lit(T::from_u64(0)));
            max.set(t, Expr::lit(T::LIMITS.0));
            xor.set(t, Expr::lit(T::from_u64(0)));
        });
        k.syncthreads();
        let b = bins.at(i);
        count.atomic_add(b, Expr::lit(T::from_u64(1)));
        max.atomic_max(b, v.at(i));
        xor.atomic_xor(b, v.at(i));
        k.syncthreads();
        k.if_(t.lt(16u32), |_| {
            let o = k.block_idx().x.cast::<u64>() * 48u64 + t.cast::<u64>();
            out.set(o, count.at(t));
            out.set(o + 16u64, max.at(t));
            out.set(o + 32u64, xor.at(t));
        });
    })
    .unwrap();
    let (blocks, block) = (40usize, 512usize);
    let n = blocks * block;
    // Half the threads of a block fall into one bin: counts past 255 wrap in u8.
    let bins: Vec<u32> = rng.vec(n, |r| {
        let u = r.next_u64();
        if u % 2 == 0 {
            3
        } else {
            ((u >> 8) % 16) as u32
        }
    });
    let v: Vec<T> = rng.vec(n, T::random);
    let (db, dv) = (s.to_device(&bins).unwrap(), s.to_device(&v).unwrap());
    let mut out = s.to_device(&vec![poison::<T>(); blocks * 48]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(blocks as u32, block as u32),
        (&db, &dv, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for blk in 0..blocks {
        let mut want = [T::from_u64(0); 48];
        for bin in 0..16 {
            want[16 + bin] = T::LIMITS.0;
        }
        for t in 0..block {
            let (b, x) = (bins[blk * block + t] as usize, v[blk * block + t]);
            want[b] = T::wadd(want[b], T::from_u64(1));
            want[16 + b] = T::atomic(A::Max, want[16 + b], x, x);
            want[32 + b] = T::atomic(A::Xor, want[32 + b], x, x);
        }
        assert_eq!(
            &got[blk * 48..blk * 48 + 48],
            &want[..],
            "{name} block {blk}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_atomics_match_the_host_model() {
    let mut rng = Rng::new();
    atomic_semantics::<i8>(&mut rng);
    atomic_semantics::<u8>(&mut rng);
    atomic_semantics::<i16>(&mut rng);
    atomic_semantics::<u16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_atomics_under_contention_within_one_word() {
    let mut rng = Rng::new();
    atomic_contention::<i8>(&mut rng);
    atomic_contention::<u8>(&mut rng);
    atomic_contention::<i16>(&mut rng);
    atomic_contention::<u16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_atomics_do_not_clobber_plain_stores_to_neighbours() {
    let mut rng = Rng::new();
    atomics_next_to_plain_stores::<i8>(&mut rng);
    atomics_next_to_plain_stores::<u8>(&mut rng);
    atomics_next_to_plain_stores::<i16>(&mut rng);
    atomics_next_to_plain_stores::<u16>(&mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_atomics_in_shared_memory() {
    let mut rng = Rng::new();
    shared_atomics::<i8>(&mut rng);
    shared_atomics::<u8>(&mut rng);
    shared_atomics::<i16>(&mut rng);
    shared_atomics::<u16>(&mut rng);
}
