//! Operands the Hopper engine's TMA cannot read as given, copied first: a tf32 or 8-bit
//! operand that is not K-major (wgmma reads them K-major only: a row-major B, a column-major A)
//! is copied transposed, and an operand whose start, leading dimension or batch stride is not
//! 16-byte aligned (odd sizes) is copied with its leading dimension padded. One strided copy
//! per operand at the copy rate, into memory ordered on the stream (freed after the product),
//! instead of falling back to the mma.sync pipeline.

use ndarray::IxDyn;

use super::hopper::{layouts_ok, tma_ok};
use super::shape::{Operand, Problem};
use super::MatmulConfig;
use crate::error::Result;
use crate::memory::scratch::Scratch;
use crate::memory::{DeviceCopy, Layout};
use crate::ops::strided_copy::copy_strided;
use crate::stream::Stream;

/// `p` with the operands that configuration `cfg`'s engine cannot read replaced by staged
/// copies (and the scratch memory holding them, to drop after the launch); `p` itself where
/// nothing needs staging, or where a copy would not help (extents TMA cannot address).
pub(super) fn staged<'s, T: DeviceCopy>(
    stream: &'s Stream,
    p: &Problem,
    cfg: &MatmulConfig,
) -> Result<(Problem, Vec<Scratch<'s, T>>)> {
    let size = std::mem::size_of::<T>();
    let mut out = *p;
    let mut held = Vec::new();
    if !cfg.engine.is_hopper() || (tma_ok(&p.a) && tma_ok(&p.b) && layouts_ok(&p.a, &p.b, size)) {
        return Ok((out, held));
    }
    // A is K-major when row-major (K = its columns), B when column-major (K = its rows).
    for (o, k_major_is_row) in [(&mut out.a, true), (&mut out.b, false)] {
        let row_major = if size != 2 {
            k_major_is_row
        } else {
            o.row_major
        };
        if tma_ok(o) && o.row_major == row_major {
            continue;
        }
        let (s, staged) = stage::<T>(stream, o, row_major)?;
        if !tma_ok(&staged) {
            return Ok((*p, Vec::new()));
        }
        *o = staged;
        held.push(s);
    }
    Ok((out, held))
}

/// Copies operand `o` into new memory, row-major or column-major as asked, its leading
/// dimension rounded up to a whole number of 16 bytes.
fn stage<'s, T: DeviceCopy>(
    stream: &'s Stream,
    o: &Operand,
    row_major: bool,
) -> Result<(Scratch<'s, T>, Operand)> {
    let size = std::mem::size_of::<T>();
    let per = 16 / size;
    let batch = if o.bs == 0 { 1 } else { o.batch };
    // The contiguous extent (columns when row-major), padded.
    let (inner, outer) = if row_major {
        (o.cols, o.rows)
    } else {
        (o.rows, o.cols)
    };
    let ld = inner.div_ceil(per) * per;
    let bs = ld * outer;
    let scratch = Scratch::<T>::new(stream, batch * bs)?;
    let (rs, cs) = if o.row_major { (o.ld, 1) } else { (1, o.ld) };
    let dim = IxDyn(&[batch, o.rows, o.cols]);
    let src = Layout {
        ptr: o.ptr,
        dim: dim.clone(),
        strides: IxDyn(&[o.bs, rs, cs]),
    };
    let (drs, dcs) = if row_major { (ld, 1) } else { (1, ld) };
    let dst = Layout {
        ptr: scratch.ptr(),
        dim,
        strides: IxDyn(&[bs, drs, dcs]),
    };
    copy_strided(stream, &src, &dst, size)?;
    let staged = Operand {
        ptr: scratch.ptr(),
        size,
        batch: o.batch,
        rows: o.rows,
        cols: o.cols,
        row_major,
        ld,
        bs: if o.bs == 0 { 0 } else { bs },
    };
    Ok((scratch, staged))
}
