//! The kernels of [`Elementwise`](super::Elementwise)'s launch paths: contiguous with vector
//! accesses, suffix broadcasting, and the general strided path.

use super::elementwise::{declare_scalar, Body, EwInputs, EwOutputs};
use crate::codegen::{Expr, KernelBuilder};

/// The contiguous variant: `W` lanes per thread with vector accesses, then a scalar tail.
pub(super) fn contiguous<I: EwInputs, O: EwOutputs, const W: usize>(
    k: &KernelBuilder,
    f: &Body<I, O>,
) {
    let ins = I::declare();
    let outs = O::declare();
    let n = declare_scalar::<u64>();
    let i = k.grid1();
    if W == 1 {
        k.if_(i.lt(n), |_| {
            let idx: Expr<i64> = i.cast();
            let [e] = I::lanes::<1>(&ins, idx);
            O::store_at(&outs, idx, f(e));
        });
        return;
    }
    let nv = n / W as u64;
    k.if_(i.lt(nv), |_| {
        let v: Expr<i64> = i.cast();
        let lanes = I::lanes::<W>(&ins, v);
        O::store::<W>(&outs, v, lanes.map(f));
    });
    let t = nv * W as u64 + i;
    k.if_(t.lt(n), |_| {
        let idx: Expr<i64> = t.cast();
        let [e] = I::lanes::<1>(&ins, idx);
        O::store_at(&outs, idx, f(e));
    });
}

/// The suffix-broadcast variant: vector `v` of the output reads vector `v % m_j` of array
/// input `j` (moduli in vectors).
pub(super) fn suffix<I: EwInputs, O: EwOutputs, const W: usize>(k: &KernelBuilder, f: &Body<I, O>) {
    let ins = I::declare();
    let outs = O::declare();
    let nv = declare_scalar::<u64>();
    let arrays = I::elem_sizes().iter().filter(|s| s.is_some()).count();
    let moduli: Vec<Expr<u64>> = (0..arrays).map(|_| declare_scalar::<u64>()).collect();
    let i = k.grid1();
    k.if_(i.lt(nv), |_| {
        let vs: Vec<Expr<i64>> = moduli.iter().map(|&m| (i % m).cast::<i64>()).collect();
        let lanes = I::lanes_each::<W>(&ins, &vs, i.cast());
        O::store::<W>(&outs, i.cast(), lanes.map(f));
    });
}

/// The strided variant for outputs of `rank` dimensions: broadcast inputs, and strided views
/// as inputs or outputs. Every array (inputs, then outputs) has an element-0 offset from the
/// start of the memory it spans and `rank` element strides (0 along broadcast dimensions).
pub(super) fn strided<I: EwInputs, O: EwOutputs>(k: &KernelBuilder, f: &Body<I, O>, rank: usize) {
    let ins = I::declare();
    let outs = O::declare();
    let shape: Vec<Expr<u64>> = (0..rank).map(|_| declare_scalar::<u64>()).collect();
    let arrays = I::elem_sizes().iter().filter(|s| s.is_some()).count() + O::elem_sizes().len();
    let lays: Vec<(Expr<i64>, Vec<Expr<i64>>)> = (0..arrays)
        .map(|_| {
            let off = declare_scalar::<i64>();
            (off, (0..rank).map(|_| declare_scalar::<i64>()).collect())
        })
        .collect();
    let total = shape.iter().skip(1).fold(shape[0], |a, &d| a * d);
    let i = k.grid1();
    k.if_(i.lt(total), |_| {
        let mut rest = i;
        let mut offs: Vec<Expr<i64>> = lays.iter().map(|l| l.0).collect();
        for d in (0..rank).rev() {
            let idx: Expr<i64> = (rest % shape[d]).cast();
            if d > 0 {
                rest = rest / shape[d];
            }
            for (o, l) in offs.iter_mut().zip(&lays) {
                *o = *o + idx * l.1[d];
            }
        }
        let outs_at = offs.split_off(arrays - O::elem_sizes().len());
        O::store_each(&outs, &outs_at, f(I::at_offsets(&ins, &offs, i.cast())));
    });
}
