//! The simulator's texture sampler, as the hardware samples (the CUDA programming guide's
//! "Texture Fetching" appendix, with the arithmetic measured on a GPU: `tex_filter.rs`):
//! texel centres at +0.5, fixed-point coordinates, linear filtering with weights of 8
//! fractional bits (9-bit fixed point: 1.0 is exact), the address modes applied to each texel
//! index a fetch reads, border texels zero, integer texels read as normalized floats
//! (`u8 / 255`, `i8 / 127` clamped to -1, ...) or as integers; linear filtering mixes f32 and
//! f16 texels in floating point and normalized-read integers in 16-bit fixed point (both in
//! `tex_filter.rs`). A filtered NaN is the canonical NaN (`0x7fffffff`; f16 texels
//! `0x7fffe000`). A layer index is read as unsigned and clamped to the last layer (so a
//! negative one reads the last layer, as the GPU does).

use half::f16;

use super::global;
use super::tex_filter::{
    corner_live, corner_weights, fixed_coord, linear_index, mix, mix_normalized, mix_planes,
    point_index, FloatFormat, Tap, COORD_FRAC_BITS,
};
use super::texture::View;
use crate::backend::texture::{AddressMode, ChannelKind, FilterMode, TexDesc};
use crate::ir::{ScalarTy, TexFetch};

/// Index `i` of a dimension of `n` texels under `mode`; `None` outside it for the border mode.
pub(super) fn address(i: i64, n: usize, mode: AddressMode) -> Option<usize> {
    let n = n as i64;
    match mode {
        AddressMode::Clamp => Some(i.clamp(0, n - 1) as usize),
        AddressMode::Border => (0..n).contains(&i).then_some(i as usize),
        AddressMode::Wrap => Some(i.rem_euclid(n) as usize),
        AddressMode::Mirror => {
            let p = i.rem_euclid(2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p } as usize)
        }
    }
}

/// The raw bits of channel `c` of the texel at `at` (zero for a channel the texel lacks).
fn raw(v: &View, at: [usize; 3], c: usize) -> u64 {
    if c >= v.texel.channels as usize {
        return 0;
    }
    let size = v.texel.kind.size();
    let addr =
        v.base + (at[2] * v.slice + at[1] * v.pitch + at[0] * v.texel.bytes() + c * size) as u64;
    let ty = match size {
        1 => ScalarTy::U8,
        2 => ScalarTy::U16,
        _ => ScalarTy::U32,
    };
    // SAFETY: the view lies in simulator memory (checked when its object was made, and the
    // object keeps it alive), `at` is inside its extent, and channels are naturally aligned.
    unsafe { global::load(addr, ty) }
}

/// A channel's value read as a float: floats as they are, integers normalized.
pub(super) fn to_float(kind: ChannelKind, bits: u64) -> f32 {
    match kind {
        ChannelKind::F32 => f32::from_bits(bits as u32),
        ChannelKind::F16 => f16::from_bits(bits as u16).to_f32(),
        ChannelKind::U8 => bits as u8 as f32 / 255.0,
        ChannelKind::U16 => bits as u16 as f32 / 65535.0,
        ChannelKind::I8 => (bits as u8 as i8 as f32 / 127.0).max(-1.0),
        ChannelKind::I16 => (bits as u16 as i16 as f32 / 32767.0).max(-1.0),
    }
}

/// A channel's value read as an integer (sign- or zero-extended to 32 bits).
fn to_int(kind: ChannelKind, bits: u64) -> u32 {
    match kind {
        ChannelKind::I8 => bits as u8 as i8 as i32 as u32,
        ChannelKind::I16 => bits as u16 as i16 as i32 as u32,
        _ => bits as u32,
    }
}

/// Channel `c` of the texel at `idx` (after addressing: `None` is a border texel), as the
/// fetch's result type's bits (`f32` results as `f32` values).
fn texel(v: &View, d: &TexDesc, idx: Option<[usize; 3]>, c: usize, ret: ScalarTy) -> Texel {
    let Some(at) = idx else {
        return match ret {
            ScalarTy::F32 => Texel::F(d.border[c]),
            _ => Texel::I(d.border[c] as u32),
        };
    };
    let bits = raw(v, at, c);
    if ret == ScalarTy::F32 {
        if c >= v.texel.channels as usize {
            return Texel::F(0.0);
        }
        Texel::F(to_float(v.texel.kind, bits))
    } else {
        Texel::I(to_int(v.texel.kind, bits))
    }
}

#[derive(Clone, Copy)]
enum Texel {
    F(f32),
    I(u32),
}

impl Texel {
    fn bits(self) -> u64 {
        match self {
            Texel::F(f) => f.to_bits() as u64,
            Texel::I(i) => i as u64,
        }
    }
    fn f(self) -> f32 {
        match self {
            Texel::F(f) => f,
            Texel::I(i) => i as f32,
        }
    }
}

/// The texel index of each dimension, addressed (`None` if any is a border texel), in layer
/// `layer` of a layered texture.
fn addressed(v: &View, d: &TexDesc, i: &[i64], layer: usize) -> Option<[usize; 3]> {
    let mut at = [0, 0, layer];
    for (k, &ik) in i.iter().enumerate() {
        // A 1-D array's rows: one (its extent says 0), read when it is filtered as 2-D.
        at[k] = address(ik, v.extent[k].max(1), d.address[k])?;
    }
    Some(at)
}

/// One channel of a fetch from the texture (`v`, `d`) at `coords` (each an `f32`'s bits, or an
/// `i32`'s when `int_coords`), as the result type's bits.
pub(super) fn fetch(
    v: &View,
    d: &TexDesc,
    kind: TexFetch,
    coords: &[u64],
    int_coords: bool,
    channel: usize,
    ret: ScalarTy,
) -> u64 {
    let dims = v.dims as usize;
    // A layer index is unsigned, clamped to the last layer (probe d: a negative one reads the
    // last layer).
    let layer = if kind == TexFetch::Layered {
        let l = coords.get(dims).map_or(0, |&c| u64::from(c as u32));
        l.min(v.extent[2] as u64 - 1) as usize
    } else {
        0
    };
    if int_coords {
        let i: Vec<i64> = coords
            .iter()
            .take(dims)
            .map(|&c| c as u32 as i32 as i64)
            .collect();
        if v.linear {
            let n = v.extent[0] as i64;
            if !(0..n).contains(&i[0]) {
                return 0;
            }
            return texel(v, d, Some([i[0] as usize, 0, 0]), channel, ret).bits();
        }
        return texel(v, d, addressed(v, d, &i, layer), channel, ret).bits();
    }
    // A 1-D CUDA array is filtered as a 2-D one of one row read at y = 0, i.e. between row -1
    // and row 0 at weight 1/2 each: with border addressing a linear fetch is half the 1-D mix
    // (measured on an H200: `texture_1d_and_3d_every_mode`, every such fetch; clamp, wrap and
    // mirror read row 0 twice, the 1-D mix). Not layered 1-D arrays (`texture_layered_every_mode`
    // matched the 1-D mix there) nor linear memory.
    let filtered_2d = dims == 1
        && !v.linear
        && d.filter == FilterMode::Linear
        && ret == ScalarTy::F32
        && matches!(kind, TexFetch::Sample | TexFetch::Level);
    let dims = if filtered_2d { 2 } else { dims };
    let x: Vec<i128> = (0..dims)
        .map(|k| {
            let c = if filtered_2d && k == 1 {
                0.0
            } else {
                f32::from_bits(coords[k] as u32)
            };
            fixed_coord(c, d.normalized_coords, v.extent[k].max(1))
        })
        .collect();
    if let TexFetch::Gather(c) = kind {
        let (i, _) = linear_index(x[0]);
        let (j, _) = linear_index(x[1]);
        let (di, dj) = [(0, 1), (1, 1), (1, 0), (0, 0)][channel];
        let at = addressed(v, d, &[i + di, j + dj], layer);
        return texel(v, d, at, c as usize, ret).bits();
    }
    if d.filter == FilterMode::Point || ret != ScalarTy::F32 {
        let i: Vec<i64> = x.iter().map(|&x| point_index(x)).collect();
        return texel(v, d, addressed(v, d, &i, layer), channel, ret).bits();
    }
    // 3-D, clamp: the coordinate is clamped to [0.5, extent - 0.5] texels before the weights
    // (texprobe5's normalized fetches out of range; in 1-D and 2-D, whose weights have exact
    // marginals, clamping the texel indices gives the same).
    let taps: Vec<(i64, u32)> = x
        .iter()
        .enumerate()
        .map(|(k, &x)| {
            let x = if dims == 3 && d.address[k] == AddressMode::Clamp {
                let half = 1i128 << (COORD_FRAC_BITS - 1);
                x.clamp(half, ((v.extent[k] as i128) << COORD_FRAC_BITS) - half)
            } else {
                x
            };
            linear_index(x)
        })
        .collect();
    let fracs: Vec<u32> = taps.iter().map(|t| t.1).collect();
    let weights = corner_weights(&fracs);
    let corner_at = |corner: usize| {
        let mut i = [0i64; 3];
        for (k, &(lo, _)) in taps.iter().enumerate() {
            i[k] = lo + (corner >> k & 1) as i64;
        }
        addressed(v, d, &i[..dims], layer)
    };
    let corners = 0..1usize << dims;
    let fmt = match v.texel.kind {
        ChannelKind::F32 => FloatFormat::F32,
        ChannelKind::F16 => FloatFormat::F16,
        kind => {
            let terms: Vec<(u32, i64)> = corners
                .map(|k| (weights[k], int_texel(v, d, corner_at(k), channel)))
                .collect();
            return u64::from(mix_normalized(kind, &terms).to_bits());
        }
    };
    let terms: Vec<Tap> = corners
        .map(|k| Tap {
            w: weights[k],
            live: corner_live(&fracs, k),
            v: texel(v, d, corner_at(k), channel, ret).f(),
        })
        .collect();
    if dims == 3 {
        return u64::from(mix_planes(&[&terms[..4], &terms[4..]], fmt));
    }
    u64::from(mix(&terms, fmt))
}

/// Channel `c` of an integer texel at `idx` as the integer it holds (a border texel: the
/// border color in the same units, an unmeasured guess; a channel the texel lacks: 0).
fn int_texel(v: &View, d: &TexDesc, idx: Option<[usize; 3]>, c: usize) -> i64 {
    let kind = v.texel.kind;
    let Some(at) = idx else {
        let full = match kind {
            ChannelKind::U8 => 255.0,
            ChannelKind::I8 => 127.0,
            ChannelKind::U16 => 65535.0,
            _ => 32767.0,
        };
        return (f64::from(d.border[c]) * full).round() as i64;
    };
    let bits = raw(v, at, c);
    match kind {
        ChannelKind::I8 => i64::from(bits as u8 as i8),
        ChannelKind::I16 => i64::from(bits as u16 as i16),
        ChannelKind::U8 => i64::from(bits as u8),
        _ => i64::from(bits as u16),
    }
}
