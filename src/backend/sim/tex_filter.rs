//! The texture unit's arithmetic, as measured on an H200 (probe/texprobe3.py, texprobe4.py and
//! texprobe5.py, fitted by probe/fit.py, fit4.py and fit5.py): the fixed-point
//! texel coordinate, the linear filter's weights and its mix.
//!
//! - A coordinate becomes fixed point (floored): an unnormalized one with 21 fractional bits; a
//!   normalized one with [`normalized_frac_bits`] (21, or 22 over more than 16384 texels), then
//!   multiplied by the extent exactly (so `u = k / N` in f32 can read texel `k - 1`). Point
//!   sampling reads `floor` of it.
//! - Linear filtering rounds `x - 0.5` to 8 fractional bits, ties up: the lower texel is its
//!   integer part, the upper texel's weight `a` its fraction (in 1/256 steps).
//! - 2-D weights: `w11 = round_half_up(a b)` (in 1/256 steps), `w10 = a - w11`,
//!   `w01 = b - w11`, `w00 = 1 - a - b + w11`. 3-D weights (texprobe5: every weight of 6,656
//!   triples) are a tree of splits, each `round_half_up` in 1/256 steps: z exactly
//!   (`Z1 = c`, `Z0 = 1 - c`), x in each z plane (`X1 = round(Z a)`, `X0 = Z - X1`), y in each
//!   column with the diagonal corner rounded (`w(x1 y1) = round(X1 b)`,
//!   `w(x0 y0) = round(X0 (1 - b))`, the other the rest); in 2-D (`Z = 1`) that is the 2-D
//!   rule. Under clamp addressing a 3-D coordinate is clamped to [0.5, extent - 0.5] texels
//!   first (`tex_sample.rs`). A corner takes part in the mix where each of its fractions is nonzero, even if its
//!   rounded weight is 0 (it can then only bring a NaN or an infinity).
//! - The float mix ([`mix`], f32 and f16 texels): NaN (the format's canonical one) if a texel
//!   taking part is NaN or infinities of both signs do; else an infinity if one does. Else
//!   f32 subnormal texels count as zeros; the nonzero texels of nonzero weight are aligned to
//!   the largest one's exponent `E` and truncated toward zero to multiples of `2^(E-27)` (f16:
//!   `2^(E-14)`), summed with their weights exactly, and the sum is rounded ties away from
//!   zero to f32 (f16 texels: to f16, its subnormals kept); an f32 subnormal result is flushed
//!   to zero with the sum's sign. A zero result is -0 only where every texel taking part is a
//!   (flushed) -0. 3-D ([`mix_planes`]): each z plane aligned and truncated on its own grid,
//!   the two sums added exactly, rounded once (99.9% of texprobe5's f32 and f16 fetches; the
//!   rest, not fitted, within 2^-24 of the largest f32 texel).
//! - Normalized-read integers ([`mix_normalized`]) are filtered in 16-bit fixed point: each
//!   texel widened to 16 bits (u8: `v * 257`; u16, i16: as is), summed with its weights, the
//!   sum rounded to 16 bits ties up, then read as a 16-bit texel (`J / 65535`, or
//!   `max(J / 32767, -1)`). i8 texels are not widened: the raw sum `I = sum w v` (1/256 of
//!   a texel step) becomes `J = floor((129 I + 16 floor(I / 4096) + 64) / 128)`, i.e.
//!   `round(I + I / 128 + floor(I / 4096) / 8)` (texprobe4: every 1-D and 2-D i8 fetch).

use crate::backend::texture::ChannelKind;

/// Fractional bits of the simulator's fixed-point texel coordinates (the finest the GPU keeps;
/// see [`fixed_coord`]).
pub(super) const COORD_FRAC_BITS: u32 = 22;

/// Fractional bits the GPU keeps of an unnormalized coordinate.
const UNNORMALIZED_FRAC_BITS: u32 = 21;

/// Fractional bits a normalized coordinate keeps (floored) before it is scaled by the extent
/// (probe c: 21 match every threshold for extents up to 4097, 22 every one of 32767 and more;
/// where it switches in between is not measured: taken as above 2^14).
pub(super) fn normalized_frac_bits(extent: usize) -> u32 {
    if extent > 1 << 14 {
        22
    } else {
        21
    }
}

/// A coordinate in texels as fixed point with [`COORD_FRAC_BITS`] fractional bits (floored to
/// the precision the GPU keeps; NaN reads as 0, out-of-range values saturate). Normalized
/// coordinates are converted to fixed point first, then scaled by `extent` exactly.
pub(super) fn fixed_coord(x: f32, normalized: bool, extent: usize) -> i128 {
    let bits = if normalized {
        normalized_frac_bits(extent)
    } else {
        UNNORMALIZED_FRAC_BITS
    };
    let fx = (f64::from(x) * f64::from(1u32 << bits)).floor();
    // `as` saturates (and maps NaN to 0); the clamp keeps the product by any extent in range.
    let fixed = (fx as i128).clamp(-(1 << 90), 1 << 90);
    let scaled = if normalized {
        fixed * extent as i128
    } else {
        fixed
    };
    scaled << (COORD_FRAC_BITS - bits)
}

/// The texel index point sampling reads at fixed-point coordinate `x`.
pub(super) fn point_index(x: i128) -> i64 {
    saturate(x >> COORD_FRAC_BITS)
}

/// The lower texel of linear filtering at fixed-point coordinate `x`, and the upper texel's
/// weight in 1/256 steps (0..=255): `x - 0.5` rounded to 8 fractional bits, ties up.
pub(super) fn linear_index(x: i128) -> (i64, u32) {
    let half = 1i128 << (COORD_FRAC_BITS - 1);
    let round = 1i128 << (COORD_FRAC_BITS - 9);
    let x8 = (x - half + round) >> (COORD_FRAC_BITS - 8);
    (saturate(x8 >> 8), (x8 & 0xff) as u32)
}

fn saturate(i: i128) -> i64 {
    i.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

/// `round_half_up(w * f / 256)`: a weight `w` (1/256 steps) times a fraction `f` (1/256
/// steps), back in 1/256 steps.
fn split(w: u32, f: u32) -> u32 {
    (w * f + 128) >> 8
}

/// The weights (1/256 steps, summing to 256) of the `2^dims` texels of a linear fetch, given
/// each dimension's upper-texel fraction; corner `k` takes the upper texel of dimension `d`
/// where bit `d` of `k` is set.
pub(super) fn corner_weights(fracs: &[u32]) -> [u32; 8] {
    let mut w = [0u32; 8];
    match *fracs {
        [a] => {
            w[0] = 256 - a;
            w[1] = a;
        }
        [a, b] => {
            let w11 = split(a, b);
            w[0] = 256 + w11 - a - b;
            w[1] = a - w11;
            w[2] = b - w11;
            w[3] = w11;
        }
        [a, b, c] => {
            // A tree of splits (texprobe5): z exactly, then x in each z plane, then y in each
            // column with the diagonal corner (00 or 11 in x, y) rounded, the other the rest.
            for (k, zw) in [(0, 256 - c), (4, c)] {
                let x1 = split(zw, a);
                let x0 = zw - x1;
                w[k + 3] = split(x1, b);
                w[k + 1] = x1 - w[k + 3];
                w[k] = split(x0, 256 - b);
                w[k + 2] = x0 - w[k];
            }
        }
        _ => w[0] = 256,
    }
    w
}

/// Whether corner `k` of a linear fetch takes part in the mix: each dimension whose upper
/// texel it takes has a nonzero fraction.
pub(super) fn corner_live(fracs: &[u32], k: usize) -> bool {
    fracs
        .iter()
        .enumerate()
        .all(|(d, &f)| k >> d & 1 == 0 || f != 0)
}

/// The float formats the texture unit mixes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum FloatFormat {
    /// f32 texels: kept to `2^(E-27)`, rounded to f32, subnormals flushed.
    F32,
    /// f16 texels: kept to `2^(E-14)`, rounded to f16 (subnormals kept).
    F16,
}

impl FloatFormat {
    /// Significand bits of the result.
    fn significand(self) -> i32 {
        match self {
            FloatFormat::F32 => 24,
            FloatFormat::F16 => 11,
        }
    }
    /// The smallest normal exponent of the result.
    fn min_exp(self) -> i32 {
        match self {
            FloatFormat::F32 => -126,
            FloatFormat::F16 => -14,
        }
    }
    /// Bits of a texel kept below the largest texel's leading bit (probe: 27 matches all
    /// 102,800 1-D and 217,800 2-D f32 outputs of texprobe3, 14 all f16 ones of texprobe4).
    fn kept(self) -> i32 {
        match self {
            FloatFormat::F32 => 27,
            FloatFormat::F16 => 14,
        }
    }
    /// The NaN a mix gives (as f32 bits).
    pub(super) fn nan(self) -> u32 {
        match self {
            FloatFormat::F32 => 0x7fff_ffff,
            FloatFormat::F16 => 0x7fff_e000,
        }
    }
}

/// One texel of a linear fetch: its weight (1/256 steps), whether it takes part
/// ([`corner_live`]), its value (f16 texels as f32s).
#[derive(Clone, Copy, Debug)]
pub(super) struct Tap {
    /// The weight in 1/256 steps.
    pub w: u32,
    /// Whether the texel takes part in the mix.
    pub live: bool,
    /// The texel.
    pub v: f32,
}

/// The filtered value (as f32 bits) of `taps`, weights summing to 256 (see the module's notes
/// for the arithmetic).
pub(super) fn mix(taps: &[Tap], fmt: FloatFormat) -> u32 {
    mix_planes(&[taps], fmt)
}

/// The filtered value (as f32 bits) of the taps of `planes` (3-D: the two z planes), weights
/// summing to 256: each plane's texels aligned and truncated on that plane's own grid (its
/// largest texel's exponent), the planes' sums added exactly and rounded once (texprobe5:
/// 99.9% of the f32 and f16 3-D fetches; one sum over all 8 texels: 94%).
pub(super) fn mix_planes(planes: &[&[Tap]], fmt: FloatFormat) -> u32 {
    let live: Vec<Tap> = planes
        .iter()
        .flat_map(|p| p.iter().copied())
        .filter(|t| t.live)
        .collect();
    if live.iter().any(|t| t.v.is_nan()) {
        return fmt.nan();
    }
    let pos_inf = live.iter().any(|t| t.v == f32::INFINITY);
    let neg_inf = live.iter().any(|t| t.v == f32::NEG_INFINITY);
    match (pos_inf, neg_inf) {
        (true, true) => return fmt.nan(),
        (true, false) => return f32::INFINITY.to_bits(),
        (false, true) => return f32::NEG_INFINITY.to_bits(),
        _ => {}
    }
    // f32 subnormal texels count as (signed) zeros.
    let value = |t: &Tap| {
        if fmt == FloatFormat::F32 && t.v.is_subnormal() {
            0.0f32.copysign(t.v)
        } else {
            t.v
        }
    };
    // Each plane's sum `s` on its grid `2^g`.
    let sums: Vec<(i128, i32)> = planes
        .iter()
        .filter_map(|p| {
            let parts: Vec<(u32, bool, u64, i32)> = p
                .iter()
                .filter(|t| t.live && t.w != 0 && value(t) != 0.0)
                .map(|t| {
                    let (m, e) = decompose(t.v);
                    (t.w, t.v.is_sign_negative(), m, e)
                })
                .collect();
            let top = parts
                .iter()
                .map(|&(_, _, m, e)| e + 63 - m.leading_zeros() as i32)
                .max()?;
            let grid = top - fmt.kept();
            let sum: i64 = parts
                .iter()
                .map(|&(w, neg, m, e)| {
                    let aligned = if e >= grid {
                        m << (e - grid)
                    } else {
                        m.checked_shr((grid - e) as u32).unwrap_or(0)
                    } as i64;
                    let v = i64::from(w) * aligned;
                    if neg {
                        -v
                    } else {
                        v
                    }
                })
                .sum();
            Some((i128::from(sum), grid))
        })
        .collect();
    if sums.is_empty() {
        let neg = live
            .iter()
            .all(|t| value(t) == 0.0 && t.v.is_sign_negative());
        return if neg { 0x8000_0000 } else { 0 };
    }
    // The nonzero sums added exactly on the finer grid, except that one more than 80 bits
    // below the other (far below the result's last place) counts only as a sticky bit.
    let nonzero = sums.iter().filter(|s| s.0 != 0);
    let top = nonzero.clone().map(|s| s.1).max().unwrap_or(0);
    let grid = nonzero
        .clone()
        .map(|s| s.1)
        .min()
        .unwrap_or(0)
        .max(top - 80);
    let sum: i128 = nonzero
        .map(|&(s, g)| {
            if g >= grid {
                s << (g - grid)
            } else {
                let k = (grid - g).min(120) as u32;
                let q = s.unsigned_abs() >> k;
                let q = (q + u128::from(q << k != s.unsigned_abs())) as i128;
                q * s.signum()
            }
        })
        .sum();
    let r = round_ties_away(sum, grid - 8, fmt);
    if r == 0.0 || (fmt == FloatFormat::F32 && r.is_subnormal()) {
        return if sum < 0 { 0x8000_0000 } else { 0 };
    }
    r.to_bits()
}

/// The filtered value of normalized-read integer texels of `kind` (`taps`: weight in 1/256
/// steps and the texel's integer value), in the texture unit's 16-bit fixed point (see the
/// module's notes).
pub(super) fn mix_normalized(kind: ChannelKind, taps: &[(u32, i64)]) -> f32 {
    let sum = |widen: i64| -> i64 { taps.iter().map(|&(w, v)| i64::from(w) * v * widen).sum() };
    let to16 = |s: i64| (s + 128) >> 8;
    match kind {
        ChannelKind::U8 => to16(sum(257)) as f32 / 65535.0,
        ChannelKind::U16 => to16(sum(1)) as f32 / 65535.0,
        ChannelKind::I16 => (to16(sum(1)) as f32 / 32767.0).max(-1.0),
        ChannelKind::I8 => {
            // J = floor((129 I + 16 floor(I / 4096) + 64) / 128) (see the notes).
            let i = sum(1);
            let j = (129 * i + 16 * (i >> 12) + 64) >> 7;
            (j as f32 / 32767.0).max(-1.0)
        }
        // Float kinds go through `mix`; as a fallback, the integers as floats.
        ChannelKind::F16 | ChannelKind::F32 => sum(1) as f32 / 256.0,
    }
}

/// An f32's magnitude as `m * 2^p` (`m < 2^24`; finite values only).
fn decompose(t: f32) -> (u64, i32) {
    let bits = t.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let frac = u64::from(bits & 0x7f_ffff);
    if exp == 0 {
        (frac, -149)
    } else {
        (frac | 1 << 23, exp - 150)
    }
}

/// `s * 2^p` rounded to `fmt`'s grid, ties away from zero (+0 for 0), as an f32.
fn round_ties_away(s: i128, p: i32, fmt: FloatFormat) -> f32 {
    if s == 0 {
        return 0.0;
    }
    let mut a = s.unsigned_abs();
    let lead = p + 127 - a.leading_zeros() as i32;
    // The grid's exponent at this magnitude (below the smallest normal: a fixed step).
    let q = lead.max(fmt.min_exp()) - (fmt.significand() - 1);
    if q > p {
        let sh = (q - p) as u32;
        a = if sh > 126 {
            0
        } else {
            (a + (1 << (sh - 1))) >> sh
        };
    } else {
        a <<= p - q;
    }
    // Exact: a <= 2^24 and 2^q is an f64 power of two in range (overflow gives infinity).
    let v = (a as f64 * 2f64.powi(q)) as f32;
    if s < 0 {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest f32 `u` (as bits) whose normalized point sample over `n` texels reads
    /// texel `k` or above.
    fn threshold(n: usize, k: i64) -> u32 {
        let mut bits = (k as f32 / n as f32).to_bits() - (1 << 15);
        while point_index(fixed_coord(f32::from_bits(bits), true, n)) < k {
            bits += 1;
        }
        bits
    }

    /// Thresholds the GPU showed (probe/texprobe3.npz `point_thresholds`: N, k, the bits of
    /// f32(k/N), the smallest u reading texel >= k).
    #[test]
    fn normalized_point_thresholds_match_the_probe() {
        for (n, k, kn, want) in [
            (3, 1, 1051372203, 1051372208),
            (3, 2, 1059760811, 1059760816),
            (5, 1, 1045220557, 1045220576),
            (7, 3, 1054567863, 1054567872),
            (4097, 2048, 1056960513, 1056960528),
            (1000, 333, 1051361018, 1051361024),
            (100, 33, 1051260355, 1051260368),
            (65535, 21845, 1051372203, 1051372208),
            (65535, 32767, 1056964352, 1056964352),
            (65535, 65534, 1065352960, 1065352960),
        ] {
            assert_eq!((k as f32 / n as f32).to_bits(), kn, "{n} {k}");
            assert_eq!(threshold(n, k), want, "N = {n}, k = {k}");
        }
        // N = 65535, k = 1: texprobe3 saw no threshold within 2^15 ulps of f32(1/N);
        // texprobe4 (c_65535_thr[0]) found it at 65 / 2^22, well above.
        let u = 65.0f32 / (1 << 22) as f32;
        assert_eq!(u.to_bits(), 931_266_560);
        assert_eq!(point_index(fixed_coord(u, true, 65535)), 1);
        let below = f32::from_bits(u.to_bits() - 1);
        assert_eq!(point_index(fixed_coord(below, true, 65535)), 0);
    }

    /// Large extents keep 22 fractional bits of a normalized coordinate (texprobe4.npz
    /// `c_{N}_thr[k - 1]`: the smallest u reading texel >= k, searched over all of [0, 1]).
    #[test]
    fn normalized_point_thresholds_of_large_extents_match_the_probe() {
        let first = |n: usize, k: i64| {
            let mut lo = 0u32;
            let mut hi = 1.0f32.to_bits();
            while hi - lo > 1 {
                let m = lo + (hi - lo) / 2;
                if point_index(fixed_coord(f(m), true, n)) >= k {
                    hi = m;
                } else {
                    lo = m;
                }
            }
            hi
        };
        for (n, k, want) in [
            (65535, 2, 939_589_632),
            (65535, 12345, 1_044_440_272),
            (65535, 32767, 1_056_964_352),
            (65535, 65534, 1_065_352_960),
            (40000, 1, 936_509_440),
            (40000, 12345, 1_050_543_136),
            (40000, 39999, 1_065_352_800),
            (32767, 12345, 1_052_829_064),
            (32767, 32766, 1_065_352_704),
        ] {
            assert_eq!(first(n, k), want, "N = {n}, k = {k}");
        }
    }

    /// Normalized linear sampling of a ramp over 7 texels (texel i holds i): the probe's
    /// `linear_ramp_7` at a few u, where f32(u * 7) - 0.5 would round the other way.
    #[test]
    fn normalized_linear_weights_match_the_probe() {
        let ramp = |u: f32, n: usize| {
            let (i, a) = linear_index(fixed_coord(u, true, n));
            let t = |j: i64| j.clamp(0, n as i64 - 1) as f32;
            f(mix1(&[(256 - a, t(i)), (a, t(i + 1))]))
        };
        // The weight of x - 0.5 = 0.5/256 exactly rounds up (ties up) ...
        assert_eq!(linear_index(0x20_0000 + 0x2000), (0, 1));
        // ... and x - 0.5 a 2^-22 short of 2 rounds to texel 2, weight 0.
        assert_eq!(linear_index((5 << 21) - 1), (2, 0));
        // Where f32(u * N) - 0.5 rounds to another weight than the GPU's (probe rows).
        for (n, u, want) in [
            (7, 0x3e0a_9249, 0x3ee4_0000),
            (7, 0x3f3d_e31c, 0x4096_2000),
            (100, 0x3d19_d70a, 0x4050_4000),
            (100, 0x3df1_208f, 0x4134_6000),
        ] {
            assert_eq!(ramp(f(u), n).to_bits(), want, "N = {n}, u = {}", f(u));
        }
        // Unnormalized coordinates: x itself (x - 0.5 = 1 + 3/256 + a tie).
        let (i, a) = linear_index(fixed_coord(1.5 + 3.5 / 256.0, false, 7));
        assert_eq!((i, a), (1, 4));
    }

    fn f(bits: u32) -> f32 {
        f32::from_bits(bits)
    }

    /// A 1-D (or any) f32 mix of (weight, texel) pairs, texels of nonzero weight taking part.
    fn mix1(terms: &[(u32, f32)]) -> u32 {
        mix_fmt(terms, FloatFormat::F32)
    }

    fn mix_fmt(terms: &[(u32, f32)], fmt: FloatFormat) -> u32 {
        let taps: Vec<Tap> = terms
            .iter()
            .map(|&(w, v)| Tap { w, live: w != 0, v })
            .collect();
        mix(&taps, fmt)
    }

    /// 1-D mixes the GPU gave (probe `mix1_pairs` / `mix1_out`: rows 0, 2, 15, 55), where
    /// the exactly rounded (1-a) v0 + a v1 differs.
    #[test]
    fn mix_1d_matches_the_probe() {
        for (v0, v1, j, want) in [
            // Row 0 (cancellation): a tie rounds away from zero.
            (0x42f6_07da, 0xc2f6_07f9, 64, 0x4276_07cb),
            // Row 2: the small texel truncated to 2^(E-27) of the large one.
            (0x0dd9_765d, 0x98be_69c6, 1, 0x94be_6669),
            // Row 15: v0 falls below the grid entirely; a tie rounds away.
            (0x4b03_21a3, 0x6421_c13f, 3, 0x60f2_a1df),
            // Row 55: a large negative v0, a tie.
            (0xd18c_2102, 0x3698_99aa, 96, 0xd12f_2943),
            // Row 10: a tie away from zero although the dropped texel pulls toward it.
            (0x2529_3bdb, 0xef9e_169a, 5, 0xecc5_9c41),
            // Row 50, weight 0 on v1: v0 exactly (not truncated to v1's grid).
            (0xb5b9_0777, 0xbc04_3192, 0, 0xb5b9_0777),
        ] {
            let got = mix1(&[(256 - j, f(v0)), (j, f(v1))]);
            assert_eq!(got, want, "{} {} a = {j}/256", f(v0), f(v1));
        }
    }

    /// 2-D mixes the GPU gave (probe `mix2_tex` / `mix2_out`): the weights rounded as
    /// `round(ab)` with exact marginals.
    #[test]
    fn mix_2d_matches_the_probe() {
        assert_eq!(corner_weights(&[8, 8])[..4], [240, 8, 8, 0]);
        assert_eq!(corner_weights(&[16, 8])[..4], [233, 15, 7, 1]);
        assert_eq!(corner_weights(&[88, 16])[..4], [158, 82, 10, 6]);
        assert_eq!(corner_weights(&[7, 9, 200]).iter().sum::<u32>(), 256);
        for (t, a, b, want) in PROBE_2D {
            let w = corner_weights(&[a, b]);
            let taps: Vec<Tap> = (0..4)
                .map(|k| Tap {
                    w: w[k],
                    live: corner_live(&[a, b], k),
                    v: f(t[k]),
                })
                .collect();
            assert_eq!(
                mix(&taps, FloatFormat::F32),
                want,
                "{t:x?} at {a}/256, {b}/256"
            );
        }
    }

    /// 3-D weights and mixes the GPU gave (texprobe5.npz: the indicator blocks `v3_f32_out`
    /// 0..7 read off the weights; `v3_f32`, `v3_f16`, `v3_u8` blocks 31, 30, 43, 20, 26 at the
    /// fractions given).
    #[test]
    fn mix_3d_matches_the_probe() {
        assert_eq!(
            corner_weights(&[128, 128, 255]),
            [0, 0, 0, 1, 64, 64, 63, 64]
        );
        assert_eq!(corner_weights(&[1, 128, 1]), [127, 0, 127, 1, 1, 0, 0, 0]);
        assert_eq!(corner_weights(&[5, 128, 128]), [63, 1, 62, 2, 63, 1, 62, 2]);
        let planes = |fr: [u32; 3], t: [f32; 8], fmt| {
            let w = corner_weights(&fr);
            let taps: Vec<Tap> = (0..8)
                .map(|k| Tap {
                    w: w[k],
                    live: corner_live(&fr, k),
                    v: t[k],
                })
                .collect();
            mix_planes(&[&taps[..4], &taps[4..]], fmt)
        };
        for (t, fr, want) in [
            (
                [
                    0x39b6_fd7e,
                    0x3bd1_5ea4,
                    0xbfc0_df59,
                    0xc4a1_7a1f,
                    0xba3a_57e7,
                    0x4422_cf24,
                    0x3c29_1bf9,
                    0xba6c_efab,
                ],
                [5, 128, 128],
                0xc0fd_264f,
            ),
            (
                [
                    0xbcd2_8b11,
                    0xba8f_f16f,
                    0xc06f_19ea,
                    0xbd5e_3e82,
                    0x3a3d_e8d6,
                    0x43e2_f164,
                    0xc38c_1d3a,
                    0xba2e_6a64,
                ],
                [128, 128, 96],
                0x417a_f1a0,
            ),
        ] {
            assert_eq!(
                planes(fr, t.map(f), FloatFormat::F32),
                want,
                "{t:x?} {fr:?}"
            );
        }
        let h = |b: u16| half::f16::from_bits(b).to_f32();
        let t16 = [
            0x30b1, 0xa5bd, 0xcf6a, 0xb0ac, 0x25bd, 0x9f99, 0x1f9e, 0x4f6a,
        ]
        .map(h);
        assert_eq!(planes([192, 0, 224], t16, FloatFormat::F16), 0x3b24_c000);
        for (t, fr, want) in [
            (
                [181, 179, 178, 181, 176, 180, 177, 179],
                [128, 128, 165],
                0x3f33_55b3,
            ),
            (
                [233, 99, 67, 21, 65, 197, 104, 255],
                [128, 128, 66],
                0x3eed_40ed,
            ),
        ] {
            let w = corner_weights(&fr);
            let taps: Vec<(u32, i64)> = (0..8).map(|k| (w[k], t[k])).collect();
            let got = mix_normalized(ChannelKind::U8, &taps).to_bits();
            assert_eq!(got, want, "{t:?} {fr:?}");
        }
    }

    /// Probe 2-D samples: texels (00, 10, 01, 11) as bits, a, b, the GPU's result.
    const PROBE_2D: [([u32; 4], u32, u32, u32); 6] = [
        (
            [0x3f69_4864, 0xbeb8_6df7, 0xbf6c_fdc2, 0x3fb8_deca],
            8,
            8,
            0x3f50_6a38,
        ),
        (
            [0x3f69_4864, 0xbeb8_6df7, 0xbf6c_fdc2, 0x3fb8_deca],
            16,
            8,
            0x3f49_e278,
        ),
        (
            [0x38fa_05dd, 0xb84b_6257, 0xb8ed_fddd, 0x3954_a7a5],
            40,
            120,
            0x37a6_9350,
        ),
        (
            [0xb7d8_e486, 0xb6fd_b16a, 0x3613_fb0d, 0x3782_5b62],
            144,
            184,
            0x362d_bb7b,
        ),
        (
            [0xba83_de80, 0xb748_0ba7, 0x3a1a_a909, 0x3a13_e92f],
            24,
            8,
            0xba63_4679,
        ),
        (
            [0xb6b3_e9f5, 0x3965_b7e1, 0x3807_74ce, 0xb711_b3dd],
            80,
            240,
            0x37bb_3ab0,
        ),
    ];

    #[test]
    fn specials_and_rounding() {
        assert_eq!(mix1(&[(128, 1.0), (128, -1.0)]), 0);
        assert_eq!(mix1(&[(128, -0.0), (128, -0.0)]), 0x8000_0000);
        assert_eq!(mix1(&[(256, -0.0), (0, f32::NAN)]), 0x8000_0000);
        assert_eq!(mix1(&[(1, f32::NAN), (255, 1.0)]), 0x7fff_ffff);
        assert_eq!(
            mix1(&[(1, f32::INFINITY), (255, f32::NEG_INFINITY)]),
            0x7fff_ffff
        );
        assert_eq!(mix1(&[(1, f32::INFINITY), (255, 1.0)]), 0x7f80_0000);
        assert_eq!(
            mix1(&[(128, f32::MAX), (128, f32::MAX)]),
            f32::MAX.to_bits()
        );
        assert_eq!(
            mix_fmt(&[(1, f32::NAN), (255, 1.0)], FloatFormat::F16),
            0x7fff_e000
        );
    }

    /// f32 subnormals (texprobe4.npz `b1_tiny_tex` pairs p = 20..23, 60, 61, `b1_tiny_out`):
    /// flushed as texels (keeping their sign) and as results (with the sum's sign).
    #[test]
    fn subnormals_flush_as_the_probe_shows() {
        for (v0, v1, a, want) in [
            (0x8000_0000, 0x0080_0000, 0, 0x8000_0000),
            (0x8000_0000, 0x0080_0000, 50, 0),
            (0x0080_0000, 0x8000_0000, 0, 0x0080_0000),
            (0x0080_0000, 0x8000_0000, 128, 0),
            (0x8000_0000, 0x8080_0000, 50, 0x8000_0000),
            (0x8080_0000, 0x8000_0000, 128, 0x8000_0000),
            // Two subnormals of opposite signs: +0 even at weight 1 on the first.
            (0x0026_9f89, 0x8062_7f5f, 0, 0),
            (0x0026_9f89, 0x8062_7f5f, 128, 0),
            // The smallest normal and its negative neighbour: the sum is subnormal, flushed.
            (0x0081_6e11, 0x8081_6e0a, 0, 0x0081_6e11),
            (0x0081_6e11, 0x8081_6e0a, 50, 0),
        ] {
            let got = mix1(&[(256 - a, f(v0)), (a, f(v1))]);
            assert_eq!(got, want, "{v0:#x} {v1:#x} at {a}/256");
        }
    }

    /// NaN and infinity texels: one of weight 0 is ignored in 1-D (`b1_spec`), but a 2-D
    /// corner whose rounded weight is 0 still takes part (`b2_spec` block 0, W2 entry 1054:
    /// a = b = 248/256, w00 = 0), and one of weight 0 does not set the alignment (`b2_tiny`
    /// block 15, same entry).
    #[test]
    fn specials_of_weight_zero_as_the_probe_shows() {
        assert_eq!(mix1(&[(256, 1.0), (0, f32::NAN)]), 1.0f32.to_bits());
        assert_eq!(
            mix1(&[(0, f32::INFINITY), (256, -1.0)]),
            (-1.0f32).to_bits()
        );
        assert_eq!(mix1(&[(255, 1.0), (1, f32::NAN)]), 0x7fff_ffff);
        let corner = |t: [u32; 4]| {
            let w = corner_weights(&[248, 248]);
            assert_eq!(w[..4], [0, 8, 8, 240]);
            let taps: Vec<Tap> = (0..4)
                .map(|k| Tap {
                    w: w[k],
                    live: corner_live(&[248, 248], k),
                    v: f(t[k]),
                })
                .collect();
            mix(&taps, FloatFormat::F32)
        };
        assert_eq!(
            corner([0x7fc0_0000, 0x3c3e_cd3e, 0xc19e_6ad9, 0x447d_e6ca]),
            0x7fff_ffff
        );
        assert_eq!(
            corner([0x0d6b_1916, 0x8000_0371, 0x008e_5235, 0x008b_2ed5]),
            0x0086_ee79
        );
        // A negative normal of weight 0 and three negative subnormals: +0.
        assert_eq!(
            corner([0x878c_14d0, 0x8000_0aa4, 0x8076_0d86, 0x8078_fa53]),
            0
        );
    }

    /// f16 texels mix at f16 precision (texprobe4.npz `a1_f16_tex` / `a1_f16_out`, pairs
    /// p = 3, 100, 200, 300, 450; texels as f16 bits, a in 1/256).
    #[test]
    fn f16_mix_matches_the_probe() {
        let h = |b: u16| half::f16::from_bits(b).to_f32();
        for (v0, v1, a, want) in [
            (0u16, 64511u16, 244u32, 0xc773_e000u32),
            (15438, 16322, 102, 0x3fb5_c000),
            (53234, 48969, 164, 0xc149_6000),
            (24616, 1595, 221, 0x4291_8000),
            (35653, 52472, 39, 0xc041_c000),
        ] {
            let got = mix_fmt(&[(256 - a, h(v0)), (a, h(v1))], FloatFormat::F16);
            assert_eq!(got, want, "{v0:#x} {v1:#x} at {a}/256");
        }
    }

    /// Normalized-read integers filter in 16-bit fixed point (texprobe4.npz `a1_{T}_tex` /
    /// `a1_{T}_out`, pairs p = 3, 100, 200, 300, 450; `a2_u8` block 9).
    #[test]
    fn normalized_integer_mix_matches_the_probe() {
        use ChannelKind::*;
        for (kind, v0, v1, a, want) in [
            (U8, 0, 255, 122, 0x3ef4_00f4u32),
            (U8, 119, 122, 152, 0x3ef2_82f3),
            (U8, 108, 105, 140, 0x3ed5_8cd6),
            (U8, 2, 49, 95, 0x3d9c_209c),
            (U16, 0, 65535, 243, 0x3f72_fff3),
            (U16, 32690, 32689, 161, 0x3eff_62ff),
            (U16, 59170, 11149, 17, 0x3f5a_addb),
            (I16, 0, 32767, 7, 0x3ce0_01c0),
            (I16, 3538, 20185, 121, 0x3eb2_3964),
            (I16, -3134, 27486, 67, 0x3e18_8131),
            // i8 (p = 5, 100, 450, and p = 3, which round(I * 32767 / 32512), the closest
            // rule before, got one step too high).
            (I8, 0, -127, 167, 0xbf26_ff4e),
            (I8, 67, -113, 100, 0xbcd5_c1ac),
            (I8, -40, -42, 50, 0xbea2_d546),
            (I8, 0, 127, 120, 0x3eef_fde0),
            // Small negative sums: floor, one step below the nearest.
            (I8, 0, -1, 49, 0xbac8_0190),
        ] {
            let got = mix_normalized(kind, &[(256 - a, v0), (a, v1)]).to_bits();
            assert_eq!(got, want, "{kind:?} {v0} {v1} at {a}/256");
        }
        // 2-D, u8: texels (00, 10, 01, 11) = (1, 222, 82, 218).
        for (a, b, want) in [
            (8, 24, 0x3d73_a0f4u32),
            (15, 122, 0x3e49_b0ca),
            (60, 106, 0x3e9c_ae9d),
        ] {
            let w = corner_weights(&[a, b]);
            let taps: Vec<(u32, i64)> = w[..4]
                .iter()
                .zip([1, 222, 82, 218])
                .map(|(&w, v)| (w, v))
                .collect();
            assert_eq!(mix_normalized(U8, &taps).to_bits(), want, "{a} {b}");
        }
    }
}
