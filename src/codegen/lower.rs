//! Lowering the kernel IR to LLVM IR (inkwell), and LLVM IR to PTX with the NVPTX backend.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context as LlContext;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, GlobalValue, IntValue,
    PointerValue,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate, OptimizationLevel};

use super::options::PtxOptions;
use super::scalar::ScalarTy;
use crate::error::{CodegenError, Error, ErrorSource, Result};
use crate::ir::{
    ArrayRef, Barrier, BinOp, CmpOp, FunctionIr, Op, Param, Sreg, Stmt, SyncReduce, UnOp, ValueId,
};

/// Calling convention 71: `PTX_Kernel`.
const PTX_KERNEL_CC: u32 = 71;
const GLOBAL: u16 = 1;
const SHARED: u16 = 3;

/// An LLVM failure while generating `kernel`'s code; LLVM's error value, if `what` is one,
/// becomes the error's source.
pub(crate) fn llvm_err(kernel: &str, what: impl std::fmt::Display + 'static) -> Error {
    let message = format!("internal code generation error: {what}");
    let what: Box<dyn std::any::Any> = Box::new(what);
    let source: Option<ErrorSource> = match what.downcast::<inkwell::builder::BuilderError>() {
        Ok(e) => Some(Arc::new(*e)),
        Err(what) => what
            .downcast::<inkwell::values::InstructionValueError>()
            .ok()
            .map(|e| Arc::new(*e) as ErrorSource),
    };
    Error::Codegen(CodegenError::Llvm {
        kernel: kernel.to_string(),
        message,
        source,
    })
}

/// A broken invariant of code generation for `kernel` (the message says which).
pub(crate) fn internal_err(kernel: &str, message: impl Into<String>) -> Error {
    Error::Codegen(CodegenError::Internal {
        kernel: kernel.to_string(),
        message: message.into(),
    })
}

/// `kernel` uses what the compile target (or the installed libraries) lacks.
pub(crate) fn unsupported_err(kernel: &str, message: impl Into<String>) -> Error {
    Error::Codegen(CodegenError::Unsupported {
        kernel: kernel.to_string(),
        message: message.into(),
    })
}

/// Initialises LLVM's NVPTX target, once per process; every NVPTX target machine is created
/// after this.
///
/// It also turns on NVPTX's `-nvptx-short-ptr` (what clang's `-fcuda-short-ptr` passes, and
/// what nvcc's PTX does): pointers into shared, local and constant memory (address spaces 3, 5
/// and 4) are 32 bits wide, so shared-memory addresses are computed and passed to `ld.shared`,
/// `ldmatrix` and `cp.async` in 32-bit registers instead of 64-bit ones (fewer registers and
/// instructions in the matmul's inner loops). A target machine reads the option when it is
/// created and puts it in its data layout (`p3:32:32-p4:32:32-p5:32:32`); every module takes
/// its data layout from the target machine (libdevice's from the module), so all of the
/// process's NVPTX code agrees. Pointers into global memory and generic pointers stay 64-bit.
pub(crate) fn init_nvptx() -> std::result::Result<(), String> {
    static INIT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| {
        Target::initialize_nvptx(&InitializationConfig::default());
        let argv = [c"cudajit".as_ptr(), c"-nvptx-short-ptr".as_ptr()];
        // SAFETY: `argv` holds two pointers to NUL-terminated static strings and outlives
        // the call, the overview is one too; LLVM copies what it keeps. The C API passes
        // `nulls()` as the error stream, so a parse error is ignored (never `exit`). The call
        // runs once (this `OnceLock`), before any target machine exists: every one is made
        // after `init_nvptx`, which reads the option's value when it is created.
        unsafe {
            inkwell::llvm_sys::support::LLVMParseCommandLineOptions(
                argv.len() as std::ffi::c_int,
                argv.as_ptr(),
                c"cudajit".as_ptr(),
            );
        }
        Ok(())
    })
    .clone()
}

/// The integer type as wide as a pointer into `ptr`'s address space under the data layout
/// that [`init_nvptx`] sets: 32 bits for shared, constant and local memory, 64 for global and
/// generic pointers.
pub(crate) fn address_int_type<'c>(
    ctx: &'c LlContext,
    ptr: PointerValue<'c>,
) -> inkwell::types::IntType<'c> {
    // Shared, constant, local.
    let short = [3u16, 4, 5].map(AddressSpace::from);
    if short.contains(&ptr.get_type().get_address_space()) {
        ctx.i32_type()
    } else {
        ctx.i64_type()
    }
}

/// What a target machine is made for: CPU, features, optimisation level.
type TmKey = (String, String, u8);

thread_local! {
    /// The last target machine made on this thread: creating one costs a sizeable part of a
    /// small kernel's compile, and consecutive compiles nearly always share the options.
    static LAST_TM: std::cell::RefCell<Option<(TmKey, std::rc::Rc<TargetMachine>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The LLVM target machine for the options (reused from the last compile on this thread when
/// the CPU, features and level are the same).
fn target_machine(
    opts: &PtxOptions,
    hopper: super::hopper::TargetUse,
) -> std::result::Result<std::rc::Rc<TargetMachine>, String> {
    let (cpu, features) = opts.llvm_cpu_and_features_for(hopper);
    let key = (cpu, features, opts.effective_opt());
    if let Some(tm) = LAST_TM.with_borrow(|last| {
        last.as_ref()
            .filter(|(k, _)| *k == key)
            .map(|(_, tm)| tm.clone())
    }) {
        return Ok(tm);
    }
    let tm = std::rc::Rc::new(new_target_machine(opts, hopper)?);
    LAST_TM.with_borrow_mut(|last| *last = Some((key, tm.clone())));
    Ok(tm)
}

/// A new LLVM target machine for the options' compute capability.
fn new_target_machine(
    opts: &PtxOptions,
    hopper: super::hopper::TargetUse,
) -> std::result::Result<TargetMachine, String> {
    init_nvptx()?;
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let (cpu, features) = opts.llvm_cpu_and_features_for(hopper);
    let level = match opts.effective_opt() {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            level,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| format!("LLVM could not create an NVPTX target machine for {cpu}"))
}

/// What a compiled function becomes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A `.visible .entry`.
    Kernel,
    /// A `.visible .func` (numba's `compile_ptx(..., device=True)`).
    ExportedDevice,
    /// A device function called by the kernel or function being compiled.
    Callee,
}

/// The LLVM IR (text) of a kernel (or exported device function), optimised as `opts` says.
pub(crate) fn llvm_ir(f: &FunctionIr, role: Role, opts: &PtxOptions) -> Result<String> {
    let ctx = LlContext::create();
    let (module, tm) = build_module(&ctx, f, role, opts)?;
    let text = module.print_to_string().to_string();
    // Run the code generator too, and throw its PTX away: NVPTX caches each module's
    // `nvvm.annotations` in a process-wide table keyed by the module's address, and only its
    // assembly printer clears the module's entry. A module dropped with its entry still there
    // (the optimiser's passes fill it) hands its kernels' "kernel" marks to whatever functions
    // a later module allocates at the same addresses (seen as `.extern .entry vprintf`).
    let _ = tm.write_to_memory_buffer(&module, FileType::Assembly);
    Ok(text)
}

/// The PTX text of a kernel (or exported device function).
pub(crate) fn ptx(f: &FunctionIr, role: Role, opts: &PtxOptions) -> Result<String> {
    let ctx = LlContext::create();
    let (module, tm) = build_module(&ctx, f, role, opts)?;
    let buf = tm
        .write_to_memory_buffer(&module, FileType::Assembly)
        .map_err(|e| llvm_err(&f.name, e))?;
    let text = String::from_utf8_lossy(buf.as_slice());
    Ok(super::ptx_fix::work_around_ptxas(
        text.trim_end_matches('\0'),
        opts.ptx_workarounds(),
    ))
}

fn build_module<'c>(
    ctx: &'c LlContext,
    f: &FunctionIr,
    role: Role,
    opts: &PtxOptions,
) -> Result<(Module<'c>, std::rc::Rc<TargetMachine>)> {
    let tm =
        target_machine(opts, super::hopper::target_use(f)).map_err(|e| llvm_err(&f.name, e))?;
    let module = ctx.create_module(&f.name);
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    let mut lowered: HashMap<*const FunctionIr, FunctionValue<'c>> = HashMap::new();
    let dbg = opts
        .lineinfo
        .then(|| super::debug_info::ModuleDebug::new(ctx, &module, f));
    let func = lower_function(ctx, &module, f, role, opts, &mut lowered, dbg.as_ref())?;
    if role == Role::Kernel {
        mark_kernel(ctx, &module, func, f)?;
    }
    let module = match dbg {
        Some(d) => {
            d.finalize();
            drop(d);
            super::debug_info::directives_only(ctx, module).map_err(|e| llvm_err(&f.name, e))?
        }
        None => module,
    };
    // Math functions may need libdevice (or cudajit's own implementations) linked in.
    super::math::prepare_module(ctx, &module, opts).map_err(|e| llvm_err(&f.name, e))?;
    module
        .verify()
        .map_err(|e| llvm_err(&f.name, e.to_string()))?;
    if opts.effective_opt() > 0 {
        let passes = format!("default<O{}>", opts.effective_opt());
        module
            .run_passes(&passes, &tm, PassBuilderOptions::create())
            .map_err(|e| llvm_err(&f.name, e))?;
    }
    Ok((module, tm))
}

/// One function being lowered.
pub(crate) struct Lowerer<'c, 'm> {
    pub ctx: &'c LlContext,
    pub module: &'m Module<'c>,
    pub b: Builder<'c>,
    pub f: &'m FunctionIr,
    pub func: FunctionValue<'c>,
    pub opts: &'m PtxOptions,
    pub values: Vec<Option<BasicValueEnum<'c>>>,
    vars: Vec<PointerValue<'c>>,
    /// Per IR parameter: a scalar value, or an array's pointer and dimensions.
    scalars: Vec<Option<BasicValueEnum<'c>>>,
    arrays: Vec<Option<(PointerValue<'c>, Vec<IntValue<'c>>)>>,
    shared: Vec<GlobalValue<'c>>,
    locals: Vec<PointerValue<'c>>,
    callees: Vec<FunctionValue<'c>>,
    /// (continue target, break target) of enclosing loops.
    loops: Vec<(BasicBlock<'c>, BasicBlock<'c>)>,
    /// The last vector load, whose lanes the following `LoadLane`s extract.
    last_vec: Option<(ArrayRef, ValueId, u8, inkwell::values::VectorValue<'c>)>,
    /// The last tensor-core MMA (its operands, its four results), whose elements the following
    /// `WarpOp::Mma`s extract.
    pub(crate) last_mma: Option<(MmaKey, inkwell::values::StructValue<'c>)>,
    /// The last `ldmatrix` (its operands, its registers), whose registers the following
    /// `WarpOp::LdMatrix`s take.
    pub(crate) last_ldmatrix: Option<(super::ldmatrix::LdKey, Vec<BasicValueEnum<'c>>)>,
    /// The last multi-result instruction (a wgmma or its wait): the id of its element 0 and
    /// its results, which the following elements extract.
    pub(crate) last_multi: Option<(ValueId, inkwell::values::StructValue<'c>)>,
    /// Debug locations, with line information on.
    dbg: Option<super::debug_info::FnDebug<'c, 'm>>,
}

/// What identifies one MMA: its kind and operands.
pub(crate) type MmaKey = (
    crate::ir::mma::MmaKind,
    [ValueId; crate::ir::mma::A_REGS],
    [ValueId; crate::ir::mma::B_REGS],
    [ValueId; crate::ir::mma::C_ELEMS],
);

/// LLVM type of a scalar in registers.
pub(crate) fn reg_type<'c>(ctx: &'c LlContext, ty: ScalarTy) -> BasicTypeEnum<'c> {
    match ty {
        ScalarTy::Bool => ctx.bool_type().into(),
        ScalarTy::I8 | ScalarTy::U8 => ctx.i8_type().into(),
        ScalarTy::I16 | ScalarTy::U16 => ctx.i16_type().into(),
        ScalarTy::I32 | ScalarTy::U32 => ctx.i32_type().into(),
        ScalarTy::I64 | ScalarTy::U64 => ctx.i64_type().into(),
        ScalarTy::F32 => ctx.f32_type().into(),
        ScalarTy::F64 => ctx.f64_type().into(),
        ScalarTy::F16 => ctx.f16_type().into(),
        ScalarTy::BF16 => ctx.bf16_type().into(),
        // The 8-bit floats are bytes: only their casts look inside.
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => ctx.i8_type().into(),
    }
}

/// LLVM type of a scalar in memory (bool is a byte).
pub(crate) fn mem_type<'c>(ctx: &'c LlContext, ty: ScalarTy) -> BasicTypeEnum<'c> {
    match ty {
        ScalarTy::Bool => ctx.i8_type().into(),
        _ => reg_type(ctx, ty),
    }
}

/// LLVM type of a parameter slot: scalars as themselves (bool as a byte).
fn param_types<'c>(ctx: &'c LlContext, params: &[Param]) -> Vec<BasicMetadataTypeEnum<'c>> {
    let mut out = Vec::new();
    for p in params {
        match p {
            Param::Scalar(t) => out.push(mem_type(ctx, *t).into()),
            Param::Array { ndim, .. } => {
                out.push(ctx.ptr_type(AddressSpace::from(GLOBAL)).into());
                out.extend((0..*ndim).map(|_| BasicMetadataTypeEnum::from(ctx.i64_type())));
            }
            // A pointer to the 128 bytes, `byval` (passed by value in the parameter space).
            Param::TensorMap { .. } => out.push(ctx.ptr_type(AddressSpace::default()).into()),
        }
    }
    out
}

fn lower_function<'c>(
    ctx: &'c LlContext,
    module: &Module<'c>,
    f: &FunctionIr,
    role: Role,
    opts: &PtxOptions,
    lowered: &mut HashMap<*const FunctionIr, FunctionValue<'c>>,
    dbg: Option<&super::debug_info::ModuleDebug<'c>>,
) -> Result<FunctionValue<'c>> {
    let is_kernel = role == Role::Kernel;
    let callees: Vec<FunctionValue<'c>> = f
        .callees
        .iter()
        .map(|c| match lowered.get(&Arc::as_ptr(c)) {
            Some(fv) => Ok(*fv),
            None => {
                let fv = lower_function(ctx, module, c, Role::Callee, opts, lowered, dbg)?;
                lowered.insert(Arc::as_ptr(c), fv);
                Ok(fv)
            }
        })
        .collect::<Result<_>>()?;
    let ptys = param_types(ctx, &f.params);
    let fn_ty = match f.ret {
        Some(t) => reg_type(ctx, t).fn_type(&ptys, false),
        None => ctx.void_type().fn_type(&ptys, false),
    };
    let name = if role == Role::Callee {
        format!("{}__dev{}", f.name, lowered.len())
    } else {
        f.name.clone()
    };
    let linkage = if role == Role::Callee {
        Some(Linkage::Internal)
    } else {
        None
    };
    let func = module.add_function(&name, fn_ty, linkage);
    let attr = |name: &str| ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(name), 0);
    if role == Role::Callee {
        func.add_attribute(
            AttributeLoc::Function,
            attr(if f.inline { "alwaysinline" } else { "noinline" }),
        );
        // As clang marks CUDA device functions: calls must not be moved across control flow
        // (they may hold barriers, shuffles or votes).
        func.add_attribute(AttributeLoc::Function, attr("convergent"));
    }
    if opts.fastmath {
        // f32 flushes denormals to zero (`.ftz`), as CUDA's `--use_fast_math`; f64 is untouched.
        func.add_attribute(
            AttributeLoc::Function,
            ctx.create_string_attribute("denormal-fp-math-f32", "preserve-sign,preserve-sign"),
        );
    }
    // Array parameters: distinct (Rust's borrows forbid a writable array aliasing any other
    // argument), and read-only where the kernel cannot write them (`ld.global.nc`).
    let mut slot = 0u32;
    for p in &f.params {
        match p {
            Param::Scalar(_) => slot += 1,
            Param::TensorMap { .. } => {
                let bytes = ctx.i8_type().array_type(128);
                let byval = ctx.create_type_attribute(
                    Attribute::get_named_enum_kind_id("byval"),
                    bytes.into(),
                );
                func.add_attribute(AttributeLoc::Param(slot), byval);
                func.add_attribute(
                    AttributeLoc::Param(slot),
                    ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("align"), 64),
                );
                slot += 1;
            }
            Param::Array { ndim, mutable, .. } => {
                if is_kernel {
                    func.add_attribute(AttributeLoc::Param(slot), attr("noalias"));
                    if !mutable {
                        func.add_attribute(AttributeLoc::Param(slot), attr("readonly"));
                    }
                }
                slot += 1 + *ndim as u32;
            }
        }
    }
    let entry = ctx.append_basic_block(func, "entry");
    let b = ctx.create_builder();
    b.position_at_end(entry);
    let mut fdbg = dbg.map(|d| d.function(func, f));
    if let Some(d) = fdbg.as_mut() {
        d.entry(&b);
    }
    let mut lw = Lowerer {
        ctx,
        module,
        b,
        f,
        func,
        opts,
        values: vec![None; f.values.len()],
        vars: Vec::new(),
        scalars: Vec::new(),
        arrays: Vec::new(),
        shared: Vec::new(),
        locals: Vec::new(),
        callees,
        loops: Vec::new(),
        last_vec: None,
        last_mma: None,
        last_ldmatrix: None,
        last_multi: None,
        dbg: fdbg,
    };
    lw.setup()?;
    lw.stmts(&f.body)?;
    if lw.open() {
        match f.ret {
            None => lw.b.build_return(None).map(|_| ()),
            Some(t) => {
                lw.b.build_return(Some(&reg_type(ctx, t).const_zero()))
                    .map(|_| ())
            }
        }
        .map_err(|e| llvm_err(&f.name, e))?;
    }
    Ok(func)
}

macro_rules! ll {
    ($lw:expr, $e:expr) => {
        $e.map_err(|e| llvm_err(&$lw.f.name, e))?
    };
}

// After `ll!`, which they use.
mod access;
mod entry;
pub(crate) use entry::child_entry;
use entry::mark_kernel;
mod arith;
mod asm;
pub(crate) use asm::{asm, pure_asm, shared_addr};
mod cast;
mod cast_fp8;
mod op;

impl<'c> Lowerer<'c, '_> {
    pub(crate) fn err(&self, what: impl std::fmt::Display + 'static) -> Error {
        llvm_err(&self.f.name, what)
    }

    /// The generic address (i64) of tensor-map parameter `map`.
    pub(crate) fn tensor_map_address(&mut self, map: u32) -> Result<BasicValueEnum<'c>> {
        let p = self
            .scalars
            .get(map as usize)
            .copied()
            .flatten()
            .ok_or_else(|| self.err("not a tensor-map parameter"))?
            .into_pointer_value();
        Ok(ll!(self, self.b.build_ptr_to_int(p, self.ctx.i64_type(), "")).into())
    }

    /// Parameters, variables, shared and local arrays.
    fn setup(&mut self) -> Result<()> {
        let mut slot = 0u32;
        for p in &self.f.params {
            let get = |i: u32| {
                self.func
                    .get_nth_param(i)
                    .ok_or_else(|| self.err("missing parameter"))
            };
            match p {
                Param::Scalar(t) => {
                    let mut v = get(slot)?;
                    if *t == ScalarTy::Bool {
                        let zero = self.ctx.i8_type().const_zero();
                        v = ll!(
                            self,
                            self.b.build_int_compare(
                                IntPredicate::NE,
                                v.into_int_value(),
                                zero,
                                ""
                            )
                        )
                        .into();
                    }
                    self.scalars.push(Some(v));
                    self.arrays.push(None);
                    slot += 1;
                }
                Param::TensorMap { .. } => {
                    let p = get(slot)?;
                    self.scalars.push(Some(p));
                    self.arrays.push(None);
                    slot += 1;
                }
                Param::Array { ndim, .. } => {
                    let ptr = get(slot)?.into_pointer_value();
                    let dims = (0..*ndim as u32)
                        .map(|d| get(slot + 1 + d).map(|v| v.into_int_value()))
                        .collect::<Result<Vec<_>>>()?;
                    self.scalars.push(None);
                    self.arrays.push(Some((ptr, dims)));
                    slot += 1 + *ndim as u32;
                }
            }
        }
        for &t in &self.f.vars {
            let a = ll!(self, self.b.build_alloca(reg_type(self.ctx, t), "var"));
            self.vars.push(a);
        }
        for (i, s) in self.f.shared.iter().enumerate() {
            let ty = mem_type(self.ctx, s.elem).array_type(s.len as u32);
            let g = self.module.add_global(
                ty,
                Some(AddressSpace::from(SHARED)),
                &format!("{}_shared{i}", self.f.name),
            );
            g.set_linkage(Linkage::Internal);
            g.set_initializer(&ty.get_undef());
            g.set_alignment(16);
            self.shared.push(g);
        }
        for l in &self.f.locals {
            let ty = mem_type(self.ctx, l.elem).array_type(l.len as u32);
            let a = ll!(self, self.b.build_alloca(ty, "local"));
            self.locals.push(a);
        }
        Ok(())
    }

    /// Whether the current block still needs a terminator.
    fn open(&self) -> bool {
        self.b
            .get_insert_block()
            .is_some_and(|bb| bb.get_terminator().is_none())
    }

    /// After a terminator: continue in a fresh block that nothing branches to.
    fn dead_block(&mut self) {
        let bb = self.ctx.append_basic_block(self.func, "dead");
        self.b.position_at_end(bb);
    }

    /// An array parameter's pointer and extents (`None` for other parameters).
    pub(crate) fn param_array(&self, i: u32) -> Option<(PointerValue<'c>, Vec<IntValue<'c>>)> {
        self.arrays.get(i as usize).cloned().flatten()
    }

    pub(crate) fn v(&self, id: ValueId) -> Result<BasicValueEnum<'c>> {
        self.values
            .get(id.0 as usize)
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("value {} used before it is defined", id.0)))
    }

    pub(crate) fn ty(&self, id: ValueId) -> ScalarTy {
        self.f.values[id.0 as usize].ty
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<()> {
        for s in stmts {
            self.debug_loc(s);
            self.stmt(s)?;
        }
        Ok(())
    }

    /// With line information: the Rust line of statement `s` for what it lowers to.
    fn debug_loc(&mut self, s: &Stmt) {
        if let Some(d) = self.dbg.as_mut() {
            d.stmt(&self.b, self.f, s);
        }
    }

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Let(id) => {
                let v = self.op(*id)?;
                self.values[id.0 as usize] = Some(v);
            }
            Stmt::DeclVar(var, v) | Stmt::Assign(var, v) => {
                let val = self.v(*v)?;
                ll!(self, self.b.build_store(self.vars[var.0 as usize], val));
            }
            Stmt::Store {
                array,
                index,
                value,
            } => {
                let ty = self.ty(*value);
                let p = self.element_ptr(*array, *index)?;
                let mut v = self.v(*value)?;
                if ty == ScalarTy::Bool {
                    v = ll!(
                        self,
                        self.b
                            .build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "")
                    )
                    .into();
                }
                let st = ll!(self, self.b.build_store(p, v));
                let _ = st.set_alignment(ty.size() as u32);
            }
            Stmt::StoreVec {
                array,
                index,
                values,
            } => {
                let ty = self.ty(values[0]);
                let w = values.len() as u32;
                let p = self.vec_ptr(*array, *index, w)?;
                let vt = reg_type(self.ctx, ty);
                let mut vec = match vt {
                    BasicTypeEnum::FloatType(t) => t.vec_type(w).get_undef(),
                    BasicTypeEnum::IntType(t) => t.vec_type(w).get_undef(),
                    _ => return Err(self.err("vector of an unsupported type")),
                };
                for (lane, v) in values.iter().enumerate() {
                    let idx = self.ctx.i32_type().const_int(lane as u64, false);
                    let val = self.v(*v)?;
                    vec = ll!(self, self.b.build_insert_element(vec, val, idx, ""));
                }
                let st = ll!(self, self.b.build_store(p, vec));
                let _ = st.set_alignment(w * ty.size() as u32);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.v(*cond)?.into_int_value();
                let (tb, eb, mb) = (
                    self.ctx.append_basic_block(self.func, "then"),
                    self.ctx.append_basic_block(self.func, "else"),
                    self.ctx.append_basic_block(self.func, "endif"),
                );
                ll!(self, self.b.build_conditional_branch(c, tb, eb));
                for (bb, body) in [(tb, then), (eb, otherwise)] {
                    self.b.position_at_end(bb);
                    self.stmts(body)?;
                    if self.open() {
                        ll!(self, self.b.build_unconditional_branch(mb));
                    }
                }
                self.b.position_at_end(mb);
            }
            Stmt::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let ptr = self.vars[var.0 as usize];
                let ty = self.f.vars[var.0 as usize];
                let it = reg_type(self.ctx, ty).into_int_type();
                ll!(self, self.b.build_store(ptr, self.v(*start)?));
                let (end, step) = (
                    self.v(*end)?.into_int_value(),
                    self.v(*step)?.into_int_value(),
                );
                let (hb, bb, lb, xb) = (
                    self.ctx.append_basic_block(self.func, "for.head"),
                    self.ctx.append_basic_block(self.func, "for.body"),
                    self.ctx.append_basic_block(self.func, "for.next"),
                    self.ctx.append_basic_block(self.func, "for.end"),
                );
                ll!(self, self.b.build_unconditional_branch(hb));
                self.b.position_at_end(hb);
                let i = ll!(self, self.b.build_load(it, ptr, "i")).into_int_value();
                let pred = if ty.is_signed_int() {
                    IntPredicate::SLT
                } else {
                    IntPredicate::ULT
                };
                let c = ll!(self, self.b.build_int_compare(pred, i, end, ""));
                ll!(self, self.b.build_conditional_branch(c, bb, xb));
                self.b.position_at_end(bb);
                self.loops.push((lb, xb));
                self.stmts(body)?;
                self.loops.pop();
                if self.open() {
                    ll!(self, self.b.build_unconditional_branch(lb));
                }
                self.b.position_at_end(lb);
                // As Rust's step_by: stop once `i + step` would reach `end` (`end - i <= step`,
                // unsigned: i < end here), so the sum never wraps around; written as
                // `step - 1 >= end - i - 1` so that a step of 0 stops too.
                let i = ll!(self, self.b.build_load(it, ptr, "i")).into_int_value();
                let one = it.const_int(1, false);
                let left = ll!(self, self.b.build_int_sub(end, i, ""));
                let left1 = ll!(self, self.b.build_int_sub(left, one, ""));
                let step1 = ll!(self, self.b.build_int_sub(step, one, ""));
                let last = ll!(
                    self,
                    self.b
                        .build_int_compare(IntPredicate::UGE, step1, left1, "")
                );
                let n = ll!(self, self.b.build_int_add(i, step, ""));
                let n = ll!(self, self.b.build_select(last, end, n, "")).into_int_value();
                ll!(self, self.b.build_store(ptr, n));
                ll!(self, self.b.build_unconditional_branch(hb));
                self.b.position_at_end(xb);
            }
            Stmt::While {
                cond_stmts,
                cond,
                body,
            } => {
                let (hb, bb, xb) = (
                    self.ctx.append_basic_block(self.func, "while.head"),
                    self.ctx.append_basic_block(self.func, "while.body"),
                    self.ctx.append_basic_block(self.func, "while.end"),
                );
                ll!(self, self.b.build_unconditional_branch(hb));
                self.b.position_at_end(hb);
                self.stmts(cond_stmts)?;
                let c = self.v(*cond)?.into_int_value();
                ll!(self, self.b.build_conditional_branch(c, bb, xb));
                self.b.position_at_end(bb);
                self.loops.push((hb, xb));
                self.stmts(body)?;
                self.loops.pop();
                if self.open() {
                    ll!(self, self.b.build_unconditional_branch(hb));
                }
                self.b.position_at_end(xb);
            }
            Stmt::Break | Stmt::Continue => {
                let &(cont, brk) = self
                    .loops
                    .last()
                    .ok_or_else(|| self.err("break outside a loop"))?;
                let target = if matches!(s, Stmt::Break) { brk } else { cont };
                ll!(self, self.b.build_unconditional_branch(target));
                self.dead_block();
            }
            Stmt::Return => {
                ll!(self, self.b.build_return(None));
                self.dead_block();
            }
            Stmt::ReturnValue(v) => {
                let v = self.v(*v)?;
                ll!(self, self.b.build_return(Some(&v)));
                self.dead_block();
            }
            Stmt::Barrier(bar) => self.barrier(*bar)?,
            Stmt::Printf(p) => super::printf::lower_printf(self, p)?,
            Stmt::AsyncCopy(c) => super::async_copy::lower_async_copy(self, c)?,
            Stmt::Hopper(h) => super::hopper::lower_hopper_stmt(self, h)?,
            Stmt::SurfStore(st) => super::texture_lower::lower_surf_store(self, st)?,
            Stmt::DeviceLaunch(l) => super::device_launch::lower::lower_launch(self, l)?,
            Stmt::StreamDestroy(d) => super::device_launch::lower_stream::lower_destroy(self, d)?,
        }
        Ok(())
    }

    /// Calls an LLVM intrinsic or function by name, declaring it if needed.
    pub(crate) fn call(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'c>>,
        args: &[BasicValueEnum<'c>],
    ) -> Result<Option<BasicValueEnum<'c>>> {
        let f = match self.module.get_function(name) {
            Some(f) => f,
            None => {
                let ptys: Vec<BasicMetadataTypeEnum> =
                    args.iter().map(|a| a.get_type().into()).collect();
                let fty = match ret {
                    Some(r) => r.fn_type(&ptys, false),
                    None => self.ctx.void_type().fn_type(&ptys, false),
                };
                self.module.add_function(name, fty, None)
            }
        };
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = ll!(self, self.b.build_call(f, &margs, ""));
        Ok(call.try_as_basic_value().basic())
    }

    fn barrier(&mut self, bar: Barrier) -> Result<()> {
        match bar {
            Barrier::SyncThreads => self.call("llvm.nvvm.barrier0", None, &[])?,
            Barrier::SyncWarp(mask) => {
                let m = self.v(mask)?;
                self.call("llvm.nvvm.bar.warp.sync", None, &[m])?
            }
            Barrier::Named { id, count, sync } => {
                let op = if sync { "sync" } else { "arrive" };
                asm::asm(
                    self,
                    format!("bar.{op} {id}, {count};"),
                    "~{memory}".into(),
                    &[],
                    None,
                )?
            }
            Barrier::FenceBlock => self.call("llvm.nvvm.membar.cta", None, &[])?,
            Barrier::FenceDevice => self.call("llvm.nvvm.membar.gl", None, &[])?,
            Barrier::FenceSystem => self.call("llvm.nvvm.membar.sys", None, &[])?,
        };
        Ok(())
    }

    /// Applies the kernel's fast-math setting to an f32 instruction (fast math, as CUDA's
    /// `--use_fast_math`, leaves f64 exact). With FMA contraction off
    /// ([`PtxOptions::contract`](super::PtxOptions::contract)) the flags leave out LLVM's
    /// `contract`, so that fastmath does not fuse what the kernel keeps separate (nvcc's
    /// `--use_fast_math --fmad=false`).
    ///
    /// The flags never include `nnan` or `ninf`: with them a NaN or an infinity is LLVM's
    /// poison, and a branch on poison is undefined behaviour, which LLVM may take as
    /// unreachable and delete the kernel's other work (the fuzzer's whole-language campaign
    /// found tree batches whose every store was gone: a float `%` of a NaN literal, whose
    /// loop branches on comparisons of its operands, became `exit`). nvcc's fast math does not
    /// assume finite values either.
    pub(crate) fn fast(&self, v: BasicValueEnum<'c>) -> BasicValueEnum<'c> {
        use inkwell::values::FastMathFlags;
        if self.opts.fastmath && v.get_type() == self.ctx.f32_type().into() {
            if let Some(inst) = v.as_instruction_value() {
                let finite = FastMathFlags::NoNaNs | FastMathFlags::NoInfs;
                let flags = if self.opts.contract {
                    FastMathFlags::all().difference(finite)
                } else {
                    FastMathFlags::all()
                        .difference(finite)
                        .difference(FastMathFlags::AllowContract)
                };
                let _ = inst.set_fast_math_flags(flags);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `init_nvptx` makes pointers into shared, constant and local memory 32 bits wide
    /// (`-nvptx-short-ptr`), and leaves generic and global pointers 64-bit.
    #[test]
    fn shared_constant_and_local_pointers_are_32_bit() {
        let tm = target_machine(
            &PtxOptions::for_cc(9, 0),
            crate::codegen::hopper::TargetUse::NONE,
        )
        .unwrap();
        let td = tm.get_target_data();
        let bytes = |space: u16| td.get_pointer_byte_size(Some(AddressSpace::from(space)));
        assert_eq!([0, 1, 3, 4, 5].map(bytes), [8, 8, 4, 4, 4]);
        let layout = td.get_data_layout();
        let layout = layout.as_str().to_string_lossy();
        assert!(layout.contains("p3:32:32"), "{layout}");
    }
}
