//! Strided n-D array parameters: views with any element strides (steps, transposes, reversed
//! axes, sub-blocks, Fortran order), as Numba's arrays carry their strides.
//!
//! A `NdStrided<T, N>` parameter takes `3 + 2N` argument slots: the address of the lowest
//! element the view touches and the element count up to its highest (an ordinary 1-D array
//! parameter, which the simulator bounds-checks), element `[0, ..., 0]`'s offset from there, the `N`
//! extents, and the `N` signed element strides. `at2(i, j)` reads element
//! `offset + i * stride(0) + j * stride(1)`. The contiguous parameters ([`NdRef`](super::NdRef),
//! [`NdMut`](super::NdMut)) are unchanged and take no strides.

use ndarray::Dim;

use super::array::{DArray, Index, ReadOnly, ReadWrite};
use super::builder::{with_state, Kind};
use super::expr::Expr;
use super::scalar::Scalar;
use super::signature::{declare_scalar_param, ArgBuffer, ArgFor, KernelParam};
use crate::error::{Error, Result};
use crate::memory::{AsStrided, AsStridedMut, DeviceCopy, StridedView, StridedViewMut};

/// A strided n-D array inside a kernel (a parameter): `N` dimensions with their own element
/// strides, access `A` ([`ReadOnly`] or [`ReadWrite`]). Reads with [`at`](DStrided::at) (1-D),
/// [`at2`](DStrided::at2), [`at3`](DStrided::at3) or [`at_nd`](DStrided::at_nd); writes with the
/// `set` forms. No bounds check on the GPU; the simulator faults on an access outside the
/// memory the view spans.
pub struct DStrided<T, const N: usize, A> {
    data: DArray<T, 1, A>,
    offset: Expr<i64>,
    dims: [Expr<u64>; N],
    strides: [Expr<i64>; N],
}

impl<T, const N: usize, A> Clone for DStrided<T, N, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize, A> Copy for DStrided<T, N, A> {}

/// A read-only strided n-D array parameter: `Kernel<(NdStrided<f32, 2>, ...)>` takes any
/// device array or view of 2 dimensions (`&a`, `&a.t()`, `&a.slice_axis(..)?`).
pub type NdStrided<T, const N: usize> = DStrided<T, N, ReadOnly>;
/// A writable strided n-D array parameter: takes `&mut` any writable device array or view
/// (`&mut a`, `&mut a.strided_mut().reversed_axes()`).
pub type NdStridedMut<T, const N: usize> = DStrided<T, N, ReadWrite>;

fn builder_error(msg: String) {
    with_state(|s| s.error(Kind::ArrayAccess, msg));
}

impl<T: Scalar, const N: usize, A> DStrided<T, N, A> {
    fn declare_with(data: DArray<T, 1, A>) -> Self {
        let offset = declare_scalar_param::<i64>();
        let dims = std::array::from_fn(|_| declare_scalar_param::<u64>());
        let strides = std::array::from_fn(|_| declare_scalar_param::<i64>());
        DStrided {
            data,
            offset,
            dims,
            strides,
        }
    }

    /// The extent of dimension `dim` (0 = outermost).
    pub fn dim(&self, dim: usize) -> Expr<u64> {
        match self.dims.get(dim) {
            Some(&d) => d,
            None => {
                builder_error(format!(
                    "array dimension {dim} requested of a {N}-D strided array"
                ));
                Expr::lit(0)
            }
        }
    }

    /// The element stride of dimension `dim` (signed: negative along a reversed axis).
    pub fn stride(&self, dim: usize) -> Expr<i64> {
        match self.strides.get(dim) {
            Some(&s) => s,
            None => {
                builder_error(format!("stride {dim} requested of a {N}-D strided array"));
                Expr::lit(0)
            }
        }
    }

    /// The number of elements.
    pub fn len(&self) -> Expr<u64> {
        let mut n = self.dim(0);
        for d in 1..N {
            n = n * self.dim(d);
        }
        n
    }

    /// The element offset (into the spanned memory) of index `idx`.
    fn offset_of(&self, idx: [Expr<i64>; N]) -> Expr<i64> {
        idx.iter()
            .zip(&self.strides)
            .fold(self.offset, |o, (&i, &s)| o + i * s)
    }

    fn check_rank(&self, k: usize) {
        if k != N {
            builder_error(format!("{k} indices given for a {N}-D strided array"));
        }
    }

    fn index_k<const K: usize>(&self, idx: [Expr<i64>; K]) -> Expr<i64> {
        self.check_rank(K);
        let mut full: [Expr<i64>; N] = std::array::from_fn(|_| Expr::lit(0i64));
        for (f, i) in full.iter_mut().zip(idx) {
            *f = i;
        }
        self.offset_of(full)
    }

    /// The element at `idx` (one index per dimension).
    pub fn at_nd(&self, idx: [Expr<i64>; N]) -> Expr<T> {
        self.data.at(self.offset_of(idx))
    }

    /// The element at `[i]` of a 1-D array.
    pub fn at(&self, i: impl Index) -> Expr<T> {
        self.data.at(self.index_k([i.to_index()]))
    }

    /// The element at `[i, j]` of a 2-D array.
    pub fn at2(&self, i: impl Index, j: impl Index) -> Expr<T> {
        self.data.at(self.index_k([i.to_index(), j.to_index()]))
    }

    /// The element at `[i, j, k]` of a 3-D array.
    pub fn at3(&self, i: impl Index, j: impl Index, k: impl Index) -> Expr<T> {
        let idx = [i.to_index(), j.to_index(), k.to_index()];
        self.data.at(self.index_k(idx))
    }
}

impl<T: Scalar, const N: usize> DStrided<T, N, ReadWrite> {
    /// Stores `value` at `idx`.
    pub fn set_nd(&self, idx: [Expr<i64>; N], value: impl Into<Expr<T>>) {
        self.data.set(self.offset_of(idx), value)
    }

    /// Stores `value` at `[i]` of a 1-D array.
    pub fn set(&self, i: impl Index, value: impl Into<Expr<T>>) {
        self.data.set(self.index_k([i.to_index()]), value)
    }

    /// Stores `value` at `[i, j]` of a 2-D array.
    pub fn set2(&self, i: impl Index, j: impl Index, value: impl Into<Expr<T>>) {
        self.data
            .set(self.index_k([i.to_index(), j.to_index()]), value)
    }

    /// Stores `value` at `[i, j, k]` of a 3-D array.
    pub fn set3(&self, i: impl Index, j: impl Index, k: impl Index, value: impl Into<Expr<T>>) {
        let idx = [i.to_index(), j.to_index(), k.to_index()];
        self.data.set(self.index_k(idx), value)
    }

    /// This array, read-only.
    pub fn as_read_only(&self) -> DStrided<T, N, ReadOnly> {
        DStrided {
            data: self.data.as_read_only(),
            offset: self.offset,
            dims: self.dims,
            strides: self.strides,
        }
    }
}

impl<T: Scalar, const N: usize> KernelParam for DStrided<T, N, ReadOnly> {
    type Handle = DStrided<T, N, ReadOnly>;
    fn declare() -> Self::Handle {
        DStrided::declare_with(<&[T] as KernelParam>::declare())
    }
}

impl<T: Scalar, const N: usize> KernelParam for DStrided<T, N, ReadWrite> {
    type Handle = DStrided<T, N, ReadWrite>;
    fn declare() -> Self::Handle {
        DStrided::declare_with(<&mut [T] as KernelParam>::declare())
    }
}

/// Pushes a strided view's `3 + 2N` slots.
fn push_strided<T: DeviceCopy, D: ndarray::Dimension>(
    buf: &mut ArgBuffer<'_>,
    v: &StridedView<'_, T, D>,
) -> Result<()> {
    let lay = v.layout();
    let (base, len, off) = lay.extent(std::mem::size_of::<T>());
    buf.push_flat(v.context(), if len == 0 { 0 } else { base }, len)?;
    buf.push_scalar(off as u64)?;
    for &d in lay.dim.slice() {
        buf.push_scalar(d as u64)?;
    }
    for &s in lay.strides.slice() {
        buf.push_scalar(s as u64)?;
    }
    Ok(())
}

impl<T: Scalar, const N: usize, X> ArgFor<DStrided<T, N, ReadOnly>> for &X
where
    X: AsStrided<T, Dim = Dim<[usize; N]>> + ?Sized,
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_strided(buf, &self.as_strided())
    }
}

impl<T: Scalar, const N: usize, X> ArgFor<DStrided<T, N, ReadWrite>> for &mut X
where
    X: AsStridedMut<T, Dim = Dim<[usize; N]>> + ?Sized,
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_strided(buf, &self.as_strided())
    }
}

/// The error for a non-contiguous view given to a contiguous parameter.
pub(crate) fn not_contiguous(shape: &[usize], strides: &[isize]) -> Error {
    Error::launch_argument(format!(
        "a kernel parameter for a contiguous array (NdRef/NdMut/&[T]) was given a strided view \
         (shape {shape:?}, strides {strides:?}) that is not contiguous in C order: make a \
         contiguous copy with `.to_contiguous(stream)`, or declare the parameter as \
         NdStrided/NdStridedMut"
    ))
}

/// A strided view by value for a strided parameter (`k.launch(.., (a.t(), ..))`).
impl<T: Scalar, const N: usize> ArgFor<DStrided<T, N, ReadOnly>>
    for StridedView<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_strided(buf, self)
    }
}

/// A writable strided view by value for a writable strided parameter.
impl<T: Scalar, const N: usize> ArgFor<DStrided<T, N, ReadWrite>>
    for StridedViewMut<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: ndarray::Dimension,
{
    #[inline]
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_strided(buf, &self.view())
    }
}

/// Pushes a strided view for a contiguous parameter: its address and extents when it is
/// contiguous in C order, else an error saying what to do.
fn push_contiguous<T: Scalar, D: ndarray::Dimension>(
    buf: &mut ArgBuffer<'_>,
    v: &StridedView<'_, T, D>,
) -> Result<()> {
    match v.as_contiguous() {
        Some(c) => buf.push_array(&c),
        None => Err(not_contiguous(v.shape(), &v.strides())),
    }
}

/// A strided view for a contiguous n-D parameter: accepted when it is contiguous in C order.
impl<T: Scalar, const N: usize> ArgFor<DArray<T, N, ReadOnly>>
    for StridedView<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: ndarray::Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_contiguous(buf, self)
    }
}

/// A writable strided view for a contiguous n-D parameter: accepted when contiguous.
impl<T: Scalar, const N: usize> ArgFor<DArray<T, N, ReadWrite>>
    for StridedViewMut<'_, T, Dim<[usize; N]>>
where
    Dim<[usize; N]>: ndarray::Dimension,
{
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_contiguous(buf, &self.view())
    }
}

/// A 1-D strided view for a `&[T]` parameter: accepted when its step is 1.
impl<T: Scalar> ArgFor<&[T]> for StridedView<'_, T, ndarray::Ix1> {
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_contiguous(buf, self)
    }
}

/// A writable 1-D strided view for a `&mut [T]` parameter: accepted when its step is 1.
impl<T: Scalar> ArgFor<&mut [T]> for StridedViewMut<'_, T, ndarray::Ix1> {
    fn push(&self, buf: &mut ArgBuffer<'_>) -> Result<()> {
        push_contiguous(buf, &self.view())
    }
}
