//! The driver backend's module calls: loading images (through the JIT for PTX), linking,
//! looking up functions and globals, and the JIT compiler's logs.

use std::ffi::{c_void, CStr};

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::{jit_hint, DeviceApi, ModuleApi, ModuleImage};
use crate::error::{check, Error, Result};

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

// SAFETY (whole impl): as the trait impl below.
impl CudaDriver {
    /// Loads `image` (NUL-terminated PTX, or an aligned cubin or fatbin): through the JIT with
    /// its logs at optimisation level `level` (`None`: the driver's default), except a cubin
    /// (machine code, nothing to compile).
    unsafe fn load_image(
        &self,
        image: *const c_void,
        kind: &str,
        level: Option<u32>,
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
        let (mut options, mut values, n) = logs.options(level);
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
}

// SAFETY (whole impl): every `unsafe` block passes valid out-pointers to locals, and handles
// that the callers (the safe types) keep alive, as each method's contract states.
impl ModuleApi for CudaDriver {
    unsafe fn module_load(&self, image: ModuleImage<'_>) -> Result<(sys::CUmodule, String)> {
        let kind = image.kind();
        // The JIT's optimisation level: the PTX's hint (workaround 19) or the environment's.
        let level = match image {
            ModuleImage::Ptx(text) => jit_hint::opt_level(text.to_bytes(), jit_opt_level()),
            _ => jit_opt_level(),
        };
        let ptr: *const c_void = match image {
            ModuleImage::Ptx(text) => text.as_ptr().cast(),
            ModuleImage::Cubin(words) | ModuleImage::Fatbin(words) => words.as_ptr().cast(),
            ModuleImage::Ir(ir) => {
                return Err(Error::Kernel {
                    kernel: ir.name.clone(),
                    message: "internal: the CUDA driver loads PTX or machine code, not kernel IR \
                              (please report this)"
                        .to_string(),
                })
            }
        };
        // SAFETY: NUL-terminated PTX or an aligned, well-formed image (the caller's contract),
        // alive for the call.
        unsafe { self.load_image(ptr, kind, level) }
    }

    /// Checks the kernel's static shared memory against the current device's limit (the
    /// driver's JIT would refuse it with only ptxas's log); then answers that the kernel needs
    /// machine code (which the compile cache's load path compiles, or finds, and loads).
    fn module_load_kernel(
        &self,
        ir: &std::sync::Arc<crate::ir::FunctionIr>,
    ) -> Result<Option<sys::CUmodule>> {
        use sys::CUdevice_attribute as A;
        let dev = self.ctx_get_device()?;
        let limit =
            self.device_attribute(dev, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
        let optin = self
            .device_attribute(
                dev,
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .unwrap_or(0);
        crate::backend::limits::check_static_shared(ir, limit, optin)?;
        Ok(None)
    }

    fn link(&self, inputs: &[crate::backend::LinkInput<'_>]) -> Result<(Vec<u8>, String)> {
        // The lowest level any PTX input asks for (workaround 19's hint), else the environment's.
        let level = inputs
            .iter()
            .filter(|i| i.kind == sys::CUjitInputType::CU_JIT_INPUT_PTX)
            .fold(jit_opt_level(), |level, i| {
                jit_hint::opt_level(i.data, level)
            });
        let mut logs = JitLogs::new();
        let (mut options, mut values, n) = logs.options(level);
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

    /// The option names, values and count (the values point into `self`'s buffers): the
    /// logs, ptxas's informational messages when `CUDAJIT_JIT_VERBOSE=1`, and the optimisation
    /// level `level` (from `CUDAJIT_JIT_OPT_LEVEL` or the PTX's own hint) when there is one.
    fn options(&mut self, level: Option<u32>) -> ([sys::CUjit_option; 6], [*mut c_void; 6], u32) {
        let mut options = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER; 6];
        let mut values = [std::ptr::null_mut::<c_void>(); 6];
        let mut n = 0;
        let mut push = |o: sys::CUjit_option, v: *mut c_void| {
            options[n] = o;
            values[n] = v;
            n += 1;
        };
        push(
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            self.error.as_mut_ptr().cast::<c_void>(),
        );
        push(
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            JIT_LOG_BYTES as *mut c_void,
        );
        push(
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            self.info.as_mut_ptr().cast::<c_void>(),
        );
        push(
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            JIT_LOG_BYTES as *mut c_void,
        );
        // ptxas's informational messages in the info log (`CUDAJIT_JIT_VERBOSE=1`).
        if std::env::var_os("CUDAJIT_JIT_VERBOSE").is_some_and(|v| v == "1") {
            push(sys::CUjit_option::CU_JIT_LOG_VERBOSE, 1usize as *mut c_void);
        }
        // The optimisation level only when asked for (the driver's default is 4).
        if let Some(level) = level {
            push(
                sys::CUjit_option::CU_JIT_OPTIMIZATION_LEVEL,
                level as usize as *mut c_void,
            );
        }
        (options, values, n as u32)
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
