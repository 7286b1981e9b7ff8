//! Kernel arguments: one trait for scalars and device arrays, and tuples of them.

use std::ffi::c_void;

use cudajit_sys as sys;
use ndarray::Dimension;

use crate::context::Context;
use crate::error::Result;
use crate::memory::{
    DeviceArray, DeviceCopy, DeviceSlice, DeviceView, DeviceViewMut, ManagedBuffer,
    MappedHostBuffer, TensorMap, TensorMapBytes, TensorMapElement,
};

/// A value that can be passed to a kernel parameter: a scalar by value, a device array
/// or view as its device pointer, or a [`TensorMap`] by value (its 128 bytes).
pub trait KernelArg {
    /// What the kernel receives (the scalar, a `CUdeviceptr`, or [`TensorMapBytes`]).
    type Raw: Copy;
    /// The value passed to the kernel.
    fn to_raw(&self) -> Self::Raw;
    /// The context the argument's memory belongs to (`None` for scalars).
    fn arg_context(&self) -> Option<&Context> {
        None
    }
}

macro_rules! scalar_args {
    ($($t:ty),*) => {$(
        impl KernelArg for $t {
            type Raw = $t;
            #[inline]
            fn to_raw(&self) -> $t {
                *self
            }
        }
    )*};
}
scalar_args!(
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
    bool,
    half::f16,
    half::bf16,
    crate::ir::F8E4M3,
    crate::ir::F8E5M2
);

macro_rules! array_args {
    ($([$($lt:lifetime)?] $ty:ty;)*) => {$(
        impl<$($lt,)? T: DeviceCopy, D: Dimension> KernelArg for $ty {
            type Raw = sys::CUdeviceptr;
            #[inline]
            fn to_raw(&self) -> sys::CUdeviceptr {
                self.device_ptr()
            }
            #[inline]
            fn arg_context(&self) -> Option<&Context> {
                Some(self.context())
            }
        }
    )*};
}
array_args! {
    ['a] &'a DeviceArray<T, D>;
    ['a] &'a mut DeviceArray<T, D>;
    ['a] DeviceView<'a, T, D>;
    ['a] DeviceViewMut<'a, T, D>;
}

macro_rules! buffer_args {
    ($($buf:ident),*) => {$(
        impl<'a, T: DeviceCopy, D: Dimension> KernelArg for &'a $buf<T, D> {
            type Raw = sys::CUdeviceptr;
            #[inline]
            fn to_raw(&self) -> sys::CUdeviceptr {
                self.device_ptr()
            }
            #[inline]
            fn arg_context(&self) -> Option<&Context> {
                Some(self.context())
            }
        }
        impl<'a, T: DeviceCopy, D: Dimension> KernelArg for &'a mut $buf<T, D> {
            type Raw = sys::CUdeviceptr;
            #[inline]
            fn to_raw(&self) -> sys::CUdeviceptr {
                self.device_ptr()
            }
            #[inline]
            fn arg_context(&self) -> Option<&Context> {
                Some(self.context())
            }
        }
    )*};
}
buffer_args!(MappedHostBuffer, ManagedBuffer);

/// A tensor map is passed by value: the kernel's parameter is the 128-byte `CUtensorMap`
/// (`.param .align 64 .b8 name[128]`). The driver copies each parameter from the pointer it is
/// given, and [`KernelArgs::with_params`] points at the value kept (64-byte aligned, as the
/// type is) for the duration of the launch call.
impl<T: TensorMapElement, const R: usize> KernelArg for &TensorMap<'_, T, R> {
    type Raw = TensorMapBytes;
    #[inline]
    fn to_raw(&self) -> TensorMapBytes {
        *self.raw()
    }
    #[inline]
    fn arg_context(&self) -> Option<&Context> {
        Some(self.context())
    }
}

/// A tuple of [`KernelArg`]s: a kernel's whole argument list.
pub trait KernelArgs {
    /// Calls `f` with the array of pointers to each argument's value that `cuLaunchKernel` takes.
    fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
    /// Checks that every array argument belongs to `ctx`.
    fn check_context(&self, ctx: &Context) -> Result<()>;
}

macro_rules! tuple_args {
    ($($name:ident $idx:tt),*) => {
        impl<$($name: KernelArg),*> KernelArgs for ($($name,)*) {
            #[inline]
            #[allow(unused_mut, unused_variables, clippy::unused_unit)]
            fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let raws = ($(self.$idx.to_raw(),)*);
                let mut params: [*mut c_void; 0 $(+ { let _ = $idx; 1 })*] =
                    [$(&raws.$idx as *const <$name as KernelArg>::Raw as *mut c_void),*];
                f(&mut params)
            }
            #[allow(unused_variables)]
            fn check_context(&self, ctx: &Context) -> Result<()> {
                $(
                    if let Some(c) = self.$idx.arg_context() {
                        ctx.check_same_for_launch(c, concat!("kernel argument ", stringify!($idx)))?;
                    }
                )*
                Ok(())
            }
        }
    };
}
tuple_args!();
tuple_args!(A 0);
tuple_args!(A 0, B 1);
tuple_args!(A 0, B 1, C 2);
tuple_args!(A 0, B 1, C 2, D 3);
tuple_args!(A 0, B 1, C 2, D 3, E 4);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
