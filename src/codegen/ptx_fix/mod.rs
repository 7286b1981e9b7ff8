//! Workarounds for miscompilations in NVIDIA's PTX compiler (the driver's JIT and `ptxas`,
//! CUDA 12.9 to 13.5), applied as rewrites of the PTX that LLVM emits. All but the first were
//! found by the differential fuzzer (`examples/fuzz`); `docs/RELIABILITY.md` tells how.
//!
//! One file per workaround, each with its story in its doc comment and a descriptor
//! ([`registry::Workaround`]: id, name, what it fixes, the compilers seen to go wrong, the fuzzer seeds, the
//! tests that cover it, an upstream report, the driver that fixes it):
//!
//! | id | file | what goes wrong |
//! |---|---|---|
//! | 1 | `w01_abs_f32_never_nan.rs` | `abs.f32` assumed never NaN |
//! | 2 | `w02_negated_min_max_operand.rs` | a negated min/max operand dropped; 64-bit `abs` mis-ranged |
//! | 3 | `w03_select_of_bits_one_and_zero.rs` | a select of the bits 1 and 0 taken for 1.0 and 0.0 |
//! | 4 | `w04_minus_one_merged_with_one_f32.rs` | -1 and 1.0f's bits merged into -1 |
//! | 5 | `w05_float_sign_ops_lose_nan_bits.rs` | `neg`/`abs` of a NaN give the canonical NaN |
//! | 6 | `w06_f64_min_max_read_as_int.rs` | an f64 min/max read as an integer loses its comparison |
//! | 7 | `w07_ex2_never_nan.rs` | `ex2.approx` assumed never NaN |
//! | 8 | `w08_min_max_clamp_saturates.rs` | a min-then-max clamp made a saturation |
//! | 9 | `w09_minus_zero_select.rs` | a select of -0.0 and a constant gives +0.0 |
//! | 10 | `w10_bits_to_float_in_loop.rs` | integer bits moved to float in a loop read as numbers |
//! | 11 | `w11_undefined_registers.rs` | a register undefined on one path taken as defined |
//! | 12 | `w12_abs_s32_never_negative.rs` | `abs.s32` assumed never negative |
//! | 13 | `w13_narrow_neg_abs_not_wrapped.rs` | 16-bit `neg`/`abs` of `i16::MIN` not wrapped |
//! | 14 | `w14_narrow_min_max_predicate.rs` | a 16-bit `min`/`max` compared with its operand |
//! | 15 | `w15_volatile_load_taken_as_uniform.rs` | a volatile load in a diverged warp taken as warp-uniform |
//! | 16 | `w16_warp_vote_taken_as_uniform.rs` | a warp vote's result in a diverged warp taken as warp-uniform |
//! | 17 | `w17_uniform_register_updated_twice.rs` | a uniform register updated in place after a join the warp may pass split |
//! | 18 | `w18_split_after_cas_loop.rs` | a warp left split by a compare-and-swap loop, its groups clobbering each other's uniform registers |
//! | 19 | `w19_unoptimised_split_warps.rs` | a warp already split at a compare-and-swap loop, past block barriers: such kernels compiled at -O0 |
//!
//! How they are applied (`registry.rs`): each function of the module is parsed once into typed
//! lines (`ptx.rs`); each active workaround reads that parse, as LLVM wrote it, and proposes
//! edits; a line is rewritten by one workaround at most, the first in [`registry::PRECEDENCE`] that
//! wants it. The active set comes from the driver that will compile the PTX
//! ([`PtxOptions::driver`](super::options::PtxOptions::driver)): a workaround is left out only
//! when that driver is known and at or past the version that fixed it; with no driver known
//! (e.g. `compile_ptx` without a GPU) all apply. The set is part of the compile cache's key.

mod ptx;
mod registry;
#[cfg(test)]
mod tests;
mod w01_abs_f32_never_nan;
mod w02_negated_min_max_operand;
mod w03_select_of_bits_one_and_zero;
mod w04_minus_one_merged_with_one_f32;
mod w05_float_sign_ops_lose_nan_bits;
mod w06_f64_min_max_read_as_int;
mod w07_ex2_never_nan;
mod w08_min_max_clamp_saturates;
mod w09_minus_zero_select;
mod w10_bits_to_float_in_loop;
mod w11_undefined_registers;
mod w12_abs_s32_never_negative;
mod w13_narrow_neg_abs_not_wrapped;
mod w14_narrow_min_max_predicate;
mod w15_volatile_load_taken_as_uniform;
mod w16_warp_vote_taken_as_uniform;
mod w17_uniform_register_updated_twice;
mod w18_split_after_cas_loop;
mod w19_unoptimised_split_warps;

use w01_abs_f32_never_nan as w01;
use w02_negated_min_max_operand as w02;
use w03_select_of_bits_one_and_zero as w03;
use w04_minus_one_merged_with_one_f32 as w04;
use w05_float_sign_ops_lose_nan_bits as w05;
use w06_f64_min_max_read_as_int as w06;
use w07_ex2_never_nan as w07;
use w08_min_max_clamp_saturates as w08;
use w09_minus_zero_select as w09;
use w10_bits_to_float_in_loop as w10;
use w11_undefined_registers as w11;
use w12_abs_s32_never_negative as w12;
use w13_narrow_neg_abs_not_wrapped as w13;
use w14_narrow_min_max_predicate as w14;
use w15_volatile_load_taken_as_uniform as w15;
use w16_warp_vote_taken_as_uniform as w16;
use w17_uniform_register_updated_twice as w17;
use w18_split_after_cas_loop as w18;
use w19_unoptimised_split_warps as w19;

/// The set of workarounds one compilation applies (chosen from the driver version).
pub(crate) use registry::WorkaroundSet;

/// Applies the workarounds of `active` to a whole PTX module's text.
pub(crate) fn work_around_ptxas(ptx: &str, active: WorkaroundSet) -> String {
    registry::apply(ptx, active)
}
