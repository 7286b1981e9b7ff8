//! Kernels already loaded in this process: building a kernel whose IR and options equal one
//! loaded before in the same context returns that loaded function (one hash of the IR, one
//! lookup) instead of finding its PTX and loading a module again (CuPy's and numba's
//! per-process kernel memo).
//!
//! Each entry keeps its module loaded, and with it its context, until the table is cleared
//! ([`clear`], by `clear_memory_cache`), the context is reset (`Context::reset` lets go of its
//! entries first), or the table is full ([`MAX_ENTRIES`]: it is emptied, and kernels still
//! held by users stay loaded).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::codegen::options::PtxOptions;
use crate::context::Context;
use crate::ir::FunctionIr;
use crate::module::Function;

/// Most loaded kernels kept.
pub(crate) const MAX_ENTRIES: usize = 4096;

struct Entry {
    ir: Arc<FunctionIr>,
    options: PtxOptions,
    function: Function,
}

#[derive(Default)]
struct Table {
    map: HashMap<u64, Vec<Entry>>,
    len: usize,
}

static LOADED: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    crate::context::on_reset(forget_context);
    Mutex::new(Table::default())
});

/// What identifies a kernel for this table: a fast hash of its IR and options (equal entries
/// are then compared in full).
pub(crate) fn hash(ir: &FunctionIr, options: &PtxOptions) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    ir.hash(&mut h);
    options.hash(&mut h);
    if options.lineinfo {
        crate::ir::srcloc::hash_tree_lines(ir, &mut h);
    }
    h.finish()
}

impl Table {
    /// The entry for this IR and these options in `ctx`.
    fn get(
        &self,
        hash: u64,
        ir: &FunctionIr,
        options: &PtxOptions,
        ctx: &Context,
    ) -> Option<&Entry> {
        self.map.get(&hash)?.iter().find(|e| {
            e.function.module().context().same_as(ctx)
                && e.options == *options
                && *e.ir == *ir
                && (!options.lineinfo || crate::ir::srcloc::same_tree_lines(&e.ir, ir))
        })
    }
}

/// The function loaded in `ctx` for a kernel with this IR and these options, if any.
pub(crate) fn find(
    hash: u64,
    ir: &FunctionIr,
    options: &PtxOptions,
    ctx: &Context,
) -> Option<Function> {
    let t = LOADED.lock();
    t.get(hash, ir, options, ctx).map(|e| e.function.clone())
}

/// Records `function` as the kernel with this IR and these options in its context.
pub(crate) fn insert(hash: u64, ir: Arc<FunctionIr>, options: PtxOptions, function: Function) {
    let mut t = LOADED.lock();
    let ctx = function.module().context().clone();
    if t.get(hash, &ir, &options, &ctx).is_some() {
        return;
    }
    if t.len >= MAX_ENTRIES {
        *t = Table::default();
    }
    t.map.entry(hash).or_default().push(Entry {
        ir,
        options,
        function,
    });
    t.len += 1;
}

/// Lets go of every loaded kernel of `ctx` (before a context reset).
fn forget_context(ctx: &Context) {
    let mut t = LOADED.lock();
    let mut removed = 0;
    t.map.retain(|_, v| {
        let before = v.len();
        v.retain(|e| !e.function.module().context().same_as(ctx));
        removed += before - v.len();
        !v.is_empty()
    });
    t.len -= removed;
}

/// Lets go of every loaded kernel; returns how many there were.
pub(crate) fn clear() -> usize {
    std::mem::take(&mut *LOADED.lock()).len
}

/// Loaded kernels now in the table.
pub(crate) fn len() -> usize {
    LOADED.lock().len
}
