//! The simulator's global memory accesses: every load, store and atomic on device memory goes
//! through Rust atomics, so that blocks running on several host threads at once never race in
//! Rust's sense (relaxed loads and stores compile to plain moves), and read-modify-writes are
//! real atomic operations across blocks.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::ir::ScalarTy;

// SAFETY (each function): the caller passes the address of a live, element-aligned value of
// type `ty` in simulator memory (allocated by the simulator with at least 256-byte alignment,
// so every naturally aligned element address is valid for an atomic of its size).

/// Loads a value's bits.
pub(super) unsafe fn load(addr: u64, ty: ScalarTy) -> u64 {
    // SAFETY: see above.
    unsafe {
        match ty.size() {
            1 if ty == ScalarTy::Bool => {
                ((*(addr as *const AtomicU8)).load(Ordering::Relaxed) != 0) as u64
            }
            1 => (*(addr as *const AtomicU8)).load(Ordering::Relaxed) as u64,
            2 => (*(addr as *const AtomicU16)).load(Ordering::Relaxed) as u64,
            4 => (*(addr as *const AtomicU32)).load(Ordering::Relaxed) as u64,
            _ => (*(addr as *const AtomicU64)).load(Ordering::Relaxed),
        }
    }
}

/// Stores a value's bits.
pub(super) unsafe fn store(addr: u64, ty: ScalarTy, bits: u64) {
    // SAFETY: see above.
    unsafe {
        match ty.size() {
            1 if ty == ScalarTy::Bool => {
                (*(addr as *const AtomicU8)).store((bits & 1) as u8, Ordering::Relaxed)
            }
            1 => (*(addr as *const AtomicU8)).store(bits as u8, Ordering::Relaxed),
            2 => (*(addr as *const AtomicU16)).store(bits as u16, Ordering::Relaxed),
            4 => (*(addr as *const AtomicU32)).store(bits as u32, Ordering::Relaxed),
            _ => (*(addr as *const AtomicU64)).store(bits, Ordering::Relaxed),
        }
    }
}

/// Atomically replaces the value with `op(old)` and returns the old bits (`None` for `bool`,
/// which has no atomics). 8- and 16-bit values are updated with 8- and 16-bit host atomics:
/// the same results as the GPU's compare-and-swap loop on the containing 32-bit word.
pub(super) unsafe fn update(
    addr: u64,
    ty: ScalarTy,
    op: &dyn Fn(u64) -> Option<u64>,
) -> Option<u64> {
    let seq = Ordering::SeqCst;
    // SAFETY: see above.
    unsafe {
        match ty.size() {
            _ if ty == ScalarTy::Bool => None,
            1 => {
                let a = &*(addr as *const AtomicU8);
                let r = a.fetch_update(seq, seq, |o| op(o as u64).map(|v| v as u8));
                Some(r.unwrap_or_else(|o| o) as u64)
            }
            2 => {
                let a = &*(addr as *const AtomicU16);
                let r = a.fetch_update(seq, seq, |o| op(o as u64).map(|v| v as u16));
                Some(r.unwrap_or_else(|o| o) as u64)
            }
            4 => {
                let a = &*(addr as *const AtomicU32);
                let r = a.fetch_update(seq, seq, |o| op(o as u64).map(|v| v as u32));
                Some(r.unwrap_or_else(|o| o) as u64)
            }
            8 => {
                let a = &*(addr as *const AtomicU64);
                Some(a.fetch_update(seq, seq, op).unwrap_or_else(|o| o))
            }
            _ => None,
        }
    }
}
