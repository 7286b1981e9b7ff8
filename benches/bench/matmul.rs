//! The matrix-multiply rows (issue 24): `cudajit::ops::Matmul` for f32 (SIMT FMA), tf32, f16
//! and bf16 (tensor cores, f32 accumulation) at cubes (1024³ to 8192³; `--quick`: 256³ and
//! 512³), a size that is no tile multiple (4095×4097×4099; quick 255×257×259), a strided
//! batch, and GEMM + bias + GELU fused into one kernel. `CUDAJIT_BENCH_MATMUL=1024,2048`
//! sets the cubes (and leaves the odd size out). Every row checks 512 sampled elements of C
//! against float64 dot products of the same inputs before it is timed; its record carries
//! `flops` (2·M·N·K per product), which the report shows as TFLOP/s.

use cudajit::ops::{
    Epilogue, EpilogueVectors, Matmul, MatmulConfig, MatmulInput, MatmulOutput, Transpose,
};
use cudajit::{bf16, f16};
use ndarray::IxDyn;

use super::*;

/// A matrix product's shape: batch × (M × K) · (K × N).
#[derive(Clone, Copy)]
struct Shape {
    batch: usize,
    m: usize,
    n: usize,
    k: usize,
}

impl Shape {
    fn label(&self, ty: &str) -> String {
        let b = if self.batch > 1 {
            format!("{}x ", self.batch)
        } else {
            String::new()
        };
        if self.m == self.n && self.n == self.k {
            format!("{b}{}^3 {ty}", self.m)
        } else {
            format!("{b}{}x{}x{} {ty}", self.m, self.n, self.k)
        }
    }
    fn flops(&self) -> u64 {
        2 * (self.batch * self.m * self.n * self.k) as u64
    }
}

/// Host inputs of one element type, with their f64 values.
trait HostEl: MatmulInput {
    fn from_f32(x: f32) -> Self;
    fn f64(self) -> f64;
}
impl HostEl for f32 {
    fn from_f32(x: f32) -> f32 {
        x
    }
    fn f64(self) -> f64 {
        self as f64
    }
}
impl HostEl for f16 {
    fn from_f32(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn f64(self) -> f64 {
        self.to_f64()
    }
}
impl HostEl for bf16 {
    fn from_f32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn f64(self) -> f64 {
        self.to_f64()
    }
}
impl HostEl for cudajit::F8E4M3 {
    fn from_f32(x: f32) -> Self {
        cudajit::F8E4M3::from_f32(x)
    }
    fn f64(self) -> f64 {
        self.to_f32() as f64
    }
}

fn out_f64<O: MatmulOutput>(x: O) -> f64 {
    use cudajit::codegen::ScalarTy;
    let bits = cudajit::codegen::Scalar::to_bits(x);
    match O::TY {
        ScalarTy::F16 => f16::from_bits(bits as u16).to_f64(),
        ScalarTy::BF16 => bf16::from_bits(bits as u16).to_f64(),
        _ => f32::from_bits(bits as u32) as f64,
    }
}

fn o_from_f64<O: MatmulOutput>(x: f64) -> O {
    use cudajit::codegen::ScalarTy;
    let bits = match O::TY {
        ScalarTy::F16 => f16::from_f64(x).to_bits() as u64,
        ScalarTy::BF16 => bf16::from_f64(x).to_bits() as u64,
        _ => (x as f32).to_bits() as u64,
    };
    cudajit::codegen::Scalar::from_bits(bits)
}

/// The exact GELU in f64.
fn gelu64(x: f64) -> f64 {
    // erf by its series/continued fraction is not in std: use the complementary error
    // function's Abramowitz-Stegun 7.1.26 form (|error| < 1.5e-7, enough for a check).
    let z = x / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-z * z).exp();
    0.5 * x * (1.0 + y.copysign(z))
}

/// The warp-specialised engine's diagnostic rows: tiles per consumer (M × N), stages and
/// blocks per cluster along M (2: B multicast to both).
const WS_CONFIGS: [(u32, u32, u32, u32); 6] = [
    (128, 128, 4, 1),
    (128, 128, 5, 1),
    (128, 128, 4, 2),
    (128, 128, 5, 2),
    (64, 256, 4, 1),
    (64, 256, 4, 2),
];

/// The cooperative warp-specialised configurations timed as diagnostic rows: block M × N,
/// stages, blocks per cluster along M (both consumers on each tile, the producer filling the
/// next tile's stages during the epilogue).
const COOP_CONFIGS: &[(u32, u32, u32, u32)] = &[
    (128, 256, 3, 1),
    (128, 256, 4, 1),
    (256, 128, 4, 1),
    (128, 256, 4, 2),
    (256, 128, 4, 2),
];

/// A cooperative diagnostic row's name (as [`ws_row`]'s) and configuration.
fn coop_row(prefix: &str, row: (u32, u32, u32, u32)) -> (String, MatmulConfig) {
    let (bm, bn, s, c) = row;
    let (work, _) = ws_row(prefix, row);
    (
        work,
        MatmulConfig::wgmma_ws_cooperative(bm, bn, 64, s).with_cluster_m(c),
    )
}

/// A diagnostic row's name and configuration.
fn ws_row(prefix: &str, (bm, bn, s, c): (u32, u32, u32, u32)) -> (String, MatmulConfig) {
    let cluster = if c > 1 {
        format!("_c{c}")
    } else {
        String::new()
    };
    (
        format!("{prefix}_{bm}x{bn}_s{s}{cluster}"),
        MatmulConfig::wgmma_ws(bm, bn, 64, s).with_cluster_m(c),
    )
}

impl Bench {
    /// The cubes of the matmul rows.
    fn matmul_cubes(&self) -> Vec<usize> {
        if let Ok(v) = std::env::var("CUDAJIT_BENCH_MATMUL") {
            let sizes: Vec<usize> = v.split(',').filter_map(|s| s.trim().parse().ok()).collect();
            if !sizes.is_empty() {
                return sizes;
            }
        }
        if self.opts.quick {
            vec![256, 512]
        } else {
            vec![1024, 2048, 4096, 8192]
        }
    }

    /// The cube of the fused GEMM + bias + activation rows (`CUDAJIT_BENCH_GELU` overrides).
    fn gelu_cube(&self) -> usize {
        let set = std::env::var("CUDAJIT_BENCH_GELU").ok();
        match set.and_then(|v| v.trim().parse().ok()) {
            Some(c) => c,
            None if self.opts.quick => 512,
            None => 4096,
        }
    }

    fn matmul_odd(&self) -> Shape {
        let (m, n, k) = if self.opts.quick {
            (255, 257, 259)
        } else {
            (4095, 4097, 4099)
        };
        Shape { batch: 1, m, n, k }
    }

    /// The rows of `matmul_f32`, `matmul_tf32`, `matmul_f16`, `matmul_bf16`, `matmul_batched`
    /// and `gemm_bias_gelu`.
    pub(crate) fn matmuls(&self) -> Res<()> {
        let mut shapes: Vec<Shape> = self
            .matmul_cubes()
            .into_iter()
            .map(|c| Shape {
                batch: 1,
                m: c,
                n: c,
                k: c,
            })
            .collect();
        if std::env::var_os("CUDAJIT_BENCH_MATMUL").is_none() {
            shapes.push(self.matmul_odd());
        }
        let run = |work: &str, f: &dyn Fn(Shape) -> Res<()>| -> Res<()> {
            if !self.opts.selected(work) {
                return Ok(());
            }
            for &sh in &shapes {
                if let Err(e) = f(sh) {
                    Rec::new(work, &sh.label("?")).error(&e).emit();
                }
            }
            Ok(())
        };
        run("matmul_f32", &|sh| {
            self.one_matmul::<f32, f32>("matmul_f32", "f32", sh, Matmul::new())
        })?;
        run("matmul_tf32", &|sh| {
            self.one_matmul::<f32, f32>("matmul_tf32", "tf32", sh, Matmul::new().tf32(true))
        })?;
        run("matmul_f16", &|sh| {
            self.one_matmul::<f16, f16>("matmul_f16", "f16", sh, Matmul::new())
        })?;
        run("matmul_bf16", &|sh| {
            self.one_matmul::<bf16, bf16>("matmul_bf16", "bf16", sh, Matmul::new())
        })?;
        // e4m3 inputs, bf16 out, B column-major (stored N × K, used transposed), as cuBLAS's
        // fp8 GEMM (`torch._scaled_mm`) takes them.
        run("matmul_fp8", &|sh| {
            let mm = Matmul::<cudajit::F8E4M3, bf16>::new().trans_b(Transpose::T);
            self.one_matmul::<cudajit::F8E4M3, bf16>("matmul_fp8", "e4m3", sh, mm)
        })?;
        let hopper = self.c(self.ctx.device().compute_capability())? == (9, 0);
        // Diagnostic rows (with `matmul_fp8`): the warp-specialised engine pinned.
        if self.opts.selected("matmul_fp8") && hopper {
            for (bm, bn, st, cl) in [(128, 128, 4, 1), (128, 128, 5, 2), (64, 256, 4, 1)] {
                let cfg = MatmulConfig::wgmma_ws(bm, bn, 128, st).with_cluster_m(cl);
                let work = format!("matmul_fp8_ws_{bm}x{bn}_s{st}_c{cl}");
                for &sh in &shapes {
                    let mm = Matmul::<cudajit::F8E4M3, bf16>::new()
                        .trans_b(Transpose::T)
                        .config(cfg);
                    if let Err(e) = self.one_matmul(&work, "e4m3", sh, mm) {
                        Rec::new(&work, &sh.label("e4m3")).error(&e).emit();
                    }
                }
            }
        }
        // Diagnostic rows (with `matmul_bf16`): the warp-specialised, persistent Hopper engine
        // pinned (tiles per consumer and stages in the work's name) beside the default's rows.
        if self.opts.selected("matmul_bf16") && hopper {
            for (work, cfg) in WS_CONFIGS
                .iter()
                .map(|&row| ws_row("matmul_ws", row))
                .chain(
                    COOP_CONFIGS
                        .iter()
                        .map(|&row| coop_row("matmul_ws_coop", row)),
                )
            {
                for &sh in &shapes {
                    let mm = Matmul::new().config(cfg);
                    if let Err(e) = self.one_matmul::<bf16, bf16>(&work, "bf16", sh, mm) {
                        Rec::new(&work, &sh.label("bf16")).error(&e).emit();
                    }
                }
            }
        }
        if self.opts.selected("matmul_splitk") {
            // Few tiles of C and a long K (the same shapes as peers.py's `splitk_shapes`):
            // the default (tuned, split-K among the candidates), and pinned unsplit and
            // split configurations as diagnostic rows.
            let shapes: &[(usize, usize, usize)] = if self.opts.quick {
                &[(256, 256, 4096)]
            } else {
                &[(1024, 1024, 16384), (512, 512, 16384), (2048, 1024, 8192)]
            };
            let line = 64;
            let mut rows = vec![("matmul_splitk".to_string(), None)];
            if hopper {
                rows.push((
                    "matmul_splitk_off_128x128".into(),
                    Some(MatmulConfig::wgmma(128, 128, line, 4)),
                ));
                for s in [2, 4, 8] {
                    rows.push((
                        format!("matmul_splitk_k{s}_128x128"),
                        Some(MatmulConfig::wgmma(128, 128, line, 4).with_split_k(s)),
                    ));
                }
            }
            for &(m, n, k) in shapes {
                let sh = Shape { batch: 1, m, n, k };
                for (work, cfg) in &rows {
                    let mm = match cfg {
                        Some(c) => Matmul::new().config(*c),
                        None => Matmul::new(),
                    };
                    if let Err(e) = self.one_matmul::<bf16, bf16>(work, "bf16", sh, mm) {
                        Rec::new(work, &sh.label("bf16")).error(&e).emit();
                    }
                }
            }
        }
        if self.opts.selected("matmul_batched") {
            let sh = if self.opts.quick {
                Shape {
                    batch: 8,
                    m: 128,
                    n: 128,
                    k: 128,
                }
            } else {
                Shape {
                    batch: 64,
                    m: 512,
                    n: 512,
                    k: 512,
                }
            };
            if let Err(e) =
                self.one_matmul::<bf16, bf16>("matmul_batched", "bf16", sh, Matmul::new())
            {
                Rec::new("matmul_batched", &sh.label("bf16"))
                    .error(&e)
                    .emit();
            }
        }
        if self.opts.selected("matmul_f16") {
            if let Err(e) = self.mma_peaks() {
                Rec::new("mma_peak", "-").error(&e).emit();
            }
            if let Err(e) = self.hopper_gemms() {
                Rec::new("hopper_gemm", "-").error(&e).emit();
            }
        }
        let c = self.gelu_cube();
        let sh = Shape {
            batch: 1,
            m: c,
            n: c,
            k: c,
        };
        if self.opts.selected("gemm_bias_gelu") {
            let mm = Matmul::<bf16, bf16>::new().epilogue(Epilogue::bias_gelu());
            if let Err(e) = self.one_matmul::<bf16, bf16>("gemm_bias_gelu", "bf16", sh, mm) {
                Rec::new("gemm_bias_gelu", &sh.label("bf16"))
                    .error(&e)
                    .emit();
            }
        }
        if self.opts.selected("gemm_bias_gelu") && hopper {
            // Diagnostic rows: the fused GELU on the warp-specialised engine, and bias + ReLU
            // (a cheap epilogue) on both engines.
            let mut rows: Vec<(String, Matmul<bf16, bf16>)> = WS_CONFIGS
                .iter()
                .map(|&row| {
                    let (work, cfg) = ws_row("gemm_bias_gelu_ws", row);
                    let mm = Matmul::<bf16, bf16>::new()
                        .epilogue(Epilogue::bias_gelu())
                        .config(cfg);
                    (work, mm)
                })
                .collect();
            for &row in COOP_CONFIGS {
                let (work, cfg) = coop_row("gemm_bias_gelu_ws_coop", row);
                rows.push((
                    work,
                    Matmul::new().epilogue(Epilogue::bias_gelu()).config(cfg),
                ));
            }
            // The GELU written with `Expr::erf` (libdevice's erff where installed, else
            // cudajit's own), as before `ops::gelu` had its own branch-free erf.
            let erf_gelu = || {
                Epilogue::new("bias_gelu_erf", |e| {
                    let x = e.value + e.col_vec;
                    x * 0.5f32 * ((x * std::f32::consts::FRAC_1_SQRT_2).erf() + 1.0f32)
                })
                .map(|e| e.with_col_vector())
                .map_err(|e| e.to_string())
            };
            rows.push((
                "gemm_bias_gelu_erf".into(),
                Matmul::new().epilogue(erf_gelu()?),
            ));
            rows.push((
                "gemm_bias_gelu_erf_ws_128x128_s5".into(),
                Matmul::new()
                    .epilogue(erf_gelu()?)
                    .config(MatmulConfig::wgmma_ws(128, 128, 64, 5)),
            ));
            rows.push((
                "gemm_bias_relu".into(),
                Matmul::new().epilogue(Epilogue::bias_relu()),
            ));
            rows.push((
                "gemm_bias_relu_ws_128x128_s5".into(),
                Matmul::new()
                    .epilogue(Epilogue::bias_relu())
                    .config(MatmulConfig::wgmma_ws(128, 128, 64, 5)),
            ));
            for (work, mm) in rows {
                if let Err(e) = self.one_matmul::<bf16, bf16>(&work, "bf16", sh, mm) {
                    Rec::new(&work, &sh.label("bf16")).error(&e).emit();
                }
            }
        }
        Ok(())
    }

    /// Checks and times one product of shape `sh` with `mm` (its epilogue: identity, or bias +
    /// GELU with a bias of N elements).
    fn one_matmul<T: HostEl, O: MatmulOutput + cudajit::AnyBitPattern>(
        &self,
        work: &str,
        ty: &str,
        sh: Shape,
        mm: Matmul<T, O>,
    ) -> Res<()> {
        let s = &self.stream;
        let Shape { batch, m, n, k } = sh;
        let seed = self.seed(&format!("{work}/{m}x{n}x{k}"));
        let to_t = |v: Vec<f32>| -> Vec<T> { v.into_iter().map(T::from_f32).collect() };
        let ha = to_t(rand_f32(batch * m * k, seed ^ 1, -1.0, 1.0));
        let hb = to_t(rand_f32(batch * k * n, seed ^ 2, -1.0, 1.0));
        let hbias = rand_f32(n, seed ^ 3, -1.0, 1.0);
        let dims = |r: usize, c: usize| -> IxDyn {
            if batch > 1 {
                IxDyn(&[batch, r, c])
            } else {
                IxDyn(&[r, c])
            }
        };
        let shaped = |v: &[T], r: usize, c: usize| {
            ndarray::ArrayD::from_shape_vec(dims(r, c), v.to_vec()).map_err(|e| e.to_string())
        };
        // B stored N × K (used transposed: K-major) where the product transposes it.
        let b_t = ty == "e4m3";
        let a = self.c(self.ctx.to_device(&shaped(&ha, m, k)?))?;
        let b = if b_t {
            self.c(self.ctx.to_device(&shaped(&hb, n, k)?))?
        } else {
            self.c(self.ctx.to_device(&shaped(&hb, k, n)?))?
        };
        // The bias in the output type, rounded as the input type rounds it (the types agree
        // in the fused row).
        let bias: Vec<O> = hbias
            .iter()
            .map(|&x| o_from_f64(T::from_f32(x).f64()))
            .collect();
        let dbias = self.c(self.ctx.to_device(&bias))?;
        let mut c = self.c(self.ctx.alloc::<O, _>(dims(m, n)))?;
        self.c(c.fill_async(o_from_f64(f64::NAN), s))?;
        // A pinned configuration for experiments (`mma 128x128x64 64x64 s3`).
        let mm = match std::env::var("CUDAJIT_BENCH_MATMUL_CONFIG") {
            Ok(c) if !c.is_empty() => mm.config(c.parse().map_err(|e| format!("{e}"))?),
            _ => mm,
        };
        let fused = mm_has_bias(work);
        let go = |c: &mut DeviceArray<O, IxDyn>| {
            if fused {
                mm.run_with(s, &a, &b, c, EpilogueVectors::new().col(&dbias))
            } else {
                mm.run(s, &a, &b, c)
            }
        };
        self.c(go(&mut c))?;
        let got = self.c(c.to_vec_async(s))?;
        // 512 sampled elements against float64 dot products of the same inputs.
        let tol = match ty {
            "f32" => 1e-5,
            "tf32" => 4e-3,
            "f16" => 2e-3,
            _ => 1e-2,
        };
        let mut worst = 0f64;
        for i in 0..512u64 {
            let r = splitmix(seed ^ (i + 7));
            let (bi, row, col) = (
                (r % batch as u64) as usize,
                ((r >> 16) % m as u64) as usize,
                ((r >> 40) % n as u64) as usize,
            );
            let (mut dot, mut mag) = (0f64, 0f64);
            for x in 0..k {
                let bx = if b_t {
                    hb[(bi * n + col) * k + x]
                } else {
                    hb[(bi * k + x) * n + col]
                };
                let p = ha[(bi * m + row) * k + x].f64() * bx.f64();
                dot += p;
                mag += p.abs();
            }
            let want = if fused && work.contains("relu") {
                (dot + T::from_f32(hbias[col]).f64()).max(0.0)
            } else if fused {
                gelu64(dot + T::from_f32(hbias[col]).f64())
            } else {
                dot
            };
            let g = out_f64(got[(bi * m + row) * n + col]);
            let err = (g - want).abs() / (mag + 1.0);
            if err.is_nan() || err > tol {
                return Err(format!(
                    "{work} {}: C[{bi}][{row}][{col}] = {g}, want {want} (relative {err:.2e} > {tol:.0e})",
                    sh.label(ty)
                ));
            }
            worst = worst.max(err);
        }
        drop(got);
        let cfg = self.c(mm.config_for(s, m, n, k, batch))?;
        let t = self.time_gpu(|| go(&mut c))?;
        let ms = median(&t);
        Rec::new(work, &sh.label(ty))
            .imp(LIB_IMPL)
            .variant(format!("cudajit::ops::Matmul, {cfg:?}"))
            .times(&t)
            .flops(sh.flops())
            .note(format!(
                "{:.2} TFLOP/s; 512 sampled elements within {worst:.1e} of float64 (relative to sum |a*b|)",
                sh.flops() as f64 / (ms * 1e-3) / 1e12
            ))
            .emit();
        Ok(())
    }
}

fn mm_has_bias(work: &str) -> bool {
    work.starts_with("gemm_bias_")
}
