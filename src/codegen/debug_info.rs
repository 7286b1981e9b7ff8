//! LLVM debug locations for `PtxOptions::lineinfo`: the Rust file and line of each recorded
//! operation (see `srcloc.rs`) become `!dbg` locations, which the NVPTX backend prints as
//! `.file`/`.loc` directives, so that `cuobjdump -lineinfo`, Nsight Compute and
//! compute-sanitizer name the Rust line of an instruction.
//!
//! As numba's `lineinfo=True` and clang's `-gline-directives-only` for CUDA, the compile unit's
//! emission kind is `DebugDirectivesOnly`: the PTX gets `.file`/`.loc` and no DWARF sections,
//! its `.target` no `debug` (which would ask ptxas for unoptimised debug code). LLVM's C API
//! cannot create that kind, so the module is built with `LineTablesOnly` and its text is
//! reparsed with the kind changed ([`directives_only`]).

use std::cell::RefCell;
use std::collections::HashMap;

use inkwell::context::Context as LlContext;
use inkwell::debug_info::{
    AsDIScope, DICompileUnit, DIFile, DILocation, DIScope, DISubprogram, DWARFEmissionKind,
    DWARFSourceLanguage, DebugInfoBuilder,
};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{FlagBehavior, Module};
use inkwell::values::FunctionValue;

use super::srcloc::{post_order, stmt_loc, Loc};
use crate::ir::{FunctionIr, Stmt};

/// The debug information of one module being lowered.
pub(crate) struct ModuleDebug<'c> {
    ctx: &'c LlContext,
    dib: DebugInfoBuilder<'c>,
    cu: DICompileUnit<'c>,
    files: RefCell<HashMap<&'static str, DIFile<'c>>>,
}

/// Where a function was built, or its first recorded statement.
fn def_loc(f: &FunctionIr) -> Option<Loc> {
    f.lines
        .def
        .or_else(|| f.lines.stmts.iter().copied().flatten().next())
}

impl<'c> ModuleDebug<'c> {
    /// Starts the debug information of `module`, whose root function is `f`.
    pub(crate) fn new(ctx: &'c LlContext, module: &Module<'c>, f: &FunctionIr) -> Self {
        let file = def_loc(f).map_or("<unknown>", |l| l.file());
        let (dib, cu) = module.create_debug_info_builder(
            true,
            DWARFSourceLanguage::Rust,
            file,
            "",
            "cudajit",
            true,
            "",
            0,
            "",
            DWARFEmissionKind::LineTablesOnly,
            0,
            false,
            false,
            "",
            "",
        );
        let i32 = ctx.i32_type();
        module.add_basic_value_flag(
            "Debug Info Version",
            FlagBehavior::Warning,
            i32.const_int(inkwell::debug_info::debug_metadata_version() as u64, false),
        );
        // DWARF 2, as clang for NVPTX (ptxas knows no later version).
        module.add_basic_value_flag(
            "Dwarf Version",
            FlagBehavior::Warning,
            i32.const_int(2, false),
        );
        ModuleDebug {
            ctx,
            dib,
            cu,
            files: RefCell::new(HashMap::new()),
        }
    }

    fn file(&self, path: &'static str) -> DIFile<'c> {
        *self
            .files
            .borrow_mut()
            .entry(path)
            .or_insert_with(|| self.dib.create_file(path, ""))
    }

    /// Gives `func` (lowered from `f`) a subprogram; the returned state sets the locations of
    /// its instructions.
    pub(crate) fn function<'d>(
        &'d self,
        func: FunctionValue<'c>,
        f: &FunctionIr,
    ) -> FnDebug<'c, 'd> {
        let def = def_loc(f);
        let file = self.file(def.map_or("<unknown>", |l| l.file()));
        let line = def.map_or(0, |l| l.line());
        let ty = self.dib.create_subroutine_type(file, None, &[], 0);
        let name = func.get_name().to_string_lossy().into_owned();
        let sp = self.dib.create_function(
            self.cu.as_debug_info_scope(),
            &f.name,
            Some(&name),
            file,
            line,
            ty,
            false,
            true,
            line,
            0,
            true,
        );
        func.set_subprogram(sp);
        FnDebug {
            md: self,
            sp,
            sp_file: def.map_or("<unknown>", |l| l.file()),
            scopes: HashMap::new(),
            order: post_order(&f.body),
            def,
        }
    }

    /// Finishes the debug information (before the module is verified or printed).
    pub(crate) fn finalize(&self) {
        self.dib.finalize();
    }
}

/// The debug information of one function being lowered.
pub(crate) struct FnDebug<'c, 'd> {
    md: &'d ModuleDebug<'c>,
    sp: DISubprogram<'c>,
    sp_file: &'static str,
    /// A lexical block per other file (locations in another file than the function's).
    scopes: HashMap<&'static str, DIScope<'c>>,
    order: HashMap<*const Stmt, usize>,
    def: Option<Loc>,
}

impl<'c> FnDebug<'c, '_> {
    fn location(&mut self, l: Loc) -> DILocation<'c> {
        let scope = if l.file() == self.sp_file {
            self.sp.as_debug_info_scope()
        } else {
            let (md, sp) = (self.md, self.sp);
            *self.scopes.entry(l.file()).or_insert_with(|| {
                md.dib
                    .create_lexical_block(sp.as_debug_info_scope(), md.file(l.file()), 0, 0)
                    .as_debug_info_scope()
            })
        };
        self.md
            .dib
            .create_debug_location(self.md.ctx, l.line(), l.column(), scope, None)
    }

    /// The location instructions get before any statement's: where the function was built
    /// (line 0 if unknown; every instruction needs one, as calls to inlinable functions).
    pub(crate) fn entry(&mut self, b: &inkwell::builder::Builder<'c>) {
        let loc = match self.def {
            Some(l) => self.location(l),
            None => self.md.dib.create_debug_location(
                self.md.ctx,
                0,
                0,
                self.sp.as_debug_info_scope(),
                None,
            ),
        };
        b.set_current_debug_location(loc);
    }

    /// Sets the location of what `s` (a statement of `f`) lowers to, if it has one (else the
    /// previous location stays).
    pub(crate) fn stmt(&mut self, b: &inkwell::builder::Builder<'c>, f: &FunctionIr, s: &Stmt) {
        if let Some(l) = stmt_loc(f, &self.order, s) {
            let loc = self.location(l);
            b.set_current_debug_location(loc);
        }
    }
}

/// `module` with its compile unit's emission kind changed to `DebugDirectivesOnly` (through its
/// text: LLVM's C API has no way to create or change it).
pub(crate) fn directives_only<'c>(
    ctx: &'c LlContext,
    module: Module<'c>,
) -> std::result::Result<Module<'c>, String> {
    let text = module.print_to_string().to_string();
    let text = text.replace(
        "emissionKind: LineTablesOnly",
        "emissionKind: DebugDirectivesOnly",
    );
    let name = module.get_name().to_string_lossy().into_owned();
    let buf = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), &name);
    ctx.create_module_from_ir(buf).map_err(|e| e.to_string())
}
