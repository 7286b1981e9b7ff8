//! Strided device views: an `s![]` sub-block with a step read back transposed, `Elementwise`
//! reading a transposed view and writing a reversed one, a kernel with strided parameters
//! writing a Fortran-order array, and a copy into a Fortran-order host array (docs/GUIDE.md's
//! "Strided views" example). Runs on the simulator with `CUDAJIT_SIMULATOR=1`.

use cudajit::codegen::{Expr, Kernel, NdStrided, NdStridedMut};
use cudajit::ops::{Elem, Elementwise, StridedReduceOps};
use cudajit::prelude::*;
use ndarray::{s, Array2, ShapeBuilder};

fn main() -> cudajit::Result<()> {
    let ctx = Context::new(0)?;
    let st = ctx.new_stream()?;
    let a = ctx.to_device(&Array2::from_shape_fn((6, 8), |(i, j)| (i * 8 + j) as f32))?;
    let block = a.strided().slice(s![1..5, ..;2])?; // rows 1..5, every other column
    let host = block.t().to_array()?; // the transposed block, (4, 4)
    let mut out = ctx.zeros::<f32, _>((8, 6))?;
    let neg = Elementwise::<(Elem<f32>,), Expr<f32>>::new("neg", |(x,)| -x)?;
    neg.apply(&st, (a.t(),), out.strided_mut().slice(s![..;-1, ..])?)?; // strided in and out
    let k = Kernel::<(NdStrided<f32, 2>, NdStridedMut<f32, 2>)>::build("copy_t", |k, (x, y)| {
        let i = k.grid1();
        k.if_(i.lt(x.len()), |_| {
            let (r, c) = (i / x.dim(1), i % x.dim(1));
            y.set2(r, c, x.at2(r, c));
        });
    })?;
    let mut f = ctx.zeros_f::<f32, _>((8, 6))?; // Fortran order
    k.launch(&st, LaunchConfig::for_num_elems(48, 128)?, (&a.t(), &mut f))?;
    let mut host_f = Array2::<f32>::zeros((6, 8).f());
    a.strided().copy_to_host_array(&mut host_f)?; // into a host array of any layout
    println!("{host} {} {}", block.sum(&st)?, f.to_array()?);
    Ok(())
}
