use cudajit::codegen::PtxOptions;
use cudajit::ops::{Epilogue, Matmul, MatmulConfig};
use half::bf16;
fn main() -> cudajit::Result<()> {
    let mm = Matmul::<bf16, bf16>::new().epilogue(Epilogue::bias_relu());
    let ptx = mm.compile_ptx(
        MatmulConfig::wgmma(128, 256, 64, 4),
        &PtxOptions::for_cc(9, 0),
    )?;
    println!("{ptx}");
    Ok(())
}
