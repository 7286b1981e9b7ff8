//! (filled in by the warp work)
