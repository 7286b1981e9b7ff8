//! Helpers shared by the GPU tests: the context, random data, fixtures.

use cudajit::Context;

/// Device 0's primary context.
pub fn ctx() -> Context {
    Context::new(0).expect("device 0's primary context")
}

/// A small xorshift generator, seeded from the clock so every run draws fresh data.
pub struct Rng(u64);

impl Rng {
    pub fn new() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15);
        Rng(t | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec<T>(&mut self, n: usize, mut f: impl FnMut(&mut Rng) -> T) -> Vec<T> {
        (0..n).map(|_| f(self)).collect()
    }
}

/// A test fixture under tests/data (or `CUDAJIT_TEST_DATA` in a GPU bundle).
#[path = "../fixtures/mod.rs"]
mod fixtures;
pub use fixtures::fixture;

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
