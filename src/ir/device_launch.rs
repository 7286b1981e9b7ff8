//! Dynamic parallelism: a kernel launching a kernel from device code (CUDA 12's device-side
//! launch). Written once: the builder records a [`DeviceLaunch`], the lowering emits the
//! device runtime's calls (`cudaGetParameterBufferV2`, `cudaLaunchDeviceV2`, from
//! `libcudadevrt.a`), and the simulator runs the child grid with CUDA's ordering rules. A
//! launch may go into a stream created on the device ([`StreamCreate`], destroyed by
//! [`StreamDestroy`]: `cudaStreamCreateWithFlags` / `cudaStreamDestroy`).

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

/// The stream a device-side launch goes into: one of CUDA's special device-side stream
/// handles, or a stream the launching thread created (the builder's `DeviceStream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LaunchStream {
    /// The block's implicit stream (`0`).
    Default,
    /// `cudaStreamFireAndForget` (`(cudaStream_t)0x4`).
    FireAndForget,
    /// `cudaStreamTailLaunch` (`(cudaStream_t)0x3`).
    TailLaunch,
    /// A stream created on the device: the `u64` handle value a [`StreamCreate`] defined.
    Created(ValueId),
}

impl LaunchStream {
    /// The `cudaStream_t` value the device runtime takes for a special stream (`None` for a
    /// created one, whose handle is a value).
    pub(crate) fn special_handle(self) -> Option<u64> {
        match self {
            LaunchStream::Default => Some(0),
            LaunchStream::TailLaunch => Some(0x3),
            LaunchStream::FireAndForget => Some(0x4),
            LaunchStream::Created(_) => None,
        }
    }
}

/// `cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)` made by every thread that reaches
/// it (the value it defines is the new stream's `u64` handle). A failure is kept in the
/// status words as a launch's is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StreamCreate {
    /// The kernel's hidden status parameter (see [`DeviceLaunch::status`]).
    pub status: u32,
    /// This call's number among the kernel's device-runtime calls (launches included).
    pub site: u32,
}

/// `cudaStreamDestroy(stream)` made by every thread that reaches it; work pending in the
/// stream still runs (the device runtime releases the stream when it is done).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StreamDestroy {
    /// The handle a [`StreamCreate`] defined.
    pub stream: ValueId,
    pub status: u32,
    pub site: u32,
}

/// `cudaStreamNonBlocking`, the only flag a stream created on the device may have.
pub(crate) const STREAM_NON_BLOCKING: u32 = 1;

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
    pub stream: LaunchStream,
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
    /// `cudaErrorInvalidResourceHandle`: a stream that is not (or no longer) a stream.
    pub(crate) const INVALID_RESOURCE_HANDLE: u32 = 400;
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
        code::INVALID_RESOURCE_HANDLE => (
            "cudaErrorInvalidResourceHandle",
            "a stream created on the device was used or destroyed when it was not a live stream",
        ),
        _ => (
            "cudaError_t",
            "the device runtime refused the call (a launch, or a stream's creation or destruction)",
        ),
    };
    format!("{name} ({code}): {what}")
}

/// A call into the device runtime that has a site number: a launch, or a stream's creation
/// or destruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Site<'a> {
    Launch(&'a DeviceLaunch),
    StreamCreate(&'a StreamCreate),
    StreamDestroy(&'a StreamDestroy),
}

impl Site<'_> {
    /// The hidden status parameter it writes a failure into.
    pub(crate) fn status(&self) -> u32 {
        match self {
            Site::Launch(l) => l.status,
            Site::StreamCreate(c) => c.status,
            Site::StreamDestroy(d) => d.status,
        }
    }
}

/// Every device-runtime call in `f`'s body, in order (the order the builder numbered them).
pub(crate) fn f_sites(f: &FunctionIr) -> Vec<Site<'_>> {
    fn walk<'a>(f: &'a FunctionIr, stmts: &'a [super::Stmt], out: &mut Vec<Site<'a>>) {
        for s in stmts {
            match s {
                super::Stmt::DeviceLaunch(l) => out.push(Site::Launch(l)),
                super::Stmt::StreamDestroy(d) => out.push(Site::StreamDestroy(d)),
                super::Stmt::Let(id) => {
                    if let Some(super::ValueDef {
                        op: super::Op::StreamCreate(c),
                        ..
                    }) = f.values.get(id.0 as usize)
                    {
                        out.push(Site::StreamCreate(c));
                    }
                }
                super::Stmt::If {
                    then, otherwise, ..
                } => {
                    walk(f, then, out);
                    walk(f, otherwise, out);
                }
                super::Stmt::For { body, .. } => walk(f, body, out),
                super::Stmt::While {
                    cond_stmts, body, ..
                } => {
                    walk(f, cond_stmts, out);
                    walk(f, body, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(f, &f.body, &mut out);
    out
}

/// The hidden status parameter of a kernel that calls the device runtime (launches kernels or
/// creates streams; `None` for other kernels).
pub(crate) fn status_param(f: &FunctionIr) -> Option<u32> {
    f_sites(f).first().map(Site::status)
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
