//! Lazily resolved entry points of the libraries loaded at run time.
//!
//! `generated/functions.rs` invokes [`driver_functions!`] once with every function of
//! `cuda.h`, and `generated/nccl_functions.rs` invokes [`nccl_functions!`] with every function
//! of `nccl.h`; each becomes an `unsafe fn` that looks its symbol up on first call,
//! caches the address in an atomic, and calls it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Looks a NUL-terminated symbol name up in its library (loading the library if needed).
pub(crate) type Resolver<E> = fn(&str) -> Result<*mut c_void, E>;

/// One symbol, resolved on first use and cached.
pub(crate) struct LazySymbol<E: 'static> {
    /// NUL-terminated symbol name.
    name: &'static str,
    addr: AtomicPtr<c_void>,
    resolver: Resolver<E>,
}

impl<E> LazySymbol<E> {
    /// A symbol not yet looked up. `name` must end with a NUL byte.
    pub(crate) const fn new(name: &'static str, resolver: Resolver<E>) -> Self {
        Self {
            name,
            addr: AtomicPtr::new(std::ptr::null_mut()),
            resolver,
        }
    }

    /// The symbol's address, loading its library and resolving it if needed.
    #[inline]
    pub(crate) fn get(&self) -> Result<*mut c_void, E> {
        let p = self.addr.load(Ordering::Acquire);
        if !p.is_null() {
            return Ok(p);
        }
        self.resolve()
    }

    #[cold]
    fn resolve(&self) -> Result<*mut c_void, E> {
        let p = (self.resolver)(self.name)?;
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
                static SYMBOL: $crate::lazy::LazySymbol<$crate::loader::LoadError> =
                    $crate::lazy::LazySymbol::new(
                        concat!(stringify!($name), "\0"),
                        $crate::loader::driver_symbol,
                    );
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

/// Turns a list of NCCL function signatures into lazily resolved `unsafe fn`s that return
/// `Result<return type, NcclLoadError>`.
macro_rules! nccl_functions {
    ($(
        $(#[$meta:meta])*
        pub fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty ;
    )*) => {
        $(
            $(#[$meta])*
            ///
            /// # Errors
            /// `NcclLoadError` when the NCCL library cannot be loaded or lacks this symbol.
            ///
            /// # Safety
            /// The arguments must satisfy NCCL's contract for this function.
            #[allow(non_snake_case, clippy::too_many_arguments)]
            #[inline]
            pub unsafe fn $name($($arg: $ty),*) -> ::std::result::Result<$ret, $crate::nccl::NcclLoadError> {
                static SYMBOL: $crate::lazy::LazySymbol<$crate::nccl::NcclLoadError> =
                    $crate::lazy::LazySymbol::new(
                        concat!(stringify!($name), "\0"),
                        $crate::nccl::loader::nccl_symbol,
                    );
                let addr = SYMBOL.get()?;
                // SAFETY: the symbol was resolved from NCCL under the exact name whose
                // prototype bindgen read from nccl.h, so the pointer has this type.
                let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { ::std::mem::transmute(addr) };
                // SAFETY: the caller upholds NCCL's contract for the arguments.
                Ok(unsafe { f($($arg),*) })
            }
        )*
    };
}
