//! `%globaltimer` in kernels (`KernelBuilder::globaltimer`, `globaltimer_lo`): read before and
//! after a busy loop that runs until the timer has moved, on every thread of a block.

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::ctx;

#[test]
#[ignore = "needs a CUDA GPU"]
fn globaltimer_is_non_decreasing_and_advances_across_a_busy_loop() {
    const THREADS: usize = 64;
    const SPIN_NS: u64 = 20_000;
    const MAX_ROUNDS: u64 = 10_000_000;
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&mut [u64], &mut [u32])>::build("timer_busy", |k, (out, lo)| {
        let t = k.thread_idx().x.cast::<u64>();
        let t0 = k.globaltimer();
        let l0 = k.globaltimer_lo();
        // Busy until the timer has moved by SPIN_NS (bounded, so a stuck timer cannot hang).
        let now = k.var(t0);
        let rounds = k.var(0u64);
        k.while_(
            |_| {
                (now.get() - t0)
                    .lt(SPIN_NS)
                    .and(rounds.get().lt(MAX_ROUNDS))
            },
            |k| {
                now.set(k.globaltimer());
                rounds.set(rounds.get() + 1u64);
            },
        );
        let t1 = k.globaltimer();
        let l1 = k.globaltimer_lo();
        out.set(t * 4u64, t0);
        out.set(t * 4u64 + 1u64, now.get());
        out.set(t * 4u64 + 2u64, t1);
        out.set(t * 4u64 + 3u64, rounds.get());
        lo.set(t * 2u64, l0);
        lo.set(t * 2u64 + 1u64, l1);
    })
    .unwrap();
    let mut out = s.to_device(&vec![0u64; THREADS * 4]).unwrap();
    let mut lo = s.to_device(&vec![0u32; THREADS * 2]).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(1, THREADS as u32),
        (&mut out, &mut lo),
    )
    .unwrap();
    let (out, lo) = (out.to_vec_async(&s).unwrap(), lo.to_vec_async(&s).unwrap());
    for t in 0..THREADS {
        let [t0, mid, t1, rounds] = [out[t * 4], out[t * 4 + 1], out[t * 4 + 2], out[t * 4 + 3]];
        assert!(t0 > 0, "thread {t}: the timer reads 0");
        assert!(
            t0 <= mid && mid <= t1,
            "thread {t}: went back: {t0} {mid} {t1}"
        );
        assert!(
            rounds < MAX_ROUNDS,
            "thread {t}: the timer did not move in {rounds} reads"
        );
        assert!(t1 - t0 >= SPIN_NS, "thread {t}: advanced {} ns", t1 - t0);
        assert!(
            t1 - t0 < 5_000_000_000,
            "thread {t}: {} ns is implausible",
            t1 - t0
        );
        // The low word is the timer's low 32 bits, read just after (wrapping arithmetic).
        let (l0, l1) = (lo[t * 2], lo[t * 2 + 1]);
        assert!(
            l0.wrapping_sub(t0 as u32) < 1_000_000_000,
            "thread {t}: globaltimer_lo {l0} vs globaltimer {t0}"
        );
        // l0 = t0 + d0 and l1 = t1 + d1 (each read just after): the low word advanced by
        // (t1 - t0) + d1 - d0, at least (t1 - t0) - d0. (On an H200 the timer ticked between
        // t0 and l0 once: 19,968 ns against a spin of 20,000.)
        let d0 = l0.wrapping_sub(t0 as u32) as u64;
        let dl = l1.wrapping_sub(l0) as u64;
        assert!(
            dl + d0 >= t1 - t0 && dl < 1_000_000_000,
            "thread {t}: globaltimer_lo advanced {dl} (t1 - t0 = {}, l0 - t0 = {d0})",
            t1 - t0
        );
    }
}
