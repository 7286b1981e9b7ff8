//! NumPy broadcasting of shapes.

use crate::error::{Error, Result};

/// The shape that `shapes` broadcast to (NumPy rules: align trailing dimensions; each pair must
/// be equal or one of them 1; missing leading dimensions count as 1).
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[rank - s.len() + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(Error::usage(format!(
                    "shapes {} cannot be broadcast together (dimension {} is {} in one and {} in another)",
                    shapes.iter().map(|s| crate::error::ShapeDisplay(s).to_string()).collect::<Vec<_>>().join(", "),
                    i,
                    d,
                    o
                )));
            }
        }
    }
    Ok(out)
}

/// Element strides of an array of shape `shape` with element strides `own`, viewed with the
/// broadcast shape `out`: 0 along broadcast (size-1 or missing) dimensions.
pub(crate) fn broadcast_strides_of(shape: &[usize], own: &[isize], out: &[usize]) -> Vec<i64> {
    let mut strides = vec![0i64; out.len()];
    for i in 0..shape.len() {
        let o = out.len() - shape.len() + i;
        strides[o] = if shape[i] == 1 && out[o] != 1 {
            0
        } else {
            own[i] as i64
        };
    }
    strides
}

/// Element strides of an array of shape `shape` (C order) viewed with the broadcast shape `out`:
/// 0 along broadcast (size-1 or missing) dimensions.
#[cfg(test)]
pub(crate) fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<i64> {
    let mut strides = vec![0i64; out.len()];
    let mut stride = 1i64;
    for i in (0..shape.len()).rev() {
        let o = out.len() - shape.len() + i;
        strides[o] = if shape[i] == 1 && out[o] != 1 {
            0
        } else {
            stride
        };
        stride *= shape[i] as i64;
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_rules() {
        assert_eq!(broadcast_shapes(&[&[3, 1], &[4]]).unwrap(), vec![3, 4]);
        assert_eq!(
            broadcast_shapes(&[&[2, 3, 4], &[3, 1], &[]]).unwrap(),
            vec![2, 3, 4]
        );
        assert_eq!(broadcast_shapes(&[&[5]]).unwrap(), vec![5]);
        let e = broadcast_shapes(&[&[3, 4], &[3]]).unwrap_err().to_string();
        assert!(e.contains("(3, 4)") && e.contains("(3,)"), "{e}");
        assert_eq!(broadcast_strides(&[3, 1], &[3, 4]), vec![1, 0]);
        assert_eq!(broadcast_strides(&[4], &[3, 4]), vec![0, 1]);
        assert_eq!(broadcast_strides(&[2, 3, 4], &[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(broadcast_strides(&[1, 1], &[1, 1]), vec![1, 1]);
        assert_eq!(
            broadcast_strides_of(&[3, 1], &[-2, 7], &[2, 3, 4]),
            vec![0, -2, 0]
        );
        assert_eq!(broadcast_strides_of(&[3, 4], &[1, 3], &[3, 4]), vec![1, 3]);
    }
}
