//! Random numbers in kernels.
//!
//! - [`Xoroshiro128p`]: Numba's `numba.cuda.random` generators (xoroshiro128+, one state per
//!   thread in a [`Xoroshiro128pStates`] array made by [`create_xoroshiro128p_states`]), with
//!   Numba's seeding, state layout and conversions: the same seed gives the same numbers as
//!   Numba's `xoroshiro128p_uniform_float32/64` and `xoroshiro128p_normal_float32/64`.
//! - [`Philox`]: the counter-based Philox4x32-10 (cuRAND's default), stateless: numbers are a
//!   function of a seed and a counter, e.g. the element index in an `Elementwise` kernel
//!   (`ops::Index`).
//!
//! Each device function has a host model beside it (`*_host`), used by the tests and usable to
//! check or reproduce a kernel's draws on the CPU.

mod philox;
mod xoroshiro;

pub use philox::{
    philox4x32_10, philox4x32_10_host, philox_uniform2_f64_host, philox_uniform4_f32_host,
    philox_words_host, Philox,
};
#[doc(hidden)]
pub use xoroshiro::numba_reference::{parse as numba_reference_parse, Case as NumbaReferenceCase};
pub use xoroshiro::{
    create_xoroshiro128p_states, xoroshiro128p_states_host, Xoroshiro128p, Xoroshiro128pHost,
    Xoroshiro128pStates,
};
