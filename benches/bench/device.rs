//! The device-bound rows: copy, elementwise, reductions and the library's operations.

use super::*;

impl Bench {
    // --- copy -----------------------------------------------------------------------------

    pub(crate) fn copy(&self) -> Res<()> {
        let n = self.sizes.n;
        let size = self.size_of("copy");
        let host = rand_f32(n, self.seed("copy"), -1.0, 1.0);
        let x = self.upload(&host)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(out.copy_from_device_async(&x, &self.stream))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("copy", n, |i| got[i] as f64, |i| host[i] as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| out.copy_from_device_async(&x, &self.stream))?;
        Rec::new("copy", &size)
            .variant("copy_from_device_async (cuMemcpyDtoDAsync)")
            .times(&t)
            .bytes(2 * n * 4)
            .emit();
        // Diagnostic: the builder's vectorised loop as a copy kernel, against the memcpy.
        self.c(out.fill_async(f32::NAN, &self.stream))?;
        self.c(self.ops.copy_kernel(&self.stream, &x, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("copy kernel", n, |i| got[i] as f64, |i| host[i] as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.copy_kernel(&self.stream, &x, &mut out))?;
        Rec::new("copy", &size)
            .imp("cudajit-diag")
            .variant(format!(
                "copy kernel, {}",
                self.ops.describe(&self.ctx, "copy")
            ))
            .times(&t)
            .bytes(2 * n * 4)
            .emit();
        Ok(())
    }

    // --- elementwise ----------------------------------------------------------------------

    /// Two random f32 inputs of `n` elements in `[-1, 1)`, on the host and the device.
    #[allow(clippy::type_complexity)]
    pub(crate) fn two_inputs(
        &self,
        work: &str,
        n: usize,
    ) -> Res<(Vec<f32>, Vec<f32>, A1<f32>, A1<f32>)> {
        let hx = rand_f32(n, self.seed(&format!("{work}/x")), -1.0, 1.0);
        let hy = rand_f32(n, self.seed(&format!("{work}/y")), -1.0, 1.0);
        let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
        Ok((hx, hy, x, y))
    }

    pub(crate) fn add(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("add", n)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.add(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("add", n, |i| got[i] as f64, |i| (hx[i] + hy[i]) as f64, 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.add(&self.stream, &x, &y, &mut out))?;
        let size = self.size_of("add");
        Rec::new("add", &size)
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "add"))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        if self.opts.sweep {
            for (u, bps, block) in ours::SWEEP {
                let cfg = ours::EwConfig {
                    unroll: u,
                    blocks_per_sm: bps,
                    block,
                };
                let r = (|| -> Res<()> {
                    let alt = self.c(ours::Ops::new(self.sms, cfg))?;
                    self.c(out.fill_async(f32::NAN, &self.stream))?;
                    self.c(alt.add(&self.stream, &x, &y, &mut out))?;
                    let got = self.c(out.to_vec_async(&self.stream))?;
                    check("add", n, |i| got[i] as f64, |i| (hx[i] + hy[i]) as f64, 0.0)?;
                    drop(got);
                    let t = self.time_gpu(|| alt.add(&self.stream, &x, &y, &mut out))?;
                    Rec::new("add", &size)
                        .imp(KERNEL_IMPL)
                        .imp("cudajit-diag")
                        .variant(format!("sweep {}", alt.describe(&self.ctx, "add")))
                        .times(&t)
                        .bytes(3 * n * 4)
                        .emit();
                    Ok(())
                })();
                if let Err(e) = r {
                    Rec::new("add", &size)
                        .imp(KERNEL_IMPL)
                        .imp("cudajit-diag")
                        .variant(format!("sweep u{u} bps{bps} b{block}"))
                        .error(&e)
                        .emit();
                }
            }
        }
        Ok(())
    }

    pub(crate) fn axpy(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("axpy", n)?;
        let a = 1.0f32 + (self.seed("axpy/a") >> 40) as f32 / 16_777_216.0; // in [1, 2)
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.axpy(&self.stream, a, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "axpy",
            n,
            |i| got[i] as f64,
            |i| a as f64 * hx[i] as f64 + hy[i] as f64,
            1e-6,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.axpy(&self.stream, a, &x, &y, &mut out))?;
        Rec::new("axpy", &self.size_of("axpy"))
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "axpy"))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        Ok(())
    }

    pub(crate) fn chain(&self) -> Res<()> {
        let n = self.sizes.n;
        let (hx, hy, x, y) = self.two_inputs("chain", n)?;
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.chain(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "chain",
            n,
            |i| got[i] as f64,
            |i| {
                let (a, b) = (hx[i] as f64, hy[i] as f64);
                (a * a + b * b).sqrt() * 0.5 + 1.0
            },
            1e-6,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.chain(&self.stream, &x, &y, &mut out))?;
        Rec::new("chain", &self.size_of("chain"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "sqrt(x*x+y*y)*0.5+1, one kernel, {}",
                self.ops.describe(&self.ctx, "chain")
            ))
            .times(&t)
            .bytes(3 * n * 4)
            .emit();
        Ok(())
    }

    pub(crate) fn add_f64(&self) -> Res<()> {
        let n = self.sizes.n64;
        let hx = rand_f64(n, self.seed("add_f64/x"), -1.0, 1.0);
        let hy = rand_f64(n, self.seed("add_f64/y"), -1.0, 1.0);
        let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
        let mut out = self.poisoned_f64(n)?;
        self.c(self.ops.add_f64(&self.stream, &x, &y, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check("add_f64", n, |i| got[i], |i| hx[i] + hy[i], 0.0)?;
        drop(got);
        let t = self.time_gpu(|| self.ops.add_f64(&self.stream, &x, &y, &mut out))?;
        Rec::new("add_f64", &self.size_of("add_f64"))
            .imp(KERNEL_IMPL)
            .variant(self.ops.describe(&self.ctx, "add_f64"))
            .times(&t)
            .bytes(3 * n * 8)
            .emit();
        Ok(())
    }

    pub(crate) fn bcast_add(&self) -> Res<()> {
        let m = self.sizes.mat;
        let n = m * m;
        let hx = rand_f32(n, self.seed("bcast/x"), -1.0, 1.0);
        let hr = rand_f32(m, self.seed("bcast/row"), -1.0, 1.0);
        let (x, row) = (self.upload(&hx)?, self.upload(&hr)?);
        let mut out = self.poisoned_f32(n)?;
        self.c(self.ops.bcast_add(&self.stream, &x, &row, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        check(
            "bcast_add",
            n,
            |i| got[i] as f64,
            |i| (hx[i] + hr[i % m]) as f64,
            0.0,
        )?;
        drop(got);
        let t = self.time_gpu(|| self.ops.bcast_add(&self.stream, &x, &row, &mut out))?;
        Rec::new("bcast_add", &self.size_of("bcast_add"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "x[{m},{m}] + row[{m}], {}",
                self.ops.describe(&self.ctx, "bcast_add")
            ))
            .times(&t)
            .bytes(2 * n * 4 + m * 4)
            .emit();
        Ok(())
    }

    // --- reductions -----------------------------------------------------------------------

    pub(crate) fn sum_max(&self) -> Res<()> {
        let n = self.sizes.n;
        let size = self.size_of("sum");
        // Inputs in [0, 1): a well-conditioned sum, so f32 accumulation can be checked tightly.
        let hx = rand_f32(n, self.seed("sum/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        let mut scratch = self.c(self.ctx.alloc::<f32, _>(self.ops.partials_len()))?;
        let mut out = self.poisoned_f32(1)?;
        if self.opts.selected("sum") {
            let want = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            self.c(self.ops.sum(&self.stream, &x, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?[0] as f64;
            let rel = ((got - want) / want).abs();
            if !got.is_finite() || rel > 1e-5 {
                Rec::new("sum", &size)
                    .imp(KERNEL_IMPL)
                    .error(&format!(
                        "sum: got {got}, want {want} (relative error {rel:.2e})"
                    ))
                    .emit();
            } else {
                let t = self.time_gpu(|| self.ops.sum(&self.stream, &x, &mut scratch, &mut out))?;
                Rec::new("sum", &size)
                    .imp(KERNEL_IMPL)
                    .variant(format!(
                        "two passes (block partials, then one block), {}",
                        self.ops.describe(&self.ctx, "sum")
                    ))
                    .times(&t)
                    .bytes(n * 4)
                    .note(format!("relative error vs f64 {rel:.1e}"))
                    .emit();
            }
        }
        if self.opts.selected("max") {
            let want = par_fold(n, || f32::NEG_INFINITY, |a, i| *a = a.max(hx[i]), f32::max);
            self.c(out.fill_async(f32::NAN, &self.stream))?;
            self.c(self.ops.max(&self.stream, &x, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?[0];
            if got != want {
                Rec::new("max", &size)
                    .imp(KERNEL_IMPL)
                    .error(&format!("max: got {got}, want {want}"))
                    .emit();
            } else {
                let t = self.time_gpu(|| self.ops.max(&self.stream, &x, &mut scratch, &mut out))?;
                Rec::new("max", &size)
                    .imp(KERNEL_IMPL)
                    .variant(format!(
                        "two passes, {}",
                        self.ops.describe(&self.ctx, "max")
                    ))
                    .times(&t)
                    .bytes(n * 4)
                    .emit();
            }
        }
        Ok(())
    }

    pub(crate) fn argmax(&self) -> Res<()> {
        let n = self.sizes.n;
        // 24-bit values in [0, 1): the maximum occurs many times at 2^28, so ties are tested.
        let hx = rand_f32(n, self.seed("argmax/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        let p = self.ops.partials_len();
        let mut pv = self.c(self.ctx.alloc::<f32, _>(p))?;
        let mut pi = self.c(self.ctx.alloc::<u64, _>(p))?;
        let mut out = self.c(self.ctx.alloc::<u64, _>(1))?;
        self.c(out.fill_async(u64::MAX, &self.stream))?;
        let (want_v, want_i) = par_fold(
            n,
            || (f32::NEG_INFINITY, usize::MAX),
            |a, i| {
                if hx[i] > a.0 {
                    *a = (hx[i], i);
                }
            },
            |a, b| {
                if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                    b
                } else {
                    a
                }
            },
        );
        let ties = par_fold(
            n,
            || 0usize,
            |c, i| *c += (hx[i] == want_v) as usize,
            |a, b| a + b,
        );
        let run = |pv: &mut A1<f32>, pi: &mut A1<u64>, out: &mut A1<u64>| {
            self.ops.argmax(&self.stream, &x, pv, pi, out)
        };
        self.c(run(&mut pv, &mut pi, &mut out))?;
        let got = self.c(out.to_vec_async(&self.stream))?[0];
        if got != want_i as u64 {
            return Err(format!(
                "argmax: got {got}, want {want_i} (the first of {ties} elements equal to the maximum {want_v})"
            ));
        }
        let t = self.time_gpu(|| run(&mut pv, &mut pi, &mut out))?;
        Rec::new("argmax", &self.size_of("argmax"))
            .imp(KERNEL_IMPL)
            .variant(format!(
                "two passes, first index of the maximum, {}",
                self.ops.describe(&self.ctx, "argmax")
            ))
            .times(&t)
            .bytes(n * 4)
            .note(format!("the maximum occurs {ties} times"))
            .emit();
        Ok(())
    }

    pub(crate) fn axis_sums(&self) -> Res<()> {
        let m = self.sizes.mat;
        let n = m * m;
        let size = self.size_of("row_sum");
        let hx = rand_f32(n, self.seed("axis/x"), 0.0, 1.0);
        let x = self.upload(&hx)?;
        if self.opts.selected("row_sum") {
            let mut out = self.poisoned_f32(m)?;
            self.c(self.ops.row_sum(&self.stream, &x, m, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?;
            let want: Vec<f64> = {
                let mut w = vec![0f64; m];
                par_fill(&mut w, |r| {
                    hx[r * m..(r + 1) * m].iter().map(|&v| v as f64).sum()
                });
                w
            };
            check("row_sum", m, |i| got[i] as f64, |i| want[i], 1e-5)?;
            let t = self.time_gpu(|| self.ops.row_sum(&self.stream, &x, m, &mut out))?;
            Rec::new("row_sum", &size)
                .imp(KERNEL_IMPL)
                .variant(format!(
                    "sum along axis 1 (one block per row), {}",
                    self.ops.describe(&self.ctx, "row_sum")
                ))
                .times(&t)
                .bytes(n * 4 + m * 4)
                .emit();
        }
        if self.opts.selected("col_sum") {
            let mut out = self.poisoned_f32(m)?;
            let mut scratch = self.c(self.ctx.alloc::<f32, _>(self.ops.col_partials_len(m, m)))?;
            self.c(self
                .ops
                .col_sum(&self.stream, &x, m, &mut scratch, &mut out))?;
            let got = self.c(out.to_vec_async(&self.stream))?;
            let want = par_fold(
                m,
                || vec![0f64; m],
                |acc, r| {
                    for (a, &v) in acc.iter_mut().zip(&hx[r * m..(r + 1) * m]) {
                        *a += v as f64;
                    }
                },
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
            check("col_sum", m, |i| got[i] as f64, |i| want[i], 1e-5)?;
            let t = self.time_gpu(|| {
                self.ops
                    .col_sum(&self.stream, &x, m, &mut scratch, &mut out)
            })?;
            Rec::new("col_sum", &size)
                .imp(KERNEL_IMPL)
                .variant(format!(
                    "sum along axis 0 (row chunks, then chunk partials), {}",
                    self.ops.describe(&self.ctx, "col_sum")
                ))
                .times(&t)
                .bytes(n * 4 + m * 4)
                .emit();
        }
        Ok(())
    }

    // --- the library's operations (cudajit::ops) --------------------------------------------

    /// Runs `op` once, checks it, times it, and emits a library row.
    pub(crate) fn lib_row(
        &self,
        work: &str,
        bytes: usize,
        variant: &str,
        mut op: impl FnMut() -> cudajit::Result<()>,
        verify: impl FnOnce() -> Res<()>,
    ) -> Res<()> {
        self.c(op())?;
        verify()?;
        let t = self.time_gpu(&mut op)?;
        Rec::new(work, &self.size_of(work))
            .imp(LIB_IMPL)
            .variant(variant)
            .times(&t)
            .bytes(bytes)
            .emit();
        Ok(())
    }

    /// Inclusive prefix sums through `cudajit::ops::ScanOps::cumsum_into` (one kernel:
    /// single pass, decoupled look-back): f32 in [0, 1) checked against a float64 prefix sum,
    /// i32 in [-100, 100] checked exactly (wrapping; no wrap at these values).
    pub(crate) fn scans(&self) -> Res<()> {
        use cudajit::ops::ScanOps;
        let s = &self.stream;
        let n = self.sizes.n;
        let variant = format!(
            "cudajit::ops::ScanOps::cumsum_into, single pass, decoupled look-back, CUDAJIT_SCAN_TUNE={}",
            std::env::var("CUDAJIT_SCAN_TUNE").unwrap_or_else(|_| "default (8 rows, 4 blocks/SM x 256)".into())
        );
        if self.opts.selected("scan") {
            let hx = rand_f32(n, self.seed("scan/x"), 0.0, 1.0);
            let x = self.upload(&hx)?;
            let mut out = self.poisoned_f32(n)?;
            self.c(x.cumsum_into(s, &mut out))?;
            let got = self.c(out.to_vec_async(s))?;
            let rel = check_running_sum("scan", &hx, &got)?;
            drop(got);
            let t = self.time_gpu(|| x.cumsum_into(s, &mut out))?;
            Rec::new("scan", &self.size_of("scan"))
                .imp(LIB_IMPL)
                .variant(variant.clone())
                .times(&t)
                .bytes(2 * n * 4)
                .note(format!("relative error vs float64 {rel:.1e}"))
                .emit();
        }
        if self.opts.selected("scan_i32") {
            let hx: Vec<i32> = rand_f32(n, self.seed("scan_i32/x"), -100.0, 101.0)
                .iter()
                .map(|v| v.floor() as i32)
                .collect();
            let x = self.upload(&hx)?;
            let mut out = self.c(self.ctx.alloc::<i32, _>(n))?;
            self.c(out.fill_async(i32::MIN, s))?;
            self.c(x.cumsum_into(s, &mut out))?;
            let got = self.c(out.to_vec_async(s))?;
            let mut acc = 0i32;
            let bad = hx.iter().zip(&got).position(|(&v, &g)| {
                acc = acc.wrapping_add(v);
                g != acc
            });
            if let Some(i) = bad {
                return Err(format!(
                    "scan_i32: element {i} differs from the host's prefix sum"
                ));
            }
            drop(got);
            let t = self.time_gpu(|| x.cumsum_into(s, &mut out))?;
            Rec::new("scan_i32", &self.size_of("scan_i32"))
                .imp(LIB_IMPL)
                .variant(variant)
                .times(&t)
                .bytes(2 * n * 4)
                .note("exact")
                .emit();
        }
        Ok(())
    }

    /// The workloads through `cudajit::ops`: what a user of the crate gets.
    pub(crate) fn library(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise, ReduceOps, Reduction, Scalar};
        let s = &self.stream;
        let n = self.sizes.n;
        let sel = |w: &str| self.opts.selected(w);
        let e = |e: cudajit::Error| e.to_string();
        if sel("add") || sel("axpy") || sel("chain") {
            let (hx, hy, x, y) = self.two_inputs("lib", n)?;
            let mut out = self.poisoned_f32(n)?;
            if sel("add") {
                let add =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_add", |(x, y)| {
                        x + y
                    })
                    .map_err(e)?;
                self.c(add.apply(s, (&x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib add",
                    n,
                    |i| g[i] as f64,
                    |i| (hx[i] + hy[i]) as f64,
                    0.0,
                )?;
                drop(g);
                self.lib_row(
                    "add",
                    3 * n * 4,
                    "cudajit::ops::Elementwise x + y",
                    || add.apply(s, (&x, &y), &mut out),
                    || Ok(()),
                )?;
            }
            if sel("axpy") {
                let a = 1.5f32;
                let axpy = Elementwise::<(Scalar<f32>, Elem<f32>, Elem<f32>), Expr<f32>>::new(
                    "lib_axpy",
                    |(a, x, y)| a * x + y,
                )
                .map_err(e)?;
                self.c(axpy.apply(s, (a, &x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib axpy",
                    n,
                    |i| g[i] as f64,
                    |i| a as f64 * hx[i] as f64 + hy[i] as f64,
                    1e-6,
                )?;
                drop(g);
                self.lib_row(
                    "axpy",
                    3 * n * 4,
                    "cudajit::ops::Elementwise a*x + y",
                    || axpy.apply(s, (a, &x, &y), &mut out),
                    || Ok(()),
                )?;
            }
            if sel("chain") {
                let chain =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_chain", |(x, y)| {
                        (x * x + y * y).sqrt() * 0.5 + 1.0
                    })
                    .map_err(e)?;
                self.c(chain.apply(s, (&x, &y), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib chain",
                    n,
                    |i| g[i] as f64,
                    |i| ((hx[i] as f64).powi(2) + (hy[i] as f64).powi(2)).sqrt() * 0.5 + 1.0,
                    1e-6,
                )?;
                drop(g);
                self.lib_row(
                    "chain",
                    3 * n * 4,
                    "cudajit::ops::Elementwise, one fused kernel",
                    || chain.apply(s, (&x, &y), &mut out),
                    || Ok(()),
                )?;
            }
        }
        if sel("add_f64") {
            let n = self.sizes.n64;
            let hx = rand_f64(n, self.seed("lib_f64/x"), -1.0, 1.0);
            let hy = rand_f64(n, self.seed("lib_f64/y"), -1.0, 1.0);
            let (x, y) = (self.upload(&hx)?, self.upload(&hy)?);
            let mut out = self.poisoned_f64(n)?;
            let add =
                Elementwise::<(Elem<f64>, Elem<f64>), Expr<f64>>::new("lib_add_f64", |(x, y)| {
                    x + y
                })
                .map_err(e)?;
            self.c(add.apply(s, (&x, &y), &mut out))?;
            let g = self.c(out.to_vec_async(s))?;
            check("lib add_f64", n, |i| g[i], |i| hx[i] + hy[i], 0.0)?;
            drop(g);
            self.lib_row(
                "add_f64",
                3 * n * 8,
                "cudajit::ops::Elementwise x + y",
                || add.apply(s, (&x, &y), &mut out),
                || Ok(()),
            )?;
        }
        let m = self.sizes.mat;
        if sel("bcast_add") || sel("row_sum") || sel("col_sum") {
            let hx = rand_f32(m * m, self.seed("lib_mat/x"), 0.0, 1.0);
            let x2 = self
                .c(self.stream.to_device(&hx))?
                .into_shape((m, m))
                .map_err(e)?;
            if sel("bcast_add") {
                let hr = rand_f32(m, self.seed("lib_mat/row"), -1.0, 1.0);
                let row = self.upload(&hr)?;
                let mut out = self.c(self.ctx.alloc::<f32, _>((m, m)))?;
                self.c(out.fill_async(f32::NAN, s))?;
                let add =
                    Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("lib_badd", |(x, r)| {
                        x + r
                    })
                    .map_err(e)?;
                self.c(add.apply(s, (&x2, &row), &mut out))?;
                let g = self.c(out.to_vec_async(s))?;
                check(
                    "lib bcast_add",
                    m * m,
                    |i| g[i] as f64,
                    |i| (hx[i] + hr[i % m]) as f64,
                    0.0,
                )?;
                drop(g);
                self.lib_row(
                    "bcast_add",
                    2 * m * m * 4 + m * 4,
                    "cudajit::ops::Elementwise, NumPy broadcasting (strided path)",
                    || add.apply(s, (&x2, &row), &mut out),
                    || Ok(()),
                )?;
            }
            for (work, axis) in [("row_sum", 1usize), ("col_sum", 0)] {
                if !sel(work) {
                    continue;
                }
                let want: Vec<f64> = (0..m)
                    .map(|i| {
                        (0..m)
                            .map(|j| hx[if axis == 1 { i * m + j } else { j * m + i }] as f64)
                            .sum()
                    })
                    .collect();
                let mut got = self.poisoned_f32(m)?;
                self.c(x2.sum_axis_into(s, axis, false, &mut got))?;
                let g = self.c(got.to_vec_async(s))?;
                check(
                    &format!("lib {work}"),
                    m,
                    |i| g[i] as f64,
                    |i| want[i],
                    1e-5,
                )?;
                drop(g);
                self.lib_row(
                    work,
                    m * m * 4 + m * 4,
                    &format!(
                        "cudajit::ops ReduceOps::sum_axis_into({axis}), into an existing array"
                    ),
                    || x2.sum_axis_into(s, axis, false, &mut got),
                    || Ok(()),
                )?;
            }
        }
        if sel("sum") || sel("max") || sel("argmax") {
            let hx = rand_f32(n, self.seed("lib_red/x"), 0.0, 1.0);
            let x = self.upload(&hx)?;
            let exact: f64 = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            let mut one = self.poisoned_f32(1)?;
            let mut idx = self.c(self.ctx.alloc::<u64, _>(1))?;
            if sel("sum") {
                let sum = Reduction::<f32, f32, f32>::new("lib_sum", |x| x, |a, b| a + b, 0.0)
                    .map_err(e)?;
                let got = self.c(x.sum(s))? as f64;
                let rel = ((got - exact) / exact).abs();
                if rel > 1e-5 {
                    return Err(format!(
                        "lib sum: got {got}, want {exact} (relative error {rel:.1e})"
                    ));
                }
                self.lib_row(
                    "sum",
                    n * 4,
                    &format!(
                        "cudajit::ops Reduction, into a device scalar (relative error {rel:.1e})"
                    ),
                    || sum.reduce_into(s, &x, &mut one),
                    || Ok(()),
                )?;
            }
            if sel("max") {
                let want = par_fold(n, || f32::NEG_INFINITY, |a, i| *a = a.max(hx[i]), f32::max);
                let got = self.c(x.max(s))?;
                if got != want {
                    return Err(format!("lib max: got {got}, want {want}"));
                }
                let max = Reduction::<f32, f32, f32>::new(
                    "lib_max",
                    |x| x,
                    |a, b| select(a.gt(b), a, b),
                    f32::NEG_INFINITY,
                )
                .map_err(e)?;
                self.lib_row(
                    "max",
                    n * 4,
                    "cudajit::ops Reduction, result on the device",
                    || max.reduce_into(s, &x, &mut one),
                    || Ok(()),
                )?;
            }
            if sel("argmax") {
                let want = (0..n).fold((f32::NEG_INFINITY, 0usize), |a, i| {
                    if hx[i] > a.0 {
                        (hx[i], i)
                    } else {
                        a
                    }
                });
                let got = self.c(x.argmax(s))?;
                if got != want.1 as u64 {
                    return Err(format!("lib argmax: got {got}, want {}", want.1));
                }
                self.lib_row(
                    "argmax",
                    n * 4,
                    "cudajit::ops ReduceOps::argmax_into (index on the device)",
                    || x.argmax_into(s, &mut idx),
                    || Ok(()),
                )?;
            }
        }
        Ok(())
    }
}
