//! Atomics: every operation on every element type, in global and shared memory, compiled for
//! sm_75 and sm_90 and checked by ptxas; the PTX instructions each lowers to; misuse errors.

use cudajit::codegen::{
    AtomicCounter, Expr, Int, Kernel, KernelBuilder, Num, PtxOptions, SliceMut,
};
use cudajit::Error;

use crate::common::{check_ptx, compile_all, compile_all_args};

/// Every atomic all numeric types have; results go to `old[base + 0..8]`.
fn num_atomics<T: Num>(a: SliceMut<T>, x: Expr<T>, y: Expr<T>, old: SliceMut<T>, base: Expr<u64>) {
    let j = base % 64u64;
    old.set(base, a.atomic_add(j, x));
    old.set(base + 1u64, a.atomic_sub(j, x));
    old.set(base + 2u64, a.atomic_min(j, x));
    old.set(base + 3u64, a.atomic_max(j, x));
    old.set(base + 4u64, a.atomic_nanmin(j, y));
    old.set(base + 5u64, a.atomic_nanmax(j, y));
    old.set(base + 6u64, a.atomic_exch(j, x));
    old.set(base + 7u64, a.atomic_cas(j, x, y));
}

/// The bitwise atomics; results go to `old[base + 8..11]`.
fn int_atomics<T: Int>(a: SliceMut<T>, x: Expr<T>, old: SliceMut<T>, base: Expr<u64>) {
    let j = base % 64u64;
    old.set(base + 8u64, a.atomic_and(j, x));
    old.set(base + 9u64, a.atomic_or(j, x));
    old.set(base + 10u64, a.atomic_xor(j, x));
}

/// The wrapping counters; results go to `old[base + 11..13]`.
fn counter_atomics<T: AtomicCounter>(
    a: SliceMut<T>,
    x: Expr<T>,
    old: SliceMut<T>,
    base: Expr<u64>,
) {
    let j = base % 64u64;
    old.set(base + 11u64, a.atomic_inc(j, x));
    old.set(base + 12u64, a.atomic_dec(j, x));
}

macro_rules! atomics_kernel {
    ($t:ty, $name:expr) => {
        atomics_kernel!($t, $name, |_, _, _, _| {})
    };
    ($t:ty, $name:expr, $extra:expr) => {
        Kernel::<(&mut [$t], &[$t], &mut [$t])>::build($name, |k: &KernelBuilder, (a, v, old)| {
            let i = k.grid1();
            k.if_(i.lt(v.len()), |_| {
                let x = v.at(i);
                let base = i * 16u64;
                num_atomics(a, x, x + x, old, base);
                let extra = $extra;
                extra(a, x, old, base);
            });
        })
        .unwrap()
    };
}

fn count(ptx: &str, pat: &str) -> usize {
    ptx.matches(pat).count()
}

#[test]
fn global_atomics_for_every_type() {
    let ptx = compile_all(&atomics_kernel!(i32, "atomics_i32", |a, x, old, base| {
        int_atomics(a, x, old, base)
    }))
    .0;
    for pat in [
        "atom.global.add.u32",
        "atom.global.min.s32",
        "atom.global.max.s32",
        "atom.global.exch.b32",
        "atom.global.cas.b32",
        "atom.global.and.b32",
        "atom.global.or.b32",
        "atom.global.xor.b32",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }
    // Sub is an add of the negation (LLVM 19 prints `atomicrmw sub` with a bogus operand).
    assert_eq!(count(&ptx, "atom.global.add.u32"), 2, "{ptx}");
    assert!(!ptx.contains("temp"), "{ptx}");

    let ptx = compile_all(&atomics_kernel!(u32, "atomics_u32", |a, x, old, base| {
        int_atomics(a, x, old, base);
        counter_atomics(a, x, old, base)
    }))
    .0;
    for pat in [
        "atom.global.add.u32",
        "atom.global.min.u32",
        "atom.global.max.u32",
        "atom.global.inc.u32",
        "atom.global.dec.u32",
        "atom.global.and.b32",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }

    let ptx = compile_all(&atomics_kernel!(i64, "atomics_i64", |a, x, old, base| {
        int_atomics(a, x, old, base)
    }))
    .0;
    for pat in [
        "atom.global.add.u64",
        "atom.global.min.s64",
        "atom.global.max.s64",
        "atom.global.exch.b64",
        "atom.global.cas.b64",
        "atom.global.and.b64",
        "atom.global.or.b64",
        "atom.global.xor.b64",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }
    assert!(!ptx.contains("temp"), "{ptx}");

    let ptx = compile_all(&atomics_kernel!(u64, "atomics_u64", |a, x, old, base| {
        int_atomics(a, x, old, base);
        counter_atomics(a, x, old, base)
    }))
    .0;
    for pat in [
        "atom.global.add.u64",
        "atom.global.min.u64",
        "atom.global.max.u64",
        // inc/dec on u64: compare-and-swap loops
        "atom.global.cas.b64",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }
    assert!(count(&ptx, "atom.global.cas.b64") >= 3, "{ptx}");

    let ptx = compile_all(&atomics_kernel!(f32, "atomics_f32")).0;
    assert_eq!(
        count(&ptx, "atom.global.add.f32"),
        2,
        "add and sub use the hardware's float add:\n{ptx}"
    );
    assert!(ptx.contains("atom.global.exch.b32"), "{ptx}");
    // min, max, nanmin, nanmax: CAS loops; and cas itself.
    assert!(count(&ptx, "atom.global.cas.b32") >= 5, "{ptx}");

    let ptx = compile_all(&atomics_kernel!(f64, "atomics_f64")).0;
    assert_eq!(count(&ptx, "atom.global.add.f64"), 2, "{ptx}");
    assert!(ptx.contains("atom.global.exch.b64"), "{ptx}");
    assert!(count(&ptx, "atom.global.cas.b64") >= 5, "{ptx}");
}

#[test]
fn shared_memory_atomics() {
    let k = Kernel::<(&[u32], &[f32], &[f64], &mut [u32], &mut [f32], &mut [f64])>::build(
        "atomics_shared",
        |k, (xu, xf, xd, ou, of, od)| {
            let t = k.thread_idx().x;
            let i = k.grid1();
            let su = k.shared_array::<u32>(32);
            let sf = k.shared_array::<f32>(32);
            let sd = k.shared_array::<f64>(32);
            let sl = k.shared_array::<u64>(32);
            let dynamic = k.dynamic_shared::<i32>();
            k.if_(t.lt(32u32), |_| {
                su.set(t, 0u32);
                sf.set(t, 0.0f32);
                sd.set(t, 0.0f64);
                sl.set(t, 0u64);
                dynamic.set(t, 0i32);
            });
            k.syncthreads();
            let j = t % 32u32;
            let a = su.atomic_add(j, xu.at(i));
            let b = su.atomic_inc(j, 1000u32);
            let c = su.atomic_dec(j, 1000u32);
            let d = su.atomic_cas(j, a, b);
            let e = su.atomic_max(j, c);
            let f = sf.atomic_add(j, xf.at(i));
            let g = sf.atomic_max(j, xf.at(i));
            let h = sd.atomic_add(j, xd.at(i));
            let l = sl.atomic_or(j, xu.at(i).cast::<u64>());
            let m = dynamic.atomic_xor(j, xu.at(i).cast::<i32>());
            k.syncthreads();
            ou.set(i, a + b + c + d + e + l.cast::<u32>() + m.cast::<u32>());
            of.set(i, f + g);
            od.set(i, h);
        },
    )
    .unwrap();
    let ptx = compile_all(&k).0;
    for pat in [
        "atom.shared.add.u32",
        "atom.shared.inc.u32",
        "atom.shared.dec.u32",
        "atom.shared.cas.b32",
        "atom.shared.max.u32",
        "atom.shared.add.f32",
        "atom.shared.add.f64",
        "atom.shared.or.b64",
        "atom.shared.xor.b32",
    ] {
        assert!(ptx.contains(pat), "{pat} missing:\n{ptx}");
    }
    assert!(!ptx.contains("atom.global"), "{ptx}");
}

#[test]
fn f64_add_before_sm60_is_a_cas_loop_and_fastmath_compiles() {
    let k = Kernel::<(&mut [f64], &[f64], &mut [f32])>::build_with(
        "atomics_old_target",
        PtxOptions::default().fastmath(true),
        |k, (a, x, b)| {
            let i = k.grid1();
            a.atomic_add(0u32, x.at(i));
            b.atomic_add(1u32, x.at(i).cast::<f32>());
            b.atomic_min(2u32, x.at(i).cast::<f32>());
        },
    )
    .unwrap();
    let ptx = k.compile_ptx(&PtxOptions::for_cc(5, 2)).unwrap();
    check_ptx(&ptx, (5, 2), "atomics_old_target");
    assert!(!ptx.contains("atom.global.add.f64"), "{ptx}");
    assert!(ptx.contains("atom.global.cas.b64"), "{ptx}");
    assert!(ptx.contains("atom.global.add.f32"), "{ptx}");
    let ptx = compile_all(&k).0;
    assert!(ptx.contains("atom.global.add.f64"), "{ptx}");
}

/// An array the kernel only ever reads with `atomic_load` (a flag another kernel or the host
/// sets): LLVM 19 took the load for a read-only `ld.global.nc` and aborted the process
/// ("Cannot select: AtomicLoad"); found by the fuzzer's block programs. Every element type,
/// sm_75 and sm_90, through ptxas.
#[test]
fn atomic_load_of_an_array_nothing_else_touches_compiles() {
    fn one<T: Num>(name: &str) {
        let k = Kernel::<(&[u32], &mut [T], &mut [T])>::build(name, |k, (idx, flags, out)| {
            let t = k.thread_idx().x;
            out.set(t, flags.atomic_load(idx.at(t) % 64u32));
        })
        .unwrap();
        let ptx = compile_all(&k).0;
        assert!(
            ptx.contains("ld.volatile.global") || ptx.contains("ld.relaxed.gpu.global"),
            "{ptx}"
        );
        // (`idx` is read through the non-coherent path, `flags` never.)
        assert_eq!(ptx.matches("ld.global.nc").count(), 1, "{ptx}");
    }
    one::<i8>("flag_i8");
    one::<u8>("flag_u8");
    one::<i16>("flag_i16");
    one::<u16>("flag_u16");
    one::<i32>("flag_i32");
    one::<u32>("flag_u32");
    one::<i64>("flag_i64");
    one::<u64>("flag_u64");
    one::<f32>("flag_f32");
    one::<f64>("flag_f64");
    one::<cudajit::f16>("flag_f16");
    one::<cudajit::bf16>("flag_bf16");
}

/// Every volatile load (a float min/max loop's first read, `atomic_load`) is ORed with
/// `%tid.x >> 16` (workaround 15: ptxas took a load from a warp-uniform address for one value
/// in every lane, seed 45900117). Through ptxas for sm_90.
#[test]
fn volatile_loads_are_ored_with_a_hidden_zero() {
    let k =
        Kernel::<(&mut [f32], &mut [u32], &mut [f32])>::build("hidden_zero", |k, (f, u, out)| {
            let t = k.thread_idx().x;
            let a = f.atomic_max(0u32, out.at(t));
            let d = u.atomic_load(1u32);
            let b = u.atomic_add(0u32, d);
            out.set(t, a + b.cast::<f32>());
        })
        .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(ptx.contains("atom.global.add.u32"), "{ptx}");
    let lines: Vec<&str> = ptx.lines().collect();
    let loads: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("ld.volatile."))
        .collect();
    assert!(loads.len() >= 2, "{ptx}");
    for i in loads {
        let next = lines.get(i + 1).copied().unwrap_or("");
        assert!(
            next.contains("shr.u32 %cj_tid, %cj_tid, 16") && next.contains("or.b"),
            "a volatile load without workaround 15's OR: {}\n{next}",
            lines[i]
        );
    }
}

/// A compare-and-swap retry loop (a float max on shared memory) beside a block barrier: the
/// PTX asks its compiler for -O0 (workaround 19: warps a loop left split, past aligned
/// barriers, clobbered each other's uniform registers), and ptxas takes it at -O0. Without
/// the barrier, or with an atomic the hardware has (no loop), it does not.
#[test]
fn a_cas_loop_beside_a_block_barrier_asks_for_o0() {
    const HINT: &str = "// cudajit: compile at -O0";
    let build = |name: &str, barrier: bool, native: bool| {
        Kernel::<(&[f32], &mut [f32])>::build(name, |k, (x, out)| {
            let t = k.thread_idx().x;
            let sh = k.shared_array::<f32>(1);
            k.if_(t.eq(0u32), |_| sh.set(0u32, f32::NEG_INFINITY));
            if barrier {
                k.syncthreads();
            }
            let old = if native {
                sh.atomic_add(0u32, x.at(t))
            } else {
                sh.atomic_max(0u32, x.at(t))
            };
            if barrier {
                k.syncthreads();
            }
            out.set(t, old + sh.at(0u32));
        })
        .unwrap()
    };
    let ptx = compile_all_args(&build("cas_loop_barrier", true, false), &["-O0"]).0;
    assert_eq!(ptx.matches(HINT).count(), 1, "{ptx}");
    assert!(
        ptx.contains("atom.shared.cas.b32") && ptx.contains("bar.sync"),
        "{ptx}"
    );
    let ptx = compile_all(&build("cas_loop_alone", false, false)).0;
    assert!(
        ptx.contains("atom.shared.cas.b32") && !ptx.contains(HINT),
        "{ptx}"
    );
    let ptx = compile_all(&build("native_barrier", true, true)).0;
    assert!(ptx.contains("bar.sync") && !ptx.contains(HINT), "{ptx}");
}

#[test]
fn cas_loop_in_a_kernel_compiles() {
    // A lock-free increment: retry until our compare-and-swap wins.
    let k = Kernel::<(&mut [u32],)>::build("cas_increment", |k, (c,)| {
        let seen = k.var(c.at(0u32));
        let done = k.var(false);
        k.while_(
            |_| !done.get(),
            |_| {
                let old = c.atomic_cas(0u32, seen.get(), seen.get() + 1u32);
                done.set(old.eq(seen.get()));
                seen.set(old);
            },
        );
    })
    .unwrap();
    let ptx = compile_all(&k).0;
    assert!(ptx.contains("atom.global.cas.b32"), "{ptx}");
}

#[test]
fn atomics_on_local_arrays_are_a_build_error() {
    let r = Kernel::<(&mut [u32],)>::build("local_atomic", |k, (out,)| {
        let l = k.local_array::<u32>(4);
        l.set(0u32, 0u32);
        out.set(0u32, l.atomic_add(0u32, 1u32));
    });
    match r {
        Err(e @ Error::Build { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("atomic_add") && message.contains("local array"),
                "{message}"
            )
        }
        Err(e) => panic!("expected a kernel build error, got {e:?}"),
        Ok(_) => panic!("expected a kernel build error"),
    }
}
