//! A builder kernel's first load in a context: the one path through the caches, in order.
//!
//! Before this path, [`Kernel`](crate::codegen::Kernel) looks in its own per-device slot (the
//! launch's lock-free lookup, filled from here). Then, in [`function`]:
//!
//! 1. **Loaded kernels** ([`loaded`]): a kernel with equal IR and options already loaded in this
//!    context in this process (built again, or by another `Kernel` value) is reused as it is.
//! 2. **The backend's own form**: a backend that executes IR (the simulator) loads it; nothing
//!    is compiled.
//! 3. **The driver's code on disk**: beside a kernel's PTX, the cubin that the driver's JIT made
//!    of it (`<key>.d<driver version>.cubin`; the key already names the compute capability),
//!    so that a new process loads a cached kernel with neither LLVM nor the driver's JIT.
//! 4. **The PTX** ([`ptx`]): from the memory cache, else the disk cache, else compiled by LLVM;
//!    then compiled by the driver's JIT (or joined with its link inputs by the driver's linker;
//!    or by nvJitLink with `CUDAJIT_PTX_COMPILER=nvjitlink`, [`ptx_compiler`]), and the cubin
//!    stored for the next process (nvJitLink's named by its version too,
//!    `<key>.j13x0d….cubin`). Without a disk cache, kernels load as PTX (and the driver's own
//!    JIT cache, `~/.nv/ComputeCache`, serves the reloads).

use std::sync::{Arc, OnceLock};

use super::COUNTERS;
use super::{bump, count_store, disk_cache, key_for, loaded, lookup_or_compile, usable, Key};
use crate::backend::backend;
use crate::codegen::lower;
use crate::codegen::options::PtxOptions;
use crate::codegen::ptx_compiler::{self, PtxCompiler};
use crate::context::Context;
use crate::error::Result;
use crate::ir::FunctionIr;
use crate::module::{Function, Module};

/// The kernel with this IR and these options loaded in `ctx`, through the steps above.
pub(crate) fn function(
    ctx: &Context,
    ir: &Arc<FunctionIr>,
    options: &PtxOptions,
) -> Result<Function> {
    let hash = loaded::hash(ir, options);
    if let Some(f) = loaded::find(hash, ir, options, ctx) {
        bump(&COUNTERS.loaded_hits);
        log!("loaded hit `{}`", ir.name);
        return Ok(f);
    }
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: load module {}", ir.name));
    let module = match ctx.load_kernel_ir(ir)? {
        Some(module) => module,
        None => machine_code(ctx, ir, options)?,
    };
    let f = module.function(&ir.name)?;
    loaded::insert(hash, ir.clone(), options.clone(), f.clone());
    Ok(f)
}

/// The kernel's PTX for `options`: the memory cache, else the disk cache, else LLVM (and then
/// both caches).
pub(crate) fn ptx(ir: &FunctionIr, options: &PtxOptions) -> Result<Arc<str>> {
    ptx_for(key_for(ir, options), ir, options)
}

fn ptx_for(key: Key, ir: &FunctionIr, options: &PtxOptions) -> Result<Arc<str>> {
    // One NVTX range for getting the PTX, found in a cache or compiled.
    let _nvtx = crate::nvtx::op_range(|| format!("cudajit: compile {}", ir.name));
    lookup_or_compile(key, &ir.name, disk_cache(), || {
        lower::ptx(ir, lower::Role::Kernel, options)
    })
}

/// The cubin files' suffix for this driver (`d<version>.cubin`): a newer driver compiles
/// again rather than reusing an older JIT's code.
fn suffix() -> Result<&'static str> {
    static SUFFIX: OnceLock<String> = OnceLock::new();
    if let Some(s) = SUFFIX.get() {
        return Ok(s);
    }
    let v = backend().driver_version()?;
    Ok(SUFFIX.get_or_init(|| format!("d{v}.cubin")))
}

/// Steps 3 and 4: the kernel's machine code loaded in `ctx`.
fn machine_code(ctx: &Context, ir: &FunctionIr, options: &PtxOptions) -> Result<Module> {
    let key = key_for(ir, options);
    let mut links = crate::codegen::extern_fn::links_of(ir);
    // A kernel that launches kernels is linked with the device runtime (`libcudadevrt.a`).
    if crate::ir::device_launch::status_param(ir).is_some() {
        links.push(crate::codegen::device_launch::devrt::link_data(&ir.name)?);
    }
    // Without link inputs or external calls, the PTX loads as itself; else the driver's linker
    // joins them (and names an undefined external function in its error).
    let plain = links.is_empty() && ir.first_extern().is_none();
    // nvJitLink, where it was asked for, compiles kernels without link inputs.
    let jitlink = plain && ptx_compiler::chosen()? == PtxCompiler::NvJitLink;
    let to_cubin = |ptx: &str| -> Result<Vec<u8>> {
        if jitlink {
            ptx_compiler::compile(ctx, &ir.name, ptx)
        } else if plain {
            ctx.ptx_to_cubin(ptx)
        } else {
            crate::codegen::extern_fn::link_cubin(ctx, ir, ptx, &links)
        }
    };
    let load = |ptx: &str| -> Result<Module> {
        if plain && !jitlink {
            ctx.load_ptx(ptx)
        } else {
            ctx.load_cubin(&to_cubin(ptx)?)
        }
    };
    let Some(disk) = disk_cache() else {
        return load(&ptx_for(key, ir, options)?);
    };
    let suffix = if jitlink {
        format!("{}{}", ptx_compiler::cubin_tag()?, suffix()?)
    } else {
        suffix()?.to_string()
    };
    let suffix = suffix.as_str();
    let path = || disk.path_with(&key, suffix);
    if let Some(cubin) = usable(disk.load_bytes(&key, suffix), path) {
        match ctx.load_cubin(&cubin) {
            Ok(m) => {
                bump(&COUNTERS.cubin_hits);
                log!("cubin hit {} `{}`", key.short(), ir.name);
                return Ok(m);
            }
            Err(e) => {
                bump(&COUNTERS.disk_rejected);
                log!("rejected {}: the driver refused it: {e}", path().display());
            }
        }
    }
    let ptx = ptx_for(key, ir, options)?;
    if !disk.is_writable() {
        return load(&ptx);
    }
    let cubin = to_cubin(&ptx)?;
    let module = ctx.load_cubin(&cubin)?;
    count_store(disk, disk.store_bytes(&key, suffix, &cubin));
    Ok(module)
}
