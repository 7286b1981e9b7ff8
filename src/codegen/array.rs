//! Arrays inside a kernel: parameters (1-D slices and n-D arrays), shared and local arrays.

use std::marker::PhantomData;

use super::builder::{with_state, Kind};
use super::expr::Expr;
use super::scalar::Scalar;
use crate::ir::{ArrayRef, Op, Stmt, ValueId};

/// Read-only access (the array is a `&[T]` parameter).
pub struct ReadOnly;
/// Read-write access.
pub struct ReadWrite;

/// An array inside a kernel: `N` dimensions, C order, access `A` ([`ReadOnly`] or
/// [`ReadWrite`]). Reads with [`at`](DArray::at) / [`at2`](DArray::at2) / [`at3`](DArray::at3),
/// writes (read-write arrays only) with [`set`](DArray::set) / `set2` / `set3`.
/// Indices may be any integer expression or literal; there is no bounds check on the GPU (the
/// simulator checks every access: the flat index against the array's length, and for shared
/// and local arrays each index of `at2`/`at3` against its dimension's extent).
pub struct DArray<T, const N: usize, A> {
    pub(crate) tag: u32,
    pub(crate) array: ArrayRef,
    /// A shaped view of the dynamic shared memory: the index of its extents in the builder's
    /// state (`dyn_shapes`).
    shape: Option<u32>,
    _t: PhantomData<fn() -> (T, A)>,
}

impl<T, const N: usize, A> Clone for DArray<T, N, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize, A> Copy for DArray<T, N, A> {}

/// A 1-D read-only array parameter (`&[T]`).
pub type Slice<T> = DArray<T, 1, ReadOnly>;
/// A 1-D writable array (`&mut [T]` parameters, shared and local arrays).
pub type SliceMut<T> = DArray<T, 1, ReadWrite>;
/// An n-D read-only array parameter.
pub type NdRef<T, const N: usize> = DArray<T, N, ReadOnly>;
/// An n-D writable array parameter.
pub type NdMut<T, const N: usize> = DArray<T, N, ReadWrite>;

/// An integer expression usable as an index (converted to `i64`).
pub trait Index {
    /// The index as an `i64` expression.
    fn to_index(self) -> Expr<i64>;
}
impl Index for Expr<i64> {
    fn to_index(self) -> Expr<i64> {
        self
    }
}
macro_rules! index_impls {
    ($($t:ty),*) => {$(
        impl Index for Expr<$t> {
            fn to_index(self) -> Expr<i64> {
                self.cast()
            }
        }
        impl Index for $t {
            fn to_index(self) -> Expr<i64> {
                Expr::lit(self as i64)
            }
        }
    )*};
}
index_impls!(i32, u32, u64);
// Narrow integer expressions index too (extended by their signedness, as `i32`'s).
macro_rules! narrow_index_impls {
    ($($t:ty),*) => {$(
        impl Index for Expr<$t> {
            fn to_index(self) -> Expr<i64> {
                self.cast()
            }
        }
    )*};
}
narrow_index_impls!(i8, u8, i16, u16);
impl Index for i64 {
    fn to_index(self) -> Expr<i64> {
        Expr::lit(self)
    }
}
impl Index for usize {
    fn to_index(self) -> Expr<i64> {
        Expr::lit(self as i64)
    }
}

impl<T: Scalar, const N: usize, A> DArray<T, N, A> {
    pub(crate) fn new(tag: u32, array: ArrayRef) -> Self {
        DArray {
            tag,
            array,
            shape: None,
            _t: PhantomData,
        }
    }

    /// A shaped view of the dynamic shared memory, its extents recorded at `shape`.
    pub(crate) fn new_shaped(tag: u32, array: ArrayRef, shape: u32) -> Self {
        DArray {
            tag,
            array,
            shape: Some(shape),
            _t: PhantomData,
        }
    }

    /// Whether `at2`/`at3` and friends check each index against its extent (on the
    /// simulator): shared and local arrays, shaped views of the dynamic shared memory.
    fn checks_dims(&self) -> bool {
        match self.array {
            ArrayRef::Shared(_) | ArrayRef::Local(_) => true,
            ArrayRef::DynShared(_) => self.shape.is_some(),
            ArrayRef::Param(_) | ArrayRef::Const(_) => false,
        }
    }

    /// The extent of each dimension as an `i64` expression: constants for static arrays, the
    /// launch-time values of a shaped dynamic view.
    fn extents(&self) -> Vec<Expr<i64>> {
        /// An extent: a recorded value, or a constant to record.
        enum Ext {
            Value(u32),
            Const(u64),
        }
        let (array, shape) = (self.array, self.shape);
        let exts = with_state(|s| match (array, shape) {
            (ArrayRef::DynShared(_), Some(sh)) => s
                .dyn_shapes
                .get(sh as usize)
                .map(|ids| ids.iter().map(|&id| Ext::Value(id)).collect())
                .unwrap_or_default(),
            (ArrayRef::Shared(i), _) | (ArrayRef::Local(i), _) => {
                let decls = match array {
                    ArrayRef::Shared(_) => &s.f.shared,
                    _ => &s.f.locals,
                };
                match decls.get(i as usize) {
                    Some(d) if !d.dims.is_empty() => {
                        d.dims.iter().map(|&e| Ext::Const(e)).collect()
                    }
                    Some(d) => vec![Ext::Const(d.len)],
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        })
        .unwrap_or_default();
        exts.into_iter()
            .map(|e| match e {
                Ext::Value(id) => Expr::from_raw(self.tag, id),
                Ext::Const(c) => Expr::lit(c as i64),
            })
            .collect()
    }

    /// The flat index of element `idx` of a shared or local array (or shaped dynamic view):
    /// one `NdIndex` (the multiply-adds; per-dimension checks on the simulator).
    fn nd_index(&self, what: &str, idx: Vec<Expr<i64>>) -> Expr<i64> {
        self.check_tag();
        let dims = self.extents();
        if dims.len() != idx.len() || N != idx.len() {
            let n = idx.len();
            with_state(|s| {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: `{what}` takes {n} indices, but this array has {N} \
                         dimension{}; use `at`/`set` (flat), `at2`/`set2` or `at3`/`set3` to \
                         match its rank",
                        s.f.name,
                        if N == 1 { "" } else { "s" }
                    ),
                )
            });
            return Expr::lit(0i64);
        }
        let mut raws: Vec<(u32, u32)> = idx.iter().map(|e| e.raw()).collect();
        raws.extend(dims.iter().map(|e| e.raw()));
        Expr::record(
            Op::NdIndex {
                array: self.array,
                indices: idx.iter().map(|e| ValueId(e.id)).collect(),
                dims: dims.iter().map(|e| ValueId(e.id)).collect(),
            },
            &raws,
            false,
        )
    }

    /// The flat (C-order) index of element `[i, j]` of a 2-D array, `i * dim(1) + j`: for the
    /// methods that take a flat index (atomics, vector accesses). On the simulator, the
    /// index of a shared or local array is checked per dimension, as [`at2`](DArray::at2)'s.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// // A 2-D histogram of byte pairs in shared memory.
    /// let k = Kernel::<(&[u8], &[u8], &mut [u32])>::build("hist2", |k, (a, b, out)| {
    ///     let h = k.shared_array2::<u32>(16, 16);
    ///     let t = k.thread_idx().x;
    ///     h.set(t, 0u32); // launched with 256 threads: one element each
    ///     k.syncthreads();
    ///     let i = k.grid1();
    ///     k.if_(i.lt(a.len()), |_| {
    ///         let (x, y) = (a.at(i) >> 4u8, b.at(i) >> 4u8);
    ///         h.atomic_add(h.index2(x, y), 1u32);
    ///     });
    ///     k.syncthreads();
    ///     out.atomic_add(t, h.at(t));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn index2(&self, i: impl Index, j: impl Index) -> Expr<i64> {
        let _at = crate::codegen::srcloc::at();
        if self.checks_dims() {
            self.nd_index("index2", vec![i.to_index(), j.to_index()])
        } else {
            self.flat2(i, j)
        }
    }

    /// The flat (C-order) index of element `[i, j, k]` of a 3-D array, `(i * dim(1) + j) *
    /// dim(2) + k`; see [`index2`](DArray::index2).
    #[track_caller]
    pub fn index3(&self, i: impl Index, j: impl Index, k: impl Index) -> Expr<i64> {
        let _at = crate::codegen::srcloc::at();
        if self.checks_dims() {
            self.nd_index("index3", vec![i.to_index(), j.to_index(), k.to_index()])
        } else {
            self.flat3(i, j, k)
        }
    }

    fn check_tag(&self) {
        let tag = self.tag;
        with_state(|s| {
            if s.tag != tag {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{}`: an array of another kernel is used", s.f.name),
                );
            }
        });
    }

    /// The extent of dimension `dim` (0 = outermost).
    #[track_caller]
    pub fn dim(&self, dim: usize) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        self.check_tag();
        if dim >= N {
            with_state(|s| {
                s.error(
                    Kind::ArrayAccess,
                    format!("array dimension {dim} requested of a {N}-D array"),
                )
            });
        }
        if let (ArrayRef::DynShared(_), Some(_)) = (self.array, self.shape) {
            return match self.extents().get(dim) {
                Some(e) => e.cast(),
                None => Expr::lit(0u64),
            };
        }
        if let ArrayRef::DynShared(_) = self.array {
            with_state(|s| {
                s.error(Kind::ArrayAccess, format!(
                    "in `{}`: the size of the dynamic shared array is set at launch and unknown to the kernel; \
                     pass it as a parameter",
                    s.f.name
                ))
            });
        }
        Expr::record(
            Op::ArrayDim {
                array: self.array,
                dim: dim as u8,
            },
            &[],
            false,
        )
    }

    /// The element stride of dimension `dim` in this C-order array (the product of the later
    /// dimensions).
    #[track_caller]
    pub fn stride(&self, dim: usize) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        let mut s = Expr::lit(1u64);
        for d in dim + 1..N {
            s = s * self.dim(d);
        }
        s
    }

    /// The number of elements (all dimensions multiplied).
    #[track_caller]
    pub fn len(&self) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        let mut n = self.dim(0);
        for d in 1..N {
            n = n * self.dim(d);
        }
        n
    }

    /// The element at flat (C-order) index `i`.
    #[track_caller]
    pub fn at(&self, i: impl Index) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        self.check_tag();
        let i = i.to_index();
        let varying =
            with_state(|s| s.varying.get(i.id as usize).copied().unwrap_or(false)).unwrap_or(false);
        Expr::record(
            Op::Load {
                array: self.array,
                index: ValueId(i.id),
            },
            &[i.raw()],
            varying,
        )
    }

    fn check_vec(width: usize) {
        let bytes = width * T::TY.size();
        // 2 x f16 / 2 x bf16 (CUDA's `half2`, `__nv_bfloat162`) move 4 bytes.
        let half2 = width == 2 && T::TY.is_half();
        if !matches!(width, 2 | 4) || !(matches!(bytes, 8 | 16) || half2) {
            with_state(|s| {
                s.error(Kind::ArrayAccess, format!(
                    "in `{}`: vector accesses move 8 or 16 bytes in 2 or 4 lanes (4 bytes for 2 x f16 or bf16); {width} x {} is {bytes} bytes",
                    s.f.name,
                    T::TY.name()
                ))
            });
        }
    }

    /// Loads `W` consecutive elements `[i*W, i*W + W)` in one vector access (16 bytes: 4 x
    /// f32/i32/u32 or 2 x f64/i64/u64; 8 bytes: 2 x f32/i32/u32 or 4 x f16/bf16; 4 bytes: 2 x
    /// f16/bf16, CUDA's `half2`/`__nv_bfloat162`). The array's address must be
    /// aligned to the vector's size; a parameter array that is not is refused at launch.
    #[track_caller]
    pub fn load_vec<const W: usize>(&self, i: impl Index) -> [Expr<T>; W] {
        let _at = crate::codegen::srcloc::at();
        self.check_tag();
        Self::check_vec(W);
        let i = i.to_index();
        let varying =
            with_state(|s| s.varying.get(i.id as usize).copied().unwrap_or(false)).unwrap_or(false);
        let array = self.array;
        std::array::from_fn(|lane| {
            Expr::record(
                Op::LoadLane {
                    array,
                    index: ValueId(i.id),
                    lane: lane as u8,
                    width: W as u8,
                },
                &[i.raw()],
                varying,
            )
        })
    }

    /// `W` consecutive elements starting at `i * W`: one scalar load for `W == 1`, else one
    /// vector access ([`load_vec`](DArray::load_vec)).
    pub(crate) fn load_lanes<const W: usize>(&self, i: impl Index) -> [Expr<T>; W] {
        if W == 1 {
            let i = i.to_index();
            std::array::from_fn(|_| self.at(i))
        } else {
            self.load_vec::<W>(i)
        }
    }

    pub(crate) fn flat2(&self, i: impl Index, j: impl Index) -> Expr<i64> {
        let d1: Expr<i64> = self.dim(1).cast();
        i.to_index() * d1 + j.to_index()
    }

    pub(crate) fn flat3(&self, i: impl Index, j: impl Index, k: impl Index) -> Expr<i64> {
        let d1: Expr<i64> = self.dim(1).cast();
        let d2: Expr<i64> = self.dim(2).cast();
        (i.to_index() * d1 + j.to_index()) * d2 + k.to_index()
    }

    /// The element at `[i, j]` of a 2-D array.
    #[track_caller]
    pub fn at2(&self, i: impl Index, j: impl Index) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        if self.checks_dims() {
            self.at(self.nd_index("at2", vec![i.to_index(), j.to_index()]))
        } else {
            self.at(self.flat2(i, j))
        }
    }

    /// The element at `[i, j, k]` of a 3-D array.
    #[track_caller]
    pub fn at3(&self, i: impl Index, j: impl Index, k: impl Index) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        if self.checks_dims() {
            self.at(self.nd_index("at3", vec![i.to_index(), j.to_index(), k.to_index()]))
        } else {
            self.at(self.flat3(i, j, k))
        }
    }
}

impl<T: Scalar, const N: usize> DArray<T, N, ReadWrite> {
    /// Stores `value` at flat (C-order) index `i`.
    #[track_caller]
    pub fn set(&self, i: impl Index, value: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        self.check_tag();
        let (i, v) = (i.to_index(), value.into());
        let array = self.array;
        with_state(|s| {
            s.check_use(&[i.raw(), v.raw()]);
            s.push_stmt(Stmt::Store {
                array,
                index: ValueId(i.id),
                value: ValueId(v.id),
            })
        });
    }

    /// Stores `value` at `[i, j]` of a 2-D array.
    #[track_caller]
    pub fn set2(&self, i: impl Index, j: impl Index, value: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        let f = if self.checks_dims() {
            self.nd_index("set2", vec![i.to_index(), j.to_index()])
        } else {
            self.flat2(i, j)
        };
        self.set(f, value)
    }

    /// Stores `value` at `[i, j, k]` of a 3-D array.
    #[track_caller]
    pub fn set3(&self, i: impl Index, j: impl Index, k: impl Index, value: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        let f = if self.checks_dims() {
            self.nd_index("set3", vec![i.to_index(), j.to_index(), k.to_index()])
        } else {
            self.flat3(i, j, k)
        };
        self.set(f, value)
    }

    /// Stores `W` consecutive elements `[i*W, i*W + W)` in one vector access (see
    /// [`load_vec`](DArray::load_vec) for sizes and alignment).
    #[track_caller]
    pub fn store_vec<const W: usize>(&self, i: impl Index, values: [Expr<T>; W]) {
        let _at = crate::codegen::srcloc::at();
        self.check_tag();
        Self::check_vec(W);
        let i = i.to_index();
        let array = self.array;
        with_state(|s| {
            let mut raws = vec![i.raw()];
            raws.extend(values.iter().map(|v| v.raw()));
            s.check_use(&raws);
            s.push_stmt(Stmt::StoreVec {
                array,
                index: ValueId(i.id),
                values: values.iter().map(|v| ValueId(v.id)).collect(),
            })
        });
    }

    /// Stores `W` consecutive elements at `i * W`: a scalar store for `W == 1`, else one vector
    /// access ([`store_vec`](DArray::store_vec)).
    pub(crate) fn store_lanes<const W: usize>(&self, i: impl Index, values: [Expr<T>; W]) {
        if W == 1 {
            self.set(i, values[0]);
        } else {
            self.store_vec::<W>(i, values);
        }
    }

    /// This array, read-only.
    pub fn as_read_only(&self) -> DArray<T, N, ReadOnly> {
        DArray {
            tag: self.tag,
            array: self.array,
            shape: self.shape,
            _t: PhantomData,
        }
    }
}
