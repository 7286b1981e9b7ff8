//! A sharded reduction's device-side join in the kernel language: the partial pass that
//! publishes a flag (an epoch) in the first device's memory after its result (`PART_PUB`,
//! [`publish`]), and the combining kernel that spins on the flags with a `%globaltimer`
//! timeout before it combines (`cols_final_join`, [`wait_for_flags`]): neither device's stream
//! needs an event of the other or a kernel of its own for the join. The host's side (epochs,
//! status words, errors) lives in `sharded` (`join.rs`).

use super::{output, scalar, CombineFn, PostFn, Reduction, COLS_FINAL_JOIN};
use crate::codegen::{ArgBuffer, DArray, Expr, KernelBuilder, ReadWrite, Scalar as ScalarType};
use crate::context::Context;
use crate::error::Result;
use crate::memory::DeviceSlice;
use crate::module::LaunchConfig;
use crate::stream::Stream;

/// The status code of a wait that timed out (status word 0; word 1 holds the device index).
pub(crate) const TIMED_OUT: u32 = 1;

/// Where a partial pass publishes its flag: `epoch` into `flags[at]` (`n` flags, on the first
/// device, which the publishing device reaches over the peer link).
pub(crate) struct FlagPublish {
    pub(crate) flags: u64,
    pub(crate) n: usize,
    pub(crate) at: u64,
    pub(crate) epoch: u64,
}

impl FlagPublish {
    /// Pushes the publishing parameters (after the partial pass's own).
    pub(super) fn push(&self, buf: &mut ArgBuffer<'_>, ctx: &Context) -> Result<()> {
        buf.push_flat(ctx, self.flags, self.n)?;
        buf.push_scalar(self.at)?;
        buf.push_scalar(self.epoch)
    }
}

/// Publishes `epoch` in `flags[at]` (one thread, after it stored its result): a system-scope
/// fence (`membar.sys`: the result's store, over the peer link, before the flag's), then the
/// flag's store.
pub(super) fn publish(
    k: &KernelBuilder,
    flags: &DArray<u64, 1, ReadWrite>,
    at: Expr<u64>,
    epoch: Expr<u64>,
) {
    k.threadfence_system();
    flags.set(at, epoch);
}

/// What a wait reads and writes, on the waiting device: `flags` (`n` `u64`, flag `k` the last
/// epoch device `k` published), the two status words `[code, device]` (`status`), the devices
/// to wait for (`mask`, bit `k`), the `epoch` each flag must reach and the timeout.
pub(crate) struct FlagWait {
    pub(crate) flags: u64,
    pub(crate) n: usize,
    pub(crate) status: u64,
    pub(crate) mask: u64,
    pub(crate) epoch: u64,
    pub(crate) timeout_ns: u64,
}

/// Waits until `flags[d] >= epoch` for every device `d >= 1` whose bit is set in `mask`
/// (`ld.volatile`, system scope), then fences (`membar.sys`, so the reads that follow see what
/// the devices wrote before their flags). Past `timeout_ns` on `%globaltimer` it gives up:
/// the first failure is kept in `status` (`[TIMED_OUT, d]`, a compare-and-swap from 0) and
/// the other flags are not waited for.
pub(crate) fn wait_for_flags(
    k: &KernelBuilder,
    flags: &DArray<u64, 1, ReadWrite>,
    status: &DArray<u32, 1, ReadWrite>,
    mask: Expr<u64>,
    epoch: Expr<u64>,
    timeout_ns: Expr<u64>,
) {
    let start = k.globaltimer();
    let failed = k.var(false);
    k.for_range(1u64, flags.len(), |k, d| {
        k.if_(((mask >> d) & 1u64).ne(0u64), |k| {
            k.while_(
                |_| (!failed.get()).and(flags.atomic_load(d).lt(epoch)),
                |k| {
                    k.if_((k.globaltimer() - start).gt(timeout_ns), |k| {
                        failed.set(true);
                        let old = status.atomic_cas(0u32, 0u32, TIMED_OUT);
                        k.if_(old.eq(0u32), |_| status.set(1u32, d.cast::<u32>()));
                    });
                },
            );
        });
    });
    k.threadfence_system();
}

/// `cols_final` for one column of partial results that other devices publish: each thread
/// of a column waits for the flags ([`wait_for_flags`]) before it combines.
pub(super) fn cols_final_join<A: ScalarType, R: ScalarType>(
    k: &KernelBuilder,
    combine: &CombineFn<A>,
    post: &PostFn<A, R>,
    id: A,
) {
    // The other devices write the partials while this kernel waits for their flags, so they
    // must not be read through the non-coherent path (`ld.global.nc`, valid only for data no
    // one writes while the kernel runs), which LLVM picks for an array the kernel only reads:
    // a writable array with a store it cannot rule out (never taken: `chunks` is at least 2).
    let (part, out) = (output::<A>(), output::<R>());
    let (m, chunks, r) = (scalar::<u64>(), scalar::<u64>(), scalar::<u64>());
    let (flags, status) = (output::<u64>(), output::<u32>());
    let (mask, epoch, timeout_ns) = (scalar::<u64>(), scalar::<u64>(), scalar::<u64>());
    let c = k.grid1();
    k.if_(chunks.eq(0u64).and(c.lt(part.len())), |_| part.set(c, id));
    k.if_(c.lt(m), |k| {
        wait_for_flags(k, &flags, &status, mask, epoch, timeout_ns);
        let acc = k.var(id);
        k.for_range(0u64, chunks, |_, j| {
            acc.set(combine(acc.get(), part.at(j * m + c)))
        });
        out.set(c, post(acc.get(), r));
    });
}

impl<T: ScalarType, A: ScalarType, R: ScalarType> Reduction<T, A, R> {
    /// [`partial_into_raw`](Self::partial_into_raw) that then publishes the flag of `publish`
    /// (in the same kernel, by the thread that stored the result).
    pub(crate) fn partial_publish_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
        publish: &FlagPublish,
    ) -> Result<()> {
        self.launch_full(stream, x, out, true, Some(publish))
    }

    /// [`combine_columns_raw`](Self::combine_columns_raw) for one column of `chunks` partial
    /// results at `parts`, after waiting on the device for the flags of `wait` (one kernel on
    /// `stream`, the waiting device's).
    pub(crate) fn combine_after_flags_raw(
        &self,
        stream: &Stream,
        parts: u64,
        chunks: usize,
        out: u64,
        count: usize,
        wait: &FlagWait,
    ) -> Result<()> {
        self.check_empty_of(count)?;
        let ctx = stream.context();
        let k = self.kernel(COLS_FINAL_JOIN)?;
        k.launch_with(stream, LaunchConfig::new(1, 32), |buf| {
            buf.push_flat(ctx, parts, chunks)?;
            buf.push_flat(ctx, out, 1)?;
            buf.push_scalar(1)?;
            buf.push_scalar(chunks as u64)?;
            buf.push_scalar(count as u64)?;
            buf.push_flat(ctx, wait.flags, wait.n)?;
            buf.push_flat(ctx, wait.status, 2)?;
            buf.push_scalar(wait.mask)?;
            buf.push_scalar(wait.epoch)?;
            buf.push_scalar(wait.timeout_ns)
        })
    }
}
