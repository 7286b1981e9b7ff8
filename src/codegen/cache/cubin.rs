//! The driver's compiled code on disk: beside a kernel's PTX, the cubin that the driver's JIT
//! made of it (`<key>.d<driver version>.cubin`; the key already names the compute
//! capability), so that a new process loads a cached kernel with neither LLVM nor the
//! driver's JIT. Without a disk cache, kernels load as PTX (and the driver's own JIT cache,
//! `~/.nv/ComputeCache`, serves the reloads).

use std::sync::{Arc, OnceLock};

use super::{bump, disk_cache, key_for, usable, COUNTERS};
use crate::backend::backend;
use crate::codegen::options::PtxOptions;
use crate::context::Context;
use crate::error::Result;
use crate::ir::FunctionIr;
use crate::module::Module;

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

/// Loads the kernel with this IR and options in `ctx`: its cubin from the disk cache, else
/// its PTX (from `ptx`: the memory or disk cache, or LLVM) compiled by the driver's linker,
/// with the cubin stored for the next process.
pub(crate) fn load_module(
    ctx: &Context,
    ir: &FunctionIr,
    options: &PtxOptions,
    ptx: impl FnOnce() -> Result<Arc<str>>,
) -> Result<Module> {
    let links = crate::codegen::extern_fn::links_of(ir);
    // Without link inputs or external calls, the PTX loads as itself; else the driver's linker
    // joins them (and names an undefined external function in its error).
    let plain = links.is_empty() && ir.first_extern().is_none();
    let load = |ptx: &str| -> Result<Module> {
        if plain {
            ctx.load_ptx(ptx)
        } else {
            ctx.load_cubin(&crate::codegen::extern_fn::link_cubin(
                ctx, ir, ptx, &links,
            )?)
        }
    };
    let Some(disk) = disk_cache() else {
        return load(&ptx()?);
    };
    let key = key_for(ir, options);
    let suffix = suffix()?;
    let c = &COUNTERS;
    let path = || disk.path_with(&key, suffix);
    if let Some(cubin) = usable(disk.load_bytes(&key, suffix), path) {
        match ctx.load_cubin(&cubin) {
            Ok(m) => {
                bump(&c.cubin_hits);
                log!("cubin hit {} `{}`", key.short(), ir.name);
                return Ok(m);
            }
            Err(e) => {
                bump(&c.disk_rejected);
                log!("rejected {}: the driver refused it: {e}", path().display());
            }
        }
    }
    let ptx = ptx()?;
    if !disk.is_writable() {
        return load(&ptx);
    }
    let cubin = if plain {
        ctx.ptx_to_cubin(&ptx)?
    } else {
        crate::codegen::extern_fn::link_cubin(ctx, ir, &ptx, &links)?
    };
    let module = ctx.load_cubin(&cubin)?;
    super::count_store(disk, disk.store_bytes(&key, suffix, &cubin));
    Ok(module)
}
