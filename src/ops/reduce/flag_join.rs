//! A sharded reduction's device-side join in the kernel language: the partial pass that
//! publishes a flag (an epoch) in the first device's memory after its result (`PART_PUB`,
//! [`publish`]), and the combining kernel that spins on the flags with a `%globaltimer`
//! timeout before it combines (`cols_final_join`, [`wait_for_flags`]): neither device's stream
//! needs an event of the other or a kernel of its own for the join. The host's side (epochs,
//! status words, errors) lives in `sharded` (`join.rs`).

use super::{output, scalar, CombineFn, PassArgs, PostFn, Reduction, COLS_FINAL_JOIN};
use crate::codegen::{
    select, ArgBuffer, DArray, Expr, KernelBuilder, ReadWrite, Scalar as ScalarType,
};
use crate::context::Context;
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::module::LaunchConfig;
use crate::stream::Stream;

/// The status code of a wait that timed out (status word 0; word 1 holds the device index).
pub(crate) const TIMED_OUT: u32 = 1;

/// Reads a join's status words (`[code, index]`, see [`wait_for_flags`]) once the waits queued
/// on `stream` before are done: `Some(index)` of the device or rank a wait timed out for (the
/// words are then cleared for the next waits, in `stream`'s order and in place: a wait queued
/// meanwhile by another thread still writes live memory), `None` when no wait failed. An
/// unknown code is an error naming `join` and `unit` ("device", "rank").
pub(crate) fn take_timed_out(
    status: &mut DeviceArray<u32>,
    stream: &Stream,
    join: &str,
    unit: &str,
) -> Result<Option<usize>> {
    let words = status.to_vec_async(stream)?;
    match words.as_slice() {
        [TIMED_OUT, k, ..] => {
            status.fill_async(0, stream)?;
            Ok(Some(*k as usize))
        }
        [0, ..] => Ok(None),
        [code, k, ..] => Err(crate::error::Error::usage(format!(
            "{join}: unknown status {code} for {unit} {k} (a bug in cudajit)"
        ))),
        _ => Ok(None),
    }
}

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

/// Waits until `flags[d] >= epoch` for every device (or rank) `d` whose bit is set in `mask`
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
    k.for_range(0u64, flags.len(), |k, d| {
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

/// The most peers a joining pass publishes to (ranks of a process group beyond this one): the
/// kernel has a fixed parameter list, the unused peers' arrays empty.
pub(crate) const MAX_PEERS: usize = 7;

/// The parameters of a whole-array pass that ends the whole reduction (`PassEnd::Join`),
/// after the pass's own: the partial results of every shard (`parts`, one per shard, in shard
/// order; this shard's own slot is not read), this shard's index `me`, the whole element count
/// (for `post`), the wait ([`FlagWait`]'s fields), and up to [`MAX_PEERS`] peers, each a
/// (slots, flags) pair in the peer's memory (mapped here) where this shard publishes its
/// value (slot `me`) and then the epoch (flag `me`).
pub(super) struct JoinParams<A: ScalarType> {
    parts: DArray<A, 1, ReadWrite>,
    me: Expr<u64>,
    count: Expr<u64>,
    flags: DArray<u64, 1, ReadWrite>,
    status: DArray<u32, 1, ReadWrite>,
    mask: Expr<u64>,
    epoch: Expr<u64>,
    timeout_ns: Expr<u64>,
    peers: Vec<(DArray<A, 1, ReadWrite>, DArray<u64, 1, ReadWrite>)>,
}

impl<A: ScalarType> JoinParams<A> {
    /// Declares the parameters (in [`JoinArgs::push`]'s order).
    pub(super) fn declare() -> Self {
        JoinParams {
            parts: output::<A>(),
            me: scalar::<u64>(),
            count: scalar::<u64>(),
            flags: output::<u64>(),
            status: output::<u32>(),
            mask: scalar::<u64>(),
            epoch: scalar::<u64>(),
            timeout_ns: scalar::<u64>(),
            peers: (0..MAX_PEERS)
                .map(|_| (output::<A>(), output::<u64>()))
                .collect(),
        }
    }

    /// In the thread that holds this shard's combined value `r`: publishes it to every peer
    /// (the values, a system-scope fence, then the flags), waits for the shards in the mask
    /// ([`wait_for_flags`]), and stores `post` of every shard's value combined in shard order
    /// (from the identity) at `out[0]`.
    pub(super) fn finish<R: ScalarType>(
        &self,
        k: &KernelBuilder,
        r: Expr<A>,
        out: &DArray<R, 1, ReadWrite>,
        combine: &CombineFn<A>,
        post: &PostFn<A, R>,
        id: A,
    ) {
        let me = self.me;
        for (slots, _) in &self.peers {
            k.if_(me.lt(slots.len()), |_| slots.set(me, r));
        }
        // The values before the flags (only where there are peers: on a mesh's first device
        // nothing is published, and a system-scope fence costs the join's latency).
        k.if_(self.peers[0].0.len().gt(0u64), |k| k.threadfence_system());
        for (_, flags) in &self.peers {
            k.if_(me.lt(flags.len()), |_| flags.set(me, self.epoch));
        }
        wait_for_flags(
            k,
            &self.flags,
            &self.status,
            self.mask,
            self.epoch,
            self.timeout_ns,
        );
        // The peers write `parts` while this kernel runs, so it must not be read through the
        // non-coherent path that LLVM picks for an array a kernel only reads: a store it
        // cannot rule out (never taken: `me` is below the length).
        let parts = &self.parts;
        k.if_(me.ge(parts.len()).and(parts.len().gt(0u64)), |_| {
            parts.set(0u64, id)
        });
        let acc = k.var(id);
        k.for_range(0u64, parts.len(), |_, j| {
            acc.set(combine(acc.get(), select(j.eq(me), r, parts.at(j))))
        });
        out.set(0u32, post(acc.get(), self.count));
    }
}

/// The arguments of [`JoinParams`]: addresses in the launching device's memory (the peers'
/// mapped there).
pub(crate) struct JoinArgs<'a> {
    /// Every shard's partial result (`chunks` of the accumulator type).
    pub(crate) parts: u64,
    pub(crate) chunks: usize,
    /// This shard's index (its slot in `parts` is not read).
    pub(crate) me: usize,
    /// The whole reduction's element count (for `post`).
    pub(crate) count: usize,
    pub(crate) wait: &'a FlagWait,
    /// Each peer's (slots, flags) addresses: `chunks` slots and `wait.n` flags.
    pub(crate) peers: &'a [(u64, u64)],
}

impl JoinArgs<'_> {
    /// Pushes the joining parameters (after the pass's own).
    pub(super) fn push(&self, buf: &mut ArgBuffer<'_>, ctx: &Context) -> Result<()> {
        if self.peers.len() > MAX_PEERS {
            return Err(crate::error::Error::usage(format!(
                "a joining reduction publishes to at most {MAX_PEERS} peers, not {} (a bug in \
                 cudajit: larger groups join through NCCL)",
                self.peers.len()
            )));
        }
        buf.push_flat(ctx, self.parts, self.chunks)?;
        buf.push_scalar(self.me as u64)?;
        buf.push_scalar(self.count as u64)?;
        let w = self.wait;
        buf.push_flat(ctx, w.flags, w.n)?;
        buf.push_flat(ctx, w.status, 2)?;
        buf.push_scalar(w.mask)?;
        buf.push_scalar(w.epoch)?;
        buf.push_scalar(w.timeout_ns)?;
        for q in 0..MAX_PEERS {
            match self.peers.get(q) {
                Some(&(slots, flags)) => {
                    buf.push_flat(ctx, slots, self.chunks)?;
                    buf.push_flat(ctx, flags, w.n)?;
                }
                None => {
                    buf.push_flat(ctx, 0, 0)?;
                    buf.push_flat(ctx, 0, 0)?;
                }
            }
        }
        Ok(())
    }
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
        self.launch_full(stream, x, out, PassArgs::Publish(publish))
    }

    /// The whole reduction in one kernel on `stream`: the pass over `x` (this shard), whose
    /// last block publishes the shard's value to the peers of `join`, waits for the other
    /// shards' flags, combines every shard's value in shard order and stores the result at
    /// `out` (a sharded reduction's last shard to finish, without a combining kernel).
    pub(crate) fn full_join_raw<X: DeviceSlice<T> + ?Sized>(
        &self,
        stream: &Stream,
        x: &X,
        out: u64,
        join: &JoinArgs<'_>,
    ) -> Result<()> {
        self.check_empty_of(join.count)?;
        self.launch_full(stream, x, out, PassArgs::Join(join))
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

#[cfg(test)]
mod tests {
    //! [`JoinParams::finish`] alone in a kernel on a simulator of its own, called directly: a
    //! rank of three publishes its value to two peers' windows (values, then flags), waits
    //! for the others' flags and combines every rank's value in rank order; and the timeout.
    use super::*;
    use crate::backend::sim::Simulator;
    use crate::backend::MemoryApi;
    use crate::codegen::Kernel;

    /// `out[0] = finish(r)` for an f32 sum: parameters `(out, JoinParams.., r)`.
    fn build() -> Kernel<()> {
        Kernel::<()>::build("join_finish", |k, ()| {
            let out = output::<f32>();
            let j = JoinParams::<f32>::declare();
            let r = scalar::<f32>();
            j.finish(k, r, &out, &|a, b| a + b, &|a, _| a, 0.0);
        })
        .unwrap()
    }

    struct Run {
        out: f32,
        status: [u32; 2],
        /// Each peer's slots and flags after the kernel.
        peers: Vec<(Vec<f32>, Vec<u64>)>,
    }

    /// Rank `me` of `parts.len()` with value `r`, its own flags `flags`, waiting for `mask`
    /// at `epoch`, publishing to `npeers` peers (poisoned windows).
    fn run(parts: &[f32], me: u64, r: f32, flags: &[u64], mask: u64, epoch: u64) -> Run {
        let npeers = 2;
        let sim = Simulator::new();
        let k = build();
        let n = parts.len();
        let put = |bytes: &[u8]| {
            let p = sim.mem_alloc(bytes.len().max(8)).unwrap();
            // SAFETY: `p` holds the bytes copied, from live host data.
            unsafe { sim.memcpy_htod(p, bytes.as_ptr().cast(), bytes.len(), None) }.unwrap();
            p
        };
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let out = put(&f32s(&[f32::NAN]));
        let pp = put(&f32s(parts));
        let fp = put(&u64s(flags));
        let sp = put(&[0u8; 8]);
        let peers: Vec<(u64, u64)> = (0..npeers)
            .map(|_| (put(&f32s(&vec![-1.0; n])), put(&u64s(&vec![0; n]))))
            .collect();
        let mut slots = vec![
            out, 1, pp, n as u64, me, 99, fp, n as u64, sp, 2, mask, epoch,
        ];
        slots.push(50_000_000); // 50 ms
        for q in 0..MAX_PEERS {
            match peers.get(q) {
                Some(&(s, f)) => slots.extend([s, n as u64, f, n as u64]),
                None => slots.extend([0, 0, 0, 0]),
            }
        }
        slots.push(u64::from(r.to_bits()));
        sim.launch_ir_for_test(k.ir(), [1, 1, 1], &mut slots)
            .unwrap();
        let get = |p: u64, bytes: usize| {
            let mut v = vec![0u8; bytes];
            // SAFETY: `p` holds at least `bytes` bytes; `v` has room for them.
            unsafe { sim.memcpy_dtoh(v.as_mut_ptr().cast(), p, bytes, None) }.unwrap();
            v
        };
        let to_f32 = |b: Vec<u8>| -> Vec<f32> {
            b.chunks(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let to_u64 = |b: Vec<u8>| -> Vec<u64> {
            b.chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let st = to_f32(get(sp, 8))
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<u32>>();
        Run {
            out: to_f32(get(out, 4))[0],
            status: [st[0], st[1]],
            peers: peers
                .iter()
                .map(|&(s, f)| (to_f32(get(s, n * 4)), to_u64(get(f, n * 8))))
                .collect(),
        }
    }

    #[test]
    fn a_rank_publishes_to_its_peers_waits_and_combines_in_rank_order() {
        // Rank 1 of 3: its own slot holds garbage (NaN), never read.
        let got = run(&[1.5, f32::NAN, 4.0], 1, 2.25, &[5, 0, 6], 0b101, 5);
        assert_eq!(got.status, [0, 0]);
        assert_eq!(got.out, 1.5 + 2.25 + 4.0);
        for (slots, flags) in &got.peers {
            assert_eq!(slots, &[-1.0, 2.25, -1.0], "the value in slot `me` only");
            assert_eq!(flags, &[0, 5, 0], "the epoch in flag `me` only");
        }
        // Rank 0 of 3 waiting for rank 2 only.
        let got = run(&[f32::NAN, 8.0, 0.5], 0, 1.0, &[0, 0, 3], 0b100, 3);
        assert_eq!((got.status, got.out), ([0, 0], 9.5));
    }

    #[test]
    fn a_rank_that_never_publishes_times_out_into_the_status_words() {
        let got = run(&[1.5, 0.0, 4.0], 1, 2.25, &[5, 0, 4], 0b101, 5);
        assert_eq!(got.status, [TIMED_OUT, 2], "timed out waiting for rank 2");
        // It still published its own value and flag first.
        assert_eq!(got.peers[0].1, [0, 5, 0]);
    }
}
