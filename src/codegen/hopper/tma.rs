//! Tile copies by the Tensor Memory Accelerator (PTX `cp.async.bulk.tensor`, sm_90): a kernel
//! parameter [`Tma`] receives a [`TensorMap`](crate::memory::TensorMap) by value, and one
//! thread copies whole boxes of the tensor between global and shared memory with it.

use std::marker::PhantomData;

use inkwell::values::BasicValueEnum;

use super::super::array::{DArray, Index, ReadOnly, ReadWrite};
use super::super::builder::{with_state, Kind};
use super::super::control::KernelBuilder;
use super::super::expr::Expr;
use super::super::lower::Lowerer;
use super::super::lower::{asm, shared_addr};
use super::super::scalar::Scalar;
use super::super::signature::{ArgBuffer, ArgFor, KernelParam};
use super::mbarrier::Mbarriers;
use crate::error::Result;
use crate::ir::{ArrayRef, HopperStmt, Param, Stmt, ValueId};
use crate::memory::{TensorMap, TensorMapElement};

/// A kernel parameter: a TMA tensor map of rank `R` (1 to 5) over elements of `T`, passed by
/// value (CUDA's `const __grid_constant__ CUtensorMap`), for reading: the kernel may only
/// [`load`](TmaDesc::load) through it. The launch argument is a
/// [`&TensorMap<T, R>`](crate::memory::TensorMap); the build closure receives a [`TmaDesc`].
pub struct Tma<T, const R: usize>(PhantomData<fn() -> T>);

/// A kernel parameter like [`Tma`] through which the kernel may also
/// [`store`](TmaDesc::store): its launch argument must be a map made with
/// [`TensorMap::tiled_mut`](crate::memory::TensorMap::tiled_mut) (which borrows its array
/// mutably); a read-only map is an error at launch.
pub struct TmaMut<T, const R: usize>(PhantomData<fn() -> T>);

/// A tensor-map parameter in a kernel being built: [`load`](TmaDesc::load) copies a box of the
/// tensor into shared memory; on a [`TmaMut`] parameter (`A` = [`ReadWrite`]),
/// [`store`](TmaDesc::store) copies one back.
pub struct TmaDesc<T, const R: usize, A = ReadOnly> {
    tag: u32,
    param: u32,
    _t: PhantomData<fn() -> (T, A)>,
}

impl<T, const R: usize, A> Clone for TmaDesc<T, R, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, A> Copy for TmaDesc<T, R, A> {}

/// Declares a tensor-map parameter.
fn declare_map<T: Scalar, const R: usize, A>() -> TmaDesc<T, R, A> {
    const { assert!(R >= 1 && R <= 5, "a tensor map has 1 to 5 dimensions") };
    let (tag, param) = with_state(|s| {
        (
            s.tag,
            s.add_param(Param::TensorMap {
                elem: T::TY,
                rank: R as u8,
            }),
        )
    })
    .unwrap_or((0, 0));
    TmaDesc {
        tag,
        param,
        _t: PhantomData,
    }
}

impl<T: Scalar, const R: usize> KernelParam for Tma<T, R> {
    type Handle = TmaDesc<T, R, ReadOnly>;
    fn declare() -> Self::Handle {
        declare_map()
    }
}

impl<T: Scalar, const R: usize> KernelParam for TmaMut<T, R> {
    type Handle = TmaDesc<T, R, ReadWrite>;
    fn declare() -> Self::Handle {
        declare_map()
    }
}

impl<T: Scalar + TensorMapElement, const R: usize> ArgFor<Tma<T, R>> for &TensorMap<'_, T, R> {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        buf.push_tensor_map(self.context(), &self.raw().0)
    }
}

impl<T: Scalar + TensorMapElement, const R: usize> ArgFor<TmaMut<T, R>> for &TensorMap<'_, T, R> {
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        if !self.is_writable() {
            return Err(crate::error::Error::usage(
                "a kernel parameter that stores through its tensor map (`TmaMut`) was given a                  read-only map (made with `TensorMap::tiled`, which borrows its array shared):                  make it with `TensorMap::tiled_mut`",
            ));
        }
        buf.push_tensor_map(self.context(), &self.raw().0)
    }
}

impl<T: Scalar, const R: usize, A> TmaDesc<T, R, A> {
    /// Checks the tags and the destination, then records `stmt`.
    fn record(
        &self,
        what: &str,
        tile_tag: u32,
        tile: ArrayRef,
        raws: &[(u32, u32)],
        stmt: HopperStmt,
    ) {
        with_state(|s| {
            let name = s.f.name.clone();
            if s.tag != self.tag || s.tag != tile_tag {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{name}`: {what} with a tensor map or tile of another kernel"),
                );
                return;
            }
            if !matches!(tile, ArrayRef::DynShared(_)) {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{name}`: {what} copies a box to or from the dynamic shared memory, \
                         but this tile is a kernel parameter, a local or a static shared array; \
                         view the dynamic shared memory (`dynamic_shared`, `dynamic_shared2`) \
                         and copy into that"
                    ),
                );
                return;
            }
            s.check_use(raws);
            s.push_stmt(Stmt::Hopper(stmt));
        });
    }

    /// One thread starts copying the box of the tensor whose first element has coordinates
    /// `coords` (C order: outermost first, as the array's shape; they may lie outside the
    /// tensor, where the box is filled with the map's out-of-bounds value; the innermost one
    /// must be a whole number of 16 bytes, else the GPU stops the kernel with an illegal
    /// instruction and the simulator reports a misaligned access) into the dynamic
    /// shared memory at element `at` of `tile` (128-byte aligned; 1024 with 128-byte swizzle),
    /// laid out as the map says (box rows one after another, swizzled). The copy's bytes count
    /// as transactions of barrier `bar` of `bars`: announce them first with
    /// [`arrive_expect_tx`](Mbarriers::arrive_expect_tx) (the box's size in bytes, also for a
    /// box partly outside the tensor), then wait for the phase. PTX
    /// `cp.async.bulk.tensor.{R}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`.
    #[track_caller]
    pub fn load<TA>(
        &self,
        coords: [Expr<i32>; R],
        tile: &DArray<T, 1, TA>,
        at: impl Index,
        bars: &Mbarriers,
        bar: impl Index,
    ) {
        let _at = crate::codegen::srcloc::at();
        self.load_to(coords, tile, at, bars, bar, None)
    }

    /// [`load`](TmaDesc::load) into every block of the cluster whose rank's bit is set in
    /// `ranks` (a u16 mask; the issuing block's own bit may be clear): the box lands at element
    /// `at` of `tile` in each of them, and its bytes complete barrier `bar` of `bars` in each
    /// of them, so each block announces the box's bytes on its own barrier. One copy from
    /// global memory feeds several blocks (e.g. the operand tile that the blocks of a row of
    /// output tiles share). Needs a cluster launch (`LaunchConfig::with_cluster`). PTX
    /// `cp.async.bulk.tensor…mbarrier::complete_tx::bytes.multicast::cluster`.
    #[track_caller]
    pub fn load_multicast<TA>(
        &self,
        coords: [Expr<i32>; R],
        tile: &DArray<T, 1, TA>,
        at: impl Index,
        bars: &Mbarriers,
        bar: impl Index,
        ranks: impl Into<Expr<u16>>,
    ) {
        let _at = crate::codegen::srcloc::at();
        self.load_to(coords, tile, at, bars, bar, Some(ranks.into()))
    }

    fn load_to<TA>(
        &self,
        coords: [Expr<i32>; R],
        tile: &DArray<T, 1, TA>,
        at: impl Index,
        bars: &Mbarriers,
        bar: impl Index,
        multicast: Option<Expr<u16>>,
    ) {
        let (at, bar) = (at.to_index(), bar.to_index());
        let mut raws: Vec<_> = coords.iter().map(|c| c.raw()).collect();
        raws.extend([at.raw(), bar.raw()]);
        raws.extend(multicast.as_ref().map(|m| m.raw()));
        let (bar_tag, bar_array) = bars.raw();
        if bar_tag != self.tag {
            with_state(|s| {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{}`: TMA load on barriers of another kernel", s.f.name),
                )
            });
        }
        // The PTX takes coordinates innermost first.
        let coords = coords.iter().rev().map(|c| ValueId(c.id)).collect();
        self.record(
            "a TMA load",
            tile.tag,
            tile.array,
            &raws,
            HopperStmt::TmaLoad {
                map: self.param,
                coords,
                dst: tile.array,
                dst_index: ValueId(at.id),
                bar: bar_array,
                bar_index: ValueId(bar.id),
                multicast: multicast.map(|m| ValueId(m.id)),
            },
        );
    }
}

impl<T: Scalar, const R: usize> TmaDesc<T, R, ReadWrite> {
    /// One thread starts copying the box at element `at` of the dynamic shared memory `tile`
    /// to the tensor at `coords` (C order; the parts of the box outside the tensor are not
    /// written; the innermost coordinate a whole number of 16 bytes, as for
    /// [`load`](TmaDesc::load)). The copy joins the thread's bulk group: [`bulk_commit`](KernelBuilder::bulk_commit)
    /// then [`bulk_wait`](KernelBuilder::bulk_wait) before the kernel ends or the tile is
    /// overwritten. Shared-memory writes of other threads must be made visible to the copy
    /// first ([`fence_proxy_async`](KernelBuilder::fence_proxy_async) in each writer, then a
    /// `syncthreads`). PTX `cp.async.bulk.tensor.{R}d.global.shared::cta.tile.bulk_group`.
    #[track_caller]
    pub fn store(&self, coords: [Expr<i32>; R], tile: &DArray<T, 1, ReadWrite>, at: impl Index) {
        let _at = crate::codegen::srcloc::at();
        let at = at.to_index();
        let mut raws: Vec<_> = coords.iter().map(|c| c.raw()).collect();
        raws.push(at.raw());
        let coords = coords.iter().rev().map(|c| ValueId(c.id)).collect();
        self.record(
            "a TMA store",
            tile.tag,
            tile.array,
            &raws,
            HopperStmt::TmaStore {
                map: self.param,
                coords,
                src: tile.array,
                src_index: ValueId(at.id),
            },
        );
    }
}

impl KernelBuilder {
    /// `cp.async.bulk.commit_group`: this thread's TMA stores since the last commit become a
    /// bulk group.
    #[track_caller]
    pub fn bulk_commit(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::BulkCommit)));
    }

    /// `cp.async.bulk.wait_group{.read} n`: waits until at most `n` of this thread's bulk groups
    /// are pending; with `read_only`, only until their shared-memory sources have been read
    /// (the tile may be overwritten, the global writes may still be in flight).
    #[track_caller]
    pub fn bulk_wait(&self, n: u32, read_only: bool) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::BulkWait { n, read: read_only })));
    }
}

/// Lowers a TMA copy or a bulk group statement.
pub(super) fn lower_stmt(lw: &mut Lowerer<'_, '_>, s: &HopperStmt) -> Result<()> {
    match s {
        HopperStmt::TmaLoad {
            map,
            coords,
            dst,
            dst_index,
            bar,
            bar_index,
            multicast,
        } => {
            let mut args: Vec<BasicValueEnum> = vec![
                shared_addr(lw, *dst, *dst_index)?,
                lw.tensor_map_address(*map)?,
            ];
            for c in coords {
                args.push(lw.v(*c)?);
            }
            args.push(shared_addr(lw, *bar, *bar_index)?);
            let r = coords.len();
            let cs: Vec<String> = (0..r).map(|i| format!("${}", i + 2)).collect();
            let (mc, mask, mcons) = match multicast {
                Some(m) => {
                    args.push(lw.v(*m)?);
                    (".multicast::cluster", format!(", ${}", r + 3), "h,")
                }
                None => ("", String::new(), ""),
            };
            let text = format!(
                "cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{mc} \
                 [$0], [$1, {{{}}}], [${}]{mask};",
                cs.join(", "),
                r + 2
            );
            let cons = format!("r,l,{}r,{mcons}~{{memory}}", "r,".repeat(r));
            asm(lw, text, cons, &args, None).map(|_| ())
        }
        HopperStmt::TmaStore {
            map,
            coords,
            src,
            src_index,
        } => {
            let mut args: Vec<BasicValueEnum> = vec![
                shared_addr(lw, *src, *src_index)?,
                lw.tensor_map_address(*map)?,
            ];
            for c in coords {
                args.push(lw.v(*c)?);
            }
            let r = coords.len();
            let cs: Vec<String> = (0..r).map(|i| format!("${}", i + 2)).collect();
            let text = format!(
                "cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group [$1, {{{}}}], [$0];",
                cs.join(", ")
            );
            let cons = format!("r,l,{}~{{memory}}", "r,".repeat(r));
            asm(lw, text, cons, &args, None).map(|_| ())
        }
        HopperStmt::BulkCommit => asm(
            lw,
            "cp.async.bulk.commit_group;".into(),
            "~{memory}".into(),
            &[],
            None,
        )
        .map(|_| ()),
        HopperStmt::BulkWait { n, read } => asm(
            lw,
            format!(
                "cp.async.bulk.wait_group{} {n};",
                if *read { ".read" } else { "" }
            ),
            "~{memory}".into(),
            &[],
            None,
        )
        .map(|_| ()),
        _ => Err(lw.err("not a TMA statement")),
    }
}
