//! Warp intrinsics and bit operations on the GPU against host models of a warp, on fresh random
//! data each run: shuffles (32- and 64-bit), votes, ballots, match, activemask, lane masks.

use cudajit::codegen::{Int, Kernel, Num, FULL_MASK};
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

const WARP: usize = 32;

/// Four shuffles of random bit patterns (floats included: the bits must arrive unchanged),
/// with per-thread random lanes/deltas; `idx` gets lanes up to 63 (taken modulo 32).
fn shuffles<T: Num>(name: &str, rng: &mut Rng, uniform: bool) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[T], &[u32], &mut [T])>::build(name, |k, (x, lanes, out)| {
        let i = k.grid1();
        let (v, l) = (x.at(i), lanes.at(i));
        let d = l % 32u32;
        out.set(i * 4u64, k.shfl_sync(FULL_MASK, v, l));
        out.set(i * 4u64 + 1u64, k.shfl_up_sync(FULL_MASK, v, d));
        out.set(i * 4u64 + 2u64, k.shfl_down_sync(FULL_MASK, v, d));
        out.set(i * 4u64 + 3u64, k.shfl_xor_sync(FULL_MASK, v, d));
    })
    .unwrap();
    let n = 256 * 513;
    let x: Vec<T> = rng.vec(n, |r| T::from_bits(r.next_u64()));
    let fixed = (rng.next_u64() % 64) as u32;
    let lanes: Vec<u32> = rng.vec(n, |r| {
        if uniform {
            fixed
        } else {
            (r.next_u64() % 64) as u32
        }
    });
    let (dx, dl) = (s.to_device(&x).unwrap(), s.to_device(&lanes).unwrap());
    let mut out = s
        .to_device(&vec![T::from_bits(0xdead_beef_dead_beef); 4 * n])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dx, &dl, &mut out),
    )
    .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for i in 0..n {
        let (base, lane) = (i - i % WARP, i % WARP);
        // The lane operand's low 5 bits count (PTX's `b[4:0]`; CUDA's "modulo width").
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
        for (m, (w, g)) in want.iter().zip(&got[4 * i..4 * i + 4]).enumerate() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{name} {} thread {i} (lane {lane}, operand {})",
                [
                    "shfl_sync",
                    "shfl_up_sync",
                    "shfl_down_sync",
                    "shfl_xor_sync"
                ][m],
                lanes[i]
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shuffles_match_a_host_warp_model() {
    let mut rng = Rng::new();
    for uniform in [false, true] {
        shuffles::<i32>("shfl_i32", &mut rng, uniform);
        shuffles::<u32>("shfl_u32", &mut rng, uniform);
        shuffles::<f32>("shfl_f32", &mut rng, uniform);
        shuffles::<i64>("shfl_i64", &mut rng, uniform);
        shuffles::<u64>("shfl_u64", &mut rng, uniform);
        shuffles::<f64>("shfl_f64", &mut rng, uniform);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn warp_sums_with_shfl_xor_and_shfl_down() {
    // The classic reductions: a butterfly leaves the sum in every lane, shfl_down in lane 0.
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[u64], &[f64], &mut [u64], &mut [f64])>::build(
        "warp_sums",
        |k, (x, y, xs, ys)| {
            let i = k.grid1();
            let a = k.var(x.at(i));
            let b = k.var(y.at(i));
            for step in [16u32, 8, 4, 2, 1] {
                a.set(a.get() + k.shfl_xor_sync(FULL_MASK, a.get(), step));
                b.set(b.get() + k.shfl_down_sync(FULL_MASK, b.get(), step));
            }
            xs.set(i, a.get());
            k.if_(k.lane_id().eq(0u32), |_| ys.set(i / 32u64, b.get()));
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 1 << 16;
    let x: Vec<u64> = rng.vec(n, |r| r.next_u64());
    // Small integers: every f64 sum is exact, whatever the order.
    let y: Vec<f64> = rng.vec(n, |r| (r.next_u64() % 1000) as f64 - 500.0);
    let (dx, dy) = (s.to_device(&x).unwrap(), s.to_device(&y).unwrap());
    let mut dxs = s.to_device(&vec![0u64; n]).unwrap();
    let mut dys = s.to_device(&vec![f64::NAN; n / WARP]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dx, &dy, &mut dxs, &mut dys),
    )
    .unwrap();
    let (gx, gy) = (dxs.to_vec_async(&s).unwrap(), dys.to_vec_async(&s).unwrap());
    for (w, &got) in gy.iter().enumerate() {
        let r = w * WARP..(w + 1) * WARP;
        let sx = x[r.clone()].iter().fold(0u64, |a, &b| a.wrapping_add(b));
        let sy: f64 = y[r.clone()].iter().sum();
        for i in r {
            assert_eq!(gx[i], sx, "butterfly sum, thread {i}");
        }
        assert_eq!(got, sy, "shfl_down sum, warp {w}");
    }
}

/// Per-warp predicate patterns: all false, all true, random, one lane.
fn predicates(rng: &mut Rng, n: usize) -> Vec<u32> {
    let mut p = vec![0u32; n];
    for w in 0..n / WARP {
        let kind = rng.next_u64() % 4;
        let one = (rng.next_u64() % 32) as usize;
        for l in 0..WARP {
            p[w * WARP + l] = match kind {
                0 => 0,
                1 => 1,
                2 => (rng.next_u64() % 2) as u32,
                _ => (l == one) as u32,
            };
        }
    }
    p
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn votes_and_ballots_match_a_host_warp_model() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // out[4i..4i+4] = all, any, eq, ballot over the full warp; part[..] the same over a
    // per-warp random mask, computed only by the lanes in it (the others stay poisoned).
    let k = Kernel::<(&[u32], &[u32], &mut [u32], &mut [u32])>::build(
        "votes",
        |k, (pred, masks, out, part)| {
            let i = k.grid1();
            let p = pred.at(i).ne(0u32);
            let j = i * 4u64;
            out.set(j, k.all_sync(FULL_MASK, p).cast::<u32>());
            out.set(j + 1u64, k.any_sync(FULL_MASK, p).cast::<u32>());
            out.set(j + 2u64, k.eq_sync(FULL_MASK, p).cast::<u32>());
            out.set(j + 3u64, k.ballot_sync(FULL_MASK, p));
            let m = masks.at(i / 32u64);
            k.if_(((m >> k.lane_id()) & 1u32).eq(1u32), |k| {
                part.set(j, k.all_sync(m, p).cast::<u32>());
                part.set(j + 1u64, k.any_sync(m, p).cast::<u32>());
                part.set(j + 2u64, k.eq_sync(m, p).cast::<u32>());
                part.set(j + 3u64, k.ballot_sync(m, p));
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let n = 256 * 129;
    let pred = predicates(&mut rng, n);
    let masks: Vec<u32> = rng.vec(n / WARP, |r| match r.next_u64() % 4 {
        0 => FULL_MASK,
        _ => r.next_u64() as u32,
    });
    let poison = 0xdead_beefu32;
    let (dp, dm) = (s.to_device(&pred).unwrap(), s.to_device(&masks).unwrap());
    let mut dout = s.to_device(&vec![poison; 4 * n]).unwrap();
    let mut dpart = s.to_device(&vec![poison; 4 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dp, &dm, &mut dout, &mut dpart),
    )
    .unwrap();
    let (out, part) = (
        dout.to_vec_async(&s).unwrap(),
        dpart.to_vec_async(&s).unwrap(),
    );
    let model = |bits: u32, m: u32| -> [u32; 4] {
        let b = bits & m;
        [
            (b == m) as u32,
            (b != 0) as u32,
            (b == m || b == 0) as u32,
            b,
        ]
    };
    for w in 0..n / WARP {
        let bits = (0..WARP).fold(0u32, |a, l| a | (pred[w * WARP + l] << l));
        for l in 0..WARP {
            let i = w * WARP + l;
            assert_eq!(
                out[4 * i..4 * i + 4],
                model(bits, FULL_MASK),
                "full warp {w} lane {l}"
            );
            let want = if masks[w] >> l & 1 == 1 {
                model(bits, masks[w])
            } else {
                [poison; 4]
            };
            assert_eq!(
                part[4 * i..4 * i + 4],
                want,
                "warp {w} lane {l}, mask {:#x}",
                masks[w]
            );
        }
    }
}

/// Values with deliberate duplicates: per warp, all equal, two values, five values, or random.
fn match_case<T: Num>(name: &str, rng: &mut Rng) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[T], &mut [u32])>::build(name, |k, (x, out)| {
        let i = k.grid1();
        let any = k.match_any_sync(FULL_MASK, x.at(i));
        let (all, pred) = k.match_all_sync(FULL_MASK, x.at(i));
        out.set(i * 3u64, any);
        out.set(i * 3u64 + 1u64, all);
        out.set(i * 3u64 + 2u64, pred.cast::<u32>());
    })
    .unwrap();
    let n = 256 * 65;
    let mut x = Vec::with_capacity(n);
    for _ in 0..n / WARP {
        let pool: Vec<T> = rng.vec(5, |r| T::from_bits(r.next_u64()));
        let kind = rng.next_u64() % 4;
        for _ in 0..WARP {
            x.push(match kind {
                0 => pool[0],
                1 => pool[(rng.next_u64() % 2) as usize],
                2 => pool[(rng.next_u64() % 5) as usize],
                _ => T::from_bits(rng.next_u64()),
            });
        }
    }
    let dx = s.to_device(&x).unwrap();
    let mut dout = s.to_device(&vec![0xdead_beefu32; 3 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dx, &mut dout),
    )
    .unwrap();
    let out = dout.to_vec_async(&s).unwrap();
    for w in 0..n / WARP {
        let lanes = &x[w * WARP..(w + 1) * WARP];
        let all_same = lanes.iter().all(|v| v.to_bits() == lanes[0].to_bits());
        for l in 0..WARP {
            let i = w * WARP + l;
            let any = (0..WARP)
                .filter(|&m| lanes[m].to_bits() == lanes[l].to_bits())
                .fold(0u32, |a, m| a | 1 << m);
            let want = if all_same {
                [any, FULL_MASK, 1]
            } else {
                [any, 0, 0]
            };
            assert_eq!(out[3 * i..3 * i + 3], want, "{name} warp {w} lane {l}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn match_any_and_all_match_a_host_warp_model() {
    let mut rng = Rng::new();
    match_case::<i32>("match_i32", &mut rng);
    match_case::<u32>("match_u32", &mut rng);
    match_case::<f32>("match_f32", &mut rng);
    match_case::<i64>("match_i64", &mut rng);
    match_case::<u64>("match_u64", &mut rng);
    match_case::<f64>("match_f64", &mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn activemask_in_branches_and_lane_masks() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // out[8i..]: activemask in the even-lanes branch, in the odd-lanes (else) branch, in a
    // `lane < cut` branch, in converged code, then the five lane masks.
    let k = Kernel::<(&[u32], &mut [u32])>::build("activemask", |k, (cuts, out)| {
        let i = k.grid1();
        let j = i * 9u64;
        let lane = k.lane_id();
        k.if_else(
            (lane % 2u32).eq(0u32),
            |k| out.set(j, k.activemask()),
            |k| out.set(j + 1u64, k.activemask()),
        );
        k.if_(lane.lt(cuts.at(i / 32u64)), |k| {
            out.set(j + 2u64, k.activemask())
        });
        // Independent thread scheduling does not promise reconvergence without a barrier.
        k.syncwarp(FULL_MASK);
        out.set(j + 3u64, k.activemask());
        out.set(j + 4u64, k.lanemask_lt());
        out.set(j + 5u64, k.lanemask_le());
        out.set(j + 6u64, k.lanemask_eq());
        out.set(j + 7u64, k.lanemask_ge());
        out.set(j + 8u64, k.lanemask_gt());
    })
    .unwrap();
    let mut rng = Rng::new();
    let n = 256 * 33;
    let cuts: Vec<u32> = rng.vec(n / WARP, |r| (r.next_u64() % 33) as u32);
    let poison = 0xdead_beefu32;
    let dc = s.to_device(&cuts).unwrap();
    let mut dout = s.to_device(&vec![poison; 9 * n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new((n / 256) as u32, 256),
        (&dc, &mut dout),
    )
    .unwrap();
    let out = dout.to_vec_async(&s).unwrap();
    for i in 0..n {
        let (w, l) = (i / WARP, (i % WARP) as u32);
        let cut = cuts[w];
        let below = ((1u64 << cut) - 1) as u32;
        let eq = 1u32 << l;
        let lt = eq - 1;
        let want = [
            if l % 2 == 0 { 0x5555_5555 } else { poison },
            if l % 2 == 1 { 0xaaaa_aaaa } else { poison },
            if l < cut { below } else { poison },
            FULL_MASK,
            lt,
            lt | eq,
            eq,
            !lt,
            !(lt | eq),
        ];
        assert_eq!(
            out[9 * i..9 * i + 9],
            want,
            "thread {i} (warp {w}, lane {l}, cut {cut})"
        );
    }
}

/// The host's answers for one integer type.
trait Bits: Int {
    fn random(r: &mut Rng) -> Self;
    fn host(self) -> ([u32; 3], Self);
}

macro_rules! bits_impl {
    ($t:ty) => {
        impl Bits for $t {
            fn random(r: &mut Rng) -> $t {
                let u = r.next_u64();
                match u % 8 {
                    0 => [0, 1, <$t>::MAX, <$t>::MIN, (0 as $t).wrapping_sub(1)]
                        [(u >> 8) as usize % 5],
                    // One bit, or a run of low zeros.
                    1 => (1 as $t) << ((u >> 8) % <$t>::BITS as u64),
                    2 => ((u >> 3) as $t) << ((u >> 40) % <$t>::BITS as u64),
                    _ => r.next_u64() as $t,
                }
            }
            fn host(self) -> ([u32; 3], $t) {
                let ffs = if self == 0 {
                    0
                } else {
                    self.trailing_zeros() + 1
                };
                (
                    [self.count_ones(), self.leading_zeros(), ffs],
                    self.reverse_bits(),
                )
            }
        }
    };
}
bits_impl!(i32);
bits_impl!(u32);
bits_impl!(i64);
bits_impl!(u64);

fn bits_case<T: Bits>(name: &str, rng: &mut Rng) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[T], &mut [u32], &mut [T])>::build(name, |k, (x, counts, rev)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let v = x.at(i);
            counts.set(i * 3u64, v.popc());
            counts.set(i * 3u64 + 1u64, v.clz());
            counts.set(i * 3u64 + 2u64, v.ffs());
            rev.set(i, v.brev());
        });
    })
    .unwrap();
    let n = 300_001;
    let x: Vec<T> = rng.vec(n, T::random);
    let dx = s.to_device(&x).unwrap();
    let mut dc = s.to_device(&vec![0xdead_beefu32; 3 * n]).unwrap();
    let mut dr = s
        .to_device(&vec![T::from_bits(0x5a5a_5a5a_5a5a_5a5a); n])
        .unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&dx, &mut dc, &mut dr),
    )
    .unwrap();
    let (counts, rev) = (dc.to_vec_async(&s).unwrap(), dr.to_vec_async(&s).unwrap());
    for i in 0..n {
        let (c3, r) = x[i].host();
        assert_eq!(
            counts[3 * i..3 * i + 3],
            c3,
            "{name} popc/clz/ffs of {:?}",
            x[i]
        );
        assert_eq!(rev[i], r, "{name} brev of {:?}", x[i]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bit_operations_match_rust() {
    let mut rng = Rng::new();
    bits_case::<i32>("bits_i32", &mut rng);
    bits_case::<u32>("bits_u32", &mut rng);
    bits_case::<i64>("bits_i64", &mut rng);
    bits_case::<u64>("bits_u64", &mut rng);
}
