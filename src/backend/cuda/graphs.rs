//! The driver backend's stream capture and graph calls: capturing, building graphs by hand,
//! instantiating, updating and launching them.

use std::ffi::c_void;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::{DeviceApi, GraphApi};
use crate::error::{check, Result};

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl GraphApi for CudaDriver {
    unsafe fn stream_begin_capture(&self, s: sys::CUstream) -> Result<()> {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        // SAFETY: the caller passes a live stream.
        unsafe { drv!(cuStreamBeginCapture_v2(s, mode)) }
    }

    unsafe fn stream_end_capture(&self, s: sys::CUstream) -> Result<sys::CUgraph> {
        let mut g = std::ptr::null_mut();
        // SAFETY: a live stream; a valid out-pointer.
        unsafe { drv!(cuStreamEndCapture(s, &mut g)) }?;
        Ok(g)
    }

    unsafe fn stream_is_capturing(&self, s: sys::CUstream) -> Result<bool> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: a live stream; a valid out-pointer.
        unsafe { drv!(cuStreamIsCapturing(s, &mut status)) }?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    unsafe fn graph_node_count(&self, g: sys::CUgraph) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live graph; a null node array asks for the count only.
        unsafe { drv!(cuGraphGetNodes(g, std::ptr::null_mut(), &mut n)) }?;
        Ok(n)
    }

    unsafe fn graph_instantiate(&self, g: sys::CUgraph) -> Result<sys::CUgraphExec> {
        let mut e = std::ptr::null_mut();
        // SAFETY: a live graph; a valid out-pointer.
        unsafe { drv!(cuGraphInstantiateWithFlags(&mut e, g, 0)) }?;
        Ok(e)
    }

    unsafe fn graph_launch(&self, e: sys::CUgraphExec, s: sys::CUstream) -> Result<()> {
        // SAFETY: live handles (the caller's).
        unsafe { drv!(cuGraphLaunch(e, s)) }
    }

    unsafe fn graph_exec_update(
        &self,
        e: sys::CUgraphExec,
        g: sys::CUgraph,
    ) -> Result<Option<String>> {
        let mut info = sys::CUgraphExecUpdateResultInfo::default();
        // SAFETY: live handles; a valid out-pointer.
        match unsafe { drv!(cuGraphExecUpdate_v2(e, g, &mut info)) } {
            Ok(()) => Ok(None),
            Err(err)
                if err.driver_code().is_some_and(|c| {
                    c.0 == sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
                }) =>
            {
                Ok(Some(update_failure(info.result)))
            }
            Err(err) => Err(err),
        }
    }

    unsafe fn graph_destroy(&self, g: sys::CUgraph) -> Result<()> {
        // SAFETY: the caller destroys its own graph once.
        unsafe { drv!(cuGraphDestroy(g)) }
    }

    fn graph_create(&self) -> Result<sys::CUgraph> {
        let mut g = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; flags must be 0.
        unsafe { drv!(cuGraphCreate(&mut g, 0)) }?;
        Ok(g)
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        [grid, block, cluster]: [[u32; 3]; 3],
        shared_mem_bytes: u32,
        params: *mut *mut c_void,
    ) -> Result<sys::CUgraphNode> {
        let p = sys::CUDA_KERNEL_NODE_PARAMS {
            func: f,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: shared_mem_bytes,
            kernelParams: params,
            ..Default::default()
        };
        let mut node = std::ptr::null_mut();
        // SAFETY: live handles; `params` holds the kernel's parameter slots (the driver copies
        // them); `deps` are nodes of `g`.
        unsafe {
            drv!(cuGraphAddKernelNode_v2(
                &mut node,
                g,
                deps.as_ptr(),
                deps.len(),
                &p
            ))
        }?;
        if cluster != [1, 1, 1] {
            let mut v = sys::CUkernelNodeAttrValue::default();
            v.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: cluster[0],
                y: cluster[1],
                z: cluster[2],
            };
            // SAFETY: a node just added to `g`; `v` is a live value of the attribute's type.
            unsafe {
                drv!(cuGraphKernelNodeSetAttribute(
                    node,
                    sys::CUkernelNodeAttrID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                    &v
                ))
            }?;
        }
        Ok(node)
    }

    unsafe fn graph_add_copy(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<sys::CUgraphNode> {
        // SAFETY: CUDA_MEMCPY3D is plain data; all zero is its documented starting point.
        let mut p: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
        p.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        p.srcDevice = src;
        p.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        p.dstDevice = dst;
        p.WidthInBytes = bytes;
        p.Height = 1;
        p.Depth = 1;
        let ctx = self.ctx_get_current()?;
        let mut node = std::ptr::null_mut();
        // SAFETY: live handles; the ranges are the caller's; `deps` are nodes of `g`.
        unsafe {
            drv!(cuGraphAddMemcpyNode(
                &mut node,
                g,
                deps.as_ptr(),
                deps.len(),
                &p,
                ctx
            ))
        }?;
        Ok(node)
    }

    unsafe fn graph_add_memset(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
    ) -> Result<sys::CUgraphNode> {
        let p = sys::CUDA_MEMSET_NODE_PARAMS {
            dst,
            pitch: 0,
            value: bits,
            elementSize: size as u32,
            width: count,
            height: 1,
        };
        let ctx = self.ctx_get_current()?;
        let mut node = std::ptr::null_mut();
        // SAFETY: live handles; the range is the caller's; `deps` are nodes of `g`.
        unsafe {
            drv!(cuGraphAddMemsetNode(
                &mut node,
                g,
                deps.as_ptr(),
                deps.len(),
                &p,
                ctx
            ))
        }?;
        Ok(node)
    }

    unsafe fn graph_add_empty(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
    ) -> Result<sys::CUgraphNode> {
        let mut node = std::ptr::null_mut();
        // SAFETY: a live graph; `deps` are nodes of it.
        unsafe { drv!(cuGraphAddEmptyNode(&mut node, g, deps.as_ptr(), deps.len())) }?;
        Ok(node)
    }

    unsafe fn graph_exec_destroy(&self, e: sys::CUgraphExec) -> Result<()> {
        // SAFETY: the caller destroys its own instantiated graph once.
        unsafe { drv!(cuGraphExecDestroy(e)) }
    }
}

/// Why `cuGraphExecUpdate` refused, in words.
fn update_failure(r: sys::CUgraphExecUpdateResult) -> String {
    use sys::CUgraphExecUpdateResult as R;
    let why = match r {
        R::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => "the graphs' nodes or edges differ",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => "a node's type changed",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => {
            "a kernel node runs another kernel (of another module)"
        }
        R::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
            "a node's parameters changed in a way that cannot be updated"
        }
        R::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => "a changed node cannot be updated",
        R::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
            "a kernel node's function changed in an unsupported way"
        }
        R::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => "a node's attributes changed",
        _ => "the driver refused the update",
    };
    format!("{why} ({r:?})")
}
