//! The soak's rounds of the newer paths: CUDA graphs (captured with memory from the pool,
//! instantiated, launched several times), the stream-ordered pool with scans, sharded arrays
//! over two devices (elementwise, reductions, scans), and NCCL collectives (all-reduce,
//! all-gather, reduce-scatter, broadcast) through communicators the threads share in turn.
//! Every result is checked against the host exactly (integers, and floats whose sums are
//! exact).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use cudajit::codegen::{Expr, Kernel};
use cudajit::nccl::{self, Communicator, ReduceOp};
use cudajit::ops::{Elem, Elementwise, ScanOps};
use cudajit::prelude::*;
use cudajit::sharded::{Mesh, ShardedArray};

/// The kinds of rounds, in the order of their counters.
pub const KINDS: [&str; 4] = ["graph", "pool+scan", "sharded", "nccl"];

/// Held for writing by a graph round (from capture to its last launch) and for reading by
/// every other round, so that no other work of the process runs while a thread captures.
/// The first two-GPU soaks with graphs beside everything else lost their captures:
/// `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` while capturing on blocking streams, then
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` within 2 s on non-blocking ones (CUDA invalidates a
/// capture when another thread synchronises the whole context or waits on an event recorded in
/// the capture; which call of which round did it is not isolated yet). `SOAK_CONCURRENT_CAPTURE=1`
/// turns the lock off, to look for it.
pub static CAPTURE: RwLock<()> = RwLock::new(());

/// Whether graph rounds run alone (the default; see [`CAPTURE`]).
pub fn captures_alone() -> bool {
    std::env::var_os("SOAK_CONCURRENT_CAPTURE").is_none()
}

/// What the newer rounds share.
pub struct Newer {
    inc: Kernel<(&'static mut [f32], &'static [f32])>,
    half: Elementwise<(Elem<f32>,), Expr<f32>>,
    double: Elementwise<(Elem<i64>,), Expr<i64>>,
    /// Whether two devices are there (sharded rounds).
    two: bool,
    /// The communicators of devices 0 and 1 and a mesh for their streams (NCCL rounds), used
    /// by one thread at a time.
    nccl: Option<Mutex<(Mesh, Vec<Communicator>)>>,
    /// Rounds done, per kind.
    pub done: [AtomicU64; 4],
}

impl Newer {
    /// Builds the kernels, and the communicators where there are two GPUs and NCCL.
    pub fn new() -> Result<Newer> {
        let inc = Kernel::<(&mut [f32], &[f32])>::build("soak_inc", |k, (y, x)| {
            let i = k.grid1();
            k.if_(i.lt(y.len()), |_| y.set(i, y.at(i) + x.at(i)));
        })?;
        let half = Elementwise::new("soak_half", |(x,)| x * 0.5f32)?;
        let double = Elementwise::new("soak_double", |(v,)| v + v)?;
        let two = cudajit::device_count()? >= 2;
        let nccl = if two && !cudajit::on_simulator() && nccl::is_available() {
            let mesh = Mesh::new(&[0, 1])?;
            let comms = Communicator::init_all(&mesh.devices())?;
            Some(Mutex::new((mesh, comms)))
        } else {
            None
        };
        Ok(Newer {
            inc,
            half,
            double,
            two,
            nccl,
            done: Default::default(),
        })
    }

    /// Which kinds run here.
    pub fn describe(&self) -> String {
        format!(
            "graphs{}, pool and scans{}{}",
            if captures_alone() {
                " (captured with no other round running)"
            } else {
                " (captured beside the other rounds)"
            },
            if self.two {
                ", sharded arrays on devices 0 and 1"
            } else {
                ""
            },
            if self.nccl.is_some() {
                ", NCCL collectives"
            } else {
                ""
            }
        )
    }

    /// Round `r` of thread `t` on device 0's context `ctx`: one of the kinds, in turn.
    pub fn round(&self, ctx: &Context, t: u64, r: u64) -> Result<()> {
        let n = 1000 + ((t * 7919 + r * 131) % 60_000) as usize;
        let kind = match (r % 4, self.two, self.nccl.is_some()) {
            (2, true, _) => 2,
            (3, _, true) => 3,
            (k, _, _) => (k % 2) as usize,
        };
        let (_alone, _beside);
        if kind == 0 && captures_alone() {
            _alone = CAPTURE.write().unwrap_or_else(|e| e.into_inner());
        } else {
            _beside = CAPTURE.read().unwrap_or_else(|e| e.into_inner());
        }
        match kind {
            0 => self.graph(ctx, t, r, n)?,
            1 => self.pool_scan(ctx, t, r, n)?,
            2 => self.sharded(t, r, n)?,
            _ => self.collectives(t, r, n)?,
        }
        self.done[kind].fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A graph of `y += x; y += half(x)` (the elementwise output from the pool, allocated and
    /// freed by the graph), launched three times: `y = 4.5·x`.
    fn graph(&self, ctx: &Context, t: u64, r: u64, n: usize) -> Result<()> {
        // A non-blocking stream: while a blocking stream captures, CUDA refuses any work on
        // the legacy default stream in its context (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), e.g.
        // another thread's synchronous memset (the first soak with graphs hit exactly this).
        let s = ctx.new_stream_with(cudajit::StreamOptions {
            non_blocking: true,
            priority: 0,
        })?;
        let x: Vec<f32> = (0..n).map(|i| ((i as u64 + t + r) % 100) as f32).collect();
        let dx = s.to_device(&x)?;
        let mut y = s.zeros_async::<f32, _>(n)?;
        let cfg = LaunchConfig::for_num_elems(n, 256)?;
        let graph = s.capture(|s| {
            self.inc.launch(s, cfg, (&mut y, &dx))?;
            let h = self.half.call(s, (&dx,))?.into_shape(n)?;
            self.inc.launch(s, cfg, (&mut y, &h))
        })?;
        let exec = graph.instantiate()?;
        for _ in 0..3 {
            // SAFETY: `dx` and `y` outlive the launches: the copy below waits for them.
            unsafe { exec.launch(&s)? };
        }
        let got = y.to_vec_async(&s)?;
        check(t, r, "graph", &got, |i| 4.5 * x[i])
    }

    /// Arrays from the pool (allocated, zeroed, filled, scanned and dropped in stream order):
    /// the inclusive and exclusive cumulative sums of small integers.
    fn pool_scan(&self, ctx: &Context, t: u64, r: u64, n: usize) -> Result<()> {
        let s = ctx.new_stream()?;
        let host: Vec<i64> = (0..n)
            .map(|i| ((i as u64 * 7 + t + r) % 1000) as i64 - 500)
            .collect();
        let mut a = s.alloc_async::<i64, _>(n)?;
        a.copy_from_host_async(&host, &s)?;
        let inc = a.cumsum(&s)?;
        let exc = a.cumsum_exclusive(&s)?;
        let scratch = s.zeros_async::<u8, _>(1 + (r as usize % 7) * 100_000)?;
        drop(scratch);
        let (gi, ge) = (inc.to_vec_async(&s)?, exc.to_vec_async(&s)?);
        let mut run = 0i64;
        for i in 0..n {
            if ge[i] != run {
                return Err(wrong(t, r, "exclusive cumsum", i, ge[i], run));
            }
            run += host[i];
            if gi[i] != run {
                return Err(wrong(t, r, "inclusive cumsum", i, gi[i], run));
            }
        }
        Ok(())
    }

    /// A sharded array over devices 0 and 1 (a new mesh each time): doubled elementwise, its
    /// sum, and its cumulative sum across the shards.
    fn sharded(&self, t: u64, r: u64, n: usize) -> Result<()> {
        let mesh = Mesh::new(&[0, 1])?;
        let host: Vec<i64> = (0..n)
            .map(|i| ((i as u64 + t * 3 + r) % 1000) as i64)
            .collect();
        let x = ShardedArray::from_host(&mesh, &host)?;
        let y = self.double.call_sharded((&x,))?;
        let want: i64 = host.iter().map(|v| 2 * v).sum();
        let sum = y.sum()?;
        if sum != want {
            return Err(wrong(t, r, "sharded sum", 0, sum, want));
        }
        let c = x.cumsum()?.to_vec()?;
        let mut run = 0i64;
        for (i, &g) in c.iter().enumerate() {
            run += host[i];
            if g != run {
                return Err(wrong(t, r, "sharded cumsum", i, g, run));
            }
        }
        Ok(())
    }

    /// NCCL on devices 0 and 1: all-reduce, all-gather, reduce-scatter and broadcast of
    /// integers (as f32, exact), with the communicators held by this thread meanwhile.
    fn collectives(&self, t: u64, r: u64, n: usize) -> Result<()> {
        let Some(lock) = &self.nccl else {
            return Ok(());
        };
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (mesh, comms) = &*guard;
        let n = n & !1; // reduce-scatter splits evenly
        let val = |k: usize, i: usize| ((i + k * 7 + (t + r) as usize) % 512) as f32;
        let mut sum = Vec::new();
        let mut gathered = Vec::new();
        let mut scattered = Vec::new();
        let mut bcast = Vec::new();
        for k in 0..2 {
            let s = mesh.stream(k);
            let host: Vec<f32> = (0..n).map(|i| val(k, i)).collect();
            sum.push(s.to_device(&host)?);
            gathered.push((s.to_device(&host)?, s.alloc_async::<f32, _>(2 * n)?));
            scattered.push((s.to_device(&host)?, s.alloc_async::<f32, _>(n / 2)?));
            bcast.push(s.to_device(&host)?);
        }
        nccl::group(|| {
            for (k, comm) in comms.iter().enumerate() {
                let s = mesh.stream(k);
                comm.all_reduce_in_place(&mut sum[k], ReduceOp::Sum, s)?;
                let (send, recv) = &mut gathered[k];
                comm.all_gather(&*send, recv, s)?;
                let (send, recv) = &mut scattered[k];
                comm.reduce_scatter(&*send, recv, ReduceOp::Sum, s)?;
                comm.broadcast_in_place(&mut bcast[k], 1, s)?;
            }
            Ok(())
        })?;
        for k in 0..2 {
            let s = mesh.stream(k);
            let what = format!("device {k}");
            check(
                t,
                r,
                &format!("all-reduce {what}"),
                &sum[k].to_vec_async(s)?,
                |i| val(0, i) + val(1, i),
            )?;
            check(
                t,
                r,
                &format!("all-gather {what}"),
                &gathered[k].1.to_vec_async(s)?,
                |i| val(i / n, i % n),
            )?;
            check(
                t,
                r,
                &format!("reduce-scatter {what}"),
                &scattered[k].1.to_vec_async(s)?,
                |i| val(0, k * n / 2 + i) + val(1, k * n / 2 + i),
            )?;
            check(
                t,
                r,
                &format!("broadcast {what}"),
                &bcast[k].to_vec_async(s)?,
                |i| val(1, i),
            )?;
        }
        Ok(())
    }
}

/// Checks every element of `got` against `want(i)`, exactly.
fn check(t: u64, r: u64, what: &str, got: &[f32], want: impl Fn(usize) -> f32) -> Result<()> {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        Some(i) => Err(wrong(t, r, what, i, got[i], want(i))),
        None => Ok(()),
    }
}

/// The error of a wrong element.
fn wrong<V: std::fmt::Display>(t: u64, r: u64, what: &str, i: usize, got: V, want: V) -> Error {
    Error::Usage(format!(
        "thread {t} round {r}: {what}: element {i} is {got}, want {want}"
    ))
}
