//! The kernel IR: what the builder (`codegen`) records, the lowering (`codegen`) turns into
//! LLVM IR, and the simulator (`backend::sim`) executes. A leaf of the crate: it imports
//! nothing of it but `error` (see docs/ARCHITECTURE.md).
//!
//! Every value is defined once, at the statement where the builder created it (`Stmt::Let`),
//! so evaluation order is the order of the Rust code that built the kernel. Plain data:
//! hashable for the compile cache.
//!
//! Beside the statements: the scalar types ([`ScalarTy`]), the op enums of each concern
//! ([`math`], [`atomic`], [`warp`], [`printf`], [`link`]), source locations ([`srcloc`]),
//! and the math semantics written once ([`math::alg`], [`math::host`]), which lowering, the
//! simulator and the tests share.

pub(crate) mod async_copy;
pub(crate) mod atomic;
pub(crate) mod device_launch;
mod fp8;
pub(crate) mod hopper;
pub(crate) mod link;
pub(crate) mod math;
pub(crate) mod mma;
pub(crate) mod printf;
mod scalar;
pub(crate) mod srcloc;
mod target;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod texture;
pub(crate) mod warp;

pub(crate) use async_copy::AsyncCopy;
pub(crate) use atomic::{AtomicKind, AtomicOp};
pub use fp8::{F8E4M3, F8E5M2};
pub(crate) use hopper::{HopperOp, HopperStmt};
pub(crate) use link::LinkKind;
pub(crate) use math::MathFn;
pub(crate) use printf::PrintfStmt;
pub use scalar::ScalarTy;
pub(crate) use srcloc::SrcLines;
pub use target::default_cc;
pub(crate) use texture::{SurfStore, TexFetch, TexOp};
pub(crate) use warp::{BitFn, LaneMask, ShflKind, VoteKind, WarpOp};

/// A value defined by a `Stmt::Let`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ValueId(pub u32);

/// A mutable local variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct VarId(pub u32);

/// A device function (callable from kernels and other device functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FuncId(pub u32);

/// Where an array lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ArrayRef {
    /// A kernel parameter (index into `KernelIr::params`).
    Param(u32),
    /// A static shared-memory array (index into `KernelIr::shared`).
    Shared(u32),
    /// The dynamic shared-memory array, viewed as elements of this type.
    DynShared(ScalarTy),
    /// A per-thread local array (index into `KernelIr::locals`).
    Local(u32),
    /// A read-only array in constant memory, baked into the module (index into
    /// `FunctionIr::consts`).
    Const(u32),
}

/// Hardware registers read by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpSize,
    /// The block's position in its cluster (`%cluster_ctaid`, sm_90).
    ClusterCtaid(u8),
    /// Blocks per cluster in each dimension (`%cluster_nctaid`).
    ClusterNctaid(u8),
    /// The cluster's position in the grid (`%clusterid`).
    ClusterId(u8),
    /// Clusters in the grid in each dimension (`%nclusterid`).
    NclusterId(u8),
    /// The block's rank in its cluster (`%cluster_ctarank`: x fastest).
    ClusterRank,
    /// Blocks in the cluster (`%cluster_nctarank`).
    ClusterSize,
    /// The global nanosecond timer (`%globaltimer`, a `u64`).
    GlobalTimer,
    /// Its low 32 bits (`%globaltimer_lo`, a `u32`).
    GlobalTimerLo,
}

impl Sreg {
    /// Whether threads of one block may read different values.
    pub(crate) fn varies_in_block(self) -> bool {
        matches!(
            self,
            Sreg::Tid(_) | Sreg::LaneId | Sreg::GlobalTimer | Sreg::GlobalTimerLo
        )
    }

    /// Whether it describes thread-block clusters (sm_90).
    pub(crate) fn is_cluster(self) -> bool {
        matches!(
            self,
            Sreg::ClusterCtaid(_)
                | Sreg::ClusterNctaid(_)
                | Sreg::ClusterId(_)
                | Sreg::NclusterId(_)
                | Sreg::ClusterRank
                | Sreg::ClusterSize
        )
    }
}

/// Unary operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UnOp {
    Neg,
    /// Bitwise not for integers, logical not for bool.
    Not,
}

/// Binary operations (both operands of the result's type, except shifts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Min,
    Max,
}

/// Comparisons (result bool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Barriers and fences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Barrier {
    /// `__syncthreads()`.
    SyncThreads,
    /// `__syncwarp(mask)`.
    SyncWarp(ValueId),
    /// A named barrier: `bar.sync id, count` (`sync`) or `bar.arrive id, count`, counted in
    /// threads of whole warps.
    Named { id: u32, count: u32, sync: bool },
    /// `__threadfence_block()`.
    FenceBlock,
    /// `__threadfence()`.
    FenceDevice,
    /// `__threadfence_system()`.
    FenceSystem,
}

/// How `syncthreads_count/and/or` combine the predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SyncReduce {
    Count,
    And,
    Or,
}

/// An operation that defines a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// A constant: the bits of a value of the result type.
    Const(u64),
    /// A scalar kernel or device-function parameter (its index in the parameter list).
    Param(u32),
    Special(Sreg),
    Unary(UnOp, ValueId),
    Binary(BinOp, ValueId, ValueId),
    Cmp(CmpOp, ValueId, ValueId),
    Select(ValueId, ValueId, ValueId),
    Cast(ValueId),
    /// Reinterprets the bits of a value of the same size.
    Bitcast(ValueId),
    Load {
        array: ArrayRef,
        index: ValueId,
    },
    /// Lane `lane` of a `width`-element vector load at element `index * width` (the lanes of one
    /// load are recorded consecutively, lane 0 first).
    LoadLane {
        array: ArrayRef,
        index: ValueId,
        lane: u8,
        width: u8,
    },
    /// Extent of dimension `dim` of an array (as u64).
    ArrayDim {
        array: ArrayRef,
        dim: u8,
    },
    /// The flat (C-order) index, an `i64`, of element `indices` of an n-D view of `array`
    /// whose extents are `dims` (`i64` values, one per index): `(i0 * d1 + i1) * d2 + i2`.
    /// Lowering emits only the multiply-adds (the first extent is unused there); the
    /// simulator also checks each index against its extent and faults naming the dimension.
    NdIndex {
        array: ArrayRef,
        indices: Vec<ValueId>,
        dims: Vec<ValueId>,
    },
    ReadVar(VarId),
    /// `syncthreads_count/and/or(pred)`: a barrier that also reduces a predicate.
    SyncReduce(SyncReduce, ValueId),
    /// Calls a device function.
    Call(FuncId, Vec<ValueId>),
    /// A math function (see `math.rs`).
    Math(MathFn, Vec<ValueId>),
    /// An atomic read-modify-write returning the old value (see `atomics.rs`).
    Atomic(AtomicOp),
    /// A warp-level intrinsic (see `warp.rs`).
    Warp(WarpOp),
    /// Calls an external device function (index into `FunctionIr::externs`), defined in code
    /// linked when the kernel is loaded (see `extern_fn.rs`).
    CallExtern(u32, Vec<ValueId>),
    /// Hopper's barriers, addresses and warpgroup MMA (see `hopper.rs`).
    Hopper(HopperOp),
    /// A stream created on the device, its `u64` handle (see `device_launch.rs`).
    StreamCreate(device_launch::StreamCreate),
    /// A texture fetch or surface load (see `texture.rs`).
    Texture(TexOp),
}

/// A value's definition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ValueDef {
    pub ty: ScalarTy,
    pub op: Op,
}

/// A statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Stmt {
    /// Evaluates a value here.
    Let(ValueId),
    /// Declares a variable with an initial value.
    DeclVar(VarId, ValueId),
    Assign(VarId, ValueId),
    Store {
        array: ArrayRef,
        index: ValueId,
        value: ValueId,
    },
    /// Stores `values` as one vector at element `index * values.len()`.
    StoreVec {
        array: ArrayRef,
        index: ValueId,
        values: Vec<ValueId>,
    },
    If {
        cond: ValueId,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `for var in (start..end).step_by(step)`: `var` is declared by the loop.
    For {
        var: VarId,
        start: ValueId,
        end: ValueId,
        step: ValueId,
        body: Vec<Stmt>,
    },
    /// Evaluates `cond_stmts`, then loops while `cond` holds.
    While {
        cond_stmts: Vec<Stmt>,
        cond: ValueId,
        body: Vec<Stmt>,
    },
    Break,
    Continue,
    /// Returns from the kernel (or a void device function).
    Return,
    /// Returns a value from a device function.
    ReturnValue(ValueId),
    Barrier(Barrier),
    /// Prints `args` with a checked format (see `printf.rs`).
    Printf(PrintfStmt),
    /// An asynchronous global-to-shared copy, or its commit or wait (see `async_copy.rs`).
    AsyncCopy(AsyncCopy),
    /// Hopper's barriers, tile copies and fences (see `hopper.rs`).
    Hopper(HopperStmt),
    /// A surface store (see `texture.rs`).
    SurfStore(SurfStore),
    /// A kernel launch from device code (see `device_launch.rs`).
    DeviceLaunch(device_launch::DeviceLaunch),
    /// Destroys a stream created on the device (see `device_launch.rs`).
    StreamDestroy(device_launch::StreamDestroy),
}

/// A parameter of a kernel or device function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Param {
    Scalar(ScalarTy),
    Array {
        elem: ScalarTy,
        ndim: u8,
        mutable: bool,
    },
    /// A TMA tensor map (`CUtensorMap`, 128 bytes aligned to 64) of `rank` dimensions over
    /// elements of `elem`, passed by value (a `__grid_constant__` parameter).
    TensorMap {
        elem: ScalarTy,
        rank: u8,
    },
}

/// A static array declaration (shared or local).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ArrayDecl {
    pub elem: ScalarTy,
    /// Elements in all (the product of `dims`).
    pub len: u64,
    /// The extents, outermost first (C order): `[len]` for a 1-D array.
    pub dims: Vec<u64>,
}

impl ArrayDecl {
    /// The extent of dimension `d` (`len` for dimension 0 of a declaration without a shape).
    pub(crate) fn dim(&self, d: usize) -> Option<u64> {
        match self.dims.get(d) {
            Some(&e) => Some(e),
            None if d == 0 && self.dims.is_empty() => Some(self.len),
            None => None,
        }
    }

    /// The shape as C declares it, e.g. `f32[16][17]`.
    pub(crate) fn c_decl(&self) -> String {
        let mut s = self.elem.name().to_string();
        if self.dims.is_empty() {
            s.push_str(&format!("[{}]", self.len));
        }
        for e in &self.dims {
            s.push_str(&format!("[{e}]"));
        }
        s
    }
}

/// An external device function: declared by name and signature, defined in linked code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExternFn {
    pub name: String,
    pub params: Vec<ScalarTy>,
    /// `None` for a function returning nothing.
    pub ret: Option<ScalarTy>,
}

/// A read-only array in constant memory: its element type and bytes (little-endian, as in
/// device memory; `bool` as one byte).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ConstArray {
    pub elem: ScalarTy,
    pub len: u64,
    pub bytes: std::sync::Arc<[u8]>,
}

/// Device code linked with the kernel when it is loaded (by the driver's linker).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LinkData {
    pub kind: LinkKind,
    /// A name for the linker's log (the file's path, or `link_ptx#N`).
    pub name: String,
    pub data: std::sync::Arc<[u8]>,
}

/// The length of constant array `i` of `f` (0 if there is none).
pub(crate) fn const_len(f: &FunctionIr, i: u32) -> u64 {
    f.consts.get(i as usize).map_or(0, |c| c.len)
}

/// A whole function: a kernel, or a device function.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FunctionIr {
    pub name: String,
    pub params: Vec<Param>,
    /// `None` for kernels and void device functions.
    pub ret: Option<ScalarTy>,
    pub values: Vec<ValueDef>,
    /// Each variable's type.
    pub vars: Vec<ScalarTy>,
    pub shared: Vec<ArrayDecl>,
    pub locals: Vec<ArrayDecl>,
    pub uses_dynamic_shared: bool,
    pub body: Vec<Stmt>,
    /// Device functions this one calls (lowered into the same module).
    pub callees: Vec<std::sync::Arc<FunctionIr>>,
    /// Whether device functions should always be inlined.
    pub inline: bool,
    /// Kernels: (most threads per block, fewest blocks per multiprocessor), CUDA's
    /// `__launch_bounds__`.
    pub launch_bounds: Option<(u32, u32)>,
    /// Kernels that call `grid_sync()`: the index of the hidden barrier parameter (two `u32`,
    /// zeroed before each launch); such kernels are launched cooperatively.
    pub grid_barrier: Option<u32>,
    /// External device functions this function calls (`Op::CallExtern`).
    pub externs: Vec<ExternFn>,
    /// Constant-memory arrays (`ArrayRef::Const`).
    pub consts: Vec<ConstArray>,
    /// Device code to link when the kernel is loaded.
    pub links: Vec<LinkData>,
    /// Where each statement was built in the Rust source (outside `Hash` and `Eq`).
    pub lines: SrcLines,
}

impl FunctionIr {
    /// The name of the first external device function (`declare_device`) that `self` or a
    /// function it calls uses, if any.
    pub(crate) fn first_extern(&self) -> Option<String> {
        self.tree().into_iter().find_map(|g| {
            g.values.iter().find_map(|v| match &v.op {
                Op::CallExtern(i, _) => g.externs.get(*i as usize).map(|e| e.name.clone()),
                _ => None,
            })
        })
    }

    /// Calls `f` on every statement of `stmts`, and of the bodies and conditions nested in
    /// them, in order.
    pub(crate) fn each_stmt(stmts: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
        for s in stmts {
            f(s);
            match s {
                Stmt::If {
                    then, otherwise, ..
                } => {
                    Self::each_stmt(then, f);
                    Self::each_stmt(otherwise, f);
                }
                Stmt::For { body, .. } => Self::each_stmt(body, f),
                Stmt::While {
                    cond_stmts, body, ..
                } => {
                    Self::each_stmt(cond_stmts, f);
                    Self::each_stmt(body, f);
                }
                _ => {}
            }
        }
    }

    /// This function and every device function it calls, directly or not (each once).
    pub(crate) fn tree(&self) -> Vec<&FunctionIr> {
        let mut out: Vec<&FunctionIr> = vec![self];
        let mut i = 0;
        while i < out.len() {
            let f = out[i];
            for c in &f.callees {
                if !out.iter().any(|o| std::ptr::eq(*o, &**c)) {
                    out.push(c);
                }
            }
            i += 1;
        }
        out
    }

    /// The byte alignment each parameter's array must have (0 for none): vector accesses need
    /// their full width.
    pub(crate) fn param_alignments(&self) -> Vec<u32> {
        let mut align = vec![0u32; self.params.len()];
        let mut need = |array: &ArrayRef, bytes: u32| {
            if let ArrayRef::Param(i) = array {
                let a = &mut align[*i as usize];
                *a = (*a).max(bytes);
            }
        };
        for v in &self.values {
            if let Op::LoadLane { array, width, .. } = &v.op {
                need(array, v.ty.size() as u32 * *width as u32);
            }
        }
        let values = &self.values;
        Self::each_stmt(&self.body, &mut |s| match s {
            Stmt::StoreVec {
                array, values: vs, ..
            } => {
                let size = vs
                    .first()
                    .map_or(0, |v| values[v.0 as usize].ty.size() as u32);
                need(array, size * vs.len() as u32);
            }
            // `cp.async` reads its bytes from an address aligned to their number.
            Stmt::AsyncCopy(AsyncCopy::Copy { src, bytes, .. }) => need(src, *bytes as u32),
            _ => {}
        });
        align
    }
}
