use cudajit::prelude::*;
use cudajit::{Error, LaunchConfig};

use crate::common::{ctx, fixture, kernels_ptx, Rng};

fn check_add(c: &Context, m: &Module) {
    let s = c.new_stream().unwrap();
    let f = m.function("add_f32").unwrap();
    let mut rng = Rng::new();
    for n in [1usize, 1000, 1 << 20, (1 << 20) + 3] {
        let x: Vec<f32> = rng.vec(n, |r| r.f32());
        let y: Vec<f32> = rng.vec(n, |r| r.f32());
        let dx = s.to_device(&x).unwrap();
        let dy = s.to_device(&y).unwrap();
        let mut out = c.alloc::<f32, _>(n).unwrap();
        out.fill_async(f32::NAN, &s).unwrap();
        let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
        // SAFETY: add_f32(const float*, const float*, float*, u32) over n elements.
        unsafe { f.launch(&s, cfg, (&dx, &dy, &mut out, n as u32)) }.unwrap();
        let got = out.to_vec_async(&s).unwrap();
        for i in 0..n {
            assert_eq!(got[i], x[i] + y[i], "element {i} of {n}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: raw PTX modules: the simulator executes the builder's IR, not PTX"]
fn ptx_kernel_launch_matches_host() {
    let c = ctx();
    let m = c.load_ptx(&kernels_ptx()).unwrap();
    check_add(&c, &m);

    // A scalar f64 argument, a 64-bit length and a grid-stride loop.
    let s = c.new_stream().unwrap();
    let f = m.function("axpy_f64").unwrap();
    let mut rng = Rng::new();
    let n = 3_000_001usize;
    let a = rng.f64() * 4.0;
    let x: Vec<f64> = rng.vec(n, |r| r.f64());
    let y: Vec<f64> = rng.vec(n, |r| r.f64());
    let dx = s.to_device(&x).unwrap();
    let mut dy = s.to_device(&y).unwrap();
    let sms = c.device().multiprocessor_count().unwrap();
    // SAFETY: axpy_f64(double, const double*, double*, u64).
    unsafe {
        f.launch(
            &s,
            LaunchConfig::new(sms * 4, 256),
            (a, &dx, &mut dy, n as u64),
        )
    }
    .unwrap();
    let got = dy.to_vec_async(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], a.mul_add(x[i], y[i]), "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: raw PTX modules (tests/data/kernels.ptx)"]
fn dynamic_shared_memory_and_barrier() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let m = c.load_ptx(&kernels_ptx()).unwrap();
    let f = m.function("reverse_blocks").unwrap();
    let mut rng = Rng::new();
    let (blocks, threads) = (300u32, 256u32);
    let n = (blocks * threads) as usize;
    let x: Vec<f32> = rng.vec(n, |r| r.f32());
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<f32, _>(n).unwrap();
    out.fill_async(f32::NAN, &s).unwrap();
    let cfg = LaunchConfig::new(blocks, threads).with_shared_mem(threads * 4);
    // SAFETY: reverse_blocks(const float*, float*) with blockDim.x floats of shared memory.
    unsafe { f.launch(&s, cfg, (dx.view(), out.view_mut())) }.unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for b in 0..blocks as usize {
        for t in 0..threads as usize {
            let base = b * threads as usize;
            assert_eq!(
                got[base + t],
                x[base + threads as usize - 1 - t],
                "block {b} thread {t}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: raw PTX modules (module globals live in PTX)"]
fn module_globals_attributes_and_occupancy() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut m = c.load_ptx(&kernels_ptx()).unwrap();
    m.global_mut::<u32>("counter").unwrap().fill(5).unwrap();
    let f = m.function("bump_counter").unwrap();
    // SAFETY: bump_counter(u32).
    unsafe { f.launch(&s, LaunchConfig::new(100, 128), (3u32,)) }.unwrap();
    s.synchronize().unwrap();
    let counter = m.global::<u32>("counter").unwrap();
    assert_eq!(counter.len(), 1);
    assert_eq!(counter.to_vec().unwrap(), vec![5 + 3 * 100 * 128]);
    assert!(m.global::<u32>("no_such_global").is_err());
    assert!(m.global::<u64>("counter").is_err(), "4 bytes are not a u64");

    let add = m.function("add_f32").unwrap();
    let attrs = add.attributes().unwrap();
    assert!(
        attrs.num_regs > 0 && attrs.max_threads_per_block >= 512,
        "{attrs:?}"
    );
    assert_eq!(attrs.local_size_bytes, 0);
    let rev = m.function("reverse_blocks").unwrap();
    let (min_grid, block) = rev.max_potential_block_size(1024, 0).unwrap();
    assert!(
        min_grid > 0 && block > 0 && block <= 1024,
        "{min_grid} {block}"
    );
    assert!(rev.max_active_blocks_per_multiprocessor(256, 1024).unwrap() >= 1);
    let cfg = add.config_for_num_elems(1_000_000).unwrap();
    assert!(cfg.grid.x as u64 * cfg.block.x as u64 >= 1_000_000);
    rev.set_max_dynamic_shared_memory(64 * 1024).unwrap();
    println!("add_f32: {attrs:?}; reverse_blocks: min grid {min_grid}, block {block}");
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: cubin/fatbin images are GPU machine code"]
fn cubin_and_fatbin_load() {
    let c = ctx();
    let cubin = std::fs::read(fixture("kernels_sm90.cubin")).unwrap();
    if c.device().compute_capability().unwrap() == (9, 0) {
        check_add(&c, &c.load_cubin(&cubin).unwrap());
    } else {
        // sm_90 machine code does not run elsewhere: the driver says so.
        assert!(c.load_cubin(&cubin).is_err());
    }
    let fatbin = std::fs::read(fixture("kernels.fatbin")).unwrap();
    check_add(&c, &c.load_fatbin(&fatbin).unwrap());
    // Data of the wrong kind is refused before the driver sees it.
    assert!(matches!(c.load_cubin(b"not an elf"), Err(Error::Usage(_))));
    assert!(matches!(c.load_fatbin(&cubin), Err(Error::Usage(_))));
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: the driver's PTX JIT log"]
fn broken_ptx_gives_the_jit_log() {
    let c = ctx();
    let broken = kernels_ptx().replace("add.f32 f3, f1, f2;", "add.f32 f3, f1, f_undeclared;");
    match c.load_ptx(&broken).unwrap_err() {
        Error::Jit { code, log } => {
            println!("JIT error {code:?}; log:\n{log}");
            assert!(log.contains("f_undeclared"), "{log}");
        }
        e => panic!("expected a JIT error, got {e:?}"),
    }
    assert!(c.load_ptx("garbage").is_err());
    // The context is fine afterwards.
    let m = c.load_ptx(&kernels_ptx()).unwrap();
    let e = m.function("no_such_kernel").unwrap_err();
    assert!(e.to_string().contains("no_such_kernel"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: raw PTX modules (tests/data/kernels.ptx)"]
fn invalid_launch_configurations_are_errors() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let m = c.load_ptx(&kernels_ptx()).unwrap();
    let f = m.function("bump_counter").unwrap();
    for cfg in [
        LaunchConfig::new(1, 2048),
        LaunchConfig::new(0, 128),
        LaunchConfig::new((1, 70_000), 32),
        LaunchConfig::new(1, (1, 1, 128)),
    ] {
        // SAFETY: bump_counter(u32); the configuration is refused before launching.
        let e = unsafe { f.launch(&s, cfg, (1u32,)) }.unwrap_err();
        assert!(matches!(e, Error::Launch(_)), "{cfg:?}: {e:?}");
    }
    // Too much dynamic shared memory: the driver refuses; an error, not a crash.
    // SAFETY: as above.
    let e = unsafe {
        f.launch(
            &s,
            LaunchConfig::new(1, 32).with_shared_mem(1 << 30),
            (1u32,),
        )
    }
    .unwrap_err();
    println!("{e}");
    s.synchronize().unwrap();
}

const FAULT_CHILD: &str = "CUDAJIT_TEST_FAULT_CHILD";

/// Runs in a child process (a fault ruins the context for the rest of the process).
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_fault_child() {
    if std::env::var_os(FAULT_CHILD).is_none() {
        return;
    }
    let c = ctx();
    let s = c.new_stream().unwrap();
    let m = c.load_ptx(&kernels_ptx()).unwrap();
    let f = m.function("write_null").unwrap();
    // SAFETY: deliberately not: write_null stores through its pointer argument, here null.
    unsafe { f.launch(&s, LaunchConfig::new(1, 1), (0u64,)) }.unwrap();
    let e = s.synchronize().unwrap_err();
    println!("FAULT: {e}");
    // The failure is sticky: later calls in this process return errors too, and nothing panics.
    let later = c.to_device(&[1.0f32, 2.0]).unwrap_err();
    println!("AFTER FAULT: {later}");
    drop((f, m, s));
    // The driver does not recover a context after a fault, not even by a reset.
    let reset = c.reset();
    println!("RESET: {reset:?}");
    let again = cudajit::Context::new(0).unwrap_err();
    println!("NEW CONTEXT: {again}");
}

#[test]
#[ignore = "needs a CUDA GPU; not on the simulator: a sticky GPU fault from a raw PTX kernel (the simulator's faults are tested in tests/simulator.rs)"]
fn kernel_fault_is_a_clear_error() {
    let out =
        crate::support::child::Child::test("modules::kernel_fault_child", FAULT_CHILD, "1").run();
    let text = out.text();
    println!("{text}");
    assert!(out.success, "child failed:\n{text}");
    assert!(
        text.contains("FAULT: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS")
            && text.contains("hint:"),
        "{text}"
    );
    assert!(
        text.contains("AFTER FAULT: ") && text.contains("NEW CONTEXT: "),
        "{text}"
    );
}
