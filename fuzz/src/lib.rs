//! cudajit's differential fuzzer: random well-typed expression trees over every scalar type,
//! operator, cast, bitcast, select and math function, and random statement programs with
//! control flow (variables, if/else, loops with break/continue, early return, device
//! functions), and block programs (`block/`: one thread block with shared memory, barriers,
//! atomics, warp intrinsics and constant memory), run as kernels (on the GPU or the simulator)
//! and compared with a host model in plain Rust; and complex trees (`CExpr<f32>`/`CExpr<f64>`,
//! `ctree*.rs`). Shared by `examples/fuzz.rs` (the command) and `tests/fuzz.rs` (CI's
//! fixed-seed slice on the simulator).

pub mod block;
pub mod check;
pub mod ctree;
pub mod ctree_ew;
pub mod ctree_model;
pub mod ctree_print;
pub mod ctree_run;
pub mod inputs;
pub mod lower;
pub mod model;
pub mod prog;
pub mod prog_lower;
mod prog_min;
pub mod rng;
pub mod tree;
