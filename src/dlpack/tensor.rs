//! [`DlpackTensor`]: one managed DLPack tensor (versioned or legacy) and its deleter, called
//! exactly once.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::ffi::{
    DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor, DLPACK_MAJOR_VERSION,
};
use crate::error::{Error, Result};

/// The raw pointer a [`DlpackTensor`] owned, as [`DlpackTensor::into_raw`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawManagedTensor {
    /// A `DLManagedTensorVersioned` (DLPack 1.x; the capsule name `"dltensor_versioned"`).
    Versioned(*mut DLManagedTensorVersioned),
    /// A legacy `DLManagedTensor` (the capsule name `"dltensor"`).
    Legacy(*mut DLManagedTensor),
}

impl RawManagedTensor {
    /// The pointer, untyped (to put in a Python capsule).
    pub fn as_ptr(&self) -> *mut std::ffi::c_void {
        match *self {
            RawManagedTensor::Versioned(p) => p.cast(),
            RawManagedTensor::Legacy(p) => p.cast(),
        }
    }

    /// The name of the Python capsule that carries this tensor under the `__dlpack__` protocol:
    /// `"dltensor_versioned"` or `"dltensor"`.
    pub fn capsule_name(&self) -> &'static str {
        match self {
            RawManagedTensor::Versioned(_) => "dltensor_versioned",
            RawManagedTensor::Legacy(_) => "dltensor",
        }
    }
}

/// Which of DLPack's two managed structs to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ManagedKind {
    /// `DLManagedTensorVersioned` (DLPack 1.x): carries its version and flags. What consumers
    /// that pass `max_version=(1, x)` to `__dlpack__` expect (torch 2.5 on, CuPy 13.3 on).
    #[default]
    Versioned,
    /// The legacy `DLManagedTensor`: for consumers that do not pass `max_version` (older torch
    /// and CuPy).
    Legacy,
}

/// One DLPack tensor owned by cudajit: a `DLManagedTensorVersioned` or a legacy
/// `DLManagedTensor`, whose deleter is called exactly once, when this value is dropped (unless
/// it was handed on with [`into_raw`](Self::into_raw)).
///
/// Made by [`export`](super::export) (a cudajit array for another library) or taken from another
/// library with [`from_raw_versioned`](Self::from_raw_versioned) /
/// [`from_raw_legacy`](Self::from_raw_legacy), then imported with
/// [`Context::import_dlpack`](crate::Context::import_dlpack).
pub struct DlpackTensor {
    raw: Raw,
    /// Taken from another producer (`from_raw_*`), for the counters.
    adopted: bool,
}

#[derive(Clone, Copy)]
enum Raw {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

// SAFETY: the tensor's fields are only read; its deleter is called once, by whichever thread
// drops the value. DLPack producers (torch, CuPy, cudajit) release from any thread (CuPy's
// deleter takes the GIL itself).
unsafe impl Send for DlpackTensor {}
// SAFETY: shared references only read the descriptor.
unsafe impl Sync for DlpackTensor {}

/// Process-wide counts of DLPack hand-overs, for tests and leak checks: see [`counters`].
static EXPORTED: AtomicU64 = AtomicU64::new(0);
static EXPORT_DELETED: AtomicU64 = AtomicU64::new(0);
static ADOPTED: AtomicU64 = AtomicU64::new(0);
static ADOPTED_DELETED: AtomicU64 = AtomicU64::new(0);

/// How many DLPack tensors this process has handed out and taken in, and how many of their
/// deleters have run (process-wide; for tests and leak checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DlpackCounters {
    /// Tensors made by [`export`](super::export).
    pub exported: u64,
    /// Deleters of exported tensors that have run (each frees its tensor once).
    pub export_deleters_run: u64,
    /// Tensors of other producers taken with `DlpackTensor::from_raw_*` (less those handed
    /// on again with `into_raw`).
    pub adopted: u64,
    /// Producers' deleters cudajit has called for them.
    pub adopted_deleters_called: u64,
}

/// The process-wide [`DlpackCounters`] now.
pub fn counters() -> DlpackCounters {
    DlpackCounters {
        exported: EXPORTED.load(Ordering::SeqCst),
        export_deleters_run: EXPORT_DELETED.load(Ordering::SeqCst),
        adopted: ADOPTED.load(Ordering::SeqCst),
        adopted_deleters_called: ADOPTED_DELETED.load(Ordering::SeqCst),
    }
}

pub(super) fn count_export() {
    EXPORTED.fetch_add(1, Ordering::SeqCst);
}

pub(super) fn count_export_deleted() {
    EXPORT_DELETED.fetch_add(1, Ordering::SeqCst);
}

impl DlpackTensor {
    /// Takes ownership of a `DLManagedTensorVersioned` from another producer (e.g. the pointer
    /// of a `"dltensor_versioned"` capsule, which the caller then renames
    /// `"used_dltensor_versioned"`). Its deleter is called once, when the returned value (or
    /// the array imported from it) is dropped. A null pointer is an error.
    ///
    /// # Safety
    /// `ptr` must be null or point to a valid `DLManagedTensorVersioned` that nobody else will
    /// delete, and its fields must stay valid until its deleter runs.
    pub unsafe fn from_raw_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<Self> {
        let p = NonNull::new(ptr)
            .ok_or_else(|| Error::usage("DLPack: a null DLManagedTensorVersioned pointer"))?;
        ADOPTED.fetch_add(1, Ordering::SeqCst);
        Ok(DlpackTensor {
            raw: Raw::Versioned(p),
            adopted: true,
        })
    }

    /// Takes ownership of a legacy `DLManagedTensor` (the pointer of a `"dltensor"` capsule,
    /// which the caller then renames `"used_dltensor"`); see
    /// [`from_raw_versioned`](Self::from_raw_versioned).
    ///
    /// # Safety
    /// As for [`from_raw_versioned`](Self::from_raw_versioned), for a `DLManagedTensor`.
    pub unsafe fn from_raw_legacy(ptr: *mut DLManagedTensor) -> Result<Self> {
        let p = NonNull::new(ptr)
            .ok_or_else(|| Error::usage("DLPack: a null DLManagedTensor pointer"))?;
        ADOPTED.fetch_add(1, Ordering::SeqCst);
        Ok(DlpackTensor {
            raw: Raw::Legacy(p),
            adopted: true,
        })
    }

    /// A tensor cudajit made (not counted as adopted).
    pub(super) fn from_export(raw: RawManagedTensor) -> Self {
        let raw = match raw {
            // SAFETY: export passes the pointer of a live Box (never null).
            RawManagedTensor::Versioned(p) => Raw::Versioned(unsafe { NonNull::new_unchecked(p) }),
            // SAFETY: as above.
            RawManagedTensor::Legacy(p) => Raw::Legacy(unsafe { NonNull::new_unchecked(p) }),
        };
        DlpackTensor {
            raw,
            adopted: false,
        }
    }

    /// Hands the tensor over (e.g. into a Python capsule) without calling its deleter: the
    /// receiver must call it once.
    pub fn into_raw(self) -> RawManagedTensor {
        let raw = self.raw;
        if self.adopted {
            // Ownership leaves cudajit: it is no longer cudajit's to delete.
            ADOPTED.fetch_sub(1, Ordering::SeqCst);
        }
        std::mem::forget(self);
        match raw {
            Raw::Versioned(p) => RawManagedTensor::Versioned(p.as_ptr()),
            Raw::Legacy(p) => RawManagedTensor::Legacy(p.as_ptr()),
        }
    }

    /// Whether this is a `DLManagedTensorVersioned`.
    pub fn is_versioned(&self) -> bool {
        matches!(self.raw, Raw::Versioned(_))
    }

    /// The DLPack version of a versioned tensor (`None` for a legacy one).
    pub fn version(&self) -> Option<DLPackVersion> {
        match self.raw {
            // SAFETY: the pointer is valid while we own it (`from_raw_*`'s contract); the
            // version field is readable whatever the version.
            Raw::Versioned(p) => Some(unsafe { p.as_ref() }.version),
            Raw::Legacy(_) => None,
        }
    }

    /// The flags of a versioned tensor (`DLPACK_FLAG_BITMASK_*`; 0 for a legacy one), or an
    /// error for a versioned tensor of another major version, whose other fields are unknown.
    pub fn flags(&self) -> Result<u64> {
        match self.raw {
            Raw::Versioned(p) => {
                self.check_major()?;
                // SAFETY: valid while owned; the major version matches this layout.
                Ok(unsafe { p.as_ref() }.flags)
            }
            Raw::Legacy(_) => Ok(0),
        }
    }

    /// The tensor's descriptor (data, device, shape, strides, dtype), or an error for a
    /// versioned tensor of another major version (whose layout is unknown: DLPack says the
    /// consumer may only call its deleter).
    pub fn dl_tensor(&self) -> Result<&DLTensor> {
        match self.raw {
            Raw::Versioned(p) => {
                self.check_major()?;
                // SAFETY: valid while owned; the major version matches this layout.
                Ok(&unsafe { p.as_ref() }.dl_tensor)
            }
            // SAFETY: valid while owned.
            Raw::Legacy(p) => Ok(&unsafe { p.as_ref() }.dl_tensor),
        }
    }

    fn check_major(&self) -> Result<()> {
        match self.version() {
            Some(v) if v.major != DLPACK_MAJOR_VERSION => Err(Error::usage(format!(
                "DLPack: the tensor is of DLPack {}.{}; cudajit reads major version {} \
                 (the tensor's deleter is still called)",
                v.major, v.minor, DLPACK_MAJOR_VERSION
            ))),
            _ => Ok(()),
        }
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        if self.adopted {
            ADOPTED_DELETED.fetch_add(1, Ordering::SeqCst);
        }
        match self.raw {
            Raw::Versioned(p) => {
                // SAFETY: valid while owned; `deleter` sits before `flags` in every 1.x and
                // later layout (DLPack keeps it stable across major versions for this call).
                let deleter = unsafe { p.as_ref() }.deleter;
                if let Some(d) = deleter {
                    // SAFETY: the producer's deleter, called once with its own tensor.
                    unsafe { d(p.as_ptr()) };
                }
            }
            Raw::Legacy(p) => {
                // SAFETY: valid while owned.
                let deleter = unsafe { p.as_ref() }.deleter;
                if let Some(d) = deleter {
                    // SAFETY: the producer's deleter, called once with its own tensor.
                    unsafe { d(p.as_ptr()) };
                }
            }
        }
    }
}

impl fmt::Debug for DlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("DlpackTensor");
        d.field("versioned", &self.is_versioned());
        if let Ok(t) = self.dl_tensor() {
            d.field("data", &t.data)
                .field("device", &(t.device.device_type.0, t.device.device_id))
                .field("ndim", &t.ndim)
                .field("dtype", &super::dtype_name(t.dtype));
        }
        d.finish()
    }
}
