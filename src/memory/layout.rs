//! The shape and element strides of a strided view, and the index arithmetic on them (slicing
//! with steps, transposes, reversed axes), as ndarray does it.

use ndarray::{Axis, Dimension, RemoveAxis, Slice, SliceArg, SliceInfoElem};

use crate::error::{Error, Result};

/// Where a strided view's elements are: the address of element `[0, ..., 0]`, the shape, and
/// the element strides (signed, stored as `usize` bits as ndarray does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout<D> {
    pub ptr: u64,
    pub dim: D,
    pub strides: D,
}

/// C-order element strides of `shape`.
pub(crate) fn c_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as isize;
    }
    s
}

/// Whether `strides` are C order for `shape` (axes of length 1 may have any stride; an empty
/// shape is contiguous).
pub(crate) fn is_standard(shape: &[usize], strides: &[usize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let c = c_strides(shape);
    shape
        .iter()
        .zip(strides)
        .zip(c)
        .all(|((&d, &s), c)| d == 1 || s as isize == c)
}

/// The lowest and highest element offsets (from element 0) a non-empty view touches.
pub(crate) fn span(shape: &[usize], strides: &[usize]) -> (isize, isize) {
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&d, &s) in shape.iter().zip(strides) {
        if d == 0 {
            return (0, -1);
        }
        let far = (d as isize - 1) * s as isize;
        if far < 0 {
            lo += far;
        } else {
            hi += far;
        }
    }
    (lo, hi)
}

/// Calls `f` with the element offset of every element, in C order of the logical indices.
pub(crate) fn for_each_offset(shape: &[usize], strides: &[usize], mut f: impl FnMut(isize)) {
    if shape.contains(&0) {
        return;
    }
    let n = shape.len();
    let mut idx = vec![0usize; n];
    let mut off = 0isize;
    loop {
        f(off);
        let mut d = n;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            off += strides[d] as isize;
            if idx[d] < shape[d] {
                break;
            }
            off -= (shape[d] as isize) * strides[d] as isize;
            idx[d] = 0;
        }
    }
}

fn abs_index(len: usize, i: isize, what: &str) -> Result<usize> {
    let a = if i < 0 { len as isize + i } else { i };
    if a < 0 || a as usize > len {
        return Err(Error::usage(format!(
            "{what} {i} is out of range for an axis of length {len}"
        )));
    }
    Ok(a as usize)
}

/// Applies `slice` to one axis of length `*len` and stride `*stride`; returns the element
/// offset of the new first element. ndarray's semantics: negative start and end count from
/// the end; a negative step walks the range from its end.
fn slice_one(len: &mut usize, stride: &mut usize, slice: Slice) -> Result<isize> {
    let Slice { start, end, step } = slice;
    if step == 0 {
        return Err(Error::usage("a slice's step must not be 0"));
    }
    let start = abs_index(*len, start, "slice start")?;
    let end = abs_index(*len, end.unwrap_or(*len as isize), "slice end")?.max(start);
    let m = end - start;
    let s = *stride as isize;
    let offset = if m == 0 {
        0
    } else if step < 0 {
        (end - 1) as isize * s
    } else {
        start as isize * s
    };
    let abs = step.unsigned_abs();
    *len = m.div_ceil(abs);
    // As ndarray: an axis of length 0 or 1 has stride 0.
    *stride = if *len <= 1 { 0 } else { (s * step) as usize };
    Ok(offset)
}

impl<D: Dimension> Layout<D> {
    /// A C-order layout of `dim` at `ptr`.
    pub fn c_order(ptr: u64, dim: D) -> Self {
        let mut strides = dim.clone();
        for (s, c) in strides.slice_mut().iter_mut().zip(c_strides(dim.slice())) {
            *s = c as usize;
        }
        Layout { ptr, dim, strides }
    }

    /// The strides as signed numbers.
    pub fn strides_isize(&self) -> Vec<isize> {
        self.strides.slice().iter().map(|&s| s as isize).collect()
    }

    /// Whether the layout is C order.
    pub fn is_standard(&self) -> bool {
        is_standard(self.dim.slice(), self.strides.slice())
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// The memory the view spans: the address of its lowest element, the element count from
    /// there to its highest, and element 0's offset from the lowest (all 0 when empty).
    pub fn extent(&self, elem: usize) -> (u64, usize, usize) {
        if self.len() == 0 {
            return (self.ptr, 0, 0);
        }
        let (lo, hi) = span(self.dim.slice(), self.strides.slice());
        let base = (self.ptr as i64 + lo as i64 * elem as i64) as u64;
        (base, (hi - lo + 1) as usize, (-lo) as usize)
    }

    fn check_axis(&self, axis: Axis) -> Result<()> {
        let n = self.dim.ndim();
        if axis.index() >= n {
            return Err(Error::usage(format!(
                "axis {} is out of range for a {n}-dimensional view",
                axis.index()
            )));
        }
        Ok(())
    }

    fn moved(&self, offset: isize, elem: usize) -> u64 {
        (self.ptr as i64 + offset as i64 * elem as i64) as u64
    }

    /// Slices one axis.
    pub fn slice_axis(mut self, axis: Axis, slice: Slice, elem: usize) -> Result<Self> {
        self.check_axis(axis)?;
        let a = axis.index();
        let off = slice_one(
            &mut self.dim.slice_mut()[a],
            &mut self.strides.slice_mut()[a],
            slice,
        )?;
        self.ptr = self.moved(off, elem);
        Ok(self)
    }

    /// Slices every axis with ndarray's `s![]` elements (ranges with steps, indices, new axes).
    pub fn slice_each<I: SliceArg<D>>(&self, info: &I, elem: usize) -> Result<Layout<I::OutDim>> {
        let n = self.dim.ndim();
        if info.in_ndim() != n {
            return Err(Error::usage(format!(
                "the slice names {} axes, but the view has {n}",
                info.in_ndim()
            )));
        }
        let mut dim = I::OutDim::zeros(info.out_ndim());
        let mut strides = I::OutDim::zeros(info.out_ndim());
        let (mut a, mut o, mut off) = (0usize, 0usize, 0isize);
        for e in info.as_ref() {
            match *e {
                SliceInfoElem::Slice { start, end, step } => {
                    let (mut len, mut stride) = (self.dim[a], self.strides[a]);
                    off += slice_one(&mut len, &mut stride, Slice { start, end, step })?;
                    dim[o] = len;
                    strides[o] = stride;
                    a += 1;
                    o += 1;
                }
                SliceInfoElem::Index(i) => {
                    let len = self.dim[a];
                    let j = abs_index(len, i, "index")?;
                    if j >= len {
                        return Err(Error::usage(format!(
                            "index {i} is out of range for an axis of length {len}"
                        )));
                    }
                    off += j as isize * self.strides[a] as isize;
                    a += 1;
                }
                SliceInfoElem::NewAxis => {
                    dim[o] = 1;
                    strides[o] = 0;
                    o += 1;
                }
            }
        }
        Ok(Layout {
            ptr: self.moved(off, elem),
            dim,
            strides,
        })
    }

    /// The sub-view at `index` along `axis` (one dimension fewer).
    pub fn index_axis(&self, axis: Axis, index: usize, elem: usize) -> Result<Layout<D::Smaller>>
    where
        D: RemoveAxis,
    {
        self.check_axis(axis)?;
        let len = self.dim[axis.index()];
        if index >= len {
            return Err(Error::usage(format!(
                "index {index} is out of range for axis {} of length {len}",
                axis.index()
            )));
        }
        let off = index as isize * self.strides[axis.index()] as isize;
        Ok(Layout {
            ptr: self.moved(off, elem),
            dim: self.dim.remove_axis(axis),
            strides: self.strides.remove_axis(axis),
        })
    }

    /// The axes in reverse order (the transpose).
    pub fn reversed_axes(mut self) -> Self {
        self.dim.slice_mut().reverse();
        self.strides.slice_mut().reverse();
        self
    }

    /// The axes in the order `axes` (a permutation of `0..ndim`).
    pub fn permuted_axes(&self, axes: &[usize]) -> Result<Self> {
        let n = self.dim.ndim();
        let mut seen = vec![false; n];
        let is_perm = axes.len() == n
            && axes
                .iter()
                .all(|&a| a < n && !std::mem::replace(&mut seen[a], true));
        if !is_perm {
            return Err(Error::usage(format!(
                "{axes:?} is not a permutation of the axes of a {n}-dimensional view"
            )));
        }
        let (mut dim, mut strides) = (self.dim.clone(), self.strides.clone());
        for (o, &a) in axes.iter().enumerate() {
            dim[o] = self.dim[a];
            strides[o] = self.strides[a];
        }
        Ok(Layout {
            ptr: self.ptr,
            dim,
            strides,
        })
    }

    /// The same elements with `axis` walked backwards (a negative stride).
    pub fn invert_axis(mut self, axis: Axis, elem: usize) -> Result<Self> {
        self.check_axis(axis)?;
        let a = axis.index();
        let (len, s) = (self.dim[a], self.strides[a] as isize);
        if len > 1 {
            self.ptr = self.moved((len as isize - 1) * s, elem);
        }
        self.strides[a] = (-s) as usize;
        Ok(self)
    }

    /// The same layout with a dynamic dimension type.
    pub fn into_dyn(self) -> Layout<ndarray::IxDyn> {
        Layout {
            ptr: self.ptr,
            dim: self.dim.into_dyn(),
            strides: self.strides.into_dyn(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{s, Array2, Ix2};

    fn offsets<D: Dimension>(l: &Layout<D>) -> Vec<isize> {
        let mut v = Vec::new();
        for_each_offset(l.dim.slice(), l.strides.slice(), |o| v.push(o));
        v
    }

    /// The layouts agree with ndarray's on the same slicing of a host array.
    #[test]
    fn slicing_matches_ndarray() {
        let host = Array2::from_shape_fn((7, 9), |(i, j)| (i * 9 + j) as isize);
        let base = Layout::c_order(0, Ix2(7, 9));
        let check = |l: Layout<Ix2>, v: ndarray::ArrayView2<'_, isize>| {
            assert_eq!(l.dim.slice(), v.shape());
            let start = l.ptr as isize; // elem size 1: the address is the flat index
            let got: Vec<isize> = offsets(&l).iter().map(|o| start + o).collect();
            let want: Vec<isize> = v.iter().copied().collect();
            assert_eq!(got, want);
        };
        check(
            base.slice_each(&s![1..6;2, ..;3], 1).unwrap(),
            host.slice(s![1..6;2, ..;3]),
        );
        check(
            base.slice_each(&s![..;-1, 2..8;-2], 1).unwrap(),
            host.slice(s![..;-1, 2..8;-2]),
        );
        check(base.clone().reversed_axes(), host.t());
        check(
            base.clone()
                .slice_axis(Axis(1), Slice::new(1, Some(8), 3), 1)
                .unwrap(),
            host.slice_axis(Axis(1), ndarray::Slice::new(1, Some(8), 3)),
        );
        check(
            base.clone().invert_axis(Axis(0), 1).unwrap(),
            host.slice(s![..;-1, ..]),
        );
        check(
            base.slice_each(&s![3..3, ..], 1).unwrap(),
            host.slice(s![3..3, ..]),
        );
        let row = base.index_axis(Axis(0), 4, 1).unwrap();
        assert_eq!(offsets(&row).len(), 9);
        assert_eq!(row.ptr, 36);
    }

    #[test]
    fn spans_and_errors() {
        let l = Layout::c_order(1000, Ix2(4, 5)).reversed_axes();
        assert!(!l.is_standard());
        assert_eq!(l.extent(4), (1000, 20, 0));
        let r = Layout::c_order(1000, Ix2(4, 5))
            .invert_axis(Axis(1), 4)
            .unwrap();
        assert_eq!(r.extent(4), (1000, 20, 4));
        let base = Layout::c_order(0, Ix2(4, 5));
        let zero = Slice {
            start: 0,
            end: None,
            step: 0,
        };
        assert!(base.clone().slice_axis(Axis(0), zero, 1).is_err());
        assert!(base.slice_each(&s![5.., ..], 1).is_err());
        assert!(base.slice_each(&s![.., 4], 1).is_ok());
        assert!(base.slice_each(&s![.., 5], 1).is_err());
        assert!(base
            .clone()
            .slice_axis(Axis(2), Slice::from(..), 1)
            .is_err());
        assert!(base.permuted_axes(&[0, 0]).is_err());
        assert!(base.permuted_axes(&[1, 0]).is_ok());
        assert!(base.index_axis(Axis(0), 4, 1).is_err());
    }
}
