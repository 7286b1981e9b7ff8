//! Elementwise kernels over sharded arrays: [`Elementwise`] applied shard by shard, each on its
//! device's mesh stream.

use std::ops::Range;

use ndarray::{Dimension, IxDyn};

use super::array::ShardedArray;
use super::mesh::Mesh;
use super::replicated::Replicated;
use crate::codegen::{Expr, Scalar as ScalarType};
use crate::error::{Error, Result};
use crate::ops::elementwise::ArgInfo;
use crate::ops::{Elem, Elementwise, EwInput, EwInputs, EwOutputs, Index, Scalar};

/// How a sharded argument is split: its mesh, whole shape and rows per shard.
#[doc(hidden)]
pub struct ShardLayout<'a> {
    mesh: &'a Mesh,
    shape: &'a [usize],
    rows: &'a [Range<usize>],
}

impl<'a> ShardLayout<'a> {
    fn of<T: ScalarType, D: Dimension>(a: &'a ShardedArray<T, D>) -> Self {
        ShardLayout {
            mesh: a.mesh(),
            shape: a.shape(),
            rows: a.row_ranges(),
        }
    }
}

/// An argument of a sharded elementwise launch for input `I`: a `&ShardedArray<T, D>` or a
/// `&Replicated<T, D>` (whole on every device, broadcast against each shard) for [`Elem<T>`],
/// a `T` for [`Scalar<T>`] (the same value on every device), `Index` for [`Index`] (the flat
/// index in the whole sharded array: each shard's kernel counts from the shard's first
/// element's index).
pub trait ShardedArg<I: EwInput> {
    /// Shard `k`'s launch information; `first` is the flat index, in the whole array, of the
    /// shard's first element.
    #[doc(hidden)]
    fn shard_info(&self, k: usize, first: u64) -> ArgInfo<'_>;
    /// How it is split (`None` for a scalar or a replicated array).
    #[doc(hidden)]
    fn layout(&self) -> Option<ShardLayout<'_>>;
    /// The mesh of an argument that is not split but lives on a mesh (a replicated array).
    #[doc(hidden)]
    fn mesh(&self) -> Option<&Mesh> {
        None
    }
}

impl<T: ScalarType, D: Dimension> ShardedArg<Elem<T>> for &ShardedArray<T, D> {
    fn shard_info(&self, k: usize, _first: u64) -> ArgInfo<'_> {
        ArgInfo::array(&self.shards()[k])
    }
    fn layout(&self) -> Option<ShardLayout<'_>> {
        Some(ShardLayout::of(*self))
    }
}

/// A replicated array goes whole to every shard's launch, broadcast against the shard.
impl<T: ScalarType, D: Dimension> ShardedArg<Elem<T>> for &Replicated<T, D> {
    fn shard_info(&self, k: usize, _first: u64) -> ArgInfo<'_> {
        ArgInfo::array(&self.copies()[k])
    }
    fn layout(&self) -> Option<ShardLayout<'_>> {
        None
    }
    fn mesh(&self) -> Option<&Mesh> {
        Some(Replicated::mesh(self))
    }
}

impl<T: ScalarType> ShardedArg<Scalar<T>> for T {
    fn shard_info(&self, _k: usize, _first: u64) -> ArgInfo<'_> {
        ArgInfo::scalar(*self)
    }
    fn layout(&self) -> Option<ShardLayout<'_>> {
        None
    }
}

/// The index in the whole array: shard `k`'s kernel starts at its first element's index.
impl ShardedArg<Index> for Index {
    fn shard_info(&self, _k: usize, first: u64) -> ArgInfo<'_> {
        ArgInfo::scalar(first)
    }
    fn layout(&self) -> Option<ShardLayout<'_>> {
        None
    }
}

/// The arguments of a sharded elementwise launch for the inputs `I` (a tuple matching it).
pub trait ShardedArgs<I: EwInputs> {
    /// Every argument's launch information for shard `k` (whose first element has the flat
    /// index `first` in the whole array), in order.
    #[doc(hidden)]
    fn shard_infos(&self, k: usize, first: u64) -> Vec<ArgInfo<'_>>;
    /// How the sharded arguments are split.
    #[doc(hidden)]
    fn layouts(&self) -> Vec<ShardLayout<'_>>;
    /// The meshes of the replicated arguments.
    #[doc(hidden)]
    fn meshes(&self) -> Vec<&Mesh>;
}

/// A sharded output for output `O`: a `&mut ShardedArray<T, D>` for `Expr<T>`.
pub trait ShardedOutArg<O> {
    /// Shard `k`'s launch information.
    #[doc(hidden)]
    fn shard_info(&self, k: usize) -> ArgInfo<'_>;
    /// How it is split.
    #[doc(hidden)]
    fn layout(&self) -> ShardLayout<'_>;
}

impl<T: ScalarType, D: Dimension> ShardedOutArg<Expr<T>> for &mut ShardedArray<T, D> {
    fn shard_info(&self, k: usize) -> ArgInfo<'_> {
        ArgInfo::array(&self.shards()[k])
    }
    fn layout(&self) -> ShardLayout<'_> {
        ShardLayout::of(&**self)
    }
}

/// The sharded outputs of a launch for the outputs `O` (one, or a tuple matching them).
pub trait ShardedOutArgs<O: EwOutputs> {
    /// Every output's launch information for shard `k`, in order.
    #[doc(hidden)]
    fn shard_infos(&self, k: usize) -> Vec<ArgInfo<'_>>;
    /// How the outputs are split.
    #[doc(hidden)]
    fn layouts(&self) -> Vec<ShardLayout<'_>>;
}

impl<T: ScalarType, D: Dimension> ShardedOutArgs<Expr<T>> for &mut ShardedArray<T, D> {
    fn shard_infos(&self, k: usize) -> Vec<ArgInfo<'_>> {
        vec![ShardedOutArg::shard_info(self, k)]
    }
    fn layouts(&self) -> Vec<ShardLayout<'_>> {
        vec![ShardedOutArg::layout(self)]
    }
}

macro_rules! sharded_input_tuples {
    ($($t:ident $a:ident $i:tt),*) => {
        impl<$($t: EwInput,)* $($a: ShardedArg<$t>),*> ShardedArgs<($($t,)*)> for ($($a,)*)
        where ($($t,)*): EwInputs
        {
            fn shard_infos(&self, k: usize, first: u64) -> Vec<ArgInfo<'_>> {
                vec![$(self.$i.shard_info(k, first)),*]
            }
            fn layouts(&self) -> Vec<ShardLayout<'_>> {
                [$(self.$i.layout()),*].into_iter().flatten().collect()
            }
            fn meshes(&self) -> Vec<&Mesh> {
                [$(ShardedArg::<$t>::mesh(&self.$i)),*].into_iter().flatten().collect()
            }
        }
    };
}
sharded_input_tuples!(I0 A0 0);
sharded_input_tuples!(I0 A0 0, I1 A1 1);
sharded_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2);
sharded_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3);
sharded_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4);
sharded_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5);
sharded_input_tuples!(I0 A0 0, I1 A1 1, I2 A2 2, I3 A3 3, I4 A4 4, I5 A5 5, I6 A6 6);

macro_rules! sharded_output_tuples {
    ($($t:ident $a:ident $i:tt),*) => {
        impl<$($t: ScalarType,)* $($a: ShardedOutArg<Expr<$t>>),*> ShardedOutArgs<($(Expr<$t>,)*)> for ($($a,)*) {
            fn shard_infos(&self, k: usize) -> Vec<ArgInfo<'_>> {
                vec![$(self.$i.shard_info(k)),*]
            }
            fn layouts(&self) -> Vec<ShardLayout<'_>> {
                vec![$(self.$i.layout()),*]
            }
        }
    };
}
sharded_output_tuples!(O0 A0 0, O1 A1 1);
sharded_output_tuples!(O0 A0 0, O1 A1 1, O2 A2 2);
sharded_output_tuples!(O0 A0 0, O1 A1 1, O2 A2 2, O3 A3 3);

/// Checks that every sharded argument is on `first`'s mesh, of its shape and split the same
/// way (no broadcasting between sharded arrays).
fn check_layouts(name: &str, first: &ShardLayout<'_>, all: &[ShardLayout<'_>]) -> Result<()> {
    for l in all {
        if !l.mesh.same_as(first.mesh) {
            return Err(Error::usage(format!(
                "sharded elementwise `{name}`: the arrays are on different meshes ({:?} and {:?}); \
                 make every sharded array on one mesh",
                first.mesh, l.mesh
            )));
        }
        if l.shape != first.shape {
            return Err(Error::Shape {
                op: "sharded elementwise (every sharded array has the outputs' shape: no broadcasting between sharded arrays)",
                expected: first.shape.to_vec(),
                actual: l.shape.to_vec(),
            });
        }
        if l.rows != first.rows {
            return Err(Error::usage(format!(
                "sharded elementwise `{name}`: the arrays are split differently over the devices \
                 (rows per device {:?} and {:?}); make them with the same split",
                first.rows.iter().map(|r| r.len()).collect::<Vec<_>>(),
                l.rows.iter().map(|r| r.len()).collect::<Vec<_>>()
            )));
        }
    }
    Ok(())
}

impl<I: EwInputs, O: EwOutputs> Elementwise<I, O> {
    /// Computes into existing sharded outputs: the kernel runs on every shard, on its device's
    /// mesh stream (the devices other than the first are launched first), and this returns
    /// without waiting. Sharded inputs and outputs must have one shape and split; scalars go
    /// to every device.
    pub fn apply_sharded(
        &self,
        inputs: impl ShardedArgs<I>,
        outputs: impl ShardedOutArgs<O>,
    ) -> Result<()> {
        let _nvtx =
            crate::nvtx::op_range(|| format!("cudajit: sharded Elementwise {}", self.name()));
        let outs = outputs.layouts();
        let first = &outs[0];
        check_layouts(self.name(), first, &outs)?;
        check_layouts(self.name(), first, &inputs.layouts())?;
        let mesh = first.mesh;
        if let Some(other) = inputs.meshes().into_iter().find(|m| !m.same_as(mesh)) {
            return Err(Error::usage(format!(
                "sharded elementwise `{}`: a replicated input is on another mesh ({other:?}) than \
                 the sharded arrays ({mesh:?}); replicate it on their mesh",
                self.name()
            )));
        }
        // Elements per row (of axis 0): shard k's first element's index is its first row's.
        let row_len: usize = first.shape.iter().skip(1).product();
        for k in (0..mesh.len()).rev() {
            if first.rows[k].is_empty() {
                continue;
            }
            let start = (first.rows[k].start * row_len) as u64;
            self.launch_infos(
                mesh.stream(k),
                &inputs.shard_infos(k, start),
                &outputs.shard_infos(k),
            )?;
        }
        Ok(())
    }
}

impl<I: EwInputs, T: ScalarType> Elementwise<I, Expr<T>> {
    /// Computes into a new sharded array of the sharded inputs' shape and split (at least one
    /// input must be sharded), as [`apply_sharded`](Self::apply_sharded).
    pub fn call_sharded(&self, inputs: impl ShardedArgs<I>) -> Result<ShardedArray<T, IxDyn>> {
        let layouts = inputs.layouts();
        let Some(first) = layouts.first() else {
            return Err(Error::usage(format!(
                "sharded elementwise `{}`: no sharded input, so the mesh and shape are unknown; \
                 use apply_sharded() with a sharded output",
                self.name()
            )));
        };
        let mut out = ShardedArray::<T, IxDyn>::alloc_uninit(
            first.mesh,
            IxDyn(first.shape),
            "Elementwise::call_sharded",
        )?;
        if out.row_ranges() != first.rows {
            return Err(Error::usage(format!(
                "sharded elementwise `{}`: call_sharded needs inputs split evenly (as from_host and \
                 alloc split); use apply_sharded() with an output split like the inputs",
                self.name()
            )));
        }
        self.apply_sharded(inputs, &mut out)?;
        Ok(out)
    }
}
