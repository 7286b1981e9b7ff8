//! `u32` and `u64` expressions mixed without casts: the widening arithmetic and comparisons
//! compile (ptxas) and zero-extend the `u32` side (`cvt.u64.u32`, never a sign extension).

use cudajit::codegen::Kernel;

use crate::common::compile_all;

#[test]
fn u32_u64_mixes_compile_and_zero_extend() {
    let k = Kernel::<(&[f32], &mut [f32], u32)>::build("mixed", |k, (x, out, n)| {
        let i = k.grid1();
        let t = k.thread_idx().x;
        // A grid-stride loop written with the geometry's u32s and the u64 index, no cast.
        let stride = k.block_dim().x * k.grid_dim().x;
        k.for_step(i, out.len(), k.gridsize1(), |k, j| {
            k.if_(j.lt(n).and(t.le(j)), |_| {
                out.set(j, x.at((j + t) % out.len()) + x.at(stride % j.max(1u64)));
            });
        });
    })
    .unwrap();
    let (ptx, _) = compile_all(&k);
    assert!(!ptx.contains("cvt.s64.s32"), "{ptx}");
}

/// The GUIDE's kernels written without casts between u32 and u64 (the tiled matmul's `t * 16`
/// with the u32 thread indices, the grid-sync sums' `acc + x[i]`).
#[test]
fn guide_kernels_without_casts_compile() {
    use cudajit::codegen::{NdMut, NdRef};
    let matmul =
        Kernel::<(NdRef<f32, 2>, NdRef<f32, 2>, NdMut<f32, 2>)>::build("matmul", |k, (a, b, c)| {
            let (sa, sb) = (
                k.shared_array2::<f32>(16, 16),
                k.shared_array2::<f32>(16, 16),
            );
            let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
            let (row, col) = (k.block_idx().y * 16u32 + ty, k.block_idx().x * 16u32 + tx);
            let acc = k.var(0.0f32);
            k.for_range(0u64, a.dim(1) / 16u64, |k, t| {
                let t = t * 16u64;
                sa.set2(ty, tx, a.at2(row, t + tx));
                sb.set2(ty, tx, b.at2(t + ty, col));
                k.syncthreads();
                k.for_range(0u32, 16u32, |_, e| {
                    acc.set(acc.get() + sa.at2(ty, e) * sb.at2(e, tx))
                });
                k.syncthreads();
            });
            c.set2(row, col, acc.get());
        })
        .unwrap();
    compile_all(&matmul);
    let sums =
        Kernel::<(&[u32], &mut [u64], &mut [u64])>::build("two_sums", |k, (x, total, out)| {
            let acc = k.var(0u64);
            k.for_step(k.grid1(), x.len(), k.gridsize1(), |_, i| {
                acc.set(acc.get() + x.at(i))
            });
            total.atomic_add(0u32, acc.get());
            let t = total.atomic_load(0u32);
            k.for_step(k.grid1(), x.len(), k.gridsize1(), |_, i| {
                out.set(i, x.at(i) + t)
            });
        })
        .unwrap();
    compile_all(&sums);
}
