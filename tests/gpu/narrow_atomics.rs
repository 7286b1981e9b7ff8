//! Atomics on the narrow integers `i8`, `u8`, `i16`, `u16` on the GPU (compare-and-swap loops
//! on the containing 32-bit word), on fresh random data each run, against host models: every
//! operation exactly with neighbouring elements updated at the same time, under contention on
//! the elements of two words, next to plain stores to the other elements of the word, and in
//! shared memory.

use cudajit::codegen::{Expr, Int, Kernel, PtxOptions, SliceMut};
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

/// How a thread computes its operand from its `i32` input `w` before truncating it to the
/// narrow type: in registers, not loaded from memory (the fuzzer's campaign found an `i16`
/// `atomic_nanmax` whose operand was `(-w).cast::<i16>()` ending below its start value).
const FORMS: [&str; 3] = ["-w", "w", "w + 1"];
const MINMAX: [A; 4] = [A::Max, A::Min, A::NanMax, A::NanMin];

fn form(f: usize, w: Expr<i32>) -> Expr<i32> {
    match f {
        0 => -w,
        1 => w,
        _ => w + 1i32,
    }
}

fn form_host(f: usize, w: i32) -> i32 {
    match f {
        0 => w.wrapping_neg(),
        1 => w,
        _ => w.wrapping_add(1),
    }
}

/// Min/max atomics, on shared and global words at a dynamic index, with operands computed in
/// registers as truncated `i32`s (the sign of the narrow value is its own bit 7 or 15, not the
/// `i32`'s), plus the same comparisons without atomics. The final words are exact; every old
/// value is the start value or one of the operands at its index.
fn truncated_operands<T: Narrow>(rng: &mut Rng) {
    let name = format!("narrow_truncated_{}", T::TY.name());
    let c = ctx();
    let s = c.new_stream().unwrap();
    let slots = FORMS.len() * MINMAX.len();
    let big = T::from_u64(if T::TY.size() == 1 { 100 } else { 28133 });
    let start = [T::from_u64(0), big, T::from_u64(1), T::from_u64(2)];
    let k = Kernel::<(&[i32], &[u32], &mut [T], &mut [T], &mut [T], &mut [T])>::build(
        &name,
        |k, (w, bins, glob, olds, plain, fin)| {
            let t = k.thread_idx().x;
            let i = k.grid1();
            let sh = k.shared_array::<T>(slots * 4);
            k.if_(t.lt(slots as u32 * 4), |_| {
                sh.set(t, glob.at(t.cast::<u64>()));
            });
            k.syncthreads();
            let idx = (bins.at(i) % 4u32).cast::<u64>();
            for f in 0..FORMS.len() {
                let v = form(f, w.at(i)).cast::<T>();
                let base = (f * MINMAX.len() * 4) as u64;
                for (m, &op) in MINMAX.iter().enumerate() {
                    let slot = base + m as u64 * 4;
                    let o = i * (2 * slots) as u64 + 2 * (f * MINMAX.len() + m) as u64;
                    olds.set(o, apply(op, sh, idx + slot, v, v));
                    olds.set(
                        o + 1u64,
                        apply(op, glob, idx + slot + (slots * 4) as u64, v, v),
                    );
                }
                plain.set(i * 6u64 + (2 * f) as u64, v.max(Expr::lit(big)));
                plain.set(i * 6u64 + (2 * f + 1) as u64, v.min(Expr::lit(big)));
            }
            k.syncthreads();
            k.if_(t.lt(slots as u32 * 4), |_| {
                fin.set(t, sh.at(t));
            });
        },
    )
    .unwrap();
    let n = 256usize;
    let w: Vec<i32> = rng.vec(n, |r| {
        let u = r.next_u64();
        let low: [u32; 8] = [0x8000, 0x7fff, 0xffff, 0x0000, 0x80, 0x7f, 0xff, 0x8001];
        match u % 4 {
            0 => ((u >> 32) as u32 & 0xffff_0000 | low[(u >> 8) as usize % 8]) as i32,
            1 => (u >> 32) as i32,
            2 => -((u >> 20) as i32 & 0x7fff_ffff),
            _ => [i32::MIN, i32::MAX, 0, -1, 1, -0x7f7f_ffff][(u >> 8) as usize % 6],
        }
    });
    let bins: Vec<u32> = rng.vec(n, |r| r.next_u64() as u32);
    let mut g0 = vec![T::from_u64(0); 2 * slots * 4];
    for (j, g) in g0.iter_mut().enumerate() {
        *g = start[j % 4];
    }
    let (dw, db) = (s.to_device(&w).unwrap(), s.to_device(&bins).unwrap());
    let mut dg = s.to_device(&g0).unwrap();
    let mut dold = s.to_device(&vec![poison::<T>(); n * 2 * slots]).unwrap();
    let mut dplain = s.to_device(&vec![poison::<T>(); n * 6]).unwrap();
    let mut dfin = s.to_device(&vec![poison::<T>(); slots * 4]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(1, n as u32),
        (&dw, &db, &mut dg, &mut dold, &mut dplain, &mut dfin),
    )
    .unwrap();
    let (glob, olds) = (dg.to_vec_async(&s).unwrap(), dold.to_vec_async(&s).unwrap());
    let (plain, fin) = (
        dplain.to_vec_async(&s).unwrap(),
        dfin.to_vec_async(&s).unwrap(),
    );
    let mut bad = Vec::new();
    for f in 0..FORMS.len() {
        for (m, &op) in MINMAX.iter().enumerate() {
            let slot = (f * MINMAX.len() + m) * 4;
            let mut want = start;
            let mut seen: Vec<Vec<T>> = start.iter().map(|&x| vec![x]).collect();
            for i in 0..n {
                let v = T::from_u64(form_host(f, w[i]) as u32 as u64);
                let j = (bins[i] % 4) as usize;
                want[j] = T::atomic(op, want[j], v, v);
                seen[j].push(v);
            }
            for j in 0..4 {
                for (mem, got) in [
                    ("shared", fin[slot + j]),
                    ("global", glob[slots * 4 + slot + j]),
                ] {
                    if got != want[j] {
                        bad.push(format!(
                            "{op:?} of {} on {mem} element {j}: {got:?}, want {:?}",
                            FORMS[f], want[j]
                        ));
                    }
                }
            }
            for i in 0..n {
                let j = (bins[i] % 4) as usize;
                for (h, mem) in ["shared", "global"].iter().enumerate() {
                    let o = olds[i * 2 * slots + 2 * (f * MINMAX.len() + m) + h];
                    if !seen[j].contains(&o) {
                        bad.push(format!("{op:?} of {} on {mem}: thread {i} old {o:?} is no value of element {j}", FORMS[f]));
                    }
                }
            }
        }
        for i in 0..n {
            let v = T::from_u64(form_host(f, w[i]) as u32 as u64);
            let (mx, mn) = (plain[i * 6 + 2 * f], plain[i * 6 + 2 * f + 1]);
            if mx != v.max(big) || mn != v.min(big) {
                bad.push(format!(
                    "max/min of {} = {v:?} and {big:?}: {mx:?}/{mn:?}",
                    FORMS[f]
                ));
            }
        }
    }
    if !bad.is_empty() {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap_or_default();
        eprintln!("{name}: PTX for sm_90:\n{ptx}");
        panic!(
            "{name}: {} wrong, first: {:#?}",
            bad.len(),
            &bad[..bad.len().min(12)]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_min_max_atomics_of_operands_truncated_in_registers() {
    let mut rng = Rng::new();
    truncated_operands::<i16>(&mut rng);
    truncated_operands::<i8>(&mut rng);
    truncated_operands::<u16>(&mut rng);
    truncated_operands::<u8>(&mut rng);
}
