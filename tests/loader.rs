//! CPU tests of the driver loader and of error reporting: no GPU needed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cudajit::sys::loader::{DriverEnv, DriverLibrary, SYSTEM_NAMES};
use cudajit::sys::{CUresult, LoadError};
use cudajit::{DriverCode, Error};

#[path = "support/mod.rs"]
mod support;
use support::child::Child;

fn env_with(var: &str, value: &str) -> DriverEnv {
    let v = Some(OsString::from(value));
    match var {
        "CUDAJIT_DRIVER" => DriverEnv {
            cudajit_driver: v,
            numba_cuda_driver: None,
        },
        _ => DriverEnv {
            cudajit_driver: None,
            numba_cuda_driver: v,
        },
    }
}

/// libm: a real shared library that is not the CUDA driver.
fn libm() -> PathBuf {
    [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib/aarch64-linux-gnu",
    ]
    .iter()
    .map(|d| Path::new(d).join("libm.so.6"))
    .find(|p| p.exists())
    .expect("libm.so.6 in a standard directory")
}

#[test]
fn relative_overrides_are_refused() {
    for var in ["CUDAJIT_DRIVER", "NUMBA_CUDA_DRIVER"] {
        let err = DriverLibrary::load(&env_with(var, "libcuda.so.1")).unwrap_err();
        assert!(
            matches!(&err, LoadError::RelativeOverride { var: v, path } if *v == var && path == "libcuda.so.1"),
            "{err:?}"
        );
        assert!(err.to_string().contains("absolute path"), "{err}");
    }
    let err = NcclLibrary::load(&nccl_env("lib/libnccl.so.2")).unwrap_err();
    assert!(
        matches!(&err, NcclLoadError::RelativeOverride { path } if path == "lib/libnccl.so.2"),
        "{err:?}"
    );
}

#[test]
fn the_load_log_names_the_rule() {
    use cudajit::sys::load_log::LoadLog;
    let libm = libm();
    let mut log = LoadLog::new("libcuda", false);
    DriverLibrary::load_logged(
        &env_with("CUDAJIT_DRIVER", libm.to_str().unwrap()),
        &mut log,
    )
    .unwrap();
    assert_eq!(
        log.lines(),
        [format!(
            "cudajit: load: libcuda: chose {} (rule: override variable CUDAJIT_DRIVER)",
            libm.display()
        )]
    );
}

#[test]
fn override_pointing_at_a_missing_file() {
    for var in ["CUDAJIT_DRIVER", "NUMBA_CUDA_DRIVER"] {
        let err = DriverLibrary::load(&env_with(var, "/nonexistent/libcuda.so.1")).unwrap_err();
        match &err {
            LoadError::OverrideFailed {
                var: v,
                path,
                message,
            } => {
                assert_eq!(*v, var);
                assert_eq!(path, "/nonexistent/libcuda.so.1");
                assert!(!message.is_empty());
            }
            e => panic!("unexpected {e:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(var) && text.contains("/nonexistent/libcuda.so.1"),
            "{text}"
        );
    }
}

#[test]
fn cudajit_variable_wins_over_numba_variable() {
    let env = DriverEnv {
        cudajit_driver: Some("/first/libcuda.so".into()),
        numba_cuda_driver: Some("/second/libcuda.so".into()),
    };
    assert_eq!(env.override_path().unwrap().0, "CUDAJIT_DRIVER");
    let env = DriverEnv {
        cudajit_driver: Some("".into()),
        numba_cuda_driver: Some("/second/libcuda.so".into()),
    };
    assert_eq!(
        env.override_path().unwrap().0,
        "NUMBA_CUDA_DRIVER",
        "empty means unset"
    );
}

#[test]
fn override_pointing_at_a_library_that_is_not_the_driver() {
    let lib = DriverLibrary::load(&env_with("CUDAJIT_DRIVER", libm().to_str().unwrap())).unwrap();
    assert!(lib.symbol("cos\0").is_ok());
    let err = lib.symbol("cuInit\0").unwrap_err();
    assert!(
        matches!(&err, LoadError::MissingSymbol { symbol, .. } if symbol == "cuInit"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("cuInit") && text.contains("libm.so.6"),
        "{text}"
    );
}

#[test]
fn zero_disables_the_driver() {
    let err = DriverLibrary::load(&env_with("CUDAJIT_DRIVER", "0")).unwrap_err();
    assert_eq!(
        err,
        LoadError::Disabled {
            var: "CUDAJIT_DRIVER"
        }
    );
    assert!(err.to_string().contains("disabled"), "{err}");
}

#[test]
fn stub_library_is_refused() {
    let dir = std::env::temp_dir()
        .join(format!("cudajit-stub-{}", std::process::id()))
        .join("stubs");
    std::fs::create_dir_all(&dir).unwrap();
    let stub = dir.join("libcuda.so");
    std::fs::copy(libm(), &stub).unwrap();
    let err = DriverLibrary::load(&env_with("CUDAJIT_DRIVER", stub.to_str().unwrap())).unwrap_err();
    assert!(matches!(err, LoadError::StubLibrary { .. }), "{err:?}");
    assert!(err.to_string().contains("stub"), "{err}");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn empty_override_searches_the_usual_places() {
    match DriverLibrary::load(&env_with("CUDAJIT_DRIVER", "")) {
        // A machine with the driver: found by the search.
        Ok(lib) => assert!(lib.origin().contains("cuda"), "{}", lib.origin()),
        // A machine without: every system name was tried, each with the loader's message.
        Err(LoadError::NotFound { tried }) => {
            for name in SYSTEM_NAMES {
                assert!(
                    tried.iter().any(|(p, m)| p == name && !m.is_empty()),
                    "{tried:?}"
                );
            }
            let text = LoadError::NotFound { tried }.to_string();
            assert!(
                text.contains("libcuda.so.1") && text.contains("CUDAJIT_DRIVER"),
                "{text}"
            );
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
}

#[test]
fn known_and_unknown_result_codes() {
    let oom = DriverCode(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    assert_eq!(oom.name(), Some("CUDA_ERROR_OUT_OF_MEMORY"));
    assert_eq!(oom.value(), 2);
    let e = Error::Driver {
        call: "cuMemAlloc_v2",
        code: oom,
    };
    let text = e.to_string();
    assert!(
        text.contains("cuMemAlloc_v2") && text.contains("CUDA_ERROR_OUT_OF_MEMORY (2)"),
        "{text}"
    );
    assert!(text.contains("hint:"), "{text}");
    assert!(e.is_out_of_memory());
    assert_eq!(
        cudajit::sys::result_name(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        Some("CUDA_ERROR_ILLEGAL_ADDRESS")
    );
    assert!(cudajit::sys::result_description(CUresult::CUDA_ERROR_NO_DEVICE).is_some());

    let unknown = DriverCode(CUresult(12345));
    assert_eq!(unknown.name(), None);
    let text = Error::Driver {
        call: "cuFoo",
        code: unknown,
    }
    .to_string();
    assert!(text.contains("12345") && text.contains("unknown"), "{text}");
    assert!(format!("{unknown:?}").contains("12345"));
}

#[test]
fn device_attribute_names() {
    let attrs: Vec<_> = cudajit::sys::device_attributes().collect();
    assert!(attrs.len() > 100);
    assert_eq!(
        cudajit::sys::device_attribute_name(
            cudajit::DeviceAttribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE
        ),
        Some("CU_DEVICE_ATTRIBUTE_WARP_SIZE")
    );
}

const CHILD: &str = "CUDAJIT_LOADER_TEST_CHILD";

/// In a child process whose environment disables or misdirects the driver, the public API
/// returns the loader's error from every call, and nothing panics.
#[test]
fn public_api_reports_loader_errors_child() {
    let Some(expect) = std::env::var_os(CHILD) else {
        return;
    };
    assert!(!cudajit::is_available());
    assert!(!cudajit::detect());
    let err = cudajit::device_count().unwrap_err();
    assert!(matches!(err, Error::Load(_)), "{err:?}");
    assert!(err.to_string().contains(expect.to_str().unwrap()), "{err}");
    assert!(cudajit::Context::new(0).is_err());
    assert!(cudajit::driver_version().is_err());
    println!("CHILD OK: {err}");
}

#[test]
fn public_api_reports_loader_errors() {
    let libm = libm().to_string_lossy().into_owned();
    let cases = [
        ("0", "disabled"),
        ("/nonexistent/libcuda.so.1", "/nonexistent/libcuda.so.1"),
        (libm.as_str(), "no function `cuInit`"),
    ];
    for (value, expect) in cases {
        Child::test("public_api_reports_loader_errors_child", CHILD, expect)
            .env("CUDAJIT_DRIVER", value)
            .run_ok();
    }
}

// ---- NCCL's loader ------------------------------------------------------------------------

use cudajit::sys::nccl::{NcclEnv, NcclLibrary, NcclLoadError};

fn nccl_env(value: &str) -> NcclEnv {
    NcclEnv {
        cudajit_nccl: Some(OsString::from(value)),
        search: true,
    }
}

#[test]
fn nccl_override_pointing_at_a_missing_file() {
    let err = NcclLibrary::load(&nccl_env("/nonexistent/libnccl.so.2")).unwrap_err();
    assert!(
        matches!(&err, NcclLoadError::OverrideFailed { path, message }
            if path == "/nonexistent/libnccl.so.2" && !message.is_empty()),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with("CUDAJIT_NCCL=/nonexistent/libnccl.so.2: cannot load NCCL"),
        "{text}"
    );
}

#[test]
fn nccl_override_pointing_at_a_file_that_is_not_a_library() {
    let path =
        std::env::temp_dir().join(format!("cudajit-not-a-library-{}.so", std::process::id()));
    std::fs::write(&path, "this is not an ELF file\n").unwrap();
    let shown = path.to_string_lossy().into_owned();
    let err = NcclLibrary::load(&nccl_env(&shown)).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(
        matches!(&err, NcclLoadError::OverrideFailed { path, .. } if *path == shown),
        "{err:?}"
    );
    assert!(err.to_string().contains(&shown), "{err}");
}

#[test]
fn nccl_override_pointing_at_a_library_that_is_not_nccl() {
    let libm = libm().to_string_lossy().into_owned();
    let err = NcclLibrary::load(&nccl_env(&libm)).unwrap_err();
    assert_eq!(
        err,
        NcclLoadError::NotNccl {
            library: libm.clone()
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(&libm) && text.contains("ncclGetVersion"),
        "{text}"
    );
}

#[test]
fn nccl_zero_disables_and_empty_searches() {
    let err = NcclLibrary::load(&nccl_env("0")).unwrap_err();
    assert_eq!(err, NcclLoadError::Disabled);
    assert!(err.to_string().contains("CUDAJIT_NCCL=0"), "{err}");
    // Empty means unset: the search runs (and finds NCCL or says where it looked).
    match NcclLibrary::load(&nccl_env("")) {
        Ok(lib) => assert!(lib.version() >= 20000, "{}", lib.version()),
        Err(NcclLoadError::NotFound { looked_in, .. }) => {
            assert!(looked_in.iter().any(|p| p.contains("libnccl.so.2")))
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
}

#[test]
fn nccl_not_found_says_what_to_install_and_where_it_looked() {
    let env = NcclEnv {
        cudajit_nccl: None,
        search: false,
    };
    let err = NcclLibrary::load(&env).unwrap_err();
    assert!(matches!(err, NcclLoadError::NotFound { .. }), "{err:?}");
    let text = err.to_string();
    for part in [
        "pip install nvidia-nccl-cu12",
        "nvidia-nccl-cu13",
        "libnccl2",
        "CUDAJIT_NCCL",
        "Looked in:",
    ] {
        assert!(text.contains(part), "{part} missing from: {text}");
    }
}

#[test]
fn nccl_search_looks_in_python_wheels() {
    // A virtual environment whose nvidia-nccl wheel holds a library that is not NCCL: the
    // search tries it (and says so) or, where a real NCCL comes first, loads that one.
    let venv = std::env::temp_dir().join(format!("cudajit-fake-venv-{}", std::process::id()));
    let lib_dir = venv.join("lib/python3.99/site-packages/nvidia/nccl/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let fake = lib_dir.join("libnccl.so.2");
    std::fs::copy(libm(), &fake).unwrap();
    let out = Child::test("nccl_search_looks_in_python_wheels_child", CHILD, &fake)
        .env("VIRTUAL_ENV", &venv)
        .run();
    std::fs::remove_dir_all(&venv).unwrap();
    assert!(out.passed(), "{}", out.text());
}

#[test]
fn nccl_search_looks_in_python_wheels_child() {
    let Some(fake) = std::env::var_os(CHILD) else {
        return;
    };
    let fake = fake.to_string_lossy().into_owned();
    let env = NcclEnv {
        cudajit_nccl: None,
        search: true,
    };
    match NcclLibrary::load(&env) {
        Ok(lib) => assert_ne!(lib.origin(), fake),
        Err(NcclLoadError::NotFound { looked_in, tried }) => {
            assert!(
                looked_in
                    .iter()
                    .any(|p| fake.starts_with(p.split("/nvidia/").next().unwrap())),
                "{looked_in:?}"
            );
            assert!(
                tried
                    .iter()
                    .any(|(p, m)| *p == fake && m.contains("is not NCCL")),
                "{tried:?}"
            );
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
    println!("CHILD OK");
}

#[test]
fn nccl_public_api_reports_loader_errors_child() {
    let Some(expect) = std::env::var_os(CHILD) else {
        return;
    };
    let expect = expect.to_str().unwrap();
    assert!(!cudajit::nccl::is_available());
    let err = cudajit::nccl::version().unwrap_err();
    assert!(matches!(err, Error::NcclLoad(_)), "{err:?}");
    assert!(err.to_string().contains(expect), "{err}");
    // An NCCL call that needs no GPU reports the same error.
    let err = cudajit::nccl::UniqueId::new().unwrap_err();
    assert!(matches!(err, Error::NcclLoad(_)), "{err:?}");
    assert!(err.to_string().contains(expect), "{err}");
    // Checks that come before NCCL still answer first.
    let err = cudajit::nccl::Communicator::init_all(&[]).unwrap_err();
    assert!(err.to_string().contains("no devices given"), "{err}");
    println!("CHILD OK: {}", cudajit::nccl::version().unwrap_err());
}

#[test]
fn nccl_public_api_reports_loader_errors() {
    let libm = libm().to_string_lossy().into_owned();
    let cases = [
        ("0", "CUDAJIT_NCCL=0"),
        ("/nonexistent/libnccl.so.2", "/nonexistent/libnccl.so.2"),
        (libm.as_str(), "no function `ncclGetVersion`"),
    ];
    for (value, expect) in cases {
        Child::test("nccl_public_api_reports_loader_errors_child", CHILD, expect)
            .env("CUDAJIT_NCCL", value)
            .run_ok();
    }
}

#[test]
fn nccl_result_codes_have_text_without_nccl() {
    use cudajit::sys::nccl::{ncclResult_t, result_codes, result_description, result_name};
    let names: Vec<&str> = result_codes().map(|(_, n)| n).collect();
    assert_eq!(names.first(), Some(&"ncclSuccess"));
    assert!(names.contains(&"ncclInvalidUsage") && names.contains(&"ncclRemoteError"));
    for (code, name) in result_codes() {
        assert_eq!(result_name(code), Some(name));
        assert!(
            result_description(code).is_some_and(|d| !d.is_empty()),
            "{name}"
        );
    }
    assert_eq!(result_name(ncclResult_t(1000)), None);
    let code = cudajit::nccl::NcclCode(ncclResult_t::ncclInvalidArgument);
    assert_eq!(code.name(), Some("ncclInvalidArgument"));
    assert!(
        code.to_string().starts_with("ncclInvalidArgument (4): "),
        "{code}"
    );
}

/// With a real NCCL (e.g. `CUDAJIT_NCCL=<site-packages>/nvidia/nccl/lib/libnccl.so.2`), loading
/// it, its version, its error strings and a unique id need no GPU.
#[test]
fn real_nccl_loads_without_a_gpu_when_installed() {
    let Ok((major, minor, patch)) = cudajit::nccl::version() else {
        println!(
            "NCCL not installed here: {}",
            cudajit::nccl::version().unwrap_err()
        );
        return;
    };
    assert!(major >= 2, "{major}.{minor}.{patch}");
    println!(
        "NCCL {major}.{minor}.{patch} from {}",
        cudajit::nccl::library_path().unwrap()
    );
    let code = cudajit::nccl::NcclCode(cudajit::sys::nccl::ncclResult_t::ncclInvalidUsage);
    assert!(code.description().contains("invalid usage"), "{code}");
    if !cudajit::on_simulator() {
        // ncclGetUniqueId needs no GPU either: the id's bytes round-trip.
        let id = cudajit::nccl::UniqueId::new().unwrap();
        assert_ne!(id.as_bytes(), &[0u8; cudajit::nccl::UNIQUE_ID_BYTES]);
        assert_eq!(cudajit::nccl::UniqueId::from_bytes(*id.as_bytes()), id);
    }
}
