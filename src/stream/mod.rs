//! Streams: ordered queues of device work, with host callbacks, a future, and a synchronising guard.

mod callback;
mod future;
mod guard;
mod stream;

pub use future::StreamDone;
pub use guard::AutoSynchronize;
pub use stream::{Stream, StreamOptions};
