//! Device functions: typed, reusable functions that kernels (and other device functions) call.

use std::marker::PhantomData;
use std::sync::Arc;

use super::builder::{current_tag, record, with_state, Kind};
use super::control::KernelBuilder;
use super::expr::Expr;
use super::kernel::check_name;
use super::lower;
use super::options::PtxOptions;
use super::scalar::{Scalar, ScalarTy};
use crate::error::Result;
use crate::ir::{FuncId, FunctionIr, Op, Param, Stmt, ValueId};

/// A tuple of scalar types: a device function's parameter list.
pub trait DeviceParams {
    /// The tuple of expressions the function receives and is called with.
    type Exprs: Copy;
    /// Declares the parameters in the function being built.
    fn declare() -> Self::Exprs;
    /// The (tag, id) of each argument.
    fn raws(args: &Self::Exprs) -> Vec<(u32, u32)>;
    /// The parameters' types, in order.
    fn types() -> Vec<ScalarTy>;
}

macro_rules! device_params {
    ($($t:ident $i:tt),*) => {
        impl<$($t: Scalar),*> DeviceParams for ($($t,)*) {
            type Exprs = ($(Expr<$t>,)*);
            #[allow(clippy::unused_unit)]
            fn declare() -> Self::Exprs {
                ($({
                    let i = with_state(|s| s.add_param(Param::Scalar($t::TY))).unwrap_or(0);
                    Expr::<$t>::record(Op::Param(i), &[], false)
                },)*)
            }
            #[allow(unused_variables)]
            fn raws(args: &Self::Exprs) -> Vec<(u32, u32)> {
                vec![$(args.$i.raw()),*]
            }
            fn types() -> Vec<ScalarTy> {
                vec![$($t::TY),*]
            }
        }
    };
}
device_params!();
device_params!(A 0);
device_params!(A 0, B 1);
device_params!(A 0, B 1, C 2);
device_params!(A 0, B 1, C 2, D 3);
device_params!(A 0, B 1, C 2, D 3, E 4);
device_params!(A 0, B 1, C 2, D 3, E 4, F 5);
device_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
device_params!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

impl KernelBuilder {
    /// Returns `v` from the device function being built, early: from inside an `if_`, a loop
    /// or anywhere in its body (Python's `return v` in a numba device function; the closure's
    /// own value is the return at the end). Only this thread returns; an inlined function
    /// returns to the code after its call, not out of the kernel.
    ///
    /// `v` must have the function's return type `R`; in a kernel (which returns nothing: use
    /// [`ret`](KernelBuilder::ret)) or with another type, the build fails with an error saying
    /// so. As after a [`ret`](KernelBuilder::ret), a barrier that follows a return only some
    /// threads take is a build error.
    ///
    /// ```no_run
    /// # use cudajit::codegen::DeviceFn;
    /// // numba: `if x < 0: return -1.0` ... `return math.sqrt(x)`
    /// let f = DeviceFn::<(f32,), f32>::build("safe_sqrt", |k, (x,)| {
    ///     k.if_(x.lt(0.0f32), |k| k.ret_value(-1.0f32));
    ///     x.sqrt()
    /// })?;
    /// # Ok::<(), cudajit::Error>(())
    /// ```
    #[track_caller]
    pub fn ret_value<T: Scalar>(&self, v: impl Into<Expr<T>>) {
        let _at = crate::codegen::srcloc::at();
        let v = v.into();
        with_state(|s| {
            let name = s.f.name.clone();
            match s.f.ret {
                None => s.error(
                    Kind::ControlFlow,
                    format!(
                        "in `{name}`: `ret_value` in a kernel, which returns nothing; use `ret()`"
                    ),
                ),
                Some(ty) if ty != T::TY => s.error(
                    Kind::ControlFlow,
                    format!(
                        "in `{name}`: `ret_value` of a {} in a device function that returns {}",
                        T::TY.name(),
                        ty.name()
                    ),
                ),
                Some(_) => {
                    s.check_use(&[v.raw()]);
                    s.note_return();
                    s.push_stmt(Stmt::ReturnValue(ValueId(v.id)));
                }
            }
        });
    }
}

/// A device function taking the scalars `A` (a tuple such as `(f32, f32)`) and returning `R`.
///
/// Built once, called from any number of kernels with [`call`](DeviceFn::call). Inlined by
/// default (as numba's device functions); [`no_inline`](DeviceFn::no_inline) makes it a real call.
pub struct DeviceFn<A, R> {
    ir: Arc<FunctionIr>,
    /// Whether a call may give different results in threads with equal arguments.
    varying: bool,
    _p: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for DeviceFn<A, R> {
    fn clone(&self) -> Self {
        DeviceFn {
            ir: self.ir.clone(),
            varying: self.varying,
            _p: PhantomData,
        }
    }
}

impl<A: DeviceParams, R: Scalar> DeviceFn<A, R> {
    /// Builds a device function: `body` receives the builder and the arguments and returns the
    /// result. It may also return early, from inside an `if_` or a loop, with
    /// [`KernelBuilder::ret_value`].
    ///
    /// FMA contraction ([`PtxOptions::contract`]) follows the kernel or device function being
    /// built around this call, if any (a device function built inside a kernel's closure), and
    /// is on otherwise; [`build_with`](DeviceFn::build_with) sets it.
    #[track_caller]
    pub fn build(
        name: &str,
        body: impl FnOnce(&KernelBuilder, A::Exprs) -> Expr<R>,
    ) -> Result<Self> {
        Self::build_inner(name, None, body)
    }

    /// [`build`](DeviceFn::build) with FMA contraction as `options` says
    /// ([`PtxOptions::contract`], applied as the body is recorded). The other options are the
    /// calling kernel's: a device function is compiled into each kernel that calls it.
    #[track_caller]
    pub fn build_with(
        name: &str,
        options: PtxOptions,
        body: impl FnOnce(&KernelBuilder, A::Exprs) -> Expr<R>,
    ) -> Result<Self> {
        Self::build_inner(name, Some(options.contract), body)
    }

    #[track_caller]
    fn build_inner(
        name: &str,
        contract: Option<bool>,
        body: impl FnOnce(&KernelBuilder, A::Exprs) -> Expr<R>,
    ) -> Result<Self> {
        let here = std::panic::Location::caller();
        check_name(name)?;
        let ((), ir) = record(name, Some(R::TY), || {
            if let Some(on) = contract {
                with_state(|s| s.contract = on);
            }
            let tag = current_tag();
            let args = A::declare();
            let r = body(&KernelBuilder { tag }, args);
            with_state(|s| {
                s.check_use(&[r.raw()]);
                s.push_stmt(Stmt::ReturnValue(ValueId(r.id)));
            });
        });
        let mut ir = ir.map_err(|errors| super::builder::build_error(name, errors, here))?;
        ir.lines.def = Some(here);
        if ir.launch_bounds.is_some() {
            return Err(super::builder::build_error(
                name,
                vec![(
                    super::builder::Kind::KernelOnly,
                    "launch_bounds is for kernels; a device function takes its caller's".into(),
                    None,
                )],
                here,
            ));
        }
        let varying = ir.values.iter().any(|v| match &v.op {
            Op::Special(s) => s.varies_in_block(),
            Op::Atomic(_)
            | Op::Warp(_)
            | Op::Hopper(_)
            | Op::StreamCreate(_)
            | Op::Texture(_)
            | Op::Load { .. }
            | Op::CallExtern(..) => true,
            _ => false,
        }) || !ir.callees.is_empty();
        Ok(DeviceFn {
            ir: Arc::new(ir),
            varying,
            _p: PhantomData,
        })
    }

    /// The same function, compiled as a real call instead of being inlined.
    pub fn no_inline(self) -> Self {
        let mut ir = (*self.ir).clone();
        ir.inline = false;
        DeviceFn {
            ir: Arc::new(ir),
            varying: self.varying,
            _p: PhantomData,
        }
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.ir.name
    }

    /// The function's PTX as a `.visible .func` (numba's `compile_ptx(..., device=True)`), for
    /// linking into other code.
    pub fn compile_ptx(&self, options: &PtxOptions) -> Result<String> {
        lower::ptx(&self.ir, lower::Role::ExportedDevice, options)
    }

    /// The function's optimised LLVM IR.
    pub fn llvm_ir(&self, options: &PtxOptions) -> Result<String> {
        lower::llvm_ir(&self.ir, lower::Role::ExportedDevice, options)
    }

    /// Calls the function from the kernel (or device function) being built.
    #[track_caller]
    pub fn call(&self, args: A::Exprs) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        let raws = A::raws(&args);
        let ids: Vec<ValueId> = raws.iter().map(|&(_, id)| ValueId(id)).collect();
        let callee = self.ir.clone();
        let fid = with_state(|s| {
            let idx = match s.f.callees.iter().position(|c| Arc::ptr_eq(c, &callee)) {
                Some(i) => i,
                None => {
                    s.f.callees.push(callee);
                    s.f.callees.len() - 1
                }
            };
            FuncId(idx as u32)
        })
        .unwrap_or(FuncId(0));
        Expr::record(Op::Call(fid, ids), &raws, self.varying)
    }
}
