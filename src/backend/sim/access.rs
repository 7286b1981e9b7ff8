//! Memory accesses on the simulator: loads, stores and atomics on global, shared and local
//! arrays, each checked against the array's length, and shared-memory accesses checked for
//! races between barriers.

use super::block::{try_lanes, Block, Frame, Mask, Rec, SharedBuf};
use super::eval::{Lane, MinMax};
use super::fault::{array_name, Fault};
use super::global;
use crate::error::FaultKind;
use crate::ir::atomic::{AtomicKind, AtomicOp};
use crate::ir::ScalarTy;
use crate::ir::{ArrayRef, FunctionIr, ValueId};

/// Where an array's elements are.
#[derive(Clone, Copy)]
pub(super) enum Target {
    Global {
        base: u64,
        len: u64,
    },
    /// Index into `Block::shared[slot].1`.
    Shared {
        slot: usize,
        arr: usize,
        len: u64,
    },
    Dyn {
        len: u64,
    },
    Local {
        arr: usize,
        len: u64,
    },
    /// Index into `FunctionIr::consts` (read-only).
    Const {
        arr: usize,
        len: u64,
    },
}

impl Target {
    pub(super) fn len(self) -> u64 {
        match self {
            Target::Global { len, .. }
            | Target::Shared { len, .. }
            | Target::Dyn { len }
            | Target::Local { len, .. }
            | Target::Const { len, .. } => len,
        }
    }
}

/// How an access touches memory, for messages and the race check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
    Atomic,
    /// A relaxed atomic load (`atomic_load`): a read that races with plain writes but not with
    /// other threads' atomics (two atomic accesses never race).
    AtomicRead,
}

impl Access {
    pub(super) fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Atomic => "atomically updates",
            Access::AtomicRead => "atomically reads",
        }
    }
}

/// The slot of `f`'s static shared arrays in a block's `shared` (made on first use).
pub(super) fn shared_slot(
    shared: &mut Vec<(*const FunctionIr, Vec<SharedBuf>)>,
    f: &FunctionIr,
) -> usize {
    let key = f as *const FunctionIr;
    if let Some(s) = shared.iter().position(|(k, _)| *k == key) {
        return s;
    }
    let bufs = f
        .shared
        .iter()
        .map(|d| SharedBuf::new(d.len as usize * d.elem.size()))
        .collect();
    shared.push((key, bufs));
    shared.len() - 1
}

/// An index value as a signed 64-bit number (indices are i64 values; narrower ones extend).
pub(super) fn index_of(f: &FunctionIr, id: ValueId, bits: u64) -> i64 {
    f.values[id.0 as usize].ty.bits_as_i64(bits)
}

impl Block<'_> {
    /// Finds (or makes, on first use in this worker) the storage of `array`.
    pub(super) fn target(
        &mut self,
        f: &FunctionIr,
        array: ArrayRef,
        elem: ScalarTy,
    ) -> Result<Target, Fault> {
        Ok(match array {
            ArrayRef::Param(i) => {
                let a = self
                    .l
                    .arrays
                    .get(i as usize)
                    .and_then(|a| a.as_ref())
                    .ok_or_else(|| Fault::internal("access to a parameter that is not an array"))?;
                Target::Global {
                    base: a.base,
                    len: a.len,
                }
            }
            ArrayRef::Shared(i) => {
                let slot = shared_slot(&mut self.shared, f);
                Target::Shared {
                    slot,
                    arr: i as usize,
                    len: f.shared[i as usize].len,
                }
            }
            ArrayRef::DynShared(_) => Target::Dyn {
                len: (self.l.dyn_shared / elem.size()) as u64,
            },
            ArrayRef::Local(i) => Target::Local {
                arr: i as usize,
                len: f.locals[i as usize].len,
            },
            ArrayRef::Const(i) => Target::Const {
                arr: i as usize,
                len: crate::ir::const_len(f, i),
            },
        })
    }

    /// The fault for thread `t` touching element `idx` outside `array`.
    pub(super) fn out_of_bounds(
        &self,
        f: &FunctionIr,
        array: ArrayRef,
        t: usize,
        how: Access,
        idx: i64,
        len: u64,
    ) -> Fault {
        let dims = match array {
            ArrayRef::Param(i) => self
                .l
                .arrays
                .get(i as usize)
                .and_then(|a| a.as_ref())
                .map(|a| a.dims.as_slice()),
            _ => None,
        };
        Fault::new(
            FaultKind::OutOfBounds,
            format!(
                "{} {} element {idx} of {}, which has {len} elements",
                self.who(t),
                how.verb(),
                array_name(f, array, dims)
            ),
        )
    }

    /// Checks and records an access of thread `t` to byte `off` of a shared buffer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn race_check(
        &self,
        rec: &mut Rec,
        t: usize,
        how: Access,
        f: &FunctionIr,
        array: ArrayRef,
        idx: i64,
    ) -> Result<(), Fault> {
        let (bep, w) = (self.bep, t / 32);
        let wep = self.wep[w];
        let tid = t as u32;
        // Does an earlier access by thread `other` (at warp epoch `other_wep`) conflict?
        let clash = |other: u32, other_bep: u32, other_wep: u32| {
            other != u32::MAX
                && other != tid
                && other_bep == bep
                && ((other as usize / 32) != w || other_wep == wep)
        };
        let mut other: Option<(u32, &str)> = None;
        let atomic = matches!(how, Access::Atomic | Access::AtomicRead);
        let reads = matches!(how, Access::Read | Access::AtomicRead);
        let w_clash = clash(rec.w_tid, rec.w_bep, rec.w_wep) && !(rec.w_atomic && atomic);
        if w_clash {
            other = Some((
                rec.w_tid,
                if rec.w_atomic {
                    "atomically updated"
                } else {
                    "wrote"
                },
            ));
        } else if !reads && rec.r_bep == bep && !(how == Access::Atomic && rec.r_atomic) {
            let readers_clash = if rec.r_multi {
                rec.r_multi_warp || (rec.r_tid as usize / 32) != w || rec.r_wep == wep
            } else {
                clash(rec.r_tid, rec.r_bep, rec.r_wep)
            };
            if readers_clash {
                other = Some((rec.r_tid, "read"));
            }
        }
        if let Some((o, did)) = other {
            let o = if o == tid {
                "another thread".to_string()
            } else {
                self.who(o as usize)
            };
            return Err(Fault::new(
                FaultKind::SharedRace,
                format!(
                    "{} {} element {idx} of {} after {o} {did} it, with no syncthreads (or \
                     syncwarp, within a warp) between the two accesses",
                    self.who(t),
                    how.verb(),
                    array_name(f, array, None)
                ),
            ));
        }
        match how {
            Access::Read | Access::AtomicRead => {
                // Whether every read since the barrier was atomic (then atomics may follow).
                let atomic_read = how == Access::AtomicRead;
                if rec.r_bep != bep {
                    rec.r_tid = tid;
                    rec.r_bep = bep;
                    rec.r_wep = wep;
                    rec.r_multi = false;
                    rec.r_multi_warp = false;
                    rec.r_atomic = atomic_read;
                } else {
                    rec.r_atomic &= atomic_read;
                    if rec.r_tid != tid {
                        rec.r_multi = true;
                        rec.r_multi_warp |= rec.r_tid as usize / 32 != w;
                        rec.r_wep = rec.r_wep.max(wep);
                    }
                }
            }
            Access::Write | Access::Atomic => {
                rec.w_tid = tid;
                rec.w_bep = bep;
                rec.w_wep = wep;
                rec.w_atomic = how == Access::Atomic;
            }
        }
        Ok(())
    }

    /// Reads, writes or updates element `idx` of `array` for thread `t`: `op(old) -> new`
    /// (`None`: no write). Returns the old bits.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn access(
        &mut self,
        fr: &mut Frame<'_>,
        array: ArrayRef,
        tg: Target,
        ty: ScalarTy,
        t: usize,
        idx: i64,
        how: Access,
        op: impl Fn(u64) -> Option<u64>,
    ) -> Result<u64, Fault> {
        let f = fr.f;
        let len = tg.len();
        if idx < 0 || idx as u64 >= len {
            return Err(self.out_of_bounds(f, array, t, how, idx, len));
        }
        let size = ty.size();
        let off = idx as usize * size;
        let bytes_op = |bytes: &mut [u8]| update_bits(bytes, ty, &op);
        match tg {
            Target::Global { base, .. } => {
                let addr = base + off as u64;
                if addr % size as u64 != 0 {
                    return Err(Fault::new(
                        FaultKind::Misaligned,
                        format!(
                            "{} {} element {idx} of {} at address {addr:#x}, which is not a \
                             multiple of its size ({size} bytes)",
                            self.who(t),
                            how.verb(),
                            array_name(f, array, None)
                        ),
                    ));
                }
                // SAFETY: `addr` is element `idx < len` of an array argument of the launch,
                // which lies in simulator memory that the launch's caller keeps alive, and is
                // aligned to the element's size (checked above).
                let r = unsafe {
                    match how {
                        Access::Read | Access::AtomicRead => Some(global::load(addr, ty)),
                        Access::Write => {
                            global::store(addr, ty, op(0).unwrap_or(0));
                            Some(0)
                        }
                        Access::Atomic => global::update(addr, ty, &op),
                    }
                };
                r.ok_or_else(|| {
                    Fault::new(
                        FaultKind::Unsupported,
                        format!(
                            "{} {} element {idx} of {}: atomics on {size}-byte elements are not \
                             supported",
                            self.who(t),
                            how.verb(),
                            array_name(f, array, None)
                        ),
                    )
                })
            }
            Target::Shared { slot, arr, .. } => {
                if !self.shared[slot].1[arr].pending.is_empty() {
                    let p = &self.shared[slot].1[arr].pending;
                    self.check_pending(p, off, size, t, how.verb(), f, array, idx)?;
                }
                let check = self.l.race_checks;
                let mut rec = self.shared[slot].1[arr].recs[off];
                if check {
                    self.race_check(&mut rec, t, how, f, array, idx)?;
                }
                let buf = &mut self.shared[slot].1[arr];
                buf.recs[off] = rec;
                Ok(bytes_op(&mut buf.bytes[off..off + size]))
            }
            Target::Dyn { .. } => {
                if !self.dyn_shared.pending.is_empty() {
                    let p = &self.dyn_shared.pending;
                    self.check_pending(p, off, size, t, how.verb(), f, array, idx)?;
                }
                let check = self.l.race_checks;
                let mut rec = self.dyn_shared.recs[off];
                if check {
                    self.race_check(&mut rec, t, how, f, array, idx)?;
                }
                self.dyn_shared.recs[off] = rec;
                if !matches!(how, Access::Read | Access::AtomicRead)
                    && !self.dyn_shared.tma_swizzle.is_empty()
                {
                    self.dyn_shared.tma_swizzle[off..off + size].fill(0);
                }
                Ok(bytes_op(&mut self.dyn_shared.bytes[off..off + size]))
            }
            Target::Local { arr, len } => {
                let at = (t * len as usize) * size + off;
                Ok(bytes_op(&mut fr.locals[arr][at..at + size]))
            }
            Target::Const { arr, .. } => match (how, f.consts.get(arr)) {
                (Access::Read, Some(c)) => Ok(read_bits(&c.bytes[off..off + size], ty)),
                _ => Err(Fault::internal("a write to constant memory")),
            },
        }
    }

    /// A load (`vec`: lane and width of a vector load) into value `dst`.
    pub(super) fn load(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        array: ArrayRef,
        index: ValueId,
        vec: Option<(u8, u8)>,
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let f = fr.f;
        let ty = f.values[dst.0 as usize].ty;
        let tg = self.target(f, array, ty)?;
        let (ib, db) = (index.0 as usize * n, dst.0 as usize * n);
        try_lanes(m, self.nw, |t| {
            let raw = index_of(f, index, fr.regs[ib + t]);
            let idx = match vec {
                None => raw,
                Some((lane, width)) => {
                    if lane == 0 {
                        self.check_vector(f, array, tg, ty, t, raw, width, "reads")?;
                    }
                    raw.wrapping_mul(width as i64).wrapping_add(lane as i64)
                }
            };
            let v = self.access(fr, array, tg, ty, t, idx, Access::Read, |_| None)?;
            fr.regs[db + t] = v;
            Ok(())
        })
    }

    /// The flat (C-order) index of an n-D element (`Op::NdIndex`) into value `dst`, for the
    /// active lanes; each index is checked against its dimension's extent, so an index outside
    /// one dimension is a fault even where the flat index would be inside the array.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn nd_index(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        array: ArrayRef,
        indices: &[ValueId],
        dims: &[ValueId],
        m: &Mask,
    ) -> Result<(), Fault> {
        let (n, f) = (self.n, fr.f);
        if indices.is_empty() || indices.len() != dims.len() {
            return Err(Fault::internal(
                "an n-D index whose indices and extents differ",
            ));
        }
        let db = dst.0 as usize * n;
        let of = |regs: &[u64], v: ValueId, t: usize| index_of(f, v, regs[v.0 as usize * n + t]);
        try_lanes(m, self.nw, |t| {
            let idx: Vec<i64> = indices.iter().map(|&v| of(&fr.regs, v, t)).collect();
            let ext: Vec<i64> = dims.iter().map(|&v| of(&fr.regs, v, t)).collect();
            if let Some(d) = (0..idx.len()).find(|&d| idx[d] < 0 || idx[d] >= ext[d]) {
                let view = match array {
                    ArrayRef::DynShared(_) => format!(", viewed with shape {ext:?}"),
                    _ => String::new(),
                };
                return Err(Fault::new(
                    FaultKind::OutOfBounds,
                    format!(
                        "{} indexes element {idx:?} of {}{view}: index {} of dimension {d} is \
                         outside its extent {}",
                        self.who(t),
                        array_name(f, array, None),
                        idx[d],
                        ext[d]
                    ),
                ));
            }
            let flat =
                (1..idx.len()).fold(idx[0], |a, d| a.wrapping_mul(ext[d]).wrapping_add(idx[d]));
            fr.regs[db + t] = flat as u64;
            Ok(())
        })
    }

    /// A vector access must start at a multiple of its width in bytes.
    #[allow(clippy::too_many_arguments)]
    fn check_vector(
        &self,
        f: &FunctionIr,
        array: ArrayRef,
        tg: Target,
        ty: ScalarTy,
        t: usize,
        index: i64,
        width: u8,
        verb: &str,
    ) -> Result<(), Fault> {
        let bytes = width as u64 * ty.size() as u64;
        let base = match tg {
            Target::Global { base, .. } => base,
            // Shared and local arrays are 16-byte aligned.
            _ => 0,
        };
        let addr = base.wrapping_add((index as u64).wrapping_mul(bytes));
        if addr % bytes != 0 {
            return Err(Fault::new(
                FaultKind::Misaligned,
                format!(
                    "{} {verb} a {width}-element vector at element {} of {} (address {addr:#x}), \
                     which is not {bytes}-byte aligned",
                    self.who(t),
                    index.wrapping_mul(width as i64),
                    array_name(f, array, None)
                ),
            ));
        }
        Ok(())
    }

    /// A store of one value, or of a vector of `values.len()` lanes at `index * len`.
    pub(super) fn store(
        &mut self,
        fr: &mut Frame<'_>,
        array: ArrayRef,
        index: ValueId,
        values: &[ValueId],
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let f = fr.f;
        let Some(first) = values.first() else {
            return Ok(());
        };
        let ty = f.values[first.0 as usize].ty;
        let tg = self.target(f, array, ty)?;
        let ib = index.0 as usize * n;
        let width = values.len();
        try_lanes(m, self.nw, |t| {
            let raw = index_of(f, index, fr.regs[ib + t]);
            if width > 1 {
                self.check_vector(f, array, tg, ty, t, raw, width as u8, "writes")?;
            }
            for (lane, v) in values.iter().enumerate() {
                let idx = if width > 1 {
                    raw.wrapping_mul(width as i64).wrapping_add(lane as i64)
                } else {
                    raw
                };
                let bits = fr.regs[v.0 as usize * n + t];
                self.access(fr, array, tg, ty, t, idx, Access::Write, |_| Some(bits))?;
            }
            Ok(())
        })
    }

    /// An atomic read-modify-write per active lane, in lane order; `dst` gets the old values.
    pub(super) fn atomic(
        &mut self,
        fr: &mut Frame<'_>,
        dst: ValueId,
        a: &AtomicOp,
        m: &Mask,
    ) -> Result<(), Fault> {
        let n = self.n;
        let f = fr.f;
        let ty = f.values[dst.0 as usize].ty;
        let tg = self.target(f, a.array, ty)?;
        let (ib, vb, db) = (
            a.index.0 as usize * n,
            a.value.0 as usize * n,
            dst.0 as usize * n,
        );
        let cb = a.compare.map(|c| c.0 as usize * n);
        let kind = a.kind;
        try_lanes(m, self.nw, |t| {
            let idx = index_of(f, a.index, fr.regs[ib + t]);
            let v = fr.regs[vb + t];
            let c = cb.map_or(0, |cb| fr.regs[cb + t]);
            // A relaxed load is one access whatever the size: a read (global memory is read
            // through Rust atomics anyway), which races with plain writes but not with other
            // threads' atomics.
            let old = if kind == AtomicKind::Load {
                self.access(fr, a.array, tg, ty, t, idx, Access::AtomicRead, |_| None)?
            } else {
                self.access(fr, a.array, tg, ty, t, idx, Access::Atomic, |old| {
                    Some(rmw(kind, ty, old, v, c))
                })?
            };
            fr.regs[db + t] = old;
            Ok(())
        })
    }
}

/// The value an atomic leaves in memory, from the old value, the operand and (CAS) the
/// expected value.
pub(super) fn rmw(kind: AtomicKind, ty: ScalarTy, old: u64, v: u64, cmp: u64) -> u64 {
    macro_rules! int {
        ($T:ty) => {{
            let (o, x) = (<$T>::get(old), <$T>::get(v));
            match kind {
                AtomicKind::Add => o.wrapping_add(x).put(),
                AtomicKind::Sub => o.wrapping_sub(x).put(),
                AtomicKind::And => (o & x).put(),
                AtomicKind::Or => (o | x).put(),
                AtomicKind::Xor => (o ^ x).put(),
                AtomicKind::Min | AtomicKind::NanMin => o.min(x).put(),
                AtomicKind::Max | AtomicKind::NanMax => o.max(x).put(),
                AtomicKind::Exch => v,
                AtomicKind::Inc => (if o >= x { 0 } else { o.wrapping_add(1) }).put(),
                AtomicKind::Dec => (if o == 0 || o > x {
                    x
                } else {
                    o.wrapping_sub(1)
                })
                .put(),
                AtomicKind::Cas => {
                    if old == cmp {
                        v
                    } else {
                        old
                    }
                }
                AtomicKind::Load => old,
            }
        }};
    }
    macro_rules! float {
        ($T:ty) => {{
            let (o, x) = (<$T>::get(old), <$T>::get(v));
            match kind {
                AtomicKind::Add => (o + x).put(),
                AtomicKind::Sub => (o - x).put(),
                AtomicKind::Min => (if x < o { x } else { o }).put(),
                AtomicKind::Max => (if x > o { x } else { o }).put(),
                AtomicKind::NanMin => o.fmin(x).put(),
                AtomicKind::NanMax => o.fmax(x).put(),
                AtomicKind::Exch => v,
                AtomicKind::Cas => {
                    if old == cmp {
                        v
                    } else {
                        old
                    }
                }
                AtomicKind::And | AtomicKind::Or | AtomicKind::Xor => old,
                AtomicKind::Inc | AtomicKind::Dec | AtomicKind::Load => old,
            }
        }};
    }
    match ty {
        ScalarTy::I8 => int!(i8),
        // (The 8-bit floats have no atomics; bytes here.)
        ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => int!(u8),
        ScalarTy::I16 => int!(i16),
        ScalarTy::U16 => int!(u16),
        ScalarTy::I32 => int!(i32),
        ScalarTy::U32 => int!(u32),
        ScalarTy::I64 => int!(i64),
        ScalarTy::U64 => int!(u64),
        ScalarTy::F32 => float!(f32),
        ScalarTy::F64 => float!(f64),
        ScalarTy::F16 => float!(half::f16),
        ScalarTy::BF16 => float!(half::bf16),
        ScalarTy::Bool => match kind {
            AtomicKind::Exch => v,
            _ => old,
        },
    }
}

/// Reads the element in `bytes` and writes `op(old)` if it is `Some`; the old bits.
pub(super) fn update_bits(bytes: &mut [u8], ty: ScalarTy, op: impl Fn(u64) -> Option<u64>) -> u64 {
    let old = read_bits(bytes, ty);
    if let Some(new) = op(old) {
        write_bits(bytes, ty, new);
    }
    old
}

/// A value's bits from memory (little-endian; a bool is a byte, non-zero is true).
pub(super) fn read_bits(b: &[u8], ty: ScalarTy) -> u64 {
    match ty.size() {
        _ if ty == ScalarTy::Bool => (b[0] != 0) as u64,
        1 => b[0] as u64,
        2 => u16::from_le_bytes([b[0], b[1]]) as u64,
        4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
        _ => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

/// Writes a value's bits to memory.
pub(super) fn write_bits(b: &mut [u8], ty: ScalarTy, bits: u64) {
    let size = ty.size();
    b[..size].copy_from_slice(&bits.to_le_bytes()[..size]);
}
