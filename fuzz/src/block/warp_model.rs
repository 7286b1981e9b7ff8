//! The warp intrinsics' model: one lane's result from the values of the lanes of its mask.

use super::super::tree::Val;
use super::WarpOp;

/// Lane `l`'s result of `op` over the lanes of mask `m` (which holds `l`), whose values (or
/// predicates) are `vals` (`None`: left open). `idx_src` is `shfl_sync`'s source lane for this
/// lane. `None` where the result depends on an open value (or a source lane outside the mask,
/// which the generator never makes).
pub fn lane_result(
    op: &WarpOp,
    l: usize,
    m: u32,
    vals: &[Option<Val>; 32],
    idx_src: Option<usize>,
) -> Option<Val> {
    let lanes = (0..32).filter(|o| m >> o & 1 == 1);
    let src = |s: usize| Some(s).filter(|s| m >> s & 1 == 1).and_then(|s| vals[s]);
    let preds = || -> Option<Vec<(usize, bool)>> {
        lanes
            .clone()
            .map(|o| Some((o, vals[o]? == Val::Bool(true))))
            .collect()
    };
    // `match` compares bits: where either value is a NaN, whose bits Rust leaves open (the
    // GPU makes one canonical NaN where x86 keeps or sets others), the result is open (found
    // on an H200: lanes of NaNs from different inputs matched on the device, not in the model).
    let nan =
        |v: Val| matches!(v, Val::F32(x) if x.is_nan()) || matches!(v, Val::F64(x) if x.is_nan());
    let bits_eq = |a: Option<Val>, b: Option<Val>| {
        let (a, b) = (a?, b?);
        if nan(a) || nan(b) {
            return None;
        }
        Some(a.to_bits() == b.to_bits())
    };
    match op {
        WarpOp::ShflIdx(_) => src(idx_src?),
        WarpOp::ShflUp(d) => {
            let d = *d as usize;
            src(if l >= d { l - d } else { l })
        }
        WarpOp::ShflDown(d) => {
            let d = *d as usize;
            src(if l + d <= 31 { l + d } else { l })
        }
        WarpOp::ShflXor(x) => src(l ^ *x as usize),
        WarpOp::All => preds().map(|p| Val::Bool(p.iter().all(|x| x.1))),
        WarpOp::Any => preds().map(|p| Val::Bool(p.iter().any(|x| x.1))),
        WarpOp::Eq => preds().map(|p| Val::Bool(p.iter().all(|x| x.1) || p.iter().all(|x| !x.1))),
        WarpOp::Ballot => {
            preds().map(|p| Val::U32(p.iter().filter(|x| x.1).map(|x| 1u32 << x.0).sum()))
        }
        WarpOp::MatchAny => {
            let mut r = 0u32;
            for o in lanes {
                if bits_eq(vals[l], vals[o])? {
                    r |= 1 << o;
                }
            }
            Some(Val::U32(r))
        }
        WarpOp::MatchAll => {
            let mut same = true;
            for o in lanes {
                same &= bits_eq(vals[l], vals[o])?;
            }
            Some(Val::U32(if same { m } else { 0 }))
        }
    }
}
