//! The kernels of the thread-block cluster example (shared with `tests/gpu/clusters.rs`):
//! blocks of one cluster working in each other's shared memory.

use cudajit::codegen::Kernel;

/// Bins of the histogram, spread over the blocks of a cluster.
pub const BINS: u32 = 256;
/// Values each block reads.
pub const PER_BLOCK: u32 = 2048;

/// The histogram kernel's parameters: values, histogram (`BINS` per cluster).
pub type Histogram = Kernel<(&'static [u32], &'static mut [u32])>;

/// CUDA's distributed shared memory example: each block of a cluster of `n` holds
/// `BINS / n` bins in its shared memory; every thread adds each of its block's `PER_BLOCK`
/// values to the bin's owner block (`atomic_add_at_rank`); then each block writes its bins to
/// `hist[cluster · BINS + bin]`. Launch `blocks` blocks with clusters of 1, 2, 4 or 8.
pub fn histogram() -> cudajit::Result<Histogram> {
    Kernel::<(&[u32], &mut [u32])>::build("cluster_histogram", |k, (x, hist)| {
        let bins = k.shared_array::<u32>(BINS as usize);
        let t = k.thread_idx().x;
        let (rank, n) = (k.cluster_rank(), k.cluster_size());
        let per = BINS / n; // bins held by each block of the cluster
        k.for_step(t, per, k.block_dim().x, |_, i| bins.set(i, 0u32));
        k.cluster_sync(); // every block's bins are zero before any block adds to them
        let base = k.block_idx().x * PER_BLOCK;
        k.for_step(t, PER_BLOCK, k.block_dim().x, |_, i| {
            let bin = x.at(base + i) % BINS;
            bins.atomic_add_at_rank(bin / per, bin % per, 1u32);
        });
        k.cluster_sync(); // all adds are done (and no block exits while others add)
        let first = k.cluster_idx().x * BINS + rank * per;
        k.for_step(t, per, k.block_dim().x, |_, i| {
            hist.set(first + i, bins.at(i))
        });
    })
}

/// The host's histogram of `x` for clusters of `size` blocks.
pub fn host_histogram(x: &[u32], size: u32) -> Vec<u32> {
    let per_cluster = (PER_BLOCK * size) as usize;
    let mut h = vec![0u32; x.len().div_ceil(per_cluster) * BINS as usize];
    for (i, v) in x.iter().enumerate() {
        h[i / per_cluster * BINS as usize + (v % BINS) as usize] += 1;
    }
    h
}
