//! CUDA arrays and surfaces: copies between host memory, device arrays and arrays of every
//! shape (shape mismatches as errors), surface loads and stores in 1, 2 and 3 dimensions
//! checked against the host, and the refusals (a surface over an array without surface
//! access, a texture of the wrong dimension count at launch). Random texels from
//! `texture.rs`; outputs poisoned first.

use cudajit::codegen::{Kernel, Surface2d, Texture2d};
use cudajit::memory::{CudaArray, SurfaceObject, TextureDesc, TextureObject};
use cudajit::prelude::*;
use cudajit::{f16, Error};

use crate::common::{ctx, Rng};
use crate::texture::texels;

/// Copies: host → array → array → device → array → host round trips of every shape, and
/// shape mismatches as errors.
#[test]
#[ignore = "needs a CUDA GPU"]
fn texture_array_copies() {
    let ctx = ctx();
    let mut rng = Rng::new();
    for extent in [[13, 0, 0], [7, 5, 0], [5, 4, 3]] {
        let n: usize = extent.iter().map(|&e| e.max(1)).product();
        let (_, host) = texels::<[f16; 2]>(n, &mut rng);
        let opts = cudajit::memory::ArrayOptions::default();
        let mut a = CudaArray::<[f16; 2]>::new(&ctx, extent, opts).unwrap();
        let mut b = CudaArray::<[f16; 2]>::new(&ctx, extent, opts).unwrap();
        a.copy_from_host(&host).unwrap();
        b.copy_from_array(&a).unwrap();
        let mut dev = ctx.zeros::<[f16; 2], _>(n).unwrap();
        b.copy_to_device(&mut dev).unwrap();
        let mut c = CudaArray::<[f16; 2]>::new(&ctx, extent, opts).unwrap();
        c.copy_from_device(&dev).unwrap();
        let back = c.to_host().unwrap();
        let bits = |v: &[[f16; 2]]| {
            v.iter()
                .map(|t| [t[0].to_bits(), t[1].to_bits()])
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&back), bits(&host), "{extent:?}");
        let mut short = vec![[f16::ZERO; 2]; n - 1];
        assert!(matches!(
            c.copy_to_host(&mut short),
            Err(Error::Shape { .. })
        ));
        assert!(matches!(a.copy_from_host(&short), Err(Error::Shape { .. })));
    }
    let a = CudaArray::<f32>::new_2d(&ctx, 4, 4).unwrap();
    let mut b = CudaArray::<f32>::new_2d(&ctx, 4, 3).unwrap();
    assert!(matches!(b.copy_from_array(&a), Err(Error::Shape { .. })));
    assert!(matches!(
        CudaArray::<f32>::new(&ctx, [0, 1, 0], Default::default()),
        Err(Error::Usage(_))
    ));
}

/// Surface loads and stores: a kernel reads an f32 × 1 array through a surface, writes
/// `2v + 1` to another; a u8 × 4 array written per byte.
#[test]
#[ignore = "needs a CUDA GPU"]
fn surface_2d_load_and_store() {
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let (w, h) = (9usize, 7usize);
    let src: Vec<f32> = (0..w * h).map(|_| (rng.f32() - 0.5) * 100.0).collect();
    let mut a = CudaArray::<f32>::new_2d(&ctx, w, h).unwrap();
    a.copy_from_host(&src).unwrap();
    let mut b = CudaArray::<f32>::new_2d(&ctx, w, h).unwrap();
    b.copy_from_host(&vec![f32::NAN; w * h]).unwrap();
    let k = Kernel::<(Surface2d<f32>, Surface2d<f32>)>::build("surface_scale", |k, (sa, sb)| {
        let [x, y] = k.grid2();
        let (xi, yi) = (x.cast::<i32>(), y.cast::<i32>());
        k.if_(xi.lt(w as i32).and(yi.lt(h as i32)), |_| {
            let v = sa.suld(xi, yi);
            sb.sust(xi, yi, v * 2.0 + 1.0);
        });
    })
    .unwrap();
    {
        let sa = SurfaceObject::new(&mut a).unwrap();
        let sb = SurfaceObject::new(&mut b).unwrap();
        k.launch(&s, LaunchConfig::new((2, 2), (8, 4)), (&sa, &sb))
            .unwrap();
        s.synchronize().unwrap();
    }
    let got = b.to_host().unwrap();
    for i in 0..w * h {
        assert_eq!(
            got[i].to_bits(),
            (src[i] * 2.0 + 1.0).to_bits(),
            "texel {i}"
        );
    }
    // Byte stores into a 4-channel u8 array: x counts bytes there.
    let mut c = CudaArray::<[u8; 4]>::new_2d(&ctx, 3, 2).unwrap();
    c.copy_from_host(&[[0xee; 4]; 6]).unwrap();
    let kb = Kernel::<(Surface2d<u8>,)>::build("surface_bytes", |k, (sc,)| {
        let i = k.grid1().cast::<i32>();
        k.if_(i.lt(24), |_| sc.sust(i % 12, i / 12, (i * 3).cast::<u8>()));
    })
    .unwrap();
    {
        let sc = SurfaceObject::new(&mut c).unwrap();
        kb.launch(&s, LaunchConfig::new(1, 32), (&sc,)).unwrap();
        s.synchronize().unwrap();
    }
    let got: Vec<u8> = c.to_host().unwrap().into_iter().flatten().collect();
    let want: Vec<u8> = (0..24).map(|i| (i * 3) as u8).collect();
    assert_eq!(got, want);
    // A surface over an array made without surface access: a usage error.
    let mut plain = CudaArray::<f32>::new_1d(&ctx, 4).unwrap();
    assert!(matches!(
        SurfaceObject::new(&mut plain),
        Err(Error::Usage(_))
    ));
    // A texture parameter given a texture of another dimension count: a launch error.
    let t1 = TextureObject::<f32>::from_array(&plain, &TextureDesc::default()).unwrap();
    let k2 = Kernel::<(Texture2d<f32>, &mut [f32])>::build("texture_dims", |k, (t, o)| {
        let i = k.grid1();
        o.set(i, t.tex2d(i.cast::<f32>(), i.cast::<f32>()));
    })
    .unwrap();
    let mut o = ctx.zeros::<f32, _>(1).unwrap();
    let e = k2
        .launch(&s, LaunchConfig::new(1, 1), (&t1, &mut o))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("2-D texture parameter was given a 1-D texture"),
        "{e}"
    );
}

/// 1-D and 3-D surfaces: a kernel copies a u16 × 2 array into another through 16-bit element
/// loads and stores, adding the element's x to each.
#[test]
#[ignore = "needs a CUDA GPU"]
fn surface_1d_and_3d_load_and_store() {
    use cudajit::codegen::{Surface1d, Surface3d};
    use cudajit::memory::ArrayOptions;
    let ctx = ctx();
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new();
    let opts = ArrayOptions {
        surface: true,
        ..Default::default()
    };
    let k1 =
        Kernel::<(Surface1d<u16>, Surface1d<u16>, i32)>::build("surface_1d", |k, (a, b, n)| {
            let x = k.grid1().cast::<i32>();
            k.if_(x.lt(n), |_| b.sust(x, a.suld(x) + x.cast::<u16>()));
        })
        .unwrap();
    let k3 =
        Kernel::<(Surface3d<u16>, Surface3d<u16>, i32)>::build("surface_3d", |k, (a, b, n)| {
            let [x, y, z] = k.grid3();
            let (x, y, z) = (x.cast::<i32>(), y.cast::<i32>(), z.cast::<i32>());
            k.if_(x.lt(n), |_| {
                b.sust(x, y, z, a.suld(x, y, z) + x.cast::<u16>())
            });
        })
        .unwrap();
    for extent in [[11, 0, 0], [5, 3, 2]] {
        let texels: usize = extent.iter().map(|&e| e.max(1)).product();
        let src: Vec<[u16; 2]> = (0..texels)
            .map(|_| [rng.next_u64() as u16, rng.next_u64() as u16])
            .collect();
        let mut a = CudaArray::<[u16; 2]>::new(&ctx, extent, opts).unwrap();
        a.copy_from_host(&src).unwrap();
        let mut b = CudaArray::<[u16; 2]>::new(&ctx, extent, opts).unwrap();
        b.copy_from_host(&vec![[0xffff; 2]; texels]).unwrap();
        let n = (extent[0] * 2) as i32;
        {
            let (sa, sb) = (
                SurfaceObject::new(&mut a).unwrap(),
                SurfaceObject::new(&mut b).unwrap(),
            );
            if extent[1] == 0 {
                k1.launch(&s, LaunchConfig::new(1, 32), (&sa, &sb, n))
                    .unwrap();
            } else {
                let cfg = LaunchConfig::new((1, 1, 1), (16, 3, 2));
                k3.launch(&s, cfg, (&sa, &sb, n)).unwrap();
            }
            s.synchronize().unwrap();
        }
        let got = b.to_host().unwrap();
        for (i, (g, w)) in got.iter().zip(&src).enumerate() {
            let x = (i % extent[0]) * 2;
            let want = [w[0].wrapping_add(x as u16), w[1].wrapping_add(x as u16 + 1)];
            assert_eq!(*g, want, "{extent:?} texel {i}");
        }
    }
}
