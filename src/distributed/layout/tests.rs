//! The layout logic on the CPU: headers round-trip through words, agreeing ranks give the
//! whole shape and every rank's rows (even and uneven), and every disagreement is an error
//! that names the ranks.

use super::*;

fn h<T>(shape: &[usize], local: usize, global: bool) -> Option<Header> {
    Some(Header::new::<T>(shape, local, global))
}

#[test]
fn headers_round_trip_through_words() {
    for (shape, local, global) in [
        (vec![10usize, 3, 2], 4usize, true),
        (vec![7], 7, false),
        (vec![5, 1, 2, 3, 4, 5, 6, 7], 2, true),
    ] {
        let a = Header::new::<f32>(&shape, local, global);
        assert_eq!(Header::decode(&a.encode()), Some(a.clone()));
        assert_eq!(a.rest, shape[1..].to_vec());
    }
    let scalar = Header::new::<f32>(&[], 0, true);
    assert_eq!(scalar.problem, Problem::Scalar);
    assert_eq!(Header::decode(&scalar.encode()), Some(scalar));
    let big = Header::new::<f32>(&[1; 9], 1, true);
    assert_eq!(big.problem, Problem::TooManyAxes);
    assert_eq!(
        Header::decode(&big.encode()).unwrap().problem,
        Problem::TooManyAxes
    );
    assert_eq!(Header::decode(&[0; HEADER_WORDS]), None);
    assert_eq!(Header::decode(&[1, 2, 3]), None);
}

#[test]
fn type_ids_tell_types_apart() {
    let (a, b) = (
        Header::new::<f32>(&[1], 1, true),
        Header::new::<i32>(&[1], 1, true),
    );
    assert_ne!(a.type_id, b.type_id);
    assert_eq!(a.elem_size, b.elem_size);
    assert_eq!(type_id_of("f32"), type_id_of("f32"));
}

#[test]
fn agreeing_ranks_give_the_even_split() {
    for world in 1..=5 {
        for rows in [0usize, 1, 4, 10, 13] {
            let even = Layout::even(&[rows, 3], world);
            let hs: Vec<_> = (0..world)
                .map(|r| h::<f32>(&[rows, 3], even.rows[r].len(), true))
                .collect();
            let got = agree("t", "f32", &hs).unwrap();
            assert_eq!(got, even);
            assert_eq!(got.row_len(), 3);
            let total: usize = (0..world).map(|r| got.elements(r).len()).sum();
            assert_eq!(total, rows * 3);
            assert_eq!(got.is_uniform(), rows % world == 0);
        }
    }
}

#[test]
fn local_shards_of_any_length_stack_in_rank_order() {
    let hs = [
        h::<f64>(&[3, 2], 3, false),
        h::<f64>(&[0, 2], 0, false),
        h::<f64>(&[5, 2], 5, false),
    ];
    let got = agree("from_local", "f64", &hs).unwrap();
    assert_eq!(got.shape, vec![8, 2]);
    assert_eq!(got.rows, vec![0..3, 3..3, 3..8]);
    assert_eq!(got.elements(2), 6..16);
    assert_eq!(got.local_shape(2), vec![5, 2]);
    assert_eq!(got.local_shape(1), vec![0, 2]);
    assert!(!got.is_uniform());
    assert_eq!(got.elements(7), 0..0);
}

fn err(hs: &[Option<Header>]) -> String {
    agree("op", "f32", hs).unwrap_err().to_string()
}

#[test]
fn disagreements_are_errors_naming_the_rank() {
    let e = err(&[h::<f32>(&[10], 5, true), h::<f32>(&[12], 5, true)]);
    assert!(
        e.contains("disagree on the whole array's length") && e.contains("rank 1 says 12"),
        "{e}"
    );
    let e = err(&[h::<f32>(&[10], 5, true), h::<i32>(&[10], 5, true)]);
    assert!(
        e.contains("disagree on the element type") && e.contains("rank 1"),
        "{e}"
    );
    let e = err(&[h::<f32>(&[10], 5, true), h::<f64>(&[10], 5, true)]);
    assert!(
        e.contains("8-byte elements of a type of another size"),
        "{e}"
    );
    let e = err(&[h::<f32>(&[4, 2], 2, true), h::<f32>(&[4, 3], 2, true)]);
    assert!(e.contains("shape after axis 0") && e.contains("[3]"), "{e}");
    let e = err(&[h::<f32>(&[4, 2], 2, true), h::<f32>(&[4], 2, true)]);
    assert!(e.contains("shape after axis 0"), "{e}");
    let e = err(&[h::<f32>(&[4], 2, true), None]);
    assert!(e.contains("rank 1 did not send a layout"), "{e}");
    let e = err(&[h::<f32>(&[4], 2, true), h::<f32>(&[], 0, true)]);
    assert!(e.contains("rank 1 gave a 0-dimensional shape"), "{e}");
    let e = err(&[h::<f32>(&[1; 9], 1, true)]);
    assert!(e.contains("9 axes"), "{e}");
    let e = err(&[h::<f32>(&[10], 5, true), h::<f32>(&[10], 4, true)]);
    assert!(
        e.contains("hold 9 rows in all ([5, 4] by rank), not the 10"),
        "{e}"
    );
    let e = err(&[h::<f32>(&[10], 5, true), h::<f32>(&[10], 5, false)]);
    assert!(e.contains("none given"), "{e}");
    assert!(err(&[]).contains("no ranks"));
}
