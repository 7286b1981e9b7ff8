//! The context current on the calling thread, and a guard that changes it for a scope.

use std::marker::PhantomData;
use std::ops::Deref;

use cudajit_sys as sys;

use super::device::Device;
use super::primary::{lookup, Context};
use crate::backend::backend;
use crate::error::{check_in_drop, Result};

/// The cudajit context current on this thread, if any.
///
/// `None` when no context is current, or when the current one was made outside cudajit.
pub fn current_context() -> Result<Option<Context>> {
    super::init()?;
    let raw = raw_current()?;
    Ok(if raw.is_null() { None } else { lookup(raw) })
}

/// The device of the context current on this thread, if any.
pub fn current_device() -> Result<Option<Device>> {
    super::init()?;
    if raw_current()?.is_null() {
        return Ok(None);
    }
    Ok(Some(Device::from_raw(backend().ctx_get_device()?)))
}

fn raw_current() -> Result<sys::CUcontext> {
    backend().ctx_get_current()
}

/// Keeps a context current on this thread; on drop, restores the one that was current before.
///
/// Dereferences to the [`Context`]. Not `Send`: the current context is per thread.
pub struct CurrentGuard {
    ctx: Context,
    previous: sys::CUcontext,
    _not_send: PhantomData<*const ()>,
}

impl CurrentGuard {
    pub(super) fn new(ctx: Context) -> Result<CurrentGuard> {
        let previous = raw_current()?;
        // SAFETY: the handle is a live, retained primary context.
        unsafe { backend().ctx_set_current(ctx.raw()) }?;
        Ok(CurrentGuard {
            ctx,
            previous,
            _not_send: PhantomData,
        })
    }
}

impl Deref for CurrentGuard {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        // SAFETY: `previous` was current before (or null, which unbinds); if it has been
        // destroyed since, the driver reports an error, which is recorded.
        check_in_drop(unsafe { backend().ctx_set_current(self.previous) });
    }
}
