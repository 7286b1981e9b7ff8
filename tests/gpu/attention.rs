//! The attention example's kernel (`examples/attention/kernel.rs`: TMA, transaction barriers,
//! `wgmma` for S = Q·Kᵀ, the online softmax with `exp2_approx`, P from registers into
//! `wgmma_rs` for O = P·V) against an f64 host reference, on fresh random inputs with special
//! values mixed in (±0, subnormals of the element type, a NaN key element, an infinite query
//! element, an infinite value element), every output element checked, outputs poisoned first:
//! f16 and bf16, head dims 64 and 128, causal and not, sequence lengths of one row, of part
//! of a tile and of several tiles (enough for every stage to be refilled).

#[path = "../../examples/attention/kernel.rs"]
#[allow(dead_code)]
mod kernel;

use cudajit::prelude::*;
use cudajit::{bf16, f16};
use kernel::{reference, Attention, AttentionElem};

use crate::common::{ctx, sm90, Rng};

/// Inputs `[bh, seq, d]` for q, k and v: uniform in [-1, 1) with 1 in 16 elements ±0 or a
/// subnormal of `T`; plus a NaN in k (head 0), +∞ in q (head 1) and, when `inf_v`, −∞ in v
/// (head 2, which makes that column −∞ for every row that sees it; under a causal mask a
/// masked key's value still meets P = 0 in the product, 0·∞ = NaN, so it is left out there);
/// with a fourth head, its keys growing along the sequence.
fn inputs<T: AttentionElem>(
    rng: &mut Rng,
    (bh, seq, d): (usize, usize, usize),
    inf_v: bool,
) -> [Vec<T>; 3] {
    let n = bh * seq * d;
    // A subnormal of T (bf16 has f32's range, f16 goes down to 6e-8).
    let tiny = if T::UNIT > 1e-3 { 1e-40f32 } else { 1e-7 };
    let mut draw = |r: &mut Rng| {
        let u = r.next_u64();
        let x = match u % 16 {
            0 => [0.0f32, -0.0, tiny, -tiny][(u >> 8) as usize % 4],
            _ => r.f32(),
        };
        T::from_f32(x)
    };
    let mut q = rng.vec(n, &mut draw);
    let mut k = rng.vec(n, &mut draw);
    let mut v = rng.vec(n, &mut draw);
    let at = |r: &mut Rng, head: usize| {
        (head.min(bh - 1) * seq + (r.next_u64() as usize) % seq) * d + (r.next_u64() as usize) % d
    };
    let i = at(rng, 0);
    k[i] = T::from_f32(f32::NAN);
    let i = at(rng, 1);
    q[i] = T::from_f32(f32::INFINITY);
    if inf_v {
        let i = at(rng, 2);
        v[i] = T::from_f32(f32::NEG_INFINITY);
    }
    // Head 3: keys growing along the sequence (up to 12x), so that the row maxima keep rising
    // in later tiles (O rescaled by large factors there).
    if bh > 3 {
        for (j, x) in k[3 * seq * d..4 * seq * d].iter_mut().enumerate() {
            let grow = 1.0 + 11.0 * (j / d) as f32 / seq as f32;
            *x = T::from_f32((x.to_f64() * grow as f64) as f32);
        }
    }
    [q, k, v]
}

fn check<T: AttentionElem>(s: &Stream, shape: (usize, usize, usize), causal: bool) {
    let (bh, seq, d) = shape;
    let mut rng = Rng::new();
    let host = inputs::<T>(&mut rng, shape, !causal);
    let dev = |x: &Vec<T>| {
        s.to_device(&ndarray::Array3::from_shape_vec(shape, x.clone()).unwrap())
            .unwrap()
    };
    let (q, k, v) = (dev(&host[0]), dev(&host[1]), dev(&host[2]));
    let mut out = dev(&vec![T::from_f32(f32::NAN); bh * seq * d]);
    let att = Attention::<T>::new(d, causal).unwrap();
    att.run(s, &q, &k, &v, &mut out).unwrap();
    let got = out.to_vec_async(s).unwrap();
    let (mut nans, mut worst) = (0, 0.0f64);
    for h in 0..bh {
        let head = |x: &Vec<T>| -> Vec<f64> {
            x[h * seq * d..(h + 1) * seq * d]
                .iter()
                .map(|e| e.to_f64())
                .collect()
        };
        let want = reference(
            &head(&host[0]),
            &head(&host[1]),
            &head(&host[2]),
            seq,
            d,
            causal,
        );
        for (i, &(w, mag)) in want.iter().enumerate() {
            let g = got[h * seq * d + i].to_f64();
            let what = format!(
                "{} d{d}{} seq {seq}: out[{h}][{}][{}] = {g}, the host's {w}",
                T::NAME,
                if causal { " causal" } else { "" },
                i / d,
                i % d
            );
            if w.is_nan() {
                assert!(g.is_nan(), "{what}");
                nans += 1;
            } else if w.is_infinite() {
                assert_eq!(g, w, "{what}");
            } else {
                let bound = 4.0 * T::UNIT * (w.abs() + mag) + 1e-6;
                let err = (g - w).abs() / bound;
                assert!(err <= 1.0, "{what} (bound {bound:.2e})");
                worst = worst.max(err);
            }
        }
    }
    assert!(
        nans > 0,
        "the NaN key and the infinite query made no NaN row"
    );
    println!(
        "attention {} d{d}{} {shape:?}: every element within bound (worst {worst:.2} of it), {nans} NaN as the host's",
        T::NAME,
        if causal { " causal" } else { "" }
    );
}

fn all<T: AttentionElem>() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: the attention kernel needs an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    for d in [64, 128] {
        for causal in [false, true] {
            for seq in [1, 200, 1000] {
                check::<T>(&s, (4, seq, d), causal);
            }
        }
        // More (head, Q tile) items than an H100 or H200 has multiprocessors: the
        // persistent blocks take several items each, their stages' barriers running on (causal:
        // a block per item).
        check::<T>(&s, (160, 200, d), false);
        check::<T>(&s, (160, 200, d), true);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_f16_matches_the_host() {
    all::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_bf16_matches_the_host() {
    all::<bf16>();
}

/// Wrong shapes and head dims are errors that say what is wrong, before any launch.
#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_rejects_bad_shapes() {
    let c = ctx();
    if !sm90(&c) {
        println!("skipped: the attention kernel needs an sm_90 GPU");
        return;
    }
    let s = c.new_stream().unwrap();
    let e = Attention::<bf16>::new(96, false).err().unwrap().to_string();
    assert!(e.contains("head dim 96"), "{e}");
    let att = Attention::<bf16>::new(64, false).unwrap();
    let q = c.zeros::<bf16, _>((2, 10, 64)).unwrap();
    let k = c.zeros::<bf16, _>((2, 11, 64)).unwrap();
    let mut out = c.zeros::<bf16, _>((2, 10, 64)).unwrap();
    let e = att.run(&s, &q, &k, &q, &mut out).err().unwrap().to_string();
    assert!(e.contains("k is [2, 11, 64]"), "{e}");
    let q128 = c.zeros::<bf16, _>((2, 10, 128)).unwrap();
    let mut out128 = c.zeros::<bf16, _>((2, 10, 128)).unwrap();
    let e = att
        .run(&s, &q128, &q128, &q128, &mut out128)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("head dim 64"), "{e}");
}
