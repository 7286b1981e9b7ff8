//! Copies between strided device views of any element type: an identity [`Elementwise`] on
//! words of the element's size (or on a trailing axis of words for other sizes), through its
//! strided path; and fills of strided views (a scalar input broadcast to the view).

use std::sync::OnceLock;

use ndarray::Dimension;

use super::elementwise::{ArgInfo, Elem, Elementwise, Scalar};
use crate::codegen::{Expr, Scalar as ScalarType};
use crate::error::{Error, Result};
use crate::memory::Layout;
use crate::stream::Stream;

type Copy<W> = Elementwise<(Elem<W>,), Expr<W>>;

fn copy_kernel<W: ScalarType>(
    slot: &'static OnceLock<Result<Copy<W>>>,
) -> Result<&'static Copy<W>> {
    slot.get_or_init(|| Copy::<W>::new(&format!("strided_copy_{}", W::TY.name()), |(x,)| x))
        .as_ref()
        .map_err(Clone::clone)
}

/// The layout in words of `w` bytes of elements of `elem` bytes (`elem % w == 0`): strides
/// scaled, and a trailing axis of `elem / w` words when an element is more than one word.
fn in_words<D: Dimension>(lay: &Layout<D>, elem: usize, w: usize) -> (Vec<usize>, Vec<usize>) {
    let k = elem / w;
    let mut shape = lay.dim.slice().to_vec();
    let mut strides: Vec<usize> = lay
        .strides
        .slice()
        .iter()
        .map(|&s| (s as isize * k as isize) as usize)
        .collect();
    if k > 1 || shape.is_empty() {
        shape.push(k);
        strides.push(1);
    }
    (shape, strides)
}

/// Copies every element of `src` into the element of `dst` with the same index, on `stream`
/// (shapes equal, same context, no overlap: the callers check). Elements of `elem` bytes.
pub(crate) fn copy_strided<D: Dimension>(
    stream: &Stream,
    src: &Layout<D>,
    dst: &Layout<D>,
    elem: usize,
) -> Result<()> {
    if src.len() == 0 {
        return Ok(());
    }
    let w = [8, 4, 2, 1]
        .into_iter()
        .find(|w| elem % w == 0)
        .unwrap_or(1);
    let (shape, s_st) = in_words(src, elem, w);
    let (_, d_st) = in_words(dst, elem, w);
    if shape.len() > super::elementwise::MAX_RANK {
        return Err(Error::usage(format!(
            "a strided copy handles up to {} dimensions (one more for elements that are not 1, 2, 4 \
             or 8 bytes); this one needs {}",
            super::elementwise::MAX_RANK,
            shape.len()
        )));
    }
    // A transpose (the two sides contiguous along different axes) goes through tiles.
    if super::transpose_copy::try_copy(stream, (src.ptr, dst.ptr), &shape, (&s_st, &d_st), w)? {
        return Ok(());
    }
    let ctx = stream.context();
    let ins = [ArgInfo::raw_strided(ctx, src.ptr, &shape, &s_st, w)];
    let outs = [ArgInfo::raw_strided(ctx, dst.ptr, &shape, &d_st, w)];
    match w {
        8 => {
            static K: OnceLock<Result<Copy<u64>>> = OnceLock::new();
            copy_kernel(&K)?.launch_infos(stream, &ins, &outs)
        }
        4 => {
            static K: OnceLock<Result<Copy<u32>>> = OnceLock::new();
            copy_kernel(&K)?.launch_infos(stream, &ins, &outs)
        }
        2 => {
            static K: OnceLock<Result<Copy<u16>>> = OnceLock::new();
            copy_kernel(&K)?.launch_infos(stream, &ins, &outs)
        }
        _ => {
            static K: OnceLock<Result<Copy<u8>>> = OnceLock::new();
            copy_kernel(&K)?.launch_infos(stream, &ins, &outs)
        }
    }
}

type Fill<W> = Elementwise<(Scalar<W>,), Expr<W>>;

fn fill_kernel<W: ScalarType>(
    slot: &'static OnceLock<Result<Fill<W>>>,
) -> Result<&'static Fill<W>> {
    slot.get_or_init(|| Fill::<W>::new(&format!("strided_fill_{}", W::TY.name()), |(x,)| x))
        .as_ref()
        .map_err(Clone::clone)
}

/// Sets every element of `dst` (elements of `elem` bytes: 1, 2, 4 or 8) to the value whose
/// bytes are the low `elem` bytes of `bits`, on `stream`.
pub(crate) fn fill_strided<D: Dimension>(
    stream: &Stream,
    dst: &Layout<D>,
    bits: u64,
    elem: usize,
) -> Result<()> {
    if !matches!(elem, 1 | 2 | 4 | 8) {
        return Err(Error::usage(format!(
            "fill supports elements of 1, 2, 4 or 8 bytes, not {elem}"
        )));
    }
    if dst.len() == 0 {
        return Ok(());
    }
    let (shape, st) = in_words(dst, elem, elem);
    if shape.len() > super::elementwise::MAX_RANK {
        return Err(Error::usage(format!(
            "a strided fill handles up to {} dimensions, not {}",
            super::elementwise::MAX_RANK,
            shape.len()
        )));
    }
    let ctx = stream.context();
    let outs = [ArgInfo::raw_strided(ctx, dst.ptr, &shape, &st, elem)];
    match elem {
        8 => {
            static K: OnceLock<Result<Fill<u64>>> = OnceLock::new();
            fill_kernel(&K)?.launch_infos(stream, &[ArgInfo::scalar(bits)], &outs)
        }
        4 => {
            static K: OnceLock<Result<Fill<u32>>> = OnceLock::new();
            fill_kernel(&K)?.launch_infos(stream, &[ArgInfo::scalar(bits as u32)], &outs)
        }
        2 => {
            static K: OnceLock<Result<Fill<u16>>> = OnceLock::new();
            fill_kernel(&K)?.launch_infos(stream, &[ArgInfo::scalar(bits as u16)], &outs)
        }
        _ => {
            static K: OnceLock<Result<Fill<u8>>> = OnceLock::new();
            fill_kernel(&K)?.launch_infos(stream, &[ArgInfo::scalar(bits as u8)], &outs)
        }
    }
}
