//! Kernels written in Rust: a typed expression builder, lowered to LLVM IR and compiled to PTX
//! by LLVM's NVPTX backend at run time, then loaded and launched with typed arguments.
//!
//! ```no_run
//! use cudajit::prelude::*;
//! use cudajit::codegen::{Kernel, PtxOptions};
//!
//! # fn main() -> cudajit::Result<()> {
//! let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add", |k, (x, y, out)| {
//!     let i = k.grid1();
//!     k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
//! })?;
//! println!("{}", add.compile_ptx(&PtxOptions::for_cc(9, 0))?);
//! # Ok(())
//! # }
//! ```

mod array;
pub mod async_copy;
pub(crate) mod atomics;
mod atomics_narrow;
mod builder;
pub(crate) mod cache;
pub(crate) mod complex;
mod const_mem;
mod control;
mod debug_info;
mod device_fn;
pub mod device_launch;
mod divergence;
mod expr;
mod expr_mixed;
pub(crate) mod extern_fn;
mod file_search;
mod grid_sync;
pub mod hopper;
mod host_args;
mod kernel;
pub mod ldmatrix;
mod lower;
mod lower_half;
pub(crate) mod math;
pub mod mma;
mod options;
pub(crate) mod printf;
pub(crate) mod ptx_compiler;
mod ptx_fix;
mod scalar;
mod signature;
pub(crate) mod srcloc;
mod strided;
mod texture;
mod texture_lower;
mod timer;
pub(crate) mod warp;

pub use atomics::*;

pub use async_copy::CpAsyncSrc;
pub use hopper::{
    Mbarriers, SmemMatrix, Tma, TmaDesc, TmaMut, WgmmaAcc, WgmmaInput, WgmmaMajor, WgmmaSwizzle,
};
pub use ldmatrix::{LdMatrixElem, LdMatrixSrc};
pub use mma::{FragA, FragB, FragC, MmaInput};
pub use warp::*;

pub use array::{DArray, Index, NdMut, NdRef, ReadOnly, ReadWrite, Slice, SliceMut};
pub use cache::{cache_dir, cache_stats, clear_cache, clear_memory_cache, CacheStats};
pub use complex::{host as complex_host, CExpr, CSlice, CSliceMut, ComplexPart};
pub use const_mem::MAX_CONST_BYTES;
pub use control::{KernelBuilder, Xyz};
pub use device_fn::{DeviceFn, DeviceParams};
pub use device_launch::{CreatedStream, DeviceArgFor, DeviceArgs, DeviceDim3, DeviceStream};
pub use expr::{select, Expr, Operand, Var};
pub use extern_fn::ExternDeviceFn;
pub use host_args::set_host_array_warnings;
pub(crate) use host_args::warn_once as warn_host_arrays_once;
pub(crate) use kernel::check_name as check_kernel_name;
pub use kernel::Kernel;
pub use math::libdevice_path;
pub use options::{default_cc, PtxOptions};
pub use printf::PrintfArg;
pub use scalar::{Float, Int, Num, Scalar, ScalarTy, Signed};
pub(crate) use signature::declare_scalar_param;
pub use signature::{ArgBuffer, ArgFor, KernelParam, KernelParams, KernelScalar, LaunchArgs};
pub use strided::{DStrided, NdStrided, NdStridedMut};
pub use texture::{
    LayeredTexHandle, SurfHandle, Surface, Surface1d, Surface2d, Surface3d, TexHandle, Texture,
    Texture1d, Texture1dLayered, Texture2d, Texture2dLayered, Texture3d, TextureLayered,
};
