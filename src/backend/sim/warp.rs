//! Warp intrinsics on the simulator: shuffles, votes, ballots, match, lane masks, computed
//! from the lanes each warp has active at that point, as the hardware does.

// Masks are one word per warp beside per-warp state: index loops over warps read best.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;

use super::block::{Block, Frame, Mask};
use super::eval;
use super::fault::Fault;
use crate::error::FaultKind;
use crate::ir::warp::{LaneMask, ShflKind, VoteKind, WarpOp};
use crate::ir::ValueId;

impl Block<'_> {
    pub(super) fn warp(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        op: &WarpOp,
        m: &Mask,
        sp: &[Range<usize>],
    ) -> Result<(), Fault> {
        let n = self.n;
        let f = fr.f;
        let db = dst.0 as usize * n;
        let at = |v: ValueId| v.0 as usize * n;
        match op {
            WarpOp::Mma {
                kind,
                a,
                b,
                c,
                lane,
            } => return self.mma(fr, dst, *kind, a, b, c, *lane, m),
            WarpOp::LdMatrix {
                array,
                index,
                count,
                trans,
                reg,
            } => return self.ldmatrix(fr, dst, *array, *index, *count, *trans, *reg, m),
            WarpOp::Bit(bf, a) => {
                let ty = f.values[a.0 as usize].ty;
                let (before, rest) = fr.regs.split_at_mut(db);
                let src = before
                    .get(at(*a)..at(*a) + n)
                    .ok_or_else(|| Fault::internal("bit operation on a later value"))?;
                eval::bit(*bf, ty, &mut rest[..n], src, sp);
            }
            WarpOp::ActiveMask => {
                for w in 0..self.nw {
                    for t in w * 32..((w + 1) * 32).min(n) {
                        fr.regs[db + t] = m[w] as u64;
                    }
                }
            }
            WarpOp::LaneMask(k) => {
                for r in sp {
                    for t in r.clone() {
                        let l = (t % 32) as u32;
                        let below = (1u64 << l) - 1;
                        let v = match k {
                            LaneMask::Lt => below,
                            LaneMask::Le => (below << 1) | 1,
                            LaneMask::Eq => 1 << l,
                            LaneMask::Ge => !below,
                            LaneMask::Gt => !((below << 1) | 1),
                        };
                        fr.regs[db + t] = v & 0xffff_ffff;
                    }
                }
            }
            WarpOp::Shfl {
                kind,
                mask,
                value,
                lane,
            } => {
                let (mb, vb, lb) = (at(*mask), at(*value), at(*lane));
                let name = match kind {
                    ShflKind::Idx => "shfl_sync",
                    ShflKind::Up => "shfl_up_sync",
                    ShflKind::Down => "shfl_down_sync",
                    ShflKind::Bfly => "shfl_xor_sync",
                };
                for w in 0..self.nw {
                    if m[w] == 0 {
                        continue;
                    }
                    self.sync_check(fr, mb, w, m[w], name)?;
                    let base = w * 32;
                    let lanes = n.min(base + 32) - base;
                    let mut out = [0u64; 32];
                    let mut b = m[w];
                    while b != 0 {
                        let l = b.trailing_zeros() as usize;
                        b &= b - 1;
                        let arg = fr.regs[lb + base + l] as u32;
                        let src = match kind {
                            ShflKind::Idx => Some((arg & 31) as usize),
                            ShflKind::Up => (l as u32).checked_sub(arg).map(|s| s as usize),
                            ShflKind::Down => Some(l as u64 + arg as u64)
                                .filter(|&s| s < 32)
                                .map(|s| s as usize),
                            ShflKind::Bfly => Some(l as u64 ^ arg as u64)
                                .filter(|&s| s < 32)
                                .map(|s| s as usize),
                        };
                        let src = src.filter(|&s| s < lanes).unwrap_or(l);
                        out[l] = fr.regs[vb + base + src];
                    }
                    let mut b = m[w];
                    while b != 0 {
                        let l = b.trailing_zeros() as usize;
                        b &= b - 1;
                        fr.regs[db + base + l] = out[l];
                    }
                }
            }
            WarpOp::Vote { kind, mask, pred } => {
                let (mb, pb) = (at(*mask), at(*pred));
                let name = match kind {
                    VoteKind::All => "all_sync",
                    VoteKind::Any => "any_sync",
                    VoteKind::Uni => "eq_sync",
                    VoteKind::Ballot => "ballot_sync",
                };
                for w in 0..self.nw {
                    if m[w] == 0 {
                        continue;
                    }
                    self.sync_check(fr, mb, w, m[w], name)?;
                    let base = w * 32;
                    let mut b = m[w];
                    while b != 0 {
                        let l = b.trailing_zeros() as usize;
                        b &= b - 1;
                        let set = fr.regs[mb + base + l] as u32 & m[w];
                        let mut ballot = 0u32;
                        let mut s = set;
                        while s != 0 {
                            let j = s.trailing_zeros() as usize;
                            s &= s - 1;
                            ballot |= ((fr.regs[pb + base + j] & 1) as u32) << j;
                        }
                        fr.regs[db + base + l] = match kind {
                            VoteKind::All => (ballot == set) as u64,
                            VoteKind::Any => (ballot != 0) as u64,
                            VoteKind::Uni => (ballot == 0 || ballot == set) as u64,
                            VoteKind::Ballot => ballot as u64,
                        };
                    }
                }
            }
            WarpOp::MatchAny { mask, value } | WarpOp::MatchAll { mask, value } => {
                let all = matches!(op, WarpOp::MatchAll { .. });
                let (mb, vb) = (at(*mask), at(*value));
                let name = if all {
                    "match_all_sync"
                } else {
                    "match_any_sync"
                };
                for w in 0..self.nw {
                    if m[w] == 0 {
                        continue;
                    }
                    self.sync_check(fr, mb, w, m[w], name)?;
                    let base = w * 32;
                    let mut out = [0u64; 32];
                    let mut b = m[w];
                    while b != 0 {
                        let l = b.trailing_zeros() as usize;
                        b &= b - 1;
                        let named = fr.regs[mb + base + l] as u32;
                        let set = named & m[w];
                        let mine = fr.regs[vb + base + l];
                        let mut same = 0u32;
                        let mut s = set;
                        while s != 0 {
                            let j = s.trailing_zeros() as usize;
                            s &= s - 1;
                            if fr.regs[vb + base + j] == mine {
                                same |= 1 << j;
                            }
                        }
                        out[l] = if all {
                            if same == set {
                                named as u64
                            } else {
                                0
                            }
                        } else {
                            same as u64
                        };
                    }
                    for (l, v) in out.iter().enumerate().take(n.min(base + 32) - base) {
                        if m[w] & (1 << l) != 0 {
                            fr.regs[db + base + l] = *v;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A `.sync.aligned` warp-wide instruction (`ptx`, named `op` in the message) needs all 32
    /// lanes of warp `w` (`here`: the lanes that reached it) together: a split or partial warp
    /// is a fault saying to keep `keep` out of branches that split a warp.
    pub(super) fn whole_warp(
        &self,
        w: usize,
        here: u32,
        op: &str,
        ptx: &str,
        keep: &str,
    ) -> Result<(), Fault> {
        if self.full[w] == u32::MAX && here == u32::MAX {
            return Ok(());
        }
        let partial = if self.full[w] != u32::MAX {
            format!(" (the warp has lanes {:#010x})", self.full[w])
        } else {
            String::new()
        };
        Err(Fault::new(
            FaultKind::DivergentBarrier,
            format!(
                "{op} in warp {w}: all 32 lanes of a warp must execute it together ({ptx}), but \
                 only lanes {here:#010x} are here{partial}; keep {keep} out of branches that \
                 split a warp, and launch blocks of a multiple of 32 threads"
            ),
        ))
    }

    /// The lanes a `*_sync` intrinsic names (the first active lane's mask) must all be here.
    fn sync_check(
        &self,
        fr: &Frame<'_>,
        mask_at: usize,
        w: usize,
        here: u32,
        what: &str,
    ) -> Result<(), Fault> {
        let first = w * 32 + here.trailing_zeros() as usize;
        let named = fr.regs[mask_at + first] as u32;
        self.check_warp_sync(w, named, here, what)
    }
}
