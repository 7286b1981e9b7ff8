//! Exporting cudajit memory as DLPack tensors, with the `__dlpack__(stream=...)` handshake.

use std::any::Any;
use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use cudajit_sys as sys;
use ndarray::Dimension;

use super::dtype::DlpackElement;
use super::ffi::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion,
    DLTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use super::stream::ConsumerStream;
use super::tensor::{
    count_export, count_export_deleted, DlpackTensor, ManagedKind, RawManagedTensor,
};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice, ManagedBuffer, PinnedHostBuffer, StridedArray};
use crate::stream::Stream;

/// What an exported tensor describes.
pub struct Parts<'a> {
    /// The context of device memory (`None` for pinned host memory, which every context reaches).
    ctx: Option<&'a Context>,
    device: DLDevice,
    /// Address of element `[0, ..., 0]` (0 for an empty array).
    ptr: u64,
    dtype: DLDataType,
    shape: Vec<i64>,
    /// Element strides.
    strides: Vec<i64>,
}

mod private {
    /// Sealed: describes the memory of an exportable value.
    pub trait Describe {
        /// The tensor's description (after any copy in flight into or out of it).
        fn describe(&self) -> crate::error::Result<super::Parts<'_>>;
    }
}

/// A value cudajit can hand to another library as a DLPack tensor: it owns (or shares, through
/// an `Arc`) the memory, and the exported tensor keeps it alive until its deleter runs.
///
/// Device arrays ([`DeviceArray`], [`StridedArray`]) export as `kDLCUDA` tensors of their device;
/// [`ManagedBuffer`] as `kDLCUDAManaged` and [`PinnedHostBuffer`] as `kDLCUDAHost` (device id 0,
/// as DLPack says for managed and pinned memory; a pinned buffer first waits for its copy in
/// flight, and its address is the host's, which the device shares). An
/// `Arc` of any of them exports a tensor that shares the memory with the cudajit side (both
/// see each other's writes: order them with streams).
pub trait ToDlpack: private::Describe + Send + 'static {}

fn dims(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

fn cuda_device(ctx: &Context) -> DLDevice {
    DLDevice {
        device_type: DLDeviceType::kDLCUDA,
        device_id: ctx.device().ordinal() as i32,
    }
}

impl<T: DlpackElement, D: Dimension> private::Describe for DeviceArray<T, D> {
    fn describe(&self) -> Result<Parts<'_>> {
        Ok(Parts {
            ctx: Some(self.context()),
            device: cuda_device(self.context()),
            ptr: self.device_ptr(),
            dtype: T::DTYPE,
            shape: dims(self.shape()),
            strides: self.strides().iter().map(|&s| s as i64).collect(),
        })
    }
}
impl<T: DlpackElement, D: Dimension + 'static> ToDlpack for DeviceArray<T, D> {}

impl<T: DlpackElement, D: Dimension> private::Describe for StridedArray<T, D> {
    fn describe(&self) -> Result<Parts<'_>> {
        let v = self.view();
        let ptr = if v.is_empty() { 0 } else { v.device_ptr() };
        Ok(Parts {
            ctx: Some(self.storage().context()),
            device: cuda_device(self.storage().context()),
            ptr,
            dtype: T::DTYPE,
            shape: dims(v.shape()),
            strides: v.strides().iter().map(|&s| s as i64).collect(),
        })
    }
}
impl<T: DlpackElement, D: Dimension + 'static> ToDlpack for StridedArray<T, D> {}

impl<T: DlpackElement> private::Describe for ManagedBuffer<T> {
    fn describe(&self) -> Result<Parts<'_>> {
        Ok(Parts {
            ctx: Some(self.context()),
            device: DLDevice {
                device_type: DLDeviceType::kDLCUDAManaged,
                device_id: 0,
            },
            ptr: self.device_ptr(),
            dtype: T::DTYPE,
            shape: dims(self.shape()),
            strides: vec![1; self.shape().len()],
        })
    }
}
impl<T: DlpackElement> ToDlpack for ManagedBuffer<T> {}

impl<T: DlpackElement> private::Describe for PinnedHostBuffer<T> {
    fn describe(&self) -> Result<Parts<'_>> {
        let host = self.as_slice()?;
        Ok(Parts {
            ctx: None,
            device: DLDevice {
                device_type: DLDeviceType::kDLCUDAHost,
                device_id: 0,
            },
            ptr: if host.is_empty() {
                0
            } else {
                host.as_ptr() as u64
            },
            dtype: T::DTYPE,
            shape: vec![host.len() as i64],
            strides: vec![1],
        })
    }
}
impl<T: DlpackElement> ToDlpack for PinnedHostBuffer<T> {}

impl<X: private::Describe + Send + Sync + 'static> private::Describe for Arc<X> {
    fn describe(&self) -> Result<Parts<'_>> {
        (**self).describe()
    }
}
impl<X: ToDlpack + Sync> ToDlpack for Arc<X> {}

/// What an exported tensor's `manager_ctx` owns: the exported value and the shape and strides
/// the descriptor points into. `#[repr(C)]` with the managed struct first, so the deleter turns
/// the tensor pointer back into this box.
#[repr(C)]
struct Exported<M> {
    managed: M,
    _owner: Box<dyn Any + Send>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// Runs `f` (dropping an exported value) without letting a panic cross the C boundary.
fn no_unwind(f: impl FnOnce()) {
    if std::panic::catch_unwind(AssertUnwindSafe(f)).is_err() {
        crate::error::record_drop_error(Error::usage(
            "DLPack: dropping an exported array panicked in its deleter",
        ));
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` is the first field of a boxed `Exported` that `export` leaked, and the
    // deleter runs once (DLPack's contract with the consumer).
    let b = unsafe { Box::from_raw(p.cast::<Exported<DLManagedTensorVersioned>>()) };
    no_unwind(move || drop(b));
    count_export_deleted();
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if p.is_null() {
        return;
    }
    // SAFETY: as in `delete_versioned`.
    let b = unsafe { Box::from_raw(p.cast::<Exported<DLManagedTensor>>()) };
    no_unwind(move || drop(b));
    count_export_deleted();
}

/// Exports `value` as a DLPack tensor of the `kind` asked for, without synchronising: the caller
/// has made sure the work writing it is done (or ordered before the consumer's, e.g. both on the
/// legacy default stream). See [`export_on`] for the stream handshake.
///
/// The tensor owns `value` (an `Arc` to share it) and frees it when its deleter runs: hand it
/// on with [`DlpackTensor::into_raw`] (e.g. into a `"dltensor_versioned"` capsule), or drop it.
pub fn export<X: ToDlpack>(value: X, kind: ManagedKind) -> Result<DlpackTensor> {
    let Parts {
        device,
        ptr,
        dtype,
        shape,
        strides,
        ..
    } = value.describe()?;
    let data = ptr as *mut c_void;
    let ndim = i32::try_from(shape.len())
        .map_err(|_| Error::usage("DLPack: too many dimensions to export"))?;
    let owner: Box<dyn Any + Send> = Box::new(value);
    let tensor = |shape: &mut Vec<i64>, strides: &mut Vec<i64>| DLTensor {
        data,
        device,
        ndim,
        dtype,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let raw = match kind {
        ManagedKind::Versioned => {
            let mut b = Box::new(Exported {
                managed: DLManagedTensorVersioned {
                    version: DLPackVersion {
                        major: DLPACK_MAJOR_VERSION,
                        minor: DLPACK_MINOR_VERSION,
                    },
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags: 0,
                    dl_tensor: DLTensor::default(),
                },
                _owner: owner,
                shape,
                strides,
            });
            // The vectors' buffers do not move with the box: the pointers stay valid.
            b.managed.dl_tensor = tensor(&mut b.shape, &mut b.strides);
            let ptr = Box::into_raw(b);
            // SAFETY: `ptr` is the live box just leaked.
            unsafe { (*ptr).managed.manager_ctx = ptr.cast() };
            RawManagedTensor::Versioned(ptr.cast())
        }
        ManagedKind::Legacy => {
            let mut b = Box::new(Exported {
                managed: DLManagedTensor {
                    dl_tensor: DLTensor::default(),
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                _owner: owner,
                shape,
                strides,
            });
            b.managed.dl_tensor = tensor(&mut b.shape, &mut b.strides);
            let ptr = Box::into_raw(b);
            // SAFETY: `ptr` is the live box just leaked.
            unsafe { (*ptr).managed.manager_ctx = ptr.cast() };
            RawManagedTensor::Legacy(ptr.cast())
        }
    };
    count_export();
    Ok(DlpackTensor::from_export(raw))
}

/// Exports `value` (see [`export`]) with the stream handshake of the `__dlpack__(stream=...)`
/// protocol: the consumer's stream waits for the work queued so far on `producer` (an event
/// recorded on `producer`, waited on by `consumer`), so the consumer may use the tensor on its
/// stream at once without a host synchronisation. Nothing is waited for when `consumer` is
/// [`ConsumerStream::NoSync`] or the same stream as `producer`.
///
/// `producer` must belong to the context of `value`'s memory, and the consumer's stream to the
/// same device's primary context (torch's and CuPy's streams do).
pub fn export_on<X: ToDlpack>(
    value: X,
    kind: ManagedKind,
    producer: &Stream,
    consumer: ConsumerStream,
) -> Result<DlpackTensor> {
    {
        let p = value.describe()?;
        if let Some(ctx) = p.ctx {
            if ctx.raw() != producer.context().raw() {
                return Err(Error::usage(format!(
                    "DLPack export: the producer stream is of device {}, the array of device {}",
                    producer.context().device().ordinal(),
                    ctx.device().ordinal()
                )));
            }
        }
        handshake(producer, consumer)?;
    }
    export(value, kind)
}

/// Makes `consumer` wait for the work queued so far on `producer`.
pub(super) fn handshake(producer: &Stream, consumer: ConsumerStream) -> Result<()> {
    let Some(raw) = consumer.raw() else {
        return Ok(());
    };
    if raw == producer.raw() || (raw as usize <= 1 && producer.raw() as usize <= 1) {
        // The same stream (0 and 1 both name the legacy default stream): already ordered.
        return Ok(());
    }
    let ctx = producer.context();
    let event = ctx.new_event_with(false, false)?;
    event.record(producer)?;
    // SAFETY: the consumer's stream is live (the protocol's contract: the consumer passes a
    // stream it owns, or a special handle) and outlives this call; we only enqueue a wait.
    let stream = unsafe { ctx.wrap_stream(raw as sys::CUstream) };
    stream.wait_event(&event)
}
