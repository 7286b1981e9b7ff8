//! (filled in by the kernels work)
