//! Kernels that launch kernels (CUDA's dynamic parallelism, the device-side launch of CUDA 12):
//! [`KernelBuilder::launch_kernel`] and [`KernelBuilder::launch_self`] record a launch made by
//! every thread that reaches it, with the child's arguments type-checked like a host launch's.
//!
//! The PTX calls the device runtime (`cudaGetParameterBufferV2`, then `cudaLaunchDeviceV2`),
//! which the driver's linker resolves from `libcudadevrt.a` (found as the guide's "Kernels
//! that launch kernels" says) when the kernel is loaded; the children are lowered into the
//! launching kernel's module. A launch that fails on the device (a bad configuration, too many
//! pending launches, too deep a nesting) writes its `cudaError_t` into two hidden status words
//! that the launching kernel and its children share;
//! [`Kernel::launch`](super::Kernel::launch) waits for such a kernel and turns a failure into
//! an error that names it.
//!
//! Launches go into the block's default stream, CUDA's fire-and-forget or tail-launch
//! streams, or a stream the thread created on the device
//! ([`KernelBuilder::device_stream_create`], see [`DeviceStream`]).

use std::cell::RefCell;

use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::expr::Expr;
use super::kernel::Kernel;
use super::signature::KernelParams;
use crate::ir::device_launch::{DeviceArg, DeviceLaunch, LaunchTarget};
use crate::ir::{ArrayRef, Param, ScalarTy, Stmt, ValueId};

mod args;
pub(crate) mod devrt;
pub(crate) mod host;
pub(crate) mod lower;
pub(crate) mod lower_stream;
mod stream;

pub use args::{DeviceArgFor, DeviceArgs, ParamSpec, RawArg};
pub use stream::{CreatedStream, DeviceStream};

use args::Raw;

/// Grid or block extents of a device-side launch: `u32` values or expressions, e.g. `n`,
/// `(gx, gy, 1)`, or `DeviceDim3::new(x, y, z)`.
#[derive(Clone, Copy, Debug)]
pub struct DeviceDim3 {
    /// Extent in x.
    pub x: Expr<u32>,
    /// Extent in y.
    pub y: Expr<u32>,
    /// Extent in z.
    pub z: Expr<u32>,
}

impl DeviceDim3 {
    /// Extents `x`, `y`, `z`.
    pub fn new(x: impl Into<Expr<u32>>, y: impl Into<Expr<u32>>, z: impl Into<Expr<u32>>) -> Self {
        DeviceDim3 {
            x: x.into(),
            y: y.into(),
            z: z.into(),
        }
    }
}

impl From<u32> for DeviceDim3 {
    fn from(x: u32) -> Self {
        DeviceDim3::new(x, 1u32, 1u32)
    }
}

impl From<Expr<u32>> for DeviceDim3 {
    fn from(x: Expr<u32>) -> Self {
        DeviceDim3::new(x, 1u32, 1u32)
    }
}

impl From<(u32, u32, u32)> for DeviceDim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        DeviceDim3::new(x, y, z)
    }
}

impl From<(Expr<u32>, Expr<u32>, Expr<u32>)> for DeviceDim3 {
    fn from((x, y, z): (Expr<u32>, Expr<u32>, Expr<u32>)) -> Self {
        DeviceDim3::new(x, y, z)
    }
}

thread_local! {
    /// Per kernel being built (by build tag): its status parameter and launches so far.
    static SITES: RefCell<Vec<(u32, u32, u32)>> = const { RefCell::new(Vec::new()) };
}

/// The status parameter of the kernel being built (added on its first launch) and the number
/// of this launch.
fn status_and_site(s: &mut super::builder::FnState) -> (u32, u32) {
    SITES.with(|sites| {
        let mut sites = sites.borrow_mut();
        if let Some(e) = sites.iter_mut().find(|e| e.0 == s.tag) {
            e.2 += 1;
            return (e.1, e.2);
        }
        let status = s.add_param(Param::Array {
            elem: ScalarTy::U32,
            ndim: 1,
            mutable: true,
        });
        // Builds finish in a few launches' time: keep the recent ones only.
        if sites.len() >= 64 {
            sites.remove(0);
        }
        sites.push((s.tag, status, 1));
        (status, 1)
    })
}

impl KernelBuilder {
    /// Launches `child` from the device (CUDA's `child<<<grid, block, shared_bytes, stream>>>
    /// (args...)` in a kernel): every thread that reaches this starts its own grid of `child`,
    /// as in CUDA (guard it with `if_` to launch from one thread). `args` are typed by the
    /// child's parameter list as a host launch's are: arrays of this kernel (its array
    /// parameters, passed whole; shared and local arrays cannot be), and scalar expressions or
    /// values.
    ///
    /// The child may run at any time before the launching grid completes (the host sees the parent complete only after all its
    /// children), and it sees the parent's global-memory writes made before the launch. With
    /// [`DeviceStream::Default`], the launches of one block run one after another in the order
    /// made; [`DeviceStream::FireAndForget`] children run independently; a
    /// [`DeviceStream::TailLaunch`] child starts after the parent grid and its other work; the
    /// children launched into a stream the thread created
    /// ([`device_stream_create`](KernelBuilder::device_stream_create), passed as `stream`
    /// itself or as [`DeviceStream::Created`]) run one after another in launch order.
    ///
    /// The child is compiled into this kernel's module (with this kernel's options). Loading
    /// the kernel links the device runtime, `libcudadevrt.a` (see the guide's "Kernels that
    /// launch kernels": the `nvidia-cuda-runtime-cu12` wheel, a CUDA toolkit, or
    /// `CUDAJIT_CUDADEVRT`). A launch that fails on the device is reported by
    /// [`Kernel::launch`], which waits for kernels that launch kernels.
    ///
    /// Only in a kernel's body (not a device function); a child that calls `grid_sync()` is
    /// refused (a cooperative launch cannot be made from the device).
    #[track_caller]
    pub fn launch_kernel<P: KernelParams, A: DeviceArgs<P>>(
        &self,
        child: &Kernel<P>,
        grid: impl Into<DeviceDim3>,
        block: impl Into<DeviceDim3>,
        shared_bytes: impl Into<Expr<u32>>,
        stream: impl Into<DeviceStream>,
        args: A,
    ) {
        let _at = super::srcloc::at();
        let stream = stream.into();
        let ir = child.ir().clone();
        if ir.grid_barrier.is_some() {
            with_state(|s| {
                s.error(
                    Kind::DeviceLaunch,
                    format!(
                        "in `{}`: the child kernel `{}` calls grid_sync() and needs a cooperative \
                         launch, which cannot be made from the device",
                        s.f.name, ir.name
                    ),
                )
            });
            return;
        }
        let want: Vec<Param> = crate::ir::device_launch::user_params(&ir).to_vec();
        self.record_launch(
            LaunchTarget::Kernel(ir),
            want,
            grid.into(),
            block.into(),
            shared_bytes.into(),
            stream,
            A::params(),
            args.raws(),
        );
    }

    /// Launches the kernel being built from the device (recursion), as
    /// [`launch_kernel`](KernelBuilder::launch_kernel) does: `P` is this kernel's parameter
    /// list (the `P` of its `Kernel::<P>::build`), checked when the kernel is built. Launches
    /// nest at most 24 levels deep (CUDA's limit; deeper launches fail with
    /// `cudaErrorLaunchMaxDepthExceeded`).
    #[track_caller]
    pub fn launch_self<P: KernelParams, A: DeviceArgs<P>>(
        &self,
        grid: impl Into<DeviceDim3>,
        block: impl Into<DeviceDim3>,
        shared_bytes: impl Into<Expr<u32>>,
        stream: impl Into<DeviceStream>,
        args: A,
    ) {
        let _at = super::srcloc::at();
        let stream = stream.into();
        let Some(mine) = with_state(|s| {
            let n = SITES.with(|sites| {
                sites
                    .borrow()
                    .iter()
                    .find(|e| e.0 == s.tag)
                    .map_or(s.f.params.len(), |e| e.1 as usize)
            });
            let mut p = s.f.params[..n].to_vec();
            if let Some(b) = s.f.grid_barrier {
                p.truncate(b as usize);
            }
            p
        }) else {
            return;
        };
        self.record_launch(
            LaunchTarget::Itself,
            mine,
            grid.into(),
            block.into(),
            shared_bytes.into(),
            stream,
            A::params(),
            args.raws(),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn record_launch(
        &self,
        target: LaunchTarget,
        want: Vec<Param>,
        grid: DeviceDim3,
        block: DeviceDim3,
        shared: Expr<u32>,
        stream: DeviceStream,
        got: Vec<ParamSpec>,
        raws: Vec<RawArg>,
    ) {
        let child_name = match &target {
            LaunchTarget::Itself => None,
            LaunchTarget::Kernel(k) => Some(k.name.clone()),
        };
        with_state(|s| {
            let who = child_name.clone().unwrap_or_else(|| s.f.name.clone());
            let fail = |s: &mut super::builder::FnState, what: String| {
                let msg = format!(
                    "in `{}`: launching `{who}` from the device: {what}",
                    s.f.name
                );
                s.error(Kind::DeviceLaunch, msg);
            };
            if !s.kernel {
                fail(
                    s,
                    "kernels are launched from a kernel's body only, not from a device function"
                        .into(),
                );
                return;
            }
            if target == LaunchTarget::Itself && grid_sync_used(s) {
                fail(
                    s,
                    "a kernel that calls grid_sync() needs a cooperative launch, which cannot be \
                     made from the device"
                        .into(),
                );
                return;
            }
            let got: Vec<Param> = got.into_iter().map(|p| p.0).collect();
            if got != want {
                fail(
                    s,
                    format!(
                        "its parameters are {}, but `launch_self::<P>` names {}; use the `P` of \
                         this kernel's `Kernel::<P>::build`",
                        describe(&want),
                        describe(&got)
                    ),
                );
                return;
            }
            let dims: Vec<(u32, u32)> = [grid.x, grid.y, grid.z, block.x, block.y, block.z]
                .iter()
                .map(|e| e.raw())
                .chain([shared.raw()])
                .collect();
            let mut operands = dims.clone();
            let mut out = Vec::with_capacity(raws.len());
            for (i, (raw, p)) in raws.iter().zip(&want).enumerate() {
                match raw.0 {
                    Raw::Scalar(tag, id) => {
                        operands.push((tag, id));
                        out.push(DeviceArg::Scalar(ValueId(id)));
                    }
                    Raw::Array(tag, array) => {
                        if tag != s.tag {
                            fail(s, format!("argument {i} is an array of another kernel"));
                            return;
                        }
                        let ArrayRef::Param(j) = array else {
                            fail(
                                s,
                                format!(
                                    "argument {i} is a shared, local or constant array; a child \
                                     kernel can only receive global memory (an array parameter \
                                     of this kernel), as in CUDA"
                                ),
                            );
                            return;
                        };
                        let ndim = |p: &Param| match p {
                            Param::Array { ndim, .. } => Some(*ndim),
                            _ => None,
                        };
                        if ndim(&s.f.params[j as usize]) != ndim(p) {
                            fail(
                                s,
                                format!(
                                    "argument {i} is a view with another number of dimensions \
                                     than the array parameter it comes from; pass the parameter \
                                     itself"
                                ),
                            );
                            return;
                        }
                        out.push(DeviceArg::Array(j));
                    }
                }
            }
            // Values of another kernel or out of scope are refused here.
            s.check_use(&operands);
            let Some(stream) = stream::resolve(s, stream, &format!("launching `{who}` into"))
            else {
                return;
            };
            let (status, site) = status_and_site(s);
            let v = |k: usize| ValueId(dims[k].1);
            s.push_stmt(Stmt::DeviceLaunch(DeviceLaunch {
                target,
                grid: [v(0), v(1), v(2)],
                block: [v(3), v(4), v(5)],
                shared: v(6),
                stream,
                args: out,
                status,
                site,
            }));
        });
    }
}

/// Whether the kernel being built has called `grid_sync()`.
fn grid_sync_used(s: &super::builder::FnState) -> bool {
    s.f.grid_barrier.is_some()
}

/// `(&[f32], &mut [u32; 2-D], i32)`-like text of a parameter list, for messages.
fn describe(ps: &[Param]) -> String {
    let each: Vec<String> = ps
        .iter()
        .map(|p| match p {
            Param::Scalar(t) => t.name().to_string(),
            Param::Array {
                elem,
                ndim,
                mutable,
            } => {
                let m = if *mutable { "&mut " } else { "&" };
                if *ndim == 1 {
                    format!("{m}[{}]", elem.name())
                } else {
                    format!("{m}[{}; {ndim}-D]", elem.name())
                }
            }
            Param::TensorMap { .. } => "tensor map".to_string(),
        })
        .collect();
    format!("({})", each.join(", "))
}
