//! The streams a device-side launch goes into: CUDA's special device-side streams, and
//! streams created on the device ([`KernelBuilder::device_stream_create`], CUDA's
//! `cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)` in a kernel) and destroyed there
//! ([`KernelBuilder::device_stream_destroy`], `cudaStreamDestroy(s)`).
//!
//! A created stream is a [`CreatedStream`] handle: it has no arithmetic and converts to no
//! expression, so only device-side launches and `device_stream_destroy` take it, and it cannot
//! be stored or passed to a child (as in CUDA, a device-created stream belongs to the block
//! that made it). Each thread that reaches `device_stream_create` makes its own stream.

use super::super::builder::{with_state, FnState, Kind, ORPHAN};
use super::super::control::KernelBuilder;
use super::status_and_site;
use crate::ir::device_launch::{LaunchStream, StreamCreate, StreamDestroy};
use crate::ir::{Op, ScalarTy, Stmt, ValueId};

/// The stream a device-side launch goes into (CUDA's `stream` in `<<<grid, block, shared,
/// stream>>>` in device code).
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
    /// A stream this thread created with
    /// [`device_stream_create`](KernelBuilder::device_stream_create): the children launched
    /// into it run one after another in the order launched, concurrently with the work of
    /// the block's other streams, and complete before the parent grid does.
    Created(CreatedStream),
}

/// A stream created on the device by
/// [`KernelBuilder::device_stream_create`]: launches take it (or
/// [`DeviceStream::Created`] of it) as their stream, and
/// [`KernelBuilder::device_stream_destroy`] destroys it. It is usable in the kernel being
/// built, after its creation and within the if or loop body that created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreatedStream {
    tag: u32,
    id: u32,
}

impl From<CreatedStream> for DeviceStream {
    fn from(s: CreatedStream) -> Self {
        DeviceStream::Created(s)
    }
}

/// The IR's stream for `stream` in the kernel being built; a created stream of another
/// kernel, or out of scope here, is a build error (`what` says what used it).
pub(super) fn resolve(s: &mut FnState, stream: DeviceStream, what: &str) -> Option<LaunchStream> {
    Some(match stream {
        DeviceStream::Default => LaunchStream::Default,
        DeviceStream::FireAndForget => LaunchStream::FireAndForget,
        DeviceStream::TailLaunch => LaunchStream::TailLaunch,
        DeviceStream::Created(c) => LaunchStream::Created(ValueId(check(s, c, what)?)),
    })
}

/// The value of `c` in the kernel being built, or a build error saying why it cannot be used.
fn check(s: &mut FnState, c: CreatedStream, what: &str) -> Option<u32> {
    let why = if c.tag != s.tag {
        "it was created by another kernel (or outside any kernel build); a stream created on \
         the device belongs to the kernel, and the block, that created it"
    } else if !s.in_scope(c.id) {
        "it was created inside an if or loop body that has ended; create, use and destroy a \
         stream within one body"
    } else {
        return Some(c.id);
    };
    let msg = format!(
        "in `{}`: {what} a stream created on the device: {why}",
        s.f.name
    );
    s.error(Kind::DeviceLaunch, msg);
    None
}

impl KernelBuilder {
    /// Creates a stream on the device (CUDA's `cudaStreamCreateWithFlags(&s,
    /// cudaStreamNonBlocking)` in a kernel, the one flag the device allows): every thread that
    /// reaches this creates its own stream. Children launched into it
    /// ([`launch_kernel`](KernelBuilder::launch_kernel) with the handle as the stream) run one
    /// after another in the order launched, and concurrently with the work of the block's
    /// other streams; like every child, they complete before the parent grid does.
    ///
    /// Destroy it with [`device_stream_destroy`](KernelBuilder::device_stream_destroy) (work
    /// pending in it still runs). A failed creation is reported by
    /// [`Kernel::launch`](super::super::Kernel::launch) as a failed launch is; the handle is
    /// then the default stream's. Only in a kernel's body (not a device function); the handle
    /// is usable within the if or loop body that created it.
    #[track_caller]
    pub fn device_stream_create(&self) -> CreatedStream {
        let _at = super::super::srcloc::at();
        let made = with_state(|s| {
            if !s.kernel {
                let msg = format!(
                    "in `{}`: streams are created on the device in a kernel's body only, not in a \
                     device function",
                    s.f.name
                );
                s.error(Kind::DeviceLaunch, msg);
                return CreatedStream { tag: s.tag, id: 0 };
            }
            let (status, site) = status_and_site(s);
            let op = Op::StreamCreate(StreamCreate { status, site });
            let id = s.value(ScalarTy::U64, op, &[], true);
            CreatedStream { tag: s.tag, id }
        });
        made.unwrap_or(CreatedStream { tag: ORPHAN, id: 0 })
    }

    /// Destroys a stream created on the device (CUDA's `cudaStreamDestroy(s)`): allowed while
    /// children launched into it are pending or running, which still run; the device runtime
    /// releases the stream when they are done. Every thread that reaches this destroys its
    /// stream; launching into it, or destroying it, again afterwards is an error (the
    /// simulator reports it; on a GPU it is undefined).
    #[track_caller]
    pub fn device_stream_destroy(&self, stream: CreatedStream) {
        let _at = super::super::srcloc::at();
        with_state(|s| {
            if !s.kernel {
                let msg = format!(
                    "in `{}`: streams are destroyed on the device in a kernel's body only, not in \
                     a device function",
                    s.f.name
                );
                s.error(Kind::DeviceLaunch, msg);
                return;
            }
            let Some(id) = check(s, stream, "device_stream_destroy of") else {
                return;
            };
            let (status, site) = status_and_site(s);
            s.push_stmt(Stmt::StreamDestroy(StreamDestroy {
                stream: ValueId(id),
                status,
                site,
            }));
        });
    }
}
