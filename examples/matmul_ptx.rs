//! Prints the PTX of one `ops::Matmul` kernel without a GPU: bf16 with the fused bias + GELU
//! epilogue on Hopper's TMA + wgmma engine (128×256 tiles, 4 stages), for sm_90a. Feed it to
//! ptxas (`ptxas -arch=sm_90a`) and nvdisasm to read the SASS, as docs/notes/hopper.md does.
//!
//! `cargo run --release --example matmul_ptx > matmul.ptx`

use cudajit::codegen::PtxOptions;
use cudajit::ops::{Epilogue, Matmul, MatmulConfig};
use half::bf16;

fn main() -> cudajit::Result<()> {
    let mm = Matmul::<bf16, bf16>::new().epilogue(Epilogue::bias_gelu());
    let ptx = mm.compile_ptx(
        MatmulConfig::wgmma(128, 256, 64, 4),
        &PtxOptions::for_cc(9, 0),
    )?;
    println!("{ptx}");
    Ok(())
}
