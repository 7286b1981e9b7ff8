//! Grid-wide synchronisation (Numba's `cuda.cg.this_grid().sync()`): a barrier across every
//! block of a cooperative launch.
//!
//! CUDA's own `grid.sync()` lives in the toolkit's device runtime (`cudadevrt`), which a
//! driver-only program does not have; cudajit builds the barrier from the kernel language
//! instead: a hidden array parameter of two `u32` words per launch (an arrival count and a
//! generation), zeroed in stream order before each launch. At `grid_sync()` the block's threads
//! meet at `syncthreads`; its first thread fences, reads the generation, counts its block in;
//! the last block to arrive resets the count and advances the generation, the others wait for
//! the generation to change; then the block meets again. Correct only when every block is
//! resident at once, which a cooperative launch (`cuLaunchCooperativeKernel`) guarantees or
//! refuses: [`Kernel::launch`](super::Kernel::launch) uses one for such kernels and checks the
//! grid against the occupancy API first.

use super::array::{DArray, ReadWrite};
use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::scalar::ScalarTy;
use crate::ir::{ArrayRef, Param};

impl KernelBuilder {
    /// Waits until every thread of every block of the grid gets here (Numba's
    /// `cuda.cg.this_grid().sync()`, CUDA's `grid.sync()`), with the memory effects of each
    /// thread before it visible to all after it. Like `syncthreads`, every thread must reach
    /// it (a build error in divergent code), and only in a kernel's own body, not in a device
    /// function. A kernel that uses it is launched cooperatively by
    /// [`Kernel::launch`](super::Kernel::launch), which refuses grids larger than what can be
    /// resident at once ([`Kernel::max_cooperative_blocks`](super::Kernel::max_cooperative_blocks)).
    #[track_caller]
    pub fn grid_sync(&self) {
        let _at = crate::codegen::srcloc::at();
        let Some(Some(bar)) = with_state(|s| {
            if !s.kernel {
                s.error(
                    Kind::KernelOnly,
                    format!(
                        "in `{}`: grid_sync() works in a kernel's body only, not in a device function",
                        s.f.name
                    ),
                );
                return None;
            }
            let i = *s.f.grid_barrier.get_or_insert_with(|| {
                s.f.params.push(Param::Array {
                    elem: ScalarTy::U32,
                    ndim: 1,
                    mutable: true,
                });
                (s.f.params.len() - 1) as u32
            });
            Some(DArray::<u32, 1, ReadWrite>::new(s.tag, ArrayRef::Param(i)))
        }) else {
            return;
        };
        self.syncthreads();
        let t = self.thread_idx();
        let first = (t.x | t.y | t.z).eq(0u32);
        self.if_(first, |k| {
            let g = k.grid_dim();
            let blocks = g.x * g.y * g.z;
            k.threadfence();
            let generation = bar.atomic_load(1u32);
            k.threadfence();
            let arrived = bar.atomic_add(0u32, 1u32);
            k.if_else(
                arrived.eq(blocks - 1u32),
                |k| {
                    bar.atomic_exch(0u32, 0u32);
                    k.threadfence();
                    bar.atomic_add(1u32, 1u32);
                },
                |k| k.while_(|_| bar.atomic_load(1u32).eq(generation), |_| {}),
            );
            k.threadfence();
        });
        self.syncthreads();
    }
}
