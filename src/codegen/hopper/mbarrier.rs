//! Transaction barriers in shared memory (PTX `mbarrier`, sm_90): what a TMA copy completes,
//! and what producer and consumer warps of a pipeline hand its stages over with.

use inkwell::values::BasicValueEnum;

use super::super::array::Index;
use super::super::builder::{with_state, Kind};
use super::super::control::KernelBuilder;
use super::super::expr::Expr;
use super::super::lower::Lowerer;
use super::super::lower::{asm, shared_addr};
use crate::error::Result;
use crate::ir::{ArrayRef, HopperOp, HopperStmt, Op, Stmt, ValueId};

/// `n` transaction barriers (`mbarrier` objects, 8 bytes each) in the block's shared memory,
/// made by [`KernelBuilder::mbarriers`].
///
/// A barrier counts arrivals and transaction bytes per phase: it is set up once with the
/// number of arrivals each phase expects ([`init`](Mbarriers::init), by one thread, then a
/// [`syncthreads`](KernelBuilder::syncthreads)); a phase completes when that many threads have
/// arrived ([`arrive`](Mbarriers::arrive)) and every transaction byte announced for it
/// ([`arrive_expect_tx`](Mbarriers::arrive_expect_tx), [`expect_tx`](Mbarriers::expect_tx))
/// has landed (a TMA copy's bytes, [`TmaDesc::load`](super::TmaDesc::load)); then the next
/// phase starts. Phases alternate parity 0, 1, 0, …: a thread waits for the phase of a parity
/// with [`wait`](Mbarriers::wait) (or polls with [`try_wait`](Mbarriers::try_wait)). On the
/// simulator a wait for a phase that can no longer complete is a fault (a deadlock on the GPU).
#[derive(Clone, Copy)]
pub struct Mbarriers {
    tag: u32,
    array: ArrayRef,
    len: usize,
}

impl KernelBuilder {
    /// `n` transaction barriers in shared memory (see [`Mbarriers`]).
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// // One barrier: thread 0 sets it up for 128 arrivals; every thread arrives, then waits
    /// // for phase 0 (a block-wide barrier written with an mbarrier).
    /// let k = Kernel::<(&mut [u32],)>::build("bar", |k, (out,)| {
    ///     let bars = k.mbarriers(1);
    ///     let t = k.thread_idx().x;
    ///     k.if_(t.eq(0u32), |_| bars.init(0u32, 128u32));
    ///     k.syncthreads();
    ///     bars.arrive(0u32);
    ///     bars.wait(k, 0u32, 0u32);
    ///     out.set(t, t);
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn mbarriers(&self, n: usize) -> Mbarriers {
        let _at = crate::codegen::srcloc::at();
        let a = self.shared_array::<u64>(n.max(1));
        Mbarriers {
            tag: a.tag,
            array: a.array,
            len: n,
        }
    }

    /// `fence.mbarrier_init.release.cluster`: makes barriers this thread initialised visible to
    /// the asynchronous proxy (TMA) and the other blocks of its cluster; after the inits,
    /// before the `syncthreads` that publishes them.
    #[track_caller]
    pub fn fence_barrier_init(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::FenceBarrierInit)));
    }

    /// `fence.proxy.async.shared::cta`: this thread's ordinary shared-memory writes become
    /// visible to the asynchronous proxy (TMA stores, wgmma reads) that the block starts after
    /// the next barrier. Needed between writing a tile with stores and reading it with wgmma
    /// or storing it with TMA.
    #[track_caller]
    pub fn fence_proxy_async(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::FenceProxyAsync)));
    }
}

impl Mbarriers {
    fn push(&self, what: &str, raws: &[(u32, u32)], stmt: HopperStmt) {
        with_state(|s| {
            if s.tag != self.tag {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{}`: {what} on barriers of another kernel", s.f.name),
                );
                return;
            }
            s.check_use(raws);
            s.push_stmt(Stmt::Hopper(stmt));
        });
    }

    /// The kernel's tag and the barriers' shared array.
    pub(super) fn raw(&self) -> (u32, ArrayRef) {
        (self.tag, self.array)
    }

    /// How many barriers there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets barrier `i` up to expect `count` arrivals per phase, in phase 0 (`mbarrier.init`).
    /// One thread does it, before a `syncthreads` that precedes every other use.
    #[track_caller]
    pub fn init(&self, i: impl Index, count: impl Into<Expr<u32>>) {
        let _at = crate::codegen::srcloc::at();
        let (i, c) = (i.to_index(), count.into());
        self.push(
            "mbarrier.init",
            &[i.raw(), c.raw()],
            HopperStmt::BarInit {
                bar: self.array,
                index: ValueId(i.id),
                count: ValueId(c.id),
            },
        );
    }

    /// This thread arrives on barrier `i` (`mbarrier.arrive`).
    #[track_caller]
    pub fn arrive(&self, i: impl Index) {
        let _at = crate::codegen::srcloc::at();
        let i = i.to_index();
        self.push(
            "mbarrier.arrive",
            &[i.raw()],
            HopperStmt::BarArrive {
                bar: self.array,
                index: ValueId(i.id),
                tx: None,
            },
        );
    }

    /// This thread announces `bytes` more transaction bytes for barrier `i`'s current phase,
    /// then arrives (`mbarrier.arrive.expect_tx`): what the thread that issues a phase's TMA
    /// copies does, with their total size.
    #[track_caller]
    pub fn arrive_expect_tx(&self, i: impl Index, bytes: impl Into<Expr<u32>>) {
        let _at = crate::codegen::srcloc::at();
        let (i, b) = (i.to_index(), bytes.into());
        self.push(
            "mbarrier.arrive.expect_tx",
            &[i.raw(), b.raw()],
            HopperStmt::BarArrive {
                bar: self.array,
                index: ValueId(i.id),
                tx: Some(ValueId(b.id)),
            },
        );
    }

    /// Announces `bytes` more transaction bytes for barrier `i`'s current phase without
    /// arriving (`mbarrier.expect_tx`).
    #[track_caller]
    pub fn expect_tx(&self, i: impl Index, bytes: impl Into<Expr<u32>>) {
        let _at = crate::codegen::srcloc::at();
        let (i, b) = (i.to_index(), bytes.into());
        self.push(
            "mbarrier.expect_tx",
            &[i.raw(), b.raw()],
            HopperStmt::BarExpectTx {
                bar: self.array,
                index: ValueId(i.id),
                tx: ValueId(b.id),
            },
        );
    }

    /// Whether the phase of parity `parity` (0 or 1) of barrier `i` has completed
    /// (`mbarrier.try_wait.parity`, which may suspend the thread for a while first).
    #[track_caller]
    pub fn try_wait(&self, i: impl Index, parity: impl Into<Expr<u32>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        let (i, p) = (i.to_index(), parity.into());
        let ok = with_state(|s| s.tag == self.tag).unwrap_or(false);
        if !ok {
            with_state(|s| {
                s.error(
                    Kind::ForeignValue,
                    format!(
                        "in `{}`: mbarrier wait on barriers of another kernel",
                        s.f.name
                    ),
                )
            });
        }
        // Threads see their barrier's phase at different times: never uniform.
        Expr::record(
            Op::Hopper(HopperOp::BarTryWait {
                bar: self.array,
                index: ValueId(i.id),
                parity: ValueId(p.id),
            }),
            &[i.raw(), p.raw()],
            true,
        )
    }

    /// Waits until the phase of parity `parity` of barrier `i` has completed: a loop on
    /// [`try_wait`](Mbarriers::try_wait).
    #[track_caller]
    pub fn wait(&self, k: &KernelBuilder, i: impl Index, parity: impl Into<Expr<u32>>) {
        let (i, p) = (i.to_index(), parity.into());
        k.while_(|_| !self.try_wait(i, p), |_| {});
    }
}

/// Lowers a barrier statement (init, arrive, expect-tx, the init fence).
pub(super) fn lower_stmt(lw: &mut Lowerer<'_, '_>, s: &HopperStmt) -> Result<()> {
    let (text, cons, args): (&str, &str, Vec<BasicValueEnum>) = match s {
        HopperStmt::BarInit { bar, index, count } => (
            "mbarrier.init.shared::cta.b64 [$0], $1;",
            "r,r,~{memory}",
            vec![shared_addr(lw, *bar, *index)?, lw.v(*count)?],
        ),
        HopperStmt::BarArrive {
            bar,
            index,
            tx: None,
        } => (
            "mbarrier.arrive.shared::cta.b64 _, [$0];",
            "r,~{memory}",
            vec![shared_addr(lw, *bar, *index)?],
        ),
        HopperStmt::BarArrive {
            bar,
            index,
            tx: Some(tx),
        } => (
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
            "r,r,~{memory}",
            vec![shared_addr(lw, *bar, *index)?, lw.v(*tx)?],
        ),
        HopperStmt::BarExpectTx { bar, index, tx } => (
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;",
            "r,r,~{memory}",
            vec![shared_addr(lw, *bar, *index)?, lw.v(*tx)?],
        ),
        HopperStmt::FenceBarrierInit => {
            ("fence.mbarrier_init.release.cluster;", "~{memory}", vec![])
        }
        _ => return Err(lw.err("not a barrier statement")),
    };
    asm(lw, text.into(), cons.into(), &args, None).map(|_| ())
}

/// Lowers `mbarrier.try_wait.parity` to a bool.
pub(super) fn lower_try_wait<'c>(
    lw: &mut Lowerer<'c, '_>,
    op: &HopperOp,
) -> Result<BasicValueEnum<'c>> {
    let HopperOp::BarTryWait { bar, index, parity } = op else {
        return Err(lw.err("not a barrier wait"));
    };
    let args = vec![shared_addr(lw, *bar, *index)?, lw.v(*parity)?];
    let i32t = lw.ctx.i32_type();
    let r = asm(
        lw,
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }"
            .into(),
        "=r,r,r,~{memory}".into(),
        &args,
        Some(i32t.into()),
    )?
    .ok_or_else(|| lw.err("try_wait gave no value"))?;
    let zero = i32t.const_zero();
    Ok(lw
        .b
        .build_int_compare(inkwell::IntPredicate::NE, r.into_int_value(), zero, "")
        .map_err(|e| lw.err(e.to_string()))?
        .into())
}
