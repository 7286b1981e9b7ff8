//! Bilinear image resize through a texture: a 64 × 48 RGBA8 image in a CUDA array, sampled by
//! a texture with linear filtering, clamped edges and texels read as normalized floats, at the
//! centres of a 100 × 75 output (`torch.nn.functional.interpolate(mode="bilinear",
//! align_corners=False)`'s sampling points). The result is checked against a host model of the
//! texture unit (8-bit interpolation weights and the filter's 16-bit fixed-point arithmetic as
//! measured on a GPU, bit for bit) and compared with exact bilinear interpolation (the hardware's weights cost at
//! most ~1/256 of a channel's range).
//!
//! Runs on the GPU, or on cudajit's CPU simulator with `CUDAJIT_SIMULATOR=1` (what
//! `bash scripts/run-example.sh` does on a machine without an NVIDIA GPU).
//!
//! `cargo run --release --example texture_resize`

use cudajit::codegen::{Kernel, Texture2d};
use cudajit::memory::{AddressMode, CudaArray, FilterMode, TextureDesc, TextureObject};
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("texture_resize: {e}");
        std::process::exit(1);
    }
}

/// Channel `c` of `img` (`w` × `h`) at texel (`i`, `j`), edges clamped, as a normalized float.
fn texel(img: &[[u8; 4]], w: usize, h: usize, i: i64, j: i64, c: usize) -> f32 {
    let (i, j) = (
        i.clamp(0, w as i64 - 1) as usize,
        j.clamp(0, h as i64 - 1) as usize,
    );
    img[j * w + i][c] as f32 / 255.0
}

/// Exact bilinear interpolation of channel `c` at (`x`, `y`) in texels, edges clamped.
fn bilinear(img: &[[u8; 4]], w: usize, h: usize, x: f32, y: f32, c: usize) -> f64 {
    let tap = |u: f32| {
        let b = u as f64 - 0.5;
        (b.floor() as i64, b - b.floor())
    };
    let ((i, a), (j, b)) = (tap(x), tap(y));
    let t = |i, j| texel(img, w, h, i, j, c) as f64;
    (1.0 - a) * (1.0 - b) * t(i, j)
        + a * (1.0 - b) * t(i + 1, j)
        + (1.0 - a) * b * t(i, j + 1)
        + a * b * t(i + 1, j + 1)
}

/// The texture unit's bilinear sample, as measured on a GPU (docs/SIMULATOR.md, "Textures and
/// surfaces"): x - 0.5 rounded to 8 fractional bits (ties up), weights in 1/256 steps
/// (w11 = round(a b), the others by difference); u8 texels read as normalized floats are
/// filtered in 16-bit fixed point: each widened to 16 bits (v * 257), summed with the weights,
/// the sum rounded to 16 bits (ties up), the result that over 65535.
fn texture_unit(img: &[[u8; 4]], w: usize, h: usize, x: f32, y: f32, c: usize) -> f32 {
    let tap = |u: f32| {
        let s = ((u as f64 - 0.5) * 256.0 + 0.5).floor();
        ((s / 256.0).floor() as i64, s.rem_euclid(256.0) as u32)
    };
    let ((i, a), (j, b)) = (tap(x), tap(y));
    let w11 = (a * b + 128) >> 8;
    let t = |i, j| {
        let (i, j) = (
            i64::clamp(i, 0, w as i64 - 1) as usize,
            i64::clamp(j, 0, h as i64 - 1) as usize,
        );
        u32::from(img[j * w + i][c]) * 257
    };
    let sum = (256 + w11 - a - b) * t(i, j)
        + (a - w11) * t(i + 1, j)
        + (b - w11) * t(i, j + 1)
        + w11 * t(i + 1, j + 1);
    ((sum + 128) >> 8) as f32 / 65535.0
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let on = if cudajit::on_simulator() {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {on}: {}", ctx.device().name()?);

    let (w, h, ow, oh) = (64usize, 48usize, 100usize, 75usize);
    // A test image: gradients and a checkerboard.
    let img: Vec<[u8; 4]> = (0..w * h)
        .map(|p| {
            let (x, y) = (p % w, p / w);
            [
                (x * 4) as u8,
                (y * 5) as u8,
                if (x / 8 + y / 8) % 2 == 0 { 255 } else { 0 },
                255,
            ]
        })
        .collect();
    let mut arr = CudaArray::<[u8; 4]>::new_2d(&ctx, w, h)?;
    arr.copy_from_host(&img)?;
    let desc = TextureDesc::default()
        .address(AddressMode::Clamp)
        .filter(FilterMode::Linear)
        .read_normalized(true);
    let tex = TextureObject::<f32>::from_array(&arr, &desc)?;

    let (sx, sy) = (w as f32 / ow as f32, h as f32 / oh as f32);
    let resize = Kernel::<(Texture2d<f32>, &mut [f32], u32, u32, f32, f32)>::build(
        "texture_resize",
        |k, (t, out, ow, oh, sx, sy)| {
            let [x, y] = k.grid2();
            k.if_(x.lt(ow.cast::<u64>()).and(y.lt(oh.cast::<u64>())), |_| {
                let u = (x.cast::<f32>() + 0.5) * sx;
                let v = (y.cast::<f32>() + 0.5) * sy;
                let px = t.tex2d4(u, v);
                let at = (y * ow.cast::<u64>() + x) * 4;
                for (c, p) in px.into_iter().enumerate() {
                    out.set(at + c as u64, p);
                }
            });
        },
    )?;
    let mut out = ctx.to_device(&vec![f32::NAN; ow * oh * 4])?;
    let cfg = LaunchConfig::new(
        ((ow as u32).div_ceil(16), (oh as u32).div_ceil(16)),
        (16, 16),
    );
    resize.launch(&stream, cfg, (&tex, &mut out, ow as u32, oh as u32, sx, sy))?;
    let got = out.to_vec_async(&stream)?;

    let (mut exact_bits, mut max_diff) = (true, 0.0f32);
    for oy in 0..oh {
        for ox in 0..ow {
            let (x, y) = ((ox as f32 + 0.5) * sx, (oy as f32 + 0.5) * sy);
            for c in 0..4 {
                let g = got[(oy * ow + ox) * 4 + c];
                exact_bits &= g.to_bits() == texture_unit(&img, w, h, x, y, c).to_bits();
                let d = (g as f64 - bilinear(&img, w, h, x, y, c)).abs();
                max_diff = max_diff.max(d as f32);
            }
        }
    }
    println!("resized {w} x {h} RGBA8 to {ow} x {oh} through a texture (bilinear, clamped edges)");
    println!(
        "pixel (50, 37) = {:?}",
        &got[(37 * ow + 50) * 4..(37 * ow + 50) * 4 + 4]
    );
    println!("matches the texture unit's model (8-bit weights) bit for bit: {exact_bits}");
    println!("largest difference from exact bilinear interpolation: {max_diff:.5} (of 1.0)");
    if !exact_bits {
        eprintln!("texture_resize: the resized image differs from the host model");
        std::process::exit(1);
    }
    Ok(())
}
