//! The data movement of a tensor-core matrix product (sm_80 and later), on the GPU and on the
//! simulator:
//!
//! - `ldmatrix` of 1, 2 and 4 matrices, plain and transposed, against a host model of the PTX
//!   ISA's layout (lane `t` receives row `t / 4`, columns `2·(t % 4)` and `2·(t % 4) + 1`);
//! - the fragments loaded with it (`FragA::load_shared`, `load_shared_transposed`, the same for
//!   `FragB`, and `FragB`'s pair loaders of two fragments at once) equal the fragments
//!   `from_fn` builds from the same shared tile, register for register, and all equal a host
//!   model of the MMA fragment layout; the same for `ldmatrix` of a 32-bit tile and the tf32
//!   fragments loaded with it from K-contiguous tiles (`FragA::<f32>::load_shared_tf32`,
//!   `FragB::<f32>::load_shared_transposed_tf32` and its pair version);
//! - `cp.async` of 4, 8 and 16 bytes for 1-, 2-, 4- and 8-byte elements, and its zero-filling
//!   form with every source size from 0 to the copy's size, against the host;
//! - a 64×32 matrix product `D = A·B + C` (K = 64) whose tiles are staged into shared memory by
//!   `cp.async` in two stages (the next tile's copies in flight while the tensor cores work on
//!   the current one) and loaded into fragments with `ldmatrix`, for f16 and bf16, B row-major
//!   and B stored transposed; fresh random inputs with the generators' special values, outputs
//!   poisoned first, every element checked against the host model of
//!   tests/support/mma_model.rs (exact products summed in f64 per MMA, rounded once; on the GPU
//!   within `2^-20` of the sum of the terms' magnitudes).

use cudajit::codegen::{Expr, FragA, FragB, FragC, Kernel, KernelParam, LdMatrixElem, MmaInput};
use cudajit::prelude::*;
use cudajit::{bf16, f16};

use crate::common::{ctx, Rng};
use crate::gen::Gen;
use crate::support::mma_model::{check_product, draw, AccModel, MmaModel};

/// Whether this device runs sm_80 code (the simulator always does).
fn sm80(c: &Context) -> bool {
    if cudajit::on_simulator() || c.device().compute_capability().unwrap() >= (8, 0) {
        return true;
    }
    println!("skipped: ldmatrix and cp.async need sm_80");
    false
}

/// A poison for outputs of 32-bit registers.
const POISON: u32 = 0xdead_beef;

/// `ldmatrix` of every count, plain and transposed, against the PTX ISA's layout: a 32×16 tile
/// of distinct 16-bit values, lane `l` addressing row `l` (and, for a second load, row
/// `l % 16` from column 8, a 16-byte offset).
#[test]
#[ignore = "needs a CUDA GPU"]
fn ldmatrix_layout() {
    let c = ctx();
    if !sm80(&c) {
        return;
    }
    let s = c.new_stream().unwrap();
    // Per lane: x1, x2, x4, x1.trans, x2.trans, x4.trans, x4 from column 8: 18 registers.
    const REGS: u32 = 18;
    let k = Kernel::<(&[u16], &mut [u32])>::build("ldm_layout", |k, (x, out)| {
        let tile = k.shared_array2::<u16>(32, 16);
        let l = k.lane_id();
        k.for_step(l, 512u32, 32u32, |_, i| tile.set(i, x.at(i)));
        k.syncwarp(u32::MAX);
        let row = tile.index2(l, 0u32);
        let mut regs: Vec<_> = Vec::new();
        regs.extend(tile.ldmatrix::<1>(row));
        regs.extend(tile.ldmatrix::<2>(row));
        regs.extend(tile.ldmatrix::<4>(row));
        regs.extend(tile.ldmatrix_trans::<1>(row));
        regs.extend(tile.ldmatrix_trans::<2>(row));
        regs.extend(tile.ldmatrix_trans::<4>(row));
        regs.extend(tile.ldmatrix::<4>(tile.index2(l % 16u32, 8u32)));
        for (i, r) in regs.into_iter().enumerate() {
            out.set(l * REGS + i as u32, r);
        }
    })
    .unwrap();
    let mut rng = Rng::new();
    let x: Vec<u16> = rng.vec(512, |r| r.next_u64() as u16);
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<u32, _>(32 * REGS as usize).unwrap();
    out.fill_async(POISON, &s).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&dx, &mut out))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    // Register of lane `t` for matrix `i` whose row `r` is tile row `(8i + r) % rows`, from
    // column `col0`.
    let model = |t: usize, i: usize, trans: bool, rows: usize, col0: usize| -> u32 {
        let elem = |h: usize| {
            let (r, c) = (t / 4, 2 * (t % 4) + h);
            let (r, c) = if trans { (c, r) } else { (r, c) };
            x[((8 * i + r) % rows) * 16 + col0 + c] as u32
        };
        elem(0) | (elem(1) << 16)
    };
    let mut bad = Vec::new();
    for t in 0..32 {
        let mut want = Vec::new();
        for trans in [false, true] {
            for count in [1, 2, 4] {
                want.extend((0..count).map(|i| model(t, i, trans, 32, 0)));
            }
        }
        want.extend((0..4).map(|i| model(t, i, false, 16, 8)));
        let g = &got[t * REGS as usize..(t + 1) * REGS as usize];
        if g != want.as_slice() {
            bad.push(format!("lane {t}: got {g:08x?}\n        want {want:08x?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The fragment layout of the MMA's A (16×16) and B (16×8) for 16-bit inputs (PTX ISA,
/// "Matrix fragments for mma.m16n8k16"), written out independently of the crate: register `r`
/// of lane `l` holds A's elements (g + 8·(r % 2), 2t + h + 8·(r / 2)) and B's (2t + h + 8r, g),
/// g = l / 4, t = l % 4, h = 0 (low half), 1 (high half).
fn a_elem(l: usize, r: usize, h: usize) -> (usize, usize) {
    (l / 4 + 8 * (r % 2), 2 * (l % 4) + h + 8 * (r / 2))
}
fn b_elem(l: usize, r: usize, h: usize) -> (usize, usize) {
    (2 * (l % 4) + h + 8 * r, l / 4)
}

/// Fragments loaded with ldmatrix equal those `from_fn` builds from the same tile, and both
/// the model: A row-major and transposed, B row-major and transposed.
fn fragments_equal<T: MmaInput + LdMatrixElem + KernelParam + Gen + cudajit::AnyBitPattern>() {
    let c = ctx();
    if !sm80(&c) {
        return;
    }
    let s = c.new_stream().unwrap();
    // A 16×24 tile (rows of 48 bytes): A in columns 0..16, B in columns 8..16.
    const COLS: u32 = 24;
    let name = format!("frag_ldm_{}", T::TY.name());
    let k = Kernel::<(&[T], &mut [u32])>::build(&name, |k, (x, out)| {
        let tile = k.shared_array2::<T>(16, COLS as usize);
        let l = k.lane_id();
        k.for_step(l, 16 * COLS, 32u32, |_, i| tile.set(i, x.at(i)));
        k.syncwarp(u32::MAX);
        let a = [
            FragA::<T>::load_shared(k, &tile, |r, c| tile.index2(r, c)).regs(),
            FragA::<T>::from_fn(k, |r, c| tile.at2(r, c)).regs(),
            FragA::<T>::load_shared_transposed(k, &tile, |kk, m| tile.index2(kk, m)).regs(),
            FragA::<T>::from_fn(k, |r, c| tile.at2(c, r)).regs(),
        ];
        let b = [
            FragB::<T>::load_shared(k, &tile, |kk, n| tile.index2(kk, n + 8u32)).regs(),
            FragB::<T>::from_fn(k, |kk, n| tile.at2(kk, n + 8u32)).regs(),
            FragB::<T>::load_shared_transposed(k, &tile, |n, kk| tile.index2(n, kk + 8u32)).regs(),
            FragB::<T>::from_fn(k, |kk, n| tile.at2(n, kk + 8u32)).regs(),
        ];
        // Two fragments per load: columns 0..8 and 8..16.
        let [p0, p1] = FragB::<T>::load_shared_pair(k, &tile, |kk, n| tile.index2(kk, n));
        let [t0, t1] =
            FragB::<T>::load_shared_transposed_pair(k, &tile, |n, kk| tile.index2(n, kk + 8u32));
        let pairs = [p0.regs(), p1.regs(), t0.regs(), t1.regs()];
        let regs = a.iter().flatten().chain(b.iter().flatten());
        for (i, &r) in regs.chain(pairs.iter().flatten()).enumerate() {
            out.set(l * 32u32 + i as u32, r);
        }
    })
    .unwrap();
    let mut rng = Rng::new();
    let x: Vec<T> = rng.vec((16 * COLS) as usize, T::gen);
    let bits: Vec<u32> = x.iter().map(|v| v.to_bits() as u32).collect();
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<u32, _>(32 * 32).unwrap();
    out.fill_async(POISON, &s).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&dx, &mut out))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    let at = |r: usize, c: usize| bits[r * COLS as usize + c];
    let reg = |f: &dyn Fn(usize) -> u32| f(0) | (f(1) << 16);
    let mut bad = Vec::new();
    for l in 0..32 {
        let g = &got[l * 32..(l + 1) * 32];
        let a_rm: Vec<u32> = (0..4)
            .map(|r| reg(&|h| at(a_elem(l, r, h).0, a_elem(l, r, h).1)))
            .collect();
        let a_tr: Vec<u32> = (0..4)
            .map(|r| reg(&|h| at(a_elem(l, r, h).1, a_elem(l, r, h).0)))
            .collect();
        let b_rm: Vec<u32> = (0..2)
            .map(|r| reg(&|h| at(b_elem(l, r, h).0, b_elem(l, r, h).1 + 8)))
            .collect();
        let b_tr: Vec<u32> = (0..2)
            .map(|r| reg(&|h| at(b_elem(l, r, h).1, b_elem(l, r, h).0 + 8)))
            .collect();
        // B's fragment of columns n0..n0 + 8, row-major from column 0 and transposed from
        // column 8 of the tile.
        let b_at = |n0: usize, tr: bool| -> Vec<u32> {
            (0..2)
                .map(|r| {
                    reg(&|h| {
                        let (kk, n) = b_elem(l, r, h);
                        if tr {
                            at(n + n0, kk + 8)
                        } else {
                            at(kk, n + n0)
                        }
                    })
                })
                .collect()
        };
        let pairs = [b_at(0, false), b_at(8, false), b_at(0, true), b_at(8, true)];
        let want: Vec<u32> = [&a_rm, &a_rm, &a_tr, &a_tr, &b_rm, &b_rm, &b_tr, &b_tr]
            .into_iter()
            .chain(pairs.iter())
            .flatten()
            .copied()
            .collect();
        if g != want.as_slice() {
            bad.push(format!("lane {l}: got {g:08x?}\n        want {want:08x?}"));
        }
    }
    assert!(bad.is_empty(), "{name}:\n{}", bad.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ldmatrix_fragments_f16() {
    fragments_equal::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ldmatrix_fragments_bf16() {
    fragments_equal::<bf16>();
}

/// The fragment layout of the tf32 MMA's A (16×8) and B (8×8) (PTX ISA, "Matrix fragments for
/// mma.m16n8k8", `.tf32`), written out independently of the crate: register `r` of lane `l`
/// holds A's element (g + 8·(r % 2), t + 4·(r / 2)) and B's (t + 4r, g), g = l / 4, t = l % 4.
fn a_elem_tf32(l: usize, r: usize) -> (usize, usize) {
    (l / 4 + 8 * (r % 2), l % 4 + 4 * (r / 2))
}
fn b_elem_tf32(l: usize, r: usize) -> (usize, usize) {
    (l % 4 + 4 * r, l / 4)
}

/// `ldmatrix` of a 32-bit (f32) tile and the tf32 fragments loaded with it from K-contiguous
/// tiles (`FragA::<f32>::load_shared_tf32` from A `[m][k]`, `FragB`'s
/// `load_shared_transposed_tf32` and its pair version from B `[n][k]`) equal the fragments
/// `from_fn` builds from the same tile, bit for bit, and all equal the host model: the raw
/// `ldmatrix.x4` gives lane `l` word `l % 4` of row `l / 4` of each 8×4 block, whole.
#[test]
#[ignore = "needs a CUDA GPU"]
fn ldmatrix_fragments_tf32() {
    let c = ctx();
    if !sm80(&c) {
        return;
    }
    let s = c.new_stream().unwrap();
    // A 16×12 f32 tile (rows of 48 bytes): A in columns 0..8, Bᵀ (rows n) in columns 4..12.
    const COLS: u32 = 12;
    const REGS: u32 = 20;
    let k = Kernel::<(&[f32], &mut [u32])>::build("frag_ldm_tf32", |k, (x, out)| {
        let tile = k.shared_array2::<f32>(16, COLS as usize);
        let l = k.lane_id();
        k.for_step(l, 16 * COLS, 32u32, |_, i| tile.set(i, x.at(i)));
        k.syncwarp(u32::MAX);
        let mut regs: Vec<Expr<u32>> = Vec::new();
        regs.extend(FragA::<f32>::load_shared_tf32(k, &tile, |r, c| tile.index2(r, c)).regs());
        regs.extend(FragA::<f32>::from_fn(k, |r, c| tile.at2(r, c)).regs());
        let bt = |n, kk| tile.index2(n, kk + 4u32);
        regs.extend(FragB::<f32>::load_shared_transposed_tf32(k, &tile, bt).regs());
        regs.extend(FragB::<f32>::from_fn(k, |kk, n| tile.at2(n, kk + 4u32)).regs());
        let [p0, p1] = FragB::<f32>::load_shared_transposed_pair_tf32(k, &tile, bt);
        regs.extend(p0.regs());
        regs.extend(p1.regs());
        // Raw: rows l % 16 from column 4 (lanes 0-15) and 8 (lanes 16-31).
        regs.extend(tile.ldmatrix::<4>(tile.index2(l & 15u32, ((l >> 4u32) + 1u32) * 4u32)));
        for (i, r) in regs.into_iter().enumerate() {
            out.set(l * REGS + i as u32, r);
        }
    })
    .unwrap();
    let mut rng = Rng::new();
    let x: Vec<f32> = rng.vec((16 * COLS) as usize, f32::gen);
    let bits: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    let dx = s.to_device(&x).unwrap();
    let mut out = c.alloc::<u32, _>(32 * REGS as usize).unwrap();
    out.fill_async(POISON, &s).unwrap();
    k.launch(&s, LaunchConfig::new(1, 32), (&dx, &mut out))
        .unwrap();
    let got = out.to_vec_async(&s).unwrap();
    let at = |r: usize, c: usize| bits[r * COLS as usize + c];
    let mut bad = Vec::new();
    for l in 0..32 {
        let g = &got[l * REGS as usize..(l + 1) * REGS as usize];
        let a: Vec<u32> = (0..4)
            .map(|r| at(a_elem_tf32(l, r).0, a_elem_tf32(l, r).1))
            .collect();
        // B's fragment of columns n0..n0 + 8 from Bᵀ at column 4.
        let b = |n0: usize| -> Vec<u32> {
            (0..2)
                .map(|r| {
                    let (kk, n) = b_elem_tf32(l, r);
                    at(n + n0, kk + 4)
                })
                .collect()
        };
        let raw: Vec<u32> = (0..4)
            .map(|i| at((8 * i + l / 4) % 16, 4 * (i / 2 + 1) + l % 4))
            .collect();
        let want: Vec<u32> = [&a, &a, &b(0), &b(0), &b(0), &b(8), &raw]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        if g != want.as_slice() {
            bad.push(format!("lane {l}: got {g:08x?}\n        want {want:08x?}"));
        }
    }
    assert!(bad.is_empty(), "frag_ldm_tf32:\n{}", bad.join("\n"));
}

/// `cp.async` of `BYTES` for elements `T`: 64 threads each copy one chunk of a window of the
/// source (at an offset of a few chunks) into a poisoned shared array, plain and zero-filling
/// (source sizes `t % (BYTES + 1)` rounded down to whole elements, so every size appears),
/// then the whole shared array is written out.
fn cp_async_case<T, const BYTES: usize>()
where
    T: Gen + KernelParam + cudajit::AnyBitPattern + PartialEq,
    T: cudajit::codegen::Scalar,
{
    let c = ctx();
    if !sm80(&c) {
        return;
    }
    let s = c.new_stream().unwrap();
    let size = std::mem::size_of::<T>();
    let per = BYTES / size; // elements per copy
    let threads = 64usize;
    let len = threads * per;
    let name = format!("cp_async_{}_{BYTES}", T::TY.name());
    let k = Kernel::<(&[T], &mut [T], &mut [T])>::build(&name, |k, (x, plain, zfill)| {
        let sp = k.shared_array::<T>(len);
        let sz = k.shared_array::<T>(len);
        let t = k.thread_idx().x;
        let poison = x.at(0u32);
        k.for_step(t, len as u32, threads as u32, |_, i| {
            sp.set(i, poison);
            sz.set(i, poison);
        });
        k.syncthreads();
        // Chunk `t` of the destination from chunk `t + 3` of the source.
        let (d, from) = (t * per as u32, (t + 3u32) * per as u32);
        sp.cp_async::<BYTES>(d, &x, from);
        k.cp_async_commit();
        let n = (t % (BYTES as u32 + 1)) / size as u32 * size as u32;
        sz.cp_async_zfill::<BYTES>(d, &x, from, n);
        k.cp_async_commit();
        k.cp_async_wait(1); // the plain copies are complete
        k.cp_async_wait(0); // and the zero-filling ones
        k.syncthreads();
        k.for_step(t, len as u32, threads as u32, |_, i| {
            plain.set(i, sp.at(i));
            zfill.set(i, sz.at(i));
        });
    })
    .unwrap();
    let mut rng = Rng::new();
    // x[0] is the shared arrays' poison (outside the copied window), a value no copied
    // element has, so an element the copy missed cannot pass for a copied one.
    let poison = T::from_bits(0x5a5a_5a5a_5a5a_5a5a & (u64::MAX >> (64 - 8 * size)));
    let mut x: Vec<T> = rng.vec(len + 3 * per, |r| loop {
        let v = T::gen(r);
        if v.to_bits() != poison.to_bits() && v.to_bits() != 0 {
            break v;
        }
    });
    x[0] = poison;
    let dx = s.to_device(&x).unwrap();
    let (mut dp, mut dz) = (c.alloc::<T, _>(len).unwrap(), c.alloc::<T, _>(len).unwrap());
    dp.fill_async(poison, &s).unwrap();
    dz.fill_async(poison, &s).unwrap();
    k.launch(
        &s,
        LaunchConfig::new(1, threads as u32),
        (&dx, &mut dp, &mut dz),
    )
    .unwrap();
    let (gp, gz) = (dp.to_vec_async(&s).unwrap(), dz.to_vec_async(&s).unwrap());
    let mut bad = Vec::new();
    for t in 0..threads {
        let valid = (t % (BYTES + 1)) / size;
        for e in 0..per {
            let i = t * per + e;
            let src = x[i + 3 * per];
            if gp[i].to_bits() != src.to_bits() {
                bad.push(format!("plain[{i}] = {:?}, want {src:?}", gp[i]));
            }
            let want = if e < valid { src.to_bits() } else { 0 };
            if gz[i].to_bits() != want {
                bad.push(format!(
                    "zfill[{i}] = {:?} (thread {t}, {valid} elements read), want bits {want:#x}",
                    gz[i]
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{name}: {} wrong, e.g.\n{}",
        bad.len(),
        bad[..bad.len().min(10)].join("\n")
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cp_async_every_size() {
    cp_async_case::<u8, 4>();
    cp_async_case::<u8, 8>();
    cp_async_case::<u8, 16>();
    cp_async_case::<f16, 4>();
    cp_async_case::<bf16, 8>();
    cp_async_case::<f16, 16>();
    cp_async_case::<f32, 4>();
    cp_async_case::<i32, 8>();
    cp_async_case::<f32, 16>();
    cp_async_case::<f64, 8>();
    cp_async_case::<u64, 16>();
}

/// The product's shape: D (M×N) = A (M×K) · B (K×N) + C, one block of 4 warps, warp `w`
/// computing rows `16w..16w + 16` and all four 16×8 tiles of N; K in steps of 16.
const M: u32 = 64;
const N: u32 = 32;
const KK: u32 = 64;
const STEPS: u32 = KK / 16;

/// The staged product for inputs `T`; `bt`: B is given transposed (N×K, row-major).
fn staged_matmul<T>(bt: bool)
where
    T: MmaModel<Acc = f32> + LdMatrixElem + KernelParam + Gen + cudajit::AnyBitPattern,
{
    let c = ctx();
    if !sm80(&c) {
        return;
    }
    let s = c.new_stream().unwrap();
    let name = format!(
        "staged_mma_{}_{}",
        T::TY.name(),
        if bt { "bt" } else { "b" }
    );
    let kern = Kernel::<(&[T], &[T], &[f32], &mut [f32])>::build(&name, |k, (a, b, cm, d)| {
        let t = k.thread_idx().x;
        let w = t / 32u32;
        let sa = k.shared_array3::<T>(2, M as usize, 16);
        // B's stage: 16 (K) × 32 (N), or transposed 32 (N) × 16 (K).
        let sb = if bt {
            k.shared_array3::<T>(2, N as usize, 16)
        } else {
            k.shared_array3::<T>(2, 16, N as usize)
        };
        // Step `step`'s tiles into stage `step % 2`: 16-byte copies (8 elements), A by 128
        // threads (row t / 2, columns (t % 2)·8), B by 64.
        let load = |step: cudajit::codegen::Expr<u32>| {
            let (st, k0) = (step % 2u32, step * 16u32);
            let (r, col) = (t / 2u32, (t % 2u32) * 8u32);
            sa.cp_async::<16>(sa.index3(st, r, col), &a, r * KK + k0 + col);
            k.if_(t.lt(64u32), |_| {
                if bt {
                    sb.cp_async::<16>(sb.index3(st, r, col), &b, r * KK + k0 + col);
                } else {
                    let (r, col) = (t / 4u32, (t % 4u32) * 8u32);
                    sb.cp_async::<16>(sb.index3(st, r, col), &b, (k0 + r) * N + col);
                }
            });
        };
        let acc: Vec<[cudajit::codegen::Var<f32>; 4]> = (0..4u32)
            .map(|j| {
                FragC::<T>::from_fn(k, |r, col| cm.at((w * 16u32 + r) * N + j * 8u32 + col))
                    .elems()
                    .map(|e| k.var(e))
            })
            .collect();
        load(k.lit(0u32));
        k.cp_async_commit();
        k.for_range(0u32, STEPS, |k, step| {
            k.if_((step + 1u32).lt(STEPS), |_| load(step + 1u32));
            k.cp_async_commit(); // (empty on the last step: the count stays right)
            k.cp_async_wait(1); // this step's tiles are in, for this thread
            k.syncthreads(); // ... and for the block
            let st = step % 2u32;
            let fa = FragA::<T>::load_shared(k, &sa, |r, col| sa.index3(st, w * 16u32 + r, col));
            for (j, acc) in acc.iter().enumerate() {
                let n0 = j as u32 * 8;
                let fb = if bt {
                    FragB::<T>::load_shared_transposed(k, &sb, |n, kk| sb.index3(st, n + n0, kk))
                } else {
                    FragB::<T>::load_shared(k, &sb, |kk, n| sb.index3(st, kk, n + n0))
                };
                let cur = FragC::<T>::from_elems(acc.each_ref().map(|v| v.get()));
                let next = k.mma(&fa, &fb, &cur);
                for (v, e) in acc.iter().zip(next.elems()) {
                    v.set(e);
                }
            }
            k.syncthreads(); // the stage is read before the next step's copies overwrite it
        });
        for (j, acc) in acc.iter().enumerate() {
            FragC::<T>::from_elems(acc.each_ref().map(|v| v.get())).for_each(k, |r, col, v| {
                d.set((w * 16u32 + r) * N + j as u32 * 8 + col, v)
            });
        }
    })
    .unwrap();
    let mut rng = Rng::new();
    let a: Vec<T> = rng.vec((M * KK) as usize, draw);
    let b: Vec<T> = rng.vec((KK * N) as usize, draw); // B row-major, K×N
    let btv: Vec<T> = (0..(N * KK) as usize)
        .map(|i| b[(i % KK as usize) * N as usize + i / KK as usize])
        .collect();
    let cv: Vec<f32> = rng.vec((M * N) as usize, <f32 as AccModel>::small);
    let (da, db, dc) = (
        s.to_device(&a).unwrap(),
        s.to_device(if bt { &btv } else { &b }).unwrap(),
        s.to_device(&cv).unwrap(),
    );
    let mut dd = c.alloc::<f32, _>((M * N) as usize).unwrap();
    dd.fill_async(<f32 as AccModel>::poison(), &s).unwrap();
    kern.launch(&s, LaunchConfig::new(1, 128), (&da, &db, &dc, &mut dd))
        .unwrap();
    let got = dd.to_vec_async(&s).unwrap();
    let dims = (M as usize, N as usize, KK as usize);
    check_product(&name, dims, (&a, &b, &cv), &got);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_mma_f16() {
    staged_matmul::<f16>(false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_mma_f16_b_transposed() {
    staged_matmul::<f16>(true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_mma_bf16() {
    staged_matmul::<bf16>(false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_mma_bf16_b_transposed() {
    staged_matmul::<bf16>(true);
}
