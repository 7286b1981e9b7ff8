//! The driver backend's device and context calls: initialisation, devices and their
//! attributes, primary contexts, the current context and its limits, peer access, the profiler.

use std::ffi::c_char;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::DeviceApi;
use crate::error::{check, Result};

/// Reads a driver-filled, NUL-terminated `c_char` buffer.
fn c_buf_to_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl DeviceApi for CudaDriver {
    fn init(&self, at_exit: fn()) -> Result<()> {
        // SAFETY: flags 0 is the documented value.
        unsafe { drv!(cuInit(0)) }?;
        register_at_exit(at_exit);
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

    fn ctx_stream_priority_range(&self) -> Result<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { drv!(cuCtxGetStreamPriorityRange(&mut least, &mut greatest)) }?;
        Ok((least, greatest))
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

    fn profiler_start(&self) -> Result<()> {
        // SAFETY: no arguments.
        unsafe { drv!(cuProfilerStart()) }
    }

    fn profiler_stop(&self) -> Result<()> {
        // SAFETY: no arguments.
        unsafe { drv!(cuProfilerStop()) }
    }
}

extern "C" {
    /// C's `atexit` (libc, which Rust's std links).
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

/// Runs when the process exits normally (`exit` or the end of `main`), before the driver's own
/// exit handlers (registered earlier, by `cuInit`, so they run later): frees what cudajit keeps
/// per context for the whole run (the pinned staging buffers), which statics holding contexts
/// (kernels cached by the array operations, a user's `static` kernel) would otherwise keep past
/// the end, so that `compute-sanitizer --leak-check full` finds nothing left. Calls the hook
/// that [`Backend::init`](crate::backend::Backend::init) was given.
extern "C" fn release_at_exit() {
    if let Some(hook) = AT_EXIT.get() {
        // A panic must not cross the C boundary.
        let _ = std::panic::catch_unwind(*hook);
    }
}

/// The runtime types' exit hook (set once, by the first `init`).
static AT_EXIT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

fn register_at_exit(hook: fn()) {
    if AT_EXIT.set(hook).is_err() {
        return; // registered already
    }
    // SAFETY: registers a handler that never unwinds; once per process (init runs once).
    if unsafe { atexit(release_at_exit) } != 0 {
        // Not fatal: the buffers are then freed by the driver's teardown, as before.
    }
}
