// The host model of the texture unit (the CUDA programming guide's "Texture Fetching"
// appendix): what tests/gpu/texture.rs compares the simulator's and the GPU's fetches with,
// bit for bit. Texel centres at +0.5; linear filtering with the fraction of x - 0.5 rounded to
// 8 bits (weights of 9-bit fixed point); each texel index a fetch reads addressed on its own
// (clamp to the edge, border 0, wrap modulo the size, mirror); integer texels read as
// normalized floats (unsigned v / MAX, signed max(v / MAX, -1)) or as 32-bit integers. A
// filtered NaN is the canonical NaN 0x7fffffff (the GPU's arithmetic's).

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

    /// The coordinates in texels.
    fn scaled(&self, x: &[f32]) -> Vec<f32> {
        (0..self.dims)
            .map(|d| {
                if self.normalized_coords {
                    x[d] * self.extent[d] as f32
                } else {
                    x[d]
                }
            })
            .collect()
    }

    /// The channels (that the texels have) of a fetch at float coordinates `x`.
    pub fn fetch(&self, x: &[f32]) -> Vec<u32> {
        let u = self.scaled(x);
        (0..self.channels)
            .map(|c| {
                if self.filter == FilterMode::Point {
                    let i: Vec<i64> = u.iter().map(|v| v.floor() as i64).collect();
                    return self.bits(self.read(&i, c));
                }
                // Lower texel and 8-bit weight of the upper one, per dimension.
                let lw: Vec<(i64, f32)> = u
                    .iter()
                    .map(|v| {
                        let b = v - 0.5;
                        let f = b.floor();
                        (f as i64, ((b - f) * 256.0).round() / 256.0)
                    })
                    .collect();
                let mut acc: Option<f32> = None;
                for corner in 0..(1 << self.dims) {
                    let mut w = 1.0f32;
                    let mut i = vec![0i64; self.dims];
                    for d in 0..self.dims {
                        let up = (corner >> d) & 1;
                        i[d] = lw[d].0 + up as i64;
                        w *= if up == 1 { lw[d].1 } else { 1.0 - lw[d].1 };
                    }
                    let term = w * self.read(&i, c).0;
                    acc = Some(match acc {
                        None => term,
                        Some(a) => a + term,
                    });
                }
                let r = acc.unwrap();
                if r.is_nan() {
                    0x7fff_ffff
                } else {
                    r.to_bits()
                }
            })
            .collect()
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
        let i = (u[0] - 0.5).floor() as i64;
        let j = (u[1] - 0.5).floor() as i64;
        let at = [(i, j + 1), (i + 1, j + 1), (i + 1, j), (i, j)];
        at.map(|(a, b)| self.bits(self.read(&[a, b], comp)))
    }
}
