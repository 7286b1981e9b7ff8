//! The device's primary context, retained and released by RAII and shared across threads.

use std::fmt;
use std::sync::{Arc, Weak};

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::current::CurrentGuard;
use super::device::Device;
use crate::backend::backend;
use crate::error::{check_in_drop, Error, LaunchError, Result};
use crate::memory::staging::StagingPool;

/// A device's primary context (the one numba, the runtime API, torch and CuPy also use).
///
/// Cheap to clone (an `Arc`); every array, stream, event and module holds one, so the context
/// lives as long as anything that needs it. One context per device is shared across threads:
/// [`Device::primary_context`] returns the same one while any clone is alive.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    raw: sys::CUcontext,
    device: Device,
    /// Pinned buffers for staged pageable copies (see `memory::staging`), freed with the context.
    pub(crate) staging: StagingPool,
}

// SAFETY: a CUcontext handle may be used from any thread; the driver synchronises internally.
unsafe impl Send for ContextInner {}
// SAFETY: as above; shared use only passes the handle to thread-safe driver calls.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        // The staging buffers are pinned in this context: free them while it lives.
        self.staging.release(self.raw);
        // This retain is ours and is released exactly once.
        check_in_drop(backend().primary_ctx_release(self.device.raw()));
    }
}

/// What higher layers run before a context reset, to let go of the resources of the context
/// that they cache (e.g. the loaded-kernel table of the compile cache).
static RESET_HOOKS: Mutex<Vec<fn(&Context)>> = Mutex::new(Vec::new());

/// Registers `hook` to run before every [`Context::reset`] (a cache letting go of what it holds
/// of that context, so that the reset is not refused on its account).
pub(crate) fn on_reset(hook: fn(&Context)) {
    RESET_HOOKS.lock().push(hook);
}

/// Live primary contexts, by device ordinal, so each device has one shared `Context`.
static PRIMARY: Mutex<Vec<Weak<ContextInner>>> = Mutex::new(Vec::new());

impl Device {
    /// The device's primary context, retained while any clone of it (or any resource made
    /// from it) is alive.
    pub fn primary_context(&self) -> Result<Context> {
        super::init()?;
        let mut table = PRIMARY.lock();
        let i = self.ordinal();
        if table.len() <= i {
            table.resize_with(i + 1, Weak::new);
        }
        if let Some(inner) = table[i].upgrade() {
            return Ok(Context { inner });
        }
        let raw = backend().primary_ctx_retain(self.raw())?;
        let inner = Arc::new(ContextInner {
            raw,
            device: *self,
            staging: StagingPool::new(),
        });
        table[i] = Arc::downgrade(&inner);
        Ok(Context { inner })
    }

    /// Makes this device's primary context current on this thread until the guard drops
    /// (numba's `with cuda.gpus[i]:`).
    pub fn make_current(&self) -> Result<CurrentGuard> {
        self.primary_context()?.make_current()
    }
}

/// Frees the idle per-context resources of every live context (the pinned staging buffers); a
/// context in use by a staged copy right now is skipped. Called at process exit.
pub(crate) fn release_at_exit() {
    let live: Vec<Arc<ContextInner>> = match PRIMARY.try_lock() {
        Some(table) => table.iter().filter_map(Weak::upgrade).collect(),
        None => return,
    };
    for inner in live {
        inner.staging.release_idle(inner.raw);
    }
}

/// Finds the live `Context` whose handle is `raw`, if cudajit holds it.
pub(crate) fn lookup(raw: sys::CUcontext) -> Option<Context> {
    PRIMARY
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .find(|c| c.raw == raw)
        .map(|inner| Context { inner })
}

impl Context {
    /// The primary context of device `ordinal` (shorthand for `Device::get(i)?.primary_context()`).
    pub fn new(ordinal: usize) -> Result<Context> {
        Device::get(ordinal)?.primary_context()
    }

    /// The device this context belongs to.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUcontext {
        self.inner.raw
    }

    /// Makes this context current on the calling thread if it is not already.
    ///
    /// Every cudajit call does this itself; users need it only before their own driver calls.
    #[inline]
    pub fn bind(&self) -> Result<()> {
        let b = backend();
        if b.ctx_get_current()? != self.inner.raw {
            // SAFETY: the handle is a live, retained primary context.
            unsafe { b.ctx_set_current(self.inner.raw) }?;
        }
        Ok(())
    }

    /// Binds the context for a driver call made in `Drop`; a failure is recorded, not lost.
    pub(crate) fn bind_in_drop(&self) {
        if let Err(e) = self.bind() {
            crate::error::record_drop_error(e);
        }
    }

    /// Makes this context current on this thread until the guard drops, then restores the
    /// context that was current before.
    pub fn make_current(&self) -> Result<CurrentGuard> {
        CurrentGuard::new(self.clone())
    }

    /// Sets the size in bytes of the FIFO buffer that kernels' `printf` writes into
    /// (`cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE)`; the driver's default is 1 MiB). Output past
    /// it is lost until the next synchronisation empties it. Set it before launching any
    /// kernel that prints: the driver refuses a change once such a kernel has run. The
    /// simulator, which prints directly, only records the value.
    pub fn set_printf_fifo_size(&self, bytes: usize) -> Result<()> {
        self.bind()?;
        backend().ctx_set_limit(sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE, bytes)
    }

    /// The size in bytes of the `printf` FIFO buffer (see
    /// [`set_printf_fifo_size`](Context::set_printf_fifo_size)).
    pub fn printf_fifo_size(&self) -> Result<usize> {
        self.bind()?;
        backend().ctx_get_limit(sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE)
    }

    /// Waits until all work on the device in this context is done.
    pub fn synchronize(&self) -> Result<()> {
        crate::graph::refuse("Context::synchronize")?;
        self.bind()?;
        backend().ctx_synchronize()
    }

    /// Free and total device memory in bytes, as the driver sees them now.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.bind()?;
        backend().mem_get_info()
    }

    /// Releases this context and resets the device's primary context, destroying every
    /// allocation in it (numba's `cuda.close()` / `device.reset()`).
    ///
    /// Fails, changing nothing, while other clones of this context or resources made from it
    /// are alive: drop those first (the kernels that cudajit itself keeps loaded for the next
    /// build of the same kernel are let go first). Other libraries in the process that use the same primary
    /// context (torch, CuPy) lose their allocations too.
    ///
    /// A reset does not recover from a kernel fault (`CUDA_ERROR_ILLEGAL_ADDRESS` and the like):
    /// the driver keeps failing every call in the process, so such a process must restart.
    pub fn reset(self) -> Result<()> {
        let hooks = RESET_HOOKS.lock().clone();
        for hook in hooks {
            hook(&self);
        }
        let others = Arc::strong_count(&self.inner) - 1;
        if others > 0 {
            return Err(Error::usage(format!(
                "cannot reset the context of device {}: {others} other handle(s) to it (arrays, streams, events, \
                 modules or context clones) are still alive; drop them first",
                self.inner.device.ordinal()
            )));
        }
        let device = self.inner.device;
        drop(self);
        // No cudajit resource uses the primary context now.
        backend().primary_ctx_reset(device.raw())
    }

    /// Whether two handles are the same context.
    pub fn same_as(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Checks that a resource of context `other` may be used with this one.
    #[inline]
    pub(crate) fn check_same(&self, other: &Context, what: &str) -> Result<()> {
        if self.same_as(other) {
            Ok(())
        } else {
            Err(Error::usage(self.other_device_message(other, what)))
        }
    }

    /// [`check_same`](Self::check_same) for what a launch is given (its stream, its array
    /// arguments): a launch error.
    #[inline]
    pub(crate) fn check_same_for_launch(&self, other: &Context, what: &str) -> Result<()> {
        if self.same_as(other) {
            Ok(())
        } else {
            Err(Error::Launch(LaunchError::WrongContext {
                message: self.other_device_message(other, what),
            }))
        }
    }

    fn other_device_message(&self, other: &Context, what: &str) -> String {
        format!(
            "{what} belongs to device {} but is used with device {}; copy it to this device first",
            other.device().ordinal(),
            self.device().ordinal()
        )
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Context(device {})", self.inner.device.ordinal())
    }
}
