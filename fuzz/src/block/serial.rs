//! The atomics' model: each operation's effect in plain Rust, and the check that the old
//! values the device returned fit some order of the operations.
//!
//! The threads of a block run their atomics on one word in an order the hardware chooses, so
//! the model does not predict each old value; it checks them. Every operation is a function
//! `new = f(old, operand)` (add, sub, and, or, xor, min, max, nanmin, nanmax, exch, cas, inc,
//! dec alike), so an operation that returned `old` is an edge `old -> f(old, operand)` between
//! word values. A serialisation of the phase's operations (each thread does at most one on a
//! word per phase, so program order adds no constraint) is a walk from the word's value at the
//! start of the phase that takes every edge once: an Eulerian trail from that value. One
//! exists iff every value has as many edges in as out, except that the start may have one
//! more out and one other value (the end) one more in, and every edge is connected to the
//! start. The end is then the only value the word can hold after the phase, which the next
//! phase starts from and the final read must show.
//!
//! This one rule covers the per-operation checks one would write by hand: for add, the olds
//! are the prefix sums of some order of the operands (and the final value the sum of all, in
//! any order); for exch, the olds and the final value are a permutation of the initial value
//! and the written ones; for cas, the successful swaps form a chain from the initial value
//! and every failed one saw a value of that chain; for min/max/and/or the olds are the
//! running results of some order. Float adds run on small dyadic values (sums exact, so the
//! final value is the same in every order) and each step is still modelled with the type's
//! rounding.

use std::collections::HashMap;

use cudajit::{bf16, f16};

use super::{AOp, ATy};

/// One atomic operation as it ran: its kind, operand and expected value (bits of the
/// target's type; `cmp` only for cas) and the old value the device returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub op: AOp,
    pub v: u64,
    pub cmp: u64,
    pub old: u64,
    /// The thread that ran it.
    pub thread: u32,
}

fn float_of(ty: ATy, b: u64) -> f64 {
    match ty {
        ATy::F16 => f16::from_bits(b as u16).to_f64(),
        ATy::BF16 => bf16::from_bits(b as u16).to_f64(),
        ATy::F32 => f32::from_bits(b as u32) as f64,
        _ => f64::from_bits(b),
    }
}

fn float_bits(ty: ATy, x: f64) -> u64 {
    match ty {
        ATy::F16 => f16::from_f64(x).to_bits() as u64,
        ATy::BF16 => bf16::from_f64(x).to_bits() as u64,
        ATy::F32 => (x as f32).to_bits() as u64,
        _ => x.to_bits(),
    }
}

/// The integer value of bits `b` of an integer type (sign-extended for signed types).
fn int_of(ty: ATy, b: u64) -> i128 {
    let b = b & ty.mask();
    if ty.is_signed() && b >> (ty.bits() - 1) & 1 == 1 {
        b as i128 - (1i128 << ty.bits())
    } else {
        b as i128
    }
}

/// The word's new bits after `op` with operand `v` (and expected `cmp`) on `old`, as the
/// builder documents it (docs/GUIDE.md "Atomics", `src/codegen/atomics.rs`).
pub fn apply(ty: ATy, op: AOp, old: u64, v: u64, cmp: u64) -> u64 {
    let m = ty.mask();
    let (old, v, cmp) = (old & m, v & m, cmp & m);
    let r = match op {
        AOp::Exch => v,
        AOp::Cas => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        _ if ty.is_float() => {
            let (a, b) = (float_of(ty, old), float_of(ty, v));
            match op {
                AOp::Add => float_add(ty, a, b),
                AOp::Sub => float_add(ty, a, -b),
                // numba's min/max: a NaN in memory stays, a NaN operand changes nothing, and
                // an equal value (±0) does not replace the word.
                AOp::Min => {
                    if b < a {
                        v
                    } else {
                        old
                    }
                }
                AOp::Max => {
                    if b > a {
                        v
                    } else {
                        old
                    }
                }
                // IEEE minNum/maxNum, -0 below +0.
                AOp::NanMin | AOp::NanMax => {
                    let max = op == AOp::NanMax;
                    if a.is_nan() {
                        v
                    } else if b.is_nan() {
                        old
                    } else {
                        let b_lower = b < a || (a == b && b.is_sign_negative());
                        if b_lower != max {
                            v
                        } else {
                            old
                        }
                    }
                }
                _ => old,
            }
        }
        _ => {
            let (a, b) = (int_of(ty, old), int_of(ty, v));
            let r = match op {
                AOp::Add => a.wrapping_add(b),
                AOp::Sub => a.wrapping_sub(b),
                AOp::And => a & b,
                AOp::Or => a | b,
                AOp::Xor => a ^ b,
                AOp::Min | AOp::NanMin => a.min(b),
                AOp::Max | AOp::NanMax => a.max(b),
                AOp::Inc => {
                    if old >= v {
                        0
                    } else {
                        old as i128 + 1
                    }
                }
                AOp::Dec => {
                    if old == 0 || old > v {
                        v as i128
                    } else {
                        old as i128 - 1
                    }
                }
                AOp::Exch | AOp::Cas => unreachable!("handled above"),
            };
            r as u64
        }
    };
    r & m
}

/// `a + b` rounded once to the type (f32: the sum of two f32 is exact in f64 only if close in
/// magnitude, which the dyadic operands are; `atom.add.f32` flushes subnormals, which they
/// never are).
fn float_add(ty: ATy, a: f64, b: f64) -> u64 {
    match ty {
        ATy::F32 => ((a as f32) + (b as f32)).to_bits() as u64,
        ATy::F64 => (a + b).to_bits(),
        _ => float_bits(ty, a + b),
    }
}

/// A value of the type, for messages (`-1.5f32`, `200u8`).
pub fn show(ty: ATy, b: u64) -> String {
    if ty.is_float() {
        let x = float_of(ty, b);
        if x.is_nan() {
            format!("NaN({b:#x})")
        } else {
            format!("{x:?}{}", ty.name())
        }
    } else {
        format!("{}{}", int_of(ty, b), ty.name())
    }
}

/// The value the word holds after `ops` (run in some order from `init`), or why the olds fit
/// no order.
pub fn serialise(ty: ATy, init: u64, ops: &[Op]) -> Result<u64, String> {
    let init = init & ty.mask();
    if ops.is_empty() {
        return Ok(init);
    }
    let mut diff: HashMap<u64, i64> = HashMap::new();
    let mut parent: HashMap<u64, u64> = HashMap::new();
    fn find(p: &mut HashMap<u64, u64>, x: u64) -> u64 {
        let mut r = x;
        while let Some(&q) = p.get(&r) {
            if q == r {
                break;
            }
            r = q;
        }
        p.insert(x, r);
        r
    }
    parent.insert(init, init);
    for o in ops {
        let old = o.old & ty.mask();
        let new = apply(ty, o.op, old, o.v, o.cmp);
        *diff.entry(old).or_default() += 1;
        *diff.entry(new).or_default() -= 1;
        parent.entry(old).or_insert(old);
        parent.entry(new).or_insert(new);
        let (ra, rb) = (find(&mut parent, old), find(&mut parent, new));
        parent.insert(ra, rb);
    }
    let why = |what: String| {
        let list: Vec<String> = ops
            .iter()
            .map(|o| {
                let c = if o.op == AOp::Cas {
                    format!(" expecting {}", show(ty, o.cmp))
                } else {
                    String::new()
                };
                format!(
                    "thread {}: {}({}{c}) returned {}",
                    o.thread,
                    o.op.name(),
                    show(ty, o.v),
                    show(ty, o.old)
                )
            })
            .collect();
        format!(
            "no order of the {} atomics fits their old values ({what}); from {}: {}",
            ops.len(),
            show(ty, init),
            list.join("; ")
        )
    };
    let root = find(&mut parent, init);
    let keys: Vec<u64> = parent.keys().copied().collect();
    for k in keys {
        if find(&mut parent, k) != root {
            return Err(why(format!("{} is never reached", show(ty, k))));
        }
    }
    let (mut start, mut end) = (None, None);
    for (&x, &d) in &diff {
        match d {
            0 => {}
            1 if start.is_none() => start = Some(x),
            -1 if end.is_none() => end = Some(x),
            _ => return Err(why(format!("{} is left or reached too often", show(ty, x)))),
        }
    }
    match (start, end) {
        (None, None) if diff.contains_key(&init) => Ok(init),
        (Some(s), Some(e)) if s == init => Ok(e),
        _ => Err(why(
            "the first operation did not see the initial value".into()
        )),
    }
}
