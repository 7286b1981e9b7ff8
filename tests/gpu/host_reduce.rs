//! Host arrays for the reductions (`Reduction::reduce_host`): a `Vec`, a slice and ndarray
//! arrays and views (a transposed, strided one too) reduced as their device copies would be,
//! checked against host models on random inputs with special values; untouched afterwards; an
//! error inside a graph capture.

use cudajit::ops::Reduction;
use ndarray::Array2;

use crate::common::{ctx, Rng};

fn specials(rng: &mut Rng, n: usize) -> Vec<i64> {
    let sp = [0i64, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, 1 << 40];
    rng.vec(n, |r| {
        let u = r.next_u64();
        if u % 4 == 0 {
            sp[(u >> 8) as usize % sp.len()]
        } else {
            r.next_u64() as i64
        }
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_take_host_arrays() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let mut rng = Rng::new();
    // Integer reductions: exact in any order (the sum wraps, as the kernel's adds).
    let sum = Reduction::<i64, i64, i64>::new("hsum_i64", |x| x, |a, b| a + b, 0).unwrap();
    let max = Reduction::<i64, i64, i64>::new("hmax_i64", |x| x, |a, b| a.max(b), i64::MIN)
        .unwrap()
        .nonempty();
    // A weighted form: the reduction's own map runs on the copy.
    let odd =
        Reduction::<i64, u64, u64>::new("hodd", |x| (x & 1i64).cast::<u64>(), |a, b| a + b, 0)
            .unwrap();
    for n in [1usize, 7, 1000, 70_001] {
        let v = specials(&mut rng, n);
        let before = v.clone();
        let want_sum = v.iter().fold(0i64, |a, &b| a.wrapping_add(b));
        let want_max = *v.iter().max().unwrap();
        let want_odd = v.iter().filter(|&&x| x & 1 == 1).count() as u64;
        assert_eq!(sum.reduce_host(&s, &v).unwrap(), want_sum, "n={n}");
        assert_eq!(sum.reduce_host(&s, &v[..]).unwrap(), want_sum, "n={n}");
        assert_eq!(max.reduce_host(&s, &v).unwrap(), want_max, "n={n}");
        assert_eq!(odd.reduce_host(&s, &v).unwrap(), want_odd, "n={n}");
        assert_eq!(v, before, "the host array is read only");
        // The same values as a device array give the same results.
        let d = s.to_device(&v).unwrap();
        assert_eq!(sum.reduce(&s, &d).unwrap(), want_sum);
    }
    // ndarray: an array, a view of a slice of it, and a transposed (strided) view.
    let (rows, cols) = (61usize, 45usize);
    let m = Array2::from_shape_vec((rows, cols), specials(&mut rng, rows * cols)).unwrap();
    let wrapping = |it: &mut dyn Iterator<Item = i64>| it.fold(0i64, |a, b| a.wrapping_add(b));
    assert_eq!(
        sum.reduce_host(&s, &m).unwrap(),
        wrapping(&mut m.iter().copied())
    );
    let part = m.slice(ndarray::s![3..40, 5..]);
    assert_eq!(
        sum.reduce_host(&s, &part).unwrap(),
        wrapping(&mut part.iter().copied())
    );
    let t = m.t();
    assert_eq!(max.reduce_host(&s, &t).unwrap(), *m.iter().max().unwrap());
    // Empty: the identity, or the error of a nonempty reduction.
    let empty: Vec<i64> = Vec::new();
    assert_eq!(sum.reduce_host(&s, &empty).unwrap(), 0);
    assert!(max.reduce_host(&s, &empty).is_err());
    // Not while capturing a graph.
    s.begin_capture().unwrap();
    let e = sum.reduce_host(&s, &vec![1i64, 2]).unwrap_err();
    assert!(e.to_string().contains("captures a graph"), "{e}");
    drop(s.end_capture().unwrap());
    assert_eq!(sum.reduce_host(&s, &vec![1i64, 2]).unwrap(), 3);
}
