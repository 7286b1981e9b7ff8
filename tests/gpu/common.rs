//! Helpers of the GPU tests: the context, special values, the drop-errors lock (and, from
//! `tests/support`, the random generator and the fixtures).

use cudajit::codegen::{Expr, Kernel};
use cudajit::prelude::*;

/// Device 0's primary context.
pub fn ctx() -> Context {
    Context::new(0).expect("device 0's primary context")
}

pub use crate::support::rng::Rng;

/// A test fixture under tests/data (or `CUDAJIT_TEST_DATA` in a GPU bundle).
pub use crate::support::fixtures::fixture;

pub fn kernels_ptx() -> String {
    std::fs::read_to_string(fixture("kernels.ptx")).expect("tests/data/kernels.ptx")
}

/// Serialises the tests that look at [`cudajit::take_drop_errors`] (a process-wide list).
pub static DROP_ERRORS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes the drop-errors lock, ignoring poisoning by an earlier failed test.
pub fn drop_errors_lock() -> std::sync::MutexGuard<'static, ()> {
    DROP_ERRORS_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// f32 inputs rich in special values: random values mixed with NaN, ±0, ±inf, subnormals,
/// MIN/MAX and random bit patterns.
pub fn special_f32(rng: &mut Rng, n: usize) -> Vec<f32> {
    let specials = [
        f32::NAN,
        -f32::NAN,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
    ];
    rng.vec(n, |r| {
        let u = r.next_u64();
        match u % 4 {
            0 => specials[(u >> 8) as usize % specials.len()],
            1 => f32::from_bits((u >> 16) as u32),
            _ => r.f32() * 1e3,
        }
    })
}

/// Whether Hopper's features (sm_90: TMA, mbarriers, wgmma) can run here: on an sm_90 GPU, or
/// on the simulator.
pub fn sm90(c: &Context) -> bool {
    cudajit::on_simulator() || c.device().compute_capability().unwrap() == (9, 0)
}

/// Whether two f32 are the same value: equal bits, or both NaN.
pub fn same_f32(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
}

/// The device count a multi-GPU run demands (`CUDAJIT_TEST_MIN_DEVICES`; 0 when unset).
pub fn required_devices() -> usize {
    std::env::var("CUDAJIT_TEST_MIN_DEVICES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
}

/// Whether this machine has `n` devices; prints why not when it has fewer. With
/// `CUDAJIT_TEST_MIN_DEVICES=m` set (the multi-GPU run), a machine with fewer than `m` devices
/// fails instead of skipping, so that a two-GPU run cannot pass by skipping.
pub fn has_devices(n: usize) -> bool {
    let count = cudajit::device_count().expect("device count");
    if count >= n {
        return true;
    }
    let required = required_devices();
    assert!(
        count >= required,
        "CUDAJIT_TEST_MIN_DEVICES={required}, but this machine has {count} device(s)"
    );
    println!("skipping: needs {n} CUDA devices, this machine has {count}");
    false
}

extern "C" {
    /// C's `erf` (glibc's libm, which Rust's std links).
    #[link_name = "erf"]
    fn c_erf(x: f64) -> f64;
}

/// erf, the reference of the math tests (C's, which is correctly rounded or nearly).
pub fn erf_ref(x: f64) -> f64 {
    // SAFETY: a pure libm function.
    unsafe { c_erf(x) }
}

/// `f` applied to each of `x` by a kernel on a new stream of `ctx()` (output poisoned with NaN
/// first).
pub fn map_f32(name: &str, x: &[f32], f: fn(Expr<f32>) -> Expr<f32>) -> Vec<f32> {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = Kernel::<(&[f32], &mut [f32])>::build(name, |k, (a, out)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| out.set(i, f(a.at(i))));
    })
    .unwrap();
    let dx = s.to_device(x).unwrap();
    let mut out = s.to_device(&vec![f32::NAN; x.len()]).unwrap();
    k.launch(
        &s,
        LaunchConfig::for_num_elems(x.len(), 256).unwrap(),
        (&dx, &mut out),
    )
    .unwrap();
    out.to_vec_async(&s).unwrap()
}

/// The kind and message of the fault `r` must be (panics otherwise).
pub fn fault(r: cudajit::Result<()>) -> (cudajit::FaultKind, String) {
    match r {
        Err(cudajit::Error::Fault { kind, message, .. }) => (kind, message),
        other => panic!("expected a fault, got {other:?}"),
    }
}
