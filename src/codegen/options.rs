//! Compilation options (numba's `compile_ptx` options).

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use super::ptx_fix::WorkaroundSet;
use crate::context::DriverVersion;

pub use crate::ir::default_cc;

/// Whether `CUDAJIT_LINEINFO` asks for line information by default (`1`, `true`, `on`,
/// `yes`).
fn lineinfo_from_env() -> bool {
    std::env::var("CUDAJIT_LINEINFO").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    })
}

/// The installed driver's CUDA version, read once per process (a driver does not change under
/// a running process, and options made for it must stay equal); an error is not kept.
pub(crate) fn installed_driver() -> crate::Result<DriverVersion> {
    static VERSION: OnceLock<DriverVersion> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let v = crate::driver_version()?;
    Ok(*VERSION.get_or_init(|| v))
}

/// How to compile a kernel to PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxOptions {
    /// Target compute capability (major, minor). The PTX ISA version follows it.
    pub cc: (u32, u32),
    /// Fast, approximate floating point: reassociation, approximate division, square root
    /// and math functions, flush-to-zero (numba's `fastmath=True`).
    pub fastmath: bool,
    /// FMA contraction (nvcc's `--fmad`, on by default as there): a float `a * b + c`,
    /// `c + a * b`, `a * b - c` or `c - a * b` written with the builder's operators is recorded
    /// as one fused multiply-add (`fma.rn`, one rounding) instead of a multiply and an add
    /// (two roundings). The rule is applied by the builder when it records the expression
    /// (docs/GUIDE.md, "FMA contraction"), so the kernel's IR holds the decision and the GPU
    /// and the simulator compute the same bits; it is read when a kernel is built
    /// ([`Kernel::build_with`](super::Kernel::build_with),
    /// [`DeviceFn::build_with`](super::DeviceFn::build_with), `Elementwise::with_options`),
    /// not when it is compiled: passing other options to `compile_ptx` does not re-decide it.
    /// Off (`--fmad=false`), every multiply and add rounds separately (`mul.rn`/`add.rn`,
    /// which the PTX compiler does not fuse), also under fastmath.
    pub contract: bool,
    /// LLVM optimisation level, 0 to 3 (default 3).
    pub opt: u8,
    /// Debug build: no optimisation (implies `opt = 0`).
    pub debug: bool,
    /// Rust source lines in the PTX (numba's `lineinfo=True`): each instruction carries the
    /// file and line of the builder call that recorded it, as `.file`/`.loc` directives, so
    /// that `cuobjdump -lineinfo`, Nsight Compute and compute-sanitizer show Rust lines. Off
    /// by default (on with `CUDAJIT_LINEINFO=1`); with it off the PTX has no line directives
    /// and kernels that differ only in their source lines share one cache entry.
    pub lineinfo: bool,
    /// The CUDA version of the driver whose JIT will compile the PTX, when known. cudajit
    /// rewrites LLVM's PTX around known miscompilations of NVIDIA's PTX compiler
    /// (`src/codegen/ptx_fix/`); a rewrite is left out when this driver is at or past the
    /// version known to fix its bug. `None` (the default, as for `compile_ptx` without a GPU):
    /// every rewrite applies. [`Kernel::options_for`](super::Kernel::options_for) fills it from
    /// the installed driver. Kernels compiled for drivers that need the same rewrites share
    /// compile-cache entries.
    pub driver: Option<DriverVersion>,
}

impl Hash for PtxOptions {
    /// Every field but [`driver`](PtxOptions::driver), as `derive(Hash)` wrote them before it
    /// existed: what a driver changes in the PTX is the set of workarounds it needs, which the
    /// compile cache's key names itself (`cache::key_with`), so that drivers needing the same
    /// ones share entries. (`Eq` does tell drivers apart.)
    fn hash<H: Hasher>(&self, state: &mut H) {
        let PtxOptions {
            cc,
            fastmath,
            contract,
            opt,
            debug,
            lineinfo,
            driver: _,
        } = self;
        cc.hash(state);
        fastmath.hash(state);
        contract.hash(state);
        opt.hash(state);
        debug.hash(state);
        lineinfo.hash(state);
    }
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions {
            cc: default_cc(),
            fastmath: false,
            contract: true,
            opt: 3,
            debug: false,
            lineinfo: lineinfo_from_env(),
            driver: None,
        }
    }
}

impl PtxOptions {
    /// Options for compute capability `major.minor`, otherwise the defaults.
    pub fn for_cc(major: u32, minor: u32) -> Self {
        PtxOptions {
            cc: (major, minor),
            ..Default::default()
        }
    }

    /// The same options with Rust source lines in the PTX on or off (see
    /// [`lineinfo`](PtxOptions::lineinfo)).
    pub fn lineinfo(mut self, on: bool) -> Self {
        self.lineinfo = on;
        self
    }

    /// The same options with fast math on or off.
    pub fn fastmath(mut self, on: bool) -> Self {
        self.fastmath = on;
        self
    }

    /// The same options with FMA contraction on or off (see
    /// [`contract`](PtxOptions::contract); nvcc's `--fmad=true`/`false`).
    pub fn contract(mut self, on: bool) -> Self {
        self.contract = on;
        self
    }

    /// The same options for PTX that a driver of this CUDA version will compile (`None`:
    /// unknown; see [`driver`](PtxOptions::driver)).
    pub fn driver(mut self, version: Option<DriverVersion>) -> Self {
        self.driver = version;
        self
    }

    /// The workarounds for the PTX compiler's bugs that this compilation applies: all, unless
    /// [`driver`](PtxOptions::driver) is known to fix some.
    pub(crate) fn ptx_workarounds(&self) -> WorkaroundSet {
        WorkaroundSet::for_driver(self.driver)
    }

    /// The optimisation level actually used.
    pub(crate) fn effective_opt(&self) -> u8 {
        if self.debug {
            0
        } else {
            self.opt.min(3)
        }
    }

    /// The `sm_XY` LLVM compiles for: the target itself, or sm_90 for newer devices (LLVM 19
    /// knows up to sm_90; its PTX runs on newer devices through the driver's JIT).
    pub fn sm(&self) -> (u32, u32) {
        let cc = self.cc.max((5, 0));
        if cc > (9, 0) {
            (9, 0)
        } else {
            cc
        }
    }

    /// The PTX ISA version (major, minor) used for the target: the lowest that supports it and
    /// the warp-synchronous instructions (6.0 at least).
    pub fn ptx_isa(&self) -> (u32, u32) {
        match self.sm() {
            (9, _) | (8, 9) => (7, 8),
            (8, 7) => (7, 4),
            (8, 6) => (7, 1),
            (8, _) => (7, 0),
            // 6.3 (CUDA 10): the `.sync` warp instructions and `activemask` exist from 6.0/6.2.
            (7, _) => (6, 3),
            _ => (6, 0),
        }
    }

    /// LLVM's CPU name and feature string for the target.
    pub(crate) fn llvm_cpu_and_features(&self) -> (String, String) {
        let (m, n) = self.sm();
        let (pm, pn) = self.ptx_isa();
        (format!("sm_{m}{n}"), format!("+ptx{pm}{pn}"))
    }

    /// LLVM's CPU name and feature string for a kernel with Hopper operations (`hopper`):
    /// PTX ISA 8.0 on sm_90, and the architecture-specific `sm_90a` for wgmma and setmaxnreg.
    pub(crate) fn llvm_cpu_and_features_for(
        &self,
        needs: super::hopper::TargetUse,
    ) -> (String, String) {
        use super::hopper::HopperUse;
        let (cpu, features) = match needs.hopper {
            HopperUse::Sm90 if self.sm() == (9, 0) => ("sm_90".into(), "+ptx80".into()),
            HopperUse::Sm90a if self.sm() == (9, 0) => ("sm_90a".into(), "+ptx80".into()),
            _ => self.llvm_cpu_and_features(),
        };
        // The 8-bit floats (sm_89 and later; earlier targets refuse them when they are
        // lowered): `mma.sync` needs PTX ISA 8.4, and the `cvt`s 8.1 on sm_89 (sm_90 has them
        // from 7.8, below the 8.0 that Hopper's operations ask for anyway).
        if needs.fp8_mma && self.sm() >= (8, 9) {
            return (cpu, "+ptx84".into());
        }
        if needs.fp8_cvt && self.sm() == (8, 9) {
            return (cpu, "+ptx81".into());
        }
        (cpu, features)
    }
}
