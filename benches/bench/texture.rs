//! The `resize` row: a bilinear image resize through a texture (a `CudaArray<f32>` sampled
//! with linear filtering and clamped edges at the output pixels' centres, torch's
//! `interpolate(mode="bilinear", align_corners=False)` sampling points), checked against exact
//! bilinear interpolation on the host (the texture unit's 8-bit weights stay within 1/256 of
//! the input's range).

use cudajit::codegen::{Kernel, Texture2d};
use cudajit::memory::{AddressMode, CudaArray, FilterMode, TextureDesc, TextureObject};
use cudajit::prelude::*;

use super::data::{check, rand_f32};
use super::record::Rec;
use super::{Bench, Res, LIB_IMPL};

/// Input and output side of the `resize` row.
pub(crate) fn resize_sides(quick: bool) -> (usize, usize) {
    if quick {
        (512, 768)
    } else {
        (4096, 6144)
    }
}

/// The size label of the `resize` row.
pub(crate) fn resize_label(quick: bool) -> String {
    let (m, o) = resize_sides(quick);
    format!("{m}x{m}->{o}x{o} f32")
}

/// Exact bilinear interpolation of `img` (`m` × `m`) at output pixel (`x`, `y`) of an `o` × `o`
/// output, edges clamped (torch's `align_corners=False`).
fn bilinear(img: &[f32], m: usize, o: usize, x: usize, y: usize) -> f64 {
    let s = m as f64 / o as f64;
    let tap = |p: usize| {
        let u = ((p as f64 + 0.5) * s - 0.5).max(0.0);
        let i = (u.floor() as usize).min(m - 1);
        (i, (i + 1).min(m - 1), u - i as f64)
    };
    let ((x0, x1, a), (y0, y1, b)) = (tap(x), tap(y));
    let at = |i: usize, j: usize| img[j * m + i] as f64;
    (1.0 - a) * (1.0 - b) * at(x0, y0)
        + a * (1.0 - b) * at(x1, y0)
        + (1.0 - a) * b * at(x0, y1)
        + a * b * at(x1, y1)
}

impl Bench {
    pub(crate) fn resize(&self) -> Res<()> {
        let (m, o) = resize_sides(self.opts.quick);
        let img = rand_f32(m * m, self.seed("resize/img"), -1.0, 1.0);
        let mut arr = self.c(CudaArray::<f32>::new_2d(&self.ctx, m, m))?;
        self.c(arr.copy_from_host(&img))?;
        let desc = TextureDesc::default()
            .address(AddressMode::Clamp)
            .filter(FilterMode::Linear);
        let tex = self.c(TextureObject::<f32>::from_array(&arr, &desc))?;
        let k = self.c(Kernel::<(Texture2d<f32>, &mut [f32], u32, f32)>::build(
            "bench_texture_resize",
            |k, (t, out, o, s)| {
                let [x, y] = k.grid2();
                let o64 = o.cast::<u64>();
                k.if_(x.lt(o64).and(y.lt(o64)), |_| {
                    let u = (x.cast::<f32>() + 0.5) * s;
                    let v = (y.cast::<f32>() + 0.5) * s;
                    out.set(y * o64 + x, t.tex2d(u, v));
                });
            },
        ))?;
        let mut out = self.poisoned_f32(o * o)?;
        let cfg = LaunchConfig::new(((o as u32).div_ceil(32), (o as u32).div_ceil(8)), (32, 8));
        let s = m as f32 / o as f32;
        self.c(k.launch(&self.stream, cfg, (&tex, &mut out, o as u32, s)))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "resize",
            o * o,
            |i| got[i] as f64,
            |i| bilinear(&img, m, o, i % o, i / o),
            // The texture unit's weights are multiples of 1/256 (a sampling point moves by up to
            // 1/512 texel): 5.9e-3 of the norm on random pixels (H200), against exact bilinear
            // interpolation in f64.
            1e-2,
        )?;
        drop(got);
        let t = self.time_gpu(|| k.launch(&self.stream, cfg, (&tex, &mut out, o as u32, s)))?;
        // The texture API is the library's: the row is ours, beside torch's and CuPy's resize.
        Rec::new("resize", &resize_label(self.opts.quick))
            .imp(LIB_IMPL)
            .variant("texture, linear filtering, 32x8 threads/block")
            .times(&t)
            .bytes((m * m + o * o) * 4)
            .emit();
        Ok(())
    }
}
