//! Where `libcudadevrt.a` is (the device runtime a kernel that launches kernels is linked
//! with), found as libdevice and NCCL are: `CUDAJIT_CUDADEVRT`, the CUDA toolkit's library
//! directories, then the `nvidia-cuda-runtime-cu12`/`-cu13` wheels in site-packages, then
//! `python3` (only when nothing else exists; `CUDAJIT_NO_PYTHON=1` turns it off). Every
//! candidate is absolute; what was chosen and why is printed with `CUDAJIT_LOG_LOAD=1`.
//!
//! Only kernels that launch kernels need it: when it is missing, loading one of them is an
//! error that says what to install, and everything else keeps working.

use std::sync::{Arc, OnceLock};

use cudajit_sys::load_log::LoadLog;
use cudajit_sys::lookup::Lookup;

pub(crate) use crate::codegen::file_search::Found;
use crate::codegen::file_search::{self, Wanted};

/// The environment variable naming `libcudadevrt.a`.
pub(crate) const ENV_PATH: &str = "CUDAJIT_CUDADEVRT";

/// Where the archive may be: under a CUDA toolkit's root, Debian's and Ubuntu's
/// `nvidia-cuda-toolkit` package, a site-packages directory (the `nvidia-cuda-runtime-cu12`
/// and `-cu13` wheels), the `nvidia` namespace package's directory.
const WANTED: Wanted = Wanted {
    env: ENV_PATH,
    file: "libcudadevrt.a",
    in_cuda: &[
        "lib64/libcudadevrt.a",
        "targets/x86_64-linux/lib/libcudadevrt.a",
        "targets/sbsa-linux/lib/libcudadevrt.a",
    ],
    usual: &["/usr/lib/x86_64-linux-gnu/libcudadevrt.a"],
    in_wheel: &[
        "nvidia/cuda_runtime/lib/libcudadevrt.a",
        "nvidia/cu13/lib/libcudadevrt.a",
    ],
    in_nvidia: &["cuda_runtime/lib/libcudadevrt.a", "cu13/lib/libcudadevrt.a"],
};

/// The search (see the module's documentation). An error when `CUDAJIT_CUDADEVRT` is relative.
pub(crate) fn find(lookup: &Lookup<'_>, log: &mut LoadLog) -> Result<Found, String> {
    file_search::find(&WANTED, lookup, log)
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
    use std::path::{Path, PathBuf};

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
