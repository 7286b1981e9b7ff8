//! The warpgroup's matrix multiply-accumulate (PTX `wgmma.mma_async`, sm_90a): four warps
//! together compute a 64×N tile `D = A·B + D` from operands in shared memory, asynchronously,
//! with f32 accumulators in registers.

use std::marker::PhantomData;

use half::{bf16, f16};
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;

use super::super::array::{DArray, Index};
use super::super::builder::{with_state, Kind};
use super::super::control::KernelBuilder;
use super::super::expr::{Expr, Var};
use super::super::lower::asm;
use super::super::lower::Lowerer;
use super::super::mma::{FragA, MmaInput};
use crate::error::Result;
use crate::ir::hopper::{self, SmemDesc, WgmmaA};
use crate::ir::mma::MmaKind;
use crate::ir::{ArrayRef, HopperOp, HopperStmt, Op, Stmt, ValueId};

mod sealed {
    pub trait Sealed {}
}

/// An input element type of the warpgroup MMA: `half::f16` and `half::bf16` (K = 16 per
/// instruction), `f32` computed as tf32 (K = 8, both operands K-major; the tensor cores ignore
/// the low 13 mantissa bits of each f32 in shared memory — truncation, where `mma.sync`'s
/// operands are rounded to nearest first: round the tile when it is written if that matters);
/// f32 accumulators; and the 8-bit floats [`F8E4M3`](crate::F8E4M3) and
/// [`F8E5M2`](crate::F8E5M2) (K = 32, both operands K-major).
pub trait WgmmaInput: MmaInput + sealed::Sealed {}
impl sealed::Sealed for f16 {}
impl sealed::Sealed for bf16 {}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for crate::ir::F8E4M3 {}
impl sealed::Sealed for crate::ir::F8E5M2 {}
impl WgmmaInput for f16 {}
impl WgmmaInput for bf16 {}
impl WgmmaInput for f32 {}
impl WgmmaInput for crate::ir::F8E4M3 {}
impl WgmmaInput for crate::ir::F8E5M2 {}

fn kind_of<T: MmaInput>() -> MmaKind {
    match T::TY {
        crate::ir::ScalarTy::BF16 => MmaKind::Bf16,
        crate::ir::ScalarTy::F16 => MmaKind::F16,
        crate::ir::ScalarTy::F8E4M3 => MmaKind::E4M3,
        crate::ir::ScalarTy::F8E5M2 => MmaKind::E5M2,
        _ => MmaKind::Tf32,
    }
}

/// Which dimension of an operand tile is contiguous in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WgmmaMajor {
    /// K is contiguous: A stored as rows of K (row-major A), B as columns of K (B's
    /// transpose row-major) — the layout every type supports.
    K,
    /// M (for A) or N (for B) is contiguous: row-major B, column-major A; f16/bf16 only.
    MN,
}

/// The swizzle of an operand tile (as the TMA copy that wrote it; see
/// [`TensorMapSwizzle`](crate::memory::TensorMapSwizzle)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WgmmaSwizzle {
    /// No swizzle: 8×16-byte core matrices.
    None,
    /// 32-byte swizzle (rows of 32 bytes).
    B32,
    /// 64-byte swizzle (rows of 64 bytes).
    B64,
    /// 128-byte swizzle (rows of 128 bytes, 8-row groups of 1024 bytes).
    B128,
}

impl WgmmaSwizzle {
    fn bits(self) -> u32 {
        match self {
            WgmmaSwizzle::None => 0,
            WgmmaSwizzle::B32 => 1,
            WgmmaSwizzle::B64 => 2,
            WgmmaSwizzle::B128 => 3,
        }
    }
}

/// An operand tile of a wgmma in the dynamic shared memory: its matrix descriptor (a u64
/// value) and its major.
///
/// The layouts are CUTLASS's canonical ones (`make_gmma_desc`). With a swizzle (what a TMA copy
/// with that swizzle writes): K-major, rows of `16·W` bytes (`W` = 2, 4, 8 for 32, 64, 128-byte
/// swizzles) holding K, 8-row groups `sbo` bytes apart (`lbo` unused); MN-major, rows of `16·W`
/// bytes holding M or N, one row per k, 8-k groups `sbo` bytes apart and blocks of the
/// contiguous dimension `lbo` bytes apart. Without a swizzle, 8×16-byte core matrices: K-major,
/// `lbo` between the two core matrices along K and `sbo` between 8-row groups; MN-major, `sbo`
/// between core matrices along M/N and `lbo` between the two along K.
pub struct SmemMatrix<T> {
    desc: Expr<u64>,
    major: WgmmaMajor,
    tag: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for SmemMatrix<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SmemMatrix<T> {}

impl<T: WgmmaInput> SmemMatrix<T> {
    /// The tile starting at element `at` of the dynamic shared memory view `tile` (16-byte
    /// aligned; a 128-byte swizzled tile on a 1024-byte boundary), with the given major,
    /// swizzle and byte offsets (see the type's docs).
    #[track_caller]
    pub fn new<A>(
        tile: &DArray<T, 1, A>,
        at: impl Index,
        major: WgmmaMajor,
        swizzle: WgmmaSwizzle,
        lbo: u32,
        sbo: u32,
    ) -> SmemMatrix<T> {
        let _at = crate::codegen::srcloc::at();
        let at = at.to_index();
        let array = tile.array;
        with_state(|s| {
            if s.tag != tile.tag {
                s.error(
                    Kind::ForeignValue,
                    format!(
                        "in `{}`: a wgmma operand in an array of another kernel",
                        s.f.name
                    ),
                );
            } else if !matches!(array, ArrayRef::DynShared(_)) {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: a wgmma operand lives in the dynamic shared memory (its \
                         descriptor holds a shared-window address), but this tile is a kernel \
                         parameter, a local or a static shared array; view the dynamic shared \
                         memory (`dynamic_shared`) and place the tile there",
                        s.f.name
                    ),
                );
            } else if lbo % 16 != 0 || sbo % 16 != 0 || lbo >= 1 << 18 || sbo >= 1 << 18 {
                s.error(
                    Kind::Hopper,
                    format!(
                        "in `{}`: a wgmma descriptor's byte offsets are multiples of 16 below \
                         256 KiB, but lbo = {lbo}, sbo = {sbo}",
                        s.f.name
                    ),
                );
            }
        });
        let addr: Expr<u32> = Expr::record(
            Op::Hopper(HopperOp::SharedAddr {
                array,
                index: ValueId(at.id),
            }),
            &[at.raw()],
            false,
        );
        let fixed = SmemDesc {
            start: 0,
            lbo,
            sbo,
            swizzle_bits: swizzle.bits(),
        }
        .encode();
        let start = ((addr & 0x3ffffu32) >> 4u32).cast::<u64>();
        SmemMatrix {
            desc: start | fixed,
            major,
            tag: tile.tag,
            _t: PhantomData,
        }
    }

    /// The same tile moved by `bytes` (a multiple of 16): e.g. the next k-step inside a
    /// K-major swizzled tile (32 bytes per wgmma's K), or the next stage.
    #[track_caller]
    pub fn advance(&self, bytes: impl Into<Expr<u32>>) -> SmemMatrix<T> {
        let _at = crate::codegen::srcloc::at();
        SmemMatrix {
            desc: self.desc + (bytes.into() >> 4u32).cast::<u64>(),
            ..*self
        }
    }

    /// The descriptor.
    pub fn desc(&self) -> Expr<u64> {
        self.desc
    }
}

/// The address of a tile in the dynamic shared memory.
impl<T: super::super::scalar::Scalar, A> DArray<T, 1, A> {
    /// The shared-window address (a u32 byte address, as `cvta.to.shared` gives) of element
    /// `at` of this view of the dynamic shared memory: to align tiles (a 128-byte swizzled
    /// tile starts on a 1024-byte boundary: round up from `shared_address(0)`, or use
    /// [`aligned_index`](Self::aligned_index)). The dynamic shared memory starts after the
    /// kernel's static shared arrays, on the GPU and on the simulator (which lays them out
    /// 16-byte aligned, as ptxas does).
    #[track_caller]
    pub fn shared_address(&self, at: impl Index) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        let at = at.to_index();
        let array = self.array;
        with_state(|s| {
            if !matches!(array, ArrayRef::DynShared(_)) {
                s.error(
                    Kind::ArrayAccess,
                    format!(
                        "in `{}`: shared_address is for the dynamic shared memory (views from \
                         `dynamic_shared`)",
                        s.f.name
                    ),
                );
            }
        });
        Expr::record(
            Op::Hopper(HopperOp::SharedAddr {
                array,
                index: ValueId(at.id),
            }),
            &[at.raw()],
            false,
        )
    }

    /// The index of the first element of this view of the dynamic shared memory whose
    /// shared-window address is a multiple of `bytes` (a power of two, a multiple of the
    /// element size): where a tile that must start `bytes`-aligned goes, e.g. 1024 for a
    /// 128-byte swizzled TMA/wgmma tile (launch with `bytes` more shared memory to leave room).
    #[track_caller]
    pub fn aligned_index(&self, bytes: u32) -> Expr<u32> {
        let _at = crate::codegen::srcloc::at();
        let mask = bytes - 1;
        ((bytes - (self.shared_address(0u32) & mask)) & mask) / T::TY.size() as u32
    }
}

/// A warpgroup's 64×N f32 accumulator tile: this thread's `N / 2` elements.
#[derive(Clone)]
pub struct WgmmaAcc {
    elems: Vec<Expr<f32>>,
}

impl WgmmaAcc {
    /// An accumulator of zeros for a 64×`n` tile (`n` a multiple of 8 up to 256).
    #[track_caller]
    pub fn zeros(n: u32) -> WgmmaAcc {
        let _at = crate::codegen::srcloc::at();
        let z = Expr::lit(0.0f32);
        WgmmaAcc {
            elems: vec![z; (n / 2) as usize],
        }
    }

    /// The accumulator from this thread's elements, in the hardware's order.
    pub fn from_elems(elems: Vec<Expr<f32>>) -> WgmmaAcc {
        WgmmaAcc { elems }
    }

    /// N: the tile's columns.
    pub fn n(&self) -> u32 {
        2 * self.elems.len() as u32
    }

    /// This thread's elements, in the hardware's order.
    pub fn elems(&self) -> &[Expr<f32>] {
        &self.elems
    }

    /// Variables holding the elements (for an accumulator carried across loop iterations).
    #[track_caller]
    pub fn vars(&self, k: &KernelBuilder) -> Vec<Var<f32>> {
        self.elems.iter().map(|&e| k.var(e)).collect()
    }

    /// The accumulator read from `vars`.
    #[track_caller]
    pub fn from_vars(vars: &[Var<f32>]) -> WgmmaAcc {
        WgmmaAcc {
            elems: vars.iter().map(|v| v.get()).collect(),
        }
    }

    /// Columns `16·chunk..16·chunk + 16` of this 64×N f32 tile converted to `T` (f16 or bf16,
    /// rounded to nearest even) as the A operand of a following
    /// [`wgmma_rs`](KernelBuilder::wgmma_rs): each warp's 16 rows of the chunk are an
    /// `mma.sync` A fragment, and an accumulator's registers already sit where that fragment
    /// wants them, so no data moves between threads. This is how attention's P = softmax(S)
    /// feeds P·V without going through shared memory. tf32 (whose fragment is laid out
    /// differently) and a chunk past N are build errors.
    #[track_caller]
    pub fn frag_a<T: WgmmaInput>(&self, chunk: u32) -> FragA<T> {
        let _at = crate::codegen::srcloc::at();
        let per = FragA::<T>::ELEMS;
        let start = chunk as usize * per;
        if T::K != 16 || start + per > self.elems.len() {
            with_state(|s| {
                s.error(
                    Kind::Hopper,
                    format!(
                        "in `{}`: frag_a::<{}>({chunk}) of a 64×{} accumulator: an accumulator \
                         becomes A fragments of f16 or bf16, 16 columns each (chunks 0..{})",
                        s.f.name,
                        T::TY.name(),
                        self.n(),
                        self.n() / 16
                    ),
                )
            });
            return FragA::from_elems(&vec![Expr::lit(T::from_bits(0)); per]);
        }
        // Pairs of columns, rounded and packed by one instruction each.
        let kind = kind_of::<T>();
        let regs: [Expr<u32>; 4] = std::array::from_fn(|r| {
            let (lo, hi) = (self.elems[start + 2 * r], self.elems[start + 2 * r + 1]);
            let op = HopperOp::PackHalf2 {
                kind,
                lo: ValueId(lo.id),
                hi: ValueId(hi.id),
            };
            Expr::record(Op::Hopper(op), &[lo.raw(), hi.raw()], false)
        });
        FragA::from_regs(regs)
    }

    /// Calls `f(row, col, value)` for each element this thread holds: row in `0..64`, col in
    /// `0..N` of the warpgroup's tile (thread `t` of the warpgroup: warp `t / 32` holds rows
    /// `16·(t / 32)..` as `mma.sync`'s 16×8 accumulator, repeated every 8 columns).
    #[track_caller]
    pub fn for_each(&self, k: &KernelBuilder, mut f: impl FnMut(Expr<u32>, Expr<u32>, Expr<f32>)) {
        let _at = crate::codegen::srcloc::at();
        let (tid, ntid) = (k.thread_idx(), k.block_dim());
        let flat = tid.x + ntid.x * (tid.y + ntid.y * tid.z);
        let lane = flat & 31u32;
        let w = (flat >> 5u32) & 3u32;
        let (g, q) = (lane >> 2u32, lane & 3u32);
        let row0 = w * 16u32 + g;
        let col0 = q * 2u32;
        for (e, &v) in self.elems.iter().enumerate() {
            let (r, c) = hopper::acc_coord(0, e as u32);
            f(row0 + r, col0 + c, v);
        }
    }
}

impl KernelBuilder {
    /// `wgmma.fence.sync.aligned`: before a warpgroup's first wgmma that reads accumulators
    /// written by other instructions (and after writing its shared operands). All 128 threads
    /// of the warpgroup execute it together.
    #[track_caller]
    pub fn wgmma_fence(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::WgmmaFence)));
    }

    /// `wgmma.commit_group.sync.aligned`: the warpgroup's wgmmas since the last commit become
    /// a group, which [`wgmma_wait`](KernelBuilder::wgmma_wait) waits for.
    #[track_caller]
    pub fn wgmma_commit(&self) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| s.push_stmt(Stmt::Hopper(HopperStmt::WgmmaCommit)));
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 regs` (sm_90a): raises (`inc`) or lowers the
    /// register budget of each thread of this warpgroup to `regs` (24 to 256, a multiple of 8):
    /// the producer warps of a warp-specialised kernel give registers to the consumers. Takes
    /// effect in a kernel with launch bounds of one block per multiprocessor.
    #[track_caller]
    pub fn set_max_nreg(&self, inc: bool, regs: u32) {
        let _at = crate::codegen::srcloc::at();
        with_state(|s| {
            if regs % 8 != 0 || !(24..=256).contains(&regs) {
                s.error(
                    Kind::Hopper,
                    format!(
                        "in `{}`: setmaxnreg takes a register count from 24 to 256 in steps of \
                         8, not {regs}",
                        s.f.name
                    ),
                );
                return;
            }
            s.push_stmt(Stmt::Hopper(HopperStmt::SetMaxNReg { inc, regs }))
        });
    }

    /// One warpgroup-wide `D = A·B + (accumulate ? C : 0)` on the tensor cores
    /// (`wgmma.mma_async.sync.aligned.m64nNkK`, sm_90a): A is 64×K and B is K×N (N = `c.n()`,
    /// a multiple of 8 up to 256; K = 16 for f16/bf16, 8 for tf32), both read from shared
    /// memory through their descriptors; `c` is this thread's part of the 64×N f32 tile.
    /// Asynchronous: the result may be read only after [`wgmma_commit`](Self::wgmma_commit)
    /// and a [`wgmma_wait`](Self::wgmma_wait) that covers it, and the operands' shared memory
    /// must not be written before that. All 128 threads of the warpgroup (four consecutive
    /// warps, the first a multiple of 4) execute it together; precede a batch with
    /// [`wgmma_fence`](Self::wgmma_fence).
    #[track_caller]
    pub fn wgmma<T: WgmmaInput>(
        &self,
        a: &SmemMatrix<T>,
        b: &SmemMatrix<T>,
        c: &WgmmaAcc,
        accumulate: impl Into<Expr<bool>>,
    ) -> WgmmaAcc {
        let _at = crate::codegen::srcloc::at();
        let src = WgmmaA::Desc {
            desc: ValueId(a.desc.id),
            mn_major: a.major == WgmmaMajor::MN,
        };
        record_wgmma::<T>(a.tag, src, vec![a.desc.raw()], b, c, accumulate.into())
    }

    /// [`wgmma`](Self::wgmma) with A from registers (the PTX form whose A operand is four
    /// registers per thread): warp `w` of the warpgroup gives rows `16·w..16·w + 16` of the
    /// 64×K A as an `mma.sync` A fragment ([`FragA`]: `FragA::from_fn(k, |r, c| ..)` with the
    /// warp's row offset added, or a fragment computed in registers, as attention's P).
    /// tf32 fragments are rounded to nearest (ties away) first, as `mma.sync`'s operands (and
    /// unlike shared-memory operands, which the tensor cores truncate).
    #[track_caller]
    pub fn wgmma_rs<T: WgmmaInput>(
        &self,
        a: &FragA<T>,
        b: &SmemMatrix<T>,
        c: &WgmmaAcc,
        accumulate: impl Into<Expr<bool>>,
    ) -> WgmmaAcc {
        let _at = crate::codegen::srcloc::at();
        let regs = a.regs();
        let src = WgmmaA::Regs(regs.map(|r| ValueId(r.id)));
        let raws = regs.iter().map(|r| r.raw()).collect();
        record_wgmma::<T>(b.tag, src, raws, b, c, accumulate.into())
    }
}

/// Records a wgmma after its checks: `a_tag` is A's kernel, `a_raws` its operands.
#[track_caller]
fn record_wgmma<T: WgmmaInput>(
    a_tag: u32,
    a: WgmmaA,
    a_raws: Vec<(u32, u32)>,
    b: &SmemMatrix<T>,
    c: &WgmmaAcc,
    scale: Expr<bool>,
) -> WgmmaAcc {
    {
        let kind = kind_of::<T>();
        let n = c.n();
        let a_mn = matches!(a, WgmmaA::Desc { mn_major: true, .. });
        let bad = with_state(|s| {
            let name = s.f.name.clone();
            if a_tag != s.tag || b.tag != s.tag {
                s.error(
                    Kind::ForeignValue,
                    format!("in `{name}`: a wgmma operand of another kernel"),
                );
                return true;
            }
            if !hopper::valid_n(n) {
                s.error(
                    Kind::Hopper,
                    format!(
                        "in `{name}`: a wgmma's N is a multiple of 8 from 8 to 256, but the \
                         accumulator holds a 64×{n} tile"
                    ),
                );
                return true;
            }
            if kind.elem_bits() != 16 && (a_mn || b.major == WgmmaMajor::MN) {
                s.error(
                    Kind::Hopper,
                    format!(
                        "in `{name}`: a {} wgmma reads both operands K-major (the hardware \
                         transposes only 16-bit operands); store the MN-major operand \
                         transposed, or compute in f16/bf16",
                        kind.name()
                    ),
                );
                return true;
            }
            false
        })
        .unwrap_or(true);
        if bad {
            return c.clone();
        }
        let ids: Vec<ValueId> = c.elems.iter().map(|e| ValueId(e.id)).collect();
        let mut raws: Vec<(u32, u32)> = c.elems.iter().map(|e| e.raw()).collect();
        raws.extend(a_raws);
        raws.extend([b.desc.raw(), scale.raw()]);
        let elems = (0..ids.len())
            .map(|e| {
                let op = HopperOp::Wgmma {
                    kind,
                    n: n as u16,
                    a,
                    b: ValueId(b.desc.id),
                    b_mn_major: b.major == WgmmaMajor::MN,
                    scale_d: ValueId(scale.id),
                    c: ids.clone(),
                    elem: e as u16,
                };
                Expr::record(Op::Hopper(op), &raws, true)
            })
            .collect();
        WgmmaAcc { elems }
    }
}

impl KernelBuilder {
    /// `wgmma.wait_group.sync.aligned pending`: waits until at most `pending` of the
    /// warpgroup's committed wgmma groups are in flight, and returns `acc` readable (the
    /// accumulators of the completed wgmmas).
    #[track_caller]
    pub fn wgmma_wait(&self, pending: u32, acc: &WgmmaAcc) -> WgmmaAcc {
        let _at = crate::codegen::srcloc::at();
        let ids: Vec<ValueId> = acc.elems.iter().map(|e| ValueId(e.id)).collect();
        let raws: Vec<(u32, u32)> = acc.elems.iter().map(|e| e.raw()).collect();
        let elems = (0..ids.len())
            .map(|e| {
                let op = HopperOp::WgmmaWait {
                    pending,
                    regs: ids.clone(),
                    elem: e as u16,
                };
                Expr::record(Op::Hopper(op), &raws, true)
            })
            .collect();
        WgmmaAcc { elems }
    }
}

/// Lowers the warpgroup's fence, commit and register budget.
pub(super) fn lower_stmt(lw: &mut Lowerer<'_, '_>, s: &HopperStmt) -> Result<()> {
    let text = match s {
        HopperStmt::WgmmaFence => "wgmma.fence.sync.aligned;".to_string(),
        HopperStmt::WgmmaCommit => "wgmma.commit_group.sync.aligned;".to_string(),
        HopperStmt::SetMaxNReg { inc, regs } => format!(
            "setmaxnreg.{}.sync.aligned.u32 {regs};",
            if *inc { "inc" } else { "dec" }
        ),
        _ => return Err(lw.err("not a wgmma statement")),
    };
    asm(lw, text, "~{memory}".into(), &[], None).map(|_| ())
}

/// Lowers element `elem` of a wgmma or of a wait: element 0 emits the instruction (its
/// results a struct of f32), the others extract from it.
pub(super) fn lower_op<'c>(
    lw: &mut Lowerer<'c, '_>,
    id: ValueId,
    op: &HopperOp,
) -> Result<BasicValueEnum<'c>> {
    let (elem, regs) = match op {
        HopperOp::Wgmma { elem, c, .. } => (*elem, c),
        HopperOp::WgmmaWait { elem, regs, .. } => (*elem, regs),
        _ => return Err(lw.err("not a wgmma")),
    };
    let first = ValueId(id.0 - elem as u32);
    if elem == 0 {
        let r = regs.len();
        let f32t = lw.ctx.f32_type();
        let fields: Vec<BasicTypeEnum> = vec![f32t.into(); r];
        let st = lw.ctx.struct_type(&fields, false);
        let outs: Vec<String> = (0..r).map(|i| format!("${i}")).collect();
        let mut cons: Vec<String> = vec!["=f".to_string(); r];
        let mut args: Vec<BasicValueEnum> = Vec::new();
        // Whether the accumulators are written only (a wgmma that does not accumulate).
        let mut fresh = false;
        let text = match op {
            HopperOp::Wgmma {
                kind,
                n,
                a,
                b,
                b_mn_major,
                scale_d,
                ..
            } => {
                // Operands after the outputs: A (a descriptor, or four registers), B's
                // descriptor, the scale-d flag.
                let a_text = match a {
                    WgmmaA::Desc { desc, .. } => {
                        args.push(lw.v(*desc)?);
                        cons.push("l".to_string());
                        format!("${r}")
                    }
                    WgmmaA::Regs(regs) => {
                        for x in regs {
                            let v = lw.v(*x)?;
                            // tf32 from registers: rounded to nearest first, as mma.sync's.
                            let v = if *kind == MmaKind::Tf32 {
                                let f =
                                    lw.b.build_bit_cast(v, lw.ctx.f32_type(), "")
                                        .map_err(|e| lw.err(e.to_string()))?;
                                lw.call(
                                    "llvm.nvvm.f2tf32.rna",
                                    Some(lw.ctx.i32_type().into()),
                                    &[f],
                                )?
                                .ok_or_else(|| lw.err("f2tf32 returned nothing"))?
                            } else {
                                v
                            };
                            args.push(v);
                            cons.push("r".to_string());
                        }
                        format!("{{${}, ${}, ${}, ${}}}", r, r + 1, r + 2, r + 3)
                    }
                };
                let b_at = r + args.len();
                args.push(lw.v(*b)?);
                cons.push("l".to_string());
                // A constant scale-d is an immediate; with `accumulate` false the accumulators
                // are outputs only (not read), so ptxas sees no register the wgmma depends on.
                let constant = match lw.f.values.get(scale_d.0 as usize).map(|d| &d.op) {
                    Some(crate::ir::Op::Const(c)) => Some(*c != 0),
                    _ => None,
                };
                fresh = constant == Some(false);
                let pred = match constant {
                    Some(c) => (c as u32).to_string(),
                    None => {
                        let sd = lw.v(*scale_d)?.into_int_value();
                        let sd =
                            lw.b.build_int_z_extend(sd, lw.ctx.i32_type(), "")
                                .map_err(|e| lw.err(e.to_string()))?;
                        args.push(sd.into());
                        cons.push("r".to_string());
                        "p".to_string()
                    }
                };
                let (ty, k) = (kind.name(), hopper::wgmma_k(*kind));
                // The transpose immediates (16-bit types only): A's only from shared memory.
                let tail = match (kind, a) {
                    (k, _) if k.elem_bits() != 16 => String::new(),
                    (_, WgmmaA::Desc { mn_major, .. }) => {
                        format!(", {}, {}", *mn_major as u32, *b_mn_major as u32)
                    }
                    (_, WgmmaA::Regs(_)) => format!(", {}", *b_mn_major as u32),
                };
                let set = if constant.is_some() {
                    String::new()
                } else {
                    format!(".reg .pred p; setp.ne.b32 p, ${}, 0; ", b_at + 1)
                };
                format!(
                    "{{ {set}wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ty}.{ty} {{{}}}, {a_text}, ${b_at}, {pred}, 1, 1{tail}; }}",
                    outs.join(", "),
                )
            }
            HopperOp::WgmmaWait { pending, .. } => {
                format!("wgmma.wait_group.sync.aligned {pending};")
            }
            _ => unreachable!(),
        };
        if !fresh {
            for (i, &c) in regs.iter().enumerate() {
                args.push(lw.v(c)?);
                cons.push(i.to_string());
            }
        }
        cons.push("~{memory}".to_string());
        let v = asm(lw, text, cons.join(","), &args, Some(st.into()))?
            .ok_or_else(|| lw.err("wgmma gave no value"))?
            .into_struct_value();
        lw.last_multi = Some((first, v));
    }
    let Some((key, v)) = lw.last_multi else {
        return Err(lw.err("a wgmma element without its instruction"));
    };
    if key != first {
        return Err(lw.err("a wgmma element apart from its instruction"));
    }
    lw.b.build_extract_value(v, elem as u32, "")
        .map_err(|e| lw.err(e.to_string()))
}
