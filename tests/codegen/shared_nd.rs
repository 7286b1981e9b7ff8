//! n-D shared and local arrays (`shared_array2/3`, `local_array2/3`, `dynamic_shared2/3`):
//! compiled for sm_75 and sm_90 and checked by ptxas; an n-D access gives exactly the PTX of
//! the same access written with a flat index by hand (one multiply-add, no per-dimension
//! overhead, no bounds check); misuse is a build error.

use cudajit::codegen::{Expr, Kernel, KernelParams, NdMut, NdRef, PtxOptions};
use cudajit::{BuildError, BuildErrorKind, Error};

use crate::common::compile_all;

/// The PTX of `k` for sm_90 with its name replaced by `NAME` (the kernel's, its parameters'
/// and its shared arrays' names contain it), so two kernels' bodies compare.
fn body<P: KernelParams>(k: &Kernel<P>) -> String {
    let ptx = k.compile_ptx(&PtxOptions::for_cc(9, 0)).unwrap();
    ptx.replace(k.name(), "NAME")
}

/// The instructions of `ptx`'s body, by opcode, sorted: two kernels that compute the same
/// things in another order compare equal.
fn opcodes(ptx: &str) -> Vec<String> {
    let mut ops: Vec<String> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('.'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    ops.sort();
    ops
}

/// `i * n + j` in `i64`, as an n-D index flattens.
fn flat(i: Expr<u32>, n: i64, j: Expr<u32>) -> Expr<i64> {
    i.cast::<i64>() * n + j.cast::<i64>()
}

/// The tiled transpose with a 2-D shared tile, and the same kernel with the flat index
/// written by hand: the same PTX.
#[test]
fn a_2d_shared_tile_is_one_multiply_add_like_a_flat_index() {
    let nd = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("tr_nd", |k, (a, b)| {
        let tile = k.shared_array2::<f32>(32, 33);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 32u32, k.block_idx().y * 32u32);
        tile.set2(ty, tx, a.at2(by + ty, bx + tx));
        k.syncthreads();
        b.set2(bx + ty, by + tx, tile.at2(tx, ty));
    })
    .unwrap();
    let by_hand = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("tr_flat", |k, (a, b)| {
        let tile = k.shared_array::<f32>(32 * 33);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 32u32, k.block_idx().y * 32u32);
        tile.set(flat(ty, 33, tx), a.at2(by + ty, bx + tx));
        k.syncthreads();
        b.set2(bx + ty, by + tx, tile.at(flat(tx, 33, ty)));
    })
    .unwrap();
    let (ptx, _) = compile_all(&nd);
    assert!(
        ptx.contains(".shared .align 16 .b8 tr_nd_shared0[4224];"),
        "32 x 33 f32 = 4224 bytes: {ptx}"
    );
    assert_eq!(body(&nd), body(&by_hand));
    // No compare or branch: the GPU does not check bounds (as numba, and as 1-D arrays).
    assert!(!ptx.contains("setp") && !ptx.contains("trap"), "{ptx}");
}

/// A 3-D shared array (with `index3` and `dim`), a 3-D local array, and a shaped view of the
/// dynamic shared memory whose extents are kernel parameters (the same instructions as its
/// hand-flattened form).
#[test]
fn shared_3d_local_3d_and_dynamic_shaped_views_compile() {
    let cube = Kernel::<(&mut [u32],)>::build("cube", |k, (out,)| {
        let c = k.shared_array3::<u32>(4, 8, 8);
        let t = k.thread_idx();
        c.set3(t.z, t.y, t.x, t.x + t.y * 8u32 + t.z * 64u32);
        k.syncthreads();
        let v = c.at3(t.z, t.x, t.y) + (c.dim(0) * c.dim(1) + c.stride(0)).cast::<u32>();
        out.set(c.index3(t.z, t.y, t.x), v);
    })
    .unwrap();
    let (ptx, _) = compile_all(&cube);
    assert!(
        ptx.contains(".shared .align 16 .b8 cube_shared0[1024];"),
        "{ptx}"
    );
    // dim(0) * dim(1) + stride(0) = 4 * 8 + 64, folded.
    assert!(ptx.contains("96"), "{ptx}");

    let local = Kernel::<(&mut [f32], u32)>::build("loc3", |k, (out, n)| {
        let m = k.local_array3::<f32>(2, 3, 4);
        k.for_range(0u32, 24u32, |_, i| {
            m.set3(i / 12u32, i / 4u32 % 3u32, i % 4u32, i.cast::<f32>())
        });
        let t = (k.thread_idx().x + n) % 24u32;
        out.set(k.grid1(), m.at3(t / 12u32, t / 4u32 % 3u32, t % 4u32));
    })
    .unwrap();
    compile_all(&local);

    let dynamic = Kernel::<(&[f32], &mut [f32], u32, u32)>::build("dyn2", |k, (x, out, r, c)| {
        let tile = k.dynamic_shared2::<f32>(r, c);
        let (i, j) = (k.thread_idx().y, k.thread_idx().x);
        let g = k.grid1();
        tile.set2(i, j, x.at(g));
        k.syncthreads();
        out.set(g, tile.at2(j % r, i % c) + tile.dim(1).cast::<f32>());
    })
    .unwrap();
    let by_hand = Kernel::<(&[f32], &mut [f32], u32, u32)>::build("dyn2", |k, (x, out, r, c)| {
        let tile = k.dynamic_shared::<f32>();
        let (i, j) = (k.thread_idx().y, k.thread_idx().x);
        let g = k.grid1();
        let at = |i: Expr<u32>, j: Expr<u32>| i.cast::<i64>() * c.cast::<i64>() + j.cast::<i64>();
        tile.set(at(i, j), x.at(g));
        k.syncthreads();
        out.set(
            g,
            tile.at(at(j % r, i % c)) + c.cast::<i64>().cast::<u64>().cast::<f32>(),
        );
    })
    .unwrap();
    let (ptx, _) = compile_all(&dynamic);
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 cudajit_dynamic_shared[]"),
        "{ptx}"
    );
    // The same instructions (the view's extents are converted where it is declared, so the
    // order differs).
    assert_eq!(opcodes(&body(&dynamic)), opcodes(&body(&by_hand)));
}

/// Shared and local addresses are 32-bit (`-nvptx-short-ptr`, as nvcc's): a 2-D shared
/// tile's n-D index (flattened in `i64`), the dynamic shared array and a local array are
/// addressed with 32-bit registers (`ld.shared.f32 %f1, [%r9]`), the shared arrays' addresses
/// are moved into 32-bit registers, and nothing widens an index (`mul.wide`) or converts a
/// generic address (`cvta`) on the way; the only global access here has a constant index.
#[test]
fn shared_and_local_addresses_are_32_bit() {
    let k = Kernel::<(&mut [f32], u32)>::build("addr32", |k, (out, n)| {
        let tile = k.shared_array2::<f32>(32, 33);
        let dynamic = k.dynamic_shared::<f32>();
        let l = k.local_array::<f32>(16);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        tile.set2(ty, tx, (tx + ty).cast::<f32>());
        dynamic.set(ty * 32u32 + tx, tx.cast::<f32>());
        k.for_range(0u32, 16u32, |_, j| l.set(j, (j * n).cast::<f32>()));
        k.syncthreads();
        let v = tile.at2(tx, ty) + dynamic.at(n - tx - 1u32) + l.at((tx + n) % 16u32);
        k.if_(tx.eq(0u32).and(ty.eq(0u32)), |_| out.set(0u32, v));
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    let wide = crate::common::wide_shared_or_local_addresses(&ptx);
    assert!(wide.is_empty(), "64-bit addresses: {wide:?}\n{ptx}");
    for (what, n) in [
        ("ld.shared.f32", 2),
        ("st.shared.f32", 2),
        ("ld.local.f32", 1),
    ] {
        let got = ptx
            .lines()
            .filter(|l| l.trim().starts_with(what) && l.contains("[%r"))
            .count();
        assert!(got >= n, "{got} × `{what}` with `[%r..]`, want {n}:\n{ptx}");
    }
    assert!(ptx.contains("mov.u32 \t%r"), "{ptx}");
    for sym in ["addr32_shared0", "cudajit_dynamic_shared"] {
        assert!(
            ptx.lines()
                .any(|l| l.contains("mov.u32") && l.contains(sym)),
            "{sym} not in a 32-bit register:\n{ptx}"
        );
    }
    assert!(!ptx.contains("mul.wide"), "{ptx}");
    assert!(
        !ptx.contains("cvta.shared") && !ptx.contains("cvta.to.shared"),
        "{ptx}"
    );
}

/// Atomics on the elements of a 2-D shared array, through `index2`.
#[test]
fn atomics_on_a_2d_shared_array() {
    let k = Kernel::<(&[u8], &[u8], &mut [u32])>::build("hist2", |k, (a, b, out)| {
        let h = k.shared_array2::<u32>(16, 16);
        let t = k.thread_idx().x;
        h.set(t, 0u32);
        k.syncthreads();
        let i = k.grid1();
        k.if_(i.lt(a.len()), |_| {
            let (x, y) = (a.at(i) >> 4u8, b.at(i) >> 4u8);
            h.atomic_add(h.index2(x, y), 1u32);
        });
        k.syncthreads();
        let old = h.atomic_exch(h.index2(t / 16u32, t % 16u32), 0u32);
        out.atomic_add(t, old);
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(
        ptx.contains("atom.shared.add.u32") || ptx.contains("red.shared.add.u32"),
        "{ptx}"
    );
    assert!(ptx.contains("atom.shared.exch.b32"), "{ptx}");
}

fn errors(r: cudajit::Result<impl Sized>) -> Vec<(BuildErrorKind, String)> {
    match r {
        Err(e @ Error::Build { .. }) => e
            .build_errors()
            .iter()
            .map(|b: &BuildError| (b.kind(), b.message().to_string()))
            .collect(),
        Err(e) => panic!("expected a build error, got {e:?}"),
        Ok(_) => panic!("expected a build error"),
    }
}

/// The wrong number of indices, an empty dimension, and an array too large for any GPU are
/// build errors that say what is wrong.
#[test]
fn misuse_of_nd_arrays_is_a_build_error() {
    let e = errors(Kernel::<(&mut [f32],)>::build("rank", |k, (out,)| {
        let t = k.shared_array2::<f32>(4, 4);
        out.set(0u32, t.at3(0u32, 1u32, 2u32));
    }));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, BuildErrorKind::ArrayAccess);
    assert!(
        e[0].1
            .contains("`at3` takes 3 indices, but this array has 2 dimensions"),
        "{e:?}"
    );

    let e = errors(Kernel::<(&mut [f32],)>::build("rank1", |k, (out,)| {
        let t = k.local_array::<f32>(4);
        t.set2(0u32, 1u32, 1.0f32);
        out.set(0u32, t.at(0u32));
    }));
    assert!(
        e.iter().any(|(k, m)| *k == BuildErrorKind::ArrayAccess
            && m.contains("`set2` takes 2 indices, but this array has 1 dimension;")),
        "{e:?}"
    );

    let e = errors(Kernel::<(&mut [f32],)>::build("empty", |k, (out,)| {
        let t = k.shared_array2::<f32>(16, 0);
        out.set(0u32, t.at(0u32));
    }));
    assert_eq!(e[0].0, BuildErrorKind::EmptyArray);
    assert!(
        e[0].1
            .contains("a shared array of shape (16, 0) has no element: dimension 1 is 0"),
        "{e:?}"
    );

    let e = errors(Kernel::<(&mut [f64],)>::build("huge", |k, (out,)| {
        let t = k.local_array3::<f64>(1 << 20, 1 << 20, 1 << 20);
        out.set(0u32, t.at(0u32));
    }));
    assert_eq!(e[0].0, BuildErrorKind::ArrayAccess);
    assert!(e[0].1.contains("would take more than 4 GiB"), "{e:?}");
}

/// The matmul of docs/GUIDE.md's "Shared and local arrays", as written there.
#[test]
fn the_guides_tiled_matmul_compiles() -> cudajit::Result<()> {
    let matmul = Kernel::<(NdRef<f32, 2>, NdRef<f32, 2>, NdMut<f32, 2>)>::build(
        "matmul",
        |k, (a, b, c)| {
            let (sa, sb) = (
                k.shared_array2::<f32>(16, 16),
                k.shared_array2::<f32>(16, 16),
            );
            let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
            let (row, col) = (k.block_idx().y * 16u32 + ty, k.block_idx().x * 16u32 + tx);
            let acc = k.var(0.0f32);
            k.for_range(0u64, a.dim(1) / 16u64, |k, t| {
                let t = t.cast::<u32>() * 16u32;
                sa.set2(ty, tx, a.at2(row, t + tx));
                sb.set2(ty, tx, b.at2(t + ty, col));
                k.syncthreads();
                k.for_range(0u32, 16u32, |_, e| {
                    acc.set(acc.get() + sa.at2(ty, e) * sb.at2(e, tx))
                });
                k.syncthreads();
            });
            c.set2(row, col, acc.get());
        },
    )?;
    compile_all(&matmul);
    Ok(())
}
