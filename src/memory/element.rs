//! Which Rust types may live in device memory.

/// A type that may be copied to and from the device byte for byte.
///
/// # Safety
/// The type must be `Copy`, contain no pointers to host memory that the device would follow,
/// and have no padding whose contents matter.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

/// A [`DeviceCopy`] type for which every bit pattern is a valid value, so memory the device
/// has not written (e.g. from [`crate::Context::alloc`]) may be read as it.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value of the type.
pub unsafe trait AnyBitPattern: DeviceCopy {}

macro_rules! impl_pod {
    ($($t:ty),*) => {$(
        // SAFETY: a plain number: no pointers, no padding.
        unsafe impl DeviceCopy for $t {}
        // SAFETY: every bit pattern is a valid number.
        unsafe impl AnyBitPattern for $t {}
    )*};
}
impl_pod!(
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    isize,
    usize,
    half::f16,
    half::bf16
);

// SAFETY: one byte (`#[repr(transparent)]` over u8), no pointers; every bit pattern is a value.
unsafe impl DeviceCopy for crate::ir::F8E4M3 {}
// SAFETY: as above.
unsafe impl AnyBitPattern for crate::ir::F8E4M3 {}
// SAFETY: as above.
unsafe impl DeviceCopy for crate::ir::F8E5M2 {}
// SAFETY: as above.
unsafe impl AnyBitPattern for crate::ir::F8E5M2 {}

// SAFETY: one byte, no pointers; not AnyBitPattern since only 0 and 1 are valid.
unsafe impl DeviceCopy for bool {}

// SAFETY: `num_complex::Complex<T>` is `#[repr(C)]` with two fields of one float type: no
// pointers, no padding, and every bit pattern of its floats is valid.
unsafe impl DeviceCopy for num_complex::Complex<f32> {}
// SAFETY: as above.
unsafe impl AnyBitPattern for num_complex::Complex<f32> {}
// SAFETY: as above.
unsafe impl DeviceCopy for num_complex::Complex<f64> {}
// SAFETY: as above.
unsafe impl AnyBitPattern for num_complex::Complex<f64> {}
// SAFETY: arrays of device-copyable types are laid out contiguously with no padding between.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}
// SAFETY: every bit pattern of each element is valid, hence of the array.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}
