// Test support shared by the test crates (`#[path = "../support/mod.rs"] mod support;` in
// tests/gpu and tests/codegen, `#[path = "support/mod.rs"]` in the single-file test crates):
// the fixtures, the random generator and a generator of special values per scalar type,
// re-running a test in a child process, the ptxas finder, kernels that more than one crate
// checks (their PTX in tests/codegen, their results in tests/gpu), and the host model of the
// tensor cores' MMA. Each crate uses part of it, hence the `allow`; no inner doc comment, as the
// library's unit tests `include!` fixtures.rs.
#![allow(dead_code)]

pub mod child;
pub mod fixtures;
pub mod gen;
pub mod kernels;
pub mod mma_model;
pub mod ptxas;
pub mod rng;
pub mod tex_model;
