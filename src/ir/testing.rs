//! Kernels written directly as IR, for the unit tests of what executes IR (the simulator),
//! which sit below the builder in the layering and so cannot use it. Each function gives the
//! IR that the builder records for the Rust code in its doc comment.

use super::*;

/// Records values and statements in order, as the builder does.
#[derive(Default)]
struct Recorder {
    values: Vec<ValueDef>,
    body: Vec<Stmt>,
}

impl Recorder {
    /// Defines a value and records its `Let`.
    fn let_(&mut self, ty: ScalarTy, op: Op) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(ValueDef { ty, op });
        self.body.push(Stmt::Let(id));
        id
    }

    /// `k.grid1()`: `ctaid.x * ntid.x + tid.x` in u64.
    fn grid1(&mut self) -> ValueId {
        let wide = |r: &mut Recorder, s: Sreg| {
            let v = r.let_(ScalarTy::U32, Op::Special(s));
            r.let_(ScalarTy::U64, Op::Cast(v))
        };
        let ctaid = wide(self, Sreg::Ctaid(0));
        let ntid = wide(self, Sreg::Ntid(0));
        let base = self.let_(ScalarTy::U64, Op::Binary(BinOp::Mul, ctaid, ntid));
        let tid = wide(self, Sreg::Tid(0));
        self.let_(ScalarTy::U64, Op::Binary(BinOp::Add, base, tid))
    }

    /// A kernel of `(x: &[f32], out: &mut [f32])` with what was recorded.
    fn kernel(self, name: &str) -> FunctionIr {
        let array = |mutable| Param::Array {
            elem: ScalarTy::F32,
            ndim: 1,
            mutable,
        };
        FunctionIr {
            name: name.to_string(),
            params: vec![array(false), array(true)],
            ret: None,
            values: self.values,
            vars: Vec::new(),
            shared: Vec::new(),
            locals: Vec::new(),
            uses_dynamic_shared: false,
            body: self.body,
            callees: Vec::new(),
            inline: true,
            launch_bounds: None,
            grid_barrier: None,
            externs: Vec::new(),
            consts: Vec::new(),
            links: Vec::new(),
            lines: SrcLines::default(),
        }
    }
}

/// ```ignore
/// Kernel::<(&[f32], &mut [f32])>::build(name, |k, (x, out)| {
///     let i = k.grid1();
///     k.if_(i.lt(out.len()), |_| out.set(i, x.at(i)));
/// })
/// ```
pub(crate) fn copy_kernel(name: &str) -> std::sync::Arc<FunctionIr> {
    let mut r = Recorder::default();
    let i = r.grid1();
    let len = r.let_(
        ScalarTy::U64,
        Op::ArrayDim {
            array: ArrayRef::Param(1),
            dim: 0,
        },
    );
    let cond = r.let_(ScalarTy::Bool, Op::Cmp(CmpOp::Lt, i, len));
    let outer = std::mem::take(&mut r.body);
    let at = r.let_(ScalarTy::I64, Op::Cast(i));
    let x = r.let_(
        ScalarTy::F32,
        Op::Load {
            array: ArrayRef::Param(0),
            index: at,
        },
    );
    let at_out = r.let_(ScalarTy::I64, Op::Cast(i));
    r.body.push(Stmt::Store {
        array: ArrayRef::Param(1),
        index: at_out,
        value: x,
    });
    let then = std::mem::replace(&mut r.body, outer);
    r.body.push(Stmt::If {
        cond,
        then,
        otherwise: Vec::new(),
    });
    std::sync::Arc::new(r.kernel(name))
}

/// ```ignore
/// Kernel::<(&[f32], &mut [f32])>::build(name, |k, (x, out)| {
///     let i = k.grid1();
///     let v: [Expr<f32>; 4] = x.load_lanes::<4>(i);
///     out.set(i, v[0] + v[1] + v[2] + v[3]);
/// })
/// ```
pub(crate) fn vec4_sum_kernel(name: &str) -> std::sync::Arc<FunctionIr> {
    let mut r = Recorder::default();
    let i = r.grid1();
    let at = r.let_(ScalarTy::I64, Op::Cast(i));
    let lanes: Vec<ValueId> = (0..4)
        .map(|lane| {
            r.let_(
                ScalarTy::F32,
                Op::LoadLane {
                    array: ArrayRef::Param(0),
                    index: at,
                    lane,
                    width: 4,
                },
            )
        })
        .collect();
    let s01 = r.let_(ScalarTy::F32, Op::Binary(BinOp::Add, lanes[0], lanes[1]));
    let s012 = r.let_(ScalarTy::F32, Op::Binary(BinOp::Add, s01, lanes[2]));
    let sum = r.let_(ScalarTy::F32, Op::Binary(BinOp::Add, s012, lanes[3]));
    let at_out = r.let_(ScalarTy::I64, Op::Cast(i));
    r.body.push(Stmt::Store {
        array: ArrayRef::Param(1),
        index: at_out,
        value: sum,
    });
    std::sync::Arc::new(r.kernel(name))
}

/// ```ignore
/// Kernel::<(&[f32], &mut [f32])>::build(name, |k, (x, out)| {
///     let tile = k.shared_array2::<f32>(4, 4);
///     let t = k.thread_idx().x; // launched with 16 threads
///     let (r, c) = (t / 4, t % 4 + shift);
///     tile.set2(r, c, x.at(t));
///     out.set(t, tile.at2(r, c));
/// })
/// ```
pub(crate) fn shared_2d_kernel(name: &str, shift: u32) -> std::sync::Arc<FunctionIr> {
    let mut r = Recorder::default();
    let t = r.let_(ScalarTy::U32, Op::Special(Sreg::Tid(0)));
    let four = r.let_(ScalarTy::U32, Op::Const(4));
    let row = r.let_(ScalarTy::U32, Op::Binary(BinOp::Div, t, four));
    let col0 = r.let_(ScalarTy::U32, Op::Binary(BinOp::Rem, t, four));
    let sh = r.let_(ScalarTy::U32, Op::Const(shift as u64));
    let col = r.let_(ScalarTy::U32, Op::Binary(BinOp::Add, col0, sh));
    let (ri, ci) = (
        r.let_(ScalarTy::I64, Op::Cast(row)),
        r.let_(ScalarTy::I64, Op::Cast(col)),
    );
    let nd = |r: &mut Recorder| {
        let d0 = r.let_(ScalarTy::I64, Op::Const(4));
        let d1 = r.let_(ScalarTy::I64, Op::Const(4));
        r.let_(
            ScalarTy::I64,
            Op::NdIndex {
                array: ArrayRef::Shared(0),
                indices: vec![ri, ci],
                dims: vec![d0, d1],
            },
        )
    };
    let ti = r.let_(ScalarTy::I64, Op::Cast(t));
    let x = r.let_(
        ScalarTy::F32,
        Op::Load {
            array: ArrayRef::Param(0),
            index: ti,
        },
    );
    let at = nd(&mut r);
    r.body.push(Stmt::Store {
        array: ArrayRef::Shared(0),
        index: at,
        value: x,
    });
    let at = nd(&mut r);
    let v = r.let_(
        ScalarTy::F32,
        Op::Load {
            array: ArrayRef::Shared(0),
            index: at,
        },
    );
    r.body.push(Stmt::Store {
        array: ArrayRef::Param(1),
        index: ti,
        value: v,
    });
    let mut f = r.kernel(name);
    f.shared.push(ArrayDecl {
        elem: ScalarTy::F32,
        len: 16,
        dims: vec![4, 4],
    });
    std::sync::Arc::new(f)
}
