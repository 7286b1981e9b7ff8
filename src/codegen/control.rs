//! The kernel builder handle: thread geometry, control flow, variables, shared memory, barriers.

use super::array::{DArray, Index, NdMut, ReadWrite, SliceMut};
use super::builder::{with_state, Kind};
use super::expr::{Expr, Var};
use super::scalar::{Int, Scalar};
use crate::ir::{ArrayRef, Barrier, Op, Sreg, Stmt, SyncReduce, ValueId, VarId};

/// Where a static array lives.
#[derive(Clone, Copy)]
enum Space {
    Shared,
    Local,
}

/// The handle a kernel's build closure receives (`k`): everything that is not an expression.
pub struct KernelBuilder {
    pub(crate) tag: u32,
}

/// The x, y and z components of a thread-geometry register.
#[derive(Clone, Copy, Debug)]
pub struct Xyz {
    /// x component.
    pub x: Expr<u32>,
    /// y component.
    pub y: Expr<u32>,
    /// z component.
    pub z: Expr<u32>,
}

pub(crate) fn sreg(r: Sreg) -> Expr<u32> {
    Expr::record(Op::Special(r), &[], r.varies_in_block())
}

pub(crate) fn xyz(f: fn(u8) -> Sreg) -> Xyz {
    Xyz {
        x: sreg(f(0)),
        y: sreg(f(1)),
        z: sreg(f(2)),
    }
}

fn widen(e: Expr<u32>) -> Expr<u64> {
    e.cast()
}

impl KernelBuilder {
    /// `threadIdx`.
    #[track_caller]
    pub fn thread_idx(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::Tid)
    }
    /// `blockIdx`.
    #[track_caller]
    pub fn block_idx(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::Ctaid)
    }
    /// `blockDim`.
    #[track_caller]
    pub fn block_dim(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::Ntid)
    }
    /// `gridDim`.
    #[track_caller]
    pub fn grid_dim(&self) -> Xyz {
        let _at = crate::codegen::srcloc::at();
        xyz(Sreg::Nctaid)
    }
    /// The thread's lane in its warp (0..32).
    #[track_caller]
    pub fn lane_id(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        sreg(Sreg::LaneId)
    }
    /// Threads per warp (32).
    #[track_caller]
    pub fn warp_size(&self) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        sreg(Sreg::WarpSize)
    }

    fn global_index(&self, d: u8) -> Expr<u64> {
        widen(sreg(Sreg::Ctaid(d))) * widen(sreg(Sreg::Ntid(d))) + widen(sreg(Sreg::Tid(d)))
    }

    fn grid_extent(&self, d: u8) -> Expr<u64> {
        widen(sreg(Sreg::Nctaid(d))) * widen(sreg(Sreg::Ntid(d)))
    }

    /// The thread's absolute index in a 1-D grid (numba's `cuda.grid(1)`), 64-bit.
    #[track_caller]
    pub fn grid1(&self) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        self.global_index(0)
    }
    /// The thread's absolute (x, y) position in a 2-D grid (`cuda.grid(2)`).
    #[track_caller]
    pub fn grid2(&self) -> [Expr<u64>; 2] {
        let _at = crate::codegen::srcloc::at();
        [self.global_index(0), self.global_index(1)]
    }
    /// The thread's absolute (x, y, z) position in a 3-D grid (`cuda.grid(3)`).
    #[track_caller]
    pub fn grid3(&self) -> [Expr<u64>; 3] {
        let _at = crate::codegen::srcloc::at();
        [
            self.global_index(0),
            self.global_index(1),
            self.global_index(2),
        ]
    }
    /// Threads in a 1-D grid (numba's `cuda.gridsize(1)`): the stride of a grid-stride loop.
    #[track_caller]
    pub fn gridsize1(&self) -> Expr<u64> {
        let _at = crate::codegen::srcloc::at();
        self.grid_extent(0)
    }
    /// Threads along x and y of the grid (`cuda.gridsize(2)`).
    #[track_caller]
    pub fn gridsize2(&self) -> [Expr<u64>; 2] {
        let _at = crate::codegen::srcloc::at();
        [self.grid_extent(0), self.grid_extent(1)]
    }
    /// Threads along x, y and z of the grid (`cuda.gridsize(3)`).
    #[track_caller]
    pub fn gridsize3(&self) -> [Expr<u64>; 3] {
        let _at = crate::codegen::srcloc::at();
        [
            self.grid_extent(0),
            self.grid_extent(1),
            self.grid_extent(2),
        ]
    }

    /// A constant (same as `Expr::from(v)`).
    #[track_caller]
    pub fn lit<T: Scalar>(&self, v: T) -> Expr<T> {
        let _at = crate::codegen::srcloc::at();
        Expr::lit(v)
    }

    /// A mutable local variable with an initial value.
    #[track_caller]
    pub fn var<T: Scalar>(&self, init: impl Into<Expr<T>>) -> Var<T> {
        let _at = crate::codegen::srcloc::at();
        Var::new(init.into())
    }

    fn block(
        &self,
        divergent: bool,
        is_loop: bool,
        body: impl FnOnce(&KernelBuilder),
    ) -> Vec<Stmt> {
        with_state(|s| s.open_block(divergent, is_loop));
        super::srcloc::user_closure(|| body(self));
        with_state(|s| s.close_block(divergent, is_loop)).unwrap_or_default()
    }

    fn cond_varying(&self, c: Expr<bool>) -> bool {
        with_state(|s| s.check_use(&[c.raw()])).unwrap_or(false)
    }

    /// `if cond { then }`.
    #[track_caller]
    pub fn if_(&self, cond: impl Into<Expr<bool>>, then: impl FnOnce(&KernelBuilder)) {
        let _at = crate::codegen::srcloc::at_block();
        self.if_else(cond, then, |_| {})
    }

    /// `if cond { then } else { otherwise }`.
    #[track_caller]
    pub fn if_else(
        &self,
        cond: impl Into<Expr<bool>>,
        then: impl FnOnce(&KernelBuilder),
        otherwise: impl FnOnce(&KernelBuilder),
    ) {
        let _at = crate::codegen::srcloc::at_block();
        let c = cond.into();
        let div = self.cond_varying(c);
        let then = self.block(div, false, then);
        let otherwise = self.block(div, false, otherwise);
        with_state(|s| {
            s.push_stmt(Stmt::If {
                cond: ValueId(c.id),
                then,
                otherwise,
            })
        });
    }

    /// `for i in start..end { body(i) }`.
    #[track_caller]
    pub fn for_range<T: Int>(
        &self,
        start: impl Into<Expr<T>>,
        end: impl Into<Expr<T>>,
        body: impl FnOnce(&KernelBuilder, Expr<T>),
    ) {
        let _at = crate::codegen::srcloc::at_block();
        self.for_step(start, end, Expr::lit(one::<T>()), body)
    }

    /// `for i in (start..end).step_by(step) { body(i) }`; `step` must be positive (a grid-stride
    /// loop is `k.for_step(k.grid1(), n, k.gridsize1(), |k, i| ..)`). As in Rust, the loop
    /// stops before `i + step` would pass `end`, even where that sum would wrap around; a
    /// literal step of zero or less is a build error, and one that turns out non-positive at
    /// run time runs the body once.
    #[track_caller]
    pub fn for_step<T: Int>(
        &self,
        start: impl Into<Expr<T>>,
        end: impl Into<Expr<T>>,
        step: impl Into<Expr<T>>,
        body: impl FnOnce(&KernelBuilder, Expr<T>),
    ) {
        let _at = crate::codegen::srcloc::at_block();
        let (start, end, step) = (start.into(), end.into(), step.into());
        with_state(|s| {
            if let Some(crate::ir::Op::Const(bits)) =
                s.f.values.get(step.id as usize).map(|d| d.op.clone())
            {
                let n = T::TY.bits_as_i64(bits);
                let (positive, shown) = if T::TY.is_signed_int() {
                    (n > 0, n.to_string())
                } else {
                    (bits != 0, bits.to_string())
                };
                if !positive {
                    s.error(
                        Kind::ControlFlow,
                        format!(
                            "in `{}`: for_step with a step of {shown} (it must be positive, as Rust's \
                             step_by; count down with a positive step and `end - 1 - i`)",
                            s.f.name
                        ),
                    );
                }
            }
        });
        let Some((div, var)) = with_state(|s| {
            let div = s.check_use(&[start.raw(), end.raw(), step.raw()]);
            (div, s.declare_loop_var(T::TY, div))
        }) else {
            return;
        };
        let v: Var<T> = Var::from_raw(self.tag, var);
        let body = self.block(div, true, |k| {
            let i = v.get();
            body(k, i)
        });
        with_state(|s| {
            s.push_stmt(Stmt::For {
                var: VarId(var),
                start: ValueId(start.id),
                end: ValueId(end.id),
                step: ValueId(step.id),
                body,
            })
        });
    }

    /// `lhs && rhs`, short-circuiting as Rust's `&&` and Python's `and`: `rhs` is recorded
    /// in a branch taken only where `lhs` is true, so it may read what is valid only then
    /// (`j >= 0 && a[j] > key`). [`Expr::and`] evaluates both sides. Also
    /// [`Expr::and_then`].
    #[track_caller]
    pub fn and_then(
        &self,
        lhs: impl Into<Expr<bool>>,
        rhs: impl FnOnce(&KernelBuilder) -> Expr<bool>,
    ) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at_block();
        let lhs = lhs.into();
        let v = Var::new(lhs);
        self.if_(lhs, |k| v.set(rhs(k)));
        v.get()
    }

    /// `lhs || rhs`, short-circuiting as Rust's `||` and Python's `or`: `rhs` is recorded in
    /// a branch taken only where `lhs` is false. [`Expr::or`] evaluates both sides. Also
    /// [`Expr::or_else`].
    #[track_caller]
    pub fn or_else(
        &self,
        lhs: impl Into<Expr<bool>>,
        rhs: impl FnOnce(&KernelBuilder) -> Expr<bool>,
    ) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at_block();
        let lhs = lhs.into();
        let v = Var::new(lhs);
        self.if_(!lhs, |k| v.set(rhs(k)));
        v.get()
    }

    /// `while cond() { body }`: `cond` is evaluated before each iteration.
    #[track_caller]
    pub fn while_(
        &self,
        cond: impl FnOnce(&KernelBuilder) -> Expr<bool>,
        body: impl FnOnce(&KernelBuilder),
    ) {
        let _at = crate::codegen::srcloc::at_block();
        let mut c = None;
        with_state(|s| s.enter_while_cond());
        let cond_stmts = self.block(false, false, |k| c = Some(cond(k)));
        with_state(|s| s.leave_while_cond());
        let Some(c) = c else { return };
        let div =
            with_state(|s| s.varying.get(c.id as usize).copied().unwrap_or(false)).unwrap_or(false);
        let body = self.block(div, true, body);
        with_state(|s| {
            s.push_stmt(Stmt::While {
                cond_stmts,
                cond: ValueId(c.id),
                body,
            })
        });
    }

    fn loop_control(&self, stmt: Stmt, what: &str) {
        with_state(|s| {
            if s.in_while_cond() {
                s.error(Kind::ControlFlow, format!(
                    "in `{}`: `{what}` inside a `while_` condition (Rust does not allow it either); \
                     move it into the loop's body",
                    s.f.name
                ));
            } else if s.in_loop() {
                s.push_stmt(stmt);
            } else {
                s.error(
                    Kind::ControlFlow,
                    format!("in `{}`: `{what}` outside a loop", s.f.name),
                );
            }
        });
    }

    /// Leaves the innermost loop.
    #[track_caller]
    pub fn break_(&self) {
        let _at = crate::codegen::srcloc::at();
        self.loop_control(Stmt::Break, "break")
    }

    /// Skips to the next iteration of the innermost loop.
    #[track_caller]
    pub fn continue_(&self) {
        let _at = crate::codegen::srcloc::at();
        self.loop_control(Stmt::Continue, "continue")
    }

    /// Returns from the kernel (this thread only). In a device function, the closure's value
    /// is the return value, [`ret_value`](KernelBuilder::ret_value) returns early, and `ret`
    /// is an error.
    #[track_caller]
    pub fn ret(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| {
            if s.f.ret.is_some() {
                s.error(Kind::ControlFlow, format!(
                    "in `{}`: `ret()` in a device function that returns a value; return it from the \
                     closure, or early with `ret_value(v)`",
                    s.f.name
                ));
                return;
            }
            s.note_return();
            s.push_stmt(Stmt::Return)
        });
    }

    /// A block-wide shared array of `len` elements (numba's `cuda.shared.array`). For 2-D and
    /// 3-D shared arrays: [`shared_array2`](KernelBuilder::shared_array2),
    /// [`shared_array3`](KernelBuilder::shared_array3).
    #[track_caller]
    pub fn shared_array<T: Scalar>(&self, len: usize) -> SliceMut<T> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 1>(Space::Shared, [len])
    }

    /// A block-wide 2-D shared array of `rows x cols` elements in C order (row-major): numba's
    /// `cuda.shared.array((rows, cols), dtype)`, CUDA C's `__shared__ T a[rows][cols]`.
    ///
    /// Read with [`at2`](DArray::at2), write with [`set2`](DArray::set2); an element's address
    /// is one multiply-add (`i * cols + j`), with no bounds check on the GPU. The simulator
    /// checks each index against its own extent: `a.at2(0, cols)` is a fault naming dimension 1
    /// even though the flat index `cols` is inside the array. Atomics and vector accesses take
    /// a flat index: [`index2`](DArray::index2) gives it, checked the same way.
    /// `dim(0)`/`dim(1)` are the extents. A kernel's static shared memory (all its shared
    /// arrays and those of the device functions it calls) must fit the device's static limit,
    /// 48 KiB per block; loading a kernel over it is
    /// [`LaunchError::SharedMemory`](crate::LaunchError::SharedMemory). More needs
    /// [`dynamic_shared2`](KernelBuilder::dynamic_shared2).
    ///
    /// ```no_run
    /// # use cudajit::codegen::{Kernel, NdMut, NdRef};
    /// // A 16x16 tiled transpose of a matrix whose sides are multiples of 16.
    /// let transpose = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("transpose", |k, (a, b)| {
    ///     let tile = k.shared_array2::<f32>(16, 17); // a padded column against bank conflicts
    ///     let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
    ///     let (bx, by) = (k.block_idx().x * 16u32, k.block_idx().y * 16u32);
    ///     tile.set2(ty, tx, a.at2(by + ty, bx + tx));
    ///     k.syncthreads();
    ///     b.set2(bx + ty, by + tx, tile.at2(tx, ty));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_array2<T: Scalar>(&self, rows: usize, cols: usize) -> NdMut<T, 2> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 2>(Space::Shared, [rows, cols])
    }

    /// A block-wide 3-D shared array of `d0 x d1 x d2` elements in C order (CUDA C's
    /// `__shared__ T a[d0][d1][d2]`), indexed with [`at3`](DArray::at3) /
    /// [`set3`](DArray::set3) / [`index3`](DArray::index3); as
    /// [`shared_array2`](KernelBuilder::shared_array2) otherwise.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// let k = Kernel::<(&mut [f32],)>::build("cube", |k, (out,)| {
    ///     let c = k.shared_array3::<f32>(4, 8, 8);
    ///     let t = k.thread_idx();
    ///     c.set3(t.z, t.y, t.x, t.x.cast::<f32>());
    ///     k.syncthreads();
    ///     out.set(c.index3(t.z, t.y, t.x), c.at3(t.z, t.x, t.y));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn shared_array3<T: Scalar>(&self, d0: usize, d1: usize, d2: usize) -> NdMut<T, 3> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 3>(Space::Shared, [d0, d1, d2])
    }

    /// The dynamic shared memory (its size in bytes is given at launch), viewed as `T`s.
    /// Its length is unknown to the kernel: pass it as a parameter. Shaped views:
    /// [`dynamic_shared2`](KernelBuilder::dynamic_shared2),
    /// [`dynamic_shared3`](KernelBuilder::dynamic_shared3).
    #[track_caller]
    pub fn dynamic_shared<T: Scalar>(&self) -> DArray<T, 1, ReadWrite> {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.f.uses_dynamic_shared = true);
        DArray::new(self.tag, ArrayRef::DynShared(T::TY))
    }

    /// The dynamic shared memory viewed as a 2-D array of `rows x cols` `T`s in C order, the
    /// extents being values known at launch (typically scalar parameters, or literals):
    /// CUDA C's `extern __shared__ T s[]` cast to `T (*)[cols]`. Indexed as a static shared
    /// array ([`shared_array2`](KernelBuilder::shared_array2)): one multiply-add per access,
    /// each index checked against its extent on the simulator; `dim(0)`/`dim(1)` give the
    /// extents. The launch must give at least `rows * cols * size_of::<T>()` bytes
    /// (`LaunchConfig::with_shared_mem`; beyond 48 KiB per block, opt in first with
    /// `set_max_dynamic_shared_memory`). Views of several types or shapes may share the one
    /// dynamic shared memory, as in CUDA.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// // Rows of `cols` elements, one row per warp: the block's tile size chosen at launch.
    /// let k = Kernel::<(&[f32], &mut [f32], u32)>::build("rows", |k, (x, out, cols)| {
    ///     let rows = k.block_dim().x / 32u32;
    ///     let tile = k.dynamic_shared2::<f32>(rows, cols);
    ///     let (w, lane) = (k.thread_idx().x / 32u32, k.lane_id());
    ///     k.for_step(lane, cols, 32u32, |_, j| tile.set2(w, j, x.at(j)));
    ///     k.syncwarp(u32::MAX);
    ///     k.for_step(lane, cols, 32u32, |_, j| out.set(j, tile.at2(w, j)));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn dynamic_shared2<T: Scalar>(&self, rows: impl Index, cols: impl Index) -> NdMut<T, 2> {
        let _at = crate::codegen::srcloc::at();
        self.dynamic_shaped([rows.to_index(), cols.to_index()])
    }

    /// The dynamic shared memory viewed as a 3-D array of `d0 x d1 x d2` `T`s in C order, the
    /// extents being values known at launch; as [`dynamic_shared2`](KernelBuilder::dynamic_shared2)
    /// otherwise.
    #[track_caller]
    pub fn dynamic_shared3<T: Scalar>(
        &self,
        d0: impl Index,
        d1: impl Index,
        d2: impl Index,
    ) -> NdMut<T, 3> {
        let _at = crate::codegen::srcloc::at();
        self.dynamic_shaped([d0.to_index(), d1.to_index(), d2.to_index()])
    }

    /// A per-thread array of `len` elements (numba's `cuda.local.array`). For 2-D and 3-D
    /// local arrays: [`local_array2`](KernelBuilder::local_array2),
    /// [`local_array3`](KernelBuilder::local_array3).
    #[track_caller]
    pub fn local_array<T: Scalar>(&self, len: usize) -> SliceMut<T> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 1>(Space::Local, [len])
    }

    /// A per-thread 2-D array of `rows x cols` elements in C order (numba's
    /// `cuda.local.array((rows, cols), dtype)`), indexed with [`at2`](DArray::at2) /
    /// [`set2`](DArray::set2): one multiply-add per access, each index checked against its
    /// extent on the simulator.
    ///
    /// ```no_run
    /// # use cudajit::codegen::Kernel;
    /// let k = Kernel::<(&mut [f32],)>::build("outer", |k, (out,)| {
    ///     let m = k.local_array2::<f32>(3, 3);
    ///     k.for_range(0u32, 3u32, |k, i| {
    ///         k.for_range(0u32, 3u32, |_, j| m.set2(i, j, (i * j).cast::<f32>()));
    ///     });
    ///     out.set(k.grid1(), m.at2(2u32, 1u32));
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn local_array2<T: Scalar>(&self, rows: usize, cols: usize) -> NdMut<T, 2> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 2>(Space::Local, [rows, cols])
    }

    /// A per-thread 3-D array of `d0 x d1 x d2` elements in C order, indexed with
    /// [`at3`](DArray::at3) / [`set3`](DArray::set3); as
    /// [`local_array2`](KernelBuilder::local_array2) otherwise.
    #[track_caller]
    pub fn local_array3<T: Scalar>(&self, d0: usize, d1: usize, d2: usize) -> NdMut<T, 3> {
        let _at = crate::codegen::srcloc::at();
        self.static_array::<T, 3>(Space::Local, [d0, d1, d2])
    }

    /// Declares a static shared or local array of extents `dims`.
    fn static_array<T: Scalar, const N: usize>(
        &self,
        space: Space,
        dims: [usize; N],
    ) -> DArray<T, N, ReadWrite> {
        let what = match space {
            Space::Shared => "shared",
            Space::Local => "local",
        };
        let id = with_state(|s| {
            if N == 1 && dims[0] == 0 {
                s.error(
                    Kind::EmptyArray,
                    format!(
                        "in `{}`: a {what} array needs at least one element",
                        s.f.name
                    ),
                );
            } else if let Some(d) = dims.iter().position(|&e| e == 0) {
                s.error(
                    Kind::EmptyArray,
                    format!(
                        "in `{}`: a {what} array of shape {} has no element: dimension {d} \
                         is 0; every extent must be at least 1",
                        s.f.name,
                        crate::error::ShapeDisplay(&dims)
                    ),
                );
            }
            let bytes = dims
                .iter()
                .try_fold(T::TY.size() as u64, |a, &e| a.checked_mul(e as u64));
            if !bytes.is_some_and(|b| b <= u32::MAX as u64) {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: a {what} array of shape {dims:?} of {} would take more than \
                         4 GiB; no GPU has that much {what} memory per {}",
                        s.f.name,
                        T::TY.name(),
                        match space {
                            Space::Shared => "block",
                            Space::Local => "thread",
                        }
                    ),
                );
            }
            let dims = dims.map(|e| e as u64);
            match space {
                Space::Shared => s.add_shared(T::TY, &dims),
                Space::Local => s.add_local(T::TY, &dims),
            }
        })
        .unwrap_or(0);
        DArray::new(
            self.tag,
            match space {
                Space::Shared => ArrayRef::Shared(id),
                Space::Local => ArrayRef::Local(id),
            },
        )
    }

    /// A view of the dynamic shared memory with extents `dims` (values known at launch).
    fn dynamic_shaped<T: Scalar, const N: usize>(
        &self,
        dims: [Expr<i64>; N],
    ) -> DArray<T, N, ReadWrite> {
        let shape = with_state(|s| {
            s.f.uses_dynamic_shared = true;
            s.check_use(&dims.map(|d| d.raw()));
            s.add_dyn_shape(dims.iter().map(|d| d.id).collect())
        })
        .unwrap_or(0);
        DArray::new_shaped(self.tag, ArrayRef::DynShared(T::TY), shape)
    }

    fn barrier_check(&self, what: &str) {
        with_state(|s| {
            if s.is_divergent() {
                s.error(Kind::DivergentBarrier, format!(
                    "in `{}`: `{what}` is in code that only some threads of a block may reach (inside an if or \
                     loop that depends on the thread index, or after such a return); every thread of the \
                     block must reach each barrier, or the kernel hangs",
                    s.f.name
                ));
            }
        });
    }

    /// `__syncthreads()`: waits until every thread of the block gets here.
    #[track_caller]
    pub fn syncthreads(&self) {
        let _at = crate::codegen::srcloc::at();
        self.barrier_check("syncthreads");
        with_state(|s| s.push_stmt(Stmt::Barrier(Barrier::SyncThreads)));
    }

    fn sync_reduce<R: Scalar>(&self, kind: SyncReduce, pred: Expr<bool>, what: &str) -> Expr<R> {
        self.barrier_check(what);
        Expr::record(Op::SyncReduce(kind, ValueId(pred.id)), &[pred.raw()], false)
    }

    /// `__syncthreads_count(pred)`: a barrier that returns how many threads had `pred` true.
    #[track_caller]
    pub fn syncthreads_count(&self, pred: impl Into<Expr<bool>>) -> Expr<i32> {
        let _at = crate::codegen::srcloc::at();
        self.sync_reduce(SyncReduce::Count, pred.into(), "syncthreads_count")
    }

    /// `__syncthreads_and(pred)`: a barrier that returns whether `pred` was true in every thread.
    #[track_caller]
    pub fn syncthreads_and(&self, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.sync_reduce(SyncReduce::And, pred.into(), "syncthreads_and")
    }

    /// `__syncthreads_or(pred)`: a barrier that returns whether `pred` was true in any thread.
    #[track_caller]
    pub fn syncthreads_or(&self, pred: impl Into<Expr<bool>>) -> Expr<bool> {
        let _at = crate::codegen::srcloc::at();
        self.sync_reduce(SyncReduce::Or, pred.into(), "syncthreads_or")
    }

    /// A named barrier (PTX `bar.sync id, threads`): waits until `threads` threads have
    /// arrived at barrier `id` (1 to 15; 0 is `syncthreads`'s), with this or
    /// [`named_barrier_arrive`](Self::named_barrier_arrive). Arrivals count whole warps, so
    /// `threads` is a multiple of 32 and every warp reaches the barrier with all its lanes.
    ///
    /// Unlike `syncthreads`, a named barrier may sit in code that only some warps reach: the
    /// warps of a warp-specialised kernel meet at it (two consumer warpgroups taking turns,
    /// CUTLASS's `NamedBarrier`). On the simulator a kernel with named barriers runs its warps
    /// independently, and a barrier whose count is never reached is reported as a deadlock.
    #[track_caller]
    pub fn named_barrier_sync(&self, id: u32, threads: u32) {
        self.named_barrier(id, threads, true);
    }

    /// `bar.arrive id, threads`: counts this warp's arrival at named barrier `id` and goes on
    /// without waiting (a producer signalling consumers that
    /// [`named_barrier_sync`](Self::named_barrier_sync) with the same count).
    #[track_caller]
    pub fn named_barrier_arrive(&self, id: u32, threads: u32) {
        self.named_barrier(id, threads, false);
    }

    #[track_caller]
    fn named_barrier(&self, id: u32, count: u32, sync: bool) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| {
            let what = if sync { "sync" } else { "arrive" };
            if !(1..16).contains(&id) || count % 32 != 0 || !(32..=1024).contains(&count) {
                s.error(
                    Kind::DivergentBarrier,
                    format!(
                        "in `{}`: named_barrier_{what}({id}, {count}): the barrier is 1 to 15 \
                         (0 is syncthreads's) and the thread count a multiple of 32 from 32 to \
                         1024 (arrivals count whole warps)",
                        s.f.name
                    ),
                );
                return;
            }
            s.push_stmt(Stmt::Barrier(Barrier::Named { id, count, sync }))
        });
    }

    /// `__syncwarp(mask)`: waits for the threads of `mask` in this warp.
    #[track_caller]
    pub fn syncwarp(&self, mask: impl Into<Expr<u32>>) {
        let _at = crate::codegen::srcloc::at();
        let m = mask.into();
        with_state(|s| {
            s.check_use(&[m.raw()]);
            s.push_stmt(Stmt::Barrier(Barrier::SyncWarp(ValueId(m.id))))
        });
    }

    /// CUDA's `__launch_bounds__(max_threads_per_block, min_blocks_per_sm)`: the kernel is
    /// never launched with more than `max_threads_per_block` threads per block (a launch with
    /// more is refused with an error), and the compiler keeps its registers low enough for
    /// `min_blocks_per_sm` such blocks to fit on one multiprocessor (0: no such limit). Fewer
    /// registers can mean more threads in flight, or spills to local memory: measure.
    #[track_caller]
    pub fn launch_bounds(&self, max_threads_per_block: u32, min_blocks_per_sm: u32) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| {
            if !(1..=1024).contains(&max_threads_per_block) {
                s.error(Kind::LaunchBounds, format!(
                    "in `{}`: launch_bounds({max_threads_per_block}, ..): a block has 1 to 1024 threads",
                    s.f.name
                ));
                return;
            }
            s.f.launch_bounds = Some((max_threads_per_block, min_blocks_per_sm));
        });
    }

    /// `__threadfence_block()`.
    #[track_caller]
    pub fn threadfence_block(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Barrier(Barrier::FenceBlock)));
    }

    /// `__threadfence()`: orders this thread's memory accesses for the whole device.
    #[track_caller]
    pub fn threadfence(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Barrier(Barrier::FenceDevice)));
    }

    /// `__threadfence_system()`: orders accesses for the device and the host.
    #[track_caller]
    pub fn threadfence_system(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Barrier(Barrier::FenceSystem)));
    }
}

fn one<T: Int>() -> T {
    // Every integer scalar converts from its bits; 1 has the same bits in all of them.
    T::from_bits(1)
}

impl Expr<bool> {
    /// `self && rhs()`, short-circuiting: `rhs` runs (its loads, its calls) only where `self` is
    /// true, as Rust's `&&` and Python's `and` (see [`KernelBuilder::and_then`]).
    #[track_caller]
    pub fn and_then(self, rhs: impl FnOnce() -> Expr<bool>) -> Expr<bool> {
        KernelBuilder {
            tag: super::builder::current_tag(),
        }
        .and_then(self, |_| rhs())
    }

    /// `self || rhs()`, short-circuiting: `rhs` runs only where `self` is false, as Rust's
    /// `||` and Python's `or` (see [`KernelBuilder::or_else`]).
    #[track_caller]
    pub fn or_else(self, rhs: impl FnOnce() -> Expr<bool>) -> Expr<bool> {
        KernelBuilder {
            tag: super::builder::current_tag(),
        }
        .or_else(self, |_| rhs())
    }
}
