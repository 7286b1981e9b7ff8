//! The data movement of a tensor-core matrix product in PTX: `ldmatrix` (every count, with and
//! without `.trans`, every 16-bit type, 32-bit arrays, the fragment loaders, tf32's included) and `cp.async` (every size, `.cg`
//! for 16 bytes, the zero-filling form, commit and waits), for sm_80 and sm_90 through ptxas;
//! older targets and arrays in the wrong memory are clear errors.

use cudajit::codegen::{FragA, FragB, FragC, Kernel, KernelParams, LdMatrixElem, PtxOptions};
use cudajit::{bf16, f16, BuildErrorKind, Error};

use crate::common::check_ptx;

/// Compiles `k` for sm_80 and sm_90, checks both with ptxas, checks that each of `want`
/// appears `count` times in the sm_90 PTX, and that sm_75 is refused naming `what`.
fn check<P: KernelParams>(k: &Kernel<P>, want: &[(&str, usize)], what: &str) -> String {
    let mut last = String::new();
    for cc in [(8, 0), (9, 0)] {
        let ptx = k.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        for (w, n) in want {
            assert_eq!(ptx.matches(w).count(), *n, "{w} in {}:\n{ptx}", k.name());
        }
        check_ptx(&ptx, cc, k.name());
        last = ptx;
    }
    let err = k.compile_ptx(&PtxOptions::for_cc(7, 5)).unwrap_err();
    assert!(
        matches!(err, Error::Codegen(_))
            && err.to_string().contains(what)
            && err.to_string().contains("compute capability 8.0 or later")
            && err.to_string().contains("sm_75"),
        "{err}"
    );
    last
}

/// One kernel with ldmatrix of 1, 2 and 4 matrices, plain and transposed, from a static and
/// from the dynamic shared array.
fn ldmatrix_kernel<T: LdMatrixElem>() -> Kernel<(&'static mut [u32],)> {
    Kernel::<(&mut [u32],)>::build(&format!("ldm_{}", T::TY.name()), |k, (out,)| {
        let tile = k.shared_array2::<T>(32, 16);
        let dynamic = k.dynamic_shared::<T>();
        let l = k.lane_id();
        let zero = T::from_bits(0);
        k.for_step(l, 512u32, 32u32, |_, i| tile.set(i, zero));
        k.syncwarp(u32::MAX);
        let row = tile.index2(l, 0u32);
        let [a] = tile.ldmatrix::<1>(row);
        let [b, c] = tile.ldmatrix::<2>(row);
        let [d, e, f, g] = tile.ldmatrix::<4>(row);
        let [h] = tile.ldmatrix_trans::<1>(row);
        let [i, j] = tile.ldmatrix_trans::<2>(row);
        let [m, n, o, p] = dynamic.ldmatrix_trans::<4>(l * 8u32);
        let sum = [a, b, c, d, e, f, g, h, i, j, m, n, o, p]
            .into_iter()
            .fold(k.lit(0u32), |s, x| s ^ x);
        out.set(l, sum);
    })
    .unwrap()
}

fn ldmatrix_ptx<T: LdMatrixElem>() {
    check(
        &ldmatrix_kernel::<T>(),
        &[
            ("ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x2.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 1),
        ],
        "ldmatrix",
    );
}

#[test]
fn ldmatrix_every_form_f16() {
    ldmatrix_ptx::<f16>();
}

#[test]
fn ldmatrix_every_form_bf16_u16_i16() {
    ldmatrix_ptx::<bf16>();
    ldmatrix_ptx::<u16>();
    ldmatrix_ptx::<i16>();
}

/// The fragment loaders feed the MMA: one x4 for A, one x2.trans for row-major B, one x2 for
/// B stored transposed, one x4.trans for A stored transposed; no scalar shared loads.
#[test]
fn fragments_loaded_with_ldmatrix() {
    let k = Kernel::<(&mut [f32],)>::build("frag_ldm", |k, (d,)| {
        let sa = k.shared_array2::<f16>(16, 24);
        let sb = k.shared_array2::<f16>(16, 8);
        let sbt = k.shared_array2::<f16>(8, 16);
        let l = k.lane_id();
        k.for_step(l, 384u32, 32u32, |_, i| sa.set(i, i.cast::<f16>()));
        k.for_step(l, 128u32, 32u32, |_, i| {
            sb.set(i, i.cast::<f16>());
            sbt.set(i, i.cast::<f16>());
        });
        k.syncthreads();
        let fa = FragA::<f16>::load_shared(k, &sa, |r, c| sa.index2(r, c));
        let fat = FragA::<f16>::load_shared_transposed(k, &sa, |kk, m| sa.index2(kk, m));
        let fb = FragB::<f16>::load_shared(k, &sb, |kk, n| sb.index2(kk, n));
        let fbt = FragB::<f16>::load_shared_transposed(k, &sbt, |n, kk| sbt.index2(n, kk));
        let acc = k.mma(&fa, &fb, &FragC::zeros());
        let acc = k.mma(&fat, &fbt, &acc);
        acc.for_each(k, |r, c, v| d.set(r * 8u32 + c, v));
    })
    .unwrap();
    let ptx = check(
        &k,
        &[
            ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x2.shared.b16", 1),
            ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 2),
        ],
        "ldmatrix",
    );
    assert!(!ptx.contains("ld.shared"), "{ptx}");
}

/// The tf32 fragment loaders from K-contiguous f32 tiles: one x4 for A `[m][k]`, one x2 for B
/// `[n][k]`, one x4 for the pair; each register rounded to tf32 (`cvt.rna.tf32.f32`) as it
/// enters the MMA; no scalar shared loads. Plain `ldmatrix` of u32 and i32 arrays compiles too.
#[test]
fn tf32_fragments_loaded_with_ldmatrix() {
    let k = Kernel::<(&mut [f32], &mut [u32])>::build("frag_ldm_tf32", |k, (d, w)| {
        let sa = k.shared_array2::<f32>(16, 12);
        let sbt = k.shared_array2::<f32>(16, 8);
        let su = k.shared_array2::<u32>(8, 4);
        let si = k.shared_array2::<i32>(8, 4);
        let l = k.lane_id();
        k.for_step(l, 192u32, 32u32, |_, i| sa.set(i, i.cast::<f32>()));
        k.for_step(l, 128u32, 32u32, |_, i| sbt.set(i, i.cast::<f32>()));
        su.set(l, l);
        si.set(l, l.cast::<i32>());
        k.syncthreads();
        let fa = FragA::<f32>::load_shared_tf32(k, &sa, |r, c| sa.index2(r, c));
        let fb = FragB::<f32>::load_shared_transposed_tf32(k, &sbt, |n, kk| sbt.index2(n, kk));
        let [f0, f1] =
            FragB::<f32>::load_shared_transposed_pair_tf32(k, &sbt, |n, kk| sbt.index2(n, kk));
        let acc = k.mma(&fa, &fb, &FragC::zeros());
        let acc = k.mma(&fa, &f0, &acc);
        let acc = k.mma(&fa, &f1, &acc);
        acc.for_each(k, |r, c, v| d.set(r * 8u32 + c, v));
        let [u] = su.ldmatrix::<1>((l & 7u32) * 4u32);
        let [i] = si.ldmatrix::<1>((l & 7u32) * 4u32);
        w.set(l, u ^ i.bitcast::<u32>());
    })
    .unwrap();
    let ptx = check(
        &k,
        &[
            ("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 2),
            ("ldmatrix.sync.aligned.m8n8.x2.shared.b16", 1),
            ("ldmatrix.sync.aligned.m8n8.x1.shared.b16", 2),
            ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 3),
        ],
        "ldmatrix",
    );
    assert!(!ptx.contains("ld.shared"), "{ptx}");
    assert!(ptx.contains("cvt.rna.tf32.f32"), "{ptx}");
}

/// Every copy size, `.cg` for 16 bytes, the zero-filling forms, commit, wait_group and
/// wait_all; into static and dynamic shared memory.
#[test]
fn cp_async_every_form() {
    let k = Kernel::<(&[f32], &[f16], &[f64], &mut [f32])>::build(
        "cp_async_forms",
        |k, (x, h, w, out)| {
            let s = k.shared_array::<f32>(512);
            let sh = k.shared_array::<f16>(512);
            let sd = k.dynamic_shared::<f64>();
            let t = k.thread_idx().x;
            s.cp_async::<4>(t, &x, t);
            s.cp_async::<8>(t * 2u32, &x, t * 2u32);
            s.cp_async::<16>(t * 4u32, &x, t * 4u32);
            sh.cp_async::<4>(t * 2u32, &h, t * 2u32);
            sd.cp_async::<16>(t * 2u32, &w, t * 2u32);
            k.cp_async_commit();
            let n = t % 17u32;
            sh.cp_async_zfill::<8>(t * 4u32, &h, t * 4u32, n.min(8u32));
            s.cp_async_zfill::<16>(t * 4u32, &x, t * 4u32, n.min(16u32));
            sd.cp_async_zfill::<8>(t, &w, t, n.min(8u32));
            k.cp_async_commit();
            k.cp_async_wait(1);
            k.cp_async_wait(0);
            k.cp_async_wait_all();
            k.syncthreads();
            out.set(t, s.at(t) + sh.at(t).cast::<f32>() + sd.at(t).cast::<f32>());
        },
    )
    .unwrap();
    check(
        &k,
        &[
            ("cp.async.ca.shared.global", 5),
            ("cp.async.cg.shared.global", 3),
            ("], 4;", 2),
            ("], 8;", 1),
            ("], 16;", 2),
            ("], 8, %r", 2),
            ("], 16, %r", 1),
            ("cp.async.commit_group;", 2),
            ("cp.async.wait_group 1;", 1),
            ("cp.async.wait_group 0;", 1),
            ("cp.async.wait_all;", 1),
        ],
        "cp.async",
    );
}

/// A double-buffered loop: the copies of the next stage issued in the loop, before the wait
/// for the current one.
#[test]
fn cp_async_double_buffered_order() {
    let k = Kernel::<(&[f32], &mut [f32])>::build("staged", |k, (x, out)| {
        let tiles = k.shared_array2::<f32>(2, 512);
        let t = k.thread_idx().x;
        let n = (x.len() / 512u64).cast::<u32>();
        tiles.cp_async::<16>(tiles.index2(0u32, t * 4u32), &x, t * 4u32);
        k.cp_async_commit();
        let acc = k.var(0.0f32);
        k.for_range(0u32, n, |k, tile| {
            k.if_((tile + 1u32).lt(n), |_| {
                let s = (tile + 1u32) % 2u32;
                let from = (tile + 1u32) * 512u32 + t * 4u32;
                tiles.cp_async::<16>(tiles.index2(s, t * 4u32), &x, from);
            });
            k.cp_async_commit();
            k.cp_async_wait(1);
            k.syncthreads();
            acc.set(acc.get() + tiles.at2(tile % 2u32, 511u32 - t));
            k.syncthreads();
        });
        out.set(t, acc.get());
    })
    .unwrap();
    check(
        &k,
        &[
            ("cp.async.cg.shared.global", 2),
            ("cp.async.commit_group;", 2),
            ("cp.async.wait_group 1;", 1),
        ],
        "cp.async",
    );
}

fn build_error_kinds<P: KernelParams>(
    r: cudajit::Result<Kernel<P>>,
) -> Vec<(BuildErrorKind, String)> {
    match r {
        Err(e) if matches!(e, Error::Build { .. }) => e
            .build_errors()
            .iter()
            .map(|b| (b.kind(), b.message().to_string()))
            .collect(),
        Err(e) => panic!("not a build error: {e}"),
        Ok(_) => panic!("built"),
    }
}

/// cp.async needs a shared destination and a global source; ldmatrix a shared array.
#[test]
fn wrong_memory_is_a_build_error() {
    let errs = build_error_kinds(Kernel::<(&[f32], &mut [f32])>::build(
        "cp_to_global",
        |k, (x, out)| {
            out.cp_async::<4>(k.thread_idx().x, &x, 0u32);
        },
    ));
    assert!(
        errs.iter()
            .any(|(kind, m)| *kind == BuildErrorKind::ArrayAccess
                && m.contains("copies into shared memory")),
        "{errs:?}"
    );
    let errs = build_error_kinds(Kernel::<(&mut [f32],)>::build(
        "cp_from_shared",
        |k, (_out,)| {
            let (a, b) = (k.shared_array::<f32>(32), k.shared_array::<f32>(32));
            a.cp_async::<4>(k.thread_idx().x, &b, 0u32);
        },
    ));
    assert!(
        errs.iter()
            .any(|(kind, m)| *kind == BuildErrorKind::ArrayAccess
                && m.contains("copies from global memory")),
        "{errs:?}"
    );
    let errs = build_error_kinds(Kernel::<(&[f16], &mut [u32])>::build(
        "ldm_global",
        |k, (x, out)| {
            let [r] = x.ldmatrix::<1>(k.lane_id() * 8u32);
            out.set(k.lane_id(), r);
        },
    ));
    assert!(
        errs.iter()
            .any(|(kind, m)| *kind == BuildErrorKind::ArrayAccess
                && m.contains("ldmatrix loads from shared memory")),
        "{errs:?}"
    );
}

/// 1-byte and 8-byte elements, several per copy.
#[test]
fn cp_async_f64_and_u8() {
    let k = Kernel::<(&[u8], &[f64], &mut [u8])>::build("cp_bytes", |k, (b, d, out)| {
        let sb = k.shared_array::<u8>(512);
        let sd = k.shared_array::<f64>(64);
        let t = k.thread_idx().x;
        sb.cp_async::<4>(t * 4u32, &b, t * 4u32);
        sb.cp_async::<16>(t * 16u32, &b, t * 16u32);
        sd.cp_async::<8>(t, &d, t);
        k.cp_async_wait_all();
        k.syncthreads();
        out.set(t, sb.at(t) + sd.at(t).cast::<u8>());
    })
    .unwrap();
    check(
        &k,
        &[
            ("cp.async.ca.shared.global", 2),
            ("cp.async.cg.shared.global", 1),
        ],
        "cp.async",
    );
}

/// The double-buffered product of docs/GUIDE.md ("Tensor cores") assembles for sm_80 and
/// sm_90 without spills: its copies, matrix loads and MMAs are all there.
#[test]
fn staged_product_ptx() {
    use cudajit::codegen::{Expr, Var};
    let (n, kk) = (32u32, 256u32);
    let gemm = Kernel::<(&[f16], &[f16], &mut [f32])>::build("gemm", |k, (a, b, d)| {
        let (t, w) = (k.thread_idx().x, k.thread_idx().x / 32u32);
        let sa = k.shared_array3::<f16>(2, 64, 16);
        let sb = k.shared_array3::<f16>(2, 16, 32);
        let load = |step: Expr<u32>| {
            let (st, k0, r, c) = (step % 2u32, step * 16u32, t / 2u32, (t % 2u32) * 8u32);
            sa.cp_async::<16>(sa.index3(st, r, c), &a, r * kk + k0 + c);
            k.if_(t.lt(64u32), |_| {
                let (r, c) = (t / 4u32, (t % 4u32) * 8u32);
                sb.cp_async::<16>(sb.index3(st, r, c), &b, (k0 + r) * n + c);
            });
        };
        let acc: Vec<[Var<f32>; 4]> = (0..4)
            .map(|_| FragC::<f16>::zeros().elems().map(|e| k.var(e)))
            .collect();
        load(k.lit(0u32));
        k.cp_async_commit();
        k.for_range(0u32, kk / 16u32, |k, step| {
            k.if_((step + 1u32).lt(kk / 16u32), |_| load(step + 1u32));
            k.cp_async_commit();
            k.cp_async_wait(1);
            k.syncthreads();
            let st = step % 2u32;
            let fa = FragA::<f16>::load_shared(k, &sa, |r, c| sa.index3(st, w * 16u32 + r, c));
            for (j, acc) in acc.iter().enumerate() {
                let n0 = j as u32 * 8;
                let fb = FragB::<f16>::load_shared(k, &sb, |r, c| sb.index3(st, r, n0 + c));
                let next = k.mma(
                    &fa,
                    &fb,
                    &FragC::from_elems(acc.each_ref().map(|v| v.get())),
                );
                acc.iter().zip(next.elems()).for_each(|(v, e)| v.set(e));
            }
            k.syncthreads();
        });
        for (j, acc) in acc.iter().enumerate() {
            FragC::<f16>::from_elems(acc.each_ref().map(|v| v.get())).for_each(k, |r, c, v| {
                d.set((w * 16u32 + r) * n + j as u32 * 8 + c, v)
            });
        }
    })
    .unwrap();
    for cc in [(8, 0), (9, 0)] {
        let ptx = gemm.compile_ptx(&PtxOptions::for_cc(cc.0, cc.1)).unwrap();
        for w in [
            "cp.async.cg.shared.global",
            "cp.async.commit_group;",
            "cp.async.wait_group 1;",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        ] {
            assert!(ptx.contains(w), "{w}:\n{ptx}");
        }
        assert!(!ptx.contains("ld.shared"), "{ptx}");
        let report = check_ptx(&ptx, cc, gemm.name());
        assert_eq!(report.spill_bytes, 0, "{}", report.log);
    }
}
