//! GPU tests of the driver layer. Every test needs a CUDA GPU and is ignored by default:
//! run them with `cargo test --test gpu -- --include-ignored` on a GPU machine.

mod activation;
mod async_copy;
mod atomics;
mod attention;
mod cache;
mod clusters;
mod common;
mod complex;
mod context;
mod contract;
mod enquiry;
mod errors;
mod events;
mod foreign;
mod fp8;
mod graphs;
mod grid;
mod half;
mod half_ops;
mod host_args;
#[cfg(unix)]
mod ipc;
mod kernels;
mod lines;
mod math;
mod matmul;
mod matmul_tune;
mod memory;
mod mma;
mod modules;
mod nan_bits;
mod nan_compares;
mod narrow;
mod narrow_atomics;
mod nccl;
mod ops;
mod peer;
mod pinned;
mod pool;
mod profiler;
mod random;
mod scan;
mod sharded;
mod shared_nd;
mod short_circuit;
mod streams;
mod strided;
#[path = "../support/mod.rs"]
mod support;
mod tensor_map;
mod tma;
mod warp;
mod warps;
mod wgmma;
use support::gen;
