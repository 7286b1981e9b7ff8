//! Elementwise kernels over arrays sharded over processes: [`Elementwise`] applied to this
//! rank's shards, on the group's stream (local work: no collective, no wait).

use ndarray::{Dimension, IxDyn};

use super::array::RankShardedArray;
use super::group::ProcessGroup;
use super::layout::Layout;
use crate::codegen::{Expr, Scalar as ScalarType};
use crate::error::{Error, Result};
use crate::ops::elementwise::ArgInfo;
use crate::ops::{Elem, Elementwise, EwInput, EwInputs, EwOutputs, Index, Scalar};

/// How an argument is split over the ranks: its group and layout.
#[doc(hidden)]
pub struct RankLayout<'a> {
    group: &'a ProcessGroup,
    layout: &'a Layout,
}

impl<'a> RankLayout<'a> {
    fn of<T: ScalarType, D: Dimension>(a: &'a RankShardedArray<T, D>) -> Self {
        RankLayout {
            group: a.group(),
            layout: a.layout(),
        }
    }
}

/// An argument of an elementwise launch over ranks for input `I`: a `&RankShardedArray<T, D>`
/// for [`Elem<T>`] (this rank's shard), a `T` for [`Scalar<T>`] (pass the same value on every
/// rank), `Index` for [`Index`] (the flat index in the whole array: this rank's kernel counts
/// from its first element's index).
pub trait RankArg<I: EwInput> {
    /// This rank's launch information; `first` is the flat index, in the whole array, of this
    /// rank's first element.
    #[doc(hidden)]
    fn rank_info(&self, first: u64) -> ArgInfo<'_>;
    /// How it is split (`None` for a scalar).
    #[doc(hidden)]
    fn rank_layout(&self) -> Option<RankLayout<'_>>;
}

impl<T: ScalarType, D: Dimension> RankArg<Elem<T>> for &RankShardedArray<T, D> {
    fn rank_info(&self, _first: u64) -> ArgInfo<'_> {
        ArgInfo::array(self.local())
    }
    fn rank_layout(&self) -> Option<RankLayout<'_>> {
        Some(RankLayout::of(*self))
    }
}

impl<T: ScalarType> RankArg<Scalar<T>> for T {
    fn rank_info(&self, _first: u64) -> ArgInfo<'_> {
        ArgInfo::scalar(*self)
    }
    fn rank_layout(&self) -> Option<RankLayout<'_>> {
        None
    }
}

impl RankArg<Index> for Index {
    fn rank_info(&self, first: u64) -> ArgInfo<'_> {
        ArgInfo::scalar(first)
    }
    fn rank_layout(&self) -> Option<RankLayout<'_>> {
        None
    }
}

/// The arguments of an elementwise launch over ranks for the inputs `I` (a tuple matching it).
pub trait RankArgs<I: EwInputs> {
    /// Every argument's launch information, in order.
    #[doc(hidden)]
    fn rank_infos(&self, first: u64) -> Vec<ArgInfo<'_>>;
    /// How the sharded arguments are split.
    #[doc(hidden)]
    fn rank_layouts(&self) -> Vec<RankLayout<'_>>;
}

/// The outputs of an elementwise launch over ranks for the outputs `O`: a
/// `&mut RankShardedArray<T, D>` for one output, or a tuple of them.
pub trait RankOutArgs<O: EwOutputs> {
    /// Every output's launch information, in order.
    #[doc(hidden)]
    fn rank_infos(&self) -> Vec<ArgInfo<'_>>;
    /// How the outputs are split.
    #[doc(hidden)]
    fn rank_layouts(&self) -> Vec<RankLayout<'_>>;
}

impl<T: ScalarType, D: Dimension> RankOutArgs<Expr<T>> for &mut RankShardedArray<T, D> {
    fn rank_infos(&self) -> Vec<ArgInfo<'_>> {
        vec![ArgInfo::array(self.local())]
    }
    fn rank_layouts(&self) -> Vec<RankLayout<'_>> {
        vec![RankLayout::of(&**self)]
    }
}

macro_rules! rank_input_tuples {
    ($($t:ident $a:ident $i:tt),*) => {
        impl<$($t: EwInput,)* $($a: RankArg<$t>),*> RankArgs<($($t,)*)> for ($($a,)*)
        where ($($t,)*): EwInputs
        {
            fn rank_infos(&self, first: u64) -> Vec<ArgInfo<'_>> {
                vec![$(self.$i.rank_info(first)),*]
            }
            fn rank_layouts(&self) -> Vec<RankLayout<'_>> {
                [$(self.$i.rank_layout()),*].into_iter().flatten().collect()
            }
        }
    };
}
rank_input_tuples!(I0 A0 0);
rank_input_tuples!(I0 A0 0, I1 A1 1);
rank_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2);
rank_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3);
rank_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4);
rank_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5);

macro_rules! rank_output_tuples {
    ($($t:ident $i:tt),*) => {
        impl<$($t: ScalarType,)* D: Dimension> RankOutArgs<($(Expr<$t>,)*)>
            for ($(&mut RankShardedArray<$t, D>,)*)
        {
            fn rank_infos(&self) -> Vec<ArgInfo<'_>> {
                vec![$(ArgInfo::array(self.$i.local())),*]
            }
            fn rank_layouts(&self) -> Vec<RankLayout<'_>> {
                vec![$(RankLayout::of(&*self.$i)),*]
            }
        }
    };
}
rank_output_tuples!(O0 0, O1 1);
rank_output_tuples!(O0 0, O1 1, O2 2);

/// Checks that every array is of `first`'s group, shape and split (no broadcasting between
/// arrays sharded over processes). The layouts were agreed by every rank when the arrays were
/// made, so this rank's check is every rank's.
fn check_layouts(name: &str, first: &RankLayout<'_>, all: &[RankLayout<'_>]) -> Result<()> {
    for l in all {
        if !l.group.same_as(first.group) {
            return Err(Error::usage(format!(
                "elementwise `{name}` over ranks: the arrays are of different process groups \
                 ({:?} and {:?}); make them over one group",
                first.group, l.group
            )));
        }
        if l.layout.shape != first.layout.shape {
            return Err(Error::Shape {
                op: "elementwise over ranks (every array has the outputs' shape: no broadcasting between arrays sharded over processes)",
                expected: first.layout.shape.clone(),
                actual: l.layout.shape.clone(),
            });
        }
        if l.layout.rows != first.layout.rows {
            let lens = |l: &Layout| l.rows.iter().map(|r| r.len()).collect::<Vec<_>>();
            return Err(Error::usage(format!(
                "elementwise `{name}` over ranks: the arrays are split differently over the \
                 ranks (rows per rank {:?} and {:?}); make them with the same split",
                lens(first.layout),
                lens(l.layout)
            )));
        }
    }
    Ok(())
}

impl<I: EwInputs, O: EwOutputs> Elementwise<I, O> {
    /// Computes into existing outputs sharded over processes: the kernel runs on this rank's
    /// shards on the group's stream and this returns without waiting (no collective: each
    /// rank launches its own part). Inputs and outputs must have one shape and split; a
    /// scalar goes to the kernel as given (pass the same on every rank).
    pub fn apply_ranks(
        &self,
        inputs: impl RankArgs<I>,
        outputs: impl RankOutArgs<O>,
    ) -> Result<()> {
        let _nvtx = crate::nvtx::op_range(|| format!("cudajit: ranks Elementwise {}", self.name()));
        let outs = outputs.rank_layouts();
        let first = &outs[0];
        check_layouts(self.name(), first, &outs)?;
        check_layouts(self.name(), first, &inputs.rank_layouts())?;
        let g = first.group;
        let own = first.layout.elements(g.rank());
        if own.is_empty() {
            return Ok(());
        }
        self.launch_infos(
            g.stream(),
            &inputs.rank_infos(own.start as u64),
            &outputs.rank_infos(),
        )
    }
}

impl<I: EwInputs, T: ScalarType> Elementwise<I, Expr<T>> {
    /// Computes into a new array of the inputs' shape and split (at least one input must be
    /// sharded over processes), as [`apply_ranks`](Self::apply_ranks).
    pub fn call_ranks(&self, inputs: impl RankArgs<I>) -> Result<RankShardedArray<T, IxDyn>> {
        let layouts = inputs.rank_layouts();
        let Some(first) = layouts.first() else {
            return Err(Error::usage(format!(
                "elementwise `{}` over ranks: no input is sharded over processes, so the group \
                 and shape are unknown; use apply_ranks() with a sharded output",
                self.name()
            )));
        };
        let mut out = RankShardedArray::<T, IxDyn>::alloc_with_layout(first.group, first.layout)?;
        self.apply_ranks(inputs, &mut out)?;
        Ok(out)
    }
}
