//! The driver backend's kernel function calls: attributes, occupancy, and launches.

use std::ffi::c_void;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::LaunchApi;
use crate::error::{check, Result};

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl LaunchApi for CudaDriver {
    unsafe fn func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer; a live function.
        unsafe { drv!(cuFuncGetAttribute(&mut v, attr, f)) }?;
        Ok(v)
    }

    unsafe fn func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        // SAFETY: a live function; the driver validates the value.
        unsafe { drv!(cuFuncSetAttribute(f, attr, value)) }
    }

    unsafe fn occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; a live function; no callback.
        unsafe {
            drv!(cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                None,
                dynamic_smem,
                block_limit
            ))
        }?;
        Ok((grid, block))
    }

    unsafe fn occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        let mut n = 0;
        // SAFETY: valid out-pointer; a live function.
        unsafe {
            drv!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                f,
                block,
                dynamic_smem
            ))
        }?;
        Ok(n)
    }

    unsafe fn launch_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller passes one pointer per kernel parameter, each to a live value.
        unsafe {
            drv!(cuLaunchKernel(
                f,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_mem_bytes,
                stream,
                params,
                std::ptr::null_mut(),
            ))
        }
    }

    unsafe fn launch_cooperative_kernel(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller passes one pointer per kernel parameter, each to a live value.
        unsafe {
            drv!(cuLaunchCooperativeKernel(
                f,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_mem_bytes,
                stream,
                params,
            ))
        }
    }

    unsafe fn launch_kernel_cluster(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        shared_mem_bytes: u32,
        stream: sys::CUstream,
        params: *mut *mut c_void,
        cooperative: bool,
    ) -> Result<()> {
        let mut attrs = cluster_attrs(cluster, cooperative);
        let cfg = launch_config(grid, block, shared_mem_bytes, stream, &mut attrs);
        // SAFETY: the caller passes one pointer per kernel parameter, each to a live value;
        // `cfg` points to `attrs`, which outlives the call.
        unsafe { drv!(cuLaunchKernelEx(&cfg, f, params, std::ptr::null_mut())) }
    }

    unsafe fn occupancy_max_active_clusters(
        &self,
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        shared_mem_bytes: u32,
    ) -> Result<i32> {
        let mut attrs = cluster_attrs(cluster, false);
        let cfg = launch_config(
            grid,
            block,
            shared_mem_bytes,
            std::ptr::null_mut(),
            &mut attrs,
        );
        let mut n = 0;
        // SAFETY: valid out-pointer; a live function; `cfg` points to `attrs`, which outlives
        // the call.
        unsafe { drv!(cuOccupancyMaxActiveClusters(&mut n, f, &cfg)) }?;
        Ok(n)
    }
}

/// The launch attributes of a cluster launch (and a cooperative one).
fn cluster_attrs(cluster: [u32; 3], cooperative: bool) -> Vec<sys::CUlaunchAttribute> {
    let mut dim = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        ..Default::default()
    };
    dim.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: cluster[0],
        y: cluster[1],
        z: cluster[2],
    };
    let mut attrs = vec![dim];
    if cooperative {
        let mut c = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
            ..Default::default()
        };
        c.value.cooperative = 1;
        attrs.push(c);
    }
    attrs
}

/// A `CUlaunchConfig` pointing to `attrs`.
fn launch_config(
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem_bytes: u32,
    stream: sys::CUstream,
    attrs: &mut [sys::CUlaunchAttribute],
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_mem_bytes,
        hStream: stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    }
}
