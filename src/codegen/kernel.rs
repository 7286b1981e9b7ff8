//! `Kernel<P>`: a kernel built from Rust, compiled to PTX on demand, loaded once per device,
//! and launched with arguments whose types the parameter list `P` fixes.

use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::builder::{record, Kind};
use super::control::KernelBuilder;
use super::lower;
use super::options::PtxOptions;
use super::signature::{ArgBuffer, KernelParams, LaunchArgs};
use crate::backend::backend;
use crate::context::{Context, Device};
use crate::error::{Error, LaunchError, Result};
use crate::graph::{Graph, GraphNode};
use crate::ir::FunctionIr;
use crate::module::{Function, LaunchConfig};
use crate::stream::Stream;

/// Devices whose loaded function is found without locking.
const FAST_DEVICES: usize = 16;

/// A kernel with parameter list `P` (a tuple such as `(&[f32], &mut [f32], f32)`).
///
/// Once launched on a device, the kernel keeps its loaded module, and with it the device's
/// context, alive: drop the kernel before [`Context::reset`].
///
/// Arguments of the wrong type or count do not compile:
///
/// ```compile_fail
/// # use cudajit::prelude::*;
/// # use cudajit::codegen::Kernel;
/// # fn f(stream: &Stream, x: &DeviceArray<f32>, y: &mut DeviceArray<f64>) -> cudajit::Result<()> {
/// let k = Kernel::<(&[f32], &mut [f32])>::build("copy", |k, (x, y)| y.set(k.grid1(), x.at(k.grid1())))?;
/// k.launch(stream, LaunchConfig::new(1, 32), (x, y))?; // y holds f64, not f32
/// # Ok(()) }
/// ```
///
/// ```compile_fail
/// # use cudajit::prelude::*;
/// # use cudajit::codegen::Kernel;
/// # fn f(stream: &Stream, x: &DeviceArray<f32>) -> cudajit::Result<()> {
/// let k = Kernel::<(&[f32], &mut [f32])>::build("copy", |k, (x, y)| y.set(k.grid1(), x.at(k.grid1())))?;
/// k.launch(stream, LaunchConfig::new(1, 32), (x,))?; // one argument missing
/// # Ok(()) }
/// ```
///
/// A host array the kernel may write is borrowed `&mut` for the launch, so it cannot alias
/// another argument:
///
/// ```compile_fail
/// # use cudajit::prelude::*;
/// # use cudajit::codegen::Kernel;
/// # fn f(stream: &Stream) -> cudajit::Result<()> {
/// let k = Kernel::<(&[f32], &mut [f32])>::build("copy", |k, (x, y)| y.set(k.grid1(), x.at(k.grid1())))?;
/// let mut v = vec![1.0f32; 32];
/// k.launch(stream, LaunchConfig::new(1, 32), (&v, &mut v))?; // aliasing: refused
/// # Ok(()) }
/// ```
pub struct Kernel<P> {
    inner: Arc<KernelInner>,
    _p: PhantomData<fn(P)>,
}

impl<P> Clone for Kernel<P> {
    fn clone(&self) -> Self {
        Kernel {
            inner: self.inner.clone(),
            _p: PhantomData,
        }
    }
}

struct KernelInner {
    ir: Arc<FunctionIr>,
    /// Byte alignment each parameter's array needs (vector accesses).
    align: Vec<u32>,
    options: PtxOptions,
    /// The loaded function per device ordinal (lock-free once set; filled by the compile
    /// cache's load path, `cache::function`).
    loaded: [OnceLock<Function>; FAST_DEVICES],
    /// Functions for other devices, or replacing a stale one after a context reset.
    others: Mutex<Vec<&'static Function>>,
    /// Whether a launch with host arrays has logged its warning.
    warned_host: AtomicBool,
    /// Kernels that launch kernels: the index of the hidden status parameter.
    dp_status: Option<u32>,
}

/// Why `name` cannot be a PTX symbol, if it cannot.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    (!ok).then(|| {
        format!(
            "`{name}` cannot name a kernel: use letters, digits and `_`, not starting with a digit"
        )
    })
}

/// Checks that `name` can be a PTX symbol (a build error at the caller's location if not).
#[track_caller]
pub(crate) fn check_name(name: &str) -> Result<()> {
    match name_problem(name) {
        None => Ok(()),
        Some(msg) => Err(super::builder::build_error(
            name,
            vec![(Kind::InvalidName, msg, None)],
            std::panic::Location::caller(),
        )),
    }
}

impl<P: KernelParams> Kernel<P> {
    /// Builds a kernel: `body` receives the builder `k` and one handle per parameter, and
    /// records what the kernel does. Misuse the types cannot catch (a value used outside the
    /// block that computed it, a barrier only some threads reach, ...) is an error here.
    #[track_caller]
    pub fn build(name: &str, body: impl FnOnce(&KernelBuilder, P::Handles)) -> Result<Kernel<P>> {
        Self::build_with(name, PtxOptions::default(), body)
    }

    /// Builds a kernel with compile options (fastmath, opt level, FMA contraction; the target
    /// follows the device at launch). [`PtxOptions::contract`] is applied now, as the body is
    /// recorded: the kernel's IR holds its fused multiply-adds.
    #[track_caller]
    pub fn build_with(
        name: &str,
        options: PtxOptions,
        body: impl FnOnce(&KernelBuilder, P::Handles),
    ) -> Result<Kernel<P>> {
        let here = std::panic::Location::caller();
        check_name(name)?;
        let ((), ir) = record(name, None, || {
            super::builder::with_state(|s| {
                s.kernel = true;
                // Decided as the body is recorded (see `FnState::contract`).
                s.contract = options.contract;
            });
            let tag = super::builder::current_tag();
            let handles = P::declare_all();
            body(&KernelBuilder { tag }, handles);
        });
        let mut ir = ir.map_err(|errors| super::builder::build_error(name, errors, here))?;
        ir.lines.def = Some(here);
        let externs = super::extern_fn::check_externs(&ir)
            .into_iter()
            .chain(super::extern_fn::check_prototypes(&ir))
            .map(|m| (Kind::ExternSignature, m, None));
        let consts = super::const_mem::check_const_size(&ir)
            .into_iter()
            .map(|m| (Kind::ConstantMemory, m, None));
        let errors: Vec<_> = externs.chain(consts).collect();
        if !errors.is_empty() {
            return Err(super::builder::build_error(name, errors, here));
        }
        let dp_status = crate::ir::device_launch::status_param(&ir);
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                align: ir.param_alignments(),
                ir: Arc::new(ir),
                options,
                loaded: Default::default(),
                others: Mutex::new(Vec::new()),
                warned_host: AtomicBool::new(false),
                dp_status,
            }),
            _p: PhantomData,
        })
    }

    /// The kernel's IR (what the simulator executes).
    pub(crate) fn ir(&self) -> &Arc<FunctionIr> {
        &self.inner.ir
    }

    /// The kernel's name (its PTX entry point).
    pub fn name(&self) -> &str {
        &self.inner.ir.name
    }

    /// The options the kernel was built with.
    pub fn options(&self) -> &PtxOptions {
        &self.inner.options
    }

    /// The kernel's PTX for `options` (works with no GPU and no driver).
    pub fn compile_ptx(&self, options: &PtxOptions) -> Result<String> {
        Ok(super::cache::ptx(&self.inner.ir, options)?.to_string())
    }

    /// The kernel's optimised LLVM IR for `options`.
    pub fn llvm_ir(&self, options: &PtxOptions) -> Result<String> {
        lower::llvm_ir(&self.inner.ir, lower::Role::Kernel, options)
    }

    /// The options used for `device`: the build options with its compute capability and the
    /// installed driver's version.
    pub fn options_for(&self, device: &Device) -> Result<PtxOptions> {
        Ok(PtxOptions {
            cc: device.compute_capability()?,
            driver: Some(super::options::installed_driver()?),
            ..self.inner.options.clone()
        })
    }

    /// The kernel's PTX for the current context's device.
    pub fn compile_ptx_for_current_device(&self) -> Result<String> {
        let dev = crate::context::current_device()?.ok_or_else(|| {
            Error::usage("no context is current on this thread; make one current first")
        })?;
        self.compile_ptx(&self.options_for(&dev)?)
    }

    /// The kernel loaded in `ctx` (compiled and loaded on first use, then cached).
    pub fn function(&self, ctx: &Context) -> Result<Function> {
        self.loaded_function(ctx).cloned()
    }

    #[inline]
    fn loaded_function(&self, ctx: &Context) -> Result<&Function> {
        let ordinal = ctx.device().ordinal();
        if let Some(f) = self.inner.loaded.get(ordinal).and_then(OnceLock::get) {
            if f.module().context().same_as(ctx) {
                return Ok(f);
            }
        }
        self.load_slow(ctx)
    }

    #[cold]
    fn load_slow(&self, ctx: &Context) -> Result<&Function> {
        let load = || -> Result<Function> {
            super::cache::function(ctx, &self.inner.ir, &self.options_for(&ctx.device())?)
        };
        if let Some(slot) = self.inner.loaded.get(ctx.device().ordinal()) {
            if slot.get().is_none() {
                let f = load()?;
                let _ = slot.set(f);
            }
            if let Some(f) = slot.get() {
                if f.module().context().same_as(ctx) {
                    return Ok(f);
                }
            }
        }
        // A device beyond the fast table, or a context that replaced the one cached: each such
        // function is loaded and leaked once, and found again here without reloading.
        let mut others = self.inner.others.lock();
        if let Some(f) = others.iter().find(|f| f.module().context().same_as(ctx)) {
            return Ok(*f);
        }
        let f: &'static Function = Box::leak(Box::new(load()?));
        others.push(f);
        Ok(f)
    }

    /// A 1-D configuration covering `n` elements with the occupancy API's block size.
    pub fn config_for_num_elems(&self, ctx: &Context, n: usize) -> Result<LaunchConfig> {
        self.loaded_function(ctx)?.config_for_num_elems(n)
    }

    /// Launches the kernel on `stream`. The arguments' types are fixed by `P`; arrays must
    /// belong to the stream's context; the configuration is checked against the kernel's limits.
    ///
    /// Host arrays (`&[T]`, `&Vec<T>`, ndarray arrays and views; `&mut` ones for parameters
    /// the kernel may write) are accepted too, as Numba accepts NumPy arrays: copied to the
    /// device before the launch, the writable ones copied back after it, the call then
    /// waiting for the kernel (see the guide's "Host arrays at launch" for the cost; the first
    /// such launch of each kernel logs a warning). Not inside a graph capture.
    #[inline]
    pub fn launch<A: LaunchArgs<P>>(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        mut args: A,
    ) -> Result<()> {
        let mut buf = ArgBuffer::for_launch(stream, &self.inner.align);
        self.launch_in(&mut buf, stream, config, |buf| args.push_all(buf))?;
        if buf.has_staged() {
            self.finish_host_arrays(&mut buf, stream, |buf| args.after_all(buf))?;
        }
        Ok(())
    }

    /// After a launch with host arrays: the warning (once), the wait, the copies back.
    #[cold]
    fn finish_host_arrays(
        &self,
        buf: &mut ArgBuffer<'_>,
        stream: &Stream,
        after: impl FnOnce(&mut ArgBuffer<'_>) -> Result<()>,
    ) -> Result<()> {
        super::host_args::warn_once(&self.inner.warned_host, self.name(), buf.staged_count());
        super::host_args::finish(buf, stream, after)
    }

    /// Adds a launch of the kernel to a graph built by hand ([`Graph::new`]), run after `deps`:
    /// the arguments' values are copied into the node now (their arrays must outlive the
    /// graph's launches). Checked as [`Kernel::launch`] is; a cluster shape
    /// ([`LaunchConfig::with_cluster`]) is the node's attribute.
    pub fn add_to_graph<A: LaunchArgs<P>>(
        &self,
        graph: &mut Graph,
        config: LaunchConfig,
        args: A,
        deps: &[GraphNode],
    ) -> Result<GraphNode> {
        if self.inner.dp_status.is_some() {
            return Err(Error::usage(format!(
                "kernel `{}` launches kernels from the device and needs its status words, which a \
                 hand-built graph node does not give: launch it with `Kernel::launch`",
                self.name()
            )));
        }
        if self.inner.ir.grid_barrier.is_some() {
            return Err(Error::Launch(LaunchError::Cooperative {
                message: format!(
                    "kernel `{}` calls grid_sync() and needs a cooperative launch with its barrier \
                     words, which a hand-built graph node does not give: capture its launch instead \
                     (`Stream::capture`)",
                    self.name()
                ),
            }));
        }
        let ctx = graph.context().clone();
        let f = self.loaded_function(&ctx)?;
        config.validate(f)?;
        let mut buf = ArgBuffer::new(&ctx, &self.inner.align);
        args.push_all(&mut buf)?;
        ctx.bind()?;
        let (g, b) = (config.grid, config.block);
        let deps = crate::graph::raw_deps(deps);
        let node = buf.with_params(|params| {
            // SAFETY: the parameter slots were pushed in the order and with the types of the
            // kernel's IR parameters (fixed by `P`), each array belongs to the graph's
            // context; the driver copies them.
            unsafe {
                backend().graph_add_kernel(
                    graph.raw(),
                    &deps,
                    f.raw(),
                    [[g.x, g.y, g.z], [b.x, b.y, b.z], config.cluster_dims()],
                    config.shared_mem_bytes,
                    params,
                )
            }
        })?;
        Ok(GraphNode(node))
    }

    /// Launches with arguments pushed by `push` (for kernels whose parameters were declared by
    /// hand inside the build closure, e.g. by the elementwise generator).
    #[inline]
    pub(crate) fn launch_with(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        push: impl FnOnce(&mut ArgBuffer<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut buf = ArgBuffer::for_launch(stream, &self.inner.align);
        self.launch_in(&mut buf, stream, config, push)?;
        if buf.has_staged() {
            self.finish_host_arrays(&mut buf, stream, |_| Ok(()))?;
        }
        Ok(())
    }

    /// Pushes the arguments into `buf` and launches.
    #[inline]
    fn launch_in(
        &self,
        buf: &mut ArgBuffer<'_>,
        stream: &Stream,
        config: LaunchConfig,
        push: impl FnOnce(&mut ArgBuffer<'_>) -> Result<()>,
    ) -> Result<()> {
        let ctx = stream.context();
        let f = self.loaded_function(ctx)?;
        config.validate(f)?;
        push(buf)?;
        // A kernel that synchronises its grid: the barrier's two words, zeroed in stream order
        // (freed in stream order after the launch), and a cooperative launch of a grid that
        // fits on the device at once. A kernel that launches kernels: its status words (see
        // `device_launch`), read back after the launch. Hidden parameters come in their order.
        if self.inner.dp_status.is_some() {
            // The launch waits for the kernel's status words: nothing may wait in a capture.
            crate::graph::refuse("launching a kernel that launches kernels")?;
        }
        let cooperative = self.inner.ir.grid_barrier.is_some();
        if cooperative {
            self.check_cooperative(ctx, f, &config)?;
        }
        let mut hidden: Vec<(u32, bool)> = Vec::new();
        hidden.extend(self.inner.ir.grid_barrier.map(|i| (i, true)));
        hidden.extend(self.inner.dp_status.map(|i| (i, false)));
        hidden.sort_unstable();
        let (mut barrier, mut status) = (None, None);
        for (_, is_barrier) in hidden {
            if is_barrier {
                let bar = stream.zeros_async::<u32, _>(2)?;
                buf.push_array(&bar)?;
                barrier = Some(bar);
            } else {
                let st = super::device_launch::host::alloc(stream)?;
                buf.push_array(&st)?;
                status = Some(st);
            }
        }
        ctx.bind()?;
        buf.with_params(|params| {
            // SAFETY: the parameter slots were pushed in the order and with the types of the
            // kernel's IR parameters (fixed by `P`; the hidden ones last, in their order),
            // each array belongs to this context, and the function is live.
            unsafe { crate::module::launch_raw(f, &config, stream.raw(), params, cooperative) }
        })
        .map_err(|e| crate::module::explain_launch_error(f, &config, e))?;
        drop(barrier);
        match status {
            Some(st) => super::device_launch::host::check(&self.inner.ir, stream, &st),
            None => Ok(()),
        }
    }

    /// How many blocks of `block_threads` threads (with `dynamic_shared_bytes` of dynamic
    /// shared memory each) can be resident on `ctx`'s device at once: the largest grid a
    /// kernel that calls `grid_sync()` can be launched with (the occupancy API's blocks per
    /// multiprocessor times the multiprocessors).
    pub fn max_cooperative_blocks(
        &self,
        ctx: &Context,
        block_threads: u32,
        dynamic_shared_bytes: usize,
    ) -> Result<u32> {
        let f = self.loaded_function(ctx)?;
        let (per_sm, sms) = resident_blocks(ctx, f, block_threads, dynamic_shared_bytes)?;
        Ok(per_sm.saturating_mul(sms))
    }

    /// How many clusters of `config`'s shape (its block, cluster and dynamic shared memory)
    /// can be resident on `ctx`'s device at once (`cudaOccupancyMaxActiveClusters`): a
    /// persistent kernel's grid is at most this many clusters. 0 when the shape cannot run.
    pub fn max_active_clusters(&self, ctx: &Context, config: LaunchConfig) -> Result<u32> {
        let f = self.loaded_function(ctx)?;
        config.validate(f)?;
        let (g, b) = (config.grid, config.block);
        ctx.bind()?;
        // SAFETY: a live function of `ctx`, which is current.
        let n = unsafe {
            backend().occupancy_max_active_clusters(
                f.raw(),
                [g.x, g.y, g.z],
                [b.x, b.y, b.z],
                config.cluster_dims(),
                config.shared_mem_bytes,
            )
        }?;
        Ok(n.max(0) as u32)
    }

    /// Refuses a cooperative launch whose blocks cannot all be resident at once.
    fn check_cooperative(&self, ctx: &Context, f: &Function, config: &LaunchConfig) -> Result<()> {
        let (g, b) = (config.grid, config.block);
        let blocks = g.x as u64 * g.y as u64 * g.z as u64;
        let threads = b.x * b.y * b.z;
        let smem = config.shared_mem_bytes as usize;
        let (per_sm, sms) = resident_blocks(ctx, f, threads, smem)?;
        let max = per_sm as u64 * sms as u64;
        if blocks > max {
            return Err(Error::Launch(LaunchError::Cooperative {
                message: format!(
                    "kernel `{}` calls grid_sync(), so all of its blocks must be resident on the \
                 device at once, but its grid has {blocks} blocks and at most {max} fit \
                 ({per_sm} blocks of {threads} threads with {smem} bytes of dynamic shared \
                 memory per multiprocessor, {sms} multiprocessors): launch at most {max} \
                 blocks (`Kernel::max_cooperative_blocks`) and cover the work with a \
                 grid-stride loop",
                    self.name()
                ),
            }));
        }
        Ok(())
    }
}

/// How many blocks of `threads` threads (with `smem` bytes of dynamic shared memory) of `f`
/// fit on one multiprocessor at once (the occupancy API), and the device's multiprocessors.
fn resident_blocks(ctx: &Context, f: &Function, threads: u32, smem: usize) -> Result<(u32, u32)> {
    let per_sm = f.max_active_blocks_per_multiprocessor(threads, smem)?;
    Ok((per_sm, ctx.device().multiprocessor_count()?))
}
