//! Textures and surfaces: CUDA arrays of every channel format (u8, u16, i8, i16, f16, f32 × 1,
//! 2, 4 channels) with their copies; texture fetches over arrays, linear and pitched memory for
//! every address mode × filter × coordinate mode × read mode, compared bit for bit with the
//! host model of the texture unit (tests/support/tex_model.rs); gathers and level fetches;
//! surface loads and stores; the refusals of unsupported combinations. Fresh random texels
//! with special values (NaN, ±0, ±inf, subnormals; MIN/MAX), outputs poisoned first.

use cudajit::codegen::{Kernel, Surface2d, Texture1d, Texture2d, Texture3d};
use cudajit::memory::{
    AddressMode, ChannelKind, CudaArray, FilterMode, SurfaceObject, TexResult, TexelFormat,
    TextureDesc, TextureObject,
};
use cudajit::prelude::*;
use cudajit::{f16, Error};

use crate::common::{ctx, Rng};
use crate::support::tex_model::Tex;

const MODES: [AddressMode; 4] = [
    AddressMode::Wrap,
    AddressMode::Clamp,
    AddressMode::Mirror,
    AddressMode::Border,
];

/// A texel type built from raw channel bits.
trait Texel: TexelFormat {
    fn make(b: &[u32; 4]) -> Self;
}

macro_rules! texel {
    ($($t:ty => |$b:ident| $e:expr),*) => {$(
        impl Texel for $t {
            fn make(b: &[u32; 4]) -> Self {
                let $b = b[0];
                $e
            }
        }
        impl Texel for [$t; 2] {
            fn make(b: &[u32; 4]) -> Self {
                [<$t as Texel>::make(&[b[0]; 4]), <$t as Texel>::make(&[b[1]; 4])]
            }
        }
        impl Texel for [$t; 4] {
            fn make(b: &[u32; 4]) -> Self {
                std::array::from_fn(|c| <$t as Texel>::make(&[b[c]; 4]))
            }
        }
    )*};
}
texel!(
    u8 => |b| b as u8, u16 => |b| b as u16, i8 => |b| b as i8, i16 => |b| b as i16,
    f16 => |b| f16::from_bits(b as u16), f32 => |b| f32::from_bits(b)
);

/// Random raw bits of one channel, with the kind's special values mixed in.
fn channel_bits(kind: ChannelKind, rng: &mut Rng) -> u32 {
    let r = rng.next_u64();
    let special = r % 4 == 0;
    let pick = (r >> 8) as usize;
    match kind {
        ChannelKind::U8 | ChannelKind::I8 if special => [0x00, 0xff, 0x7f, 0x80][pick % 4],
        ChannelKind::U16 | ChannelKind::I16 if special => [0, 0xffff, 0x7fff, 0x8000][pick % 4],
        ChannelKind::F16 if special => {
            [0x7e00, 0xfe00, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x7bff][pick % 9]
        }
        ChannelKind::F32 if special => [
            0x7fc0_0000,
            0xffc0_0000,
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            1,
            0x807f_ffff,
            0x7f7f_ffff,
        ][pick % 9],
        ChannelKind::U8 | ChannelKind::I8 => (r >> 16) as u32 & 0xff,
        ChannelKind::U16 | ChannelKind::I16 => (r >> 16) as u32 & 0xffff,
        // Finite, moderate values (so that filtering mixes them, not only specials).
        ChannelKind::F16 => f16::from_f32((rng.f32() - 0.5) * 200.0).to_bits() as u32,
        ChannelKind::F32 => ((rng.f32() - 0.5) * 2000.0).to_bits(),
    }
}

/// A texture's texels: raw bits, and the same as `T`s.
fn texels<T: Texel>(n: usize, rng: &mut Rng) -> (Vec<[u32; 4]>, Vec<T>) {
    let kind = T::LAYOUT.kind;
    let ch = T::LAYOUT.channels as usize;
    let raw: Vec<[u32; 4]> = (0..n)
        .map(|_| std::array::from_fn(|c| if c < ch { channel_bits(kind, rng) } else { 0 }))
        .collect();
    let typed = raw.iter().map(T::make).collect();
    (raw, typed)
}

/// Coordinates of `n` fetches over `extent` (texel centres, edges and random points well
/// outside the texture, in texels or normalized).
fn coords(n: usize, extent: usize, normalized: bool, rng: &mut Rng) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let e = extent as f32;
            let t = match i % 4 {
                0 => (rng.next_u64() % extent as u64) as f32 + 0.5,
                1 => (rng.next_u64() % (extent as u64 + 1)) as f32,
                _ => rng.f32() * 4.0 * e - 1.5 * e,
            };
            if normalized {
                t / e
            } else {
                t
            }
        })
        .collect()
}

/// The model of a texture described by `desc` over `raw` texels of `T`.
fn model<T: TexelFormat>(raw: Vec<[u32; 4]>, extent: [usize; 3], dims: usize, desc: &TextureDesc) -> Tex {
    Tex {
        kind: T::LAYOUT.kind,
        channels: T::LAYOUT.channels as usize,
        extent,
        dims,
        texels: raw,
        address: desc.address,
        filter: desc.filter,
        normalized_coords: desc.normalized_coords,
        read_normalized: desc.read_normalized,
    }
}

/// Every sampling state for a texture of `kind` (the read mode varies for integer texels only).
fn descs(kind: ChannelKind) -> Vec<TextureDesc> {
    let mut v = Vec::new();
    for &mode in &MODES {
        for filter in [FilterMode::Point, FilterMode::Linear] {
            for norm in [false, true] {
                for read_norm in [false, true] {
                    if read_norm && matches!(kind, ChannelKind::F16 | ChannelKind::F32) {
                        continue;
                    }
                    v.push(
                        TextureDesc::default()
                            .address(mode)
                            .filter(filter)
                            .normalized_coords(norm)
                            .read_normalized(read_norm),
                    );
                }
            }
        }
    }
    v
}

/// Whether the texture refuses `desc` (and how): wrap/mirror need normalized coordinates,
/// linear filtering float results.
fn refused(kind: ChannelKind, d: &TextureDesc) -> bool {
    let float = matches!(kind, ChannelKind::F16 | ChannelKind::F32) || d.read_normalized;
    (matches!(d.address[0], AddressMode::Wrap | AddressMode::Mirror) && !d.normalized_coords)
        || (d.filter == FilterMode::Linear && !float)
}

/// Compares the fetched channels with the model's, bit for bit.
fn compare(what: &str, got: &[u32], want: &[Vec<u32>], coords: &dyn Fn(usize) -> String) {
    for (i, w) in want.iter().enumerate() {
        for (c, &wc) in w.iter().enumerate() {
            let g = got[4 * i + c];
            assert_eq!(
                g, wc,
                "{what}: fetch {i} at {} channel {c}: got {g:#x} ({}), want {wc:#x} ({})",
                coords(i),
                f32::from_bits(g),
                f32::from_bits(wc)
            );
        }
    }
}

/// Runs the 2-D fetches of `desc` over `arr` and compares them with `m`.
fn run_2d<R: TexResult + cudajit::codegen::Scalar, T: Texel>(
    arr: &CudaArray<T>,
    desc: &TextureDesc,
    m: &Tex,
    rng: &mut Rng,
) {
    let (ctx, s) = (arr.context().clone(), arr.context().new_stream().unwrap());
    let tex = TextureObject::<R>::from_array(arr, desc).unwrap();
    let k = Kernel::<(Texture2d<R>, &[f32], &[f32], &mut [u32])>::build(
        "texture_fetch2d",
        |k, (t, xs, ys, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                let c = t.tex2d4(xs.at(i), ys.at(i));
                for (ch, v) in c.into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let n = 96;
    let [w, h, _] = arr.extent();
    let xs = coords(n, w, desc.normalized_coords, rng);
    let ys = coords(n, h, desc.normalized_coords, rng);
    let (dx, dy) = (ctx.to_device(&xs).unwrap(), ctx.to_device(&ys).unwrap());
    let mut out = ctx.to_device(&vec![0xdead_beef_u32; 4 * n]).unwrap();
    k.launch(&s, LaunchConfig::for_num_elems(n, 64).unwrap(), (&tex, &dx, &dy, &mut out))
        .unwrap();
    let got = out.to_vec().unwrap();
    let want: Vec<Vec<u32>> = (0..n).map(|i| m.fetch(&[xs[i], ys[i]])).collect();
    compare(&format!("{desc:?} over {arr:?}"), &got, &want, &|i| format!("({}, {})", xs[i], ys[i]));
}

/// Every sampling state over a 2-D array of `T` (7 × 5 texels): fetched, or refused as a
/// usage error.
fn matrix_2d<T: Texel>(ctx: &Context, rng: &mut Rng) {
    let (w, h) = (7, 5);
    let (raw, typed) = texels::<T>(w * h, rng);
    let mut arr = CudaArray::<T>::new_2d(ctx, w, h).unwrap();
    arr.copy_from_host(&typed).unwrap();
    let kind = T::LAYOUT.kind;
    for desc in descs(kind) {
        let float = matches!(kind, ChannelKind::F16 | ChannelKind::F32) || desc.read_normalized;
        let m = model::<T>(raw.clone(), [w, h, 1], 2, &desc);
        if refused(kind, &desc) {
            let r = if float {
                TextureObject::<f32>::from_array(&arr, &desc).map(|_| ())
            } else if matches!(kind, ChannelKind::I8 | ChannelKind::I16) {
                TextureObject::<i32>::from_array(&arr, &desc).map(|_| ())
            } else {
                TextureObject::<u32>::from_array(&arr, &desc).map(|_| ())
            };
            assert!(matches!(r, Err(Error::Usage(_))), "{desc:?}: {r:?}");
            continue;
        }
        if float {
            run_2d::<f32, T>(&arr, &desc, &m, rng);
        } else if matches!(kind, ChannelKind::I8 | ChannelKind::I16) {
            run_2d::<i32, T>(&arr, &desc, &m, rng);
        } else {
            run_2d::<u32, T>(&arr, &desc, &m, rng);
        }
    }
}

macro_rules! matrix_tests {
    ($($name:ident: $t:ty;)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            let ctx = ctx();
            let mut rng = Rng::new();
            matrix_2d::<$t>(&ctx, &mut rng);
            matrix_2d::<[$t; 2]>(&ctx, &mut rng);
            matrix_2d::<[$t; 4]>(&ctx, &mut rng);
        }
    )*};
}
matrix_tests! {
    texture_2d_u8_every_mode: u8;
    texture_2d_u16_every_mode: u16;
    texture_2d_i8_every_mode: i8;
    texture_2d_i16_every_mode: i16;
    texture_2d_f16_every_mode: f16;
    texture_2d_f32_every_mode: f32;
}
