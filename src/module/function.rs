//! A kernel in a loaded module: attributes, occupancy, launch limits.

use std::fmt;

use cudajit_sys as sys;

use super::load::Module;
use crate::backend::backend;
use crate::error::Result;

/// A kernel (`.entry`) of a loaded [`Module`]; keeps the module loaded.
#[derive(Clone)]
pub struct Function {
    pub(crate) module: Module,
    pub(crate) raw: sys::CUfunction,
    pub(crate) name: String,
    /// Most threads per block this kernel can be launched with.
    pub(crate) max_threads: u32,
}

// SAFETY: a CUfunction may be used from any thread; the driver synchronises internally.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

/// A kernel's resource usage, as the driver reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionAttributes {
    /// Registers per thread.
    pub num_regs: i32,
    /// Static shared memory per block, bytes.
    pub shared_size_bytes: i32,
    /// Constant memory, bytes.
    pub const_size_bytes: i32,
    /// Local memory per thread, bytes (spills and local arrays).
    pub local_size_bytes: i32,
    /// Most threads per block the kernel can be launched with.
    pub max_threads_per_block: i32,
    /// Most dynamic shared memory per block currently allowed, bytes.
    pub max_dynamic_shared_size_bytes: i32,
    /// PTX ISA version the kernel was compiled from, times 10 (e.g. 80 for 8.0).
    pub ptx_version: i32,
    /// Binary architecture, times 10 (e.g. 90 for sm_90).
    pub binary_version: i32,
}

impl Function {
    pub(crate) fn new(module: Module, raw: sys::CUfunction, name: String) -> Result<Function> {
        let mut f = Function {
            module,
            raw,
            name,
            max_threads: 0,
        };
        f.max_threads =
            f.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32;
        Ok(f)
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The module it belongs to.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUfunction {
        self.raw
    }

    /// One raw attribute (`CU_FUNC_ATTRIBUTE_*`).
    pub fn attribute(&self, attr: sys::CUfunction_attribute) -> Result<i32> {
        self.module.context().bind()?;
        // SAFETY: the function is live.
        unsafe { backend().func_attribute(self.raw, attr) }
    }

    /// Registers, shared/local/constant memory and limits.
    pub fn attributes(&self) -> Result<FunctionAttributes> {
        use sys::CUfunction_attribute as A;
        Ok(FunctionAttributes {
            num_regs: self.attribute(A::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_size_bytes: self.attribute(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: self.attribute(A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_dynamic_shared_size_bytes: self
                .attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ptx_version: self.attribute(A::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: self.attribute(A::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }

    /// Allows launches with up to `bytes` of dynamic shared memory (needed above 48 KiB).
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        self.module.context().bind()?;
        let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: the function is live; the driver validates the value.
        unsafe { backend().func_set_attribute(self.raw, attr, bytes as i32) }
    }

    /// The block size that maximises occupancy, and the smallest grid that reaches it
    /// (`cuOccupancyMaxPotentialBlockSize`): returns `(min_grid_size, block_size)`.
    /// `block_size_limit` 0 means no limit.
    pub fn max_potential_block_size(
        &self,
        dynamic_shared_bytes: usize,
        block_size_limit: u32,
    ) -> Result<(u32, u32)> {
        self.module.context().bind()?;
        // SAFETY: the function is live.
        let (grid, block) = unsafe {
            backend().occupancy_max_potential_block_size(
                self.raw,
                dynamic_shared_bytes,
                block_size_limit as i32,
            )
        }?;
        Ok((grid as u32, block as u32))
    }

    /// How many blocks of `block_size` threads fit on one multiprocessor at once.
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_shared_bytes: usize,
    ) -> Result<u32> {
        self.module.context().bind()?;
        // SAFETY: the function is live.
        let n = unsafe {
            backend().occupancy_max_active_blocks(self.raw, block_size as i32, dynamic_shared_bytes)
        }?;
        Ok(n as u32)
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Function({})", self.name)
    }
}
