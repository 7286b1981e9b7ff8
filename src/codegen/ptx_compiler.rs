//! Which compiler turns a builder kernel's PTX into machine code: the driver's JIT (the
//! default, all cudajit needs), or NVIDIA's nvJitLink (`libnvJitLink.so`: the toolkit's PTX
//! compiler as a library) with `CUDAJIT_PTX_COMPILER=nvjitlink`.
//!
//! nvJitLink is found as libdevice and the device runtime are: `CUDAJIT_NVJITLINK`, the CUDA
//! toolkit's library directories, the `nvidia-nvjitlink-cu12` / `nvidia-nvjitlink` (CUDA 13)
//! wheels in site-packages (PyTorch installs one), then `python3` (`CUDAJIT_NO_PYTHON=1` turns
//! that off); `CUDAJIT_LOG_LOAD=1` prints what was chosen. Asked for and missing, loading a
//! kernel is an error that says what to install. Kernels with link inputs (external device code,
//! the device runtime) stay with the driver's linker.
//!
//! What it is for: a compiler newer than the driver's (several driver-JIT bugs that
//! `codegen::ptx_fix` works around are fixed in later toolkits), and comparing the two. On an
//! H100 (driver 580.159, nvJitLink 13.0.88) both gave the same speed on the attention and bf16
//! GEMM benchmark rows.

use std::ffi::CString;
use std::sync::OnceLock;

use cudajit_sys::load_log::LoadLog;
use cudajit_sys::lookup::Lookup;
use cudajit_sys::nvjitlink::NvJitLink;

use crate::codegen::file_search::{self, Found, Wanted};
use crate::context::Context;
use crate::error::{Error, Result};

/// The variable that picks the compiler: `driver` (or unset) or `nvjitlink`.
pub const ENV_COMPILER: &str = "CUDAJIT_PTX_COMPILER";
/// The variable naming `libnvJitLink.so`.
pub const ENV_PATH: &str = "CUDAJIT_NVJITLINK";

/// Where the library may be.
const WANTED: Wanted = Wanted {
    env: ENV_PATH,
    file: "libnvJitLink.so",
    in_cuda: &[
        "lib64/libnvJitLink.so",
        "lib64/libnvJitLink.so.13",
        "lib64/libnvJitLink.so.12",
        "targets/x86_64-linux/lib/libnvJitLink.so",
        "targets/sbsa-linux/lib/libnvJitLink.so",
    ],
    usual: &[],
    in_wheel: &[
        "nvidia/cu13/lib/libnvJitLink.so.13",
        "nvidia/nvjitlink/lib/libnvJitLink.so.13",
        "nvidia/nvjitlink/lib/libnvJitLink.so.12",
    ],
    in_nvidia: &[
        "cu13/lib/libnvJitLink.so.13",
        "nvjitlink/lib/libnvJitLink.so.13",
        "nvjitlink/lib/libnvJitLink.so.12",
    ],
};

/// What to do when nvJitLink is asked for and missing.
const HOW_TO_INSTALL: &str = "install it (`pip install nvidia-nvjitlink-cu12`, or \
    `nvidia-nvjitlink` for CUDA 13; PyTorch's CUDA wheels bring one) or a CUDA toolkit, set \
    CUDAJIT_NVJITLINK to the absolute path of libnvJitLink.so, or unset CUDAJIT_PTX_COMPILER \
    to use the driver's JIT (CUDAJIT_LOG_LOAD=1 shows where cudajit looked)";

/// The compiler of PTX to machine code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PtxCompiler {
    /// The driver's JIT (`cuModuleLoadData`, `cuLink*`).
    Driver,
    /// nvJitLink.
    NvJitLink,
}

/// The compiler `value` (of [`ENV_COMPILER`]) names; an error for anything else.
fn parse(value: Option<&str>) -> std::result::Result<PtxCompiler, String> {
    match value.map(str::trim) {
        None | Some("") | Some("driver") => Ok(PtxCompiler::Driver),
        Some("nvjitlink") => Ok(PtxCompiler::NvJitLink),
        Some(other) => Err(format!(
            "{ENV_COMPILER}={other}: not a PTX compiler cudajit knows (`driver`, the default, \
             or `nvjitlink`)"
        )),
    }
}

/// This process's choice, read once.
pub(crate) fn chosen() -> Result<PtxCompiler> {
    static CHOSEN: OnceLock<std::result::Result<PtxCompiler, String>> = OnceLock::new();
    CHOSEN
        .get_or_init(|| parse(std::env::var(ENV_COMPILER).ok().as_deref()))
        .clone()
        .map_err(Error::Usage)
}

/// This process's nvJitLink, found and loaded once.
fn library() -> std::result::Result<&'static NvJitLink, String> {
    static LIB: OnceLock<std::result::Result<NvJitLink, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lookup = Lookup::process();
        let mut log = LoadLog::from_process("nvJitLink");
        let path = match file_search::find(&WANTED, &lookup, &mut log)? {
            Found::Nothing => {
                return Err(format!("nvJitLink was not found: {HOW_TO_INSTALL}"));
            }
            Found::Override(p) | Found::Searched(p) => p,
        };
        NvJitLink::open(&path).map_err(|e| format!("{e}: {HOW_TO_INSTALL}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The cubin files' suffix part that names nvJitLink's version (`j13x0`), so that cubins of
/// the two compilers, or of two nvJitLink versions, never stand in for each other.
pub(crate) fn cubin_tag() -> Result<String> {
    let lib = library().map_err(Error::Usage)?;
    let (major, minor) = lib.version();
    Ok(format!("j{major}x{minor}"))
}

/// The `-arch` option for `ptx` on `ctx`'s device: `sm_XY`, with the `a` of an
/// architecture-specific target (`.target sm_90a`) kept.
fn arch(ctx: &Context, ptx: &str) -> Result<String> {
    let (major, minor) = ctx.device().compute_capability()?;
    let specific = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split(',').next())
        .is_some_and(|t| t.trim().ends_with('a'));
    Ok(format!(
        "-arch=sm_{major}{minor}{}",
        if specific { "a" } else { "" }
    ))
}

/// Kernel `kernel`'s PTX compiled to a cubin for `ctx`'s device by nvJitLink.
pub(crate) fn compile(ctx: &Context, kernel: &str, ptx: &str) -> Result<Vec<u8>> {
    let lib = library().map_err(Error::Usage)?;
    let arch = CString::new(arch(ctx, ptx)?).expect("no NUL in an -arch option");
    let text =
        CString::new(ptx).map_err(|_| Error::usage("PTX text must not contain NUL bytes"))?;
    let (major, minor) = lib.version();
    // Workaround 19's hint: the module must be compiled without optimisation.
    let o0 = c"-O0";
    let mut opts: Vec<&std::ffi::CStr> = vec![arch.as_c_str()];
    if crate::backend::jit_hint::ptx_opt_level(ptx.as_bytes()) == Some(0) {
        opts.push(o0);
    }
    let out = lib.compile_ptx(&text, &opts).map_err(|e| Error::Kernel {
        kernel: kernel.to_string(),
        message: format!(
            "nvJitLink {major}.{minor} could not compile the kernel's PTX ({}): {e}; unset \
             {ENV_COMPILER} to use the driver's JIT",
            arch.to_string_lossy()
        ),
    })?;
    if !out.info_log.is_empty() {
        log::debug!("nvJitLink on `{kernel}`: {}", out.info_log);
    }
    Ok(out.cubin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_reads_driver_nvjitlink_or_refuses() {
        assert_eq!(parse(None), Ok(PtxCompiler::Driver));
        assert_eq!(parse(Some("")), Ok(PtxCompiler::Driver));
        assert_eq!(parse(Some("driver")), Ok(PtxCompiler::Driver));
        assert_eq!(parse(Some("nvjitlink")), Ok(PtxCompiler::NvJitLink));
        let err = parse(Some("ptxas")).unwrap_err();
        assert!(err.contains("CUDAJIT_PTX_COMPILER=ptxas"), "{err}");
        assert!(err.contains("`nvjitlink`"), "{err}");
    }

    #[test]
    fn the_wheels_and_toolkits_are_searched_for_it() {
        let none = |_: &mut LoadLog| -> Vec<std::path::PathBuf> { Vec::new() };
        let site = |_: &mut LoadLog| vec![std::path::PathBuf::from("/venv/site-packages")];
        let var = |_: &str| None;
        let is = |p: &std::path::Path| {
            p == std::path::Path::new("/venv/site-packages/nvidia/cu13/lib/libnvJitLink.so.13")
        };
        let lookup = Lookup {
            var: &var,
            is_file: &is,
            site_packages: &site,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("nvJitLink", false);
        assert_eq!(
            file_search::find(&WANTED, &lookup, &mut log),
            Ok(Found::Searched(
                "/venv/site-packages/nvidia/cu13/lib/libnvJitLink.so.13".into()
            ))
        );
    }
}
