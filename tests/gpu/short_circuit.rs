//! Short-circuiting `and_then`/`or_else`: the right side runs only where it must, so a literal
//! port of Numba's `while j >= 0 and a[j] > key` reads no `a[-1]` (the simulator would fault).

use cudajit::codegen::Kernel;
use cudajit::prelude::*;

use crate::common::{ctx, Rng};

/// Insertion sort of each thread's segment of `seg` elements, the loop condition short-circuit.
fn segment_sort() -> Kernel<(&'static mut [i32], u32)> {
    Kernel::<(&mut [i32], u32)>::build("seg_isort", |k, (a, seg)| {
        let base = (k.grid1() * seg.cast::<u64>()).cast::<i64>();
        k.if_(base.lt(a.len().cast::<i64>()), |k| {
            k.for_range(1i64, seg.cast::<i64>(), |k, i| {
                let key = a.at(base + i);
                let j = k.var(i - 1i64);
                k.while_(
                    |_| j.get().ge(0i64).and_then(|| a.at(base + j.get()).gt(key)),
                    |_| {
                        a.set(base + j.get() + 1i64, a.at(base + j.get()));
                        j.set(j.get() - 1i64);
                    },
                );
                a.set(base + j.get() + 1i64, key);
            });
        });
    })
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn and_then_guards_the_right_side_in_a_loop_condition() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    let k = segment_sort();
    let mut rng = Rng::new();
    let (seg, segs) = (16usize, 300usize);
    let specials = [i32::MIN, i32::MAX, 0, -1, 1];
    let host: Vec<i32> = rng.vec(seg * segs, |r| {
        let u = r.next_u64();
        if u % 5 == 0 {
            specials[(u >> 8) as usize % specials.len()]
        } else {
            (u >> 16) as i32 % 1000
        }
    });
    let mut a = s.to_device(&host).unwrap();
    let cfg = LaunchConfig::for_num_elems(segs, 64).unwrap();
    k.launch(&s, cfg, (&mut a, seg as u32)).unwrap();
    let got = a.to_vec_async(&s).unwrap();
    let mut want = host.clone();
    want.chunks_mut(seg).for_each(|c| c.sort());
    assert_eq!(got, want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn or_else_runs_the_right_side_only_where_the_left_is_false() {
    let c = ctx();
    let s = c.new_stream().unwrap();
    // out[i] = i >= n_valid || x[i] > 0 ; x holds only n_valid elements: x[i] is read only
    // below n_valid. A counter counts the right side's evaluations.
    let k = Kernel::<(&[f32], &mut [u32], &mut [u32], u64)>::build(
        "or_else_guard",
        |k, (x, out, count, n_valid)| {
            let i = k.grid1();
            k.if_(i.lt(out.len()), |_| {
                let r = i.ge(n_valid).or_else(|| {
                    count.atomic_add(0u64, 1u32);
                    x.at(i).gt(0.0f32)
                });
                let both = i.lt(n_valid).and_then(|| x.at(i).le(0.0f32));
                out.set(i, r.cast::<u32>() + both.cast::<u32>() * 2u32);
            });
        },
    )
    .unwrap();
    let mut rng = Rng::new();
    let (n, n_valid) = (1000usize, 613usize);
    let x: Vec<f32> = rng.vec(n_valid, |r| r.f32() - 0.5);
    let dx = s.to_device(&x).unwrap();
    let mut out = s.zeros::<u32, _>(n).unwrap();
    let mut count = s.zeros::<u32, _>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(n, 128).unwrap();
    k.launch(&s, cfg, (&dx, &mut out, &mut count, n_valid as u64))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    for (i, &g) in got.iter().enumerate() {
        let want = if i >= n_valid || x[i] > 0.0 { 1 } else { 2 };
        assert_eq!(g, want, "i={i}");
    }
    assert_eq!(count.to_vec_async(&s).unwrap(), vec![n_valid as u32]);
}
