//! CUDA graphs on the simulator: work submitted to a capturing stream is recorded as nodes
//! instead of run; an instantiated graph runs its nodes in order on the stream it is launched
//! on (the simulator runs everything in submission order, so the graph's edges add nothing).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use cudajit_sys as sys;

use super::{bad_handle, err, HostFnPtr};
use crate::backend::{GraphApi, LaunchApi, MemoryApi, StreamApi};
use crate::error::Result;
use crate::ir::{FunctionIr, Param};

/// One recorded operation.
#[derive(Clone)]
pub(super) enum Node {
    Kernel {
        f: usize,
        grid: [u32; 3],
        block: [u32; 3],
        /// Blocks per cluster (1, 1, 1 without clusters).
        cluster: [u32; 3],
        shared: u32,
        /// Each parameter slot's bytes, little-endian, zero-extended to whole 8-byte words (a
        /// tensor map's 128 bytes are 16 words).
        slots: Vec<Box<[u64]>>,
    },
    HtoD {
        dst: u64,
        src: usize,
        bytes: usize,
    },
    DtoH {
        dst: usize,
        src: u64,
        bytes: usize,
    },
    DtoD {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    Memset {
        dst: u64,
        bits: u32,
        size: usize,
        count: usize,
        pitch: usize,
    },
    HostFn {
        f: HostFnPtr,
        data: usize,
    },
    EventRecord {
        e: usize,
    },
    /// A node that does nothing (a join point of a graph built by hand).
    Empty,
}

impl Node {
    /// What kind of node, for update checks.
    fn kind(&self) -> &'static str {
        match self {
            Node::Kernel { .. } => "kernel",
            Node::HtoD { .. } | Node::DtoH { .. } | Node::DtoD { .. } => "copy",
            Node::Memset { .. } => "memset",
            Node::HostFn { .. } => "host function",
            Node::EventRecord { .. } => "event record",
            Node::Empty => "empty",
        }
    }
}

/// Device memory that stream-ordered frees inside a capture gave to the graph: freed when the
/// last graph or instantiated graph holding it goes.
pub(super) struct GraphMemory(pub Vec<u64>);

impl Drop for GraphMemory {
    fn drop(&mut self) {
        for &p in &self.0 {
            // SAFETY: the pointers came from the simulator's stream-ordered allocation and
            // were handed to the graph instead of being freed.
            let _ = unsafe { crate::backend::backend().mem_free(p) };
        }
    }
}

/// A recorded or instantiated graph.
#[derive(Clone)]
pub(super) struct SimGraph {
    pub nodes: Vec<Node>,
    /// Kept for the graph's launches (an updated instantiated graph holds every graph's it
    /// took nodes from); freed when the last holder goes.
    pub memory: Vec<Arc<GraphMemory>>,
}

/// Captures in progress, graphs and instantiated graphs.
#[derive(Default)]
pub(super) struct Graphs {
    /// Per capturing stream: the nodes so far and the memory freed into the graph.
    pub capturing: HashMap<usize, (Vec<Node>, Vec<u64>)>,
    pub graphs: HashMap<usize, SimGraph>,
    pub execs: HashMap<usize, SimGraph>,
}

/// The byte size of each parameter slot of a launch of `ir` (an array: its address, then one
/// 8-byte slot per extent; a scalar: its size).
fn slot_sizes(ir: &FunctionIr) -> Vec<usize> {
    let mut sizes = Vec::new();
    for p in &ir.params {
        match p {
            Param::Scalar(t) => sizes.push(t.size()),
            Param::TensorMap { .. } => sizes.push(128),
            Param::Array { ndim, .. } => {
                sizes.extend(std::iter::repeat(8).take(1 + *ndim as usize))
            }
        }
    }
    sizes
}

/// A launch of `f` (whose IR is `ir`) as a node, its parameter slots copied.
///
/// # Safety
/// `params` holds one pointer per parameter slot of `ir`, each to a live value.
pub(super) unsafe fn kernel_node(
    ir: &FunctionIr,
    f: sys::CUfunction,
    [grid, block, cluster]: [[u32; 3]; 3],
    shared: u32,
    params: *mut *mut c_void,
) -> Node {
    Node::Kernel {
        f: f as usize,
        grid,
        block,
        cluster,
        shared,
        // SAFETY: the caller's contract.
        slots: unsafe { read_slots(&slot_sizes(ir), params) },
    }
}

/// Reads each slot's bytes.
///
/// # Safety
/// `params` holds one pointer per entry of `sizes`, each to at least that many readable bytes.
unsafe fn read_slots(sizes: &[usize], params: *mut *mut c_void) -> Vec<Box<[u64]>> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut words = vec![0u64; n.div_ceil(8).max(1)].into_boxed_slice();
            // SAFETY: the caller's contract; the words hold at least `n` bytes.
            unsafe {
                let p = *params.add(i) as *const u8;
                std::ptr::copy_nonoverlapping(p, words.as_mut_ptr().cast::<u8>(), n);
            }
            words
        })
        .collect()
}

/// Why `new` cannot update an instantiated `old` in place, if it cannot.
pub(super) fn update_refusal(old: &[Node], new: &[Node]) -> Option<String> {
    if old.len() != new.len() {
        return Some(format!(
            "the graphs' nodes differ ({} nodes, {} in the new graph)",
            old.len(),
            new.len()
        ));
    }
    for (i, (a, b)) in old.iter().zip(new).enumerate() {
        if a.kind() != b.kind() {
            return Some(format!(
                "node {i} is a {} node, a {} node in the new graph",
                a.kind(),
                b.kind()
            ));
        }
        if let (Node::Kernel { f: fa, .. }, Node::Kernel { f: fb, .. }) = (a, b) {
            if fa != fb {
                return Some(format!("kernel node {i} runs another kernel"));
            }
        }
    }
    None
}

/// A graph's handle value as the driver's type.
pub(super) fn graph_handle(h: usize) -> sys::CUgraph {
    h as sys::CUgraph
}

impl GraphApi for super::Simulator {
    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()> {
        let call = "cuStreamBeginCapture_v2";
        if !self.handles.lock().streams.contains_key(&(s as usize)) {
            return Err(err(
                call,
                sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            ));
        }
        let mut g = self.graphs.lock();
        if g.capturing.contains_key(&(s as usize)) {
            return Err(err(call, sys::CUresult::CUDA_ERROR_ILLEGAL_STATE));
        }
        g.capturing.insert(s as usize, Default::default());
        Ok(())
    }

    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph> {
        let (nodes, memory) = self
            .graphs
            .lock()
            .capturing
            .remove(&(s as usize))
            .ok_or_else(|| {
                err(
                    "cuStreamEndCapture",
                    sys::CUresult::CUDA_ERROR_ILLEGAL_STATE,
                )
            })?;
        let h = self.handles.lock().make();
        let graph = SimGraph {
            nodes,
            memory: vec![Arc::new(GraphMemory(memory))],
        };
        self.graphs.lock().graphs.insert(h, graph);
        Ok(graph_handle(h))
    }

    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool> {
        Ok(self.graphs.lock().capturing.contains_key(&(s as usize)))
    }

    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize> {
        let graphs = self.graphs.lock();
        let graph = graphs
            .graphs
            .get(&(g as usize))
            .ok_or_else(|| bad_handle("cuGraphGetNodes"))?;
        Ok(graph.nodes.len())
    }

    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec> {
        let graph = self
            .graphs
            .lock()
            .graphs
            .get(&(g as usize))
            .cloned()
            .ok_or_else(|| bad_handle("cuGraphInstantiateWithFlags"))?;
        let h = self.handles.lock().make();
        self.graphs.lock().execs.insert(h, graph);
        Ok(h as sys::CUgraphExec)
    }

    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()> {
        let exec = self
            .graphs
            .lock()
            .execs
            .get(&(e as usize))
            .cloned()
            .ok_or_else(|| bad_handle("cuGraphLaunch"))?;
        for node in exec.nodes {
            // SAFETY (all): the nodes were recorded from valid calls; the graph's user keeps
            // the memory they name alive (GraphExec::launch's contract).
            match node {
                Node::Kernel {
                    f,
                    grid,
                    block,
                    cluster,
                    shared,
                    mut slots,
                } => {
                    let mut params: Vec<*mut c_void> = slots
                        .iter_mut()
                        .map(|v| v.as_mut_ptr().cast::<c_void>())
                        .collect();
                    unsafe {
                        self.launch_kernel_cluster(
                            f as sys::CUfunction,
                            grid,
                            block,
                            cluster,
                            shared,
                            s,
                            params.as_mut_ptr(),
                            false,
                        )
                    }?
                }
                Node::HtoD { dst, src, bytes } => {
                    unsafe { self.memcpy_htod(dst, src as *const c_void, bytes, Some(s)) }?
                }
                Node::DtoH { dst, src, bytes } => {
                    unsafe { self.memcpy_dtoh(dst as *mut c_void, src, bytes, Some(s)) }?
                }
                Node::DtoD { dst, src, bytes } => {
                    unsafe { self.memcpy_dtod(dst, src, bytes, Some(s)) }?
                }
                Node::Memset {
                    dst,
                    bits,
                    size,
                    count,
                    pitch,
                } => unsafe { self.memset(dst, bits, size, count, pitch, Some(s)) }?,
                Node::HostFn { f, data } => {
                    unsafe { self.launch_host_func(s, f, data as *mut c_void) }?
                }
                Node::EventRecord { e } => unsafe { self.event_record(e as sys::CUevent, s) }?,
                Node::Empty => {}
            }
        }
        Ok(())
    }

    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>> {
        let mut graphs = self.graphs.lock();
        let new = graphs
            .graphs
            .get(&(g as usize))
            .cloned()
            .ok_or_else(|| bad_handle("cuGraphExecUpdate_v2"))?;
        let exec = graphs
            .execs
            .get_mut(&(e as usize))
            .ok_or_else(|| bad_handle("cuGraphExecUpdate_v2"))?;
        if let Some(why) = update_refusal(&exec.nodes, &new.nodes) {
            return Ok(Some(why));
        }
        exec.nodes = new.nodes;
        exec.memory.extend(new.memory);
        Ok(None)
    }

    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()> {
        let removed = self.graphs.lock().graphs.remove(&(g as usize));
        // Dropped outside the lock (its memory is freed through the backend).
        removed
            .map(drop)
            .ok_or_else(|| bad_handle("cuGraphDestroy"))
    }

    fn graph_create(&self) -> Result<sys::CUgraph> {
        let h = self.handles.lock().make();
        let graph = SimGraph {
            nodes: Vec::new(),
            memory: Vec::new(),
        };
        self.graphs.lock().graphs.insert(h, graph);
        Ok(graph_handle(h))
    }

    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        geometry: [[u32; 3]; 3],
        shared_mem_bytes: u32,
        params: *mut *mut c_void,
    ) -> Result<sys::CUgraphNode> {
        let ir = self.func(f, "cuGraphAddKernelNode_v2", |st| st.ir.clone())?;
        // SAFETY: the caller passes one pointer per parameter slot of the kernel's IR.
        let node = unsafe { kernel_node(&ir, f, geometry, shared_mem_bytes, params) };
        self.add_node(g, node)
    }

    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode> {
        self.check_range(src, bytes, "cuGraphAddMemcpyNode")?;
        self.check_range(dst, bytes, "cuGraphAddMemcpyNode")?;
        self.add_node(g, Node::DtoD { dst, src, bytes })
    }

    unsafe fn graph_add_memset(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
    ) -> Result<sys::CUgraphNode> {
        self.check_range(dst, size * count, "cuGraphAddMemsetNode")?;
        self.add_node(
            g,
            Node::Memset {
                dst,
                bits,
                size,
                count,
                pitch: size,
            },
        )
    }

    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        _deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode> {
        self.add_node(g, Node::Empty)
    }

    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()> {
        let removed = self.graphs.lock().execs.remove(&(e as usize));
        removed
            .map(drop)
            .ok_or_else(|| bad_handle("cuGraphExecDestroy"))
    }
}
