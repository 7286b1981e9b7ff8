//! Random numbers in kernels: Numba's Monte Carlo estimate of pi with its xoroshiro128+
//! generators (one per thread, seeded as Numba seeds them, so seed 1 gives Numba's numbers),
//! and counter-based Philox4x32-10 noise in an `Elementwise` kernel from the element index.
//! Prints the estimate and a few draws next to the host model's.
//!
//! Runs on the GPU, or on the CPU simulator with `CUDAJIT_SIMULATOR=1`.
//!
//! `cargo run --release --example random_numbers`

use cudajit::codegen::{Expr, Kernel};
use cudajit::ops::{Elem, Elementwise, Index, ReduceOps, Scalar};
use cudajit::prelude::*;
use cudajit::random::{
    create_xoroshiro128p_states, philox_uniform4_f32_host, xoroshiro128p_states_host, Philox,
    Xoroshiro128pHost, Xoroshiro128pStates,
};

fn main() {
    if let Err(e) = run() {
        eprintln!("random_numbers: {e}");
        std::process::exit(1);
    }
}

fn run() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    let backend = if cudajit::on_simulator() {
        "the CPU simulator"
    } else {
        "the GPU"
    };
    println!("running on {backend}: {}", ctx.device().name()?);

    // @cuda.jit
    // def compute_pi(rng_states, iterations, out):
    //     thread_id = cuda.grid(1)
    //     inside = 0
    //     for i in range(iterations):
    //         x = xoroshiro128p_uniform_float32(rng_states, thread_id)
    //         y = xoroshiro128p_uniform_float32(rng_states, thread_id)
    //         if x**2 + y**2 <= 1.0:
    //             inside += 1
    //     out[thread_id] = 4.0 * inside / iterations
    let (threads, iterations) = (64 * 256usize, 200u32);
    let compute_pi = Kernel::<(&mut Xoroshiro128pStates, u32, &mut [f32])>::build(
        "compute_pi",
        |k, (rng, iterations, out)| {
            let t = k.grid1();
            let inside = k.var(0u32);
            k.for_range(0u32, iterations, |_, _| {
                let (x, y) = (rng.uniform_f32(t), rng.uniform_f32(t));
                inside.set(inside.get() + (x * x + y * y).le(1.0f32).cast::<u32>());
            });
            out.set(
                t,
                Expr::lit(4.0f32) * inside.get().cast::<f32>() / iterations.cast::<f32>(),
            );
        },
    )?;
    let mut states = create_xoroshiro128p_states(&s, threads, 1, 0)?;
    let mut out = s.zeros::<f32, _>(threads)?;
    let cfg = LaunchConfig::new(64, 256);
    compute_pi.launch(&s, cfg, (&mut states, iterations, &mut out))?;
    let pi = out.sum(&s)? / threads as f32;
    println!(
        "pi ~ {pi:.5} from {} draws (seed 1)",
        2 * threads as u64 * iterations as u64
    );

    // The first draws of thread 0 again, on the device and on the host (Numba's numbers).
    states.init(&s, 1, 0)?;
    let first = Kernel::<(&mut Xoroshiro128pStates, &mut [f32])>::build("first", |k, (rng, o)| {
        k.if_(k.grid1().eq(0u64), |_| {
            for j in 0..4u64 {
                o.set(j, rng.uniform_f32(0u64));
            }
        });
    })?;
    let mut o = s.zeros::<f32, _>(4)?;
    first.launch(&s, LaunchConfig::new(1, 32), (&mut states, &mut o))?;
    let st = xoroshiro128p_states_host(1, 1, 0)[0];
    let mut g = Xoroshiro128pHost {
        s0: st[0],
        s1: st[1],
    };
    let host: Vec<f32> = (0..4).map(|_| g.uniform_f32()).collect();
    println!("thread 0, device: {:?}", o.to_vec_async(&s)?);
    println!("thread 0, host:   {host:?}");

    // Stateless noise: element i gets the first Philox uniform of counter i.
    let noisy =
        Elementwise::<(Elem<f32>, Index, Scalar<u64>), Expr<f32>>::new("noisy", |(x, i, seed)| {
            x + Philox::new(seed).uniform_f32(i)
        })?;
    let x = s.to_device(&[10.0f32, 20.0, 30.0, 40.0])?;
    let y = noisy.call(&s, (&x, Index, 7u64))?;
    let want: Vec<f32> = (0..4)
        .map(|i| [10.0f32, 20.0, 30.0, 40.0][i] + philox_uniform4_f32_host(7, 0, i as u64)[0])
        .collect();
    println!("x + philox noise, device: {:?}", y.to_vec_async(&s)?);
    println!("x + philox noise, host:   {want:?}");
    Ok(())
}
