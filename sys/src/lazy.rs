//! Lazily resolved driver entry points.
//!
//! `generated/functions.rs` invokes [`driver_functions!`] once with every function of
//! `cuda.h`; each becomes an `unsafe fn` that looks its symbol up on first call,
//! caches the address in an atomic, and calls it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::loader::{driver_library, LoadError};

/// One driver symbol, resolved on first use and cached.
pub(crate) struct LazySymbol {
    /// NUL-terminated symbol name.
    name: &'static str,
    addr: AtomicPtr<c_void>,
}

impl LazySymbol {
    /// A symbol not yet looked up. `name` must end with a NUL byte.
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name,
            addr: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The symbol's address, loading the driver library and resolving it if needed.
    #[inline]
    pub(crate) fn get(&self) -> Result<*mut c_void, LoadError> {
        let p = self.addr.load(Ordering::Acquire);
        if !p.is_null() {
            return Ok(p);
        }
        self.resolve()
    }

    #[cold]
    fn resolve(&self) -> Result<*mut c_void, LoadError> {
        let p = driver_library()?.symbol(self.name)?;
        self.addr.store(p, Ordering::Release);
        Ok(p)
    }
}

/// Turns a list of driver function signatures into lazily resolved `unsafe fn`s that
/// return `Result<return type, LoadError>`.
macro_rules! driver_functions {
    ($(
        $(#[$meta:meta])*
        pub fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty ;
    )*) => {
        $(
            $(#[$meta])*
            ///
            /// # Errors
            /// `LoadError` when the driver library cannot be loaded or lacks this symbol.
            ///
            /// # Safety
            /// The arguments must satisfy the CUDA driver API's contract for this function.
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #[inline]
            pub unsafe fn $name($($arg: $ty),*) -> ::std::result::Result<$ret, $crate::loader::LoadError> {
                static SYMBOL: $crate::lazy::LazySymbol =
                    $crate::lazy::LazySymbol::new(concat!(stringify!($name), "\0"));
                let addr = SYMBOL.get()?;
                // SAFETY: the symbol was resolved from the driver under the exact name
                // whose prototype bindgen read from cuda.h, so the pointer has this type.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { ::std::mem::transmute(addr) };
                // SAFETY: the caller upholds the driver's contract for the arguments.
                Ok(unsafe { f($($arg),*) })
            }
        )*
    };
}
