//! CUDA graphs on the simulator: work submitted to a capturing stream is recorded as nodes
//! instead of run; an instantiated graph runs its nodes in order on the stream it is launched
//! on (the simulator runs everything in submission order, so the graph's edges add nothing).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use cudajit_sys as sys;

use super::HostFnPtr;
use crate::codegen::ir::{FunctionIr, Param};

/// One recorded operation.
#[derive(Clone)]
pub(super) enum Node {
    Kernel {
        f: usize,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        /// Each parameter slot's bytes, little-endian, zero-extended to 8.
        slots: Vec<u64>,
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
pub(super) fn slot_sizes(ir: &FunctionIr) -> Vec<usize> {
    let mut sizes = Vec::new();
    for p in &ir.params {
        match p {
            Param::Scalar(t) => sizes.push(t.size()),
            Param::Array { ndim, .. } => {
                sizes.extend(std::iter::repeat(8).take(1 + *ndim as usize))
            }
        }
    }
    sizes
}

/// Reads each slot's bytes.
///
/// # Safety
/// `params` holds one pointer per entry of `sizes`, each to at least that many readable bytes.
pub(super) unsafe fn read_slots(sizes: &[usize], params: *mut *mut c_void) -> Vec<u64> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut b = [0u8; 8];
            // SAFETY: the caller's contract.
            unsafe {
                let p = *params.add(i) as *const u8;
                std::ptr::copy_nonoverlapping(p, b.as_mut_ptr(), n.min(8));
            }
            u64::from_le_bytes(b)
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
