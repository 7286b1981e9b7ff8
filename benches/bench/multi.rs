//! The multi-GPU rows: a peer copy between devices 0 and 1, NCCL's all-reduce over both, and a
//! sum, an elementwise add and an inclusive scan of `2^30` f32 on one GPU and sharded over two.
//!
//! Work on several devices is timed as one span by [`Bench::time_multi`]: a start event on
//! device 0's stream that every other stream waits on, the work, then every other stream's end
//! joined back into device 0's stream before the final event (so the span ends when the
//! slowest device is done). Rows that need two devices or NCCL print a `"skip"` record on a
//! machine without them (one GPU, the simulator, no `libnccl.so.2`), and the run goes on.
//! `--gpus 1` runs the all-reduce and sharded rows on one device instead (a communicator and a
//! mesh of one): a rehearsal of their code on one GPU, and the sharded path's own cost.

use super::*;

use cudajit::nccl::{self, Communicator, ReduceOp};
use cudajit::ops::ScanKind;

/// The size label of a peer copy of `bytes` from device `from` to device `to`.
pub(crate) fn peer_label(bytes: usize, from: usize, to: usize) -> String {
    format!("{} {from}->{to}", size_bytes(bytes))
}

/// The size label of an all-reduce of `bytes` of f32 per rank.
pub(crate) fn all_reduce_label(bytes: usize) -> String {
    format!("{} f32", size_bytes(bytes))
}

/// nccl-tests' bus bandwidth of an all-reduce over `ranks`: the algorithm bandwidth (bytes per
/// rank over time) times `2 (n - 1) / n`, in GB/s.
fn busbw_gbs(bytes: usize, ms: f64, ranks: usize) -> f64 {
    let n = ranks as f64;
    bytes as f64 / (ms * 1e-3) / 1e9 * 2.0 * (n - 1.0) / n
}

/// Back-to-back all-reduces per timed span in the nccl-tests way of timing (the average of one
/// span of this many).
pub(crate) const NCCL_TESTS_ITERS: usize = 20;

/// The devices of the multi-GPU rows: contexts and one new stream each.
struct Devices {
    ctxs: Vec<Context>,
    streams: Vec<Stream>,
}

impl Devices {
    fn streams(&self) -> Vec<&Stream> {
        self.streams.iter().collect()
    }
    fn synchronize(&self) -> cudajit::Result<()> {
        self.streams.iter().try_for_each(Stream::synchronize)
    }
}

impl Bench {
    /// Why this machine cannot run a row on `need` devices (`nccl`: it needs NCCL too), or
    /// `None`.
    pub(crate) fn multi_unavailable(&self, need: usize, nccl: bool) -> Option<String> {
        let n = cudajit::device_count().unwrap_or(0);
        if n < need {
            return Some(format!(
                "needs {need} devices, this machine has {n}{}",
                if cudajit::on_simulator() {
                    " (the simulator)"
                } else {
                    ""
                }
            ));
        }
        if nccl {
            if cudajit::on_simulator() {
                return Some("NCCL needs real GPUs, not the simulator".into());
            }
            if !nccl::is_available() {
                let why = nccl::library_path().err().map(|e| e.to_string());
                return Some(format!(
                    "NCCL (libnccl.so.2) not found: {}",
                    why.unwrap_or_default()
                ));
            }
        }
        None
    }

    /// One skip record per selected work among `works` (all sizes of `labels`).
    fn skip_rows(&self, works: &[&str], labels: &[String], why: &str) {
        for w in works.iter().filter(|w| self.opts.selected(w)) {
            for l in labels {
                Rec::new(w, l).skip(why).emit();
            }
        }
    }

    /// Devices 0 and 1 with a new stream each, peer access turned on both ways where the
    /// devices can be peers (as torch does before a peer copy); the note says which.
    fn two_devices(&self) -> Res<(Devices, String)> {
        let ctxs = self.c((0..2)
            .map(Context::new)
            .collect::<cudajit::Result<Vec<_>>>())?;
        let streams: Vec<Stream> = self.c(ctxs.iter().map(Context::new_stream).collect())?;
        let (d0, d1) = (ctxs[0].device(), ctxs[1].device());
        let peers = self.c(d0.can_access_peer(&d1))? && self.c(d1.can_access_peer(&d0))?;
        let note = if peers {
            self.c(ctxs[0].enable_peer_access(&ctxs[1]))?;
            self.c(ctxs[1].enable_peer_access(&ctxs[0]))?;
            "peer access on both ways"
        } else {
            "devices are not peers: copies staged by the driver"
        };
        Ok((Devices { ctxs, streams }, note.into()))
    }

    /// Times `f` the way the torch.distributed rows are timed: per repetition each stream's own
    /// span (an event before `f` and one after, on that stream; no wait between the streams
    /// other than what `f` itself queues), and the repetition's time is the slowest stream's.
    pub(crate) fn time_per_device(
        &self,
        streams: &[&Stream],
        warmup: usize,
        reps: usize,
        f: &mut dyn FnMut() -> cudajit::Result<()>,
    ) -> Res<Vec<f64>> {
        let mut run = || -> cudajit::Result<Vec<f64>> {
            for _ in 0..warmup {
                f()?;
            }
            for s in streams {
                s.synchronize()?;
            }
            let mut evs = Vec::with_capacity(reps);
            for _ in 0..reps {
                let mut per = Vec::with_capacity(streams.len());
                for s in streams {
                    per.push((s.context().new_event()?, s.context().new_event()?));
                }
                evs.push(per);
            }
            for per in &evs {
                for (s, (start, _)) in streams.iter().zip(per) {
                    start.record(s)?;
                }
                f()?;
                for (s, (_, end)) in streams.iter().zip(per) {
                    end.record(s)?;
                }
            }
            for s in streams {
                s.synchronize()?;
            }
            evs.iter()
                .map(|per| {
                    per.iter().try_fold(0f64, |m, (s, e)| {
                        cudajit::elapsed_ms(s, e).map(|t| m.max(t as f64))
                    })
                })
                .collect()
        };
        self.c(run())
    }

    /// Times `f`, which enqueues work on some of `streams` (`streams[0]` on device 0, the others
    /// on other devices), as one span across the devices: per repetition, a start event on
    /// `streams[0]` that every other stream waits on, `f`, then each other stream's end recorded
    /// and waited on by `streams[0]`, and the final event on `streams[0]`. The times (ms) from
    /// start to final, after `warmup` calls.
    pub(crate) fn time_multi(
        &self,
        streams: &[&Stream],
        warmup: usize,
        reps: usize,
        f: &mut dyn FnMut() -> cudajit::Result<()>,
    ) -> Res<Vec<f64>> {
        let mut run = || -> cudajit::Result<Vec<f64>> {
            let s0 = streams[0];
            let ctx0 = s0.context();
            // One join event per other stream, re-recorded every repetition: a wait takes the
            // event's latest record at the time it is enqueued.
            let joins = streams[1..]
                .iter()
                .map(|s| s.context().new_event_with(false, false))
                .collect::<cudajit::Result<Vec<_>>>()?;
            for _ in 0..warmup {
                f()?;
            }
            for s in streams {
                s.synchronize()?;
            }
            let mut evs = Vec::with_capacity(reps);
            for _ in 0..reps {
                evs.push((ctx0.new_event()?, ctx0.new_event()?));
            }
            for (start, end) in &evs {
                start.record(s0)?;
                for s in &streams[1..] {
                    s.wait_event(start)?;
                }
                f()?;
                for (s, j) in streams[1..].iter().zip(&joins) {
                    j.record(s)?;
                    s0.wait_event(j)?;
                }
                end.record(s0)?;
            }
            for s in streams {
                s.synchronize()?;
            }
            evs.iter()
                .map(|(s, e)| cudajit::elapsed_ms(s, e).map(|t| t as f64))
                .collect()
        };
        self.c(run())
    }

    // --- peer copy ------------------------------------------------------------------------

    /// 1 GiB from device 0 to device 1 and back the other way (`copy_from_device_async`, a
    /// `cuMemcpyPeerAsync` on the source device's stream), GB/s of bytes moved.
    pub(crate) fn peer_copy(&self) -> Res<()> {
        let bytes = self.sizes.peer_bytes;
        let labels = [peer_label(bytes, 0, 1), peer_label(bytes, 1, 0)];
        if let Some(why) = self.multi_unavailable(2, false) {
            self.skip_rows(&["peer_copy"], &labels, &why);
            return Ok(());
        }
        let n = bytes / 4;
        let (dev, peer_note) = self.two_devices()?;
        let host = rand_f32(n, self.seed("peer_copy"), -1.0, 1.0);
        let mut a0 = self.c(dev.ctxs[0].to_device(&host[..]))?;
        let mut a1 = self.c(dev.ctxs[1].alloc::<f32, _>(n))?;
        self.c(a1.fill_async(f32::NAN, &dev.streams[1]))?;
        self.c(dev.streams[1].synchronize())?;
        let r01 = self.peer_copy_one(&dev, &peer_note, 0, &a0, &mut a1, &host);
        let r10 = self
            .c(a1.copy_from_host(&host[..]))
            .and_then(|()| self.peer_copy_one(&dev, &peer_note, 1, &a1, &mut a0, &host));
        for (r, label) in [r01, r10].into_iter().zip(&labels) {
            if let Err(e) = r {
                Rec::new("peer_copy", label).devices(2).error(&e).emit();
                eprintln!("bench: peer_copy {label}: {e}");
            }
        }
        Ok(())
    }

    /// One direction of `peer_copy`: `src` on device `from` into `dst` on the other device,
    /// checked against `host`, then timed.
    fn peer_copy_one(
        &self,
        dev: &Devices,
        peer_note: &str,
        from: usize,
        src: &A1<f32>,
        dst: &mut A1<f32>,
        host: &[f32],
    ) -> Res<()> {
        let to = 1 - from;
        let n = host.len();
        let s = &dev.streams[from];
        self.c(dst.fill_async(f32::NAN, &dev.streams[to]))?;
        self.c(dev.synchronize())?;
        self.c(dst.copy_from_device_async(src, s))?;
        self.c(s.synchronize())?;
        let got = self.c(dst.to_vec_async(&dev.streams[to]))?;
        check(
            &format!("peer_copy {from}->{to}"),
            n,
            |i| got[i] as f64,
            |i| host[i] as f64,
            0.0,
        )?;
        drop(got);
        let t = self.time_multi(
            &dev.streams(),
            self.opts.warmup,
            self.opts.reps,
            &mut || dst.copy_from_device_async(src, s),
        )?;
        Rec::new("peer_copy", &peer_label(n * 4, from, to))
            .variant(format!(
                "copy_from_device_async (cuMemcpyPeerAsync) on device {from}'s stream"
            ))
            .times(&t)
            .bytes(n * 4)
            .devices(2)
            .note(format!(
                "{peer_note}; bytes moved; span across both devices' streams"
            ))
            .emit();
        Ok(())
    }

    // --- all-reduce -----------------------------------------------------------------------

    /// `ncclAllReduce` (sum, in place) of f32 buffers over devices 0 and 1
    /// (`Communicator::init_all`, one stream per device, both ranks inside one `nccl::group`),
    /// at each of `sizes.all_reduce_bytes` per rank: time and busbw, timed two ways (the median
    /// of per-iteration spans, and nccl-tests' average over back-to-back iterations).
    pub(crate) fn all_reduce(&self) -> Res<()> {
        let labels: Vec<String> = self
            .sizes
            .all_reduce_bytes
            .iter()
            .map(|&b| all_reduce_label(b))
            .collect();
        let g = self.opts.gpus;
        if let Some(why) = self.multi_unavailable(g, true) {
            self.skip_rows(&["all_reduce"], &labels, &why);
            return Ok(());
        }
        let devices = self.c(cudajit::devices())?;
        let comms = self.c(Communicator::init_all(&devices[..g]))?;
        let streams = self.c(comms
            .iter()
            .map(|c| c.context().new_stream())
            .collect::<cudajit::Result<Vec<_>>>())?;
        let version = nccl::version()
            .map(|(a, b, c)| format!("NCCL {a}.{b}.{c}"))
            .unwrap_or_else(|_| "NCCL ?".into());
        for (&bytes, label) in self.sizes.all_reduce_bytes.iter().zip(&labels) {
            if let Err(e) = self.all_reduce_one(&comms, &streams, bytes, &version) {
                Rec::new("all_reduce", label).devices(g).error(&e).emit();
                eprintln!("bench: all_reduce {label}: {e}");
            }
            for e in cudajit::take_drop_errors() {
                eprintln!("bench: error while freeing: {e}");
            }
        }
        Ok(())
    }

    fn all_reduce_one(
        &self,
        comms: &[Communicator],
        streams: &[Stream],
        bytes: usize,
        version: &str,
    ) -> Res<()> {
        let n = bytes / 4;
        let ranks = comms.len();
        let hosts: Vec<Vec<f32>> = (0..ranks)
            .map(|r| rand_f32(n, self.seed(&format!("all_reduce/{bytes}/{r}")), -1.0, 1.0))
            .collect();
        let mut bufs = self.c(comms
            .iter()
            .zip(&hosts)
            .map(|(c, h)| c.context().to_device(&h[..]))
            .collect::<cudajit::Result<Vec<A1<f32>>>>())?;
        let once = |bufs: &mut [A1<f32>]| {
            nccl::group(|| {
                for ((c, b), s) in comms.iter().zip(bufs.iter_mut()).zip(streams) {
                    c.all_reduce_in_place(b, ReduceOp::Sum, s)?;
                }
                Ok(())
            })
        };
        self.c(once(&mut bufs))?;
        // Two operands: the f32 sum is exact to compare whatever order NCCL adds in.
        for (r, (b, s)) in bufs.iter().zip(streams).enumerate() {
            let got = self.c(b.to_vec_async(s))?;
            check(
                &format!("all_reduce rank {r}"),
                n,
                |i| got[i] as f64,
                |i| hosts.iter().map(|h| h[i]).sum::<f32>() as f64,
                0.0,
            )?;
        }
        drop(hosts);
        // Repeated in-place sums double the values every time: time on zeros, which stay put.
        for (b, s) in bufs.iter_mut().zip(streams) {
            self.c(b.fill_async(0.0, s))?;
        }
        let sref: Vec<&Stream> = streams.iter().collect();
        let label = all_reduce_label(bytes);
        let per_iter = self.time_multi(&sref, self.opts.warmup, self.opts.reps, &mut || {
            once(&mut bufs)
        })?;
        let k = NCCL_TESTS_ITERS;
        let spans = self.time_multi(&sref, 1, self.opts.reps.min(5), &mut || {
            (0..k).try_for_each(|_| once(&mut bufs))
        })?;
        let avg: Vec<f64> = spans.iter().map(|t| t / k as f64).collect();
        for (variant, t) in [
            ("median of per-iteration spans", per_iter),
            ("nccl-tests: average of 20 back-to-back", avg),
        ] {
            let rec = Rec::new("all_reduce", &label).times(&t);
            let bw = busbw_gbs(bytes, rec.ms.unwrap_or(f64::NAN), ranks);
            rec.variant(format!(
                "Communicator::all_reduce_in_place (sum) in nccl::group, {variant}"
            ))
            .bytes(bytes)
            .devices(ranks)
            .busbw_gbs(bw)
            .note(format!(
                "{version}; bytes = per-rank buffer (algbw); busbw = algbw * 2(n-1)/n; \
                 checked against the host, timed on zero-filled buffers"
            ))
            .emit();
        }
        Ok(())
    }

    // --- one GPU: the baselines of the sharded rows ----------------------------------------

    /// `sum_1gpu`: the sum of `n_multi` f32 on device 0 with the library's `Reduction` into a
    /// device scalar; `add_1gpu`: `c = a + b` with the library's `Elementwise`.
    pub(crate) fn one_gpu(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise, ReduceOps, Reduction};
        let n = self.sizes.n_multi;
        let s = &self.stream;
        let e = |e: cudajit::Error| e.to_string();
        if self.opts.selected("sum_1gpu") {
            let hx = rand_f32(n, self.seed("multi_sum/x"), 0.0, 1.0);
            let exact: f64 = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            let x = self.upload(&hx)?;
            // One device's share on two: the first half alone (the sharded rows' reading).
            let half = self.upload(&hx[..n / 2])?;
            drop(hx);
            let mut one = self.poisoned_f32(1)?;
            let sum = Reduction::<f32, f32, f32>::new("multi_sum", |x| x, |a, b| a + b, 0.0)
                .map_err(e)?;
            let got = self.c(x.sum(s))? as f64;
            let rel = ((got - exact) / exact).abs();
            if rel > 1e-5 {
                return Err(format!(
                    "sum_1gpu: got {got}, want {exact} (relative error {rel:.1e})"
                ));
            }
            self.c(sum.reduce_into(s, &x, &mut one))?;
            let g = self.c(one.to_vec_async(s))?[0] as f64;
            if ((g - exact) / exact).abs() > 1e-5 {
                return Err(format!("sum_1gpu (reduce_into): got {g}, want {exact}"));
            }
            let t = self.time_gpu(|| sum.reduce_into(s, &x, &mut one))?;
            Rec::new("sum_1gpu", &self.size_of("sum_1gpu"))
                .variant("cudajit::ops Reduction::reduce_into a device scalar, device 0")
                .times(&t)
                .bytes(n * 4)
                .devices(1)
                .note(format!("relative error {rel:.1e}"))
                .emit();
            let t = self.time_gpu(|| sum.reduce_into(s, &half, &mut one))?;
            Rec::new("sum_1gpu", &self.size_of("sum_1gpu"))
                .imp("cudajit-diag")
                .variant("Reduction::reduce_into of the first half alone, device 0")
                .times(&t)
                .bytes(n / 2 * 4)
                .devices(1)
                .note("one device's share of the sum on two devices (its time is the ideal)")
                .emit();
        }
        if self.opts.selected("scan_1gpu") {
            let hx = rand_f32(n, self.seed("multi_scan/x"), 0.0, 1.0);
            let x = self.upload(&hx)?;
            let mut out = self.poisoned_f32(n)?;
            let scan = multi_cumsum()?;
            self.c(scan.scan_into(s, &x, ScanKind::Inclusive, &mut out))?;
            let got = self.c(out.to_vec_async(s))?;
            let rel = check_running_sum("scan_1gpu", &hx, &got)?;
            drop((got, hx));
            let t = self.time_gpu(|| scan.scan_into(s, &x, ScanKind::Inclusive, &mut out))?;
            Rec::new("scan_1gpu", &self.size_of("scan_1gpu"))
                .variant("cudajit::ops::Scan (f32 +) scan_into, device 0")
                .times(&t)
                .bytes(2 * n * 4)
                .devices(1)
                .note(format!("relative error vs float64 {rel:.1e}"))
                .emit();
        }
        if self.opts.selected("add_1gpu") {
            let (hx, hy, x, y) = self.two_inputs("multi_add", n)?;
            let mut out = self.poisoned_f32(n)?;
            let add =
                Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("multi_add", |(x, y)| x + y)
                    .map_err(e)?;
            self.c(add.apply(s, (&x, &y), &mut out))?;
            let g = self.c(out.to_vec_async(s))?;
            check(
                "add_1gpu",
                n,
                |i| g[i] as f64,
                |i| (hx[i] + hy[i]) as f64,
                0.0,
            )?;
            drop((g, hx, hy));
            let t = self.time_gpu(|| add.apply(s, (&x, &y), &mut out))?;
            Rec::new("add_1gpu", &self.size_of("add_1gpu"))
                .variant("cudajit::ops::Elementwise x + y, device 0")
                .times(&t)
                .bytes(3 * n * 4)
                .devices(1)
                .emit();
        }
        Ok(())
    }

    pub(crate) fn sharded(&self) -> Res<()> {
        use cudajit::ops::{Elem, Elementwise};
        use cudajit::sharded::{Mesh, ShardedArray};
        let label = [size_1d(self.sizes.n_multi, "f32")];
        let g = self.opts.gpus;
        if let Some(why) = self.multi_unavailable(g, false) {
            self.skip_rows(
                &["sum_sharded", "add_sharded", "scan_sharded"],
                &label,
                &why,
            );
            return Ok(());
        }
        let n = self.sizes.n_multi;
        let e = |e: cudajit::Error| e.to_string();
        let ords: Vec<usize> = (0..g).collect();
        let mesh = self.c(Mesh::new(&ords))?;
        let over = format!("over devices {ords:?}");
        let streams: Vec<&Stream> = (0..mesh.len()).map(|k| mesh.stream(k)).collect();
        if self.opts.selected("sum_sharded") {
            let hx = rand_f32(n, self.seed("multi_sum/x"), 0.0, 1.0);
            let exact: f64 = par_fold(n, || 0f64, |a, i| *a += hx[i] as f64, |a, b| a + b);
            let x = self.c(ShardedArray::<f32>::from_host(&mesh, &hx))?;
            drop(hx);
            let got = self.c(x.sum())? as f64;
            let rel = ((got - exact) / exact).abs();
            if rel > 1e-5 {
                return Err(format!(
                    "sum_sharded: got {got}, want {exact} (relative error {rel:.1e})"
                ));
            }
            self.c(mesh.synchronize())?;
            let mut out = self.c(mesh.context(0).alloc::<f32, _>(1))?;
            let t = self.time_multi(&streams, self.opts.warmup, self.opts.reps, &mut || {
                x.sum_into(&mut out)
            })?;
            Rec::new("sum_sharded", &label[0])
                .variant(format!("ShardedArray::sum_into {over}"))
                .times(&t)
                .bytes(n * 4)
                .devices(mesh.len())
                .note(format!(
                    "relative error {rel:.1e}; span across the mesh's streams"
                ))
                .emit();
            let t =
                self.time_per_device(&streams, self.opts.warmup, self.opts.reps, &mut || {
                    x.sum_into(&mut out)
                })?;
            Rec::new("sum_sharded", &label[0])
                .imp("cudajit-diag")
                .variant("ShardedArray::sum_into, timed per device as torch.distributed is")
                .times(&t)
                .bytes(n * 4)
                .devices(mesh.len())
                .note("per repetition the slower device's own span (its events around the call)")
                .emit();
        }
        if self.opts.selected("add_sharded") {
            let hx = rand_f32(n, self.seed("multi_add/x"), -1.0, 1.0);
            let hy = rand_f32(n, self.seed("multi_add/y"), -1.0, 1.0);
            let a = self.c(ShardedArray::<f32>::from_host(&mesh, &hx))?;
            let b = self.c(ShardedArray::<f32>::from_host(&mesh, &hy))?;
            let mut c = self.c(ShardedArray::<f32>::alloc(&mesh, n))?;
            self.c(c.fill(f32::NAN))?; // poisoned: a stale buffer cannot pass the check
            let add =
                Elementwise::<(Elem<f32>, Elem<f32>), Expr<f32>>::new("multi_add", |(x, y)| x + y)
                    .map_err(e)?;
            self.c(add.apply_sharded((&a, &b), &mut c))?;
            let g = self.c(c.to_vec())?;
            check(
                "add_sharded",
                n,
                |i| g[i] as f64,
                |i| (hx[i] + hy[i]) as f64,
                0.0,
            )?;
            drop((g, hx, hy));
            let t = self.time_multi(&streams, self.opts.warmup, self.opts.reps, &mut || {
                add.apply_sharded((&a, &b), &mut c)
            })?;
            Rec::new("add_sharded", &label[0])
                .variant(format!("Elementwise::apply_sharded x + y {over}"))
                .times(&t)
                .bytes(3 * n * 4)
                .devices(mesh.len())
                .note("span across the mesh's streams")
                .emit();
        }
        if self.opts.selected("scan_sharded") {
            let hx = rand_f32(n, self.seed("multi_scan/x"), 0.0, 1.0);
            let x = self.c(ShardedArray::<f32>::from_host(&mesh, &hx))?;
            let mut out = self.c(ShardedArray::<f32>::alloc(&mesh, n))?;
            self.c(out.fill(f32::NAN))?;
            let scan = multi_cumsum()?;
            self.c(x.scan_into(&scan, ScanKind::Inclusive, &mut out))?;
            let got = self.c(out.to_vec())?;
            let rel = check_running_sum("scan_sharded", &hx, &got)?;
            drop((got, hx));
            let t = self.time_multi(&streams, self.opts.warmup, self.opts.reps, &mut || {
                x.scan_into(&scan, ScanKind::Inclusive, &mut out)
            })?;
            Rec::new("scan_sharded", &label[0])
                .variant(format!(
                    "ShardedArray::scan_into (f32 +) {over}: shard totals, then every shard's scan from the totals before it"
                ))
                .times(&t)
                .bytes(2 * n * 4)
                .devices(mesh.len())
                .note(format!(
                    "relative error vs float64 {rel:.1e}; span across the mesh's streams"
                ))
                .emit();
        }
        Ok(())
    }
}

/// The f32 sum scan of the scan rows (the same operator as `cumsum`).
fn multi_cumsum() -> Res<cudajit::ops::Scan<f32>> {
    cudajit::ops::Scan::<f32>::new("multi_cumsum", |a, b| a + b, -0.0).map_err(|e| e.to_string())
}
