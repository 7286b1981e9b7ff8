//! How an array sharded over processes is laid out, and how the ranks agree on it: every rank
//! describes its part in a fixed-size header of `u64` words, the headers are all-gathered,
//! and every rank checks the same list the same way (so a disagreement is the same error on
//! every rank, never a rank left waiting in a collective). Pure functions of numbers, tested
//! without NCCL or a GPU.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::sharded::split;

/// The most axes a header describes.
pub(crate) const MAX_DIMS: usize = 8;
/// Words of one rank's header: magic, type id, element size, problem, axes, local rows,
/// claimed global rows, then the axes after the first (`MAX_DIMS - 1` of them).
pub(crate) const HEADER_WORDS: usize = 7 + MAX_DIMS - 1;
/// The first word of every header ("CJDIST" and a version).
const MAGIC: u64 = 0x434a_4449_5354_0001;
/// A claimed global row count of "not given" (an array made from local shards).
const NO_CLAIM: u64 = u64::MAX;

/// A problem a rank found with its own arguments, sent in its header so that every rank fails
/// together (instead of the others waiting in the collective for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// None.
    None = 0,
    /// A 0-dimensional shape (no axis 0 to split).
    Scalar = 1,
    /// More axes than [`MAX_DIMS`].
    TooManyAxes = 2,
}

/// One rank's description of its part of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// A hash of the element type's name.
    pub type_id: u64,
    /// The element type's size in bytes.
    pub elem_size: usize,
    /// The rank's own problem with its arguments.
    pub problem: Problem,
    /// The number of axes.
    pub ndim: usize,
    /// Rows (along axis 0) this rank holds.
    pub local_rows: usize,
    /// The whole array's rows, when the rank was given the whole shape.
    pub global_rows: Option<usize>,
    /// The axes after the first.
    pub rest: Vec<usize>,
}

/// A stable hash (FNV-1a) of a type's name: the element type's identity across processes.
pub(crate) fn type_id_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Header {
    /// The header of a rank holding `local_rows` rows of an array shaped `shape` along its
    /// other axes (`shape[0]` is the whole array's rows when `global` is set, else ignored).
    pub(crate) fn new<T>(shape: &[usize], local_rows: usize, global: bool) -> Header {
        let problem = if shape.is_empty() {
            Problem::Scalar
        } else if shape.len() > MAX_DIMS {
            Problem::TooManyAxes
        } else {
            Problem::None
        };
        Header {
            type_id: type_id_of(std::any::type_name::<T>()),
            elem_size: std::mem::size_of::<T>(),
            problem,
            ndim: shape.len(),
            local_rows,
            global_rows: if global { shape.first().copied() } else { None },
            rest: shape.iter().skip(1).take(MAX_DIMS - 1).copied().collect(),
        }
    }

    /// The header as words.
    pub(crate) fn encode(&self) -> [u64; HEADER_WORDS] {
        let mut w = [0u64; HEADER_WORDS];
        w[0] = MAGIC;
        w[1] = self.type_id;
        w[2] = self.elem_size as u64;
        w[3] = self.problem as u64;
        w[4] = self.ndim as u64;
        w[5] = self.local_rows as u64;
        w[6] = self.global_rows.map_or(NO_CLAIM, |g| g as u64);
        for (d, &x) in w[7..].iter_mut().zip(&self.rest) {
            *d = x as u64;
        }
        w
    }

    /// The header from words (`None` if they are not a header of this version).
    pub(crate) fn decode(w: &[u64]) -> Option<Header> {
        if w.len() != HEADER_WORDS || w[0] != MAGIC {
            return None;
        }
        let problem = match w[3] {
            0 => Problem::None,
            1 => Problem::Scalar,
            2 => Problem::TooManyAxes,
            _ => return None,
        };
        let ndim = w[4] as usize;
        let kept = ndim.saturating_sub(1).min(MAX_DIMS - 1);
        Some(Header {
            type_id: w[1],
            elem_size: w[2] as usize,
            problem,
            ndim,
            local_rows: w[5] as usize,
            global_rows: (w[6] != NO_CLAIM).then_some(w[6] as usize),
            rest: w[7..7 + kept].iter().map(|&x| x as usize).collect(),
        })
    }
}

/// The layout every rank agreed on: the whole array's shape and every rank's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The whole array's shape.
    pub shape: Vec<usize>,
    /// Rank `r`'s rows along axis 0.
    pub rows: Vec<Range<usize>>,
}

impl Layout {
    /// The layout of `shape` split evenly over `world` ranks (the first `rows % world` ranks
    /// hold a row more, as [`ShardedArray`](crate::sharded::ShardedArray) splits).
    pub(crate) fn even(shape: &[usize], world: usize) -> Layout {
        Layout {
            shape: shape.to_vec(),
            rows: split::even_rows(shape.first().copied().unwrap_or(0), world),
        }
    }

    /// Elements per row (of axis 0).
    pub(crate) fn row_len(&self) -> usize {
        split::row_len(&self.shape)
    }

    /// Rank `r`'s elements, as a range of flat (C-order) indices of the whole array.
    pub(crate) fn elements(&self, r: usize) -> Range<usize> {
        let rows = self.rows.get(r).cloned().unwrap_or(0..0);
        rows.start * self.row_len()..rows.end * self.row_len()
    }

    /// Whether every rank holds as many elements (one NCCL all-gather gathers it).
    pub(crate) fn is_uniform(&self) -> bool {
        self.rows.windows(2).all(|w| w[0].len() == w[1].len())
    }

    /// Rank `r`'s shard's shape.
    pub(crate) fn local_shape(&self, r: usize) -> Vec<usize> {
        let mut s = self.shape.clone();
        if let Some(first) = s.first_mut() {
            *first = self.rows.get(r).map_or(0, |x| x.len());
        }
        s
    }
}

/// Checks every rank's header (`headers[r]` is rank `r`'s) and gives the layout they agree
/// on; an error naming `op`, the ranks and what differs otherwise. Every rank runs this on
/// the same headers, so every rank gets the same answer.
pub(crate) fn agree(op: &str, type_name: &str, headers: &[Option<Header>]) -> Result<Layout> {
    let fail = |what: String| Err(Error::usage(format!("{op}: {what}")));
    let mut hs = Vec::with_capacity(headers.len());
    for (r, h) in headers.iter().enumerate() {
        match h {
            Some(h) => hs.push(h),
            None => {
                return fail(format!(
                    "rank {r} did not send a layout of this cudajit version (a different \
                     program or version on that rank, or a different collective reached NCCL \
                     first: every rank must make its distributed arrays in the same order)"
                ))
            }
        }
    }
    let Some(h0) = hs.first() else {
        return fail("no ranks".into());
    };
    for (r, h) in hs.iter().enumerate() {
        match h.problem {
            Problem::None => {}
            Problem::Scalar => {
                return fail(format!(
                    "rank {r} gave a 0-dimensional shape: an array sharded over processes \
                     needs an axis 0 to split"
                ))
            }
            Problem::TooManyAxes => {
                return fail(format!(
                    "rank {r} gave a shape of {} axes; at most {MAX_DIMS} are supported",
                    h.ndim
                ))
            }
        }
    }
    for (r, h) in hs.iter().enumerate().skip(1) {
        if h.type_id != h0.type_id || h.elem_size != h0.elem_size {
            return fail(format!(
                "the ranks disagree on the element type: rank 0 has {}-byte elements of one \
                 type, rank {r} {}-byte elements of {} (this rank's type is {type_name}); make \
                 the array with the same element type on every rank",
                h0.elem_size,
                h.elem_size,
                if h.elem_size == h0.elem_size {
                    "another type"
                } else {
                    "a type of another size"
                }
            ));
        }
        if h.ndim != h0.ndim || h.rest != h0.rest {
            return fail(format!(
                "the ranks disagree on the shape after axis 0: rank 0 has {} axes {:?}, rank \
                 {r} {} axes {:?}",
                h0.ndim, h0.rest, h.ndim, h.rest
            ));
        }
        if h.global_rows != h0.global_rows {
            let show = |g: Option<usize>| g.map_or("none given".to_string(), |g| g.to_string());
            return fail(format!(
                "the ranks disagree on the whole array's length along axis 0: rank 0 says {}, \
                 rank {r} says {}; give every rank the same shape",
                show(h0.global_rows),
                show(h.global_rows)
            ));
        }
    }
    let rows = split::ranges_of(hs.iter().map(|h| h.local_rows));
    let total = rows.last().map_or(0, |r| r.end);
    if let Some(g) = h0.global_rows {
        if g != total {
            let lens: Vec<usize> = hs.iter().map(|h| h.local_rows).collect();
            return fail(format!(
                "the ranks' shards hold {total} rows in all ({lens:?} by rank), not the {g} \
                 of the whole shape"
            ));
        }
    }
    let mut shape = Vec::with_capacity(h0.ndim);
    shape.push(total);
    shape.extend(&h0.rest);
    Ok(Layout { shape, rows })
}

#[cfg(test)]
mod tests;
