//! CPU tests of the DLPack structs, data types, stream conventions and import checks (no
//! device: the round trips through a device are in tests/gpu/dlpack.rs, run on the simulator).

use std::mem::{align_of, offset_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::{Dimension, Ix1, Ix2, IxDyn};

use super::ffi::*;
use super::import::{check, overlaps};
use super::*;
use crate::memory::layout::is_standard;

/// The C layout of dlpack.h on every 64-bit target (LP64 and LLP64 alike: the enums are
/// 32-bit, pointers 64-bit), as a C compiler lays it out.
#[test]
#[cfg(target_pointer_width = "64")]
fn struct_layout_matches_dlpack_h() {
    assert_eq!(
        (size_of::<DLPackVersion>(), align_of::<DLPackVersion>()),
        (8, 4)
    );
    assert_eq!(offset_of!(DLPackVersion, minor), 4);
    assert_eq!((size_of::<DLDevice>(), align_of::<DLDevice>()), (8, 4));
    assert_eq!(offset_of!(DLDevice, device_id), 4);
    assert_eq!((size_of::<DLDataType>(), align_of::<DLDataType>()), (4, 2));
    assert_eq!(
        (
            offset_of!(DLDataType, code),
            offset_of!(DLDataType, bits),
            offset_of!(DLDataType, lanes)
        ),
        (0, 1, 2)
    );
    assert_eq!((size_of::<DLTensor>(), align_of::<DLTensor>()), (48, 8));
    let t = [
        offset_of!(DLTensor, data),
        offset_of!(DLTensor, device),
        offset_of!(DLTensor, ndim),
        offset_of!(DLTensor, dtype),
        offset_of!(DLTensor, shape),
        offset_of!(DLTensor, strides),
        offset_of!(DLTensor, byte_offset),
    ];
    assert_eq!(t, [0, 8, 16, 20, 24, 32, 40]);
    assert_eq!(size_of::<DLManagedTensor>(), 64);
    assert_eq!(
        [
            offset_of!(DLManagedTensor, dl_tensor),
            offset_of!(DLManagedTensor, manager_ctx),
            offset_of!(DLManagedTensor, deleter)
        ],
        [0, 48, 56]
    );
    assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
    assert_eq!(
        [
            offset_of!(DLManagedTensorVersioned, version),
            offset_of!(DLManagedTensorVersioned, manager_ctx),
            offset_of!(DLManagedTensorVersioned, deleter),
            offset_of!(DLManagedTensorVersioned, flags),
            offset_of!(DLManagedTensorVersioned, dl_tensor)
        ],
        [0, 8, 16, 24, 32]
    );
    // The enums' values, as the header has them.
    assert_eq!(
        (
            DLDeviceType::kDLCPU.0,
            DLDeviceType::kDLCUDA.0,
            DLDeviceType::kDLCUDAHost.0
        ),
        (1, 2, 3)
    );
    assert_eq!(DLDeviceType::kDLCUDAManaged.0, 13);
    assert_eq!((DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION), (1, 1));
    assert_eq!(DLPACK_FLAG_BITMASK_READ_ONLY, 1);
}

fn dt(code: DLDataTypeCode, bits: u8) -> DLDataType {
    DLDataType {
        code: code.0 as u8,
        bits,
        lanes: 1,
    }
}

#[test]
fn dtypes_map_both_ways() {
    use num_complex::Complex;
    let table: [(DLDataType, DLDataType, &str); 17] = [
        (i8::DTYPE, dt(DLDataTypeCode::kDLInt, 8), "int8"),
        (i16::DTYPE, dt(DLDataTypeCode::kDLInt, 16), "int16"),
        (i32::DTYPE, dt(DLDataTypeCode::kDLInt, 32), "int32"),
        (i64::DTYPE, dt(DLDataTypeCode::kDLInt, 64), "int64"),
        (u8::DTYPE, dt(DLDataTypeCode::kDLUInt, 8), "uint8"),
        (u16::DTYPE, dt(DLDataTypeCode::kDLUInt, 16), "uint16"),
        (u32::DTYPE, dt(DLDataTypeCode::kDLUInt, 32), "uint32"),
        (u64::DTYPE, dt(DLDataTypeCode::kDLUInt, 64), "uint64"),
        (
            half::f16::DTYPE,
            dt(DLDataTypeCode::kDLFloat, 16),
            "float16",
        ),
        (f32::DTYPE, dt(DLDataTypeCode::kDLFloat, 32), "float32"),
        (f64::DTYPE, dt(DLDataTypeCode::kDLFloat, 64), "float64"),
        (
            half::bf16::DTYPE,
            dt(DLDataTypeCode::kDLBfloat, 16),
            "bfloat16",
        ),
        (bool::DTYPE, dt(DLDataTypeCode::kDLBool, 8), "bool"),
        (
            crate::F8E4M3::DTYPE,
            dt(DLDataTypeCode::kDLFloat8_e4m3fn, 8),
            "float8_e4m3fn",
        ),
        (
            crate::F8E5M2::DTYPE,
            dt(DLDataTypeCode::kDLFloat8_e5m2, 8),
            "float8_e5m2",
        ),
        (
            Complex::<f32>::DTYPE,
            dt(DLDataTypeCode::kDLComplex, 64),
            "complex64",
        ),
        (
            Complex::<f64>::DTYPE,
            dt(DLDataTypeCode::kDLComplex, 128),
            "complex128",
        ),
    ];
    for (i, (ours, want, name)) in table.iter().enumerate() {
        assert_eq!(ours, want, "{name}");
        assert_eq!(dtype_name(*ours), *name);
        // Each DLPack type names exactly one cudajit type.
        for (j, (other, _, _)) in table.iter().enumerate() {
            assert_eq!(i == j, ours == other, "{name}");
        }
    }
    // The bits of each type are its size.
    assert_eq!(u32::from(f64::DTYPE.bits), 8 * size_of::<f64>() as u32);
    assert_eq!(
        u32::from(Complex::<f32>::DTYPE.bits),
        8 * size_of::<Complex<f32>>() as u32
    );
    let vec4 = DLDataType {
        lanes: 4,
        ..f32::DTYPE
    };
    assert_eq!(dtype_name(vec4), "float32x4");
    assert_eq!(
        dtype_name(DLDataType {
            code: 99,
            bits: 8,
            lanes: 1
        }),
        "(type code 99, 8 bits, 1 lanes)"
    );
}

#[test]
fn stream_protocol_values() {
    assert_eq!(
        ConsumerStream::from_protocol(None),
        Ok(ConsumerStream::Legacy)
    );
    assert_eq!(
        ConsumerStream::from_protocol(Some(1)),
        Ok(ConsumerStream::Legacy)
    );
    assert_eq!(
        ConsumerStream::from_protocol(Some(2)),
        Ok(ConsumerStream::PerThread)
    );
    assert_eq!(
        ConsumerStream::from_protocol(Some(-1)),
        Ok(ConsumerStream::NoSync)
    );
    assert_eq!(
        ConsumerStream::from_protocol(Some(0x7f00_1234)),
        Ok(ConsumerStream::Handle(0x7f00_1234))
    );
    let zero = ConsumerStream::from_protocol(Some(0))
        .unwrap_err()
        .to_string();
    assert!(zero.contains("stream=0"), "{zero}");
    assert!(ConsumerStream::from_protocol(Some(-2)).is_err());
    assert_eq!(ConsumerStream::NoSync.raw(), None);
    assert_eq!(
        ConsumerStream::Legacy.raw(),
        Some(1 as cudajit_sys::CUstream)
    );
    assert_eq!(
        ConsumerStream::PerThread.raw(),
        Some(2 as cudajit_sys::CUstream)
    );
}

#[test]
fn overlap_test_is_exact_on_common_layouts() {
    assert!(!overlaps(&[4, 5], &[5, 1])); // C order
    assert!(!overlaps(&[4, 5], &[1, 4])); // Fortran order
    assert!(!overlaps(&[4, 5], &[10, 2])); // every other column
    assert!(!overlaps(&[4, 5], &[(-5isize) as usize, 1])); // reversed rows
    assert!(!overlaps(&[1, 5], &[0, 1])); // a length-1 axis may have any stride
    assert!(!overlaps(&[0, 5], &[0, 0])); // empty
    assert!(overlaps(&[4, 5], &[0, 1])); // torch's expand
    assert!(overlaps(&[2, 2], &[1, 1]));
    assert!(overlaps(&[3, 4], &[2, 1]));
}

/// A tensor made by hand, as another producer would make it; its deleter counts its calls
/// in the counter `manager_ctx` points to.
struct Fake {
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    calls: Box<AtomicUsize>,
}

impl Fake {
    fn new(shape: &[i64], strides: Option<&[i64]>) -> Fake {
        Fake {
            shape: shape.to_vec(),
            strides: strides.map(<[i64]>::to_vec),
            calls: Box::new(AtomicUsize::new(0)),
        }
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
    fn dl_tensor(&mut self, device: DLDevice, dtype: DLDataType, data: u64) -> DLTensor {
        DLTensor {
            data: data as *mut std::ffi::c_void,
            device,
            ndim: self.shape.len() as i32,
            dtype,
            shape: self.shape.as_mut_ptr(),
            strides: self
                .strides
                .as_mut()
                .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        }
    }
    fn legacy(&mut self, device: DLDevice, dtype: DLDataType, data: u64) -> DlpackTensor {
        unsafe extern "C" fn del(p: *mut DLManagedTensor) {
            // SAFETY: the test's own tensor, boxed below; manager_ctx is its counter.
            unsafe {
                (*(*p).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
                drop(Box::from_raw(p));
            }
        }
        let m = Box::new(DLManagedTensor {
            dl_tensor: self.dl_tensor(device, dtype, data),
            manager_ctx: (&*self.calls as *const AtomicUsize).cast_mut().cast(),
            deleter: Some(del),
        });
        // SAFETY: a valid tensor owned by nobody else.
        unsafe { DlpackTensor::from_raw_legacy(Box::into_raw(m)) }.unwrap()
    }
    fn versioned(
        &mut self,
        device: DLDevice,
        dtype: DLDataType,
        data: u64,
        major: u32,
        flags: u64,
    ) -> DlpackTensor {
        unsafe extern "C" fn del(p: *mut DLManagedTensorVersioned) {
            // SAFETY: as for the legacy one.
            unsafe {
                (*(*p).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
                drop(Box::from_raw(p));
            }
        }
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major, minor: 0 },
            manager_ctx: (&*self.calls as *const AtomicUsize).cast_mut().cast(),
            deleter: Some(del),
            flags,
            dl_tensor: self.dl_tensor(device, dtype, data),
        });
        // SAFETY: a valid tensor owned by nobody else.
        unsafe { DlpackTensor::from_raw_versioned(Box::into_raw(m)) }.unwrap()
    }
}

fn cuda(id: i32) -> DLDevice {
    DLDevice {
        device_type: DLDeviceType::kDLCUDA,
        device_id: id,
    }
}

const ADDR: u64 = 0x7f00_0000_0100;

#[test]
fn deleter_runs_once_on_drop_and_not_after_into_raw() {
    let mut f = Fake::new(&[2, 3], None);
    let t = f.legacy(cuda(0), f32::DTYPE, ADDR);
    assert!(!t.is_versioned());
    assert_eq!(f.calls(), 0);
    drop(t);
    assert_eq!(f.calls(), 1);

    let t = f.versioned(cuda(0), f32::DTYPE, ADDR, 1, 0);
    assert_eq!(t.version(), Some(DLPackVersion { major: 1, minor: 0 }));
    let raw = t.into_raw();
    assert_eq!(raw.capsule_name(), "dltensor_versioned");
    assert_eq!(
        f.calls(),
        1,
        "into_raw hands the tensor on without deleting it"
    );
    let RawManagedTensor::Versioned(p) = raw else {
        panic!("{raw:?}")
    };
    // SAFETY: the pointer just handed out, taken back once.
    drop(unsafe { DlpackTensor::from_raw_versioned(p) }.unwrap());
    assert_eq!(f.calls(), 2);
    // SAFETY: null is refused before anything is read.
    assert!(unsafe { DlpackTensor::from_raw_legacy(std::ptr::null_mut()) }.is_err());
}

#[test]
fn import_checks_accept_good_tensors() {
    let mut f = Fake::new(&[2, 3], None);
    let t = f.versioned(cuda(1), f32::DTYPE, ADDR, 1, 0);
    let (lay, kind) = check::<f32, Ix2>(1, &t).unwrap();
    assert_eq!(
        (lay.ptr, lay.dim, kind),
        (ADDR, Ix2(2, 3), DLDeviceType::kDLCUDA)
    );
    assert!(is_standard(lay.dim.slice(), lay.strides.slice()));
    let (lay, _) = check::<f32, IxDyn>(1, &t).unwrap();
    assert_eq!(lay.dim.slice(), &[2, 3]);
    drop(t);

    // Explicit strides, Fortran order: accepted by the check, not C-contiguous.
    let mut f = Fake::new(&[2, 3], Some(&[1, 2]));
    let mut t = f.legacy(cuda(0), f64::DTYPE, ADDR);
    let (lay, _) = check::<f64, Ix2>(0, &t).unwrap();
    assert!(!is_standard(lay.dim.slice(), lay.strides.slice()));
    drop(t);
    // Managed memory is reachable from every device; byte_offset is honoured.
    let mut f = Fake::new(&[4], None);
    t = f.legacy(
        DLDevice {
            device_type: DLDeviceType::kDLCUDAManaged,
            device_id: 0,
        },
        i32::DTYPE,
        ADDR,
    );
    let (lay, kind) = check::<i32, Ix1>(3, &t).unwrap();
    assert_eq!((lay.ptr, kind), (ADDR, DLDeviceType::kDLCUDAManaged));
    drop(t);
    assert_eq!(f.calls(), 1);
    // An empty tensor may have a null data pointer; a 0-d one has no shape.
    let mut f = Fake::new(&[0, 3], None);
    let t = f.legacy(cuda(0), f32::DTYPE, 0);
    assert!(check::<f32, Ix2>(0, &t).is_ok());
    let mut f = Fake::new(&[], None);
    let t = f.legacy(cuda(0), f32::DTYPE, ADDR);
    assert_eq!(check::<f32, IxDyn>(0, &t).unwrap().0.dim.ndim(), 0);
}

/// The error message of importing `t` as `T`, `D` on device 0; the deleter still runs once.
fn refused<T: DlpackElement, D: ndarray::Dimension>(f: &Fake, t: DlpackTensor) -> String {
    let before = f.calls();
    let msg = check::<T, D>(0, &t).expect_err("refused").to_string();
    drop(t);
    assert_eq!(f.calls(), before + 1);
    msg
}

#[test]
fn import_checks_refuse_what_cudajit_cannot_use() {
    let mut f = Fake::new(&[2, 3], None);
    let cpu = DLDevice {
        device_type: DLDeviceType::kDLCPU,
        device_id: 0,
    };
    let t = f.legacy(cpu, f32::DTYPE, ADDR);
    let m = refused::<f32, Ix2>(&f, t);
    assert!(m.contains("CPU tensor") && m.contains("t.cuda()"), "{m}");

    let t = f.legacy(cuda(1), f32::DTYPE, ADDR);
    let m = refused::<f32, Ix2>(&f, t);
    assert!(m.contains("CUDA device 1") && m.contains("device 0"), "{m}");

    let rocm = DLDevice {
        device_type: DLDeviceType::kDLROCM,
        device_id: 0,
    };
    let t = f.legacy(rocm, f32::DTYPE, ADDR);
    assert!(refused::<f32, Ix2>(&f, t).contains("device type 10"));

    let t = f.legacy(cuda(0), f64::DTYPE, ADDR);
    let m = refused::<f32, Ix2>(&f, t);
    assert!(m.contains("float64") && m.contains("float32"), "{m}");

    let t = f.legacy(cuda(0), f32::DTYPE, ADDR);
    let m = refused::<f32, Ix1>(&f, t);
    assert!(
        m.contains("2 dimensions") && m.contains("array type 1"),
        "{m}"
    );

    let t = f.legacy(cuda(0), f32::DTYPE, ADDR + 2);
    assert!(refused::<f32, Ix2>(&f, t).contains("not aligned"));

    let t = f.legacy(cuda(0), f32::DTYPE, 0);
    assert!(refused::<f32, Ix2>(&f, t).contains("null data pointer"));

    let t = f.versioned(
        cuda(0),
        f32::DTYPE,
        ADDR,
        1,
        u64::from(DLPACK_FLAG_BITMASK_READ_ONLY),
    );
    assert!(refused::<f32, Ix2>(&f, t).contains("read-only"));

    // Another major version: nothing past the deleter may be read; the deleter still runs.
    let t = f.versioned(cuda(0), f32::DTYPE, ADDR, 2, 0);
    assert!(t.dl_tensor().is_err());
    assert!(refused::<f32, Ix2>(&f, t).contains("DLPack 2.0"));

    // Strides far outside the address space: refused, no overflow.
    let mut h = Fake::new(&[1 << 40, 2], Some(&[1 << 40, 1 << 62]));
    let t = h.legacy(cuda(0), f32::DTYPE, ADDR);
    assert!(refused::<f32, Ix2>(&h, t).contains("overflows the address space"));
    let mut h = Fake::new(&[3], Some(&[-(1 << 60)]));
    let t = h.legacy(cuda(0), f32::DTYPE, ADDR);
    assert!(refused::<f32, Ix1>(&h, t).contains("overflows the address space"));

    let mut g = Fake::new(&[2, -3], None);
    let t = g.legacy(cuda(0), f32::DTYPE, ADDR);
    assert!(refused::<f32, Ix2>(&g, t).contains("negative extent"));
    assert_eq!(f.calls(), 9);
}
