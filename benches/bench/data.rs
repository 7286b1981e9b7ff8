//! Random inputs (filled in parallel) and the check of results against the host.

use super::*;

// ---------------------------------------------------------------------------------------------
// Host data: random inputs and checks, in parallel on the host's cores.

pub(crate) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(4)
        .min(32)
}

/// `v[i] = f(i)` for every `i`, on all cores.
pub(crate) fn par_fill<T: Send>(v: &mut [T], f: impl Fn(usize) -> T + Sync) {
    let chunk = v.len().div_ceil(threads()).max(1 << 16);
    let f = &f;
    std::thread::scope(|s| {
        for (c, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (k, x) in part.iter_mut().enumerate() {
                    *x = f(c * chunk + k);
                }
            });
        }
    });
}

/// Folds `body` over `0..n` on all cores and merges the per-thread results.
pub(crate) fn par_fold<R: Send>(
    n: usize,
    init: impl Fn() -> R + Sync,
    body: impl Fn(&mut R, usize) + Sync,
    merge: impl Fn(R, R) -> R,
) -> R {
    let chunk = n.div_ceil(threads()).max(1 << 16);
    let (init, body) = (&init, &body);
    let parts: Vec<R> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n.div_ceil(chunk))
            .map(|c| {
                s.spawn(move || {
                    let mut r = init();
                    for i in c * chunk..((c + 1) * chunk).min(n) {
                        body(&mut r, i);
                    }
                    r
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("a host thread panicked"))
            .collect()
    });
    parts.into_iter().fold(init(), merge)
}

/// `n` random f32 in `[lo, hi)` (24 random bits each).
pub(crate) fn rand_f32(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut v = vec![0f32; n];
    let s = splitmix(seed);
    par_fill(&mut v, |i| {
        let u = (splitmix(s ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)) >> 40) as f32
            * (1.0 / 16_777_216.0);
        lo + (hi - lo) * u
    });
    v
}

/// `n` random f64 in `[lo, hi)` (53 random bits each).
pub(crate) fn rand_f64(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut v = vec![0f64; n];
    let s = splitmix(seed);
    par_fill(&mut v, |i| {
        let u = (splitmix(s ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)) >> 11) as f64
            * (1.0 / 9_007_199_254_740_992.0);
        lo + (hi - lo) * u
    });
    v
}

/// Compares `got(i)` with `want(i)` for `i < n`: fails on any non-finite value (the output was
/// poisoned with NaN, so this also finds elements never written) or when
/// `‖got − want‖ / ‖want‖` exceeds `tol`.
pub(crate) fn check(
    what: &str,
    n: usize,
    got: impl Fn(usize) -> f64 + Sync,
    want: impl Fn(usize) -> f64 + Sync,
    tol: f64,
) -> Res<f64> {
    let (d2, r2, bad, first_bad) = par_fold(
        n,
        || (0f64, 0f64, 0usize, usize::MAX),
        |acc, i| {
            let (g, w) = (got(i), want(i));
            if !g.is_finite() {
                acc.2 += 1;
                acc.3 = acc.3.min(i);
            } else {
                acc.0 += (g - w) * (g - w);
                acc.1 += w * w;
            }
        },
        |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2, a.3.min(b.3)),
    );
    if bad > 0 {
        return Err(format!(
            "{what}: {bad} of {n} outputs not finite (unwritten?), first at {first_bad}"
        ));
    }
    let rel = if r2 > 0.0 {
        (d2 / r2).sqrt()
    } else {
        d2.sqrt()
    };
    if rel.is_nan() || rel > tol {
        return Err(format!(
            "{what}: relative error {rel:.3e} exceeds {tol:.0e}"
        ));
    }
    Ok(rel)
}

/// Checks an inclusive running sum of `x` against the host's in f64 (the relative error of
/// the whole vector, at most 1e-4); returns the error.
pub(crate) fn check_running_sum(what: &str, x: &[f32], got: &[f32]) -> Res<f64> {
    let mut acc = 0f64;
    let want: Vec<f64> = x
        .iter()
        .map(|&v| {
            acc += v as f64;
            acc
        })
        .collect();
    check(what, x.len(), |i| got[i] as f64, |i| want[i], 1e-4)
}
