//! What the simulator reports when a kernel goes wrong, and how it names places: blocks,
//! threads and arrays.

use crate::error::FaultKind;
use crate::ir::{ArrayRef, FunctionIr, Param, Stmt};

/// A fault in one block: its kind and a message naming the block, thread, array and index.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    pub message: String,
    /// The block stopped because another block of the launch faulted (it was waiting in a
    /// loop, e.g. for a flag that block would have set): not a fault of its own.
    pub stopped: bool,
    /// The message names the Rust line of the faulting statement already.
    pub located: bool,
}

impl Fault {
    pub(crate) fn new(kind: FaultKind, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            message: message.into(),
            stopped: false,
            located: false,
        }
    }

    /// A block stopped in a loop because another block of its launch faulted.
    pub(crate) fn stopped() -> Fault {
        Fault {
            stopped: true,
            ..Fault::new(
                FaultKind::Unsupported,
                "stopped because another block of the launch faulted",
            )
        }
    }

    /// The fault with the Rust source line that built statement `s` of `f` added to its
    /// message (", at tests/foo.rs:12"; for a fault in a device function, its call's line is
    /// added as " (called at ..)").
    pub(crate) fn at_stmt(mut self, f: &FunctionIr, s: &Stmt) -> Fault {
        if self.stopped {
            return self;
        }
        let order = crate::ir::srcloc::post_order(&f.body);
        if let Some(l) = crate::ir::srcloc::stmt_loc(f, &order, s) {
            let what = if self.located { " (called at" } else { ", at" };
            let close = if self.located { ")" } else { "" };
            self.message
                .push_str(&format!("{what} {}:{}{close}", l.file(), l.line()));
            self.located = true;
        }
        self
    }

    /// An inconsistency in the kernel IR (a bug in cudajit, not in the kernel).
    pub(crate) fn internal(what: impl std::fmt::Display) -> Fault {
        Fault::new(
            FaultKind::Unsupported,
            format!("internal simulator error: {what} (please report this)"),
        )
    }
}

/// `(x, y, z)`.
pub(super) fn xyz(v: [u32; 3]) -> String {
    format!("({}, {}, {})", v[0], v[1], v[2])
}

/// How an array is named in messages, e.g. "array parameter 2 (f32, shape [100])".
pub(super) fn array_name(f: &FunctionIr, array: ArrayRef, dims: Option<&[u64]>) -> String {
    let within = if f.callees.is_empty() && f.ret.is_none() {
        String::new()
    } else {
        format!(" of `{}`", f.name)
    };
    match array {
        ArrayRef::Param(i) => {
            let elem = match f.params.get(i as usize) {
                Some(Param::Array { elem, .. }) => elem.name(),
                _ => "?",
            };
            match dims {
                Some(d) => format!("array parameter {i} ({elem}, shape {d:?}){within}"),
                None => format!("array parameter {i} ({elem}){within}"),
            }
        }
        ArrayRef::Shared(i) => {
            let d = &f.shared[i as usize];
            format!("shared array {i} ({}){within}", d.c_decl())
        }
        ArrayRef::DynShared(t) => format!("the dynamic shared array (as {}){within}", t.name()),
        ArrayRef::Local(i) => {
            let d = &f.locals[i as usize];
            format!("local array {i} ({}){within}", d.c_decl())
        }
        ArrayRef::Const(i) => match f.consts.get(i as usize) {
            Some(c) => format!("constant array {i} ({}[{}]){within}", c.elem.name(), c.len),
            None => format!("constant array {i}{within}"),
        },
    }
}
