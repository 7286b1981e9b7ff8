//! [`EwOutputs`] for one `Expr<T>` and tuples of them: the output arrays [`Elementwise::call`]
//! allocates, of the dimension type its arguments give (see ew_dim.rs).
//!
//! [`Elementwise::call`]: super::Elementwise::call

use ndarray::{Array, Dimension, IxDyn};

use super::elementwise::{ArgInfo, EwOutputs};
use crate::codegen::{DArray, Expr, KernelParam, ReadWrite, Scalar as ScalarType};
use crate::error::{Error, Result};
use crate::memory::{DeviceArray, DeviceSlice};
use crate::stream::Stream;

impl<T: ScalarType> EwOutputs for Expr<T> {
    type Handles = DArray<T, 1, ReadWrite>;
    type Owned<D: Dimension> = DeviceArray<T, D>;
    type Host<D: Dimension> = Array<T, D>;
    fn elem_sizes() -> Vec<usize> {
        vec![T::TY.size()]
    }
    fn declare() -> Self::Handles {
        <&mut [T] as KernelParam>::declare()
    }
    fn store<const W: usize>(h: &Self::Handles, v: Expr<i64>, vals: [Self; W]) {
        h.store_lanes::<W>(v, vals)
    }
    fn store_at(h: &Self::Handles, idx: Expr<i64>, vals: Self) {
        h.set(idx, vals)
    }
    fn store_each(h: &Self::Handles, idxs: &[Expr<i64>], vals: Self) {
        h.set(idxs[0], vals)
    }
    fn alloc<D: Dimension>(stream: &Stream, shape: &[usize]) -> Result<Self::Owned<D>> {
        DeviceArray::alloc_ordered(stream, out_dim(shape)?)
    }
    fn infos<D: Dimension>(owned: &mut Self::Owned<D>) -> Vec<ArgInfo<'_>> {
        vec![ArgInfo::array(&*owned)]
    }
    fn to_host<D: Dimension>(owned: Self::Owned<D>, stream: &Stream) -> Result<Array<T, D>> {
        owned.to_array_async(stream)
    }
}

macro_rules! output_tuples {
    ($($t:ident $i:tt),*) => {
        impl<$($t: ScalarType),*> EwOutputs for ($(Expr<$t>,)*) {
            type Handles = ($(DArray<$t, 1, ReadWrite>,)*);
            type Owned<Dm: Dimension> = ($(DeviceArray<$t, Dm>,)*);
            type Host<Dm: Dimension> = ($(Array<$t, Dm>,)*);
            fn elem_sizes() -> Vec<usize> {
                vec![$($t::TY.size()),*]
            }
            fn declare() -> Self::Handles {
                ($(<&mut [$t] as KernelParam>::declare(),)*)
            }
            fn store<const W: usize>(h: &Self::Handles, v: Expr<i64>, vals: [Self; W]) {
                $(h.$i.store_lanes::<W>(v, std::array::from_fn::<_, W, _>(|l| vals[l].$i));)*
            }
            fn store_at(h: &Self::Handles, idx: Expr<i64>, vals: Self) {
                $(h.$i.set(idx, vals.$i);)*
            }
            fn store_each(h: &Self::Handles, idxs: &[Expr<i64>], vals: Self) {
                $(h.$i.set(idxs[$i], vals.$i);)*
            }
            fn alloc<Dm: Dimension>(stream: &Stream, shape: &[usize]) -> Result<Self::Owned<Dm>> {
                Ok(($(DeviceArray::<$t, Dm>::alloc_ordered(stream, out_dim(shape)?)?,)*))
            }
            fn infos<Dm: Dimension>(owned: &mut Self::Owned<Dm>) -> Vec<ArgInfo<'_>> {
                vec![$(ArgInfo::array(&owned.$i)),*]
            }
            fn to_host<Dm: Dimension>(
                owned: Self::Owned<Dm>,
                stream: &Stream,
            ) -> Result<Self::Host<Dm>> {
                Ok(($(owned.$i.to_array_async(stream)?,)*))
            }
        }
    };
}
/// `shape` as the dimension type `D` of [`Elementwise::call`]'s outputs.
pub(super) fn out_dim<D: Dimension>(shape: &[usize]) -> Result<D> {
    D::from_dimension(&IxDyn(shape)).ok_or_else(|| {
        Error::usage(format!(
            "elementwise output: the broadcast shape {} does not fit the inputs' dimension type \
             (internal)",
            crate::error::ShapeDisplay(shape)
        ))
    })
}

output_tuples!(A 0, B 1);
output_tuples!(A 0, B 1, C 2);
output_tuples!(A 0, B 1, C 2, D 3);
