//! Unit tests of the simulator backend called directly (not through the safe API).
use super::*;
use crate::backend::{MemoryApi, ModuleApi};
use crate::error::FaultKind;
use crate::ir::testing::{copy_kernel, shared_2d_kernel, vec4_sum_kernel};
use crate::ir::FunctionIr;

/// Launches `k` directly on a fresh simulator with the given parameter slots.
fn launch(sim: &Simulator, k: &Arc<FunctionIr>, slots: &mut [u64]) -> Result<()> {
    sim.launch_ir_for_test(k, [16, 1, 1], slots)
}

/// A kernel loaded twice from one IR (two threads loading it at once) gets a function per
/// module: unloading one module leaves the other's function usable (it used to be shared
/// and removed with the first module, and launches of the other failed with
/// CUDA_ERROR_INVALID_HANDLE).
#[test]
fn a_kernel_loaded_twice_keeps_one_function_per_module() {
    let k = copy_kernel("twice");
    let sim = Simulator::new();
    let name = std::ffi::CString::new(k.name.as_str()).unwrap();
    let m1 = sim.sim_module_load_ir(k.clone()).unwrap();
    let m2 = sim.sim_module_load_ir(k.clone()).unwrap();
    // SAFETY: modules just loaded.
    let (f1, f2) = unsafe {
        (
            sim.module_function(m1, &name).unwrap().unwrap(),
            sim.module_function(m2, &name).unwrap().unwrap(),
        )
    };
    assert_ne!(f1, f2);
    // SAFETY: m1 is loaded and unloaded once.
    unsafe { sim.module_unload(m1) }.unwrap();
    assert!(sim.func(f2, "test", |st| st.max_dynamic).is_ok());
    assert!(sim.func(f1, "test", |st| st.max_dynamic).is_err());
}

#[test]
fn misaligned_vector_load_is_reported() {
    // The typed launch refuses a misaligned array before it reaches any backend; the
    // simulator checks each vector access itself too.
    let k = vec4_sum_kernel("vec4");
    let sim = Simulator::new();
    let x = sim.mem_alloc(65 * 4).unwrap();
    let out = sim.mem_alloc(16 * 4).unwrap();
    // x starts 4 bytes into its allocation: not 16-byte aligned.
    let e = launch(&sim, &k, &mut [x + 4, 64, out, 16]).unwrap_err();
    match e {
        Error::Fault {
            kernel,
            kind,
            message,
        } => {
            assert_eq!((kernel.as_str(), kind), ("vec4", FaultKind::Misaligned));
            assert!(
                message.contains(
                    "thread (0, 0, 0) of block (0, 0, 0) reads a 4-element vector at element 0 \
                     of array parameter 0"
                ) && message.contains("not 16-byte aligned"),
                "{message}"
            );
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // Aligned, it runs; an array argument outside the simulator's memory is refused.
    launch(&sim, &k, &mut [x, 64, out, 16]).unwrap();
    let e = launch(&sim, &k, &mut [x + 1024, 64, out, 16]).unwrap_err();
    assert!(e.to_string().contains("not inside one allocation"), "{e}");
}

/// An n-D index (`Op::NdIndex`) of a 2-D shared array: in range, it is the C-order flat index;
/// one past a row's end is a fault naming the dimension, the index and the extent, though the
/// flat index (the next row's first element) is inside the array.
#[test]
fn nd_index_is_checked_per_dimension() {
    let sim = Simulator::new();
    let x = sim.mem_alloc(16 * 4).unwrap();
    let out = sim.mem_alloc(16 * 4).unwrap();
    let vals: Vec<f32> = (0..16).map(|i| i as f32 * 1.5 - 3.0).collect();
    // SAFETY: `x` has 64 bytes, the source 64 bytes of live data.
    unsafe { sim.memcpy_htod(x, vals.as_ptr().cast(), 64, None) }.unwrap();
    launch(&sim, &shared_2d_kernel("nd_ok", 0), &mut [x, 16, out, 16]).unwrap();
    let mut got = vec![0f32; 16];
    // SAFETY: `out` has 64 bytes, the destination room for 64.
    unsafe { sim.memcpy_dtoh(got.as_mut_ptr().cast(), out, 64, None) }.unwrap();
    assert_eq!(got, vals);

    let e = launch(&sim, &shared_2d_kernel("nd_oob", 1), &mut [x, 16, out, 16]).unwrap_err();
    match e {
        Error::Fault {
            kernel,
            kind,
            message,
        } => {
            assert_eq!((kernel.as_str(), kind), ("nd_oob", FaultKind::OutOfBounds));
            assert!(
                message.contains(
                    "thread (3, 0, 0) of block (0, 0, 0) indexes element [0, 4] of shared \
                     array 0 (f32[4][4]): index 4 of dimension 1 is outside its extent 4"
                ),
                "{message}"
            );
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}
