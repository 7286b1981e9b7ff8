//! The CUDA driver backend: each method is one (or two) driver calls through `cudajit-sys`.

use std::ffi::{c_char, c_void, CStr};

use cudajit_sys as sys;

use super::{Backend, HostFnPtr, StreamCallbackPtr};
use crate::error::{check, Error, Result};

/// libcuda, loaded at run time.
pub(crate) struct CudaDriver;

/// Calls a driver function (through `cudajit-sys`'s lazy entry points) and turns its result
/// into `Result<()>`, naming the call on failure. Must be used inside an `unsafe` context.
macro_rules! drv {
    ($f:ident($($arg:expr),* $(,)?)) => {
        check(sys::$f($($arg),*), stringify!($f))
    };
}

/// Reads a driver-filled, NUL-terminated `c_char` buffer.
fn c_buf_to_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A JIT log buffer's text (up to the first NUL).
fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Bytes reserved for each of the JIT compiler's error and info logs.
const JIT_LOG_BYTES: usize = 64 * 1024;

/// `Ok(None)` for `CUDA_ERROR_NOT_FOUND`, else the call's outcome.
fn found(res: Result<()>) -> Result<Option<()>> {
    match res {
        Ok(()) => Ok(Some(())),
        Err(e)
            if e.driver_code()
                .is_some_and(|c| c.0 == sys::CUresult::CUDA_ERROR_NOT_FOUND) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `Ok(false)` for `CUDA_ERROR_NOT_READY`, `Ok(true)` for success.
fn ready(
    res: std::result::Result<sys::CUresult, sys::LoadError>,
    call: &'static str,
) -> Result<bool> {
    match res? {
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        code => check(Ok(code), call).map(|()| true),
    }
}

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl Backend for CudaDriver {
    fn init(&self) -> Result<()> {
        // SAFETY: flags 0 is the documented value.
        unsafe { drv!(cuInit(0)) }?;
        register_at_exit();
        Ok(())
    }

    fn driver_version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDriverGetVersion(&mut v)) }?;
        Ok(v)
    }

    fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDeviceGetCount(&mut n)) }?;
        Ok(n)
    }

    fn device_get(&self, ordinal: i32) -> Result<sys::CUdevice> {
        let mut d = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDeviceGet(&mut d, ordinal)) }?;
        Ok(d)
    }

    fn device_name(&self, dev: sys::CUdevice) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the buffer is writable for the length passed.
        unsafe { drv!(cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev)) }?;
        Ok(c_buf_to_string(&buf))
    }

    fn device_attribute(&self, dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer; an unknown attribute is an error code.
        unsafe { drv!(cuDeviceGetAttribute(&mut v, attr, dev)) }?;
        Ok(v)
    }

    fn device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        let mut uuid = sys::CUuuid::default();
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDeviceGetUuid_v2(&mut uuid, dev)) }?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    fn device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        let mut buf = [0 as c_char; 64];
        // SAFETY: the buffer is writable for the length passed.
        unsafe { drv!(cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev)) }?;
        Ok(c_buf_to_string(&buf))
    }

    fn device_total_mem(&self, dev: sys::CUdevice) -> Result<usize> {
        let mut b = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDeviceTotalMem_v2(&mut b, dev)) }?;
        Ok(b)
    }

    fn error_string(&self, code: sys::CUresult) -> Option<String> {
        sys::driver_library().ok()?;
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointer; the driver returns a static string or an error.
        let res = unsafe { sys::cuGetErrorString(code, &mut p) }.ok()?;
        if res != sys::CUresult::CUDA_SUCCESS || p.is_null() {
            return None;
        }
        // SAFETY: on success the driver returns a NUL-terminated static string.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        let mut c = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuDevicePrimaryCtxRetain(&mut c, dev)) }?;
        Ok(c)
    }

    fn primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        // SAFETY: releases one retain taken by primary_ctx_retain.
        unsafe { drv!(cuDevicePrimaryCtxRelease_v2(dev)) }
    }

    fn primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        // SAFETY: the device handle is valid.
        unsafe { drv!(cuDevicePrimaryCtxReset_v2(dev)) }
    }

    fn ctx_get_current(&self) -> Result<sys::CUcontext> {
        let mut c = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuCtxGetCurrent(&mut c)) }?;
        Ok(c)
    }

    unsafe fn ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        // SAFETY: the caller passes a live context or null.
        unsafe { drv!(cuCtxSetCurrent(ctx)) }
    }

    fn ctx_get_device(&self) -> Result<sys::CUdevice> {
        let mut d = 0;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuCtxGetDevice(&mut d)) }?;
        Ok(d)
    }

    fn ctx_synchronize(&self) -> Result<()> {
        // SAFETY: no arguments.
        unsafe { drv!(cuCtxSynchronize()) }
    }

    fn ctx_set_limit(&self, limit: sys::CUlimit, value: usize) -> Result<()> {
        // SAFETY: plain values.
        unsafe { drv!(cuCtxSetLimit(limit, value)) }
    }

    fn ctx_get_limit(&self, limit: sys::CUlimit) -> Result<usize> {
        let mut v = 0usize;
        // SAFETY: valid out-pointer.
        unsafe { drv!(cuCtxGetLimit(&mut v, limit)) }?;
        Ok(v)
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { drv!(cuMemGetInfo_v2(&mut free, &mut total)) }?;
        Ok((free, total))
    }

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { drv!(cuCtxGetStreamPriorityRange(&mut least, &mut greatest)) }?;
        Ok((least, greatest))
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

    fn device_can_access_peer(&self, dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool> {
        let mut can = 0;
        // SAFETY: a valid out-pointer; device handles are plain ordinals.
        unsafe { drv!(cuDeviceCanAccessPeer(&mut can, dev, peer)) }?;
        Ok(can != 0)
    }

    unsafe fn ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        // SAFETY: the caller passes a live context; flags must be 0.
        unsafe { drv!(cuCtxEnablePeerAccess(peer, 0)) }
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

    fn stream_create(&self, flags: u32, priority: i32) -> Result<sys::CUstream> {
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the driver clamps priorities.
        unsafe { drv!(cuStreamCreateWithPriority(&mut s, flags, priority)) }?;
        Ok(s)
    }

    unsafe fn stream_destroy(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: the caller destroys its own stream once.
        unsafe { drv!(cuStreamDestroy_v2(s)) }
    }

    unsafe fn stream_synchronize(&self, s: sys::CUstream) -> Result<()> {
        // SAFETY: a live stream.
        unsafe { drv!(cuStreamSynchronize(s)) }
    }

    unsafe fn stream_query(&self, s: sys::CUstream) -> Result<bool> {
        // SAFETY: a live stream.
        ready(unsafe { sys::cuStreamQuery(s) }, "cuStreamQuery")
    }

    unsafe fn stream_wait_event(&self, s: sys::CUstream, e: sys::CUevent) -> Result<()> {
        // SAFETY: live handles.
        unsafe { drv!(cuStreamWaitEvent(s, e, 0)) }
    }

    unsafe fn stream_priority(&self, s: sys::CUstream) -> Result<i32> {
        let mut p = 0;
        // SAFETY: valid out-pointer; a live stream.
        unsafe { drv!(cuStreamGetPriority(s, &mut p)) }?;
        Ok(p)
    }

    unsafe fn stream_flags(&self, s: sys::CUstream) -> Result<u32> {
        let mut f = 0;
        // SAFETY: valid out-pointer; a live stream.
        unsafe { drv!(cuStreamGetFlags(s, &mut f)) }?;
        Ok(f)
    }

    unsafe fn launch_host_func(
        &self,
        s: sys::CUstream,
        f: HostFnPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller hands over `data`, which `f` consumes once.
        unsafe { drv!(cuLaunchHostFunc(s, Some(f), data)) }
    }

    unsafe fn stream_add_callback(
        &self,
        s: sys::CUstream,
        f: StreamCallbackPtr,
        data: *mut c_void,
    ) -> Result<()> {
        // SAFETY: the caller hands over `data`, which `f` consumes once.
        unsafe { drv!(cuStreamAddCallback(s, Some(f), data, 0)) }
    }

    fn event_create(&self, flags: u32) -> Result<sys::CUevent> {
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer; cuEventCreate's flags.
        unsafe { drv!(cuEventCreate(&mut e, flags)) }?;
        Ok(e)
    }

    unsafe fn event_destroy(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: the caller destroys its own event once.
        unsafe { drv!(cuEventDestroy_v2(e)) }
    }

    unsafe fn event_record(&self, e: sys::CUevent, s: sys::CUstream) -> Result<()> {
        // SAFETY: live handles.
        unsafe { drv!(cuEventRecord(e, s)) }
    }

    unsafe fn event_query(&self, e: sys::CUevent) -> Result<bool> {
        // SAFETY: a live event.
        ready(unsafe { sys::cuEventQuery(e) }, "cuEventQuery")
    }

    unsafe fn event_synchronize(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: a live event.
        unsafe { drv!(cuEventSynchronize(e)) }
    }

    unsafe fn event_elapsed_ms(&self, start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: valid out-pointer; live events.
        match unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) } {
            // Drivers before CUDA 12.8 have only the original entry point.
            Err(sys::LoadError::MissingSymbol { .. }) => {
                // SAFETY: as above.
                unsafe { drv!(cuEventElapsedTime(&mut ms, start, end)) }
            }
            other => check(other, "cuEventElapsedTime_v2"),
        }?;
        Ok(ms)
    }

    unsafe fn module_load(
        &self,
        image: *const c_void,
        kind: &str,
    ) -> Result<(sys::CUmodule, String)> {
        let mut m = std::ptr::null_mut();
        if kind == "cubin" {
            // Machine code: no JIT, so no logs to collect (and no 128 KiB of log buffers to
            // clear on the cached-kernel path).
            // SAFETY: the caller passes a valid, aligned cubin image.
            unsafe { drv!(cuModuleLoadData(&mut m, image)) }?;
            return Ok((m, String::new()));
        }
        let mut logs = JitLogs::new();
        let (mut options, mut values, n) = logs.options();
        // SAFETY: the caller passes a valid image; the option arrays have `n` valid entries and
        // the log buffers outlive the call.
        let res = unsafe {
            drv!(cuModuleLoadDataEx(
                &mut m,
                image,
                n,
                options.as_mut_ptr(),
                values.as_mut_ptr()
            ))
        };
        match res {
            Ok(()) => Ok((m, log_text(&logs.info))),
            Err(e) => Err(logs.jit_error(e, &format!("loading a {kind} image"))),
        }
    }

    fn link(&self, inputs: &[super::LinkInput<'_>]) -> Result<(Vec<u8>, String)> {
        let mut logs = JitLogs::new();
        let (mut options, mut values, n) = logs.options();
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: the option arrays have `n` valid entries; the log buffers outlive the link
        // state (destroyed below before `logs` is dropped).
        unsafe {
            drv!(cuLinkCreate_v2(
                n,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state
            ))
        }?;
        let linked = (|| {
            for input in inputs {
                // SAFETY: a live link state; the data outlives the call (the driver copies it).
                unsafe {
                    drv!(cuLinkAddData_v2(
                        state,
                        input.kind,
                        input.data.as_ptr().cast_mut().cast(),
                        input.data.len(),
                        input.name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut()
                    ))
                }?;
            }
            let (mut cubin, mut size) = (std::ptr::null_mut(), 0usize);
            // SAFETY: a live link state; valid out-pointers.
            unsafe { drv!(cuLinkComplete(state, &mut cubin, &mut size)) }?;
            // SAFETY: the driver's cubin is `size` bytes, valid until the state is destroyed.
            Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
        })();
        // SAFETY: created above, destroyed once.
        let destroyed = unsafe { drv!(cuLinkDestroy(state)) };
        let cubin = linked.map_err(|e| logs.jit_error(e, "linking"))?;
        destroyed?;
        Ok((cubin, log_text(&logs.info)))
    }

    unsafe fn module_unload(&self, m: sys::CUmodule) -> Result<()> {
        // SAFETY: the caller unloads its own module once.
        unsafe { drv!(cuModuleUnload(m)) }
    }

    unsafe fn module_function(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<sys::CUfunction>> {
        let mut f = std::ptr::null_mut();
        // SAFETY: valid out-pointer; a live module; a NUL-terminated name.
        let res = unsafe { drv!(cuModuleGetFunction(&mut f, m, name.as_ptr())) };
        Ok(found(res)?.map(|()| f))
    }

    unsafe fn module_global(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<(sys::CUdeviceptr, usize)>> {
        let (mut p, mut b) = (0, 0);
        // SAFETY: valid out-pointers; a live module; a NUL-terminated name.
        let res = unsafe { drv!(cuModuleGetGlobal_v2(&mut p, &mut b, m, name.as_ptr())) };
        Ok(found(res)?.map(|()| (p, b)))
    }

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

    unsafe fn graph_add_kernel(
        &self,
        g: sys::CUgraph,
        deps: &[sys::CUgraphNode],
        f: sys::CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
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

    fn profiler_start(&self) -> Result<()> {
        // SAFETY: no arguments.
        unsafe { drv!(cuProfilerStart()) }
    }

    fn profiler_stop(&self) -> Result<()> {
        // SAFETY: no arguments.
        unsafe { drv!(cuProfilerStop()) }
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

/// The JIT compiler's error and info log buffers, and the options that pass them (with the
/// optimisation level when `CUDAJIT_JIT_OPT_LEVEL` sets one).
struct JitLogs {
    error: Vec<u8>,
    info: Vec<u8>,
}

impl JitLogs {
    fn new() -> JitLogs {
        JitLogs {
            error: vec![0u8; JIT_LOG_BYTES],
            info: vec![0u8; JIT_LOG_BYTES],
        }
    }

    /// The option names, values and count (the values point into `self`'s buffers).
    fn options(&mut self) -> ([sys::CUjit_option; 5], [*mut c_void; 5], u32) {
        let level = jit_opt_level();
        let options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
        ];
        let values = [
            self.error.as_mut_ptr().cast::<c_void>(),
            JIT_LOG_BYTES as *mut c_void,
            self.info.as_mut_ptr().cast::<c_void>(),
            JIT_LOG_BYTES as *mut c_void,
            level.unwrap_or(4) as usize as *mut c_void,
        ];
        // The optimisation level only when asked for (the driver's default is 4).
        let n = options.len() as u32 - u32::from(level.is_none());
        (options, values, n)
    }

    /// A driver error as `Error::Jit` with the error log (or a note that there is none).
    fn jit_error(&self, e: Error, doing: &str) -> Error {
        match e {
            Error::Driver { code, .. } => {
                let mut log = log_text(&self.error);
                if log.trim().is_empty() {
                    log = format!("(no log; {doing})");
                }
                Error::Jit { code, log }
            }
            e => e,
        }
    }
}

/// The driver JIT's optimisation level for PTX (`CUDAJIT_JIT_OPT_LEVEL`, 0 to 4; unset: the
/// driver's default, 4). Read once.
fn jit_opt_level() -> Option<u32> {
    static LEVEL: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        std::env::var("CUDAJIT_JIT_OPT_LEVEL")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|l| *l <= 4)
    })
}

extern "C" {
    /// C's `atexit` (libc, which Rust's std links).
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

/// Runs when the process exits normally (`exit` or the end of `main`), before the driver's own
/// exit handlers (registered earlier, by `cuInit`, so they run later): frees what cudajit keeps
/// per context for the whole run (the pinned staging buffers), which statics holding contexts
/// (kernels cached by the array operations, a user's `static` kernel) would otherwise keep past
/// the end, so that `compute-sanitizer --leak-check full` finds nothing left.
extern "C" fn release_at_exit() {
    // A panic must not cross the C boundary.
    let _ = std::panic::catch_unwind(crate::context::release_at_exit);
}

fn register_at_exit() {
    // SAFETY: registers a handler that never unwinds; once per process (init runs once).
    if unsafe { atexit(release_at_exit) } != 0 {
        // Not fatal: the buffers are then freed by the driver's teardown, as before.
    }
}
