//! Kernels from the compile cache load and run: kernels whose PTX came from the memory cache,
//! kernels found already loaded, and kernels whose cubin came from the disk cache in a new
//! process compute the same results as freshly compiled ones.
//! The cross-process test runs this binary again with a temporary `CUDAJIT_CACHE_DIR`, so the
//! user's cache is never touched.

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::{ctx, Rng};
use crate::support::child::Child;

/// Set in a child: the cache directory's role ("fill" or "read").
const CHILD: &str = "CUDAJIT_GPU_CACHE_TEST_CHILD";

type Saxpy = Kernel<(&'static [f32], &'static mut [f32], f32)>;

/// A fresh instance of the same kernel each call (so only the caches can share its PTX).
fn saxpy() -> Saxpy {
    Saxpy::build("cache_saxpy", |k, (x, y, a)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| y.set(i, x.at(i).mul_add(a, y.at(i))));
    })
    .unwrap()
}

/// Runs `k` on random data and checks every element against the host.
fn check_saxpy(k: &Saxpy) {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    let n = 100_003;
    let x: Vec<f32> = rng.vec(n, |r| r.f32());
    let y: Vec<f32> = rng.vec(n, |r| r.f32());
    let dx = s.to_device(&x).unwrap();
    let mut dy = s.to_device(&y).unwrap();
    let a = 1.5f32;
    k.launch(
        &s,
        LaunchConfig::for_num_elems(n, 256).unwrap(),
        (&dx, &mut dy, a),
    )
    .unwrap();
    let got = dy.to_vec_async(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], x[i].mul_add(a, y[i]), "i={i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_from_the_memory_cache_runs() {
    let first = saxpy();
    check_saxpy(&first);
    let second = saxpy();
    let opts = second.options_for(&ctx().device()).unwrap();
    assert_eq!(
        first.compile_ptx(&opts).unwrap(),
        second.compile_ptx(&opts).unwrap()
    );
    check_saxpy(&second);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_same_kernel_built_again_reuses_the_loaded_function() {
    let c = ctx();
    let first = saxpy();
    check_saxpy(&first);
    let hits = cudajit::codegen::cache_stats().loaded_hits;
    let second = saxpy();
    check_saxpy(&second);
    assert_eq!(
        first.function(&c).unwrap().raw(),
        second.function(&c).unwrap().raw(),
        "the second build should reuse the first one's loaded function"
    );
    assert!(cudajit::codegen::cache_stats().loaded_hits > hits);
    // A kernel that differs only in a constant is another kernel.
    let other = Saxpy::build("cache_saxpy", |k, (x, y, a)| {
        let i = k.grid1();
        k.if_(i.lt(y.len()), |_| {
            y.set(i, x.at(i).mul_add(a, y.at(i)) + 0.0)
        })
    })
    .unwrap();
    assert_ne!(
        first.function(&c).unwrap().raw(),
        other.function(&c).unwrap().raw()
    );
}

/// Runs in a child only.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cache_child_process() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    check_saxpy(&saxpy());
    println!("CHILD OK");
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: the simulator compiles no PTX, so nothing goes through the disk cache"]
fn kernel_from_the_disk_cache_runs_in_a_new_process() {
    let dir = std::env::temp_dir().join(format!("cudajit-gpu-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |role: &str| {
        let out = Child::test("cache::cache_child_process", CHILD, role)
            .env("CUDAJIT_CACHE_DIR", &dir)
            .env("CUDAJIT_LOG_CACHE", "1")
            .env_remove("CUDAJIT_CACHE")
            .run();
        assert!(out.passed(), "{role}:\n{}", out.text());
        let stderr = out.stderr;
        let count = |e: &str| {
            stderr
                .lines()
                .filter(|l| l.starts_with(&format!("cudajit cache: {e}")))
                .count()
        };
        (count("compiled"), count("cubin hit"), stderr)
    };
    // The first process compiles the PTX and stores it with the driver's cubin; the second
    // loads the cubin (no LLVM, no PTX, no driver JIT).
    let (compiled, _, log) = run("fill");
    assert_eq!(compiled, 1, "{log}");
    let (compiled, cubin_hits, log) = run("read");
    assert_eq!((compiled, cubin_hits), (0, 1), "{log}");
    assert!(!log.contains("disk hit"), "{log}");
    let _ = std::fs::remove_dir_all(dir);
}
