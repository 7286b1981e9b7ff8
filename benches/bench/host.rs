//! The host-bound rows: launch cost, compiles, transfers.

use super::*;

impl Bench {
    // --- host costs -----------------------------------------------------------------------

    /// Host time per launch of a tiny kernel with 3 array arguments: `launches` launches, then
    /// one synchronize; wall clock per launch, median of 5.
    pub(crate) fn launch(&self) -> Res<()> {
        let k = self.c(Kernel::<(&[f32], &[f32], &mut [f32])>::build(
            "bench_tiny",
            |k, (x, y, out)| {
                let i = k.grid1();
                k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
            },
        ))?;
        let (x, y) = (self.upload(&[1.0f32])?, self.upload(&[2.0f32])?);
        let mut out = self.poisoned_f32(1)?;
        let cfg = LaunchConfig::new(1, 32);
        self.c(k.launch(&self.stream, cfg, (&x, &y, &mut out)))?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        if got[0] != 3.0 {
            return Err(format!("launch: got {}, want 3", got[0]));
        }
        let launches = self.sizes.launches;
        let mut per = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            for _ in 0..launches {
                self.c(k.launch(&self.stream, cfg, (&x, &y, &mut out)))?;
            }
            self.c(self.stream.synchronize())?;
            per.push(t0.elapsed().as_secs_f64() * 1e3 / launches as f64);
        }
        Rec::new("launch", &self.size_of("launch"))
            .variant(format!(
                "Kernel::launch, {launches} launches then one synchronize, wall clock"
            ))
            .times(&per)
            .unit("us")
            .emit();
        self.launch_diag(&k, &x, &y, &mut out)
    }

    /// Where launch time goes: host enqueue time alone (short bursts that fit the driver's
    /// queue, and long ones), a non-blocking stream, a kernel without parameters. Rows
    /// `cudajit-diag`.
    pub(crate) fn launch_diag(
        &self,
        k: &Kernel<(&[f32], &[f32], &mut [f32])>,
        x: &DeviceArray<f32>,
        y: &DeviceArray<f32>,
        out: &mut DeviceArray<f32>,
    ) -> Res<()> {
        use cudajit::stream::StreamOptions;
        let cfg = LaunchConfig::new(1, 32);
        let nb = self.c(self.ctx.new_stream_with(StreamOptions {
            non_blocking: true,
            priority: 0,
        }))?;
        let empty = self.c(Kernel::<()>::build("bench_empty", |_, ()| {}))?;
        let size = self.size_of("launch");
        let measure = |what: &str,
                       stream: &Stream,
                       burst: usize,
                       reps: usize,
                       f: &mut dyn FnMut(&Stream) -> cudajit::Result<()>|
         -> Res<()> {
            let (mut enq, mut tot) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                self.c(stream.synchronize())?;
                let t0 = Instant::now();
                for _ in 0..burst {
                    self.c(f(stream))?;
                }
                let t1 = t0.elapsed();
                self.c(stream.synchronize())?;
                let t2 = t0.elapsed();
                enq.push(t1.as_secs_f64() * 1e3 / burst as f64);
                tot.push(t2.as_secs_f64() * 1e3 / burst as f64);
            }
            for (label, t) in [("enqueue only", &enq), ("with the final sync", &tot)] {
                Rec::new("launch", &size)
                    .imp("cudajit-diag")
                    .variant(format!("{what}, bursts of {burst}, {label}, per launch"))
                    .times(t)
                    .unit("us")
                    .emit();
            }
            Ok(())
        };
        let mut typed = |s: &Stream| k.launch(s, cfg, (x, y, &mut *out));
        let long = self.sizes.launches as usize;
        measure(
            "Kernel::launch, own stream",
            &self.stream,
            long,
            5,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, own stream",
            &self.stream,
            200,
            30,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, non-blocking stream",
            &nb,
            200,
            30,
            &mut typed,
        )?;
        measure(
            "Kernel::launch, non-blocking stream",
            &nb,
            long,
            5,
            &mut typed,
        )?;
        let mut no_args = |s: &Stream| empty.launch(s, cfg, ());
        measure(
            "empty kernel, no parameters",
            &self.stream,
            200,
            30,
            &mut no_args,
        )?;
        measure(
            "empty kernel, no parameters",
            &self.stream,
            long,
            5,
            &mut no_args,
        )?;
        // The driver alone: cuLaunchKernel and cuLaunchKernelEx called directly, and two
        // calls that do no work, to see what one driver call costs on this host.
        use cudajit::sys;
        let sys_ok = |what: &str, r: Result<sys::CUresult, sys::LoadError>| match r {
            Ok(sys::CUresult::CUDA_SUCCESS) => Ok(()),
            other => Err(cudajit::Error::Usage(format!("{what}: {other:?}"))),
        };
        let f = self.c(empty.function(&self.ctx))?.raw();
        let mut direct = |s: &Stream| {
            // SAFETY: a live function without parameters, a live stream of the current context.
            let r = unsafe {
                sys::cuLaunchKernel(
                    f,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    s.raw(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            sys_ok("cuLaunchKernel", r)
        };
        measure(
            "cuLaunchKernel direct, empty kernel",
            &self.stream,
            200,
            30,
            &mut direct,
        )?;
        let mut ex = |s: &Stream| {
            let config = sys::CUlaunchConfig {
                gridDimX: 1,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: 32,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: s.raw(),
                attrs: std::ptr::null_mut(),
                numAttrs: 0,
            };
            // SAFETY: as above; the configuration outlives the call.
            let r = unsafe {
                sys::cuLaunchKernelEx(&config, f, std::ptr::null_mut(), std::ptr::null_mut())
            };
            sys_ok("cuLaunchKernelEx", r)
        };
        measure(
            "cuLaunchKernelEx direct, empty kernel",
            &self.stream,
            200,
            30,
            &mut ex,
        )?;
        let mut query = |s: &Stream| {
            // SAFETY: a live stream; the query only reads its state.
            let r = unsafe { sys::cuStreamQuery(s.raw()) };
            match r {
                Ok(sys::CUresult::CUDA_ERROR_NOT_READY) => Ok(()),
                r => sys_ok("cuStreamQuery", r),
            }
        };
        measure(
            "cuStreamQuery (no launch)",
            &self.stream,
            200,
            30,
            &mut query,
        )?;
        let mut current = |_: &Stream| {
            let mut c = std::ptr::null_mut();
            // SAFETY: a valid out-pointer.
            sys_ok("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut c) })
        };
        measure(
            "cuCtxGetCurrent (no launch)",
            &self.stream,
            200,
            30,
            &mut current,
        )?;
        Ok(())
    }

    /// A new elementwise kernel's build + compile + load + first launch + synchronize: cold
    /// (a unique kernel each time, empty disk cache) and cached (the same kernels again).
    pub(crate) fn compile(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise};
        let n = 1024usize;
        let hx = rand_f32(n, self.seed("compile/x"), -1.0, 1.0);
        let x = self.upload(&hx)?;
        let mut out = self.poisoned_f32(n)?;
        let tag = nonce();
        let mut build = |i: usize| -> Res<f64> {
            let c = compile_constant(i);
            let t0 = Instant::now();
            let ew = self.c(Elementwise::<(Elem<f32>,), Expr<f32>>::new(
                &compile_name(tag, i),
                move |(x,)| x * c + 0.5,
            ))?;
            self.c(ew.apply(&self.stream, (&x,), &mut out))?;
            self.c(self.stream.synchronize())?;
            Ok(t0.elapsed().as_secs_f64() * 1e3)
        };
        build(usize::MAX / 2)?; // warm-up: LLVM's target and the driver's first load
        let runs = self.sizes.compiles;
        let cold = (0..runs).map(&mut build).collect::<Res<Vec<f64>>>()?;
        let cached = (0..runs).map(&mut build).collect::<Res<Vec<f64>>>()?;
        let got = self.c(out.to_vec_async(&self.stream))?;
        let c = compile_constant(runs - 1);
        check(
            "compile",
            n,
            |i| got[i] as f64,
            |i| (hx[i] * c + 0.5) as f64,
            1e-6,
        )?;
        Rec::new("compile_cold", &self.size_of("compile_cold"))
            .variant("Elementwise::new + first apply + sync (IR, LLVM -> PTX, driver load), empty caches")
            .times(&cold)
            .emit();
        Rec::new("compile_cached", &self.size_of("compile_cached"))
            .variant("the same kernels again: the loaded function found by the IR's hash")
            .times(&cached)
            .emit();
        if self.opts.selected("compile_new_process") {
            self.new_process(tag, runs)?;
        }
        Ok(())
    }

    /// Host<->device copies of `xfer` f32, pinned and pageable, both directions.
    pub(crate) fn transfers(&self) -> Res<()> {
        let n = self.sizes.xfer;
        let src = rand_f32(n, self.seed("xfer/src"), -1.0, 1.0);
        let mut back = vec![0f32; n];
        let mut pinned = self.c(self.ctx.pinned_from_slice(&src))?;
        let mut d = self.c(self.ctx.alloc::<f32, _>(n))?;
        self.c(pinned.copy_to_device_async(&mut d, &self.stream))?;
        self.c(d.copy_to_host_async(&mut back, &self.stream))?;
        if back != src {
            return Err("transfers: the round trip changed the data".into());
        }
        let size = self.size_of("h2d_pinned");
        let emit = |work: &str, variant: &str, t: &[f64]| {
            Rec::new(work, &size)
                .variant(variant)
                .times(t)
                .bytes(n * 4)
                .emit();
        };
        if self.opts.selected("h2d_pinned") {
            let mut f = || -> cudajit::Result<()> {
                pinned.wait()?;
                pinned.copy_to_device_async(&mut d, &self.stream)
            };
            let t = self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)?;
            emit("h2d_pinned", "PinnedHostBuffer::copy_to_device_async", &t);
        }
        if self.opts.selected("d2h_pinned") {
            // `copy_from_device_async` needs `&mut pinned`; waiting first keeps the host's wait
            // for the previous copy out of the timed interval.
            let mut f = || -> cudajit::Result<()> {
                pinned.wait()?;
                pinned.copy_from_device_async(&d, &self.stream)
            };
            let t = self.time_gpu_n(self.opts.warmup, self.opts.reps, &mut f)?;
            emit("d2h_pinned", "PinnedHostBuffer::copy_from_device_async", &t);
        }
        if self.opts.selected("h2d_pageable") {
            let t = self.time_gpu(|| d.copy_from_host_async(&src[..], &self.stream))?;
            emit(
                "h2d_pageable",
                "DeviceArray::copy_from_host_async (Vec)",
                &t,
            );
        }
        if self.opts.selected("d2h_pageable") {
            let t = self.time_gpu(|| d.copy_to_host_async(&mut back, &self.stream))?;
            emit("d2h_pageable", "DeviceSlice::copy_to_host_async (Vec)", &t);
        }
        Ok(())
    }
}
