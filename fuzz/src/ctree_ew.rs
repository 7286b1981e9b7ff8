//! The complex trees through `Elementwise`: `Elem<T>` inputs for the real slots,
//! `Elem<Complex<T>>` inputs for the complex ones (the closure sees `CExpr<T>`), and a
//! `CExpr<T>` output (a new `Complex<T>` array), on contiguous arrays of an odd length (the
//! widest vector variant and its tail). `ctree_run` compares each root with the batch kernel's.

use cudajit::codegen::{CExpr, PtxOptions};
use cudajit::ops::{Elem, Elementwise};
use cudajit::prelude::*;
use num_complex::Complex;

use super::ctree::{CTree, CSLOTS};
use super::ctree_model::HostPart;
use super::ctree_run::{complex_inputs, lower_root, Part};

/// The columns of part type `T`: the real inputs slot by slot, then the complex ones.
fn columns<T: Part>(inputs: &[Vec<u64>]) -> (Vec<Vec<T>>, Vec<Vec<Complex<T>>>) {
    let reals = (0..CSLOTS)
        .map(|s| {
            inputs
                .iter()
                .map(|inp| <T as HostPart>::from_bits(inp[T::FIRST + s]))
                .collect()
        })
        .collect();
    let cx = complex_inputs::<T>(inputs);
    let cols = (0..CSLOTS)
        .map(|s| (0..inputs.len()).map(|i| cx[i * CSLOTS + s]).collect())
        .collect();
    (reals, cols)
}

macro_rules! roots_of {
    ($name:ident, $t:ty) => {
        /// Tree `t`'s root on every input vector through `Elementwise`, as bits.
        fn $name(
            stream: &Stream,
            t: &CTree,
            inputs: &[Vec<u64>],
            opts: PtxOptions,
        ) -> Result<Vec<Complex<u64>>> {
            type E = Elem<$t>;
            type C = Elem<Complex<$t>>;
            let root = t.root.clone();
            let ew = Elementwise::<(E, E, E, E, C, C, C, C), CExpr<$t>>::with_options(
                "fuzzew",
                opts,
                move |(a, b, c, d, p, q, r, s)| {
                    lower_root::<$t>(&root, &[a, b, c, d], &[p, q, r, s])
                },
            )?;
            let (reals, cols) = columns::<$t>(inputs);
            let dr = reals
                .iter()
                .map(|v| stream.to_device(v))
                .collect::<Result<Vec<_>>>()?;
            let dc = cols
                .iter()
                .map(|v| stream.to_device(v))
                .collect::<Result<Vec<_>>>()?;
            let out = ew.call(
                stream,
                (
                    &dr[0], &dr[1], &dr[2], &dr[3], &dc[0], &dc[1], &dc[2], &dc[3],
                ),
            )?;
            let bits = |z: &Complex<$t>| Complex::new(z.re.to_bits() as u64, z.im.to_bits() as u64);
            Ok(out.to_vec_async(stream)?.iter().map(bits).collect())
        }
    };
}
roots_of!(roots_f32, f32);
roots_of!(roots_f64, f64);

/// Tree `t`'s root on every input vector of `inputs` through `Elementwise`, built with FMA
/// contraction `contract` and fastmath `fastmath`, as bits.
pub fn roots(
    stream: &Stream,
    t: &CTree,
    inputs: &[Vec<u64>],
    contract: bool,
    fastmath: bool,
) -> Result<Vec<Complex<u64>>> {
    let opts = PtxOptions::default().contract(contract).fastmath(fastmath);
    if t.f64 {
        roots_f64(stream, t, inputs, opts)
    } else {
        roots_f32(stream, t, inputs, opts)
    }
}
