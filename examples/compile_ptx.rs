//! Builds the classic add kernel and prints its PTX: no GPU or driver needed.
//!
//! `cargo run --release --example compile_ptx [MAJOR.MINOR]` (default: 9.0).

use cudajit::codegen::{Kernel, PtxOptions};

fn main() {
    let cc = std::env::args()
        .nth(1)
        .and_then(|s| {
            let (a, b) = s.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((9, 0));
    if let Err(e) = run(cc) {
        eprintln!("compile_ptx: {e}");
        std::process::exit(1);
    }
}

fn run(cc: (u32, u32)) -> cudajit::Result<()> {
    let add = Kernel::<(&[f32], &[f32], &mut [f32])>::build("add", |k, (x, y, out)| {
        let i = k.grid1();
        k.if_(i.lt(out.len()), |_| out.set(i, x.at(i) + y.at(i)));
    })?;
    let opts = PtxOptions::for_cc(cc.0, cc.1);
    let start = std::time::Instant::now();
    let ptx = add.compile_ptx(&opts)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("{ptx}");
    eprintln!(
        "// kernel `{}` for sm_{}{} (PTX ISA {}.{}): {} lines of PTX in {ms:.2} ms",
        add.name(),
        opts.sm().0,
        opts.sm().1,
        opts.ptx_isa().0,
        opts.ptx_isa().1,
        ptx.lines().count()
    );
    Ok(())
}
