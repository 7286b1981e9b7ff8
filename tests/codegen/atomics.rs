//! (filled in by the atomics work)
