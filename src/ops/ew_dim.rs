//! The dimension type of [`Elementwise::call`](super::Elementwise::call)'s outputs, from its
//! arguments' types, as NumPy broadcasting (ndarray's `DimMax`): arrays of one dimension type
//! `D` give `D` outputs (`Ix1` in, `Ix1` out; in generic code over `D: Dimension` too), fixed
//! dimension types of different ranks give the higher (`Ix1` with `Ix2`: `Ix2`), and an `IxDyn`
//! array (or no array at all) gives `IxDyn`. Scalars and [`Index`](super::Index) do not count.

use ndarray::{DimMax, Dimension, IxDyn};

use super::elementwise::{EwArg, EwArgs, EwInput, Prepared};
use crate::error::Result;
use crate::stream::Stream;

/// The dimension type of an elementwise argument that is not an array (a scalar, `Index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoArray;

/// The join of two arguments' dimension types (`self ⊔ B`): [`NoArray`] is the identity,
/// two arrays' dimension types join as ndarray's `DimMax` (broadcasting's result).
pub trait Join<B> {
    /// The joined dimension type.
    type Out;
}

impl Join<NoArray> for NoArray {
    type Out = NoArray;
}

impl<D: Dimension> Join<D> for NoArray {
    type Out = D;
}

impl<D: Dimension> Join<NoArray> for D {
    type Out = D;
}

impl<D: Dimension + DimMax<E>, E: Dimension> Join<E> for D {
    type Out = <D as DimMax<E>>::Output;
}

/// The outputs' dimension type from the join of every argument's ([`NoArray`]: `IxDyn`).
pub trait Finish {
    /// The outputs' dimension type.
    type Out: Dimension;
}

impl Finish for NoArray {
    type Out = IxDyn;
}

impl<D: Dimension> Finish for D {
    type Out = D;
}

/// A list of dimension types as nested pairs `(D0, (D1, (..., ())))`, joined from the left
/// starting at `Acc`, then [`Finish`]ed: a tuple of arguments' dimension type.
pub trait JoinFrom<Acc> {
    /// The outputs' dimension type.
    type Out: Dimension;
}

impl<Acc: Finish> JoinFrom<Acc> for () {
    type Out = <Acc as Finish>::Out;
}

impl<Acc: Join<H>, H, T: JoinFrom<<Acc as Join<H>>::Out>> JoinFrom<Acc> for (H, T) {
    type Out = <T as JoinFrom<<Acc as Join<H>>::Out>>::Out;
}

/// The arguments' dimension types `A0::Dim, A1::Dim, ...` as a [`JoinFrom`] list.
macro_rules! dims {
    () => { () };
    ($a:ident $i:ident $(, $ra:ident $ri:ident)*) => {
        (<$a as EwArg<$i>>::Dim, dims!($($ra $ri),*))
    };
}

macro_rules! arg_tuples {
    ($($i:ident $a:ident $n:tt),*) => {
        impl<$($i: EwInput,)* $($a: EwArg<$i>,)*> EwArgs<($($i,)*)> for ($($a,)*)
        where
            dims!($($a $i),*): JoinFrom<NoArray>,
        {
            type Dim = <dims!($($a $i),*) as JoinFrom<NoArray>>::Out;
            const HOSTS: usize = 0 $(+ <$a as EwArg<$i>>::HOST as usize)*;
            fn prepare(&self, stream: &Stream) -> Result<Vec<Prepared<'_>>> {
                Ok(vec![$(self.$n.prepare(stream)?),*])
            }
        }
    };
}
arg_tuples!(I0 A0 0);
arg_tuples!(I0 A0 0, I1 A1 1);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5, I6 A6 6);
arg_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5, I6 A6 6, I7 A7 7);

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Ix0, Ix1, Ix2, Ix3};

    fn same<A: 'static, B: 'static>() -> bool {
        std::any::TypeId::of::<A>() == std::any::TypeId::of::<B>()
    }

    fn joined<A: Join<B>, B>() -> std::any::TypeId
    where
        A::Out: Finish,
        <A::Out as Finish>::Out: 'static,
    {
        std::any::TypeId::of::<<A::Out as Finish>::Out>()
    }

    #[test]
    fn joins_follow_broadcasting() {
        use std::any::TypeId;
        assert_eq!(joined::<NoArray, Ix1>(), TypeId::of::<Ix1>());
        assert_eq!(joined::<Ix1, NoArray>(), TypeId::of::<Ix1>());
        assert_eq!(joined::<Ix1, Ix1>(), TypeId::of::<Ix1>());
        assert_eq!(joined::<Ix1, Ix3>(), TypeId::of::<Ix3>());
        assert_eq!(joined::<Ix3, Ix1>(), TypeId::of::<Ix3>());
        assert_eq!(joined::<Ix0, Ix0>(), TypeId::of::<Ix0>());
        assert_eq!(joined::<Ix2, IxDyn>(), TypeId::of::<IxDyn>());
        assert_eq!(joined::<IxDyn, Ix2>(), TypeId::of::<IxDyn>());
        assert_eq!(joined::<NoArray, NoArray>(), TypeId::of::<IxDyn>());
        assert!(same::<<NoArray as Finish>::Out, IxDyn>());
    }
}
