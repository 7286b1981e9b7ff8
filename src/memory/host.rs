//! Host data that can be copied to the device: slices, vectors, ndarray arrays and views.

use ndarray::{ArrayBase, Data, Dimension, Ix1};

use super::element::DeviceCopy;

/// Host data with a shape, given to the device as one contiguous C-order buffer.
///
/// Non-contiguous ndarray views are first copied through a contiguous host buffer.
pub trait HostSource<T: DeviceCopy> {
    /// The shape's dimension type.
    type Dim: Dimension;
    /// The shape.
    fn host_dim(&self) -> Self::Dim;
    /// Calls `f` with the data in C order.
    fn with_c_order<R>(&self, f: impl FnOnce(&[T]) -> R) -> R;
}

impl<T: DeviceCopy> HostSource<T> for [T] {
    type Dim = Ix1;
    fn host_dim(&self) -> Ix1 {
        ndarray::Ix1(self.len())
    }
    fn with_c_order<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T: DeviceCopy> HostSource<T> for Vec<T> {
    type Dim = Ix1;
    fn host_dim(&self) -> Ix1 {
        ndarray::Ix1(self.len())
    }
    fn with_c_order<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T: DeviceCopy, const N: usize> HostSource<T> for [T; N] {
    type Dim = Ix1;
    fn host_dim(&self) -> Ix1 {
        ndarray::Ix1(N)
    }
    fn with_c_order<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(self)
    }
}

impl<T: DeviceCopy, S: Data<Elem = T>, D: Dimension> HostSource<T> for ArrayBase<S, D> {
    type Dim = D;
    fn host_dim(&self) -> D {
        self.raw_dim()
    }
    fn with_c_order<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        match self.as_slice() {
            Some(s) => f(s),
            None => {
                let contiguous: Vec<T> = self.iter().copied().collect();
                f(&contiguous)
            }
        }
    }
}
