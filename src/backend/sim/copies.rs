//! Copies and fills on the simulator: every copy is a `memcpy` between host addresses, after
//! the device ranges are checked (or recorded as graph nodes while the stream is capturing).

use std::ffi::c_void;

use cudajit_sys as sys;

use super::memory::Kind;
use super::{graph, invalid, Simulator};
use crate::backend::MemoryApi;
use crate::error::{Error, Result};

impl Simulator {
    pub(super) unsafe fn sim_memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.check_range(dst, bytes, "cuMemcpyHtoD_v2")?;
        if self.recorded(stream, || graph::Node::HtoD {
            dst,
            src: src as usize,
            bytes,
        }) {
            return Ok(());
        }
        // SAFETY: the caller passes `bytes` readable bytes at `src`; `dst` is simulator memory
        // of at least `bytes` bytes (checked); `copy` allows overlap.
        unsafe { std::ptr::copy(src.cast::<u8>(), dst as *mut u8, bytes) };
        Ok(())
    }

    pub(super) unsafe fn sim_memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.check_range(src, bytes, "cuMemcpyDtoH_v2")?;
        if self.recorded(stream, || graph::Node::DtoH {
            dst: dst as usize,
            src,
            bytes,
        }) {
            return Ok(());
        }
        // SAFETY: as for memcpy_htod, the other way.
        unsafe { std::ptr::copy(src as *const u8, dst.cast::<u8>(), bytes) };
        Ok(())
    }

    pub(super) unsafe fn sim_memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        self.check_range(src, bytes, "cuMemcpyDtoD_v2")?;
        self.check_range(dst, bytes, "cuMemcpyDtoD_v2")?;
        if self.recorded(stream, || graph::Node::DtoD { dst, src, bytes }) {
            return Ok(());
        }
        // SAFETY: both ranges are simulator memory of at least `bytes` bytes (checked).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    pub(super) unsafe fn sim_memcpy_peer(
        &self,
        dst: sys::CUdeviceptr,
        dst_ctx: sys::CUcontext,
        src: sys::CUdeviceptr,
        src_ctx: sys::CUcontext,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        let call = "cuMemcpyPeer";
        let dst_dev = self.ctx_device(dst_ctx, call)?;
        let src_dev = self.ctx_device(src_ctx, call)?;
        // Device memory must be that of the context named with it (managed and pinned memory
        // belong to every device).
        {
            let mem = self.mem.lock();
            for (p, dev) in [(dst, dst_dev), (src, src_dev)] {
                if let Some(a) = mem.find(p, bytes as u64) {
                    if a.kind == Kind::Device && a.dev != dev {
                        return Err(invalid(call));
                    }
                }
            }
        }
        // SAFETY: the caller's guarantees are those of memcpy_dtod (which checks the ranges).
        unsafe { self.memcpy_dtod(dst, src, bytes, stream) }
    }

    pub(super) unsafe fn sim_memset(
        &self,
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
        pitch: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        if !matches!(size, 1 | 2 | 4) || (count > 0 && pitch < size) {
            return Err(Error::usage(format!(
                "memset of {size}-byte elements {pitch} bytes apart is not supported"
            )));
        }
        if count == 0 {
            return Ok(());
        }
        let span = (count - 1) * pitch + size;
        self.check_range(dst, span, "cuMemsetD32_v2")?;
        if self.recorded(stream, || graph::Node::Memset {
            dst,
            bits,
            size,
            count,
            pitch,
        }) {
            return Ok(());
        }
        let bytes = &bits.to_le_bytes()[..size];
        for i in 0..count {
            // SAFETY: element `i` lies within the checked range of simulator memory.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    (dst as usize + i * pitch) as *mut u8,
                    size,
                )
            };
        }
        Ok(())
    }
}
