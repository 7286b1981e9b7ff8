//! Launch geometry and launching a loaded kernel.

use super::args::KernelArgs;
use super::function::Function;
use crate::backend::backend;
use crate::error::{Error, LaunchError, Result};
use crate::stream::Stream;

/// A grid or block size in up to three dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl Dim3 {
    /// The number of threads or blocks (x * y * z).
    pub fn count(&self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

/// `(x, y, z)`, as error messages show grids and blocks.
impl std::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

/// Grid, block and dynamic shared memory for one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
    /// Blocks per thread-block cluster (sm_90), `None` for a launch without clusters. The
    /// blocks of a cluster run at the same time on one GPC and reach each other's shared
    /// memory (see `KernelBuilder::cluster_sync`).
    pub cluster: Option<Dim3>,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads (each 1-3 dimensions: `128`, `(16, 16)`, ...).
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
            cluster: None,
        }
    }

    /// The same, launched as thread-block clusters of `blocks` blocks (1-3 dimensions, at
    /// most 8 blocks in all; each grid dimension a multiple of the cluster's): CUDA's
    /// `cudaLaunchKernelEx` with a cluster dimension. Needs a device of compute capability
    /// 9.0 or later (H100, H200) or the simulator.
    pub fn with_cluster(mut self, blocks: impl Into<Dim3>) -> Self {
        self.cluster = Some(blocks.into());
        self
    }

    /// The cluster's blocks per dimension (1, 1, 1 without clusters).
    pub(crate) fn cluster_dims(&self) -> [u32; 3] {
        self.cluster.map_or([1, 1, 1], |c| [c.x, c.y, c.z])
    }

    /// The same, with `bytes` of dynamic shared memory per block.
    pub fn with_shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// A 1-D launch covering `n` elements with `block` threads each (one element per thread).
    ///
    /// `n = 0` is an error (a launch over nothing has no grid; skip the launch instead), as
    /// is `block = 0` or a grid over the device limits.
    pub fn for_num_elems(n: usize, block: u32) -> Result<Self> {
        if n == 0 {
            return Err(Error::launch_config(format!(
                "LaunchConfig::for_num_elems(0, {block}): a launch over no elements has no grid; \
                 skip the launch when there is nothing to do"
            )));
        }
        Self::covering(n, block)
    }

    /// As [`for_num_elems`](Self::for_num_elems), but one block for `n = 0` (the crate's own
    /// operations, whose kernels check their bounds).
    pub(crate) fn covering(n: usize, block: u32) -> Result<Self> {
        if block == 0 {
            return Err(Error::launch_config("a block needs at least one thread"));
        }
        let blocks = n.div_ceil(block as usize).max(1);
        let blocks = u32::try_from(blocks).map_err(|_| {
            Error::launch_config(format!(
                "{n} elements need {blocks} blocks of {block}, more than a grid holds"
            ))
        })?;
        Ok(LaunchConfig::new(blocks, block))
    }

    /// Checks the configuration against the hardware limits and the kernel's.
    pub(crate) fn validate(&self, f: &Function) -> Result<()> {
        let (g, b) = (self.grid, self.block);
        if g.count() == 0 || b.count() == 0 {
            return Err(Error::launch_config(format!(
                "launch of `{}`: grid {} and block {} must have no zero dimension",
                f.name, g, b
            )));
        }
        if b.count() > f.max_threads as u64 {
            return Err(Error::launch_config(format!(
                "launch of `{}`: a block of {} threads ({}x{}x{}) exceeds the kernel's limit of {} threads per block",
                f.name,
                b.count(),
                b.x,
                b.y,
                b.z,
                f.max_threads
            )));
        }
        if b.z > 64 || g.y > 65535 || g.z > 65535 || g.x > i32::MAX as u32 {
            return Err(Error::launch_config(format!(
                "launch of `{}`: grid {} / block {} exceed the limits (grid y, z <= 65535; block z <= 64)",
                f.name, g, b
            )));
        }
        if let Some(c) = self.cluster {
            self.validate_cluster(f, c)?;
        }
        Ok(())
    }

    /// Checks a cluster shape against the grid and the device.
    fn validate_cluster(&self, f: &Function, c: Dim3) -> Result<()> {
        let g = self.grid;
        if c.count() == 0 || c.count() > 8 {
            return Err(Error::launch_config(format!(
                "launch of `{}`: a cluster of {}x{}x{} = {} blocks; a cluster holds 1 to 8 blocks \
                 (the portable limit)",
                f.name,
                c.x,
                c.y,
                c.z,
                c.count()
            )));
        }
        if g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0 {
            return Err(Error::launch_config(format!(
                "launch of `{}`: grid {}x{}x{} is not a whole number of clusters of {}x{}x{} \
                 blocks: each grid dimension must be a multiple of the cluster's (round the grid \
                 up and let the extra blocks return early)",
                f.name, g.x, g.y, g.z, c.x, c.y, c.z
            )));
        }
        let dev = f.module.context().device();
        let ok = dev
            .attribute(crate::context::DeviceAttribute::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
            .unwrap_or(0);
        if ok != 1 {
            let (ma, mi) = dev.compute_capability().unwrap_or((0, 0));
            return Err(Error::launch_config(format!(
                "launch of `{}` with clusters of {}x{}x{} blocks: thread-block clusters need a \
                 device of compute capability 9.0 or later (H100, H200), and this one is {ma}.{mi}; \
                 launch without `with_cluster` here",
                f.name, c.x, c.y, c.z
            )));
        }
        Ok(())
    }
}

/// A clearer error for a failed launch: an `invalid value` from a launch with dynamic shared
/// memory is nearly always that memory over the kernel's or the device's limit, which the driver
/// does not say. Other errors pass through unchanged.
pub(crate) fn explain_launch_error(f: &Function, config: &LaunchConfig, err: Error) -> Error {
    let asked = config.shared_mem_bytes;
    let invalid = err
        .driver_code()
        .is_some_and(|c| c.0 == crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE);
    if !invalid || asked == 0 {
        return err;
    }
    use crate::sys::CUfunction_attribute as A;
    let (Ok(max_dyn), Ok(static_bytes)) = (
        f.attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        f.attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
    ) else {
        return err;
    };
    let optin = f
        .module
        .context()
        .device()
        .max_shared_memory_per_block_optin()
        .unwrap_or(0);
    let device_room = optin.saturating_sub(static_bytes.max(0) as u32);
    if asked > device_room && optin > 0 {
        return Error::Launch(LaunchError::SharedMemory { message: format!(
            "launch of `{}`: {asked} bytes of dynamic shared memory per block exceed what the device allows: \
             {optin} bytes per block with opt-in, of which the kernel's static shared memory takes {static_bytes}, \
             leaving {device_room}; use less shared memory per block (smaller tiles, or more blocks)",
            f.name
        )});
    }
    if asked > max_dyn.max(0) as u32 {
        return Error::Launch(LaunchError::SharedMemory { message: format!(
            "launch of `{}`: {asked} bytes of dynamic shared memory per block exceed the kernel's limit of {max_dyn} \
             bytes (48 KiB unless raised); opt in first with `function.set_max_dynamic_shared_memory({asked})` \
             (for a builder kernel: `kernel.function(&ctx)?.set_max_dynamic_shared_memory({asked})`); \
             the device allows up to {device_room} bytes for this kernel",
            f.name
        )});
    }
    err
}

impl Function {
    /// A 1-D configuration covering `n` elements with the block size that maximises occupancy
    /// (`n = 0` is an error, as for [`LaunchConfig::for_num_elems`]).
    pub fn config_for_num_elems(&self, n: usize) -> Result<LaunchConfig> {
        let (_, block) = self.max_potential_block_size(0, 0)?;
        LaunchConfig::for_num_elems(n, block.max(1))
    }

    /// Launches the kernel on `stream` with `args` (a tuple of scalars and device arrays).
    ///
    /// Checks the configuration, and that the stream and every array belong to the module's
    /// context. Launch errors (and, with a synchronising call afterwards, faults) come back as
    /// errors.
    ///
    /// # Safety
    /// The argument tuple must match the kernel's parameter list in number, order and type
    /// (a device array for each pointer parameter), and the kernel must stay within the
    /// arrays it is given: PTX carries no types cudajit could check. Kernels built with
    /// cudajit's builder are launched safely through their typed wrapper instead.
    pub unsafe fn launch<A: KernelArgs>(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        let ctx = self.module.context();
        ctx.check_same_for_launch(stream.context(), "the stream")?;
        args.check_context(ctx)?;
        config.validate(self)?;
        ctx.bind()?;
        args.with_params(|params| {
            // SAFETY: `params` holds one pointer per argument, each to a live value of the
            // argument's type; the caller vouches that they match the kernel's parameters.
            unsafe { launch_raw(self, &config, stream.raw(), params.as_mut_ptr(), false) }
        })
        .map_err(|e| explain_launch_error(self, &config, e))
    }
}

/// Launches `f` with `config` (through `cuLaunchKernelEx` when it has clusters or is
/// `cooperative` with clusters; `cuLaunchCooperativeKernel` when only cooperative).
///
/// # Safety
/// `params` holds one pointer per kernel parameter, each to a live value of its type.
pub(crate) unsafe fn launch_raw(
    f: &Function,
    config: &LaunchConfig,
    stream: crate::sys::CUstream,
    params: *mut *mut std::ffi::c_void,
    cooperative: bool,
) -> Result<()> {
    let (g, b) = (config.grid, config.block);
    let (grid, block, smem) = ([g.x, g.y, g.z], [b.x, b.y, b.z], config.shared_mem_bytes);
    // SAFETY: the caller's contract, passed on; the function is live (`f` holds its module).
    unsafe {
        match (config.cluster, cooperative) {
            (Some(_), _) => backend().launch_kernel_cluster(
                f.raw,
                grid,
                block,
                config.cluster_dims(),
                smem,
                stream,
                params,
                cooperative,
            ),
            (None, true) => {
                backend().launch_cooperative_kernel(f.raw, grid, block, smem, stream, params)
            }
            (None, false) => backend().launch_kernel(f.raw, grid, block, smem, stream, params),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_display_as_tuples() {
        assert_eq!(Dim3::from(0).to_string(), "(0, 1, 1)");
        assert_eq!(Dim3::from((2, 3, 4)).to_string(), "(2, 3, 4)");
    }

    #[test]
    fn configurations_for_n_elements() {
        let c = LaunchConfig::for_num_elems(1_000_001, 128).unwrap();
        assert_eq!((c.grid.x, c.block.x), (7813, 128));
        let e = LaunchConfig::for_num_elems(0, 128).unwrap_err().to_string();
        assert!(e.contains("no elements"), "{e}");
        assert_eq!(LaunchConfig::covering(0, 128).unwrap().grid.x, 1);
        assert!(LaunchConfig::for_num_elems(10, 0).is_err());
        assert!(LaunchConfig::for_num_elems(usize::MAX, 32).is_err());
        let c = LaunchConfig::new((4, 5), (8, 8, 2)).with_shared_mem(1024);
        assert_eq!(
            (c.grid.count(), c.block.count(), c.shared_mem_bytes),
            (20, 128, 1024)
        );
    }
}
