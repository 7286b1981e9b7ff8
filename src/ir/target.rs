//! What kernels target when nothing else says.

/// The compute capability kernels target when none is given: `CUDAJIT_DEFAULT_PTX_CC`
/// (e.g. `8.0`), else 7.5.
pub fn default_cc() -> (u32, u32) {
    std::env::var("CUDAJIT_DEFAULT_PTX_CC")
        .ok()
        .and_then(|s| {
            let (a, b) = s.trim().split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((7, 5))
}
