//! DLPack round trips on a device (and on the simulator, with two simulated devices): export a
//! cudajit array, import the tensor back as another library would hand it over, run a kernel on
//! it in place, and check zero-copy, the values against a host model, the stream handshake,
//! the errors, and that every deleter runs exactly once (an `Arc` of the exported array: its
//! count drops back when the tensor's deleter has run).

use std::sync::Arc;

use cudajit::codegen::Kernel;
use cudajit::dlpack::{
    self, export, export_on, ffi, ConsumerStream, DlpackArray, DlpackTensor, ManagedKind,
};
use cudajit::prelude::*;
use ndarray::{Array2, Ix1, Ix2, IxDyn};

use crate::common::ctx;

/// Adds `v` to every element, in place.
fn add_kernel() -> Kernel<(&'static mut [f32], f32)> {
    Kernel::<(&mut [f32], f32)>::build("dlpack_add", |k, (x, v)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| x.set(i, x.at(i) + v));
    })
    .unwrap()
}

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

/// The tensor as a consumer sees it, handed over as a raw pointer and taken back (what a Python
/// capsule does between two libraries).
fn through_c(t: DlpackTensor) -> DlpackTensor {
    let raw = t.into_raw();
    // SAFETY: the pointer just handed out, taken back once.
    unsafe {
        match raw {
            dlpack::RawManagedTensor::Versioned(p) => DlpackTensor::from_raw_versioned(p),
            dlpack::RawManagedTensor::Legacy(p) => DlpackTensor::from_raw_legacy(p),
        }
    }
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn export_import_round_trip_with_a_kernel_in_between() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let add = add_kernel();
    for kind in [ManagedKind::Versioned, ManagedKind::Legacy] {
        let n = 1000;
        let a = Arc::new(s.to_device(&iota(n)).unwrap());
        s.synchronize().unwrap();
        let t = through_c(export(Arc::clone(&a), kind).unwrap());
        assert_eq!(t.is_versioned(), kind == ManagedKind::Versioned);
        assert_eq!(Arc::strong_count(&a), 2, "the tensor holds the array");
        {
            let d = t.dl_tensor().unwrap();
            assert_eq!(d.data as u64, a.as_raw_ptr(), "zero-copy");
            assert_eq!(d.device.device_type, ffi::DLDeviceType::kDLCUDA);
            assert_eq!(d.device.device_id, 0);
            assert_eq!(d.ndim, 1);
            assert_eq!(dlpack::dtype_name(d.dtype), "float32");
            // SAFETY: one dimension, as ndim says.
            unsafe { assert_eq!((*d.shape, *d.strides), (n as i64, 1)) };
            assert_eq!(d.byte_offset, 0);
        }
        let mut imported: DlpackArray<f32, Ix1> = c.import_dlpack(t).unwrap();
        assert_eq!(imported.device_ptr(), a.as_raw_ptr(), "zero-copy");
        assert_eq!(imported.device_type(), ffi::DLDeviceType::kDLCUDA);
        add.launch(
            &s,
            LaunchConfig::for_num_elems(n, 128).unwrap(),
            (&mut imported, 0.5f32),
        )
        .unwrap();
        // Both names of the memory see the kernel's writes.
        let want: Vec<f32> = iota(n).iter().map(|x| x + 0.5).collect();
        assert_eq!(imported.to_vec_async(&s).unwrap(), want);
        assert_eq!(a.to_vec_async(&s).unwrap(), want);
        s.synchronize().unwrap();
        drop(imported);
        assert_eq!(
            Arc::strong_count(&a),
            1,
            "the deleter ran once, at the drop"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_d_arrays_keep_shape_and_strides_and_own_their_memory() {
    let c = ctx();
    let host = Array2::from_shape_fn((3, 5), |(i, j)| (10 * i + j) as i64);
    let a = c.to_device(&host).unwrap();
    let ptr = a.as_raw_ptr();
    // The tensor owns the array: it lives until the importer drops it.
    let t = through_c(export(a, ManagedKind::Versioned).unwrap());
    let d = t.dl_tensor().unwrap();
    // SAFETY: two dimensions, as ndim says.
    let (shape, strides) = unsafe {
        (
            std::slice::from_raw_parts(d.shape, 2).to_vec(),
            std::slice::from_raw_parts(d.strides, 2).to_vec(),
        )
    };
    assert_eq!((shape, strides), (vec![3, 5], vec![5, 1]));
    let back: DlpackArray<i64, IxDyn> = c.import_dlpack(t).unwrap();
    assert_eq!(back.shape(), &[3, 5]);
    assert_eq!(back.device_ptr(), ptr);
    let got = back.to_array().unwrap();
    assert_eq!(got.into_dimensionality::<Ix2>().unwrap(), host);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_tensors_import_strided_and_are_refused_as_contiguous() {
    let c = ctx();
    let host = Array2::from_shape_fn((4, 6), |(i, j)| (i * 6 + j) as f32);
    let f = Arc::new(c.to_device_layout(&host.t()).unwrap()); // Fortran order, shape (6, 4)
    let t = export(Arc::clone(&f), ManagedKind::Legacy).unwrap();
    let err = c.import_dlpack::<f32, Ix2>(t).unwrap_err().to_string();
    assert!(err.contains("not C-contiguous"), "{err}");
    assert_eq!(Arc::strong_count(&f), 1, "the deleter ran on the refusal");

    let t = export(Arc::clone(&f), ManagedKind::Versioned).unwrap();
    let s = c.import_dlpack_strided::<f32, Ix2>(t).unwrap();
    assert_eq!(
        (s.shape(), s.strides()),
        (&[6usize, 4][..], vec![1isize, 6])
    );
    assert_eq!(s.view().to_array().unwrap(), host.t());
    drop(s);
    assert_eq!(Arc::strong_count(&f), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_dtype_device_or_memory_is_a_clear_error_and_the_deleter_still_runs() {
    let c = ctx();
    let a = Arc::new(c.to_device(&iota(64)).unwrap());
    let t = export(Arc::clone(&a), ManagedKind::Versioned).unwrap();
    let err = c.import_dlpack::<i32, Ix1>(t).unwrap_err().to_string();
    assert!(err.contains("float32") && err.contains("int32"), "{err}");
    assert_eq!(Arc::strong_count(&a), 1);

    if cudajit::device_count().unwrap() >= 2 {
        let c1 = Context::new(1).unwrap();
        let b = Arc::new(c1.to_device(&iota(8)).unwrap());
        let t = export(Arc::clone(&b), ManagedKind::Versioned).unwrap();
        let err = c.import_dlpack::<f32, Ix1>(t).unwrap_err().to_string();
        assert!(err.contains("CUDA device 1"), "{err}");
        assert_eq!(Arc::strong_count(&b), 1);
        let t = export(Arc::clone(&b), ManagedKind::Versioned).unwrap();
        let ok = c1.import_dlpack::<f32, Ix1>(t).unwrap();
        assert_eq!(ok.to_vec().unwrap(), iota(8));
    }

    // Memory the driver does not know (a host vector's address): refused before any use.
    let mut host = vec![0f32; 16];
    let mut shape = [16i64];
    let tensor = Box::new(ffi::DLManagedTensor {
        dl_tensor: ffi::DLTensor {
            data: host.as_mut_ptr().cast(),
            device: ffi::DLDevice {
                device_type: ffi::DLDeviceType::kDLCUDA,
                device_id: 0,
            },
            ndim: 1,
            dtype: <f32 as dlpack::DlpackElement>::DTYPE,
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
    });
    let p = Box::into_raw(tensor);
    // SAFETY: a valid tensor; with no deleter, this test frees it itself below.
    let t = unsafe { DlpackTensor::from_raw_legacy(p) }.unwrap();
    let err = c.import_dlpack::<f32, Ix1>(t).unwrap_err().to_string();
    assert!(err.contains("not memory the CUDA driver knows"), "{err}");
    // SAFETY: the box leaked above, no longer referenced.
    drop(unsafe { Box::from_raw(p) });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_stream_handshake_orders_the_consumer_after_the_producer() {
    let c = ctx();
    let producer = c.new_stream().unwrap();
    let consumer = c.new_stream().unwrap();
    let add = add_kernel();
    let n = 1 << 20;
    let mut a = producer.to_device(&vec![1.0f32; n]).unwrap();
    // Queued on the producer and not waited for by the host: the handshake orders it.
    for _ in 0..8 {
        add.launch(
            &producer,
            LaunchConfig::for_num_elems(n, 256).unwrap(),
            (&mut a, 1.0f32),
        )
        .unwrap();
    }
    let theirs = ConsumerStream::from_protocol(Some(dlpack::protocol_stream(&consumer))).unwrap();
    assert_eq!(theirs, ConsumerStream::Handle(consumer.raw() as u64));
    let t = export_on(a, ManagedKind::Versioned, &producer, theirs).unwrap();
    let imported: DlpackArray<f32, Ix1> = c.import_dlpack(t).unwrap();
    let got = imported.to_vec_async(&consumer).unwrap();
    assert!(got.iter().all(|&v| v == 9.0), "{:?}", &got[..4]);
    drop(imported);

    // The special streams and no synchronisation: each a valid handshake.
    for consumer in [
        ConsumerStream::from_protocol(None).unwrap(),
        ConsumerStream::PerThread,
        ConsumerStream::NoSync,
    ] {
        let b = producer.to_device(&iota(32)).unwrap();
        let t = export_on(b, ManagedKind::Legacy, &producer, consumer).unwrap();
        producer.synchronize().unwrap();
        let back: DlpackArray<f32, Ix1> = c.import_dlpack(t).unwrap();
        assert_eq!(back.to_vec().unwrap(), iota(32));
    }
    // The default stream is passed to producers as 1 (the legacy default stream).
    assert_eq!(dlpack::protocol_stream(&c.default_stream()), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn managed_memory_exports_as_cuda_managed() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let m = Arc::new(c.managed_from_slice(&iota(100)).unwrap());
    let t = export(Arc::clone(&m), ManagedKind::Versioned).unwrap();
    let d = t.dl_tensor().unwrap();
    assert_eq!(d.device.device_type, ffi::DLDeviceType::kDLCUDAManaged);
    assert_eq!(d.device.device_id, 0);
    let mut back: DlpackArray<f32, Ix1> = c.import_dlpack(t).unwrap();
    assert_eq!(back.device_type(), ffi::DLDeviceType::kDLCUDAManaged);
    add_kernel()
        .launch(
            &s,
            LaunchConfig::for_num_elems(100, 128).unwrap(),
            (&mut back, 2.0f32),
        )
        .unwrap();
    s.synchronize().unwrap();
    drop(back);
    let want: Vec<f32> = iota(100).iter().map(|x| x + 2.0).collect();
    assert_eq!(m.as_slice().unwrap(), &want[..]);
    assert_eq!(Arc::strong_count(&m), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn counters_balance_after_the_exchanges() {
    // Other tests run at once: only this test's own exchanges are counted here, by difference.
    let c = ctx();
    let before = dlpack::counters();
    let t = export(c.to_device(&iota(4)).unwrap(), ManagedKind::Versioned).unwrap();
    let t = through_c(t);
    let mid = dlpack::counters();
    assert!(mid.exported > before.exported);
    assert!(mid.adopted > before.adopted);
    drop(c.import_dlpack::<f32, Ix1>(t).unwrap());
    let after = dlpack::counters();
    assert!(after.export_deleters_run > before.export_deleters_run);
    assert!(after.adopted_deleters_called > before.adopted_deleters_called);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_host_memory_exports_as_cuda_host() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let p = Arc::new(c.pinned_from_slice(&iota(256)).unwrap());
    let host_ptr = p.as_slice().unwrap().as_ptr() as u64;
    let t = export(Arc::clone(&p), ManagedKind::Legacy).unwrap();
    let d = t.dl_tensor().unwrap();
    assert_eq!(d.device.device_type, ffi::DLDeviceType::kDLCUDAHost);
    assert_eq!((d.device.device_id, d.data as u64), (0, host_ptr));
    // The device reaches pinned memory at its host address (unified addressing): a kernel
    // writes it in place.
    let mut back: DlpackArray<f32, Ix1> = c.import_dlpack(t).unwrap();
    assert_eq!(back.device_type(), ffi::DLDeviceType::kDLCUDAHost);
    add_kernel()
        .launch(
            &s,
            LaunchConfig::for_num_elems(256, 128).unwrap(),
            (&mut back, 3.0f32),
        )
        .unwrap();
    s.synchronize().unwrap();
    drop(back);
    let want: Vec<f32> = iota(256).iter().map(|x| x + 3.0).collect();
    assert_eq!(p.as_slice().unwrap(), &want[..]);
    assert_eq!(Arc::strong_count(&p), 1);
}
