//! The dimension type of [`Elementwise::call`](super::Elementwise::call)'s outputs, from its
//! arguments' types, as NumPy broadcasting (ndarray's `DimMax`): arrays of one dimension type
//! `D` give `D` outputs (`Ix1` in, `Ix1` out; in generic code over `D: Dimension` too), fixed
//! dimension types of different ranks give the higher (`Ix1` with `Ix2`: `Ix2`), and an `IxDyn`
//! array (or no array at all) gives `IxDyn`. Scalars and [`Index`](super::Index) do not count.

use ndarray::{DimMax, Dimension, IxDyn};

use super::elementwise::{ArgInfo, EwArg, EwArgs, EwInput};

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

impl<I0: EwInput, A0: EwArg<I0>> EwArgs<(I0,)> for (A0,)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Finish,
{
    type Dim = <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info()]
    }
}

impl<I0: EwInput, I1: EwInput, A0: EwArg<I0>, A1: EwArg<I1>> EwArgs<(I0, I1)> for (A0, A1)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Finish,
{
    type Dim = <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>> EwArgs<(I0, I1, I2)> for (A0, A1, A2)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Finish,
{
    type Dim = <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, I3: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>, A3: EwArg<I3>> EwArgs<(I0, I1, I2, I3)> for (A0, A1, A2, A3)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Join<<A3 as EwArg<I3>>::Dim>,
    <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out: Finish,
{
    type Dim = <<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info(), self.3.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, I3: EwInput, I4: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>, A3: EwArg<I3>, A4: EwArg<I4>> EwArgs<(I0, I1, I2, I3, I4)> for (A0, A1, A2, A3, A4)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Join<<A3 as EwArg<I3>>::Dim>,
    <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out: Join<<A4 as EwArg<I4>>::Dim>,
    <<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out: Finish,
{
    type Dim = <<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info(), self.3.info(), self.4.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, I3: EwInput, I4: EwInput, I5: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>, A3: EwArg<I3>, A4: EwArg<I4>, A5: EwArg<I5>> EwArgs<(I0, I1, I2, I3, I4, I5)> for (A0, A1, A2, A3, A4, A5)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Join<<A3 as EwArg<I3>>::Dim>,
    <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out: Join<<A4 as EwArg<I4>>::Dim>,
    <<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out: Join<<A5 as EwArg<I5>>::Dim>,
    <<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out: Finish,
{
    type Dim = <<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info(), self.3.info(), self.4.info(), self.5.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, I3: EwInput, I4: EwInput, I5: EwInput, I6: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>, A3: EwArg<I3>, A4: EwArg<I4>, A5: EwArg<I5>, A6: EwArg<I6>> EwArgs<(I0, I1, I2, I3, I4, I5, I6)> for (A0, A1, A2, A3, A4, A5, A6)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Join<<A3 as EwArg<I3>>::Dim>,
    <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out: Join<<A4 as EwArg<I4>>::Dim>,
    <<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out: Join<<A5 as EwArg<I5>>::Dim>,
    <<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out: Join<<A6 as EwArg<I6>>::Dim>,
    <<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Join<<A6 as EwArg<I6>>::Dim>>::Out: Finish,
{
    type Dim = <<<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Join<<A6 as EwArg<I6>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info(), self.3.info(), self.4.info(), self.5.info(), self.6.info()]
    }
}

impl<I0: EwInput, I1: EwInput, I2: EwInput, I3: EwInput, I4: EwInput, I5: EwInput, I6: EwInput, I7: EwInput, A0: EwArg<I0>, A1: EwArg<I1>, A2: EwArg<I2>, A3: EwArg<I3>, A4: EwArg<I4>, A5: EwArg<I5>, A6: EwArg<I6>, A7: EwArg<I7>> EwArgs<(I0, I1, I2, I3, I4, I5, I6, I7)> for (A0, A1, A2, A3, A4, A5, A6, A7)
where
    NoArray: Join<<A0 as EwArg<I0>>::Dim>,
    <NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out: Join<<A1 as EwArg<I1>>::Dim>,
    <<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out: Join<<A2 as EwArg<I2>>::Dim>,
    <<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out: Join<<A3 as EwArg<I3>>::Dim>,
    <<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out: Join<<A4 as EwArg<I4>>::Dim>,
    <<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out: Join<<A5 as EwArg<I5>>::Dim>,
    <<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out: Join<<A6 as EwArg<I6>>::Dim>,
    <<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Join<<A6 as EwArg<I6>>::Dim>>::Out: Join<<A7 as EwArg<I7>>::Dim>,
    <<<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Join<<A6 as EwArg<I6>>::Dim>>::Out as Join<<A7 as EwArg<I7>>::Dim>>::Out: Finish,
{
    type Dim = <<<<<<<<<NoArray as Join<<A0 as EwArg<I0>>::Dim>>::Out as Join<<A1 as EwArg<I1>>::Dim>>::Out as Join<<A2 as EwArg<I2>>::Dim>>::Out as Join<<A3 as EwArg<I3>>::Dim>>::Out as Join<<A4 as EwArg<I4>>::Dim>>::Out as Join<<A5 as EwArg<I5>>::Dim>>::Out as Join<<A6 as EwArg<I6>>::Dim>>::Out as Join<<A7 as EwArg<I7>>::Dim>>::Out as Finish>::Out;
    fn infos(&self) -> Vec<ArgInfo<'_>> {
        vec![self.0.info(), self.1.info(), self.2.info(), self.3.info(), self.4.info(), self.5.info(), self.6.info(), self.7.info()]
    }
}

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
