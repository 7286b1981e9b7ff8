//! Kernels that more than one test crate checks: tests/codegen their PTX (through ptxas),
//! tests/gpu their results (on the GPU and on the simulator).

use cudajit::codegen::{select, Kernel, Num};

/// Threads per block of [`block_sum`].
pub const BLOCK_SUM_THREADS: u32 = 256;

/// A block sum through shared memory: block `b` of 256 threads writes to `out[b]` the sum of
/// `x[256 b .. 256 b + 256]` (elements past the end count as zero), by a tree of halving steps
/// with a barrier after each (Numba's and CUDA's classic reduction).
pub fn block_sum<T: Num>(name: &str) -> Kernel<(&'static [T], &'static mut [T])> {
    Kernel::<(&[T], &mut [T])>::build(name, |k, (x, out)| {
        let tile = k.shared_array::<T>(BLOCK_SUM_THREADS as usize);
        let t = k.thread_idx().x;
        let i = k.grid1();
        tile.set(
            t,
            select(i.lt(x.len()), x.at(i.min(x.len() - 1u64)), T::from_bits(0)),
        );
        k.syncthreads();
        let stride = k.var(BLOCK_SUM_THREADS / 2);
        k.while_(
            |_| stride.get().gt(0u32),
            |k| {
                k.if_(t.lt(stride.get()), |_| {
                    tile.set(t, tile.at(t) + tile.at(t + stride.get()))
                });
                k.syncthreads();
                stride.set(stride.get() >> 1u32);
            },
        );
        k.if_(t.eq(0u32), |k| out.set(k.block_idx().x, tile.at(0u32)));
    })
    .expect("the block-sum kernel builds")
}
