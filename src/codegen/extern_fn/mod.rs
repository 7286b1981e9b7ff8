//! Foreign device code (numba's `cuda.declare_device` and `link=`): external device functions
//! declared by name and signature, called from kernels built in Rust, and the PTX, cubin or
//! fatbin that defines them, linked by the driver's linker when the kernel is loaded.

use std::ffi::CString;
use std::marker::PhantomData;
use std::sync::Arc;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::module::Linkage;
use inkwell::types::{BasicMetadataTypeEnum, BasicType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum};
use inkwell::IntPredicate;

use super::builder::{with_state, Kind};
use super::control::KernelBuilder;
use super::device_fn::DeviceParams;
use super::expr::Expr;
use super::kernel::name_problem;
use super::lower::{mem_type, Lowerer};
use super::scalar::{Scalar, ScalarTy};
use crate::backend::{backend, LinkInput};
use crate::context::Context;
use crate::error::{CodegenError, Error, Result};
use crate::ir::{ExternFn, FunctionIr, LinkData, Op, ValueId};

mod ptx_proto;
use cudajit_sys as sys;
use ptx_proto::{declared_widths, defined_funcs, proto_matches, proto_text, Proto};

pub(crate) use crate::ir::LinkKind;

impl LinkKind {
    fn input_type(self) -> sys::CUjitInputType {
        match self {
            LinkKind::Ptx => sys::CUjitInputType::CU_JIT_INPUT_PTX,
            LinkKind::Cubin => sys::CUjitInputType::CU_JIT_INPUT_CUBIN,
            LinkKind::Fatbin => sys::CUjitInputType::CU_JIT_INPUT_FATBINARY,
            LinkKind::Object => sys::CUjitInputType::CU_JIT_INPUT_OBJECT,
            LinkKind::Library => sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
        }
    }

    /// The kind a file's extension names.
    fn of_path(path: &std::path::Path) -> Option<LinkKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "ptx" => LinkKind::Ptx,
            "cubin" => LinkKind::Cubin,
            "fatbin" => LinkKind::Fatbin,
            "o" | "obj" => LinkKind::Object,
            "a" | "lib" => LinkKind::Library,
            _ => return None,
        })
    }
}

/// An external device function taking the scalars `A` (a tuple such as `(f32, f32)`) and
/// returning `R`, declared with [`KernelBuilder::declare_device`] and defined in code linked
/// with [`KernelBuilder::link_ptx`] (or `link_file`, `link_cubin`, `link_fatbin`).
///
/// The handle belongs to the kernel (or device function) being built where it was declared.
pub struct ExternDeviceFn<A, R> {
    tag: u32,
    index: u32,
    _p: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for ExternDeviceFn<A, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A, R> Copy for ExternDeviceFn<A, R> {}

impl<A: DeviceParams, R: Scalar> ExternDeviceFn<A, R> {
    /// Calls the external function from the kernel (or device function) being built.
    #[track_caller]
    pub fn call(&self, args: A::Exprs) -> Expr<R> {
        let _at = crate::codegen::srcloc::at();
        let raws = A::raws(&args);
        let (tag, index) = (self.tag, self.index);
        with_state(|s| {
            if s.tag != tag {
                s.error(
                    Kind::ForeignValue,
                    format!(
                        "in `{}`: an external device function declared in another kernel is called; \
                         declare it with `declare_device` in each kernel (or device function) that \
                         calls it",
                        s.f.name
                    ),
                );
            }
        });
        let ids: Vec<ValueId> = raws.iter().map(|&(_, id)| ValueId(id)).collect();
        // The foreign function may read the thread index: its result may differ by thread.
        Expr::record(Op::CallExtern(index, ids), &raws, true)
    }
}

/// `fn(f32, f32) -> f32`, for messages.
fn signature(e: &ExternFn) -> String {
    let params: Vec<&str> = e.params.iter().map(|t| t.name()).collect();
    match e.ret {
        Some(r) => format!("fn({}) -> {}", params.join(", "), r.name()),
        None => format!("fn({})", params.join(", ")),
    }
}

impl KernelBuilder {
    /// Declares an external device function `name` taking `A` (a tuple of scalars) and
    /// returning `R` (numba's `cuda.declare_device`): the kernel calls it through the returned
    /// handle, the PTX has a `.extern .func` for it, and code that defines it (a `.visible
    /// .func` of the same name and parameters, e.g. from `nvcc -ptx` of an `extern "C"
    /// __device__` function) must be linked with [`link_ptx`](KernelBuilder::link_ptx) or
    /// [`link_file`](KernelBuilder::link_file). Declaring the same name again with another
    /// signature is a build error. `bool` parameters and results are passed as bytes.
    ///
    /// The simulator cannot run foreign code: launching such a kernel there is an error.
    #[track_caller]
    pub fn declare_device<A: DeviceParams, R: Scalar>(&self, name: &str) -> ExternDeviceFn<A, R> {
        let _at = crate::codegen::srcloc::at();
        let decl = ExternFn {
            name: name.to_string(),
            params: A::types(),
            ret: Some(R::TY),
        };
        let index = with_state(|s| {
            if let Some(e) = name_problem(name) {
                s.error(
                    Kind::ExternSignature,
                    format!("in `{}`: declare_device: {e}", s.f.name),
                );
            }
            match s.f.externs.iter().position(|e| e.name == decl.name) {
                Some(i) => {
                    if s.f.externs[i] != decl {
                        s.error(
                            Kind::ExternSignature,
                            format!(
                                "in `{}`: the external device function `{name}` is declared twice with \
                                 different signatures: `{}` and `{}`",
                                s.f.name,
                                signature(&s.f.externs[i]),
                                signature(&decl)
                            ),
                        );
                    }
                    i as u32
                }
                None => {
                    s.f.externs.push(decl);
                    (s.f.externs.len() - 1) as u32
                }
            }
        })
        .unwrap_or(0);
        ExternDeviceFn {
            tag: self.tag,
            index,
            _p: PhantomData,
        }
    }

    /// Links PTX text with the kernel when it is loaded (numba's `link=[...]`): the definitions
    /// of functions declared with [`declare_device`](KernelBuilder::declare_device). The text
    /// is part of the kernel's cache key.
    #[track_caller]
    pub fn link_ptx(&self, ptx: &str) {
        let _at = crate::codegen::srcloc::at();
        if ptx.contains('\0') {
            with_state(|s| {
                s.error(
                    Kind::LinkInput,
                    format!(
                        "in `{}`: link_ptx: PTX text must not contain NUL bytes",
                        s.f.name
                    ),
                )
            });
            return;
        }
        let mut data = ptx.as_bytes().to_vec();
        data.push(0);
        self.add_link(LinkKind::Ptx, None, data);
    }

    /// Links a cubin (ELF device code for the device's architecture) with the kernel when it
    /// is loaded.
    #[track_caller]
    pub fn link_cubin(&self, cubin: &[u8]) {
        let _at = crate::codegen::srcloc::at();
        self.add_link(LinkKind::Cubin, None, cubin.to_vec());
    }

    /// Links a fatbin with the kernel when it is loaded (the driver takes the code for the
    /// device's architecture, or JIT-compiles its PTX).
    #[track_caller]
    pub fn link_fatbin(&self, fatbin: &[u8]) {
        let _at = crate::codegen::srcloc::at();
        self.add_link(LinkKind::Fatbin, None, fatbin.to_vec());
    }

    /// Links a file with the kernel when it is loaded, by its extension: `.ptx`, `.cubin`,
    /// `.fatbin`, `.o` (relocatable device code, `nvcc -dc`) or `.a`. The file is read now,
    /// and its contents are part of the kernel's cache key; a missing file or an unknown
    /// extension is a build error.
    #[track_caller]
    pub fn link_file(&self, path: impl AsRef<std::path::Path>) {
        let _at = crate::codegen::srcloc::at();
        let path = path.as_ref();
        let fail = |what: String| {
            with_state(|s| s.error(Kind::LinkInput, format!("in `{}`: {what}", s.f.name)))
        };
        let Some(kind) = LinkKind::of_path(path) else {
            fail(format!(
                "link_file: `{}` has no extension naming its kind of device code (.ptx, .cubin, \
                 .fatbin, .o, .a)",
                path.display()
            ));
            return;
        };
        let mut data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                fail(format!("link_file: cannot read `{}`: {e}", path.display()));
                return;
            }
        };
        if kind == LinkKind::Ptx {
            if data.contains(&0) {
                fail(format!(
                    "link_file: `{}` holds a NUL byte; is it PTX text?",
                    path.display()
                ));
                return;
            }
            data.push(0);
        }
        self.add_link(kind, Some(path.display().to_string()), data);
    }

    fn add_link(&self, kind: LinkKind, name: Option<String>, data: Vec<u8>) {
        with_state(|s| {
            let name = name.unwrap_or_else(|| format!("link_input_{}", s.f.links.len()));
            let data: Arc<[u8]> = data.into();
            if !s.f.links.iter().any(|l| l.kind == kind && l.data == data) {
                s.f.links.push(LinkData { kind, name, data });
            }
        });
    }
}

/// Checks a whole kernel: each external name has one signature across the kernel and the
/// device functions it calls. Returns the messages of the clashes.
pub(crate) fn check_externs(f: &FunctionIr) -> Vec<String> {
    let mut seen: Vec<(&ExternFn, &str)> = Vec::new();
    let mut errors = Vec::new();
    for func in f.tree() {
        for e in &func.externs {
            match seen.iter().find(|(s, _)| s.name == e.name) {
                Some((s, other)) if *s != e => errors.push(format!(
                    "the external device function `{}` is declared as `{}` in `{other}` and as `{}` \
                     in `{}`",
                    e.name,
                    signature(s),
                    signature(e),
                    func.name
                )),
                Some(_) => {}
                None => seen.push((e, &func.name)),
            }
        }
    }
    errors
}

/// Checks each external function against its definition in the PTX link inputs, where one
/// defines it: another number of parameters or other widths is a build error naming it.
/// (Cubin and fatbin inputs are checked by the driver's linker.)
pub(crate) fn check_prototypes(f: &FunctionIr) -> Vec<String> {
    let links = links_of(f);
    let mut defined: Vec<(String, Proto, &str)> = Vec::new();
    for l in links.iter().filter(|l| l.kind == LinkKind::Ptx) {
        let text = String::from_utf8_lossy(&l.data);
        for (name, proto) in defined_funcs(text.trim_end_matches('\0')) {
            defined.push((name, proto, &l.name));
        }
    }
    let mut errors = Vec::new();
    for g in f.tree() {
        for e in &g.externs {
            let want = declared_widths(e);
            if let Some((_, proto, input)) = defined
                .iter()
                .find(|(n, p, _)| *n == e.name && !proto_matches(&want, p))
            {
                let msg = format!(
                    "the external device function `{}` is declared as `{}` (PTX parameters {}), \
                     but `{input}` defines it with parameters {}; fix the declaration \
                     (`declare_device::<(..), R>(\"{}\")`) or the linked code",
                    e.name,
                    signature(e),
                    proto_text(&want),
                    proto_text(proto),
                    e.name
                );
                if !errors.contains(&msg) {
                    errors.push(msg);
                }
            }
        }
    }
    errors
}

/// The link inputs of a kernel and the device functions it calls (each once).
pub(crate) fn links_of(f: &FunctionIr) -> Vec<LinkData> {
    let mut out: Vec<LinkData> = Vec::new();
    for g in f.tree() {
        for l in &g.links {
            if !out.iter().any(|o| o.kind == l.kind && o.data == l.data) {
                out.push(l.clone());
            }
        }
    }
    out
}

/// Links the kernel's PTX with its link inputs into a cubin for `ctx`'s device. A failure
/// names the external functions the linker's log mentions.
pub(crate) fn link_cubin(
    ctx: &Context,
    f: &FunctionIr,
    ptx: &str,
    links: &[LinkData],
) -> Result<Vec<u8>> {
    let text = CString::new(ptx).map_err(|_| {
        Error::Codegen(CodegenError::Link {
            kernel: f.name.clone(),
            message: "PTX text must not contain NUL bytes".into(),
        })
    })?;
    let names: Vec<CString> = links
        .iter()
        .map(|l| CString::new(l.name.replace('\0', "")).unwrap_or_default())
        .collect();
    let mut inputs = vec![LinkInput {
        kind: sys::CUjitInputType::CU_JIT_INPUT_PTX,
        data: text.as_bytes_with_nul(),
        name: c"kernel.ptx",
    }];
    for (l, name) in links.iter().zip(&names) {
        inputs.push(LinkInput {
            kind: l.kind.input_type(),
            data: &l.data,
            name,
        });
    }
    ctx.bind()?;
    match backend().link(&inputs) {
        Ok((cubin, _log)) => Ok(cubin),
        Err(Error::Jit { log, .. }) => Err(link_error(f, links, &log)),
        Err(e) => Err(e),
    }
}

/// A link failure, naming the external functions the log mentions (else all of them).
fn link_error(f: &FunctionIr, links: &[LinkData], log: &str) -> Error {
    let externs: Vec<&ExternFn> = f.tree().into_iter().flat_map(|g| &g.externs).collect();
    let mut named: Vec<&&ExternFn> = externs.iter().filter(|e| mentions(log, &e.name)).collect();
    if named.is_empty() {
        // The log names none of them: each external function is a suspect.
        named = externs.iter().collect();
    }
    let inputs: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
    let inputs = if inputs.is_empty() {
        "no link inputs".to_string()
    } else {
        format!("link inputs: {}", inputs.join(", "))
    };
    let message = if named.is_empty() {
        format!(
            "linking with the driver's linker failed ({inputs}).\nLinker log:\n{}",
            log.trim_end()
        )
    } else {
        let list: Vec<String> = named
            .iter()
            .map(|e| format!("`{}` (declared as `{}`)", e.name, signature(e)))
            .collect();
        format!(
            "linking failed on the external device function(s) {}: no linked code defines it \
             with that signature ({inputs}). Link the PTX, cubin or fatbin that defines it as a \
             `.visible .func` with the same name and parameters (`k.link_ptx(..)` or \
             `k.link_file(..)` in the kernel's build), or fix the declaration \
             (`k.declare_device::<(..), R>(\"{}\")`).\nLinker log:\n{}",
            list.join(", "),
            named[0].name,
            log.trim_end()
        )
    };
    Error::Codegen(CodegenError::Link {
        kernel: f.name.clone(),
        message,
    })
}

/// Whether `log` names the symbol `name` (as a whole word).
fn mentions(log: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    log.match_indices(name).any(|(i, _)| {
        let before = log[..i].chars().next_back();
        let after = log[i + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Lowers a call of an external function: an external declaration (bytes for `bool`).
pub(crate) fn lower_call_extern<'c>(
    lw: &mut Lowerer<'c, '_>,
    index: u32,
    args: &[ValueId],
) -> Result<BasicValueEnum<'c>> {
    let err = |what: String| {
        if what.starts_with("internal") {
            super::lower::internal_err(&lw.f.name, what)
        } else {
            Error::Codegen(CodegenError::Llvm {
                kernel: lw.f.name.clone(),
                message: what,
                source: None,
            })
        }
    };
    let e =
        lw.f.externs
            .get(index as usize)
            .ok_or_else(|| err("internal: unknown external function".into()))?;
    let ctx = lw.ctx;
    let func = match lw.module.get_function(&e.name) {
        Some(f) => f,
        None => {
            let ptys: Vec<BasicMetadataTypeEnum> =
                e.params.iter().map(|t| mem_type(ctx, *t).into()).collect();
            let fty = match e.ret {
                Some(r) => mem_type(ctx, r).fn_type(&ptys, false),
                None => ctx.void_type().fn_type(&ptys, false),
            };
            let f = lw
                .module
                .add_function(&e.name, fty, Some(Linkage::External));
            // The foreign code may hold barriers or warp intrinsics: keep calls where they are.
            let convergent =
                ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("convergent"), 0);
            f.add_attribute(AttributeLoc::Function, convergent);
            f
        }
    };
    let mut margs: Vec<BasicMetadataValueEnum> = Vec::new();
    for a in args {
        let mut v = lw.v(*a)?;
        if lw.ty(*a) == ScalarTy::Bool {
            v =
                lw.b.build_int_z_extend(v.into_int_value(), ctx.i8_type(), "")
                    .map_err(|x| err(x.to_string()))?
                    .into();
        }
        margs.push(v.into());
    }
    let call =
        lw.b.build_call(func, &margs, "")
            .map_err(|x| err(x.to_string()))?;
    let v = call
        .try_as_basic_value()
        .basic()
        .unwrap_or_else(|| ctx.bool_type().const_zero().into());
    if e.ret == Some(ScalarTy::Bool) {
        let zero = ctx.i8_type().const_zero();
        return Ok(lw
            .b
            .build_int_compare(IntPredicate::NE, v.into_int_value(), zero, "")
            .map_err(|x| err(x.to_string()))?
            .into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_whole_words_only() {
        assert!(mentions(
            "Unresolved extern function 'mul_add_ext'",
            "mul_add_ext"
        ));
        assert!(!mentions(
            "Unresolved extern function 'mul_add_ext2'",
            "mul_add_ext"
        ));
        assert!(!mentions("xmul_add_ext", "mul_add_ext"));
    }

    #[test]
    fn link_errors_name_the_symbol_and_the_fix() {
        let k = crate::codegen::Kernel::<(&mut [f32],)>::build("le", |k, (o,)| {
            let f = k.declare_device::<(f32, f32), f32>("mul_add_ext");
            let g = k.declare_device::<(f64,), f64>("other_ext");
            k.link_ptx("// defines nothing");
            o.set(
                0,
                f.call((1.0f32.into(), 2.0f32.into())) + g.call((1.0f64.into(),)).cast(),
            );
        })
        .unwrap();
        let ir = k.ir();
        let links = links_of(ir);
        assert_eq!(links.len(), 1);
        let m = link_error(
            ir,
            &links,
            "error   : Undefined reference to 'mul_add_ext' in 'kernel.ptx'",
        )
        .to_string();
        assert!(
            m.contains("`mul_add_ext` (declared as `fn(f32, f32) -> f32`)")
                && !m.contains("other_ext")
                && m.contains("link_input_0")
                && m.contains("k.link_ptx")
                && m.contains("Undefined reference"),
            "{m}"
        );
        // A log naming neither: both are listed.
        let m = link_error(ir, &[], "error: something").to_string();
        assert!(
            m.contains("mul_add_ext") && m.contains("other_ext") && m.contains("no link inputs"),
            "{m}"
        );
    }

    #[test]
    fn kinds_by_extension() {
        let k = |p: &str| LinkKind::of_path(std::path::Path::new(p));
        assert_eq!(k("a/b.ptx"), Some(LinkKind::Ptx));
        assert_eq!(k("b.CUBIN"), Some(LinkKind::Cubin));
        assert_eq!(k("b.fatbin"), Some(LinkKind::Fatbin));
        assert_eq!(k("b.o"), Some(LinkKind::Object));
        assert_eq!(k("b.a"), Some(LinkKind::Library));
        assert_eq!(k("b.txt"), None);
        assert_eq!(k("b"), None);
    }
}
