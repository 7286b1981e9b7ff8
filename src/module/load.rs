//! Loading PTX, cubin and fatbin images, with the JIT compiler's log on failure.

use std::ffi::CString;
use std::fmt;
use std::sync::Arc;

use cudajit_sys as sys;

use super::function::Function;
use crate::backend::{backend, ModuleImage};
use crate::context::Context;
use crate::error::{check_in_drop, Error, Result};
use crate::memory::{DeviceCopy, DeviceView, DeviceViewMut};

/// First four bytes of an ELF file (a cubin).
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// First four bytes of a fatbin (`0xBA55ED50`, little-endian).
const FATBIN_MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// A module loaded into a context. Unloaded when it and every [`Function`] from it are dropped.
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

pub(crate) struct ModuleInner {
    pub(crate) ctx: Context,
    pub(crate) raw: sys::CUmodule,
    /// The JIT compiler's info log (warnings, resource usage) from loading.
    info_log: String,
}

// SAFETY: a CUmodule may be used from any thread; the driver synchronises internally.
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        self.ctx.bind_in_drop();
        // SAFETY: the module was loaded by cudajit and is unloaded once.
        check_in_drop(unsafe { backend().module_unload(self.raw) });
    }
}

impl Context {
    /// Loads PTX text, JIT-compiling it for this device. On a JIT error, returns
    /// [`Error::Jit`] with the compiler's log.
    pub fn load_ptx(&self, ptx: &str) -> Result<Module> {
        let text =
            CString::new(ptx).map_err(|_| Error::usage("PTX text must not contain NUL bytes"))?;
        self.load_image(ModuleImage::Ptx(&text))
    }

    /// Compiles PTX text to a cubin for this device with the driver's linker (the JIT that
    /// [`Context::load_ptx`] runs, with its result returned instead of loaded).
    pub(crate) fn ptx_to_cubin(&self, ptx: &str) -> Result<Vec<u8>> {
        let text =
            CString::new(ptx).map_err(|_| Error::usage("PTX text must not contain NUL bytes"))?;
        self.bind()?;
        let input = crate::backend::LinkInput {
            kind: sys::CUjitInputType::CU_JIT_INPUT_PTX,
            data: text.as_bytes_with_nul(),
            name: c"kernel.ptx",
        };
        Ok(backend().link(&[input])?.0)
    }

    /// Loads a cubin (an ELF file of device code for this device's architecture).
    pub fn load_cubin(&self, cubin: &[u8]) -> Result<Module> {
        if !cubin.starts_with(&ELF_MAGIC) {
            return Err(Error::usage(format!(
                "load_cubin: the data is not a cubin (an ELF file); it starts with {:02x?}",
                &cubin[..cubin.len().min(4)]
            )));
        }
        self.load_aligned(cubin, false)
    }

    /// Loads a fatbin (device code for several architectures, possibly with PTX); the driver
    /// picks the best match for this device.
    pub fn load_fatbin(&self, fatbin: &[u8]) -> Result<Module> {
        if !fatbin.starts_with(&FATBIN_MAGIC) {
            return Err(Error::usage(format!(
                "load_fatbin: the data is not a fatbin (magic 0xBA55ED50); it starts with {:02x?}",
                &fatbin[..fatbin.len().min(4)]
            )));
        }
        self.load_aligned(fatbin, true)
    }

    /// Copies a binary image (a cubin, or a fatbin) to 8-byte-aligned memory (the driver reads it
    /// as structs) and loads it.
    fn load_aligned(&self, image: &[u8], fatbin: bool) -> Result<Module> {
        let mut words = vec![0u64; image.len().div_ceil(8)];
        // SAFETY: `words` has at least `image.len()` bytes and does not overlap `image`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                image.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                image.len(),
            )
        };
        self.load_image(if fatbin {
            ModuleImage::Fatbin(&words)
        } else {
            ModuleImage::Cubin(&words)
        })
    }

    /// Loads a kernel built with the builder as its IR, where the backend executes IR (the
    /// simulator); `None` where it runs machine code, which the caller then compiles and loads
    /// (the compile cache's load path, `codegen::cache::load`).
    pub(crate) fn load_kernel_ir(&self, ir: &Arc<crate::ir::FunctionIr>) -> Result<Option<Module>> {
        self.bind()?;
        Ok(backend().module_load_kernel(ir)?.map(|raw| Module {
            inner: Arc::new(ModuleInner {
                ctx: self.clone(),
                raw,
                info_log: String::new(),
            }),
        }))
    }

    fn load_image(&self, image: ModuleImage<'_>) -> Result<Module> {
        self.bind()?;
        // SAFETY: the image is NUL-terminated PTX, or an aligned binary image whose magic the
        // caller checked (the driver validates the rest).
        let (raw, info_log) = unsafe { backend().module_load(image) }?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                ctx: self.clone(),
                raw,
                info_log,
            }),
        })
    }
}

impl Module {
    /// The kernel (`.entry`) named `name`.
    pub fn function(&self, name: &str) -> Result<Function> {
        let cname = CString::new(name)
            .map_err(|_| Error::usage("kernel names must not contain NUL bytes"))?;
        self.inner.ctx.bind()?;
        // SAFETY: the module is live.
        match unsafe { backend().module_function(self.inner.raw, &cname) }? {
            Some(raw) => Function::new(self.clone(), raw, name.to_string()),
            None => Err(Error::usage(format!(
                "the module has no kernel named `{name}` (a `.visible .entry` in PTX); check the name and that it is not a `.func`"
            ))),
        }
    }

    fn global_raw<T: DeviceCopy>(&self, name: &str) -> Result<(sys::CUdeviceptr, ndarray::Ix1)> {
        let cname = CString::new(name)
            .map_err(|_| Error::usage("global names must not contain NUL bytes"))?;
        self.inner.ctx.bind()?;
        // SAFETY: the module is live.
        let (ptr, bytes) =
            unsafe { backend().module_global(self.inner.raw, &cname) }?.ok_or_else(|| {
                Error::usage(format!("the module has no global variable named `{name}`"))
            })?;
        let size = std::mem::size_of::<T>();
        if size == 0 || bytes % size != 0 {
            return Err(Error::usage(format!(
                "global `{name}` has {bytes} bytes, not a whole number of {}-byte elements",
                size
            )));
        }
        Ok((ptr, ndarray::Ix1(bytes / size)))
    }

    /// A module-scope variable (`.global` / `__device__` / `__constant__`) as a read-only array of `T`.
    pub fn global<T: DeviceCopy>(&self, name: &str) -> Result<DeviceView<'_, T>> {
        let (ptr, dim) = self.global_raw::<T>(name)?;
        Ok(DeviceView::from_parts(&self.inner.ctx, ptr, dim))
    }

    /// A module-scope variable as a writable array of `T`.
    pub fn global_mut<T: DeviceCopy>(&mut self, name: &str) -> Result<DeviceViewMut<'_, T>> {
        let (ptr, dim) = self.global_raw::<T>(name)?;
        Ok(DeviceViewMut::from_parts(&self.inner.ctx, ptr, dim))
    }

    /// The JIT compiler's info log from loading (empty for most modules).
    pub fn info_log(&self) -> &str {
        &self.inner.info_log
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUmodule {
        self.inner.raw
    }
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Module({:p})", self.inner.raw)
    }
}
