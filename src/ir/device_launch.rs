//! Dynamic parallelism: a kernel launching a kernel from device code (CUDA 12's device-side
//! launch). Written once: the builder records a [`DeviceLaunch`], the lowering emits the
//! device runtime's calls (`cudaGetParameterBufferV2`, `cudaLaunchDeviceV2`, from
//! `libcudadevrt.a`), and the simulator runs the child grid with CUDA's ordering rules.

use std::sync::Arc;

use super::{FunctionIr, Param, ValueId};

/// The kernel a device-side launch starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum LaunchTarget {
    /// The kernel being built (recursion).
    Itself,
    /// Another kernel, lowered into the same module as the launching one.
    Kernel(Arc<FunctionIr>),
}

/// The stream a device-side launch goes into (CUDA's special device-side stream handles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceStream {
    /// The block's implicit stream (`0`): the launches of one block into it run one after
    /// another, in the order the block's threads made them.
    Default,
    /// `cudaStreamFireAndForget` (`(cudaStream_t)0x4`): the child runs independently of the
    /// parent's other launches (still before the parent grid counts as complete).
    FireAndForget,
    /// `cudaStreamTailLaunch` (`(cudaStream_t)0x3`): the child starts only after the parent
    /// grid, and all the work it launched into the other streams, has completed.
    TailLaunch,
}

impl DeviceStream {
    /// The `cudaStream_t` value the device runtime takes for it.
    pub(crate) fn handle(self) -> u64 {
        match self {
            DeviceStream::Default => 0,
            DeviceStream::TailLaunch => 0x3,
            DeviceStream::FireAndForget => 0x4,
        }
    }
}

/// One argument of a device-side launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DeviceArg {
    /// A scalar value of the launching kernel.
    Scalar(ValueId),
    /// An array parameter of the launching kernel, passed whole (its address and extents).
    Array(u32),
}

/// A device-side launch, made by every thread that reaches it (as in CUDA, each thread that
/// executes a launch starts its own grid).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DeviceLaunch {
    pub target: LaunchTarget,
    /// Grid and block extents (`u32` values).
    pub grid: [ValueId; 3],
    pub block: [ValueId; 3],
    /// Dynamic shared memory per block of the child, bytes (a `u32` value).
    pub shared: ValueId,
    pub stream: DeviceStream,
    /// One per user parameter of the child, in order.
    pub args: Vec<DeviceArg>,
    /// The launching kernel's hidden status parameter (two `u32`: the first failure's
    /// `cudaError_t` and the launch site's number), which children that launch kernels share.
    pub status: u32,
    /// This launch's number in the kernel (1, 2, ...), written beside a failure's code.
    pub site: u32,
}

/// The most nested levels of device-side launches CUDA allows (`cudaLimitDevRuntimeSyncDepth`
/// aside, a grid depth of 24).
pub(crate) const MAX_DEPTH: u32 = 24;
/// CUDA's default limit on launches pending at once (`cudaLimitDevRuntimePendingLaunchCount`).
pub(crate) const PENDING_LIMIT: usize = 2048;

/// `cudaError_t` codes a device-side launch reports.
pub(crate) mod code {
    /// `cudaErrorMemoryAllocation`: no parameter buffer could be allocated.
    pub(crate) const MEMORY_ALLOCATION: u32 = 2;
    /// `cudaErrorInvalidConfiguration`: a zero or too large grid or block, or too much
    /// shared memory.
    pub(crate) const INVALID_CONFIGURATION: u32 = 9;
    /// `cudaErrorLaunchMaxDepthExceeded`.
    pub(crate) const MAX_DEPTH_EXCEEDED: u32 = 65;
    /// `cudaErrorLaunchPendingCountExceeded`.
    pub(crate) const PENDING_COUNT_EXCEEDED: u32 = 69;
}

/// The name and meaning of a `cudaError_t` a device-side launch returned.
pub(crate) fn error_text(code: u32) -> String {
    let (name, what) = match code {
        code::MEMORY_ALLOCATION => (
            "cudaErrorMemoryAllocation",
            "the device runtime could not allocate the child's parameter buffer (too many launches \
             pending at once?)",
        ),
        code::INVALID_CONFIGURATION => (
            "cudaErrorInvalidConfiguration",
            "the child's grid or block has a zero extent or exceeds the device's limits, or it asks \
             for more shared memory than a block may have",
        ),
        code::MAX_DEPTH_EXCEEDED => (
            "cudaErrorLaunchMaxDepthExceeded",
            "launches are nested deeper than CUDA allows (24 levels)",
        ),
        code::PENDING_COUNT_EXCEEDED => (
            "cudaErrorLaunchPendingCountExceeded",
            "more launches are pending at once than the device runtime's buffer holds \
             (cudaLimitDevRuntimePendingLaunchCount, 2048 by default)",
        ),
        _ => ("cudaError_t", "the device runtime refused the launch"),
    };
    format!("{name} ({code}): {what}")
}

/// Every device-side launch in `f`'s body, in order.
pub(crate) fn f_launches(f: &FunctionIr) -> Vec<&DeviceLaunch> {
    fn walk<'a>(stmts: &'a [super::Stmt], out: &mut Vec<&'a DeviceLaunch>) {
        for s in stmts {
            match s {
                super::Stmt::DeviceLaunch(l) => out.push(l),
                super::Stmt::If {
                    then, otherwise, ..
                } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                super::Stmt::For { body, .. } => walk(body, out),
                super::Stmt::While {
                    cond_stmts, body, ..
                } => {
                    walk(cond_stmts, out);
                    walk(body, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&f.body, &mut out);
    out
}

/// The hidden status parameter of a kernel that launches kernels (`None` for other kernels).
pub(crate) fn status_param(f: &FunctionIr) -> Option<u32> {
    f_launches(f).first().map(|l| l.status)
}

/// The parameters of `f` a launch passes values for: those before the hidden ones (the
/// status words of [`status_param`], a grid barrier), which the builder adds after the
/// kernel's declared parameters.
pub(crate) fn user_params(f: &FunctionIr) -> &[Param] {
    let hidden = [status_param(f), f.grid_barrier];
    let n = hidden
        .iter()
        .flatten()
        .min()
        .map_or(f.params.len(), |&i| i as usize);
    &f.params[..n.min(f.params.len())]
}
