//! How an array is split along axis 0 over devices: the row ranges of the shards.

use std::ops::Range;

use crate::error::{Error, Result};

/// The row ranges of `rows` rows split over `parts` devices as evenly as possible: the first
/// `rows % parts` shards have one row more (NumPy's `array_split`). Shards past the rows are
/// empty.
pub(crate) fn even_rows(rows: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (base, extra) = (rows / parts, rows % parts);
    let mut start = 0;
    (0..parts)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// The row ranges of shards with `lens` rows each, one after the other.
pub(crate) fn ranges_of(lens: impl IntoIterator<Item = usize>) -> Vec<Range<usize>> {
    let mut start = 0;
    lens.into_iter()
        .map(|len| {
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// The shape of the shard holding `rows` rows of an array of shape `shape` (the same shape with
/// `rows` along axis 0). A 0-D shape has no axis 0 to split: an error naming `op`.
pub(crate) fn shard_shape(op: &str, shape: &[usize], rows: usize) -> Result<Vec<usize>> {
    if shape.is_empty() {
        return Err(Error::usage(format!(
            "{op}: a 0-dimensional array has no axis 0 to split over devices; give it at least one axis"
        )));
    }
    let mut s = shape.to_vec();
    s[0] = rows;
    Ok(s)
}

/// Elements per row (the product of the axes after the first; 1 for 1-D arrays).
pub(crate) fn row_len(shape: &[usize]) -> usize {
    shape.iter().skip(1).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_gives_the_first_shards_the_extra_rows() {
        assert_eq!(even_rows(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(even_rows(9, 3), vec![0..3, 3..6, 6..9]);
        assert_eq!(even_rows(2, 4), vec![0..1, 1..2, 2..2, 2..2]);
        assert_eq!(even_rows(0, 2), vec![0..0, 0..0]);
        assert_eq!(even_rows(5, 1), vec![0..5]);
    }

    #[test]
    fn even_split_covers_every_row_once_for_many_sizes() {
        for parts in 1..=8 {
            for rows in 0..200 {
                let r = even_rows(rows, parts);
                assert_eq!(r.len(), parts);
                assert_eq!(r[0].start, 0);
                assert_eq!(r[parts - 1].end, rows);
                for w in r.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                    assert!(w[0].len() >= w[1].len() && w[0].len() - w[1].len() <= 1);
                }
            }
        }
    }

    #[test]
    fn ranges_follow_the_given_lengths() {
        assert_eq!(ranges_of([3, 0, 2]), vec![0..3, 3..3, 3..5]);
        assert!(ranges_of([]).is_empty());
    }

    #[test]
    fn shard_shapes_replace_axis_0_and_refuse_scalars() {
        assert_eq!(shard_shape("t", &[10, 3, 2], 4).unwrap(), vec![4, 3, 2]);
        assert_eq!(row_len(&[10, 3, 2]), 6);
        assert_eq!(row_len(&[10]), 1);
        let e = shard_shape("from_host", &[], 1).unwrap_err();
        assert!(e.to_string().contains("no axis 0"), "{e}");
    }
}
