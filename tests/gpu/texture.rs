//! Textures: CUDA arrays of every channel format (u8, u16, i8, i16, f16, f32 × 1, 2, 4
//! channels); texture fetches over 1-D, 2-D, 3-D and layered arrays, linear and pitched memory
//! for every address mode × filter × coordinate mode × read mode, compared bit for bit with
//! the host model of the texture unit (tests/support/tex_model.rs; fitted to GPU probes, see
//! `texture_model.rs`), except 3-D linear filtering of float texels, whose mix the probes fit
//! to 99.9% (within 2^-20 of the footprint's largest texel:
//! `texture_model::compare_3d_linear`); gathers and level fetches;
//! the refusals of unsupported combinations. Copies and surfaces: `surface.rs`. Fresh random
//! texels with special values (NaN, ±0, ±inf, subnormals; MIN/MAX), outputs poisoned first.

use cudajit::codegen::{Kernel, Texture1d, Texture2d, Texture3d};
use cudajit::memory::{
    AddressMode, ChannelKind, CudaArray, FilterMode, TexResult, TexelFormat, TextureDesc,
    TextureObject,
};
use cudajit::prelude::*;
use cudajit::{f16, Error};

use crate::common::{ctx, Rng};
use crate::support::tex_model::Tex;
use crate::texture_model::compare_3d_linear;

const MODES: [AddressMode; 4] = [
    AddressMode::Wrap,
    AddressMode::Clamp,
    AddressMode::Mirror,
    AddressMode::Border,
];

/// A texel type built from raw channel bits.
pub(crate) trait Texel: TexelFormat {
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
        ChannelKind::F16 if special => [
            0x7e00, 0xfe00, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x7bff,
        ][pick % 9],
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
pub(crate) fn texels<T: Texel>(n: usize, rng: &mut Rng) -> (Vec<[u32; 4]>, Vec<T>) {
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
fn model<T: TexelFormat>(
    raw: Vec<[u32; 4]>,
    extent: [usize; 3],
    dims: usize,
    desc: &TextureDesc,
) -> Tex {
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

thread_local! {
    /// The failures `compare` found in this test so far (each test runs on its own thread).
    static FAILURES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Fails the test if any `compare` so far found a difference, printing every one (so one GPU
/// run shows each sampling state that differs, not only the first).
fn assert_no_failures() {
    let all = FAILURES.with(|f| std::mem::take(&mut *f.borrow_mut()));
    assert!(
        all.is_empty(),
        "{} sampling states differ from the model:\n\n{}",
        all.len(),
        all.join("\n\n")
    );
}

/// Compares the fetched channels with the model's, bit for bit (a NaN matches any NaN only
/// where the model's NaN comes from converting an f16 NaN, whose payload the hardware's
/// conversion need not keep); on a mismatch, records (for `assert_no_failures`) how many
/// fetches differ and the first few, with their coordinates and inputs as `coords` describes
/// them (the model's texels and weights), the bits got and wanted.
fn compare(what: &str, got: &[u32], want: &[Vec<u32>], coords: &dyn Fn(usize) -> String) {
    let f16_nan_ok = what.contains("F16");
    let mut bad = Vec::new();
    for (i, w) in want.iter().enumerate() {
        for (c, &wc) in w.iter().enumerate() {
            let g = got[4 * i + c];
            let both_nan = f32::from_bits(g).is_nan() && f32::from_bits(wc).is_nan();
            if g != wc && !(f16_nan_ok && both_nan) {
                bad.push(format!(
                    "fetch {i} at {} channel {c}: got {g:#x} ({}), want {wc:#x} ({})",
                    coords(i),
                    f32::from_bits(g),
                    f32::from_bits(wc)
                ));
            }
        }
    }
    if !bad.is_empty() {
        let msg = format!(
            "{what}: {} of {} channels differ from the model; the first:\n{}",
            bad.len(),
            want.iter().map(Vec::len).sum::<usize>(),
            bad[..bad.len().min(6)].join("\n")
        );
        FAILURES.with(|f| f.borrow_mut().push(msg));
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
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 64).unwrap(),
        (&tex, &dx, &dy, &mut out),
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    let want: Vec<Vec<u32>> = (0..n).map(|i| m.fetch(&[xs[i], ys[i]])).collect();
    compare(
        &format!("{desc:?} over {arr:?} ({:?})", T::LAYOUT.kind),
        &got,
        &want,
        &|i| format!("({}, {}) {}", xs[i], ys[i], m.describe(&[xs[i], ys[i]])),
    );
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
            assert_no_failures();
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

/// Raw texels and the array of a 1-D texture, then of a 3-D one.
type Arrays<T> = (Vec<[u32; 4]>, CudaArray<T>, Vec<[u32; 4]>, CudaArray<T>);

/// 1-D and 3-D arrays of f32 and of u8 read as normalized floats: every address mode ×
/// filter × coordinate mode.
#[test]
#[ignore = "needs a CUDA GPU"]
fn texture_1d_and_3d_every_mode() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let k1 = Kernel::<(Texture1d<f32>, &[f32], &mut [u32])>::build(
        "texture_fetch1d",
        |k, (t, xs, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                for (ch, v) in t.tex1d4(xs.at(i)).into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let k3 = Kernel::<(Texture3d<f32>, &[f32], &mut [u32])>::build(
        "texture_fetch3d",
        |k, (t, xyz, out)| {
            let i = k.grid1();
            k.if_((i * 3).lt(xyz.len()), |_| {
                let c = t.tex3d4(xyz.at(i * 3), xyz.at(i * 3 + 1), xyz.at(i * 3 + 2));
                for (ch, v) in c.into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let n = 64;
    fn arrays<T: Texel>(ctx: &Context, rng: &mut Rng) -> Arrays<T> {
        let (r1, t1) = texels::<T>(9, rng);
        let mut a1 = CudaArray::<T>::new_1d(ctx, 9).unwrap();
        a1.copy_from_host(&t1).unwrap();
        let (r3, t3) = texels::<T>(4 * 3 * 2, rng);
        let mut a3 = CudaArray::<T>::new_3d(ctx, 4, 3, 2).unwrap();
        a3.copy_from_host(&t3).unwrap();
        (r1, a1, r3, a3)
    }
    let (rf1, af1, rf3, af3) = arrays::<[f32; 2]>(&ctx, &mut rng);
    let (ru1, au1, ru3, au3) = arrays::<[u8; 4]>(&ctx, &mut rng);
    for desc in descs(ChannelKind::U8) {
        let float_ok = !refused(ChannelKind::F32, &desc) && !desc.read_normalized;
        let u8_ok = desc.read_normalized && !refused(ChannelKind::U8, &desc);
        let mut cases: Vec<(Tex, TextureObject<f32>)> = Vec::new();
        if float_ok {
            let t = TextureObject::<f32>::from_array(&af1, &desc).unwrap();
            cases.push((model::<[f32; 2]>(rf1.clone(), [9, 1, 1], 1, &desc), t));
            let t = TextureObject::<f32>::from_array(&af3, &desc).unwrap();
            cases.push((model::<[f32; 2]>(rf3.clone(), [4, 3, 2], 3, &desc), t));
        }
        if u8_ok {
            let t = TextureObject::<f32>::from_array(&au1, &desc).unwrap();
            cases.push((model::<[u8; 4]>(ru1.clone(), [9, 1, 1], 1, &desc), t));
            let t = TextureObject::<f32>::from_array(&au3, &desc).unwrap();
            cases.push((model::<[u8; 4]>(ru3.clone(), [4, 3, 2], 3, &desc), t));
        }
        for (m, tex) in cases {
            let (e, dims) = (m.extent, m.dims);
            let mut out = ctx.to_device(&vec![0xdead_beef_u32; 4 * n]).unwrap();
            let cs: Vec<Vec<f32>> = (0..dims)
                .map(|d| coords(n, e[d], desc.normalized_coords, &mut rng))
                .collect();
            if dims == 1 {
                let dx = ctx.to_device(&cs[0]).unwrap();
                k1.launch(
                    &s,
                    LaunchConfig::for_num_elems(n, 64).unwrap(),
                    (&tex, &dx, &mut out),
                )
                .unwrap();
            } else {
                let xyz: Vec<f32> = (0..n)
                    .flat_map(|i| [cs[0][i], cs[1][i], cs[2][i]])
                    .collect();
                let dxyz = ctx.to_device(&xyz).unwrap();
                k3.launch(
                    &s,
                    LaunchConfig::for_num_elems(n, 64).unwrap(),
                    (&tex, &dxyz, &mut out),
                )
                .unwrap();
            }
            let got = out.to_vec().unwrap();
            let at = |i: usize| -> Vec<f32> { (0..dims).map(|d| cs[d][i]).collect() };
            let what = format!("{dims}-D {:?} {desc:?}", m.kind);
            if dims == 3 && desc.filter == FilterMode::Linear && m.kind == ChannelKind::F32 {
                // 3-D filtering (texprobe5: clamp; texprobe6: wrap, mirror, border): integer
                // texels bit for bit, the float mix to 99.9% (within 2^-20 of the footprint).
                compare_3d_linear(&what, &got, &m, &at, 2f64.powi(-20));
                continue;
            }
            let want: Vec<Vec<u32>> = (0..n)
                .map(|i| match dims {
                    1 => m.fetch_1d_array(cs[0][i]),
                    _ => m.fetch(&at(i)),
                })
                .collect();
            compare(&what, &got, &want, &|i| {
                format!("{:?} {}", at(i), m.describe(&at(i)))
            });
        }
    }
    assert_no_failures();
}

/// Textures over linear memory (integer coordinates, 0 out of range) and pitched 2-D memory
/// (rows padded), of i16 × 2 read as integers and as normalized floats.
#[test]
#[ignore = "needs a CUDA GPU"]
fn texture_linear_and_pitched_memory() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 64;
    let (raw, typed) = texels::<[i16; 2]>(37, &mut rng);
    // A texture over device memory starts at the texture alignment (512 bytes): the texels are
    // placed at the first aligned element of a larger array.
    let mut big = ctx.zeros::<[i16; 2], _>(37 + 128).unwrap();
    let skip = ((512 - big.device_ptr() % 512) % 512) as usize / 4;
    let mut whole = vec![[0i16; 2]; 37 + 128];
    whole[skip..skip + 37].copy_from_slice(&typed);
    big.copy_from_host(&whole).unwrap();
    let mem = big.slice(skip..skip + 37).unwrap();
    // A view off the alignment: refused, naming it.
    let off = big.slice(skip + 1..skip + 2).unwrap();
    let e = TextureObject::<i32>::from_linear(&off, &TextureDesc::default()).unwrap_err();
    assert!(e.to_string().contains("aligned to 512 bytes"), "{e}");
    let kf = Kernel::<(Texture1d<i32>, &[i32], &mut [i32])>::build(
        "texture_fetch_linear",
        |k, (t, is, out)| {
            let i = k.grid1();
            k.if_(i.lt(is.len()), |_| {
                for (ch, v) in t.fetch4(is.at(i)).into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v);
                }
            });
        },
    )
    .unwrap();
    let desc = TextureDesc::default();
    let tex = TextureObject::<i32>::from_linear(&mem, &desc).unwrap();
    let is: Vec<i32> = (0..n as i32).map(|i| i - 10).collect();
    let dis = ctx.to_device(&is).unwrap();
    let mut out = ctx.to_device(&vec![0x5a5a_5a5a_i32; 4 * n]).unwrap();
    kf.launch(
        &s,
        LaunchConfig::for_num_elems(n, 64).unwrap(),
        (&tex, &dis, &mut out),
    )
    .unwrap();
    let got: Vec<u32> = out
        .to_vec()
        .unwrap()
        .into_iter()
        .map(|v| v as u32)
        .collect();
    let m = model::<[i16; 2]>(raw.clone(), [37, 1, 1], 1, &desc);
    let want: Vec<Vec<u32>> = is.iter().map(|&i| m.fetch_linear(i)).collect();
    compare("linear i16x2", &got, &want, &|i| is[i].to_string());
    // Refused over linear memory: linear filtering, normalized coordinates; a wrong result type.
    let bad = desc.filter(FilterMode::Linear).read_normalized(true);
    assert!(matches!(
        TextureObject::<f32>::from_linear(&mem, &bad),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        TextureObject::<u32>::from_linear(&mem, &desc),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        TextureObject::<f32>::from_linear(&mem, &desc),
        Err(Error::Usage(_))
    ));

    // Pitched: 6 rows of 5 texels, rows 64 bytes apart (the GPU's pitch alignment is at most 32
    // on current parts; 64 keeps the rows aligned everywhere).
    let (w, h, pitch) = (5usize, 6usize, 64usize);
    let per_row = pitch / 4;
    let (raw2, typed2) = texels::<[i16; 2]>(per_row * h, &mut rng);
    let mut big2 = ctx.zeros::<[i16; 2], _>(per_row * h + 128).unwrap();
    let skip2 = ((512 - big2.device_ptr() % 512) % 512) as usize / 4;
    let mut whole2 = vec![[0i16; 2]; per_row * h + 128];
    whole2[skip2..skip2 + per_row * h].copy_from_slice(&typed2);
    big2.copy_from_host(&whole2).unwrap();
    let mem2 = big2.slice(skip2..skip2 + per_row * h).unwrap();
    let k2 = Kernel::<(Texture2d<f32>, &[f32], &[f32], &mut [u32])>::build(
        "texture_fetch_pitch",
        |k, (t, xs, ys, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                for (ch, v) in t.tex2d4(xs.at(i), ys.at(i)).into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let dense: Vec<[u32; 4]> = (0..h)
        .flat_map(|y| raw2[y * per_row..y * per_row + w].to_vec())
        .collect();
    for mode in [AddressMode::Clamp, AddressMode::Border] {
        let desc = TextureDesc::default()
            .address(mode)
            .filter(FilterMode::Linear)
            .read_normalized(true);
        let tex = TextureObject::<f32>::from_pitch2d(&mem2, w, h, pitch, &desc).unwrap();
        let xs = coords(n, w, false, &mut rng);
        let ys = coords(n, h, false, &mut rng);
        let (dx, dy) = (ctx.to_device(&xs).unwrap(), ctx.to_device(&ys).unwrap());
        let mut out = ctx.to_device(&vec![0xdead_beef_u32; 4 * n]).unwrap();
        k2.launch(
            &s,
            LaunchConfig::for_num_elems(n, 64).unwrap(),
            (&tex, &dx, &dy, &mut out),
        )
        .unwrap();
        let m = model::<[i16; 2]>(dense.clone(), [w, h, 1], 2, &desc);
        let want: Vec<Vec<u32>> = (0..n).map(|i| m.fetch(&[xs[i], ys[i]])).collect();
        compare("pitched i16x2", &out.to_vec().unwrap(), &want, &|i| {
            format!("({}, {}) {}", xs[i], ys[i], m.describe(&[xs[i], ys[i]]))
        });
    }
    assert_no_failures();
    // A pitch shorter than a row, or memory too short: usage errors.
    let d = TextureDesc::default();
    assert!(matches!(
        TextureObject::<i32>::from_pitch2d(&mem2, w, h, 8, &d),
        Err(Error::Usage(_))
    ));
    assert!(matches!(
        TextureObject::<i32>::from_pitch2d(&mem2, w, h + 1, pitch, &d),
        Err(Error::Usage(_))
    ));
}

/// `tex2d_gather` of each component and `tex2d_lod` (level 0) over a 4-channel u16 array,
/// clamped and bordered, normalized coordinates and not.
#[test]
#[ignore = "needs a CUDA GPU"]
fn texture_gather_and_lod() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let (w, h, n) = (6usize, 4usize, 64usize);
    let (raw, typed) = texels::<[u16; 4]>(w * h, &mut rng);
    let mut arr = CudaArray::<[u16; 4]>::new_2d(&ctx, w, h).unwrap();
    arr.copy_from_host(&typed).unwrap();
    let k = Kernel::<(Texture2d<u32>, Texture2d<f32>, &[f32], &[f32], &mut [u32])>::build(
        "texture_gather_lod",
        |k, (t, tf, xs, ys, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                let (x, y) = (xs.at(i), ys.at(i));
                for comp in 0..4u8 {
                    for (j, v) in t.tex2d_gather(x, y, comp).into_iter().enumerate() {
                        out.set(i * 20 + comp as u64 * 4 + j as u64, v);
                    }
                }
                for (ch, v) in tf
                    .tex2d_lod4(x, y, cudajit::codegen::Expr::lit(0.0f32))
                    .into_iter()
                    .enumerate()
                {
                    out.set(i * 20 + 16 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    for mode in [AddressMode::Clamp, AddressMode::Border] {
        for norm in [false, true] {
            let di = TextureDesc::default().address(mode).normalized_coords(norm);
            let df = di.read_normalized(true).filter(FilterMode::Linear);
            let ti = TextureObject::<u32>::from_array(&arr, &di).unwrap();
            let tf = TextureObject::<f32>::from_array(&arr, &df).unwrap();
            let xs = coords(n, w, norm, &mut rng);
            let ys = coords(n, h, norm, &mut rng);
            let (dx, dy) = (ctx.to_device(&xs).unwrap(), ctx.to_device(&ys).unwrap());
            let mut out = ctx.to_device(&vec![0xdead_beef_u32; 20 * n]).unwrap();
            k.launch(
                &s,
                LaunchConfig::for_num_elems(n, 64).unwrap(),
                (&ti, &tf, &dx, &dy, &mut out),
            )
            .unwrap();
            let got = out.to_vec().unwrap();
            let (mi, mf) = (
                model::<[u16; 4]>(raw.clone(), [w, h, 1], 2, &di),
                model::<[u16; 4]>(raw.clone(), [w, h, 1], 2, &df),
            );
            for i in 0..n {
                for comp in 0..4 {
                    let want = mi.gather(xs[i], ys[i], comp);
                    let g = &got[i * 20 + comp * 4..i * 20 + comp * 4 + 4];
                    assert_eq!(g, want, "gather {comp} at ({}, {}) {di:?}", xs[i], ys[i]);
                }
                let want = mf.fetch(&[xs[i], ys[i]]);
                assert_eq!(
                    &got[i * 20 + 16..i * 20 + 20],
                    &want[..],
                    "lod 0 at ({}, {}) {df:?}",
                    xs[i],
                    ys[i]
                );
            }
        }
    }
}

/// Layered textures: a layered 2-D f32 × 2 array (5 × 4, 3 layers) and a layered 1-D u8 × 4
/// one read as normalized floats, every valid sampling state, layers in and out of range
/// (the index read as unsigned and clamped to the last layer, so a negative one reads the
/// last layer: texprobe4 section d), against the model of the layer.
#[test]
#[ignore = "needs a CUDA GPU"]
fn texture_layered_every_mode() {
    use cudajit::codegen::{Texture1dLayered, Texture2dLayered};
    use cudajit::memory::ArrayOptions;
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let layered = ArrayOptions {
        layered: true,
        ..Default::default()
    };
    let n = 64;
    let k2 = Kernel::<(Texture2dLayered<f32>, &[f32], &[f32], &[i32], &mut [u32])>::build(
        "texture_layered2d",
        |k, (t, xs, ys, ls, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                let c = t.tex2d_layered4(xs.at(i), ys.at(i), ls.at(i));
                for (ch, v) in c.into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let k1 = Kernel::<(Texture1dLayered<f32>, &[f32], &[i32], &mut [u32])>::build(
        "texture_layered1d",
        |k, (t, xs, ls, out)| {
            let i = k.grid1();
            k.if_(i.lt(xs.len()), |_| {
                for (ch, v) in t.tex1d_layered4(xs.at(i), ls.at(i)).into_iter().enumerate() {
                    out.set(i * 4 + ch as u64, v.bitcast::<u32>());
                }
            });
        },
    )
    .unwrap();
    let (raw2, typed2) = texels::<[f32; 2]>(5 * 4 * 3, &mut rng);
    let mut a2 = CudaArray::<[f32; 2]>::new(&ctx, [5, 4, 3], layered).unwrap();
    a2.copy_from_host(&typed2).unwrap();
    let (raw1, typed1) = texels::<[u8; 4]>(9 * 2, &mut rng);
    let mut a1 = CudaArray::<[u8; 4]>::new(&ctx, [9, 0, 2], layered).unwrap();
    a1.copy_from_host(&typed1).unwrap();
    let ls: Vec<i32> = (0..n as i32).map(|i| i % 5 - 1).collect();
    let dls = ctx.to_device(&ls).unwrap();
    for desc in descs(ChannelKind::U8) {
        // The f32 array with the element-type read, the u8 one read as normalized floats.
        for (is2, ok) in [
            (
                true,
                !desc.read_normalized && !refused(ChannelKind::F32, &desc),
            ),
            (
                false,
                desc.read_normalized && !refused(ChannelKind::U8, &desc),
            ),
        ] {
            if !ok {
                continue;
            }
            let (w, h, layers) = if is2 { (5, 4, 3) } else { (9, 1, 2) };
            let xs = coords(n, w, desc.normalized_coords, &mut rng);
            let ys = coords(n, h, desc.normalized_coords, &mut rng);
            let mut out = ctx.to_device(&vec![0xdead_beef_u32; 4 * n]).unwrap();
            let dx = ctx.to_device(&xs).unwrap();
            if is2 {
                let tex = TextureObject::<f32>::from_array(&a2, &desc).unwrap();
                assert!(tex.is_layered() && tex.ndim() == 2);
                let dy = ctx.to_device(&ys).unwrap();
                let cfg = LaunchConfig::for_num_elems(n, 64).unwrap();
                k2.launch(&s, cfg, (&tex, &dx, &dy, &dls, &mut out))
                    .unwrap();
            } else {
                let tex = TextureObject::<f32>::from_array(&a1, &desc).unwrap();
                let cfg = LaunchConfig::for_num_elems(n, 64).unwrap();
                k1.launch(&s, cfg, (&tex, &dx, &dls, &mut out)).unwrap();
            }
            let got = out.to_vec().unwrap();
            let want: Vec<Vec<u32>> = (0..n)
                .map(|i| {
                    let l = (ls[i] as u32).min(layers as u32 - 1) as usize;
                    let per = w * h;
                    if is2 {
                        let m = model::<[f32; 2]>(
                            raw2[l * per..(l + 1) * per].to_vec(),
                            [w, h, 1],
                            2,
                            &desc,
                        );
                        m.fetch(&[xs[i], ys[i]])
                    } else {
                        let m = model::<[u8; 4]>(
                            raw1[l * per..(l + 1) * per].to_vec(),
                            [w, 1, 1],
                            1,
                            &desc,
                        );
                        m.fetch(&[xs[i]])
                    }
                })
                .collect();
            let what = format!(
                "layered {} {desc:?}",
                if is2 { "2-D F32" } else { "1-D U8" }
            );
            compare(&what, &got, &want, &|i| {
                format!("({}, {}) layer {}", xs[i], ys[i], ls[i])
            });
        }
    }
    assert_no_failures();
    // A layered texture given to a plain 2-D parameter: a launch error.
    let tex = TextureObject::<f32>::from_array(&a2, &TextureDesc::default()).unwrap();
    let kp = Kernel::<(Texture2d<f32>, &mut [f32])>::build("texture_not_layered", |k, (t, o)| {
        let i = k.grid1();
        o.set(i, t.tex2d(i.cast::<f32>(), i.cast::<f32>()));
    })
    .unwrap();
    let mut o = ctx.zeros::<f32, _>(1).unwrap();
    let e = kp
        .launch(&s, LaunchConfig::new(1, 1), (&tex, &mut o))
        .unwrap_err();
    assert!(e.to_string().contains("given a layered 2-D texture"), "{e}");
}
