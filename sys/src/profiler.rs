//! The profiler-control entry points of `cudaProfiler.h`, which the `cuda.h` wheel lacks.
//! Written by hand: their prototypes (`CUresult f(void)`) are fixed since CUDA 4.0
//! (`PFN_cuProfilerStart_v4000` in `cudaProfilerTypedefs.h`).

use crate::types::CUresult;

driver_functions! {
    /// `cuProfilerStart` in cudaProfiler.h: enables profiler data collection.
    pub fn cuProfilerStart() -> CUresult;
    /// `cuProfilerStop` in cudaProfiler.h: disables profiler data collection.
    pub fn cuProfilerStop() -> CUresult;
}
