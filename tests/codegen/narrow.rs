//! The narrow integers `i8`, `u8`, `i16`, `u16`: loads and stores, arithmetic, comparisons,
//! casts to and from every scalar type, atomics (global and shared), shuffles, bit operations,
//! scalar parameters and the ops kernels, each compiled for sm_75 and sm_90 and checked by
//! ptxas; the PTX they lower to; misuse errors.

use cudajit::codegen::{
    select, Expr, Int, Kernel, KernelBuilder, PtxOptions, Scalar, SliceMut, FULL_MASK,
};
use cudajit::Error;

use crate::common::{check_ptx, compile_all, TARGETS};

fn count(ptx: &str, pat: &str) -> usize {
    ptx.matches(pat).count()
}

/// The PTX type suffix of a narrow type's loads and stores (`u8`, `u16`; LLVM prints both
/// signednesses as unsigned).
fn mem_suffix<T: Scalar>() -> &'static str {
    if T::TY.size() == 1 {
        "u8"
    } else {
        "u16"
    }
}

/// Every operator on two values, and comparisons as bools.
fn arithmetic<T: Int>(x: Expr<T>, y: Expr<T>) -> ([Expr<T>; 13], [Expr<bool>; 6]) {
    (
        [
            x + y,
            x - y,
            x * y,
            x / y,
            x % y,
            x & y,
            x | y,
            x ^ y,
            x << y,
            x >> y,
            x.min(y),
            x.max(y),
            !x,
        ],
        [x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y)],
    )
}

type ArithKernel<T> = Kernel<(
    &'static [T],
    &'static [T],
    &'static mut [T],
    &'static mut [bool],
)>;

fn arithmetic_kernel<T: Int>(name: &str) -> ArithKernel<T> {
    Kernel::<(&[T], &[T], &mut [T], &mut [bool])>::build(name, |k, (a, b, out, flags)| {
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            let (vals, cmps) = arithmetic(a.at(i), b.at(i));
            for (j, v) in vals.into_iter().enumerate() {
                out.set(i * 13u64 + j as u64, v);
            }
            for (j, c) in cmps.into_iter().enumerate() {
                flags.set(i * 6u64 + j as u64, c);
            }
        });
    })
    .unwrap()
}

#[test]
fn loads_stores_and_arithmetic_for_every_narrow_type() {
    fn one<T: Int>(name: &str) {
        let (ptx, _) = compile_all(&arithmetic_kernel::<T>(name));
        let sfx = mem_suffix::<T>();
        assert!(count(&ptx, &format!("st.global.{sfx}")) >= 13, "{ptx}");
        assert!(ptx.contains(&format!("ld.global.nc.{sfx}")), "{ptx}");
    }
    one::<i8>("arith_i8");
    one::<u8>("arith_u8");
    one::<i16>("arith_i16");
    one::<u16>("arith_u16");
}

#[test]
fn negation_and_literals_on_the_left_for_signed_narrow_types() {
    let k = Kernel::<(&[i8], &[i16], &mut [i8], &mut [i16])>::build(
        "neg_narrow",
        |k, (a, b, oa, ob)| {
            let i = k.grid1();
            oa.set(i, -a.at(i) + (3i8 - a.at(i)) * 2i8);
            ob.set(i, -b.at(i) + (1000i16 ^ b.at(i)));
        },
    )
    .unwrap();
    compile_all(&k);
}

/// A kernel casting `S` to `D` elementwise.
fn cast_kernel<S: Scalar, D: Scalar>() -> Kernel<(&'static [S], &'static mut [D])> {
    let name = format!("cast_{}_{}", S::TY.name(), D::TY.name());
    Kernel::<(&[S], &mut [D])>::build(&name, |k, (x, out)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| out.set(i, x.at(i).cast::<D>()));
    })
    .unwrap()
}

/// Casts from and to every scalar type.
fn casts_of<N: Scalar>() -> usize {
    let mut n = 0;
    macro_rules! both {
        ($($t:ty),*) => {$(
            compile_all(&cast_kernel::<N, $t>());
            compile_all(&cast_kernel::<$t, N>());
            n += 2;
        )*};
    }
    both!(bool, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);
    n
}

#[test]
fn casts_between_narrow_types_and_every_scalar_type() {
    let n = casts_of::<i8>() + casts_of::<u8>() + casts_of::<i16>() + casts_of::<u16>();
    assert_eq!(n, 88);
}

#[test]
fn float_to_narrow_casts_saturate_in_32_bits_and_clamp() {
    let ptx = compile_all(&cast_kernel::<f32, i8>()).0;
    assert!(ptx.contains("cvt.rzi.s32.f32"), "{ptx}");
    assert!(ptx.contains("max.s32") && ptx.contains("-128"), "{ptx}");
    assert!(ptx.contains("min.s32") && ptx.contains("127"), "{ptx}");
    let ptx = compile_all(&cast_kernel::<f64, u16>()).0;
    assert!(ptx.contains("cvt.rzi.u32.f64"), "{ptx}");
    assert!(ptx.contains("min.u32") && ptx.contains("65535"), "{ptx}");
    // Narrow to float: extended to 32 bits, then one `cvt.rn`.
    let ptx = compile_all(&cast_kernel::<i16, f64>()).0;
    assert!(ptx.contains("cvt.rn.f64.s32"), "{ptx}");
    let ptx = compile_all(&cast_kernel::<u8, f32>()).0;
    assert!(ptx.contains("cvt.rn.f32.u32"), "{ptx}");
}

#[test]
fn bitcasts_between_narrow_types_of_one_size() {
    let k = Kernel::<(&[i8], &[u16], &mut [u8], &mut [i16])>::build(
        "bitcast_narrow",
        |k, (a, b, oa, ob)| {
            let i = k.grid1();
            oa.set(i, a.at(i).bitcast::<u8>());
            ob.set(i, b.at(i).bitcast::<i16>());
        },
    )
    .unwrap();
    compile_all(&k);
    let e = Kernel::<(&[i8], &mut [u16])>::build("bitcast_bad", |k, (a, o)| {
        let i = k.grid1();
        o.set(i, a.at(i).bitcast::<u16>());
    })
    .err()
    .expect("a bitcast between sizes is a build error");
    assert!(
        matches!(&e, Error::Build { .. } if e.to_string().contains("cannot reinterpret i8 as u16")),
        "{e}"
    );
}

/// Every atomic a narrow integer has, on `a[j]`; results go to `old[base..base + 11]`.
fn narrow_atomics<T: Int>(
    a: SliceMut<T>,
    j: Expr<u64>,
    x: Expr<T>,
    old: SliceMut<T>,
    base: Expr<u64>,
) {
    let ops = [
        a.atomic_add(j, x),
        a.atomic_sub(j, x),
        a.atomic_min(j, x),
        a.atomic_max(j, x),
        a.atomic_nanmin(j, x),
        a.atomic_nanmax(j, x),
        a.atomic_exch(j, x),
        a.atomic_cas(j, x, x + x),
        a.atomic_and(j, x),
        a.atomic_or(j, x),
        a.atomic_xor(j, x),
        a.atomic_load(j),
    ];
    for (s, v) in ops.into_iter().enumerate() {
        old.set(base + s as u64, v);
    }
}

#[test]
fn narrow_atomics_are_cas_loops_on_the_containing_word() {
    fn one<T: Int>(name: &str) {
        let k = Kernel::<(&mut [T], &[T], &mut [T])>::build(name, |k, (a, v, old)| {
            let i = k.grid1();
            k.if_(i.lt(v.len()), |_| {
                narrow_atomics(a, i % 64u64, v.at(i), old, i * 12u64);
            });
        })
        .unwrap();
        let ptx = compile_all(&k).0;
        // Eleven read-modify-writes, each one compare-and-swap on the 32-bit word.
        assert_eq!(count(&ptx, "atom.global.cas.b32"), 11, "{ptx}");
        for op in ["add", "min", "max", "exch", "and", "or", "xor"] {
            assert!(!ptx.contains(&format!("atom.global.{op}")), "{op}:\n{ptx}");
        }
        // The relaxed load is one narrow load.
        let sfx = mem_suffix::<T>();
        assert!(
            ptx.contains(&format!("ld.volatile.global.{sfx}"))
                || ptx.contains(&format!("ld.relaxed.gpu.global.{sfx}")),
            "{ptx}"
        );

        let shared = format!("{name}_shared");
        let k = Kernel::<(&[T], &mut [T])>::build(&shared, |k, (v, old)| {
            let i = k.grid1();
            let t = k.thread_idx().x;
            let a = k.shared_array::<T>(64);
            k.if_(t.lt(64u32), |_| a.set(t, Expr::lit(T::from_bits(0))));
            k.syncthreads();
            narrow_atomics(a, (t % 64u32).cast::<u64>(), v.at(i), old, i * 12u64);
        })
        .unwrap();
        let ptx = compile_all(&k).0;
        assert_eq!(count(&ptx, "atom.shared.cas.b32"), 11, "{ptx}");
    }
    one::<i8>("atomics_i8");
    one::<u8>("atomics_u8");
    one::<i16>("atomics_i16");
    one::<u16>("atomics_u16");
}

#[test]
fn narrow_shuffles_go_through_32_bits() {
    fn one<T: Int>(name: &str) {
        let k = Kernel::<(&[T], &mut [T], &mut [u32])>::build(name, |k, (x, out, m)| {
            let i = k.grid1();
            let v = x.at(i);
            let lane = k.lane_id();
            out.set(
                i,
                k.shfl_sync(FULL_MASK, v, (lane + 3u32) % 32u32)
                    + k.shfl_up_sync(FULL_MASK, v, 1u32)
                    + k.shfl_down_sync(FULL_MASK, v, 2u32)
                    + k.shfl_xor_sync(FULL_MASK, v, 5u32),
            );
            m.set(i * 2u64, k.match_any_sync(FULL_MASK, v));
            m.set(i * 2u64 + 1u64, k.match_all_sync(FULL_MASK, v).0);
        })
        .unwrap();
        let ptx = compile_all(&k).0;
        for kind in ["idx", "up", "down", "bfly"] {
            assert_eq!(
                count(&ptx, &format!("shfl.sync.{kind}.b32")),
                1,
                "{kind}:\n{ptx}"
            );
        }
        assert!(ptx.contains("match.any.sync.b32"), "{ptx}");
        assert!(ptx.contains("match.all.sync.b32"), "{ptx}");
    }
    one::<i8>("shfl_i8");
    one::<u8>("shfl_u8");
    one::<i16>("shfl_i16");
    one::<u16>("shfl_u16");
}

#[test]
fn narrow_bit_operations() {
    fn one<T: Int>(name: &str) {
        let k = Kernel::<(&[T], &mut [u32], &mut [T])>::build(name, |k, (x, out, rev)| {
            let i = k.grid1();
            let v = x.at(i);
            out.set(i * 3u64, v.popc());
            out.set(i * 3u64 + 1u64, v.clz());
            out.set(i * 3u64 + 2u64, v.ffs());
            rev.set(i, v.brev());
        })
        .unwrap();
        compile_all(&k);
    }
    one::<i8>("bits_i8");
    one::<u8>("bits_u8");
    one::<i16>("bits_i16");
    one::<u16>("bits_u16");
}

#[test]
fn narrow_scalar_parameters_loops_and_variables() {
    let k = Kernel::<(&[u8], &mut [i16], i8, u8, i16, u16)>::build(
        "narrow_params",
        |k: &KernelBuilder, (x, out, a, b, c, d)| {
            let i = k.grid1();
            let acc = k.var(c);
            k.for_range(0u8, x.at(i), |_, j| {
                acc.set(acc.get() + j.cast::<i16>() + a.cast::<i16>());
            });
            k.for_step(a, 100i8, 3i8, |_, j| acc.add_assign(j.cast::<i16>()));
            let sel = select(b.gt(7u8), d.cast::<i16>(), acc.get());
            out.set(i, sel);
        },
    )
    .unwrap();
    let ptx = compile_all(&k).0;
    assert!(
        ptx.contains(".param .u8") || ptx.contains(".param .b8"),
        "{ptx}"
    );
    assert!(
        ptx.contains(".param .u16") || ptx.contains(".param .b16"),
        "{ptx}"
    );
    // A non-positive literal step is a build error, also for narrow signed types.
    let e = Kernel::<(&mut [i8],)>::build("narrow_step", |k, (o,)| {
        k.for_step(0i8, 10i8, -1i8, |_, j| o.set(0u64, j));
    })
    .err()
    .expect("a negative step is a build error");
    assert!(e.to_string().contains("step of -1"), "{e}");
}

#[test]
fn ops_kernels_for_narrow_types() {
    use cudajit::ops::{Elem, Elementwise, Reduction, Scan};
    fn one<T: Int + cudajit::ops::ReduceScalar>(lit: T) {
        let name = T::TY.name();
        let ew = Elementwise::<(Elem<T>, Elem<T>), Expr<T>>::new(
            &format!("ew_{name}"),
            move |(a, b)| a * lit + b,
        )
        .unwrap();
        let sum = Reduction::<T, T, T>::new(
            &format!("sum_{name}_t"),
            |x| x,
            |a, b| a + b,
            T::from_bits(0),
        )
        .unwrap();
        let scan =
            Scan::<T>::new(&format!("cumsum_{name}_t"), |a, b| a + b, T::from_bits(0)).unwrap();
        for cc in TARGETS {
            let opts = PtxOptions::for_cc(cc.0, cc.1);
            let mut all = ew.variants_ptx(&opts, 2).unwrap();
            all.extend(sum.variants_ptx(&opts).unwrap());
            all.extend(scan.variants_ptx(&opts).unwrap());
            all.extend(cudajit::ops::arg_variants_ptx::<T>(true, &opts).unwrap());
            // Narrow elements have no 16-byte vector variants.
            let vector = |n: &str| n.contains("vec") || n.contains("_v2") || n.contains("_v4");
            assert!(all.iter().all(|(n, _)| !vector(n)), "{all:?}");
            for (n, ptx) in all {
                check_ptx(&ptx, cc, &n);
                // No operation has a compare-and-swap retry loop beside a block barrier, so none
                // is compiled at -O0 (workaround 19).
                assert!(
                    !ptx.contains("// cudajit: compile at -O0"),
                    "{n} asks for -O0"
                );
            }
        }
    }
    one::<i8>(3);
    one::<u8>(3);
    one::<i16>(3);
    one::<u16>(3);
}

#[test]
fn vector_accesses_of_narrow_types() {
    // 4 x u16 is an 8-byte vector; 8-bit elements make no 8- or 16-byte vector of 2 or 4.
    let k = Kernel::<(&[u16], &mut [u16])>::build("vec_u16", |k, (x, out)| {
        let i = k.grid1();
        let v = x.load_vec::<4>(i);
        out.store_vec::<4>(i, [v[3], v[2], v[1], v[0]]);
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    assert!(ptx.contains("ld.global.nc.v4.u16"), "{ptx}");
    assert!(ptx.contains("st.global.v4.u16"), "{ptx}");
    let e = Kernel::<(&[i8], &mut [i8])>::build("vec_i8", |k, (x, out)| {
        let i = k.grid1();
        out.set(i, x.load_vec::<4>(i)[0]);
    })
    .err()
    .expect("a 4-byte vector is a build error");
    assert!(
        e.to_string().contains("vector accesses move 8 or 16 bytes"),
        "{e}"
    );
}

#[test]
fn narrow_device_function_calls() {
    use cudajit::codegen::DeviceFn;
    let f = DeviceFn::<(i8, u16), i16>::build("narrow_fn", |_, (a, b)| {
        a.cast::<i16>() * 3i16 - b.cast::<i16>()
    })
    .unwrap()
    .no_inline();
    let k = Kernel::<(&[i8], &[u16], &mut [i16])>::build("narrow_call", |k, (a, b, out)| {
        let i = k.grid1();
        out.set(i, f.call((a.at(i), b.at(i))));
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    assert!(ptx.contains("call.uni"), "{ptx}");
}
