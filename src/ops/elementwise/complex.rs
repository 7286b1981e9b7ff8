//! Complex numbers in `Elementwise`: `Elem<Complex<f32>>` / `Elem<Complex<f64>>` inputs (the
//! closure sees a [`CExpr`]) and a `CExpr` output (arrays of `Complex<T>`).

use ndarray::Dimension;
use num_complex::Complex;

use super::{ArgInfo, Elem, EwArg, EwInput, EwOutArg, EwOutArgs, EwOutputs, Prepared, Staged};
use crate::codegen::{CExpr, CSlice, CSliceMut, Expr, KernelParam};
use crate::error::Result;
use crate::memory::{DeviceArray, DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// A complex array's launch information: its element count, seen by the kernel as twice as
/// many reals.
fn info<'a, T, X: DeviceSlice<Complex<T>> + ?Sized>(a: &'a X) -> ArgInfo<'a>
where
    Complex<T>: crate::memory::DeviceCopy,
{
    ArgInfo {
        shape: Some(a.shape()),
        strides: None,
        ptr: a.device_ptr(),
        bits: 0,
        size: std::mem::size_of::<Complex<T>>(),
        ctx: Some(a.context()),
        parts: 2,
    }
}

macro_rules! complex_ew {
    ($($t:ty),*) => {$(
        impl EwInput for Elem<Complex<$t>> {
            type Expr = CExpr<$t>;
            type Handle = CSlice<$t>;
            const ELEM_SIZE: Option<usize> = Some(std::mem::size_of::<Complex<$t>>());
            fn declare() -> CSlice<$t> {
                <&[Complex<$t>] as KernelParam>::declare()
            }
            fn lanes<const W: usize>(h: &CSlice<$t>, v: Expr<i64>) -> [CExpr<$t>; W] {
                std::array::from_fn(|l| h.at(v * W as i64 + l as i64))
            }
            fn at_offset(h: &CSlice<$t>, off: Option<Expr<i64>>) -> CExpr<$t> {
                h.at(off.unwrap_or_else(|| Expr::lit(0i64)))
            }
        }

        impl<X: DeviceSlice<Complex<$t>> + ?Sized> EwArg<Elem<Complex<$t>>> for &X {
            type Dim = X::Dim;
            fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Device(info(*self)))
            }
        }

        impl EwOutputs for CExpr<$t> {
            type Handles = CSliceMut<$t>;
            type Owned<D: Dimension> = DeviceArray<Complex<$t>, D>;
            type Host<D: Dimension> = ndarray::Array<Complex<$t>, D>;
            fn elem_sizes() -> Vec<usize> {
                vec![std::mem::size_of::<Complex<$t>>()]
            }
            fn declare() -> CSliceMut<$t> {
                <&mut [Complex<$t>] as KernelParam>::declare()
            }
            fn store<const W: usize>(h: &CSliceMut<$t>, v: Expr<i64>, vals: [Self; W]) {
                for (l, c) in vals.into_iter().enumerate() {
                    h.set(v * W as i64 + l as i64, c);
                }
            }
            fn store_at(h: &CSliceMut<$t>, idx: Expr<i64>, vals: Self) {
                h.set(idx, vals)
            }
            fn store_each(h: &CSliceMut<$t>, idxs: &[Expr<i64>], vals: Self) {
                h.set(idxs[0], vals)
            }
            fn alloc<D: Dimension>(stream: &Stream, shape: &[usize]) -> Result<Self::Owned<D>> {
                DeviceArray::alloc_ordered(stream, crate::ops::ew_outputs::out_dim(shape)?)
            }
            fn infos<D: Dimension>(owned: &mut Self::Owned<D>) -> Vec<ArgInfo<'_>> {
                vec![info(&*owned)]
            }
            fn to_host<D: Dimension>(
                owned: Self::Owned<D>,
                stream: &Stream,
            ) -> Result<Self::Host<D>> {
                owned.to_array_async(stream)
            }
        }

        impl<X: DeviceSliceMut<Complex<$t>> + ?Sized> EwOutArg<CExpr<$t>> for &mut X {
            fn prepare(&self, _: &Stream) -> Result<Prepared<'_>> {
                Ok(Prepared::Device(info(&**self)))
            }
        }

        /// One complex output: any `EwOutArg` (a device array, or a host array).
        impl<A: EwOutArg<CExpr<$t>>> EwOutArgs<CExpr<$t>> for A {
            const HOSTS: usize = A::HOST as usize;
            fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>> {
                Ok(vec![EwOutArg::prepare(self, stream)?])
            }
            fn finish(&mut self, stream: &Stream, staged: Vec<Option<Staged>>) -> Result<()> {
                EwOutArg::finish(self, stream, staged.into_iter().next().flatten())
            }
        }
    )*};
}
complex_ew!(f32, f64);
