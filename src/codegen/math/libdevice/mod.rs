//! Finding NVIDIA's libdevice (`libdevice.10.bc`, the search in [`search`]) and linking the
//! functions a module uses.
//!
//! The bitcode is read once per process and kept in memory; each module that calls `__nv_*`
//! functions parses it into its own LLVM context, keeps only the functions it needs (and what
//! they call), links them in with internal linkage and sets `nvvm-reflect-ftz`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use inkwell::attributes::AttributeLoc;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{FlagBehavior, Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;

use super::super::options::PtxOptions;

mod search;

/// The environment variable naming a libdevice bitcode file.
pub(crate) const ENV_PATH: &str = "CUDAJIT_LIBDEVICE";
/// The environment variable that, set to anything but `0` or empty, makes cudajit use its own
/// math implementations even where libdevice is installed.
pub(crate) const ENV_DISABLE: &str = "CUDAJIT_NO_LIBDEVICE";

/// libdevice as found on this machine.
pub(crate) struct Libdevice {
    pub path: PathBuf,
    /// The file's size when found (for the compile cache's key).
    pub len: u64,
    /// The file's contents, read on first use.
    bytes: OnceLock<Result<Vec<u8>, String>>,
}

impl Libdevice {
    /// The bitcode (read once per process).
    pub(crate) fn bytes(&self) -> Result<&[u8], String> {
        self.bytes
            .get_or_init(|| {
                std::fs::read(&self.path)
                    .map_err(|e| format!("cannot read libdevice at {}: {e}", self.path.display()))
            })
            .as_deref()
            .map_err(Clone::clone)
    }
}

/// Whether `CUDAJIT_NO_LIBDEVICE` asks for cudajit's own implementations (read at every
/// compile: cheap, and lets tests switch paths in a child process).
pub(crate) fn disabled() -> bool {
    std::env::var_os(ENV_DISABLE).is_some_and(|v| !v.is_empty() && v != "0")
}

/// libdevice, unless disabled: `Ok(None)` when it is not installed, an error when
/// `CUDAJIT_LIBDEVICE` names a file that cannot be read.
pub(crate) fn get() -> Result<Option<&'static Libdevice>, String> {
    if disabled() {
        return Ok(None);
    }
    static FOUND: OnceLock<Result<Option<Libdevice>, String>> = OnceLock::new();
    match FOUND.get_or_init(discover) {
        Ok(found) => Ok(found.as_ref()),
        Err(e) => Err(e.clone()),
    }
}

fn read(path: PathBuf) -> Result<Libdevice, String> {
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(Libdevice {
            path,
            len: m.len(),
            bytes: OnceLock::new(),
        }),
        Ok(_) => Err(format!("libdevice at {} is not a file", path.display())),
        Err(e) => Err(format!("cannot read libdevice at {}: {e}", path.display())),
    }
}

fn discover() -> Result<Option<Libdevice>, String> {
    let lookup = cudajit_sys::lookup::Lookup::process();
    let mut log = cudajit_sys::load_log::LoadLog::from_process("libdevice");
    match search::find(&lookup, &mut log)? {
        search::Found::Override(p) => read(p)
            .map(Some)
            .map_err(|e| format!("{e} (from {ENV_PATH})")),
        search::Found::Searched(p) => Ok(read(p).ok()),
        search::Found::Nothing => Ok(None),
    }
}

/// Links the libdevice functions in `wanted` that `module` does not define yet, with whatever
/// they call, as internal functions; sets `nvvm-reflect-ftz` (1 with fastmath).
pub(crate) fn link<'c>(
    ctx: &'c Context,
    module: &Module<'c>,
    wanted: &HashSet<String>,
    opts: &PtxOptions,
) -> Result<(), String> {
    let missing: HashSet<&str> = wanted
        .iter()
        .map(String::as_str)
        .filter(|n| {
            module
                .get_function(n)
                .map_or(true, |f| f.as_global_value().is_declaration())
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let ld = pruned(ctx, module, &missing, opts)?;
    module
        .link_in_module(ld)
        .map_err(|e| format!("linking libdevice: {e}"))?;
    for name in &missing {
        if let Some(f) = module.get_function(name) {
            f.set_linkage(Linkage::Internal);
        }
    }
    if module.get_flag("nvvm-reflect-ftz").is_none() {
        module.add_basic_value_flag(
            "nvvm-reflect-ftz",
            FlagBehavior::Override,
            ctx.i32_type().const_int(opts.fastmath as u64, false),
        );
    }
    Ok(())
}

/// libdevice parsed into `ctx`, cut down to `missing` and what they call. Parsing all of
/// libdevice takes ~20 ms, so the cut-down module's bitcode is kept per set of functions (and
/// fastmath) for the rest of the process: the next kernel with the same functions parses a few
/// kilobytes instead.
fn pruned<'c>(
    ctx: &'c Context,
    module: &Module<'c>,
    missing: &HashSet<&str>,
    opts: &PtxOptions,
) -> Result<Module<'c>, String> {
    type Cache = Mutex<HashMap<String, Arc<Vec<u8>>>>;
    static PRUNED: OnceLock<Cache> = OnceLock::new();
    let mut names: Vec<&str> = missing.iter().copied().collect();
    names.sort_unstable();
    let key = format!("{}|{}", opts.fastmath, names.join(","));
    let cache = PRUNED.get_or_init(Default::default);
    let hit = cache.lock().get(&key).cloned();
    if let Some(bc) = hit {
        let buf = MemoryBuffer::create_from_memory_range_copy(&bc, "libdevice");
        let ld = Module::parse_bitcode_from_buffer(&buf, ctx)
            .map_err(|e| format!("cannot parse cached libdevice functions: {e}"))?;
        ld.set_triple(&module.get_triple());
        ld.set_data_layout(&module.get_data_layout());
        return Ok(ld);
    }
    let lib = get()?.ok_or_else(|| "libdevice is not available".to_string())?;
    let buf = MemoryBuffer::create_from_memory_range(lib.bytes()?, "libdevice");
    let ld = Module::parse_bitcode_from_buffer(&buf, ctx)
        .map_err(|e| format!("cannot parse libdevice {}: {e}", lib.path.display()))?;
    drop(buf);
    ld.set_triple(&module.get_triple());
    ld.set_data_layout(&module.get_data_layout());
    // Keep only what the module needs: everything else internal, then global DCE.
    for f in ld.get_functions() {
        let name = f.get_name().to_str().unwrap_or("");
        if !f.as_global_value().is_declaration() && !missing.contains(name) {
            f.set_linkage(Linkage::Internal);
        }
    }
    for g in ld.get_globals() {
        if !g.is_declaration() {
            g.set_linkage(Linkage::Internal);
        }
    }
    for name in missing {
        if ld.get_function(name).is_none() {
            return Err(format!("libdevice {} has no `{name}`", lib.path.display()));
        }
    }
    let tm = target_machine(opts)?;
    ld.run_passes("globaldce", &tm, PassBuilderOptions::create())
        .map_err(|e| format!("pruning libdevice: {e}"))?;
    if opts.fastmath {
        // Same denormal mode as the kernel's functions, or LLVM refuses to inline them.
        for f in ld.get_functions() {
            if !f.as_global_value().is_declaration() {
                f.add_attribute(
                    AttributeLoc::Function,
                    ctx.create_string_attribute(
                        "denormal-fp-math-f32",
                        "preserve-sign,preserve-sign",
                    ),
                );
            }
        }
    }
    let bc = ld.write_bitcode_to_memory();
    cache.lock().insert(key, Arc::new(bc.as_slice().to_vec()));
    Ok(ld)
}

/// A target machine for running the pruning pass on the libdevice module.
fn target_machine(opts: &PtxOptions) -> Result<TargetMachine, String> {
    crate::codegen::lower::init_nvptx()?;
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let (m, n) = opts.sm();
    target
        .create_target_machine(
            &triple,
            &format!("sm_{m}{n}"),
            "",
            OptimizationLevel::None,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| "LLVM could not create an NVPTX target machine".to_string())
}
