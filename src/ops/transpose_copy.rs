//! Strided copies whose source and destination are contiguous along different axes (a
//! transposed view made contiguous, a row-major matrix copied column-major): 32×32 tiles
//! through shared memory, so that the reads run along the source's contiguous axis and the
//! writes along the destination's. The elementwise copy would read or write one side with a
//! stride, at a fraction of the copy rate.

use std::sync::OnceLock;

use ndarray::Ix1;

use crate::codegen::{Kernel, Scalar};
use crate::error::Result;
use crate::memory::{DeviceView, DeviceViewMut};
use crate::module::LaunchConfig;
use crate::stream::Stream;

/// Elements per tile side.
const TILE: u32 = 32;
/// Rows of threads per block (each thread copies `TILE / ROWS` elements each way).
const ROWS: u32 = 8;
/// Blocks along z per launch.
const MAX_Z: usize = 65_535;

/// `(src, dst, ni, nj, si, sj, sb, di, dj, db, b0)`: words `[b][i][j]` at `b·sb + i·si + j·sj`
/// in `src` go to `b·db + i·di + j·dj` in `dst`, for batches `b0 + blockIdx.z`; `i` is the
/// source's contiguous axis, `j` the destination's.
type Params<W> = (
    &'static [W],
    &'static mut [W],
    u32,
    u32,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u32,
);

fn kernel<W: Scalar>(
    slot: &'static OnceLock<Result<Kernel<Params<W>>>>,
) -> Result<&'static Kernel<Params<W>>> {
    slot.get_or_init(|| {
        let name = format!("transpose_copy_{}", W::TY.name());
        Kernel::<Params<W>>::build(
            &name,
            |k, (src, dst, ni, nj, si, sj, sb, di, dj, db, b0)| {
                let tile = k.shared_array2::<W>(TILE as usize, TILE as usize + 1);
                let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
                let (i0, j0) = (k.block_idx().x * TILE, k.block_idx().y * TILE);
                let b = (k.block_idx().z + b0).cast::<u64>();
                let wide = |x: crate::codegen::Expr<u32>| x.cast::<u64>();
                // Read: consecutive threads along i (the source's contiguous axis).
                for r in 0..TILE / ROWS {
                    let (i, j) = (i0 + tx, j0 + ty + r * ROWS);
                    k.if_(i.lt(ni).and(j.lt(nj)), |_| {
                        let at = b * sb + wide(i) * si + wide(j) * sj;
                        tile.set2(ty + r * ROWS, tx, src.at(at));
                    });
                }
                k.syncthreads();
                // Write: consecutive threads along j (the destination's contiguous axis).
                for r in 0..TILE / ROWS {
                    let (i, j) = (i0 + ty + r * ROWS, j0 + tx);
                    k.if_(i.lt(ni).and(j.lt(nj)), |_| {
                        let at = b * db + wide(i) * di + wide(j) * dj;
                        dst.set(at, tile.at2(tx, ty + r * ROWS));
                    });
                }
            },
        )
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Copies `shape` words of `w` bytes from `src` (strides `s`, in words) to `dst` (strides
/// `d`) through tiles, if the copy is a transpose this handles: 2 or 3 axes, non-negative
/// strides, the source and the destination each with a unit-stride axis, different ones,
/// extents that fit 32 bits. Returns whether it copied (`false`: use the general copy).
pub(crate) fn try_copy(
    stream: &Stream,
    (src, dst): (u64, u64),
    shape: &[usize],
    (s, d): (&[usize], &[usize]),
    w: usize,
) -> Result<bool> {
    let rank = shape.len();
    let signed = |v: &[usize]| v.iter().any(|&x| (x as isize) < 0);
    if !(2..=3).contains(&rank) || signed(s) || signed(d) {
        return Ok(false);
    }
    let unit = |st: &[usize]| (0..rank).find(|&a| st[a] == 1 && shape[a] > 1);
    let (Some(i), Some(j)) = (unit(s), unit(d)) else {
        return Ok(false);
    };
    if i == j || shape[i] > u32::MAX as usize || shape[j] > u32::MAX as usize {
        return Ok(false);
    }
    let bax = (0..rank).find(|&a| a != i && a != j);
    let (nb, sb, db) = bax.map_or((1, 0, 0), |a| (shape[a], s[a], d[a]));
    // Words from the first to the last the view touches (its strides are non-negative).
    let span = |st: &[usize]| (crate::memory::layout::span(shape, st).1 + 1) as usize;
    let ctx = stream.context();
    let cfg = |z: usize| {
        LaunchConfig::new(
            (
                (shape[i] as u32).div_ceil(TILE),
                (shape[j] as u32).div_ceil(TILE),
                z as u32,
            ),
            (TILE, ROWS, 1),
        )
    };
    macro_rules! go {
        ($W:ty) => {{
            static K: OnceLock<Result<Kernel<Params<$W>>>> = OnceLock::new();
            let k = kernel::<$W>(&K)?;
            let sv = DeviceView::<$W, Ix1>::from_parts(ctx, src, Ix1(span(s)));
            let mut dv = DeviceViewMut::<$W, Ix1>::from_parts(ctx, dst, Ix1(span(d)));
            let mut b0 = 0;
            while b0 < nb {
                let z = (nb - b0).min(MAX_Z);
                k.launch(
                    stream,
                    cfg(z),
                    (
                        &sv,
                        &mut dv,
                        shape[i] as u32,
                        shape[j] as u32,
                        s[i] as u64,
                        s[j] as u64,
                        sb as u64,
                        d[i] as u64,
                        d[j] as u64,
                        db as u64,
                        b0 as u32,
                    ),
                )?;
                b0 += z;
            }
        }};
    }
    match w {
        8 => go!(u64),
        4 => go!(u32),
        2 => go!(u16),
        _ => go!(u8),
    }
    Ok(true)
}
