//! The checks every collective makes before calling NCCL: element counts, root and peer
//! ranks, devices. Pure functions of numbers, so they are tested without NCCL or a GPU.

use crate::error::{Error, Result};

/// A shape error for `op`: `expected` and `actual` are element counts.
fn counts(op: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::Shape {
            op,
            expected: vec![expected],
            actual: vec![actual],
        })
    }
}

/// `all_reduce`, `broadcast`, `reduce`: the output has as many elements as the input.
pub(crate) fn same_len(op: &'static str, send: usize, recv: usize) -> Result<()> {
    counts(op, send, recv)
}

/// `all_gather`: the output holds every rank's input, `ranks × send` elements.
pub(crate) fn all_gather(send: usize, recv: usize, ranks: usize) -> Result<()> {
    counts(
        "all_gather (the output holds ranks × the input's elements)",
        ranks * send,
        recv,
    )
}

/// `reduce_scatter`: the input holds one block per rank, `ranks × recv` elements.
pub(crate) fn reduce_scatter(send: usize, recv: usize, ranks: usize) -> Result<()> {
    counts(
        "reduce_scatter (the input holds ranks × the output's elements)",
        ranks * recv,
        send,
    )
}

/// The in-place `all_gather` / `reduce_scatter`: the buffer is `ranks` blocks; returns the
/// block's length.
pub(crate) fn in_place_blocks(op: &'static str, len: usize, ranks: usize) -> Result<usize> {
    if ranks == 0 || len % ranks != 0 {
        return Err(Error::usage(format!(
            "{op}: the buffer has {len} elements, not a multiple of the {ranks} ranks \
             (it holds one equal block per rank)"
        )));
    }
    Ok(len / ranks)
}

/// A root or peer rank is one of the communicator's ranks.
pub(crate) fn rank_in(op: &'static str, what: &str, rank: usize, ranks: usize) -> Result<()> {
    if rank < ranks {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "{op}: {what} {rank} is not a rank of this communicator (it has {ranks} rank(s): 0..{ranks})"
        )))
    }
}

/// An array or stream is on the device of the communicator's rank.
pub(crate) fn device(
    op: &'static str,
    what: &str,
    on: usize,
    rank: usize,
    rank_device: usize,
) -> Result<()> {
    if on == rank_device {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "{op}: {what} is on device {on} but rank {rank} of the communicator is on device {rank_device}; \
             use arrays and a stream of device {rank_device} with this rank"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(e: Error) -> (&'static str, Vec<usize>, Vec<usize>) {
        match e {
            Error::Shape {
                op,
                expected,
                actual,
            } => (op, expected, actual),
            other => panic!("not a shape error: {other}"),
        }
    }

    #[test]
    fn all_reduce_broadcast_reduce_need_equal_lengths() {
        assert!(same_len("all_reduce", 5, 5).is_ok());
        assert!(same_len("all_reduce", 0, 0).is_ok());
        let (op, e, a) = shape(same_len("all_reduce", 5, 4).unwrap_err());
        assert_eq!((op, e, a), ("all_reduce", vec![5], vec![4]));
        let text = same_len("broadcast", 3, 7).unwrap_err().to_string();
        assert_eq!(text, "shape mismatch in broadcast: expected (3,), got (7,)");
    }

    #[test]
    fn all_gather_output_is_ranks_times_input() {
        assert!(all_gather(3, 6, 2).is_ok());
        assert!(all_gather(3, 3, 1).is_ok());
        let (op, e, a) = shape(all_gather(3, 5, 2).unwrap_err());
        assert!(op.starts_with("all_gather"), "{op}");
        assert_eq!((e, a), (vec![6], vec![5]));
        assert!(all_gather(3, 3, 2).is_err());
    }

    #[test]
    fn reduce_scatter_input_is_ranks_times_output() {
        assert!(reduce_scatter(8, 4, 2).is_ok());
        assert!(reduce_scatter(4, 4, 1).is_ok());
        let (op, e, a) = shape(reduce_scatter(7, 4, 2).unwrap_err());
        assert!(op.starts_with("reduce_scatter"), "{op}");
        assert_eq!((e, a), (vec![8], vec![7]));
        assert!(reduce_scatter(4, 8, 2).is_err());
    }

    #[test]
    fn in_place_buffers_split_into_equal_blocks() {
        assert_eq!(in_place_blocks("all_gather_in_place", 12, 3).unwrap(), 4);
        assert_eq!(in_place_blocks("all_gather_in_place", 0, 2).unwrap(), 0);
        let text = in_place_blocks("reduce_scatter_in_place", 7, 2)
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("reduce_scatter_in_place") && text.contains("7 elements"),
            "{text}"
        );
        assert!(in_place_blocks("x", 4, 0).is_err());
    }

    #[test]
    fn roots_and_peers_are_ranks() {
        assert!(rank_in("broadcast", "root", 1, 2).is_ok());
        let text = rank_in("broadcast", "root", 2, 2).unwrap_err().to_string();
        assert_eq!(
            text,
            "broadcast: root 2 is not a rank of this communicator (it has 2 rank(s): 0..2)"
        );
        assert!(rank_in("send", "peer", 0, 1).is_ok());
        assert!(rank_in("recv", "peer", 1, 1).is_err());
    }

    #[test]
    fn arrays_and_streams_are_on_the_ranks_device() {
        assert!(device("all_reduce", "the input", 1, 1, 1).is_ok());
        let text = device("all_reduce", "the stream", 0, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(
            text.starts_with("all_reduce: the stream is on device 0 but rank 1 of the communicator is on device 1"),
            "{text}"
        );
    }
}
