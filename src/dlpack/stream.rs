//! The CUDA stream conventions of the `__dlpack__(stream=...)` protocol.

use cudajit_sys as sys;

use crate::error::{Error, Result};
use crate::stream::Stream;

/// The consumer's stream in the `__dlpack__(stream=...)` handshake, as the Python array API
/// standard defines the integer a consumer passes for CUDA:
///
/// | `stream=` | meaning | here |
/// | --- | --- | --- |
/// | `None` | the producer assumes the legacy default stream | [`Legacy`](Self::Legacy) |
/// | `-1` | no synchronisation: the consumer orders the work itself | [`NoSync`](Self::NoSync) |
/// | `0` | not allowed (it could mean any default stream) | an error |
/// | `1` | the legacy default stream (`CU_STREAM_LEGACY`) | [`Legacy`](Self::Legacy) |
/// | `2` | the per-thread default stream (`CU_STREAM_PER_THREAD`) | [`PerThread`](Self::PerThread) |
/// | `> 2` | a stream handle (`cudaStream_t` / `CUstream` as an integer) | [`Handle`](Self::Handle) |
///
/// Handles 1 and 2 are the driver's own special handles, so every case is a `CUstream` the
/// producer's stream can be made to wait for ([`export_on`](super::export_on)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerStream {
    /// `stream=-1`: no synchronisation.
    NoSync,
    /// `stream=None` or `1`: the legacy default stream.
    Legacy,
    /// `stream=2`: the per-thread default stream (of the thread that enqueues the wait).
    PerThread,
    /// A stream of the consumer's (its handle as an integer, above 2).
    Handle(u64),
}

impl ConsumerStream {
    /// The consumer stream a `__dlpack__(stream=...)` argument names (`None` for Python's
    /// `None`); 0 and negative values other than -1 are errors.
    pub fn from_protocol(stream: Option<i64>) -> Result<ConsumerStream> {
        match stream {
            None | Some(1) => Ok(ConsumerStream::Legacy),
            Some(-1) => Ok(ConsumerStream::NoSync),
            Some(2) => Ok(ConsumerStream::PerThread),
            Some(0) => Err(Error::usage(
                "DLPack: stream=0 is not allowed for CUDA (it is ambiguous): pass 1 for the \
                 legacy default stream, 2 for the per-thread default stream, or a stream handle",
            )),
            Some(s) if s > 2 => Ok(ConsumerStream::Handle(s as u64)),
            Some(s) => Err(Error::usage(format!(
                "DLPack: stream={s} is not a CUDA stream (-1 means no synchronisation)"
            ))),
        }
    }

    /// The driver handle to make wait (`None` for [`NoSync`](Self::NoSync)).
    pub fn raw(&self) -> Option<sys::CUstream> {
        match *self {
            ConsumerStream::NoSync => None,
            ConsumerStream::Legacy => Some(1 as sys::CUstream),
            ConsumerStream::PerThread => Some(2 as sys::CUstream),
            ConsumerStream::Handle(h) => Some(h as sys::CUstream),
        }
    }
}

/// The integer to pass as `stream=` to another library's `__dlpack__` so that it orders its
/// work before `stream`'s (cudajit as the consumer): the handle, with the default stream
/// (handle 0, the legacy default stream for the driver API) as 1.
pub fn protocol_stream(stream: &Stream) -> i64 {
    match stream.raw() as usize {
        0 => 1,
        h => h as i64,
    }
}
