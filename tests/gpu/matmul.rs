//! `ops::Matmul` (issue 24) against a host f64 reference, element by element, with a stated
//! tolerance, on the GPU and the simulator:
//!
//! - every input type: f32 on the SIMT kernel, f32 as tf32, f16 and bf16 on the tensor-core
//!   kernel (and on the SIMT kernel), outputs of the input type or f32;
//! - every layout: A and B row- or column-major, each as given or transposed; C row- or
//!   column-major; leading dimensions padded (the padding is poisoned and must stay so);
//! - sizes around the tiles' edges (1, 15, 17, 63, 65, 127), K = 1, empty dimensions;
//! - strided batches (and a B shared by every batch), alpha and beta, fused epilogues (bias +
//!   ReLU, bias + GELU, a per-row vector), bad input.
//!
//! The tolerance of an element whose exact value is `v = alpha·Σ a·b + beta·c`, with
//! `mag = |alpha|·Σ|a·b| + |beta·c|`: f32 FMA `(K + 2)·2^-24·mag`; f16/bf16 inputs (exact
//! products) on the tensor cores `(K + 2)·2^-22·mag` (their internal accumulation order is not
//! specified; the simulator sums each MMA exactly and rounds once); tf32 adds `2^-10·mag` (two
//! inputs rounded to 11 significant bits); the output's rounding (2^-24, 2^-11 for f16, 2^-8
//! for bf16, relative) and the epilogue's f32 arithmetic (2^-21 relative, GELU's slope ≤ 1.13)
//! on top.

use cudajit::ops::{
    Engine, Epilogue, EpilogueVectors, Matmul, MatmulConfig, MatmulInput, MatmulOutput, Transpose,
};
use cudajit::prelude::*;
use cudajit::{bf16, f16, Error, StridedView, StridedViewMut};
use ndarray::{s, Array3, Axis, Ix3};

use crate::common::{ctx, erf_ref, Rng};

/// An element type of the tests, with its host side.
trait El: MatmulOutput + cudajit::AnyBitPattern + std::fmt::Debug {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The relative rounding unit of the type.
    const UNIT: f64;
    /// A random input: any f32 in [-2, 2) for f32; small values exact in the type otherwise.
    fn input(r: &mut Rng) -> Self;
    fn poison() -> Self;
    /// The largest finite value, where an output saturates (the 8-bit floats).
    const MAX: f64 = f64::INFINITY;
    /// The tensor cores' accumulation error per instruction with these inputs, relative to
    /// the magnitudes of its terms (the 8-bit floats: `2^-9`, see tests/support/mma_model.rs);
    /// 0 where the f32 bound above covers it.
    const MMA_ACC: f64 = 0.0;
    /// Half the type's smallest step (an 8-bit output's subnormals: absolute rounding error).
    const ABS: f64 = 0.0;
}

impl El for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const UNIT: f64 = 1.0 / (1u64 << 24) as f64;
    fn input(r: &mut Rng) -> f32 {
        r.f32() * 2.0
    }
    fn poison() -> f32 {
        -7.777e29
    }
}
impl El for f16 {
    fn from_f64(x: f64) -> f16 {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    const UNIT: f64 = 1.0 / 2048.0;
    fn input(r: &mut Rng) -> f16 {
        f16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
    fn poison() -> f16 {
        f16::from_f32(-7777.0)
    }
}
impl El for bf16 {
    fn from_f64(x: f64) -> bf16 {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    const UNIT: f64 = 1.0 / 256.0;
    fn input(r: &mut Rng) -> bf16 {
        bf16::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
    }
    fn poison() -> bf16 {
        bf16::from_f32(-7.777e29)
    }
}

macro_rules! fp8_el {
    ($($t:ty, $unit:expr, $max:expr, $abs:expr);*) => {$(
        impl El for $t {
            fn from_f64(x: f64) -> Self {
                <$t>::from_f64(x)
            }
            fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            const UNIT: f64 = $unit;
            fn input(r: &mut Rng) -> Self {
                <$t>::from_f32(((r.next_u64() % 65) as f32 - 32.0) / 16.0)
            }
            fn poison() -> Self {
                <$t>::from_f32(-3.0)
            }
            const MAX: f64 = $max;
            const MMA_ACC: f64 = 1.0 / 512.0;
            const ABS: f64 = $abs;
        }
    )*};
}
fp8_el!(
    cudajit::F8E4M3, 1.0 / 16.0, 448.0, 1.0 / 1024.0;
    cudajit::F8E5M2, 1.0 / 8.0, 57344.0, 1.0 / 131072.0
);

/// How a matrix is stored: row- or column-major, with `pad` more elements per row (column).
#[derive(Clone, Copy, Debug)]
struct Lay {
    col_major: bool,
    pad: usize,
}

const ROW: Lay = Lay {
    col_major: false,
    pad: 0,
};
const COL: Lay = Lay {
    col_major: true,
    pad: 0,
};
const ROW_PAD: Lay = Lay {
    col_major: false,
    pad: 3,
};
const COL_PAD: Lay = Lay {
    col_major: true,
    pad: 5,
};

#[derive(Clone, Copy, Debug)]
enum Epi {
    Id,
    BiasRelu,
    BiasGelu,
    /// `0.5·value·row[i] + col[j]`.
    RowCol,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    /// `None`: 2-D operands; `Some(b)`: 3-D, `b` matrices.
    batch: Option<usize>,
    /// With a batch: B is one 2-D matrix for every batch.
    b_shared: bool,
    ta: Transpose,
    tb: Transpose,
    la: Lay,
    lb: Lay,
    lc: Lay,
    alpha: f32,
    beta: f32,
    epi: Epi,
    config: Option<MatmulConfig>,
    tf32: bool,
}

fn case(m: usize, n: usize, k: usize) -> Case {
    Case {
        m,
        n,
        k,
        batch: None,
        b_shared: false,
        ta: Transpose::N,
        tb: Transpose::N,
        la: ROW,
        lb: ROW,
        lc: ROW,
        alpha: 1.0,
        beta: 0.0,
        epi: Epi::Id,
        config: None,
        tf32: false,
    }
}

/// A 16-row SIMT tile and a 4-warp tensor-core tile, small enough for the simulator.
fn simt_small() -> MatmulConfig {
    MatmulConfig::simt(64, 64, 8, 4, 4)
}
fn mma_small<T: MatmulInput>() -> MatmulConfig {
    MatmulConfig::mma(64, 64, 2 * T::K, 32, 32)
}

/// `batch` matrices `rows × cols` (`vals` in (b, r, c) order) stored as `lay` says, in one
/// C-order device array of shape `(batch, lines, line + pad)`, the padding poisoned.
fn upload<T: El>(
    s: &Stream,
    vals: &[T],
    batch: usize,
    rows: usize,
    cols: usize,
    lay: Lay,
) -> DeviceArray<T, Ix3> {
    let (lines, len) = if lay.col_major {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let mut host = Array3::from_elem((batch, lines, len + lay.pad), T::poison());
    for b in 0..batch {
        for r in 0..rows {
            for c in 0..cols {
                let (l, e) = if lay.col_major { (c, r) } else { (r, c) };
                host[[b, l, e]] = vals[(b * rows + r) * cols + c];
            }
        }
    }
    s.to_device(&host).unwrap()
}

/// The logical `(batch, rows, cols)` view of what [`upload`] stored.
fn view<T: El>(
    arr: &DeviceArray<T, Ix3>,
    rows: usize,
    cols: usize,
    lay: Lay,
) -> StridedView<'_, T, Ix3> {
    let len = if lay.col_major { rows } else { cols };
    let v = arr.strided().slice(s![.., .., ..len]).unwrap();
    if lay.col_major {
        v.permuted_axes([0, 2, 1]).unwrap()
    } else {
        v
    }
}

fn view_mut<T: El>(
    arr: &mut DeviceArray<T, Ix3>,
    rows: usize,
    cols: usize,
    lay: Lay,
) -> StridedViewMut<'_, T, Ix3> {
    let len = if lay.col_major { rows } else { cols };
    let v = arr.strided_mut().slice(s![.., .., ..len]).unwrap();
    if lay.col_major {
        v.permuted_axes([0, 2, 1]).unwrap()
    } else {
        v
    }
}

fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + erf_ref(x / std::f64::consts::SQRT_2))
}

fn epilogue(e: Epi) -> Epilogue {
    match e {
        Epi::Id => Epilogue::identity(),
        Epi::BiasRelu => Epilogue::bias_relu(),
        Epi::BiasGelu => Epilogue::bias_gelu(),
        Epi::RowCol => Epilogue::new("rowcol", |e| e.value * 0.5f32 * e.row_vec + e.col_vec)
            .unwrap()
            .with_col_vector()
            .with_row_vector(),
    }
}

/// Runs `c` for inputs `T` and output `O`, checks every element of C and that the padding and
/// the untouched elements keep their values.
fn check<T: MatmulInput + El, O: El>(c: Case) {
    let cx = ctx();
    let s = cx.new_stream().unwrap();
    let mut rng = Rng::new();
    let (m, n, k) = (c.m, c.n, c.k);
    let nb = c.batch.unwrap_or(1);
    let b_count = if c.b_shared { 1 } else { nb };
    // Logical op(A) (nb × m × k) and op(B) (b_count × k × n).
    let a: Vec<T> = rng.vec(nb * m * k, T::input);
    let b: Vec<T> = rng.vec(b_count * k * n, T::input);
    let c0: Vec<O> = if c.beta != 0.0 {
        rng.vec(nb * m * n, |r| O::from_f64(r.f32() as f64 * 4.0))
    } else {
        vec![O::from_f64(f64::NAN); nb * m * n]
    };
    let colv: Vec<O> = rng.vec(n, |r| O::from_f64(r.f32() as f64));
    let rowv: Vec<O> = rng.vec(m, |r| O::from_f64(r.f32() as f64 * 2.0));
    // Stored matrices: op(X) itself, or its transpose.
    let stored =
        |x: &[T], batch: usize, rows: usize, cols: usize, t: Transpose| -> (Vec<T>, usize, usize) {
            match t {
                Transpose::N => (x.to_vec(), rows, cols),
                Transpose::T => {
                    let mut y = x.to_vec();
                    for bi in 0..batch {
                        for r in 0..rows {
                            for cc in 0..cols {
                                y[(bi * cols + cc) * rows + r] = x[(bi * rows + r) * cols + cc];
                            }
                        }
                    }
                    (y, cols, rows)
                }
            }
        };
    let (sa, ra, ca) = stored(&a, nb, m, k, c.ta);
    let (sb, rb, cb) = stored(&b, b_count, k, n, c.tb);
    let da = upload(&s, &sa, nb, ra, ca, c.la);
    let db = upload(&s, &sb, b_count, rb, cb, c.lb);
    let mut dc = upload(&s, &c0, nb, m, n, c.lc);
    let before = dc.to_vec_async(&s).unwrap();
    // With an odd M, the column vector starts one element into its allocation (not aligned
    // to two elements: read one element at a time).
    let shift = if colv.is_empty() { 0 } else { m % 2 };
    let dcol_all = s.to_device(&[&colv[..shift], &colv[..]].concat()).unwrap();
    let dcol = dcol_all.slice(shift..).unwrap();
    let drow = s.to_device(&rowv).unwrap();

    let mut mm = Matmul::<T, O>::new()
        .alpha(c.alpha)
        .beta(c.beta)
        .trans_a(c.ta)
        .trans_b(c.tb)
        .tf32(c.tf32)
        .epilogue(epilogue(c.epi));
    if let Some(cfg) = c.config {
        mm = mm.config(cfg);
    }
    let vecs = || match c.epi {
        Epi::Id => EpilogueVectors::new(),
        Epi::BiasRelu | Epi::BiasGelu => EpilogueVectors::new().col(&dcol),
        Epi::RowCol => EpilogueVectors::new().col(&dcol).row(&drow),
    };
    {
        let av = view(&da, ra, ca, c.la);
        let bv = view(&db, rb, cb, c.lb);
        let cv = view_mut(&mut dc, m, n, c.lc);
        let r = match (c.batch, c.b_shared) {
            (None, _) => mm.run_with(
                &s,
                &av.index_axis(Axis(0), 0).unwrap(),
                &bv.index_axis(Axis(0), 0).unwrap(),
                &mut cv.index_axis(Axis(0), 0).unwrap(),
                vecs(),
            ),
            (Some(_), true) => mm.run_with(
                &s,
                &av,
                &bv.index_axis(Axis(0), 0).unwrap(),
                &mut { cv },
                vecs(),
            ),
            (Some(_), false) => mm.run_with(&s, &av, &bv, &mut { cv }, vecs()),
        };
        r.unwrap_or_else(|e| panic!("{c:?}: {e}"));
    }
    let got = dc.to_vec_async(&s).unwrap();

    // Where each logical C element is in the storage.
    let (lines, len) = if c.lc.col_major { (n, m) } else { (m, n) };
    let at = |bi: usize, i: usize, j: usize| {
        let (l, e) = if c.lc.col_major { (j, i) } else { (i, j) };
        (bi * lines + l) * (len + c.lc.pad) + e
    };
    let mma = c.config.map(|x| x.engine == Engine::Mma).unwrap_or(false);
    let acc_eps = if mma && !c.tf32 {
        (k as f64 + 2.0) * 2f64.powi(-22)
    } else {
        (k as f64 + 2.0) * 2f64.powi(-24) + if c.tf32 { 2f64.powi(-10) } else { 0.0 }
    } + (k as f64 / 32.0 + 2.0) * T::MMA_ACC;
    let mut bad = Vec::new();
    let mut touched = vec![false; got.len()];
    for bi in 0..nb {
        let bb = if c.b_shared { 0 } else { bi };
        for i in 0..m {
            for j in 0..n {
                let (mut sum, mut mag) = (0.0f64, 0.0f64);
                for x in 0..k {
                    let p = a[(bi * m + i) * k + x].to_f64() * b[(bb * k + x) * n + j].to_f64();
                    sum += p;
                    mag += p.abs();
                }
                let old = c0[(bi * m + i) * n + j].to_f64();
                let cterm = if c.beta != 0.0 {
                    c.beta as f64 * old
                } else {
                    0.0
                };
                let v = c.alpha as f64 * sum + cterm;
                let mag = (c.alpha as f64).abs() * mag + cterm.abs();
                let (cv, rv) = (colv[j].to_f64(), rowv[i].to_f64());
                let (want, slope, extra) = match c.epi {
                    Epi::Id => (v, 1.0, 0.0),
                    Epi::BiasRelu => ((v + cv).max(0.0), 1.0, cv.abs()),
                    Epi::BiasGelu => (gelu_ref(v + cv), 1.13, (v + cv).abs() + cv.abs()),
                    Epi::RowCol => (0.5 * v * rv + cv, 0.5 * rv.abs(), (v * rv).abs() + cv.abs()),
                };
                // An 8-bit output saturates at its largest finite value.
                let want = want.clamp(-O::MAX, O::MAX);
                let tol = slope * acc_eps * mag
                    + (extra + v.abs()) * 2f64.powi(-21)
                    + want.abs() * O::UNIT
                    + O::ABS
                    + 1e-30;
                let idx = at(bi, i, j);
                touched[idx] = true;
                let g = got[idx].to_f64();
                // NaN fails too.
                let close = (g - want).abs() <= tol;
                if !close {
                    bad.push(format!(
                        "C[{bi}][{i}][{j}] = {g}, want {want} (± {tol:.3e})"
                    ));
                }
            }
        }
    }
    for (idx, (g, b0)) in got.iter().zip(&before).enumerate() {
        if !touched[idx] && g.to_f64().to_bits() != b0.to_f64().to_bits() {
            bad.push(format!(
                "storage element {idx} outside C was written: {g:?}"
            ));
            break;
        }
    }
    assert!(
        bad.is_empty(),
        "{c:?} ({} -> {}): {} of {} wrong, e.g.\n{}",
        std::any::type_name::<T>(),
        std::any::type_name::<O>(),
        bad.len(),
        nb * m * n,
        bad[..bad.len().min(8)].join("\n")
    );
}

const OPS: [Transpose; 2] = [Transpose::N, Transpose::T];

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_every_layout_and_transpose() {
    for ta in OPS {
        for tb in OPS {
            for la in [ROW, COL_PAD] {
                for lb in [COL, ROW_PAD] {
                    let lc = if la.col_major { COL } else { ROW_PAD };
                    check::<f32, f32>(Case {
                        ta,
                        tb,
                        la,
                        lb,
                        lc,
                        ..case(37, 29, 23)
                    });
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_sizes_around_the_tile_edges() {
    for (m, n, k) in [
        (1, 1, 1),
        (15, 17, 1),
        (17, 15, 63),
        (63, 65, 17),
        (65, 63, 9),
        (127, 3, 65),
        (2, 127, 15),
    ] {
        check::<f32, f32>(Case {
            config: Some(simt_small()),
            ..case(m, n, k)
        });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_vector_loads_large_tiles_and_one_stage() {
    // Aligned rows (K and N multiples of 4): 16-byte vector loads of A and B.
    check::<f32, f32>(case(64, 48, 32));
    check::<f32, f32>(Case {
        ta: Transpose::T,
        tb: Transpose::T,
        ..case(32, 64, 40)
    });
    for cfg in [
        MatmulConfig::simt(128, 128, 8, 8, 8),
        MatmulConfig::simt(128, 128, 8, 8, 8).with_stages(1),
        simt_small().with_stages(1),
        MatmulConfig::simt(32, 64, 16, 2, 8),
        // Register tiles of 8×16 and 16×8: four and two runs of 4 per thread.
        MatmulConfig::simt(128, 256, 8, 8, 16),
        MatmulConfig::simt(256, 128, 8, 16, 8),
    ] {
        check::<f32, f32>(Case {
            config: Some(cfg),
            ..case(96, 80, 44)
        });
        check::<f32, f32>(Case {
            config: Some(cfg),
            la: COL_PAD,
            ..case(33, 70, 21)
        });
        // K a whole number of tiles: blocks wholly inside fetch without bounds, beside
        // edge blocks that keep them.
        let (bm, bn) = (cfg.block_m as usize, cfg.block_n as usize);
        check::<f32, f32>(Case {
            config: Some(cfg),
            ..case(bm + bm / 2, bn + 3, 32)
        });
    }
}

/// The SIMT kernel's cp.async pipeline (f32, 3 and 4 stages): every layout at unaligned sizes
/// (4-byte copies, zero-filled at the edges), aligned ones (16-byte copies along M or N), whole
/// tiles (the unbounded copies), K shorter than the pipeline, a batch, beta and an epilogue.
#[test]
#[ignore = "needs a CUDA GPU"]
fn f32_cp_async_simt_pipeline() {
    for cfg in [
        simt_small().with_stages(3),
        MatmulConfig::simt(128, 128, 8, 8, 8).with_stages(4),
        MatmulConfig::simt(256, 128, 8, 16, 8).with_stages(3),
    ] {
        every_layout::<f32>(cfg, false, case(37, 29, 23));
        every_layout::<f32>(cfg, false, case(96, 80, 44));
        every_layout::<f32>(cfg, false, case(cfg.block_m as usize, 128, 64));
        check::<f32, f32>(Case {
            config: Some(cfg),
            ..case(70, 36, 8)
        });
        check::<f32, f32>(Case {
            config: Some(cfg),
            batch: Some(3),
            beta: 0.5,
            alpha: -1.5,
            lc: COL_PAD,
            epi: Epi::BiasGelu,
            ..case(65, 67, 40)
        });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tf32_on_the_tensor_cores() {
    for (ta, tb) in [(Transpose::N, Transpose::N), (Transpose::T, Transpose::T)] {
        for (m, n, k) in [(1, 1, 1), (17, 15, 9), (65, 63, 33)] {
            check::<f32, f32>(Case {
                ta,
                tb,
                tf32: true,
                config: Some(mma_small::<f32>()),
                ..case(m, n, k)
            });
        }
    }
    check::<f32, f32>(Case {
        la: COL_PAD,
        lb: ROW_PAD,
        lc: COL,
        tf32: true,
        config: Some(MatmulConfig::mma(32, 64, 8, 16, 32).with_stages(1)),
        ..case(40, 72, 24)
    });
}

fn halves_on_the_tensor_cores<T: MatmulInput + El>() {
    for (ta, tb) in [
        (Transpose::N, Transpose::N),
        (Transpose::N, Transpose::T),
        (Transpose::T, Transpose::N),
    ] {
        for (m, n, k) in [(1, 1, 1), (15, 17, 16), (65, 63, 40)] {
            check::<T, T>(Case {
                ta,
                tb,
                config: Some(mma_small::<T>()),
                ..case(m, n, k)
            });
        }
    }
    check::<T, f32>(Case {
        la: COL_PAD,
        lb: COL,
        lc: ROW_PAD,
        config: Some(mma_small::<T>()),
        ..case(63, 33, 47)
    });
    check::<T, f32>(Case {
        config: Some(MatmulConfig::mma(64, 32, 16, 16, 32).with_stages(1)),
        ..case(70, 40, 64)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_on_the_tensor_cores() {
    halves_on_the_tensor_cores::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_on_the_tensor_cores() {
    halves_on_the_tensor_cores::<bf16>();
}

/// The 8-bit floats on the `mma.sync` engine (sm_89's; element-loaded fragments), its
/// `cp.async` pipeline, and the SIMT kernel: every layout, edges, a bf16 output.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_on_the_mma_and_simt_engines() {
    let cx = ctx();
    if !cudajit::on_simulator() && cx.device().compute_capability().unwrap() < (8, 9) {
        println!("skipped: the 8-bit floats' tensor-core MMA needs sm_89");
        return;
    }
    type E = cudajit::F8E4M3;
    for (ta, tb) in LAYOUTS {
        check::<E, f32>(Case {
            ta,
            tb,
            config: Some(mma_small::<E>()),
            ..case(70, 40, 96)
        });
    }
    check::<E, bf16>(Case {
        config: Some(mma_small::<E>().with_stages(3)),
        ..case(128, 64, 128)
    });
    check::<cudajit::F8E5M2, f32>(Case {
        tb: Transpose::T,
        config: Some(simt_small()),
        ..case(65, 33, 40)
    });
}

/// The `cp.async` pipeline (3 and 4 stages) of the tensor-core kernel: every operand layout
/// (A `[m][k]` and `[k][m]` in shared memory, B `[k][n]` and `[n][k]`), whole tiles, edges of
/// M, N and K (lines padded to whole 16-byte chunks, so the pipeline applies), blocks wholly
/// inside the matrix with a partial last k-tile and the shared-memory epilogue to C of either
/// layout, fewer k-tiles than the prologue issues, a batch, and an unaligned layout (the
/// 2-stage fallback).
fn pipeline_cases<T: MatmulInput + El>() {
    let tf32 = std::mem::size_of::<T>() == 4;
    let lay = |col_major: bool, pad: usize| Lay { col_major, pad };
    for stages in [3, 4] {
        let cfg = MatmulConfig::mma(64, 64, 2 * T::K, 32, 32).with_stages(stages);
        for (ta, tb) in [
            (Transpose::N, Transpose::N),
            (Transpose::N, Transpose::T),
            (Transpose::T, Transpose::N),
            (Transpose::T, Transpose::T),
        ] {
            check::<T, T>(Case {
                ta,
                tb,
                config: Some(cfg),
                tf32,
                ..case(128, 64, 96)
            });
        }
        // Edges: A stored 65 × 47 (lines of 48), B 47 × 63 (lines of 64).
        check::<T, f32>(Case {
            la: lay(false, 1),
            lb: lay(false, 1),
            config: Some(cfg),
            tf32,
            ..case(65, 63, 47)
        });
        // Column-major: A's lines of 65 rows (72), B's lines of 47 (48).
        check::<T, f32>(Case {
            la: lay(true, 7),
            lb: lay(true, 1),
            config: Some(cfg),
            tf32,
            ..case(65, 63, 47)
        });
    }
    // Blocks wholly inside the matrix (their own loop, then the partial last k-tile: K is
    // 2.5 tiles) through the shared-memory epilogue: C row-major with a fused epilogue, and C
    // column-major with beta and a fused epilogue.
    let cfg = MatmulConfig::mma(64, 64, 2 * T::K, 32, 32).with_stages(3);
    check::<T, T>(Case {
        epi: Epi::BiasRelu,
        config: Some(cfg),
        tf32,
        ..case(128, 128, 5 * T::K as usize)
    });
    check::<T, f32>(Case {
        lc: COL,
        beta: 0.5,
        epi: Epi::BiasGelu,
        config: Some(cfg),
        tf32,
        ..case(128, 64, 5 * T::K as usize)
    });
    let cfg = MatmulConfig::mma(64, 64, 2 * T::K, 32, 32).with_stages(4);
    // One k-tile (the prologue's other tiles are past K), a batch (strides 136 and 128).
    check::<T, T>(Case {
        batch: Some(2),
        lb: lay(false, 1),
        config: Some(cfg),
        tf32,
        ..case(17, 15, 8)
    });
    // Unaligned lines (3 elements of padding): the register-staged fallback, also of a deep
    // pipeline whose fallback is one stage of half its depth.
    for cfg in [
        cfg,
        MatmulConfig::mma(128, 256, 4 * T::K, 64, 64).with_stages(4),
    ] {
        check::<T, T>(Case {
            la: ROW_PAD,
            lb: COL_PAD,
            config: Some(cfg),
            tf32,
            ..case(40, 24, 33)
        });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_cp_async_pipeline() {
    pipeline_cases::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_cp_async_pipeline() {
    pipeline_cases::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tf32_cp_async_pipeline() {
    pipeline_cases::<f32>();
}

/// Every combination of operand transposes.
const LAYOUTS: [(Transpose, Transpose); 4] = [
    (Transpose::N, Transpose::N),
    (Transpose::N, Transpose::T),
    (Transpose::T, Transpose::N),
    (Transpose::T, Transpose::T),
];

/// The Hopper engine (TMA + wgmma, sm_90): every layout, edges (K not a whole tile, M and N
/// not whole tiles), a batch sharing one B, C column-major with beta and a fused epilogue,
/// the larger tiles, and operands TMA cannot read as given (unaligned lines, and for tf32 an
/// operand that is not K-major): copied first into aligned, K-major scratch memory.
fn wgmma_cases<T: MatmulInput + El>() {
    let cx = ctx();
    if !crate::common::sm90(&cx) {
        println!("skipped: the wgmma engine needs an sm_90 GPU");
        return;
    }
    let tf32 = std::mem::size_of::<T>() == 4;
    // tf32 and the 8-bit floats are read K-major only.
    let k_major = std::mem::size_of::<T>() != 2;
    let line = (128 / std::mem::size_of::<T>()) as u32;
    let small = MatmulConfig::wgmma(64, 64, line, 2);
    // tf32 reads both operands K-major: a row-major B or a column-major A is staged.
    for (ta, tb) in LAYOUTS {
        check::<T, T>(Case {
            ta,
            tb,
            config: Some(small),
            tf32,
            ..case(128, 128, 3 * line as usize)
        });
        check::<T, f32>(Case {
            ta,
            tb,
            config: Some(small),
            tf32,
            ..case(72, 136, 200)
        });
    }
    let tb = if k_major { Transpose::T } else { Transpose::N };
    check::<T, f32>(Case {
        tb,
        lc: COL,
        beta: 0.5,
        epi: Epi::BiasGelu,
        config: Some(MatmulConfig::wgmma(128, 128, line, 3)),
        tf32,
        ..case(200, 136, 96)
    });
    check::<T, T>(Case {
        tb,
        batch: Some(3),
        b_shared: true,
        config: Some(small),
        tf32,
        ..case(64, 72, 40)
    });
    check::<T, f32>(Case {
        tb,
        epi: Epi::RowCol,
        config: Some(MatmulConfig::wgmma(128, 256, line, 3)),
        tf32,
        ..case(256, 264, 2 * line as usize)
    });
    check::<T, T>(Case {
        la: ROW_PAD,
        lb: COL_PAD,
        config: Some(small),
        tf32,
        ..case(40, 24, 33)
    });
    // C row-major with whole 4-element vectors, beta 0: the register epilogue (16-bit C,
    // and f32 C for tf32 on this engine; row and column vectors, edges of M and N, a batch).
    check::<T, T>(Case {
        tb,
        epi: Epi::RowCol,
        config: Some(MatmulConfig::wgmma(128, 256, line, 3)),
        tf32,
        ..case(200, 260, 2 * line as usize)
    });
    check::<T, T>(Case {
        tb,
        batch: Some(2),
        epi: Epi::BiasGelu,
        config: Some(small),
        tf32,
        ..case(72, 100, 40)
    });
    // N odd, with an even and an odd leading dimension of C.
    for lc in [ROW_PAD, ROW] {
        check::<T, T>(Case {
            tb,
            lc,
            epi: Epi::BiasGelu,
            config: Some(small),
            tf32,
            ..case(72, 137, 64)
        });
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_wgmma_engine() {
    wgmma_cases::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_wgmma_engine() {
    wgmma_cases::<bf16>();
}

/// The 8-bit floats on the wgmma engine (K-major operands; others staged), f32, bf16 and
/// 8-bit outputs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_wgmma_engine() {
    wgmma_cases::<cudajit::F8E4M3>();
    wgmma_cases::<cudajit::F8E5M2>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_wgmma_ws_engine() {
    wgmma_ws_cases::<cudajit::F8E4M3>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tf32_wgmma_engine() {
    wgmma_cases::<f32>();
}

/// `base` with f32 C under configuration `cfg` in each layout of A and B (tf32 as given).
fn every_layout<T: MatmulInput + El>(cfg: MatmulConfig, tf32: bool, base: Case) {
    for (ta, tb) in LAYOUTS {
        check::<T, f32>(Case {
            ta,
            tb,
            config: Some(cfg),
            tf32,
            ..base
        });
    }
}

/// The warp-specialised, persistent Hopper engine: every layout with K not a whole tile,
/// more tiles than the blocks (each block's two consumers take turns over several tiles, the
/// ring's phases running on across tiles), C column-major with beta and GELU on 128×128
/// tiles, a batch sharing one B, and a row/column epilogue on 64×128 tiles.
fn wgmma_ws_cases<T: MatmulInput + El>() {
    let cx = ctx();
    if !crate::common::sm90(&cx) {
        println!("skipped: the wgmma engine needs an sm_90 GPU");
        return;
    }
    let tf32 = std::mem::size_of::<T>() == 4;
    let k_major = std::mem::size_of::<T>() != 2;
    let line = (128 / std::mem::size_of::<T>()) as u32;
    let small = MatmulConfig::wgmma_ws(64, 64, line, 2);
    every_layout::<T>(small, tf32, case(200, 136, 3 * line as usize + 5));
    let tb = if k_major { Transpose::T } else { Transpose::N };
    check::<T, f32>(Case {
        tb,
        lc: COL,
        beta: 0.5,
        epi: Epi::BiasGelu,
        config: Some(MatmulConfig::wgmma_ws(128, 128, line, 4)),
        tf32,
        ..case(300, 260, 96)
    });
    check::<T, T>(Case {
        tb,
        batch: Some(3),
        b_shared: true,
        config: Some(small),
        tf32,
        ..case(130, 72, 40)
    });
    // 180 tiles: more than an H100's 132 blocks.
    check::<T, f32>(Case {
        tb,
        epi: Epi::RowCol,
        config: Some(small),
        tf32,
        ..case(1100, 600, 40)
    });
    check::<T, T>(Case {
        tb,
        epi: Epi::RowCol,
        config: Some(MatmulConfig::wgmma_ws(128, 128, line, 4)),
        tf32,
        ..case(300, 388, 96)
    });
    for (bm, bn) in [(64, 128), (64, 256)] {
        check::<T, f32>(Case {
            tb,
            epi: Epi::BiasRelu,
            config: Some(MatmulConfig::wgmma_ws(bm, bn, line, 3)),
            tf32,
            ..case(256, 520, 2 * line as usize)
        });
    }
    // Clusters of two blocks along M sharing B by TMA multicast: every layout (B's halves
    // are rows of N or boxes of 64 columns), an odd number of tile rows (the last unit's
    // second tile lies below C), a batch, and more units than clusters.
    let pair = MatmulConfig::wgmma_ws(128, 128, line, 3).with_cluster_m(2);
    every_layout::<T>(pair, tf32, case(300, 260, 3 * line as usize + 5));
    check::<T, T>(Case {
        tb,
        batch: Some(2),
        epi: Epi::BiasGelu,
        config: Some(pair),
        tf32,
        ..case(130, 256, 40)
    });
    check::<T, f32>(Case {
        tb,
        config: Some(pair.with_stages(4)),
        tf32,
        ..case(2200, 1100, 24)
    });
    // The cooperative schedule: both consumers on each 128×256 tile, 64 rows each; every
    // layout, edges, a fused epilogue, more tiles than blocks.
    let coop = MatmulConfig::wgmma_ws_cooperative(128, 256, line, 3);
    every_layout::<T>(coop, tf32, case(300, 520, 3 * line as usize + 5));
    // Four stages of 128×256 or 256×128 tiles (192 KiB): the epilogue stages 64 columns at a
    // time beside them; 256×128 gives each consumer two wgmmas of 64 rows.
    let tall = MatmulConfig::wgmma_ws_cooperative(256, 128, line, 4);
    every_layout::<T>(tall, tf32, case(300, 260, 3 * line as usize + 5));
    // A fused epilogue on one k-tile, for both shapes; for 256×128 also a batch with row and
    // column vectors, and more tiles than an H100 or H200 has multiprocessors.
    for cfg in [coop, tall] {
        check::<T, T>(Case {
            tb,
            epi: Epi::BiasGelu,
            config: Some(cfg),
            tf32,
            ..case(1500, 1100, 24)
        });
    }
    check::<T, f32>(Case {
        tb,
        batch: Some(2),
        epi: Epi::RowCol,
        config: Some(tall),
        tf32,
        ..case(520, 300, 7 * line as usize + 3)
    });
    check::<T, T>(Case {
        tb,
        config: Some(tall),
        tf32,
        ..case(2200, 2100, line as usize)
    });
    check::<T, T>(Case {
        tb,
        epi: Epi::BiasGelu,
        config: Some(MatmulConfig::wgmma_ws_cooperative(128, 256, line, 4)),
        tf32,
        ..case(300, 520, 2 * line as usize)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_wgmma_ws_engine() {
    wgmma_ws_cases::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bf16_wgmma_ws_engine() {
    wgmma_ws_cases::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tf32_wgmma_ws_engine() {
    wgmma_ws_cases::<f32>();
}

/// Split-K: the slices' partial products summed by the reduction, with alpha and beta·C, a
/// fused epilogue, C row- and column-major, on the Hopper and the mma.sync engines; a K that
/// does not split evenly (or a batch) runs unsplit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_k() {
    let cx = ctx();
    let hopper = crate::common::sm90(&cx);
    let mut cfgs = vec![MatmulConfig::mma(64, 64, 32, 32, 32).with_stages(3)];
    if hopper {
        cfgs.push(MatmulConfig::wgmma(64, 64, 64, 2));
    }
    for cfg in cfgs {
        for s in [2, 4] {
            let config = Some(cfg.with_split_k(s));
            check::<bf16, bf16>(Case {
                config,
                epi: Epi::BiasGelu,
                ..case(72, 100, 512)
            });
            check::<f16, f32>(Case {
                config,
                lc: COL,
                alpha: 0.5,
                beta: 0.5,
                epi: Epi::RowCol,
                ..case(130, 64, 256)
            });
        }
        // K = 200 is not 4 slices of whole 16-byte chunks; a batch is not split.
        check::<bf16, bf16>(Case {
            config: Some(cfg.with_split_k(4)),
            ..case(64, 64, 200)
        });
        check::<bf16, bf16>(Case {
            config: Some(cfg.with_split_k(2)),
            batch: Some(2),
            ..case(64, 64, 256)
        });
    }
}

/// Rows of C of more than 16 tiles (the grouped block order) and more rows of tiles than one
/// group (8): a whole group, then one of 2 or 3 rows, on both kernels.
#[test]
#[ignore = "needs a CUDA GPU"]
fn many_tiles_in_grouped_order() {
    check::<f16, f32>(Case {
        config: Some(mma_small::<f16>()),
        ..case(600, 1100, 24)
    });
    check::<f32, f32>(Case {
        config: Some(simt_small()),
        ..case(650, 1090, 9)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn halves_on_the_simt_kernel() {
    check::<f16, f16>(Case {
        config: Some(simt_small()),
        tb: Transpose::T,
        ..case(33, 65, 20)
    });
    check::<bf16, f32>(Case {
        config: Some(simt_small()),
        la: COL,
        ..case(65, 17, 33)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_batches() {
    // Padded rows: the batch stride is not rows × cols.
    check::<f32, f32>(Case {
        batch: Some(3),
        la: ROW_PAD,
        lb: COL_PAD,
        lc: COL_PAD,
        ..case(19, 23, 17)
    });
    check::<f32, f32>(Case {
        batch: Some(2),
        b_shared: true,
        tb: Transpose::T,
        ..case(33, 17, 12)
    });
    check::<f16, f16>(Case {
        batch: Some(3),
        b_shared: true,
        config: Some(mma_small::<f16>()),
        ..case(20, 24, 32)
    });
    check::<bf16, f32>(Case {
        batch: Some(2),
        ta: Transpose::T,
        config: Some(mma_small::<bf16>()),
        ..case(17, 9, 33)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn alpha_and_beta() {
    check::<f32, f32>(Case {
        alpha: -1.5,
        beta: 0.5,
        ..case(30, 40, 20)
    });
    check::<f16, f32>(Case {
        alpha: 0.25,
        beta: -2.0,
        lc: COL_PAD,
        config: Some(mma_small::<f16>()),
        ..case(31, 17, 16)
    });
    // K = 1, beta 1.
    check::<f32, f32>(Case {
        beta: 1.0,
        ..case(17, 15, 1)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_epilogues() {
    check::<f32, f32>(Case {
        epi: Epi::BiasRelu,
        ..case(33, 40, 21)
    });
    check::<f32, f32>(Case {
        epi: Epi::BiasGelu,
        beta: 0.5,
        ..case(20, 65, 18)
    });
    check::<f16, f16>(Case {
        epi: Epi::BiasGelu,
        config: Some(mma_small::<f16>()),
        ..case(40, 24, 48)
    });
    check::<bf16, bf16>(Case {
        epi: Epi::BiasRelu,
        config: Some(mma_small::<bf16>()),
        ..case(17, 33, 16)
    });
    check::<f32, f32>(Case {
        epi: Epi::RowCol,
        lc: COL_PAD,
        batch: Some(2),
        ..case(18, 21, 7)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_dimensions() {
    // K = 0: C = epilogue(beta·C); with beta 0 the epilogue of 0.
    check::<f32, f32>(Case {
        beta: 2.0,
        ..case(9, 7, 0)
    });
    check::<f32, f32>(Case {
        epi: Epi::BiasRelu,
        ..case(9, 7, 0)
    });
    check::<f16, f16>(Case {
        beta: -1.0,
        config: Some(mma_small::<f16>()),
        ..case(5, 11, 0)
    });
    // M or N = 0: nothing to do (and nothing written).
    check::<f32, f32>(case(0, 7, 5));
    check::<f32, f32>(case(7, 0, 5));
    check::<f32, f32>(Case {
        batch: Some(0),
        ..case(3, 4, 5)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn call_and_the_free_function() {
    let cx = ctx();
    let s = cx.new_stream().unwrap();
    let a = s
        .to_device(&ndarray::Array2::from_shape_fn((5, 3), |(i, j)| {
            (i * 3 + j) as f32
        }))
        .unwrap();
    let b = s
        .to_device(&ndarray::Array2::from_shape_fn((3, 4), |(i, j)| {
            i as f32 - j as f32
        }))
        .unwrap();
    let want = |i: usize, j: usize| {
        (0..3)
            .map(|x| ((i * 3 + x) as f32) * (x as f32 - j as f32))
            .sum::<f32>()
    };
    let c = Matmul::<f32>::new().call(&s, &a, &b).unwrap();
    assert_eq!(c.shape(), &[5, 4]);
    let host = c.to_vec_async(&s).unwrap();
    let mut c2 = cx.zeros::<f32, _>((5, 4)).unwrap();
    cudajit::ops::matmul(&s, &a, &b, &mut c2).unwrap();
    let host2 = c2.to_vec_async(&s).unwrap();
    // Aᵀ·A through a transposed view.
    let mut g = cx.zeros::<f32, _>((3, 3)).unwrap();
    cudajit::ops::matmul(&s, &a.t(), &a, &mut g).unwrap();
    let gram = g.to_vec_async(&s).unwrap();
    for i in 0..5 {
        for j in 0..4 {
            assert_eq!(host[i * 4 + j], want(i, j));
            assert_eq!(host2[i * 4 + j], want(i, j));
        }
    }
    for i in 0..3 {
        for j in 0..3 {
            let w: f32 = (0..5).map(|r| ((r * 3 + i) * (r * 3 + j)) as f32).sum();
            assert_eq!(gram[i * 3 + j], w);
        }
    }
    // A batched call: (2, 5, 3) · (3, 4) -> (2, 5, 4).
    let ab = s
        .to_device(&ndarray::Array3::<f32>::ones((2, 5, 3)))
        .unwrap();
    let cb = Matmul::<f32>::new().call(&s, &ab, &b).unwrap();
    assert_eq!(cb.shape(), &[2, 5, 4]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_input_is_an_error() {
    let cx = ctx();
    let s = cx.new_stream().unwrap();
    let a = cx.zeros::<f32, _>((8, 6)).unwrap();
    let b = cx.zeros::<f32, _>((5, 4)).unwrap();
    let mut c = cx.zeros::<f32, _>((8, 4)).unwrap();
    let mm = Matmul::<f32>::new();
    let msg = |r: cudajit::Result<()>| r.unwrap_err().to_string();
    // K mismatch.
    let e = mm.run(&s, &a, &b, &mut c).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    // C of the wrong shape.
    let b6 = cx.zeros::<f32, _>((6, 4)).unwrap();
    let mut c_bad = cx.zeros::<f32, _>((8, 5)).unwrap();
    assert!(matches!(
        mm.run(&s, &a, &b6, &mut c_bad).unwrap_err(),
        Error::Shape { .. }
    ));
    // A 1-D operand.
    let v = cx.zeros::<f32, _>(6).unwrap();
    assert!(msg(mm.run(&s, &v, &b6, &mut c)).contains("2-D"));
    // No unit stride in the last two axes.
    let big = cx.zeros::<f32, _>((16, 12)).unwrap();
    let strided = big.strided().slice(s![..;2, ..;2]).unwrap();
    assert!(msg(mm.run(&s, &strided, &b6, &mut c)).contains("unit stride"));
    // A reversed axis.
    let rev = a.strided().slice(s![..;-1, ..]).unwrap();
    assert!(msg(mm.run(&s, &rev, &b6, &mut c)).contains("reversed"));
    // (A C overlapping A or B cannot be made without unsafe code: the borrow rules keep
    // `&a` and `&mut c` apart; the check is unit-tested in src/ops/matmul/shape.rs.)
    // Batches that disagree.
    let a3 = cx.zeros::<f32, _>((3, 8, 6)).unwrap();
    let mut c2 = cx.zeros::<f32, _>((2, 8, 4)).unwrap();
    assert!(msg(mm.run(&s, &a3, &b6, &mut c2)).contains("batch"));
    // An epilogue without its vector, a vector without an epilogue taking it, a wrong length.
    let bias = cx.zeros::<f32, _>(4).unwrap();
    let bias5 = cx.zeros::<f32, _>(5).unwrap();
    let relu = Matmul::<f32>::new().epilogue(Epilogue::bias_relu());
    assert!(msg(relu.run(&s, &a, &b6, &mut c)).contains("per-column"));
    assert!(
        msg(mm.run_with(&s, &a, &b6, &mut c, EpilogueVectors::new().col(&bias)))
            .contains("takes none")
    );
    let e = relu
        .run_with(&s, &a, &b6, &mut c, EpilogueVectors::new().col(&bias5))
        .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e}");
    // Configurations: invalid ones, and the tensor cores for f32 without tf32.
    let bad = Matmul::<f32>::new().config(MatmulConfig::simt(64, 64, 8, 5, 4));
    assert!(msg(bad.run(&s, &a, &b6, &mut c)).contains("not a valid configuration"));
    let huge = Matmul::<f32>::new().config(MatmulConfig::simt(256, 256, 64, 16, 16));
    assert!(msg(huge.run(&s, &a, &b6, &mut c)).contains("48 KiB"));
    let no_tf32 = Matmul::<f32>::new().config(MatmulConfig::mma(64, 64, 16, 32, 32));
    assert!(msg(no_tf32.run(&s, &a, &b6, &mut c)).contains("tf32"));
    let wrong_k = Matmul::<f16>::new().config(MatmulConfig::mma(64, 64, 8, 32, 32));
    let (ah, bh) = (
        cx.zeros::<f16, _>((8, 6)).unwrap(),
        cx.zeros::<f16, _>((6, 4)).unwrap(),
    );
    let mut ch = cx.zeros::<f16, _>((8, 4)).unwrap();
    assert!(msg(wrong_k.run(&s, &ah, &bh, &mut ch)).contains("multiple of the MMA's K"));
    // Non-finite alpha.
    assert!(msg(Matmul::<f32>::new()
        .alpha(f32::NAN)
        .run(&s, &a, &b6, &mut c))
    .contains("finite"));
    // Nothing above launched anything that failed: the stream is fine.
    s.synchronize().unwrap();
}
