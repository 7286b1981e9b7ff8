//! The texture unit's arithmetic, as measured on an H200 (probe/texprobe3.py, fitted bit for
//! bit by probe/fit.py): the fixed-point texel coordinate, the linear filter's weights and its
//! mix.
//!
//! - A coordinate becomes fixed point with [`COORD_FRAC_BITS`] fractional bits (floored); a
//!   normalized one is converted first, then multiplied by the extent exactly (so `u = k / N`
//!   in f32 can read texel `k - 1`). Point sampling reads `floor` of it.
//! - Linear filtering rounds `x - 0.5` to 8 fractional bits, ties up: the lower texel is its
//!   integer part, the upper texel's weight `a` its fraction (in 1/256 steps).
//! - 2-D weights: `w11 = round_half_up(a b)` (in 1/256 steps), `w10 = a - w11`,
//!   `w01 = b - w11`, `w00 = 1 - a - b + w11`. 3-D (not probed: an extrapolation) splits each
//!   2-D weight `w` by the third fraction `c` the same way: `round_half_up(w c)` and the rest.
//! - The mix: the texels with a nonzero weight are aligned to the largest one's exponent `E`
//!   and truncated toward zero to multiples of `2^(E-27)`, summed with their weights exactly,
//!   and the sum is rounded to f32 with ties away from zero. A lone texel of weight 1 is read
//!   as it is. NaNs and infinities (not probed) follow IEEE addition: any NaN, or infinities of
//!   both signs, give NaN; otherwise an infinity wins.

/// Fractional bits of the fixed-point texel coordinate (the probe: normalized coordinates
/// truncated to 21 bits match all 2,079 measured thresholds; 20 or 22 bits match half).
pub(super) const COORD_FRAC_BITS: u32 = 21;

/// Bits of a texel kept below the largest texel's leading bit, in the mix (the probe: 27
/// matches all 102,800 1-D and 217,800 2-D outputs; 26 or 28 about 98%).
const MIX_BITS_BELOW: i32 = 27;

/// A coordinate in texels as fixed point with [`COORD_FRAC_BITS`] fractional bits (floored;
/// NaN reads as 0, out-of-range values saturate). Normalized coordinates are converted to
/// fixed point first, then scaled by `extent` exactly.
pub(super) fn fixed_coord(x: f32, normalized: bool, extent: usize) -> i128 {
    let fx = (f64::from(x) * f64::from(1u32 << COORD_FRAC_BITS)).floor();
    // `as` saturates (and maps NaN to 0); the clamp keeps the product by any extent in range.
    let fixed = (fx as i128).clamp(-(1 << 90), 1 << 90);
    if normalized {
        fixed * extent as i128
    } else {
        fixed
    }
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
        [a, b] | [a, b, _] => {
            let w11 = split(a, b);
            w[0] = 256 + w11 - a - b;
            w[1] = a - w11;
            w[2] = b - w11;
            w[3] = w11;
            if let [_, _, c] = *fracs {
                for k in 0..4 {
                    w[k + 4] = split(w[k], c);
                    w[k] -= w[k + 4];
                }
            }
        }
        _ => w[0] = 256,
    }
    w
}

/// The filtered value of `terms`: (weight in 1/256 steps, texel) pairs, weights summing to
/// 256 (see the module's notes for the arithmetic).
pub(super) fn mix(terms: impl IntoIterator<Item = (u32, f32)>) -> f32 {
    let terms: Vec<(u32, f32)> = terms.into_iter().filter(|&(w, _)| w != 0).collect();
    if let [(_, t)] = terms[..] {
        return t;
    }
    let (mut pos_inf, mut neg_inf) = (false, false);
    for &(_, t) in &terms {
        if t.is_nan() {
            return f32::NAN;
        }
        pos_inf |= t == f32::INFINITY;
        neg_inf |= t == f32::NEG_INFINITY;
    }
    match (pos_inf, neg_inf) {
        (true, true) => return f32::NAN,
        (true, false) => return f32::INFINITY,
        (false, true) => return f32::NEG_INFINITY,
        _ => {}
    }
    let parts: Vec<(u32, bool, u64, i32)> = terms
        .iter()
        .map(|&(w, t)| {
            let (m, p) = decompose(t);
            (w, t.is_sign_negative(), m, p)
        })
        .collect();
    let Some(top) = parts
        .iter()
        .filter(|p| p.2 != 0)
        .map(|&(_, _, m, p)| p + 63 - m.leading_zeros() as i32)
        .max()
    else {
        // Only zeros: -0 if every one is -0 (as IEEE addition), else +0.
        return if parts.iter().all(|p| p.1) { -0.0 } else { 0.0 };
    };
    let grid = top - MIX_BITS_BELOW;
    let sum: i64 = parts
        .iter()
        .map(|&(w, neg, m, p)| {
            let aligned = if p >= grid {
                m << (p - grid)
            } else {
                m.checked_shr((grid - p) as u32).unwrap_or(0)
            } as i64;
            let v = i64::from(w) * aligned;
            if neg {
                -v
            } else {
                v
            }
        })
        .sum();
    round_ties_away(sum, grid - 8)
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

/// `s * 2^p` rounded to f32, ties away from zero (+0 for 0).
fn round_ties_away(s: i64, p: i32) -> f32 {
    if s == 0 {
        return 0.0;
    }
    let mut a = u128::from(s.unsigned_abs());
    let lead = p + 127 - a.leading_zeros() as i32;
    // The f32 grid's exponent at this magnitude (subnormals: 2^-149).
    let q = lead.max(-126) - 23;
    if q > p {
        let sh = (q - p) as u32;
        a = if sh > 64 {
            0
        } else {
            (a + (1 << (sh - 1))) >> sh
        };
    } else {
        a <<= p - q;
    }
    // Exact: a <= 2^24 and 2^q is an f64 power of two in range.
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
        // N = 65535, k = 1: the probe saw no threshold within 2^15 ulps of f32(1/N); it lies
        // at 33 / 2^21, well above.
        let u = 33.0f32 / (1 << 21) as f32;
        assert_eq!(point_index(fixed_coord(u, true, 65535)), 1);
        let below = f32::from_bits(u.to_bits() - 1);
        assert_eq!(point_index(fixed_coord(below, true, 65535)), 0);
    }

    /// Normalized linear sampling of a ramp over 7 texels (texel i holds i): the probe's
    /// `linear_ramp_7` at a few u, where f32(u * 7) - 0.5 would round the other way.
    #[test]
    fn normalized_linear_weights_match_the_probe() {
        let ramp = |u: f32, n: usize| {
            let (i, a) = linear_index(fixed_coord(u, true, n));
            let t = |j: i64| j.clamp(0, n as i64 - 1) as f32;
            mix([(256 - a, t(i)), (a, t(i + 1))])
        };
        // The weight of x - 0.5 = 0.5/256 exactly rounds up (ties up) ...
        assert_eq!(linear_index(0x10_0000 + 0x1000), (0, 1));
        // ... and x - 0.5 a 2^-21 short of 2 rounds to texel 2, weight 0.
        assert_eq!(linear_index((5 << 20) - 1), (2, 0));
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
            let got = mix([(256 - j, f(v0)), (j, f(v1))]);
            assert_eq!(got.to_bits(), want, "{} {} a = {j}/256", f(v0), f(v1));
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
            let got = mix((0..4).map(|k| (w[k], f(t[k]))));
            assert_eq!(got.to_bits(), want, "{t:x?} at {a}/256, {b}/256");
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
        assert_eq!(mix([(128, 1.0), (128, -1.0)]).to_bits(), 0);
        assert_eq!(mix([(128, -0.0), (128, -0.0)]).to_bits(), 0x8000_0000);
        assert_eq!(mix([(256, -0.0), (0, f32::NAN)]).to_bits(), 0x8000_0000);
        assert!(mix([(1, f32::NAN), (255, 1.0)]).is_nan());
        assert!(mix([(1, f32::INFINITY), (255, f32::NEG_INFINITY)]).is_nan());
        assert_eq!(mix([(1, f32::INFINITY), (255, 1.0)]), f32::INFINITY);
        assert_eq!(mix([(128, f32::MAX), (128, f32::MAX)]), f32::MAX);
        // Subnormals: 3 * 2^-149 halved is a tie, rounded away from zero.
        assert_eq!(mix([(128, f(3)), (128, 0.0)]).to_bits(), 2);
        assert_eq!(mix([(128, f(1)), (128, 0.0)]).to_bits(), 1);
    }
}
