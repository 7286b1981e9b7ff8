//! Modules on the simulator: a module is a kernel's IR (`ModuleImage::Ir`) with one
//! function; PTX, cubin and fatbin images cannot be loaded.

use std::ffi::CStr;
use std::sync::Arc;

use cudajit_sys as sys;

use super::functions::static_shared;
use super::{bad_handle, FuncState, Simulator, SHARED_PER_BLOCK};
use crate::backend::ModuleImage;
use crate::error::{Error, Result};
use crate::ir::FunctionIr;

impl Simulator {
    pub(super) fn sim_module_load(
        &self,
        image: ModuleImage<'_>,
    ) -> Result<(sys::CUmodule, String)> {
        let kind = image.kind();
        match image {
            ModuleImage::Ir(ir) => Ok((self.sim_module_load_ir(ir)?, String::new())),
            _ => Err(Error::usage(format!(
                "loading a {kind} image is not supported on the simulator (CUDAJIT_SIMULATOR=1): \
                 it runs kernels built with cudajit's builder (Kernel, Elementwise, the array \
                 operations), not PTX or machine code; run on a GPU to load {kind}"
            ))),
        }
    }

    /// Loads a builder kernel: its IR, unless it calls foreign device code (which only a GPU
    /// can run) or declares more static shared memory than the simulated device allows (as
    /// the driver refuses it).
    pub(super) fn sim_module_load_kernel(&self, ir: &Arc<FunctionIr>) -> Result<sys::CUmodule> {
        use sys::CUdevice_attribute as A;
        let limit =
            super::devices::attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 1);
        let optin =
            super::devices::attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 1);
        crate::backend::limits::check_static_shared(ir, limit, optin)?;
        if let Some(ext) = ir.first_extern() {
            return Err(Error::Kernel {
                kernel: ir.name.clone(),
                message: format!(
                    "it calls the external device function `{ext}` (declare_device), defined in \
                     linked PTX or cubin code: the simulator executes kernels' IR and cannot run \
                     foreign device code; run this kernel on a GPU, or write the function with \
                     `DeviceFn` to run it on the simulator"
                ),
            });
        }
        Ok(self.sim_module_load(ModuleImage::Ir(ir.clone()))?.0)
    }

    pub(super) fn sim_module_load_ir(&self, ir: Arc<FunctionIr>) -> Result<sys::CUmodule> {
        let dev = self.current_device();
        let mut h = self.handles.lock();
        let m = h.make();
        h.modules.insert(m, (ir, dev));
        Ok(m as sys::CUmodule)
    }

    pub(super) unsafe fn sim_module_unload(&self, m: sys::CUmodule) -> Result<()> {
        let mut h = self.handles.lock();
        match h.modules.remove(&(m as usize)) {
            Some(_) => {
                h.functions.retain(|_, f| f.module != m as usize);
                Ok(())
            }
            None => Err(bad_handle("cuModuleUnload")),
        }
    }

    pub(super) unsafe fn sim_module_function(
        &self,
        m: sys::CUmodule,
        name: &CStr,
    ) -> Result<Option<sys::CUfunction>> {
        let mut h = self.handles.lock();
        let (ir, dev) = h
            .modules
            .get(&(m as usize))
            .ok_or_else(|| bad_handle("cuModuleGetFunction"))?
            .clone();
        if name.to_bytes() != ir.name.as_bytes() {
            return Ok(None);
        }
        // One function per module: a module loaded twice from one IR (two threads loading one
        // kernel at once) has its own, which outlives the other module's unload.
        if let Some((&f, _)) = h.functions.iter().find(|(_, f)| f.module == m as usize) {
            return Ok(Some(f as sys::CUfunction));
        }
        let f = h.make();
        let max_dynamic = SHARED_PER_BLOCK - static_shared(&ir) as i32;
        h.functions.insert(
            f,
            FuncState {
                ir,
                module: m as usize,
                dev,
                max_dynamic: max_dynamic.max(0),
            },
        );
        Ok(Some(f as sys::CUfunction))
    }
}

#[cfg(test)]
impl Simulator {
    /// Tests: loads `ir` into a module of its own and launches it on one block of `block`
    /// threads, with one `u64` slot per kernel parameter (a 4-byte parameter in the low bytes
    /// of its slot), waiting for it.
    pub(crate) fn launch_ir_for_test(
        &self,
        ir: &Arc<FunctionIr>,
        block: [u32; 3],
        slots: &mut [u64],
    ) -> Result<()> {
        use crate::backend::{LaunchApi, ModuleApi};
        let m = self.sim_module_load_ir(ir.clone())?;
        let name = std::ffi::CString::new(ir.name.as_str())
            .map_err(|_| crate::error::Error::usage("a kernel name with a NUL byte"))?;
        // SAFETY: a module just loaded.
        let f = unsafe { self.module_function(m, &name) }?
            .ok_or_else(|| crate::error::Error::usage("the kernel is not in its module"))?;
        let mut ptrs: Vec<*mut std::ffi::c_void> =
            slots.iter_mut().map(|s| (s as *mut u64).cast()).collect();
        // SAFETY: one pointer per parameter slot, each to a live u64 (the caller matches the
        // slots to the kernel's parameters).
        unsafe {
            self.launch_kernel(
                f,
                [1, 1, 1],
                block,
                0,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
            )
        }
    }
}
