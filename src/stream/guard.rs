//! A guard that synchronises a stream when it goes out of scope (numba's `auto_synchronize`).

use std::ops::Deref;

use super::Stream;
use crate::error::{record_drop_error, Result};

/// Synchronises its stream when dropped; [`finish`](Self::finish) does it and returns the error.
/// Dereferences to the stream.
pub struct AutoSynchronize<'a> {
    stream: &'a Stream,
    finished: bool,
}

impl Stream {
    /// A guard that synchronises this stream at the end of the scope.
    pub fn auto_synchronize(&self) -> AutoSynchronize<'_> {
        AutoSynchronize {
            stream: self,
            finished: false,
        }
    }
}

impl AutoSynchronize<'_> {
    /// Synchronises now and reports the outcome (dropping the guard keeps errors for
    /// [`take_drop_errors`](crate::take_drop_errors) instead).
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.stream.synchronize()
    }
}

impl Deref for AutoSynchronize<'_> {
    type Target = Stream;
    fn deref(&self) -> &Stream {
        self.stream
    }
}

impl Drop for AutoSynchronize<'_> {
    fn drop(&mut self) {
        if !self.finished {
            if let Err(e) = self.stream.synchronize() {
                record_drop_error(e);
            }
        }
    }
}
