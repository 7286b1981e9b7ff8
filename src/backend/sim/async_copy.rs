//! `cp.async` on the simulator: asynchronous copies from global to shared memory, in commit
//! groups per thread.
//!
//! The model (docs/SIMULATOR.md, "Asynchronous copies"): a copy is checked when it is issued
//! (the destination and source in bounds, both addresses multiples of the copy's size, no
//! race with an earlier access of another thread since the last barrier, no other copy in
//! flight to the same bytes) and its source bytes are read then; its destination bytes are
//! marked as in flight. It joins the issuing thread's open group; `commit` closes the group,
//! and a `wait_group n` (or `wait_all`) of that thread writes the bytes of its oldest groups
//! into shared memory until at most `n` remain. Any access to a byte in flight, by any thread
//! (the issuing one included), is a fault: on a GPU it would read stale data or race with the
//! copy. Copies still in flight when the block ends are dropped with its shared memory.
//!
//! Written at the wait, a copy counts (for the race check) as a write of the issuing thread
//! at that point, so another thread reading it after the wait without a barrier is a race.

use std::collections::VecDeque;

use super::access::{index_of, Access, Target};
use super::block::{try_lanes, Block, Frame, Mask, Rec, SharedBuf};
use super::fault::{array_name, Fault};
use super::global;
use crate::error::FaultKind;
use crate::ir::{ArrayRef, AsyncCopy, FunctionIr, Param, ScalarTy, ValueId};

/// Where a copy in flight writes: a static shared buffer (`Block::shared[slot].1[arr]`) or the
/// dynamic shared memory.
#[derive(Clone, Copy)]
enum Dst {
    Shared { slot: usize, arr: usize },
    Dyn,
}

/// One copy in flight.
struct Pending {
    dst: Dst,
    /// Byte offset in the destination buffer.
    off: usize,
    /// Element size of the destination (for the race records).
    elem: usize,
    len: usize,
    data: [u8; 16],
}

/// One thread's copies: those not yet committed, and the committed groups, oldest first.
#[derive(Default)]
struct ThreadCopies {
    open: Vec<Pending>,
    groups: VecDeque<Vec<Pending>>,
}

/// The copies in flight of a block's threads.
#[derive(Default)]
pub(crate) struct Copies {
    threads: Vec<ThreadCopies>,
    /// Whether a copy was issued in this block (there are marks to clear at its end).
    used: bool,
}

/// The element type of an array.
pub(super) fn elem_ty(f: &FunctionIr, array: ArrayRef) -> Option<ScalarTy> {
    Some(match array {
        ArrayRef::Param(i) => match f.params.get(i as usize)? {
            Param::Array { elem, .. } => *elem,
            Param::Scalar(_) | Param::TensorMap { .. } => return None,
        },
        ArrayRef::Shared(i) => f.shared.get(i as usize)?.elem,
        ArrayRef::DynShared(t) => t,
        ArrayRef::Local(i) => f.locals.get(i as usize)?.elem,
        ArrayRef::Const(i) => f.consts.get(i as usize)?.elem,
    })
}

/// A write of thread `t` for the race check, at the current epochs.
fn record_write(rec: &mut Rec, t: usize, bep: u32, wep: u32) {
    rec.w_tid = t as u32;
    rec.w_bep = bep;
    rec.w_wep = wep;
    rec.w_atomic = false;
}

impl Block<'_> {
    /// Forgets the copies of the previous block (dropped with its shared memory).
    pub(super) fn reset_async_copies(&mut self) {
        if !self.copies.used {
            return;
        }
        self.copies.used = false;
        for th in &mut self.copies.threads {
            th.open.clear();
            th.groups.clear();
        }
        let clear = |b: &mut SharedBuf| b.pending.iter_mut().for_each(|p| *p = 0);
        for (_, bufs) in &mut self.shared {
            bufs.iter_mut().for_each(clear);
        }
        clear(&mut self.dyn_shared);
    }

    /// Faults if a byte of `off..off + size` of a shared buffer has a copy in flight: thread
    /// `t` `verb` element `idx` of `array`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_pending(
        &self,
        pending: &[u32],
        off: usize,
        size: usize,
        t: usize,
        verb: &str,
        f: &FunctionIr,
        array: ArrayRef,
        idx: i64,
    ) -> Result<(), Fault> {
        let Some(&owner) = pending
            .get(off..off + size)
            .and_then(|p| p.iter().find(|&&p| p != 0))
        else {
            return Ok(());
        };
        let owner = owner as usize - 1;
        let by = if owner == t {
            "this thread".to_string()
        } else {
            self.who(owner)
        };
        let state = match self.copies.threads.get(owner) {
            Some(th) if th.groups.is_empty() => "issued and not yet committed".to_string(),
            Some(th) if !th.open.is_empty() => format!(
                "issued, with {} committed group(s) of that thread not yet waited for, or not \
                 yet committed",
                th.groups.len()
            ),
            Some(th) => format!(
                "in one of the {} committed group(s) of that thread not yet waited for",
                th.groups.len()
            ),
            None => "in flight".to_string(),
        };
        Err(Fault::new(
            FaultKind::SharedRace,
            format!(
                "{} {verb} element {idx} of {} before cp_async_wait completed its copy: {by} \
                 copies into it with cp.async ({state}); the destination of a cp.async may be \
                 touched only after the issuing thread's cp_async_wait covers its group (and, by \
                 other threads, after a syncthreads that follows that wait)",
                self.who(t),
                array_name(f, array, None)
            ),
        ))
    }

    /// A `cp.async` statement for the active lanes.
    pub(super) fn async_copy(
        &mut self,
        fr: &mut Frame<'_>,
        c: &AsyncCopy,
        m: &Mask,
    ) -> Result<(), Fault> {
        if self.copies.threads.len() < self.n {
            self.copies
                .threads
                .resize_with(self.n, ThreadCopies::default);
        }
        match c {
            AsyncCopy::Copy {
                dst,
                dst_index,
                src,
                src_index,
                bytes,
                src_size,
                ..
            } => self.issue(fr, *dst, *dst_index, *src, *src_index, *bytes, *src_size, m),
            AsyncCopy::Commit => try_lanes(m, self.nw, |t| {
                self.commit(t);
                Ok(())
            }),
            AsyncCopy::Wait(n) => try_lanes(m, self.nw, |t| {
                self.wait(t, *n as usize);
                Ok(())
            }),
            AsyncCopy::WaitAll => try_lanes(m, self.nw, |t| {
                self.commit(t);
                self.wait(t, 0);
                Ok(())
            }),
        }
    }

    fn commit(&mut self, t: usize) {
        let th = &mut self.copies.threads[t];
        let group = std::mem::take(&mut th.open);
        th.groups.push_back(group);
    }

    /// Completes thread `t`'s oldest groups until at most `keep` remain.
    fn wait(&mut self, t: usize, keep: usize) {
        let (bep, wep) = (self.bep, self.wep[t / 32]);
        while self.copies.threads[t].groups.len() > keep {
            let Some(group) = self.copies.threads[t].groups.pop_front() else {
                break;
            };
            for p in group {
                let buf = match p.dst {
                    Dst::Shared { slot, arr } => &mut self.shared[slot].1[arr],
                    Dst::Dyn => &mut self.dyn_shared,
                };
                let end = p.off + p.len;
                buf.bytes[p.off..end].copy_from_slice(&p.data[..p.len]);
                for q in &mut buf.pending[p.off..end] {
                    if *q == t as u32 + 1 {
                        *q = 0;
                    }
                }
                for e in (p.off..end).step_by(p.elem.max(1)) {
                    record_write(&mut buf.recs[e], t, bep, wep);
                }
            }
        }
    }

    /// Issues one copy per active lane: checks, reads the source, marks the destination.
    #[allow(clippy::too_many_arguments)]
    fn issue(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ArrayRef,
        dst_index: ValueId,
        src: ArrayRef,
        src_index: ValueId,
        bytes: u8,
        src_size: Option<ValueId>,
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        let bytes = bytes as usize;
        let dty =
            elem_ty(f, dst).ok_or_else(|| Fault::internal("cp.async into an unknown array"))?;
        let sty =
            elem_ty(f, src).ok_or_else(|| Fault::internal("cp.async from an unknown array"))?;
        let dtg = self.target(f, dst, dty)?;
        let stg = self.target(f, src, sty)?;
        let (esz, ssz) = (dty.size(), sty.size());
        let Target::Global { base, len: slen } = stg else {
            return Err(Fault::internal("cp.async from outside global memory"));
        };
        let dst_buf = match dtg {
            Target::Shared { slot, arr, .. } => Dst::Shared { slot, arr },
            Target::Dyn { .. } => Dst::Dyn,
            _ => return Err(Fault::internal("cp.async into memory that is not shared")),
        };
        let dlen = dtg.len();
        let (db, sb) = (dst_index.0 as usize * n, src_index.0 as usize * n);
        let zb = src_size.map(|z| z.0 as usize * n);
        let check_races = self.l.race_checks;
        self.copies.used = true;
        try_lanes(m, self.nw, |t| {
            let di = index_of(f, dst_index, fr.regs[db + t]);
            let si = index_of(f, src_index, fr.regs[sb + t]);
            let what = format!("a {bytes}-byte cp.async");
            // The destination: in bounds, aligned to the copy's size.
            let delems = (bytes / esz) as i64;
            if di < 0 || (di as u64).saturating_add(delems as u64) > dlen {
                let bad = if di < 0 { di } else { di.max(dlen as i64) };
                let mut e = self.out_of_bounds(f, dst, t, Access::Write, bad, dlen);
                e.message += &format!(" ({what} into elements {di}..{})", di + delems);
                return Err(e);
            }
            let off = di as usize * esz;
            if off % bytes != 0 {
                return Err(Fault::new(
                    FaultKind::Misaligned,
                    format!(
                        "{} copies {bytes} bytes with cp.async into element {di} of {} (byte \
                         offset {off}), which is not a multiple of {bytes} bytes: both \
                         addresses of a cp.async must be aligned to its size",
                        self.who(t),
                        array_name(f, dst, None)
                    ),
                ));
            }
            // The source: aligned; in bounds for the bytes read.
            let read = match zb {
                Some(zb) => {
                    let z = fr.regs[zb + t] as u32 as usize;
                    if z > bytes {
                        return Err(Fault::new(
                            FaultKind::OutOfBounds,
                            format!(
                                "{} gives cp.async a source size of {z} bytes, more than the \
                                 {bytes} bytes it copies (the source size must be 0 to {bytes})",
                                self.who(t)
                            ),
                        ));
                    }
                    z
                }
                None => bytes,
            };
            let addr = base.wrapping_add((si as u64).wrapping_mul(ssz as u64));
            if addr % bytes as u64 != 0 {
                return Err(Fault::new(
                    FaultKind::Misaligned,
                    format!(
                        "{} copies {bytes} bytes with cp.async from element {si} of {} at \
                         address {addr:#x}, which is not a multiple of {bytes} bytes: both \
                         addresses of a cp.async must be aligned to its size",
                        self.who(t),
                        array_name(f, src, None)
                    ),
                ));
            }
            let selems = read.div_ceil(ssz) as i64;
            if selems > 0 && (si < 0 || (si as u64).saturating_add(selems as u64) > slen) {
                let bad = if si < 0 { si } else { si.max(slen as i64) };
                let mut e = self.out_of_bounds(f, src, t, Access::Read, bad, slen);
                e.message += &format!(" ({what} from elements {si}..{})", si + selems);
                return Err(e);
            }
            let mut data = [0u8; 16];
            for e in 0..selems as usize {
                // SAFETY: element `si + e < slen` of an array argument of the launch, in
                // simulator memory the launch's caller keeps alive, aligned to its size (the
                // copy's address is aligned to `bytes`, a multiple of the element's size).
                let bits = unsafe { global::load(addr + (e * ssz) as u64, sty) };
                data[e * ssz..(e + 1) * ssz].copy_from_slice(&bits.to_le_bytes()[..ssz]);
            }
            data[read..].fill(0);
            // The destination: no copy in flight to it, no race with earlier accesses.
            let buf = match dst_buf {
                Dst::Shared { slot, arr } => &self.shared[slot].1[arr],
                Dst::Dyn => &self.dyn_shared,
            };
            if !buf.pending.is_empty() {
                let p = &buf.pending;
                self.check_pending(p, off, bytes, t, "copies with cp.async into", f, dst, di)?;
            }
            for e in 0..delems as usize {
                let o = off + e * esz;
                let mut rec = match dst_buf {
                    Dst::Shared { slot, arr } => self.shared[slot].1[arr].recs[o],
                    Dst::Dyn => self.dyn_shared.recs[o],
                };
                if check_races {
                    self.race_check(&mut rec, t, Access::Write, f, dst, di + e as i64)?;
                }
                let buf = match dst_buf {
                    Dst::Shared { slot, arr } => &mut self.shared[slot].1[arr],
                    Dst::Dyn => &mut self.dyn_shared,
                };
                buf.recs[o] = rec;
            }
            let buf = match dst_buf {
                Dst::Shared { slot, arr } => &mut self.shared[slot].1[arr],
                Dst::Dyn => &mut self.dyn_shared,
            };
            if buf.pending.is_empty() {
                buf.pending = vec![0; buf.bytes.len()];
            }
            buf.pending[off..off + bytes].fill(t as u32 + 1);
            self.copies.threads[t].open.push(Pending {
                dst: dst_buf,
                off,
                elem: esz,
                len: bytes,
                data,
            });
            Ok(())
        })
    }
}
