//! Thread-block clusters in the kernel language (sm_90): where a block sits in its cluster,
//! the cluster barrier, and distributed shared memory (another block's shared memory, read,
//! written and updated atomically through `mapa`; barrier arrivals on another block's
//! `mbarrier`).
//!
//! A kernel launched with `LaunchConfig::with_cluster` runs its blocks in clusters that are
//! resident together; without it every block is a cluster of one, so the same kernel runs
//! either way (rank 0, size 1).

use inkwell::values::{BasicValue, BasicValueEnum};

use super::super::array::{DArray, Index, ReadWrite};
use super::super::builder::{with_state, Kind};
use super::super::control::{sreg, xyz, KernelBuilder, Xyz};
use super::super::expr::Expr;
use super::super::lower::{asm, pure_asm, shared_addr, Lowerer};
use super::super::scalar::Scalar;
use super::Mbarriers;
use crate::error::Result;
use crate::ir::{ArrayRef, HopperOp, HopperStmt, Op, ScalarTy, Sreg, Stmt, ValueId};

impl KernelBuilder {
    /// The cluster's position in the grid, in clusters (`%clusterid`; CUDA's
    /// `cluster.block_index()` is [`block_in_cluster`](Self::block_in_cluster)).
    #[track_caller]
    pub fn cluster_idx(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::ClusterId)
    }

    /// Clusters in the grid per dimension (`%nclusterid`).
    #[track_caller]
    pub fn cluster_grid_dim(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::NclusterId)
    }

    /// The block's position in its cluster (`%cluster_ctaid`, CUDA's
    /// `cluster.block_index()`).
    #[track_caller]
    pub fn block_in_cluster(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::ClusterCtaid)
    }

    /// Blocks per cluster per dimension (`%cluster_nctaid`, CUDA's `cluster.dim_blocks()`).
    #[track_caller]
    pub fn cluster_dim(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::ClusterNctaid)
    }

    /// The block's rank in its cluster, 0 to `cluster_size() - 1`, x fastest
    /// (`%cluster_ctarank`, CUDA's `cluster.block_rank()`): what distributed shared memory
    /// accesses and multicast masks name blocks by.
    #[track_caller]
    pub fn cluster_rank(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        sreg(Sreg::ClusterRank)
    }

    /// Blocks in the cluster (`%cluster_nctarank`, CUDA's `cluster.num_blocks()`).
    #[track_caller]
    pub fn cluster_size(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        sreg(Sreg::ClusterSize)
    }

    /// Waits until every thread of the cluster has reached this barrier; memory accesses
    /// before it (shared memory of any block of the cluster included) are visible to every
    /// thread of the cluster after it (CUDA's `cluster.sync()`: `barrier.cluster.arrive` then
    /// `barrier.cluster.wait`). Use it after the blocks set up their shared memory and before
    /// any block reads another's, and before a block exits while others may still touch its
    /// shared memory. Every thread of the cluster must reach it (whole warps).
    #[track_caller]
    pub fn cluster_sync(&self) {
        let _at = crate::codegen::srcloc::at();
        self.cluster_arrive();
        self.cluster_wait();
    }

    /// The first half of [`cluster_sync`](Self::cluster_sync): this thread arrives on the
    /// cluster barrier (releasing its earlier memory accesses) and goes on; a
    /// [`cluster_wait`](Self::cluster_wait) follows before the next arrival.
    #[track_caller]
    pub fn cluster_arrive(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::ClusterArrive { relaxed: false })));
    }

    /// [`cluster_arrive`](Self::cluster_arrive) without ordering this thread's earlier memory
    /// accesses (`.relaxed`): for a barrier that only says "I have started" (e.g. that a
    /// block's mbarriers are initialised, after `fence_barrier_init`).
    #[track_caller]
    pub fn cluster_arrive_relaxed(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::ClusterArrive { relaxed: true })));
    }

    /// The second half of [`cluster_sync`](Self::cluster_sync): waits until every thread of
    /// the cluster has arrived in the phase this thread arrived in.
    #[track_caller]
    pub fn cluster_wait(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::ClusterWait)));
    }
}

impl<T: Scalar, A> DArray<T, 1, A> {
    /// Checks that this is a shared array of the kernel (`what`: the operation).
    fn check_cluster_array(&self, what: &str) {
        let (tag, array) = (self.tag, self.array);
        with_state(|s| {
            if s.tag != tag {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{}`: {what} on an array of another kernel", s.f.name),
                );
            } else if !matches!(array, ArrayRef::Shared(_) | ArrayRef::DynShared(_)) {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: {what} reaches another block's shared memory, but this array \
                         is a kernel parameter, a local or a constant array; use a shared array \
                         (`shared_array`, `dynamic_shared`)",
                        s.f.name
                    ),
                );
            }
        });
    }

    /// Element `i` of this shared array in the block of cluster rank `rank` (distributed
    /// shared memory: CUDA's `cluster.map_shared_rank(&a[i], rank)` then a read). The rank's
    /// block must have written it before a [`cluster_sync`](KernelBuilder::cluster_sync) that
    /// precedes the read. `rank` may be this block's own.
    #[track_caller]
    pub fn at_rank(&self, rank: impl Into<Expr<u32>>, i: impl Index) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        self.check_cluster_array("at_rank");
        let (r, i) = (rank.into(), i.to_index());
        Expr::record(
            Op::Hopper(HopperOp::ClusterLoad {
                array: self.array,
                index: ValueId(i.id),
                rank: ValueId(r.id),
            }),
            &[r.raw(), i.raw()],
            true,
        )
    }
}

impl<T: Scalar> DArray<T, 1, ReadWrite> {
    /// Stores `value` at element `i` of this shared array in the block of cluster rank
    /// `rank` (distributed shared memory).
    #[track_caller]
    pub fn set_at_rank(
        &self,
        rank: impl Into<Expr<u32>>,
        i: impl Index,
        value: impl Into<Expr<T>>,
    ) {
        let _at = crate::codegen::srcloc::at();
        self.check_cluster_array("set_at_rank");
        let (r, i, v) = (rank.into(), i.to_index(), value.into());
        let array = self.array;
        with_state(|s| {
            s.check_use(&[r.raw(), i.raw(), v.raw()]);
            s.push_stmt(Stmt::Hopper(HopperStmt::ClusterStore {
                array,
                index: ValueId(i.id),
                rank: ValueId(r.id),
                value: ValueId(v.id),
            }))
        });
    }

    /// `old = a[i]; a[i] = old + v; old`, atomically, on this shared array in the block of
    /// cluster rank `rank` (the distributed shared memory histogram of CUDA's programming
    /// guide). For u32, i32, u64, f32 and f64.
    #[track_caller]
    pub fn atomic_add_at_rank(
        &self,
        rank: impl Into<Expr<u32>>,
        i: impl Index,
        v: impl Into<Expr<T>>,
    ) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        self.check_cluster_array("atomic_add_at_rank");
        if !matches!(
            T::TY,
            ScalarTy::U32 | ScalarTy::I32 | ScalarTy::U64 | ScalarTy::F32 | ScalarTy::F64
        ) {
            with_state(|s| {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: atomic_add_at_rank on {} elements; distributed shared memory \
                         atomics take u32, i32, u64, f32 or f64",
                        s.f.name,
                        T::TY.name()
                    ),
                )
            });
        }
        let (r, i, v) = (rank.into(), i.to_index(), v.into());
        Expr::record(
            Op::Hopper(HopperOp::ClusterAtomicAdd {
                array: self.array,
                index: ValueId(i.id),
                rank: ValueId(r.id),
                value: ValueId(v.id),
            }),
            &[r.raw(), i.raw(), v.raw()],
            true,
        )
    }
}

impl Mbarriers {
    /// This thread arrives on barrier `i` in the block of cluster rank `rank`
    /// (`mbarrier.arrive.shared::cluster` through `mapa`, with the default release semantics
    /// at CTA scope, as CUTLASS's `ClusterBarrier::arrive(cta_id)`: a cluster-scope release
    /// costs a fence per arrival): how a consumer block tells the producer block of a
    /// multicast copy that it has released a stage.
    #[track_caller]
    pub fn arrive_at_rank(&self, i: impl Index, rank: impl Into<Expr<u32>>) {
        let _at = crate::codegen::srcloc::at();
        let (i, r) = (i.to_index(), rank.into());
        let (tag, bar) = self.raw();
        with_state(|s| {
            if s.tag != tag {
                s.error(
                    Kind::ForeignValue,
                    format!(
                        "in `{}`: mbarrier arrival on barriers of another kernel",
                        s.f.name
                    ),
                );
                return;
            }
            s.check_use(&[i.raw(), r.raw()]);
            s.push_stmt(Stmt::Hopper(HopperStmt::BarArriveRemote {
                bar,
                index: ValueId(i.id),
                rank: ValueId(r.id),
            }))
        });
    }
}

/// The PTX name of a cluster special register.
pub(crate) fn sreg_text(r: Sreg) -> String {
    let d = |k: u8| ["x", "y", "z"][k as usize % 3];
    match r {
        Sreg::ClusterCtaid(k) => format!("%cluster_ctaid.{}", d(k)),
        Sreg::ClusterNctaid(k) => format!("%cluster_nctaid.{}", d(k)),
        Sreg::ClusterId(k) => format!("%clusterid.{}", d(k)),
        Sreg::NclusterId(k) => format!("%nclusterid.{}", d(k)),
        Sreg::ClusterRank => "%cluster_ctarank".into(),
        _ => "%cluster_nctarank".into(),
    }
}

/// Reads a cluster special register.
pub(crate) fn lower_sreg<'c>(lw: &mut Lowerer<'c, '_>, r: Sreg) -> Result<BasicValueEnum<'c>> {
    super::needs_sm90(lw, "a thread-block cluster register")?;
    let i32t = lw.ctx.i32_type().into();
    pure_asm(
        lw,
        &format!("mov.u32 $0, {};", sreg_text(r)),
        "=r",
        &[],
        i32t,
    )
}

/// The generic address of element `index` of shared array `array` in the block of cluster
/// rank `rank` (`mapa.u64`), as a pointer.
fn mapped<'c>(
    lw: &mut Lowerer<'c, '_>,
    array: ArrayRef,
    index: ValueId,
    rank: ValueId,
) -> Result<inkwell::values::PointerValue<'c>> {
    let p = lw.element_ptr(array, index)?;
    let i64t = lw.ctx.i64_type();
    let generic = lw.ctx.ptr_type(inkwell::AddressSpace::default());
    let g =
        lw.b.build_address_space_cast(p, generic, "")
            .map_err(|e| lw.err(e.to_string()))?;
    let a =
        lw.b.build_ptr_to_int(g, i64t, "")
            .map_err(|e| lw.err(e.to_string()))?;
    let r = lw.v(rank)?;
    let m = pure_asm(
        lw,
        "mapa.u64 $0, $1, $2;",
        "=l,l,r",
        &[a.into(), r],
        i64t.into(),
    )?;
    lw.b.build_int_to_ptr(m.into_int_value(), generic, "")
        .map_err(|e| lw.err(e.to_string()))
}

/// Lowers a cluster statement (the barrier, a distributed store, a remote arrival).
pub(super) fn lower_stmt(lw: &mut Lowerer<'_, '_>, s: &HopperStmt) -> Result<()> {
    match s {
        HopperStmt::ClusterArrive { relaxed } => {
            let text = if *relaxed {
                "barrier.cluster.arrive.relaxed;"
            } else {
                "barrier.cluster.arrive.release;"
            };
            asm(lw, text.into(), "~{memory}".into(), &[], None).map(|_| ())
        }
        HopperStmt::ClusterWait => asm(
            lw,
            "barrier.cluster.wait.acquire;".into(),
            "~{memory}".into(),
            &[],
            None,
        )
        .map(|_| ()),
        HopperStmt::ClusterStore {
            array,
            index,
            rank,
            value,
        } => {
            let ty = lw.ty(*value);
            let p = mapped(lw, *array, *index, *rank)?;
            let mut v = lw.v(*value)?;
            if ty == ScalarTy::Bool {
                v =
                    lw.b.build_int_z_extend(v.into_int_value(), lw.ctx.i8_type(), "")
                        .map_err(|e| lw.err(e.to_string()))?
                        .into();
            }
            let st = lw.b.build_store(p, v).map_err(|e| lw.err(e.to_string()))?;
            let _ = st.set_alignment(ty.size() as u32);
            Ok(())
        }
        HopperStmt::BarArriveRemote { bar, index, rank } => {
            let args = vec![shared_addr(lw, *bar, *index)?, lw.v(*rank)?];
            asm(
                lw,
                "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, $0, $1; \
                 mbarrier.arrive.shared::cluster.b64 _, [ra]; }"
                    .into(),
                "r,r,~{memory}".into(),
                &args,
                None,
            )
            .map(|_| ())
        }
        _ => Err(lw.err("not a cluster statement")),
    }
}

/// Lowers a distributed shared memory load or atomic add.
pub(super) fn lower_op<'c>(
    lw: &mut Lowerer<'c, '_>,
    id: ValueId,
    op: &HopperOp,
) -> Result<BasicValueEnum<'c>> {
    let ty = lw.ty(id);
    match op {
        HopperOp::ClusterLoad { array, index, rank } => {
            let p = mapped(lw, *array, *index, *rank)?;
            let mt = crate::codegen::lower::mem_type(lw.ctx, ty);
            let v =
                lw.b.build_load(mt, p, "")
                    .map_err(|e| lw.err(e.to_string()))?;
            if let Some(inst) = v.as_instruction_value() {
                let _ = inst.set_alignment(ty.size() as u32);
                // Another block writes it: never cached across the cluster barrier (the
                // barrier's asm clobbers memory; volatile keeps the load where it is).
                let _ = inst.set_volatile(true);
            }
            if ty == ScalarTy::Bool {
                let zero = lw.ctx.i8_type().const_zero();
                return Ok(lw
                    .b
                    .build_int_compare(inkwell::IntPredicate::NE, v.into_int_value(), zero, "")
                    .map_err(|e| lw.err(e.to_string()))?
                    .into());
            }
            Ok(v)
        }
        HopperOp::ClusterAtomicAdd {
            array,
            index,
            rank,
            value,
        } => {
            let p = mapped(lw, *array, *index, *rank)?;
            let x = lw.v(*value)?;
            if matches!(ty, ScalarTy::F32 | ScalarTy::F64) {
                use crate::codegen::atomics::{float_rmw, FloatRmw};
                return float_rmw(lw, FloatRmw::Add, p, x.into_float_value());
            }
            let v =
                lw.b.build_atomicrmw(
                    inkwell::AtomicRMWBinOp::Add,
                    p,
                    x.into_int_value(),
                    inkwell::AtomicOrdering::Monotonic,
                )
                .map_err(|e| lw.err(e.to_string()))?;
            Ok(v.into())
        }
        _ => Err(lw.err("not a cluster value")),
    }
}
