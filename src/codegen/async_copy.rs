//! Asynchronous copies from global to shared memory (PTX `cp.async`, sm_80 and later), in
//! commit groups: what a multi-stage matrix product uses to load its next tiles while the
//! tensor cores work on the current ones.
//!
//! Each thread issues its own copies of 4, 8 or 16 bytes ([`cp_async`](DArray::cp_async), a
//! method of the shared destination), closes the copies issued so far into a group
//! ([`cp_async_commit`](KernelBuilder::cp_async_commit)), and later waits until at most `n` of
//! its groups are still in flight ([`cp_async_wait`](KernelBuilder::cp_async_wait)). A copy is
//! visible to the thread that issued it once a wait covers its group, and to the other threads
//! of the block after that wait and a `syncthreads` (or `syncwarp` within a warp).
//!
//! ```no_run
//! # use cudajit::codegen::Kernel;
//! // Two stages: the copy of tile t + 1 overlaps the work on tile t (128 threads, tiles of
//! // 512 f32 as 128 16-byte copies; the input's length is a multiple of 512).
//! let k = Kernel::<(&[f32], &mut [f32])>::build("staged", |k, (x, out)| {
//!     let tiles = k.shared_array2::<f32>(2, 512);
//!     let t = k.thread_idx().x;
//!     let n = (x.len() / 512u64).cast::<u32>();
//!     let load = |tile: cudajit::codegen::Expr<u32>| {
//!         tiles.cp_async::<16>(tiles.index2(tile % 2u32, t * 4u32), &x, tile * 512u32 + t * 4u32);
//!         k.cp_async_commit();
//!     };
//!     load(k.lit(0u32));
//!     let acc = k.var(0.0f32);
//!     k.for_range(0u32, n, |k, tile| {
//!         k.if_else(
//!             (tile + 1u32).lt(n),
//!             |_| load(tile + 1u32),
//!             |k| k.cp_async_commit(), // an empty group keeps the count
//!         );
//!         k.cp_async_wait(1); // tile `tile` has arrived (for this thread)
//!         k.syncthreads(); // ... and for the whole block
//!         let s = tile % 2u32;
//!         k.for_range(0u32, 4u32, |_, j| {
//!             acc.set(acc.get() + tiles.at2(s, (t * 4u32 + j + 128u32) % 512u32))
//!         });
//!         k.syncthreads(); // the stage is read before the next copy overwrites it
//!     });
//!     out.set(k.grid1(), acc.get());
//! })?;
//! # Ok::<(), cudajit::Error>(())
//! ```
//!
//! On the simulator a copy is recorded when issued (its bounds, alignment and source bytes
//! checked and read then) and written into shared memory when a wait covers its group; an
//! access to a destination element before that is a fault naming the thread and the element
//! (`docs/SIMULATOR.md`).

use super::array::{DArray, Index, ReadWrite};
use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::expr::Expr;
use super::lower::{asm, shared_addr, unsupported_err, Lowerer};
use super::scalar::Scalar;
use crate::error::Result;
use crate::ir::{ArrayRef, AsyncCopy, Stmt, ValueId};

mod sealed {
    pub trait Sealed {}
}

/// Where an array lives (an implementation detail of [`CpAsyncSrc`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ArrayTag(u32, ArrayRef);

/// The source of a [`cp_async`](DArray::cp_async): an array of elements `T` of any rank and
/// access (`&[T]`, `&mut [T]`, `NdRef`, `NdMut`); it must be a kernel parameter (global
/// memory), which the build checks.
pub trait CpAsyncSrc<T>: sealed::Sealed {
    #[doc(hidden)]
    fn array_tag(&self) -> ArrayTag;
}

impl<T, const N: usize, A> sealed::Sealed for DArray<T, N, A> {}
impl<T: Scalar, const N: usize, A> CpAsyncSrc<T> for DArray<T, N, A> {
    fn array_tag(&self) -> ArrayTag {
        ArrayTag(self.tag, self.array)
    }
}

/// Records one copy after checking where its arrays live.
#[track_caller]
fn copy<T: Scalar, const BYTES: usize, const D: usize>(
    dst: &DArray<T, D, ReadWrite>,
    dst_index: impl Index,
    src: &impl CpAsyncSrc<T>,
    src_index: impl Index,
    src_size: Option<Expr<u32>>,
) {
    const {
        assert!(
            BYTES == 4 || BYTES == 8 || BYTES == 16,
            "cp.async copies 4, 8 or 16 bytes"
        )
    };
    const {
        assert!(
            BYTES % std::mem::size_of::<T>() == 0,
            "cp.async copies whole elements: BYTES must be a multiple of the element's size"
        )
    };
    let _at = crate::codegen::srcloc::at();
    let (di, si) = (dst_index.to_index(), src_index.to_index());
    let ArrayTag(src_tag, src_arr) = src.array_tag();
    let dst_arr = dst.array;
    let tags = [dst.tag, src_tag];
    with_state(|s| {
        let name = s.f.name.clone();
        if tags.iter().any(|&t| t != s.tag) {
            s.error(
                Kind::ForeignValue,
                format!("in `{name}`: an array of another kernel is used"),
            );
            return;
        }
        if !matches!(dst_arr, ArrayRef::Shared(_) | ArrayRef::DynShared(_)) {
            s.error(
                Kind::ArrayAccess,
                format!(
                    "in `{name}`: cp.async copies into shared memory, but its destination (the \
                     array whose cp_async is called) is a kernel parameter or a local array; \
                     call it on a shared array (`shared_array*`, `dynamic_shared*`)"
                ),
            );
        }
        if !matches!(src_arr, ArrayRef::Param(_)) {
            s.error(
                Kind::ArrayAccess,
                format!(
                    "in `{name}`: cp.async copies from global memory, but its source is a \
                     shared, local or constant array; pass an array parameter of the kernel"
                ),
            );
        }
        let mut raws = vec![di.raw(), si.raw()];
        raws.extend(src_size.map(|e| e.raw()));
        s.check_use(&raws);
        s.push_stmt(Stmt::AsyncCopy(AsyncCopy::Copy {
            dst: dst_arr,
            dst_index: ValueId(di.id),
            src: src_arr,
            src_index: ValueId(si.id),
            bytes: BYTES as u8,
            src_size: src_size.map(|e| ValueId(e.id)),
            cache_global: BYTES == 16,
        }));
    });
}

/// `cp.async`: asynchronous copies from global memory into this shared array.
impl<T: Scalar, const D: usize> DArray<T, D, ReadWrite> {
    /// Starts copying `BYTES` (4, 8 or 16: `BYTES / size_of::<T>()` elements) from element
    /// `src_index` of the global array `src` (a kernel parameter) to element `dst_index` of
    /// this shared array, asynchronously (PTX `cp.async.ca.shared.global`, or `.cg` for 16
    /// bytes, which caches in L2 only; sm_80 and later). Both addresses must be multiples of
    /// `BYTES` (the launch refuses a parameter array whose start is not). The copy joins this
    /// thread's open group: [`cp_async_commit`](KernelBuilder::cp_async_commit) closes the
    /// group, [`cp_async_wait`](KernelBuilder::cp_async_wait) waits for it. Until then the
    /// destination must not be read or written (the simulator faults).
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// # use cudajit::f16;
    /// let k = Kernel::<(&[f16], &mut [f16])>::build("stage", |k, (x, out)| {
    ///     let tile = k.shared_array::<f16>(256);
    ///     let t = k.thread_idx().x; // 32 threads: 8 f16 (16 bytes) each
    ///     tile.cp_async::<16>(t * 8u32, &x, t * 8u32);
    ///     k.cp_async_commit();
    ///     k.cp_async_wait(0);
    ///     k.syncthreads();
    ///     out.set(t, tile.at(255u32 - t));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn cp_async<const BYTES: usize>(
        &self,
        dst_index: impl Index,
        src: &impl CpAsyncSrc<T>,
        src_index: impl Index,
    ) {
        copy::<T, BYTES, D>(self, dst_index, src, src_index, None)
    }

    /// [`cp_async`](DArray::cp_async) reading only the first `src_bytes` (0 to `BYTES`) of
    /// the source and filling the rest of the `BYTES` with zeros (PTX's `src-size` operand):
    /// the edge of a tile that the matrix ends in, with `src_bytes` 0 past the end (no source
    /// byte is read then, but its address must still be aligned). A `src_bytes` above `BYTES` is
    /// undefined on the GPU and a fault on the simulator.
    ///
    /// ```no_run
    /// # use cudajit::codegen::{select, Kernel};
    /// let k = Kernel::<(&[f32], &mut [f32])>::build("edge", |k, (x, out)| {
    ///     let tile = k.shared_array::<f32>(128);
    ///     let t = k.thread_idx().x; // 32 threads: 4 f32 (16 bytes) each
    ///     let i = t * 4u32;
    ///     let n = x.len().cast::<u32>();
    ///     let valid = n.max(i).min(i + 4u32) - i; // elements of `x` in i..i + 4
    ///     // Elements past the end arrive as zeros; a copy wholly past it reads nothing (its
    ///     // source index is then 0, any aligned address will do).
    ///     tile.cp_async_zfill::<16>(i, &x, select(valid.gt(0u32), i, 0u32), valid * 4u32);
    ///     k.cp_async_wait_all();
    ///     k.syncthreads();
    ///     out.set(t, tile.at(t));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn cp_async_zfill<const BYTES: usize>(
        &self,
        dst_index: impl Index,
        src: &impl CpAsyncSrc<T>,
        src_index: impl Index,
        src_bytes: impl Into<Expr<u32>>,
    ) {
        let n = src_bytes.into();
        copy::<T, BYTES, D>(self, dst_index, src, src_index, Some(n))
    }
}

/// Commit and wait of the asynchronous copies.
impl KernelBuilder {
    /// `cp.async.commit_group` (sm_80 and later): this thread's copies issued since its last
    /// commit become one group (possibly empty: an empty group still counts for
    /// [`cp_async_wait`](KernelBuilder::cp_async_wait)).
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// let k = Kernel::<(&[u32], &mut [u32])>::build("commit", |k, (x, out)| {
    ///     let s = k.shared_array::<u32>(32);
    ///     let t = k.thread_idx().x;
    ///     s.cp_async::<4>(t, &x, t);
    ///     k.cp_async_commit();
    ///     k.cp_async_wait(0);
    ///     out.set(t, s.at(t));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn cp_async_commit(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::AsyncCopy(AsyncCopy::Commit)));
    }

    /// `cp.async.wait_group n` (sm_80 and later): waits until at most `n` of this thread's
    /// committed groups are still in flight (groups complete in the order they were
    /// committed), so `cp_async_wait(0)` waits for all of them; copies not yet committed are
    /// not waited for. The copies of the completed groups are then visible to this thread;
    /// other threads need a `syncthreads` (or `syncwarp`) after the wait. `n` is a constant of
    /// the kernel, at most 255 here.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// let k = Kernel::<(&[u32], &mut [u32])>::build("wait", |k, (x, out)| {
    ///     let s = k.shared_array2::<u32>(2, 32);
    ///     let t = k.thread_idx().x;
    ///     s.cp_async::<4>(s.index2(0u32, t), &x, t);
    ///     k.cp_async_commit();
    ///     s.cp_async::<4>(s.index2(1u32, t), &x, t + 32u32);
    ///     k.cp_async_commit();
    ///     k.cp_async_wait(1); // the first group is complete, the second may not be
    ///     out.set(t, s.at2(0u32, t));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn cp_async_wait(&self, n: u8) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::AsyncCopy(AsyncCopy::Wait(n as u32))));
    }

    /// `cp.async.wait_all` (sm_80 and later): commits this thread's open copies and waits for
    /// every group, as `cp_async_commit()` then `cp_async_wait(0)`.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// let k = Kernel::<(&[u32], &mut [u32])>::build("wait_all", |k, (x, out)| {
    ///     let s = k.shared_array::<u32>(32);
    ///     let t = k.thread_idx().x;
    ///     s.cp_async::<4>(t, &x, t);
    ///     k.cp_async_wait_all();
    ///     out.set(t, s.at(t) + 1u32);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn cp_async_wait_all(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::AsyncCopy(AsyncCopy::WaitAll)));
    }
}

/// Lowers a statement of the asynchronous copies.
pub(crate) fn lower_async_copy(lw: &mut Lowerer<'_, '_>, c: &AsyncCopy) -> Result<()> {
    let sm = lw.opts.sm();
    if sm < (8, 0) {
        let what = match c {
            AsyncCopy::Copy { .. } => "cp.async (an asynchronous copy into shared memory)",
            AsyncCopy::Commit => "cp.async.commit_group",
            AsyncCopy::Wait(_) => "cp.async.wait_group",
            AsyncCopy::WaitAll => "cp.async.wait_all",
        };
        return Err(unsupported_err(
            &lw.f.name,
            format!(
                "{what} needs compute capability 8.0 or later, and this kernel is compiled for \
                 sm_{}{}: run it on an Ampere or newer GPU (or set PtxOptions::cc), or copy with \
                 plain loads and stores",
                sm.0, sm.1
            ),
        ));
    }
    match c {
        AsyncCopy::Copy {
            dst,
            dst_index,
            src,
            src_index,
            bytes,
            src_size,
            cache_global,
        } => {
            if !matches!(dst, ArrayRef::Shared(_) | ArrayRef::DynShared(_))
                || !matches!(src, ArrayRef::Param(_))
            {
                return Err(lw.err("cp.async between arrays of the wrong memory spaces"));
            }
            let d32 = shared_addr(lw, *dst, *dst_index)?;
            let s = lw.element_ptr(*src, *src_index)?;
            let level = if *cache_global && *bytes == 16 {
                "cg"
            } else {
                "ca"
            };
            // Inline PTX rather than `llvm.nvvm.cp.async.*`: with 32-bit shared pointers
            // (`-nvptx-short-ptr`, see `lower::init_nvptx`) LLVM 19 cannot select those
            // intrinsics ("Cannot select: intrinsic %llvm.nvvm.cp.async...", a fatal error),
            // as its patterns take the shared address in a 64-bit register only. The shared
            // address goes in a 32-bit register (`r`), as CUTLASS writes it; a shared address
            // fits in 32 bits whatever the pointer's width. The statement has side effects
            // and clobbers memory, so nothing moves across it.
            let mut text = format!("cp.async.{level}.shared.global [$0], [$1], {bytes}");
            let mut constraints = "r,l".to_string();
            let mut args = vec![d32, s.into()];
            if let Some(n) = src_size {
                text.push_str(", $2");
                constraints.push_str(",r");
                args.push(lw.v(*n)?);
            }
            text.push(';');
            constraints.push_str(",~{memory}");
            asm(lw, text, constraints, &args, None)?;
        }
        AsyncCopy::Commit => {
            lw.call("llvm.nvvm.cp.async.commit.group", None, &[])?;
        }
        AsyncCopy::Wait(n) => {
            let n = lw.ctx.i32_type().const_int(*n as u64, false);
            lw.call("llvm.nvvm.cp.async.wait.group", None, &[n.into()])?;
        }
        AsyncCopy::WaitAll => {
            lw.call("llvm.nvvm.cp.async.wait.all", None, &[])?;
        }
    }
    Ok(())
}
