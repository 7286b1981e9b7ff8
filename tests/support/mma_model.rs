//! The host model of the tensor cores' warp MMA (`mma.sync`, `D = A·B + C`) for every input
//! type (f16, bf16, f32 as tf32, i8, u8, the 8-bit floats), and the check of a whole product against it: the
//! reference of tests/gpu's `mma.rs` (one warp per tile, every input type) and `async_copy.rs`
//! (tiles staged by `cp.async`, fragments loaded by `ldmatrix`).
//!
//! - Float inputs: per MMA, `C + Σ_k A·B` with exact products summed in f64 in order of k,
//!   rounded once to f32 (tf32 inputs first rounded as `cvt.rna.tf32.f32` does). The simulator
//!   computes exactly this; the GPU's tensor cores each instruction to within `2^-20` of the
//!   sum of the magnitudes of its terms, the incoming accumulator included (their internal
//!   accumulation order and precision are not specified; over a long K the bound adds up:
//!   wgmma over 14 instructions was seen 13 units off at 8.5e6), NaN as NaN.
//! - 8-bit float inputs: the same model; the GPU within `2^-9` of the magnitudes (see
//!   `fp8_model!`).
//! - 8-bit integer inputs: exact, wrapping in i32, on both.

use std::fmt::Debug;

use cudajit::codegen::{MmaInput, Num};
use cudajit::{bf16, f16};

use super::gen::Gen;
use super::rng::Rng;

/// An MMA input type's host side.
pub trait MmaModel: MmaInput<Acc: AccModel> + Debug {
    /// The value the tensor cores multiply (tf32: rounded).
    fn value(self) -> f64;
    /// A small value, exact in the type.
    fn small(r: &mut Rng) -> Self;
    /// The GPU's error per instruction, relative to the sum of the magnitudes of its terms.
    fn rel_err() -> f64 {
        2f64.powi(-20)
    }
}

/// An MMA accumulator type's host side (f32, i32).
pub trait AccModel: Num + Copy + Debug {
    fn to_f64(self) -> f64;
    /// The model's result of one MMA from C and its products (in order of k).
    fn model(c: Self, products: &[f64]) -> Self;
    /// A small value, exact in the type (for C).
    fn small(r: &mut Rng) -> Self;
    /// A value for outputs before the kernel writes them.
    fn poison() -> Self;
    /// Whether `got` is the model's `want`: bit for bit if `exact`, else within `allowed` (the
    /// GPU's documented error: the input type's relative error times the sum of the
    /// magnitudes of the terms).
    fn close(got: Self, want: Self, allowed: f64, exact: bool) -> bool;
}

impl AccModel for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn model(c: f32, products: &[f64]) -> f32 {
        products.iter().fold(c as f64, |acc, p| acc + p) as f32
    }
    fn small(r: &mut Rng) -> f32 {
        ((r.next_u64() % 201) as f32 - 100.0) / 8.0
    }
    fn poison() -> f32 {
        f32::from_bits(0x7fa5_a5a5)
    }
    fn close(got: f32, want: f32, allowed: f64, exact: bool) -> bool {
        if want.is_nan() {
            return got.is_nan();
        }
        if exact {
            return got.to_bits() == want.to_bits();
        }
        if want.is_infinite() {
            return got == want;
        }
        (got as f64 - want as f64).abs() <= allowed + 2f64.powi(-126)
    }
}

impl AccModel for i32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn model(c: i32, products: &[f64]) -> i32 {
        products
            .iter()
            .fold(c, |acc, &p| acc.wrapping_add(p as i32))
    }
    fn small(r: &mut Rng) -> i32 {
        match r.next_u64() % 8 {
            0 => [i32::MIN, i32::MAX, -1, 0][(r.next_u64() % 4) as usize],
            _ => (r.next_u64() % 2001) as i32 - 1000,
        }
    }
    fn poison() -> i32 {
        0x5a5a_5a5a
    }
    fn close(got: i32, want: i32, _: f64, _: bool) -> bool {
        got == want
    }
}

/// `x` rounded to tf32 as `cvt.rna.tf32.f32` does (to nearest, ties away; 10 mantissa bits).
pub fn tf32(x: f32) -> f32 {
    if x.is_nan() || x.is_infinite() {
        return x;
    }
    f32::from_bits(x.to_bits().wrapping_add(0x1000) & 0xffff_e000)
}

impl MmaModel for f16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn small(r: &mut Rng) -> f16 {
        f16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
}
impl MmaModel for bf16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn small(r: &mut Rng) -> bf16 {
        bf16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
}
impl MmaModel for f32 {
    fn value(self) -> f64 {
        tf32(self) as f64
    }
    fn small(r: &mut Rng) -> f32 {
        // Random f32 values with more mantissa bits than tf32 keeps: the rounding is tested.
        (r.next_u64() >> 40) as f32 / (1u64 << 20) as f32 - 8.0
    }
}
impl MmaModel for i8 {
    fn value(self) -> f64 {
        self as f64
    }
    fn small(r: &mut Rng) -> i8 {
        r.next_u64() as i8
    }
}
impl MmaModel for u8 {
    fn value(self) -> f64 {
        self as f64
    }
    fn small(r: &mut Rng) -> u8 {
        r.next_u64() as u8
    }
}

/// The 8-bit floats: the tensor cores accumulate their products with fewer bits than f32's
/// (about 13-14 significant bits on Hopper, DeepSeek-V3's report; on an H100, driver 580.159,
/// a 64×8 wgmma tile was 0.46 off at -530.7, 2^-10.2 of its terms' magnitudes), so the GPU's
/// bound is `2^-9` of the terms' magnitudes per instruction.
macro_rules! fp8_model {
    ($($t:ty),*) => {$(
        impl MmaModel for $t {
            fn value(self) -> f64 {
                self.to_f32() as f64
            }
            fn small(r: &mut Rng) -> $t {
                <$t>::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
            }
            fn rel_err() -> f64 {
                2f64.powi(-9)
            }
        }
    )*};
}
fp8_model!(cudajit::F8E4M3, cudajit::F8E5M2);

/// An input of a product: mostly small values exact in the type, one in 48 a value of the
/// type's generator of special values (NaN, ±0, ±inf, subnormals, MIN/MAX, ...).
pub fn draw<T: MmaModel + Gen>(r: &mut Rng) -> T {
    if r.next_u64() % 48 == 0 {
        T::gen(r)
    } else {
        T::small(r)
    }
}

/// Checks `got`, the `m × n` result `D = A·B + C` of the kernel `name` (A `m × k`, B `k × n`,
/// C and D `m × n`, all row-major; `k` a multiple of the MMA's K), against the model: one MMA
/// after the other along K, each rounded once; bit for bit on the simulator, within the GPU's
/// error on a GPU. Panics naming the first differing elements.
pub fn check_product<T: MmaModel>(
    name: &str,
    (m, n, k): (usize, usize, usize),
    (a, b, c): (&[T], &[T], &[T::Acc]),
    got: &[T::Acc],
) {
    let exact = cudajit::on_simulator();
    let mut bad = Vec::new();
    // The worst error relative to the terms' magnitudes (printed: what the bound is checked
    // against).
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let products: Vec<f64> = (0..k)
                .map(|x| a[i * k + x].value() * b[x * n + j].value())
                .collect();
            let cij = c[i * n + j];
            // Each instruction's result is within the error of the magnitudes of its own
            // terms: the incoming accumulator and its products (a long K accumulates it).
            let mut magnitude = 0.0;
            let want = products.chunks(T::K as usize).fold(cij, |acc, ps| {
                magnitude += acc.to_f64().abs() + ps.iter().map(|p| p.abs()).sum::<f64>();
                <T::Acc as AccModel>::model(acc, ps)
            });
            let g = got[i * n + j];
            let err = (g.to_f64() - want.to_f64()).abs();
            if err.is_finite() && magnitude > 0.0 {
                worst = worst.max(err / magnitude);
            }
            if !<T::Acc as AccModel>::close(g, want, magnitude * T::rel_err(), exact) {
                bad.push(format!("D[{i}][{j}] = {g:?}, want {want:?} (C {cij:?})"));
            }
        }
    }
    println!(
        "{name}: worst |error| / magnitude {worst:.2e} (bound {:.2e})",
        T::rel_err()
    );
    assert!(
        bad.is_empty(),
        "{name}: {} of {} elements differ, e.g.\n{}",
        bad.len(),
        m * n,
        bad[..bad.len().min(10)].join("\n")
    );
}
