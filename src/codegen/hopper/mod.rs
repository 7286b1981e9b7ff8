//! Hopper (sm_90) in the kernel language: transaction barriers in shared memory
//! ([`Mbarriers`]), tile copies by the Tensor Memory Accelerator from a [`TensorMap`]
//! parameter ([`TmaDesc`]), the proxy fences between ordinary and asynchronous accesses, and the
//! warpgroup's matrix multiply-accumulate on shared-memory operands ([`KernelBuilder::wgmma`],
//! sm_90a) with its descriptors ([`SmemMatrix`]).
//!
//! A kernel using any of these compiles for PTX ISA 8.0; one using `wgmma` or `setmaxnreg`
//! compiles for the architecture-specific target `sm_90a`, which only an sm_90 device (H100,
//! H200) loads. Tiles that TMA writes and wgmma reads live in the dynamic shared memory (their
//! descriptors hold shared-window addresses; 128-byte swizzled tiles start on a 1024-byte
//! boundary). The simulator executes them all: a TMA copy lands when issued and completes its
//! barrier's transactions, a wgmma computes when issued (each element of D as `C + Σ A·B`, exact
//! products summed in f64 in order of k, rounded once), and a wait on a phase that can no
//! longer complete is reported as a deadlock.
//!
//! [`TensorMap`]: crate::memory::TensorMap
//! [`KernelBuilder::wgmma`]: super::KernelBuilder::wgmma

mod cluster;
mod mbarrier;
mod tma;
mod wgmma;

pub use mbarrier::Mbarriers;
pub use tma::{Tma, TmaDesc, TmaMut};
pub use wgmma::{SmemMatrix, WgmmaAcc, WgmmaInput, WgmmaMajor, WgmmaSwizzle};

use inkwell::values::BasicValueEnum;

use super::lower::{asm, shared_addr, unsupported_err, Lowerer};
use crate::error::Result;
use crate::ir::{HopperOp, HopperStmt, ValueId};

/// What a kernel needs of the target for its Hopper operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HopperUse {
    /// None: the target the options name.
    None,
    /// sm_90 with PTX ISA 8.0 (barriers, TMA, fences).
    Sm90,
    /// sm_90a (wgmma, setmaxnreg).
    Sm90a,
}

/// What a kernel needs of the target: its Hopper operations, and what its 8-bit floats need of
/// the PTX ISA (their `cvt`s: 8.1 on sm_89, where sm_90 has them from 7.8; their `mma.sync`:
/// 8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TargetUse {
    /// The Hopper operations' needs.
    pub(crate) hopper: HopperUse,
    /// Whether a cast to or from an 8-bit float is there.
    pub(crate) fp8_cvt: bool,
    /// Whether an `mma.sync` on e4m3/e5m2 inputs is there.
    pub(crate) fp8_mma: bool,
}

impl TargetUse {
    /// Nothing beyond the options' target.
    #[cfg(test)]
    pub(crate) const NONE: TargetUse = TargetUse {
        hopper: HopperUse::None,
        fp8_cvt: false,
        fp8_mma: false,
    };
}

/// What `f` and the device functions it calls need of the target.
pub(crate) fn target_use(f: &crate::ir::FunctionIr) -> TargetUse {
    use crate::ir::{Op, WarpOp};
    let (mut fp8_cvt, mut fp8_mma) = (false, false);
    for g in f.tree() {
        for v in &g.values {
            match &v.op {
                Op::Warp(WarpOp::Mma { kind, .. }) if kind.is_fp8() => fp8_mma = true,
                Op::Cast(a) => {
                    let from = g.values.get(a.0 as usize).map(|d| d.ty);
                    fp8_cvt |= v.ty.is_fp8() || from.is_some_and(|t| t.is_fp8());
                }
                _ => {}
            }
        }
    }
    TargetUse {
        hopper: hopper_use(f),
        fp8_cvt,
        fp8_mma,
    }
}

/// What `f` and the device functions it calls need of the target for Hopper operations.
fn hopper_use(f: &crate::ir::FunctionIr) -> HopperUse {
    use crate::ir::{FunctionIr, Stmt};
    let mut u = HopperUse::None;
    for g in f.tree() {
        for v in &g.values {
            if let crate::ir::Op::Special(r) = &v.op {
                if r.is_cluster() {
                    u = u.max(HopperUse::Sm90);
                }
            }
            if let crate::ir::Op::Hopper(op) = &v.op {
                u = u.max(match op {
                    HopperOp::Wgmma { .. } | HopperOp::WgmmaWait { .. } => HopperUse::Sm90a,
                    HopperOp::PackHalf2 { .. } => HopperUse::None,
                    _ => HopperUse::Sm90,
                });
            }
        }
        if g.params
            .iter()
            .any(|p| matches!(p, crate::ir::Param::TensorMap { .. }))
        {
            u = u.max(HopperUse::Sm90);
        }
        FunctionIr::each_stmt(&g.body, &mut |s| match s {
            Stmt::Hopper(HopperStmt::SetMaxNReg { .. })
            | Stmt::Hopper(HopperStmt::WgmmaFence)
            | Stmt::Hopper(HopperStmt::WgmmaCommit) => u = HopperUse::Sm90a,
            Stmt::Hopper(_) => u = u.max(HopperUse::Sm90),
            _ => {}
        });
    }
    u
}

/// The error for a Hopper operation (`what`) in a kernel compiled for an older target.
fn needs_sm90(lw: &Lowerer<'_, '_>, what: &str) -> Result<()> {
    let sm = lw.opts.sm();
    if sm >= (9, 0) {
        return Ok(());
    }
    Err(unsupported_err(
        &lw.f.name,
        format!(
            "{what} needs an sm_90 GPU (Hopper: H100, H200), and this kernel is compiled for \
             sm_{}{}: run it on a Hopper GPU (or set PtxOptions::cc to (9, 0))",
            sm.0, sm.1
        ),
    ))
}

/// Lowers a statement of Hopper's machinery.
pub(crate) fn lower_hopper_stmt(lw: &mut Lowerer<'_, '_>, s: &HopperStmt) -> Result<()> {
    match s {
        HopperStmt::BarInit { .. }
        | HopperStmt::BarArrive { .. }
        | HopperStmt::BarExpectTx { .. }
        | HopperStmt::FenceBarrierInit => {
            needs_sm90(lw, "an mbarrier (a transaction barrier in shared memory)")?;
            mbarrier::lower_stmt(lw, s)
        }
        HopperStmt::FenceProxyAsync => {
            needs_sm90(lw, "fence.proxy.async")?;
            asm(
                lw,
                "fence.proxy.async.shared::cta;".into(),
                "~{memory}".into(),
                &[],
                None,
            )
            .map(|_| ())
        }
        HopperStmt::TmaLoad { .. }
        | HopperStmt::TmaStore { .. }
        | HopperStmt::BulkCommit
        | HopperStmt::BulkWait { .. } => {
            needs_sm90(lw, "a TMA tile copy (cp.async.bulk.tensor)")?;
            tma::lower_stmt(lw, s)
        }
        HopperStmt::WgmmaFence | HopperStmt::WgmmaCommit | HopperStmt::SetMaxNReg { .. } => {
            needs_sm90(lw, "the warpgroup MMA (wgmma) and setmaxnreg")?;
            wgmma::lower_stmt(lw, s)
        }
        HopperStmt::ClusterArrive { .. }
        | HopperStmt::ClusterWait
        | HopperStmt::ClusterStore { .. }
        | HopperStmt::BarArriveRemote { .. } => {
            needs_sm90(lw, "a thread-block cluster operation")?;
            cluster::lower_stmt(lw, s)
        }
    }
}

/// Reads a cluster special register (sm_90).
pub(crate) use cluster::lower_sreg;

/// Lowers an operation of Hopper's machinery that defines value `id`.
pub(crate) fn lower_hopper_op<'c>(
    lw: &mut Lowerer<'c, '_>,
    id: ValueId,
    op: &HopperOp,
) -> Result<BasicValueEnum<'c>> {
    match op {
        HopperOp::BarTryWait { .. } => {
            needs_sm90(lw, "an mbarrier wait")?;
            mbarrier::lower_try_wait(lw, op)
        }
        HopperOp::SharedAddr { array, index } => shared_addr(lw, *array, *index),
        HopperOp::ClusterLoad { .. } | HopperOp::ClusterAtomicAdd { .. } => {
            needs_sm90(
                lw,
                "distributed shared memory (another block's shared memory)",
            )?;
            cluster::lower_op(lw, id, op)
        }
        HopperOp::Wgmma { .. } | HopperOp::WgmmaWait { .. } => {
            needs_sm90(lw, "the warpgroup MMA (wgmma)")?;
            wgmma::lower_op(lw, id, op)
        }
        HopperOp::PackHalf2 { kind, lo, hi } => {
            let ty = if *kind == crate::ir::mma::MmaKind::Bf16 {
                "bf16"
            } else {
                "f16"
            };
            let (lo, hi) = (lw.v(*lo)?, lw.v(*hi)?);
            let i32t = lw.ctx.i32_type().into();
            // cvt's first source goes to the upper half.
            let text = format!("cvt.rn.{ty}x2.f32 $0, $1, $2;");
            crate::codegen::lower::pure_asm(lw, &text, "=r,f,f", &[hi, lo], i32t)
        }
    }
}
