//! Texture fetches and surface accesses in PTX: every fetch form (`tex.1d/2d/3d` with float
//! and integer coordinates, `tex.level`, `tld4` of each component) for float, signed and
//! unsigned results, and surface loads and stores of every element size in 1, 2 and 3
//! dimensions, checked by ptxas for sm_75 and sm_90.

use cudajit::codegen::{
    Expr, Kernel, KernelParams, PtxOptions, Surface1d, Surface2d, Surface3d, Texture1d, Texture2d,
    Texture3d,
};
use cudajit::{bf16, f16};

use crate::common::check_ptx;

/// Compiles `k` for sm_75 and sm_90, checks both with ptxas, and that each of `want` appears
/// in the PTX at least once.
fn check<P: KernelParams>(k: &Kernel<P>, want: &[&str]) {
    for cc in [(7, 5), (9, 0)] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        for w in want {
            assert!(ptx.contains(w), "{w} not in {}:\n{ptx}", k.name());
        }
        check_ptx(&ptx, cc, k.name());
    }
}

fn fetches<R: cudajit::memory::TexResult + cudajit::codegen::Scalar + cudajit::codegen::Num>(
    name: &str,
    ty: &str,
) {
    let k = Kernel::<(Texture1d<R>, Texture2d<R>, Texture3d<R>, &mut [R])>::build(
        name,
        |k, (t1, t2, t3, out)| {
            let i = k.grid1();
            let x = i.cast::<f32>() * 0.25;
            let a = t1.tex1d(x) + t1.fetch(i.cast::<i32>());
            let v = t1.tex1d4(x);
            let f = t1.fetch4(i.cast::<i32>());
            let b = t2.tex2d(x, x + 1.0);
            let c = t2.tex2d4(x, x);
            let l = t2.tex2d_lod(x, x, Expr::lit(0.0f32));
            let l4 = t2.tex2d_lod4(x, x, Expr::lit(1.0f32));
            let mut s = a + v[3] + f[1] + b + c[2] + l + l4[0];
            for comp in 0..4u8 {
                let g = t2.tex2d_gather(x, x, comp);
                s = s + g[0] + g[3];
            }
            let d = t3.tex3d(x, x, x);
            let e = t3.tex3d4(x, x, x);
            out.set(i, s + d + e[1]);
        },
    )
    .unwrap();
    check(
        &k,
        &[
            &format!("tex.1d.v4.{ty}.f32"),
            &format!("tex.1d.v4.{ty}.s32"),
            &format!("tex.2d.v4.{ty}.f32"),
            &format!("tex.3d.v4.{ty}.f32"),
            &format!("tex.level.2d.v4.{ty}.f32"),
            &format!("tld4.r.2d.v4.{ty}.f32"),
            &format!("tld4.a.2d.v4.{ty}.f32"),
        ],
    );
}

#[test]
fn texture_fetches_float_signed_unsigned() {
    fetches::<f32>("tex_f32", "f32");
    fetches::<i32>("tex_s32", "s32");
    fetches::<u32>("tex_u32", "u32");
}

/// One fetch of four channels is one instruction, not four.
#[test]
fn texture_fetch4_is_one_instruction() {
    let k = Kernel::<(Texture2d<f32>, &mut [f32])>::build("tex_one", |k, (t, out)| {
        let i = k.grid1();
        let x = i.cast::<f32>();
        let c = t.tex2d4(x, x);
        out.set(i, c[0] + c[1] + c[2] + c[3]);
    })
    .unwrap();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    assert_eq!(ptx.matches("tex.2d").count(), 1, "{ptx}");
}

macro_rules! surface_kernel {
    ($name:literal, $t:ty, $bits:literal) => {{
        let k = Kernel::<(Surface1d<$t>, Surface2d<$t>, Surface3d<$t>)>::build(
            $name,
            |k, (s1, s2, s3)| {
                let i = k.grid1().cast::<i32>();
                let a = s1.suld(i);
                s1.sust(i + 1, a);
                let b = s2.suld(i, i);
                s2.sust(i, i + 1, b);
                let c = s3.suld(i, i, i);
                s3.sust(i, i, i + 1, c);
            },
        )
        .unwrap();
        check(
            &k,
            &[
                concat!("suld.b.1d.b", $bits, ".trap"),
                concat!("sust.b.1d.b", $bits, ".trap"),
                concat!("suld.b.2d.b", $bits, ".trap"),
                concat!("sust.b.2d.b", $bits, ".trap"),
                concat!("suld.b.3d.b", $bits, ".trap"),
                concat!("sust.b.3d.b", $bits, ".trap"),
            ],
        );
    }};
}

#[test]
fn surface_loads_and_stores_of_every_size() {
    surface_kernel!("surf_u8", u8, "8");
    surface_kernel!("surf_i8", i8, "8");
    surface_kernel!("surf_u16", u16, "16");
    surface_kernel!("surf_f16", f16, "16");
    surface_kernel!("surf_bf16", bf16, "16");
    surface_kernel!("surf_f32", f32, "32");
    surface_kernel!("surf_i32", i32, "32");
    surface_kernel!("surf_u64", u64, "64");
    surface_kernel!("surf_f64", f64, "64");
}

/// A surface of `bool` is a build error, not a panic.
#[test]
fn surface_of_bool_is_a_build_error() {
    let r = Kernel::<(Surface2d<bool>,)>::build("surf_bool", |_, _| {});
    let e = r.err().expect("a build error");
    assert!(e.to_string().contains("not bool"), "{e}");
}

/// Layered fetches: `tex.a1d` and `tex.a2d`, float and integer results.
#[test]
fn texture_layered_fetches() {
    use cudajit::codegen::{Texture1dLayered, Texture2dLayered};
    let k = Kernel::<(Texture1dLayered<f32>, Texture2dLayered<u32>, &mut [f32])>::build(
        "tex_layered",
        |k, (t1, t2, out)| {
            let i = k.grid1();
            let (x, l) = (i.cast::<f32>(), i.cast::<i32>());
            let a = t1.tex1d_layered(x, l) + t1.tex1d_layered4(x, l)[3];
            let b = t2.tex2d_layered(x, x, l) + t2.tex2d_layered4(x, x, l)[1];
            out.set(i, a + b.cast::<f32>());
        },
    )
    .unwrap();
    check(&k, &["tex.a1d.v4.f32.f32", "tex.a2d.v4.u32.f32"]);
}
