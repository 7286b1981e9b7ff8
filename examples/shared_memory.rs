//! Shared memory and barriers: a tiled matrix transpose (32x32 tiles, padded against bank
//! conflicts) and a block-wise sum, each checked against the host.
//!
//! `cargo run --release --example shared_memory`

use cudajit::codegen::{select, Kernel, NdMut, NdRef};
use cudajit::prelude::*;
use ndarray::Array2;

fn main() {
    if let Err(e) = run() {
        eprintln!("shared_memory: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;

    let transpose = Kernel::<(NdRef<f32, 2>, NdMut<f32, 2>)>::build("transpose", |k, (a, b)| {
        let tile = k.shared_array::<f32>(32 * 33);
        let (tx, ty) = (k.thread_idx().x, k.thread_idx().y);
        let (bx, by) = (k.block_idx().x * 32u32, k.block_idx().y * 32u32);
        let (rows, cols) = (a.dim(0), a.dim(1));
        let (r, c) = ((by + ty).cast::<u64>(), (bx + tx).cast::<u64>());
        k.if_(r.lt(rows).and(c.lt(cols)), |_| {
            tile.set(ty * 33u32 + tx, a.at2(r, c))
        });
        k.syncthreads();
        let (r2, c2) = ((bx + ty).cast::<u64>(), (by + tx).cast::<u64>());
        k.if_(r2.lt(cols).and(c2.lt(rows)), |_| {
            b.set2(r2, c2, tile.at(tx * 33u32 + ty))
        });
    })?;
    let (rows, cols) = (3000usize, 2000usize);
    let a = Array2::from_shape_fn((rows, cols), |(i, j)| (i * cols + j) as f32);
    let da = s.to_device(&a)?;
    let mut db = ctx.alloc::<f32, _>((cols, rows))?;
    let cfg = LaunchConfig::new(
        (cols.div_ceil(32) as u32, rows.div_ceil(32) as u32),
        (32, 32),
    );
    transpose.launch(&s, cfg, (&da, &mut db))?;
    let ok = db.to_array_async(&s)? == a.t();
    println!(
        "transpose {rows}x{cols}: {}",
        if ok { "matches the host" } else { "WRONG" }
    );

    let block_sum = Kernel::<(&[f64], &mut [f64])>::build("block_sum", |k, (x, out)| {
        let tile = k.shared_array::<f64>(256);
        let t = k.thread_idx().x;
        let i = k.grid1();
        tile.set(
            t,
            select(i.lt(x.len()), x.at(i.min(x.len() - 1u64)), 0.0f64),
        );
        k.syncthreads();
        let stride = k.var(128u32);
        k.while_(
            |_| stride.get().gt(0u32),
            |k| {
                k.if_(t.lt(stride.get()), |_| {
                    tile.set(t, tile.at(t) + tile.at(t + stride.get()))
                });
                k.syncthreads();
                stride.set(stride.get() >> 1u32);
            },
        );
        k.if_(t.eq(0u32), |k| out.set(k.block_idx().x, tile.at(0u32)));
    })?;
    let n = 1_000_000usize;
    let x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let blocks = n.div_ceil(256);
    let dx = s.to_device(&x)?;
    let mut partial = ctx.alloc::<f64, _>(blocks)?;
    block_sum.launch(
        &s,
        LaunchConfig::new(blocks as u32, 256),
        (&dx, &mut partial),
    )?;
    let total: f64 = partial.to_vec_async(&s)?.iter().sum();
    let want: f64 = x.iter().sum();
    println!("block sums of {n} values over {blocks} blocks: total {total} (host {want})");
    if !ok || total != want {
        return Err(cudajit::Error::Usage(
            "a result differs from the host".into(),
        ));
    }
    Ok(())
}
