//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
//! cuRAND's default generator): a counter-based generator with no state. Four 32-bit words
//! are a pure function of a 128-bit counter and a 64-bit key, so any element of a stream of
//! random numbers can be computed on its own: in an `Elementwise` kernel, from the element's
//! index (`ops::Index`) and a seed.
//!
//! The conversions to floats are cuRAND's: `uniform4_f32` of counter `c` with key `seed` and
//! subsequence `s` gives what `curand_uniform4` gives for a `curandStatePhilox4_32_10_t`
//! initialised with `curand_init(seed, s, 4 * c, &state)`.

use crate::codegen::Expr;

const M0: u32 = 0xd251_1f53;
const M1: u32 = 0xcd9e_8d57;
const W0: u32 = 0x9e37_79b9;
const W1: u32 = 0xbb67_ae85;

/// cuRAND's `CURAND_2POW32_INV` (2^-32).
const TWO_POW32_INV: f32 = 2.328_306_4e-10;
/// cuRAND's `CURAND_2POW53_INV_DOUBLE` (2^-53).
const TWO_POW53_INV: f64 = 1.0 / 9_007_199_254_740_992.0;

/// Philox4x32 with 10 rounds on the host: the reference model.
pub fn philox4x32_10_host(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for r in 0..10 {
        if r > 0 {
            key[0] = key[0].wrapping_add(W0);
            key[1] = key[1].wrapping_add(W1);
        }
        let p0 = M0 as u64 * ctr[0] as u64;
        let p1 = M1 as u64 * ctr[2] as u64;
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0];
    }
    ctr
}

/// Philox4x32-10 in a kernel: four random words from a counter and a key.
#[track_caller]
pub fn philox4x32_10(ctr: [Expr<u32>; 4], key: [Expr<u32>; 2]) -> [Expr<u32>; 4] {
    let _at = crate::codegen::srcloc::at();
    let mut ctr = ctr;
    let mut key = key;
    for r in 0..10 {
        if r > 0 {
            key = [key[0] + W0, key[1] + W1];
        }
        let p0 = Expr::lit(M0 as u64) * ctr[0].cast::<u64>();
        let p1 = Expr::lit(M1 as u64) * ctr[2].cast::<u64>();
        let (hi0, lo0) = ((p0 >> 32u64).cast::<u32>(), p0.cast::<u32>());
        let (hi1, lo1) = ((p1 >> 32u64).cast::<u32>(), p1.cast::<u32>());
        ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0];
    }
    ctr
}

/// A Philox4x32-10 stream keyed by a 64-bit seed, inside a kernel.
#[derive(Clone, Copy)]
pub struct Philox {
    key: [Expr<u32>; 2],
}

impl Philox {
    /// The stream of `seed` (any `u64` expression: a scalar parameter, or a literal).
    #[track_caller]
    pub fn new(seed: impl Into<Expr<u64>>) -> Philox {
        let _at = crate::codegen::srcloc::at();
        let seed = seed.into();
        Philox {
            key: [seed.cast::<u32>(), (seed >> 32u64).cast::<u32>()],
        }
    }

    /// The four words at `counter` of `subsequence` (counter words: `counter`'s low and high
    /// halves, then `subsequence`'s).
    #[track_caller]
    pub fn words(
        &self,
        subsequence: impl Into<Expr<u64>>,
        counter: impl Into<Expr<u64>>,
    ) -> [Expr<u32>; 4] {
        let _at = crate::codegen::srcloc::at();
        let (c, s) = (counter.into(), subsequence.into());
        let ctr = [
            c.cast::<u32>(),
            (c >> 32u64).cast::<u32>(),
            s.cast::<u32>(),
            (s >> 32u64).cast::<u32>(),
        ];
        philox4x32_10(ctr, self.key)
    }

    /// Four float32 in `(0, 1]` from the words at `counter` (cuRAND's `curand_uniform4`:
    /// `x * 2^-32 + 2^-33`, rounded to float32).
    #[track_caller]
    pub fn uniform4_f32(
        &self,
        subsequence: impl Into<Expr<u64>>,
        counter: impl Into<Expr<u64>>,
    ) -> [Expr<f32>; 4] {
        let _at = crate::codegen::srcloc::at();
        self.words(subsequence, counter).map(unit_f32)
    }

    /// One float32 in `(0, 1]`: the first of [`uniform4_f32`](Self::uniform4_f32).
    #[track_caller]
    pub fn uniform_f32(&self, counter: impl Into<Expr<u64>>) -> Expr<f32> {
        let _at = crate::codegen::srcloc::at();
        unit_f32(self.words(0u64, counter)[0])
    }

    /// Two float64 in `(0, 1]` from the words at `counter` (cuRAND's `curand_uniform2_double`:
    /// 53 bits from each pair of words).
    #[track_caller]
    pub fn uniform2_f64(
        &self,
        subsequence: impl Into<Expr<u64>>,
        counter: impl Into<Expr<u64>>,
    ) -> [Expr<f64>; 2] {
        let _at = crate::codegen::srcloc::at();
        let w = self.words(subsequence, counter);
        [unit_f64(w[0], w[1]), unit_f64(w[2], w[3])]
    }

    /// One float64 in `(0, 1]`: the first of [`uniform2_f64`](Self::uniform2_f64).
    #[track_caller]
    pub fn uniform_f64(&self, counter: impl Into<Expr<u64>>) -> Expr<f64> {
        let _at = crate::codegen::srcloc::at();
        self.uniform2_f64(0u64, counter)[0]
    }

    /// Two standard normal float32 by Box-Muller from the first two uniforms `u`, `v` at
    /// `counter`: `sqrt(-2 ln u) * (sin, cos)(2 pi v)` (the method of cuRAND's
    /// `curand_normal2`, not its bits: cuRAND scales `v` differently and uses its own `sincosf`).
    #[track_caller]
    pub fn normal2_f32(
        &self,
        subsequence: impl Into<Expr<u64>>,
        counter: impl Into<Expr<u64>>,
    ) -> [Expr<f32>; 2] {
        let _at = crate::codegen::srcloc::at();
        let u = self.uniform4_f32(subsequence, counter);
        let r = (Expr::lit(-2.0f32) * u[0].ln()).sqrt();
        let t = Expr::lit(std::f32::consts::TAU) * u[1];
        [r * t.sin(), r * t.cos()]
    }
}

/// `x * 2^-32 + 2^-33` in float32.
fn unit_f32(x: Expr<u32>) -> Expr<f32> {
    x.cast::<f32>() * Expr::lit(TWO_POW32_INV) + Expr::lit(TWO_POW32_INV / 2.0)
}

/// 53 bits of `x ^ (y << 21)` times 2^-53, plus 2^-54.
fn unit_f64(x: Expr<u32>, y: Expr<u32>) -> Expr<f64> {
    let z = x.cast::<u64>() ^ (y.cast::<u64>() << 21u64);
    z.cast::<f64>() * Expr::lit(TWO_POW53_INV) + Expr::lit(TWO_POW53_INV / 2.0)
}

/// The host model of [`Philox::uniform4_f32`].
pub fn philox_uniform4_f32_host(seed: u64, subsequence: u64, counter: u64) -> [f32; 4] {
    let w = philox_words_host(seed, subsequence, counter);
    w.map(|x| x as f32 * TWO_POW32_INV + TWO_POW32_INV / 2.0)
}

/// The host model of [`Philox::uniform2_f64`].
pub fn philox_uniform2_f64_host(seed: u64, subsequence: u64, counter: u64) -> [f64; 2] {
    let w = philox_words_host(seed, subsequence, counter);
    let f = |x: u32, y: u32| {
        let z = x as u64 ^ ((y as u64) << 21);
        z as f64 * TWO_POW53_INV + TWO_POW53_INV / 2.0
    };
    [f(w[0], w[1]), f(w[2], w[3])]
}

/// The host model of [`Philox::words`].
pub fn philox_words_host(seed: u64, subsequence: u64, counter: u64) -> [u32; 4] {
    philox4x32_10_host(
        [
            counter as u32,
            (counter >> 32) as u32,
            subsequence as u32,
            (subsequence >> 32) as u32,
        ],
        [seed as u32, (seed >> 32) as u32],
    )
}

#[cfg(test)]
mod tests {
    use super::philox4x32_10_host;

    /// Random123's known-answer vectors for Philox4x32-10.
    #[test]
    fn philox_known_answers() {
        assert_eq!(
            philox4x32_10_host([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10_host([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10_host(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
