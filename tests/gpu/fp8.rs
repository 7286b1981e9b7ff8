//! The 8-bit floats (`F8E4M3`, `F8E5M2`) in kernels, on the GPU (sm_89 and later) and on the
//! simulator: every code of each cast to every other scalar type, every scalar type's special
//! values and values at and beside the fp8 midpoints cast to both, and comparisons of every
//! pair of codes, each element against the host model (`F8E4M3::to_f32` then Rust's `as`;
//! `from_f64` of the exact value), outputs poisoned first. NaN matches NaN (its sign and
//! payload are left open).

use cudajit::codegen::{Expr, Kernel, KernelParam, Scalar};
use cudajit::prelude::*;
use cudajit::{bf16, f16, F8E4M3, F8E5M2};

use crate::common::{ctx, Rng};
use crate::gen::Gen;

/// Whether the device (or the simulator) has the fp8 conversions.
fn has_fp8(c: &Context) -> bool {
    cudajit::on_simulator() || c.device().compute_capability().unwrap() >= (8, 9)
}

/// An fp8 type's host side.
trait Fp8: Scalar + KernelParam<Handle = Expr<Self>> + cudajit::AnyBitPattern + Copy {
    fn code(b: u8) -> Self;
    fn bits(self) -> u8;
    fn value(self) -> f32;
    fn encode(x: f64) -> Self;
    fn nan(self) -> bool;
}

macro_rules! fp8 {
    ($($t:ty),*) => {$(
        impl Fp8 for $t {
            fn code(b: u8) -> Self {
                <$t>::from_bits(b)
            }
            fn bits(self) -> u8 {
                self.to_bits()
            }
            fn value(self) -> f32 {
                self.to_f32()
            }
            fn encode(x: f64) -> Self {
                <$t>::from_f64(x)
            }
            fn nan(self) -> bool {
                self.is_nan()
            }
        }
    )*};
}
fp8!(F8E4M3, F8E5M2);

/// Every code of `F` cast to f32, f64, f16, bf16, i32, u8, i64, bool and the other fp8 type.
fn from_fp8<F: Fp8, G: Fp8>() {
    let c = ctx();
    if !has_fp8(&c) {
        println!("skipped: fp8 casts need sm_89");
        return;
    }
    let s = c.new_stream().unwrap();
    type Outs<'a, G> = (
        &'a [u8],
        &'a mut [f32],
        &'a mut [f64],
        &'a mut [f16],
        &'a mut [bf16],
        &'a mut [i32],
        &'a mut [u8],
        &'a mut [i64],
        &'a mut [bool],
        &'a mut [G],
    );
    let name = format!("from_{}", F::TY.name());
    let k = Kernel::<Outs<'static, G>>::build(
        &name,
        |k, (inp, o32, o64, oh, ob, oi, ou, ol, obool, og)| {
            let i = k.grid1();
            k.if_(i.lt(256u64), |_| {
                let x = inp.at(i).bitcast::<F>();
                o32.set(i, x.cast::<f32>());
                o64.set(i, x.cast::<f64>());
                oh.set(i, x.cast::<f16>());
                ob.set(i, x.cast::<bf16>());
                oi.set(i, x.cast::<i32>());
                ou.set(i, x.cast::<u8>());
                ol.set(i, x.cast::<i64>());
                obool.set(i, x.cast::<bool>());
                og.set(i, x.cast::<G>());
            });
        },
    )
    .unwrap();
    let codes: Vec<u8> = (0..=255).collect();
    let d_in = s.to_device(&codes).unwrap();
    let mut o32 = s.to_device(&[f32::from_bits(0x7fa5_a5a5); 256]).unwrap();
    let mut o64 = s
        .to_device(&[f64::from_bits(0x7ff5_a5a5_a5a5_a5a5); 256])
        .unwrap();
    let mut oh = s.to_device(&[f16::from_bits(0x7c01); 256]).unwrap();
    let mut ob = s.to_device(&[bf16::from_bits(0x7f81); 256]).unwrap();
    let mut oi = s.to_device(&[0x5a5a_5a5ai32; 256]).unwrap();
    let mut ou = s.to_device(&[0xa5u8; 256]).unwrap();
    let mut ol = s.to_device(&[0x5a5a_5a5a_5a5a_5a5ai64; 256]).unwrap();
    let mut obool = s.to_device(&[true; 256]).unwrap();
    let mut og = s.to_device(&[G::code(0x5a); 256]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(2, 128),
        (
            &d_in, &mut o32, &mut o64, &mut oh, &mut ob, &mut oi, &mut ou, &mut ol, &mut obool,
            &mut og,
        ),
    )
    .unwrap();
    let (g32, g64, gh, gb) = (
        o32.to_vec_async(&s).unwrap(),
        o64.to_vec_async(&s).unwrap(),
        oh.to_vec_async(&s).unwrap(),
        ob.to_vec_async(&s).unwrap(),
    );
    let (gi, gu, gl, gbool, gg) = (
        oi.to_vec_async(&s).unwrap(),
        ou.to_vec_async(&s).unwrap(),
        ol.to_vec_async(&s).unwrap(),
        obool.to_vec_async(&s).unwrap(),
        og.to_vec_async(&s).unwrap(),
    );
    let mut bad = Vec::new();
    for (b, &code) in codes.iter().enumerate() {
        let x = F::code(code).value();
        let same = |got: f64, want: f64| {
            (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
        };
        let checks = [
            ("f32", same(g32[b] as f64, x as f64)),
            ("f64", same(g64[b], x as f64)),
            ("f16", same(gh[b].to_f64(), f16::from_f32(x).to_f64())),
            ("bf16", same(gb[b].to_f64(), bf16::from_f32(x).to_f64())),
            ("i32", gi[b] == x as i32),
            ("u8", gu[b] == x as u8),
            ("i64", gl[b] == x as i64),
            ("bool", gbool[b] == (x != 0.0)),
        ];
        for (what, ok) in checks {
            if !ok {
                bad.push(format!("{code:#04x} ({x}) as {what}"));
            }
        }
        let want = G::encode(x as f64);
        if !(gg[b].bits() == want.bits() || (gg[b].nan() && want.nan())) {
            bad.push(format!(
                "{code:#04x} ({x}) as {}: {:#04x}, want {:#04x}",
                G::TY.name(),
                gg[b].bits(),
                want.bits()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{name}: {} casts differ:\n{}",
        bad.len(),
        bad[..bad.len().min(20)].join("\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_e4m3_code_casts_to_every_type() {
    from_fp8::<F8E4M3, F8E5M2>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_e5m2_code_casts_to_every_type() {
    from_fp8::<F8E5M2, F8E4M3>();
}

/// A source type of the casts to fp8.
trait Source: Gen + KernelParam<Handle = Expr<Self>> + cudajit::AnyBitPattern + Copy {
    /// Its exact value.
    fn exact(self) -> f64;
    /// `x` in this type (rounded or saturated as `as` does).
    fn from_f64(x: f64) -> Self;
    /// The value one step above (`up`) or below, for floats; itself for integers.
    fn step(self, up: bool) -> Self;
}

macro_rules! source_float {
    ($($t:ty, $bits:ty);*) => {$(
        impl Source for $t {
            fn exact(self) -> f64 {
                self as f64
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn step(self, up: bool) -> Self {
                let b = self.to_bits();
                // Away from or toward zero by one unit of the last place.
                let away = up == (self > 0.0);
                <$t>::from_bits(if away { b + 1 } else { b.saturating_sub(1) } as $bits)
            }
        }
    )*};
}
source_float!(f32, u32; f64, u64);

macro_rules! source_half {
    ($($t:ty),*) => {$(
        impl Source for $t {
            fn exact(self) -> f64 {
                self.to_f64()
            }
            fn from_f64(x: f64) -> Self {
                <$t>::from_f64(x)
            }
            fn step(self, up: bool) -> Self {
                let b = self.to_bits();
                let away = up == (self.to_f64() > 0.0);
                <$t>::from_bits(if away { b + 1 } else { b.saturating_sub(1) })
            }
        }
    )*};
}
source_half!(f16, bf16);

macro_rules! source_int {
    ($($t:ty),*) => {$(
        impl Source for $t {
            fn exact(self) -> f64 {
                self as f64
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn step(self, _: bool) -> Self {
                self
            }
        }
    )*};
}
source_int!(i8, u16, i32, u64);

/// Inputs of `T`: its generator's special values, and values at the midpoints between
/// neighbouring fp8 codes of both formats and one step beside them (the ties and the double
/// roundings a conversion through a narrower type would get wrong).
fn inputs<T: Source>(rng: &mut Rng, n: usize) -> Vec<T> {
    rng.vec(n, |r| {
        let u = r.next_u64();
        if u % 3 == 0 {
            return T::gen(r);
        }
        let c = (u >> 8) as u8 & 0x7e;
        let (lo, hi) = if u & 4 == 0 {
            (
                F8E4M3::from_bits(c).to_f32(),
                F8E4M3::from_bits(c + 1).to_f32(),
            )
        } else {
            (
                F8E5M2::from_bits(c).to_f32(),
                F8E5M2::from_bits(c + 1).to_f32(),
            )
        };
        let mid = (lo as f64 + hi as f64) / 2.0;
        let mid = if u & 8 == 0 { mid } else { -mid };
        let x = T::from_f64(mid);
        match (u >> 16) % 3 {
            0 => x,
            1 => x.step(true),
            _ => x.step(false),
        }
    })
}

/// Casts of `T`'s special values and near-midpoint values to both fp8 types.
fn to_fp8<T: Source>() {
    let c = ctx();
    if !has_fp8(&c) {
        println!("skipped: fp8 casts need sm_89");
        return;
    }
    let s = c.new_stream().unwrap();
    let n = 1 << 14;
    let name = format!("to_fp8_{}", T::TY.name());
    let k = Kernel::<(&[T], &mut [F8E4M3], &mut [F8E5M2])>::build(&name, |k, (inp, o4, o5)| {
        let i = k.grid1();
        k.if_(i.lt(n as u64), |_| {
            let x = inp.at(i);
            o4.set(i, x.cast::<F8E4M3>());
            o5.set(i, x.cast::<F8E5M2>());
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    let xs: Vec<T> = inputs(&mut rng, n);
    let d_in = s.to_device(&xs).unwrap();
    let mut o4 = s.to_device(&vec![F8E4M3::from_bits(0x5a); n]).unwrap();
    let mut o5 = s.to_device(&vec![F8E5M2::from_bits(0x5a); n]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&d_in, &mut o4, &mut o5),
    )
    .unwrap();
    let (g4, g5) = (o4.to_vec_async(&s).unwrap(), o5.to_vec_async(&s).unwrap());
    let mut bad = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        let (w4, w5) = (F8E4M3::from_f64(x.exact()), F8E5M2::from_f64(x.exact()));
        if !(g4[i] == w4 || (g4[i].is_nan() && w4.is_nan())) {
            bad.push(format!("{x:?} as F8E4M3: {:?}, want {w4:?}", g4[i]));
        }
        if !(g5[i] == w5 || (g5[i].is_nan() && w5.is_nan())) {
            bad.push(format!("{x:?} as F8E5M2: {:?}, want {w5:?}", g5[i]));
        }
    }
    assert!(
        bad.is_empty(),
        "{name}: {} of {} casts differ:\n{}",
        bad.len(),
        2 * n,
        bad[..bad.len().min(20)].join("\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn floats_cast_to_fp8_rounding_once() {
    to_fp8::<f32>();
    to_fp8::<f64>();
    to_fp8::<f16>();
    to_fp8::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn integers_cast_to_fp8() {
    to_fp8::<i8>();
    to_fp8::<u16>();
    to_fp8::<i32>();
    to_fp8::<u64>();
}

/// `<`, `==` and `>=` of every pair of e4m3 codes and of e5m2 codes, as their values compare
/// (NaN unordered, -0 == +0).
#[test]
#[ignore = "needs a CUDA GPU"]
fn comparisons_compare_values() {
    fn pairs<F: Fp8>() {
        let c = ctx();
        if !has_fp8(&c) {
            println!("skipped: fp8 comparisons need sm_89");
            return;
        }
        let s = c.new_stream().unwrap();
        let name = format!("cmp_{}", F::TY.name());
        let k = Kernel::<(&mut [u8],)>::build(&name, |k, (out,)| {
            let i = k.grid1();
            k.if_(i.lt(65536u64), |_| {
                let a = (i >> 8u64).cast::<u8>();
                let b = (i & 255u64).cast::<u8>();
                let (x, y) = (a.bitcast::<F>(), b.bitcast::<F>());
                let bits = x.lt(y).cast::<u8>()
                    | (x.eq(y).cast::<u8>() << 1u8)
                    | (x.ge(y).cast::<u8>() << 2u8);
                out.set(i, bits);
            });
        })
        .unwrap();
        let mut out = s.to_device(&vec![0xffu8; 65536]).unwrap();
        k.launch(&s, LaunchConfig::new(256, 256), (&mut out,))
            .unwrap();
        let got = out.to_vec_async(&s).unwrap();
        let mut bad = Vec::new();
        for (i, &g) in got.iter().enumerate() {
            let (x, y) = (F::code((i >> 8) as u8).value(), F::code(i as u8).value());
            let want = (x < y) as u8 | ((x == y) as u8) << 1 | ((x >= y) as u8) << 2;
            if g != want {
                bad.push(format!("{x} vs {y}: {g:#05b}, want {want:#05b}"));
            }
        }
        assert!(
            bad.is_empty(),
            "{name}: {} of 65536 differ:\n{}",
            bad.len(),
            bad[..bad.len().min(10)].join("\n")
        );
    }
    pairs::<F8E4M3>();
    pairs::<F8E5M2>();
}

type Quant = (
    &'static [f32],
    &'static mut [F8E4M3],
    &'static mut [f32],
    f32,
);

/// The quantisation kernel of docs/GUIDE.md ("8-bit floats (fp8)"; its lines are checked to
/// stand here by tests/codegen/fp8.rs).
fn quant() -> cudajit::Result<Kernel<Quant>> {
    // Quantise f32 to e4m3 with a scale, and back (dequantised) for a check.
    let k = Kernel::<Quant>::build("quant", |k, (x, q, back, s)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let v = (x.at(i) * s).cast::<F8E4M3>(); // rounded once, saturating at ±448
            q.set(i, v);
            back.set(i, v.cast::<f32>() / s);
        });
    })?;
    Ok(k)
}

/// The guide's kernel on special values: every output against `F8E4M3::from_f32(x * s)`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn guide_quantisation_kernel() {
    let c = ctx();
    if !has_fp8(&c) {
        println!("skipped: fp8 casts need sm_89");
        return;
    }
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 10_000;
    let x = crate::common::special_f32(&mut rng, n);
    let scale = 0.75f32;
    let dx = s.to_device(&x).unwrap();
    let mut q = s.to_device(&vec![F8E4M3::from_bits(0x5a); n]).unwrap();
    let mut back = s.to_device(&vec![f32::from_bits(0x7fa5_a5a5); n]).unwrap();
    quant()
        .unwrap()
        .launch(
            &s,
            LaunchConfig::for_num_elems(n, 256).unwrap(),
            (&dx, &mut q, &mut back, scale),
        )
        .unwrap();
    let (gq, gb) = (q.to_vec_async(&s).unwrap(), back.to_vec_async(&s).unwrap());
    for i in 0..n {
        let want = F8E4M3::from_f32(x[i] * scale);
        let wb = want.to_f32() / scale;
        assert!(
            (gq[i] == want || (gq[i].is_nan() && want.is_nan()))
                && (gb[i].to_bits() == wb.to_bits() || (gb[i].is_nan() && wb.is_nan())),
            "x = {}: {:?} and {}, want {want:?} and {wb}",
            x[i],
            gq[i],
            gb[i]
        );
    }
}
