//! Hopper's asynchronous machinery (sm_90): transaction barriers in shared memory (`mbarrier`),
//! tile copies by the Tensor Memory Accelerator (`cp.async.bulk.tensor`), the proxy fences
//! between them, and the warpgroup's matrix multiply-accumulate on operands that it reads from
//! shared memory through 64-bit matrix descriptors (`wgmma.mma_async`, sm_90a). Written once:
//! the builder records these, the lowering emits their PTX, the simulator executes them with
//! the layouts below ([`operand_addr`], [`swizzle`], [`acc_coord`]), and the tests check both
//! against the GPU.

use super::mma::MmaKind;
use super::{ArrayRef, ValueId};

/// Threads of a warpgroup: four consecutive warps, the first one's index a multiple of 4.
pub(crate) const WARPGROUP: u32 = 128;
/// Rows of one wgmma's A and D.
pub(crate) const WG_M: u32 = 64;
/// Bytes one descriptor's address field steps by (its 4 low bits are not stored).
pub(crate) const DESC_UNIT: u32 = 16;

/// A statement of Hopper's asynchronous machinery.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum HopperStmt {
    /// `mbarrier.init.shared::cta.b64 [bar], count`: barrier `index` of the u64 shared array
    /// `bar` expects `count` arrivals per phase, and starts in phase 0 with no transactions.
    BarInit {
        bar: ArrayRef,
        index: ValueId,
        count: ValueId,
    },
    /// `mbarrier.arrive{.expect_tx}.shared::cta.b64 _, [bar]{, tx}`: this thread arrives (and
    /// first raises the phase's expected transaction bytes by `tx`).
    BarArrive {
        bar: ArrayRef,
        index: ValueId,
        tx: Option<ValueId>,
    },
    /// `mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], tx`: raises the phase's
    /// expected transaction bytes by `tx`, without arriving.
    BarExpectTx {
        bar: ArrayRef,
        index: ValueId,
        tx: ValueId,
    },
    /// `fence.proxy.async.shared::cta`: orders this thread's ordinary shared-memory accesses
    /// before the asynchronous proxy's (TMA, wgmma) later ones.
    FenceProxyAsync,
    /// `fence.mbarrier_init.release.cluster`: makes initialised barriers visible to the
    /// asynchronous proxy and the cluster.
    FenceBarrierInit,
    /// `cp.async.bulk.tensor.{R}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    /// [dst], [map, {coords}], [bar]`: this thread starts the copy of one box of the tensor
    /// map (kernel parameter `map`) at element coordinates `coords` (innermost first, i32)
    /// into the dynamic shared memory at element `dst_index` of `dst`; its bytes count as
    /// transactions of barrier `bar_index` of `bar`.
    ///
    /// `multicast` (a u16 mask of cluster ranks, `.multicast::cluster`): the box lands at the
    /// same place in the shared memory of every block of the cluster whose rank's bit is set,
    /// and completes bytes on the barrier at the same place in each of them.
    TmaLoad {
        map: u32,
        coords: Vec<ValueId>,
        dst: ArrayRef,
        dst_index: ValueId,
        bar: ArrayRef,
        bar_index: ValueId,
        multicast: Option<ValueId>,
    },
    /// `cp.async.bulk.tensor.{R}d.global.shared::cta.tile.bulk_group [map, {coords}], [src]`:
    /// this thread starts the copy of one box from the dynamic shared memory at element
    /// `src_index` of `src` to the tensor at `coords`; it joins the thread's open bulk group.
    TmaStore {
        map: u32,
        coords: Vec<ValueId>,
        src: ArrayRef,
        src_index: ValueId,
    },
    /// `cp.async.bulk.commit_group`.
    BulkCommit,
    /// `cp.async.bulk.wait_group{.read} n`: waits until at most `n` of this thread's bulk
    /// groups are pending (`.read`: only until their sources have been read).
    BulkWait { n: u32, read: bool },
    /// `wgmma.fence.sync.aligned`: orders the warpgroup's register and shared-memory accesses
    /// before its next `wgmma.mma_async`.
    WgmmaFence,
    /// `wgmma.commit_group.sync.aligned`: the warpgroup's wgmmas since the last commit become
    /// a group.
    WgmmaCommit,
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 regs` (sm_90a): the warpgroup's register budget.
    SetMaxNReg { inc: bool, regs: u32 },
    /// `barrier.cluster.arrive.{release,relaxed}`: this thread arrives on its cluster's
    /// barrier (`relaxed`: without ordering its earlier memory accesses).
    ClusterArrive { relaxed: bool },
    /// `barrier.cluster.wait.acquire`: waits until every thread of the cluster has arrived in
    /// the current phase (this thread arrived first).
    ClusterWait,
    /// Stores `value` at element `index` of the shared array `array` of the block of cluster
    /// rank `rank` (u32): `mapa` of the element's address, then a store through it.
    ClusterStore {
        array: ArrayRef,
        index: ValueId,
        rank: ValueId,
        value: ValueId,
    },
    /// `mbarrier.arrive.shared::cluster.b64 _, [mapa(bar, rank)]`: this thread
    /// arrives on barrier `index` of `bar` in the block of cluster rank `rank`.
    BarArriveRemote {
        bar: ArrayRef,
        index: ValueId,
        rank: ValueId,
    },
}

/// An operation of Hopper's machinery that defines a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum HopperOp {
    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`: whether the phase of
    /// parity `parity` (a u32, 0 or 1) of barrier `index` of `bar` has completed (bool).
    BarTryWait {
        bar: ArrayRef,
        index: ValueId,
        parity: ValueId,
    },
    /// The shared-window address (u32) of element `index` of the dynamic shared memory.
    SharedAddr { array: ArrayRef, index: ValueId },
    /// Element `elem` of D in one warpgroup-wide `D = A·B + (scale_d ? D : 0)`
    /// (`wgmma.mma_async.sync.aligned.m64n{n}k{K}`, sm_90a): A (64×K) is read from shared
    /// memory through its descriptor or taken from registers ([`WgmmaA`]), B (K×n) from shared
    /// memory through the descriptor `b` (u64), in the layout its major says; `c` are this
    /// thread's accumulators (f32), `scale_d` a bool. The `n / 2` elements are recorded
    /// consecutively, element 0 first. The result is only valid after a
    /// [`HopperOp::WgmmaWait`] that covers it.
    Wgmma {
        kind: MmaKind,
        n: u16,
        a: WgmmaA,
        b: ValueId,
        b_mn_major: bool,
        scale_d: ValueId,
        c: Vec<ValueId>,
        elem: u16,
    },
    /// Element `elem` of `regs`, passed through `wgmma.wait_group.sync.aligned pending`: the
    /// registers of wgmmas in flight, read only after the wait (the elements are recorded
    /// consecutively, element 0 first).
    WgmmaWait {
        pending: u32,
        regs: Vec<ValueId>,
        elem: u16,
    },
    /// Element `index` of the shared array `array` of the block of cluster rank `rank` (u32):
    /// `mapa` of the element's address, then a load through it (distributed shared memory).
    ClusterLoad {
        array: ArrayRef,
        index: ValueId,
        rank: ValueId,
    },
    /// `old = array[index]; array[index] = old + value` in the block of cluster rank `rank`,
    /// atomically; the old value.
    ClusterAtomicAdd {
        array: ArrayRef,
        index: ValueId,
        rank: ValueId,
        value: ValueId,
    },
    /// Two f32 (`lo`, `hi`) rounded to nearest even to f16 or bf16 (`kind`) and packed into a
    /// u32, `lo` in the low half (`cvt.rn.{f16,bf16}x2.f32`, sm_80): how an accumulator becomes
    /// a register-sourced A fragment (`WgmmaAcc::frag_a`). A NaN gives a NaN.
    PackHalf2 {
        kind: MmaKind,
        lo: ValueId,
        hi: ValueId,
    },
}

/// Where a wgmma's A comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WgmmaA {
    /// Shared memory, through descriptor `desc` (u64), K-major or MN-major.
    Desc { desc: ValueId, mn_major: bool },
    /// This thread's four 32-bit registers: warp `w` of the warpgroup holds rows
    /// `16·w..16·w + 16` of A in the layout of `mma.sync`'s A fragment (`mma::a_coord`).
    Regs([ValueId; 4]),
}

/// The swizzle of a shared-memory tile (CUTLASS's `Swizzle<B,4,3>`): bits 4.. of the byte
/// address are XORed with bits 7.. (`bits` of them: 0 none, 1 for 32-byte, 2 for 64-byte, 3 for
/// 128-byte swizzling). TMA writes a swizzled box with it and wgmma reads through it, both on
/// the whole shared-window address (tiles start 1024-byte aligned for 128-byte swizzling).
pub(crate) fn swizzle(addr: u32, bits: u32) -> u32 {
    if bits == 0 {
        return addr;
    }
    addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)
}

/// A wgmma shared-memory matrix descriptor, decoded (PTX ISA, "Matrix Descriptor Format").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SmemDesc {
    /// The start address, in bytes (16-byte aligned).
    pub start: u32,
    /// Leading dimension byte offset.
    pub lbo: u32,
    /// Stride dimension byte offset.
    pub sbo: u32,
    /// The swizzle's bits (0, 1, 2, 3 for none, 32, 64, 128 bytes).
    pub swizzle_bits: u32,
}

impl SmemDesc {
    /// The 64-bit descriptor: address, LBO and SBO in 16-byte units in bits 0-13, 16-29,
    /// 32-45; base offset 0; layout type in bits 62-63 (1: 128-byte, 2: 64-byte, 3: 32-byte
    /// swizzle, 0: none).
    pub(crate) fn encode(&self) -> u64 {
        let f = |b: u32| ((b / DESC_UNIT) & 0x3fff) as u64;
        f(self.start)
            | f(self.lbo) << 16
            | f(self.sbo) << 32
            | (layout_type(self.swizzle_bits) << 62)
    }

    /// Decodes a descriptor.
    pub(crate) fn decode(d: u64) -> SmemDesc {
        let f = |s: u32| ((d >> s) & 0x3fff) as u32 * DESC_UNIT;
        let swizzle_bits = match d >> 62 {
            1 => 3,
            2 => 2,
            3 => 1,
            _ => 0,
        };
        SmemDesc {
            start: f(0),
            lbo: f(16),
            sbo: f(32),
            swizzle_bits,
        }
    }
}

/// The descriptor's layout type for a swizzle of `bits`.
pub(crate) fn layout_type(bits: u32) -> u64 {
    match bits {
        3 => 1,
        2 => 2,
        1 => 3,
        _ => 0,
    }
}

/// The shared-window byte address from which one wgmma reads element (`mn`, `k`) of an operand
/// (`mn` the row of A or the column of B, `k` in `0..K`) whose elements are `esize` bytes,
/// through descriptor `d`: CUTLASS's canonical layouts (`make_gmma_desc`), in 16-byte units,
/// with `T = 16 / esize` elements per unit and `W = 2^swizzle_bits`:
/// - K-major, no swizzle: `((8,m),(T,2)) : ((1,SBO),(1,LBO))`;
/// - K-major, swizzled: `((8,m),(T,2)) : ((W,SBO),(1,1))` (rows of `16·W` bytes);
/// - MN-major, no swizzle: `((T,1,m),(8,k)) : ((1,T,SBO),(1,LBO))` in elements;
/// - MN-major, swizzled: `((T,W,m),(8,k)) : ((1,T,LBO),(W·T,SBO))` in elements;
///
/// then [`swizzle`]d.
pub(crate) fn operand_addr(d: &SmemDesc, mn_major: bool, esize: u32, mn: u32, k: u32) -> u32 {
    let t = 16 / esize;
    let w = 1u32 << d.swizzle_bits;
    let logical = if !mn_major {
        let (row, grp) = (mn % 8, mn / 8);
        let (chunk, within) = (k / t, k % t);
        if d.swizzle_bits == 0 {
            d.start + row * 16 + grp * d.sbo + chunk * d.lbo + within * esize
        } else {
            d.start + row * w * 16 + grp * d.sbo + chunk * 16 + within * esize
        }
    } else {
        let (chunk, within) = (mn / t, mn % t);
        if d.swizzle_bits == 0 {
            d.start + within * esize + chunk * d.sbo + (k % 8) * 16 + (k / 8) * d.lbo
        } else {
            d.start
                + within * esize
                + (chunk % w) * 16
                + (chunk / w) * d.lbo
                + (k % 8) * w * 16
                + (k / 8) * d.sbo
        }
    };
    swizzle(logical, d.swizzle_bits)
}

/// Row and column in D (64×n) of accumulator element `e` of thread `t` (0..128) of the
/// warpgroup: warp `t / 32` holds rows `16·w..16·w + 16`; within them the layout of the
/// `mma.sync` m16n8 accumulator, repeated for every 8 columns (PTX ISA, "Register Fragments
/// and Shared Memory Matrix Layouts" of wgmma).
pub(crate) fn acc_coord(t: u32, e: u32) -> (u32, u32) {
    let (w, lane) = (t / 32, t % 32);
    let (g, q) = (lane / 4, lane % 4);
    (
        16 * w + g + 8 * ((e / 2) % 2),
        8 * (e / 4) + 2 * q + (e % 2),
    )
}

/// The wgmma shapes' N: multiples of 8 from 8 to 256.
pub(crate) fn valid_n(n: u32) -> bool {
    n % 8 == 0 && (8..=256).contains(&n)
}

/// K of one wgmma of this kind: 32 bytes of A's row (16 for f16/bf16, 8 for tf32, 32 for 8-bit).
pub(crate) fn wgmma_k(kind: MmaKind) -> u32 {
    256 / kind.elem_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accumulator layout covers the 64×n tile exactly once.
    #[test]
    fn acc_layout_covers_the_tile() {
        let n = 24;
        let mut seen = vec![0u32; (64 * n) as usize];
        for t in 0..WARPGROUP {
            for e in 0..n / 2 {
                let (r, c) = acc_coord(t, e);
                assert!(r < 64 && c < n);
                seen[(r * n + c) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
        assert_eq!(acc_coord(37, 5), (17, 11));
        assert_eq!(acc_coord(37, 6), (25, 10));
    }

    /// Columns 16c..16c+16 of an accumulator are, element for element, the f16/bf16 A
    /// fragments of a following wgmma (what `WgmmaAcc::frag_a` relies on): element `8c + e`
    /// of thread t sits at warp `t / 32`'s row offset plus the A fragment's (row, col) of `e`.
    #[test]
    fn acc_chunks_are_a_fragments() {
        for t in 0..WARPGROUP {
            for c in 0..16 {
                for e in 0..8 {
                    let (r, col) = crate::ir::mma::a_coord(MmaKind::F16, t % 32, e);
                    assert_eq!(acc_coord(t, 8 * c + e), (16 * (t / 32) + r, 16 * c + col));
                }
            }
        }
    }

    /// Descriptors round-trip, and the worked example of a K-major 128-byte swizzled tile
    /// (rows of 64 f16, 8-row groups 1024 bytes apart) reads row 6's column 0 from byte 48 of
    /// its row.
    #[test]
    fn descriptors_and_swizzled_addresses() {
        let d = SmemDesc {
            start: 1024,
            lbo: 16,
            sbo: 1024,
            swizzle_bits: 3,
        };
        assert_eq!(SmemDesc::decode(d.encode()), d);
        assert_eq!(d.encode() >> 62, 1);
        assert_eq!(operand_addr(&d, false, 2, 6, 0), 1024 + 6 * 128 + 6 * 16);
        assert_eq!(operand_addr(&d, false, 2, 9, 3), 2048 + 128 + 16 + 6);
        // MN-major: k rows of 128 bytes, 64-element column blocks LBO apart.
        let m = SmemDesc {
            start: 0,
            lbo: 8192,
            sbo: 1024,
            swizzle_bits: 3,
        };
        assert_eq!(
            operand_addr(&m, true, 2, 70, 9),
            swizzle(8192 + 12 + 128 + 1024, 3)
        );
        assert_eq!(swizzle(0x80, 3), 0x90);
        assert_eq!(swizzle(0x3f0, 1), 0x3f0 ^ 0x10);
    }
}
