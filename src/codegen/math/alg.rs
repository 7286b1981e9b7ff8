//! cudajit's own math implementations, written once against [`Ops`].
