// The host model of the texture unit (the CUDA programming guide's "Texture Fetching"
// appendix, with the arithmetic an H200 showed: probe/fit.py, fit4.py and fit5.py fit it):
// what tests/gpu/texture.rs compares the simulator's and the GPU's fetches with. Texel
// centres at +0.5; unnormalized coordinates floored to 21 fractional bits; normalized ones to
// 21 (22 over more than 16384 texels), then times the extent exactly; linear filtering with
// x - 0.5 rounded to 8 fractional bits, ties up (weights of 9-bit fixed point); 2-D weights
// w11 = round(a b), the others by difference (exact marginals); 3-D (texprobe5) a tree of
// half-up splits: z exactly, x in each z plane, y in each column with the diagonal corner
// rounded (in 2-D the same weights), a clamped coordinate first clamped to [0.5, n - 0.5]
// texels. The float mix (f32, f16 texels): a texel takes part where
// its fractions are nonzero (2-D: even at rounded weight 0); a NaN taking part, or
// infinities of both signs, give the canonical NaN (f32 0x7fffffff, f16 0x7fffe000); an
// infinity wins; f32 subnormal texels count as zeros; texels of nonzero weight truncated
// toward zero to 2^(E-27) (f16: 2^(E-14)), E the largest one's exponent, summed exactly,
// rounded ties away from zero to f32 (f16 texels: to f16); an f32 subnormal result flushed
// to zero with the sum's sign; 3-D: each z plane truncated on its own grid, the two sums
// added (99.9% of texprobe5's float fetches; the rest within 2^-24 of the largest f32
// texel). Normalized-read integers filter in 16-bit fixed point: texels widened (u8 times
// 257), summed, rounded to 16 bits ties up, read as 16-bit (i8: the raw sum I = sum w v to
// J = floor((129 I + 16 floor(I / 4096) + 64) / 128), probe/fit4.py). Each texel index a
// fetch reads addressed on its own (clamp to the edge, border 0, wrap modulo the size,
// mirror), in 3-D too (probe/fit6.py: every fetch of texprobe6); integer texels read as
// normalized floats (unsigned v / MAX, signed max(v / MAX, -1)) or as 32-bit integers.

use cudajit::memory::{AddressMode, ChannelKind, FilterMode};

/// A texture as the model sees it: each texel's raw channel bits.
pub struct Tex {
    pub kind: ChannelKind,
    pub channels: usize,
    /// Texels per row, rows, slices (1 beyond `dims`).
    pub extent: [usize; 3],
    pub dims: usize,
    pub texels: Vec<[u32; 4]>,
    pub address: [AddressMode; 3],
    pub filter: FilterMode,
    pub normalized_coords: bool,
    pub read_normalized: bool,
}

fn as_float(kind: ChannelKind, b: u32) -> f32 {
    match kind {
        ChannelKind::F32 => f32::from_bits(b),
        ChannelKind::F16 => half::f16::from_bits(b as u16).to_f32(),
        ChannelKind::U8 => (b & 0xff) as f32 / 255.0,
        ChannelKind::U16 => (b & 0xffff) as f32 / 65535.0,
        ChannelKind::I8 => f32::max((b as u8 as i8) as f32 / 127.0, -1.0),
        ChannelKind::I16 => f32::max((b as u16 as i16) as f32 / 32767.0, -1.0),
    }
}

/// The exponent of a nonzero f64's leading bit (f32 subnormals are normal f64s).
fn exponent(v: f64) -> i32 {
    ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

fn as_int(kind: ChannelKind, b: u32) -> u32 {
    match kind {
        ChannelKind::I8 => (b as u8 as i8) as i32 as u32,
        ChannelKind::I16 => (b as u16 as i16) as i32 as u32,
        ChannelKind::U8 => b & 0xff,
        ChannelKind::U16 => b & 0xffff,
        _ => b,
    }
}

impl Tex {
    /// Whether fetches return floats.
    pub fn float_result(&self) -> bool {
        matches!(self.kind, ChannelKind::F16 | ChannelKind::F32) || self.read_normalized
    }

    fn index(&self, d: usize, i: i64) -> Option<usize> {
        let n = self.extent[d] as i64;
        let r = match self.address[d] {
            AddressMode::Clamp => i.max(0).min(n - 1),
            AddressMode::Border if i < 0 || i >= n => return None,
            AddressMode::Border => i,
            AddressMode::Wrap => ((i % n) + n) % n,
            AddressMode::Mirror => {
                let p = ((i % (2 * n)) + 2 * n) % (2 * n);
                if p >= n {
                    2 * n - 1 - p
                } else {
                    p
                }
            }
        };
        Some(r as usize)
    }

    /// Channel `c` of the texel at `idx` as a float or an integer's bits (border: 0).
    fn read(&self, idx: &[i64], c: usize) -> (f32, u32) {
        let mut at = [0usize; 3];
        for d in 0..self.dims {
            match self.index(d, idx[d]) {
                Some(i) => at[d] = i,
                None => return (0.0, 0),
            }
        }
        let t = self.texels[(at[2] * self.extent[1] + at[1]) * self.extent[0] + at[0]];
        (as_float(self.kind, t[c]), as_int(self.kind, t[c]))
    }

    fn bits(&self, v: (f32, u32)) -> u32 {
        if self.float_result() {
            v.0.to_bits()
        } else {
            v.1
        }
    }

    /// The coordinates in texels, in 1/2^22 steps (normalized ones floored to 21 fractional
    /// bits, 22 over more than 16384 texels, then times the extent; unnormalized ones floored
    /// to 21 bits).
    fn scaled(&self, x: &[f32]) -> Vec<f64> {
        (0..self.dims)
            .map(|d| {
                let n = self.extent[d];
                let bits = if self.normalized_coords && n > 16384 {
                    22
                } else {
                    21
                };
                let q = (x[d] as f64 * 2f64.powi(bits)).floor();
                let q = if q.is_nan() {
                    0.0
                } else {
                    q.clamp(-1e30, 1e30)
                };
                let q = if self.normalized_coords {
                    q * n as f64
                } else {
                    q
                };
                q * 2f64.powi(22 - bits)
            })
            .collect()
    }

    /// Point sampling's texel and linear filtering's lower texel with the upper one's weight
    /// (in 1/256 steps), from a coordinate in 1/2^22 steps.
    fn point(q: f64) -> i64 {
        (q / 4194304.0).floor() as i64
    }
    fn lower(q: f64) -> (i64, u32) {
        let s = ((q - 2097152.0) / 16384.0 + 0.5).floor();
        ((s / 256.0).floor() as i64, s.rem_euclid(256.0) as u32)
    }

    /// The weights (1/256 steps) of the corners, corner k taking the upper texel of
    /// dimension d where bit d of k is set.
    fn weights(f: &[u32]) -> Vec<u32> {
        let r = |w: u32, f: u32| ((w * f) as f64 / 256.0 + 0.5).floor() as u32;
        let mut w = vec![256 - f[0], f[0]];
        if f.len() > 1 {
            let w11 = r(f[0], f[1]);
            w = vec![256 + w11 - f[0] - f[1], f[0] - w11, f[1] - w11, w11];
        }
        if f.len() > 2 {
            // z exactly, then x in each z plane, then y with the diagonal corner rounded.
            w = vec![0; 8];
            for (k, z) in [(0, 256 - f[2]), (4, f[2])] {
                let x1 = r(z, f[0]);
                let x0 = z - x1;
                w[k + 3] = r(x1, f[1]);
                w[k + 1] = x1 - w[k + 3];
                w[k] = r(x0, 256 - f[1]);
                w[k + 2] = x0 - w[k];
            }
        }
        w
    }

    /// The float filter's result (f32 bits) of `terms` (weight in 1/256 steps, whether the
    /// texel takes part, texel), for f32 texels or (`f16`) f16 ones: see the header. 3-D: the
    /// two z planes (`terms[..4]`, `terms[4..]`) each on its own truncation grid.
    fn mix(terms: &[(u32, bool, f32)], f16: bool) -> u32 {
        let nan = if f16 { 0x7fff_e000 } else { 0x7fff_ffff };
        let live: Vec<(u32, f32)> = terms.iter().filter(|t| t.1).map(|t| (t.0, t.2)).collect();
        if live.iter().any(|p| p.1.is_nan()) {
            return nan;
        }
        let inf: Vec<f32> = live
            .iter()
            .map(|p| p.1)
            .filter(|v| v.is_infinite())
            .collect();
        if let Some(&first) = inf.first() {
            return if inf.iter().all(|&v| v == first) {
                first.to_bits()
            } else {
                nan
            };
        }
        // f32 subnormals count as zeros (keeping their sign).
        let flush = |v: f32| {
            if !f16 && v != 0.0 && v.abs() < f32::MIN_POSITIVE {
                0.0f32.copysign(v)
            } else {
                v
            }
        };
        let planes: Vec<&[(u32, bool, f32)]> = if terms.len() == 8 {
            vec![&terms[..4], &terms[4..]]
        } else {
            vec![terms]
        };
        // Each plane: its texels of nonzero weight truncated to 2^(E-27) (f16: 2^(E-14)) of
        // its largest, summed (exact in f64: at most 40 significant bits).
        let mut sum = 0.0f64;
        let mut any = false;
        for p in planes {
            let counted: Vec<(u32, f32)> = p
                .iter()
                .filter(|t| t.1 && t.0 > 0 && flush(t.2) != 0.0)
                .map(|t| (t.0, t.2))
                .collect();
            let Some(e) = counted.iter().map(|p| exponent(p.1 as f64)).max() else {
                continue;
            };
            any = true;
            let grid = 2f64.powi(e - if f16 { 14 } else { 27 });
            sum += counted
                .iter()
                .map(|&(w, v)| w as f64 * (v as f64 / grid).trunc())
                .sum::<f64>()
                * grid;
        }
        if !any {
            let neg = live
                .iter()
                .all(|p| flush(p.1) == 0.0 && p.1.is_sign_negative());
            return if neg { 0x8000_0000 } else { 0 };
        }
        let sum = sum / 256.0;
        if sum == 0.0 {
            return 0;
        }
        let (min_exp, frac_bits) = if f16 { (-14, 10) } else { (-126, 23) };
        let ulp = 2f64.powi(exponent(sum).max(min_exp) - frac_bits);
        let r = (sum.abs() / ulp + 0.5).floor() * ulp;
        if r == 0.0 || (!f16 && r < f32::MIN_POSITIVE as f64) {
            return if sum < 0.0 { 0x8000_0000 } else { 0 };
        }
        ((r * sum.signum()) as f32).to_bits()
    }

    /// The filter's result for normalized-read integer texels: `terms` (weight in 1/256 steps,
    /// the integer) in 16-bit fixed point (see the header).
    fn mix_int(&self, terms: &[(u32, i64)]) -> u32 {
        let sum = |k: f64| {
            terms
                .iter()
                .map(|&(w, v)| w as f64 * v as f64 * k)
                .sum::<f64>()
        };
        let r = match self.kind {
            ChannelKind::U8 => ((sum(257.0) / 256.0 + 0.5).floor() / 65535.0) as f32,
            ChannelKind::U16 => ((sum(1.0) / 256.0 + 0.5).floor() / 65535.0) as f32,
            ChannelKind::I16 => f32::max(((sum(1.0) / 256.0 + 0.5).floor() / 32767.0) as f32, -1.0),
            _ => {
                // i8: J = floor((129 I + 16 floor(I / 4096) + 64) / 128), written apart from
                // the simulator's shifts: with floor division.
                let i = sum(1.0) as i64;
                let j = (129 * i + 16 * i.div_euclid(4096) + 64).div_euclid(128);
                f32::max((j as f64 / 32767.0) as f32, -1.0)
            }
        };
        r.to_bits()
    }

    /// The (weight, takes part, texel index) triples of a linear fetch at `u` (in 1/2^22
    /// steps).
    fn linear_taps(&self, u: &[f64]) -> Vec<(u32, bool, Vec<i64>)> {
        // 3-D, clamp: the coordinate clamped to [0.5, n - 0.5] texels first (texprobe5).
        let lw: Vec<(i64, u32)> = u
            .iter()
            .enumerate()
            .map(|(d, &q)| {
                let n = self.extent[d] as f64 * 4194304.0;
                if self.dims == 3 && self.address[d] == AddressMode::Clamp {
                    Self::lower(q.max(2097152.0).min(n - 2097152.0))
                } else {
                    Self::lower(q)
                }
            })
            .collect();
        let fr: Vec<u32> = lw.iter().map(|p| p.1).collect();
        let w = Self::weights(&fr);
        (0..1usize << self.dims)
            .map(|corner| {
                let up = |d: usize| corner >> d & 1 == 1;
                let i: Vec<i64> = (0..self.dims).map(|d| lw[d].0 + up(d) as i64).collect();
                let live = (0..self.dims).all(|d| !up(d) || fr[d] != 0);
                (w[corner], live, i)
            })
            .collect()
    }

    /// The texels of channel `c` that a linear fetch at float coordinates `x` reads (weight
    /// zero or not).
    pub fn footprint(&self, x: &[f32], c: usize) -> Vec<f32> {
        let taps = self.linear_taps(&self.scaled(x));
        taps.iter().map(|t| self.read(&t.2, c).0).collect()
    }

    /// What a fetch at `x` reads, for failure messages: point sampling's texel index; linear
    /// filtering's taps (weight in 1/256 steps, `*` where the texel takes part, raw bits of
    /// each channel).
    pub fn describe(&self, x: &[f32]) -> String {
        let u = self.scaled(x);
        if self.filter == FilterMode::Point {
            let i: Vec<i64> = u.iter().map(|&q| Self::point(q)).collect();
            return format!("texel {i:?}");
        }
        let taps: Vec<String> = self
            .linear_taps(&u)
            .iter()
            .map(|(w, live, i)| {
                let bits: Vec<String> = (0..self.channels)
                    .map(|c| format!("{:#x}", self.read(i, c).1))
                    .collect();
                format!(
                    "{w}{} {i:?} [{}]",
                    if *live { "*" } else { "" },
                    bits.join(" ")
                )
            })
            .collect();
        format!("taps {}", taps.join(", "))
    }

    /// The channels (that the texels have) of a fetch at float coordinates `x`.
    pub fn fetch(&self, x: &[f32]) -> Vec<u32> {
        let u = self.scaled(x);
        (0..self.channels)
            .map(|c| {
                if self.filter == FilterMode::Point {
                    let i: Vec<i64> = u.iter().map(|&q| Self::point(q)).collect();
                    return self.bits(self.read(&i, c));
                }
                let taps = self.linear_taps(&u);
                match self.kind {
                    ChannelKind::F32 | ChannelKind::F16 => {
                        let terms: Vec<(u32, bool, f32)> = taps
                            .iter()
                            .map(|t| (t.0, t.1, self.read(&t.2, c).0))
                            .collect();
                        Self::mix(&terms, self.kind == ChannelKind::F16)
                    }
                    _ => {
                        let terms: Vec<(u32, i64)> = taps
                            .iter()
                            .map(|t| (t.0, self.read(&t.2, c).1 as i32 as i64))
                            .collect();
                        self.mix_int(&terms)
                    }
                }
            })
            .collect()
    }

    /// A fetch at `x` from a 1-D CUDA array (not layered): filtered as a 2-D texture of one row
    /// read at y = 0, i.e. rows -1 and 0 at weight 1/2 each (measured on an H200: with border
    /// addressing a linear fetch is half the 1-D mix; the other modes read row 0 twice).
    pub fn fetch_1d_array(&self, x: f32) -> Vec<u32> {
        if self.dims != 1 || self.filter != FilterMode::Linear || !self.float_result() {
            return self.fetch(&[x]);
        }
        let rows = Tex {
            extent: [self.extent[0], 1, 1],
            dims: 2,
            texels: self.texels.clone(),
            ..*self
        };
        rows.fetch(&[x, 0.0])
    }

    /// A fetch at integer coordinate `i` of a texture over linear memory (0 out of range).
    pub fn fetch_linear(&self, i: i32) -> Vec<u32> {
        (0..self.channels)
            .map(|c| {
                if i < 0 || i as usize >= self.extent[0] {
                    0
                } else {
                    self.bits(self.read(&[i as i64], c))
                }
            })
            .collect()
    }

    /// `tex2Dgather` of component `comp` at (`x`, `y`): the four texels (i, j+1), (i+1, j+1),
    /// (i+1, j), (i, j) of the bilinear footprint.
    pub fn gather(&self, x: f32, y: f32, comp: usize) -> [u32; 4] {
        let u = self.scaled(&[x, y]);
        let (i, j) = (Self::lower(u[0]).0, Self::lower(u[1]).0);
        let at = [(i, j + 1), (i + 1, j + 1), (i + 1, j), (i, j)];
        at.map(|(a, b)| self.bits(self.read(&[a, b], comp)))
    }
}
