//! Numba's `numba.cuda.random`: xoroshiro128+ generators, one per thread, with the same state
//! layout, seeding and conversions, so that one seed gives Numba's sequences.
//!
//! A state is two `u64` (`s0`, `s1`; Numba's aligned record `xoroshiro128p_dtype`), stored
//! consecutively: state `i` is elements `2i` and `2i + 1` of a `u64` device array. States are
//! seeded as Numba does (on the host, as Numba does since 0.57): SplitMix64 of the seed gives
//! state 0, advanced by `subsequence_start` jumps of 2^64 steps; state `i` is state `i - 1`
//! jumped once more, so no two threads overlap before 2^64 draws.

use crate::codegen::{DArray, Expr, Index, KernelParam, ReadWrite};
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// The jump polynomial: advances a state by 2^64 steps.
const JUMP: [u64; 2] = [0xbeac_0467_eba5_facb, 0xd86b_048b_86aa_9922];
/// Numba's `np.float32(2 * math.pi)`.
const TWO_PI_F32: f32 = std::f32::consts::TAU;
/// Numba's `np.float64(2 * math.pi)`.
const TWO_PI_F64: f64 = std::f64::consts::TAU;

/// One xoroshiro128+ generator on the host: the reference model of the device functions
/// (Numba's algorithm, step for step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xoroshiro128pHost {
    /// The state's first word.
    pub s0: u64,
    /// The state's second word.
    pub s1: u64,
}

impl Xoroshiro128pHost {
    /// The state SplitMix64 makes of `seed` (Numba's `init_xoroshiro128p_state`).
    pub fn from_seed(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Xoroshiro128pHost { s0: z, s1: z }
    }

    /// The next 64 random bits (`xoroshiro128p_next`).
    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s0, self.s1);
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        result
    }

    /// Advances by 2^64 steps (`xoroshiro128p_jump`).
    pub fn jump(&mut self) {
        let (mut s0, mut s1) = (0u64, 0u64);
        for word in JUMP {
            for b in 0..64 {
                if word & (1u64 << b) != 0 {
                    s0 ^= self.s0;
                    s1 ^= self.s1;
                }
                self.next_u64();
            }
        }
        self.s0 = s0;
        self.s1 = s1;
    }

    /// A float64 in `[0, 1)`: the top 53 bits of the next draw.
    pub fn uniform_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// A float32 from [`uniform_f64`](Self::uniform_f64)'s value rounded to nearest, as Numba
    /// does (so it can be exactly 1.0 when the draw is within 2^-25 of 1).
    pub fn uniform_f32(&mut self) -> f32 {
        unit_f64(self.next_u64()) as f32
    }

    /// A standard normal float32 by Box-Muller from two [`uniform_f32`](Self::uniform_f32)
    /// draws (the cosine branch; the sine branch is discarded, as Numba does).
    pub fn normal_f32(&mut self) -> f32 {
        let u1 = self.uniform_f32();
        let u2 = self.uniform_f32();
        (-2.0f32 * u1.ln()).sqrt() * (TWO_PI_F32 * u2).cos()
    }

    /// A standard normal float64, as Numba computes it: two *float32* uniforms, the
    /// logarithm in float32, the rest in float64.
    pub fn normal_f64(&mut self) -> f64 {
        let u1 = self.uniform_f32();
        let u2 = self.uniform_f32();
        (-2.0f64 * u1.ln() as f64).sqrt() * (TWO_PI_F64 * u2 as f64).cos()
    }
}

/// `(x >> 11) * 2^-53`.
fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The states Numba's `init_xoroshiro128p_states(states, seed, subsequence_start)` writes, as
/// `(s0, s1)` pairs.
pub fn xoroshiro128p_states_host(n: usize, seed: u64, subsequence_start: u64) -> Vec<[u64; 2]> {
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut g = Xoroshiro128pHost::from_seed(seed);
    for _ in 0..subsequence_start {
        g.jump();
    }
    out.push([g.s0, g.s1]);
    for _ in 1..n {
        g.jump();
        out.push([g.s0, g.s1]);
    }
    out
}

/// The states of `n` xoroshiro128+ generators on the device (Numba's
/// `create_xoroshiro128p_states`). A kernel takes them as a `&mut Xoroshiro128pStates`
/// parameter and draws with [`Xoroshiro128p`]'s methods.
///
/// ```no_run
/// use cudajit::codegen::Kernel;
/// use cudajit::prelude::*;
/// use cudajit::random::{create_xoroshiro128p_states, Xoroshiro128pStates};
/// # fn main() -> cudajit::Result<()> {
/// let ctx = Context::new(0)?;
/// let s = ctx.new_stream()?;
/// let n = 1 << 16;
/// let mut states = create_xoroshiro128p_states(&s, n, 42, 0)?;
/// let k = Kernel::<(&mut Xoroshiro128pStates, &mut [f32])>::build("draw", |k, (rng, out)| {
///     let i = k.grid1();
///     k.if_(i.lt(out.len()), |_| out.set(i, rng.uniform_f32(i)));
/// })?;
/// let mut out = s.zeros::<f32, _>(n)?;
/// k.launch(&s, LaunchConfig::for_num_elems(n, 256)?, (&mut states, &mut out))?;
/// # Ok(()) }
/// ```
pub struct Xoroshiro128pStates {
    words: DeviceArray<u64>,
}

impl Xoroshiro128pStates {
    /// How many generators.
    pub fn len(&self) -> usize {
        self.words.len() / 2
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.words.len() == 0
    }

    /// The states as a `u64` device array of `2 * len()` words (`s0, s1` per generator: the
    /// memory layout of Numba's state arrays).
    pub fn words(&self) -> &DeviceArray<u64> {
        &self.words
    }

    /// The states copied to the host, as `(s0, s1)` pairs (waits for `stream`).
    pub fn to_host(&self, stream: &Stream) -> Result<Vec<[u64; 2]>> {
        let w = self.words.to_vec_async(stream)?;
        Ok(w.chunks_exact(2).map(|c| [c[0], c[1]]).collect())
    }

    /// Seeds the generators again, as [`create_xoroshiro128p_states`] does (Numba's
    /// `init_xoroshiro128p_states`), ordered on `stream`.
    pub fn init(&mut self, stream: &Stream, seed: u64, subsequence_start: u64) -> Result<()> {
        let host = state_words(self.len(), seed, subsequence_start);
        self.words.copy_from_host_async(&host, stream)
    }
}

/// `n` xoroshiro128+ generators seeded from `seed` as Numba's
/// `create_xoroshiro128p_states(n, seed, subsequence_start)` seeds them (the same seed gives
/// the same states, hence the same draws), copied to the device on `stream`. Seeding walks
/// the generators one after the other on the host (128 steps each), as Numba does: about
/// 0.2 s per million generators.
pub fn create_xoroshiro128p_states(
    stream: &Stream,
    n: usize,
    seed: u64,
    subsequence_start: u64,
) -> Result<Xoroshiro128pStates> {
    Ok(Xoroshiro128pStates {
        words: stream.to_device(&state_words(n, seed, subsequence_start))?,
    })
}

/// [`xoroshiro128p_states_host`] as the device's words: `s0, s1` per generator.
fn state_words(n: usize, seed: u64, subsequence_start: u64) -> Vec<u64> {
    xoroshiro128p_states_host(n, seed, subsequence_start)
        .into_iter()
        .flatten()
        .collect()
}

/// The generators inside a kernel (the handle of a `&mut Xoroshiro128pStates` parameter).
/// Each method takes the generator's index (usually the thread's global index), advances that
/// generator and returns its draw, as Numba's `xoroshiro128p_*(states, index)` functions do.
/// Indices are not checked (as array indices are not); the simulator reports an index past
/// the end as an out-of-bounds access.
#[derive(Clone, Copy)]
pub struct Xoroshiro128p {
    words: DArray<u64, 1, ReadWrite>,
}

impl Xoroshiro128p {
    /// The next 64 random bits of generator `index` (`xoroshiro128p_next`).
    #[track_caller]
    pub fn next_u64(&self, index: impl Index) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        let at = index.to_index() * 2i64;
        let (s0, s1) = (self.words.at(at), self.words.at(at + 1i64));
        let result = s0 + s1;
        let s1 = s1 ^ s0;
        self.words.set(at, rotl(s0, 55) ^ s1 ^ (s1 << 14u64));
        self.words.set(at + 1i64, rotl(s1, 36));
        result
    }

    /// Advances generator `index` by 2^64 steps (`xoroshiro128p_jump`; 128 steps of work).
    #[track_caller]
    pub fn jump(&self, index: impl Index) {
        let _at = crate::codegen::srcloc::at();
        let i = index.to_index();
        let at = i * 2i64;
        let (mut s0, mut s1) = (Expr::lit(0u64), Expr::lit(0u64));
        for word in JUMP {
            for b in 0..64 {
                if word & (1u64 << b) != 0 {
                    s0 = s0 ^ self.words.at(at);
                    s1 = s1 ^ self.words.at(at + 1i64);
                }
                self.next_u64(i);
            }
        }
        self.words.set(at, s0);
        self.words.set(at + 1i64, s1);
    }

    /// A float64 in `[0, 1)` (`xoroshiro128p_uniform_float64`).
    #[track_caller]
    pub fn uniform_f64(&self, index: impl Index) -> Expr<f64> {
        let _at = crate::codegen::srcloc::at();
        unit_f64_expr(self.next_u64(index))
    }

    /// A float32 (`xoroshiro128p_uniform_float32`): the float64 draw rounded to nearest, so
    /// in `[0, 1]` (1.0 when the draw is within 2^-25 of 1, as in Numba).
    #[track_caller]
    pub fn uniform_f32(&self, index: impl Index) -> Expr<f32> {
        let _at = crate::codegen::srcloc::at();
        unit_f64_expr(self.next_u64(index)).cast::<f32>()
    }

    /// A standard normal float32 (`xoroshiro128p_normal_float32`: Box-Muller on two float32
    /// uniforms; two steps).
    #[track_caller]
    pub fn normal_f32(&self, index: impl Index) -> Expr<f32> {
        let _at = crate::codegen::srcloc::at();
        let i = index.to_index();
        let u1 = self.uniform_f32(i);
        let u2 = self.uniform_f32(i);
        (Expr::lit(-2.0f32) * u1.ln()).sqrt() * (Expr::lit(TWO_PI_F32) * u2).cos()
    }

    /// A standard normal float64 (`xoroshiro128p_normal_float64`, which Numba computes from
    /// two float32 uniforms with the logarithm in float32; two steps).
    #[track_caller]
    pub fn normal_f64(&self, index: impl Index) -> Expr<f64> {
        let _at = crate::codegen::srcloc::at();
        let i = index.to_index();
        let u1 = self.uniform_f32(i);
        let u2 = self.uniform_f32(i);
        let r = (Expr::lit(-2.0f64) * u1.ln().cast::<f64>()).sqrt();
        r * (Expr::lit(TWO_PI_F64) * u2.cast::<f64>()).cos()
    }
}

/// `x` rotated left by `k` (0 < k < 64).
fn rotl(x: Expr<u64>, k: u64) -> Expr<u64> {
    (x << k) | (x >> (64 - k))
}

/// `(x >> 11) * 2^-53` in the kernel.
fn unit_f64_expr(x: Expr<u64>) -> Expr<f64> {
    (x >> 11u64).cast::<f64>() * Expr::lit(1.0 / (1u64 << 53) as f64)
}

impl KernelParam for &mut Xoroshiro128pStates {
    type Handle = Xoroshiro128p;
    fn declare() -> Xoroshiro128p {
        Xoroshiro128p {
            words: <&mut [u64] as KernelParam>::declare(),
        }
    }
}

impl crate::codegen::ArgFor<&mut Xoroshiro128pStates> for &mut Xoroshiro128pStates {
    #[inline]
    fn push(&self, buf: &mut crate::codegen::ArgBuffer<'_>) -> Result<()> {
        buf.push_array(&self.words)
    }
}

/// numba-cuda's numbers (`tests/data/numba_xoroshiro128p.txt`, made on a GPU by
/// `scripts/numba-random-reference.py`), parsed: per case the seed, the subsequence start, the
/// first states, and each kind's draws as bits (thread-major).
#[doc(hidden)]
pub mod numba_reference {
    /// One seed's numbers.
    pub struct Case {
        /// The seed (as a u64).
        pub seed: u64,
        /// Numba's `subsequence_start`.
        pub subsequence_start: u64,
        /// The first states, `(s0, s1)`.
        pub states: Vec<[u64; 2]>,
        /// `(kind, bits)`: `uniform_f32`, `uniform_f64`, `normal_f32`, `normal_f64`.
        pub draws: Vec<(String, Vec<u64>)>,
    }

    /// Threads and draws per thread of every case, and the cases.
    pub fn parse(text: &str) -> (usize, usize, Vec<Case>) {
        let (mut threads, mut draws, mut cases) = (0, 0, Vec::<Case>::new());
        for line in text.lines() {
            let mut w = line.split_whitespace();
            match w.next() {
                Some("#") if line.contains("threads") => {
                    let v: Vec<&str> = w.collect();
                    threads = v[1].parse().unwrap();
                    draws = v[3].trim_end_matches(';').parse().unwrap();
                }
                Some("case") => cases.push(Case {
                    seed: w.next().unwrap().parse().unwrap(),
                    subsequence_start: w.next().unwrap().parse().unwrap(),
                    states: Vec::new(),
                    draws: Vec::new(),
                }),
                Some("states") => {
                    let v: Vec<u64> = w.map(|x| x.parse().unwrap()).collect();
                    cases.last_mut().unwrap().states = v.chunks(2).map(|c| [c[0], c[1]]).collect();
                }
                Some(kind) if !kind.starts_with('#') => {
                    let v = w.map(|x| x.parse().unwrap()).collect();
                    cases.last_mut().unwrap().draws.push((kind.to_string(), v));
                }
                _ => {}
            }
        }
        (threads, draws, cases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMBA: &str = include_str!("../../tests/data/numba_xoroshiro128p.txt");

    /// Distance in units in the last place between two floats of one sign (as bits).
    fn ulps(a: u64, b: u64) -> u64 {
        a.abs_diff(b)
    }

    #[test]
    fn the_host_model_gives_numbas_states_and_draws() {
        let (threads, draws, cases) = numba_reference::parse(NUMBA);
        assert_eq!((threads, draws, cases.len()), (16, 8, 10));
        for c in &cases {
            let states = xoroshiro128p_states_host(threads, c.seed, c.subsequence_start);
            assert_eq!(states[..c.states.len()], c.states[..], "seed {}", c.seed);
            for (kind, want) in &c.draws {
                let mut got = Vec::new();
                for st in &states {
                    let mut g = Xoroshiro128pHost {
                        s0: st[0],
                        s1: st[1],
                    };
                    for _ in 0..draws {
                        got.push(match kind.as_str() {
                            "uniform_f32" => g.uniform_f32().to_bits() as u64,
                            "uniform_f64" => g.uniform_f64().to_bits(),
                            "normal_f32" => g.normal_f32().to_bits() as u64,
                            "normal_f64" => g.normal_f64().to_bits(),
                            k => panic!("unknown kind {k}"),
                        });
                    }
                }
                assert_eq!(got.len(), want.len());
                // Uniforms are exact; normals go through the host's ln/cos/sqrt (the GPU's are
                // libdevice's): float32 within a few units in the last place; float64 within
                // float32's precision (Numba takes its logarithm in float32, so one ulp there
                // is 2^-24 relative in the float64 result).
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    let ok = match kind.as_str() {
                        "normal_f32" => ulps(*g, *w) <= 4,
                        "normal_f64" => {
                            let (g, w) = (f64::from_bits(*g), f64::from_bits(*w));
                            (g - w).abs() <= 1e-6 * w.abs().max(1e-3)
                        }
                        _ => g == w,
                    };
                    assert!(
                        ok,
                        "seed {} {kind} draw {i}: {g:#x} vs numba's {w:#x}",
                        c.seed
                    );
                }
            }
        }
    }

    #[test]
    fn jumps_and_uniform_bounds() {
        let mut g = Xoroshiro128pHost::from_seed(7);
        let mut h = g;
        g.jump();
        assert_ne!(g, h);
        // A jump is linear in the state: jumping the xor of two states gives the xor.
        let mut a = Xoroshiro128pHost::from_seed(1);
        let b = Xoroshiro128pHost::from_seed(2);
        let mut x = Xoroshiro128pHost {
            s0: a.s0 ^ b.s0,
            s1: a.s1 ^ b.s1,
        };
        let mut bj = b;
        a.jump();
        bj.jump();
        x.jump();
        assert_eq!((x.s0, x.s1), (a.s0 ^ bj.s0, a.s1 ^ bj.s1));
        for _ in 0..10_000 {
            let u = h.uniform_f64();
            assert!((0.0..1.0).contains(&u));
        }
        // The largest draw rounds to 1.0 in float32, as in Numba.
        assert_eq!(unit_f64(u64::MAX) as f32, 1.0);
        assert!(unit_f64(u64::MAX) < 1.0);
    }
}
