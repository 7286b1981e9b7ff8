//! Where `libcudadevrt.a` is (the device runtime a kernel that launches kernels is linked
//! with), found as libdevice and NCCL are: `CUDAJIT_CUDADEVRT`, the CUDA toolkit's library
//! directories, then the `nvidia-cuda-runtime-cu12`/`-cu13` wheels in site-packages, then
//! `python3` (only when nothing else exists; `CUDAJIT_NO_PYTHON=1` turns it off). Every
//! candidate is absolute; what was chosen and why is printed with `CUDAJIT_LOG_LOAD=1`.
//!
//! Only kernels that launch kernels need it: when it is missing, loading one of them is an
//! error that says what to install, and everything else keeps working.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudajit_sys::load_log::{LoadLog, Rule, Skip};
use cudajit_sys::lookup::Lookup;
use cudajit_sys::paths::{absolute_var, usable};

/// The environment variable naming `libcudadevrt.a`.
pub(crate) const ENV_PATH: &str = "CUDAJIT_CUDADEVRT";

/// The archive under a CUDA toolkit's root.
const IN_CUDA: [&str; 3] = [
    "lib64/libcudadevrt.a",
    "targets/x86_64-linux/lib/libcudadevrt.a",
    "targets/sbsa-linux/lib/libcudadevrt.a",
];
/// The archive under a site-packages directory (the `nvidia-cuda-runtime-cu12` and `-cu13`
/// wheels).
const IN_WHEEL: [&str; 2] = [
    "nvidia/cuda_runtime/lib/libcudadevrt.a",
    "nvidia/cu13/lib/libcudadevrt.a",
];
/// The archive under the `nvidia` namespace package's directory.
const IN_NVIDIA: [&str; 2] = ["cuda_runtime/lib/libcudadevrt.a", "cu13/lib/libcudadevrt.a"];

/// What the search decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// `CUDAJIT_CUDADEVRT`'s absolute path (not checked yet: reading it is the check).
    Override(PathBuf),
    /// The first candidate that exists.
    Searched(PathBuf),
    /// No candidate exists.
    Nothing,
}

/// The search (see the module's documentation). An error when `CUDAJIT_CUDADEVRT` is relative.
pub(crate) fn find(lookup: &Lookup<'_>, log: &mut LoadLog) -> Result<Found, String> {
    if let Some(p) = (lookup.var)(ENV_PATH).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_absolute() {
            log.skipped(&p, Some(ENV_PATH), &Skip::Relative);
            return Err(format!(
                "{ENV_PATH}={}: a relative path is refused (it would depend on the current \
                 directory); give the absolute path of libcudadevrt.a",
                p.display()
            ));
        }
        log.chose(&p, Rule::Override(ENV_PATH));
        return Ok(Found::Override(p));
    }
    let mut candidates: Vec<(PathBuf, Rule)> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(h) = absolute_var(lookup.var, var, log) {
            candidates.extend(IN_CUDA.iter().map(|c| (h.join(c), Rule::ToolkitDir(var))));
        }
    }
    for root in ["/usr/local/cuda", "/opt/cuda"] {
        candidates.extend(
            IN_CUDA
                .iter()
                .map(|c| (Path::new(root).join(c), Rule::UsualDir)),
        );
    }
    // Debian's and Ubuntu's `nvidia-cuda-toolkit` package.
    candidates.push((
        PathBuf::from("/usr/lib/x86_64-linux-gnu/libcudadevrt.a"),
        Rule::UsualDir,
    ));
    for site in (lookup.site_packages)(log) {
        candidates.extend(IN_WHEEL.iter().map(|w| (site.join(w), Rule::Wheel)));
    }
    if let Some(found) = first_usable(&candidates, lookup, log) {
        return Ok(found);
    }
    let from_python: Vec<(PathBuf, Rule)> = (lookup.python_nvidia_dirs)(log)
        .into_iter()
        .flat_map(|d| IN_NVIDIA.map(|n| (d.join(n), Rule::WheelViaPython)))
        .collect();
    Ok(first_usable(&from_python, lookup, log).unwrap_or(Found::Nothing))
}

/// The first candidate that is absolute and exists, logged as chosen.
fn first_usable(
    candidates: &[(PathBuf, Rule)],
    lookup: &Lookup<'_>,
    log: &mut LoadLog,
) -> Option<Found> {
    let (path, rule) = candidates
        .iter()
        .find(|(p, _)| usable(p, None, lookup.is_file, log))?;
    log.chose(path, *rule);
    Some(Found::Searched(path.clone()))
}

/// What to do when the archive is missing.
pub(crate) const HOW_TO_INSTALL: &str = "install the CUDA runtime wheel \
    (`pip install nvidia-cuda-runtime-cu12`, or `nvidia-cuda-runtime` for CUDA 13), or a CUDA \
    toolkit, or set CUDAJIT_CUDADEVRT to the absolute path of libcudadevrt.a \
    (CUDAJIT_LOG_LOAD=1 shows where cudajit looked)";

/// The outcome of a search as the bytes of the archive: an error naming what was looked for
/// and what to install.
pub(crate) fn read(found: Found) -> Result<Arc<[u8]>, String> {
    let (path, why) = match found {
        Found::Nothing => {
            return Err(format!(
                "libcudadevrt.a (the CUDA device runtime, which kernels that launch kernels are \
                 linked with) was not found: {HOW_TO_INSTALL}"
            ))
        }
        Found::Override(p) => (p, format!(" (from {ENV_PATH})")),
        Found::Searched(p) => (p, String::new()),
    };
    std::fs::read(&path).map(Arc::from).map_err(|e| {
        format!(
            "cannot read libcudadevrt.a at {}{why}: {e}; {HOW_TO_INSTALL}",
            path.display()
        )
    })
}

/// This process's `libcudadevrt.a`, found and read once.
pub(crate) fn get() -> Result<Arc<[u8]>, String> {
    static FOUND: OnceLock<Result<Arc<[u8]>, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let lookup = Lookup::process();
            let mut log = LoadLog::from_process("libcudadevrt");
            read(find(&lookup, &mut log)?)
        })
        .clone()
}

/// The device runtime as a link input of kernel `kernel`: an error (naming what to install)
/// when it cannot be found or read.
pub(crate) fn link_data(kernel: &str) -> crate::error::Result<crate::ir::LinkData> {
    let data = get().map_err(|message| {
        crate::error::Error::Codegen(crate::error::CodegenError::Link {
            kernel: kernel.to_string(),
            message: format!("it launches kernels from the device, and {message}"),
        })
    })?;
    Ok(crate::ir::LinkData {
        kind: crate::ir::LinkKind::Library,
        name: "libcudadevrt.a".into(),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn var(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn none(_: &mut LoadLog) -> Vec<PathBuf> {
        Vec::new()
    }

    #[test]
    fn a_relative_override_is_an_error_naming_the_fix() {
        let get = var(&[(ENV_PATH, "libcudadevrt.a")]);
        let never = |_: &Path| -> bool { panic!("searched") };
        let lookup = Lookup {
            var: &get,
            is_file: &never,
            site_packages: &none,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        let err = find(&lookup, &mut log).unwrap_err();
        assert!(err.contains("CUDAJIT_CUDADEVRT=libcudadevrt.a"), "{err}");
        assert!(err.contains("absolute path"), "{err}");
        assert_eq!(
            log.lines(),
            ["cudajit: load: libcudadevrt: skipped libcudadevrt.a (from CUDAJIT_CUDADEVRT): relative path"]
        );
    }

    #[test]
    fn an_absolute_override_is_taken_as_is() {
        let get = var(&[(ENV_PATH, "/x/libcudadevrt.a"), ("CUDA_HOME", "/cuda")]);
        let never = |_: &Path| -> bool { panic!("searched") };
        let lookup = Lookup {
            var: &get,
            is_file: &never,
            site_packages: &none,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        assert_eq!(
            find(&lookup, &mut log),
            Ok(Found::Override(PathBuf::from("/x/libcudadevrt.a")))
        );
        assert!(log.lines()[0].ends_with("(rule: override variable CUDAJIT_CUDADEVRT)"));
    }

    #[test]
    fn toolkit_before_wheels_and_relative_roots_skipped() {
        let get = var(&[("CUDA_HOME", "cuda"), ("CUDA_PATH", "/tk")]);
        let tk = PathBuf::from("/tk/targets/x86_64-linux/lib/libcudadevrt.a");
        let wheel = PathBuf::from("/site/nvidia/cuda_runtime/lib/libcudadevrt.a");
        let exists = |p: &Path| p == tk || p == wheel;
        let site = |_: &mut LoadLog| vec![PathBuf::from("/site")];
        let lookup = Lookup {
            var: &get,
            is_file: &exists,
            site_packages: &site,
            python_nvidia_dirs: &none,
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        assert_eq!(find(&lookup, &mut log), Ok(Found::Searched(tk.clone())));
        assert_eq!(
            log.lines()[0],
            "cudajit: load: libcudadevrt: skipped cuda (from CUDA_HOME): relative path"
        );
        assert!(log
            .lines()
            .last()
            .unwrap()
            .ends_with("(rule: toolkit directory from CUDA_PATH)"));
        // Without the toolkit: the cu12 wheel, then the cu13 one.
        let exists = |p: &Path| p == wheel;
        let lookup = Lookup {
            is_file: &exists,
            ..lookup
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        assert_eq!(find(&lookup, &mut log), Ok(Found::Searched(wheel.clone())));
        let cu13 = PathBuf::from("/site/nvidia/cu13/lib/libcudadevrt.a");
        let exists = |p: &Path| p == cu13;
        let lookup = Lookup {
            is_file: &exists,
            ..lookup
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        assert_eq!(find(&lookup, &mut log), Ok(Found::Searched(cu13)));
        assert!(log
            .lines()
            .last()
            .unwrap()
            .ends_with("(rule: wheel in site-packages)"));
    }

    #[test]
    fn python_is_the_last_resort() {
        let get = var(&[]);
        let via = PathBuf::from("/py/nvidia/cuda_runtime/lib/libcudadevrt.a");
        let exists = |p: &Path| p == via;
        let python = |_: &mut LoadLog| vec![PathBuf::from("/py/nvidia")];
        let lookup = Lookup {
            var: &get,
            is_file: &exists,
            site_packages: &none,
            python_nvidia_dirs: &python,
        };
        let mut log = LoadLog::new("libcudadevrt", false);
        assert_eq!(find(&lookup, &mut log), Ok(Found::Searched(via.clone())));
        assert!(log
            .lines()
            .last()
            .unwrap()
            .ends_with("(rule: wheel via python3)"));
        let no = |_: &Path| false;
        let lookup = Lookup {
            is_file: &no,
            ..lookup
        };
        assert_eq!(
            find(&lookup, &mut LoadLog::new("libcudadevrt", false)),
            Ok(Found::Nothing)
        );
    }

    #[test]
    fn missing_or_unreadable_says_what_to_install() {
        let e = read(Found::Nothing).unwrap_err();
        assert!(
            e.contains("pip install nvidia-cuda-runtime-cu12") && e.contains(ENV_PATH),
            "{e}"
        );
        let e = read(Found::Override("/nonexistent/libcudadevrt.a".into())).unwrap_err();
        assert!(
            e.contains("/nonexistent/libcudadevrt.a (from CUDAJIT_CUDADEVRT)")
                && e.contains("pip install"),
            "{e}"
        );
        // A real file (a fake archive in a temporary directory) is read whole.
        let dir = std::env::temp_dir().join(format!("cudajit-devrt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libcudadevrt.a");
        std::fs::write(&path, b"!<arch>\n").unwrap();
        assert_eq!(&*read(Found::Searched(path)).unwrap(), b"!<arch>\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn this_machine_finds_it_or_says_what_to_install() {
        match get() {
            Ok(bytes) => assert!(bytes.starts_with(b"!<arch>"), "not an archive"),
            Err(e) => assert!(
                e.contains("pip install nvidia-cuda-runtime-cu12") || e.contains(ENV_PATH),
                "{e}"
            ),
        }
    }
}
