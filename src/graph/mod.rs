//! CUDA graphs: work captured from a stream once, then launched as one unit, many times, for
//! a fraction of the launch cost of its parts.
//!
//! ```no_run
//! # use cudajit::prelude::*;
//! # use cudajit::codegen::Kernel;
//! # fn main() -> cudajit::Result<()> {
//! let ctx = Device::get(0)?.primary_context()?;
//! let stream = ctx.new_stream()?;
//! let mut x = stream.to_device(&vec![1.0f32; 1 << 20])?;
//! let inc = Kernel::<(&mut [f32],)>::build("inc", |k, (x,)| {
//!     let i = k.grid1();
//!     k.if_(i.lt(x.len()), |_| x.set(i, x.at(i) + 1.0));
//! })?;
//! let cfg = LaunchConfig::for_num_elems(1 << 20, 256)?;
//! let graph = stream.capture(|s| {
//!     for _ in 0..100 {
//!         inc.launch(s, cfg, (&mut x,))?;
//!     }
//!     Ok(())
//! })?;
//! let exec = graph.instantiate()?;
//! // SAFETY: `x`, the only memory the graph uses, outlives the launch.
//! unsafe { exec.launch(&stream) }?; // 100 kernels, one launch
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! What a capture records: kernel launches (with their arguments' values at capture time),
//! copies, fills, [`Elementwise`](crate::ops::Elementwise) operations and reductions into
//! device arrays, stream-ordered allocations and frees ([`Stream::alloc_async`]), host functions
//! ([`Stream::launch_host_fn`]), event records. What it cannot record is refused with an error
//! naming the call, and the capture goes on: synchronising calls, allocations outside the
//! stream's pool, synchronous copies and copies from pageable host memory, one-shot host
//! functions ([`Stream::launch_host_func`]).
//!
//! A graph replays device addresses: the arrays it uses must stay alive while it runs (hence
//! the `unsafe` on [`GraphExec::launch`]). Arrays dropped during the capture are kept for the
//! graph and freed with it.

mod build;
mod capture;

pub(crate) use build::raw_deps;
pub use build::GraphNode;
pub(crate) use capture::{capturing, defer_free, keep_alive, refuse};

use std::fmt;
use std::sync::Arc;

use cudajit_sys as sys;

use crate::backend::backend;
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::stream::Stream;

/// What a graph keeps for its launches: objects (host functions) and device memory that was
/// dropped during the capture, freed when the graph and every instantiation of it are gone.
struct Held {
    _keep: Vec<capture::KeepAlive>,
    frees: Vec<(Context, sys::CUdeviceptr)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        for (ctx, ptr) in self.frees.drain(..) {
            ctx.bind_in_drop();
            // SAFETY: the allocation's owner was dropped during the capture and gave it to
            // this graph, which frees it once.
            check_in_drop(unsafe { backend().mem_free(ptr) });
        }
    }
}

/// A graph of device work (`CUgraph`), from [`Stream::end_capture`] or [`Stream::capture`].
/// Instantiate it to launch it.
pub struct Graph {
    ctx: Context,
    raw: sys::CUgraph,
    held: Arc<Held>,
}

// SAFETY: a CUgraph may be used from any thread (not concurrently, which `&mut`/`&` rules on
// this type's methods ensure: the driver calls on `&self` only read it).
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the graph was made by cudajit and is destroyed once.
        check_in_drop(unsafe { backend().graph_destroy(self.raw) });
    }
}

impl Graph {
    /// Its number of nodes (kernels, copies, fills, ...).
    pub fn node_count(&self) -> Result<usize> {
        self.ctx.bind()?;
        // SAFETY: the graph is live.
        unsafe { backend().graph_node_count(self.raw) }
    }

    /// Makes the graph launchable (`cuGraphInstantiate`): the driver prepares the whole
    /// graph once, so each launch costs about one kernel launch.
    pub fn instantiate(&self) -> Result<GraphExec> {
        self.ctx.bind()?;
        // SAFETY: the graph is live.
        let raw = unsafe { backend().graph_instantiate(self.raw) }?;
        Ok(GraphExec {
            ctx: self.ctx.clone(),
            raw,
            held: vec![self.held.clone()],
        })
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUgraph {
        self.raw
    }
}

/// An instantiated graph (`CUgraphExec`): launch it on any stream of its context, as often as
/// needed; update it in place from a graph of the same shape.
pub struct GraphExec {
    ctx: Context,
    raw: sys::CUgraphExec,
    held: Vec<Arc<Held>>,
}

// SAFETY: a CUgraphExec may be launched from any thread; updates take `&mut self`.
unsafe impl Send for GraphExec {}
// SAFETY: as above.
unsafe impl Sync for GraphExec {}

impl Drop for GraphExec {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: made by cudajit and destroyed once (the driver waits for running launches).
        check_in_drop(unsafe { backend().graph_exec_destroy(self.raw) });
    }
}

impl GraphExec {
    /// Launches the whole graph on `stream` (`cuGraphLaunch`): it runs after the work queued
    /// before it, and later work waits for it.
    ///
    /// # Safety
    /// The graph replays the device addresses it captured: every array its work uses (other
    /// than those dropped during the capture, which the graph keeps) must still be alive, and
    /// not be used by other work at the same time in a conflicting way.
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        self.ctx.check_same(stream.context(), "the stream")?;
        self.ctx.bind()?;
        // SAFETY: both handles are live and of this context; the memory is the caller's
        // contract.
        unsafe { backend().graph_launch(self.raw, stream.raw()) }
    }

    /// Replaces the work of this instantiated graph with `graph`'s (`cuGraphExecUpdate`):
    /// the same nodes in the same order, of the same kinds and kernels, with any arguments,
    /// launch configurations, copy addresses and sizes. Much cheaper than instantiating again.
    /// When the graphs differ in shape, returns an error saying how, and nothing changes.
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        self.ctx.check_same(graph.context(), "the graph")?;
        self.ctx.bind()?;
        // SAFETY: both handles are live and of this context.
        match unsafe { backend().graph_exec_update(self.raw, graph.raw) }? {
            None => {
                self.held.push(graph.held.clone());
                Ok(())
            }
            Some(why) => Err(Error::usage(format!(
                "the instantiated graph cannot take this graph's work in place: {why}; \
                 instantiate the new graph instead"
            ))),
        }
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUgraphExec {
        self.raw
    }
}

impl Stream {
    /// Starts capturing this stream's work into a graph (numba has none; CuPy's and torch's
    /// `graph` capture): until [`Stream::end_capture`], work queued on this stream is
    /// recorded, not run. Calls from this thread that cannot be recorded return an error that
    /// names them, and the capture goes on. Only streams made with
    /// [`Context::new_stream`] can be captured.
    pub fn begin_capture(&self) -> Result<()> {
        if !self.is_owned() {
            return Err(Error::usage(
                "only a stream made with Context::new_stream can be captured, not a default stream",
            ));
        }
        if capture::is_active(self.raw()) {
            return Err(Error::usage(
                "this stream is already capturing; end that capture first",
            ));
        }
        // The reductions' workspace is allocated now, outside the graph.
        self.workspace()?;
        self.context().bind()?;
        // SAFETY: the stream is live and of the bound context.
        unsafe { backend().stream_begin_capture(self.raw()) }?;
        capture::push(self.raw());
        Ok(())
    }

    /// Ends the capture begun on this thread by [`Stream::begin_capture`] and returns the
    /// graph of what was captured. If a call the driver could not capture invalidated the
    /// capture, returns the driver's error (the capture is over either way).
    pub fn end_capture(&self) -> Result<Graph> {
        let Some(active) = capture::pop(self.raw()) else {
            return Err(Error::usage(
                "end_capture: this thread has not begun a capture of this stream",
            ));
        };
        let held = Arc::new(Held {
            _keep: active.keep,
            frees: active.frees,
        });
        self.context().bind()?;
        // SAFETY: the stream is live and capturing.
        let raw = unsafe { backend().stream_end_capture(self.raw()) }?;
        Ok(Graph {
            ctx: self.context().clone(),
            raw,
            held,
        })
    }

    /// Captures what `work` queues on this stream into a graph: [`Stream::begin_capture`],
    /// `work(self)`, [`Stream::end_capture`]. The capture ends even when `work` fails (its
    /// error is returned).
    pub fn capture(&self, work: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        self.begin_capture()?;
        let done = work(self);
        let graph = self.end_capture();
        done?;
        graph
    }

    /// Whether this stream is capturing a graph now (begun on any thread).
    pub fn is_capturing(&self) -> Result<bool> {
        self.context().bind()?;
        // SAFETY: the stream is live.
        unsafe { backend().stream_is_capturing(self.raw()) }
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Graph({:p})", self.raw)
    }
}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GraphExec({:p})", self.raw)
    }
}
