//! Streams: ordered queues of device work, with host callbacks, a future, and a synchronising guard.

mod callback;
mod future;
mod guard;
mod queue;

pub use future::StreamDone;
pub use guard::AutoSynchronize;
pub(crate) use queue::OwnedStream;
pub use queue::{Stream, StreamOptions};
