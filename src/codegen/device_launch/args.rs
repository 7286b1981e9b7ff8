//! The arguments of a device-side launch, typed by the child's parameter list as a host
//! launch's are: `Kernel<(&[f32], &mut [f32], u32)>` takes `(x, y, n)` where `x` is any array
//! parameter of `f32` of the launching kernel, `y` a writable one and `n` an `Expr<u32>` (or a
//! `u32`). Anything else does not compile.

use super::super::array::{DArray, ReadOnly, ReadWrite};
use super::super::expr::Expr;
use super::super::scalar::Scalar;
use crate::ir::{ArrayRef, Param};

/// One argument as recorded (opaque).
#[derive(Debug, Clone, Copy)]
pub struct RawArg(pub(crate) Raw);

/// A value (its build tag and id) or an array (its build tag and reference).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Raw {
    Scalar(u32, u32),
    Array(u32, ArrayRef),
}

/// The parameter an argument is for (opaque).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec(pub(crate) Param);

/// An argument a device-side launch accepts for the child's parameter type `P`: an
/// `Expr<T>` or a `T` for a scalar `T`, an array of the launching kernel for an array.
pub trait DeviceArgFor<P> {
    /// The parameter this argument is for.
    fn param() -> ParamSpec;
    /// Records the argument (a literal becomes a constant of the kernel being built).
    fn raw(self) -> RawArg;
}

impl<T: Scalar> DeviceArgFor<T> for Expr<T> {
    fn param() -> ParamSpec {
        ParamSpec(Param::Scalar(T::TY))
    }
    fn raw(self) -> RawArg {
        let (tag, id) = self.raw();
        RawArg(Raw::Scalar(tag, id))
    }
}

impl<T: Scalar> DeviceArgFor<T> for T {
    fn param() -> ParamSpec {
        ParamSpec(Param::Scalar(T::TY))
    }
    fn raw(self) -> RawArg {
        let (tag, id) = Expr::lit(self).raw();
        RawArg(Raw::Scalar(tag, id))
    }
}

fn array<T: Scalar>(ndim: usize, mutable: bool) -> ParamSpec {
    ParamSpec(Param::Array {
        elem: T::TY,
        ndim: ndim as u8,
        mutable,
    })
}

impl<T: Scalar, A> DeviceArgFor<&[T]> for DArray<T, 1, A> {
    fn param() -> ParamSpec {
        array::<T>(1, false)
    }
    fn raw(self) -> RawArg {
        RawArg(Raw::Array(self.tag, self.array))
    }
}

impl<T: Scalar> DeviceArgFor<&mut [T]> for DArray<T, 1, ReadWrite> {
    fn param() -> ParamSpec {
        array::<T>(1, true)
    }
    fn raw(self) -> RawArg {
        RawArg(Raw::Array(self.tag, self.array))
    }
}

impl<T: Scalar, const N: usize, A> DeviceArgFor<DArray<T, N, ReadOnly>> for DArray<T, N, A> {
    fn param() -> ParamSpec {
        array::<T>(N, false)
    }
    fn raw(self) -> RawArg {
        RawArg(Raw::Array(self.tag, self.array))
    }
}

impl<T: Scalar, const N: usize> DeviceArgFor<DArray<T, N, ReadWrite>> for DArray<T, N, ReadWrite> {
    fn param() -> ParamSpec {
        array::<T>(N, true)
    }
    fn raw(self) -> RawArg {
        RawArg(Raw::Array(self.tag, self.array))
    }
}

/// A tuple of device-side launch arguments matching the parameter list `P`.
pub trait DeviceArgs<P> {
    /// The parameters, in order.
    fn params() -> Vec<ParamSpec>;
    /// Records every argument, in order.
    fn raws(self) -> Vec<RawArg>;
}

macro_rules! tuples {
    ($($p:ident $a:ident $i:tt),*) => {
        impl<$($p,)* $($a: DeviceArgFor<$p>),*> DeviceArgs<($($p,)*)> for ($($a,)*) {
            fn params() -> Vec<ParamSpec> {
                vec![$($a::param()),*]
            }
            #[allow(unused_variables, clippy::unused_unit)]
            fn raws(self) -> Vec<RawArg> {
                vec![$(self.$i.raw()),*]
            }
        }
    };
}
tuples!();
tuples!(P0 A0 0);
tuples!(P0 A0 0, P1 A1 1);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
tuples!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);
