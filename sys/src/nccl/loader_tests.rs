//! NCCL's search decisions with an injected machine: no process environment is touched.

use super::*;
use std::cell::Cell;

fn var(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| OsString::from(v))
    }
}

fn no_site(_: &mut LoadLog) -> Vec<PathBuf> {
    Vec::new()
}

#[test]
fn relative_toolkit_variables_are_skipped() {
    let get = var(&[("CUDA_HOME", "cuda"), ("CUDA_PATH", "/opt/cuda-x")]);
    let is_file = |p: &Path| p.starts_with("/opt/cuda-x") || p.starts_with("cuda");
    let python =
        |_: &mut LoadLog| -> Vec<PathBuf> { panic!("python asked although a file exists") };
    let lookup = Lookup {
        var: &get,
        is_file: &is_file,
        site_packages: &no_site,
        python_nvidia_dirs: &python,
    };
    let mut log = LoadLog::new("NCCL", false);
    let mut looked_in = Vec::new();
    let files = candidates(&lookup, &mut looked_in, &mut log);
    assert_eq!(
        files,
        [(
            PathBuf::from("/opt/cuda-x/lib64/libnccl.so.2"),
            Rule::ToolkitDir("CUDA_PATH")
        )]
    );
    assert!(files.iter().all(|(f, _)| f.is_absolute()));
    assert!(
        looked_in.iter().all(|d| !d.starts_with("cuda")),
        "{looked_in:?}"
    );
    assert_eq!(
        log.lines()[0],
        "cudajit: load: NCCL: skipped cuda (from CUDA_HOME): relative path"
    );
    // The usual directories are looked at and logged as missing.
    assert!(log
        .lines()
        .iter()
        .any(|l| l == "cudajit: load: NCCL: skipped /usr/local/cuda/lib64/libnccl.so.2: missing"));
}

#[test]
fn python_is_the_last_resort_and_its_paths_are_checked() {
    let asked = Cell::new(0);
    let get = var(&[]);
    let is_file = |p: &Path| p == Path::new("/py/site/nvidia/nccl/lib/libnccl.so.2");
    let python = |_: &mut LoadLog| {
        asked.set(asked.get() + 1);
        vec![
            PathBuf::from("/py/site/nvidia"),
            PathBuf::from("rel/nvidia"),
        ]
    };
    let lookup = Lookup {
        var: &get,
        is_file: &is_file,
        site_packages: &no_site,
        python_nvidia_dirs: &python,
    };
    let mut log = LoadLog::new("NCCL", false);
    let files = candidates(&lookup, &mut Vec::new(), &mut log);
    assert_eq!(asked.get(), 1);
    assert_eq!(
        files,
        [(
            PathBuf::from("/py/site/nvidia/nccl/lib/libnccl.so.2"),
            Rule::WheelViaPython
        )]
    );
    // A relative directory (had a python printed one) is refused by the path check.
    assert!(log.lines().iter().any(
        |l| l == "cudajit: load: NCCL: skipped rel/nvidia/nccl/lib/libnccl.so.2: relative path"
    ));
}

#[test]
fn a_wheel_on_disk_spares_the_python_run() {
    let get = var(&[]);
    let is_file = |p: &Path| p == Path::new("/site/nvidia/nccl/lib/libnccl.so.2");
    let site = |_: &mut LoadLog| vec![PathBuf::from("/site")];
    let python = |_: &mut LoadLog| -> Vec<PathBuf> { panic!("python asked") };
    let lookup = Lookup {
        var: &get,
        is_file: &is_file,
        site_packages: &site,
        python_nvidia_dirs: &python,
    };
    let files = candidates(&lookup, &mut Vec::new(), &mut LoadLog::new("NCCL", false));
    assert_eq!(
        files,
        [(
            PathBuf::from("/site/nvidia/nccl/lib/libnccl.so.2"),
            Rule::Wheel
        )]
    );
}

#[test]
fn a_relative_override_is_refused() {
    let get = var(&[]);
    let never = |_: &Path| -> bool { panic!("searched") };
    let lookup = Lookup {
        var: &get,
        is_file: &never,
        site_packages: &no_site,
        python_nvidia_dirs: &no_site,
    };
    for path in ["libnccl.so.2", "./libnccl.so.2", "lib/libnccl.so.2"] {
        let env = NcclEnv {
            cudajit_nccl: Some(path.into()),
            search: true,
        };
        let mut log = LoadLog::new("NCCL", false);
        let err = NcclLibrary::load_with(&env, &lookup, &mut log).unwrap_err();
        assert_eq!(
            err,
            NcclLoadError::RelativeOverride {
                path: path.to_string()
            }
        );
        let text = err.to_string();
        assert!(text.contains("give the absolute path"), "{text}");
        assert_eq!(
            log.lines(),
            [format!(
                "cudajit: load: NCCL: skipped {path} (from CUDAJIT_NCCL): relative path"
            )]
        );
    }
}
