//! Unit tests of the simulator's devices (`Simulator::with_devices`, not the environment).
use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::super::Simulator;
use super::parse_devices;
use crate::backend::{DeviceApi, LaunchApi, MemoryApi, ModuleApi, StreamApi};
use crate::error::{Error, FaultKind, Result};
use crate::ir::{testing, FunctionIr};
use cudajit_sys as sys;

/// The driver code of an error (panics on another error: a test failure).
fn code(e: Error) -> sys::CUresult {
    e.driver_code()
        .map(|c| c.0)
        .unwrap_or_else(|| panic!("{e}"))
}

/// Makes device `d`'s primary context current on this thread; its handle.
fn use_device(sim: &Simulator, d: i32) -> sys::CUcontext {
    let ctx = sim.primary_ctx_retain(d).unwrap();
    // SAFETY: a context the simulator just handed out.
    unsafe { sim.ctx_set_current(ctx) }.unwrap();
    ctx
}

/// Leaves this thread without a current context (the thread-local is shared by simulators).
fn no_device(sim: &Simulator) {
    // SAFETY: the null context is always accepted.
    unsafe { sim.ctx_set_current(std::ptr::null_mut()) }.unwrap();
}

/// The message of `e`, which must be a peer-access fault (panics otherwise: a test failure).
fn peer_fault_message(e: Error) -> String {
    match e {
        Error::Fault {
            kind: FaultKind::PeerAccess,
            message,
            ..
        } => message,
        other => panic!("expected a peer-access fault, got {other:?}"),
    }
}

/// `out[i] = x[i]` for 16 elements (the kernel of these tests' launches).
fn copy_kernel() -> Arc<FunctionIr> {
    testing::copy_kernel("copy16")
}

/// Loads `k` in the current context; its function.
fn load(sim: &Simulator, k: &Arc<FunctionIr>) -> sys::CUfunction {
    let m = sim.sim_module_load_ir(k.clone()).unwrap();
    let name = CString::new(k.name.as_str()).unwrap();
    // SAFETY: a module just loaded.
    unsafe { sim.module_function(m, &name) }
        .unwrap()
        .expect("the kernel")
}

/// Launches `f` (a `copy_kernel`) on `stream` with 16-element arrays `x` and `out`.
fn launch(
    sim: &Simulator,
    f: sys::CUfunction,
    stream: sys::CUstream,
    x: u64,
    out: u64,
) -> Result<()> {
    let mut slots = [x, 16, out, 16];
    let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| (s as *mut u64).cast()).collect();
    // SAFETY: one pointer per parameter slot of the kernel, each to a live u64.
    unsafe { sim.launch_kernel(f, [1, 1, 1], [16, 1, 1], 0, stream, ptrs.as_mut_ptr()) }
}

fn upload(sim: &Simulator, p: u64, v: &[f32]) {
    // SAFETY: `p` is simulator memory of at least `v`'s size (the tests allocate 64 bytes).
    unsafe { sim.memcpy_htod(p, v.as_ptr().cast(), std::mem::size_of_val(v), None) }.unwrap();
}

fn download(sim: &Simulator, p: u64) -> Vec<f32> {
    let mut v = vec![0f32; 16];
    // SAFETY: `p` is simulator memory of 64 bytes; `v` has 64 writable bytes.
    unsafe { sim.memcpy_dtoh(v.as_mut_ptr().cast(), p, 64, None) }.unwrap();
    v
}

#[test]
fn the_device_count_comes_from_the_variable_or_is_refused_clearly() {
    assert_eq!(parse_devices(None), Ok(1));
    assert_eq!(parse_devices(Some(" ")), Ok(1));
    assert_eq!(parse_devices(Some(" 2 ")), Ok(2));
    assert_eq!(parse_devices(Some("8")), Ok(8));
    for bad in ["0", "9", "two", "-1", "2.0"] {
        let e = parse_devices(Some(bad)).unwrap_err();
        assert!(
            e.contains("CUDAJIT_SIM_DEVICES") && e.contains("1 to 8"),
            "{e}"
        );
    }
    assert_eq!(Simulator::with_devices(1).device_count().unwrap(), 1);
}

#[test]
fn every_device_has_its_own_context_name_uuid_and_bus() {
    let sim = Simulator::with_devices(3);
    assert_eq!(sim.device_count().unwrap(), 3);
    assert_eq!(sim.device_get(2).unwrap(), 2);
    for bad in [3, -1] {
        let e = sim.device_get(bad).unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_DEVICE);
    }
    let ctxs: Vec<usize> = (0..3)
        .map(|d| sim.primary_ctx_retain(d).unwrap() as usize)
        .collect();
    let names: Vec<String> = (0..3).map(|d| sim.device_name(d).unwrap()).collect();
    let uuids: Vec<[u8; 16]> = (0..3).map(|d| sim.device_uuid(d).unwrap()).collect();
    let buses: Vec<String> = (0..3).map(|d| sim.device_pci_bus_id(d).unwrap()).collect();
    assert_eq!(names[0], super::DEVICE_NAME);
    assert_eq!(names[2], "cudajit simulator 2");
    for i in 0..3 {
        assert_ne!(ctxs[i], 0);
        for j in 0..i {
            assert_ne!(ctxs[i], ctxs[j]);
            assert_ne!(names[i], names[j]);
            assert_ne!(uuids[i], uuids[j]);
            assert_ne!(buses[i], buses[j]);
        }
    }
    // The same context for the same device; the current context says its device.
    assert_eq!(sim.primary_ctx_retain(1).unwrap() as usize, ctxs[1]);
    for d in [2, 0, 1] {
        use_device(&sim, d);
        assert_eq!(sim.ctx_get_device().unwrap(), d);
    }
    // SAFETY: a made-up handle, refused.
    let e = unsafe { sim.ctx_set_current((ctxs[2] + 4096) as sys::CUcontext) }.unwrap_err();
    assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
    no_device(&sim);
    let e = sim.ctx_get_device().unwrap_err();
    assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
}

#[test]
fn memory_info_and_pools_are_per_device() {
    let sim = Simulator::with_devices(2);
    use_device(&sim, 0);
    let (free0, total) = sim.mem_get_info().unwrap();
    let a = sim.mem_alloc(1 << 20).unwrap();
    assert_eq!(sim.mem_get_info().unwrap(), (free0 - (1 << 20), total));
    use_device(&sim, 1);
    assert_eq!(sim.device_total_mem(1).unwrap(), total);
    assert_eq!(
        sim.mem_get_info().unwrap(),
        (total, total),
        "device 1 has nothing yet"
    );
    let s1 = sim.stream_create(0, 0).unwrap();
    // SAFETY: a stream just made.
    let b = unsafe { sim.mem_alloc_async(3 << 20, s1) }.unwrap();
    assert_eq!(sim.mem_get_info().unwrap().0, total - (3 << 20));
    let (p0, p1) = (
        sim.device_default_mem_pool(0).unwrap(),
        sim.device_default_mem_pool(1).unwrap(),
    );
    assert_ne!(p0, p1);
    let used = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    // SAFETY: the pools are the simulator's.
    unsafe {
        assert_eq!(sim.mem_pool_attribute(p1, used).unwrap(), 3 << 20);
        assert_eq!(sim.mem_pool_attribute(p0, used).unwrap(), 0);
        sim.mem_free_async(b, s1).unwrap();
        assert_eq!(sim.mem_pool_attribute(p1, used).unwrap(), 0);
        let e = sim
            .mem_pool_attribute((p1 as usize + 4096) as _, used)
            .unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_HANDLE);
        sim.mem_free(a).unwrap();
    }
    use_device(&sim, 0);
    assert_eq!(sim.mem_get_info().unwrap(), (free0, total));
    no_device(&sim);
}

#[test]
fn peer_access_is_enabled_once_and_copies_cross_devices() {
    let sim = Simulator::with_devices(2);
    assert!(sim.device_can_access_peer(0, 1).unwrap());
    assert!(!sim.device_can_access_peer(1, 1).unwrap());
    let c1 = sim.primary_ctx_retain(1).unwrap();
    let c0 = use_device(&sim, 0);
    // SAFETY (all): contexts the simulator handed out; memory it allocated, 64 bytes each.
    unsafe {
        let e = sim.ctx_enable_peer_access(c0).unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_DEVICE);
        sim.ctx_enable_peer_access(c1).unwrap();
        let e = sim.ctx_enable_peer_access(c1).unwrap_err();
        assert_eq!(
            code(e),
            sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        );
        let x0 = sim.mem_alloc(64).unwrap();
        use_device(&sim, 1);
        let x1 = sim.mem_alloc(64).unwrap();
        let host: Vec<f32> = (0..16).map(|i| i as f32).collect();
        upload(&sim, x0, &host);
        sim.memcpy_peer(x1, c1, x0, c0, 64, None).unwrap();
        assert_eq!(download(&sim, x1), host);
        // A pointer named with the wrong context is refused.
        let e = sim.memcpy_peer(x1, c0, x0, c0, 64, None).unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_VALUE);
        let e = sim
            .memcpy_peer(x1, 12345 as sys::CUcontext, x0, c0, 64, None)
            .unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
    }
    no_device(&sim);
}

#[test]
fn a_kernel_reaches_another_device_only_with_peer_access() {
    let sim = Simulator::with_devices(2);
    let k = copy_kernel();
    let c1 = sim.primary_ctx_retain(1).unwrap();
    use_device(&sim, 1);
    let x1 = sim.mem_alloc(64).unwrap();
    let host: Vec<f32> = (0..16).map(|i| i as f32 * 2.0).collect();
    upload(&sim, x1, &host);
    use_device(&sim, 0);
    let f = load(&sim, &k);
    let out0 = sim.mem_alloc(64).unwrap();
    let message = peer_fault_message(launch(&sim, f, std::ptr::null_mut(), x1, out0).unwrap_err());
    assert!(
        message.contains("memory of device 1")
            && message.contains("runs on device 0")
            && message.contains("enable_peer_access"),
        "{message}"
    );
    assert_eq!(download(&sim, out0), vec![0.0; 16], "nothing ran");
    // SAFETY: device 1's context.
    unsafe { sim.ctx_enable_peer_access(c1) }.unwrap();
    launch(&sim, f, std::ptr::null_mut(), x1, out0).unwrap();
    assert_eq!(download(&sim, out0), host);
    // One direction only: device 1 still cannot reach device 0's memory.
    use_device(&sim, 1);
    let f1 = load(&sim, &k);
    let out1 = sim.mem_alloc(64).unwrap();
    peer_fault_message(launch(&sim, f1, std::ptr::null_mut(), out0, out1).unwrap_err());
    // Managed memory belongs to every device.
    let m = sim.mem_alloc_managed(64).unwrap();
    upload(&sim, m, &host);
    use_device(&sim, 0);
    launch(&sim, f, std::ptr::null_mut(), m, out0).unwrap();
    // A reset of device 1's context ends the peer mapping to it.
    sim.primary_ctx_reset(1).unwrap();
    peer_fault_message(launch(&sim, f, std::ptr::null_mut(), x1, out0).unwrap_err());
    no_device(&sim);
}

#[test]
fn handles_of_another_context_are_refused_as_by_the_driver() {
    let sim = Simulator::with_devices(2);
    let k = copy_kernel();
    use_device(&sim, 1);
    let s1 = sim.stream_create(0, 0).unwrap();
    let e1 = sim.event_create(0).unwrap();
    let f1 = load(&sim, &k);
    use_device(&sim, 0);
    let s0 = sim.stream_create(0, 0).unwrap();
    let e0 = sim.event_create(0).unwrap();
    let f0 = load(&sim, &k);
    let (x, out) = (sim.mem_alloc(64).unwrap(), sim.mem_alloc(64).unwrap());
    // A function of device 1 while device 0's context is current.
    let e = launch(&sim, f1, s0, x, out).unwrap_err();
    assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
    // Device 0's function on device 1's stream.
    let e = launch(&sim, f0, s1, x, out).unwrap_err();
    assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_HANDLE);
    launch(&sim, f0, s0, x, out).unwrap();
    // SAFETY (all): streams and events just made.
    unsafe {
        let e = sim.event_record(e1, s0).unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_HANDLE);
        sim.event_record(e0, s0).unwrap();
        // A stream waits on an event of another device.
        sim.stream_wait_event(s1, e0).unwrap();
        use_device(&sim, 1);
        sim.event_record(e1, s1).unwrap();
        // The null stream is the current context's.
        sim.event_record(e1, std::ptr::null_mut()).unwrap();
        let e = sim.event_record(e0, std::ptr::null_mut()).unwrap_err();
        assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_HANDLE);
    }
    no_device(&sim);
}

#[test]
fn pool_memory_of_a_peer_needs_the_pools_grant_not_only_peer_access() {
    let sim = Simulator::with_devices(2);
    let k = copy_kernel();
    let c1 = sim.primary_ctx_retain(1).unwrap();
    use_device(&sim, 1);
    let s1 = sim.stream_create(0, 0).unwrap();
    // SAFETY: a stream of the current context.
    let x1 = unsafe { sim.mem_alloc_async(64, s1) }.unwrap();
    let host: Vec<f32> = (0..16).map(|i| i as f32 - 3.5).collect();
    upload(&sim, x1, &host);
    use_device(&sim, 0);
    // SAFETY: device 1's context.
    unsafe { sim.ctx_enable_peer_access(c1) }.unwrap();
    let f = load(&sim, &k);
    let out0 = sim.mem_alloc(64).unwrap();
    // Peer access on the context does not reach device 1's pool (as on the GPU).
    let message = peer_fault_message(launch(&sim, f, std::ptr::null_mut(), x1, out0).unwrap_err());
    assert!(
        message.contains("memory pool") && message.contains("cuMemPoolSetAccess"),
        "{message}"
    );
    let pool1 = sim.device_default_mem_pool(1).unwrap();
    // SAFETY: device 1's default pool.
    unsafe { sim.mem_pool_grant_access(pool1, 0) }.unwrap();
    launch(&sim, f, std::ptr::null_mut(), x1, out0).unwrap();
    assert_eq!(download(&sim, out0), host);
    // A bad device is refused as by the driver.
    // SAFETY: as above.
    let e = unsafe { sim.mem_pool_grant_access(pool1, 7) }.unwrap_err();
    assert_eq!(code(e), sys::CUresult::CUDA_ERROR_INVALID_DEVICE);
    no_device(&sim);
}
