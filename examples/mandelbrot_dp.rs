//! Adaptive refinement with kernels that launch kernels: the Mariani–Silver Mandelbrot. Each
//! block of threads takes one square of the image and computes the escape count ("dwell") of
//! its border only; if the whole border has one dwell, the square is filled with it (the
//! Mandelbrot set's level sets are connected), else the block launches a grid of 4 × 4 blocks
//! on the square's sixteen sub-squares, and only small or deep squares are computed pixel by
//! pixel. Work is launched only where the image has detail.
//!
//! The arithmetic is fixed-point (`i64`, 24 fraction bits), so the host's model of the same
//! algorithm gives the same image bit for bit: it is checked against it, and compared with
//! the per-pixel image (Mariani–Silver is exact up to the pixel grid's sampling of thin
//! features). Prints the launches made on the device, the share of pixels computed, and a
//! small picture.
//!
//! On a GPU, loading the kernel links the CUDA device runtime (`libcudadevrt.a`). Runs on
//! cudajit's CPU simulator with `CUDAJIT_SIMULATOR=1`.
//!
//! `cargo run --release --example mandelbrot_dp`

use cudajit::codegen::{DeviceStream, Expr, Kernel, KernelBuilder};
use cudajit::prelude::*;

fn main() {
    if let Err(e) = run() {
        eprintln!("mandelbrot_dp: {e}");
        std::process::exit(1);
    }
}

/// Fraction bits of the fixed-point coordinates.
const FRAC: i64 = 24;
/// The view: x in [-2.0, 0.5), y in [-1.25, 1.25).
const X0: i64 = -2 << FRAC;
const Y0: i64 = -(5 << FRAC) / 4;
const SPAN: i64 = (5 << FRAC) / 2;
const MAX_DWELL: u32 = 256;
/// Blocks per side of the host's grid and of each refinement.
const INIT: u32 = 4;
const SUB: u32 = 4;
/// Squares this small, or this deep, are computed pixel by pixel.
const MIN_SIZE: u32 = 16;
const MAX_DEPTH: u32 = 4;
const THREADS: u32 = 64;

/// The escape count of pixel (px, py) of a `w`-wide image (the host's model).
fn dwell_host(px: u32, py: u32, w: u32) -> u32 {
    let step = SPAN / w as i64;
    let (cx, cy) = (X0 + px as i64 * step, Y0 + py as i64 * step);
    let (mut zx, mut zy) = (0i64, 0i64);
    for i in 0..MAX_DWELL {
        let (x2, y2) = ((zx * zx) >> FRAC, (zy * zy) >> FRAC);
        if x2 + y2 > 4 << FRAC {
            return i;
        }
        let nzy = ((zx * zy) >> (FRAC - 1)) + cy;
        zx = x2 - y2 + cx;
        zy = nzy;
    }
    MAX_DWELL
}

/// The same escape count, recorded in the kernel being built.
fn dwell(k: &KernelBuilder, px: Expr<u32>, py: Expr<u32>, w: Expr<u32>) -> Expr<u32> {
    let step = Expr::lit(SPAN) / w.cast::<i64>();
    let cx = px.cast::<i64>() * step + X0;
    let cy = py.cast::<i64>() * step + Y0;
    let zx = k.var::<i64>(0i64);
    let zy = k.var::<i64>(0i64);
    let d = k.var::<u32>(MAX_DWELL);
    k.for_range(0u32, MAX_DWELL, |k, i| {
        let (x, y) = (zx.get(), zy.get());
        let (x2, y2) = ((x * x) >> FRAC, (y * y) >> FRAC);
        k.if_((x2 + y2).gt(4i64 << FRAC), |k| {
            d.set(i);
            k.break_();
        });
        zy.set(((x * y) >> (FRAC - 1)) + cy);
        zx.set(x2 - y2 + cx);
    });
    d.get()
}

/// `(image, w, x0, y0, size, depth, stats)`: block (bx, by) takes the square of side `size`
/// at (x0 + bx·size, y0 + by·size). `stats[0]` counts device launches, `stats[1]` the pixels
/// computed one by one, `stats[2]` the pixels filled.
type Ms = Kernel<(
    &'static mut [u32],
    u32,
    u32,
    u32,
    u32,
    u32,
    &'static mut [u32],
)>;

fn mariani_silver() -> cudajit::Result<Ms> {
    Ms::build(
        "mariani_silver",
        |k, (img, w, x0, y0, size, depth, stats)| {
            let t = k.thread_idx().x;
            let sx = x0 + k.block_idx().x * size;
            let sy = y0 + k.block_idx().y * size;
            // The border: 4·size pixels, each thread a stride of them.
            let d0 = dwell(k, sx, sy, w);
            let same = k.var::<bool>(true);
            k.for_step(t, size * 4u32, THREADS, |k, p| {
                let (side, off) = (p / size, p % size);
                let last = size - 1u32;
                let px = cudajit::codegen::select(
                    side.lt(2u32),
                    sx + off,
                    sx + cudajit::codegen::select(side.eq(2u32), Expr::lit(0u32), last),
                );
                let py = cudajit::codegen::select(
                    side.lt(2u32),
                    sy + cudajit::codegen::select(side.eq(0u32), Expr::lit(0u32), last),
                    sy + off,
                );
                k.if_(dwell(k, px, py, w).ne(d0), |_| same.set(false));
            });
            let uniform = k.syncthreads_and(same.get());
            let area = size * size;
            k.if_else(
                uniform,
                |k| {
                    // One dwell all around: fill the square.
                    k.for_step(t, area, THREADS, |_, p| {
                        img.set((sy + p / size) * w + sx + p % size, d0);
                    });
                    k.if_(t.eq(0u32), |_| {
                        stats.atomic_add(2u32, area);
                    });
                },
                |k| {
                    k.if_else(
                        size.le(MIN_SIZE).or(depth.ge(MAX_DEPTH)),
                        |k| {
                            k.for_step(t, area, THREADS, |k, p| {
                                let (px, py) = (sx + p % size, sy + p / size);
                                img.set(py * w + px, dwell(k, px, py, w));
                            });
                            k.if_(t.eq(0u32), |_| {
                                stats.atomic_add(1u32, area);
                            });
                        },
                        |k| {
                            // Refine: 4 × 4 blocks on the sub-squares, launched by one thread.
                            k.if_(t.eq(0u32), |k| {
                            stats.atomic_add(0u32, 1u32);
                            k.launch_self::<(&mut [u32], u32, u32, u32, u32, u32, &mut [u32]), _>(
                                (SUB, SUB, 1),
                                THREADS,
                                0u32,
                                DeviceStream::Default,
                                (img, w, sx, sy, size / SUB, depth + 1u32, stats),
                            );
                        });
                        },
                    );
                },
            );
        },
    )
}

/// The host's model of the same algorithm: (image, pixels computed one by one, device launches).
fn model(w: u32) -> (Vec<u32>, u64, u64) {
    fn square(
        img: &mut [u32],
        w: u32,
        sx: u32,
        sy: u32,
        size: u32,
        depth: u32,
        n: &mut (u64, u64),
    ) {
        let d0 = dwell_host(sx, sy, w);
        let border = (0..size).flat_map(|o| {
            [
                (sx + o, sy),
                (sx + o, sy + size - 1),
                (sx, sy + o),
                (sx + size - 1, sy + o),
            ]
        });
        let uniform = border.into_iter().all(|(x, y)| dwell_host(x, y, w) == d0);
        if uniform {
            for y in sy..sy + size {
                for x in sx..sx + size {
                    img[(y * w + x) as usize] = d0;
                }
            }
        } else if size <= MIN_SIZE || depth >= MAX_DEPTH {
            n.0 += (size * size) as u64;
            for y in sy..sy + size {
                for x in sx..sx + size {
                    img[(y * w + x) as usize] = dwell_host(x, y, w);
                }
            }
        } else {
            n.1 += 1;
            let s = size / SUB;
            for by in 0..SUB {
                for bx in 0..SUB {
                    square(img, w, sx + bx * s, sy + by * s, s, depth + 1, n);
                }
            }
        }
    }
    let mut img = vec![0u32; (w * w) as usize];
    let mut n = (0u64, 0u64);
    let s = w / INIT;
    for by in 0..INIT {
        for bx in 0..INIT {
            square(&mut img, w, bx * s, by * s, s, 0, &mut n);
        }
    }
    (img, n.0, n.1)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let t0 = std::time::Instant::now();
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    let sim = cudajit::on_simulator();
    let backend = if sim {
        "the cudajit CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {backend}: {}", ctx.device().name()?);
    let w: u32 = if sim { 256 } else { 2048 };
    let k = mariani_silver()?;
    let mut img = stream.zeros_async::<u32, _>((w * w) as usize)?;
    let mut stats = stream.to_device(&[0u32; 3])?;
    let t1 = std::time::Instant::now();
    k.launch(
        &stream,
        LaunchConfig::new((INIT, INIT, 1), THREADS),
        (&mut img, w, 0u32, 0u32, w / INIT, 0u32, &mut stats),
    )?;
    let took = t1.elapsed();
    let got = img.to_vec()?;
    let stats = stats.to_vec()?;
    let (want, computed, launches) = model(w);
    let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    let per_pixel = (0..w * w)
        .filter(|&i| got[i as usize] != dwell_host(i % w, i / w, w))
        .count();
    let total = (w * w) as f64;
    println!(
        "{w}x{w} image in {:.1} ms: {} launches from the device, {:.1}% of the pixels computed \
         one by one, {:.1}% filled from their square's border",
        took.as_secs_f64() * 1e3,
        stats[0],
        100.0 * stats[1] as f64 / total,
        100.0 * stats[2] as f64 / total
    );
    // A small picture: one character per 8x8 (or 64x64) pixels.
    let cell = (w / 32) as usize;
    let shades = b" .:-=+*#%@";
    for y in (0..w as usize).step_by(cell * 2) {
        let line: String = (0..w as usize)
            .step_by(cell)
            .map(|x| {
                let d = got[y * w as usize + x];
                let i = if d >= MAX_DWELL {
                    9
                } else {
                    (d as usize * 9 / 64).min(8)
                };
                shades[i] as char
            })
            .collect();
        println!("  {line}");
    }
    println!(
        "checked against the host's model of the algorithm: {wrong} pixels differ; launches {} \
         (model {launches}), pixels computed {} (model {computed}); the per-pixel image differs \
         in {per_pixel} pixels; {:.0} ms in all",
        stats[0],
        stats[1],
        t0.elapsed().as_secs_f64() * 1e3
    );
    if wrong != 0 || stats[0] as u64 != launches || stats[1] as u64 != computed {
        return Err("the device's image or counts differ from the host's model".into());
    }
    Ok(())
}
