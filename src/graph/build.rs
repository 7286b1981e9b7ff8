//! Graphs built by hand: kernel, copy, fill and empty nodes with explicit dependencies
//! (`cuGraphAdd*Node`), for work whose shape is known without running it on a stream.
//!
//! ```no_run
//! # use cudajit::prelude::*;
//! # use cudajit::codegen::Kernel;
//! # use cudajit::Graph;
//! # fn main() -> cudajit::Result<()> {
//! let ctx = Context::new(0)?;
//! let s = ctx.new_stream()?;
//! let x = s.to_device(&vec![1.0f32; 1024])?;
//! let mut y = s.zeros::<f32, _>(1024)?;
//! let mut z = s.zeros::<f32, _>(1024)?;
//! let double = Kernel::<(&mut [f32], &[f32])>::build("double", |k, (y, x)| {
//!     let i = k.grid1();
//!     k.if_(i.lt(y.len()), |_| y.set(i, x.at(i) * 2.0));
//! })?;
//! let mut g = Graph::new(&ctx)?;
//! let fill = g.add_fill(&mut z, 7.0f32, &[])?;
//! let k = double.add_to_graph(&mut g, LaunchConfig::for_num_elems(1024, 256)?, (&mut y, &x), &[])?;
//! g.add_copy(&y, &mut z, &[fill, k])?; // after both
//! // SAFETY: x, y and z outlive the launch.
//! unsafe { g.instantiate()?.launch(&s)? };
//! # Ok(()) }
//! ```

use std::sync::Arc;

use cudajit_sys as sys;

use super::{Graph, Held};
use crate::backend::backend;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceCopy, DeviceSlice, DeviceSliceMut};

/// A node of a graph built by hand: name it among a later node's dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphNode(pub(crate) sys::CUgraphNode);

// SAFETY: a node handle is an opaque value, used only with its graph's (Send + Sync) calls.
unsafe impl Send for GraphNode {}
// SAFETY: as above.
unsafe impl Sync for GraphNode {}

/// The driver's handles of `deps`.
pub(crate) fn raw_deps(deps: &[GraphNode]) -> Vec<sys::CUgraphNode> {
    deps.iter().map(|d| d.0).collect()
}

impl Graph {
    /// An empty graph of `ctx` (`cuGraphCreate`), to build by hand: [`Graph::add_copy`],
    /// [`Graph::add_fill`], [`Graph::add_empty`] and `Kernel::add_to_graph`.
    pub fn new(ctx: &Context) -> Result<Graph> {
        ctx.bind()?;
        let raw = backend().graph_create()?;
        Ok(Graph {
            ctx: ctx.clone(),
            raw,
            held: Arc::new(Held {
                _keep: Vec::new(),
                frees: Vec::new(),
            }),
        })
    }

    /// Adds a copy of `src` into `dst` (same length, both of this graph's context), run after
    /// `deps`.
    pub fn add_copy<T: DeviceCopy, S: DeviceSlice<T> + ?Sized, M: DeviceSliceMut<T> + ?Sized>(
        &mut self,
        src: &S,
        dst: &mut M,
        deps: &[GraphNode],
    ) -> Result<GraphNode> {
        self.ctx.check_same(src.context(), "the copy's source")?;
        self.ctx
            .check_same(dst.context(), "the copy's destination")?;
        if src.len() != dst.len() {
            return Err(Error::Shape {
                op: "Graph::add_copy (source and destination of one length)",
                expected: dst.shape().to_vec(),
                actual: src.shape().to_vec(),
            });
        }
        self.ctx.bind()?;
        let deps = raw_deps(deps);
        // SAFETY: both ranges are live arrays of this context, `num_bytes` long.
        let node = unsafe {
            backend().graph_add_copy(
                self.raw,
                &deps,
                dst.device_ptr(),
                src.device_ptr(),
                src.num_bytes(),
            )
        }?;
        Ok(GraphNode(node))
    }

    /// Adds a fill of every element of `dst` with `value` (elements of 1, 2 or 4 bytes, or 8
    /// bytes whose two halves are equal), run after `deps`.
    pub fn add_fill<T: DeviceCopy, M: DeviceSliceMut<T> + ?Sized>(
        &mut self,
        dst: &mut M,
        value: T,
        deps: &[GraphNode],
    ) -> Result<GraphNode> {
        self.ctx.check_same(dst.context(), "the filled array")?;
        let size = std::mem::size_of::<T>();
        if size > 8 {
            return Err(Error::usage(format!(
                "Graph::add_fill: elements of {size} bytes; fill with a kernel node instead"
            )));
        }
        let mut bytes = [0u8; 8];
        // SAFETY: `value` is plain data (DeviceCopy) of `size` <= 8 bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&value as *const T).cast::<u8>(),
                bytes.as_mut_ptr(),
                size,
            )
        };
        let bits = u64::from_le_bytes(bytes);
        let (lo, hi) = (bits as u32, (bits >> 32) as u32);
        let (elem, count) = match size {
            1 | 2 | 4 => (size, dst.len()),
            8 if lo == hi => (4, dst.len() * 2),
            _ => {
                return Err(Error::usage(format!(
                    "Graph::add_fill: a {size}-byte value whose halves differ cannot be one fill \
                     node; fill with a kernel node instead"
                )))
            }
        };
        self.ctx.bind()?;
        let deps = raw_deps(deps);
        // SAFETY: the range is a live array of this context, `count * elem` bytes long.
        let node = unsafe {
            backend().graph_add_memset(self.raw, &deps, dst.device_ptr(), lo, elem, count)
        }?;
        Ok(GraphNode(node))
    }

    /// Adds a node that does nothing, run after `deps` (a join point to depend on).
    pub fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode> {
        self.ctx.bind()?;
        let deps = raw_deps(deps);
        // SAFETY: a live graph; the dependencies are its nodes.
        Ok(GraphNode(unsafe {
            backend().graph_add_empty(self.raw, &deps)
        }?))
    }
}
