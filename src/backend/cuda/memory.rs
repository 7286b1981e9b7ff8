//! The driver backend's memory calls: device, managed, stream-ordered and pinned host
//! allocations, memory pools, prefetches, pointer queries, copies and fills.

use std::ffi::c_void;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::tensor_map::{self, TensorMapBytes, TensorMapDesc};
use crate::backend::MemoryApi;
use crate::error::{check, Error, Result};

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl MemoryApi for CudaDriver {
    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { drv!(cuMemGetInfo_v2(&mut free, &mut total)) }?;
        Ok((free, total))
    }

    fn mem_alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuMemAlloc_v2(&mut p, bytes)) }?;
        Ok(p)
    }

    unsafe fn mem_free(&self, ptr: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: the caller frees its own allocation once.
        unsafe { drv!(cuMemFree_v2(ptr)) }
    }

    fn mem_alloc_managed(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        let global = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL.0;
        // SAFETY: valid out-pointer; a documented attach flag.
        unsafe { drv!(cuMemAllocManaged(&mut p, bytes, global)) }?;
        Ok(p)
    }

    unsafe fn mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        // SAFETY: valid out-pointer; the caller passes a live stream.
        unsafe { drv!(cuMemAllocAsync(&mut p, bytes, stream)) }?;
        Ok(p)
    }

    unsafe fn mem_free_async(&self, ptr: sys::CUdeviceptr, stream: sys::CUstream) -> Result<()> {
        // SAFETY: the caller frees its own stream-ordered allocation once, on a live stream.
        unsafe { drv!(cuMemFreeAsync(ptr, stream)) }
    }

    fn device_default_mem_pool(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        let mut pool = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { drv!(cuDeviceGetDefaultMemPool(&mut pool, dev)) }?;
        Ok(pool)
    }

    unsafe fn mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: a live pool; the attributes asked for are 64-bit.
        unsafe {
            drv!(cuMemPoolGetAttribute(
                pool,
                attr,
                (&mut v as *mut u64).cast()
            ))
        }?;
        Ok(v)
    }

    unsafe fn set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        let mut v = value;
        // SAFETY: a live pool; the attributes set are 64-bit.
        unsafe {
            drv!(cuMemPoolSetAttribute(
                pool,
                attr,
                (&mut v as *mut u64).cast()
            ))
        }
    }

    unsafe fn mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()> {
        let desc = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: dev,
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: a live pool; one access descriptor, read during the call.
        unsafe { drv!(cuMemPoolSetAccess(pool, &desc, 1)) }
    }

    unsafe fn mem_pool_trim_to(&self, pool: sys::CUmemoryPool, keep: usize) -> Result<()> {
        // SAFETY: a live pool.
        unsafe { drv!(cuMemPoolTrimTo(pool, keep)) }
    }

    unsafe fn mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        stream: sys::CUstream,
    ) -> Result<()> {
        let location = if to_host {
            sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            }
        } else {
            sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: dev,
            }
        };
        // SAFETY: the caller passes a managed range and a live stream.
        match unsafe { sys::cuMemPrefetchAsync_v2(ptr, bytes, location, 0, stream) } {
            // Drivers before CUDA 12.2 have only the original entry point
            // (`CU_DEVICE_CPU` = -1 names the host).
            Err(sys::LoadError::MissingSymbol { .. }) => {
                let dst = if to_host { -1 } else { dev };
                // SAFETY: as above.
                unsafe { drv!(cuMemPrefetchAsync(ptr, bytes, dst, stream)) }
            }
            other => check(other, "cuMemPrefetchAsync_v2"),
        }
    }

    fn host_alloc(&self, bytes: usize, flags: u32) -> Result<*mut c_void> {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer; cuMemHostAlloc's flags.
        unsafe { drv!(cuMemHostAlloc(&mut p, bytes, flags)) }?;
        if p.is_null() {
            return Err(Error::usage("cuMemHostAlloc returned a null pointer"));
        }
        Ok(p)
    }

    unsafe fn host_free(&self, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the caller frees its own allocation once.
        unsafe { drv!(cuMemFreeHost(ptr)) }
    }

    unsafe fn host_device_pointer(&self, ptr: *mut c_void) -> Result<sys::CUdeviceptr> {
        let mut d = 0;
        // SAFETY: valid out-pointer; the caller passes mapped host memory.
        unsafe { drv!(cuMemHostGetDevicePointer_v2(&mut d, ptr, 0)) }?;
        Ok(d)
    }

    fn is_driver_memory(&self, ptr: *const c_void) -> bool {
        let mut kind: u32 = 0;
        // SAFETY: a valid out-pointer of the attribute's type (CUmemorytype, 32 bits); the
        // driver only looks `ptr` up in its tables and never dereferences it.
        let res = unsafe {
            sys::cuPointerGetAttribute(
                (&mut kind as *mut u32).cast::<c_void>(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                ptr as sys::CUdeviceptr,
            )
        };
        // Pageable memory is CUDA_ERROR_INVALID_VALUE (the runtime's "unregistered").
        matches!(res, Ok(sys::CUresult::CUDA_SUCCESS)) && kind != 0
    }

    unsafe fn memcpy_htod(
        &self,
        dst: sys::CUdeviceptr,
        src: *const c_void,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller passes valid ranges of `bytes` bytes and a live stream.
        unsafe {
            match stream {
                None => drv!(cuMemcpyHtoD_v2(dst, src, bytes)),
                Some(s) => drv!(cuMemcpyHtoDAsync_v2(dst, src, bytes, s)),
            }
        }
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut c_void,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: as for memcpy_htod.
        unsafe {
            match stream {
                None => drv!(cuMemcpyDtoH_v2(dst, src, bytes)),
                Some(s) => drv!(cuMemcpyDtoHAsync_v2(dst, src, bytes, s)),
            }
        }
    }

    unsafe fn memcpy_dtod(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: as for memcpy_htod.
        unsafe {
            match stream {
                None => drv!(cuMemcpyDtoD_v2(dst, src, bytes)),
                Some(s) => drv!(cuMemcpyDtoDAsync_v2(dst, src, bytes, s)),
            }
        }
    }

    unsafe fn memcpy_peer(
        &self,
        dst: sys::CUdeviceptr,
        dst_ctx: sys::CUcontext,
        src: sys::CUdeviceptr,
        src_ctx: sys::CUcontext,
        bytes: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller passes two device ranges of `bytes` bytes in live contexts and a
        // live stream.
        unsafe {
            match stream {
                None => drv!(cuMemcpyPeer(dst, dst_ctx, src, src_ctx, bytes)),
                Some(s) => drv!(cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, bytes, s)),
            }
        }
    }

    unsafe fn memset(
        &self,
        dst: sys::CUdeviceptr,
        bits: u32,
        size: usize,
        count: usize,
        pitch: usize,
        stream: Option<sys::CUstream>,
    ) -> Result<()> {
        // SAFETY: the caller passes a device range of `count` elements `pitch` bytes apart.
        unsafe {
            match (size, pitch == size, stream) {
                (1, true, None) => drv!(cuMemsetD8_v2(dst, bits as u8, count)),
                (1, true, Some(s)) => drv!(cuMemsetD8Async(dst, bits as u8, count, s)),
                (2, true, None) => drv!(cuMemsetD16_v2(dst, bits as u16, count)),
                (2, true, Some(s)) => drv!(cuMemsetD16Async(dst, bits as u16, count, s)),
                (4, true, None) => drv!(cuMemsetD32_v2(dst, bits, count)),
                (4, true, Some(s)) => drv!(cuMemsetD32Async(dst, bits, count, s)),
                (4, false, None) => drv!(cuMemsetD2D32_v2(dst, pitch, bits, 1, count)),
                (4, false, Some(s)) => drv!(cuMemsetD2D32Async(dst, pitch, bits, 1, count, s)),
                _ => Err(Error::usage(format!(
                    "memset of {size}-byte elements {pitch} bytes apart is not supported"
                ))),
            }
        }
    }

    fn tensor_map_encode_tiled(&self, desc: &TensorMapDesc) -> Result<TensorMapBytes> {
        tensor_map::validate(desc)?;
        let data_type = tensor_map::data_type_code(desc.elem).ok_or_else(|| {
            Error::usage(format!(
                "tensor map: no TMA data type for {}",
                desc.elem.name()
            ))
        })?;
        let mut map = sys::CUtensorMap::default();
        // The driver takes the strides of dimensions 1..rank (dimension 0 is contiguous).
        let strides = &desc.global_strides[1..];
        // SAFETY: `map` is a 64-byte-aligned `CUtensorMap` the driver writes; the four arrays
        // hold 5 entries, at least the rank (validated: 1..=5) that the driver reads (4 for the
        // strides, rank - 1 read); the global address is only recorded, not dereferenced.
        unsafe {
            drv!(cuTensorMapEncodeTiled(
                &mut map,
                sys::CUtensorMapDataType(data_type),
                desc.rank,
                desc.global_address as *mut c_void,
                desc.global_dims.as_ptr(),
                strides.as_ptr(),
                desc.box_dims.as_ptr(),
                desc.element_strides.as_ptr(),
                sys::CUtensorMapInterleave(desc.interleave.code()),
                sys::CUtensorMapSwizzle(desc.swizzle.code()),
                sys::CUtensorMapL2promotion(desc.l2_promotion.code()),
                sys::CUtensorMapFloatOOBfill(desc.oob_fill.code()),
            ))
        }?;
        let mut bytes = [0u8; 128];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        Ok(TensorMapBytes(bytes))
    }
}
