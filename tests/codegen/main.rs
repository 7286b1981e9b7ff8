//! CPU tests of the kernel builder and code generation: every kernel built here is compiled to
//! PTX for sm_75 and sm_90 and checked by ptxas. No GPU needed.

mod async_copy;
mod atomics;
mod attention;
mod basics;
mod cache;
mod clusters;
mod common;
mod complex;
mod contract;
mod device_streams;
mod dynamic_parallelism;
mod early_return;
mod foreign;
mod fp8;
mod grid;
mod half;
mod hopper;
mod lines;
mod math;
mod matmul;
mod mixed_index;
mod mma;
mod narrow;
mod ops;
mod random;
mod shared_nd;
mod strided;
#[path = "../support/mod.rs"]
mod support;
mod texture;
mod warp;
