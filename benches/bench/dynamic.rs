//! Kernels that launch kernels against host launches: the Mariani–Silver Mandelbrot (as in
//! `examples/mandelbrot_dp.rs`) refined on the device, one host launch in all, beside the same
//! algorithm driven by the host, one launch per refinement level (the squares to refine
//! gathered on the device, their count read back between levels). Both images are checked
//! against the host's per-pixel escape counts of the squares they compute.

use cudajit::codegen::{select, DeviceStream, Expr, Kernel, KernelBuilder};
use cudajit::prelude::*;

use super::{Bench, Rec, Res, KERNEL_IMPL};

const FRAC: i64 = 24;
const X0: i64 = -2 << FRAC;
const Y0: i64 = -(5 << FRAC) / 4;
const SPAN: i64 = (5 << FRAC) / 2;
const MAX_DWELL: u32 = 256;
const INIT: u32 = 4;
const SUB: u32 = 4;
const MIN_SIZE: u32 = 16;
const MAX_DEPTH: u32 = 4;
const THREADS: u32 = 64;

/// The image's side (small on the simulator, where the row only checks itself).
pub(super) fn side(quick: bool) -> u32 {
    if cudajit::on_simulator() {
        128
    } else if quick {
        1024
    } else {
        4096
    }
}

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

fn dwell(k: &KernelBuilder, px: Expr<u32>, py: Expr<u32>, w: Expr<u32>) -> Expr<u32> {
    let step = Expr::lit(SPAN) / w.cast::<i64>();
    let cx = px.cast::<i64>() * step + X0;
    let cy = py.cast::<i64>() * step + Y0;
    let (zx, zy) = (k.var::<i64>(0i64), k.var::<i64>(0i64));
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

/// The square of side `size` at (sx, sy), by the block: fills it if its border has one
/// dwell (returns false), computes it pixel by pixel if `last` (returns false), else returns
/// true (to be refined). Every thread gets the answer.
fn square(
    k: &KernelBuilder,
    img: cudajit::codegen::SliceMut<u32>,
    w: Expr<u32>,
    (sx, sy, size): (Expr<u32>, Expr<u32>, Expr<u32>),
    last: Expr<bool>,
) -> Expr<bool> {
    let t = k.thread_idx().x;
    let d0 = dwell(k, sx, sy, w);
    let same = k.var::<bool>(true);
    k.for_step(t, size * 4u32, THREADS, |k, p| {
        let (side, off) = (p / size, p % size);
        let end = size - 1u32;
        let px = select(
            side.lt(2u32),
            sx + off,
            sx + select(side.eq(2u32), Expr::lit(0u32), end),
        );
        let py = select(
            side.lt(2u32),
            sy + select(side.eq(0u32), Expr::lit(0u32), end),
            sy + off,
        );
        k.if_(dwell(k, px, py, w).ne(d0), |_| same.set(false));
    });
    let uniform = k.syncthreads_and(same.get());
    let area = size * size;
    k.if_(uniform, |k| {
        k.for_step(t, area, THREADS, |_, p| {
            img.set((sy + p / size) * w + sx + p % size, d0)
        });
    });
    let split = k.var::<bool>(false);
    k.if_(!uniform, |k| {
        k.if_else(
            last,
            |k| {
                k.for_step(t, area, THREADS, |k, p| {
                    let (px, py) = (sx + p % size, sy + p / size);
                    img.set(py * w + px, dwell(k, px, py, w));
                });
            },
            |_| split.set(true),
        );
    });
    split.get()
}

type Dp = Kernel<(&'static mut [u32], u32, u32, u32, u32, u32)>;
type Level = Kernel<(
    &'static mut [u32],
    u32,
    &'static [u32],
    u32,
    u32,
    &'static mut [u32],
    &'static mut [u32],
)>;

fn device_refined() -> cudajit::Result<Dp> {
    Dp::build("bench_ms_dp", |k, (img, w, x0, y0, size, depth)| {
        let sx = x0 + k.block_idx().x * size;
        let sy = y0 + k.block_idx().y * size;
        let last = size.le(MIN_SIZE).or(depth.ge(MAX_DEPTH));
        let split = square(k, img, w, (sx, sy, size), last);
        k.if_(split.and(k.thread_idx().x.eq(0u32)), |k| {
            k.launch_self::<(&mut [u32], u32, u32, u32, u32, u32), _>(
                (SUB, SUB, 1),
                THREADS,
                0u32,
                DeviceStream::Default,
                (img, w, sx, sy, size / SUB, depth + 1u32),
            );
        });
    })
}

fn host_level() -> cudajit::Result<Level> {
    Level::build(
        "bench_ms_level",
        |k, (img, w, squares, size, last, next, count)| {
            let b = k.block_idx().x;
            let (sx, sy) = (squares.at(b * 2u32), squares.at(b * 2u32 + 1u32));
            let split = square(k, img, w, (sx, sy, size), last.ne(0u32));
            k.if_(split.and(k.thread_idx().x.eq(0u32)), |k| {
                let slot = count.atomic_add(0u32, SUB * SUB);
                let sub = size / SUB;
                k.for_range(0u32, SUB * SUB, |_, i| {
                    next.set((slot + i) * 2u32, sx + i % SUB * sub);
                    next.set((slot + i) * 2u32 + 1u32, sy + i / SUB * sub);
                });
            });
        },
    )
}

impl Bench {
    /// `mandelbrot_dp`: the device-refined and the host-driven Mariani–Silver.
    pub(super) fn dynamic(&self) -> Res<()> {
        let s = &self.stream;
        let w = side(self.opts.quick);
        let n = (w * w) as usize;
        let size = self.size_of("mandelbrot_dp");
        let dp = self.c(device_refined())?;
        let lv = self.c(host_level())?;
        let mut img = self.c(s.zeros::<u32, _>(n))?;
        // Room for every square of the smallest size refinement reaches.
        let (mut smallest, mut d) = (w / INIT, 0);
        while smallest > MIN_SIZE && d < MAX_DEPTH {
            smallest /= SUB;
            d += 1;
        }
        let cap = 2 * (w / smallest.max(1)).pow(2) as usize;
        // The first level's squares (the rest of the list is overwritten before it is read).
        let mut first: Vec<u32> = (0..INIT * INIT)
            .flat_map(|i| [i % INIT * (w / INIT), i / INIT * (w / INIT)])
            .collect();
        first.resize(cap, 0);
        let mut a = self.c(s.zeros::<u32, _>(cap))?;
        let mut b = self.c(s.zeros::<u32, _>(cap))?;
        let mut count = self.c(s.zeros::<u32, _>(1))?;
        let run_dp = |img: &mut DeviceArray<u32>| {
            dp.launch(
                s,
                LaunchConfig::new((INIT, INIT, 1), THREADS),
                (img, w, 0u32, 0u32, w / INIT, 0u32),
            )
        };
        let mut run_host = |img: &mut DeviceArray<u32>| -> cudajit::Result<u32> {
            a.copy_from_host_async(&first, s)?;
            let (mut cur, mut nxt) = (&mut a, &mut b);
            let (mut squares, mut side, mut depth, mut launches) = (INIT * INIT, w / INIT, 0u32, 0);
            while squares > 0 {
                count.fill_async(0, s)?;
                let last = (side <= MIN_SIZE || depth >= MAX_DEPTH) as u32;
                lv.launch(
                    s,
                    LaunchConfig::new(squares, THREADS),
                    (&mut *img, w, &*cur, side, last, &mut *nxt, &mut count),
                )?;
                launches += 1;
                squares = count.to_vec_async(s)?[0];
                std::mem::swap(&mut cur, &mut nxt);
                side /= SUB;
                depth += 1;
            }
            Ok(launches)
        };
        // Both images against the host's escape counts (every pixel, once).
        self.c(run_dp(&mut img))?;
        let got_dp = self.c(img.to_vec_async(s))?;
        self.c(img.fill_async(u32::MAX, s))?;
        let levels = self.c(run_host(&mut img))?;
        let got_host = self.c(img.to_vec_async(s))?;
        if got_dp != got_host {
            return Err("mandelbrot_dp: the device-refined and host-driven images differ".into());
        }
        let step = (w / 256).max(1);
        let off = (0..w)
            .step_by(step as usize)
            .flat_map(|y| (0..w).step_by(step as usize).map(move |x| (x, y)))
            .filter(|&(x, y)| got_dp[(y * w + x) as usize] != dwell_host(x, y, w))
            .count();
        let t = self.time_gpu(|| run_dp(&mut img))?;
        Rec::new("mandelbrot_dp", &size)
            .imp(KERNEL_IMPL)
            .variant("device launches: one host launch, squares refined on the device")
            .times(&t)
            .note(format!("{off} of the sampled pixels differ from per-pixel escape counts (Mariani-Silver's sampling)"))
            .emit();
        let t = self.time_gpu(|| run_host(&mut img).map(|_| ()))?;
        Rec::new("mandelbrot_dp", &size)
            .imp(KERNEL_IMPL)
            .variant(format!(
                "host launches: one per level ({levels}), the count read back between levels"
            ))
            .times(&t)
            .emit();
        Ok(())
    }
}
