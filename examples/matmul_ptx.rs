//! Prints the PTX of one `ops::Matmul` kernel without a GPU: bf16 with the fused bias + GELU
//! epilogue on Hopper's TMA + wgmma engine (128×256 tiles, 4 stages), for sm_90a. Feed it to
//! ptxas (`ptxas -arch=sm_90a`) and nvdisasm to read the SASS, as docs/notes/hopper.md does.
//!
//! `cargo run --release --example matmul_ptx > matmul.ptx`; another configuration in the
//! tuning files' form as the argument, e.g.
//! `cargo run --release --example matmul_ptx -- "wgmma_ws 256x128x64 128x128 s4" > matmul.ptx`.

use cudajit::codegen::PtxOptions;
use cudajit::ops::{Epilogue, Matmul, MatmulConfig};
use half::bf16;

fn main() -> cudajit::Result<()> {
    let mm = Matmul::<bf16, bf16>::new().epilogue(Epilogue::bias_gelu());
    let config = match std::env::args().nth(1) {
        Some(text) => text.parse()?,
        None => MatmulConfig::wgmma(128, 256, 64, 4),
    };
    let ptx = mm.compile_ptx(config, &PtxOptions::for_cc(9, 0))?;
    println!("{ptx}");
    Ok(())
}
